"""The connection: SQLite's pragmas, write transactions, and migrating on either backend.

Every other module gets its `Database` from `connect()`; SQL itself lives in `store.py`.
Writers of one SQLite file queue on a lock file beside it (`<db>-writelock`, see `write`);
PostgreSQL's writers do not queue at all (server/storage/pg.py).
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import psycopg
from sqlite_utils import Database

from server import config
from server.storage import pg, store
from server.storage.dialect import is_postgres
from server.storage.migrations import MIGRATIONS
from server.storage.schema import Migrations

BUSY_TIMEOUT_MS = 10_000
CACHE_SIZE = -65536  # KiB when negative: 64 MB
BULK_CACHE_MB = 1024
BULK_SORT_CACHE_MB = 16
BULK_SORT_THREADS = min(os.cpu_count() or 1, 4)
# PostgreSQL's memory for each index build in `sorting_in_threads`: enough to sort a million
# employments' keys in memory, and for 32 MB a participant, two parallel workers.
BULK_SORT_MEMORY_MB = 256
WRITER_LOCK_SUFFIX = "-writelock"
_local = threading.local()
# What a database that is locked too long or out of reach raises, on either backend.
DB_ERRORS = (sqlite3.OperationalError, psycopg.OperationalError)
# Each connection's lock file, opened by the process using it (None: a database in memory).
_writer_files: weakref.WeakKeyDictionary[Database, tuple[int, BinaryIO | None]] = (
    weakref.WeakKeyDictionary()
)


def connect(path: str | Path, *, migrate: bool = True) -> Database:
    """Open the database at `path`, migrated (`apply_migrations`) unless `migrate` is False:
    a SQLite file with WAL, a busy timeout, foreign keys and secure delete, or, for a
    `postgresql://` URL, a PostgreSQL database (server/storage/pg.py)."""
    db = pg.connect(str(path)) if config.is_url(path) else _open(path)
    if migrate:
        apply_migrations(db, MIGRATIONS)  # type: ignore[arg-type]
    return db  # type: ignore[return-value]


def _open(path: str | Path) -> Database:
    """The SQLite file at `path`, with the pragmas every connection has."""
    conn = sqlite3.connect(str(path), isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    _use_wal(conn)
    # NORMAL in WAL mode survives a killed process; only a power cut may lose the last commits.
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    # Deleted rows are overwritten with zeros, not left in free space (a build's default may
    # be OFF): an erased person's data leaves the file (server/suppression.py).
    conn.execute("PRAGMA secure_delete = ON")
    conn.execute("PRAGMA temp_store = MEMORY")
    conn.execute(f"PRAGMA cache_size = {CACHE_SIZE}")
    return Database(conn)


def _use_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL (once per file; a no-op after). The switch needs the file to
    itself and SQLite answers "database is locked" at once, without the busy handler, while
    another connection opening the new file switches it too (a server and a worker started
    together): try again until the busy timeout, as a writer would wait."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def database(path: str | Path) -> Database:
    """This thread's open connection to `path` (made on first use, never migrated here).

    A SQLite connection belongs to the thread that opened it, and a forked worker must not
    reuse its parent's, so connections are kept per thread and process.
    """
    if config.is_url(path):
        return pg.database(str(path))  # type: ignore[return-value]
    cache: dict[tuple[int, str], Database] = _local.__dict__.setdefault("connections", {})
    key = (os.getpid(), str(path))
    if key not in cache:
        cache[key] = connect(path, migrate=False)
    return cache[key]


def done(path: str | Path) -> None:
    """This thread is done with its connection to `path` for now (the end of a request): a
    PostgreSQL one goes back to its pool; a SQLite one, the thread's own, stays open."""
    if config.is_url(path):
        pg.done(str(path))


@contextmanager
def write(db: Database) -> Iterator[Database]:
    """A write transaction started with BEGIN IMMEDIATE (nested calls join the outer one).

    On PostgreSQL it is the facade's (`begin`: a plain BEGIN, sent with the transaction's
    first statement): write transactions run side by side, each correct by itself
    (server/storage/pg.py says how). SQLite has one writer at a time, and a deferred BEGIN
    that reads and then writes can fail with "database is locked" under WAL even with a busy
    timeout; taking the write lock up front makes waiting work.

    Before BEGIN, the writer takes an exclusive flock on `<db>-writelock`, so writers waiting
    for each other sleep in the kernel and the next one wakes the moment the lock is released,
    instead of polling in SQLite's busy handler (sleeps of 1 to 100 ms). The file only orders
    the waiting: SQLite's lock still decides, the kernel drops a killed process's flock, and
    a writer waits for the file no longer than its busy timeout (`patience`).
    """
    if db.conn.in_transaction:
        yield db
        return
    queued = _begin(db)
    try:
        try:
            yield db
        except BaseException:
            _end(db, commit=False)
            raise
        _end(db, commit=True)
    finally:
        if queued is not None:
            fcntl.flock(queued, fcntl.LOCK_UN)


def _begin(db: Database) -> BinaryIO | None:
    """Begin a write transaction; the lock file, if it was taken (SQLite)."""
    if is_postgres(db):
        db.conn.begin()  # type: ignore[attr-defined]
        return None
    return _begin_immediate(db)


def _end(db: Database, *, commit: bool) -> None:
    """COMMIT or ROLLBACK the write transaction (on PostgreSQL the facade's, which sends
    nothing for a transaction that sent nothing)."""
    if not is_postgres(db):
        db.conn.execute("COMMIT" if commit else "ROLLBACK")
    elif commit:
        db.conn.commit()
    else:
        db.conn.rollback()


@contextmanager
def write_at_once(db: Database) -> Iterator[Database]:
    """A write PostgreSQL is sent at once: one statement, with those sent before it by
    `send_with_next` (server/storage/pg.py), in one round trip. In autocommit that is a transaction
    by itself, with no BEGIN and COMMIT to send; else it is part of the caller's. On SQLite,
    `write`."""
    if is_postgres(db):
        yield db
        return
    with write(db):
        yield db


def _begin_immediate(db: Database) -> BinaryIO | None:
    """SQLite: BEGIN IMMEDIATE after this writer's turn at the lock file; the file, if it was
    taken."""
    lock_file = _writer_file(db)
    if lock_file is None:
        db.conn.execute("BEGIN IMMEDIATE")
        return None
    patience_ms = db.execute("PRAGMA busy_timeout").fetchone()[0]
    if not _take(lock_file, patience_ms / 1000):
        # Out of patience: the holder may be past its COMMIT; SQLite's lock says, at once.
        db.execute("PRAGMA busy_timeout = 0")
        try:
            db.conn.execute("BEGIN IMMEDIATE")
        finally:
            db.execute(f"PRAGMA busy_timeout = {int(patience_ms)}")
        return None
    try:
        db.conn.execute("BEGIN IMMEDIATE")
    except BaseException:
        fcntl.flock(lock_file, fcntl.LOCK_UN)
        raise
    return lock_file


def _writer_file(db: Database) -> BinaryIO | None:
    """The open `<db>-writelock` of this SQLite connection in this process (None: no file)."""
    opened = _writer_files.get(db)
    if opened is None or opened[0] != os.getpid():
        opened = (os.getpid(), _open_writer_file(db))
        _writer_files[db] = opened
    return opened[1]


def _open_writer_file(db: Database) -> BinaryIO | None:
    path = next((row[2] for row in db.execute("PRAGMA database_list") if row[1] == "main"), "")
    if not path:  # in memory: one connection, no one to queue with
        return None
    try:
        return open(f"{path}{WRITER_LOCK_SUFFIX}", "ab")  # kept open: closed with the connection
    except OSError:  # a read-only directory: SQLite's busy handler alone
        return None


def _take(lock_file: BinaryIO, seconds: float) -> bool:
    """Lock `lock_file` exclusively, waiting at most `seconds`; whether it was locked."""
    try:
        fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        pass
    return seconds > 0 and _take_waiting(lock_file, seconds)


def _take_waiting(lock_file: BinaryIO, seconds: float) -> bool:
    """A blocking flock in a helper thread (the kernel has no flock with a timeout); this
    thread waits for it at most `seconds`. A helper that gets the lock too late unlocks it."""
    taken, guard, late = threading.Event(), threading.Lock(), []

    def block() -> None:
        fcntl.flock(lock_file, fcntl.LOCK_EX)
        with guard:
            if late:
                fcntl.flock(lock_file, fcntl.LOCK_UN)
            else:
                taken.set()

    threading.Thread(target=block, name="writelock", daemon=True).start()
    if taken.wait(seconds):
        return True
    with guard:
        late.append(True)
        return taken.is_set()


@contextmanager
def bulk_write(db: Database) -> Iterator[Database]:
    """A write transaction for loading many rows, with a BULK_CACHE_MB page cache.

    When no other connection has the database open it goes through a rollback journal, not
    the WAL: pages the load adds to the file are written once instead of twice (to the WAL,
    then at the checkpoint), and the journal, holding the few pages that were there before,
    undoes a killed load when the database is next opened. WAL mode is back afterwards.

    CHECK constraints are not evaluated inside: the caller validates its rows. (A CHECK with
    `IN` and three or more values builds a lookup table at every statement run, that is for
    every row of an executemany: more than half the time of inserting a contact.) Nor are
    foreign keys: the caller writes only rows whose references exist (two index lookups per
    employment, a tenth of its insert).

    Sorts, as for CREATE INDEX in `sorting_in_threads`, may use BULK_SORT_THREADS threads;
    they need temporary files (temp_store is FILE inside, which drops TEMP tables).

    On PostgreSQL a write transaction (its foreign keys are dropped by the caller,
    store.drop_foreign_keys).
    """
    if is_postgres(db):
        with write(db):
            yield db
        return
    journaled = _leave_wal(db)
    temp_store = db.execute("PRAGMA temp_store").fetchone()[0]
    foreign_keys = db.execute("PRAGMA foreign_keys").fetchone()[0]
    db.execute(f"PRAGMA cache_size = {-BULK_CACHE_MB * 1024}")
    db.execute("PRAGMA ignore_check_constraints = ON")
    db.execute("PRAGMA temp_store = FILE")
    db.execute(f"PRAGMA threads = {BULK_SORT_THREADS}")
    db.execute("PRAGMA foreign_keys = OFF")  # outside the transaction: inside it, a no-op
    try:
        with write(db):
            yield db
    finally:
        db.execute(f"PRAGMA foreign_keys = {foreign_keys}")
        db.execute("PRAGMA threads = 0")
        db.execute(f"PRAGMA temp_store = {temp_store}")
        db.execute("PRAGMA ignore_check_constraints = OFF")
        db.execute(f"PRAGMA cache_size = {CACHE_SIZE}")
        if journaled:
            db.execute("PRAGMA journal_mode = WAL")


@contextmanager
def sorting_in_threads(db: Database) -> Iterator[Database]:
    """Inside bulk_write, for building indexes: a BULK_SORT_CACHE_MB page cache, so that the
    sorter splits the keys into runs it sorts on BULK_SORT_THREADS threads (it uses threads
    only for keys beyond its memory, which is the cache's size). The load's pages leave the
    cache for the file meanwhile, instead of at the commit. On PostgreSQL, BULK_SORT_MEMORY_MB
    of maintenance_work_mem until the transaction ends, for sorts in memory and in parallel."""
    if is_postgres(db):
        db.execute(f"SET LOCAL maintenance_work_mem = '{BULK_SORT_MEMORY_MB}MB'")
        yield db
        return
    db.execute(f"PRAGMA cache_size = {-BULK_SORT_CACHE_MB * 1024}")
    try:
        yield db
    finally:
        db.execute(f"PRAGMA cache_size = {-BULK_CACHE_MB * 1024}")


def _leave_wal(db: Database) -> bool:
    """Switch to a rollback journal unless another connection has the database open."""
    if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        return False
    try:
        with patience(db, 0):
            return db.execute("PRAGMA journal_mode = DELETE").fetchone()[0] == "delete"
    except sqlite3.OperationalError:  # "database is locked": another connection reads it
        return False


@contextmanager
def patience(db: Database, milliseconds: int) -> Iterator[Database]:
    """Inside the block, wait at most `milliseconds` for a lock (instead of BUSY_TIMEOUT_MS)."""
    set_patience(db, milliseconds)
    try:
        yield db
    finally:
        set_patience(db, BUSY_TIMEOUT_MS)


def set_patience(db: Database, milliseconds: int) -> None:
    """From now on wait at most `milliseconds` for a lock: SQLite's busy timeout, PostgreSQL's
    lock timeout (server/storage/pg.py `Connection.set_lock_timeout`)."""
    if is_postgres(db):
        db.conn.set_lock_timeout(int(milliseconds))  # type: ignore[attr-defined]
    else:
        db.execute(f"PRAGMA busy_timeout = {int(milliseconds)}")


def apply_migrations(db: Database, migrations: Migrations) -> list[str]:
    """Apply a component's `migrations` (the service's, then the connector's) that `db` lacks,
    in one write transaction, then run the rebuilds they requested; their names."""
    with write(db):
        added = migrations.apply(db)
    if store.rebuilds_requested(db):
        with write(db):
            store.rebuild(db)
    return added


def schema_version(db: Database) -> list[str]:
    """Names of the service's migrations applied to `db`, in order."""
    return MIGRATIONS.applied(db)
