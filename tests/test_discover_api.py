"""`/v1/discover` through the Flask app: keys, limits, bounds and errors in the contract shape."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from server import accounts, importer
from server.http.app import create_app
from server.storage import db
from tests.helpers.constants import DATA, NOW, SECRET
from tests.helpers.discover_data import EVERYONE, LONESTAR
from tests.helpers.orgs import organization

pytestmark = pytest.mark.both_backends
G = {"company_guid": LONESTAR}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("discover-api") / "dataset.db"
    connection = db.connect(path)
    importer.import_files(
        connection,
        companies=DATA / "discover_companies.csv",
        contacts=DATA / "discover_contacts.csv",
    )
    connection.close()
    return path


@pytest.fixture
def app(db_path: Path, dataset: Path) -> Flask:
    if isinstance(db_path, str):  # PostgreSQL: import the dataset into the test's database
        importer.import_files(
            db.connect(db_path),
            companies=DATA / "discover_companies.csv",
            contacts=DATA / "discover_contacts.csv",
        )
    else:
        shutil.copy(dataset, db_path)
    return create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": lambda: NOW})


def _org(db_path: Path, tier: str = "pro", **options: Any) -> tuple[str, str]:
    row, key = organization(db.connect(db_path), f"{tier}-{uuid.uuid4().hex[:6]}", tier, **options)
    return row["id"], key


@pytest.fixture
def key(app: Flask, db_path: Path) -> str:
    return _org(db_path)[1]


def discover(
    client: FlaskClient, body: Any, key: str | None, header: str = "API_KEY"
) -> TestResponse:
    return client.post("/v1/discover", json=body, headers={header: key} if key else {})


def assert_error(response: TestResponse, status: int, code: str, words: str = "") -> None:
    assert response.status_code == status, response.get_data(as_text=True)
    error = response.get_json()["error"]
    assert (error["code"], error["status"]) == (code, status)
    assert words in error["message"]


@pytest.mark.parametrize("header", ["API_KEY", "Api-Key", "api_key", "apikey"])
def test_discover_answers_the_contract_shape(client: FlaskClient, key: str, header: str) -> None:
    r = discover(client, {"company_guid": LONESTAR, "accuracy": "B"}, key, header)
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    assert body["message"] == "Contacts fetched successfully"
    assert set(body["data"]) == {
        "company_guid",
        "total_count",
        "page_number",
        "page_size",
        "total_pages",
        "contacts",
    }
    assert [c["contact_last_name"] for c in body["data"]["contacts"]] == EVERYONE
    assert r.headers["X-Request-Id"] and r.headers["RateLimit-Policy"]


def test_stats_answers_counts_only(client: FlaskClient, key: str) -> None:
    r = discover(client, {"company_guid": LONESTAR, "mode": "STATS", "location": ["TX"]}, key)
    data = r.get_json()["data"]
    assert set(data) == {"company_guid", "total_count", "by_level", "by_function"}
    assert data["total_count"] == 7  # Adams, Evans, Fox, Hill, Irwin, King, Moore: A+ in Texas


def test_missing_and_invalid_keys_are_401(client: FlaskClient, key: str) -> None:
    body = {"company_guid": LONESTAR}
    assert_error(discover(client, body, None), 401, "unauthorized")
    wrong = key[:-1] + ("y" if key.endswith("x") else "x")  # never the key itself
    assert_error(discover(client, body, wrong), 401, "invalid_api_key")


def test_an_inactive_organization_is_refused(client: FlaskClient, db_path: Path) -> None:
    org_id, key = _org(db_path)
    accounts.set_status(db.connect(db_path), org_id, "inactive", NOW)
    assert_error(discover(client, {"company_guid": LONESTAR}, key), 403, "organization_inactive")


def test_each_key_has_a_per_minute_limit(client: FlaskClient, db_path: Path) -> None:
    _, key = _org(db_path, discover_per_minute=2)
    for _ in range(2):
        assert discover(client, {"company_guid": LONESTAR}, key).status_code == 200
    r = discover(client, {"company_guid": LONESTAR}, key)
    assert_error(r, 429, "rate_limit_exceeded")
    assert 0 < int(r.headers["Retry-After"]) <= 60
    assert "discover" in r.headers["RateLimit-Policy"]


@pytest.mark.parametrize(
    ("body", "status", "code", "words"),
    [
        ({}, 400, "missing_identifier", "company_guid is required"),
        ({"jobTitle": ["CTO"]}, 400, "missing_identifier", "company_guid"),
        ({"company_guid": 7}, 400, "invalid_parameter", "company_guid must be a string"),
        ({"company_guid": "FFFFFFFFFFFFFFFF"}, 404, "not_found", "FFFFFFFFFFFFFFFF"),
        ({**G, "jobTitle": [f"t{i}" for i in range(16)]}, 400, "invalid_parameter", "at most 15"),
        ({**G, "jobTitle": "CTO"}, 400, "invalid_parameter", "jobTitle must be an array"),
        ({**G, "jobTitle": ["CTO", 5]}, 400, "invalid_parameter", "jobTitle[1] must be a string"),
        (
            {**G, "jobTitle": ["x" * 201]},
            400,
            "invalid_parameter",
            "jobTitle[0] must be at most 200",
        ),
        (
            {**G, "location": ["Austin"] * 16},
            400,
            "invalid_parameter",
            "location must hold at most 15",
        ),
        ({**G, "location": ["Austin"], "within_miles": 0}, 400, "invalid_parameter", "at least 1"),
        (
            {**G, "location": ["Austin"], "within_miles": 101},
            400,
            "invalid_parameter",
            "at most 100",
        ),
        (
            {**G, "location": ["Austin"], "within_miles": 2.5},
            400,
            "invalid_parameter",
            "whole number",
        ),
        (
            {**G, "location": ["Austin"], "within_miles": "50"},
            400,
            "invalid_parameter",
            "whole number",
        ),
        ({**G, "within_miles": 20}, 400, "invalid_parameter", "within_miles needs location"),
        ({**G, "location": ["Xyzzyville, QQ"]}, 400, "invalid_parameter", "cannot place"),
        ({**G, "mode": "Everything"}, 400, "invalid_parameter", "mode must be Discover or Stats"),
        ({**G, "accuracy": "A++"}, 400, "invalid_parameter", "accuracy must be one of"),
        ({**G, "max_contacts": 0}, 400, "invalid_parameter", "max_contacts must be at least 1"),
        ({**G, "max_contacts": 10_001}, 400, "invalid_parameter", "at most 10000"),
        ({**G, "page_size": 1001}, 400, "invalid_parameter", "page_size must be at most 1000"),
        (
            {**G, "page_number": 0, "pagination_required": True},
            400,
            "invalid_parameter",
            "at least 1",
        ),
        ({**G, "page_number": -3}, 400, "invalid_parameter", "page_number must be at least 1"),
        ({**G, "pagination_required": "yes"}, 400, "invalid_parameter", "true or false"),
    ],
)
def test_every_bound_is_a_contract_error_naming_the_field(
    client: FlaskClient, key: str, body: dict[str, Any], status: int, code: str, words: str
) -> None:
    assert_error(discover(client, body, key), status, code, words)


def test_unknown_fields_are_ignored(client: FlaskClient, key: str) -> None:
    r = discover(client, {"company_guid": LONESTAR, "colour": "blue", "accuracy": "B"}, key)
    assert r.get_json()["data"]["total_count"] == 17


@pytest.mark.parametrize(
    ("data", "content_type", "status", "code"),
    [
        (b'{"company_guid": ', "application/json", 400, "invalid_json"),
        (b'["company_guid"]', "application/json", 400, "invalid_json"),
        (b'{"company_guid": "D15C0000000000A1"}', "text/plain", 415, "unsupported_media_type"),
        (b"{" + b" " * (1 << 20) + b"}", "application/json", 413, "payload_too_large"),
    ],
)
def test_bad_bodies_answer_in_the_contract_shape(
    client: FlaskClient, key: str, data: bytes, content_type: str, status: int, code: str
) -> None:
    headers = {"API_KEY": key, "Content-Type": content_type}
    assert_error(client.post("/v1/discover", data=data, headers=headers), status, code)


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_other_methods_are_405(client: FlaskClient, key: str, method: str) -> None:
    r = client.open("/v1/discover", method=method, headers={"API_KEY": key})
    assert_error(r, 405, "method_not_allowed")
