"""Rate limits counted in the service's SQLite database, shared by all its worker processes.

A sliding limit keeps one `rate_events` row per counted request (its bucket and POSIX time),
pruned to the window on each counted hit; a daily limit keeps a `rate_counts` row per bucket
and UTC date. Each hit is one BEGIN IMMEDIATE transaction, so no two processes check at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

from sqlite_utils import Database

from server.db import database, write
from server.limits.base import Decision, Limit, Usage, decide, utc, utc_day

_WINDOW = "SELECT count(*), min(at) FROM rate_events WHERE bucket = ? AND at > ?"
_NTH_OLDEST = "SELECT at FROM rate_events WHERE bucket = ? AND at > ? ORDER BY at LIMIT 1 OFFSET ?"
_PRUNE = "DELETE FROM rate_events WHERE bucket = ? AND at <= ?"
_ADD = "INSERT INTO rate_events (bucket, at) VALUES (?, ?)"
_DAY_COUNT = "SELECT count FROM rate_counts WHERE bucket = ? AND period = ?"
_INCREMENT = """
    INSERT INTO rate_counts (bucket, period, count) VALUES (?, ?, 1)
    ON CONFLICT (bucket, period) DO UPDATE SET count = count + 1
"""
_PAST_DAYS = "DELETE FROM rate_counts WHERE bucket = ? AND period < ?"


class SqliteLimiter:
    """The `Limiter` over the SQLite database at `path` (migrated: see `server.db.connect`)."""

    def __init__(self, path: str | Path) -> None:
        self.path = path

    def hit(self, limits: Sequence[Limit], now: datetime) -> Decision:
        """Check all `limits` and count the request in each only if every one admits it."""
        if len({limit.bucket for limit in limits}) < len(limits):
            raise ValueError("each rate limit needs its own bucket")
        now = utc(now)
        with write(database(self.path)) as db:
            usages = [_read(db, limit, now) for limit in limits]
            decision = decide(limits, usages, now)
            if decision.allowed:
                for limit, usage in zip(limits, usages, strict=True):
                    _count(db, limit, usage, now)
        return decision


def _read(db: Database, limit: Limit, now: datetime) -> Usage:
    if limit.kind == "utc_day":
        row = db.execute(_DAY_COUNT, (limit.bucket, utc_day(now))).fetchone()
        return Usage(row[0] if row else 0)
    # Cut-off by datetime arithmetic: a request exactly `window` seconds old has left.
    since = (now - timedelta(seconds=limit.window)).timestamp()
    count, oldest = db.execute(_WINDOW, (limit.bucket, since)).fetchone()
    if count > limit.quota:  # the quota was lowered: more than one must leave
        offset = count - limit.quota
        oldest = db.execute(_NTH_OLDEST, (limit.bucket, since, offset)).fetchone()[0]
    return Usage(count, oldest)


def _count(db: Database, limit: Limit, usage: Usage, now: datetime) -> None:
    if limit.kind == "utc_day":
        day = utc_day(now)
        db.execute(_INCREMENT, (limit.bucket, day))
        if usage.count == 0:  # the bucket's first request today: forget earlier days
            db.execute(_PAST_DAYS, (limit.bucket, day))
        return
    db.execute(_PRUNE, (limit.bucket, (now - timedelta(seconds=limit.window)).timestamp()))
    db.execute(_ADD, (limit.bucket, now.timestamp()))
