"""Each connection's health (connector/health.py) on a moved clock, at the 24-hour window's
edges, and on the Connections tab: the counts, and the retry of one connection's dead letters
(another's, or another organization's, untouched; CSRF; tenancy)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlite_utils import Database

import server
from connector import connections, health, store
from connector.app import create_app
from tests.helpers.clock import Clock
from tests.helpers.constants import SECRET
from tests.helpers.orgs import organization
from tests.helpers.settings_forms import sign_in, submit, text

DAY = timedelta(hours=24)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def app(db_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> Flask:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    return create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": clock})


@pytest.fixture
def orgs(app: Flask, db_path: Path, clock: Clock) -> dict[str, Any]:
    """Acme with two HubSpot connections, Globex with one."""
    db = store.connect(db_path)
    found: dict[str, Any] = {"db": db}
    for org, names in (("Acme", ("one", "two")), ("Globex", ("theirs",))):
        _, key = organization(db, org, now=clock.now)
        found[org] = key
        for name in names:
            found[name] = connections.add(
                db, SECRET.encode(), clock.now, name=name, platform="hubspot", api_key=key,
                secret="hubspot-app-secret", crm_base_url="http://127.0.0.1:9", crm_token="t",
            ).row  # fmt: skip
    return found


def event(
    db: Database, link: dict[str, Any], key: str, status: str, due: Any, tries: int = 1
) -> None:
    """An event of `link` last due at `due`, ended `status` after `tries` attempts."""
    row = {"connection_id": link["id"], "event_key": key, "record_id": key, "payload": "{}",
           "thin": 1, "received_at": server.iso(due)}  # fmt: skip
    store.add_events(db, [row])
    sql = "UPDATE events SET status = ?, attempts = ? WHERE event_key = ? AND connection_id = ?"
    db.execute(sql, [status, tries, key, link["id"]])


def test_counts_are_of_the_last_24_hours_by_when_events_were_last_tried(
    orgs: dict[str, Any], clock: Clock
) -> None:
    db, one, now = orgs["db"], orgs["one"], clock.now
    event(db, one, "d-edge", "done", now - DAY)  # exactly 24 hours ago: in
    event(db, one, "d-old", "done", now - DAY - timedelta(seconds=1))  # a second more: out
    event(db, one, "d-new", "done", now - timedelta(minutes=5))
    event(db, one, "x-edge", "dead", now - DAY)
    event(db, one, "x-old", "dead", now - DAY - timedelta(seconds=1))
    event(db, one, "r-1", "pending", now - 3 * DAY, tries=3)  # retrying, however old
    event(db, one, "w-1", "pending", now, tries=0)  # waiting its first try: not retrying
    event(db, one, "backfill:1:contacts:9", "pending", now + timedelta(hours=1), tries=0)
    event(db, orgs["two"], "other", "dead", now)

    found = health.of(db, one["id"], now)

    assert (found.done, found.retrying, found.dead, found.dead_total) == (2, 1, 1, 2)
    assert found.last_received == server.iso(now)  # w-1's: a backfill's event is not received
    assert found.last_write is None
    later = health.of(db, one["id"], now + timedelta(seconds=1))  # the clock moves on
    assert (later.done, later.dead) == (1, 0)


def test_the_last_write_is_the_latest_record_holding_values_we_wrote(
    orgs: dict[str, Any], clock: Clock
) -> None:
    db, one = orgs["db"], orgs["one"]
    for key, written, when in (("a", '{"jobtitle": "CEO"}', clock.now - DAY),
                               ("b", "{}", clock.now)):  # fmt: skip
        store.save_record(db, {"connection_id": one["id"], "kind": "contacts", "record_id": key,
                               "transaction_id": f"t-{key}", "input_fingerprint": "{}",
                               "written": written, "enriched_at": server.iso(when)})  # fmt: skip
    assert health.of(db, one["id"], clock.now).last_write == server.iso(clock.now - DAY)


@pytest.fixture
def signed_in(client: FlaskClient, orgs: dict[str, Any]) -> FlaskClient:
    assert sign_in(client, orgs["Acme"]).status_code == 303
    return client


def test_the_connections_tab_shows_health_and_retries_one_connections_dead_letters(
    signed_in: FlaskClient, orgs: dict[str, Any], clock: Clock
) -> None:
    db, one, two, theirs = orgs["db"], orgs["one"], orgs["two"], orgs["theirs"]
    for n in range(3):
        event(db, one, f"dead-{n}", "dead", clock.now - timedelta(days=n))
    event(db, one, "fine", "done", clock.now)
    event(db, two, "two-dead", "dead", clock.now)
    event(db, theirs, "their-dead", "dead", clock.now)
    page = text(signed_in.get("/settings/connections"))
    assert "1 done 0 retrying 2 dead" in page  # one's last 24 hours
    assert "Retry 3 dead letters of one" in page and "Retry 1 dead letter of two" in page
    clock.advance(60)

    response = submit(
        signed_in, "/settings/connections", f"/settings/connections/{one['id']}/retry-dead"
    )

    assert response.status_code == 303 and response.location == "/settings/connections"
    assert "3 dead letters of one due again" in text(signed_in.get(response.location))
    statuses = {e["event_key"]: (e["status"], e["due_at"]) for e in store.events_of(db, one["id"])}
    assert {statuses[f"dead-{n}"] for n in range(3)} == {("pending", server.iso(clock.now))}
    assert [e["status"] for e in store.events_of(db, two["id"])] == ["dead"]
    assert [e["status"] for e in store.events_of(db, theirs["id"])] == ["dead"]


def test_another_organizations_retry_is_not_found_and_the_form_needs_its_token(
    signed_in: FlaskClient, orgs: dict[str, Any], clock: Clock
) -> None:
    db, one, theirs = orgs["db"], orgs["one"], orgs["theirs"]
    event(db, one, "mine", "dead", clock.now)
    event(db, theirs, "their-dead", "dead", clock.now)
    other = submit(
        signed_in, "/settings/connections", f"/settings/connections/{theirs['id']}/retry-dead"
    )
    assert other.status_code == 404
    assert "their-dead" not in text(signed_in.get("/settings/connections"))
    refused = signed_in.post(f"/settings/connections/{one['id']}/retry-dead")
    assert refused.status_code == 400
    assert [e["status"] for e in store.events_of(db, theirs["id"])] == ["dead"]
    assert [e["status"] for e in store.events_of(db, one["id"])] == ["dead"]
