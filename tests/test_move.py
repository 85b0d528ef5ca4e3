"""`contactdata db move`: a SQLite database in use (organizations, keys, credits spent, a
connection with events done and pending, a rescheduled job) moved into PostgreSQL answers,
authenticates, charges and works its events as the SQLite file does; what it refuses."""

from __future__ import annotations

import random
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from flask import Flask

import server
from connector import scheduler, schema, store, worker
from connector.cli import MOVED
from server import credits
from server.http.app import create_app
from server.storage import db, move, pg
from server.storage.migrations import MIGRATIONS
from tests.helpers.constants import AVA, NOW, SECRET
from tests.helpers.crm import FakeHubSpot
from tests.helpers.discover_data import LONESTAR
from tests.helpers.events import hubspot_event
from tests.helpers.orgs import connected
from tests.helpers.vendors import VendorTransport
from tests.servers import CONTACTDATA

ENRICH = {"contactEmail": AVA}
DISCOVER = {"company_guid": LONESTAR}


@pytest.fixture
def target(postgres: Any) -> Iterator[str]:
    """A new PostgreSQL database with nothing in it (not even a schema)."""
    url = postgres.create_database()
    yield url
    pg.release(url)


@pytest.fixture
def used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A SQLite database as a deployment leaves it: Acme's key has enriched through the API
    (a credit spent), the worker wrote one HubSpot event back and another waits, and the
    reenrich job runs every 5 hours instead of nightly (kept in `<db>.jobs`)."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    path = tmp_path / "used.db"
    database, link, org = connected(path, "hubspot", "pat-na1-token", secret="x")
    key = store.unseal(SECRET.encode(), link.row["api_key_sealed"])
    assert _call(_app(path), "/v7/enrich", ENRICH, key)[0] == 200
    hubspot_event(database, link, "done-1")
    assert _worker(database, FakeHubSpot()).run_due() == {"done": 1}
    hubspot_event(database, link, "pending-1", record="502")
    scheduler.reschedule(path, "reenrich", trigger="interval", hours=5)
    database.close()
    return {"path": path, "key": key, "org": org["id"], "link": link}


def _app(target: Path | str) -> Flask:
    return create_app({"DB": str(target), "KEY_SECRET": SECRET, "CLOCK": lambda: NOW})


def _call(app: Flask, path: str, body: dict[str, Any], key: str) -> tuple[int, Any]:
    """Status and JSON body, without what differs by call (ids, timestamps of the request)."""
    answer = app.test_client().post(path, json=body, headers={"apikey": key, "API_KEY": key})
    return answer.status_code, _without_ids(answer.get_json())


def _without_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_ids(v) for k, v in value.items() if "transaction" not in k.lower()}
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return value


def _worker(database: Any, crm: FakeHubSpot) -> worker.Worker:
    client = httpx.Client(transport=VendorTransport(crm))
    return worker.Worker(database, SECRET.encode(), lambda: NOW, client, random.Random(7))


def _twin(path: Path) -> Path:
    """A copy of the SQLite database as it is (the WAL's pages in it), to compare against."""
    copy = path.with_name("twin.db")
    with sqlite3.connect(path) as live, sqlite3.connect(copy) as twin:
        live.backup(twin)
    return copy


def test_a_moved_database_answers_charges_and_authenticates_as_the_sqlite_file(
    used: dict[str, Any], target: str
) -> None:
    twin = _twin(used["path"])
    moved = move.move(used["path"], target, [MOVED])
    assert (
        moved["transactions"] == 2
        and moved["events"] == 2
        and moved["apscheduler_jobs"] == len(scheduler.DEFAULTS)
    )
    sqlite_db, pg_db = db.connect(twin), db.connect(target)
    assert credits.ledger(pg_db, used["org"]) == credits.ledger(sqlite_db, used["org"])
    for path, body in (("/v7/enrich", ENRICH), ("/v1/discover", DISCOVER)):
        on_sqlite = _call(_app(twin), path, body, used["key"])
        assert on_sqlite[0] == 200 and LONESTAR in str(on_sqlite), on_sqlite
        assert _call(_app(target), path, body, used["key"]) == on_sqlite
    balances = [server.organization(d, used["org"])["credits"] for d in (sqlite_db, pg_db)]
    assert balances[0] == balances[1] < 10


def test_pending_events_are_worked_and_new_rows_get_new_ids(
    used: dict[str, Any], target: str
) -> None:
    move.move(used["path"], target, [MOVED])
    database, crm = store.connect(target), FakeHubSpot()
    crm.contacts["502"] = {"email": AVA, "jobtitle": ""}
    assert _worker(database, crm).run_due() == {"done": 1}
    assert crm.patches()[0]["jobtitle"] == "Vice President of Sales"
    hubspot_event(database, used["link"], "after-the-move")
    ids = [event["id"] for event in store.events_of(database, used["link"].row["id"])]
    assert ids == sorted(set(ids)) and len(ids) == 3
    assert {job["id"]: job["trigger"] for job in scheduler.status(target)}["reenrich"] == (
        "interval[5:00:00]"
    )


def test_the_command_prints_each_table_and_refuses_a_target_with_rows(
    used: dict[str, Any], target: str
) -> None:
    command = [CONTACTDATA, "db", "move", "--from", str(used["path"]), "--to", target]
    first = subprocess.run(command, capture_output=True, text=True, check=False)
    assert first.returncode == 0, first.stderr
    counts = dict(line.split() for line in first.stdout.splitlines() if len(line.split()) == 2)
    jobs = str(len(scheduler.DEFAULTS))
    assert counts["organizations"] == "1" and counts["apscheduler_jobs"] == jobs, first.stdout
    assert counts["events"] == "2" and f"moved and verified {len(counts)} tables" in first.stdout
    assert f"CONTACTDATA_KEY_SECRET=$(cat {used['path']}.secret)" in first.stdout
    again = subprocess.run(command, capture_output=True, text=True, check=False)
    assert again.returncode == 1 and "is not empty (rows in api_key_hashes" in again.stderr
    assert db.connect(target).table("events").count == 2


def test_a_source_behind_this_version_is_refused_before_the_target_is_touched(
    tmp_path: Path, target: str
) -> None:
    behind = db.connect(tmp_path / "behind.db", migrate=False)
    with db.write(behind):
        MIGRATIONS.apply(behind, stop_before="m007_discover")
    with pytest.raises(move.MoveRefused, match="lacks migrations m007_discover"):
        move.move(tmp_path / "behind.db", target, [MOVED])
    with psycopg.connect(target) as conn:
        assert conn.execute("SELECT to_regclass('organizations')").fetchone() == (None,)


def test_a_connector_half_migrated_is_refused_and_a_service_only_file_moves(
    tmp_path: Path, target: str
) -> None:
    service_only = db.connect(tmp_path / "service.db")
    service_only.close()
    assert move.move(tmp_path / "service.db", target, [MOVED])["organizations"] == 0
    half = db.connect(tmp_path / "half.db")
    with db.write(half):
        schema.MIGRATIONS.apply(half, stop_before="m020_claims_and_leases")
    refused = r"lacks migrations .*m020_claims_and_leases.* of set 'connector'"
    with pytest.raises(move.MoveRefused, match=refused):
        move.move(tmp_path / "half.db", target, [MOVED])


def test_rows_that_break_a_foreign_key_are_refused_and_nothing_is_kept(
    tmp_path: Path, target: str
) -> None:
    broken = db.connect(tmp_path / "broken.db")
    broken.execute("PRAGMA foreign_keys = OFF")
    broken.execute(
        "INSERT INTO credit_ledger (org_id, change, balance, reason, created_at) "
        "VALUES ('no-such-org', 5, 5, 'top-up', '2026-11-23')"
    )
    with pytest.raises(move.MoveRefused, match="credit_ledger"):
        move.move(tmp_path / "broken.db", target, [MOVED])
    assert db.connect(target).table("credit_ledger").count == 0


def test_a_missing_file_and_a_sqlite_target_are_refused(tmp_path: Path) -> None:
    with pytest.raises(move.MoveRefused, match="no SQLite database at"):
        move.move(tmp_path / "none.db", "postgresql://127.0.0.1:9/x")
    with pytest.raises(move.MoveRefused, match="must be a postgresql:// URL"):
        move.move(tmp_path / "none.db", str(tmp_path / "other.db"))
