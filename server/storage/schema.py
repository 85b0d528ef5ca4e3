"""Migrations: a component's schema as one ordered list of named steps, each written once for
both backends (where their DDL differs, server/storage/dialect.py says how), and the runner that
applies them and records each by name: on SQLite in `_sqlite_migrations`, as sqlite-utils has
always recorded them, on PostgreSQL in `_migrations`, under MIGRATION_LOCK.

A step describes the schema and never calls the store. One that leaves data to compute again
(keys a normaliser now makes otherwise, new columns computed from a row) asks for a rebuild
(`request_rebuild`), which the store runs once migrating is done (store.py `rebuild`).

A plain description, not SQLAlchemy Core's MetaData with Alembic: the stores keep their own
SQL (through SQLAlchemy Core a statement took 30-40 µs more, against 3.5 µs for a lookup on
SQLite, and an enrich makes six), nothing more is loaded at start (SQLAlchemy's import takes
170 ms), and the names sqlite-utils recorded keep their meaning.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlite_utils.migrations import Migrations as SqliteUtilsMigrations

from server.storage.dialect import is_postgres

# Held while migrating PostgreSQL, so that two processes starting at once apply each step once.
MIGRATION_LOCK = 0x6D696772  # "migr"
SQLITE_RECORDS = SqliteUtilsMigrations.migrations_table  # "_sqlite_migrations"
POSTGRES_RECORDS = "_migrations"
REBUILDS = "_rebuilds"

Step = Callable[[Any], None]


class Migrations:
    """The schema of one component, recorded under its `name`.

    `former` maps names a PostgreSQL database recorded under the set `former_set` before the
    one list to the steps of this list that reach the same schema: a database that has them
    records those steps as applied, without running them (the former rows stay, as what was
    applied then)."""

    def __init__(
        self,
        name: str,
        former: Mapping[str, Sequence[str]] | None = None,
        former_set: str | None = None,
    ) -> None:
        self.name = name
        self.steps: list[tuple[str, Step]] = []
        self.former = dict(former or {})
        self.former_set = former_set or name

    def step(self, function: Step) -> Step:
        """Register `function` as the next step, named after it."""
        self.steps.append((function.__name__, function))
        return function

    @property
    def names(self) -> list[str]:
        """The names of the steps, in order."""
        return [name for name, _ in self.steps]

    def applied(self, db: Any) -> list[str]:
        """The names of the steps applied to `db`, in the list's order."""
        recorded = _recorded(db) if _records_exist(db) else set()
        return [name for name in self.names if (self.name, name) in recorded]

    def pending(self, db: Any) -> list[str]:
        """The names of the steps `db` lacks, in order."""
        done = set(self.applied(db))
        return [name for name in self.names if name not in done]

    def apply(self, db: Any, *, stop_before: str | None = None) -> list[str]:
        """Apply the steps `db` lacks, in order (those before `stop_before`, if named), in the
        caller's write transaction (server/storage/db.py `write`); their names. On PostgreSQL
        under MIGRATION_LOCK, the steps the former names stand for adopted first."""
        if not db.conn.in_transaction:
            raise RuntimeError("migrations are applied inside a write transaction (db.write)")
        _prepare(db, self.name)
        recorded = _recorded(db)
        done = {name for set_name, name in recorded if set_name == self.name}
        done |= self._adopt(db, recorded, done)
        added = []
        for name, step in self.steps:
            if name == stop_before:
                break
            if name not in done:
                step(db)
                _record(db, self.name, name)
                added.append(name)
        return added

    def _adopt(self, db: Any, recorded: set[tuple[str, str]], done: set[str]) -> set[str]:
        """Record as applied, without running them, the steps that reach the schema the former
        names `db` has stand for; their names."""
        reached = [
            step
            for former, steps in self.former.items()
            if (self.former_set, former) in recorded
            for step in steps
        ]
        adopted = [step for step in dict.fromkeys(reached) if step not in done]
        for step in adopted:
            _record(db, self.name, step)
        return set(adopted)


def run(db: Any, statements: str) -> None:
    """Execute `;`-separated statements inside the caller's transaction (executescript would
    commit); empty ones, as a dialect function gives where a backend needs nothing, are
    skipped."""
    for statement in statements.split(";"):
        if statement.strip():
            db.execute(statement)


def request_rebuild(db: Any, rebuild: str, unless_empty: str) -> None:
    """Ask for `rebuild` to run once migrating is done, if table `unless_empty` has rows (a new
    database asks for none)."""
    db.execute(
        f"INSERT INTO {REBUILDS} (name) SELECT ? WHERE EXISTS (SELECT 1 FROM {unless_empty}) "
        "ON CONFLICT (name) DO NOTHING",
        [rebuild],
    )


def _prepare(db: Any, migration_set: str) -> None:
    """Take the migration lock (PostgreSQL), make the tables of records and rebuild requests."""
    if is_postgres(db):
        db.execute("SELECT pg_advisory_xact_lock(?)", [MIGRATION_LOCK])
        db.execute(
            f"CREATE TABLE IF NOT EXISTS {POSTGRES_RECORDS} (migration_set TEXT NOT NULL, "
            "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now(), "
            "PRIMARY KEY (migration_set, name))"
        )
    else:
        SqliteUtilsMigrations(migration_set).ensure_migrations_table(db)
    db.execute(f"CREATE TABLE IF NOT EXISTS {REBUILDS} (name TEXT PRIMARY KEY)")


def _records_exist(db: Any) -> bool:
    if is_postgres(db):
        return db.execute("SELECT to_regclass(?) IS NOT NULL", [POSTGRES_RECORDS]).fetchone()[0]
    sql = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?"
    return db.execute(sql, [SQLITE_RECORDS]).fetchone()[0] == 1


def _recorded(db: Any) -> set[tuple[str, str]]:
    """Every (set, name) recorded as applied."""
    table = POSTGRES_RECORDS if is_postgres(db) else SQLITE_RECORDS
    return set(db.execute(f"SELECT migration_set, name FROM {table}").fetchall())


def _record(db: Any, migration_set: str, name: str) -> None:
    if is_postgres(db):
        sql = f"INSERT INTO {POSTGRES_RECORDS} (migration_set, name) VALUES (?, ?)"
        db.execute(sql, [migration_set, name])
        return
    # As sqlite-utils records one: its applied_at is str() of an aware UTC datetime.
    sql = f"INSERT INTO {SQLITE_RECORDS} (migration_set, name, applied_at) VALUES (?, ?, ?)"
    db.execute(sql, [migration_set, name, str(datetime.now(UTC))])
