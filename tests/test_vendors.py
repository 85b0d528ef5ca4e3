"""The check that holds every fake CRM to its vendor's description (tests/helpers/vendors.py):
that every fake answers through it, that the documents it reads are what their sources say,
and that it refuses what the vendor would not answer."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import httpx
import jsonschema_rs
import pytest

from tests.helpers import vendors
from tests.helpers.vendors import SPECS, Exchange, VendorTransport, broken, check, json_schema

TESTS = Path(__file__).resolve().parent
WRITTEN = ("pipedrive", "salesforce", "zoho", "dataverse")


def test_every_fake_crm_answers_through_the_check() -> None:
    """A bare MockTransport would answer unchecked: every fake goes through VendorTransport."""
    bare = [
        f"{path.relative_to(TESTS)}:{n}"
        for path in TESTS.rglob("*.py")
        if path.name != "vendors.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\bMockTransport\(", line)
    ]
    assert bare == []


def test_the_vendored_hubspot_documents_are_hubspots_own() -> None:
    """Each file as README.md lists it (its sha256 at the source's commit): unchanged, departures
    kept apart in departures.json."""
    table = (SPECS / "README.md").read_text()
    listed = dict(re.findall(r"`(\w+\.json)` \| `([0-9a-f]{64})`", table))
    assert set(listed) == {f"{name}.json" for name in vendors.HUBSPOT_DOCUMENTS}
    for name, digest in listed.items():
        assert hashlib.sha256((SPECS / "hubspot" / name).read_bytes()).hexdigest() == digest


def test_every_departure_names_where_hubspot_shows_it() -> None:
    departures = json.loads((SPECS / "hubspot" / "departures.json").read_text())["departures"]
    assert departures
    for departure in departures:
        assert departure["source"].startswith("https://") and departure["why"]
        assert departure["document"] in vendors.HUBSPOT_DOCUMENTS


@pytest.mark.parametrize("vendor", WRITTEN)
def test_every_written_operation_cites_its_source(vendor: str) -> None:
    """Where a vendor publishes nothing machine-readable, each operation names the page (or the
    official SDK model) it is written from."""
    (document,) = vendors.documents(vendor)
    assert document["openapi"].startswith("3.0")
    operations = [
        (path, method, item[method])
        for path, item in document["paths"].items()
        for method in vendors.METHODS
        if method in item
    ]
    assert operations
    for path, method, operation in operations:
        url = operation.get("externalDocs", {}).get("url", "")
        assert url.startswith("https://"), f"{method.upper()} {path} cites no page"
        assert operation.get("responses"), f"{method.upper()} {path} lists no answer"


@pytest.mark.parametrize("vendor", ("hubspot", *WRITTEN))
def test_every_schema_is_json_schema(vendor: str) -> None:
    for document in vendors.documents(vendor):
        for schema in document.get("components", {}).get("schemas", {}).values():
            jsonschema_rs.meta.validate(json_schema(schema))


# --- What the check refuses -------------------------------------------------------------------

CONTACT = "/crm/objects/2026-03/contacts/512"
RECORD = {
    "id": "512",
    "properties": {"email": "ada@example.com", "company": None},
    "createdAt": "2026-01-02T03:04:05.000Z",
    "updatedAt": "2026-01-02T03:04:05.000Z",
    "archived": False,
}


def exchange(method: str, path: str, status: int, answer: object, sent: object = None) -> Exchange:
    body = b"" if sent is None else json.dumps(sent).encode()
    kind = "application/json" if sent is not None else ""
    content = b"" if answer is None else json.dumps(answer).encode()
    return Exchange(method, path, kind, body, status, content)


def test_a_record_as_hubspot_answers_it_passes() -> None:
    assert check(exchange("GET", CONTACT, 200, RECORD)) == []


def test_an_answer_missing_what_hubspot_always_sends_is_a_problem() -> None:
    thin = {"id": "512", "properties": {"email": "ada@example.com"}}
    (first, *rest) = check(exchange("GET", CONTACT, 200, thin))
    assert "/crm/objects/2026-03/contacts/{contactId}" in first
    assert any('"createdAt" is a required property' in p for p in (first, *rest))


def test_a_path_the_vendor_does_not_have_is_a_problem() -> None:
    (problem,) = check(exchange("GET", "/crm/objects/2026-03/contacts/512/notes", 200, {}))
    assert "no operation of hubspot's specification" in problem


def test_a_request_body_the_vendor_refuses_is_a_problem() -> None:
    sent = {"inputs": [{"id": 512, "properties": {"email": 1}}]}
    problems = check(exchange("POST", f"{CONTACT[:-4]}/batch/update", 200, None, sent))
    assert any(
        p.startswith("hubspot: POST") and "request body at inputs/0/id" in p for p in problems
    )


def test_an_error_answer_is_held_to_the_vendors_error_shape() -> None:
    problems = check(exchange("GET", CONTACT, 404, {"status": "error", "message": "Not found"}))
    assert any('"correlationId" is a required property' in p for p in problems)


def test_a_fault_given_on_purpose_still_has_its_request_checked() -> None:
    """`broken` marks an answer a test garbles on purpose: the request is still held to the
    vendor's description, the answer is not."""
    sent = {"inputs": [{"id": "512"}]}  # a batch update input lacks its properties

    def garbled(request: httpx.Request) -> httpx.Response:
        return broken(httpx.Response(200, text="<html>Bad gateway</html>"))

    with httpx.Client(transport=VendorTransport(garbled)) as client:
        client.post(f"https://api.hubapi.com{CONTACT[:-4]}/batch/update", json=sent)
    (problem,) = vendors.take_problems()
    assert "request body at inputs/0" in problem and '"properties" is a required' in problem


def test_redirects_and_gateway_pages_are_left_to_the_fault_tests() -> None:
    for status in (301, 307, 502, 503, 504):
        page = Exchange("GET", CONTACT, "", b"", status, b"<html>Bad gateway</html>")
        assert check(page) == []


def test_paths_no_vendor_owns_are_not_checked() -> None:
    assert check(exchange("GET", "/people/7", 200, {"anything": True})) == []


# --- Zoho: its literal paths, and its error shape ------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "template"),
    [
        ("GET", "/crm/v7/settings/fields", "/crm/v7/settings/fields"),
        ("PATCH", "/crm/v7/actions/watch", "/crm/v7/actions/watch"),
        ("DELETE", "/crm/v7/actions/watch", "/crm/v7/actions/watch"),
        ("GET", "/crm/v7/Contacts/search", "/crm/v7/{module}/search"),
        ("GET", "/crm/v7/Leads/5725767000003000064", "/crm/v7/{module}/{id}"),
        ("PUT", "/crm/v7/Accounts", "/crm/v7/{module}"),
        ("POST", "/oauth/v2/token/revoke", "/oauth/v2/token/revoke"),
    ],
)
def test_zohos_literal_paths_are_not_read_as_a_module_and_a_record(
    method: str, path: str, template: str
) -> None:
    found = vendors.find("zoho", method, path)
    assert vendors.owner(path) == "zoho" and found is not None
    assert found[1].template == template


def test_a_zoho_error_without_its_details_is_a_problem() -> None:
    limited = {"code": "TOO_MANY_REQUESTS", "message": "too many requests", "status": "error"}
    (problem,) = check(exchange("GET", "/crm/v7/Contacts", 429, limited))
    assert problem.endswith('429 answer at (root): "details" is a required property')
