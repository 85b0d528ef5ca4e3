"""Moving a SQLite database into an empty PostgreSQL database (`contactdata db move`): every
table of the file, and of the files beside it that another component names, in one
transaction that is verified by row counts before it commits. SQL is in server/storage/store.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from sqlite_utils import Database

from server import config
from server.storage import db, store
from server.storage.migrations import MIGRATIONS
from server.storage.schema import Migrations

Table = tuple[Database, str, list[str]]  # the source database, the table, its columns


class MoveRefused(Exception):
    """The move cannot be done as asked (nothing was written), with what to do instead."""


@dataclass(frozen=True)
class Schema:
    """Another component's tables (the connector's): its migrations, which a source must have
    applied all of or none of and which the target is migrated with, and the suffixes of
    SQLite files beside the database whose tables move too (`.jobs`)."""

    migrations: Migrations
    companions: tuple[str, ...] = ()


def move(
    source: Path,
    target: str,
    schemas: Sequence[Schema] = (),
    progress: Callable[[str, int], None] = lambda _table, _n: None,
) -> dict[str, int]:
    """Copy the SQLite database at `source` into the PostgreSQL database at `target`, which
    is migrated first and must hold no rows; the rows of each table moved. Raises MoveRefused
    before writing anything, or rolls everything back when a count does not match."""
    if not config.is_url(target):
        raise MoveRefused(f"the target must be a postgresql:// URL, not {target!r}")
    with ExitStack() as stack:
        sources = [stack.enter_context(_reading(path)) for path in _files(source, schemas)]
        _check_migrated(sources[0], source, schemas)
        moved = stack.enter_context(closing(_empty_target(target, schemas)))
        tables = _tables(sources, moved)
        expected = {table: store.row_count(from_db, table) for from_db, table, _ in tables}
        return _copy(tables, moved, expected, progress)


def _files(source: Path, schemas: Sequence[Schema]) -> list[Path]:
    """The database file, then each companion file that exists."""
    if not source.is_file():
        raise MoveRefused(f"no SQLite database at {source}")
    beside = [Path(f"{source}{suffix}") for s in schemas for suffix in s.companions]
    return [source, *(path for path in beside if path.is_file())]


@contextmanager
def _reading(path: Path) -> Iterator[Database]:
    """A SQLite file opened in one read transaction (a snapshot however long the copy)."""
    source_db = db.connect(path, migrate=False)
    source_db.conn.execute("BEGIN")
    try:
        yield source_db
    finally:
        source_db.conn.execute("ROLLBACK")
        source_db.close()


def _check_migrated(source_db: Database, source: Path, schemas: Sequence[Schema]) -> None:
    """Refuse a source whose migrations are not those of this code: its tables would not be
    the target's. A component's set may be missing as a whole (it was never used)."""
    for migrations, required in ((MIGRATIONS, True), *((s.migrations, False) for s in schemas)):
        applied = migrations.applied(source_db)
        pending = migrations.pending(source_db)
        if pending and (applied or required):
            raise MoveRefused(
                f"{source} lacks migrations {', '.join(pending)} of set {migrations.name!r}: "
                f"run a command on it with this version first (`contactdata connection list "
                f"--db {source}`), then move it"
            )


def _empty_target(target: str, schemas: Sequence[Schema]) -> Database:
    """The target, migrated to every schema; refused unless it holds no rows."""
    try:
        target_db = db.connect(target)
    except db.DB_ERRORS as error:
        raise MoveRefused(f"cannot open {_safe(target)}: {error}") from None
    for schema in schemas:
        db.apply_migrations(target_db, schema.migrations)
    filled = [t for t in store.table_names(target_db) if store.row_count(target_db, t)]
    if filled:
        target_db.close()
        raise MoveRefused(
            f"{_safe(target)} is not empty (rows in {', '.join(filled)}): move into a new "
            "database (createdb NAME), or drop this one's tables first"
        )
    return target_db


def _safe(url: str) -> str:
    """A URL as it may be shown: without its password."""
    scheme, _, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    return f"{scheme}://{credentials.split(':')[0]}{at}{host}" if at else url


def _tables(sources: list[Database], target_db: Database) -> list[Table]:
    """What to copy: each source table with its columns, all of which the target must have."""
    tables: list[Table] = []
    missing: list[str] = []
    for source_db in sources:
        for table in store.table_names(source_db):
            columns = store.column_names(source_db, table)
            known = set(store.column_names(target_db, table))
            missing += [f"{table}.{c}" for c in columns if c not in known] if known else [table]
            tables.append((source_db, table, columns))
    if missing:
        raise MoveRefused(f"the target has no place for {', '.join(missing)}; nothing moved")
    return tables


def _copy(
    tables: list[Table],
    target_db: Database,
    expected: dict[str, int],
    progress: Callable[[str, int], None],
) -> dict[str, int]:
    """Copy every table in one transaction, without foreign keys and secondary indexes until
    the rows are in (adding a key back checks every row at once); verify the counts."""
    names = [table for _, table, _ in tables]
    with db.write(target_db):
        dropped = store.drop_foreign_keys(target_db, names)
        dropped = store.drop_secondary_indexes(target_db, names) + dropped
        for source_db, table, columns in tables:
            store.copy_rows(target_db, table, columns, store.table_rows(source_db, table, columns))
            progress(table, expected[table])
        try:
            store.restore(target_db, dropped)
        except psycopg.errors.IntegrityError as error:  # a foreign key the rows break
            raise MoveRefused(f"the source's rows break the target's schema: {error}") from None
        store.reset_identities(target_db)
        moved = {table: store.row_count(target_db, table) for table in names}
        if moved != expected:
            wrong = [
                f"{t}: {expected[t]} read, {moved[t]} written"
                for t in names
                if moved[t] != expected[t]
            ]
            raise MoveRefused(f"counts differ, nothing kept: {'; '.join(wrong)}")
    return moved


def afterwards(source: Path) -> list[str]:
    """What to do once moved: the secret keys were hashed with, and the SQLite file."""
    if config.load()["KEY_SECRET"]:
        secret = "keep CONTACTDATA_KEY_SECRET as it is, on every machine"
    else:
        secret = f"set CONTACTDATA_KEY_SECRET=$(cat {source}.secret) on every machine"
    return [
        f"API keys and sealed secrets need the server secret they were made with: {secret}.",
        f"Point CONTACTDATA_DB at the new database; keep {source} (unused now) as a backup.",
    ]
