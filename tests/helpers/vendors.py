"""Every answer a fake CRM gives, and every request the connector sends it, held to the vendor's
own description of that call (tests/vendor/README.md says where each description comes from):
HubSpot's published OpenAPI documents, Pipedrive's API as its official client's generated models
describe it, and, where a vendor publishes nothing machine-readable (Salesforce, Zoho,
Microsoft), OpenAPI documents written from the documentation page each operation cites.

A call whose path belongs to a vendor but matches no operation of its document, a request body
or an answer its schema refuses, or a status the operation does not list, is a problem:
`record` keeps it, and tests/conftest.py fails the test it happened in (the adapter under test
may well swallow an exception raised inside its transport, so nothing here raises)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import httpx
import jsonschema_rs

Row = dict[str, Any]
SPECS = Path(__file__).resolve().parent.parent / "vendor"
METHODS = ("get", "put", "post", "delete", "patch")

# Which vendor a path belongs to: its first match. Microsoft's identity platform (the token
# endpoint a Dataverse connection uses) is described with Dataverse.
OWNERS: tuple[tuple[str, str], ...] = (
    (r"/(crm/(objects|properties|lists)|automation/actions|webhooks)/2026-03(/|$).*", "hubspot"),
    (r"/automation/actions/callbacks/2026-03/.*|/oauth/(v1|2026-03)/.*", "hubspot"),
    (r"/appinstalls/.*", "hubspot"),
    (r"/(api/v[12]/|oauth/(token|revoke)$).*", "pipedrive"),
    (r"/(crm/v\d+|oauth/v2)/.*", "zoho"),
    (r"/services/.*", "salesforce"),
    (r"/api/data/.*|/[^/]+/oauth2/v2\.0/token", "dataverse"),
)
# Each platform's token and revocation endpoints as its document names them (the fake
# authorization server answers all of them at /token and /revoke): vendor, token, revocation.
OAUTH_ENDPOINTS: dict[str, tuple[str, str, str]] = {
    "hubspot": ("hubspot", "/oauth/2026-03/token", "/oauth/2026-03/token/revoke"),
    "pipedrive": ("pipedrive", "/oauth/token", "/oauth/revoke"),
    "zoho": ("zoho", "/oauth/v2/token", "/oauth/v2/token/revoke"),
    "salesforce": ("salesforce", "/services/oauth2/token", "/services/oauth2/revoke"),
    "dynamics": ("dataverse", "/organizations/oauth2/v2.0/token", "(no revocation endpoint)"),
}
# The extension marking a response a test breaks on purpose (`broken`).
BROKEN = "contactdata.broken"
# Statuses a proxy or load balancer in front of any vendor gives (its own page, no API body).
NETWORK_ANSWERS = (502, 503, 504)
HUBSPOT_DOCUMENTS = (
    "contacts", "companies", "properties", "webhooks", "actionsV4", "oauth", "appUninstalls",
    "lists", "tasks", "notes",
)  # fmt: skip


@dataclass(frozen=True)
class Exchange:
    """One call to a fake CRM: what was sent and what the fake answered (bodies as bytes)."""

    method: str
    path: str  # as sent, percent-encoding kept, no query
    request_type: str  # the request's Content-Type, "" without one
    request_body: bytes
    status: int
    response_body: bytes


@dataclass(frozen=True)
class Operation:
    """One operation of a vendor's document: its path template as a pattern, and where its
    description lives."""

    vendor: str
    template: str
    pattern: re.Pattern[str]
    method: str
    spec: Row  # the operation object


# --- Problems found, kept until the test ends -----------------------------------------------

_problems: list[str] = []
_lock = threading.Lock()


def record(problem: str) -> None:
    with _lock:
        _problems.append(problem)


def take_problems() -> list[str]:
    """The problems found since the last call, forgotten."""
    with _lock:
        found = list(_problems)
        _problems.clear()
    return found


# --- The documents --------------------------------------------------------------------------


@cache
def documents(vendor: str) -> list[Row]:
    """The vendor's documents, with the departures its folder records applied."""
    if vendor == "hubspot":
        found = {name: _load(SPECS / "hubspot" / f"{name}.json") for name in HUBSPOT_DOCUMENTS}
        for departure in _load(SPECS / "hubspot" / "departures.json")["departures"]:
            _depart(found[departure["document"]], departure["pointer"], departure["value"])
        return list(found.values())
    return [_load(SPECS / f"{vendor}.json")]


def _load(path: Path) -> Row:
    return json.loads(path.read_text())


def _depart(node: Any, pointer: str, value: Any) -> None:
    """Sets what `pointer` names in `node` to `value`; a `*` step names every key there (an
    answer the vendor documents elsewhere than in its machine-readable document, such as
    HubSpot's 429 body, departs at every operation at once)."""
    *steps, last = [step.replace("~1", "/").replace("~0", "~") for step in pointer[1:].split("/")]
    holders = [node]
    for step in steps:
        holders = [
            child
            for holder in holders
            for key, child in holder.items()
            if step in ("*", key) and isinstance(child, dict)
        ]
    for holder in holders:
        if last == "*":
            for key in holder:
                holder[key] = value
        else:
            holder[last] = value


@cache
def operations(vendor: str) -> list[tuple[Row, Operation]]:
    """Every operation of the vendor's documents, literal paths before templated ones (so
    /contacts/search is never read as /contacts/{contactId})."""
    found = []
    for document in documents(vendor):
        for template, item in document["paths"].items():
            for method in METHODS:
                if method in item:
                    pattern = _pattern(template)
                    found.append(
                        (document, Operation(vendor, template, pattern, method, item[method]))
                    )
    return sorted(found, key=lambda pair: (pair[1].template.count("{"), -len(pair[1].template)))


def _pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}]+\})", template)
    return re.compile(
        "".join("[^/]+?" if part.startswith("{") else re.escape(part) for part in parts)
    )


def owner(path: str) -> str | None:
    for pattern, vendor in OWNERS:
        if re.fullmatch(pattern, path):
            return vendor
    return None


def find(vendor: str, method: str, path: str) -> tuple[Row, Operation] | None:
    for document, operation in operations(vendor):
        if operation.method == method.lower() and operation.pattern.fullmatch(path):
            return document, operation
    return None


# --- Schemas: OpenAPI 3.0's dialect made JSON Schema 2020-12 --------------------------------


def json_schema(node: Any) -> Any:
    """OpenAPI 3.0's schema objects as JSON Schema: `nullable` becomes a null type, boolean
    `exclusiveMinimum`/`exclusiveMaximum` become numbers, refs are kept (they resolve in the
    document the schema is validated within)."""
    if isinstance(node, list):
        return [json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    converted = {key: json_schema(value) for key, value in node.items() if key != "example"}
    if converted.pop("nullable", False):
        if isinstance(converted.get("type"), str):
            converted["type"] = [converted["type"], "null"]
        elif "$ref" in converted or "oneOf" in converted or "anyOf" in converted:
            converted = {"anyOf": [converted, {"type": "null"}]}
    for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(converted.get(bound), bool) and converted.pop(bound) and limit in converted:
            converted[bound] = converted.pop(limit)
    return converted


@cache
def _components(vendor: str, index: int) -> Row:
    return json_schema(documents(vendor)[index].get("components", {}))


@cache
def _validator(vendor: str, index: int, where: str) -> jsonschema_rs.Draft202012Validator:
    """The validator for the schema at JSON pointer `where` of the vendor's document `index`,
    its refs resolving in that document."""
    node: Any = documents(vendor)[index]
    for step in where.strip("/").split("/"):
        node = node[step.replace("~1", "/").replace("~0", "~")]
    root = {**json_schema(node), "components": _components(vendor, index)}
    return jsonschema_rs.Draft202012Validator(root, validate_formats=True)


def _pointer(*steps: str) -> str:
    return "/" + "/".join(step.replace("~", "~0").replace("/", "~1") for step in steps)


def _resolve(document: Row, node: Row) -> Row:
    while "$ref" in node:
        target: Any = document
        for step in node["$ref"].lstrip("#/").split("/"):
            target = target[step]
        node = target
    return node


def _schema_pointer(document: Row, base: str, holder: Row, media: str) -> str | None:
    """The pointer of the schema `holder` (a request body or a response, perhaps a $ref) gives
    for `media`, or None when it has no content of that type."""
    if "$ref" in holder:
        name = holder["$ref"].split("/")[-1]
        kind = holder["$ref"].split("/")[-2]  # requestBodies, responses
        return _schema_pointer(document, _pointer("components", kind, name),
                               _resolve(document, holder), media)  # fmt: skip
    content = holder.get("content") or {}
    for candidate in (media, "application/json", "*/*"):
        if candidate in content and "schema" in content[candidate]:
            return f"{base}/content/{_pointer(candidate)[1:]}/schema"
    return None


# --- Checking one call -------------------------------------------------------------------------


def check(exchange: Exchange, vendor: str | None = None, *, answered: bool = True) -> list[str]:
    """The problems of one call, as the vendor's document sees them (none for a path no vendor
    owns, such as the toy platform's); of its request alone unless `answered`."""
    vendor = vendor or owner(exchange.path)
    if vendor is None:
        return []
    where = f"{vendor}: {exchange.method} {exchange.path}"
    found = find(vendor, exchange.method, exchange.path)
    if found is None:
        return [f"{where}: no operation of {vendor}'s specification has this method and path"]
    document, operation = found
    index = documents(vendor).index(document)
    base = _pointer("paths", operation.template, operation.method)
    problems = _request_problems(vendor, index, base, operation, exchange)
    if answered:
        problems += _response_problems(vendor, index, base, operation, exchange)
    return [f"{where} ({operation.template}): {problem}" for problem in problems]


def _request_problems(
    vendor: str, index: int, base: str, operation: Operation, exchange: Exchange
) -> list[str]:
    body = operation.spec.get("requestBody")
    if not exchange.request_body:
        required = body is not None and body.get("required", False)
        return ["the request has no body, which the operation requires"] if required else []
    if body is None:
        return ["the request has a body, which the operation does not take"]
    media = exchange.request_type.split(";")[0].strip()
    pointer = _schema_pointer(documents(vendor)[index], f"{base}/requestBody", body, media)
    if pointer is None:
        return [f"the operation takes no {media or 'untyped'} request body"]
    instance = _parsed(exchange.request_body, media)
    return [f"request body {error}" for error in _errors(vendor, index, pointer, instance)]


def _response_problems(
    vendor: str, index: int, base: str, operation: Operation, exchange: Exchange
) -> list[str]:
    if 300 <= exchange.status < 400 or exchange.status in NETWORK_ANSWERS:
        return []  # the way to the vendor answered, not its API: checked by the fault tests
    responses = operation.spec.get("responses", {})
    status = str(exchange.status)
    wildcard = f"{status[0]}XX"
    key = next((k for k in (status, wildcard, wildcard.lower()) if k in responses), None)
    if key is None and exchange.status < 300 and not exchange.response_body:
        # HubSpot's documents list no success answer where it has no body (a 204)
        return []
    if key is None:
        key = "default" if "default" in responses else None
    if key is None:
        return [f"the operation lists no {status} answer (it lists {', '.join(responses)})"]
    document = documents(vendor)[index]
    pointer = _schema_pointer(
        document, f"{base}/responses/{key}", responses[key], "application/json"
    )
    if pointer is None:
        if exchange.response_body:
            return [f"the {key} answer has no body in the specification, the fake gave one"]
        return []
    if not exchange.response_body:
        return [f"the {key} answer has a body in the specification, the fake gave none"]
    instance = _parsed(exchange.response_body, "application/json")
    return [f"{status} answer {error}" for error in _errors(vendor, index, pointer, instance)]


def _parsed(content: bytes, media: str) -> Any:
    if media == "application/x-www-form-urlencoded":
        return dict(parse_qsl(content.decode()))
    try:
        return json.loads(content)
    except ValueError:
        return content.decode("utf-8", "replace")


def _errors(vendor: str, index: int, pointer: str, instance: Any) -> Iterator[str]:
    for error in _validator(vendor, index, pointer).iter_errors(instance):
        at = "/".join(str(step) for step in error.instance_path) or "(root)"
        yield f"at {at}: {error.message}"


# --- Where the fakes meet the check ------------------------------------------------------------


def exchange_of(request: httpx.Request, response: httpx.Response) -> Exchange:
    return Exchange(
        method=request.method,
        path=request.url.raw_path.decode().split("?")[0],
        request_type=request.headers.get("content-type", ""),
        request_body=request.content,
        status=response.status_code,
        response_body=response.content,
    )


def checked(exchange: Exchange, vendor: str | None = None, *, answered: bool = True) -> None:
    """Record the problems of `exchange` (of its request alone unless `answered`)."""
    for problem in check(exchange, vendor, answered=answered):
        record(problem)


class VendorTransport(httpx.MockTransport):
    """httpx's MockTransport, every call it answers checked against the vendor's document.
    Every fake CRM in tests/ answers through it (tests/test_vendors.py holds that)."""

    def __init__(self, handler: Callable[[httpx.Request], httpx.Response]) -> None:
        super().__init__(handler)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        response.read()
        exchange = exchange_of(request, response)
        if response.extensions.get(BROKEN):  # the request is still the vendor's to judge
            checked(exchange, answered=False)
        else:
            checked(exchange)
        return response


def broken(response: httpx.Response) -> httpx.Response:
    """`response` marked as a fault a test gives on purpose (a proxy's page, JSON of another
    shape): VendorTransport checks the request it answers, not the answer."""
    response.extensions[BROKEN] = True
    return response
