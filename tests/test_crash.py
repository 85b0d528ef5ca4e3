"""Kill -9 at random moments: 10,000 HubSpot Webhooks API events sent while the web server and
the worker are killed and restarted; afterwards every event was written back to the CRM
exactly once, and the database is intact."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import queue
import random
import sqlite3
import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import hubspot_webhooks
from tests.helpers.constants import DATA, SECRET
from tests.helpers.crm_server import FakeCrm, running
from tests.helpers.orgs import connected
from tests.helpers.processes import Processes, Ready, healthy
from tests.servers import CONTACTDATA, free_port

pytestmark = pytest.mark.slow

EVENTS = 10_000
KILLS_EACH = 10  # at least, of the web server and of the worker
# Seconds each lives (once up) before it is killed. The web server takes about 2.5 s to come
# up again (gunicorn, then two workers loading the place tables saved on disk), the worker 1 s.
LIFETIMES = {"web": (0.3, 1.5), "worker": (1.5, 4.0)}
HUBSPOT_SECRET = "hubspot-app-secret"
CRM_LATENCY = 0.02  # seconds HubSpot takes to answer, after it applied a change
CHAOS_SECONDS = 150.0  # the senders and the chaos give up after this long
DRAIN_SECONDS = 30.0
SEED = 3
Row = dict[str, Any]


def _processes(db: Path, port: int, logs: Path, crm: FakeCrm) -> Processes:
    """`contactdata serve` and `contactdata worker`: the web server is up when /healthz
    answers, the worker when it first calls the CRM (or after 3 s, when nothing is due)."""
    commands = {
        "web": [CONTACTDATA, "serve", "--db", str(db), "--port", str(port), "--workers", "2"],
        # a short lease: a killed worker's claimed events are taken again within the drain
        "worker": [CONTACTDATA, "worker", "--db", str(db), "--idle", "0.05", "--lease", "5"],
    }
    env = {
        **os.environ,
        "CONTACTDATA_KEY_SECRET": SECRET,
        "CONTACTDATA_ALLOW_PRIVATE_CRM_URLS": "1",
    }
    ready = {"web": healthy(f"http://127.0.0.1:{port}/healthz"), "worker": _calling(crm)}
    return Processes(commands, env, logs, ready)


def _calling(crm: FakeCrm) -> Ready:
    def ready(_: subprocess.Popen[bytes]) -> None:
        seen, deadline = len(crm.calls), time.monotonic() + 3
        while len(crm.calls) == seen and time.monotonic() < deadline:
            time.sleep(0.01)

    return ready


def _contacts() -> dict[str, Row]:
    """10,000 HubSpot contacts holding only an e-mail: the dataset's people, and every tenth
    one nobody knows (written back as No Match)."""
    with (DATA / "discover_contacts.csv").open() as rows:
        emails = [row["conEmail"] for row in csv.DictReader(rows)]
    return {
        str(100001 + n): {
            "email": f"someone{n}@unknown-{n}.example" if n % 10 == 9 else emails[n % len(emails)]
        }
        for n in range(EVENTS)
    }


class Senders:
    """Threads that POST signed batches, each until it gets a 2xx, as HubSpot retries; the
    batches are released a share per life of the web server, so that every life takes some."""

    def __init__(self, url: str, batches: list[bytes], deadline: float) -> None:
        self.url, self.deadline = url, deadline
        self.held = list(reversed(batches))
        self.share = -(-len(batches) // KILLS_EACH)
        self.todo: queue.Queue[bytes] = queue.Queue()
        self.acknowledged = 0
        self.refusals: list[str] = []
        self.lock = threading.Lock()

    def release(self) -> None:
        """Let the next share of the batches be sent."""
        for _ in range(min(self.share, len(self.held))):
            self.todo.put(self.held.pop())

    def run(self, threads: int) -> list[threading.Thread]:
        """The sending threads, not started."""
        return [threading.Thread(target=self._send_all, daemon=True) for _ in range(threads)]

    def all_acknowledged(self) -> bool:
        return self.acknowledged == EVENTS

    def _send_all(self) -> None:
        with httpx.Client(timeout=10) as client:
            while not self.all_acknowledged() and time.monotonic() < self.deadline:
                try:
                    batch = self.todo.get(timeout=0.1)
                except queue.Empty:
                    continue
                self._send(client, batch)
                time.sleep(0.05)  # spread a share over the web server's life

    def _send(self, client: httpx.Client, batch: bytes) -> None:
        response, _ = hubspot_webhooks.deliver(
            client, [self.url], 0, batch, HUBSPOT_SECRET, self.deadline
        )
        if response is None:
            return
        with self.lock:
            if response.is_success:
                self.acknowledged += len(json.loads(batch))
            else:
                self.refusals.append(f"{response.status_code} {response.text[:300]}")


def _chaos(processes: Processes, name: str, senders: Senders, errors: list[str]) -> None:
    """Kill `name` at a random moment of its life, and start it again, until every event was
    acknowledged and it was killed KILLS_EACH times; a web server's new life lets the senders
    send another share."""
    rng = random.Random(f"{SEED}:{name}")
    try:
        while time.monotonic() < senders.deadline and not (
            senders.all_acknowledged() and processes.kills[name] >= KILLS_EACH
        ):
            time.sleep(rng.uniform(*LIFETIMES[name]))
            processes.kill(name)
            if name == "web":
                senders.release()
    except Exception as error:  # reported by the test
        errors.append(f"{name}: {error!r}")
        senders.deadline = 0.0  # the others stop too: the test has failed


@pytest.fixture
def crm() -> Iterator[FakeCrm]:
    """The fake CRM on loopback holding the HubSpot contacts, answering each call CRM_LATENCY
    after it applied the call's writes."""
    with running(FakeCrm(latency=CRM_LATENCY)) as hub:
        hub.contacts["hubspot"].update(_contacts())
        yield hub


def _setup(db_path: Path, crm: FakeCrm, monkeypatch: pytest.MonkeyPatch) -> str:
    """The dataset, a pro organization with plenty of credits, and its HubSpot connection."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    now = datetime.now(UTC)
    db, link, _ = connected(
        db_path,
        "hubspot",
        "pat-na1-token",
        credits=2 * EVENTS,
        crm_base_url=crm.url,
        now=now,
        secret=HUBSPOT_SECRET,
    )
    db.close()
    return link.row["id"]


def _query(db_path: Path, sql: str) -> list[tuple[Any, ...]]:
    with contextlib.closing(sqlite3.connect(db_path, timeout=10)) as db:
        return db.execute(sql).fetchall()


def _wait_until_worked_off(db_path: Path, processes: Processes) -> dict[str, int]:
    """Event counts by status, once none is pending (or the drain timed out)."""
    deadline = time.monotonic() + DRAIN_SECONDS
    while True:
        counts = dict(_query(db_path, "SELECT status, count(*) FROM events GROUP BY status"))
        if sum(counts.values()) >= EVENTS and not counts.get("pending"):
            return counts
        if time.monotonic() > deadline:
            return counts
        if exited := processes.exited("worker"):
            processes.unexpected.extend(exited)  # a crash of its own
            return counts
        time.sleep(0.2)


def test_every_event_is_written_back_exactly_once_through_kill_9(
    tmp_path: Path, crm: FakeCrm, monkeypatch: pytest.MonkeyPatch
) -> None:
    db_path = tmp_path / "crash.db"
    connection_id = _setup(db_path, crm, monkeypatch)
    port = free_port()
    processes = _processes(db_path, port, tmp_path, crm)
    began = time.monotonic()
    url = f"http://127.0.0.1:{port}/hooks/{connection_id}/events"
    batches = hubspot_webhooks.batches(list(crm.contacts["hubspot"]), random.Random(SEED))
    senders = Senders(url, batches, began + CHAOS_SECONDS)
    errors: list[str] = []
    threads: list[threading.Thread] = []
    try:
        processes.start("web")
        processes.start("worker")
        senders.release()
        chaos_threads = [
            threading.Thread(target=_chaos, args=(processes, name, senders, errors))
            for name in ("web", "worker")
        ]
        for thread in [*senders.run(4), *chaos_threads]:
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join(timeout=CHAOS_SECONDS + 30)
        chaos = time.monotonic() - began
        statuses = _wait_until_worked_off(db_path, processes)
    finally:
        senders.deadline = 0.0  # ends the senders and the chaos if the test failed
        processes.kill_all()

    print(
        f"\nchaos {chaos:.1f} s, kills {dict(processes.kills)}, "
        f"total {time.monotonic() - began:.1f} s, {_reruns(crm)}"
    )
    assert errors == [] and senders.refusals == [] and processes.unexpected == []
    assert senders.acknowledged == EVENTS
    assert min(processes.kills[name] for name in ("web", "worker")) >= KILLS_EACH
    assert _query(db_path, "SELECT count(*) FROM events") == [(EVENTS,)]
    assert statuses == {"done": EVENTS}, _not_done(db_path)
    patches, contacts = crm.writes, crm.contacts["hubspot"]
    missing = [key for key in contacts if patches[key] == 0]
    twice = {key: _history(crm)[key] for key in contacts if patches[key] > 1}
    assert missing == [] and twice == {}, (missing, twice)
    # The database and the scheduler's job store beside it (the worker runs the scheduler).
    for path in (db_path, Path(f"{db_path}.jobs")):
        assert path.is_file() and _query(path, "PRAGMA integrity_check") == [("ok",)], path
    assert _query(db_path, CHARGED_TWICE) == []


CHARGED_TWICE = """
    SELECT transaction_id, count(*) FROM credit_ledger WHERE reason = 'enrichment'
    GROUP BY transaction_id HAVING count(*) > 1
"""


def _not_done(db_path: Path) -> list[tuple[Any, ...]]:
    sql = "SELECT id, record_id, status, attempts, last_error FROM events WHERE status != 'done'"
    return _query(db_path, sql)[:20]


def _reruns(crm: FakeCrm) -> str:
    """How often a contact was read again after a kill: at all, and after its PATCH was
    applied (the worker died between the CRM's write and the event's commit)."""
    again = after_write = 0
    for methods in _history(crm).values():
        again += methods.count("GET") > 1
        after_write += "PATCH" in methods and "GET" in methods[methods.index("PATCH") :]
    return f"contacts read again {again}, read again after their PATCH {after_write}"


def _history(crm: FakeCrm) -> dict[str, list[str]]:
    """Each contact's calls in order, GET or PATCH (a batch's reads and writes as GETs and
    PATCHes of each contact in it)."""
    history: dict[str, list[str]] = defaultdict(list)
    for call in crm.calls:
        if call.path.endswith(("/batch/read", "/batch/update")):
            method = "GET" if call.path.endswith("/read") else "PATCH"
            for item in call.body["inputs"]:
                history[item["id"]].append(method)
        else:
            history[call.path.rsplit("/", 1)[-1]].append(call.method)
    return history
