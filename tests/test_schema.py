"""The one schema: both backends migrated from nothing agree table by table; databases the
former migrations made, on PostgreSQL and on SQLite, are adopted as they are and end where a new
one does; rebuilds run only when a step asked for them."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import psycopg
import pytest

from connector import schema as connector_schema
from connector import store as connector_store
from server import normalize
from server.limits import postgres as postgres_limiter
from server.storage import db, pg, store
from server.storage.dialect import is_postgres
from server.storage.migrations import MIGRATIONS
from tests.helpers.postgres import PostgresServer

FORMER = Path(__file__).parent / "data" / "former_schema"
# The recording tables differ by design: each backend keeps its own (server/storage/schema.py).
RECORDS = ("_sqlite_migrations", "_migrations")
# Only on PostgreSQL: the scheduler's job store, on SQLite a file of its own (`<db>.jobs`).
POSTGRES_ONLY = {"apscheduler_jobs"}


@pytest.fixture
def new_url(postgres: PostgresServer) -> Iterator[str]:
    """A PostgreSQL database with nothing in it."""
    url = postgres.create_database()
    yield url
    pg.release(url)


def affinity(declared: str) -> str:
    """SQLite's type affinity of a declared column type (its rules, in their order)."""
    declared = declared.upper()
    if "INT" in declared:
        return "integer"
    if any(word in declared for word in ("CHAR", "CLOB", "TEXT")):
        return "text"
    if not declared or "BLOB" in declared:
        return "blob"
    if any(word in declared for word in ("REAL", "FLOA", "DOUB")):
        return "real"
    return "numeric"


_POSTGRES_TYPES = {
    "integer": "integer",
    "bigint": "integer",
    "text": "text",
    "character varying": "text",
    "double precision": "real",
    "bytea": "blob",
}
_ON_DELETE = {"a": "NO ACTION", "c": "CASCADE", "n": "SET NULL"}


def described(database: Any) -> dict[str, dict[str, Any]]:
    """Each table (not the recording one) as what both backends must agree on: its columns in
    order (name, type as SQLite's affinity, NOT NULL, default), primary key, unique
    constraints, indexes (name, columns, unique, partial) and foreign keys."""
    describe = _postgres_table if is_postgres(database) else _sqlite_table
    return {t: describe(database, t) for t in store.table_names(database) if t not in RECORDS}


def _sqlite_table(database: Any, table: str) -> dict[str, Any]:
    info = database.execute(f'PRAGMA table_info("{table}")').fetchall()
    key = [name for _, name, *_, pk in sorted(info, key=lambda column: column[5]) if pk]
    indexes = database.execute(f'PRAGMA index_list("{table}")').fetchall()
    columns_of = {
        name: tuple(row[2] for row in database.execute(f'PRAGMA index_info("{name}")'))
        for _, name, *_ in indexes
    }
    keys = database.execute(f'PRAGMA foreign_key_list("{table}")').fetchall()
    return {
        "columns": [
            (name, affinity(kind), bool(notnull) or name in key, default)
            for _, name, kind, notnull, default, _ in info
        ],
        "primary key": key,
        "unique": sorted(columns_of[name] for _, name, _, origin, _ in indexes if origin == "u"),
        "indexes": sorted(
            (name, columns_of[name], bool(unique), bool(partial))
            for _, name, unique, origin, partial in indexes
            if origin == "c"
        ),
        "foreign keys": sorted(
            (
                tuple(row[3] for row in keys if row[0] == number),
                target,
                tuple(row[4] for row in keys if row[0] == number),
                on_delete,
            )
            for number, seq, target, _, _, _, on_delete, _ in keys
            if seq == 0
        ),
    }


def _postgres_table(database: Any, table: str) -> dict[str, Any]:
    info = database.execute(
        "SELECT column_name, data_type, is_nullable = 'NO', column_default "
        "FROM information_schema.columns WHERE table_schema = current_schema() "
        "AND table_name = ? ORDER BY ordinal_position",
        [table],
    ).fetchall()
    indexes = database.execute(
        "SELECT c.relname, i.indisprimary, i.indisunique, i.indpred IS NOT NULL, "
        "EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid "
        "AND k.contype = 'u'), ARRAY(SELECT a.attname FROM unnest(i.indkey) WITH ORDINALITY "
        "AS n (attnum, position) JOIN pg_attribute a ON a.attrelid = i.indrelid "
        "AND a.attnum = n.attnum ORDER BY n.position) "
        "FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = ?::regclass",
        [table],
    ).fetchall()
    keys = database.execute(
        "SELECT ARRAY(SELECT attname FROM unnest(k.conkey) WITH ORDINALITY AS n (attnum, p) "
        "JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = n.attnum ORDER BY p), "
        "k.confrelid::regclass::text, ARRAY(SELECT attname FROM unnest(k.confkey) WITH "
        "ORDINALITY AS n (attnum, p) JOIN pg_attribute a ON a.attrelid = k.confrelid "
        "AND a.attnum = n.attnum ORDER BY p), k.confdeltype "
        "FROM pg_constraint k WHERE k.conrelid = ?::regclass AND k.contype = 'f'",
        [table],
    ).fetchall()
    return {
        "columns": [
            (name, _POSTGRES_TYPES[kind], notnull, _literal(default))
            for name, kind, notnull, default in info
            if name != "rowid"  # SQLite's own, on PostgreSQL a column (dialect.insertion_order)
        ],
        "primary key": next((list(row[5]) for row in indexes if row[1]), []),
        "unique": sorted(tuple(row[5]) for row in indexes if row[4]),
        "indexes": sorted(
            (name, tuple(columns), unique, partial)
            for name, primary, unique, partial, constraint, columns in indexes
            if not primary and not constraint
        ),
        "foreign keys": sorted(
            (tuple(columns), target, tuple(referenced), _ON_DELETE[on_delete])
            for columns, target, referenced, on_delete in keys
        ),
    }


def _literal(default: str | None) -> str | None:
    """A PostgreSQL column default as SQLite states it: `''::text` as `''`."""
    return None if default is None else re.sub(r"::[a-z ]+$", "", default)


def test_both_backends_migrated_from_nothing_have_the_same_tables(
    tmp_path: Path, new_url: str
) -> None:
    """Every table of the service and of the connector: the same columns in the same order,
    of the same kinds, with the same NOT NULLs, defaults, keys and indexes."""
    on_sqlite = described(connector_store.connect(tmp_path / "new.db"))
    on_postgres = described(connector_store.connect(new_url))
    assert set(on_postgres) - set(on_sqlite) == POSTGRES_ONLY
    assert {t: on_postgres[t] for t in on_sqlite} == on_sqlite
    assert {"companies", "employments", "organizations", "connections", "events"} <= set(on_sqlite)


def test_a_new_database_requests_no_rebuild(tmp_path: Path, new_url: str) -> None:
    for target in (tmp_path / "new.db", new_url):
        assert store.rebuilds_requested(db.connect(target)) == []


def _first_newer_step(
    names: list[str] | None = None, last: str = "m026_bigint_counts_and_caps"
) -> str | None:
    """The first step newer than the former databases (they run on adoption): of the
    connector's, or of `names` after `last`."""
    names = connector_schema.MIGRATIONS.names if names is None else names
    newer = names[names.index(last) + 1 :]
    return newer[0] if newer else None


def _first_newer_service_step() -> str | None:
    return _first_newer_step(MIGRATIONS.names, "m012_bigint_credits_and_limits")


def test_a_postgresql_database_of_the_former_migrations_is_adopted_as_it_is(
    postgres: PostgresServer, new_url: str
) -> None:
    """Its recorded steps p001-p007 and c001-c006 stand for the steps of the one lists that
    reach the same schema: none runs again, and it ends as a new database does, to the last
    line pg_dump writes."""
    former = postgres.create_database()
    with psycopg.connect(former, autocommit=True) as conn:
        conn.execute((FORMER / "postgres.sql").read_text().encode())
    adopted = db.connect(former, migrate=False)
    with db.write(adopted):
        ran = [
            MIGRATIONS.apply(adopted, stop_before=_first_newer_service_step()),
            connector_schema.MIGRATIONS.apply(adopted, stop_before=_first_newer_step()),
            postgres_limiter.MIGRATIONS.apply(adopted),
        ]
    assert ran == [[], [], []]
    with db.write(adopted):
        MIGRATIONS.apply(adopted)  # the steps newer than the former ones
        connector_schema.MIGRATIONS.apply(adopted)  # the steps newer than the former ones
    assert connector_schema.MIGRATIONS.pending(adopted) == []
    connector_store.connect(new_url).close()
    postgres_limiter.migrate(new_url)
    assert postgres.schema_dump(former) == postgres.schema_dump(new_url)
    adopted.close()
    pg.release(former)


def test_a_sqlite_database_of_the_former_migrations_is_adopted_as_it_is(tmp_path: Path) -> None:
    """It has every step but those only PostgreSQL needs, which do nothing here; it ends as a
    new file does."""
    former = tmp_path / "former.db"
    with closing(sqlite3.connect(former)) as conn:
        conn.executescript((FORMER / "sqlite.sql").read_text())
    adopted = db.connect(former, migrate=False)
    before = adopted.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    with db.write(adopted):
        newer = _first_newer_step()
        ran = [
            MIGRATIONS.apply(adopted, stop_before=_first_newer_service_step()),
            connector_schema.MIGRATIONS.apply(adopted, stop_before=newer),
        ]
    assert ran == [
        ["m011_transactions_in_insertion_order", "m012_bigint_credits_and_limits"],
        ["m025_scheduler_job_store", "m026_bigint_counts_and_caps"],
    ]
    after = adopted.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
    assert [row for row in after if row not in before] == [
        ("table", "_rebuilds", "CREATE TABLE _rebuilds (name TEXT PRIMARY KEY)"),
        ("index", "sqlite_autoindex__rebuilds_1", None),
    ]
    with db.write(adopted):
        MIGRATIONS.apply(adopted)  # the steps newer than the former ones
        connector_schema.MIGRATIONS.apply(adopted)
    assert described(adopted) == described(connector_store.connect(tmp_path / "new.db"))


def test_a_step_asks_for_the_rebuilds_of_the_data_it_leaves_behind(tmp_path: Path) -> None:
    """A file from before m006: its company keyed by the former rules. Migrating records what
    to compute again; connecting computes it once, keys before the name tables."""
    path = tmp_path / "old.db"
    old = db.connect(path, migrate=False)
    with db.write(old):
        MIGRATIONS.apply(old, stop_before="m006_company_keys_without_partnership_forms")
        old.execute(
            "INSERT INTO companies (guid, name, name_key, aka, updated_at) "
            "VALUES ('A000000000000001', 'Weber & Roth Rechtsanwälte PartG mbB', 'old key', "
            "'Weber Roth SCP', 'x')"
        )
    with db.write(old):
        MIGRATIONS.apply(old)
    assert store.rebuilds_requested(old) == ["company_keys", "company_names"]
    with db.write(old):
        assert store.rebuild(old) == ["company_keys", "company_names"]
    name = "Weber & Roth Rechtsanwälte PartG mbB"
    assert store.companies_by_name_keys(old, [normalize.company_key(name)])
    aliases = old.execute("SELECT alias_key FROM company_aliases").fetchall()
    assert aliases == [(key,) for key in normalize.alias_keys("Weber Roth SCP")]
    assert old.execute("SELECT count(*) FROM company_name_forms").fetchone()[0] > 0
    assert store.rebuilds_requested(old) == [] and store.rebuilds_requested(db.connect(path)) == []
