"""Rate-limit hits on PostgreSQL: the SQLite limiter's transaction over the PostgreSQL URL (as
before issue 23) against `PostgresLimiter`'s one statement, in one run on a throwaway cluster
(tests/helpers/postgres.py, fsync off as in the tests).

Each hit checks enrich's two limits (a qps sliding window and the organization's UTC day) at a
clock moving 0.25 s a hit, so every hit is admitted and counted. The two limiters take turns,
in rounds, on buckets of their own. Printed per hit: latency p50/p99, this process's CPU, the
cluster's CPU and the round trips (statements sent, libpq's trace of the limiter's connection).

    python bench/limiter_pg.py [--hits 3000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).parent.parent))
sys.path.insert(0, str(Path(__file__).parent))

from import_pg import cluster_cpu

from server.limits import Limit, Limiter, PostgresLimiter, SqliteLimiter, postgres
from server.storage import db, pg
from tests.helpers.postgres import PostgresServer

ROUNDS = 6
T0 = datetime(2026, 11, 27, 12, tzinfo=UTC)


@dataclass
class Tally:
    """What one limiter's hits took."""

    seconds: list[float] = field(default_factory=list)
    cpu: float = 0.0
    cluster: float = 0.0
    statements: int = 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hits", type=int, default=3000, help="hits per limiter")
    args = parser.parse_args()
    with PostgresServer.running() as server:
        url = server.create_database()
        db.connect(url).close()  # the service's schema
        postgres.migrate(url)  # the limiter's tables and function
        limiters = {
            "SqliteLimiter on PG": SqliteLimiter(url),
            "PostgresLimiter": PostgresLimiter(url),
        }
        tallies = {name: Tally() for name in limiters}
        for round_ in range(ROUNDS):
            for name, limiter in limiters.items():
                start = round_ * args.hits // ROUNDS
                _run(
                    server, limiter, name, range(start, start + args.hits // ROUNDS), tallies[name]
                )
        print(f"{args.hits:,} hits each, limits qps (sliding, 1 s) + daily (UTC day)")
        for name, tally in tallies.items():
            _report(name, tally)


def _connection(limiter: Limiter) -> psycopg.Connection:
    if isinstance(limiter, SqliteLimiter):
        return limiter._db().conn.raw  # type: ignore[attr-defined]
    return pg.database(limiter.url).conn.raw  # type: ignore[attr-defined]


def _run(server: PostgresServer, limiter: Limiter, name: str, hits: range, tally: Tally) -> None:
    org = name.split()[0]
    limits = [
        Limit.per_window(f"org:{org}:qps", "qps", 5, 1),
        Limit.per_utc_day(f"org:{org}:daily", "daily", 1_000_000),
    ]
    limiter.count(limits[0], T0)  # connected before the clock starts
    pgconn = _connection(limiter).pgconn
    with tempfile.NamedTemporaryFile("w+") as trace:
        pgconn.trace(trace.fileno())
        pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        cpu, cluster = time.process_time(), cluster_cpu(server)
        for n in hits:
            began = time.perf_counter()
            assert limiter.hit(limits, T0 + timedelta(seconds=n / 4)).allowed
            tally.seconds.append(time.perf_counter() - began)
        tally.cpu += time.process_time() - cpu
        tally.cluster += cluster_cpu(server) - cluster
        pgconn.untrace()
        trace.seek(0)
        sent = [line.split("\t") for line in trace]
    tally.statements += sum(1 for m in sent if m[0] == "F" and m[2] in ("Execute", "Query"))


def _report(name: str, tally: Tally) -> None:
    hits = len(tally.seconds)
    ms = sorted(s * 1000 for s in tally.seconds)
    print(
        f"{name:<20} p50 {statistics.median(ms):5.2f} ms  p99 {ms[int(hits * 0.99)]:5.2f} ms  "
        f"CPU/hit: bench {tally.cpu / hits * 1000:.3f}, db server "
        f"{tally.cluster / hits * 1000:.3f} ms  round trips/hit {tally.statements / hits:.2f}"
    )


if __name__ == "__main__":
    main()
