"""A Dataverse environment's Web API as the connector's tests call it through
httpx.MockTransport (`FakeDataverseTables`): rows of its tables by GUID, read one at a time
($select), read by a query ($select, $filter with the In function on the primary key) and
updated by PATCH with If-Match: *, answered in the shapes Microsoft documents ("Retrieve a
table row", "Query data", "Update and delete table rows using the Web API"); and the webhook
body Dataverse posts about a row (`remote_execution_context`)."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import httpx

from tests.helpers.constants import PLATFORMS

API = "/api/data/v9.2"
# The tables' own facts, not the connector's: entity set -> (logical name, primary key).
TABLES = {
    "contacts": ("contact", "contactid"),
    "leads": ("lead", "leadid"),
    "accounts": ("account", "accountid"),
}
ROW = re.compile(rf"{re.escape(API)}/(\w+)(?:\(([0-9a-fA-F-]{{36}})\))?")
IN = re.compile(r"Microsoft\.Dynamics\.CRM\.In\(PropertyName='(\w+)',PropertyValues=\[([^\]]*)\]\)")
Row = dict[str, Any]


class FakeDataverseTables:
    """Holds rows by entity set and GUID (a column absent from a row reads as null, as an empty
    one does), and keeps every request it was sent; `failures` are answered first, in turn."""

    def __init__(self, tables: dict[str, dict[str, Row]]) -> None:
        self.tables = {entity_set: dict(tables.get(entity_set, {})) for entity_set in TABLES}
        self.requests: list[httpx.Request] = []
        self.failures: list[httpx.Response] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.failures:
            return self.failures.pop(0)
        found = ROW.fullmatch(request.url.path)
        if not found or found[1] not in TABLES:
            return _error(404, "0x80060888", f"Resource not found for the segment '{found}'.")
        entity_set, guid = found[1], found[2]
        if request.method == "GET" and guid:
            return self._read(entity_set, guid, request)
        if request.method == "GET":
            return self._query(entity_set, request)
        if request.method == "PATCH" and guid:
            return self._update(entity_set, guid, request)
        return _error(405, "0x80060888", f"{request.method} is not supported here")

    def patches(self, entity_set: str) -> list[tuple[str, Row]]:
        """The PATCHes sent to a table's rows, in order: (row GUID, body) each."""
        sent = [(ROW.fullmatch(r.url.path), r) for r in self.requests if r.method == "PATCH"]
        return [
            (found[2], json.loads(r.content))
            for found, r in sent
            if found and found[1] == entity_set
        ]

    def reads(self, entity_set: str) -> list[httpx.Request]:
        """The GETs sent to a table (a row's or a query's), in order."""
        return [
            r
            for r in self.requests
            if r.method == "GET" and r.url.path.startswith(f"{API}/{entity_set}")
        ]

    def _row(self, entity_set: str, guid: str, columns: list[str]) -> Row:
        stored = self.tables[entity_set][guid]
        key = TABLES[entity_set][1]
        return {
            "@odata.etag": 'W/"4334726"',
            **{name: stored.get(name) for name in columns},
            key: guid,
        }

    def _read(self, entity_set: str, guid: str, request: httpx.Request) -> httpx.Response:
        if guid not in self.tables[entity_set]:
            return _not_found(entity_set, guid)
        columns = request.url.params["$select"].split(",")
        context = f"{API}/$metadata#{entity_set}({','.join(columns)})/$entity"
        return httpx.Response(
            200, json={"@odata.context": context, **self._row(entity_set, guid, columns)}
        )

    def _query(self, entity_set: str, request: httpx.Request) -> httpx.Response:
        where = IN.fullmatch(request.url.params["$filter"])
        assert where and where[1] == TABLES[entity_set][1], request.url.params["$filter"]
        asked = [value.strip("'") for value in where[2].split(",")]
        columns = request.url.params["$select"].split(",")
        rows = [self._row(entity_set, g, columns) for g in asked if g in self.tables[entity_set]]
        context = f"{API}/$metadata#{entity_set}"
        return httpx.Response(200, json={"@odata.context": context, "value": rows})

    def _update(self, entity_set: str, guid: str, request: httpx.Request) -> httpx.Response:
        assert request.headers.get("if-match") == "*"  # an update, never an upsert
        if guid not in self.tables[entity_set]:
            return _not_found(entity_set, guid)
        self.tables[entity_set][guid].update(json.loads(request.content))
        return httpx.Response(204)


def _error(status: int, code: str, message: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message}})


def _not_found(entity_set: str, guid: str) -> httpx.Response:
    """The Web API's 404 for a row that is not there ("Entity 'x' With Id = ... Does Not
    Exist"), its code left empty as tests/test_adapters_dynamics.py does."""
    return _error(404, "", f"Entity '{TABLES[entity_set][0]}' With Id = {guid} Does Not Exist")


SAMPLE = PLATFORMS / "dynamics365_webhook_remote_execution_context.json"


def remote_execution_context(
    table: str, guid: str, columns: Row, operation: str = "", message: str = "Update"
) -> bytes:
    """The body Dataverse posts for a step on `message` of `table` (logical name): Microsoft's
    sample (use-webhooks.md), its context and parent context about the row `guid` of `table`,
    the Target's Attributes the row's id and `columns` (in DataContract's key/value form)."""
    document = json.loads(SAMPLE.read_text())
    attributes = [{"key": name, "value": value} for name, value in columns.items()]
    for context in (document, document["ParentContext"]):
        target = context["InputParameters"][0]["value"]
        target["Attributes"] = [{"key": f"{table}id", "value": guid}, *copy.deepcopy(attributes)]
        target["Id"], target["LogicalName"] = guid, table
        context["PrimaryEntityId"], context["PrimaryEntityName"] = guid, table
        context["MessageName"] = message
        context["OperationId"] = operation or context["OperationId"]
    return json.dumps(document).encode()
