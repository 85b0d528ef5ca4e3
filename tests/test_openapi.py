"""GET /openapi.json: every route of the product's app with its methods, a valid OpenAPI 3.1
document, request bodies from the models and constants the handlers use, and one error shape."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
import schemathesis
from flask import Flask

from connector.app import create_app
from connector.platforms import PLATFORMS
from server import discover, enrich
from server.http import access, admin_api
from server.http.app import create_app as create_service_app
from server.http.openapi import openapi_path

UNDOCUMENTED = ("/static/", "/settings", "/openapi.json")  # files, HTML pages, the document
AUTOMATIC = {"HEAD", "OPTIONS"}


@pytest.fixture
def app(db_path: Path) -> Flask:
    return create_app({"DB": str(db_path), "KEY_SECRET": "test-secret"})


@pytest.fixture
def document(app: Flask) -> dict[str, Any]:
    response = app.test_client().get("/openapi.json")
    assert response.status_code == 200 and response.mimetype == "application/json"
    return response.get_json()


def _operations(document: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method != "parameters":
                yield path, method, operation


def _walk(value: Any) -> Iterator[Any]:
    yield value
    children = value.values() if isinstance(value, dict) else value
    if isinstance(value, dict | list):
        for child in children:
            yield from _walk(child)


def _resolve(document: dict[str, Any], ref: str) -> Any:
    found: Any = document
    for part in ref.removeprefix("#/").split("/"):
        found = found[part.replace("~1", "/").replace("~0", "~")]
    return found


def test_every_route_is_documented_with_its_methods_and_nothing_else(
    app: Flask, document: dict[str, Any]
) -> None:
    routes: dict[str, set[str]] = {}
    for rule in app.url_map.iter_rules():
        if not rule.rule.startswith(UNDOCUMENTED) and not rule.endpoint.endswith("static"):
            path, _ = openapi_path(rule.rule)
            routes.setdefault(path, set()).update((rule.methods or set()) - AUTOMATIC)
    documented: dict[str, set[str]] = {}
    for path, method, _ in _operations(document):
        documented.setdefault(path, set()).add(method.upper())
    assert documented == routes
    assert {"/v7/enrich", "/v1/discover", "/hooks/{connection_id}/events", "/healthz"} <= set(
        routes
    )


def test_the_document_is_valid_openapi_3_1(document: dict[str, Any]) -> None:
    assert document["openapi"].startswith("3.1.")
    schemathesis.openapi.from_dict(document).validate()  # the OpenAPI 3.1 meta-schema
    for value in _walk(document):
        if isinstance(value, dict) and isinstance(value.get("schema"), dict):
            jsonschema_rs.meta.validate(value["schema"])  # JSON Schema 2020-12
    for schema in document["components"]["schemas"].values():
        jsonschema_rs.meta.validate(schema)
    for value in _walk(document):
        if isinstance(value, dict) and "$ref" in value:
            assert _resolve(document, value["$ref"]) is not None, value["$ref"]
    ids = [operation["operationId"] for _, _, operation in _operations(document)]
    assert len(ids) == len(set(ids))


def test_bounds_are_json_schema_keywords_not_pydantic_ones(document: dict[str, Any]) -> None:
    """A constraint pydantic cannot render (a validator in the way) shows up as `ge`/`le`,
    which no JSON Schema tool reads: the fuzzer would never test the bound."""
    for value in _walk(document["components"]["schemas"]):
        if isinstance(value, dict) and value.get("type") == "integer":
            assert not {"ge", "le", "gt", "lt"} & value.keys(), value
    page_size = document["components"]["schemas"]["DiscoverRequest"]["properties"]["page_size"]
    assert (page_size["minimum"], page_size["maximum"]) == (1, discover.MAX_PAGE_SIZE)


def test_request_bodies_come_from_the_handlers_models_and_constants(
    document: dict[str, Any],
) -> None:
    schemas = document["components"]["schemas"]
    for name, model in {
        "EmailBody": admin_api.EmailBody,
        "OptionalEmailBody": admin_api.OptionalEmailBody,
        "KeyUpdateBody": admin_api.KeyUpdateBody,
        "UserUpdateBody": admin_api.UserUpdateBody,
        "EmptyBody": admin_api.EmptyBody,
        "DiscoverRequest": discover.DiscoverRequest,
    }.items():
        documented = json.loads(json.dumps(schemas[name]))
        for field in documented["properties"].values():
            field.pop("examples", None)
        assert documented == model.model_json_schema(), name
    enrich_input = schemas["EnrichInput"]["properties"]
    assert set(enrich_input) == {*enrich.INPUT_FIELDS, "recordId", "apikey"}
    assert enrich_input["contactEmail"]["maxLength"] == enrich.MAX_VALUE_CHARS
    assert schemas["EnrichResult"]["required"] == list(enrich.OUTPUT_FIELDS)
    records = schemas["EnrichBulkRequest"]["properties"]["records"]
    assert records["maxItems"] == enrich.MAX_BULK_RECORDS


def test_every_error_response_is_the_one_error_shape(document: dict[str, Any]) -> None:
    error = document["components"]["schemas"]["ErrorResponse"]
    assert error["required"] == ["error"] and error["additionalProperties"] is False
    detail = _resolve(document, error["properties"]["error"]["$ref"])
    assert detail["required"] == ["code", "message", "status"]
    assert detail["additionalProperties"] is False
    for path, _, operation in _operations(document):
        for status, response in operation["responses"].items():
            if int(status) >= 400:
                schema = response["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorResponse"}, (path, status)
                assert "X-Request-Id" in response["headers"]
            if status == "429":
                assert "Retry-After" in response["headers"]


@pytest.mark.parametrize(
    ("path", "statuses"),
    [
        ("/v7/enrich", {400, 401, 402, 403, 409, 413, 415, 422, 429, 500}),
        ("/v7/enrich/bulk", {400, 401, 402, 403, 409, 413, 415, 422, 429, 500}),
        ("/v1/discover", {400, 401, 403, 404, 413, 415, 429, 500}),
        ("/signals/v1/key/createsignalapikey", {400, 401, 403, 409, 413, 415, 429, 500}),
        ("/signals/v1/key/view", {400, 401, 403, 404, 413, 415, 429, 500}),
        ("/signals/v1/key/update", {400, 401, 403, 404, 409, 413, 415, 429, 500}),
        ("/signals/v1/user/createsignalapikey", {400, 401, 403, 409, 413, 415, 429, 500}),
        ("/signals/v1/user/view", {400, 401, 403, 413, 415, 429, 500}),
        ("/signals/v1/user/update", {400, 401, 403, 404, 409, 413, 415, 429, 500}),
        ("/hooks/{connection_id}/enrich", {400, 401, 402, 403, 404, 409, 413, 422, 500, 503}),
        ("/hooks/{connection_id}/events", {400, 401, 404, 413, 500, 503}),
    ],
)
def test_each_endpoint_lists_the_contracts_error_statuses(
    document: dict[str, Any], path: str, statuses: set[int]
) -> None:
    responses = document["paths"][path]["post"]["responses"]
    assert {int(status) for status in responses} - {200} == statuses


@pytest.mark.parametrize("path", ["/v7/enrich", "/v7/enrich/bulk"])
def test_enrich_names_the_idempotency_key_its_refusals_and_the_replay_header(
    document: dict[str, Any], path: str
) -> None:
    operation = document["paths"][path]["post"]
    [parameter] = operation["parameters"]
    assert parameter["name"] == "Idempotency-Key" and parameter["in"] == "header"
    assert parameter["required"] is False and parameter["schema"]["type"] == "string"
    responses = operation["responses"]
    assert "Idempotent-Replayed" in responses["200"]["headers"]
    assert "Retry-After" in responses["409"]["headers"]
    assert "request_in_progress" in responses["409"]["description"]
    assert "idempotency_key_reused" in responses["422"]["description"]
    admin = document["paths"]["/signals/v1/key/update"]["post"]["responses"]["409"]
    assert "Retry-After" not in admin["headers"] and "not_eligible" in admin["description"]


def test_keys_are_any_of_the_contracts_key_headers_the_endpoints_own_first(
    document: dict[str, Any],
) -> None:
    schemes = document["components"]["securitySchemes"]
    for name in access.KEY_HEADERS:
        assert schemes[name] == {**schemes[name], "type": "apiKey", "in": "header", "name": name}
    first = {
        "/v7/enrich": "apikey",
        "/v1/discover": "Api-Key",
        "/signals/v1/key/view": "Api-Key",
        "/signals/v1/user/update": "Admin-Api-Key",
    }
    for path, header in first.items():
        security = document["paths"][path]["post"]["security"]
        assert security[0] == {header: []}
        assert {name for option in security for name in option} == set(access.KEY_HEADERS)
    assert document["paths"]["/healthz"]["get"]["security"] == []


def test_hooks_are_secured_the_way_each_platform_signs(document: dict[str, Any]) -> None:
    """A scheme per signing kind of `PLATFORMS` (a new kind fails the build of the
    document); /events only those of CRMs; events come as JSON or as Salesforce's XML."""
    crm = {"hubspotSignature", "urlSecret_key", "urlSecret_code", "connectionBasic"}
    for route, expected in (
        ("events", crm),
        ("enrich", {*crm, "standardWebhooks", "connectionBearer"}),
    ):
        security = document["paths"][f"/hooks/{{connection_id}}/{route}"]["post"]["security"]
        assert {name for option in security for name in option} == expected
        assert {} in security  # Zoho's token travels in the body
    events = document["paths"]["/hooks/{connection_id}/events"]["post"]
    assert set(events["requestBody"]["content"]) == {"application/json", "text/xml"}
    assert {p.signing for p in PLATFORMS.values()} == {
        "hubspot", "url-secret", "basic", "body-token", "standard-webhooks", "bearer"
    }  # fmt: skip


def test_the_service_serves_its_own_document_and_never_imports_the_connector(
    db_path: Path,
) -> None:
    service = create_service_app({"DB": str(db_path), "KEY_SECRET": "test-secret"})
    paths = service.test_client().get("/openapi.json").get_json()["paths"]
    assert "/v7/enrich" in paths and not any(path.startswith("/hooks") for path in paths)
    probe = "import sys, server.http.app, server.http.openapi; print(sorted(sys.modules))"
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert shown.returncode == 0 and "'connector" not in shown.stdout, shown.stderr
