"""Benchmark: what checking a key costs per request, and what the rate limiter adds.

    .venv/bin/python bench/auth.py [--keys N]

Builds a database with N keys (default 10,000) across 100 organizations, then times, per call:
the checksum and HMAC alone, a full `authenticate` of a valid key (hash lookup joined with its
user and organization), an unknown well-formed key, a malformed key, and one rate-limiter hit
(qps + daily, one BEGIN IMMEDIATE transaction). A baseline in the same run: `SELECT 1` on the
same connection. Target (issue 3): key verification under 0.1 ms. Prints a table and writes
it to bench/results/auth.txt.
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import sqlite3
import statistics
import tempfile
import time
import timeit
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from server import accounts, admin, auth, keys, limits
from server.clock import utcnow
from server.errors import ServiceError
from server.storage import db

RESULTS = Path(__file__).parent / "results" / "auth.txt"
SECRET = b"bench-secret"


def build(path: Path, n_keys: int) -> list[str]:
    """A database with `n_keys` keys in 100 organizations; returns one admin key per org."""
    database = db.connect(path)
    now = utcnow()
    admins = []
    for i in range(100):
        org, value = accounts.create_organization(
            database, SECRET, now, name=f"Org {i}", website=f"org{i}.example", tier="pro",
            qps=1_000_000, daily_limit=1_000_000_000,
        )  # fmt: skip
        admins.append(value)
        caller = auth.authenticate(database, SECRET, value, now)
        ctx = admin.Context(caller=caller, now=now, secret=SECRET)
        with db.write(database):
            for j in range(n_keys // 100 - 1):
                admin.create_key(database, ctx, f"user{j}@org{i}.example")
        assert org["id"] == caller.org_id
    return admins


def per_call_us(function: Callable[[], object], number: int = 2000) -> float:
    """Median over 5 runs of the time per call, in microseconds."""
    runs = timeit.repeat(function, number=number, repeat=5)
    return statistics.median(runs) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=10_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "auth.db"
        started = time.perf_counter()
        admins = build(path, options.keys)
        built = time.perf_counter() - started
        database = db.connect(path, migrate=False)
        now = utcnow()
        valid = admins[42]
        auth.authenticate(database, SECRET, valid, now)  # its last use is now recorded
        unknown = keys.new_key()
        limiter = limits.SqliteLimiter(path)
        moments = iter(now + timedelta(microseconds=i) for i in range(10**8))
        caller = auth.authenticate(database, SECRET, valid, now)
        policy = [
            limits.Limit.per_window(f"org:{caller.org_id}:qps", "qps", 10**9, 1),
            limits.Limit.per_utc_day(f"org:{caller.org_id}:daily", "daily", 10**9),
        ]

        def refused(value: str) -> Callable[[], None]:
            def call() -> None:
                with contextlib.suppress(ServiceError):
                    auth.authenticate(database, SECRET, value, now)

            return call

        rows = [
            ("baseline: SELECT 1", per_call_us(lambda: database.execute("SELECT 1").fetchone())),
            (
                "checksum + HMAC-SHA-256",
                per_call_us(
                    lambda: keys.key_hash(valid, SECRET) if keys.is_well_formed(valid) else None
                ),
            ),
            (
                "authenticate: valid key",
                per_call_us(lambda: auth.authenticate(database, SECRET, valid, now)),
            ),
            ("authenticate: unknown key", per_call_us(refused(unknown))),
            ("authenticate: malformed key", per_call_us(refused("cdk_" + "x" * 38))),
            (
                "rate limiter hit (qps + daily)",
                per_call_us(lambda: limiter.hit(policy, next(moments)), 500),
            ),
        ]
    lines = [
        f"bench/auth.py on {platform.machine()} {platform.python_version()}, SQLite "
        f"{sqlite3.sqlite_version}, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {options.keys:,} keys, "
        f"built in {built:.1f} s",
        *(f"{name:<34} {us:8.1f} µs per call" for name, us in rows),
        "target: key verification (authenticate: valid key) under 100 µs",
    ]
    print("\n".join(lines))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
