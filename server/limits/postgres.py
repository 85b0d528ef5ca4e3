"""Rate limits counted in the service's PostgreSQL database, shared by every machine using it.

The tables are the SQLite limiter's (a row per counted request of a sliding limit, a count per
UTC date of a daily one), made by a migration with the function `rate_limit_hit`
(server/storage/pg_migrations.py p003): it locks the request's buckets, reads every limit and counts
the request in all of them only when all admit it, in one statement that is its own
transaction, as Redis's Lua script. It does not queue behind the service's other writers. The
connection is the thread's pooled one (server/storage/pg.py), given back at the end of the request.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from server.limits.base import Decision, Limit, Usage, decide, utc, utc_day, window_start
from server.storage import pg

_HIT = "SELECT counts, oldests FROM rate_limit_hit(?, ?, ?, ?, ?)"
_DAY_COUNT = "SELECT count FROM rate_counts WHERE bucket = ? AND period = ?"
_WINDOW_COUNT = "SELECT count(*) FROM rate_events WHERE bucket = ? AND at > ?"


class PostgresLimiter:
    """The `Limiter` over the PostgreSQL database at `url` (migrated: its tables and function
    come with the service's schema)."""

    def __init__(self, url: str) -> None:
        self.url = url

    def hit(self, limits: Sequence[Limit], now: datetime) -> Decision:
        """Check all `limits` and count the request in each only if every one admits it."""
        if len({limit.bucket for limit in limits}) < len(limits):
            raise ValueError("each rate limit needs its own bucket")
        now = utc(now)
        arguments = (
            [limit.bucket for limit in limits],
            [limit.kind for limit in limits],
            [limit.quota for limit in limits],
            [_period(limit, now) for limit in limits],
            now.timestamp(),
        )
        counts, oldests = self._db().execute(_HIT, arguments).fetchone()
        usages = [Usage(count, oldest) for count, oldest in zip(counts, oldests, strict=True)]
        return decide(limits, usages, now)

    def count(self, limit: Limit, now: datetime) -> int:
        """How many requests `limit` counts at `now`, counting none."""
        now = utc(now)
        if limit.kind == "utc_day":
            row = self._db().execute(_DAY_COUNT, [limit.bucket, utc_day(now)]).fetchone()
        else:
            row = (
                self._db()
                .execute(_WINDOW_COUNT, [limit.bucket, window_start(limit, now)])
                .fetchone()
            )
        return int(row[0]) if row else 0

    def _db(self) -> pg.PostgresDatabase:
        """This thread's pooled connection, in autocommit: each statement its own transaction."""
        return pg.database(self.url)


def _period(limit: Limit, now: datetime) -> str:
    """What `rate_limit_hit` takes as a limit's period: the UTC date, or the window's cut-off
    as text (repr: the float exactly, as PostgreSQL reads it back)."""
    return utc_day(now) if limit.kind == "utc_day" else repr(window_start(limit, now))
