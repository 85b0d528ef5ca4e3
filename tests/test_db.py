import sqlite3
import threading
from pathlib import Path

import pytest
from sqlite_utils import Database

from server import db
from server.migrations import MIGRATIONS


def pragma(database: Database, name: str) -> object:
    return database.execute(f"PRAGMA {name}").fetchone()[0]


def test_connection_uses_wal_foreign_keys_and_a_busy_timeout(database: Database) -> None:
    assert pragma(database, "journal_mode") == "wal"
    assert pragma(database, "foreign_keys") == 1
    assert pragma(database, "busy_timeout") == db.BUSY_TIMEOUT_MS


def test_migrations_apply_once_and_are_recorded(db_path: Path) -> None:
    first = db.connect(db_path)
    again = db.connect(db_path)
    names = [m.name for m in MIGRATIONS._migrations]
    assert db.schema_version(again) == names
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
    failures: list[BaseException] = []

    def work() -> None:
        mine = db.connect(db_path, migrate=False)
        try:
            for _ in range(50):
                with db.write(mine):
                    (n,) = mine.execute("SELECT n FROM counter").fetchone()
                    mine.execute("UPDATE counter SET n = ?", [n + 1])
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert setup.execute("SELECT n FROM counter").fetchone()[0] == 400


def test_database_keeps_one_connection_per_thread(db_path: Path) -> None:
    db.connect(db_path)
    assert db.database(db_path) is db.database(db_path)
    seen: list[Database] = []
    thread = threading.Thread(target=lambda: seen.append(db.database(db_path)))
    thread.start()
    thread.join()
    assert seen[0] is not db.database(db_path)
