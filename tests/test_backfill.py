"""Backfills (connector/backfill.py, `contactdata backfill`): a HubSpot's existing contacts
listed through its search API, counted by a dry run, queued resumably within the credits
(through a kill -9 of the command), worked off after the live events, each record once."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlite_utils import Database

import server
from connector import backfill, connections, store, worker
from connector.platforms import hubspot
from connector.platforms.base import CrmClient, Permanent
from tests.helpers import hubspot_shapes
from tests.helpers.clock import Clock
from tests.helpers.constants import SECRET
from tests.helpers.crm import HUBSPOT, FakeCRM, SearchableHubSpot
from tests.helpers.crm_server import FakeCrm, running
from tests.helpers.orgs import organization
from tests.servers import CONTACTDATA

RECORDS = 5_000
FIRST_ID = 200_001
Setup = tuple[Database, worker.Worker, connections.Added, Clock]


@pytest.fixture
def crm(monkeypatch: pytest.MonkeyPatch) -> SearchableHubSpot:
    """A HubSpot whose search reaches 1,000 results a query (the adapter told so), so a
    listing of 5,000 records has to ask again from the last id four times."""
    monkeypatch.setattr(hubspot, "SEARCH_REACH", 1_000)
    return SearchableHubSpot(reach=1_000)


def _contacts(count: int) -> dict[str, dict[str, Any]]:
    """`count` contacts from FIRST_ID on, each tenth without an e-mail (nothing to look for)."""
    return {
        str(FIRST_ID + n): {"email": "" if n % 10 == 9 else f"person{n}@firm{n % 97}.example",
                            "firstname": f"P{n}"}
        for n in range(count)
    }  # fmt: skip


def _cache(db: Database, connection_id: str, record_ids: list[str], when: datetime, guid: str):
    """Transaction cache entries as if the worker had enriched these records at `when`."""
    for key in record_ids:
        store.save_record(db, {
            "connection_id": connection_id, "kind": "contacts", "record_id": key,
            "transaction_id": f"t-{key}", "contact_guid": guid, "company_guid": "",
            "input_fingerprint": "{}", "enriched_at": server.iso(when),
        })  # fmt: skip


def test_a_dry_run_counts_the_records_those_with_an_identifier_and_the_credits(
    worker_setup: Setup, crm: SearchableHubSpot
) -> None:
    db, work, link, clock = worker_setup
    crm.contacts = _contacts(RECORDS)
    ids = list(crm.contacts)
    _cache(db, link.row["id"], ids[:100], clock.now - timedelta(days=1), "")  # fresh: skipped
    _cache(db, link.row["id"], ids[100:150], clock.now - timedelta(days=90), "C1")  # stale
    limited = hubspot_shapes.rate_limited("TEN_SECONDLY_ROLLING")
    crm.failures.append(httpx.Response(429, headers={"Retry-After": "7"}, json=limited))
    slept: list[float] = []

    estimate = backfill.dry_run(work, link.row["id"], "contacts", "", slept.append)

    # 5,000 listed, 500 without an e-mail, 90 fresh among those with one (ids[:100] less the
    # tenth ones): 4,410 to enrich, each at most a credit at pro; the 10 credits bound a run.
    assert (estimate.listed, estimate.identified, estimate.fresh) == (5_000, 4_500, 90)
    assert (estimate.to_enrich, estimate.credits) == (4_410, 4_410)
    assert "a run queues at most 10 records (the balance)" in estimate.summary()
    assert slept == [7.0]  # the 429's Retry-After, then the same page again
    searches = crm.searches()
    assert all(int(body.get("after", 0)) + body["limit"] <= 1_000 for body in searches)
    bounds = [
        s["filterGroups"] and s["filterGroups"][0]["filters"][0]["value"]
        for s in searches
        if "after" not in s
    ]
    # the first page twice (the 429), then each query from the last id listed
    assert bounds == [[], [], *(str(FIRST_ID + n * 1_000 - 1) for n in range(1, 5))]
    assert nothing_queued(db)

    db.execute("UPDATE organizations SET tier = 'enterprise_plus', credits = NULL")
    again = backfill.dry_run(work, link.row["id"], "contacts", "", slept.append)
    # the 45 stale records with an e-mail and a contact delivered before are refreshed free
    assert (again.to_enrich, again.credits, again.balance) == (4_410, 4_365, None)
    assert "refreshed for nothing" in " ".join(again.summary())


def nothing_queued(db: Database) -> bool:
    return db.execute("SELECT count(*) FROM events").fetchone()[0] == 0


def test_since_asks_for_records_modified_since_then(
    worker_setup: Setup, crm: SearchableHubSpot
) -> None:
    _, work, link, _ = worker_setup
    crm.contacts = {"7": {"email": "a@b.example", "lastmodifieddate": "1800000000000"},
                    "8": {"email": "c@d.example", "lastmodifieddate": "1700000000000"}}  # fmt: skip
    since = backfill.since_from("2025-01-01")  # 1735689600000 ms

    estimate = backfill.dry_run(work, link.row["id"], "contacts", since, lambda _: None)

    assert estimate.listed == 1
    (sent,) = crm.searches()[0]["filterGroups"][0]["filters"]
    assert sent == {"propertyName": "lastmodifieddate", "operator": "GTE", "value": "1735689600000"}


def test_listing_is_not_built_for_the_other_crms() -> None:
    with pytest.raises(Permanent, match="listing not built yet"):
        CrmClient(HUBSPOT, "token", FakeCRM().client()).list_page(["Email"], None, None)


def test_live_events_are_taken_before_backfill_events_in_one_indexed_query(
    worker_setup: Setup,
) -> None:
    db, _, link, clock = worker_setup
    now = clock.now
    queued = [{"connection_id": link.row["id"], "event_key": f"backfill:1:contacts:{n}",
               "record_id": str(n), "payload": '{"backfill": 1}', "thin": 1, "priority": 1,
               "received_at": server.iso(now - timedelta(hours=1))} for n in range(3)]  # fmt: skip
    live = {"connection_id": link.row["id"], "event_key": "live", "record_id": "501",
            "payload": "{}", "thin": 1, "received_at": server.iso(now)}  # fmt: skip
    store.add_events(db, [*queued, live])

    due = store.claim_events(
        db, "worker", server.iso(now), server.iso(now + timedelta(minutes=1)), 2
    )

    assert [event["event_key"] for event in due] == ["live", "backfill:1:contacts:0"]
    plan = " ".join(row[3] for row in db.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM events WHERE status = 'pending' AND due_at <= ? "
        "AND lease_until <= ? ORDER BY priority, due_at, id LIMIT ?",
        [server.iso(now), server.iso(now), 2]))  # fmt: skip
    assert "events_due" in plan and "TEMP B-TREE" not in plan


def test_the_worker_writes_each_backfilled_record_once_within_the_balance(
    worker_setup: Setup, crm: SearchableHubSpot
) -> None:
    db, work, link, clock = worker_setup  # Acme has 10 credits
    emails = [row.split(",")[4] for row in DISCOVER.read_text().splitlines()[1:21]]
    crm.contacts = {
        str(601 + n): {"email": email, "jobtitle": ""} for n, email in enumerate(emails)
    }
    lines: list[str] = []

    row = backfill.run(work, link.row["id"], "contacts", "", None, report=lines.append)

    assert (row["state"], row["queued"], row["note"]) == ("stopped", 10, "at the balance")
    assert lines[-1].startswith("listed 10 of 20, queued 10, skipped 0, 10 left for later")
    while work.run_due():
        pass
    events = store.events_of(db, link.row["id"])
    assert [e["status"] for e in events] == ["done"] * 10
    writes = Counter(key for batch in crm.batches() for key in batch)
    assert sorted(writes) == sorted(e["record_id"] for e in events)
    assert set(writes.values()) == {1} and crm.patches() == []
    assert all(crm.contacts[e["record_id"]]["jobtitle"] for e in events)
    (status,) = backfill.status(db, link.row["id"], clock.now + timedelta(minutes=1))
    assert (status["worked"], status["credits"], status["seconds_left"]) == (10, 10, 0)
    assert "worked off 10 of 10 (0 dead), credits spent at most 10" in backfill.status_line(status)


DISCOVER = Path(__file__).resolve().parent / "data" / "discover_contacts.csv"


# --- `contactdata backfill` killed with SIGKILL halfway, and started again -----------------------


@pytest.fixture
def hub() -> Iterator[FakeCrm]:
    """The loopback HubSpot holding the 5,000 contacts, 30 ms a call."""
    with running(FakeCrm(latency=0.03)) as fake:
        fake.contacts["hubspot"].update(_contacts(RECORDS))
        yield fake


# E-mails of people at work (one a person), to fill the fake HubSpot's contacts with.
ACTIVE_EMAILS = (
    "SELECT min(email) FROM employments WHERE status = 'Active' AND email != '' "
    "GROUP BY contact_guid ORDER BY contact_guid"
)


def _query(db_path: Path, sql: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(db_path, timeout=10)) as db:
        return db.execute(sql).fetchall()


@pytest.mark.slow
def test_a_backfill_killed_halfway_resumes_and_writes_each_record_once_within_the_cap(
    tmp_path: Path, hub: FakeCrm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """5,000 contacts of the loopback HubSpot, each tenth without an e-mail, the others
    people of a demo dataset: a backfill killed with SIGKILL halfway and run again queues
    each record once within --max-credits, and the worker then writes each once."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    db_path, now = tmp_path / "backfill.db", datetime.now(UTC)
    env = {**os.environ, "CONTACTDATA_KEY_SECRET": SECRET}
    dataset = [CONTACTDATA, "demo-data", "--db", str(db_path), "--companies", "500",
               "--contacts", "6000", "--seed", "7"]  # fmt: skip
    subprocess.run(dataset, env=env, check=True, capture_output=True, timeout=120)
    emails = [e for (e,) in _query(db_path, ACTIVE_EMAILS)]
    for n, contact in enumerate(hub.contacts["hubspot"].values()):
        contact["email"] = contact["email"] and emails[n]
    db = store.connect(db_path)
    _, key = organization(db, credits=10_000, now=now)
    link = connections.add(
        db, SECRET.encode(), now, name="hs", platform="hubspot", api_key=key,
        secret="hubspot-app-secret", crm_base_url=hub.url, crm_token="pat-na1-token",
    )  # fmt: skip
    fresh = list(hub.contacts["hubspot"])[:100]
    _cache(db, link.row["id"], fresh, now - timedelta(days=1), "")
    db.close()
    command = [CONTACTDATA, "backfill", link.row["id"], "--db", str(db_path), "--max-credits",
               "4000"]  # fmt: skip

    first = subprocess.Popen(command, env=env, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while _query(db_path, "SELECT count(*) FROM backfills WHERE queued >= 1000") != [(1,)]:
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.01)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=15)
    ((state, queued, cursor),) = _query(db_path, "SELECT state, queued, cursor FROM backfills")
    assert state == "running" and 1_000 <= queued < 4_000 and cursor
    calls_before = len(hub.calls)

    second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)

    assert second.returncode == 0, second.stderr
    assert "resumed after" in second.stdout and "listed" in second.stdout
    resumed = hub.calls[calls_before].body
    assert "after" in resumed or resumed["filterGroups"]  # from the saved cursor, not the start
    assert _query(db_path, "SELECT state, queued, note FROM backfills") == [
        ("stopped", 4_000, "at the credit cap")
    ]
    events = _query(db_path, "SELECT record_id, event_key, priority, thin, payload FROM events")
    assert len(events) == 4_000 == len({record_id for record_id, *_ in events})
    assert {(p, t, json.loads(body)["backfill"]) for _, _, p, t, body in events} == {(1, 1, 1)}
    assert all(key == f"backfill:1:contacts:{record_id}" for record_id, key, *_ in events)
    skipped = set(fresh) | {k for k, v in hub.contacts["hubspot"].items() if not v["email"]}
    assert not skipped & {record_id for record_id, *_ in events}
    shown = [CONTACTDATA, "backfill", "status", link.row["id"], "--db", str(db_path)]
    status = subprocess.run(shown, env=env, capture_output=True, text=True, timeout=30)
    assert "backfill 1 contacts stopped" in status.stdout
    assert "worked off 0 of 4,000" in status.stdout

    work = [CONTACTDATA, "worker", "--db", str(db_path), "--once"]
    worked = subprocess.run(work, env=env, capture_output=True, text=True, timeout=240)
    assert worked.returncode == 0, worked.stderr
    assert _query(db_path, "SELECT status, count(*) FROM events GROUP BY status") == [
        ("done", 4_000)
    ]
    queued = {record_id for record_id, *_ in events}
    assert set(hub.writes) == queued and set(hub.writes.values()) == {1}  # each once
    ((charged,),) = _query(db_path, "SELECT sum(credits) FROM transactions")
    assert charged == 4_000  # every one matched a person: one credit each, the cap
    assert _query(db_path, "SELECT credits FROM organizations") == [(10_000 - 4_000,)]
