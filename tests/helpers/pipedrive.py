"""A Pipedrive for the tests: its answer shapes (API v2's envelope, its 404) and
`HeldPipedrive`, a Pipedrive holding records for the worker's end-to-end tests."""

from __future__ import annotations

import base64
import json
from datetime import datetime
from typing import Any

import httpx

from tests.helpers.crm import answer

# Pipedrive's error envelope ({"success": false, "error", "error_info"}); the 404 text is ours.
NOT_FOUND = {
    "success": False,
    "error": "Person not found",
    "error_info": "Please check developers.pipedrive.com for more information about Pipedrive API.",
    "data": None,
    "additional_data": None,
}


def found(record: dict[str, Any]) -> httpx.Response:
    """Pipedrive's answer holding one record."""
    return answer(200, {"success": True, "data": record})


class HeldPipedrive:
    """A Pipedrive holding persons and organizations (API v2) and leads (API v1) by id: GET
    one, GET a list by `ids`, PATCH one (custom fields merged, anything else replaced), list
    them page by page (`listing`), in Pipedrive's answer shapes; it keeps the requests it was
    sent, and answers the `failures` queued first."""

    def __init__(self, **held: dict[str, dict[str, Any]]) -> None:
        self.held = {kind: dict(held.get(kind, {})) for kind in ("persons", "organizations")}
        self.held["leads"] = dict(held.get("leads", {}))
        self.requests: list[httpx.Request] = []
        self.failures: list[httpx.Response] = []  # answered first, one a request

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.failures:
            return self.failures.pop(0)
        _, _, _, kind, *rest = request.url.path.split("/")  # /api/v2/persons/12
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

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self))

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
    next_cursor`); v1's leads in the order they were added, `start` and `limit`
    (`additional_data.pagination`)."""
    limit = int(query.get("limit", "100"))
    if limit > 500:
        return answer(400, {"success": False, "error": "Validation failed: limit: must be <= 500",
                            "code": "ERR_SCHEMA_VALIDATION_FAILED"})  # fmt: skip
    if kind == "leads":
        start = int(query.get("start", "0"))
        page = list(held.values())[start : start + limit]
        more = start + limit < len(held)
        pagination = {"start": start, "limit": limit, "more_items_in_collection": more}
        if more:
            pagination["next_start"] = start + limit
        return answer(200, {"success": True, "data": page,
                            "additional_data": {"pagination": pagination}})  # fmt: skip
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


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text)


class PipedriveWebhooks:
    """Pipedrive's webhooks API (v1: POST /api/v1/webhooks, DELETE /api/v1/webhooks/{id}) over
    httpx.MockTransport, in its answer shapes: the webhooks it holds by id (`held`, admins'
    own among them), every request kept, and the `failures` queued answered first."""

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
            self.next_id += 1
            webhook = {"id": self.next_id, **json.loads(request.content), "is_active": 1}
            self.held[str(self.next_id)] = webhook
            return answer(201, {"success": True, "status": "ok", "data": webhook})
        if request.method == "DELETE" and self.held.pop(path.strip("/"), None) is not None:
            return answer(200, {"success": True, "status": "ok"})
        return answer(404, {**NOT_FOUND, "error": "Webhook not found"})

    def client(self) -> httpx.Client:
        return httpx.Client(transport=httpx.MockTransport(self))


def refusal(status: int, error: str) -> httpx.Response:
    """Pipedrive's error envelope with `error` (the words are ours, the shape Pipedrive's)."""
    return answer(status, {**NOT_FOUND, "error": error})
