"""Rate limits counted in the service's PostgreSQL database, shared by every machine using it.

The tables are the SQLite limiter's (a row per counted request of a sliding limit, a count per
UTC date of a daily one), made by this limiter's own migrations (set "rate_limits", applied on
first use) with the function `rate_limit_hit`: it locks the request's buckets, reads every
limit and counts the request in all of them only when all admit it, in one statement that is
its own transaction, as Redis's Lua script. It does not queue behind the service's other
writers. The connection is the thread's pooled one (server/storage/pg.py), given back at the
end of the request.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import closing
from datetime import datetime

from server.limits.base import Decision, Limit, Usage, decide, utc, utc_day, window_start
from server.storage import pg
from server.storage.db import write
from server.storage.schema import Migrations

# The first key of the two-key advisory locks a rate-limit bucket is held under (its second is
# the bucket's hashtext): apart from the one-key DATASET_LOCK and MIGRATION_LOCK.
RATE_LOCK = 0x72617465  # "rate"
# A database migrated before this limiter had its own set made its tables with the service's
# steps p003 and p007.
MIGRATIONS = Migrations(
    "rate_limits",
    former={
        "p003_rate_limits": ("r001_rate_limits",),
        "p007_bigint_credits_limits_and_counts": ("r002_bigint_quotas_and_counts",),
    },
    former_set="contactdata",
)

_HIT = "SELECT counts, oldests FROM rate_limit_hit(?, ?, ?, ?, ?)"
_DAY_COUNT = "SELECT count FROM rate_counts WHERE bucket = ? AND period = ?"
_WINDOW_COUNT = "SELECT count(*) FROM rate_events WHERE bucket = ? AND at > ?"


class PostgresLimiter:
    """The `Limiter` over the PostgreSQL database at `url` (its tables and function are made
    on first use, by `MIGRATIONS`)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._migrated = threading.Event()

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
        if not self._migrated.is_set():
            migrate(self.url)
            self._migrated.set()
        return pg.database(self.url)


def migrate(url: str) -> list[str]:
    """Apply the limiter's migrations the database at `url` lacks, on a connection of their
    own; their names."""
    with closing(pg.connect(url)) as db, write(db):  # type: ignore[type-var]
        return MIGRATIONS.apply(db)


def _period(limit: Limit, now: datetime) -> str:
    """What `rate_limit_hit` takes as a limit's period: the UTC date, or the window's cut-off
    as text (repr: the float exactly, as PostgreSQL reads it back)."""
    return utc_day(now) if limit.kind == "utc_day" else repr(window_start(limit, now))


@MIGRATIONS.step
def r001_rate_limits(db: pg.PostgresDatabase) -> None:
    """The limiter's tables, kept if the SQLite limiter made them here on first use, and
    `rate_limit_hit`, which checks and counts a request in one statement."""
    for statement in _RATE_LIMITS:
        db.execute(statement)
    db.conn.raw.execute(_rate_limit_hit("INTEGER"))


# As server/limits/sqlite.py's: a row per counted request of a sliding limit, how many rows
# its bucket keeps, and a count per bucket and UTC date of a daily limit.
_RATE_LIMITS = (
    "CREATE TABLE IF NOT EXISTS rate_events (bucket TEXT NOT NULL, at DOUBLE PRECISION NOT NULL)",
    "CREATE INDEX IF NOT EXISTS rate_events_bucket ON rate_events (bucket, at)",
    """CREATE TABLE IF NOT EXISTS rate_counts (
    bucket TEXT NOT NULL,
    period TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (bucket, period)
)""",
    "CREATE TABLE IF NOT EXISTS rate_windows (bucket TEXT PRIMARY KEY, count INTEGER NOT NULL)",
    "INSERT INTO rate_windows (bucket, count) SELECT bucket, count(*) FROM rate_events "
    "GROUP BY bucket ON CONFLICT (bucket) DO NOTHING",
)


@MIGRATIONS.step
def r002_bigint_quotas_and_counts(db: pg.PostgresDatabase) -> None:
    """BIGINT quotas and counts, as SQLite's INTEGER: an organization's limits go up to
    MAX_CREDITS (10**12, server/credits.py), past PostgreSQL's INTEGER (2**31 - 1)."""
    db.execute("ALTER TABLE rate_counts ALTER COLUMN count TYPE BIGINT")
    db.execute("ALTER TABLE rate_windows ALTER COLUMN count TYPE BIGINT")
    db.execute("DROP FUNCTION rate_limit_hit(TEXT[], TEXT[], INTEGER[], TEXT[], DOUBLE PRECISION)")
    db.conn.raw.execute(_rate_limit_hit("BIGINT"))


# One limit per array position: its bucket, kind ('sliding' or 'utc_day'), quota and period
# (a sliding window's cut-off, a POSIX time as text: requests at or before it have left; or
# the UTC date). Each bucket is locked (RATE_LOCK, hashtext) in the order of the lock keys, so
# hits on the same buckets queue and none deadlock; no other lock is taken.
# Returns each limit's count before the request and, for a sliding one, the time of the
# request whose leaving admits one more; counts the request at `moment` only if all admit it.
def _rate_limit_hit(quota_type: str) -> str:
    """The statement that creates `rate_limit_hit`, its quotas of `quota_type` (r001's
    INTEGER, r002's BIGINT)."""
    return f"""
CREATE FUNCTION rate_limit_hit(
    buckets TEXT[], kinds TEXT[], quotas {quota_type}[], periods TEXT[], moment DOUBLE PRECISION,
    OUT counts BIGINT[], OUT oldests DOUBLE PRECISION[]
) LANGUAGE plpgsql AS $$
DECLARE
    lock_key INTEGER;
    lefts BIGINT[] := '{{}}';
    found_count BIGINT;
    found_left BIGINT;
    found_oldest DOUBLE PRECISION;
    cut_off DOUBLE PRECISION;
    admitted BOOLEAN := true;
BEGIN
    counts := '{{}}';
    oldests := '{{}}';
    FOR lock_key IN SELECT DISTINCT hashtext(b) FROM unnest(buckets) AS b ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock({RATE_LOCK}, lock_key);
    END LOOP;
    FOR i IN 1 .. cardinality(buckets) LOOP
        found_left := 0;
        found_oldest := NULL;
        IF kinds[i] = 'utc_day' THEN
            SELECT c.count INTO found_count FROM rate_counts AS c
            WHERE c.bucket = buckets[i] AND c.period = periods[i];
            found_count := coalesce(found_count, 0);
        ELSE
            cut_off := periods[i]::DOUBLE PRECISION;
            SELECT coalesce((SELECT w.count FROM rate_windows AS w WHERE w.bucket = buckets[i]), 0),
                   (SELECT count(*) FROM rate_events AS e
                    WHERE e.bucket = buckets[i] AND e.at <= cut_off)
            INTO found_count, found_left;
            found_count := found_count - found_left;
            -- Over a lowered quota, more than the oldest must leave.
            SELECT e.at INTO found_oldest FROM rate_events AS e
            WHERE e.bucket = buckets[i] AND e.at > cut_off
            ORDER BY e.at OFFSET greatest(found_count - quotas[i], 0) LIMIT 1;
        END IF;
        counts[i] := found_count;
        oldests[i] := found_oldest;
        lefts[i] := found_left;
        admitted := admitted AND found_count < quotas[i];
    END LOOP;
    IF NOT admitted THEN
        RETURN;
    END IF;
    FOR i IN 1 .. cardinality(buckets) LOOP
        IF kinds[i] = 'utc_day' THEN
            IF counts[i] = 0 THEN  -- the bucket's first request of the day: forget earlier days
                DELETE FROM rate_counts WHERE bucket = buckets[i] AND period < periods[i];
            END IF;
            INSERT INTO rate_counts (bucket, period, count) VALUES (buckets[i], periods[i], 1)
            ON CONFLICT (bucket, period) DO UPDATE SET count = rate_counts.count + 1;
        ELSE
            IF lefts[i] > 0 THEN
                DELETE FROM rate_events
                WHERE bucket = buckets[i] AND at <= periods[i]::DOUBLE PRECISION;
            END IF;
            INSERT INTO rate_events (bucket, at) VALUES (buckets[i], moment);
            INSERT INTO rate_windows (bucket, count) VALUES (buckets[i], 1)
            ON CONFLICT (bucket) DO UPDATE SET count = rate_windows.count + 1 - lefts[i];
        END IF;
    END LOOP;
END
$$
"""
