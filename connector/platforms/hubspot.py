"""Everything about HubSpot, in one place (`PLATFORM`, registered in connector/platforms/):

- Its objects: contacts and companies (`OBJECTS`; HubSpot's leads are not in our scope).
- Its requests: signed v1, v2 or v3 (`HubSpotPlatform.verify`), as Webhooks API batches,
  workflow webhooks or custom workflow action execution requests (`hubspot_kind`), read into
  events of a contact or a company (`hubspot_events`; `hubspot_record_kind`, which also
  picks an enrich request's mapping): a subscription's type (`company.propertyChange`, or
  `object.*` with objectTypeId 0-2), a company-based workflow's company (`companyId`, or a
  customized body with "objectType": "COMPANY"), a custom action's `object.objectType`; a
  custom action is answered with `outputFields` (SUCCESS, FAIL_CONTINUE, or BLOCK and
  completed later through the callback API), named once by its `callbackId`; everything
  else `{"accepted": n}`.
- Our own writes coming back: a property change event whose value is the one we wrote.
- Companies through contacts: a contact's `associatedcompanyid` names its primary company,
  which then gets the company fields of the contact's enrichment.
- OAuth: the date-versioned token endpoint (v1 ends on 2027-02-16).
- As a public app: the account (portal) each app-level request is for (`event_portal`,
  `action_portal`), verified with the app's client secret (`verify_app_request`); and the
  app's custom workflow action definition, made from a mapping (`action_definition`, and
  `action_patch` to update it) and created or updated through the developer API
  (`HubSpotDeveloper`, `register_action`).
- Its adapter (`HubSpot`): contacts or companies over the CRM objects API: read and update
  one record, and batch reads and updates of up to 100 a call; listing records for a
  backfill through the CRM search API, and finding a contact by e-mail with it; the lists
  of its kind a backfill can take, and a list's members (the Lists API); and the
  completion of BLOCKed custom workflow actions. Values always go as strings ("" clears a
  property). Its properties (`fields`, by the properties API) and custom properties created
  in the kind's default group.

Signatures: v2 and v3 cover the URL, taken as HubSpot called it (`Delivery.uri`: the public
URL followed by the request target as sent). A request carrying v3 headers is verified by v3
alone (its timestamp bounds replays to 5 minutes). One without them is verified by the version
HubSpot documents for its kind: v1 for a Webhooks API batch (a JSON array), v2 for a workflow
webhook or custom action (an object); never the version the request declares. HubSpot's apps
send v3 beside v1/v2, so once a connection has received a valid v3 signature on a kind of
request (its `hubspot_v3_kinds`), it takes v3 alone for that kind: such a request stripped of
its v3 headers is refused, not verified by its timeless v1/v2 signature. Kinds are told apart
because not every sender adds v3 (a workflow's "Send a webhook" signs v2, and v3 only on newer
platforms): one that never did keeps working.

Paths are HubSpot's date-versioned ones, the version named once (API_VERSION): HubSpot ends
/crm/v3 in September 2027 and /automation/v4 on 30 March 2027, and the 2026-03 paths take the
same request and response shapes. From 2026-09 HubSpot also enforces each account's own
validation rules on writes.

Failures beyond `base.classify`: a 400 VALIDATION_ERROR naming properties (in `errors[]`'s
context.propertyName, or in the JSON list of its "Property values were not valid: [...]"
message) refuses those properties: PROPERTY_DOESNT_EXIST, and values HubSpot will not take
such as an enumeration option the property lacks (INVALID_OPTION). The contact is written
again without them, and each is reported with HubSpot's reason. A batch update refused as a
whole for an invalid value does not say whose it was: each contact of it is Permanent alike
(the worker then writes them one at a time). 401 is a token expired or revoked; 429 waits as
its policy says:

- TEN_SECONDLY_ROLLING (and any other burst policy): Retry-After in seconds when HubSpot
  sends it, else X-HubSpot-RateLimit-Interval-Milliseconds, else the 10 s window.
- DAILY: Retry-After when sent, else 24 hours. HubSpot resets the daily limit at midnight in
  the account's time zone, which we do not know: waiting for the next midnight UTC would come
  up to 12 h early for accounts west of UTC (the Americas) and up to 14 h late east of it, and
  an early retry is refused again, costing a call and one of the worker's attempts. We take
  the safe side: 24 h, by when every time zone has passed midnight. Never early, at most a
  day late.

Either way the 429 is `throttled`: the limit is the account's, so the worker holds every
event of the connection until then, counting no attempt. Sources: the 429 body's policyName
and the X-HubSpot-RateLimit-* headers,
https://developers.hubspot.com/docs/guides/apps/api-usage/usage-details and
https://developers.hubspot.com/changelog/increasing-our-api-limits.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

import httpx
from sqlite_utils import Database

from connector import mappings, store
from connector.platforms.base import (
    MESSAGE_LIMIT,
    TOKEN_REFUSED,
    Adapter,
    Answer,
    CrmClient,
    CrmField,
    Delivery,
    Event,
    Listed,
    MissingHeader,
    NewContact,
    Now,
    Outcome,
    Permanent,
    Platform,
    Refusal,
    Refused,
    Retriable,
    Row,
    Schema,
    SignatureMismatch,
    Task,
    Unparseable,
    Verified,
    View,
    WriteResult,
    check_window,
    classify,
    dicts,
    digest,
    equal,
    error_message,
    garbled,
    header,
    hmac_sha256,
    id_chunks,
    json_answer,
    json_body,
    json_document,
    origin,
    parse_timestamp,
    require,
    retry_after,
    send,
    write_dropping,
    write_many_dropping,
)
from server import UnreadableJson, decode_json

if TYPE_CHECKING:
    from connector.oauth import Credentials

BATCH_SIZE = 100
SEARCH_PAGE = 100  # the CRM search API's largest page
SEARCH_REACH = 10_000  # results one search query can page through
BURST_WAIT_SECONDS = 10.0  # TEN_SECONDLY_ROLLING's window, when no header says how long
DAILY_WAIT_SECONDS = 24 * 3600.0  # see the module docstring
API_VERSION = "2026-03"  # HubSpot's date-versioned APIs (see the module docstring)
CONTACTS = f"/crm/objects/{API_VERSION}/contacts"
COMPANIES = f"/crm/objects/{API_VERSION}/companies"
# Each kind of record we enrich: its path, and one record's name in our messages.
OBJECTS = {"contacts": (CONTACTS, "contact"), "companies": (COMPANIES, "company")}
# HubSpot's names of an object type -> our kinds: a Webhooks API subscription's prefix
# (`company.creation`), a generic subscription's objectTypeId, a custom action's objectType.
KINDS = {"contact": "contacts", "company": "companies", "0-1": "contacts", "0-2": "companies"}
TASKS = f"/crm/objects/{API_VERSION}/tasks"
NOTES = f"/crm/objects/{API_VERSION}/notes"
OWNER = "hubspot_owner_id"
# HubSpot-defined association type ids: task to contact / company, note to contact / company.
TASK_TO = {"contacts": 204, "companies": 192}
NOTE_TO = {"contacts": 202, "companies": 190}
CALLBACKS = f"/automation/actions/callbacks/{API_VERSION}"
ACTIONS = f"/automation/actions/{API_VERSION}"  # an app's custom workflow action definitions
WEBHOOKS = f"/webhooks/{API_VERSION}"  # an app's webhook settings and subscriptions
APP_EVENTS_PATH = "/hooks/hubspot/events"  # where the app's subscriptions post (receiver.py)
# The event type's object of our kinds of record (SubscriptionCreateRequest's eventType).
EVENT_OBJECTS = {"contacts": "contact", "companies": "company"}
DEFAULT_CONCURRENCY = 10  # the app's webhook throttling when it has none set (HubSpot's default)
PROPERTIES = f"/crm/properties/{API_VERSION}"  # + /contacts or /companies: the properties API
LISTS = f"/crm/lists/{API_VERSION}"  # the Lists API: lists of records and their members
# Why a connection lists no list: its grant is older than the crm.lists.read the consent asks.
LISTS_NEED_RECONNECT = (
    "the connection's grant lacks the scope crm.lists.read (it was connected before the "
    "connector asked for it): press Reconnect with HubSpot on the connection's page to grant "
    "it (a private app token: add the scope to the app and paste its token again)"
)
LIST_SEARCH_PAGE = 500  # the largest `count` of a lists search
MEMBERS_PAGE = 100  # members a page (the memberships API takes up to 250; a batch read 100)
# Each kind's object type id (the Lists API's objectTypeId) and its last-modified property.
OBJECT_TYPE_IDS = {"contacts": "0-1", "companies": "0-2"}
MODIFIED = {"contacts": "lastmodifieddate", "companies": "hs_lastmodifieddate"}
# HubSpot's property types -> FIELD_TYPES (enumerations by their fieldType, in `_field_type`).
FIELD_TYPES = {
    "string": "text",
    "number": "number",
    "bool": "boolean",
    "date": "date",
    "datetime": "datetime",
    "phone_number": "phone",
}
# FIELD_TYPES -> the type and fieldType of a property we create (none for picklists: their
# options would have to be given).
CREATED_TYPES = {
    "text": ("string", "text"),
    "email": ("string", "text"),
    "url": ("string", "text"),
    "number": ("number", "number"),
    "boolean": ("bool", "booleancheckbox"),
    "date": ("date", "date"),
    "datetime": ("datetime", "date"),
    "phone": ("phone_number", "phonenumber"),
}
GROUPS = {"contacts": "contactinformation", "companies": "companyinformation"}
UNKNOWN = "PROPERTY_DOESNT_EXIST"
LISTED = "Property values were not valid:"  # a 400's message, then its refusals as JSON


class HubSpot(CrmClient):
    """HubSpot contacts or companies (`kind`), over a client the caller builds; `token` is an
    OAuth access token or a private-app token."""

    platform = "hubspot"

    @property
    def path(self) -> str:
        """The CRM objects API path of its kind of record."""
        return OBJECTS[self.kind][0]

    @property
    def noun(self) -> str:
        """One record of its kind, as our messages name it."""
        return OBJECTS[self.kind][1]

    def read(self, record_id: str, properties: Sequence[str]) -> dict[str, Any]:
        """The record's current values of `properties`, None where empty."""
        params = {"properties": ",".join(properties)} if properties else None
        response = self._send("GET", self._record(record_id), params=params)
        self._check(response)
        values = _properties(response, json_body(response), f"a {self.noun}")
        return {name: values.get(name) for name in properties}

    def read_many(
        self, record_ids: Sequence[str], properties: Sequence[str]
    ) -> dict[str, dict[str, Any] | Permanent]:
        """Records' current values, 100 a call (`batch/read`); a record the answer leaves
        out (HubSpot's 207 names ids it could not get) is Permanent."""
        found: dict[str, dict[str, Any] | Permanent] = {}
        for chunk in id_chunks(record_ids, BATCH_SIZE):
            body = {
                "properties": list(properties),
                "propertiesWithHistory": [],  # required by the specification
                "inputs": [{"id": key} for key in chunk],
            }
            response = self._send("POST", f"{self.path}/batch/read", json=body)
            self._check(response)
            answer = json_body(response)
            for result in _results(response, answer, f"a batch of {self.kind}"):
                values = _properties(response, result, f"a batch of {self.kind}")
                found[str(result.get("id"))] = {name: values.get(name) for name in properties}
            missing = "; ".join(map(_describe, dicts(answer.get("errors"))))
            gone = Permanent(f"no such {self.noun}: {missing or 'left out of the batch read'}")
            found.update({key: gone for key in chunk if key not in found})
        return found

    def write(self, record_id: str, properties: dict[str, Any]) -> WriteResult:
        """Update one record; properties HubSpot refuses (unknown, or a value it will not
        take) are dropped and reported."""
        return write_dropping(lambda sent: self._update(record_id, sent), properties)

    def write_many(self, changes: dict[str, dict[str, Any]]) -> dict[str, WriteResult | Permanent]:
        """Update records 100 a call; each record's outcome."""
        return write_many_dropping(self._update_batch, changes, BATCH_SIZE)

    def list_page(self, properties: Sequence[str], since: str | None, cursor: str | None) -> Listed:
        """A page of 100 records of the adapter's kind by the CRM search API, by ascending id
        (modified at or after `since` when given). Search reaches 10,000 results a query:
        before paging past them, it asks again for the ids after the last one listed. The
        cursor is that lower bound, then HubSpot's `after`."""
        bound, _, after = (cursor or ":").partition(":")
        body = _search(self.kind, properties, since, bound, after)
        response = self._send("POST", f"{self.path}/search", json=body)
        self._check(response)
        answer = json_body(response)
        results = _results(response, answer, "a page of search results")
        records = {}
        for result in results:
            values = _properties(response, result, "a page of search results")
            records[str(result.get("id"))] = {name: values.get(name) for name in properties}
        total = answer.get("total")
        remaining = total - int(after or 0) if isinstance(total, int) else None
        following = str(((answer.get("paging") or {}).get("next") or {}).get("after") or "")
        if not (following.isdigit() and records):
            return Listed(records, None, remaining)
        if int(following) + SEARCH_PAGE > SEARCH_REACH:  # past the query's reach: ask again
            return Listed(records, f"{list(records)[-1]}:", remaining)
        return Listed(records, f"{bound}:{following}", remaining)

    def views(self) -> list[View]:
        """The account's lists of the adapter's kind (the Lists API's search, by object type),
        with their sizes, by name."""
        found, offset = [], 0
        while True:
            body = {"objectTypeId": OBJECT_TYPE_IDS[self.kind], "count": LIST_SEARCH_PAGE,
                    "offset": offset, "listIds": [], "processingTypes": [],
                    "additionalProperties": []}  # fmt: skip
            response = self._send("POST", f"{LISTS}/search", json=body)
            if _missing_scopes(response):
                raise Permanent(LISTS_NEED_RECONNECT)
            self._check(response)
            answer = json_body(response)
            found += [_view(item) for item in dicts(answer.get("lists"))]
            if not answer.get("hasMore") or not isinstance(answer.get("offset"), int):
                return sorted(found, key=lambda view: view.name.casefold())
            offset = answer["offset"]

    def list_view_page(
        self, view: str, properties: Sequence[str], since: str | None, cursor: str | None
    ) -> Listed:
        """A page of 100 members of the list `view` (its memberships, in the order they
        joined), read by a batch read; with `since`, only those modified at or after it (the
        kind's last-modified property). Members gone since they joined are left out."""
        params = {"limit": str(MEMBERS_PAGE), **({"after": cursor} if cursor else {})}
        response = self._send("GET", f"{LISTS}/{quote(view, safe='')}/memberships", params=params)
        self._check(response)
        answer = json_body(response)
        ids = [str(item.get("recordId")) for item in dicts(answer.get("results"))]
        modified = MODIFIED[self.kind]
        read = self.read_many(ids, [*properties, modified]) if ids else {}
        records = {
            key: {name: values.get(name) for name in properties}
            for key, values in read.items()
            if isinstance(values, dict) and _modified_since(values.get(modified), since)
        }
        following = ((answer.get("paging") or {}).get("next") or {}).get("after")
        total = answer.get("total") if cursor is None and not since else None
        return Listed(records, str(following) if following and ids else None,
                      total if isinstance(total, int) else None)  # fmt: skip

    def find(self, email: str) -> str | None:
        """The id of the contact whose e-mail is `email` (the CRM search API, `email` EQ, in
        lower case as HubSpot keeps it), or None. HubSpot's companies have no e-mail."""
        if self.kind != "contacts":
            raise Permanent(f"a HubSpot {self.noun} has no e-mail: give its record id")
        match = {"propertyName": "email", "operator": "EQ", "value": email.strip().lower()}
        body = {
            "filterGroups": [{"filters": [match]}],
            "sorts": [{"propertyName": "hs_object_id", "direction": "ASCENDING"}],
            "properties": ["email"],
            "limit": 1,
        }
        response = self._send("POST", f"{self.path}/search", json=body)
        self._check(response)
        results = _results(response, json_body(response), "search results")
        return str(results[0].get("id")) if results else None

    def complete_action(self, callback_id: str, answer: dict[str, Any]) -> None:
        """Complete a BLOCKed custom workflow action with `answer`'s `outputFields`, in the
        body the specification gives: output values as strings (none where a value is None),
        and `typedOutputs`, which it marks required, empty."""
        fields = answer.get("outputFields") or {}
        outputs = {name: _string(value) for name, value in fields.items() if value is not None}
        body = {"outputFields": outputs, "typedOutputs": {}}
        path = f"{CALLBACKS}/{quote(callback_id, safe='')}/complete"
        self._check(self._send("POST", path, json=body))

    def fields(self) -> list[CrmField]:
        """The properties of its kind of record (archived ones left out), by the properties API."""
        response = self._send("GET", f"{PROPERTIES}/{self.kind}")
        self._check(response)
        return [_field(item) for item in _results(response, json_body(response), "properties")]

    def create_field(self, name: str, label: str, type: str) -> CrmField:
        """Create a custom property of its kind in HubSpot's default information group."""
        if type not in CREATED_TYPES:
            raise Permanent(f"a {type} property is not created here: give its options in HubSpot")
        kind, widget = CREATED_TYPES[type]
        body = {
            "name": name,
            "label": label,
            "type": kind,
            "fieldType": widget,
            "groupName": GROUPS[self.kind],
        }
        response = self._send("POST", f"{PROPERTIES}/{self.kind}", json=body)
        self._check(response)
        created = json_body(response)
        if not isinstance(created, dict) or "name" not in created:
            raise garbled(response, "the property created")
        return _field(created)

    def create_task(self, record_id: str, task: Task) -> str:
        """A to-do task (POST /crm/objects/2026-03/tasks) for the record's owner
        (hubspot_owner_id, read first), associated with the record; its id."""
        owner = self.read(record_id, [OWNER]).get(OWNER)
        properties = {"hs_timestamp": f"{task.due_on}T09:00:00.000Z", "hs_task_subject":
                      task.subject, "hs_task_body": task.body, "hs_task_status": "NOT_STARTED",
                      "hs_task_type": "TODO", **({OWNER: str(owner)} if owner else {})}  # fmt: skip
        return self._create(TASKS, properties, [(record_id, TASK_TO[self.kind])])

    def create_contact(self, contact: NewContact, linked_to: str) -> str:
        """A contact (POST /crm/objects/2026-03/contacts), then a note associated with both it
        and the record `linked_to` (HubSpot has no contact-to-contact association of its own);
        the new contact's id."""
        properties = {"firstname": contact.first_name, "lastname": contact.last_name,
                      "jobtitle": contact.title, "company": contact.company}  # fmt: skip
        created = self._create(CONTACTS, {k: v for k, v in properties.items() if v}, [])
        note = {"hs_timestamp": f"{contact.noted_on}T09:00:00.000Z", "hs_note_body": contact.note}
        links = [(created, NOTE_TO["contacts"]), (linked_to, NOTE_TO[self.kind])]
        self._create(NOTES, note, links)
        return created

    def _create(self, path: str, properties: dict[str, Any], links: list[tuple[str, int]]) -> str:
        """Create a CRM object with HubSpot-defined associations; its id."""
        associations = [
            {"to": {"id": str(key)},
             "types": [{"associationCategory": "HUBSPOT_DEFINED", "associationTypeId": type_id}]}
            for key, type_id in links
        ]  # fmt: skip
        body = {"properties": _strings(properties), "associations": associations}
        response = self._send("POST", path, json=body)
        self._check(response)
        created = json_body(response)
        if not (isinstance(created, dict) and created.get("id")):
            raise garbled(response, "the object created")
        return str(created["id"])

    def _update(self, record_id: str, properties: dict[str, Any]) -> Refusal:
        body = {"properties": _strings(properties)}
        response = self._send("PATCH", self._record(record_id), json=body)
        refused = _reasons(_refused_properties(response))
        if not refused:
            self._check(response)
            written = json_body(response)  # the record: anything else may not have been written
            if not (isinstance(written, dict) and "id" in written):
                raise garbled(response, f"the {self.noun} written")
        return refused

    def _update_batch(self, changes: dict[str, dict[str, Any]]) -> dict[str, Outcome]:
        inputs = [{"id": key, "properties": _strings(values)} for key, values in changes.items()]
        response = self._send("POST", f"{self.path}/batch/update", json={"inputs": inputs})
        refused = _refused_properties(response)
        unknown = {name: said for name, said in refused.items() if said[0] == UNKNOWN}
        if unknown:  # unknown to every record: each goes again without them
            return dict.fromkeys(changes, _reasons(unknown))
        if refused:  # someone's value, and HubSpot does not say whose
            return dict.fromkeys(changes, Permanent(f"refused: {_described(refused)}"))
        try:
            self._check(response)
        except Permanent as failure:  # the whole call refused: every record's outcome
            return dict.fromkeys(changes, failure)
        body = json_body(response)
        results = _results(response, body, "a batch update's results")
        return _batch_outcomes(changes, body, results, self.noun)

    def _record(self, record_id: str) -> str:
        return f"{self.path}/{quote(str(record_id), safe='')}"

    def _check(self, response: httpx.Response) -> None:
        """Raise for a failed answer: 401 and 429 HubSpot's way, the rest as `classify`."""
        if response.status_code == 401:
            raise Permanent(TOKEN_REFUSED)
        if response.status_code == 429:
            raise _rate_limited(response)
        classify(response)


def _missing_scopes(response: httpx.Response) -> bool:
    """Whether HubSpot refused a call for a scope the grant lacks (403, category
    MISSING_SCOPES, the Error's context naming them as missingScopes)."""
    body = json_body(response) if response.status_code == 403 else None
    return isinstance(body, dict) and body.get("category") == "MISSING_SCOPES"


def _field(item: dict[str, Any]) -> CrmField:
    """A property as the properties API describes it: read-only when its value is (or it is
    calculated), custom unless HubSpot defines it, the values of its visible options."""
    meta = item.get("modificationMetadata") or {}
    options = [o for o in dicts(item.get("options")) if not o.get("hidden")]
    return CrmField(
        name=str(item.get("name") or ""),
        label=str(item.get("label") or item.get("name") or ""),
        type=_field_type(item),
        options=tuple(str(option.get("value")) for option in options),
        read_only=bool(meta.get("readOnlyValue") or item.get("calculated")),
        custom=not item.get("hubspotDefined"),
    )


def _field_type(item: dict[str, Any]) -> str:
    """FIELD_TYPES' name of a property's type: an enumeration by its widget (checkboxes hold
    several options, a single checkbox a boolean)."""
    if item.get("type") != "enumeration":
        return FIELD_TYPES.get(str(item.get("type")), "other")
    widget = item.get("fieldType")
    return {"checkbox": "multipicklist", "booleancheckbox": "boolean"}.get(widget, "picklist")


def _view(item: dict[str, Any]) -> View:
    """A list as the Lists API's search describes it (hs_list_size, when sent, its size)."""
    size = str((item.get("additionalProperties") or {}).get("hs_list_size") or "")
    return View(
        str(item.get("listId")), str(item.get("name")), int(size) if size.isdigit() else None
    )


def _modified_since(value: Any, since: str | None) -> bool:
    """Whether a last-modified value (ISO 8601, or epoch milliseconds) is at or after `since`;
    True without `since`, False without a value."""
    if not since:
        return True
    text = str(value or "")
    if text.isdigit():
        when = datetime.fromtimestamp(int(text) / 1000, UTC)
    elif text:
        when = datetime.fromisoformat(text)
    else:
        return False
    return when >= datetime.fromisoformat(since)


def _search(
    kind: str, properties: Sequence[str], since: str | None, bound: str, after: str
) -> dict[str, Any]:
    """A search request body: ids above `bound`, modified since `since`, by ascending id."""
    filters = []
    if bound:
        filters.append({"propertyName": "hs_object_id", "operator": "GT", "value": bound})
    if since:
        modified = "lastmodifieddate" if kind == "contacts" else "hs_lastmodifieddate"
        when = str(int(datetime.fromisoformat(since).timestamp() * 1000))  # epoch milliseconds
        filters.append({"propertyName": modified, "operator": "GTE", "value": when})
    body: dict[str, Any] = {
        "filterGroups": [{"filters": filters}] if filters else [],
        "sorts": [{"propertyName": "hs_object_id", "direction": "ASCENDING"}],
        "properties": list(properties),
        "limit": SEARCH_PAGE,
    }
    return {**body, "after": after} if after else body


def _strings(properties: dict[str, Any]) -> dict[str, str]:
    """Values as HubSpot takes them: strings, booleans "true"/"false", None "" (clears),
    lists joined with ";" (multiple checkboxes)."""
    return {name: _string(value) for name, value in properties.items()}


def _string(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ";".join(_string(item) for item in value)
    return str(value)


Said = tuple[str, str]  # HubSpot's code and message for a refused property


def _refused_properties(response: httpx.Response) -> dict[str, Said]:
    """The properties a 400 VALIDATION_ERROR refuses, with what HubSpot says of each."""
    body = json_body(response)
    if response.status_code != 400 or not isinstance(body, dict):
        return {}
    return _refused(body) if body.get("category") == "VALIDATION_ERROR" else {}


def _refused(error: dict[str, Any]) -> dict[str, Said]:
    """The properties an error object (a whole answer, or one of a batch's errors) names:
    in `errors[]` by context.propertyName, or by "name" in the JSON list of a "Property
    values were not valid: [...]" message."""
    named = _message_list(error.get("message"))
    for detail in dicts(error.get("errors")):
        said = (str(detail.get("code") or ""), str(detail.get("message") or ""))
        named.update(dict.fromkeys(_listed(_context(detail).get("propertyName")), said))
    return named


def _message_list(message: Any) -> dict[str, Said]:
    if not isinstance(message, str) or not message.startswith(LISTED):
        return {}
    try:
        items = json.loads(message.removeprefix(LISTED))
    except ValueError:
        return {}
    return {
        str(item["name"]): (str(item.get("error") or ""), str(item.get("message") or ""))
        for item in dicts(items)
        if item.get("name") and item.get("isValid") is not True
    }


def _reasons(refused: dict[str, Said]) -> Refusal:
    """Each refused property with HubSpot's words: its message, after the code unless the
    code is PROPERTY_DOESNT_EXIST (whose message says so), shortened."""
    return {name: _reason(*said) for name, said in refused.items()}


def _reason(code: str, message: str) -> str:
    text = message if code in (UNKNOWN, "") else f"{code}: {message}".rstrip(": ")
    return textwrap.shorten(text or "refused", MESSAGE_LIMIT, placeholder="…")


def _described(refused: dict[str, Said]) -> str:
    return "; ".join(f"{name}: {why}" for name, why in _reasons(refused).items())


def _batch_outcomes(
    changes: dict[str, dict[str, Any]],
    body: dict[str, Any],
    results: list[dict[str, Any]],
    noun: str,
) -> dict[str, Outcome]:
    """Each record's outcome from a 200 or 207 answer: in `results`, written; named by an
    error's context (ids or objectWriteTraceId), that error; in neither, refused with the
    errors no record was named in."""
    found = {str(result.get("id")) for result in results}
    outcomes: dict[str, Outcome] = {
        key: WriteResult(written=dict(values)) for key, values in changes.items() if key in found
    }
    unnamed: list[str] = []
    for error in dicts(body.get("errors")):
        named = [key for key in _named(error) if key in changes]
        outcome = _reasons(_refused(error)) or Permanent(_describe(error))
        outcomes.update(dict.fromkeys(named, outcome))
        if not named:
            unnamed.append(_describe(error))
    why = "; ".join(unnamed) or f"HubSpot's answer left this {noun} out (merged or deleted?)"
    return {key: outcomes.get(key, Permanent(why)) for key in changes}


def _results(response: httpx.Response, body: Any, expected: str) -> list[dict[str, Any]]:
    """A batch answer's `results`, each an object; `garbled` when the answer is not that."""
    results = body.get("results") if isinstance(body, dict) else None
    if not isinstance(results, list) or not all(isinstance(item, dict) for item in results):
        raise garbled(response, expected)
    return results


def _properties(response: httpx.Response, record: Any, expected: str) -> dict[str, Any]:
    """A record's `properties` object; `garbled` when the answer holds none."""
    values = record.get("properties") if isinstance(record, dict) else None
    if not isinstance(values, dict):
        raise garbled(response, expected)
    return values


def _named(error: dict[str, Any]) -> list[str]:
    context = _context(error)
    return _listed(context.get("ids")) + _listed(context.get("objectWriteTraceId"))


def _context(error: dict[str, Any]) -> dict[str, Any]:
    """An error's context; in the documented samples it is sometimes a string."""
    context = error.get("context")
    return context if isinstance(context, dict) else {}


def _listed(value: Any) -> list[str]:
    """A context value as a list of strings (HubSpot gives lists; a lone string counts)."""
    if isinstance(value, str):
        return [value]
    return [str(item) for item in value] if isinstance(value, list) else []


def _describe(error: dict[str, Any]) -> str:
    return ": ".join(str(part) for part in (error.get("category"), error.get("message")) if part)


def _rate_limited(response: httpx.Response) -> Retriable:
    """A 429 as Retriable, waiting as its policy says (see the module docstring)."""
    body = json_body(response)
    policy = body.get("policyName") if isinstance(body, dict) else None
    reason = f"429 rate limited ({policy or 'no policy named'}): {error_message(response)}"
    wait = retry_after(response)
    if wait is None and policy == "DAILY":
        wait = DAILY_WAIT_SECONDS
    if wait is None:
        wait = _interval(response) or BURST_WAIT_SECONDS
    return Retriable(reason, wait, throttled=True)


def _interval(response: httpx.Response) -> float | None:
    try:
        return float(response.headers["x-hubspot-ratelimit-interval-milliseconds"]) / 1000
    except (KeyError, ValueError):
        return None


# HubSpot custom workflow actions: the workflow waits for a BLOCKed action until we complete
# it through the callback API, or until this ISO-8601 duration has passed (HubSpot's default).
ACTION_EXPIRES_AFTER = "P7D"


def action_succeeded(fields: dict[str, Any]) -> dict[str, Any]:
    """A custom action's answer (or callback completion) carrying the enriched fields, those
    without a value left out: HubSpot types each output field (a number field refuses "",
    an enumeration refuses a value not among its options), and an output not given is empty."""
    given = {name: value for name, value in fields.items() if value not in ("", None, [])}
    return {"outputFields": {**given, "hs_execution_state": "SUCCESS"}}


def action_failed(message: str) -> dict[str, Any]:
    """A custom action's answer when nothing could be enriched: the workflow goes on, told why
    in the output field `contactdata_error`."""
    return {"outputFields": {"hs_execution_state": "FAIL_CONTINUE", "contactdata_error": message}}


def action_blocked() -> dict[str, Any]:
    """A custom action's answer when the enrichment will come later, through the callback."""
    state = {"hs_execution_state": "BLOCK", "hs_expiration_duration": ACTION_EXPIRES_AFTER}
    return {"outputFields": state}


def hubspot_kind(body: bytes) -> str:
    """What a HubSpot request is, by its body: "webhooks-api" (a subscription's batch, a JSON
    array), "custom-action" (a custom workflow action's execution request) or "workflow" (a
    workflow's "Send a webhook", anything else)."""
    try:
        document = decode_json(body)
    except UnreadableJson:
        return "workflow"
    if isinstance(document, list):
        return "webhooks-api"
    return "custom-action" if is_action(document) else "workflow"


def is_action(payload: Any) -> bool:
    """Whether an event is a HubSpot custom action's execution request."""
    return isinstance(payload, dict) and "callbackId" in payload


def hubspot_events(document: Any, body: bytes) -> list[Event]:
    """A Webhooks API batch, a workflow webhook's contact or company, or a custom action's
    request; each event of the kind of record it names (`hubspot_kind_of`)."""
    if isinstance(document, list):
        return [_hubspot_subscription_event(item) for item in document]
    if not isinstance(document, dict):
        raise Unparseable("the body must be a JSON object or array")
    kind = hubspot_record_kind(document)
    if is_action(document):
        record = document.get("object")
        record_id = str(record.get("objectId", "")) if isinstance(record, dict) else ""
        return [Event(str(document["callbackId"]), record_id, document, kind=kind)]
    if "vid" in document:
        key = f"{document.get('portal-id', '')}:{document['vid']}:{digest(body)}"
        return [Event(key, str(document["vid"]), document, kind=kind)]
    if "companyId" in document and isinstance(document.get("properties"), dict):
        key = f"{document.get('portalId', '')}:company:{document['companyId']}:{digest(body)}"
        return [Event(key, str(document["companyId"]), document, kind=kind)]
    return [Event(digest(body), str(document.get("hs_object_id", "")), document, kind=kind)]


def hubspot_record_kind(document: dict[str, Any]) -> str:
    """The kind of record a workflow webhook or custom action is about: a custom action's
    `object.objectType`; a v1 contact (`vid`) or a company as the companies API gives it
    (`companyId` and `properties`); else a customized body's "objectType"."""
    if is_action(document):
        record = document.get("object")
        return hubspot_kind_of(record.get("objectType") if isinstance(record, dict) else None)
    if "vid" in document:
        return "contacts"
    if "companyId" in document and isinstance(document.get("properties"), dict):
        return "companies"
    return hubspot_kind_of(document.get("objectType"))


def hubspot_kind_of(object_type: Any) -> str:
    """Our kind of record for HubSpot's name of an object type ("COMPANY", "company", "0-2"):
    contacts when none is named; another object (a deal) by its own name, which no HubSpot
    connection enriches (the worker refuses it, rather than read a contact of its id)."""
    if object_type is None or object_type == "":
        return "contacts"
    name = str(object_type).strip().lower()
    return KINDS.get(name, name)


def _hubspot_subscription_event(item: Any) -> Event:
    if not isinstance(item, dict) or "objectId" not in item or "eventId" not in item:
        raise Unparseable("each event of a HubSpot batch needs eventId and objectId")
    parts = (item.get("subscriptionId"), item["eventId"], item.get("occurredAt"), item["objectId"])
    key = ":".join(str(part) for part in parts)
    kind = hubspot_kind_of(_subscribed_type(item))
    return Event(key, str(item["objectId"]), item, thin=True, kind=kind)


def _subscribed_type(item: dict[str, Any]) -> Any:
    """The object type a subscription's event is about: its subscriptionType's prefix
    (`company.propertyChange`), or for a generic one (`object.propertyChange`) its
    objectTypeId (0-1 contacts, 0-2 companies)."""
    prefix = str(item.get("subscriptionType") or "").partition(".")[0]
    return item.get("objectTypeId") if prefix == "object" else prefix


# --- signatures ---------------------------------------------------------------------------

TOLERANCE = 300  # seconds a v3 timestamp may be old (or ahead)
SIGNATURE = "X-HubSpot-Signature"
SIGNATURE_VERSION = "X-HubSpot-Signature-Version"
SIGNATURE_V3 = "X-HubSpot-Signature-v3"
TIMESTAMP = "X-HubSpot-Request-Timestamp"
# HubSpot request-validation doc, v3: these escapes are decoded in the URI before signing;
# every other escape (%20, %23, %26, %2B, %3D, %25, ...) stays as sent.
_V3_DECODED = {
    "3A": ":", "2F": "/", "3F": "?", "40": "@", "21": "!", "24": "$", "27": "'", "28": "(",
    "29": ")", "2A": "*", "2C": ",", "3B": ";",
}  # fmt: skip
_V3_ESCAPE = re.compile("%(" + "|".join(_V3_DECODED) + ")", re.IGNORECASE)


def sign_v1(secret: str, body: bytes) -> str:
    """HubSpot v1: hex sha256 of client secret + body."""
    return hashlib.sha256(secret.encode() + body).hexdigest()


def sign_v2(secret: str, method: str, uri: str, body: bytes) -> str:
    """HubSpot v2: hex sha256 of client secret + method + URI + body (URI exactly as sent)."""
    return hashlib.sha256(secret.encode() + method.encode() + uri.encode() + body).hexdigest()


def sign_v3(secret: str, method: str, uri: str, body: bytes, timestamp_ms: int | str) -> str:
    """HubSpot v3: base64 HMAC-SHA256(secret, method + decoded URI + body + timestamp)."""
    content = method.encode() + v3_uri(uri).encode() + body + str(timestamp_ms).encode()
    return base64.b64encode(hmac_sha256(secret.encode(), content)).decode()


def v3_uri(uri: str) -> str:
    """The URI as HubSpot signs it for v3: the escapes of its documented table decoded."""
    return _V3_ESCAPE.sub(lambda m: _V3_DECODED[m.group(1).upper()], uri)


def verify_signature(
    secret: str,
    method: str,
    uri: str,
    body: bytes,
    headers: Mapping[str, str],
    now: Now,
    *,
    fallback: Literal["v1", "v2"] | None = "v2",
    tolerance: float = TOLERANCE,
) -> str:
    """Verify a HubSpot request: v3 when its headers are present, else `fallback`; return it."""
    if header(headers, SIGNATURE_V3) or header(headers, TIMESTAMP):
        _verify_v3(secret, method, uri, body, headers, now, tolerance)
        return "v3"
    if fallback is None:
        raise MissingHeader(f"missing header {SIGNATURE_V3}")
    _verify_legacy(secret, method, uri, body, headers, fallback)
    return fallback


def legacy_version(body: bytes) -> Literal["v1", "v2"]:
    """The version HubSpot signs a request with besides v3: v1 for a Webhooks API
    subscription's batch (a JSON array), v2 for a workflow webhook or custom action."""
    return "v1" if body.lstrip()[:1] == b"[" else "v2"


def _verify_legacy(
    secret: str,
    method: str,
    uri: str,
    body: bytes,
    headers: Mapping[str, str],
    version: Literal["v1", "v2"],
) -> None:
    signature = header(headers, SIGNATURE)
    if signature is None:
        raise MissingHeader(f"missing header {SIGNATURE_V3} (or {SIGNATURE} for {version})")
    declared = header(headers, SIGNATURE_VERSION)
    if declared is not None and declared.lower() != version:
        raise SignatureMismatch(f"{SIGNATURE_VERSION} is not {version}, the one accepted")
    expected = sign_v1(secret, body) if version == "v1" else sign_v2(secret, method, uri, body)
    if not equal(expected, signature):
        raise SignatureMismatch(f"{SIGNATURE} ({version}) does not match the request")


def _verify_v3(
    secret: str,
    method: str,
    uri: str,
    body: bytes,
    headers: Mapping[str, str],
    now: Now,
    tolerance: float,
) -> None:
    signature = require(headers, SIGNATURE_V3)
    timestamp = require(headers, TIMESTAMP)
    timestamp_ms = parse_timestamp(timestamp, TIMESTAMP)
    if not equal(sign_v3(secret, method, uri, body, timestamp), signature):
        raise SignatureMismatch(f"{SIGNATURE_V3} does not match the request")
    check_window(timestamp_ms / 1000, now, tolerance, TIMESTAMP)


@dataclass(frozen=True, kw_only=True)
class HubSpotPlatform(Platform):
    """HubSpot: a CRM whose app signs its requests with the app's secret."""

    name: str = "hubspot"
    title: str = "HubSpot"
    signing: str = "hubspot"
    adapter_class: Callable[..., Adapter] | None = HubSpot
    issues_secret: bool = True  # the app's client secret
    refreshable: bool = True
    objects: tuple[str, ...] = ("contacts", "companies")  # HubSpot has no leads in our scope
    # A contact's primary company: read-only since 2019, kept by HubSpot from the contact's
    # primary company association (developers.hubspot.com/changelog, 2019-01-24).
    company_link: str = "associatedcompanyid"
    oauth_authorize_url: str = "https://app.hubspot.com/oauth/authorize"
    oauth_token_url: str = "https://api.hubapi.com/oauth/2026-03/token"  # v1 ends 2027-02-16
    # What the adapter's calls need for each kind it enriches, as HubSpot's 2026-03
    # specifications name them: records (crm.objects.*), properties (crm.schemas.*: read for
    # the mapping editor, write for "Create missing"), lists (crm.lists.read: a backfill of a
    # list), and the custom action callback API (automation); plus `oauth`, which HubSpot
    # requires of every legacy app. HubSpot refuses an install URL lacking a scope the app
    # requires (tests/test_adapters_hubspot.py derives this list from the requests the
    # adapter sends).
    oauth_scope: str = (
        "oauth crm.objects.contacts.read crm.objects.contacts.write crm.schemas.contacts.read "
        "crm.schemas.contacts.write crm.objects.companies.read crm.objects.companies.write "
        "crm.schemas.companies.read crm.schemas.companies.write crm.lists.read automation"
    )
    install: tuple[str, ...] = (
        "This connection's secret is your HubSpot app's client secret (ending in {hint}): "
        "HubSpot signs every request with it.",
        'Workflow: add a "Send a webhook" action, method POST, webhook URL {events}, '
        'authentication "Include request signature in header" with your app\'s ID.',
        "Or the app's webhook subscriptions (contact creation and property changes; company "
        "ones alike), in the app's settings (Webhooks): target URL {{app_events}}, which "
        "takes every account's events. Or the operator registers the app's id and developer "
        "API key with the HubSpot OAuth app (oauth-app set with --app-id and --developer-key) "
        "and you connect again: the connector then sets them itself.",
        "Or a custom workflow action: actionUrl {enrich} (answered at once with the enriched "
        "fields), or {events} (answered BLOCK, then completed through HubSpot's callback API).",
        "Create the contactdata_* contact and company properties the mapping writes.",
    )

    app_webhooks: bool = True  # the app's own subscriptions, made at connect (subscribe_app)

    def install_steps(
        self, urls: Mapping[str, str | None], secret_hint: str, sent: Mapping[str, str] = {}
    ) -> list[str]:
        """The steps, the app's subscriptions pointed at the app's own events URL (one for
        every installed account), not the connection's."""
        app_events = app_events_url(str(urls.get("enrichUrl") or ""))
        steps = super().install_steps(urls, secret_hint, sent)
        return [step.replace("{app_events}", app_events) for step in steps]

    def subscribe_app(
        self, client: httpx.Client, base_url: str, app_id: str, key: str, public_url: str,
        read: Mapping[str, mappings.Mapping],
    ) -> list[str]:  # fmt: skip
        """Point the app's webhooks at <public_url>/hooks/hubspot/events and subscribe it to
        what the mappings `read` need (`app_subscriptions`), with the developer API `key`:
        the subscriptions created, described."""
        developer = HubSpotDeveloper(base_url, key, client)
        target = public_url.rstrip("/") + APP_EVENTS_PATH
        return subscribe_app(developer, app_id, target, app_subscriptions(read))

    def verify(self, link: Row, secret: str, delivery: Delivery) -> Verified:
        """v3 when sent; else v1 or v2 as HubSpot signs this kind of request, unless the
        connection has received v3 on this kind before (then v3 alone)."""
        kind = verify_kind(secret, delivery, link["hubspot_v3_kinds"], "This connection")
        if kind:
            return Verified(remember=lambda db: _note_v3(db, link, kind))
        return Verified()

    def events(self, body: bytes) -> list[Event]:
        return hubspot_events(json_document(body), body)

    def acknowledgement(self, found: list[Event]) -> Answer:
        if len(found) == 1 and is_action(found[0].payload):
            return json_answer(action_blocked())
        return super().acknowledgement(found)

    def delivery_id(self, payload: dict[str, Any]) -> str | None:
        """A custom action's `callbackId`, which names one execution of the action: a copy
        (a replay within v3's 5 minutes, or HubSpot's own retry) is answered once too."""
        return f"callbackId:{payload['callbackId']}" if is_action(payload) else None

    def kind_of(self, payload: dict[str, Any]) -> str:
        """A custom action's object type (a company-based workflow's action is a company's),
        or what a workflow webhook's body names (`hubspot_record_kind`)."""
        return hubspot_record_kind(payload)

    def is_action(self, payload: Any) -> bool:
        return is_action(payload)

    def action_succeeded(self, fields: dict[str, Any]) -> Any:
        return action_succeeded(fields)

    def action_failed(self, message: str) -> Any:
        return action_failed(message)

    def action_blocked(self) -> Any:
        return action_blocked()

    def complete_action(self, adapter: Any, request: Row, answer: Any) -> str:
        adapter.complete_action(str(request["callbackId"]), answer)
        return str(answer["outputFields"]["hs_execution_state"])

    def echo(self, change: Row, ours: Row) -> str:
        """A property change event names one property and its new value."""
        name, value = change.get("propertyName"), change.get("propertyValue")
        if isinstance(name, str) and name in ours and mappings.same(ours[name], value):
            return name
        return ""

    def token_url(self, base_url: str) -> str:
        """The date-versioned API's: v1 ends on 2027-02-16."""
        return f"{base_url.strip().rstrip('/')}/oauth/2026-03/token"

    def installed_base_url(self, answer: Row, token_url: str, environment: str) -> str:
        """One API host for every account, the token endpoint's (https://api.hubapi.com)."""
        return origin(token_url)

    def installed_account(self, answer: Row) -> str:
        """The portal (`hub_id`) the token answer is for: app-level webhooks name it."""
        hub_id = answer.get("hub_id")
        return str(hub_id) if isinstance(hub_id, int | str) and str(hub_id).isdigit() else ""

    def revocation(self, grant: Credentials, token: str, hint: str) -> httpx.Request | None:
        """POST /oauth/2026-03/token/revoke, the client's id and secret in the form (it
        replaces v1's DELETE /oauth/v1/refresh-tokens/{token}, ending 2027-02-16): this
        connection's refresh token only, each connection holding its own grant (see
        https://developers.hubspot.com/docs/api-reference/latest/authentication/oauth-tokens/revoke-token)."""
        form = {"client_id": grant.client_id, "client_secret": grant.client_secret,
                "token": token, "token_type_hint": hint}  # fmt: skip
        url = f"{origin(grant.token_url)}/oauth/{API_VERSION}/token/revoke"
        return httpx.Request("POST", url, data=form)

    def signing_schemes(self) -> dict[str, Schema]:
        v3 = {"type": "apiKey", "in": "header", "name": SIGNATURE_V3}
        description = f"With {TIMESTAMP}; v1 and v2 signatures come in {SIGNATURE}."
        return {"hubspotSignature": {**v3, "description": description}}


# --- HubSpot as a public app -----------------------------------------------------------------


def verify_app_request(secret: str, delivery: Delivery, v3_kinds: str) -> str:
    """Verify a request to the app's own URLs with the app's client secret, by the rules of a
    connection's (`verify_kind`), the kinds the app has received v3 on being `v3_kinds`. The
    kind to remember v3 on, or ""; raises SignatureError or Refused."""
    return verify_kind(secret, delivery, v3_kinds, "This HubSpot app")


def verify_kind(secret: str, delivery: Delivery, v3_kinds: str, receiver: str) -> str:
    """v3 when sent; else v1 or v2 as HubSpot signs this kind of request, unless `receiver`
    has received v3 on this kind before (`v3_kinds`, comma-separated): then v3 alone. The kind
    of a first valid v3 (to remember), else ""; raises SignatureError or Refused."""
    kind = hubspot_kind(delivery.body)
    v3_only = kind in v3_kinds.split(",")
    legacy = None if v3_only else legacy_version(delivery.body)
    try:
        version = verify_signature(
            secret, delivery.method, delivery.uri, delivery.body, delivery.headers,
            delivery.now, fallback=legacy,
        )  # fmt: skip
    except MissingHeader as error:
        if not v3_only:
            raise
        raise Refused(
            f"The request signature does not verify: {error}. {receiver} has received "
            f"HubSpot's v3 signature on {kind} requests, so it takes no v1 or v2 for them."
        ) from None
    except SignatureMismatch as error:
        raise Refused(
            f"The request signature does not verify: {error} (v2 and v3 cover the URL, taken "
            f"as {delivery.uri.partition('?')[0]}: CONTACTDATA_PUBLIC_URL must be the one "
            "HubSpot calls)."
        ) from None
    return kind if version == "v3" and not v3_only else ""


def event_portal(event: Event) -> str:
    """The HubSpot account (portal id) a Webhooks API event is from; "" when it names none."""
    return str(event.payload.get("portalId") or "")


def action_portal(payload: dict[str, Any]) -> str:
    """The HubSpot account (portal id) a custom action's execution request is from."""
    origin = payload.get("origin")
    return str((origin.get("portalId") if isinstance(origin, dict) else None) or "")


ACTION_LABELS = {
    "actionName": "Enrich with contact data",
    "actionDescription": "Looks the record up in the contact data service and returns its "
    "enriched fields as outputs.",
    "actionCardContent": "Enrich with contact data",
    "appDisplayName": "Contact data",
}
OBJECT_TYPES = {"contacts": "CONTACT", "companies": "COMPANY"}
# A field's type, with the `options` and `externalOptions` the specification marks required
# (none: our fields are free text or numbers).
NUMBER = {"type": "number", "fieldType": "number", "options": [], "externalOptions": False}
TEXT = {"type": "string", "fieldType": "text", "options": [], "externalOptions": False}


def action_definition(mapping: mappings.Mapping, action_url: str, published: bool) -> Row:
    """The app's custom workflow action for the mapping's kind of record: an input field for
    each `inputFields.X` the mapping reads, the `object.properties.X` it reads asked for with
    each request, an output field for each property it maps (a number where its transforms
    make one) and `contactdata_error`, which a failed action fills. The create body
    (PublicActionDefinitionEgg): `functions`, required there, is empty."""
    inputs = sorted(_read_under(mapping, "inputFields."))
    outputs = {rule.property: NUMBER if "integer" in rule.transforms else TEXT
               for rule in mapping.output} | {"contactdata_error": TEXT}  # fmt: skip
    labels = {
        **ACTION_LABELS,
        "inputFieldLabels": {name: _label(name) for name in inputs},
        "outputFieldLabels": {name: _label(name) for name in outputs},
    }
    return {
        "actionUrl": action_url,
        "published": published,
        "objectTypes": [OBJECT_TYPES[mapping.kind]],
        "objectRequestOptions": {"properties": sorted(_read_under(mapping, "object.properties."))},
        "inputFields": [_input_field(name) for name in inputs],
        "outputFields": [
            {"typeDefinition": {"name": name, **typed}} for name, typed in outputs.items()
        ],
        "labels": {"en": labels},
        "functions": [],
    }


def action_patch(definition: Row) -> Row:
    """The update body (PublicActionDefinitionPatch) of a create body: all but `functions`,
    which an update does not take (they have their own endpoints)."""
    return {name: value for name, value in definition.items() if name != "functions"}


def _read_under(mapping: mappings.Mapping, prefix: str) -> set[str]:
    """The names the mapping's inputs read directly under `prefix` (`inputFields.email`)."""
    paths = (path for paths in mapping.input.values() for path in paths)
    return {path.removeprefix(prefix) for path in paths
            if path.startswith(prefix) and "." not in path.removeprefix(prefix)}  # fmt: skip


def _input_field(name: str) -> Row:
    return {
        "typeDefinition": {"name": name, **TEXT},
        "supportedValueTypes": ["OBJECT_PROPERTY", "STATIC_VALUE"],
        "isRequired": False,
    }


def _label(name: str) -> str:
    return name.replace("_", " ").capitalize()


def app_events_url(enrich_url: str) -> str:
    """The app's one events URL, beside a connection's URLs (<public URL>/hooks/<id>/...)."""
    return enrich_url.rpartition("/hooks/")[0] + APP_EVENTS_PATH


def app_subscriptions(read: Mapping[str, mappings.Mapping]) -> list[Row]:
    """The app's webhook subscriptions a connection with these mappings (by kind) needs, as
    SubscriptionCreateRequest bodies: each kind's creation, and a property change of each
    property its mapping reads from the record, but those it always writes (its own, whose
    every write would come back as one)."""
    wanted: list[Row] = []
    for kind, mapping in read.items():
        event = EVENT_OBJECTS[kind]
        written = {rule.property for rule in mapping.output if rule.policy == "always"}
        wanted.append({"eventType": f"{event}.creation", "active": True})
        wanted += [{"eventType": f"{event}.propertyChange", "propertyName": name, "active": True}
                   for name in sorted(_read_under(mapping, "properties.") - written)]  # fmt: skip
    return wanted


def subscribe_app(
    developer: HubSpotDeveloper, app_id: str, target_url: str, wanted: list[Row]
) -> list[str]:
    """Set the app's webhook target URL (keeping its throttling) and create the `wanted`
    subscriptions it lacks, activating those it has paused; never a second of one, never
    one removed. Those created or activated, described ("contact.propertyChange email")."""
    _point_webhooks(developer, app_id, target_url)
    held = {_subscription_key(item): item for item in developer.subscriptions(app_id)}
    done = []
    for subscription in wanted:
        found = held.get(_subscription_key(subscription))
        if found is None:
            developer.subscribe(app_id, subscription)
        elif found.get("active") is not True:
            developer.activate(app_id, str(found["id"]))
        else:
            continue
        done.append(" ".join(_subscription_key(subscription)).strip())
    return done


def _point_webhooks(developer: HubSpotDeveloper, app_id: str, target_url: str) -> None:
    """The app's webhooks sent to `target_url`, their throttling kept (HubSpot's default
    when the app has none yet)."""
    settings = developer.webhook_settings(app_id) or {}
    if settings.get("targetUrl") != target_url:
        default = {"maxConcurrentRequests": DEFAULT_CONCURRENCY}
        throttling = settings.get("throttling") or default
        developer.set_webhook_settings(app_id, {"targetUrl": target_url, "throttling": throttling})


def _subscription_key(item: Row) -> tuple[str, str]:
    return str(item.get("eventType") or ""), str(item.get("propertyName") or "")


class HubSpotDeveloper:
    """HubSpot's developer-side API for one app's custom workflow actions and webhook
    settings and subscriptions, authenticated with the developer account's API key
    (`hapikey`, as HubSpot documents for app management; sent as a query parameter that no
    message of ours repeats)."""

    def __init__(self, base_url: str, key: str, client: httpx.Client) -> None:
        self.base_url = base_url.rstrip("/")
        self.key = key
        self.client = client

    def definitions(self, app_id: str) -> list[Row]:
        """Every action definition of the app, page after page."""
        found: list[Row] = []
        after = ""
        while True:
            params = {"limit": "100", **({"after": after} if after else {})}
            answer = self._call("GET", self._path(app_id), params=params)
            found += dicts(answer.get("results"))
            after = str(((answer.get("paging") or {}).get("next") or {}).get("after") or "")
            if not after:
                return found

    def create(self, app_id: str, definition: Row) -> Row:
        return self._call("POST", self._path(app_id), json=definition)

    def update(self, app_id: str, definition_id: str, definition: Row) -> Row:
        return self._call("PATCH", self._path(app_id, definition_id), json=definition)

    def webhook_settings(self, app_id: str) -> Row | None:
        """The app's webhook settings (SettingsResponse), or None when it has none (404)."""
        response = self._request("GET", self._webhooks(app_id, "settings"))
        return None if response.status_code == 404 else self._answer(response)

    def set_webhook_settings(self, app_id: str, settings: Row) -> Row:
        """PUT the app's webhook settings (SettingsChangeRequest: targetUrl, throttling)."""
        return self._call("PUT", self._webhooks(app_id, "settings"), json=settings)

    def subscriptions(self, app_id: str) -> list[Row]:
        """The app's webhook subscriptions (SubscriptionListResponse's results)."""
        return dicts(self._call("GET", self._webhooks(app_id, "subscriptions")).get("results"))

    def subscribe(self, app_id: str, subscription: Row) -> Row:
        """Create a subscription (SubscriptionCreateRequest)."""
        return self._call("POST", self._webhooks(app_id, "subscriptions"), json=subscription)

    def activate(self, app_id: str, subscription_id: str) -> Row:
        """Activate a paused subscription (SubscriptionPatchRequest)."""
        path = self._webhooks(app_id, f"subscriptions/{quote(subscription_id, safe='')}")
        return self._call("PATCH", path, json={"active": True})

    def _webhooks(self, app_id: str, rest: str) -> str:
        return f"{WEBHOOKS}/{quote(app_id, safe='')}/{rest}"

    def _path(self, app_id: str, definition_id: str = "") -> str:
        path = f"{ACTIONS}/{quote(app_id, safe='')}"
        return f"{path}/{quote(definition_id, safe='')}" if definition_id else path

    def _call(self, method: str, path: str, params: Row | None = None, **options: Any) -> Row:
        """Send with the key; the JSON object answered, or Permanent/Retriable as classified."""
        return self._answer(self._request(method, path, params, **options))

    def _request(
        self, method: str, path: str, params: Row | None = None, **options: Any
    ) -> httpx.Response:
        query = {**(params or {}), "hapikey": self.key}
        url = self.base_url + path
        return send(self.client, method, url, platform="hubspot", params=query, **options)

    def _answer(self, response: httpx.Response) -> Row:
        classify(response)
        answer = json_body(response)
        if not isinstance(answer, dict):
            raise garbled(response, "a developer API answer")
        return answer


def register_action(developer: HubSpotDeveloper, app_id: str, definition: Row) -> tuple[str, bool]:
    """Create the app's action definition, or update the one already there for the same URL
    and object types (so running it again never adds a second): its id, and whether created."""
    for existing in developer.definitions(app_id):
        same_url = existing.get("actionUrl") == definition["actionUrl"]
        if same_url and existing.get("objectTypes") == definition["objectTypes"]:
            developer.update(app_id, str(existing["id"]), action_patch(definition))
            return str(existing["id"]), False
    return str(developer.create(app_id, definition)["id"]), True


def _note_v3(db: Database, link: Row, kind: str) -> None:
    store.note_hubspot_v3(db, link["id"], kind)


PLATFORM = HubSpotPlatform()
