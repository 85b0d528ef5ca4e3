"""Everything about Salesforce, in one place (`PLATFORM`, registered in connector/platforms/):
its Outbound Messages (SOAP) come with the connection's secret in the URL, only from the
organizations the connection allows, one event per `Notification` (keyed by its `Id`), and are
acknowledged in SOAP; OAuth tokens from the My Domain URL's own endpoint; and its adapter.

Its objects, by our names (`SOBJECTS`): contacts are Contact, leads Lead, companies Account.
An Outbound Message names its sObject's type (`xsi:type="sf:Lead"`): each event's kind is read
from it, and a type the connector does not enrich is stored under that name, for the worker to
refuse (a dead letter naming it) rather than read it as a contact.

The adapter: one sObject type (its kind's) over the REST API: read and update one record
(/sobjects/{type}/{id}), and sObject Collections reads (/composite/sobjects/{type}) and
updates (/composite/sobjects, each record naming its type) of up to 200 a call (allOrNone
false: each record is written or refused alone).

Listing (a backfill): a SOQL query of the type's records by ascending Id (`SELECT Id, <fields>
FROM <type> [WHERE LastModifiedDate >= <since>] ORDER BY Id`, GET /query?q=), up to 2,000 an
answer, then each answer's nextRecordsUrl (/query/<locator>-<offset>); `totalSize` counts the
query's records. The cursor is that nextRecordsUrl and the last Id listed: a query locator
expires (15 minutes idle, or released by the user's eleventh open cursor), and then the query
is asked again from that Id (INVALID_QUERY_LOCATOR). A backfill of one list view (List Views,
those SOQL can run) takes the view's USING SCOPE and WHERE condition from its describe's query
(List View Describe) into the same query, so it pages and resumes alike.

Failures beyond `base.classify`: an error naming fields sent (its `fields`, or INVALID_FIELD's
"No such column 'X'") drops those fields, with Salesforce's code and message as the reason,
and sends the rest again: a field the org lacks or does not let us write (INVALID_FIELD,
INVALID_FIELD_FOR_INSERT_UPDATE, on reads too), and a value refused (a restricted picklist's
INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST, a state or country picklist's
FIELD_INTEGRITY_EXCEPTION, an invalid e-mail, ...), so one field does not block the others.
In a collection only the refused record is sent again. With State and Country/Territory
Picklists, Salesforce checks an address's state against its country: a refusal naming a
state or country field we did not send is charged to its text or code twin we sent
(MailingState for MailingStateCode), else to the other half of that address we sent (our
country, when the record's state belongs to another). An error naming no field sent (a
required field missing, a validation rule) is Permanent. UNABLE_TO_LOCK_ROW is Retriable;
401 is a token expired or revoked (refreshing it is the caller's business).
403 REQUEST_LIMIT_EXCEEDED is Retriable after an hour: the org's API limit counts requests
over a rolling 24 hours, so room comes back as the oldest calls age out, not at a fixed
reset; an hour retries about 24 times a day at most. It is `throttled`: the limit is the
org's, so the worker holds the whole connection for that hour, counting no attempt
(https://developer.salesforce.com/docs/platform/salesforce-app-limits-cheatsheet/guide/salesforce-app-limits-platform-api.html).

Fields (the mapping editor's): the sObject's describe (GET /sobjects/{type}/describe), each
field's type translated by `FIELD_TYPES` (Salesforce's own names: string, picklist, reference,
...), a picklist's active values as its options, read-only where not `updateable` (formula,
system and create-only fields). Creating a field takes the Tooling or Metadata API and a grant
of field-level security besides (crm-install.md §3): not done here, an admin creates it in
Setup. Finding a record by e-mail is a SOQL query on Email (contacts and leads; an Account has
no e-mail), the address a string literal with backslash, quotes and control characters
escaped as SOQL documents.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx
from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException

from connector.platforms.base import (
    OPERATORS,
    TOKEN_REFUSED,
    Adapter,
    Answer,
    Condition,
    CrmClient,
    CrmField,
    Event,
    Listed,
    NewContact,
    Outcome,
    Permanent,
    Refusal,
    Refused,
    Retriable,
    Row,
    Task,
    Unparseable,
    UrlSecret,
    View,
    WriteResult,
    answer_url,
    classify,
    dicts,
    error_message,
    garbled,
    id_chunks,
    json_body,
    matching,
    origin,
    retry_after,
    send,
    write_dropping,
    write_many_dropping,
)

if TYPE_CHECKING:
    from connector.oauth import Credentials

API_VERSION = "v62.0"
BATCH_SIZE = 200
REQUEST_LIMIT_WAIT_SECONDS = 3600.0  # see the module docstring
RETRY_CODES = frozenset({"UNABLE_TO_LOCK_ROW", "REQUEST_LIMIT_EXCEEDED"})  # not a field's fault
NO_SUCH_COLUMN = re.compile(r"No such column '([^']+)'")
ADDRESS_PART = re.compile(r"(\w*?)(state|country)(?:code)?", re.IGNORECASE)  # MailingStateCode
# A query's nextRecordsUrl (/services/data/v62.0/query/01gD0000002HU6KIAW-2000): followed
# from the instance's root, so a cursor is held to this shape before it is.
NEXT_RECORDS = re.compile(r"/services/data/v\d+\.\d+/query/[A-Za-z0-9]+(?:-(\d+))?")

# Our kinds of record -> Salesforce's sObject types (Outbound Messages name the type).
SOBJECTS = {"contacts": "Contact", "leads": "Lead", "companies": "Account"}
KINDS = {sobject: kind for kind, sobject in SOBJECTS.items()}
EMAIL_FIELDS = {"Contact": "Email", "Lead": "Email"}  # an Account has no e-mail field
# Salesforce's field types (DescribeFieldResult.type, "FieldType" in the SOAP API reference)
# -> ours (base.FIELD_TYPES); any other type is "other".
FIELD_TYPES = {
    "string": "text", "textarea": "text", "encryptedstring": "text", "combobox": "picklist",
    "picklist": "picklist", "multipicklist": "multipicklist", "boolean": "boolean",
    "int": "number", "long": "number", "double": "number", "currency": "number",
    "percent": "number", "date": "date", "datetime": "datetime", "email": "email",
    "phone": "phone", "url": "url", "reference": "reference", "id": "reference",
}  # fmt: skip
# SOQL string literal escapes (SOQL and SOSL Reference, "Quoted String Escape Sequences").
SOQL_ESCAPES = str.maketrans({"\\": "\\\\", "'": "\\'", '"': '\\"', "\n": "\\n",
                              "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"})  # fmt: skip

_SALESFORCE_ID = re.compile(r"[A-Za-z0-9]{15}(?:[A-Za-z0-9]{3})?")
# Field types compared as quoted strings in a condition (and the only ones LIKE takes).
TEXT_TYPES = frozenset({"text", "email", "phone", "url", "picklist", "reference"})
# A list view's query, read to keep what selects its records: string literals (masked before
# looking for keywords), the clauses after its WHERE, and the only clause before it we keep.
STRING_LITERAL = re.compile(r"'(?:\\.|[^'\\])*'")
VIEW_QUERY_END = re.compile(r"\b(ORDER\s+BY|LIMIT|OFFSET|FOR\s+(VIEW|REFERENCE|UPDATE))\b", re.I)
USING_SCOPE = re.compile(r"USING\s+SCOPE\s+\w+", re.IGNORECASE)


class Salesforce(CrmClient):
    """Salesforce records of one kind (`SOBJECTS`: Contact, Lead or Account), over a client
    the caller builds; `base_url` is the org's instance URL and `token` an OAuth access
    token."""

    platform = "salesforce"

    def __init__(
        self,
        base_url: str,
        token: str,
        client: httpx.Client,
        auth: httpx.Auth | None = None,
        kind: str = "contacts",
        api_version: str = API_VERSION,
    ) -> None:
        if kind not in SOBJECTS:
            raise Permanent(f"salesforce has no {kind} the connector enriches")
        self.instance = base_url.rstrip("/")
        super().__init__(f"{self.instance}/services/data/{api_version}", token, client, auth, kind)
        self.sobject = SOBJECTS[kind]

    def read(self, record_id: str, properties: Sequence[str]) -> dict[str, Any]:
        """The record's current values of `properties` (field API names, any case), None
        where empty or where the org has no such field."""
        record = self._record(record_id, list(properties))
        values = {name.lower(): value for name, value in record.items()}
        return {name: values.get(name.lower()) for name in properties}

    def read_many(
        self, record_ids: Sequence[str], properties: Sequence[str]
    ) -> dict[str, dict[str, Any] | Permanent]:
        """Records' current values, 200 a call (sObject Collections GET: the answer lists
        the records in the order asked, null for an id that is invalid or not visible)."""
        fields = list(properties)
        found: dict[str, dict[str, Any] | Permanent] = {}
        for chunk in id_chunks(record_ids, BATCH_SIZE):
            records = self._records(chunk, fields)
            for key, record in zip(chunk, records, strict=True):
                if isinstance(record, dict):
                    values = {name.lower(): value for name, value in record.items()}
                    found[key] = {name: values.get(name.lower()) for name in fields}
                else:
                    missing = f"no such {self.sobject} (or not visible to this user)"
                    found[key] = Permanent(missing)
        return found

    def write(self, record_id: str, properties: dict[str, Any]) -> WriteResult:
        """Update one record; fields refused as unknown or not writable are dropped."""
        return write_dropping(lambda sent: self._update(record_id, sent), properties)

    def write_many(self, changes: dict[str, dict[str, Any]]) -> dict[str, WriteResult | Permanent]:
        """Update records 200 a call; each record's outcome. A locked row anywhere makes the
        whole call Retriable: writes are idempotent, so doing the others again is harmless."""
        return write_many_dropping(self._update_batch, changes, BATCH_SIZE)

    def list_page(self, properties: Sequence[str], since: str | None, cursor: str | None) -> Listed:
        """A page of the type's records by a SOQL query (see the module docstring): from the
        cursor's nextRecordsUrl, or the query asked again from its last Id when that expired;
        fields the org lacks are left out of the query, None in each record."""
        return self._list_page(properties, since, cursor, "")

    def views(self) -> list[View]:
        """The type's list views the user can see whose query SOQL can run (List Views),
        by label."""
        found, response = [], self._send("GET", f"/sobjects/{self.sobject}/listviews")
        while True:
            self._check(response)
            body = json_body(response)
            found += [View(str(item["id"]), str(item.get("label") or item["id"]))
                      for item in dicts(body.get("listviews"))
                      if "id" in item and item.get("soqlCompatible") is not False]  # fmt: skip
            following = body.get("nextRecordsUrl")
            if body.get("done") is not False or not isinstance(following, str):
                return sorted(found, key=lambda view: view.name.casefold())
            response = self._query_more(_listviews_url(following, self.sobject))

    def list_view_page(
        self, view: str, properties: Sequence[str], since: str | None, cursor: str | None
    ) -> Listed:
        """A page of the records of the list view `view`, as `list_page` pages the type's:
        the view's scope and conditions (from its describe's query) with ours."""
        if not (_SALESFORCE_ID.fullmatch(view) or Condition.of_source(view)):
            raise Permanent(f"{view[:60]!r} is not a Salesforce list view id")
        return self._list_page(properties, since, cursor, view)

    def _list_page(self, properties: Sequence[str], since: str | None, cursor: str | None,
                   view: str) -> Listed:  # fmt: skip
        """A page of the type's records, of the list view `view` when given."""
        fields = _selected(properties)
        located, offset, after = _cursor(cursor)
        response = self._query_more(located) if located else None
        if response is None or "INVALID_QUERY_LOCATOR" in _error_codes(json_body(response)):
            scope = self._scope(view) if view else ("", "")
            response, offset = self._query(fields, since, after, scope), 0
        self._check(response)
        body = json_body(response)
        records = _query_records(response, body)
        found = {}
        for record in records:
            values = {name.lower(): value for name, value in record.items()}
            found[str(record["Id"])] = {name: values.get(name.lower()) for name in properties}
        total = body.get("totalSize")
        remaining = total - offset if isinstance(total, int) else None
        if body.get("done") is True:
            return Listed(found, None, remaining)
        following = body.get("nextRecordsUrl")
        if not (isinstance(following, str) and NEXT_RECORDS.fullmatch(following)):
            raise garbled(response, "a query's records with its nextRecordsUrl")
        return Listed(found, f"{following} {list(found)[-1] if found else after}", remaining)

    def fields(self) -> list[CrmField]:
        """The sObject's fields, from its describe (see the module docstring)."""
        response = self._send("GET", f"/sobjects/{self.sobject}/describe")
        self._check(response)
        body = json_body(response)
        described = body.get("fields") if isinstance(body, dict) else None
        if not isinstance(described, list) or not all(_described(item) for item in described):
            raise garbled(response, f"a describe of {self.sobject} with its fields")
        return [_field(item) for item in described]

    def create_field(self, name: str, label: str, type: str) -> CrmField:
        """Permanent: see the module docstring."""
        raise Permanent(
            "Salesforce fields are created in Setup (Object Manager > "
            f"{self.sobject} > Fields & Relationships), then made visible to the "
            "connector's user by field-level security"
        )

    def find(self, email: str) -> str | None:
        """The Id of the sObject's record whose Email is `email` (SOQL compares it without
        regard to case), the oldest when several are; None when there is none."""
        if self.sobject not in EMAIL_FIELDS:
            raise Permanent(f"a Salesforce {self.sobject} has no e-mail to find it by")
        soql = (
            f"SELECT Id FROM {self.sobject} WHERE {EMAIL_FIELDS[self.sobject]} = "
            f"'{soql_string(email)}' ORDER BY CreatedDate LIMIT 1"
        )
        response = self._send("GET", "/query", params={"q": soql})
        self._check(response)
        records = _query_records(response, json_body(response))
        return str(records[0]["Id"]) if records else None

    def _query(self, fields: list[str], since: str | None, after: str,
               scope: tuple[str, str] = ("", "")) -> httpx.Response:  # fmt: skip
        soql = _soql(self.sobject, fields, since, after, scope)
        response = self._send("GET", "/query", params={"q": soql})
        unknown = matching(dict.fromkeys(fields), _refused_fields(response))
        if unknown:
            kept = [name for name in fields if name not in unknown]
            return self._query(kept, since, after, scope)
        return response

    def _scope(self, view: str) -> tuple[str, str]:
        """What a list view, or a condition the admin picked, adds to the listing's query."""
        condition = Condition.of_source(view)
        if condition is None:
            return self._view_scope(view)
        fields = {field.name.lower(): field for field in self.fields()}
        field = fields.get(condition.field.lower())
        if field is None:
            raise Permanent(f"{self.sobject} has no field {condition.field!r}")
        return "", f"{field.name} {condition.operator} {_soql_literal(field, condition)}"

    def _view_scope(self, view: str) -> tuple[str, str]:
        """A list view's USING SCOPE and WHERE condition, read off its describe's query."""
        response = self._send("GET", f"/sobjects/{self.sobject}/listviews/{view}/describe")
        self._check(response)
        query = json_body(response).get("query")
        if not isinstance(query, str):
            raise garbled(response, "a list view's describe with its query")
        return _scope_of(query, self.sobject)

    def _query_more(self, located: str) -> httpx.Response:
        """The next answer of a query, at its nextRecordsUrl (below the instance's root)."""
        url, platform = self.instance + located, self.platform_name
        return send(self.client, "GET", url, self.auth, platform=platform, headers=self.headers)

    def _record(self, record_id: str, fields: list[str]) -> dict[str, Any]:
        params = {"fields": ",".join(fields)} if fields else None
        response = self._send("GET", self._path(record_id), params=params)
        unknown = matching(dict.fromkeys(fields), _refused_fields(response))
        if unknown:
            return self._record(record_id, [name for name in fields if name not in unknown])
        self._check(response)
        body = json_body(response)
        if not isinstance(body, dict) or not {"attributes", "Id"} & body.keys():
            raise garbled(response, f"a {self.sobject}")  # sObjects carry their attributes
        return body

    def _records(self, ids: list[str], fields: list[str]) -> list[Any]:
        params = {"ids": ",".join(ids), "fields": ",".join(["Id", *fields])}
        response = self._send("GET", f"/composite/sobjects/{self.sobject}", params=params)
        unknown = matching(dict.fromkeys(fields), _refused_fields(response))
        if unknown:
            return self._records(ids, [name for name in fields if name not in unknown])
        self._check(response)
        return _listed(response, len(ids), f"a {self.sobject} or null an id", allow_null=True)

    def _update(self, record_id: str, fields: dict[str, Any]) -> Refusal:
        response = self._send("PATCH", self._path(record_id), json=_values(fields))
        refused = _charged(_refused_fields(response), fields)
        if not refused:
            self._check(response)
            if response.content:  # Salesforce's success is 204 No Content; a body is not it
                raise garbled(response, "204 No Content")
        return refused

    def _update_batch(self, changes: dict[str, dict[str, Any]]) -> dict[str, Outcome]:
        records = [
            {"attributes": {"type": self.sobject}, "id": key, **_values(fields)}
            for key, fields in changes.items()
        ]
        body = {"allOrNone": False, "records": records}
        response = self._send("PATCH", "/composite/sobjects", json=body)
        refused = _refused_fields(response)
        if refused:
            return dict.fromkeys(changes, refused)
        try:
            self._check(response)
        except Permanent as failure:  # the whole call refused: every record's outcome
            return dict.fromkeys(changes, failure)
        return _save_results(changes, _listed(response, len(changes), "a SaveResult a record"))

    def create_task(self, record_id: str, task: Task) -> str:
        """A Task (POST /sobjects/Task) for the record's owner (OwnerId, read first): a
        contact's or lead's by WhoId, an account's by WhatId; its id."""
        owner = self.read(record_id, ["OwnerId"]).get("OwnerId")
        link = "WhatId" if self.sobject == "Account" else "WhoId"
        fields = {"Subject": task.subject[:255], "Description": task.body,
                  "ActivityDate": task.due_on, "Status": "Not Started", "Priority": "Normal",
                  link: record_id, **({"OwnerId": owner} if owner else {})}  # fmt: skip
        return self._create("Task", fields)

    def create_contact(self, contact: NewContact, linked_to: str) -> str:
        """A Contact (POST /sobjects/Contact) whose Description is the note naming the record
        `linked_to` (Salesforce has no contact-to-contact relationship of its own); its id."""
        fields = {"FirstName": contact.first_name, "LastName": contact.last_name,
                  "Title": contact.title, "Description": contact.note}  # fmt: skip
        return self._create("Contact", {k: v for k, v in fields.items() if v})

    def _create(self, sobject: str, fields: dict[str, Any]) -> str:
        """Create a record of `sobject`; its id (Salesforce answers 201 with a SaveResult)."""
        response = self._send("POST", f"/sobjects/{sobject}", json=fields)
        self._check(response)
        saved = json_body(response)
        if not (isinstance(saved, dict) and saved.get("success") and saved.get("id")):
            raise garbled(response, "a SaveResult")
        return str(saved["id"])

    def _path(self, record_id: str) -> str:
        return f"/sobjects/{self.sobject}/{quote(str(record_id), safe='')}"

    def _check(self, response: httpx.Response) -> None:
        """Raise for a failed answer: Salesforce's error codes first, then `classify`."""
        codes = _error_codes(json_body(response))
        if response.status_code == 401:
            raise Permanent(TOKEN_REFUSED)
        reason = f"{response.status_code}: {error_message(response)}"
        if "REQUEST_LIMIT_EXCEEDED" in codes:
            wait = retry_after(response) or REQUEST_LIMIT_WAIT_SECONDS
            raise Retriable(reason, wait, throttled=True)
        if "UNABLE_TO_LOCK_ROW" in codes:
            raise Retriable(reason, retry_after(response))
        classify(response)


def soql_string(text: str) -> str:
    """`text` escaped for a SOQL string literal (between single quotes)."""
    return text.translate(SOQL_ESCAPES)


def _described(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("name"), str)


def _field(item: dict[str, Any]) -> CrmField:
    """A describe's field as ours: its options the active values of its picklist."""
    values = dicts(item.get("picklistValues"))
    return CrmField(
        name=item["name"],
        label=str(item.get("label") or item["name"]),
        type=FIELD_TYPES.get(str(item.get("type")), "other"),
        options=tuple(str(v["value"]) for v in values if v.get("active") and "value" in v),
        read_only=item.get("updateable") is not True,
        custom=item.get("custom") is True,
    )


def _selected(properties: Sequence[str]) -> list[str]:
    """The fields a query selects besides Id, each once (SOQL refuses a field twice, in any
    case)."""
    seen, fields = {"id"}, []
    for name in properties:
        if name.lower() not in seen:
            seen.add(name.lower())
            fields.append(name)
    return fields


def _soql(sobject: str, fields: list[str], since: str | None, after: str,
          scope: tuple[str, str] = ("", "")) -> str:  # fmt: skip
    """The listing's query: the records modified at or after `since` (a dateTime literal,
    unquoted, in UTC: 2025-01-01T00:00:00Z) and of an Id after `after`, by ascending Id; of
    a list view's scope (USING SCOPE) and condition when given."""
    using, condition = scope
    conditions = [f"({condition})"] if condition else []
    if since:
        moment = datetime.fromisoformat(since).astimezone(UTC)
        conditions.append(f"LastModifiedDate >= {moment.strftime('%Y-%m-%dT%H:%M:%SZ')}")
    if after:
        conditions.append(f"Id > '{after}'")
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    scoped = f" {using}" if using else ""
    return f"SELECT {', '.join(['Id', *fields])} FROM {sobject}{scoped}{where} ORDER BY Id"


def _scope_of(query: str, sobject: str) -> tuple[str, str]:
    """A list view's query (List View Describe's `query`) cut to what selects its records:
    its USING SCOPE clause and its WHERE condition ("" for none), string literals kept
    whole; Permanent for a query of another shape."""
    masked = STRING_LITERAL.sub(lambda found: "_" * len(found[0]), query)
    source = re.search(rf"\bFROM\s+{re.escape(sobject)}\b", masked, re.IGNORECASE)
    if source is None:
        raise Permanent(f"the list view's query is not of {sobject}: {query[:120]!r}")
    ending = VIEW_QUERY_END.search(masked, source.end())
    end = ending.start() if ending else len(query)
    where = re.compile(r"\bWHERE\b", re.IGNORECASE).search(masked, source.end(), end)
    using = query[source.end() : where.start() if where else end].strip()
    if using and not USING_SCOPE.fullmatch(using):
        raise Permanent(f"the list view's query has a clause not understood: {using[:80]!r}")
    return using, query[where.end() : end].strip() if where else ""


def _soql_literal(field: CrmField, condition: Condition) -> str:
    """A condition's value as a SOQL literal of the field's type (SOQL and SOSL Reference,
    "Field Expressions" and "Date Formats and Date Literals"): a quoted, escaped string (with
    LIKE's wildcards escaped, then around it), a number, true or false, a date or a UTC
    dateTime; Permanent for an operator the type does not take or a value not of the type."""
    kind, operator, value = field.type, condition.operator, condition.value.strip()
    if operator not in OPERATORS or (operator == "LIKE" and kind not in TEXT_TYPES):
        raise Permanent(f"{field.name} cannot be compared by {operator!r}")
    try:
        if kind in ("number",):
            return str(float(value)) if "." in value or "e" in value.lower() else str(int(value))
        if kind == "boolean" and value.lower() in ("true", "false") and operator in ("=", "!="):
            return value.lower()
        if kind == "date":
            return date.fromisoformat(value).isoformat()
        if kind == "datetime":
            moment = datetime.fromisoformat(value)
            moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
            return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        raise Permanent(f"{value!r} is not a value of {field.name} ({kind})") from None
    if kind not in TEXT_TYPES:
        raise Permanent(f"{field.name} ({kind}) cannot be filtered on here")
    if operator == "LIKE":
        return "'%" + soql_string(value).replace("%", "\\%").replace("_", "\\_") + "%'"
    return f"'{soql_string(value)}'"


def _listviews_url(following: str, sobject: str) -> str:
    """A List Views answer's nextRecordsUrl, when it is one of the type's (followed below
    the instance's root, it can reach nothing else)."""
    if not re.fullmatch(
        rf"/services/data/v\d+\.\d+/sobjects/{sobject}/listviews\?[\w=&]+", following
    ):
        raise Permanent(f"not a next page of {sobject}'s list views: {following[:80]!r}")
    return following


def _cursor(cursor: str | None) -> tuple[str, int, str]:
    """A listing cursor's nextRecordsUrl, the offset it names (0 if none), and the last Id
    listed; Permanent for anything else (a cursor is followed below the instance's root)."""
    if not cursor:
        return "", 0, ""
    located, _, after = cursor.partition(" ")
    shape = NEXT_RECORDS.fullmatch(located)
    if shape is None or not (after == "" or _SALESFORCE_ID.fullmatch(after)):
        raise Permanent(f"not a Salesforce query cursor: {cursor[:80]!r}")
    return located, int(shape[1] or 0), after


def _query_records(response: httpx.Response, body: Any) -> list[dict[str, Any]]:
    """A query answer's records, each with its Id; `garbled` when it is anything else."""
    expected = "a query's records"
    records = body.get("records") if isinstance(body, dict) else None
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise garbled(response, expected)
    if not all(isinstance(record.get("Id"), str) for record in records):
        raise garbled(response, expected)
    return records


def _values(fields: dict[str, Any]) -> dict[str, Any]:
    """Values as Salesforce takes them: lists joined with ";" (multi-select picklists)."""
    return {
        name: ";".join(map(str, value)) if isinstance(value, list | tuple) else value
        for name, value in fields.items()
    }


def _error_codes(body: Any) -> set[str]:
    errors = body if isinstance(body, list) else []
    return {str(error.get("errorCode")) for error in errors if isinstance(error, dict)}


def _refused_fields(response: httpx.Response) -> Refusal:
    """The fields a 400 error array refuses as unknown or not writable, with the reason."""
    body = json_body(response)
    return _field_errors(body) if response.status_code == 400 else {}


def _field_errors(errors: Any) -> Refusal:
    """Fields named by errors, in either envelope: {errorCode, message, fields} (one resource)
    or {statusCode, message, fields} (a collection's SaveResult), each with `CODE: message`."""
    refused: Refusal = {}
    for error in dicts(errors):
        code = error.get("errorCode") or error.get("statusCode")
        if code in RETRY_CODES:
            continue
        message = str(error.get("message") or "")
        names = error.get("fields") or NO_SUCH_COLUMN.findall(message)
        refused.update(dict.fromkeys(map(str, names), f"{code}: {message}"))
    return refused


def _charged(refused: Refusal, sent: dict[str, Any]) -> Refusal:
    """The sent fields a refusal stands for, by their sent names: each named field sent, and
    for a state or country field not sent, its twin sent, else the other half of its address
    sent (see the module docstring), with the field named in the reason."""
    charged = matching(sent, refused)
    for name, why in refused.items():
        if not matching(sent, {name: why}):
            code, _, message = why.partition(": ")
            reason = f"{code} ({name}): {message}"
            charged.update(dict.fromkeys(_address_partners(name, sent), reason))
    return charged


def _address_partners(name: str, sent: dict[str, Any]) -> list[str]:
    """The sent fields of the address a state or country field `name` belongs to: its text
    or code twin, else the other half (the country for a state, the state for a country)."""
    named = ADDRESS_PART.fullmatch(name)
    if named is None:
        return []
    parts = [(field, ADDRESS_PART.fullmatch(field)) for field in sent]
    address = [(field, part) for field, part in parts if part and _same(part[1], named[1])]
    twins = [field for field, part in address if _same(part[2], named[2])]
    return twins or [field for field, _ in address]


def _same(one: str, other: str) -> bool:
    return one.lower() == other.lower()


def _listed(
    response: httpx.Response, count: int, expected: str, allow_null: bool = False
) -> list[Any]:
    """A collection answer: a list of `count` objects (or nulls, with `allow_null`), in the
    order asked, as Salesforce documents; `garbled` when it is anything else."""
    body = json_body(response)
    if not isinstance(body, list) or len(body) != count:
        raise garbled(response, expected)
    if not all(isinstance(item, dict) or (allow_null and item is None) for item in body):
        raise garbled(response, expected)
    return body


def _save_results(changes: dict[str, dict[str, Any]], results: list[Any]) -> dict[str, Outcome]:
    """Each record's outcome from the SaveResults, which come in the order of the request."""
    return {
        key: _saved(fields, result)
        for (key, fields), result in zip(changes.items(), results, strict=True)
    }


def _saved(fields: dict[str, Any], result: dict[str, Any]) -> Outcome:
    if result.get("success") is True:
        return WriteResult(written=dict(fields))
    errors = dicts(result.get("errors"))
    if "UNABLE_TO_LOCK_ROW" in {error.get("statusCode") for error in errors}:
        raise Retriable(f"UNABLE_TO_LOCK_ROW: {_messages(errors)}")
    refused = _charged(_field_errors(errors), fields)
    return refused or Permanent(_messages(errors) or "refused without a reason")


def _messages(errors: list[dict[str, Any]]) -> str:
    return "; ".join(f"{error.get('statusCode')}: {error.get('message')}" for error in errors)


_SOAP = "{http://schemas.xmlsoap.org/soap/envelope/}"
_OUTBOUND = "{http://soap.sforce.com/2005/09/outbound}"
_NIL = "{http://www.w3.org/2001/XMLSchema-instance}nil"
_TYPE = "{http://www.w3.org/2001/XMLSchema-instance}type"
SALESFORCE_ACK = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n'
    b'<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">'
    b'<soapenv:Body><notificationsResponse xmlns="http://soap.sforce.com/2005/09/outbound">'
    b"<Ack>true</Ack></notificationsResponse></soapenv:Body></soapenv:Envelope>"
)


def salesforce_events(body: bytes) -> list[Event]:
    """The notifications of an Outbound Message, each with its sObject's fields and of the
    kind its type names (see the module docstring)."""
    try:
        root = ElementTree.fromstring(body)
    except (ElementTree.ParseError, DefusedXmlException) as error:
        raise Unparseable(f"the body is not a SOAP message: {error}") from None
    notifications = root.find(f"{_SOAP}Body/{_OUTBOUND}notifications")
    if notifications is None:
        raise Unparseable("the SOAP body holds no Outbound Message notifications")
    organization = notifications.findtext(f"{_OUTBOUND}OrganizationId", "").strip()
    found = [
        _salesforce_event(item, organization)
        for item in notifications.findall(f"{_OUTBOUND}Notification")
    ]
    if not found:
        raise Unparseable("the Outbound Message holds no Notification")
    return found


def _salesforce_event(notification: Any, organization: str) -> Event:
    key = notification.findtext(f"{_OUTBOUND}Id", "").strip()
    record = notification.find(f"{_OUTBOUND}sObject")
    if not key or record is None:
        raise Unparseable("a Notification needs an Id and an sObject")
    fields: dict[str, Any] = {
        child.tag.rsplit("}", 1)[-1]: (child.text or "").strip()
        for child in record
        if child.get(_NIL) != "true"
    }
    sobject = record.get(_TYPE, "").rsplit(":", 1)[-1]
    fields["attributes"] = {"type": sobject}
    source = {"OrganizationId": organization}
    return Event(key, fields.get("Id", ""), fields, source=source, kind=_kind(sobject))


def _kind(sobject: str) -> str:
    """Our kind of an sObject type (`KINDS`); another type keeps its own name, which no kind
    has: the worker refuses it, naming it. A message naming no type (none seen) is a Contact's,
    as every Outbound Message was read before kinds."""
    return KINDS.get(sobject or "Contact", sobject)


@dataclass(frozen=True, kw_only=True)
class SalesforcePlatform(UrlSecret):
    """Salesforce: Outbound Messages sign nothing; the secret rides in the URL and the
    organization must be one the connection allows."""

    name: str = "salesforce"
    title: str = "Salesforce"
    adapter_class: Callable[..., Adapter] | None = Salesforce
    refreshable: bool = True
    objects: tuple[str, ...] = tuple(SOBJECTS)
    conditions: bool = True  # a backfill may take a condition the admin picks (a WHERE)
    view_noun: str = "list view"
    company_link: str = "AccountId"
    # Production's login host (a sandbox's is test.salesforce.com: override both URLs).
    oauth_authorize_url: str = "https://login.salesforce.com/services/oauth2/authorize"
    oauth_token_url: str = "https://login.salesforce.com/services/oauth2/token"
    oauth_scope: str = "api refresh_token"  # `full` alone gives no refresh token
    oauth_pkce: bool = True  # code_challenge S256; required of partner apps
    install: tuple[str, ...] = (
        "In Salesforce Setup, open Outbound Messages and choose New Outbound Message, object "
        "Contact: Endpoint URL {events}; fields Email, FirstName, LastName, Title.",
        "The Endpoint URL carries the connection's secret (ending in {hint}) as ?key=: "
        "Salesforce signs nothing, so keep the URL private.",
        "Send it from a record-triggered flow on Contact, created or updated.",
        "Likewise on Lead (fields Email, FirstName, LastName, Title, Company, Website) and on "
        "Account (Name, Website), to the same Endpoint URL.",
        "Messages are taken only from the organization ids the connection allows (Setup > "
        "Company Information names yours).",
        "Create the ContactData_*__c fields the mapping writes.",
    )

    def events(self, body: bytes) -> list[Event]:
        return salesforce_events(body)

    def admit(self, link: Row, found: list[Event]) -> None:
        """Salesforce signs nothing: its messages are taken only from the organizations named."""
        allowed = [org for org in link["allowed_organizations"].split(",") if org]
        for event in found:
            organization = event.source.get("OrganizationId")
            if organization is not None and not organization_allowed(organization, allowed):
                raise Refused(f"Salesforce organization {organization} is not allowed to send.")

    def acknowledgement(self, found: list[Event]) -> Answer:
        return Answer(SALESFORCE_ACK, "text/xml; charset=utf-8")

    def token_url(self, base_url: str) -> str:
        """The My Domain URL serves its own token endpoint."""
        return f"{base_url.strip().rstrip('/')}/services/oauth2/token"

    def installed_base_url(self, answer: Row, token_url: str, environment: str) -> str:
        """The org's `instance_url`, which every API call goes to."""
        return answer_url(answer, "instance_url", self.name)

    def revocation(self, grant: Credentials, token: str, hint: str) -> httpx.Request | None:
        """POST {host}/services/oauth2/revoke with token=: a refresh token takes its access
        tokens with it; 200 done, 400 invalid_token or unsupported_token_type (see
        https://help.salesforce.com/s/articleView?id=xcloud.remoteaccess_revoke_token.htm)."""
        url = f"{origin(grant.token_url)}/services/oauth2/revoke"
        return httpx.Request("POST", url, data={"token": token})

    def allowed_senders(self, ids: tuple[str, ...]) -> list[str]:
        cleaned = [i.strip() for i in ids if i.strip()]
        if not cleaned or not all(len(i) in (15, 18) and i.isalnum() for i in cleaned):
            raise ValueError(
                "salesforce: give the 15- or 18-character id of each Salesforce organization "
                "allowed to send (Setup > Company Information; --salesforce-org-id on the "
                "command line)"
            )
        return cleaned


def organization_allowed(organization_id: str, allowed: Iterable[str]) -> bool:
    """Whether an OrganizationId is allowed: ids compared by their case-sensitive 15-char form."""
    wanted = _id15(organization_id)
    return wanted is not None and any(_id15(a) == wanted for a in allowed)


def _id15(salesforce_id: str) -> str | None:
    """The 15-character id (an 18-character id adds a case checksum), None if not an id."""
    text = salesforce_id.strip()
    return text[:15] if _SALESFORCE_ID.fullmatch(text) else None


PLATFORM = SalesforcePlatform()
