import fcntl
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from sqlite_utils import Database

from server.storage import db
from server.storage.migrations import MIGRATIONS
from tests.helpers.threads import at_once


def pragma(database: Database, name: str) -> object:
    return database.execute(f"PRAGMA {name}").fetchone()[0]


def test_connection_uses_wal_foreign_keys_and_a_busy_timeout(database: Database) -> None:
    assert pragma(database, "journal_mode") == "wal"
    assert pragma(database, "foreign_keys") == 1
    assert pragma(database, "busy_timeout") == db.BUSY_TIMEOUT_MS


def test_every_connection_overwrites_what_it_deletes(db_path: Path) -> None:
    """secure_delete ON whatever the build's default (SQLite's is OFF; Debian builds it ON):
    a connection, a thread's, and one to a file of another schema (the limiter's)."""
    limits = db.connect(f"{db_path}.limits", migrate=False)
    opened = [db.connect(db_path), db.database(db_path), limits]
    assert [pragma(each, "secure_delete") for each in opened] == [1, 1, 1]


@pytest.mark.parametrize(("secure_delete", "kept"), [("OFF", True), (None, False)])
def test_a_deleted_row_stays_in_the_file_unless_deletes_are_secure(
    tmp_path: Path, secure_delete: str | None, kept: bool
) -> None:
    """Why connect sets it: without it a deleted row's bytes stay in the file's free space,
    even after the WAL is checkpointed into it."""
    path = tmp_path / "rows.db"
    database = db.connect(path, migrate=False)
    database.execute("CREATE TABLE people (email TEXT)")
    database.execute("INSERT INTO people VALUES ('ava@example.com')")
    database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    if secure_delete:
        database.execute(f"PRAGMA secure_delete = {secure_delete}")
    database.execute("DELETE FROM people")
    database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert (b"ava@example.com" in path.read_bytes()) is kept


def test_processes_opening_a_new_file_at_once_all_get_wal(tmp_path: Path) -> None:
    """Switching a new file to WAL needs it alone: whoever finds it switching waits."""
    failures: list[BaseException] = []
    for round_ in range(40):
        path = tmp_path / f"new-{round_}.db"

        def open_it(path: Path = path) -> None:
            opened = db.connect(path, migrate=False)
            assert opened.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            opened.close()

        failures += at_once(open_it, 3)
    assert failures == []


def test_migrations_apply_once_and_are_recorded(db_path: Path) -> None:
    first = db.connect(db_path)
    again = db.connect(db_path)
    assert db.schema_version(again) == MIGRATIONS.names
    assert {"companies", "contacts", "employments", "organizations", "api_keys"} <= set(
        first.table_names()
    )


def test_write_rolls_back_everything_on_error(database: Database) -> None:
    database.execute("CREATE TABLE scratch (x INTEGER)")
    with pytest.raises(RuntimeError), db.write(database):
        database.execute("INSERT INTO scratch VALUES (1)")
        raise RuntimeError("boom")
    assert database.execute("SELECT count(*) FROM scratch").fetchone()[0] == 0


def test_foreign_keys_are_enforced(database: Database) -> None:
    with pytest.raises(sqlite3.IntegrityError), db.write(database):
        database.execute("INSERT INTO company_aliases VALUES ('x', 'NO_SUCH_COMPANY1')")


def test_nested_write_joins_the_outer_transaction(database: Database) -> None:
    with db.write(database), db.write(database):
        assert database.conn.in_transaction
    assert not database.conn.in_transaction


def test_concurrent_read_then_write_transactions_never_see_locked(db_path: Path) -> None:
    """Eight threads with their own connections increment one counter 50 times each."""
    setup = db.connect(db_path)
    setup.execute("CREATE TABLE counter (n INTEGER)")
    setup.execute("INSERT INTO counter VALUES (0)")

    def work() -> None:
        mine = db.connect(db_path, migrate=False)
        for _ in range(50):
            with db.write(mine):
                (n,) = mine.execute("SELECT n FROM counter").fetchone()
                mine.execute("UPDATE counter SET n = ?", [n + 1])

    assert at_once(work, 8) == []
    assert setup.execute("SELECT n FROM counter").fetchone()[0] == 400


def test_database_keeps_one_connection_per_thread(db_path: Path) -> None:
    db.connect(db_path)
    assert db.database(db_path) is db.database(db_path)
    seen: list[Database] = []
    thread = threading.Thread(target=lambda: seen.append(db.database(db_path)))
    thread.start()
    thread.join()
    assert seen[0] is not db.database(db_path)


def _write_and_note(db_path: Path, events: list[str]) -> None:
    mine = db.connect(db_path, migrate=False)
    with db.write(mine):
        mine.execute("CREATE TABLE IF NOT EXISTS notes (n TEXT)")
    events.append("wrote")
    mine.close()


def test_a_waiting_writer_queues_on_the_lock_file_and_goes_when_it_is_released(
    db_path: Path, database: Database
) -> None:
    """Writers wait in the kernel on `<db>-writelock` (woken the moment it is released),
    not in SQLite's busy handler, which sleeps in steps of up to 100 ms."""
    events: list[str] = []
    with open(f"{db_path}-writelock", "ab") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        writer = threading.Thread(target=_write_and_note, args=(db_path, events))
        writer.start()
        writer.join(timeout=1)  # time enough to write, were the lock file not waited for
        events.append("released")
        fcntl.flock(held, fcntl.LOCK_UN)
    writer.join()
    assert events == ["released", "wrote"]


def test_a_stuck_lock_file_holder_delays_a_writer_by_its_patience_never_fails_it(
    db_path: Path, database: Database
) -> None:
    """SQLite's own lock decides who writes; the lock file only orders the waiting."""
    with open(f"{db_path}-writelock", "ab") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with db.patience(database, 20), db.write(database):
            database.execute("CREATE TABLE written (n INTEGER)")
    assert database["written"].exists()


def test_a_writer_out_of_patience_is_told_the_database_is_locked(db_path: Path) -> None:
    first, second = db.connect(db_path), db.connect(db_path, migrate=False)
    locked = pytest.raises(sqlite3.OperationalError, match="locked")
    with db.write(first), db.patience(second, 0), locked, db.write(second):
        pass
    assert pragma(second, "busy_timeout") == db.BUSY_TIMEOUT_MS
    with db.write(second):  # and takes its turn once the first has committed
        second.execute("CREATE TABLE after (n INTEGER)")


def test_a_writer_killed_holding_the_lock_holds_up_no_one(db_path: Path) -> None:
    db.connect(db_path).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_THE_WRITE_LOCK, str(db_path)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    survivor = db.connect(db_path, migrate=False)
    with db.write(survivor):
        survivor.execute("CREATE TABLE after_the_kill (n INTEGER)")
    assert not survivor["uncommitted"].exists()


_HOLD_THE_WRITE_LOCK = """
import sys, time
from server.storage import db
held = db.connect(sys.argv[1], migrate=False)
with db.write(held):
    held.execute("CREATE TABLE uncommitted (n INTEGER)")
    print("holding", flush=True)
    time.sleep(60)
"""
