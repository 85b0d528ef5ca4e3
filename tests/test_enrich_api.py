"""`/v7/enrich` and `/v7/enrich/bulk` through the Flask app: keys, headers, bodies, bulk, and
requests answered once by their Idempotency-Key."""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from server import accounts, credits, privacy
from server.clock import iso
from server.http.app import create_app
from server.storage import db, store
from tests.helpers.clock import Clock
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
from tests.helpers.threads import at_once

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
def clock() -> Clock:
    return Clock(NOW)


@pytest.fixture
def app(db_path: Path, enrich_dataset: Path, clock: Clock) -> Flask:
    copy_dataset(enrich_dataset, db_path).close()
    return create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": clock})


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


@pytest.mark.through_pgbouncer
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


@pytest.mark.through_pgbouncer
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


@pytest.mark.through_pgbouncer
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


# --- Idempotency-Key -------------------------------------------------------------------------


def once(client: FlaskClient, path: str, body: Any, key: str, idempotency_key: str) -> TestResponse:
    """A call with an Idempotency-Key, its body always serialized the same."""
    headers = {"apikey": key, "Idempotency-Key": idempotency_key}
    return client.post(
        path, data=json.dumps(body), content_type="application/json", headers=headers
    )


@pytest.mark.parametrize(
    ("path", "body"),
    [("/v7/enrich", AVA_EMAIL), ("/v7/enrich/bulk", {"records": [AVA_EMAIL, NOBODY]})],
)
def test_a_copy_with_the_same_key_gets_the_first_answer_again_for_nothing(
    client: FlaskClient, pro: Org, path: str, body: Any
) -> None:
    first = once(client, path, body, pro.key, "retry-1")
    again = once(client, path, body, pro.key, "retry-1")
    assert first.status_code == again.status_code == 200, first.get_json()
    assert again.get_json() == first.get_json()
    assert again.headers["smarteTransactionId"] == first.headers["smarteTransactionId"]
    assert (first.headers["credits-deducted"], again.headers["credits-deducted"]) == ("1", "0")
    replayed = (first.headers["Idempotent-Replayed"], again.headers["Idempotent-Replayed"])
    assert replayed == ("false", "true")
    assert again.headers["X-Request-Id"] != first.headers["X-Request-Id"]
    assert pro.credits() == 9
    unkeyed = client.post(path, json=body, headers={"apikey": pro.key})
    assert unkeyed.status_code == 200 and "Idempotent-Replayed" not in unkeyed.headers


def test_the_same_key_with_another_body_is_422_and_keeps_the_first_answer(
    client: FlaskClient, pro: Org
) -> None:
    first = once(client, "/v7/enrich", AVA_EMAIL, pro.key, "retry-1")
    other = once(client, "/v7/enrich", BEN_OLD_EMAIL, pro.key, "retry-1")
    refused = assert_error(other, 422, "idempotency_key_reused")
    assert "different body" in other.get_json()["error"]["message"]
    again = once(client, "/v7/enrich", AVA_EMAIL, pro.key, "retry-1")
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json() == first.get_json()
    statuses = {row["id"]: row["record_status"] for row in pro.transactions()}
    assert statuses == {
        first.get_json()["smarteTransactionId"]: "Active",
        refused: "idempotency_key_reused",
    }
    assert pro.credits() == 9


def test_a_key_belongs_to_one_organization_and_one_endpoint(
    client: FlaskClient, pro: Org, db_path: Path
) -> None:
    other = Org(db_path, "pro", credits=10)
    answers = [
        once(client, "/v7/enrich", AVA_EMAIL, pro.key, "shared"),
        once(client, "/v7/enrich", AVA_EMAIL, other.key, "shared"),
        once(client, "/v7/enrich/bulk", {"records": [AVA_EMAIL]}, pro.key, "shared"),
    ]
    assert [r.status_code for r in answers] == [200, 200, 200]
    assert [r.headers["Idempotent-Replayed"] for r in answers] == ["false"] * 3
    assert len({r.headers["smarteTransactionId"] for r in answers}) == 3
    assert (pro.credits(), other.credits()) == (8, 9)


def test_a_refused_request_is_not_kept_so_its_copy_is_enriched_afresh(
    client: FlaskClient, db_path: Path, app: Flask
) -> None:
    broke = Org(db_path, "pro", credits=0)
    assert_error(once(client, "/v7/enrich", AVA_EMAIL, broke.key, "k"), 402, "insufficient_credits")
    credits.top_up(db.connect(db_path), broke.id, 5, NOW)
    paid = once(client, "/v7/enrich", AVA_EMAIL, broke.key, "k")
    assert paid.status_code == 200 and paid.get_json()["conGUID"] == AVA
    assert paid.headers["Idempotent-Replayed"] == "false" and broke.credits() == 4
    empty = [once(client, "/v7/enrich", {"recordId": "1"}, broke.key, "e") for _ in range(2)]
    ids = [assert_error(r, 400, "missing_identifier") for r in empty]
    assert [r.headers["Idempotent-Replayed"] for r in empty] == ["false", "false"]
    assert ids[0] != ids[1] and len(broke.transactions()) == 4


@pytest.mark.parametrize("value", ["", "x" * 256, "tab\there", "caf\u00e9"])
def test_a_bad_idempotency_key_is_400_naming_the_header(
    client: FlaskClient, pro: Org, value: str
) -> None:
    r = once(client, "/v7/enrich", AVA_EMAIL, pro.key, value)
    refused = assert_error(r, 400, "invalid_parameter")
    assert "Idempotency-Key" in r.get_json()["error"]["message"]
    assert "Idempotent-Replayed" not in r.headers
    assert [row["id"] for row in pro.transactions()] == [refused] and pro.credits() == 10


def test_a_key_of_255_printable_characters_in_the_drafts_quoted_form_is_taken(
    client: FlaskClient, pro: Org
) -> None:
    for value in ('"' + "k" * 253 + '"', "~ !"):
        again = [once(client, "/v7/enrich", AVA_EMAIL, pro.key, value) for _ in range(2)]
        assert [r.headers["Idempotent-Replayed"] for r in again] == ["false", "true"]
    assert pro.credits() == 8


def test_a_copy_is_authenticated_and_rate_limited_before_it_is_replayed(
    client: FlaskClient, db_path: Path, app: Flask, clock: Clock
) -> None:
    slow = Org(db_path, "pro", credits=10, qps=1)
    assert once(client, "/v7/enrich", AVA_EMAIL, slow.key, "k").status_code == 200
    assert_error(once(client, "/v7/enrich", AVA_EMAIL, slow.key, "k"), 429, "rate_limit_exceeded")
    assert_error(once(client, "/v7/enrich", AVA_EMAIL, "cdk_nope", "k"), 401, "invalid_api_key")
    clock.advance(1)
    again = once(client, "/v7/enrich", AVA_EMAIL, slow.key, "k")
    assert again.headers["Idempotent-Replayed"] == "true" and slow.credits() == 9


def test_a_copy_while_the_first_is_being_answered_is_409_until_the_claim_lapses(
    client: FlaskClient, pro: Org, db_path: Path, clock: Clock
) -> None:
    fingerprint = hashlib.sha256(json.dumps(AVA_EMAIL).encode()).hexdigest()  # the raw body's
    database, scope, stamp = db.connect(db_path), (pro.id, "/v7/enrich", "k"), iso(NOW)
    with db.write(database):  # the first request's claim, made as the app makes it
        claimed = store.claim_idempotency_key(database, scope, fingerprint, stamp, stamp, stamp)
    assert claimed is None
    busy = once(client, "/v7/enrich", AVA_EMAIL, pro.key, "k")
    assert_error(busy, 409, "request_in_progress")
    assert busy.headers["Retry-After"] == "2" and pro.credits() == 10
    clock.advance(61)  # the first request died: its copy takes the key over
    taken = once(client, "/v7/enrich", AVA_EMAIL, pro.key, "k")
    assert taken.status_code == 200 and taken.headers["credits-deducted"] == "1"
    again = once(client, "/v7/enrich", AVA_EMAIL, pro.key, "k")
    assert again.headers["Idempotent-Replayed"] == "true" and pro.credits() == 9


@pytest.mark.through_pgbouncer
def test_copies_sent_at_once_are_charged_once(app: Flask, pro: Org) -> None:
    answers: list[TestResponse] = []

    def send() -> None:
        answers.append(once(app.test_client(), "/v7/enrich", AVA_EMAIL, pro.key, "race"))

    assert at_once(send, 6) == []
    assert {r.status_code for r in answers} <= {200, 409}
    assert sorted(r.headers["credits-deducted"] for r in answers) == ["0"] * 5 + ["1"]
    ids = {r.headers["smarteTransactionId"] for r in answers if r.status_code == 200}
    assert len(ids) == 1 and pro.credits() == 9


def test_a_key_is_forgotten_after_24_hours(
    client: FlaskClient, pro: Org, db_path: Path, clock: Clock
) -> None:
    first = once(client, "/v7/enrich", AVA_EMAIL, pro.key, "daily")
    clock.advance(timedelta(hours=24).total_seconds())
    kept = once(client, "/v7/enrich", AVA_EMAIL, pro.key, "daily")
    assert kept.headers["smarteTransactionId"] == first.headers["smarteTransactionId"]
    clock.advance(1)
    fresh = once(client, "/v7/enrich", AVA_EMAIL, pro.key, "daily")
    assert fresh.status_code == 200 and fresh.headers["Idempotent-Replayed"] == "false"
    assert fresh.headers["smarteTransactionId"] != first.headers["smarteTransactionId"]
    assert pro.credits() == 8
    once(client, "/v7/enrich", NOBODY, pro.key, "another")
    clock.advance(timedelta(hours=24, seconds=1).total_seconds())
    once(client, "/v7/enrich", NOBODY, pro.key, "the last")
    assert store.row_count(db.connect(db_path), "idempotency_keys") == 1
