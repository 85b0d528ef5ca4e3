"""`/v7/enrich` and `/v7/enrich/bulk` through the Flask app: keys, headers, bodies, bulk."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from server import accounts, db, privacy, store
from server.http.app import create_app
from tests.helpers.constants import SECRET
from tests.helpers.enrich_data import (
    AVA,
    AVA_EMAIL,
    BEN_OLD_EMAIL,
    LONESTAR,
    NOBODY,
    NOW,
    copy_dataset,
    suppress,
)
from tests.helpers.orgs import organization

pytestmark = pytest.mark.both_backends


class Org:
    def __init__(self, db_path: Path, tier: str, **options: Any) -> None:
        name = f"{tier}-{uuid.uuid4().hex[:6]}"
        credits, qps = options.get("credits"), options.get("qps", 1000)
        row, self.key = organization(db.connect(db_path), name, tier, NOW, credits=credits, qps=qps)
        self.id = row["id"]
        self.db_path = db_path

    def transactions(self) -> list[dict[str, Any]]:
        return store.transactions_of(db.connect(self.db_path), self.id)

    def credits(self) -> int | None:
        row = store.organization(db.connect(self.db_path), self.id)
        assert row is not None
        return row["credits"]


@pytest.fixture
def app(db_path: Path, enrich_dataset: Path) -> Flask:
    copy_dataset(enrich_dataset, db_path).close()
    return create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": lambda: NOW})


@pytest.fixture
def pro(app: Flask, db_path: Path) -> Org:
    return Org(db_path, "pro", credits=10)


def enrich(client: FlaskClient, body: Any, key: str | None, header: str = "apikey") -> TestResponse:
    return client.post("/v7/enrich", json=body, headers={header: key} if key else {})


def assert_error(response: TestResponse, status: int, code: str) -> str:
    """The contract error, with the enrich headers; returns the transaction id."""
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.get_json()["error"]["code"] == code
    assert response.get_json()["error"]["status"] == status
    assert response.headers["credits-deducted"] == "0"
    return str(uuid.UUID(response.headers["smarteTransactionId"]))


# --- one record ------------------------------------------------------------------------------


def test_enrich_answers_the_flat_result_with_transaction_and_credit_headers(
    client: FlaskClient, pro: Org
) -> None:
    r = enrich(client, {**AVA_EMAIL, "recordId": "crm-1"}, pro.key)
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    assert (body["recordId"], body["recordStatus"], body["conGUID"]) == ("crm-1", "Active", AVA)
    assert body["directDial1"] == "+1 512-555-XXXX"
    assert r.headers["smarteTransactionId"] == body["smarteTransactionId"]
    assert r.headers["credits-deducted"] == "1" and r.headers["X-Request-Id"]
    [row] = pro.transactions()
    assert (
        row["id"] == body["smarteTransactionId"] and row["request_id"] == r.headers["X-Request-Id"]
    )
    assert row["endpoint"] == "/v7/enrich" and row["key_id"] is not None
    assert pro.credits() == 9


def test_a_suppressed_person_is_answered_with_the_company_alone(
    client: FlaskClient, pro: Org, db_path: Path
) -> None:
    listed = privacy.email(AVA_EMAIL["contactEmail"])
    suppress(db.connect(db_path), listed, secret=SECRET.encode())
    body = enrich(client, AVA_EMAIL, pro.key).get_json()
    assert (body["recordStatus"], body["compGUID"], body["conGUID"]) == ("Active", LONESTAR, "")
    bulk_body = bulk(client, {"records": [AVA_EMAIL]}, pro.key).get_json()
    assert bulk_body["results"][0]["data"]["conGUID"] == ""
    assert [row["contact_guid"] for row in pro.transactions()] == ["", ""]


@pytest.mark.parametrize("header", ["apikey", "APIKEY", "Api-Key", "API_KEY"])
def test_the_key_may_come_in_any_key_header(client: FlaskClient, pro: Org, header: str) -> None:
    assert enrich(client, AVA_EMAIL, pro.key, header).status_code == 200


def test_the_key_may_come_in_the_body(client: FlaskClient, pro: Org) -> None:
    r = enrich(client, {**AVA_EMAIL, "apikey": pro.key}, None)
    assert r.status_code == 200 and r.get_json()["conGUID"] == AVA


def test_no_match_and_plus_refresh_deduct_nothing(
    client: FlaskClient, app: Flask, db_path: Path
) -> None:
    plus = Org(db_path, "enterprise_plus", credits=5)
    r = enrich(client, NOBODY, plus.key)
    assert r.get_json()["recordStatus"] == "No Match" and r.headers["credits-deducted"] == "0"
    deducted = [enrich(client, AVA_EMAIL, plus.key).headers["credits-deducted"] for _ in range(2)]
    assert deducted == ["1", "0"] and plus.credits() == 4


def test_missing_and_invalid_keys_are_401_with_the_enrich_headers(
    client: FlaskClient, pro: Org
) -> None:
    assert_error(enrich(client, AVA_EMAIL, None), 401, "unauthorized")
    assert_error(enrich(client, AVA_EMAIL, "cdk_not-a-key"), 401, "invalid_api_key")
    assert pro.transactions() == []


def test_errors_after_authentication_are_recorded_under_the_header_id(
    client: FlaskClient, pro: Org
) -> None:
    missing = assert_error(enrich(client, {"recordId": "1"}, pro.key), 400, "missing_identifier")
    wrong = assert_error(enrich(client, {"contactEmail": 5}, pro.key), 400, "invalid_parameter")
    rows = {row["id"]: row["record_status"] for row in pro.transactions()}
    assert rows == {missing: "missing_identifier", wrong: "invalid_parameter"}
    assert pro.credits() == 10


def test_402_at_zero_credits_delivers_nothing(
    client: FlaskClient, db_path: Path, app: Flask
) -> None:
    broke = Org(db_path, "pro", credits=0)
    r = enrich(client, AVA_EMAIL, broke.key)
    transaction_id = assert_error(r, 402, "insufficient_credits")
    assert AVA not in r.get_data(as_text=True)
    [row] = broke.transactions()
    assert (row["id"], row["record_status"]) == (transaction_id, "insufficient_credits")


def test_an_inactive_organization_is_refused(client: FlaskClient, pro: Org, db_path: Path) -> None:
    accounts.set_status(db.connect(db_path), pro.id, "inactive", NOW)
    assert_error(enrich(client, AVA_EMAIL, pro.key), 403, "organization_inactive")


def test_rate_limited_calls_cost_and_record_nothing(
    client: FlaskClient, app: Flask, db_path: Path
) -> None:
    slow = Org(db_path, "pro", credits=10, qps=1)
    assert enrich(client, AVA_EMAIL, slow.key).status_code == 200
    r = enrich(client, AVA_EMAIL, slow.key)
    assert_error(r, 429, "rate_limit_exceeded")
    assert r.headers["Retry-After"]
    assert len(slow.transactions()) == 1 and slow.credits() == 9


# --- bodies and methods ----------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v7/enrich", "/v7/enrich/bulk"])
@pytest.mark.parametrize(
    ("data", "content_type", "status", "code"),
    [
        (b'{"contactEmail": ', "application/json", 400, "invalid_json"),
        (b'["contactEmail"]', "application/json", 400, "invalid_json"),
        (b"", "application/json", 400, "invalid_json"),
        (b'{"contactEmail": "a@b.com"}', "text/plain", 415, "unsupported_media_type"),
        (b"{" + b" " * (1 << 20) + b"}", "application/json", 413, "payload_too_large"),
    ],
)
def test_bad_bodies_answer_in_the_contract_shape(
    client: FlaskClient, pro: Org, path: str, data: bytes, content_type: str, status: int, code: str
) -> None:
    headers = {"apikey": pro.key, "Content-Type": content_type}
    transaction_id = assert_error(client.post(path, data=data, headers=headers), status, code)
    if status == 400:  # after authentication: recorded under the id the caller was given
        assert [row["id"] for row in pro.transactions()] == [transaction_id]


def test_a_body_without_a_header_key_fails_on_the_body_first(client: FlaskClient, pro: Org) -> None:
    r = client.post("/v7/enrich", data=b"{oops", content_type="application/json")
    assert_error(r, 400, "invalid_json")
    assert pro.transactions() == []


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
@pytest.mark.parametrize("path", ["/v7/enrich", "/v7/enrich/bulk"])
def test_other_methods_are_405(client: FlaskClient, pro: Org, method: str, path: str) -> None:
    r = client.open(path, method=method, headers={"apikey": pro.key})
    assert_error(r, 405, "method_not_allowed")
    assert "POST" in r.headers["Allow"]


# --- bulk ------------------------------------------------------------------------------------


def bulk(client: FlaskClient, body: Any, key: str) -> TestResponse:
    return client.post("/v7/enrich/bulk", json=body, headers={"apikey": key})


def test_bulk_answers_every_record_in_order_with_its_own_status(
    client: FlaskClient, pro: Org
) -> None:
    records = [
        {**AVA_EMAIL, "recordId": "a"},
        {"contactEmail": ["x"]},
        42,
        {**NOBODY, "recordId": "n"},
        {"contactFullName": "Ava Stone"},
        {**BEN_OLD_EMAIL, "recordId": "b"},
    ]
    r = bulk(client, {"records": records}, pro.key)
    assert r.status_code == 200, r.get_json()
    results = r.get_json()["results"]
    assert [entry["status"] for entry in results] == [200, 400, 400, 200, 400, 200]
    assert [e["data"]["recordId"] for e in results if e["status"] == 200] == ["a", "n", "b"]
    assert results[1]["error"]["code"] == "invalid_parameter"
    assert results[4]["error"]["code"] == "missing_identifier"
    assert results[5]["data"]["recordStatus"] == "No Longer"
    assert r.headers["credits-deducted"] == "2" and pro.credits() == 8
    ids = {entry["smarteTransactionId"] for entry in results}
    assert ids == {row["id"] for row in pro.transactions()} and len(ids) == 6
    assert results[0]["data"]["smarteTransactionId"] == results[0]["smarteTransactionId"]


def test_bulk_stops_charging_at_402(client: FlaskClient, db_path: Path, app: Flask) -> None:
    short = Org(db_path, "pro", credits=1)
    r = bulk(client, {"records": [AVA_EMAIL, BEN_OLD_EMAIL, NOBODY]}, short.key)
    statuses = [entry["status"] for entry in r.get_json()["results"]]
    assert r.status_code == 200 and statuses == [200, 402, 402]
    assert r.get_json()["results"][2]["error"]["code"] == "insufficient_credits"
    assert r.headers["credits-deducted"] == "1" and short.credits() == 0


def test_bulk_takes_at_most_100_records(client: FlaskClient, pro: Org) -> None:
    r = bulk(client, {"records": [AVA_EMAIL] * 101}, pro.key)
    assert_error(r, 400, "invalid_parameter")
    assert "at most 100" in r.get_json()["error"]["message"]
    assert_error(bulk(client, {"records": "no"}, pro.key), 400, "invalid_parameter")
    assert pro.credits() == 10


def test_bulk_is_one_hit_on_the_rate_limits_and_takes_the_key_in_the_body(
    client: FlaskClient, app: Flask, db_path: Path
) -> None:
    slow = Org(db_path, "pro", credits=10, qps=1)
    body = {"apikey": slow.key, "records": [AVA_EMAIL, AVA_EMAIL, NOBODY]}
    r = client.post("/v7/enrich/bulk", json=body)
    assert r.status_code == 200 and [e["status"] for e in r.get_json()["results"]] == [200] * 3
    assert_error(client.post("/v7/enrich/bulk", json=body), 429, "rate_limit_exceeded")
