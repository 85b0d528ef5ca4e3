"""A Dataverse environment's Web API as the connector's tests call it through
httpx.MockTransport (`FakeDataverseTables`): rows of its tables by GUID, read one at a time
($select), read by a query ($select, $filter with the In function on the primary key) and
updated by PATCH with If-Match: *, answered in the shapes Microsoft documents ("Retrieve a
table row", "Query data", "Update and delete table rows using the Web API"; a multi-select
choice column's value taken only as its option values comma-separated, "Use choices columns to
store multiple options"); and the webhook body Dataverse posts about a row
(`remote_execution_context`)."""

from __future__ import annotations

import copy
import json
import re
import uuid
from datetime import datetime
from typing import Any
from urllib.parse import quote, unquote

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
EQ = re.compile(r"(\w+) eq '((?:[^']|'')*)'")  # an OData string literal: quotes doubled
ATTRIBUTES = re.compile(
    rf"{re.escape(API)}/EntityDefinitions\(LogicalName='(\w+)'\)/Attributes"
    r"(?:/Microsoft\.Dynamics\.CRM\.(\w+))?"
)
Row = dict[str, Any]
CREATED = ("tasks", "contacts")  # the entity sets rows are created in (POST)


class FakeDataverseTables:
    """Holds rows by entity set and GUID (a column absent from a row reads as null, as an empty
    one does), and keeps every request it was sent; `failures` are answered first, in turn."""

    def __init__(self, tables: dict[str, dict[str, Row]]) -> None:
        self.tables = {entity_set: dict(tables.get(entity_set, {})) for entity_set in TABLES}
        self.requests: list[httpx.Request] = []
        self.failures: list[httpx.Response] = []
        # Each table's attribute definitions, by logical name (AttributeMetadata, with its
        # "@odata.type"; a choice's OptionSet too), as EntityDefinitions answers them.
        self.attributes: dict[str, list[Row]] = {}
        self.created: list[Row] = []  # tasks created, as sent

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.failures:
            return self.failures.pop(0)
        if described := ATTRIBUTES.fullmatch(request.url.path):
            return self._attributes(described[1], described[2], request.url.params)
        found = ROW.fullmatch(request.url.path)
        if found and request.method == "POST" and not found[2] and found[1] in CREATED:
            return self._create(found[1], json.loads(request.content))
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

    def _create(self, entity_set: str, values: Row) -> httpx.Response:
        """A row created (POST /tasks or /contacts): 204, its URL in OData-EntityId; a task
        is kept in `created`, a contact among the contacts."""
        guid = str(uuid.UUID(int=len(self.requests)))
        if entity_set == "tasks":
            self.created.append(values)
        else:
            self.tables[entity_set][guid] = {**values, TABLES[entity_set][1]: guid}
        url = f"https://contoso.crm.dynamics.com{API}/{entity_set}({guid})"
        return httpx.Response(204, headers={"OData-EntityId": url})

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

    def _attributes(
        self, table: str, cast: str | None, params: httpx.QueryParams
    ) -> httpx.Response:
        """GET EntityDefinitions(LogicalName='t')/Attributes[/Microsoft.Dynamics.CRM.<cast>]
        ("Query table definitions using the Web API"): the $select'ed properties of each, or
        of those of the cast's type with OptionSet / GlobalOptionSet $expand'ed."""
        context = f"{API}/$metadata#EntityDefinitions('{table}')/Attributes"
        held = self.attributes.get(table, [])
        if cast:
            held = [a for a in held if a["@odata.type"] == f"#Microsoft.Dynamics.CRM.{cast}"]
            context += f"/Microsoft.Dynamics.CRM.{cast}"
        shown = params["$select"].split(",") + (["OptionSet", "GlobalOptionSet"] if cast else [])
        # MetadataId is always returned; @odata.type names each one's type, but where the
        # collection is cast to it (the context names it then)
        rows = [{**({} if cast else {"@odata.type": a["@odata.type"]}),
                 "MetadataId": a["MetadataId"], **{k: a.get(k) for k in shown}}
                for a in held]  # fmt: skip
        return httpx.Response(200, json={"@odata.context": context, "value": rows})

    def _query(self, entity_set: str, request: httpx.Request) -> httpx.Response:
        if equal := EQ.fullmatch(request.url.params["$filter"]):
            return self._equal(entity_set, equal[1], equal[2].replace("''", "'"), request)
        where = IN.fullmatch(request.url.params["$filter"])
        assert where and where[1] == TABLES[entity_set][1], request.url.params["$filter"]
        asked = [value.strip("'") for value in where[2].split(",")]
        columns = request.url.params["$select"].split(",")
        rows = [self._row(entity_set, g, columns) for g in asked if g in self.tables[entity_set]]
        context = f"{API}/$metadata#{entity_set}"
        return httpx.Response(200, json={"@odata.context": context, "value": rows})

    def _equal(
        self, entity_set: str, column: str, value: str, request: httpx.Request
    ) -> httpx.Response:
        """$filter=<column> eq '<text>' (text compared without regard to case), $top rows."""
        held = self.tables[entity_set]
        top = int(request.url.params.get("$top", "5000"))
        guids = [g for g, row in held.items() if str(row.get(column, "")).lower() == value.lower()]
        columns = request.url.params["$select"].split(",")
        rows = [self._row(entity_set, g, columns) for g in guids[:top]]
        return httpx.Response(200, json={"@odata.context": f"{API}/$metadata#{entity_set}",
                                         "value": rows})  # fmt: skip

    def _update(self, entity_set: str, guid: str, request: httpx.Request) -> httpx.Response:
        assert request.headers.get("if-match") == "*"  # an update, never an upsert
        if guid not in self.tables[entity_set]:
            return _not_found(entity_set, guid)
        values = json.loads(request.content)
        for name, options in self._multi_selects(TABLES[entity_set][0]).items():
            if values.get(name) is not None:
                held = _option_values(values[name], options)
                if held is None:
                    return _not_option_values(name, values[name])
                values[name] = held
        self.tables[entity_set][guid].update(values)
        return httpx.Response(204)

    def _multi_selects(self, table: str) -> dict[str, set[int]]:
        """The table's multi-select choice columns, each with its options' values."""
        held = self.attributes.get(table, [])
        kind = "#Microsoft.Dynamics.CRM.MultiSelectPicklistAttributeMetadata"
        return {
            a["LogicalName"]: {option["Value"] for option in _options(a)}
            for a in held
            if a["@odata.type"] == kind
        }


# A multi-select choice column's value, as "Use choices columns to store multiple options"
# sets it with the Web API: "a string containing comma-separated number values" ("1, 9"),
# read back as "1,9" (https://learn.microsoft.com/power-apps/developer/data-platform/
# multi-select-picklist).
OPTION_VALUES = re.compile(r"\s*\d+\s*(?:,\s*\d+\s*)*")


def _option_values(value: Any, options: set[int]) -> str | None:
    """A multi-select value as Dataverse holds it ("1,9"), or None when it is not the option
    values of the column, comma-separated (";"-joined ones, labels, a JSON array)."""
    if not (isinstance(value, str) and OPTION_VALUES.fullmatch(value)):
        return None
    values = [int(part) for part in value.split(",")]
    return ",".join(map(str, values)) if set(values) <= options else None


def _not_option_values(name: str, value: Any) -> httpx.Response:
    """A 400 refusing a multi-select value that is not comma-separated option values. The
    status is the Web API's for a payload it cannot take; Microsoft's page documents the
    format, not this refusal's words, so the code and message here are ours [UNCONFIRMED]."""
    message = f"'{value}' is not a valid value for the multi-select choice column '{name}'."
    return _error(400, "0x80040203", message)


def _options(attribute: Row) -> list[Row]:
    """A choice column's options: its OptionSet's, else its GlobalOptionSet's."""
    for name in ("OptionSet", "GlobalOptionSet"):
        if isinstance(attribute.get(name), dict):
            return list(attribute[name].get("Options", []))
    return []


def _error(status: int, code: str, message: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message}})


def unauthorized(environment: str = "https://contoso.crm.dynamics.com") -> httpx.Response:
    """The Web API's 401 for an access token expired or revoked: no body (Microsoft's own
    client failed reading JSON from one, microsoft/PowerPlatform-DataverseServiceClient#162),
    the challenge in WWW-Authenticate (its parameters unverified; nothing reads them)."""
    challenge = (
        "Bearer authorization_uri=https://login.microsoftonline.com/common/oauth2/authorize, "
        f"resource_id={environment}/"
    )
    return httpx.Response(401, headers={"WWW-Authenticate": challenge})


def _not_found(entity_set: str, guid: str) -> httpx.Response:
    """The Web API's 404 for a row that is not there ("Entity 'x' With Id = ... Does Not
    Exist"), its code left empty as tests/test_adapters_dynamics.py does."""
    return _error(404, "", f"Entity '{TABLES[entity_set][0]}' With Id = {guid} Does Not Exist")


# Entra ID's token endpoint: its error answer, as "OAuth 2.0 client credentials flow" and "OAuth
# 2.0 authorization code flow" (learn.microsoft.com/entra/identity-platform/) show it: 400 Bad
# Request, the OAuth error and its AADSTS description, the STS codes, the time and the ids.
AADSTS = {"invalid_client": 7000215, "invalid_grant": 70000, "invalid_request": 900144,
          "unsupported_grant_type": 70003}  # fmt: skip
TRACE_ID, CORRELATION_ID = (
    "0000aaaa-11bb-cccc-dd22-eeeeee333333",
    "aaaa0000-bb11-2222-33cc-444444dddddd",
)


def entra_error(body: Row | None) -> tuple[int, Row]:
    """An OAuth error answer ({"error", "error_description"}) as Entra ID gives it."""
    error = str((body or {}).get("error") or "invalid_request")
    code = AADSTS.get(error, AADSTS["invalid_request"])
    description = (
        f"AADSTS{code}: {(body or {}).get('error_description', error)}\r\nTrace ID: {TRACE_ID}"
        f"\r\nCorrelation ID: {CORRELATION_ID}\r\nTimestamp: 2026-01-09 02:02:12Z"
    )
    return 400, {"error": error, "error_description": description, "error_codes": [code],
                 "timestamp": "2026-01-09 02:02:12Z", "trace_id": TRACE_ID,
                 "correlation_id": CORRELATION_ID}  # fmt: skip


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


# --- listing a table (backfills), and lookups' tables ------------------------------------------

LOOKUP_NAME = "Microsoft.Dynamics.CRM.lookuplogicalname"
PAGE_LIMIT = 5_000  # rows a page at most, and what @odata.count counts up to
SINCE = re.compile(r"modifiedon ge (\S+)")
PAGE_SIZE = re.compile(r"odata\.maxpagesize=(\d+)")
LAST_ROW = re.compile(r'last="\{([0-9A-Fa-f-]{36})\}"')


class ListedDataverseTables(FakeDataverseTables):
    """The fake also answering a table's listing as "Page results using OData" and "Count rows
    using OData" show it: $select, $filter `modifiedon ge <time>` (rows hold modifiedon as ISO
    8601), $orderby the primary key ascending, pages of the Prefer odata.maxpagesize (5,000 at
    most) each but the last with an @odata.nextLink whose $skiptoken's paging cookie names the
    page's last row, and $count=true's @odata.count (up to 5,000). Asked by Prefer
    odata.include-annotations, a lookup column's value comes with the logical name of the table
    it names (held in the row as `<column>@Microsoft.Dynamics.CRM.lookuplogicalname`).
    `page_failures` answer listing requests by their number (1: a table's first), instead."""

    page_failures: dict[int, httpx.Response]

    def __init__(self, tables: dict[str, dict[str, Row]]) -> None:
        super().__init__(tables)
        self.page_failures = {}

    def _query(self, entity_set: str, request: httpx.Request) -> httpx.Response:
        if IN.fullmatch(request.url.params.get("$filter", "")):
            return super()._query(entity_set, request)
        return self._list(entity_set, request)

    def _row(self, entity_set: str, guid: str, columns: list[str]) -> Row:
        row = super()._row(entity_set, guid, columns)
        if LOOKUP_NAME not in self.requests[-1].headers.get("prefer", ""):
            return row
        stored = self.tables[entity_set][guid]
        for name in columns:
            annotation = f"{name}@{LOOKUP_NAME}"
            if row.get(name) is not None and annotation in stored:
                row[annotation] = stored[annotation]
        return row

    def listings(self, entity_set: str) -> list[httpx.Request]:
        """The listing GETs sent to a table (neither a row's read nor an In query), in order."""
        return [
            r
            for r in self.reads(entity_set)
            if r.url.path == f"{API}/{entity_set}"
            and not IN.fullmatch(r.url.params.get("$filter", ""))
        ]

    def _list(self, entity_set: str, request: httpx.Request) -> httpx.Response:
        failure = self.page_failures.pop(len(self.listings(entity_set)), None)
        if failure is not None:
            return failure
        params, key = request.url.params, TABLES[entity_set][1]
        assert params["$orderby"] == f"{key} asc", params  # a full order for the paging cookie
        matching = sorted(self.tables[entity_set])
        if "$filter" in params:
            since = SINCE.fullmatch(params["$filter"])
            assert since, params["$filter"]
            matching = [g for g in matching if self._modified(entity_set, g) >= _moment(since[1])]
        last = LAST_ROW.search(unquote(params.get("$skiptoken", "")))
        rest = [g for g in matching if not last or g > last[1].lower()]
        asked = PAGE_SIZE.search(request.headers.get("prefer", ""))
        size = min(int(asked[1]) if asked else PAGE_LIMIT, PAGE_LIMIT)
        columns = params["$select"].split(",")
        body: Row = {"@odata.context": f"{API}/$metadata#{entity_set}({params['$select']})"}
        if params.get("$count") == "true":
            body["@odata.count"] = min(len(matching), PAGE_LIMIT)
        body["value"] = [self._row(entity_set, g, columns) for g in rest[:size]]
        if len(rest) > size:
            body["@odata.nextLink"] = _next_link(request, key, rest[0], rest[size - 1])
        return httpx.Response(200, json=body)

    def _modified(self, entity_set: str, guid: str) -> datetime:
        return _moment(str(self.tables[entity_set][guid]["modifiedon"]))


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text)


def _next_link(request: httpx.Request, key: str, first: str, last: str) -> str:
    """The request's URL with the $skiptoken of the next page, in Dataverse's form: a cookie
    with the page number and a pagingcookie (URL-encoded within) naming the page's first and
    last rows."""
    number = re.search(r'pagenumber="(\d+)"', request.url.params.get("$skiptoken", ""))
    page = int(number[1]) if number else 1
    cookie = (
        f'<cookie page="{page}"><{key} last="{{{last.upper()}}}" first="{{{first.upper()}}}" />'
    )
    token = (
        f'<cookie pagenumber="{page + 1}" pagingcookie="{quote(cookie + "</cookie>")}" '
        'istracking="False" />'
    )
    query = request.url.query.decode().split("&")
    kept = [part for part in query if part and not part.startswith("$skiptoken=")]
    kept.append(f"$skiptoken={quote(token, safe='=')}")
    return f"{request.url.scheme}://{request.url.host}{request.url.path}?{'&'.join(kept)}"
