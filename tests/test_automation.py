"""The automation platforms' enrich URL as their senders use it (connector/platforms/automation.py):
the steps of the connection page followed literally, the mapping's keys and the enrich API's own,
a batch of records each answered (and charged) on its own, and a retry answered once."""

from __future__ import annotations

import hashlib
import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from connector import connections, mappings, store
from connector.platforms import PLATFORMS
from server import accounts, importer
from server.clock import iso
from server.storage import db
from tests.helpers.clock import Clock
from tests.helpers.constants import AVA, DATA, NOW, SECRET
from tests.helpers.orgs import organization
from tests.helpers.settings_forms import signed_in, source, text

SENDERS = ("n8n", "make", "zapier")  # the platforms that send batches


@pytest.fixture
def org(connector_app: Flask, db_path: Path) -> tuple[dict[str, Any], str]:
    """An organization with 100 credits, and the people of the discover fixture to enrich."""
    database = store.connect(db_path)
    importer.import_files(
        db.connect(db_path),
        companies=DATA / "discover_companies.csv",
        contacts=DATA / "discover_contacts.csv",
    )
    return organization(database, credits=100)


def _link(db_path: Path, key: str, platform: str) -> connections.Added:
    return connections.add(
        store.connect(db_path), SECRET.encode(), NOW, name=platform, platform=platform, api_key=key
    )


def _post(client: FlaskClient, link: connections.Added, body: Any, **headers: str) -> TestResponse:
    headers = {"Authorization": f"Bearer {link.secret}", **headers}
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post(f"/hooks/{link.row['id']}/enrich", data=data, headers=headers)


def _credits(db_path: Path, org_id: str) -> int:
    return int(accounts.organization(db.connect(db_path), org_id)["credits"])


def _rows(count: int) -> list[dict[str, str]]:
    """`count` records of people the fixture has, one after another, record ids r0, r1, ..."""
    emails = [AVA, "ben.brown@lonestar-discover.com", "cara.cole@lonestar-discover.com"]
    return [{"record_id": f"r{n}", "email": emails[n % len(emails)]} for n in range(count)]


# --- the steps, followed literally ----------------------------------------------------------


@pytest.mark.parametrize("platform", SENDERS)
def test_the_pages_example_body_pasted_as_it_is_gets_the_enriched_fields(
    connector_app: Flask, db_path: Path, org: tuple[dict[str, Any], str], platform: str
) -> None:
    link = _link(db_path, org[1], platform)
    page = signed_in(connector_app, org[1]).get(f"/settings/connections/{link.row['id']}")
    shown = source(page)
    found = re.search(r"enriches a contact of this database: (\{[^}]*\})", shown)
    assert found, text(page)
    example = json.loads(found.group(1))
    assert {"record_id", "email", "first_name", "last_name", "company"} <= example.keys()
    assert "email, first_name, last_name, full_name, job_title, company, website" in shown
    assert f"Installation in {PLATFORMS[platform].title}" in text(page)

    response = _post(connector_app.test_client(), link, found.group(1).encode())

    assert response.status_code == 200, response.get_json()
    answer = response.get_json()
    assert answer["record_status"] == "Active" and answer["email"] == example["email"]
    assert answer["recordId"] == example["record_id"] and answer["creditsDeducted"] == 1
    assert answer["smarteTransactionId"] == response.headers["smarteTransactionId"]


def test_platform_names_are_written_as_the_platforms_write_them() -> None:
    titles = {name: platform.title for name, platform in PLATFORMS.items()}
    assert titles == {
        "hubspot": "HubSpot", "salesforce": "Salesforce", "pipedrive": "Pipedrive",
        "zoho": "Zoho CRM", "dynamics": "Microsoft Dynamics 365", "marketo": "Marketo",
        "zapier": "Zapier", "make": "Make", "n8n": "n8n",
    }  # fmt: skip


# --- one vocabulary ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {"email": AVA},
        {"contactEmail": AVA},  # the enrich API's older names
        {"conEmail": AVA},  # and its newer ones
        {"data": {"contactEmail": AVA}},  # in a Standard Webhooks envelope
        {"first_name": "Ava", "last_name": "Adams", "companyName": "Lonestar Discover Works"},
    ],
)
def test_the_mappings_keys_and_the_enrich_apis_own_names_both_enrich(
    connector_app: Flask, db_path: Path, org: tuple[dict[str, Any], str], body: dict[str, Any]
) -> None:
    response = _post(connector_app.test_client(), _link(db_path, org[1], "n8n"), body)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["email"] == AVA


def test_a_body_without_an_identifier_is_told_the_keys_to_send(
    connector_app: Flask, db_path: Path, org: tuple[dict[str, Any], str]
) -> None:
    link = _link(db_path, org[1], "n8n")
    response = _post(connector_app.test_client(), link, {"first_name": "Ava", "age": 40})
    error = response.get_json()["error"]
    assert (response.status_code, error["code"]) == (400, "missing_identifier")
    assert error["message"] == (
        "At least one identifier is needed: send email, company, website, linkedin_url or "
        "company_linkedin_url; a person's name (full_name, first_name, last_name) counts only "
        'with company or website. For example: {"record_id": "1", "email": '
        '"jane.doe@example.com", "first_name": "Jane", "last_name": "Doe", "company": '
        '"Example Inc"}. The enrich API\'s own names (contactEmail, companyName, ...) work too.'
    )
    assert response.headers["credits-deducted"] == "0" and _credits(db_path, org[0]["id"]) == 100


def test_the_bearer_scheme_is_case_insensitive(
    connector_app: Flask, db_path: Path, org: tuple[dict[str, Any], str]
) -> None:
    link = _link(db_path, org[1], "n8n")
    client = connector_app.test_client()
    for scheme in ("bearer", "BEARER", "Bearer"):
        response = _post(client, link, {"email": AVA}, Authorization=f"{scheme} {link.secret}")
        assert response.status_code == 200, (scheme, response.get_json())
    refused = _post(client, link, {"email": AVA}, Authorization=f"Basic {link.secret}")
    assert refused.status_code == 401


# --- a batch: nothing paid is lost --------------------------------------------------------------


def test_a_batch_with_a_blank_record_answers_each_and_charges_only_the_results(
    connector_app: Flask, db_path: Path, org: tuple[dict[str, Any], str]
) -> None:
    link, client = _link(db_path, org[1], "n8n"), connector_app.test_client()
    records: list[Any] = _rows(20)
    records[7] = {"record_id": "r7", "email": "", "first_name": ""}  # a blank row

    response = _post(client, link, records, **{"Idempotency-Key": "batch-1"})

    assert response.status_code == 200, response.get_json()
    items = response.get_json()
    assert [item["recordId"] for item in items] == [f"r{n}" for n in range(20)]
    assert [item["status"] for item in items] == [200] * 7 + [400] + [200] * 12
    assert items[7]["error"]["code"] == "missing_identifier" and "data" not in items[7]
    assert items[7]["creditsDeducted"] == 0 and items[7]["smarteTransactionId"]
    assert all(item["data"]["record_status"] == "Active" for item in items if item["status"] == 200)
    assert sum(item["creditsDeducted"] for item in items) == 19
    assert response.headers["credits-deducted"] == "19" and _credits(db_path, org[0]["id"]) == 81
    assert len({item["smarteTransactionId"] for item in items}) == 20

    again = _post(client, link, records, **{"Idempotency-Key": "batch-1"})

    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"
    assert again.headers["credits-deducted"] == "0" and _credits(db_path, org[0]["id"]) == 81
    assert again.headers["smarteTransactionId"] == response.headers["smarteTransactionId"]
    assert again.get_json() == [{**item, "creditsDeducted": 0} for item in items]


def test_a_batch_past_the_balance_charges_what_it_delivers_and_refuses_the_rest(
    connector_app: Flask, db_path: Path
) -> None:
    database = store.connect(db_path)
    importer.import_files(
        db.connect(db_path), companies=DATA / "discover_companies.csv",
        contacts=DATA / "discover_contacts.csv",
    )  # fmt: skip
    row, key = organization(database, credits=2)
    response = _post(connector_app.test_client(), _link(db_path, key, "make"), _rows(5))
    statuses = [item["status"] for item in response.get_json()]
    assert response.status_code == 200 and statuses == [200, 200, 402, 402, 402]
    assert response.headers["credits-deducted"] == "2" and _credits(db_path, row["id"]) == 0


def test_a_record_of_a_batch_that_is_not_an_object_is_an_error_item(
    connector_app: Flask, db_path: Path, org: tuple[dict[str, Any], str]
) -> None:
    link = _link(db_path, org[1], "zapier")
    response = _post(connector_app.test_client(), link, [{"email": AVA}, "ava", None])
    items = response.get_json()
    assert [item["status"] for item in items] == [200, 400, 400]
    assert items[1]["error"] == {
        "code": "invalid_parameter", "message": "body[1] must be a JSON object.", "status": 400
    }  # fmt: skip
    assert items[1]["recordId"] is None and response.headers["credits-deducted"] == "1"


@pytest.mark.parametrize(
    ("platform", "body", "message"),
    [
        ("n8n", [], "The body is an array of 0 records: send 1 to 100 a request."),
        ("n8n", [{"email": AVA}] * 101, "The body is an array of 101 records: send 1 to 100"),
        ("n8n", "ava", "The body must be a JSON object or an array of up to 100 objects."),
        ("marketo", [{"email": AVA}], "The body must be a JSON object."),
    ],
)
def test_a_body_that_is_no_record_nor_a_batch_of_them_is_400(
    connector_app: Flask,
    db_path: Path,
    org: tuple[dict[str, Any], str],
    platform: str,
    body: Any,
    message: str,
) -> None:
    response = _post(connector_app.test_client(), _link(db_path, org[1], platform), body)
    error = response.get_json()["error"]
    assert (response.status_code, error["code"]) == (400, "invalid_payload")
    assert error["message"].startswith(message) and _credits(db_path, org[0]["id"]) == 100


# --- retries: Idempotency-Key --------------------------------------------------------------------


def test_a_retry_with_its_idempotency_key_gets_the_first_answer_charged_once(
    connector_app: Flask, db_path: Path, org: tuple[dict[str, Any], str]
) -> None:
    link, client = _link(db_path, org[1], "n8n"), connector_app.test_client()
    body = {"record_id": "42", "email": AVA}
    first = _post(client, link, body, **{"Idempotency-Key": "exec-9-item-0"})
    again = _post(client, link, body, **{"Idempotency-Key": "exec-9-item-0"})
    other = _post(client, link, body, **{"Idempotency-Key": "exec-9-item-1"})

    assert (
        first.headers["credits-deducted"] == "1" and first.headers["Idempotent-Replayed"] == "false"
    )
    assert (
        again.headers["credits-deducted"] == "0" and again.headers["Idempotent-Replayed"] == "true"
    )
    assert again.headers["smarteTransactionId"] == first.headers["smarteTransactionId"]
    assert again.get_json() == {**first.get_json(), "creditsDeducted": 0}
    assert other.headers["credits-deducted"] == "1" and _credits(db_path, org[0]["id"]) == 98


def test_an_idempotency_key_sent_with_another_body_is_refused(
    connector_app: Flask, db_path: Path, org: tuple[dict[str, Any], str]
) -> None:
    link, client = _link(db_path, org[1], "zapier"), connector_app.test_client()
    assert _post(client, link, {"email": AVA}, **{"Idempotency-Key": "k1"}).status_code == 200
    reused = _post(client, link, {"email": "ben.brown@lonestar-discover.com"},
                   **{"Idempotency-Key": "k1"})  # fmt: skip
    error = reused.get_json()["error"]
    assert (reused.status_code, error["code"]) == (422, "idempotency_key_reused")
    assert _credits(db_path, org[0]["id"]) == 99


def test_a_copy_while_the_first_is_answered_is_told_to_come_back_until_it_lapses(
    connector_app: Flask, db_path: Path, org: tuple[dict[str, Any], str], clock: Clock
) -> None:
    """A claim a minute unanswered died with its worker: a copy takes it over."""
    link, body = _link(db_path, org[1], "n8n"), json.dumps({"email": AVA}).encode()
    with store.server.write(store.connect(db_path)) as database:  # the first, still at work
        store.claim_webhook(
            database, link.row["id"], "idempotency-key:k2", iso(NOW), "",
            hashlib.sha256(body).hexdigest(),
        )  # fmt: skip
    busy = _post(connector_app.test_client(), link, body, **{"Idempotency-Key": "k2"})
    assert (busy.status_code, busy.get_json()["error"]["code"]) == (409, "request_in_progress")
    assert busy.headers["Retry-After"] == "2" and _credits(db_path, org[0]["id"]) == 100
    clock.now = NOW + store.CLAIM_LAPSES_AFTER + timedelta(seconds=1)
    taken = _post(connector_app.test_client(), link, body, **{"Idempotency-Key": "k2"})
    assert taken.status_code == 200 and taken.headers["Idempotent-Replayed"] == "false"
    assert _credits(db_path, org[0]["id"]) == 99


@pytest.mark.parametrize("key", ["", "x" * 256, "caf\u00e9", "a\tb"])
def test_an_idempotency_key_no_sender_would_make_is_400(
    connector_app: Flask, db_path: Path, org: tuple[dict[str, Any], str], key: str
) -> None:
    link = _link(db_path, org[1], "n8n")
    response = _post(connector_app.test_client(), link, {"email": AVA},
                     **{"Idempotency-Key": key})  # fmt: skip
    error = response.get_json()["error"]
    assert (response.status_code, error["code"]) == (400, "invalid_parameter")
    assert "Idempotency-Key" in error["message"] and _credits(db_path, org[0]["id"]) == 100


@pytest.mark.parametrize("platform", SENDERS)
def test_the_mapping_files_comment_names_the_keys_its_input_reads(platform: str) -> None:
    path = mappings.DIRECTORY / f"{platform}.yaml"
    comment = " ".join(
        line.lstrip("# ") for line in path.read_text().splitlines() if line[:1] == "#"
    )
    keys = ", ".join(mappings.load_current(path).sender_keys().values())
    assert keys == "email, first_name, last_name, full_name, job_title, company, website, " \
        "linkedin_url, company_linkedin_url, country"  # fmt: skip
    assert f"{keys}, and record_id" in comment and "contactEmail" in comment


def test_the_n8n_steps_carry_n8ns_expressions_whole() -> None:
    """The expressions pasted into n8n survive the steps' templating (checked against n8n
    2.41: Execute Once with this JSON sends one array and makes an item of each entry)."""
    steps = " ".join(PLATFORMS["n8n"].install_steps({"enrichUrl": "u"}, "hint", {}))
    assert "to {{ $input.all().map(item => item.json) }} (items" in steps
    assert "value {{ $json.record_id }}." in steps and '"{{ $json.email }}"' in steps
    assert "On Error to Continue (using error output)" in steps


# --- limits ----------------------------------------------------------------------------------


def _limited_org(db_path: Path, **limits: int) -> tuple[dict[str, Any], str]:
    importer.import_files(
        db.connect(db_path), companies=DATA / "discover_companies.csv",
        contacts=DATA / "discover_contacts.csv",
    )  # fmt: skip
    return organization(store.connect(db_path), credits=100, **limits)


def test_the_enrich_url_counts_against_the_organizations_daily_limit(
    connector_app: Flask, db_path: Path
) -> None:
    """Shared with the organization's API keys: what the URL spends, /v7/enrich cannot."""
    row, key = _limited_org(db_path, daily_limit=3)
    link, client = _link(db_path, key, "n8n"), connector_app.test_client()
    answers = [_post(client, link, {"email": AVA}) for _ in range(4)]
    assert [answer.status_code for answer in answers] == [200, 200, 200, 429]
    refused = answers[-1]
    assert refused.get_json()["error"]["code"] == "rate_limit_exceeded"
    assert int(refused.headers["Retry-After"]) > 0 and '"daily"' in refused.headers["RateLimit"]
    assert refused.headers["credits-deducted"] == "0" and _credits(db_path, row["id"]) == 97
    api = client.post("/v7/enrich", json={"contactEmail": AVA}, headers={"apikey": key})
    assert api.status_code == 429


def test_each_connection_has_its_own_rate(connector_app: Flask, db_path: Path) -> None:
    """The organization's qpsLimit a second per connection: one busy CRM leaves the others,
    and the API, theirs (the test clock stands still: every request is in one second)."""
    row, key = _limited_org(db_path, qps=2)
    busy, other = _link(db_path, key, "n8n"), _link(db_path, key, "make")
    client = connector_app.test_client()
    statuses = [_post(client, busy, [{"email": AVA}] * 3).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    assert _post(client, other, {"email": AVA}).status_code == 200
    assert _credits(db_path, row["id"]) == 100 - 7  # two batches of three, and one record
