"""`POST /v1/changes` through the Flask app: the changes an import found, to what the caller's
organization was delivered, a page at a time; filters, bounds and errors in the contract
shape; free of credits."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from server import change_feed, importer
from server.http.app import create_app
from server.storage import db
from tests.helpers.constants import DATA, NOW, SECRET
from tests.helpers.orgs import organization

AVA, BEN = "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C001", "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C002"
LONESTAR, ACME = "A0A0A0A0A0A0A0A1", "B0B0B0B0B0B0B0B2"
# Ava left Lonestar for Acme; Ben got a new title at Lonestar; Lonestar grew.
MONTH = (
    "conGUID,compGUID,conFirstName,conLastName,conEmail,conJobTitleEn,conJobStartedOn,"
    "conJobUpdatedOn,recordStatus\n"
    f"{AVA},{LONESTAR},Ava,Stone,ava.stone@lonestar-works.com,Vice President of Sales,Jan-2020,"
    "Oct-2026,No Longer\n"
    f"{AVA},{ACME},Ava,Stone,ava@acme.de,Chief Revenue Officer,Oct-2026,,Active\n"
    f"{BEN},{LONESTAR},Ben,Ode,,Staff Engineer,2021-07,Nov-2026,Active\n"
)


@pytest.fixture
def app(db_path: Path, tmp_path: Path) -> Flask:
    """Lonestar and Acme with Ava and Ben; an organization delivered Ava; then a month of
    changes imported."""
    database = db.connect(db_path)
    files = {"companies": DATA / "import_companies.csv", "contacts": DATA / "import_contacts.csv"}
    importer.import_files(database, **files, now=NOW)
    return create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": lambda: NOW})


@pytest.fixture
def key(app: Flask, db_path: Path, tmp_path: Path) -> str:
    """The key of an organization that enriched Ava before the month's changes came."""
    database = db.connect(db_path)
    _, key = organization(database, f"org-{uuid.uuid4().hex[:6]}", "pro", NOW, credits=10, qps=1000)
    enriched = app.test_client().post(
        "/v7/enrich", json={"contactEmail": "ava.stone@lonestar-works.com"}, headers={"apikey": key}
    )
    assert enriched.status_code == 200 and enriched.get_json()["conGUID"] == AVA
    (tmp_path / "month.csv").write_text(MONTH)
    grown = (DATA / "import_companies.csv").read_text().replace('"1,200"', "1500")
    (tmp_path / "companies.csv").write_text(grown)
    importer.import_files(
        database, companies=tmp_path / "companies.csv", contacts=tmp_path / "month.csv", now=NOW
    )
    return key


def changes(client: FlaskClient, key: str | None, body: Any = None) -> TestResponse:
    headers = {"apikey": key} if key else {}
    return client.post("/v1/changes", json={} if body is None else body, headers=headers)


def kinds(response: TestResponse) -> list[tuple[str, str, str]]:
    assert response.status_code == 200, response.get_json()
    found = response.get_json()["data"]["changes"]
    return [(c["kind"], c["conGUID"], c["compGUID"]) for c in found]


@pytest.mark.both_backends
def test_a_caller_sees_the_changes_of_what_it_was_delivered_in_vendor_field_names(
    client: FlaskClient, key: str
) -> None:
    answer = changes(client, key)

    assert kinds(answer) == [
        ("company", "", LONESTAR),
        ("job_ended", AVA, LONESTAR),
        ("job_started", AVA, ACME),
    ]  # Ben's new title is not this organization's: it never enriched him
    body = answer.get_json()
    ended = body["data"]["changes"][1]
    assert ended["before"] == {
        "compGUID": LONESTAR, "compName": "Lonestar Works Inc.",
        "conJobTitleEn": "Vice President of Sales",
    }  # fmt: skip
    assert ended["after"] == {"leftOn": "2026-10-01"} and ended["changedOn"] == "2026-10-01"
    assert ended["recordedAt"] == "2026-11-23T12:00:00.000+00:00"
    assert body["data"]["changes"][0]["after"] == {"compEmpCount": 1500}
    assert body["message"] == "Changes fetched successfully"
    assert body["data"]["nextAfter"] == ended["changeNumber"] + 1 and not body["data"]["hasMore"]


def test_pages_go_on_from_the_last_number_and_filters_narrow_them(
    client: FlaskClient, key: str
) -> None:
    first = changes(client, key, {"pageSize": 2}).get_json()["data"]
    assert len(first["changes"]) == 2 and first["hasMore"]
    rest = changes(client, key, {"pageSize": 2, "after": first["nextAfter"]}).get_json()["data"]
    assert kinds_of(rest) == [("job_started", AVA)] and not rest["hasMore"]
    ava = {"conGUIDs": [AVA.lower()]}
    assert kinds_of(changes(client, key, ava).get_json()["data"]) == [
        ("job_ended", AVA),
        ("job_started", AVA),
    ]
    assert kinds(changes(client, key, {"since": "2026-11-23"})) != []
    later = changes(client, key, {"since": "2026-11-23T12:00:01Z"}).get_json()["data"]
    assert later == {"changes": [], "nextAfter": 0, "hasMore": False}


def kinds_of(page: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["kind"], c["conGUID"]) for c in page["changes"]]


def test_reading_changes_costs_no_credits_and_records_no_transaction(
    client: FlaskClient, key: str, db_path: Path
) -> None:
    database = db.connect(db_path)
    before = database.execute("SELECT count(*), sum(credits) FROM transactions").fetchone()
    assert kinds(changes(client, key))
    assert database.execute("SELECT count(*), sum(credits) FROM transactions").fetchone() == before


def assert_error(response: TestResponse, status: int, code: str) -> str:
    assert response.status_code == status, response.get_data(as_text=True)
    error = response.get_json()["error"]
    assert set(error) == {"code", "message", "status"}
    assert (error["code"], error["status"]) == (code, status)
    return error["message"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"pageSize": "10"}, "pageSize"),
        ({"pageSize": 0}, "pageSize"),
        ({"pageSize": change_feed.MAX_PAGE_SIZE + 1}, "pageSize"),
        ({"after": -1}, "after"),
        ({"after": True}, "after"),
        ({"conGUIDs": "C0C0"}, "conGUIDs"),
        ({"conGUIDs": ["not-a-guid"]}, "conGUIDs[0]"),
        ({"conGUIDs": [AVA] * (change_feed.MAX_GUIDS + 1)}, "conGUIDs"),
        ({"since": "last week"}, "since"),
        ({"since": 20261101}, "since"),
        ({"kinds": ["title"]}, "kinds"),
    ],
)
def test_bad_fields_are_refused_naming_the_field(
    client: FlaskClient, key: str, body: dict[str, Any], field: str
) -> None:
    assert field in assert_error(changes(client, key, body), 400, "invalid_parameter")


def test_bad_bodies_methods_and_keys_get_the_contracts_errors(
    client: FlaskClient, key: str
) -> None:
    headers = {"apikey": key}
    bad_json = client.post("/v1/changes", data=b"{oops", headers=headers,
                           content_type="application/json")  # fmt: skip
    assert_error(bad_json, 400, "invalid_json")
    listed = client.post(
        "/v1/changes", data=b"[]", headers=headers, content_type="application/json"
    )
    assert_error(listed, 400, "invalid_json")
    text = client.post("/v1/changes", data=b"{}", headers=headers, content_type="text/plain")
    assert_error(text, 415, "unsupported_media_type")
    huge = {"conGUIDs": ["0" * 32] * 40_000}
    assert_error(client.post("/v1/changes", json=huge, headers=headers), 413, "payload_too_large")
    assert_error(client.get("/v1/changes", headers=headers), 405, "method_not_allowed")
    assert_error(changes(client, None), 401, "unauthorized")
    assert_error(changes(client, "not-a-key"), 401, "invalid_api_key")


def test_reads_are_rate_limited_as_enrich_is(client: FlaskClient, db_path: Path) -> None:
    _, key = organization(db.connect(db_path), "slow", "pro", NOW, qps=1)
    assert changes(client, key).status_code == 200
    assert_error(changes(client, key), 429, "rate_limit_exceeded")
