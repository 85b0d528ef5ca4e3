"""A Zoho CRM holding records of several modules (Contacts, Leads, Accounts), answering the
v7 records API over httpx.MockTransport as Zoho documents it: get one record or several by
`ids` (the `fields` asked, 204 when none is found), update one or a batch (a SUCCESS a record,
in the order sent); and a notification channel confirming each module's events. Every
request is kept."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.helpers.constants import OUTBOUND

Record = dict[str, Any]
INVALID_MODULE = {
    "code": "INVALID_MODULE",
    "details": {"resource_path_index": 2},
    "message": "the module name given seems to be invalid",
    "status": "error",
}


def _success(record_id: str) -> Record:
    """The documented per-record SUCCESS of an update (the outbound sample), for `record_id`."""
    sample = json.loads((OUTBOUND / "zoho_update_records_response.json").read_text())
    item = sample["data"][0]
    return {**item, "details": {**item["details"], "id": record_id}}


class FakeZohoRecords:
    """Zoho's records by module API name, then id (`records["Accounts"]["5725..."]`)."""

    def __init__(self, records: dict[str, dict[str, Record]]) -> None:
        self.records = records
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        _, _, _, module, *rest = request.url.path.split("/")  # /crm/v7/{module}[/{id}]
        if module == "actions":
            return self._watch(request)
        held = self.records.get(module)
        if held is None:
            return httpx.Response(400, json=INVALID_MODULE)
        if request.method == "PUT":
            return self._update(held, json.loads(request.content)["data"], rest)
        ids = rest or request.url.params["ids"].split(",")
        fields = [name for name in request.url.params.get("fields", "").split(",") if name]
        found = [self._view(held[key], fields) for key in ids if key in held]
        if not found:
            return httpx.Response(204)
        info = {"per_page": 200, "count": len(found), "page": 1, "more_records": False}
        return httpx.Response(200, json={"data": found, "info": info})

    def updates(self, module: str) -> list[tuple[str, list[Record]]]:
        """The updates sent to a module: each one's path and records, in order."""
        return [
            (request.url.path, json.loads(request.content)["data"])
            for request in self.requests
            if request.method == "PUT" and request.url.path.split("/")[3] == module
        ]

    def _view(self, record: Record, fields: list[str]) -> Record:
        shown = {name: record.get(name) for name in fields} if fields else dict(record)
        return {**shown, "id": record["id"]}

    def _update(
        self, held: dict[str, Record], data: list[Record], rest: list[str]
    ) -> httpx.Response:
        answers = []
        for item in data:
            key = rest[0] if rest else str(item["id"])
            held[key].update({name: value for name, value in item.items() if name != "id"})
            answers.append(_success(key))
        return httpx.Response(200, json={"data": answers})

    def _watch(self, request: httpx.Request) -> httpx.Response:
        """The channel enabled or updated: one event a module watched, its expiry confirmed."""
        (channel,) = json.loads(request.content)["watch"]
        modules = dict.fromkeys(event.split(".")[0] for event in channel["events"])
        events = [
            {
                "channel_expiry": channel["channel_expiry"],
                "resource_uri": f"https://www.zohoapis.com/crm/v7/{module}",
                "resource_name": module,
                "channel_id": channel["channel_id"],
            }
            for module in modules
        ]
        answer = {
            "code": "SUCCESS",
            "details": {"events": events},
            "message": "Successfully subscribed for actions-watch of the given module",
            "status": "success",
        }
        return httpx.Response(200, json={"watch": [answer]})
