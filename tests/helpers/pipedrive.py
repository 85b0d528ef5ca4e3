"""A Pipedrive for the tests: its answer shapes (API v2's envelope, its 404) and
`HeldPipedrive`, a Pipedrive holding records for the worker's end-to-end tests."""

from __future__ import annotations

import json
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
    one, GET a list by `ids`, PATCH one (custom fields merged, anything else replaced), in
    Pipedrive's answer shapes; it keeps the requests it was sent."""

    def __init__(self, **held: dict[str, dict[str, Any]]) -> None:
        self.held = {kind: dict(held.get(kind, {})) for kind in ("persons", "organizations")}
        self.held["leads"] = dict(held.get("leads", {}))
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        _, _, _, kind, *rest = request.url.path.split("/")  # /api/v2/persons/12
        held = self.held[kind]
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
