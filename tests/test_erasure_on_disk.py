"""An erasure leaves no copy of the person on disk (server/suppression.py): after `contactdata
privacy erase`, run as its own process while another process has the database open (as a
running server has), no file beside a SQLite database (the database, its WAL, the limiter's
and the job store's files) holds a byte of the person's e-mail, direct dial or contact GUID;
the WAL is truncated, or the command says why not. On PostgreSQL the tables the erasure
changed are vacuumed. The person was enriched through the API and by the worker from a
webhook, so transactions, a kept answer, a payload and a cached record name them."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner, Result
from flask import Flask
from sqlite_utils import Database

from connector import scheduler, store
from connector.cli import main
from connector.suppression import erase as connector_eraser
from server import privacy, suppression
from server.storage import db
from tests.helpers.constants import AVA, NOW, SECRET
from tests.helpers.events import hubspot_event
from tests.helpers.orgs import organization

CONTACT = "D15C00000000000000000000000000C1"  # Ava's, in tests/data/discover_contacts.csv
# Ava's data as the service stores it: her address, her direct dial (stored as the file spells
# it, "+1 512-555-0101"; answers mask its last digits), her contact GUID. Found in any case.
NEEDLES = (AVA, "512-555-0101", CONTACT)
# The tables an erasure of Ava changes on PostgreSQL (deleted or updated rows).
CHANGED = ("contacts", "employments", "events", "idempotency_keys", "records", "transactions")
# Another process with the database open through server/storage/db.py, reading when told to.
OTHER_PROCESS = """
import sys
from server.storage import db
database = db.connect(sys.argv[1], migrate=False)
for line in sys.stdin:
    if line == "read\\n":
        database.execute("BEGIN")
        database.execute("SELECT count(*) FROM contacts").fetchone()
    elif line == "done\\n":
        database.execute("COMMIT")
    print("ok", flush=True)
"""


class Other:
    """A process with the database open, as a server's: idle, or reading from `read` to
    `done`. Without it the command's connection would be the last and, closing, would delete
    the WAL, hiding a WAL left full; the test's own connections do not count, since reading a
    file's bytes here drops this process's POSIX locks on it, SQLite's among them."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process

    def tell(self, what: str) -> None:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(f"{what}\n")
        self.process.stdin.flush()
        assert self.process.stdout.readline() == "ok\n"


@pytest.fixture
def known(
    worker_setup: Any, connector_app: Flask, db_path: Path | str, caplog: pytest.LogCaptureFixture
) -> Database:
    """Ava, held by the service and named by the connector's tables: enriched through the API
    (a transaction and the answer kept for its Idempotency-Key) and by the worker from a
    HubSpot event (a transaction, the stored payload, the record's cache entry). The limiter's
    file and the job store exist beside a SQLite database, as a server's and a worker's make;
    what the app and the worker log meanwhile is captured."""
    caplog.set_level(logging.DEBUG)
    database, work, link, _ = worker_setup
    _, key = organization(database, "Beta")
    answer = connector_app.test_client().post(
        "/v7/enrich", json={"contactEmail": AVA}, headers={"apikey": key, "Idempotency-Key": "k1"}
    )
    assert answer.status_code == 200 and answer.get_json()["conGUID"] == CONTACT
    hubspot_event(database, link, "e1")
    assert work.run_due() == {"done": 1}
    cached = store.record(database, link.row["id"], "501")
    assert cached is not None and cached["contact_guid"] == CONTACT
    scheduler.status(db_path)
    return database


@pytest.fixture
def other(known: Database, db_path: Path) -> Iterator[Other]:
    """Another process holding the database open (idle until told to read)."""
    command = [sys.executable, "-c", OTHER_PROCESS, str(db_path)]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as p:
        one = Other(p)
        one.tell("opened")
        yield one
        p.stdin.close()  # type: ignore[union-attr]


def erase(db_path: Path | str) -> subprocess.CompletedProcess[str]:
    """`contactdata privacy erase --email AVA` in its own process, as an operator runs it."""
    command = [sys.executable, "-m", "connector.cli", "privacy", "erase", "--email", AVA]
    env = {**os.environ, "CONTACTDATA_DB": str(db_path), "CONTACTDATA_KEY_SECRET": SECRET}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done


def erase_here(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Result:
    """The same command in this process (it starts at once, and its patience can be set)."""
    monkeypatch.setenv("CONTACTDATA_DB", str(db_path))
    monkeypatch.setenv("CONTACTDATA_KEY_SECRET", SECRET)
    command, obj = ["privacy", "erase", "--email", AVA], {"erasers": [connector_eraser]}
    done = CliRunner().invoke(main, command, obj=obj)
    assert done.exit_code == 0, done.output
    return done


def holding_ava(directory: Path) -> dict[str, list[str]]:
    """Each file under `directory` holding one of NEEDLES, with those it holds."""
    found = {}
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        data = path.read_bytes().lower()
        if held := [n for n in NEEDLES if n.lower().encode() in data]:
            found[path.name] = held
    return found


def test_no_file_beside_the_database_holds_the_erased_person(
    other: Other, db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    names = {p.name for p in db_path.parent.iterdir()}
    assert {"test.db", "test.db-wal", "test.db.limits", "test.db.jobs"} <= names
    before = holding_ava(db_path.parent)
    assert before["test.db"] == list(NEEDLES) and before["test.db-wal"] == [AVA, CONTACT]

    done = erase(db_path)

    assert "erased people=1 " in done.stdout and done.stdout.endswith(" WAL frames kept=0\n")
    assert "webhook payloads=1" in done.stdout and "cached records=1" in done.stdout
    assert holding_ava(db_path.parent) == {}
    assert (db_path.parent / "test.db-wal").stat().st_size == 0
    records = caplog.get_records("setup") + caplog.get_records("call")
    assert len(records) > 0  # the worker logs each run
    logged = "\n".join([done.stdout, done.stderr, *(r.getMessage() for r in records)]).lower()
    assert [n for n in NEEDLES if n.lower() in logged] == []


def test_a_reader_that_finishes_within_the_patience_lets_the_wal_be_truncated(
    other: Other, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other.tell("read")
    threading.Timer(0.5, other.tell, ["done"]).start()
    started = time.monotonic()

    done = erase_here(db_path, monkeypatch)

    assert time.monotonic() - started >= 0.5  # the checkpoint waited for the reader
    assert done.stdout.endswith(" WAL frames kept=0\n") and "warning" not in done.stderr
    assert holding_ava(db_path.parent) == {}


def test_a_reader_holding_on_is_named_and_the_same_command_finishes_the_job(
    other: Other, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(suppression, "CHECKPOINT_PATIENCE_MS", 100)
    other.tell("read")

    held = erase_here(db_path, monkeypatch)

    assert " WAL frames kept=0" not in held.stdout
    assert f"warning: {db_path}-wal still holds the erased data" in held.stderr
    assert "another process was reading the database" in held.stderr
    assert "test.db-wal" in holding_ava(db_path.parent)
    other.tell("done")
    assert erase_here(db_path, monkeypatch).stdout.endswith(" WAL frames kept=0\n")
    assert holding_ava(db_path.parent) == {}


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_on_postgresql_the_tables_the_erasure_changed_are_vacuumed(
    known: Database, db_path: str
) -> None:
    done = erase(db_path)

    assert done.stdout.endswith(f" tables vacuumed={len(CHANGED)}\n")
    with psycopg.connect(db_path, autocommit=True) as admin:
        admin.execute("CREATE EXTENSION IF NOT EXISTS pgstattuple")  # contrib, in Debian's
        vacuumed = admin.execute(
            "SELECT relname FROM pg_stat_user_tables WHERE last_vacuum IS NOT NULL ORDER BY 1"
        ).fetchall()
        dead = {t: admin.execute("SELECT dead_tuple_count FROM pgstattuple(%s)", [t]).fetchone()
                for t in CHANGED}  # fmt: skip
    assert [name for (name,) in vacuumed] == list(CHANGED)
    assert dead == {table: (0,) for table in CHANGED}


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
def test_a_table_another_vacuum_holds_is_counted_not_waited_for(
    known: Database, db_path: str
) -> None:
    database = db.connect(db_path)  # as the command's: nothing changed on it before
    db.set_patience(database, 100)
    hash_of, ava = privacy.hasher(SECRET.encode()), suppression.person(email=AVA)
    with psycopg.connect(db_path) as holder:  # in a transaction until the block ends
        holder.execute("LOCK TABLE contacts IN SHARE UPDATE EXCLUSIVE MODE")  # as VACUUM does

        done = suppression.act(database, hash_of, NOW, [ava], "erase", [connector_eraser])

    assert (done[suppression.VACUUMED], done[suppression.BUSY]) == (len(CHANGED) - 1, 1)
    database.close()
