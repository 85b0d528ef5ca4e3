"""Everything about Zoho CRM, in one place (`PLATFORM`, registered in connector/platforms/):
the records it enriches (`MODULES`: contacts, leads, and companies, which Zoho calls
Accounts); its Notification API callbacks sign nothing but carry the channel's token (the
connection's secret, 50 characters at most) and id, one thin event per record id, of the
kind the callback's `module` names (`zoho_events`); the channel (`channel_id`, watching the
create and edit events of every module, kept alive by connector/subscriptions.py through
`Zoho.watch`); OAuth tokens from the data centre's accounts server; and its adapter.

The adapter: Zoho CRM records of one module (its `kind`) over the v7 REST API, at
/crm/v7/{module} as Zoho's get-records and update-records pages give it for every module:
read one record or up to 100 by id a call, update one or up to 100 a call, list a module's
records for a backfill (get-records, 200 a page, by Zoho's page token, `If-Modified-Since`
for `--since`), and keep a Notification API channel alive. A Contact's Account_Name lookup
reads as its name, and as the Account's id when asked as Account_Name.id: the record its
company fields also go to (`company_link`, connector/worker.py). Updates carry
"trigger": [], so they start no workflow, approval or blueprint (no loop through a workflow
webhook); the Notification API still reports them (an edit is an edit), and the worker
leaves values the CRM already holds alone, so such an echo ends after one read.

Failures beyond `base.classify`:

- INVALID_DATA naming a field (details.api_name, alone or inside MULTIPLE_OR_MULTI_ERRORS)
  drops that field for that record and sends the rest again. On reads, fields Zoho names as
  invalid are dropped and asked again (read as None); when it refuses the "fields" parameter
  without naming one, the whole record is asked for instead (a batch read then reads record
  by record, since the batch endpoint needs "fields").
- A 400 refusing a whole batch update with one error naming no field sent (INVALID_DATA
  without an api_name, or naming `data`) may be one record's fault: each record is then sent
  alone, so the others are written. A code refusing the call itself (CALL_REFUSED:
  AUTHORIZATION_FAILED, INVALID_MODULE, NO_PERMISSION...) is every record's Permanent outcome.
- A missing record is Permanent: 204 No Content, a record a batch answer leaves out, or
  INVALID_DATA on the id ("the id given seems to be invalid").
- 401 (INVALID_TOKEN) is a token expired or revoked; OAUTH_SCOPE_MISMATCH a token lacking a
  scope. 429 (API credits spent over the rolling 24 h, or too many concurrent calls,
  https://www.zoho.com/crm/developer/docs/api/v4/api-limits.html) throttles the connection
  (`base.classify`): the worker holds all its events, counting no attempt, as long as
  Retry-After says; Zoho documents no such header, so without one for the worker's
  THROTTLED_WAIT_SECONDS. Other 4xx are Permanent with Zoho's code and message (MANDATORY_NOT_FOUND,
  DUPLICATE_DATA, RECORD_LOCKED, NO_PERMISSION, ...).

Fields (the mapping editor's): GET /crm/v7/settings/fields?module=<module> (the field meta
API: one answer, no pages), each field's data_type translated by `FIELD_TYPES`, a picklist's
options its values' actual_value (what a write sends), read-only where Zoho says so
(read_only, field_read_only) or its operation_type refuses api_update. A custom field is
created with POST /crm/v7/settings/fields?module= (create-custom-field: {"fields":
[{field_label, data_type, length}]}, answered 201 with each field's SUCCESS and id; the
ZohoCRM.settings.fields.CREATE scope, which the grant asks since issue 37). Zoho makes the
API name from the label (spaces as underscores), so the label is the name asked for with
spaces, and the name Zoho gave is read back by the id (GET /crm/v7/settings/fields/{id}).
A record is found by e-mail with GET
/crm/v7/<module>/search?email= (contacts and leads; an Account has no e-mail), 204 when none.
A backfill of one custom view lists the module's views (GET /crm/v7/settings/custom_views?
module=, the ZohoCRM.settings.custom_views.READ scope), then its records by `cvid`.
A job change's task is a record of Tasks (POST /crm/v7/Tasks, the insert-records API, the
ZohoCRM.modules.tasks.CREATE scope) for the record's Owner; its new contact one of Contacts.

Sources: Zoho CRM API v7 docs (get-records: fields, per_page, page_token,
If-Modified-Since; status codes: 304 Not Modified; update-records, notifications/enable and
update-info, multi-dc; the enable page's callback sample, a Leads one, is
tests/data/platforms/zoho_webhook.json), Zoho's OpenAPI description of the records endpoints
(200/207/400 shapes, per-record answers in the order sent; getRecords: `page` reaches 2,000
records and page tokens 100,000, EXPIRED_VALUE and TOKEN_BOUND_DATA_MISMATCH refuse a token),
Kaizen #25 (error codes by status) and Kaizen #203 (limits, TOO_MANY_REQUESTS).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from connector.platforms.base import (
    TOKEN_REFUSED,
    Adapter,
    CrmClient,
    CrmField,
    Delivery,
    Event,
    Listed,
    NewContact,
    Outcome,
    Permanent,
    Platform,
    Refusal,
    Refused,
    Retriable,
    Row,
    Task,
    Unparseable,
    Verified,
    View,
    WriteResult,
    answer_url,
    classify,
    dicts,
    garbled,
    id_chunks,
    json_body,
    json_object,
    matching,
    origin,
    read_each,
    same,
    write_dropping,
    write_many_dropping,
)
from server import UnreadableJson, decode_json

if TYPE_CHECKING:
    from connector.oauth import Credentials

# The API domain of each data centre, by the `location` Zoho's OAuth answer names (the token
# answer's `api_domain` is one of these), and each one's accounts server (where its code is
# exchanged and its token renewed). Checked against Zoho's multi-DC pages: Zoho Accounts'
# "Multi DC support" (https://www.zoho.com/accounts/protocol/oauth/multi-dc.html) lists the
# accounts servers of US, EU, IN, AU, JP, CA (accounts.zohocloud.ca), SA and UK
# (accounts.zoho.uk); Zoho CRM's (https://www.zoho.com/crm/developer/docs/api/v8/multi-dc.html)
# those of US, AU, EU, IN, CN, JP and CA; Bigin's (https://www.bigin.com/developer/docs/apis/
# multi-dc.html) the API domains of all but UK. UK's API domain, www.zohoapis.uk, is what a UK
# account's token answer gives as api_domain (issue 35): no stored Zoho page lists it yet.
ZOHO_DATA_CENTRES: dict[str, tuple[str, str]] = {
    "us": ("https://www.zohoapis.com", "https://accounts.zoho.com"),
    "eu": ("https://www.zohoapis.eu", "https://accounts.zoho.eu"),
    "in": ("https://www.zohoapis.in", "https://accounts.zoho.in"),
    "au": ("https://www.zohoapis.com.au", "https://accounts.zoho.com.au"),
    "jp": ("https://www.zohoapis.jp", "https://accounts.zoho.jp"),
    "ca": ("https://www.zohoapis.ca", "https://accounts.zohocloud.ca"),
    "sa": ("https://www.zohoapis.sa", "https://accounts.zoho.sa"),
    "cn": ("https://www.zohoapis.com.cn", "https://accounts.zoho.com.cn"),
    "uk": ("https://www.zohoapis.uk", "https://accounts.zoho.uk"),
}
ZOHO_API_DOMAINS = {location: api for location, (api, _) in ZOHO_DATA_CENTRES.items()}
# The accounts server of each data centre, by its API domain.
ZOHO_ACCOUNTS = dict(ZOHO_DATA_CENTRES.values())
TOKEN_LIMIT = 50  # characters of a notification channel's token
API = "/crm/v7"
WATCH = f"{API}/actions/watch"
# Our kinds of record -> Zoho's module API names (the path of get/update records, the
# `module` of a notification, the events of a channel), and what each calls one record.
MODULES = {"contacts": "Contacts", "leads": "Leads", "companies": "Accounts"}
KINDS = {module: kind for kind, module in MODULES.items()}
RECORD_NAMES = {"contacts": "contact", "leads": "lead", "companies": "account"}
FIELDS = f"{API}/settings/fields"
# Our types of a field to create -> Zoho's data type and length (create-custom-field; "Field
# Types: Data Types and Length Limits": a single line holds 255 characters, a number 9 digits).
CREATED_TYPES: dict[str, dict[str, Any]] = {
    "text": {"data_type": "text", "length": 255},
    "number": {"data_type": "integer", "length": 9},
}
CUSTOM_VIEWS = f"{API}/settings/custom_views"  # a module's custom views (saved views)
SCOPE_MISMATCH = "OAUTH_SCOPE_MISMATCH"  # a token lacking the scope a call needs
# Zoho's data types (the field meta API's data_type) -> ours (base.FIELD_TYPES); others "other".
FIELD_TYPES = {
    "text": "text", "textarea": "text", "email": "email", "phone": "phone", "website": "url",
    "integer": "number", "bigint": "number", "double": "number", "currency": "number",
    "decimal": "number", "percent": "number", "boolean": "boolean", "date": "date",
    "datetime": "datetime", "picklist": "picklist", "multiselectpicklist": "multipicklist",
    "lookup": "reference", "ownerlookup": "reference", "userlookup": "reference",
}  # fmt: skip
WATCHED_OPERATIONS = ("create", "edit")  # a deleted record has nothing to enrich
BATCH_SIZE = 100  # records an update takes (documented)
FIELDS_PER_READ = 50  # field names a read takes (documented; LIMIT_EXCEEDED beyond)
# Zoho documents no limit for `ids`; its OpenAPI description caps a get-records answer at
# 100 records (a page holds up to 200), so 100 ids a call.
IDS_PER_READ = 100
FIELD_ERRORS = frozenset({"INVALID_DATA"})  # codes that, naming a field, drop it
PAGE_SIZE = 200  # records a page of get-records holds at most (per_page, documented)
# A page token Zoho no longer takes: lapsed (page_token_expiry), or bound to other parameters
# (the fields asked changed since): the listing starts over from its first page.
TOKEN_LAPSED = frozenset({"EXPIRED_VALUE", "TOKEN_BOUND_DATA_MISMATCH"})
NOTHING = (204, 304)  # no records; none modified since If-Modified-Since
LOOKUP_ID = ".id"  # a property "<lookup field>.id": the id of the record it links to
# Codes of a 400 refusing a call for what it is, not for a record in it (Zoho's update-records
# errors and Kaizen #25): each record sent alone would be refused alike.
CALL_REFUSED = frozenset(
    {
        "INVALID_MODULE",
        "INVALID_REQUEST_METHOD",
        "INVALID_URL_PATTERN",
        "AUTHORIZATION_FAILED",
        "AUTHENTICATION_FAILURE",
        "NO_PERMISSION",
        "FEATURE_NOT_SUPPORTED",
        "NOT_SUPPORTED",
        "LICENSE_LIMIT_EXCEEDED",
    }
)
Record = dict[str, Any]
log = logging.getLogger(__name__)


class _Refused(Permanent):
    """A request Zoho refused as invalid (400 with its own error `codes`): for a batch read,
    the cue to read record by record; for renewing a channel, to enable it; for a listing's
    page token, to start over."""

    def __init__(self, reason: str, codes: Iterable[Any] = ()) -> None:
        super().__init__(reason)
        self.codes = frozenset(code for code in codes if isinstance(code, str))


def watched_events(kinds: Sequence[str]) -> list[str]:
    """The events a channel watches for `kinds` of record: "Contacts.create", ...."""
    return [f"{MODULES[kind]}.{operation}" for kind in kinds for operation in WATCHED_OPERATIONS]


class Zoho(CrmClient):
    """Zoho CRM records of the module of its `kind` (MODULES), over a client the caller
    builds; `base_url` is the account's data centre API domain (one of ZOHO_API_DOMAINS) and
    `token` an OAuth access token."""

    platform = "zoho"

    @property
    def records(self) -> str:
        """The path of its module's records: /crm/v7/Contacts, /crm/v7/Leads, /crm/v7/Accounts."""
        return f"{API}/{MODULES[self.kind]}"

    def _record(self, record_id: str) -> str:
        return f"{self.records}/{quote(str(record_id), safe='')}"

    def token_headers(self, token: str) -> dict[str, str]:
        return {"Authorization": f"Zoho-oauthtoken {token}"}

    def read(self, record_id: str, properties: Sequence[str]) -> dict[str, Any]:
        """The record's current values of `properties` (field API names), None where empty
        or unknown; a lookup (Account_Name, Owner) reads as its name, and as the id of the
        record it links to when asked as "<field>.id" (Account_Name.id)."""
        values: Record = {}
        for fields in _slices(_fields(properties), FIELDS_PER_READ) or [[]]:
            records = self._get(self._record(record_id), fields)
            if not records:
                what = RECORD_NAMES[self.kind]
                raise Permanent(f"no Zoho {what} {record_id}: 204 No Content (deleted?)")
            values.update(records[0])
        return _picked(values, properties)

    def read_many(
        self, record_ids: Sequence[str], properties: Sequence[str]
    ) -> dict[str, dict[str, Any] | Permanent]:
        """Records 100 a call by their ids; each one's values, or Permanent where Zoho has
        no such record. A refused batch (an id Zoho cannot parse) is read record by record,
        so one bad id does not fail the others."""
        found: dict[str, dict[str, Any] | Permanent] = {}
        for ids in id_chunks(record_ids, IDS_PER_READ):
            try:
                found.update(self._read_batch(ids, list(properties)))
            except _Refused:
                found.update(read_each(self.read, ids, properties))
        return found

    def list_page(self, properties: Sequence[str], since: str | None, cursor: str | None) -> Listed:
        """A page of 200 records of its module by the get-records API (GET /crm/v7/{module}
        with `fields` and per_page=200), modified at or after `since` when given (the
        If-Modified-Since header, with its offset as Zoho's sample writes it; 304 when none
        is). The cursor is Zoho's page token (info.next_page_token): `page` reaches the first
        2,000 records only, tokens 100,000. A lapsed token, or one bound to other fields,
        starts the listing over (records queued before are not queued again). A GET takes 50
        field names: the rest are read by id. Zoho does not say how many records remain."""
        return self._list_page(properties, since, cursor, {})

    def views(self) -> list[View]:
        """The module's custom views (GET /crm/v7/settings/custom_views?module=), by name as
        Zoho shows them (display_value); their records are listed by `cvid`."""
        found, page = [], 1
        while True:
            params = {"module": MODULES[self.kind], "page": str(page), "per_page": "200"}
            response = self._send("GET", CUSTOM_VIEWS, params=params)
            if response.status_code == 204:
                break
            _reconnect_for(response, "ZohoCRM.settings.custom_views.READ")
            self._check(response)
            body = _body(response)
            found += [View(str(item.get("id")), str(item.get("display_value") or item.get("name")))
                      for item in dicts(body.get("custom_views"))]  # fmt: skip
            if (body.get("info") or {}).get("more_records") is not True:
                break
            page += 1
        return sorted(found, key=lambda view: view.name.casefold())

    def list_view_page(
        self, view: str, properties: Sequence[str], since: str | None, cursor: str | None
    ) -> Listed:
        """A page of the records of the custom view `view`, as `list_page` pages the
        module's (the get-records API's `cvid`)."""
        if not view.isdigit():
            raise Permanent(f"no Zoho custom view has the id {view!r}")
        return self._list_page(properties, since, cursor, {"cvid": view})

    def _list_page(self, properties: Sequence[str], since: str | None, cursor: str | None,
                   extra: dict[str, str]) -> Listed:  # fmt: skip
        """A page of the module's records by the get-records API, with `extra` parameters."""
        fields = _fields(properties)
        params = {"per_page": str(PAGE_SIZE), **extra,
                  **({"page_token": cursor} if cursor else {})}  # fmt: skip
        headers = {"If-Modified-Since": _zoho_time(since)} if since else None
        try:
            records, info = self._get_page(self.records, fields[:FIELDS_PER_READ], params, headers)
        except _Refused as refused:
            if not (cursor and refused.codes & TOKEN_LAPSED):
                raise
            log.info("Zoho refused a listing's page token (%s): listing again", refused.reason)
            return self._list_page(properties, since, None, extra)
        values = {str(record.get("id")): record for record in records}
        for ids in id_chunks(list(values), IDS_PER_READ) if fields[FIELDS_PER_READ:] else []:
            for key, rest in self._read_raw(ids, fields[FIELDS_PER_READ:]).items():
                values.get(key, {}).update(rest)
        following = info.get("next_page_token")
        if info.get("more_records") is not True:
            following = None
        elif not (isinstance(following, str) and following):
            raise Retriable("Zoho's page says more records follow but names no next_page_token")
        return Listed({key: _picked(record, properties) for key, record in values.items()},
                      following)  # fmt: skip

    def write(self, record_id: str, properties: dict[str, Any]) -> WriteResult:
        """Update one record; fields Zoho refuses as invalid are dropped and reported."""
        return write_dropping(lambda sent: self._update(record_id, sent), properties)

    def write_many(self, changes: dict[str, dict[str, Any]]) -> dict[str, WriteResult | Permanent]:
        """Update records 100 a call; each record's outcome."""
        return write_many_dropping(self._update_batch, changes, BATCH_SIZE)

    def fields(self) -> list[CrmField]:
        """The module's fields, from the field meta API (see the module docstring)."""
        response = self._send("GET", FIELDS, params={"module": MODULES[self.kind]})
        self._check(response)
        listed = _body(response).get("fields")
        if not isinstance(listed, list) or not all(_described(item) for item in listed):
            raise garbled(response, f"the fields of {MODULES[self.kind]}")
        return [_field(item) for item in listed]

    def create_field(self, name: str, label: str, type: str) -> CrmField:
        """A new custom field of its module, labelled `name` with spaces for underscores
        (Zoho makes the API name from the label, so ContactData Industry is
        ContactData_Industry; `label` is not used), as Zoho then describes it by its id."""
        if type not in CREATED_TYPES:
            raise Permanent(
                f"a Zoho field of type {type!r} is created in Zoho CRM's Setup (Modules and "
                f"Fields > {MODULES[self.kind]}), with its options where it has some"
            )
        body = {"fields": [{"field_label": name.replace("_", " "), **CREATED_TYPES[type]}]}
        response = self._send("POST", FIELDS, params={"module": MODULES[self.kind]}, json=body)
        _reconnect_for(response, "ZohoCRM.settings.fields.CREATE")
        self._check(response)
        return self._field_by_id(_created_id(response))

    def _field_by_id(self, field_id: str) -> CrmField:
        """One field of its module, as the field meta API describes it by its id."""
        path = f"{FIELDS}/{quote(field_id, safe='')}"
        response = self._send("GET", path, params={"module": MODULES[self.kind]})
        self._check(response)
        described = _body(response).get("fields")
        if not (isinstance(described, list) and described and _described(described[0])):
            raise garbled(response, f"field {field_id} under fields")
        return _field(described[0])

    def find(self, email: str) -> str | None:
        """The id of the module's record whose e-mail is `email`; None when Zoho has none."""
        if self.kind == "companies":
            raise Permanent("a Zoho Account has no e-mail to find it by")
        response = self._send("GET", f"{self.records}/search", params={"email": email})
        if response.status_code == 204:
            return None
        self._check(response)
        found = _body(response).get("data")
        if not isinstance(found, list) or not all(isinstance(r, dict) and "id" in r for r in found):
            raise garbled(response, "records under data")
        return str(found[0]["id"]) if found else None

    def watch(
        self,
        channel_id: str,
        notify_url: str,
        token: str,
        expires: datetime,
        lapsed: bool = False,
        events: Sequence[str] = ("Contacts.create", "Contacts.edit"),
    ) -> datetime:
        """Enable, or renew (same `channel_id`), the notification channel posting `events`
        (records' create and edit, of one module or several) to `notify_url` with `token`;
        the earliest expiry Zoho confirmed for them.

        Zoho keeps a channel at most a week (a day before API v4): an `expires` further out
        gets its one-hour default instead, and that is what comes back, so schedule the next
        renewal from the answer. A live channel is renewed with PATCH (update specific
        details), a `lapsed` one (expired, or never enabled) enabled again with POST, as Zoho
        advises; when Zoho refuses either (it does not know the channel, or still has it),
        the other is asked."""
        if expires.tzinfo is None:
            raise ValueError("expires needs a time zone: Zoho reads channel_expiry with its offset")
        channel = {
            "channel_id": channel_id,
            "events": list(events),
            "channel_expiry": expires.isoformat(timespec="seconds"),
            "token": token,
            "notify_url": notify_url,
            "notify_on_related_action": False,  # notes, calls...: no new record data
        }
        first, then = ("POST", "PATCH") if lapsed else ("PATCH", "POST")
        try:
            return self._subscribe(first, channel)
        except _Refused:
            return self._subscribe(then, channel)

    def unwatch(self, channel_ids: Sequence[str]) -> None:
        """Disable notification channels: Zoho stops posting to them at once."""
        response = self._send("DELETE", WATCH, params={"channel_ids": ",".join(channel_ids)})
        self._check(response)

    def _read_batch(
        self, ids: list[str], properties: list[str]
    ) -> dict[str, dict[str, Any] | Permanent]:
        values = self._read_raw(ids, _fields(properties))
        what = RECORD_NAMES[self.kind]
        missing = Permanent(f"no such Zoho {what}: the batch read left it out (deleted?)")
        return {key: _picked(values[key], properties) if key in values else missing for key in ids}

    def _read_raw(self, ids: list[str], fields: list[str]) -> dict[str, Record]:
        """Records by id as Zoho answers them, asking 50 `fields` a call."""
        values: dict[str, Record] = {}
        for chunk in _slices(fields, FIELDS_PER_READ) or [[]]:
            for record in self._get(self.records, chunk, {"ids": ",".join(ids)}):
                values.setdefault(str(record.get("id")), {}).update(record)
        return values

    def _get(
        self, path: str, fields: list[str], params: dict[str, str] | None = None
    ) -> list[Record]:
        """The records a GET answers ([] for 204 No Content), asking for `fields`; fields
        Zoho refuses are dropped and the rest asked for again."""
        return self._get_page(path, fields, params)[0]

    def _get_page(
        self,
        path: str,
        fields: list[str],
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[list[Record], Record]:
        """`_get`'s records, with the answer's `info` (paging); none for 204 or 304."""
        query = {**(params or {}), **({"fields": ",".join(fields)} if fields else {})}
        response = self._send("GET", path, headers, params=query or None)
        unknown = _unknown_fields(response, fields)
        if unknown:
            kept = [name for name in fields if name not in unknown]
            return self._get_page(path, kept, params, headers)
        if response.status_code in NOTHING:
            return [], {}
        self._check(response)
        body = _body(response)
        records, info = body.get("data"), body.get("info")
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise garbled(response, "records under data")
        return records, info if isinstance(info, dict) else {}

    def create_task(self, record_id: str, task: Task) -> str:
        """A Task (POST /crm/v7/Tasks) for the record's owner (Owner, read first), linked to
        it: a contact by Who_Id, a lead or an account by What_Id and $se_module; its id."""
        owner = self.read(record_id, [f"Owner{LOOKUP_ID}"]).get(f"Owner{LOOKUP_ID}")
        link = {"Who_Id": {"id": record_id}} if self.kind == "contacts" else {
            "What_Id": {"id": record_id}, "$se_module": MODULES[self.kind]}  # fmt: skip
        values = {"Subject": task.subject, "Description": task.body, "Due_Date": task.due_on,
                  "Status": "Not Started", **link,
                  **({"Owner": {"id": str(owner)}} if owner else {})}  # fmt: skip
        return self._insert("Tasks", values)

    def create_contact(self, contact: NewContact, linked_to: str) -> str:
        """A Contact (POST /crm/v7/Contacts) whose Description is the note naming the record
        `linked_to`; its id."""
        values = {"First_Name": contact.first_name, "Last_Name": contact.last_name,
                  "Title": contact.title, "Description": contact.note}  # fmt: skip
        return self._insert("Contacts", {k: v for k, v in values.items() if v})

    def _insert(self, module: str, values: dict[str, Any]) -> str:
        """Insert one record of `module` (Zoho's insert-records API); its id."""
        response = self._send("POST", f"{API}/{module}", json=_payload([values]))
        self._check(response)
        answers = _body(response).get("data")
        first = answers[0] if isinstance(answers, list) and answers else {}
        details = first.get("details") if isinstance(first, dict) else None
        if not (first.get("code") == "SUCCESS" and isinstance(details, dict) and details.get("id")):
            raise Permanent(f"Zoho did not add the {module} record: {_describe(first)}")
        return str(details["id"])

    def _update(self, record_id: str, values: dict[str, Any]) -> Refusal:
        outcome = self._update_one(record_id, values)
        if isinstance(outcome, Permanent):
            raise outcome
        return outcome if isinstance(outcome, dict) else {}

    def _update_one(self, record_id: str, values: dict[str, Any]) -> Outcome:
        response = self._send("PUT", self._record(record_id), json=_payload([values]))
        return self._outcomes(response, {record_id: values})[record_id]

    def _update_batch(self, changes: dict[str, dict[str, Any]]) -> dict[str, Outcome]:
        records = [{"id": key, **values} for key, values in changes.items()]
        return self._outcomes(self._send("PUT", self.records, json=_payload(records)), changes)

    def _outcomes(self, response: httpx.Response, changes: dict[str, Record]) -> dict[str, Outcome]:
        """Each record's outcome: from `data` (one answer a record, in the order sent) of a
        2xx or 400 answer; from a 400's top-level error, as `_refused_call` reads it; else
        the call's failure for all."""
        body = _body(response)
        answers = body.get("data")
        if isinstance(answers, list) and (response.is_success or response.status_code == 400):
            return _per_record(changes, answers, RECORD_NAMES[self.kind])
        if _top_level_refusal(response, body):
            return self._refused_call(body, changes)
        try:
            self._check(response)
        except Permanent as failure:  # the whole call refused: every record's outcome
            return dict.fromkeys(changes, failure)
        return dict.fromkeys(changes, Permanent("Zoho answered without a result per record"))

    def _refused_call(self, body: Record, changes: dict[str, Record]) -> dict[str, Outcome]:
        """A 400 with one error for the whole call. Fields it names that were sent are
        refused for every record (those without them go again as they are); a code refusing
        the call itself (CALL_REFUSED) is every record's outcome. Any other (INVALID_DATA
        naming no field sent, ...) may be one record's fault: several records are then sent
        one a call, so that the others are written."""
        named = _named_fields(body)
        if any(matching(values, named) for values in changes.values()):
            return dict.fromkeys(changes, named)
        if len(changes) > 1 and body.get("code") not in CALL_REFUSED:
            return {key: self._update_one(key, values) for key, values in changes.items()}
        return dict.fromkeys(changes, Permanent(f"400 Bad Request: {_describe(body)}"))

    def _subscribe(self, method: str, channel: Record) -> datetime:
        response = self._send(method, WATCH, json={"watch": [channel]})
        self._check(response)
        expiry = _confirmed_expiry(_body(response), str(channel["channel_id"]))
        if expiry is None:
            errors = "; ".join(map(_describe, _errors(_body(response))))
            raise _Refused(f"{method} {WATCH}: {errors or 'no channel expiry confirmed'}")
        return expiry

    def _check(self, response: httpx.Response) -> None:
        """Raise for an answer refusing the whole call: 401 (or INVALID_TOKEN) a token
        expired or revoked, other 4xx with Zoho's codes (a 400 as `_Refused`), the rest as
        `classify` (429 and 5xx Retriable, honoring Retry-After)."""
        if response.is_success:
            return
        status, errors = response.status_code, _errors(_body(response))
        codes = {error.get("code") for error in errors}
        if SCOPE_MISMATCH in codes:
            raise Permanent(f"{status} {SCOPE_MISMATCH}: the token lacks a scope for this call")
        if status == 401 or "INVALID_TOKEN" in codes:
            raise Permanent(TOKEN_REFUSED)
        if 400 <= status < 500 and status != 429 and errors:
            reason = f"{status} {response.reason_phrase}: {'; '.join(map(_describe, errors))}"
            raise _Refused(reason, codes) if status == 400 else Permanent(reason)
        classify(response)


def _reconnect_for(response: httpx.Response, scope: str) -> None:
    """Permanent, saying to reconnect, when Zoho refused a call for a scope the grant lacks
    (OAUTH_SCOPE_MISMATCH): a grant made before the connector asked for `scope`."""
    if SCOPE_MISMATCH in {error.get("code") for error in _errors(_body(response))}:
        raise Permanent(
            f"the connection's grant lacks the scope {scope} (it was connected before the "
            "connector asked for it): press Reconnect with Zoho CRM on the connection's page "
            "to grant it"
        )


def _created_id(response: httpx.Response) -> str:
    """The id of the one field a create-custom-field answer says it made; Permanent with
    Zoho's words when it says it made none."""
    answers = dicts(_body(response).get("fields"))
    made = answers[0] if len(answers) == 1 else {}
    field_id = _details(made).get("id")
    if made.get("code") == "SUCCESS" and isinstance(field_id, str | int) and str(field_id):
        return str(field_id)
    if made.get("status") == "error":
        raise Permanent(f"Zoho created no field: {_describe(made)}")
    raise garbled(response, "one field's SUCCESS and id under fields")


def _described(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("api_name"), str)


def _field(item: Record) -> CrmField:
    """A field of the field meta API as ours."""
    operations = item.get("operation_type")
    refused = isinstance(operations, dict) and operations.get("api_update") is False
    values = dicts(item.get("pick_list_values"))
    return CrmField(
        name=item["api_name"],
        label=str(item.get("field_label") or item.get("display_label") or item["api_name"]),
        type=FIELD_TYPES.get(str(item.get("data_type")), "other"),
        options=tuple(str(v["actual_value"]) for v in values if "actual_value" in v),
        read_only=refused or item.get("read_only") is True or item.get("field_read_only") is True,
        custom=item.get("custom_field") is True,
    )


def _slices(items: list[str], size: int) -> list[list[str]]:
    return [items[start : start + size] for start in range(0, len(items), size)]


def _fields(properties: Sequence[str]) -> list[str]:
    """The field API names to ask for `properties` ("Account_Name.id" is Account_Name's)."""
    return list(dict.fromkeys(name.removesuffix(LOOKUP_ID) for name in properties))


def _picked(record: Record, properties: Sequence[str]) -> dict[str, Any]:
    return {name: _value(record, name) for name in properties}


def _value(record: Record, name: str) -> Any:
    """A property's value: a field's as `_flat` gives it, or a lookup's id ("<field>.id")."""
    if not name.endswith(LOOKUP_ID):
        return _flat(record.get(name))
    lookup = record.get(name.removesuffix(LOOKUP_ID))
    linked = lookup.get("id") if isinstance(lookup, dict) else None
    return str(linked) if isinstance(linked, str | int) and linked != "" else None


def _zoho_time(since: str) -> str:
    """An ISO 8601 time as Zoho's If-Modified-Since sample writes it: 2019-07-25T15:26:49+05:30."""
    when = datetime.fromisoformat(since)
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).isoformat(timespec="seconds")


def _flat(value: Any) -> Any:
    """A value as a mapping compares it: a lookup ({"name", "id"}) as its name."""
    if isinstance(value, dict) and "name" in value:
        return value["name"]
    if isinstance(value, list):
        return [_flat(item) for item in value]
    return value


def _payload(records: list[Record]) -> Record:
    """An update's body: the records (multi-select values as JSON arrays) and an empty
    trigger list, so the write starts no workflow, approval or blueprint."""
    data = [
        {name: list(value) if isinstance(value, tuple) else value for name, value in rec.items()}
        for rec in records
    ]
    return {"data": data, "trigger": []}


def _per_record(changes: dict[str, Record], answers: list[Any], what: str) -> dict[str, Outcome]:
    outcomes = {
        key: _outcome(values, answer)
        for (key, values), answer in zip(changes.items(), answers, strict=False)
        if isinstance(answer, dict)
    }
    left_out = Permanent(f"Zoho's answer left this {what} out")
    return {key: outcomes.get(key, left_out) for key in changes}


def _outcome(values: Record, answer: Record) -> Outcome:
    """One record's answer: written, its fields refused (those it was sent), or Permanent."""
    if answer.get("code") == "SUCCESS":
        return WriteResult(written=dict(values))
    return matching(values, _named_fields(answer)) or Permanent(_describe(answer))


def _named_fields(error: Record) -> Refusal:
    """The fields an error refuses as invalid, each with Zoho's words; a
    MULTIPLE_OR_MULTI_ERRORS error lists its errors in details.errors."""
    nested = [error]
    if error.get("code") == "MULTIPLE_OR_MULTI_ERRORS":
        nested = dicts(_details(error).get("errors"))
    return {
        _details(item)["api_name"]: _reason(item)
        for item in nested
        if item.get("code") in FIELD_ERRORS and isinstance(_details(item).get("api_name"), str)
    }


def _unknown_fields(response: httpx.Response, fields: list[str]) -> list[str]:
    """The asked fields a 400 INVALID_DATA refuses: those it names, or all of them when it
    refuses the "fields" parameter without saying which (the record is then asked whole)."""
    if response.status_code != 400 or not fields:
        return []
    errors = _errors(_body(response))
    refused: Refusal = {}
    for error in errors:
        refused.update(_named_fields(error))
    named = matching(dict.fromkeys(fields), refused)
    if named:
        return list(named)
    unnamed = any(
        error.get("code") in FIELD_ERRORS and _details(error).get("param_name") == "fields"
        for error in errors
    )
    return list(fields) if unnamed else []


def _top_level_refusal(response: httpx.Response, body: Record) -> bool:
    """Whether a write's answer is a 400 with one error for the whole request (not per
    record, and not a token Zoho rejects)."""
    error = body.get("status") == "error" and body.get("code") != "INVALID_TOKEN"
    return response.status_code == 400 and error


def _confirmed_expiry(body: Record, channel_id: str) -> datetime | None:
    """The earliest channel_expiry Zoho confirmed for the channel's events, if any."""
    expiries = [
        _moment(event.get("channel_expiry"))
        for answer in dicts(body.get("watch"))
        if answer.get("code") == "SUCCESS"
        for event in dicts(_details(answer).get("events"))
        if str(event.get("channel_id")) == channel_id
    ]
    return min((when for when in expiries if when is not None), default=None)


def _moment(text: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _errors(body: Record) -> list[Record]:
    """Zoho's errors in an answer: a top-level one, or the failed items of `data` (records),
    `watch` (channels) or `fields` (fields to create)."""
    if body.get("status") == "error":
        return [body]
    items = [item for name in ("data", "watch", "fields") for item in dicts(body.get(name))]
    return [item for item in items if item.get("status") == "error"]


def _reason(error: Record) -> str:
    return ": ".join(str(part) for part in (error.get("code"), error.get("message")) if part)


def _describe(error: Record) -> str:
    """An error as code, message and the field it names: "MANDATORY_NOT_FOUND: required
    field not found (Last_Name)"."""
    field = _details(error).get("api_name")
    reason = _reason(error) or "refused without a reason"
    return f"{reason} ({field})" if isinstance(field, str) else reason


def _details(error: Record) -> Record:
    details = error.get("details")
    return details if isinstance(details, dict) else {}


def _body(response: httpx.Response) -> Record:
    body = json_body(response)
    return body if isinstance(body, dict) else {}


def zoho_events(document: dict[str, Any]) -> list[Event]:
    """A Notification API callback: one thin event per id, of the kind its `module` names
    (Contacts, Leads, Accounts), keyed by channel, time, module (but for Contacts, keyed as
    before there were others) and id; other modules and deletions give none."""
    ids = document.get("ids")
    if not isinstance(ids, list) or not all(isinstance(i, str | int) for i in ids):
        raise Unparseable("a Zoho notification needs its ids")
    module = document.get("module")
    kind = KINDS.get(module) if isinstance(module, str) else None
    if kind is None or document.get("operation") == "delete":
        return []
    channel, sent = document.get("channel_id", ""), document.get("server_time", "")
    prefix = f"{channel}:{sent}:" + ("" if kind == "contacts" else f"{module}:")
    fields = {name: document.get(name) for name in ("module", "operation", "channel_id")}
    return [
        Event(f"{prefix}{record_id}", str(record_id), {"id": str(record_id), **fields},
              thin=True, kind=kind)
        for record_id in ids
    ]  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class ZohoPlatform(Platform):
    """Zoho CRM: notifications carry their channel's token and id in the body."""

    name: str = "zoho"
    title: str = "Zoho CRM"
    signing: str = "body-token"
    adapter_class: Callable[..., Adapter] | None = Zoho
    refreshable: bool = True
    subscribes: bool = True
    objects: tuple[str, ...] = tuple(MODULES)  # contacts, leads, companies (Accounts)
    view_noun: str = "custom view"
    # A Contact's Account_Name is a lookup ({"name", "id"}) that `read` gives as its name (the
    # mapping's company name); asked as Account_Name.id it gives the linked Account's id.
    company_link: str = f"Account_Name{LOOKUP_ID}"
    # Consent starts at accounts.zoho.com whatever the data centre; the redirect names the
    # account's accounts-server, where its code is then exchanged. Scopes are comma-separated.
    oauth_authorize_url: str = "https://accounts.zoho.com/oauth/v2/auth"
    oauth_token_url: str = "https://accounts.zoho.com/oauth/v2/token"
    oauth_scope: str = (
        "ZohoCRM.modules.contacts.ALL,ZohoCRM.modules.leads.ALL,ZohoCRM.modules.accounts.ALL,"
        "ZohoCRM.modules.tasks.CREATE,ZohoCRM.settings.fields.READ,ZohoCRM.settings.fields.CREATE,"
        "ZohoCRM.settings.custom_views.READ,ZohoCRM.notifications.ALL"
    )
    # A refresh token only with access_type=offline; prompt=consent gives one each time.
    oauth_consent_params: tuple[tuple[str, str], ...] = (
        ("access_type", "offline"),
        ("prompt", "consent"),
    )

    # The channel is enabled when the CRM is connected and renewed hourly (subscriptions.py).
    registers_webhooks: bool = True
    install: tuple[str, ...] = (
        "Nothing to paste in Zoho CRM: the connector enables a notification channel (create "
        "and edit of Contacts, Leads and Accounts) posting to {events} with the connection's "
        "secret (ending in {hint}) as its token, and renews it before it expires.",
        "It needs the scope ZohoCRM.notifications.ALL in the connection's grant (connect again "
        "to add it) and CONTACTDATA_PUBLIC_URL public over https; then register again.",
        "Create the ContactData_* fields of Contacts, Leads and Accounts the mapping writes.",
    )
    removal: tuple[str, ...] = (
        "Nothing to do by hand: Zoho's channel lapses within a week, and until then what it "
        "posts to {events} is refused.",
    )

    def verify(self, link: Row, secret: str, delivery: Delivery) -> Verified:
        """Zoho signs nothing: its notifications carry the channel's token (our secret) and id."""
        try:
            document = decode_json(delivery.body)
        except UnreadableJson:
            document = None
        if not isinstance(document, dict):
            raise Refused("A Zoho notification carries its channel's token: none found.")
        same(str(document.get("token", "")), secret, "The token is not this connection's.")
        if str(document.get("channel_id", "")) != self.channel_id(link):
            raise Refused("The notification is not from this connection's Zoho channel.")
        return Verified()

    def events(self, body: bytes) -> list[Event]:
        return zoho_events(json_object(body))

    def callback_token_url(self, token_url: str, args: Mapping[str, str]) -> str:
        """The account's data centre names its accounts server (`accounts-server`) on the
        callback; the code is exchanged there, and the grant renewed. Only a Zoho accounts
        server (or the app's own token host, a test's) is taken: the client secret goes there."""
        server = args.get("accounts-server", "").strip().rstrip("/")
        if not server:
            return token_url
        if server not in ZOHO_ACCOUNTS.values() and server != origin(token_url):
            raise ValueError(f"{server!r} is not a Zoho accounts server")
        return f"{server}/oauth/v2/token"

    def installed_base_url(self, answer: Row, token_url: str, environment: str) -> str:
        """The data centre's `api_domain` (https://www.zohoapis.eu, …)."""
        return answer_url(answer, "api_domain", self.name)

    def revocation(self, grant: Credentials, token: str, hint: str) -> httpx.Request | None:
        """POST {accounts-server}/oauth/v2/token/revoke?token=…, at the grant's own accounts
        server: a refresh token takes the access tokens made from it; {"status": "success"},
        or 400 for a token it does not know (see
        https://www.zoho.com/crm/developer/docs/api/v8/revoke-tokens.html)."""
        url = f"{origin(grant.token_url)}/oauth/v2/token/revoke"
        return httpx.Request("POST", url, params={"token": token})

    def token_url(self, base_url: str) -> str:
        base = base_url.strip().rstrip("/")
        accounts = ZOHO_ACCOUNTS.get(base)
        return f"{accounts}/oauth/v2/token" if accounts else f"{base}/oauth/v2/token"

    def check_secret(self, secret: str) -> None:
        if len(secret) > TOKEN_LIMIT:
            raise ValueError(f"secret: Zoho takes a token of {TOKEN_LIMIT} characters at most")

    def check_base_url(self, base_url: str, local: bool) -> None:
        """The account's data centre API domain (a local fake Zoho, for tests, when `local`)."""
        if not local and base_url.rstrip("/") not in ZOHO_API_DOMAINS.values():
            raise ValueError(
                "crm-base-url: give your Zoho data centre's API domain (the api_domain of the "
                f"OAuth token answer): one of {', '.join(ZOHO_API_DOMAINS.values())}"
            )

    def channel_id(self, link: Row) -> str:
        """A number (Zoho's channel ids are longs) made from the connection's id, so it needs
        no storing and never changes."""
        return str(10**17 + uuid.UUID(link["id"]).int % (9 * 10**17))

    def subscribe(
        self, adapter: Zoho, link: Row, notify_url: str, token: str, until: datetime,
        lapsed: bool,
    ) -> datetime:  # fmt: skip
        """The connection's one channel watches the records of every kind it enriches."""
        channel = self.channel_id(link)
        events = watched_events(self.objects)
        return adapter.watch(channel, notify_url, token, until, lapsed, events)

    def tear_down_webhooks(self, adapter: Zoho, ids: Sequence[str]) -> None:
        """Disable the connection's channel."""
        if ids:
            adapter.unwatch(ids)


PLATFORM = ZohoPlatform()
