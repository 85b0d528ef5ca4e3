"""Everything about Pipedrive, in one place (`PLATFORM`, registered in connector/platforms/):
its webhooks (v2, and v1 read as v2) come with the connection's secret as the HTTP Basic
password, one event per person, organization or lead created or changed (`pipedrive_events`;
`meta.entity` names it: our contacts, companies and leads); a change our own API call made
(`meta.change_source` "api") whose new values are the ones we wrote is our echo; API tokens
last (no OAuth renewal); and its adapter, for each of those kinds.

The adapter: Pipedrive persons (contacts) and organizations (companies) over API v2: read one
or up to 100 a call, update one (Pipedrive has no batch update for either). `base_url` is the
company domain (https://acme.pipedrive.com); the API token goes in the `x-api-token` header.
A backfill lists them with GET /api/v2/persons and /organizations (500 a page by id, v2's
cursor, `updated_since`), or those of one of the account's filters of the kind (GET
/api/v1/filters by type, then the list's `filter_id`). A person's organization is its
`org_id` (v2: the organization's id), the company record an enriched person's company fields
go to (`company_link`).

An organization's update body (UpdateOrganizationRequest) has `name`, `owner_id`,
`visible_to`, `label_ids`, `address`, `custom_fields`, and the newer default fields `website`,
`linkedin`, `industry`, `annual_revenue` and `employee_count` (which GET leaves out unless
asked, pipedrive/client-nodejs#732: the default mapping does not write them). Its address is
one object (OrganizationItemAddress: `value`, the text shown, and parts): read and written as
`address` (the text) and `address_<part>` (`address_locality`, `address_country`, ...). A PATCH
replaces the address whole, so writing a part reads the organization first and sends its
address with the parts added; the text is kept unless written or empty (then: the street line
written and the parts, joined).

Leads (API v1, GET/PATCH /api/v1/leads/{uuid}) hold no contact data: a lead links a person
(`person_id`) and/or an organization (`organization_id`). Its properties are its own fields
(`title`, custom fields by key) and, prefixed `person/` and `organization/`, those of the person
and the organization it links, as above. Reading reads each lead (v1 takes no list of ids),
then the persons and organizations they link, 100 a call (a backfill lists leads with GET
/api/v1/leads, 100 a page by `start`, and reads their links alike); writing reads the lead
again (the links now) and updates the lead, its person and its organization, each its own
call. A property of a link the lead does not have is dropped unsent, with the reason. Our
write to a linked person or organization comes back as that record's own webhook (a
contact's or a company's event), not as the lead's: it is not known there as our echo.

Properties are flat names, as a mapping uses them: `email` and `phone` are the person's
primary (else first non-empty) address and number, a 40-hex-character name is a custom
field's key (under `custom_fields`), any other name a field of the person (`name`,
`job_title`, `org_id`, ...). On write `email` and `phone` become a one-item `emails` /
`phones` list, and a PATCH replaces the whole list: the mappings write them only when empty.

Writes hold to the update body v2's specification documents (UpdatePersonRequest: `name`,
`owner_id`, `org_id`, `add_time`, `update_time`, `emails`, `phones`, `visible_to`,
`label_ids`, `marketing_status`, `custom_fields`): any other property is dropped unsent, with
the reason. `job_title`, `birthday`, `notes`, `im` and `postal_address` are read where contact
sync is on, but the body has no place for them (the operation's description only warns that
setting them without contact sync answers 403), so a job title goes to a custom field.

Failures beyond `base.classify`, answers being {"success": false, "error": ..., "code": ...}:

- 400 (v2 answers ERR_SCHEMA_VALIDATION_FAILED with "Validation failed: <path>: <why>; ...",
  an unknown field as "Parameter 'x' is not allowed for this request") drops each property a
  path names and sends the rest again; a custom field is dropped where the message names its
  key (the shape of that message for an unknown key inside `custom_fields` is unverified).
  Values refused as invalid are dropped the same way, so one bad value does not block the rest.
- 401 is a token expired or revoked; 404 is no such person.
- 429 throttles the connection (the worker holds all its events, counting no attempt): for
  Retry-After, else with x-daily-requests-left at 0 (the daily write allowance, counted in
  UTC) until the next midnight UTC, else for x-ratelimit-reset (seconds left of the 2-second
  burst window). A 429 with none of them may be the token budget spent (it resets at the
  start of the next day; no header naming it is documented): it waits for the worker's
  THROTTLED_WAIT_SECONDS, never a 2-second loop. Headers and windows:
  https://pipedrive.readme.io/docs/core-api-concepts-rate-limiting.

Echoes: Pipedrive sends a webhook for our own writes too. A webhook v2 body whose
`meta.change_source` is "api" (not "app") came through the API, with `meta.user_id` the user
whose token wrote; `previous` holds only the changed fields. So a change event with
change_source "api" whose `data` holds for every field in `previous` the value we wrote last
is our own write echoed back (the worker's `_echo`; the user is not compared: another
integration writing exactly our values needs nothing done either). Other integrations write
through the API too: "api" alone does not make an event ours.

Fields (the mapping editor's), from API v2's field lists (v1's are to be retired), 500 a page
by cursor: GET /api/v2/personFields and /organizationFields, each named as the adapter reads
and writes it (`email`, `phone`, a custom field's 40-character key) and its type translated by
`FIELD_TYPES`. v2 says nothing of whether a field can be written: a field is read-only here
when the update body has no place for it (see above), which is what the adapter can write.
A picklist's options are its option ids (custom fields are written by id), `labels` their
labels. A lead's fields are its own (`LEAD_OWN`), the custom fields it shares with deals
(/api/v2/dealFields), and its person's and organization's, prefixed `person/` and
`organization/` as above. A custom field is created by POST to the same list (a lead's, to
deals'); Pipedrive names it with a key of its own, in the answer. A picklist needs its options
at creation, and booleans, times and links have no type we create: the admin adds those in
Pipedrive. A person is found by e-mail with GET /api/v2/persons/search (fields=email,
exact_match, not case sensitive), a lead as the first lead of that person (GET /api/v1/leads
with person_id); an organization has no e-mail.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from connector import mappings
from connector.platforms.base import (
    DELAY_SECONDS,
    MESSAGE_LIMIT,
    TOKEN_REFUSED,
    Adapter,
    BasicPassword,
    CrmClient,
    CrmField,
    Event,
    Listed,
    NewContact,
    Permanent,
    Refusal,
    Retriable,
    Row,
    Task,
    Unparseable,
    View,
    WriteResult,
    answer_url,
    classify,
    dicts,
    digest,
    error_message,
    garbled,
    json_body,
    json_object,
    origin,
    retry_after,
    write_dropping,
    write_each,
)

if TYPE_CHECKING:
    from connector.oauth import Credentials

PERSONS = "/api/v2/persons"
ORGANIZATIONS = "/api/v2/organizations"
LEADS = "/api/v1/leads"
ACTIVITIES = "/api/v2/activities"
NOTES = "/api/v1/notes"  # notes have no v2 endpoint
LIST_IDS = 100  # GET /persons and /organizations take up to 100 comma-separated `ids`
LIST_PAGE = 500  # v2 list endpoints: `limit` up to 500 a page
LEADS_PAGE = 100  # GET /api/v1/leads a page: its links are then read in one call each
LISTS = {"email": "emails", "phone": "phones"}  # flat property -> Pipedrive's list of them
FLAT = {field: name for name, field in LISTS.items()}
# The flat properties a PATCH body has a place for (see the module docstring), keys aside.
UPDATE_FIELDS = frozenset(
    {"name", "owner_id", "org_id", "add_time", "update_time", "visible_to", "label_ids"}
    | {"marketing_status", *LISTS}
)
# An organization's address parts (v2's OrganizationItemAddress), as `address_<part>`: every
# one, since a PATCH replaces the address whole (a part left out here was lost on a write).
ADDRESS_PARTS = ("country", "admin_area_level_1", "admin_area_level_2", "locality",
                 "sublocality", "route", "street_number", "subpremise",
                 "postal_code")  # fmt: skip
ADDRESS = frozenset({"address", *(f"address_{part}" for part in ADDRESS_PARTS)})
# UpdateOrganizationRequest (PATCH /api/v2/organizations/{id}); website to employee_count
# are newer default fields that GET leaves out unless asked (see the module docstring).
ORGANIZATION_FIELDS = frozenset(
    {"name", "owner_id", "visible_to", "label_ids", *ADDRESS}
    | {"website", "linkedin", "industry", "annual_revenue", "employee_count"}
)
# The lead's own fields of PATCH /api/v1/leads/{id} (custom fields go by key, at the top).
LEAD_FIELDS = frozenset(
    {"title", "owner_id", "label_ids", "person_id", "organization_id", "is_archived"}
    | {"value", "expected_close_date", "visible_to", "was_seen", "channel", "channel_id"}
)
LINKED = {"person/": "person_id", "organization/": "organization_id"}  # a lead's links
WEBHOOKS = "/api/v1/webhooks"  # webhooks have no v2 endpoint
FILTERS = "/api/v1/filters"  # filters (saved views) have no v2 endpoint
FILTER_TYPES = {"contacts": "people", "companies": "org", "leads": "leads"}  # GET /filters' type
WEBHOOK_USER = "contactdata"  # the HTTP Basic user of the webhooks we register (not checked)
# AddWebhookRequest (client-nodejs 29.2.0+) requires subscription_url, event_action,
# event_object and `name`; the webhooks we register are named "contactdata <object>".
HASH_KEY = re.compile(r"[0-9a-f]{40}")  # a custom field's key
PERSON_ID = re.compile(r"[0-9]+")
LEAD_ID = re.compile(r"[0-9a-fA-F-]{36}")  # a lead's UUID
NOT_CLEARED = "not sent: an empty value would replace the person's whole list"
# The field lists (API v2) of each kind's records: a lead's custom fields are the deals'.
FIELD_LISTS = {"contacts": "/api/v2/personFields", "companies": "/api/v2/organizationFields",
               "leads": "/api/v2/dealFields"}  # fmt: skip
FIELDS_PAGE = 500  # a field list's `limit` at most
# Pipedrive's field types (v2's field_type) -> ours (base.FIELD_TYPES); others are "other".
FIELD_TYPES = {
    "varchar": "text", "varchar_auto": "text", "text": "text", "varchar_options": "text",
    "int": "number", "double": "number", "monetary": "number", "boolean": "boolean",
    "date": "date", "enum": "picklist", "set": "multipicklist", "phone": "phone",
    "user": "reference", "org": "reference", "people": "reference", "deal": "reference",
    "lead": "reference", "stage": "reference",
}  # fmt: skip
# Our types -> the field_type a new custom field gets (AddPersonFieldRequest's types).
CREATED_TYPES = {"text": "varchar", "email": "varchar", "url": "varchar", "number": "double",
                 "date": "date", "phone": "phone"}  # fmt: skip
# A lead's own fields (its PATCH body's, LEAD_FIELDS, as LeadResponse names them).
LEAD_OWN = (
    CrmField("title", "Title", "text"), CrmField("owner_id", "Owner", "reference"),
    CrmField("person_id", "Person", "reference"),
    CrmField("organization_id", "Organization", "reference"),
    CrmField("expected_close_date", "Expected close date", "date"),
    CrmField("was_seen", "Seen", "boolean"), CrmField("is_archived", "Archived", "boolean"),
)  # fmt: skip


@dataclass(frozen=True)
class Entity:
    """A Pipedrive record type the API v2 reads 100 a call and updates one at a time: where,
    what it is called, and the flat properties its update body has a place for."""

    noun: str
    path: str
    fields: frozenset[str]

    def url(self, record_id: str) -> str:
        return f"{self.path}/{quote(str(record_id), safe='')}"

    def unsendable(self, properties: dict[str, Any]) -> Refusal:
        """The properties not to send: those the update body has no place for, and an empty
        email or phone (it would clear the person's list)."""
        why = (
            f"not sent: not a field of Pipedrive's v2 {self.noun} update (PATCH "
            f"{self.path}/{{id}}); a custom field goes by its 40-character key"
        )
        unsent = {name: why for name in properties if not self.sends(name)}
        blank = [name for name in LISTS if name in properties and _empty(properties[name])]
        return unsent | dict.fromkeys(blank, NOT_CLEARED)

    def sends(self, name: str) -> bool:
        return name in self.fields or HASH_KEY.fullmatch(name) is not None


PERSON = Entity("person", PERSONS, UPDATE_FIELDS)
ORGANIZATION = Entity("organization", ORGANIZATIONS, ORGANIZATION_FIELDS)
ENTITIES = {"contacts": PERSON, "companies": ORGANIZATION}


class Pipedrive(CrmClient):
    """Pipedrive persons, organizations or leads (by `kind`), over a client the caller
    builds; `token` is a user's API token."""

    platform = "pipedrive"

    def token_headers(self, token: str) -> dict[str, str]:
        """An API token in x-api-token; an OAuth access token (renewed by `auth`) as Bearer."""
        return {"Authorization": f"Bearer {token}"} if self.auth else {"x-api-token": token}

    def read(self, record_id: str, properties: Sequence[str]) -> dict[str, Any]:
        """The record's current values of `properties`, None where empty or unknown."""
        if self.kind == "leads":
            outcome = self._read_leads([record_id], properties)[record_id]
            if isinstance(outcome, Permanent):
                raise outcome
            return outcome
        return _flat(self._get(self._entity, record_id), properties)

    def read_many(
        self, record_ids: Sequence[str], properties: Sequence[str]
    ) -> dict[str, dict[str, Any] | Permanent]:
        """Records' values 100 a call (a lead one a call, its persons and organizations 100 a
        call); a record missing from the answer (deleted, merged or not visible to this
        token) is Permanent, as is an id that is not one."""
        if self.kind == "leads":
            return self._read_leads(list(dict.fromkeys(record_ids)), properties)
        return self._read_many(self._entity, record_ids, properties)

    def write(self, record_id: str, properties: dict[str, Any]) -> WriteResult:
        """Update one record; properties Pipedrive refuses are dropped with its reason.
        Writing `email` or `phone` replaces the person's whole list of them."""
        if self.kind == "leads":
            return self._write_lead(record_id, properties)
        return self._write(self._entity, record_id, properties)

    def write_many(self, changes: dict[str, dict[str, Any]]) -> dict[str, WriteResult | Permanent]:
        """One update a record (there is no batch update): each record's outcome."""
        return write_each(self.write, changes)

    def list_page(self, properties: Sequence[str], since: str | None, cursor: str | None) -> Listed:
        """A page of the records of the adapter's kind: persons and organizations 500 a page
        by ascending id (v2's list, `updated_since` when `since` is given, its opaque cursor),
        leads 100 a page in the order they were added (v1's `start`, the cursor) with the
        persons and organizations they link (see `_list_leads`). Pipedrive says no total."""
        if self.kind == "leads":
            return self._list_leads(properties, since, cursor)
        return self._list_page(properties, since, cursor, {})

    def views(self) -> list[View]:
        """The account's filters of the adapter's kind (GET /api/v1/filters by its type),
        the active ones, by name."""
        _, listed = self._list(FILTERS, {"type": FILTER_TYPES[self.kind]}, "filter")
        found = [View(_filter_id(item.get("id")), str(item.get("name") or ""))
                 for item in listed if item.get("active_flag") is not False]  # fmt: skip
        return sorted(found, key=lambda view: view.name.casefold())

    def list_view_page(
        self, view: str, properties: Sequence[str], since: str | None, cursor: str | None
    ) -> Listed:
        """A page of the records the filter `view` selects, as `list_page` pages them (the
        list's `filter_id`)."""
        if not view.isdigit():
            raise Permanent(f"no Pipedrive filter has the id {view!r}")
        if self.kind == "leads":
            return self._list_leads(properties, since, cursor, view)
        return self._list_page(properties, since, cursor, {"filter_id": view})

    def _list_page(self, properties: Sequence[str], since: str | None, cursor: str | None,
                   extra: dict[str, str]) -> Listed:  # fmt: skip
        """A page of persons or organizations by v2's list, with `extra` parameters."""
        entity = self._entity
        params = {"limit": str(LIST_PAGE), "sort_by": "id", "sort_direction": "asc", **extra}
        if since:
            params["updated_since"] = _rfc3339(since)
        if cursor:
            params["cursor"] = cursor
        body, listed = self._list(entity.path, params, entity.noun)
        records = {str(r["id"]): _flat(r, properties) for r in listed if _alive(r) and "id" in r}
        following = _additional(body, "next_cursor")
        return Listed(records, following if isinstance(following, str) and following else None)

    def fields(self) -> list[CrmField]:
        """The kind's fields (see the module docstring)."""
        if self.kind != "leads":
            return [_field(item, self._entity) for item in self._field_list(self.kind)]
        shared = [_field(item, None) for item in self._field_list("leads")
                  if item.get("is_custom_field") is True]  # fmt: skip
        linked = [
            _linked_field(prefix, _field(item, entity))
            for prefix, kind, entity in (("person/", "contacts", PERSON),
                                         ("organization/", "companies", ORGANIZATION))
            for item in self._field_list(kind)
        ]  # fmt: skip
        return [*LEAD_OWN, *shared, *linked]

    def create_field(self, name: str, label: str, type: str) -> CrmField:
        """A new custom field labelled `label`, of the kind's field list (a lead's: deals';
        a lead's `person/...` or `organization/...`: that one's), named as Pipedrive names
        it: by the key it makes (`name` is not used but for a lead's link prefix)."""
        if type not in CREATED_TYPES:
            raise Permanent(
                f"a Pipedrive field of type {type!r} is created in Pipedrive's own settings "
                "(Company settings > Data fields), with its options where it has some"
            )
        prefix = next((p for p in LINKED if self.kind == "leads" and name.startswith(p)), "")
        kind = {"person/": "contacts", "organization/": "companies"}.get(prefix, self.kind)
        body = {"field_name": label, "field_type": CREATED_TYPES[type]}
        response = self._send("POST", FIELD_LISTS[kind], json=body)
        self._check(response, "field list")
        created = json_body(response)
        item = created.get("data") if isinstance(created, dict) else None
        if not _described(item):
            raise garbled(response, "the field created, under data")
        field = _field(item, ENTITIES.get(kind))  # a lead's own: None, as deals' are
        return _linked_field(prefix, field) if prefix else field

    def find(self, email: str) -> str | None:
        """The id of the person whose e-mail is `email`, or of that person's first lead;
        None when there is none (see the module docstring)."""
        if self.kind == "companies":
            raise Permanent("a Pipedrive organization has no e-mail to find it by")
        params = {"term": email, "fields": "email", "exact_match": "true", "limit": "1"}
        response = self._send("GET", f"{PERSONS}/search", params=params)
        self._check(response, "person search")
        body = json_body(response)
        data = body.get("data") if isinstance(body, dict) else None
        items = data.get("items") if isinstance(data, dict) else None
        if not isinstance(items, list):
            raise garbled(response, "a search's items under data")
        found = [item["item"]["id"] for item in dicts(items)
                 if isinstance(item.get("item"), dict) and "id" in item["item"]]  # fmt: skip
        if not found or self.kind == "contacts":
            return str(found[0]) if found else None
        params = {"person_id": str(found[0]), "limit": "1"}
        _, leads = self._list(LEADS, params, "lead")
        return str(leads[0]["id"]) if leads and "id" in leads[0] else None

    def _field_list(self, kind: str) -> list[dict[str, Any]]:
        """Every field of a kind's field list, page by page."""
        listed: list[dict[str, Any]] = []
        cursor = None
        while True:
            params = {"limit": str(FIELDS_PAGE), **({"cursor": cursor} if cursor else {})}
            body, page = self._list(FIELD_LISTS[kind], params, "field")
            listed.extend(item for item in page if _described(item))
            cursor = _additional(body, "next_cursor")
            if not (isinstance(cursor, str) and cursor):
                return listed

    def create_task(self, record_id: str, task: Task) -> str:
        """A task activity (POST /api/v2/activities) for the owner of the person or
        organization (its owner_id, read first), linked to it; its id."""
        record = self._get(self._entity, record_id)
        linked = {"org_id": int(record_id)} if self.kind == "companies" else {
            "person_id": int(record_id), "participants": [{"person_id": int(record_id),
                                                          "primary": True}]}  # fmt: skip
        owner = _owner(record.get("owner_id"))
        body = {"subject": task.subject, "type": "task", "due_date": task.due_on,
                "note": task.body, "done": False, **linked,
                **({"owner_id": owner} if owner else {})}  # fmt: skip
        return self._created(ACTIVITIES, body, "activity")

    def create_contact(self, contact: NewContact, linked_to: str) -> str:
        """A person (POST /api/v2/persons), then a note on it naming the record `linked_to`
        (POST /api/v1/notes: Pipedrive links no person to a person); its id."""
        name = f"{contact.first_name} {contact.last_name}".strip()
        created = self._created(PERSONS, {"name": name}, "person")
        self._created(NOTES, {"content": contact.note, "person_id": int(created)}, "note")
        return created

    def _created(self, path: str, body: dict[str, Any], noun: str) -> str:
        response = self._send("POST", path, json=body)
        self._check(response, noun)
        made = _data(json_body(response))
        if not made.get("id"):
            raise garbled(response, f"the {noun} created under data")
        return str(made["id"])

    @property
    def _entity(self) -> Entity:
        if self.kind not in ENTITIES:
            raise Permanent(f"Pipedrive has no {self.kind} the connector enriches")
        return ENTITIES[self.kind]

    # persons and organizations ---------------------------------------------------------

    def _get(self, entity: Entity, record_id: str) -> dict[str, Any]:
        response = self._send("GET", entity.url(record_id))
        self._check(response, entity.noun)
        body = json_body(response)
        record = body.get("data") if isinstance(body, dict) else None
        if not isinstance(record, dict):
            raise garbled(response, f"a {entity.noun} under data")
        if record.get("is_deleted") is True:
            raise Permanent(f"no such {entity.noun}: {record_id} is deleted")
        return record

    def _read_many(
        self, entity: Entity, record_ids: Sequence[str], properties: Sequence[str]
    ) -> dict[str, dict[str, Any] | Permanent]:
        wanted = list(dict.fromkeys(map(str, record_ids)))
        found: dict[str, dict[str, Any] | Permanent] = {
            key: Permanent(f"{key!r} is not a Pipedrive {entity.noun} id")
            for key in wanted
            if not PERSON_ID.fullmatch(key)
        }
        numbered = [key for key in wanted if key not in found]
        for start in range(0, len(numbered), LIST_IDS):
            chunk = numbered[start : start + LIST_IDS]
            found.update(self._read_chunk(entity, chunk, properties))
        return {key: found[key] for key in wanted}

    def _read_chunk(
        self, entity: Entity, record_ids: list[str], properties: Sequence[str]
    ) -> dict[str, dict[str, Any] | Permanent]:
        params = {"ids": ",".join(record_ids), "limit": str(LIST_IDS)}
        response = self._send("GET", entity.path, params=params)
        try:
            self._check(response, entity.noun)
        except Permanent as failure:  # the whole call refused: every record's outcome
            return dict.fromkeys(record_ids, failure)
        body = json_body(response)
        expected = f"{entity.noun}s under data"
        if not isinstance(body, dict) or "data" not in body:
            raise garbled(response, expected)
        listed = body["data"] or []  # null when none of the ids was found
        if not isinstance(listed, list) or not all(isinstance(r, dict) for r in listed):
            raise garbled(response, expected)
        records = {str(record.get("id")): record for record in listed}
        missing = Permanent(
            f"no such {entity.noun}: not in Pipedrive's answer (deleted or merged?)"
        )
        return {
            key: _flat(records[key], properties) if _alive(records.get(key)) else missing
            for key in record_ids
        }

    def _write(self, entity: Entity, record_id: str, properties: dict[str, Any]) -> WriteResult:
        return write_dropping(lambda sent: self._update(entity, record_id, sent), properties)

    def _update(self, entity: Entity, record_id: str, properties: dict[str, Any]) -> Refusal:
        unsent = entity.unsendable(properties)
        if unsent:
            return unsent
        body = _body(properties)
        if entity is ORGANIZATION and "address" in body:
            body["address"] = _address(self._get(entity, record_id).get("address"), properties)
        response = self._send("PATCH", entity.url(record_id), json=body)
        refused = _refused(response, properties)
        if not refused:
            self._check(response, entity.noun)
        return refused

    # leads -------------------------------------------------------------------------------

    def _lead(self, record_id: str) -> dict[str, Any]:
        """The lead as GET /api/v1/leads/{id} gives it."""
        if not LEAD_ID.fullmatch(str(record_id)):
            raise Permanent(f"{record_id!r} is not a Pipedrive lead id")
        response = self._send("GET", f"{LEADS}/{quote(str(record_id), safe='')}")
        self._check(response, "lead")
        body = json_body(response)
        lead = body.get("data") if isinstance(body, dict) else None
        if not isinstance(lead, dict):
            raise garbled(response, "a lead under data")
        return lead

    def _read_leads(
        self, record_ids: list[str], properties: Sequence[str]
    ) -> dict[str, dict[str, Any] | Permanent]:
        """Each lead (one call a lead: v1 reads no list of ids), then the persons and the
        organizations they link (`_with_links`)."""
        leads: dict[str, dict[str, Any] | Permanent] = {}
        for record_id in record_ids:
            try:
                leads[record_id] = self._lead(record_id)
            except Permanent as failure:
                leads[record_id] = failure
        return self._with_links(leads, properties)

    def _list_leads(
        self, properties: Sequence[str], since: str | None, cursor: str | None, view: str = ""
    ) -> Listed:
        """A page of leads (GET /api/v1/leads: the leads not archived, oldest first; `start`
        is the cursor, the next page's while `additional_data.more_items_in_collection`) with
        the values of the persons and organizations they link. v1 takes
        no time filter: leads whose own update_time is before `since` are left out here, as
        is a lead whose person or organization is gone (its read would fail alike); a link
        refused as a whole (the token, its scopes) fails the page. With `view`, the leads
        that filter selects."""
        start = int(cursor) if cursor and cursor.isdigit() else 0
        params = {"start": str(start), "limit": str(LEADS_PAGE)}
        if view:
            params["filter_id"] = view
        body, listed = self._list(LEADS, params, "lead")
        leads: dict[str, dict[str, Any] | Permanent] = {
            str(lead["id"]): lead for lead in listed
            if "id" in lead and _updated_since(lead, since)
        }  # fmt: skip
        found = self._with_links(leads, properties)
        for outcome in found.values():
            if isinstance(outcome, Permanent) and "no such " not in outcome.reason:
                raise outcome  # not one lead's: every lead's link would fail alike
        records = {key: values for key, values in found.items() if isinstance(values, dict)}
        more = _additional(body, "more_items_in_collection")
        if more is None:  # not said: a full page may have more after it (an empty one ends)
            more = len(listed) >= LEADS_PAGE
        following = start + len(listed)
        return Listed(records, str(following) if more is True and following > start else None)

    def _list(
        self, path: str, params: dict[str, str], noun: str
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """A list call's answer and its records under `data` (null when there are none)."""
        response = self._send("GET", path, params=params)
        self._check(response, f"list of {noun}s")
        body = json_body(response)
        listed = body.get("data") if isinstance(body, dict) else None
        if not isinstance(body, dict) or not isinstance(listed, list | None):
            raise garbled(response, f"a page of {noun}s under data")
        return body, dicts(listed)

    def _with_links(
        self, leads: dict[str, dict[str, Any] | Permanent], properties: Sequence[str]
    ) -> dict[str, dict[str, Any] | Permanent]:
        """Leads' own `properties`, and those of the persons and the organizations they
        link, read 100 a call, as `person/...` and `organization/...`."""
        own = [name for name in properties if not _linked(name)]
        found = {key: _flat(lead, own) for key, lead in leads.items() if isinstance(lead, dict)}
        for prefix, link in LINKED.items():
            names = [name.removeprefix(prefix) for name in properties if name.startswith(prefix)]
            if not names:
                continue
            ids = {key: str(lead[link]) for key, lead in leads.items()
                   if isinstance(lead, dict) and lead.get(link)}  # fmt: skip
            entity = PERSON if link == "person_id" else ORGANIZATION
            linked = self._read_many(entity, list(ids.values()), names) if ids else {}
            for key in found:
                values = linked.get(ids[key]) if key in ids else dict.fromkeys(names)
                if isinstance(values, Permanent):
                    leads[key] = Permanent(f"its {entity.noun} {ids[key]}: {values.reason}")
                elif values is not None:
                    found[key].update({prefix + name: values[name] for name in names})
        return {key: lead if isinstance(lead, Permanent) else found[key]
                for key, lead in leads.items()}  # fmt: skip

    def _write_lead(self, record_id: str, properties: dict[str, Any]) -> WriteResult:
        """The lead's own properties to the lead; `person/...` and `organization/...` to the
        person and the organization it links (as they are linked now), each its own call."""
        lead = self._lead(record_id)
        written: dict[str, Any] = {}
        dropped: dict[str, str] = {}
        own = {name: value for name, value in properties.items() if not _linked(name)}
        if own:
            result = write_dropping(lambda sent: self._update_lead(record_id, sent), own)
            written, dropped = dict(result.written), dict(result.dropped)
        for prefix, link in LINKED.items():
            part = {name.removeprefix(prefix): value for name, value in properties.items()
                    if name.startswith(prefix)}  # fmt: skip
            entity = PERSON if link == "person_id" else ORGANIZATION
            if part and not lead.get(link):
                why = f"not sent: the lead links no {entity.noun}"
                dropped.update({prefix + name: why for name in part})
            elif part:
                result = self._write(entity, str(lead[link]), part)
                written.update({prefix + name: value for name, value in result.written.items()})
                dropped.update({prefix + name: why for name, why in result.dropped.items()})
        return WriteResult(written=written, dropped=dropped)

    def _update_lead(self, record_id: str, properties: dict[str, Any]) -> Refusal:
        why = "not sent: not a field of Pipedrive's lead update (PATCH /api/v1/leads/{id})"
        unsent = {name: why for name in properties
                  if name not in LEAD_FIELDS and not HASH_KEY.fullmatch(name)}  # fmt: skip
        if unsent:
            return unsent
        path = f"{LEADS}/{quote(str(record_id), safe='')}"
        response = self._send("PATCH", path, json=properties)
        refused = _refused(response, properties)
        if not refused:
            self._check(response, "lead")
        return refused

    def add_webhook(self, event_object: str, subscription_url: str, password: str) -> str:
        """A webhook (v2) posting every action on `event_object` to `subscription_url` with
        `password` as its HTTP Basic password, named "contactdata <object>": its id."""
        body = {"subscription_url": subscription_url, "event_action": "*",
                "event_object": event_object, "name": f"{WEBHOOK_USER} {event_object}",
                "http_auth_user": WEBHOOK_USER, "http_auth_password": password,
                "version": "2.0"}  # fmt: skip
        response = self._send("POST", WEBHOOKS, json=body)
        self._check(response, "webhook")
        created = _data(json_body(response))
        if created.get("id") is None:
            raise garbled(response, "the webhook created")
        return str(created["id"])

    def delete_webhook(self, webhook_id: str) -> None:
        """Delete a webhook; one already gone counts as deleted."""
        response = self._send("DELETE", f"{WEBHOOKS}/{quote(webhook_id, safe='')}")
        if response.status_code not in (404, 410):
            self._check(response, "webhook")

    def _check(self, response: httpx.Response, noun: str = "person") -> None:
        """Raise for a failed answer with Pipedrive's own words; redirects as `classify`."""
        status = response.status_code
        if status < 400:
            classify(response)
            return
        if status == 401:
            raise Permanent(TOKEN_REFUSED)
        said = _said(response)
        if status in (404, 410):
            raise Permanent(f"no such {noun} ({said})")
        reason = f"{status} {response.reason_phrase}: {said}"
        if status == 429:
            raise Retriable(reason, _rate_limit_wait(response), throttled=True)
        if status >= 500:
            raise Retriable(reason, retry_after(response))
        raise Permanent(reason)


def _owner(value: Any) -> int | None:
    """A record's owner_id as v2 gives it (a number; v1 gave an object with `id`)."""
    if isinstance(value, dict):
        value = value.get("id")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _data(body: Any) -> dict[str, Any]:
    """The `data` object of a Pipedrive answer ({} when there is none)."""
    data = body.get("data") if isinstance(body, dict) else None
    return data if isinstance(data, dict) else {}


def _described(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("field_code"), str)


def _field(item: dict[str, Any], entity: Entity | None) -> CrmField:
    """A v2 field as ours, named as the adapter reads it; read-only where `entity`'s update
    body has no place for it (a lead's shared custom field, `entity` None, has one)."""
    name = FLAT.get(item["field_code"], item["field_code"])
    options = dicts(item.get("options"))
    return CrmField(
        name=name,
        label=str(item.get("field_name") or name),
        type="email" if name == "email" else FIELD_TYPES.get(str(item.get("field_type")), "other"),
        options=tuple(str(option.get("id")) for option in options),
        read_only=not (entity.sends(name) if entity else HASH_KEY.fullmatch(name)),
        custom=item.get("is_custom_field") is True,
        labels=tuple(str(option.get("label")) for option in options),
    )


def _linked_field(prefix: str, field: CrmField) -> CrmField:
    """A field of a lead's person or organization, as the lead's property `<prefix><name>`."""
    noun = prefix.rstrip("/").title()
    return replace(field, name=prefix + field.name, label=f"{noun}: {field.label}")


def _additional(body: dict[str, Any], name: str) -> Any:
    """A list answer's `additional_data.<name>`: v2's `next_cursor`; v1's leads list
    (GetLeadsResponse) has `start`, `limit` and `more_items_in_collection` right there."""
    extra = body.get("additional_data")
    return extra.get(name) if isinstance(extra, dict) else None


def _filter_id(value: Any) -> str:
    """A filter's id as its lists take it (`filter_id`): the client types it a number."""
    return str(int(value)) if isinstance(value, int | float) else str(value)


def _rfc3339(since: str) -> str:
    """`since` (ISO 8601) as list endpoints' `updated_since` wants it, in UTC to the second
    (rounded down: nothing modified at `since` is left out): 2025-01-01T10:20:00Z."""
    when = datetime.fromisoformat(since)
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _updated_since(record: dict[str, Any], since: str | None) -> bool:
    """Whether a record's update_time is at or after `since` (true when it cannot tell)."""
    if not since:
        return True
    try:
        when = datetime.fromisoformat(str(record.get("update_time")))
    except ValueError:
        return True
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return when >= datetime.fromisoformat(_rfc3339(since))


def _linked(name: str) -> bool:
    return any(name.startswith(prefix) for prefix in LINKED)


def _alive(record: dict[str, Any] | None) -> bool:
    return record is not None and record.get("is_deleted") is not True


def _flat(record: dict[str, Any], properties: Sequence[str]) -> dict[str, Any]:
    """A record as flat properties: see the module docstring."""
    return {name: _value(record, name) for name in properties}


def _value(record: dict[str, Any], name: str) -> Any:
    address = record.get("address")
    if name in LISTS:
        value = _primary(record.get(LISTS[name]))
    elif HASH_KEY.fullmatch(name):
        value = (record.get("custom_fields") or {}).get(name)
    elif name.startswith("address_") and isinstance(address, dict):
        value = address.get(name.removeprefix("address_"))
    else:
        value = record.get(name)
    if isinstance(value, dict):  # an address or amount: {"value": ..., ...}
        value = value.get("value")
    return None if _empty(value) else value


def _primary(entries: Any) -> Any:
    """The primary entry's value of an `emails` / `phones` list, else the first non-empty."""
    values = [entry for entry in dicts(entries) if not _empty(entry.get("value"))]
    primary = [entry for entry in values if entry.get("primary") is True]
    return (primary or values or [{}])[0].get("value")


def _empty(value: Any) -> bool:
    if isinstance(value, str):
        return not value.strip()
    return value is None or value == [] or value == {}


def _body(properties: dict[str, Any]) -> dict[str, Any]:
    """Flat properties as Pipedrive's PATCH body: lists for email and phone, custom fields
    under `custom_fields`, an organization's address parts as one `address` (completed by
    the caller), the rest as they are."""
    body: dict[str, Any] = {}
    for name, value in properties.items():
        if name in LISTS:
            body[LISTS[name]] = [{"value": value, "primary": True, "label": "work"}]
        elif HASH_KEY.fullmatch(name):
            body.setdefault("custom_fields", {})[name] = value
        elif name in ADDRESS:
            body["address"] = {}
        else:
            body[name] = value
    return body


def _address(current: Any, properties: dict[str, Any]) -> dict[str, Any]:
    """The organization's address with the parts written: a PATCH replaces the address whole,
    so the parts it holds are kept. Its `value` (the text Pipedrive shows) stays as it is
    unless written or empty; then it is the street line (`address`) and the parts written,
    joined ("100 Congress Ave, Austin, TX 78701, United States")."""
    held = {k: v for k, v in (current if isinstance(current, dict) else {}).items()
            if k in ("value", *ADDRESS_PARTS) and not _empty(v)}  # fmt: skip
    parts = {name.removeprefix("address_"): value for name, value in properties.items()
             if name.startswith("address_")}  # fmt: skip
    merged = {**held, **parts}
    if "address" in properties or not held.get("value"):
        region = " ".join(str(merged[k]) for k in ("admin_area_level_1", "postal_code")
                          if k in parts)  # fmt: skip
        lines = [properties.get("address"), parts.get("locality"), region, parts.get("country")]
        merged["value"] = ", ".join(str(line) for line in lines if not _empty(line))
    return merged


def _refused(response: httpx.Response, sent: dict[str, Any]) -> Refusal:
    """The sent properties a 400 names."""
    return _named(_said(response), sent) if response.status_code == 400 else {}


def _named(said: str, sent: dict[str, Any]) -> Refusal:
    """Each sent property a "Validation failed: <path>: <why>; ..." message names, with
    its part of the message."""
    refused: Refusal = {}
    message = said.split("Validation failed:", 1)[-1]
    for part in message.split(";"):
        path = part.strip().partition(":")[0]
        head = re.split(r"[.\[]", path, maxsplit=1)[0]
        if head == "custom_fields" or HASH_KEY.search(part):
            names = HASH_KEY.findall(part)
        elif head == "address":  # the address goes as one object of all its parts
            names = [name for name in sent if name in ADDRESS]
        else:
            names = [FLAT.get(head, head)]
        refused.update({name: part.strip() for name in names if name in sent})
    return refused


def _said(response: httpx.Response) -> str:
    """Pipedrive's words for an error: its code and `error`, else `base.error_message`."""
    body = json_body(response)
    if not isinstance(body, dict) or not body.get("error"):
        return error_message(response)
    text = ": ".join(str(part) for part in (body.get("code"), body["error"]) if part)
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "…"


def _rate_limit_wait(response: httpx.Response) -> float | None:
    """How long a 429 asks us to wait (see the module docstring); None when it does not say."""
    wait = retry_after(response)
    if wait is not None:
        return wait
    if response.headers.get("x-daily-requests-left", "").strip() == "0":
        return _until_midnight_utc(response)
    reset = response.headers.get("x-ratelimit-reset", "").strip()
    return float(reset) if DELAY_SECONDS.fullmatch(reset) else None


def _until_midnight_utc(response: httpx.Response) -> float:
    """Seconds from the answer's Date (else now) to the next midnight UTC."""
    now = _date(response) or datetime.now(UTC)
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return (midnight - now).total_seconds()


def _date(response: httpx.Response) -> datetime | None:
    try:
        when = parsedate_to_datetime(response.headers.get("date", ""))
    except (TypeError, ValueError, IndexError):
        return None
    return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)


# Webhook v2's `meta.entity` -> the kind of record it is (Platform.objects).
KINDS = {"person": "contacts", "organization": "companies", "lead": "leads"}


def pipedrive_events(document: dict[str, Any]) -> list[Event]:
    """A webhook body, v2 or v1 (read as v2): one event, keyed by `meta.id`, for a person,
    organization or lead created or changed, of its kind (deletions and other entities have
    nothing to enrich: none)."""
    if _pipedrive_v1(document):
        document = _pipedrive_as_v2(document)
    meta, data = document.get("meta"), document.get("data")
    if not isinstance(meta, dict) or not meta.get("id"):
        raise Unparseable("a Pipedrive webhook v2 body needs meta.id")
    if "entity" not in meta:
        raise Unparseable("a Pipedrive webhook body names its entity (v2 meta.entity)")
    entity = meta.get("entity")
    if entity not in KINDS or meta.get("action") == "delete":
        return []
    if not isinstance(data, dict):
        raise Unparseable(f"a Pipedrive {entity} event needs its data")
    record_id = str(data.get("id") or meta.get("entity_id") or "")
    return [Event(str(meta["id"]), record_id, document, kind=KINDS[str(entity)])]


# Webhooks v1 (`event: "updated.person"`, meta.object/action, `current` and the whole
# `previous`) still run in accounts made before v2 became the default (2025-03-17).
_PIPEDRIVE_V1_ACTIONS = {"added": "create", "updated": "change", "merged": "change",
                         "deleted": "delete"}  # fmt: skip
_PIPEDRIVE_CUSTOM_FIELD = re.compile(r"[0-9a-f]{40}")  # v1 puts them beside the others


def _pipedrive_v1(document: dict[str, Any]) -> bool:
    meta = document.get("meta")
    v1_meta = isinstance(meta, dict) and "object" in meta and "entity" not in meta
    return v1_meta or "current" in document or "event" in document


def _pipedrive_as_v2(document: dict[str, Any]) -> dict[str, Any]:
    """A v1 body as v2 sends it: the person as `data` (`emails`, `phones`, `custom_fields`)
    and `previous` only the fields that changed."""
    meta = document["meta"] if isinstance(document.get("meta"), dict) else {}
    action, _, entity = str(document.get("event", "")).partition(".")
    entity = str(meta.get("object") or entity)
    current, previous = (_pipedrive_record(document.get(k)) for k in ("current", "previous"))
    record_id = (current or previous or {}).get("id") or meta.get("id")
    if not record_id:
        raise Unparseable("a Pipedrive webhook v1 body needs meta.id or current.id")
    v2_meta = {
        **{name: meta[name] for name in ("change_source", "user_id", "webhook_id") if name in meta},
        "id": _pipedrive_v1_key(meta, entity, record_id, current), "entity": entity,
        "entity_id": str(record_id), "version": "1.0",
        "action": _PIPEDRIVE_V1_ACTIONS.get(str(meta.get("action") or action), action),
    }  # fmt: skip
    changed = _pipedrive_changes(current, previous) if current and previous else None
    return {"meta": v2_meta, "data": current, "previous": changed}


def _pipedrive_v1_key(meta: dict[str, Any], entity: str, record_id: Any, current: Any) -> str:
    """A v1 event's id (v1 has none): the webhook, the record and the change's time, which a
    retry keeps (or, without a time, the record's values)."""
    times = (meta.get(name) for name in ("timestamp_micro", "timestamp_milli", "timestamp"))
    stamp = next((t for t in times if t), None)
    if stamp is None:
        stamp = digest(json.dumps(current, sort_keys=True).encode())
    return f"v1:{meta.get('webhook_id', '')}:{entity}:{record_id}:{stamp}"


def _pipedrive_record(record: Any) -> dict[str, Any] | None:
    """A v1 person or organization in v2's shape: `email`/`phone` as `emails`/`phones`,
    custom fields (keyed by their 40-character hash) under `custom_fields`, an address
    (`address` and its `address_<part>` beside it) as one `address` object."""
    if not isinstance(record, dict):
        return None
    custom = {k: v for k, v in record.items() if _PIPEDRIVE_CUSTOM_FIELD.fullmatch(k)}
    renamed = {"email": "emails", "phone": "phones"}
    fields = {renamed.get(k, k): v for k, v in record.items()
              if k not in custom and k not in ADDRESS}  # fmt: skip
    if "address" in record and not isinstance(record["address"], dict):
        parts = {part: record.get(f"address_{part}") for part in ADDRESS_PARTS}
        fields["address"] = {"value": record["address"], **parts}
    elif "address" in record:
        fields["address"] = record["address"]
    return {**fields, "custom_fields": custom}


def _pipedrive_changes(current: dict[str, Any], previous: dict[str, Any]) -> dict[str, Any]:
    """The fields whose value changed, with the value before (v2's `previous`)."""
    changed = {k: previous.get(k) for k, v in current.items()
               if k != "custom_fields" and v != previous.get(k)}  # fmt: skip
    before = previous["custom_fields"]
    custom = {k: before.get(k) for k, v in current["custom_fields"].items() if v != before.get(k)}
    return {**changed, "custom_fields": custom} if custom else changed


@dataclass(frozen=True, kw_only=True)
class PipedrivePlatform(BasicPassword):
    """Pipedrive: webhooks with the secret as the Basic auth password; API tokens last."""

    name: str = "pipedrive"
    title: str = "Pipedrive"
    adapter_class: Callable[..., Adapter] | None = Pipedrive
    objects: tuple[str, ...] = ("contacts", "leads", "companies")
    view_noun: str = "filter"
    # A person's organization: v2's org_id is the organization's id (an integer, or null).
    company_link: str = "org_id"
    # No scope parameter: scopes are ticked on the app in Pipedrive's Developer Hub.
    oauth_authorize_url: str = "https://oauth.pipedrive.com/oauth/authorize"
    oauth_token_url: str = "https://oauth.pipedrive.com/oauth/token"
    oauth_basic: bool = True  # Basic base64(client_id:client_secret); PKCE not documented

    def installed_base_url(self, answer: Row, token_url: str, environment: str) -> str:
        """The company's `api_domain` (https://<company>.pipedrive.com)."""
        return answer_url(answer, "api_domain", self.name)

    def revocation(self, grant: Credentials, token: str, hint: str) -> httpx.Request | None:
        """POST https://oauth.pipedrive.com/oauth/revoke (RFC 7009), Basic client auth, token
        and token_type_hint: the refresh token revoked, the app is uninstalled (see
        https://pipedrive.readme.io/docs/app-uninstallation)."""
        url = f"{origin(grant.token_url)}/oauth/revoke"
        headers = replace(grant, basic=True).headers()
        return httpx.Request("POST", url, data={"token": token, "token_type_hint": hint},
                             headers=headers)  # fmt: skip

    registers_webhooks: bool = True  # POST /v1/webhooks, with the webhooks:full scope
    install: tuple[str, ...] = (
        "In Pipedrive, open Settings > Tools and apps > Webhooks and choose Create new webhook.",
        "Event action: * (every action); event object: person; endpoint URL: {events}; "
        "webhook version: 2.0.",
        "HTTP Auth: user name contactdata (any name will do), password the connection's "
        "secret (ending in {hint}).",
        "Create two more the same way, with event object organization and then lead.",
    )
    removal: tuple[str, ...] = (
        "In Pipedrive, open Settings > Tools and apps > Webhooks and delete the webhooks whose "
        "endpoint URL is {events}.",
    )

    def events(self, body: bytes) -> list[Event]:
        return pipedrive_events(json_object(body))

    def set_up_webhooks(self, adapter: Pipedrive, events_url: str, secret: str) -> list[str]:
        """One webhook for each kind of record enriched (person, organization, lead), every
        action, the secret as its Basic password; those made are deleted if one is refused."""
        created: list[str] = []
        try:
            for entity, kind in KINDS.items():
                if kind in self.objects:
                    created.append(adapter.add_webhook(entity, events_url, secret))
        except (Permanent, Retriable):
            with contextlib.suppress(Permanent, Retriable):  # the refusal is what to report
                self.tear_down_webhooks(adapter, created)
            raise
        return created

    def tear_down_webhooks(self, adapter: Pipedrive, ids: Sequence[str]) -> None:
        for webhook_id in ids:
            adapter.delete_webhook(webhook_id)

    def echo(self, change: Row, ours: Row) -> str:
        """Webhooks made by an API call (`meta.change_source` "api") list the changed fields
        in `previous`: ours when each new value is the one we wrote."""
        meta, data, previous = change.get("meta"), change.get("data"), change.get("previous")
        if not (isinstance(meta, dict) and meta.get("change_source") == "api"):
            return ""
        if not (isinstance(data, dict) and isinstance(previous, dict) and previous):
            return ""
        now = _pipedrive_values(data, previous)
        if now and all(key in ours and mappings.same(ours[key], now[key]) for key in now):
            return ", ".join(now)
        return ""


def _pipedrive_values(data: Row, previous: Row) -> Row:
    """The new values of the fields a Pipedrive change lists in `previous`, by the flat names
    the adapter reads and writes (email, phone, custom fields by key, an organization's
    address parts as `address_<part>`: its text is ours and Pipedrive's); Pipedrive's own
    bookkeeping (update_time) left out."""
    values: Row = {}
    for key in previous:
        if key in ("emails", "phones"):
            items = [item for item in data.get(key) or [] if isinstance(item, dict)]
            primary = [item for item in items if item.get("primary")] or items
            values[key[:-1]] = primary[0].get("value") if primary else None
        elif key == "custom_fields" and isinstance(previous[key], dict):
            custom = data.get("custom_fields") or {}
            values.update({name: custom.get(name) for name in previous[key]})
        elif key == "address" and isinstance(data.get(key), dict):  # an organization's
            before = previous[key] if isinstance(previous[key], dict) else {}
            values.update({f"address_{part}": data[key].get(part) for part in ADDRESS_PARTS
                           if data[key].get(part) != before.get(part)})  # fmt: skip
        elif key != "update_time":
            values[key] = data.get(key)
    return values


PLATFORM = PipedrivePlatform()
