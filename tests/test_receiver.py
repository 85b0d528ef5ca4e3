"""`POST /hooks/<id>/events` and `/enrich` through the connector's app: each platform's sample,
signed by the platform's own client where it has one (HubSpot's `Signature`, Standard Webhooks'
`Webhook`), stored once and acknowledged the way its sender expects; refusals in the contract
shape."""

from __future__ import annotations

import base64
import json
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from flask import Flask
from flask.testing import FlaskClient
from hubspot.utils.signature import Signature
from standardwebhooks import Webhook
from werkzeug.test import TestResponse

import server
from connector import connections, store
from connector.platforms.base import STANDARD_WEBHOOKS_TOLERANCE
from connector.platforms.zoho import PLATFORM as ZOHO_PLATFORM
from server import accounts, importer
from server.storage import db, pg
from tests import servers
from tests.helpers.clock import Clock
from tests.helpers.constants import AVA, DATA, NOW, PLATFORMS, SECRET
from tests.helpers.orgs import organization

HUBSPOT_SECRET = "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy"
SALESFORCE_ORG = "00Do0000000xxxxxxx"  # the sample's (redacted) organization id
WORKFLOW = (PLATFORMS / "hubspot_workflow_webhook.json").read_bytes()
BATCH = (PLATFORMS / "hubspot_webhooks_api_event_batch.json").read_bytes()
OUTBOUND_MESSAGE = (PLATFORMS / "salesforce_outbound_message.xml").read_bytes()
ZAP = (PLATFORMS / "zapier_webhooks_post_action.json").read_bytes()


@pytest.fixture
def app(connector_app: Flask) -> Flask:
    return connector_app


@pytest.fixture
def links(app: Flask, db_path: Path) -> dict[str, connections.Added]:
    database = store.connect(db_path)
    _, key = organization(database)
    crm = {"crm_base_url": "http://127.0.0.1:9", "crm_token": "crm-token-1234"}
    add = lambda name, platform, **extra: connections.add(  # noqa: E731
        database, SECRET.encode(), NOW, name=name, platform=platform, api_key=key, **extra
    )
    return {
        "hubspot": add("hs", "hubspot", secret=HUBSPOT_SECRET, **crm),
        "salesforce": add("sf", "salesforce", salesforce_org_ids=(SALESFORCE_ORG,), **crm),
        "zapier": add("zap", "zapier"),
        "pipedrive": add("pd", "pipedrive", **crm),
        "zoho": add("zoho", "zoho", **crm),
        "dynamics": add("d365", "dynamics", **crm),
        "marketo": add("mkto", "marketo"),
    }


def _events(db_path: Path, link: connections.Added) -> list[dict[str, Any]]:
    return store.events_of(db.connect(db_path), link.row["id"])


# Webhook URLs with percent-escapes in their query, and each as HubSpot's v3 signs it: only the
# escapes of its documented table decoded (v2 signs the URL exactly as called).
ESCAPED = {
    "?src=wf%3Ahubspot%2Fa%40b": "?src=wf:hubspot/a@b",
    "?q=a%7Eb": "?q=a%7Eb",
    "?name=Jos%C3%A9": "?name=Jos%C3%A9",
}


def _signed_by_hubspot(version: str, url: str, body: bytes, at: datetime = NOW) -> dict[str, str]:
    """The headers HubSpot sends with `body` to `url`, signed by HubSpot's own Python client."""
    if version == "v3":
        stamp = str(int(at.timestamp() * 1000))
        path, _, query = url.partition("?")
        signed = f"{path}{ESCAPED[f'?{query}']}" if query else path
        signature = Signature.get_signature(
            HUBSPOT_SECRET, body.decode(), "v3", http_uri=signed, timestamp=stamp
        )
        return {"X-HubSpot-Signature-v3": signature, "X-HubSpot-Request-Timestamp": stamp}
    signature = Signature.get_signature(HUBSPOT_SECRET, body.decode(), version, http_uri=url)
    return {"X-HubSpot-Signature": signature, "X-HubSpot-Signature-Version": version}


def _hubspot_v3(
    client: FlaskClient, link: connections.Added, body: bytes, at: datetime, route: str = "events"
) -> TestResponse:
    url = f"http://localhost/hooks/{link.row['id']}/{route}"
    headers = _signed_by_hubspot("v3", url, body, at)
    return client.post(url, data=body, headers={**headers, "Content-Type": "application/json"})


def _zapier(
    client: FlaskClient,
    link: connections.Added,
    body: bytes,
    msg_id: str,
    route: str = "events",
    at: datetime = NOW,
) -> TestResponse:
    """POST `body` signed by the official Standard Webhooks library."""
    headers = {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": Webhook(link.secret).sign(msg_id, at, body.decode()),
    }
    return client.post(f"/hooks/{link.row['id']}/{route}", data=body, headers=headers)


def _assert_error(response: TestResponse, status: int, code: str) -> None:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.get_json()["error"]["code"] == code


# --- HubSpot ---------------------------------------------------------------------------------


@pytest.mark.both_backends
def test_a_hubspot_workflow_webhook_is_stored_once(
    client: FlaskClient, links: dict[str, connections.Added], db_path: Path
) -> None:
    for _ in range(2):  # HubSpot retries: the second delivery is a duplicate
        response = _hubspot_v3(client, links["hubspot"], WORKFLOW, NOW)
        assert response.status_code == 200 and response.get_json() == {"accepted": 1}
    (event,) = _events(db_path, links["hubspot"])
    assert (event["record_id"], event["thin"], event["status"]) == ("3234574", 0, "pending")
    assert json.loads(event["payload"])["vid"] == 3234574


@pytest.mark.both_backends
def test_a_hubspot_webhooks_api_batch_is_stored_as_thin_events(
    client: FlaskClient, links: dict[str, connections.Added], db_path: Path
) -> None:
    url = f"/hooks/{links['hubspot'].row['id']}/events"
    headers = _signed_by_hubspot("v1", url, BATCH)
    assert client.post(url, data=BATCH, headers=headers).status_code == 200
    (event,) = _events(db_path, links["hubspot"])
    assert (event["record_id"], event["thin"], event["event_key"]) == (
        "123",
        1,
        "12345:1:1564113600000:123",
    )


def test_hubspot_signatures_older_than_five_minutes_or_wrong_are_refused(
    client: FlaskClient, links: dict[str, connections.Added], db_path: Path
) -> None:
    _assert_error(
        _hubspot_v3(client, links["hubspot"], WORKFLOW, NOW - timedelta(seconds=301)),
        401,
        "invalid_signature",
    )
    tampered = WORKFLOW.replace(b"3234574", b"3234575", 1)
    url = f"http://localhost/hooks/{links['hubspot'].row['id']}/events"
    headers = _signed_by_hubspot("v3", url, WORKFLOW)
    _assert_error(client.post(url, data=tampered, headers=headers), 401, "invalid_signature")
    assert _events(db_path, links["hubspot"]) == []


# --- Salesforce ------------------------------------------------------------------------------


@pytest.mark.both_backends
def test_a_salesforce_outbound_message_is_acked_after_it_is_stored(
    client: FlaskClient, links: dict[str, connections.Added], db_path: Path
) -> None:
    link = links["salesforce"]
    url = f"/hooks/{link.row['id']}/events?key={link.secret}"
    response = client.post(url, data=OUTBOUND_MESSAGE, content_type="text/xml")
    assert response.status_code == 200 and response.mimetype == "text/xml"
    assert b"<Ack>true</Ack>" in response.data
    (event,) = _events(db_path, link)
    assert (event["event_key"], event["record_id"]) == ("04lo0000000xxxxxxx", "003o000000xxxxxxxxx")
    assert json.loads(event["payload"])["LastName"] == "dude"


def test_salesforce_needs_the_url_key_and_an_allowed_organization(
    client: FlaskClient, links: dict[str, connections.Added], db_path: Path
) -> None:
    link = links["salesforce"]
    base = f"/hooks/{link.row['id']}/events"
    _assert_error(client.post(f"{base}?key=wrong", data=OUTBOUND_MESSAGE), 401, "invalid_signature")
    _assert_error(client.post(base, data=OUTBOUND_MESSAGE), 401, "invalid_signature")
    other = OUTBOUND_MESSAGE.replace(SALESFORCE_ORG.encode(), b"00D5e000000AbCdEFG")
    _assert_error(client.post(f"{base}?key={link.secret}", data=other), 401, "invalid_signature")
    assert _events(db_path, link) == []


# --- automation platforms ---------------------------------------------------------------------


def test_an_automation_platform_connection_takes_no_events(
    client: FlaskClient, links: dict[str, connections.Added], db_path: Path
) -> None:
    """Zapier has no CRM record to write back to: /events says to use the enrich URL."""
    link = links["zapier"]
    response = _zapier(client, link, ZAP, "msg_1")
    _assert_error(response, 404, "not_found")
    message = response.get_json()["error"]["message"]
    assert "Zapier connection, which takes no events" in message
    assert f"/hooks/{link.row['id']}/enrich" in message
    assert _events(db_path, link) == []
    shown = connections.urls(link.row, "https://hooks.example")
    assert shown["eventsUrl"] is None


def test_a_sender_that_cannot_sign_may_send_the_secret_as_a_bearer_token(
    client: FlaskClient, links: dict[str, connections.Added], people: None
) -> None:
    link = links["zapier"]
    url = f"/hooks/{link.row['id']}/enrich"
    body = json.dumps({"email": AVA}).encode()
    bearer = {"Authorization": f"Bearer {link.secret}"}
    assert client.post(url, data=body, headers=bearer).status_code == 200
    _assert_error(client.post(url, data=body), 401, "invalid_signature")
    wrong = {"Authorization": "Bearer x"}
    _assert_error(client.post(url, data=body, headers=wrong), 401, "invalid_signature")


# --- platforms that sign nothing: a secret where each platform can put one ----------------

PIPEDRIVE = (PLATFORMS / "pipedrive_v2_person_updated.json").read_bytes()
DYNAMICS = (PLATFORMS / "dynamics365_webhook_remote_execution_context.json").read_bytes()


def test_pipedrive_sends_the_secret_as_its_basic_auth_password(
    client: FlaskClient, links: dict[str, connections.Added], db_path: Path
) -> None:
    link = links["pipedrive"]
    url = connections.urls(link.row, "http://localhost", link.secret)["eventsUrl"]
    assert url == f"http://localhost/hooks/{link.row['id']}/events"
    response = client.post(url, data=PIPEDRIVE, auth=("pipedrive", link.secret))
    assert (response.status_code, response.get_json()) == (200, {"accepted": 1})
    _assert_error(
        client.post(url, data=PIPEDRIVE, auth=("pipedrive", "x")), 401, "invalid_signature"
    )
    _assert_error(client.post(url, data=PIPEDRIVE), 401, "invalid_signature")
    (event,) = _events(db_path, link)
    assert (event["event_key"], event["record_id"]) == (
        "123456789-1234-1234-1234-123456789012",
        "12",
    )


def test_a_pipedrive_webhook_still_on_v1_is_stored_not_answered_zero_and_dropped(
    client: FlaskClient, links: dict[str, connections.Added], db_path: Path
) -> None:
    link = links["pipedrive"]
    url, auth = f"/hooks/{link.row['id']}/events", ("pipedrive", link.secret)
    v1 = json.loads((DATA / "pipedrive_v1_person_updated.json").read_text())
    response = client.post(url, data=json.dumps(v1), auth=auth)
    assert (response.status_code, response.get_json()) == (200, {"accepted": 1})
    (event,) = _events(db_path, link)
    assert (event["record_id"], json.loads(event["payload"])["data"]["emails"][0]["value"]) == (
        "12",
        "person@example.com",
    )
    deleted = {**v1, "event": "deleted.person", "current": None}  # nothing to enrich
    deleted["meta"] = {**v1["meta"], "action": "deleted"}
    assert client.post(url, data=json.dumps(deleted), auth=auth).get_json() == {"accepted": 0}
    unknown = client.post(url, data=b'{"meta": {"id": "1"}}', auth=auth)
    _assert_error(unknown, 400, "invalid_payload")


def _zoho_notification(link: connections.Added, **changes: Any) -> bytes:
    body = json.loads((PLATFORMS / "zoho_webhook.json").read_text())
    body.update(module="Contacts", token=link.secret, channel_id=ZOHO_PLATFORM.channel_id(link.row))
    return json.dumps({**body, **changes}).encode()


def test_zoho_notifications_carry_the_channels_token_and_id(
    client: FlaskClient, links: dict[str, connections.Added], db_path: Path
) -> None:
    link = links["zoho"]
    url = f"/hooks/{link.row['id']}/events"
    assert client.post(url, data=_zoho_notification(link)).get_json() == {"accepted": 1}
    for wrong in ({"token": "TOKEN_FOR_VERIFICATION_OF_1000000068001"}, {"channel_id": "1"}):
        refused = client.post(url, data=_zoho_notification(link, **wrong))
        _assert_error(refused, 401, "invalid_signature")
    _assert_error(client.post(url, data=b"not json"), 401, "invalid_signature")
    (event,) = _events(db_path, link)
    assert (event["record_id"], event["thin"]) == ("5725767000003000064", 1)


def test_dynamics_sends_the_secret_as_its_webhook_key(
    client: FlaskClient, links: dict[str, connections.Added], db_path: Path
) -> None:
    link = links["dynamics"]
    url = connections.urls(link.row, "http://localhost", link.secret)["eventsUrl"]
    assert url.endswith(f"/events?code={link.secret}")
    assert client.post(url, data=DYNAMICS).get_json() == {"accepted": 1}
    wrong = url.replace(link.secret, "x")
    _assert_error(client.post(wrong, data=DYNAMICS), 401, "invalid_signature")
    (event,) = _events(db_path, link)
    assert event["record_id"] == "6d81597f-0f9f-e711-8122-000d3aa2331c"


def test_marketo_sends_the_secret_as_a_bearer_token_to_the_enrich_url(
    client: FlaskClient, links: dict[str, connections.Added]
) -> None:
    link = links["marketo"]
    url = f"/hooks/{link.row['id']}/enrich"
    assert connections.urls(link.row, "http://localhost")["eventsUrl"] is None
    body = json.dumps({"id": 1234, "email": AVA}).encode()
    _assert_error(client.post(url, data=body), 401, "invalid_signature")
    wrong = {"Authorization": "Bearer x"}
    _assert_error(client.post(url, data=body, headers=wrong), 401, "invalid_signature")


# --- refusals and failures -------------------------------------------------------------------


def _outbound_message(client: FlaskClient, link: connections.Added, body: bytes) -> TestResponse:
    url = f"/hooks/{link.row['id']}/events?key={link.secret}"
    return client.post(url, data=body, content_type="text/xml")


@pytest.mark.parametrize(
    ("platform", "body"),
    [("hubspot", b"not json"), ("hubspot", b"3"), ("salesforce", b'{"a": 1}')],
)
def test_a_body_the_platform_would_not_send_is_400(
    client: FlaskClient, links: dict[str, connections.Added], platform: str, body: bytes
) -> None:
    link = links[platform]
    if platform == "hubspot":
        response = _hubspot_v3(client, link, body, NOW)
    else:
        response = _outbound_message(client, link, body)
    _assert_error(response, 400, "invalid_payload")


def test_unknown_connections_and_other_methods(client: FlaskClient, links: dict[str, Any]) -> None:
    _assert_error(client.post("/hooks/nope/events", data=ZAP), 404, "not_found")
    _assert_error(
        client.get(f"/hooks/{links['salesforce'].row['id']}/events"), 405, "method_not_allowed"
    )


@pytest.mark.both_backends
def test_a_store_that_cannot_take_the_events_answers_503_with_retry_after(
    client: FlaskClient, links: dict[str, connections.Added], db_path: Path
) -> None:
    client.get("/healthz")  # this thread's connection exists; make it give up quickly
    db.set_patience(db.database(db_path), 50)
    holder = db.connect(db_path, migrate=False)  # SQLite: any write holds up every other
    holder.conn.execute("BEGIN")
    # PostgreSQL: the connection's removal, not yet committed, holds its events' inserts
    holder.execute("DELETE FROM connections WHERE id = ?", [links["salesforce"].row["id"]])
    try:
        response = _outbound_message(client, links["salesforce"], OUTBOUND_MESSAGE)
    finally:
        holder.conn.execute("ROLLBACK")
        holder.close()
    _assert_error(response, 503, "unavailable")
    assert response.headers["Retry-After"] == "30"
    assert _events(db_path, links["salesforce"]) == []
    retried = _outbound_message(client, links["salesforce"], OUTBOUND_MESSAGE)
    assert retried.status_code == 200 and len(_events(db_path, links["salesforce"])) == 1


def _threads(backend: str, wanted: int) -> int:
    """Threads for sending at once: on PostgreSQL each holds one of the process's pooled
    connections during its request (server/storage/pg.py) and the test's own thread keeps one, so
    that none waits for a free one."""
    return wanted if backend == "sqlite" else min(wanted, pg.POOL_MAX - 1)


@pytest.mark.both_backends
def test_twenty_concurrent_copies_of_one_event_make_one_event(
    app: Flask, links: dict[str, connections.Added], db_path: Path, backend: str
) -> None:
    link = links["salesforce"]

    def send(_: int) -> int:
        return _outbound_message(app.test_client(), link, OUTBOUND_MESSAGE).status_code

    with ThreadPoolExecutor(max_workers=_threads(backend, 20)) as pool:
        statuses = list(pool.map(send, range(20)))
    assert statuses == [200] * 20
    assert len(_events(db_path, link)) == 1


def test_removing_a_connection_closes_its_urls(
    client: FlaskClient, links: dict[str, connections.Added], db_path: Path
) -> None:
    link = links["salesforce"]
    assert connections.remove(store.connect(db_path), link.row["id"])
    _assert_error(_outbound_message(client, link, OUTBOUND_MESSAGE), 404, "not_found")


# --- synchronous enrich ----------------------------------------------------------------------


@pytest.fixture
def people(links: dict[str, connections.Added], db_path: Path) -> None:
    importer.import_files(
        db.connect(db_path),
        companies=DATA / "discover_companies.csv",
        contacts=DATA / "discover_contacts.csv",
    )


def test_a_zap_gets_the_enriched_fields_in_the_response(
    client: FlaskClient, links: dict[str, connections.Added], people: None
) -> None:
    link = links["zapier"]
    body = json.dumps({"email": AVA.upper(), "first_name": "Ava"}).encode()
    headers = {"Authorization": f"Bearer {link.secret}"}
    response = client.post(f"/hooks/{link.row['id']}/enrich", data=body, headers=headers)
    assert response.status_code == 200, response.get_json()
    fields = response.get_json()
    assert (fields["record_status"], fields["job_title"], fields["company"]) == (
        "Active",
        "Vice President of Sales",
        "Lonestar Discover Works Inc.",
    )
    assert fields["job_levels"] == ["VP"] and fields["company_domain"] == "lonestar-discover.com"
    assert response.headers["credits-deducted"] == "1" and response.headers["smarteTransactionId"]


def test_an_unknown_person_is_answered_with_what_is_known(
    client: FlaskClient, links: dict[str, connections.Added], people: None
) -> None:
    link = links["zapier"]
    headers = {"Authorization": f"Bearer {link.secret}"}
    body = json.dumps({"email": "nobody@nowhere-at-all.example"}).encode()
    response = client.post(f"/hooks/{link.row['id']}/enrich", data=body, headers=headers)
    assert response.get_json()["record_status"] == "No Match"
    assert response.headers["credits-deducted"] == "0"
    nothing = client.post(f"/hooks/{link.row['id']}/enrich", data=b'{"age": 3}', headers=headers)
    _assert_error(nothing, 400, "missing_identifier")
    _assert_error(
        client.post(f"/hooks/{link.row['id']}/enrich", data=b"{"), 401, "invalid_signature"
    )


NUMBER_OUTPUTS = {  # platform: where its answer's fields are, and its number-typed field
    "hubspot": ("outputFields", "contactdata_employee_count"),
    "zapier": ("", "company_employees"),
    "marketo": ("", "numberOfEmployees"),
}


def _no_match(client: FlaskClient, link: connections.Added) -> dict[str, Any]:
    """The fields a platform is answered with for a person nobody knows."""
    url = f"/hooks/{link.row['id']}/enrich"
    if link.row["platform"] == "hubspot":
        request = json.loads(
            (PLATFORMS / "hubspot_custom_action_execution_request.json").read_text()
        )
        request["object"]["properties"]["email"] = "nobody@nowhere-at-all.example"
        response = _hubspot_v3(client, link, json.dumps(request).encode(), NOW, "enrich")
    else:
        body = json.dumps({"email": "nobody@nowhere-at-all.example"}).encode()
        response = client.post(url, data=body, headers={"Authorization": f"Bearer {link.secret}"})
    assert response.status_code == 200, response.get_json()
    answer = response.get_json()
    return answer["outputFields"] if link.row["platform"] == "hubspot" else answer


@pytest.mark.parametrize("platform", list(NUMBER_OUTPUTS))
def test_a_no_match_answers_no_value_a_number_typed_field_refuses(
    client: FlaskClient, links: dict[str, connections.Added], people: None, platform: str
) -> None:
    """A match answers the employee count as a number: a No Match answered "", which a
    number-typed output field refuses. HubSpot custom actions leave empty outputs out (so do
    Marketo's Response Mappings); Zapier, Make and n8n keep every key, a number as null."""
    fields = _no_match(client, links[platform])
    number = NUMBER_OUTPUTS[platform][1]
    assert "No Match" in fields.values()
    if platform == "zapier":
        assert fields[number] is None and fields["company"] == ""  # a text field takes ""
    else:
        assert number not in fields
        assert all(value not in ("", None, []) for value in fields.values()), fields


def test_a_hubspot_custom_action_gets_output_fields_and_an_execution_state(
    client: FlaskClient, links: dict[str, connections.Added], people: None
) -> None:
    request = json.loads((PLATFORMS / "hubspot_custom_action_execution_request.json").read_text())
    request["object"]["properties"]["email"] = AVA
    response = _hubspot_v3(client, links["hubspot"], json.dumps(request).encode(), NOW, "enrich")
    assert response.status_code == 200, response.get_json()
    output = response.get_json()["outputFields"]
    assert (
        output["hs_execution_state"] == "SUCCESS"
        and output["jobtitle"] == "Vice President of Sales"
    )
    request["object"]["properties"] = {}  # nothing to enrich by: the workflow goes on, told why
    request["callbackId"] = "ap-102-2-3-1"  # another execution (one is answered once)
    response = _hubspot_v3(client, links["hubspot"], json.dumps(request).encode(), NOW, "enrich")
    failed = response.get_json()["outputFields"]
    assert failed["hs_execution_state"] == "FAIL_CONTINUE" and failed["contactdata_error"]


# --- every enrich answer names its transaction -------------------------------------------------


@pytest.fixture
def broke(links: dict[str, connections.Added], db_path: Path) -> dict[str, connections.Added]:
    """A Zapier and a HubSpot connection of an organization without credits."""
    database = store.connect(db_path)
    _, key = organization(database, "Broke", credits=0)
    crm = {"crm_base_url": "http://127.0.0.1:9", "crm_token": "crm-token-1234"}
    add = lambda name, platform, **extra: connections.add(  # noqa: E731
        database, SECRET.encode(), NOW, name=name, platform=platform, api_key=key, **extra
    )
    return {"zapier": add("broke zap", "zapier"),
            "hubspot": add("broke hs", "hubspot", secret=HUBSPOT_SECRET, **crm)}  # fmt: skip


def _transaction(db_path: Path, transaction_id: str) -> tuple[str, int] | None:
    found = db.connect(db_path).execute(
        "SELECT record_status, credits FROM transactions WHERE id = ?", [transaction_id]
    )
    return found.fetchone()


def test_an_enrich_error_names_the_transaction_it_recorded(
    client: FlaskClient, broke: dict[str, connections.Added], people: None, db_path: Path
) -> None:
    """As /v7/enrich does: 402 for an organization out of credits, 400 for nothing to enrich
    by, each with the id of the transaction row written and 0 credits."""
    link = broke["zapier"]
    bearer = {"Authorization": f"Bearer {link.secret}"}
    url = f"/hooks/{link.row['id']}/enrich"
    for body, status, code in ((json.dumps({"email": AVA}), 402, "insufficient_credits"),
                               ('{"age": 3}', 400, "missing_identifier")):  # fmt: skip
        response = client.post(url, data=body, headers=bearer)
        _assert_error(response, status, code)
        assert response.headers["credits-deducted"] == "0"
        assert _transaction(db_path, response.headers["smarteTransactionId"]) == (code, 0)
    refused = client.post(url, data=b"{}")  # not authenticated: no row, a header all the same
    _assert_error(refused, 401, "invalid_signature")
    assert refused.headers["credits-deducted"] == "0" and refused.headers["smarteTransactionId"]


def test_a_blocked_or_failed_custom_action_names_its_transaction(
    client: FlaskClient, broke: dict[str, connections.Added], people: None, db_path: Path
) -> None:
    request = json.loads((PLATFORMS / "hubspot_custom_action_execution_request.json").read_text())
    request["object"]["properties"]["email"] = AVA
    blocked = _hubspot_v3(client, broke["hubspot"], json.dumps(request).encode(), NOW, "enrich")
    assert blocked.get_json()["outputFields"]["hs_execution_state"] == "BLOCK"
    transaction = blocked.headers["smarteTransactionId"]
    assert _transaction(db_path, transaction) == ("insufficient_credits", 0)
    assert blocked.headers["credits-deducted"] == "0"
    again = _hubspot_v3(client, broke["hubspot"], json.dumps(request).encode(), NOW, "enrich")
    assert again.headers["smarteTransactionId"] == transaction  # the first answer, kept
    request["object"]["properties"], request["callbackId"] = {}, "ap-102-2-3-2"
    failed = _hubspot_v3(client, broke["hubspot"], json.dumps(request).encode(), NOW, "enrich")
    assert failed.get_json()["outputFields"]["hs_execution_state"] == "FAIL_CONTINUE"
    assert _transaction(db_path, failed.headers["smarteTransactionId"]) == (
        "missing_identifier",
        0,
    )


# --- replays of Standard Webhooks deliveries ---------------------------------------------------


def _charges(db_path: Path) -> tuple[int, int]:
    """Transactions recorded and credits they charged, for every organization."""
    row = db.connect(db_path).execute(
        "SELECT count(*), coalesce(sum(credits), 0) FROM transactions"
    )
    count, credits = row.fetchone()
    return count, int(credits)


def _answer(response: TestResponse) -> tuple[int, Any, str | None, str | None]:
    headers = response.headers
    return (
        response.status_code,
        response.get_json(),
        headers.get("smarteTransactionId"),
        headers.get("credits-deducted"),
    )


def _replay_of(first: TestResponse) -> tuple[int, Any, str | None, str | None]:
    """The answer a copy of `first` gets: the same, charged nothing (its body says so too)."""
    status, body, transaction, _ = _answer(first)
    if isinstance(body, dict) and "creditsDeducted" in body:
        body = {**body, "creditsDeducted": 0}
    return status, body, transaction, "0"


@pytest.mark.both_backends
def test_a_standard_webhooks_delivery_sent_twice_is_answered_twice_and_charged_once(
    client: FlaskClient, links: dict[str, connections.Added], people: None, db_path: Path
) -> None:
    link, body = links["zapier"], json.dumps({"email": AVA}).encode()
    first = _zapier(client, link, body, "msg_once", "enrich")
    assert first.status_code == 200 and first.get_json()["email"] == AVA
    again = _zapier(client, link, body, "msg_once", "enrich")
    status, fields, transaction, credits = _answer(first)
    assert _answer(again) == (status, {**fields, "creditsDeducted": 0}, transaction, "0")
    assert (
        again.headers["Idempotent-Replayed"] == "true"
        and first.headers["Idempotent-Replayed"] == "false"
    )
    assert credits == "1" and fields["creditsDeducted"] == 1 and _charges(db_path) == (1, 1)
    other = _zapier(client, link, body, "msg_other", "enrich")  # another delivery is charged
    assert other.status_code == 200 and _charges(db_path) == (2, 2)


def test_a_copy_sent_after_the_window_is_refused_by_the_timestamp_check(
    client: FlaskClient,
    links: dict[str, connections.Added],
    people: None,
    db_path: Path,
    clock: Clock,
) -> None:
    link, body = links["zapier"], json.dumps({"email": AVA}).encode()
    assert _zapier(client, link, body, "msg_late", "enrich").status_code == 200
    clock.now = NOW + timedelta(seconds=STANDARD_WEBHOOKS_TOLERANCE + 1)
    late = _zapier(client, link, body, "msg_late", "enrich")
    _assert_error(late, 401, "invalid_signature")
    assert "webhook-timestamp" in late.get_json()["error"]["message"]
    assert _charges(db_path) == (1, 1)


@pytest.mark.both_backends
def test_remembered_answers_are_deleted_after_a_day(
    client: FlaskClient,
    links: dict[str, connections.Added],
    people: None,
    db_path: Path,
    clock: Clock,
) -> None:
    link, body = links["zapier"], json.dumps({"email": AVA}).encode()
    assert _zapier(client, link, body, "msg_old", "enrich").status_code == 200
    clock.now = NOW + store.ANSWERS_KEPT + timedelta(seconds=1)
    assert _zapier(client, link, body, "msg_new", "enrich", at=clock.now).status_code == 200
    kept = db.connect(db_path).execute("SELECT webhook_id FROM webhook_replays").fetchall()
    assert kept == [("msg_new",)]


def test_a_refused_delivery_is_not_remembered(
    client: FlaskClient, links: dict[str, connections.Added], people: None, db_path: Path
) -> None:
    """Nothing was charged, so a copy is tried afresh (it may succeed now)."""
    link = links["zapier"]
    _assert_error(
        _zapier(client, link, b'{"age": 3}', "msg_bad", "enrich"), 400, "missing_identifier"
    )
    _assert_error(
        _zapier(client, link, b'{"age": 3}', "msg_bad", "enrich"), 400, "missing_identifier"
    )
    assert db.connect(db_path).execute("SELECT count(*) FROM webhook_replays").fetchone() == (0,)


@pytest.mark.both_backends
def test_concurrent_copies_of_one_delivery_are_charged_once(
    app: Flask, links: dict[str, connections.Added], people: None, db_path: Path, backend: str
) -> None:
    """A copy that arrives while the first is being answered gets 503 and a Retry-After;
    sent again, it gets the first answer."""
    link, body = links["zapier"], json.dumps({"email": AVA}).encode()

    def send(_: int) -> TestResponse:
        return _zapier(app.test_client(), link, body, "msg_racing", "enrich")

    with ThreadPoolExecutor(max_workers=_threads(backend, 8)) as pool:
        responses = list(pool.map(send, range(8)))
    first = [r for r in responses if r.headers.get("credits-deducted") == "1"]
    replayed = [r for r in responses if r.headers.get("Idempotent-Replayed") == "true"]
    busy = [r for r in responses if r.status_code != 200]
    assert len(first) == 1 and len(first) + len(replayed) + len(busy) == 8
    assert all(_answer(copy) == _replay_of(first[0]) for copy in replayed)
    for response in busy:
        _assert_error(response, 503, "delivery_in_progress")
        assert response.headers["Retry-After"]
    assert _charges(db_path) == (1, 1)
    assert _answer(send(0)) == _replay_of(first[0])


def test_a_copy_arriving_while_the_first_is_answered_is_told_to_come_back(
    client: FlaskClient, links: dict[str, connections.Added], people: None, db_path: Path
) -> None:
    link, body = links["zapier"], json.dumps({"email": AVA}).encode()
    with store.server.write(store.connect(db_path)) as database:  # the first, still at work
        store.claim_webhook(database, link.row["id"], "msg_busy", "2026-11-23T12:00:00", "")
    busy = _zapier(client, link, body, "msg_busy", "enrich")
    _assert_error(busy, 503, "delivery_in_progress")
    assert busy.headers["Retry-After"] == "2" and _charges(db_path) == (0, 0)


@pytest.mark.both_backends
def test_a_custom_action_sent_again_is_answered_again_and_charged_once(
    client: FlaskClient, links: dict[str, connections.Added], people: None, db_path: Path
) -> None:
    """HubSpot's own retry (a new timestamp) or a replay within v3's window: one callbackId
    is one execution, charged once."""
    request = json.loads((PLATFORMS / "hubspot_custom_action_execution_request.json").read_text())
    request["object"]["properties"]["email"] = AVA
    body = json.dumps(request).encode()
    first = _hubspot_v3(client, links["hubspot"], body, NOW, "enrich")
    retried = _hubspot_v3(client, links["hubspot"], body, NOW + timedelta(seconds=30), "enrich")
    assert first.get_json()["outputFields"]["hs_execution_state"] == "SUCCESS"
    assert _answer(retried) == _replay_of(first) and _charges(db_path) == (1, 1)
    request["callbackId"] = "ap-102-2-3-1"  # another execution is charged
    other = _hubspot_v3(client, links["hubspot"], json.dumps(request).encode(), NOW, "enrich")
    assert other.status_code == 200 and _charges(db_path) == (2, 2)


# --- HubSpot: the signature versions each kind of request may use ------------------------------


def _hubspot_v2_headers(url: str, body: bytes) -> dict[str, str]:
    return _signed_by_hubspot("v2", url, body)


def _hubspot_v3_headers(url: str, body: bytes, at: datetime = NOW) -> dict[str, str]:
    return _signed_by_hubspot("v3", url, body, at)


@pytest.mark.both_backends
def test_once_a_connection_has_had_v3_a_request_stripped_to_v2_is_refused(
    client: FlaskClient, links: dict[str, connections.Added], db_path: Path
) -> None:
    link = links["hubspot"]
    url = f"http://localhost/hooks/{link.row['id']}/events"
    v2 = _hubspot_v2_headers(url, WORKFLOW)
    assert client.post(url, data=WORKFLOW, headers=v2).status_code == 200  # none seen yet
    both = {**v2, **_hubspot_v3_headers(url, WORKFLOW)}  # what HubSpot sends today
    assert client.post(url, data=WORKFLOW, headers=both).status_code == 200
    stripped = client.post(url, data=WORKFLOW, headers=v2)
    _assert_error(stripped, 401, "invalid_signature")
    assert "v3 signature on workflow requests" in stripped.get_json()["error"]["message"]
    assert store.connection(db.connect(db_path), link.row["id"])["hubspot_v3_kinds"] == "workflow"


def test_v3_on_one_kind_of_request_leaves_the_others_on_the_version_they_are_sent_with(
    client: FlaskClient, links: dict[str, connections.Added], db_path: Path
) -> None:
    """A custom action signed v3 does not stop a v2-only workflow webhook of the same app."""
    link = links["hubspot"]
    events, enrich = (f"http://localhost/hooks/{link.row['id']}/{route}" for route in
                      ("events", "enrich"))  # fmt: skip
    action = (PLATFORMS / "hubspot_custom_action_execution_request.json").read_bytes()
    with_v3 = {**_hubspot_v2_headers(enrich, action), **_hubspot_v3_headers(enrich, action)}
    assert client.post(enrich, data=action, headers=with_v3).status_code == 200
    v2_only = client.post(events, data=WORKFLOW, headers=_hubspot_v2_headers(events, WORKFLOW))
    assert v2_only.status_code == 200
    stripped = client.post(enrich, data=action, headers=_hubspot_v2_headers(enrich, action))
    _assert_error(stripped, 401, "invalid_signature")
    kinds = store.connection(db.connect(db_path), link.row["id"])["hubspot_v3_kinds"]
    assert kinds == "custom-action"
    both = {**_hubspot_v2_headers(events, WORKFLOW), **_hubspot_v3_headers(events, WORKFLOW)}
    assert client.post(events, data=WORKFLOW, headers=both).status_code == 200
    kinds = store.connection(db.connect(db_path), link.row["id"])["hubspot_v3_kinds"]
    assert kinds == "custom-action,workflow"


def test_a_request_carrying_v3_is_verified_by_v3_alone(
    client: FlaskClient, links: dict[str, connections.Added], db_path: Path
) -> None:
    url = f"http://localhost/hooks/{links['hubspot'].row['id']}/events"
    stale = _hubspot_v3_headers(url, WORKFLOW, NOW - timedelta(minutes=6))
    response = client.post(
        url, data=WORKFLOW, headers={**_hubspot_v2_headers(url, WORKFLOW), **stale}
    )
    _assert_error(response, 401, "invalid_signature")
    assert _events(db_path, links["hubspot"]) == []


@pytest.mark.parametrize("declared", ["v2", None])
def test_a_webhooks_api_batch_is_verified_by_v1_not_v2(
    client: FlaskClient, links: dict[str, connections.Added], db_path: Path, declared: str | None
) -> None:
    """HubSpot signs Webhooks API batches with v1 (+v3); a v2 signature is not one of them."""
    url = f"http://localhost/hooks/{links['hubspot'].row['id']}/events"
    headers = _hubspot_v2_headers(url, BATCH)
    if declared is None:
        del headers["X-HubSpot-Signature-Version"]
    _assert_error(client.post(url, data=BATCH, headers=headers), 401, "invalid_signature")
    assert _events(db_path, links["hubspot"]) == []


def test_a_workflow_webhook_is_verified_by_v2_not_v1(
    client: FlaskClient, links: dict[str, connections.Added], db_path: Path
) -> None:
    url = f"http://localhost/hooks/{links['hubspot'].row['id']}/events"
    v1 = _signed_by_hubspot("v1", url, WORKFLOW)
    _assert_error(client.post(url, data=WORKFLOW, headers=v1), 401, "invalid_signature")
    assert _events(db_path, links["hubspot"]) == []


# --- Standard Webhooks, signed by the official library ----------------------------------------

KEY = b"twenty-six bytes of a key!"  # 26 bytes: its base64 ends with one "="
PADDED = base64.b64encode(KEY).decode()


@pytest.mark.parametrize(
    "secret",
    [f"whsec_{PADDED}", f"whsec_{PADDED.rstrip('=')}", PADDED.rstrip("=")],
    ids=["padded", "unpadded", "unprefixed"],
)
def test_standard_webhooks_signed_by_the_official_library_are_taken_padded_or_not(
    client: FlaskClient, links: dict[str, connections.Added], people: None, db_path: Path,
    secret: str,
) -> None:  # fmt: skip
    """The library pads the secret before decoding it; an unpadded one answered 500 here."""
    link = connections.add(
        store.connect(db_path), SECRET.encode(), NOW, name="sw", platform="make",
        api_key=store.unseal(SECRET.encode(), links["zapier"].row["api_key_sealed"]),
        secret=secret,
    )  # fmt: skip
    body = json.dumps({"email": AVA}).encode()
    signed = Webhook(secret).sign("msg_official", NOW, body.decode())
    headers = _standard("msg_official", str(int(NOW.timestamp())), signed)
    response = client.post(f"/hooks/{link.row['id']}/enrich", data=body, headers=headers)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["email"] == AVA
    other = Webhook(base64.b64encode(b"another key").decode()).sign("msg_2", NOW, body.decode())
    refused = client.post(
        f"/hooks/{link.row['id']}/enrich",
        data=body,
        headers=_standard("msg_2", str(int(NOW.timestamp())), other),
    )
    _assert_error(refused, 401, "invalid_signature")


def test_a_stored_secret_that_cannot_check_signatures_is_401_never_500(
    client: FlaskClient, links: dict[str, connections.Added], people: None, db_path: Path
) -> None:
    """A connection added before `connection add` checked its secret: signed requests are
    refused, saying why; the secret still works as a bearer token."""
    link = links["zapier"]
    database = store.connect(db_path)
    sealed = store.seal(SECRET.encode(), "my-shared-token")
    database.execute(
        "UPDATE connections SET secret_sealed = ? WHERE id = ?", [sealed, link.row["id"]]
    )
    body, url = json.dumps({"email": AVA}).encode(), f"/hooks/{link.row['id']}/enrich"
    for signature in ("", "v1,!!", "v1,AAAA"):
        response = client.post(url, data=body, headers=_standard("m", SENT_AT, signature))
        _assert_error(response, 401, "invalid_signature")
    message = response.get_json()["error"]["message"]
    assert "cannot check Standard Webhooks signatures" in message and "my-shared" not in message
    bearer = client.post(url, data=body, headers={"Authorization": "Bearer my-shared-token"})
    assert bearer.status_code == 200


# --- HubSpot: the URL signed is the one HubSpot called, escapes and all ------------------------


@pytest.mark.parametrize("query", list(ESCAPED))
@pytest.mark.parametrize("version", ["v2", "v3"])
def test_hubspot_signs_the_url_as_it_called_it_and_so_it_is_checked(
    client: FlaskClient,
    links: dict[str, connections.Added],
    db_path: Path,
    version: str,
    query: str,
) -> None:
    """Werkzeug decodes the query of `request.url`; HubSpot signed the escapes."""
    url = f"http://localhost/hooks/{links['hubspot'].row['id']}/events{query}"
    response = client.post(url, data=WORKFLOW, headers=_signed_by_hubspot(version, url, WORKFLOW))
    assert response.status_code == 200, response.get_json()
    assert len(_events(db_path, links["hubspot"])) == 1


def test_hubspot_v1_of_a_webhooks_api_batch_covers_the_body_alone(
    client: FlaskClient, links: dict[str, connections.Added], db_path: Path
) -> None:
    url = f"http://localhost/hooks/{links['hubspot'].row['id']}/events?src=wf%3Ahubspot"
    response = client.post(url, data=BATCH, headers=_signed_by_hubspot("v1", url, BATCH))
    assert response.status_code == 200 and len(_events(db_path, links["hubspot"])) == 1


@pytest.mark.parametrize("version", ["v2", "v3"])
def test_behind_a_tls_proxy_hubspot_signatures_cover_the_public_url(
    app: Flask, links: dict[str, connections.Added], db_path: Path, version: str
) -> None:
    """The proxy calls the app over plain http on another host: the URL checked is
    CONTACTDATA_PUBLIC_URL's (the one HubSpot was given) with the path and query as sent."""
    app.config["PUBLIC_URL"] = "https://hooks.acme.example/"
    route = f"/hooks/{links['hubspot'].row['id']}/events?src=wf%3Ahubspot%2Fa%40b"
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "hooks.acme.example"}
    client = app.test_client()
    called = _signed_by_hubspot(version, f"https://hooks.acme.example{route}", WORKFLOW)
    response = client.post(f"http://10.0.0.7:8080{route}", data=WORKFLOW,
                           headers={**forwarded, **called})  # fmt: skip
    assert response.status_code == 200, response.get_json()
    seen = _signed_by_hubspot(version, f"http://10.0.0.7:8080{route}", WORKFLOW)
    refused = client.post(f"http://10.0.0.7:8080{route}", data=WORKFLOW, headers=seen)
    _assert_error(refused, 401, "invalid_signature")
    message = refused.get_json()["error"]["message"]
    assert "https://hooks.acme.example/hooks/" in message and "CONTACTDATA_PUBLIC_URL" in message
    assert len(_events(db_path, links["hubspot"])) == 1


@pytest.mark.slow
def test_through_gunicorn_hubspot_signatures_cover_the_url_as_called(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gunicorn's RAW_URI is the request target as sent: escapes kept, whatever the proxy's
    scheme and host (the public URL names them)."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    monkeypatch.setenv("CONTACTDATA_PUBLIC_URL", "https://hooks.acme.example")
    path = tmp_path / "served.db"
    database = store.connect(path)
    secret = server.key_secret({"DB": str(path)})
    _, key = accounts.create_organization(
        database, secret, NOW, name="Acme", website="acme.example", tier="pro"
    )
    link = connections.add(
        database, secret, NOW, name="hs", platform="hubspot", api_key=key,
        secret=HUBSPOT_SECRET, crm_base_url="http://127.0.0.1:9", crm_token="crm-token-1234",
    )  # fmt: skip
    database.close()
    port = servers.free_port()
    process = servers.serve(path, port, workers=1)
    try:
        route = f"/hooks/{link.row['id']}/events?src=wf%3Ahubspot%2Fa%40b"
        for version, contact in (("v2", b"3234575"), ("v3", b"3234576")):
            body = WORKFLOW.replace(b"3234574", contact)  # two events
            called, now = f"https://hooks.acme.example{route}", datetime.now(UTC)  # served
            headers = _signed_by_hubspot(version, called, body, now)
            sent = httpx.post(f"http://127.0.0.1:{port}{route}", content=body, headers=headers)
            assert sent.status_code == 200, sent.text
    finally:
        servers.stop(process)
    assert len(store.events_of(store.connect(path), link.row["id"])) == 2


# --- headers no platform would send: 401, never 500 -------------------------------------------


def _basic(credentials: bytes) -> str:
    return "Basic " + base64.b64encode(credentials).decode()


SENT_AT, SENT_AT_MS = "1795435200", "1795435200000"  # NOW as the platforms write it


def _standard(msg_id: str, stamp: str, signature: str) -> dict[str, str]:
    return {"webhook-id": msg_id, "webhook-timestamp": stamp, "webhook-signature": signature}


def _v3(signature: str, stamp: str) -> dict[str, str]:
    return {"X-HubSpot-Signature-v3": signature, "X-HubSpot-Request-Timestamp": stamp}


GARBLED = [  # (platform, route, headers)
    ("pipedrive", "events", {"Authorization": "Basic \u00e9\u00e9"}),
    ("pipedrive", "events", {"Authorization": _basic("pipedrive:\u00e9".encode())}),
    ("pipedrive", "events", {"Authorization": _basic(b"pipedrive:\xff\xfe")}),
    ("pipedrive", "events", {"Authorization": _basic(b"no colon")}),
    ("pipedrive", "events", {"Authorization": "Basic !!!"}),
    ("pipedrive", "events", {"Authorization": "Basic ===="}),
    ("pipedrive", "events", {"Authorization": "Basic "}),
    ("pipedrive", "events", {"Authorization": ""}),
    ("marketo", "enrich", {"Authorization": "Bearer \u00e9"}),
    ("marketo", "enrich", {"Authorization": "Bearer "}),
    ("marketo", "enrich", {"Authorization": "\u00ff"}),
    ("zapier", "enrich", {"Authorization": "Bearer \u00e9\u00ff"}),
    ("zapier", "enrich", _standard("\u00e9", SENT_AT, "v1,\u00e9")),
    ("zapier", "enrich", _standard("m", "\u00e9", "v1,AAAA")),
    ("zapier", "enrich", _standard("m", SENT_AT, "v1,!!!not base64")),
    ("zapier", "enrich", _standard("", "", "")),
    ("zapier", "enrich", {"webhook-signature": "\u00e9"}),
    ("hubspot", "events", _v3("\u00e9", SENT_AT_MS)),
    ("hubspot", "events", _v3("AAAA", "\u00e9")),
    ("hubspot", "events", {"X-HubSpot-Signature": "\u00e9"}),
    ("hubspot", "events", {"X-HubSpot-Signature": "00", "X-HubSpot-Signature-Version": "\u00e9"}),
    ("hubspot", "events", {"X-HubSpot-Signature": "", "X-HubSpot-Signature-v3": ""}),
]


@pytest.mark.parametrize(("platform", "route", "headers"), GARBLED)
def test_a_garbled_or_non_ascii_credential_is_401_never_500(
    client: FlaskClient,
    links: dict[str, connections.Added],
    platform: str,
    route: str,
    headers: dict[str, str],
) -> None:
    body = PIPEDRIVE if platform == "pipedrive" else json.dumps({"email": AVA}).encode()
    url = f"/hooks/{links[platform].row['id']}/{route}"
    _assert_error(client.post(url, data=body, headers=headers), 401, "invalid_signature")


@pytest.mark.slow
def test_gunicorn_passes_a_non_ascii_basic_header_to_the_app_which_answers_401(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    path = tmp_path / "served.db"
    database = store.connect(path)
    secret = server.key_secret({"DB": str(path)})
    _, key = accounts.create_organization(
        database, secret, NOW, name="Acme", website="acme.example", tier="pro"
    )
    link = connections.add(
        database, secret, NOW, name="pd", platform="pipedrive", api_key=key,
        crm_base_url="http://127.0.0.1:9", crm_token="crm-token-1234",
    )  # fmt: skip
    database.close()
    port = servers.free_port()
    process = servers.serve(path, port, workers=1)
    try:
        url = f"http://127.0.0.1:{port}/hooks/{link.row['id']}/events"
        for value in ("Basic é".encode(), "Basic é".encode("latin-1"), b"Basic \xff\xfe"):
            refused = httpx.post(url, content=PIPEDRIVE, headers={"Authorization": value})
            assert refused.status_code == 401, (value, refused.text)
            assert refused.json()["error"]["code"] == "invalid_signature"
        sent = httpx.post(url, content=PIPEDRIVE, auth=("pipedrive", link.secret))
        assert sent.json() == {"accepted": 1}
    finally:
        servers.stop(process)
    assert b"Traceback" not in process.stdout.read()  # type: ignore[union-attr]
