"""`contactdata serve --threads`: one gthread worker serves requests at once, each thread on a
connection of its own (on PostgreSQL more than a pool holds by default), and each request is
charged once, on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest

from server.storage import db, pg, store
from tests.helpers.constants import SECRET
from tests.helpers.enrich_data import copy_dataset
from tests.servers import CONTACTDATA, free_port, serve, stop

pytestmark = [pytest.mark.slow, pytest.mark.both_backends]

THREADS = 6
HELD = THREADS - 1  # requests left waiting at once, more than pg.POOL_MAX; one thread stays free
CREDITS = 100
PATIENCE_S = 10.0


def test_one_worker_serves_requests_at_once_on_its_threads(
    enrich_dataset: Path, db_path: Path | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert HELD > pg.POOL_MAX
    monkeypatch.setenv("CONTACTDATA_KEY_SECRET", SECRET)  # PostgreSQL's keys need it set
    copy_dataset(enrich_dataset, db_path).close()
    org = _create_org(db_path)
    port = free_port()
    process = serve(db_path, port, workers=1, threads=THREADS)
    base, key = f"http://127.0.0.1:{port}", org["adminApiKey"]

    def enrich() -> httpx.Response:
        body = {"companyName": "Lonestar Works Inc."}
        return httpx.post(f"{base}/v7/enrich", json=body, headers={"apikey": key}, timeout=30)

    try:
        with ThreadPoolExecutor(HELD) as pool, _writes_held(db_path, org["orgId"]):
            answers = [pool.submit(enrich) for _ in range(HELD)]
            _wait_until_waiting(db_path, HELD)
            assert not any(answer.done() for answer in answers)  # all in flight at once
            assert httpx.get(f"{base}/healthz", timeout=5).status_code == 200  # the free thread
        assert [answer.result().status_code for answer in answers] == [200] * HELD
        assert {answer.result().json()["recordStatus"] for answer in answers} == {"Active"}
    finally:
        stop(process)
    connection = db.connect(db_path)
    try:
        organization = store.organization(connection, org["orgId"])
        assert organization is not None and organization["credits"] == CREDITS - HELD
    finally:
        connection.close()


def _create_org(db_path: Path | str) -> dict[str, str]:
    command = [CONTACTDATA, "org", "create", "--db", str(db_path), "--name", "Threads",
               "--website", "https://threads.example.org/", "--tier", "pro",
               "--credits", str(CREDITS), "--qps", "100", "--json"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@contextmanager
def _writes_held(db_path: Path | str, org_id: str) -> Iterator[None]:
    """Inside, enrich's charges wait: the organization's row locked on PostgreSQL, SQLite's
    write lock held."""
    if str(db_path).startswith("postgresql://"):
        with psycopg.connect(str(db_path)) as conn, conn.transaction():
            conn.execute("SELECT 1 FROM organizations WHERE id = %s FOR UPDATE", (org_id,))
            yield
        return
    connection = db.connect(db_path)
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        connection.execute("COMMIT")
        connection.close()


def _wait_until_waiting(db_path: Path | str, count: int) -> None:
    """Until `count` requests wait for the held lock: PostgreSQL lists their sessions; SQLite
    has no such list, so a second for them to get there."""
    if not str(db_path).startswith("postgresql://"):
        time.sleep(1.0)
        return
    query = (
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    deadline = time.monotonic() + PATIENCE_S
    with psycopg.connect(str(db_path), autocommit=True) as conn:
        while conn.execute(query).fetchone()[0] < count:
            assert time.monotonic() < deadline, "the requests did not all reach the database"
            time.sleep(0.05)
