"""Rate limits counted in a SQLite file of their own, shared by all the worker processes.

The counts live beside the service's database (`<db>.limits`), not in it: every request
writes them, and a long write there (an import) must not hold up the gate. A sliding limit
keeps one `rate_events` row per counted request (its bucket and POSIX time), pruned to the
window on each counted hit, and in `rate_windows` how many rows its bucket keeps: the window's
count is that less the few rows that left it since the last prune, so reading it costs the
same at 5 requests a second as at 5,000 (counting the window's rows grew with the rate). A
daily limit keeps a `rate_counts` row per bucket and UTC date. Each hit is one BEGIN
IMMEDIATE transaction, so no two processes check at once.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from sqlite_utils import Database

from server.limits.base import Decision, Limit, Usage, decide, utc, utc_day, window_start
from server.storage.db import connect, write

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS rate_events (bucket TEXT NOT NULL, at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS rate_events_bucket ON rate_events (bucket, at)",
    "CREATE TABLE IF NOT EXISTS rate_counts (bucket TEXT NOT NULL, period TEXT NOT NULL, "
    "count INTEGER NOT NULL, PRIMARY KEY (bucket, period)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS rate_windows (bucket TEXT PRIMARY KEY, "
    "count INTEGER NOT NULL) WITHOUT ROWID",
    # A file from before rate_windows: its buckets' rows counted once (each later change of
    # rate_events changes rate_windows in the same transaction).
    "INSERT INTO rate_windows (bucket, count) SELECT bucket, count(*) FROM rate_events "
    "GROUP BY bucket ON CONFLICT (bucket) DO NOTHING",
)
# The rows a bucket keeps, the rows of those that left the window, the oldest still in it.
_WINDOW = """
    SELECT coalesce((SELECT count FROM rate_windows WHERE bucket = ?), 0),
           (SELECT count(*) FROM rate_events WHERE bucket = ? AND at <= ?),
           (SELECT min(at) FROM rate_events WHERE bucket = ? AND at > ?)
"""
_NTH_OLDEST = "SELECT at FROM rate_events WHERE bucket = ? AND at > ? ORDER BY at LIMIT 1 OFFSET ?"
_PRUNE = "DELETE FROM rate_events WHERE bucket = ? AND at <= ?"
_ADD = "INSERT INTO rate_events (bucket, at) VALUES (?, ?)"
_KEPT = """
    INSERT INTO rate_windows (bucket, count) VALUES (?, 1)
    ON CONFLICT (bucket) DO UPDATE SET count = rate_windows.count + 1 - ?
"""
_DAY_COUNT = "SELECT count FROM rate_counts WHERE bucket = ? AND period = ?"
_INCREMENT = """
    INSERT INTO rate_counts (bucket, period, count) VALUES (?, ?, 1)
    ON CONFLICT (bucket, period) DO UPDATE SET count = rate_counts.count + 1
"""
_PAST_DAYS = "DELETE FROM rate_counts WHERE bucket = ? AND period < ?"


class SqliteLimiter:
    """The `Limiter` over the SQLite file at `path` (its tables are made on first use)."""

    def __init__(self, path: str | Path) -> None:
        self.path = path
        self._local = threading.local()

    def _db(self) -> Database:
        """This thread's connection; a forked worker opens its own."""
        opened: tuple[int, Database] | None = getattr(self._local, "opened", None)
        if opened is None or opened[0] != os.getpid():
            db = connect(self.path, migrate=False)
            with write(db):
                for statement in _SCHEMA:
                    db.execute(statement)
            self._local.opened = opened = (os.getpid(), db)
        return opened[1]

    def hit(self, limits: Sequence[Limit], now: datetime) -> Decision:
        """Check all `limits` and count the request in each only if every one admits it."""
        if len({limit.bucket for limit in limits}) < len(limits):
            raise ValueError("each rate limit needs its own bucket")
        now = utc(now)
        with write(self._db()) as db:
            found = [_read(db, limit, now) for limit in limits]
            decision = decide(limits, [usage for usage, _ in found], now)
            if decision.allowed:
                for limit, (usage, left) in zip(limits, found, strict=True):
                    _count(db, limit, usage, left, now)
        return decision

    def count(self, limit: Limit, now: datetime) -> int:
        """How many requests `limit` counts at `now`, counting none."""
        return _read(self._db(), limit, utc(now))[0].count


def _read(db: Database, limit: Limit, now: datetime) -> tuple[Usage, int]:
    """The limit's usage, and how many of its bucket's rows left the window (none for a
    daily limit): what counting the request prunes."""
    if limit.kind == "utc_day":
        row = db.execute(_DAY_COUNT, (limit.bucket, utc_day(now))).fetchone()
        return Usage(row[0] if row else 0), 0
    since = window_start(limit, now)
    bucket = limit.bucket
    kept, left, oldest = db.execute(_WINDOW, (bucket, bucket, since, bucket, since)).fetchone()
    count = kept - left
    if count > limit.quota:  # the quota was lowered: more than one must leave
        offset = count - limit.quota
        oldest = db.execute(_NTH_OLDEST, (bucket, since, offset)).fetchone()[0]
    return Usage(count, oldest), left


def _count(db: Database, limit: Limit, usage: Usage, left: int, now: datetime) -> None:
    if limit.kind == "utc_day":
        day = utc_day(now)
        db.execute(_INCREMENT, (limit.bucket, day))
        if usage.count == 0:  # the bucket's first request today: forget earlier days
            db.execute(_PAST_DAYS, (limit.bucket, day))
        return
    if left:
        db.execute(_PRUNE, (limit.bucket, window_start(limit, now)))
    db.execute(_ADD, (limit.bucket, now.timestamp()))
    db.execute(_KEPT, (limit.bucket, left))
