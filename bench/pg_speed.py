"""Benchmark: enrich and discover latency in-process on PostgreSQL, beside SQLite, one run.

    .venv/bin/python bench/pg_speed.py                    # full size, var/bench-full.db
    .venv/bin/python bench/pg_speed.py --small            # demo size, var/bench-demo.db
    .venv/bin/python bench/pg_speed.py --pg-url URL       # a database loaded before

Data: the 1M-contact dataset (var/bench-full.db, seed 7, built when missing). SQLite: a copy of
it with one unlimited enterprise_plus organization (bench/serving.py). PostgreSQL: the same
data exported to CSV and loaded with `contactdata import` into a new database of a throwaway
cluster (tests/helpers/postgres.py, fsync off as in the tests), or the database `--pg-url`
names, and the same organization. PG+Redis: the same PostgreSQL database with the rate limits
in a throwaway `redis-server` (one round trip a call instead of the PostgreSQL limiter's
transaction), the deployment past one machine that README describes.

Enrich: what POST /v7/enrich does after reading its body (server/http/access.py `admit`, then
server/http/enrich_api.py): authenticate the key, count the call in the rate limiter (on
PostgreSQL without Redis its tables are in the database), then `enrich.enrich` (match, the
tier's view, charge and record the transaction), through the connection `db.database` gives
the app. CALLS known queries of bench/enrich.py (seed 7) after WARM_UP; also `matching.find`
alone on the same queries. Discover: the query of bench/discover.py (the largest company, its
two most common titles, 50 miles around its headquarters, pages of 100 in turn) and its Stats.
Each figure with the CPU it took per call: this process's, and on PostgreSQL the cluster's.

Then a cProfile on PostgreSQL of PROFILED_ENRICH enrich and PROFILED_DISCOVER discover calls,
the top functions by own time and the statements sent per call. Targets (issue 23): enrich
p50 <= 2 ms and p99 <= 10 ms, discover p50 <= 15 ms, on PostgreSQL; enrich at three depths:
the API's path without HTTP (auth, limiter, enrich), `enrich.enrich` alone (match, view,
charge, record), and `matching.find` alone (what bench/enrich.py calls in-process latency).
Writes bench/results/pg_speed.txt (full size).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import dataclasses
import os
import pstats
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent.parent))

from dataset import run_step
from discover import common_titles, largest_company
from enrich import build_queries
from import_pg import cluster_cpu
from serving import (
    DEFAULT_DBS,
    SECRET,
    copy_with_org,
    ensure_database,
    machine,
    percentile,
    read_only,
    top_functions,
)

from server import accounts, auth, config, discover, enrich, limits, matching, privacy
from server.clock import utcnow
from server.matching import Query
from server.storage import db as database
from server.storage import pg
from tests.helpers.postgres import PostgresServer
from tests.helpers.redis_server import redis_server

RESULTS = Path(__file__).parent / "results" / "pg_speed.txt"
CALLS, WARM_UP = 3_000, 300
DISCOVER_CALLS, DISCOVER_WARM_UP = 300, 30
PROFILED_ENRICH, PROFILED_DISCOVER = 300, 30
ORG = {"tier": "enterprise_plus", "qps": 10**6, "daily_limit": 10**9, "discover_per_minute": 10**6}


@dataclass
class Target:
    """One backend under test: its `DB` setting, limiter, key secret and the bench's key."""

    name: str
    db: str
    key: str
    cluster: PostgresServer | None = None
    rate_limiter: str = "sqlite"

    def __post_init__(self) -> None:
        settings = config.load(
            {"DB": self.db, "KEY_SECRET": SECRET, "RATE_LIMITER": self.rate_limiter}
        )
        self.secret = config.key_secret(settings)
        self.limiter = limits.limiter_for(settings)

    def cpu(self) -> float:
        """CPU seconds of the database server so far (0 for SQLite, which has none)."""
        return cluster_cpu(self.cluster) if self.cluster else 0.0


def enrich_call(target: Target, body: dict[str, str]) -> enrich.Outcome:
    """What POST /v7/enrich does with a key in its header and a parsed body, ending as a
    request does (server/http/access.py gives a pooled connection back)."""
    try:
        db, now = database.database(target.db), utcnow()
        caller = auth.authenticate(db, target.secret, target.key, now)
        auth.require_active_organization(caller)
        checked = [
            limits.Limit.per_window(f"org:{caller.org_id}:qps", "qps", caller.qps_limit, 1),
            limits.organization_daily(caller.org_id, caller.daily_limit),
        ]
        if not target.limiter.hit(checked, now).allowed:
            raise RuntimeError("the bench's organization was rate-limited")
        who = enrich.Requester(
            caller.org_id, caller.tier, caller.key_id, "/v7/enrich",
            hash_of=privacy.hasher(target.secret),
        )  # fmt: skip
        return enrich.enrich(db, who, body, now, str(uuid.uuid4()))
    finally:
        database.done(target.db)


def requester(target: Target) -> enrich.Requester:
    """The bench's organization as enrich_call finds it by its key (authenticated once)."""
    try:
        caller = auth.authenticate(
            database.database(target.db), target.secret, target.key, utcnow()
        )
        return enrich.Requester(caller.org_id, caller.tier, caller.key_id, "/v7/enrich",
                                hash_of=privacy.hasher(target.secret))  # fmt: skip
    finally:
        database.done(target.db)


def record_call(target: Target, who: enrich.Requester, body: dict[str, str]) -> enrich.Outcome:
    """`enrich.enrich` alone (match, the tier's view, charge and record; no key, no limiter)
    on the app's connection."""
    try:
        return enrich.enrich(database.database(target.db), who, body, utcnow(), str(uuid.uuid4()))
    finally:
        database.done(target.db)


def find_call(target: Target, query: Query) -> matching.Match | None:
    """The matcher alone on the app's connection."""
    try:
        return matching.find(database.database(target.db), query)
    finally:
        database.done(target.db)


def discover_call(target: Target, filters: dict[str, Any]) -> dict[str, Any]:
    """What POST /v1/discover does after admitting the caller, ending as a request does."""
    request = discover.DiscoverRequest.model_validate(filters)
    try:
        return discover.discover(database.database(target.db), "enterprise_plus", request)
    finally:
        database.done(target.db)


# --- timing ----------------------------------------------------------------------------------


def timed(target: Target, calls: Sequence[Callable[[], Any]], warm_up: int) -> dict[str, float]:
    """p50/p99/max ms of `calls` (after the first `warm_up`, not timed), with this process's
    and the database server's CPU ms per call."""
    for call in calls[:warm_up]:
        call()
    measured = calls[warm_up:]
    spent = []
    cpu, server = time.process_time(), target.cpu()
    for call in measured:
        started = time.perf_counter_ns()
        call()
        spent.append(time.perf_counter_ns() - started)
    cpu, server = time.process_time() - cpu, target.cpu() - server
    spent.sort()
    return {
        "p50": percentile(spent, 50),
        "p99": percentile(spent, 99),
        "max": spent[-1] / 1e6,
        "cpu": 1e3 * cpu / len(measured),
        "server": 1e3 * server / len(measured),
        "n": len(measured),
    }


def line(label: str, figures: dict[str, float]) -> str:
    server = f", db server {figures['server']:.2f}" if figures["server"] else ""
    return (
        f"{label:<40} p50 {figures['p50']:6.2f} ms  p99 {figures['p99']:6.2f} ms  max "
        f"{figures['max']:6.1f} ms  CPU/call: bench {figures['cpu']:.2f}{server} ms "
        f"({figures['n']:,.0f} calls)"
    )


def measure(
    target: Target, bodies: Sequence[dict[str, str]], filters: dict[str, Any]
) -> tuple[list[str], dict[str, dict[str, float]]]:
    """The backend's lines and figures: enrich, find alone, discover pages and Stats."""
    queries = [enrich.parse_input(body).query for body in bodies]
    pages = discover_call(target, {**filters, "pagination_required": True, "page_size": 100})
    count = pages["data"]["total_pages"]
    paged = [
        {**filters, "pagination_required": True, "page_size": 100, "page_number": n % count + 1}
        for n in range(DISCOVER_WARM_UP + DISCOVER_CALLS)
    ]
    who = requester(target)
    figures = {
        "enrich": timed(target, [_bind(enrich_call, target, b) for b in bodies], WARM_UP),
        "record": timed(target, [_bind(record_call, target, who, b) for b in bodies], WARM_UP),
        "find": timed(target, [_bind(find_call, target, q) for q in queries], WARM_UP),
        "discover": timed(target, [_bind(discover_call, target, f) for f in paged],
                          DISCOVER_WARM_UP),
        "stats": timed(target, [_bind(discover_call, target, {**filters, "mode": "Stats"})]
                       * (DISCOVER_WARM_UP + DISCOVER_CALLS), DISCOVER_WARM_UP),
    }  # fmt: skip
    lines = [
        line(f"{target.name} enrich (auth, limiter, enrich)", figures["enrich"]),
        line(f"{target.name}   of which enrich.enrich alone", figures["record"]),
        line(f"{target.name}   of which matching.find alone", figures["find"]),
        line(f"{target.name} discover, a page of 100", figures["discover"]),
        line(f"{target.name} discover Stats", figures["stats"]),
    ]
    return lines, figures


def _bind(function: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    return lambda: function(*args)


# --- profile ---------------------------------------------------------------------------------


def profile(label: str, calls: Sequence[Callable[[], Any]], top: int = 14) -> list[str]:
    """cProfile of `calls`: statements sent per call and the top functions by own time."""
    profiler = cProfile.Profile()
    profiler.enable()
    for call in calls:
        call()
    profiler.disable()
    sent = sum(
        counts[1]
        for (path, _, name), counts in pstats.Stats(profiler).stats.items()  # type: ignore[attr-defined]
        if name in ("execute", "executemany") and path.endswith("psycopg/cursor.py")
    )  # fmt: skip
    total, table = top_functions(profiler, top)
    return [
        f"cProfile, {len(calls)} {label} on PostgreSQL: {total}; "
        f"{sent / len(calls):.1f} statements sent a call",
        *table,
    ]


def statement_times(label: str, calls: Sequence[Callable[[], Any]], top: int = 12) -> list[str]:
    """Time in each statement (as the stores write it) over `calls`: the
    round trips of a call and what each costs, waiting for the server included."""
    spent: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    # A write transaction's last statement goes with its COMMIT (`execute_committing`).
    methods = {name: getattr(pg.Connection, name) for name in ("execute", "execute_committing")}

    def timed(method: Callable[..., Any]) -> Callable[..., Any]:
        def timed_method(self: pg.Connection, sql: str, params: Any = (), **options: Any) -> Any:
            started = time.perf_counter()
            try:
                return method(self, sql, params, **options)
            finally:
                spent[" ".join(sql.split())][0] += 1
                spent[" ".join(sql.split())][1] += time.perf_counter() - started

        return timed_method

    for name, method in methods.items():
        setattr(pg.Connection, name, timed(method))
    try:
        for call in calls:
            call()
    finally:
        for name, method in methods.items():
            setattr(pg.Connection, name, method)
    n, total = len(calls), sum(seconds for _, seconds in spent.values())
    lines = [
        f"statements of {n} {label} on PostgreSQL: {sum(c for c, _ in spent.values()) / n:.1f} "
        f"a call, {1e3 * total / n:.2f} ms a call in them; the {top} costliest:"
    ]
    for sql, (count, seconds) in sorted(spent.items(), key=lambda item: -item[1][1])[:top]:
        lines.append(f"  {count / n:5.2f} a call  {1e3 * seconds / count:6.3f} ms each  {sql[:90]}")
    return lines


# --- the backends ----------------------------------------------------------------------------


def sqlite_target(path: Path, work: Path) -> Target:
    copy = work / "sqlite.db"
    return Target("SQLite", str(copy), copy_with_org(path, copy, "PG speed bench"))


def load_postgres(path: Path, url: str, work: Path) -> list[str]:
    """Export the dataset at `path` to CSV and `contactdata import` it into `url`."""
    comp_csv, cont_csv = work / "c.csv", work / "p.csv"
    run_step(["export", "--db", str(path), "--companies", str(comp_csv),
              "--contacts", str(cont_csv)])  # fmt: skip
    seconds, _, _ = run_step(["import", "--db", url, "--companies", str(comp_csv),
                              "--contacts", str(cont_csv)])  # fmt: skip
    comp_csv.unlink()
    cont_csv.unlink()
    return [f"PostgreSQL: dataset exported and imported ({seconds:.0f} s for the import)"]


def postgres_target(url: str, cluster: PostgresServer | None) -> Target:
    """The database at `url`, vacuumed (as autovacuum would do soon after a load, which
    would then run during the measurement) and with the bench's organization."""
    db = database.connect(url)
    db.execute("VACUUM ANALYZE")  # the visibility map lets discover's index-only scans be so
    _, key = accounts.create_organization(
        db, SECRET.encode(), utcnow(), name=f"PG speed bench {uuid.uuid4().hex[:8]}",
        website="bench.example", **ORG,
    )  # fmt: skip
    db.close()
    return Target("PostgreSQL", url, key, cluster)


def bench_inputs(path: Path) -> tuple[list[dict[str, str]], dict[str, Any], str]:
    """The enrich bodies (known queries of bench/enrich.py, seed 7), the discover filters of
    bench/discover.py, and a line naming the company."""
    with read_only(path) as conn:
        cases = [case for case in build_queries(conn, 7, 0) if not case.absent]
    db = database.connect(path, migrate=False)
    guid, people, headquarters = largest_company(db)
    filters = {"company_guid": guid, "jobTitle": common_titles(db, guid, 2),
               "location": [headquarters], "within_miles": 50}  # fmt: skip
    db.close()
    bodies = [case.body() for case in cases[: WARM_UP + CALLS]]
    return bodies, filters, f"discover: company {guid}, {people:,} current people; {filters}"


def run(path: Path, pg_url: str | None, work: Path) -> list[str]:
    """Both backends' figures, then PostgreSQL's profile and the targets."""
    bodies, filters, described = bench_inputs(path)
    lines = [described]
    with contextlib.ExitStack() as stack:
        cluster = None
        if pg_url is None:
            cluster = stack.enter_context(PostgresServer.running())
            pg_url = cluster.create_database()
            lines += load_postgres(path, pg_url, work)
        postgres = postgres_target(pg_url, cluster)
        stack.callback(database.pg.release, pg_url)
        # The deployment past one machine: PostgreSQL with the rate limits in Redis.
        with_redis = dataclasses.replace(
            postgres, name="PG+Redis", rate_limiter=stack.enter_context(redis_server(work))
        )
        targets = [sqlite_target(path, work), postgres, with_redis]
        if cluster is not None:  # the same database over a Unix socket (one machine)
            socket = cluster.over_socket(pg_url)
            stack.callback(database.pg.release, socket)
            targets += [
                dataclasses.replace(postgres, name="PG socket", db=socket),
                dataclasses.replace(with_redis, name="PG+Redis socket", db=socket),
            ]
        figures = {}
        for target in targets:
            measured, figures[target.name] = measure(target, bodies, filters)
            lines += measured
            print("\n".join(measured), flush=True)
        enriching = [_bind(enrich_call, postgres, body) for body in bodies[:PROFILED_ENRICH]]
        lines += ["", *profile("enrich calls", enriching)]
        lines += ["", *statement_times("enrich calls", enriching)]
        paged = {**filters, "pagination_required": True, "page_size": 100}
        discovering = [_bind(discover_call, postgres, paged)] * PROFILED_DISCOVER
        lines += ["", *profile("discover calls", discovering)]
        lines += ["", *statement_times("discover calls", discovering, 4)]
    return [*lines, "", *target_lines_for(figures)]


def target_lines_for(figures: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    """Each issue-23 target with its PostgreSQL figures (limits in PostgreSQL, and in
    Redis; over TCP and over a Unix socket) and pass/FAIL."""
    names = [name for name in figures if name != "SQLite"]
    checks = [
        (f"{name} {label} {stat}", figures[name][part][stat], goal)
        for part, label in (
            ("enrich", "enrich (auth, limiter, enrich)"),
            ("record", "enrich.enrich alone"),
            ("find", "matching.find alone"),
        )
        for stat, goal in (("p50", 2), ("p99", 10))
        for name in names
    ]
    checks += [(f"{name} discover p50", figures[name]["discover"]["p50"], 15) for name in names]
    return [
        f"{label:<52} {value:7.2f} ms  target <= {goal} ms  {'pass' if value <= goal else 'FAIL'}"
        for label, value, goal in checks
    ]


def load() -> str:
    return "load average " + " ".join(f"{n:.1f}" for n in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, help="dataset (default var/bench-full.db, built)")
    parser.add_argument("--small", action="store_true", help="demo size: var/bench-demo.db")
    parser.add_argument("--pg-url", help="a PostgreSQL database holding the same dataset")
    options = parser.parse_args()
    size = "small" if options.small else "full"
    path = options.db or DEFAULT_DBS[size]
    ensure_database(path, size)
    lines = [
        f"bench/pg_speed.py on {machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"dataset {path}; {load()} at the start",
    ]
    print("\n".join(lines), flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-pg-speed-") as work:
        lines += run(path, options.pg_url, Path(work))
    lines.append(f"{load()} at the end (the machine is shared: wall times vary with it)")
    print("\n".join(lines[lines.index("", 3) :]))
    if size == "full":
        RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
