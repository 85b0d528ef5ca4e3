"""Several `contactdata worker` processes on one database against the fake CRM on loopback:
they share the events (each claimed by one at a time, each worked once, each CRM record
written once, on SQLite and on PostgreSQL), a worker killed mid-batch leaves its events to
another once its lease ends, and one of them runs the scheduled jobs until it dies, when
another takes them over."""

from __future__ import annotations

import contextlib
import csv
import os
import re
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from connector import scheduler, store
from tests.helpers.constants import DATA, SECRET
from tests.helpers.crm_server import FakeCrm, running
from tests.helpers.orgs import connected
from tests.servers import CONTACTDATA

pytestmark = pytest.mark.slow

EVENTS = 500
LEASE = "3"  # seconds a worker's claims and the scheduler's lease last unless renewed
DEADLINE = 90.0  # seconds a test waits for what it waits for before failing
Row = dict[str, Any]


class Workers:
    """`contactdata worker` processes on one database, each with its output in a file."""

    def __init__(self, db: Path | str, logs: Path) -> None:
        self.db, self.logs = db, logs
        self.env = {
            **os.environ,
            "CONTACTDATA_KEY_SECRET": SECRET,
            "CONTACTDATA_ALLOW_PRIVATE_CRM_URLS": "1",
        }
        self.started: list[subprocess.Popen[bytes]] = []

    def start(self, *options: str) -> subprocess.Popen[bytes]:
        command = [CONTACTDATA, "worker", "--db", str(self.db), "--idle", "0.05", *options]
        log = (self.logs / f"worker-{len(self.started)}.log").open("wb")
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True
        )
        self.started.append(process)
        return process

    def output(self, process: subprocess.Popen[bytes]) -> str:
        return (self.logs / f"worker-{self.started.index(process)}.log").read_text()

    def done(self, process: subprocess.Popen[bytes]) -> int:
        """How many events a worker reported done (it prints each round's outcomes)."""
        return sum(int(n) for n in re.findall(r"\bdone=(\d+)", self.output(process)))

    def check(self) -> None:
        """Fail with its output when a worker not killed by the test exited."""
        for process in self.started:
            if process.poll() not in (None, -signal.SIGKILL):
                pytest.fail(f"a worker exited: {self.output(process)[-2000:]}")

    def stop_all(self) -> None:
        for process in self.started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)


@pytest.fixture
def workers(db_path: Path | str, tmp_path: Path) -> Iterator[Workers]:
    started = Workers(db_path, tmp_path)
    yield started
    started.stop_all()


def _setup(db_path: Path | str, crm: FakeCrm, monkeypatch: pytest.MonkeyPatch) -> None:
    """The dataset, a pro organization, its HubSpot connection on the fake CRM holding EVENTS
    contacts, and a thin event for each contact, due now."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    now = datetime.now(UTC)
    db, link, _ = connected(
        db_path,
        "hubspot",
        "pat-na1-token",
        credits=2 * EVENTS,
        crm_base_url=crm.url,
        now=now,
        secret="hubspot-app-secret",
    )
    with (DATA / "discover_contacts.csv").open() as rows:
        emails = [row["conEmail"] for row in csv.DictReader(rows)]
    crm.contacts["hubspot"].update(
        {str(100001 + n): {"email": emails[n % len(emails)]} for n in range(EVENTS)}
    )
    rows = [_thin_event(link.row["id"], record_id, now) for record_id in crm.contacts["hubspot"]]
    with store.server.write(db):
        assert store.add_events(db, rows) == EVENTS
    db.close()


def _thin_event(connection_id: str, record_id: str, now: datetime) -> Row:
    return {
        "connection_id": connection_id, "event_key": f"change:{record_id}",
        "record_id": record_id, "payload": "{}", "thin": 1, "received_at": store.server.iso(now),
    }  # fmt: skip


def _query(db_path: Path | str, sql: str) -> list[tuple[Any, ...]]:
    if isinstance(db_path, str):  # a PostgreSQL database's URL
        with psycopg.connect(db_path, autocommit=True) as conn:
            return conn.execute(sql).fetchall()
    with contextlib.closing(sqlite3.connect(db_path, timeout=10)) as db:
        return db.execute(sql).fetchall()


def _until(condition: Callable[[], Any], what: str, workers: Workers) -> Any:
    """Wait for `condition` to hold (its value); fail naming `what` after DEADLINE, or at once
    when a worker exited by itself."""
    deadline = time.monotonic() + DEADLINE
    while not (value := condition()):
        workers.check()
        if time.monotonic() > deadline:
            pytest.fail(f"waited {DEADLINE:.0f} s for {what}")
        time.sleep(0.02)
    return value


def _all_done(db_path: Path | str) -> bool:
    return _query(db_path, "SELECT count(*) FROM events WHERE status = 'done'") == [(EVENTS,)]


def _reads(crm: FakeCrm) -> Counter[str]:
    """How often each contact was read (alone or in a batch read)."""
    reads: Counter[str] = Counter()
    for call in crm.calls:
        if call.path.endswith("/batch/read"):
            reads.update(item["id"] for item in call.body["inputs"])
        elif call.method == "GET":
            reads[call.path.rsplit("/", 1)[-1]] += 1
    return reads


CHARGED_TWICE = """
    SELECT transaction_id FROM credit_ledger WHERE reason = 'enrichment'
    GROUP BY transaction_id HAVING count(*) > 1
"""


@pytest.mark.both_backends
@pytest.mark.through_pgbouncer
def test_two_workers_share_the_events_and_work_each_once(
    workers: Workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    with running(FakeCrm(latency=0.02)) as crm:
        _setup(workers.db, crm, monkeypatch)
        pair = [workers.start("--batch", "20", "--lease", LEASE) for _ in range(2)]
        _until(lambda: _all_done(workers.db), f"{EVENTS} events done", workers)
        workers.stop_all()
        done = [workers.done(process) for process in pair]
        assert sum(done) == EVENTS and min(done) > 0, done  # shared, none worked twice
        contacts = list(crm.contacts["hubspot"])
        assert {crm.writes[key] for key in contacts} == {1}
        assert set(_reads(crm).values()) == {1} and set(_reads(crm)) == set(contacts)
        assert _query(workers.db, CHARGED_TWICE) == []


def test_a_killed_workers_events_are_claimed_again_after_its_lease_and_done_once(
    workers: Workers, monkeypatch: pytest.MonkeyPatch
) -> None:
    with running(FakeCrm(latency=0.3)) as crm:
        _setup(workers.db, crm, monkeypatch)
        first = workers.start("--batch", "50", "--lease", LEASE)
        _until(
            lambda: crm.writes, "the first worker's first write", workers
        )  # applied, not answered
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=15)
        held = _query(
            workers.db, "SELECT id FROM events WHERE claimed_by != '' AND status = 'pending'"
        )
        assert len(held) == 50 and workers.done(first) == 0  # killed in its first batch
        written_before = sum(crm.writes.values())
        assert written_before > 0

        second = workers.start("--batch", "50", "--lease", LEASE)
        _until(lambda: _all_done(workers.db), f"{EVENTS} events done", workers)
        # it reports a round after committing it: wait for the report of the last one
        _until(lambda: workers.done(second) == EVENTS, "the second worker's report", workers)
        assert {crm.writes[key] for key in crm.contacts["hubspot"]} == {1}  # none written twice
        assert _query(workers.db, CHARGED_TWICE) == []
        unclaimed = "SELECT count(*) FROM events WHERE claimed_by != '' OR lease_until != ''"
        assert _query(workers.db, unclaimed) == [(0,)]


def test_one_of_two_workers_runs_the_scheduled_jobs_until_it_dies(workers: Workers) -> None:
    scheduler.reschedule(workers.db, "purge_deliveries", trigger="interval", seconds=1)
    pair = [workers.start("--lease", LEASE) for _ in range(2)]

    def runs() -> list[str]:
        sql = "SELECT ran_by FROM job_runs WHERE job_id = 'purge_deliveries' ORDER BY id"
        return [row[0] for row in _query(workers.db, sql)]

    _until(lambda: len(runs()) >= 3, "three runs of the job", workers)
    ran_by = {_pid(name) for name in runs()}
    (leader,) = [process for process in pair if process.pid in ran_by]
    assert ran_by == {leader.pid}  # the other one's scheduler did not run the job too
    holder = _query(workers.db, f"SELECT holder FROM leases WHERE name = '{scheduler.LEADERSHIP}'")
    assert [_pid(name) for (name,) in holder] == [leader.pid]

    os.killpg(leader.pid, signal.SIGKILL)
    leader.wait(timeout=15)
    (other,) = [process for process in pair if process is not leader]
    seen = len(runs())
    _until(
        lambda: {_pid(name) for name in runs()[seen:]} == {other.pid}, "the other's runs", workers
    )
    assert other.poll() is None


def _pid(process_name: str) -> int:
    """The process id in a worker's name (host:pid:random)."""
    return int(process_name.split(":")[1])
