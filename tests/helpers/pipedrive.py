"""A Pipedrive for the tests: its answer shapes (API v2's envelope, its 404) and
`HeldPipedrive`, a Pipedrive holding records for the worker's end-to-end tests."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import datetime
from typing import Any

import httpx

from tests.helpers.crm import answer
from tests.helpers.vendors import VendorTransport

# Pipedrive's error envelope ({"success": false, "error", "error_info"}); the 404 text is ours.
NOT_FOUND = {
    "success": False,
    "error": "Person not found",
    "error_info": "Please check developers.pipedrive.com for more information about Pipedrive API.",
    "data": None,
    "additional_data": None,
}

# Its 429 (https://pipedrive.readme.io/docs/core-api-concepts-rate-limiting): "Request over
# limit" in the same envelope; the wait is in the headers (see connector/platforms/pipedrive.py).
RATE_LIMITED = {**NOT_FOUND, "error": "Request over limit", "errorCode": 429}


CREATED = ("persons", "activities", "notes")  # what HeldPipedrive creates (POST)


def found(record: dict[str, Any]) -> httpx.Response:
    """Pipedrive's answer holding one record."""
    return answer(200, {"success": True, "data": record})


def lead(lead_id: str, title: str, **fields: Any) -> dict[str, Any]:
    """A lead as GET /api/v1/leads and /api/v1/leads/{id} give it, `fields` changed: every
    field of Lead (pipedrive/client-nodejs src/versions/v1/models/lead.ts) is always there,
    its links (`person_id`, `organization_id`) null unless given."""
    return {
        "id": lead_id, "title": title, "owner_id": 12345678, "creator_id": 12345678,
        "label_ids": [], "person_id": None, "organization_id": None, "source_name": "API",
        "origin": "API", "origin_id": None, "channel": None, "channel_id": None,
        "source_deal_id": None, "is_archived": False, "was_seen": False, "value": None,
        "expected_close_date": None, "next_activity_id": None,
        "add_time": "2025-06-19T16:00:00.000Z", "update_time": "2025-06-19T16:07:36.754Z",
        "visible_to": "3", "cc_email": "acme+deal1@pipedrivemail.com", **fields,
    }  # fmt: skip


class HeldPipedrive:
    """A Pipedrive holding persons and organizations (API v2) and leads (API v1) by id: GET
    one, GET a list by `ids`, PATCH one (custom fields merged, anything else replaced), list
    them page by page (`listing`), search persons by e-mail (`search`); and the field lists
    (`fields`: personFields, organizationFields, dealFields, API v2), listed page by page and
    added to (`field_lists`), in Pipedrive's answer shapes; it keeps the requests it was
    sent, and answers the `failures` queued first."""

    def __init__(self, **held: dict[str, dict[str, Any]]) -> None:
        self.held = {kind: dict(held.get(kind, {})) for kind in ("persons", "organizations")}
        self.held["leads"] = dict(held.get("leads", {}))
        self.requests: list[httpx.Request] = []
        self.failures: list[httpx.Response] = []  # answered first, one a request
        self.fields: dict[str, list[dict[str, Any]]] = {name: [] for name in FIELD_LISTS}
        self.created: dict[str, list[dict[str, Any]]] = {}  # activities, notes: as sent

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.failures:
            return self.failures.pop(0)
        _, _, _, kind, *rest = request.url.path.split("/")  # /api/v2/persons/12
        if request.method == "POST" and kind in CREATED:
            return self._create(kind, json.loads(request.content))
        if kind in self.fields:
            return field_lists(self.fields[kind], request)
        if rest == ["search"]:
            return search(self.held[kind], request.url.params)
        held = self.held[kind]
        if not rest and "ids" not in request.url.params:
            return listing(kind, held, request.url.params)
        if not rest:
            ids = request.url.params["ids"].split(",")
            return answer(200, {"success": True, "data": [held[i] for i in ids if i in held]})
        if rest[0] not in held:
            return answer(404, {**NOT_FOUND, "error": f"{kind[:-1].title()} not found"})
        if request.method == "PATCH":
            sent = json.loads(request.content)
            custom = {**held[rest[0]].get("custom_fields", {}), **sent.pop("custom_fields", {})}
            held[rest[0]] = {**held[rest[0]], **sent, "custom_fields": custom}
        return found(held[rest[0]])

    def _create(self, kind: str, sent: dict[str, Any]) -> httpx.Response:
        """POST /api/v2/persons, /api/v2/activities or /api/v1/notes: the object created under
        `data` (UpsertPersonResponse, UpsertActivityResponse, UpsertNoteResponse); activities
        and notes are kept in `created`."""
        self.created.setdefault(kind, [])
        if kind == "persons":
            key = max((int(k) for k in self.held["persons"]), default=100) + 1
            self.held["persons"][str(key)] = {"id": key, **sent}
            return answer(200, {"success": True, "data": {"id": key, **sent}})
        self.created[kind].append(sent)
        key = 7000 + sum(map(len, self.created.values()))
        return answer(200, {"success": True, "data": {"id": key, **sent}})

    def client(self) -> httpx.Client:
        return httpx.Client(transport=VendorTransport(self))

    def sent(self, method: str = "PATCH") -> list[tuple[str, Any]]:
        """The path and body of each request of `method`, in order."""
        return [(r.url.path, json.loads(r.content or b"null")) for r in self.requests
                if r.method == method]  # fmt: skip

    def lists(self) -> list[httpx.QueryParams]:
        """The query of each list call (no `ids`: a listing, not a read), in order."""
        return [r.url.params for r in self.requests if r.method == "GET"
                and r.url.path.count("/") == 3 and "ids" not in r.url.params]  # fmt: skip


def listing(kind: str, held: dict[str, dict[str, Any]], query: httpx.QueryParams) -> httpx.Response:
    """A list call: v2's persons and organizations by ascending id, `updated_since`
    (update_time >= it), `limit` up to 500 and an opaque `cursor` (`additional_data.
    next_cursor`); v1's leads in the order they were added, `start` and `limit`, with
    `start`, `limit` and `more_items_in_collection` right under `additional_data`
    (GetLeadsResponse -> GetFieldsResponseAllOfAdditionalData, pipedrive/client-nodejs
    src/versions/v1/models/get-leads-response.ts: no `pagination` object, no `next_start`)."""
    limit = int(query.get("limit", "100"))
    if limit > 500:
        return answer(400, {"success": False, "error": "Validation failed: limit: must be <= 500",
                            "code": "ERR_SCHEMA_VALIDATION_FAILED"})  # fmt: skip
    if kind == "leads":
        start = int(query.get("start", "0"))
        person = int(query["person_id"]) if "person_id" in query else None
        leads = [lead for lead in held.values() if person in (None, lead.get("person_id"))]
        page = leads[start : start + limit]
        more = start + limit < len(leads)
        extra = {"start": start, "limit": limit, "more_items_in_collection": more}
        return answer(200, {"success": True, "data": page, "additional_data": extra})
    after = json.loads(base64.b64decode(query["cursor"]))["id"] if "cursor" in query else 0
    since = _when(query["updated_since"]) if "updated_since" in query else None
    matching = sorted(
        (r for r in held.values() if since is None or _when(r["update_time"]) >= since),
        key=lambda r: int(r["id"]),
    )
    following = [r for r in matching if int(r["id"]) > after]
    page, rest = following[:limit], following[limit:]
    cursor = (
        base64.b64encode(json.dumps({"id": page[-1]["id"]}).encode()).decode() if rest else None
    )
    return answer(200, {"success": True, "data": page, "additional_data": {"next_cursor": cursor}})


FIELD_LISTS = ("personFields", "organizationFields", "dealFields")


def field_lists(fields: list[dict[str, Any]], request: httpx.Request) -> httpx.Response:
    """GET /api/v2/<entity>Fields: `limit` (at most 500) fields from an opaque `cursor`,
    `additional_data.next_cursor` null after the last (GetPersonFields200Response, pipedrive/
    client-nodejs src/versions/v2); POST adds a custom field keyed by a new 40-character hash,
    answered as the field (AddPersonField200Response: success, data)."""
    if request.method == "POST":
        sent = json.loads(request.content)
        code = hashlib.sha1(f"{sent['field_name']}{len(fields)}".encode()).hexdigest()
        field = {"field_code": code, "field_name": sent["field_name"],
                 "field_type": sent["field_type"], "is_custom_field": True,
                 "is_optional_response_field": False, "options": None,
                 "subfields": None}  # fmt: skip
        fields.append(field)
        return answer(200, {"success": True, "data": field})
    limit = int(request.url.params.get("limit", "100"))
    if limit > 500:
        return answer(400, {"success": False, "error": "Validation failed: limit: must be <= 500",
                            "code": "ERR_SCHEMA_VALIDATION_FAILED"})  # fmt: skip
    start = (
        int(base64.b64decode(request.url.params["cursor"])) if "cursor" in request.url.params else 0
    )
    more = start + limit < len(fields)
    cursor = base64.b64encode(str(start + limit).encode()).decode() if more else None
    return answer(200, {"success": True, "data": fields[start : start + limit],
                        "additional_data": {"next_cursor": cursor}})  # fmt: skip


def search(held: dict[str, dict[str, Any]], query: httpx.QueryParams) -> httpx.Response:
    """GET /api/v2/persons/search?term=&fields=email&exact_match=true: the persons one of whose
    e-mails is the term (not case sensitive), as v2's search answers them (data.items[], each
    a result_score and the item: id, type, name, emails as strings)."""
    assert query["fields"] == "email" and query["exact_match"] == "true", query
    term = query["term"].lower()
    items = [
        {"result_score": 1.0, "item": {"id": int(key), "type": "person", "name": person.get("name"),
                                        "emails": [e["value"] for e in person.get("emails", [])]}}
        for key, person in held.items()
        if term in (e["value"].lower() for e in person.get("emails", []))
    ]  # fmt: skip
    return answer(200, {"success": True, "data": {"items": items[: int(query.get("limit", 100))]},
                        "additional_data": {"next_cursor": None}})  # fmt: skip


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text)


# AddWebhookRequest's required fields (pipedrive/client-nodejs src/versions/v1/models/
# add-webhook-request.ts; `name` required since 29.2.0, 2025-09-03).
WEBHOOK_REQUIRED = ("subscription_url", "event_action", "event_object", "name")


class PipedriveWebhooks:
    """Pipedrive's webhooks API (v1: POST /api/v1/webhooks, DELETE /api/v1/webhooks/{id}) over
    httpx.MockTransport, in its answer shapes: the webhooks it holds by id (`held`, admins'
    own among them), every request kept, and the `failures` queued answered first. A POST
    lacking a field AddWebhookRequest requires is refused with a 400 (WebhooksBadRequestResponse:
    success false, `errors`; the words are ours)."""

    def __init__(self, **held: dict[str, Any]) -> None:
        self.held: dict[str, dict[str, Any]] = dict(held)
        self.requests: list[httpx.Request] = []
        self.failures: list[httpx.Response] = []
        self.next_id = 100

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.failures:
            return self.failures.pop(0)
        path = request.url.path.removeprefix("/api/v1/webhooks")
        if request.method == "POST" and not path:
            sent = json.loads(request.content)
            lacking = [name for name in WEBHOOK_REQUIRED if not sent.get(name)]
            if lacking:
                errors = {name: f"{name} is required" for name in lacking}
                return answer(400, {"success": False, "errors": errors})
            self.next_id += 1
            webhook = {"id": self.next_id, **sent, "is_active": 1}
            self.held[str(self.next_id)] = webhook
            return answer(201, {"success": True, "status": "ok", "data": webhook})
        if request.method == "DELETE" and self.held.pop(path.strip("/"), None) is not None:
            return answer(200, {"success": True, "status": "ok"})
        return answer(404, {**NOT_FOUND, "error": "Webhook not found"})

    def client(self) -> httpx.Client:
        return httpx.Client(transport=VendorTransport(self))


def refusal(status: int, error: str) -> httpx.Response:
    """Pipedrive's error envelope with `error` (the words are ours, the shape Pipedrive's)."""
    return answer(status, {**NOT_FOUND, "error": error})
