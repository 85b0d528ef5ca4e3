"""Benchmark: discover latency in-process and throughput over HTTP, on the largest company.

    .venv/bin/python bench/discover.py                 # full size, var/bench-full.db
    .venv/bin/python bench/discover.py --small         # demo size, var/bench-demo.db
    .venv/bin/python bench/discover.py --no-http

Data: the 100,000-company / 1,000,000-contact dataset (seed 7, built with `contactdata
demo-data` when missing; migrated in place when its schema is older). The company with the
most current people is discovered; the filters are its two most common job titles and 50 miles
around its headquarters' "City, ST", at the default accuracy (A+), 100 per page.

In-process: `discover.discover` on one connection, after a warm-up, REPEATS calls per query,
rotating over the pages of the answer; Stats with the same filters; and, for reference, a page
and the Stats of the company without filters, and the default unpaged call (up to 10,000
people). HTTP: the app under gunicorn (bench/hello_app.py adds /hello) on a copy of the
database with one organization no limit stops; wrk runs hello, discover (POSTs rotating over
the pages), the discover floor (the same calls without the search), hello again.

Targets (issue 5), printed with pass/FAIL: Discover p50 <= 10 ms and p99 <= 50 ms; Stats p50
<= 5 ms; HTTP throughput >= 40% of hello's. Writes bench/results/discover.txt (full size).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from serving import (
    DEFAULT_DBS,
    baseline_rps,
    between_baselines,
    copy_with_org,
    ensure_database,
    free_port,
    lua_script,
    machine,
    percentile,
    post,
    start_server,
    stop_server,
    wrk_line,
)
from sqlite_utils import Database

from server import discover
from server.storage import db as database

RESULTS = Path(__file__).parent / "results" / "discover.txt"
REPEATS = 1000
WARM_UP = 50


def largest_company(db: Database) -> tuple[str, int, str]:
    """The GUID and current head count of the company with the most current people, and its
    headquarters as "City, ST"."""
    guid, people = db.execute(
        "SELECT company_guid, count(*) FROM employments WHERE status = 'Active' "
        "GROUP BY company_guid ORDER BY count(*) DESC LIMIT 1"
    ).fetchone()
    city, state = db.execute("SELECT city, state FROM companies WHERE guid = ?", [guid]).fetchone()
    return guid, people, f"{city}, {state}"


def common_titles(db: Database, guid: str, n: int) -> list[str]:
    """The n most common job titles of the company's current people."""
    rows = db.execute(
        "SELECT job_title FROM employments WHERE company_guid = ? AND status = 'Active' "
        "GROUP BY job_title ORDER BY count(*) DESC, job_title LIMIT ?",
        [guid, n],
    )
    return [title for (title,) in rows]


def timed(call: Callable[[], Any], repeats: int) -> dict[str, float]:
    """p50, p99 and max in ms of `repeats` calls, after a warm-up."""
    for _ in range(WARM_UP):
        call()
    spent = []
    for _ in range(repeats):
        started = time.perf_counter_ns()
        call()
        spent.append(time.perf_counter_ns() - started)
    spent.sort()
    return {"p50": percentile(spent, 50), "p99": percentile(spent, 99), "max": spent[-1] / 1e6}


def in_process(db: Database, filters: dict[str, Any]) -> tuple[list[str], dict[str, float]]:
    """Latency lines and the figures the targets need."""

    def call(**extra: Any) -> dict[str, Any]:
        request = discover.DiscoverRequest.model_validate({**filters, **extra})
        return discover.discover(db, "enterprise_plus", request)["data"]

    pages = call(pagination_required=True, page_size=100)["total_pages"]
    turn = iter(range(10**9))
    paged = timed(
        lambda: call(pagination_required=True, page_size=100, page_number=next(turn) % pages + 1),
        REPEATS,
    )
    stats = timed(lambda: call(mode="Stats"), REPEATS)
    bare = {"company_guid": filters["company_guid"]}

    def call_bare(**extra: Any) -> dict[str, Any]:
        request = discover.DiscoverRequest.model_validate({**bare, **extra})
        return discover.discover(db, "enterprise_plus", request)["data"]

    unfiltered_page = timed(lambda: call_bare(pagination_required=True, page_size=100), 200)
    unfiltered_stats = timed(lambda: call_bare(mode="Stats"), 200)
    unpaged = timed(lambda: call_bare(accuracy="B"), 5)
    total = call()["total_count"]
    everyone = call_bare(mode="Stats", accuracy="B")["total_count"]

    def line(name: str, figures: dict[str, float]) -> str:
        return (
            f"{name:<44} p50 {figures['p50']:7.2f} ms  p99 {figures['p99']:7.2f} ms  "
            f"max {figures['max']:7.1f} ms"
        )

    lines = [
        f"filters: {filters}",
        f"matches: {total:,} in {pages} pages of 100",
        line(f"Discover, a page of 100 ({REPEATS:,} calls)", paged),
        line(f"Stats, same filters ({REPEATS:,} calls)", stats),
        line("reference: Discover without filters, page 1", unfiltered_page),
        line("reference: Stats without filters", unfiltered_stats),
        line(f"reference: unpaged, accuracy B ({min(everyone, 10_000):,} people)", unpaged),
    ]
    return lines, {"p50": paged["p50"], "p99": paged["p99"], "stats": stats["p50"]}


def http_report(
    path: Path, filters: dict[str, Any], workers: int, seconds: int, work: Path
) -> tuple[list[str], float]:
    """Throughput of /hello and /v1/discover on one server; the lines and discover/hello."""
    copy = work / "http.db"
    started = time.perf_counter()
    key = copy_with_org(path, copy, "Discover bench")
    lines = [f"database copied for the server in {time.perf_counter() - started:.0f} s"]
    port = free_port()
    server = start_server(copy, port, workers, work / "server.log")
    try:
        first = {**filters, "pagination_required": True, "page_size": 100}
        status, answer = post(port, "/v1/discover", {"API_KEY": key}, first)
        if status != 200:
            raise RuntimeError(f"POST /v1/discover answers HTTP {status}")
        pages = answer["data"]["total_pages"]
        lines.append(f"HTTP answers {answer['data']['total_count']:,} matches in {pages} pages")
        bodies = [{**first, "page_number": number} for number in range(1, pages + 1)]
        script, floor = work / "discover.lua", work / "floor.lua"
        script.write_text(lua_script(bodies, {"API_KEY": key}, "/v1/discover"))
        floor.write_text(lua_script(bodies, {"API_KEY": key}, "/discover-floor"))
        runs = between_baselines(
            f"http://127.0.0.1:{port}",
            2 * workers,
            seconds,
            "/hello",
            [("discover", "/v1/discover", script), ("floor", "/discover-floor", floor)],
        )
    finally:
        stop_server(server)
    lines += [wrk_line(name, run) for name, run in runs]
    hello = baseline_rps(runs)
    share, floor_share = runs[1][1]["rps"] / hello, runs[2][1]["rps"] / hello
    lines.append(
        f"discover / hello {share:.0%}; floor / hello {floor_share:.0%}; discover / floor "
        f"{runs[1][1]['rps'] / runs[2][1]['rps']:.0%} (floor: a discover call that shows a page "
        "of 100 people without finding them, see bench/hello_app.py)"
    )
    return lines, share


def target_lines(figures: dict[str, float]) -> list[str]:
    """Each target with its figure and pass/FAIL."""

    def check(label: str, shown: str, goal: str, ok: bool) -> str:
        return f"{label:<44} {shown:>9}  target {goal:<8} {'pass' if ok else 'FAIL'}"

    lines = [
        check("Discover p50", f"{figures['p50']:.2f} ms", "<= 10 ms", figures["p50"] <= 10),
        check("Discover p99", f"{figures['p99']:.2f} ms", "<= 50 ms", figures["p99"] <= 50),
        check("Stats p50", f"{figures['stats']:.2f} ms", "<= 5 ms", figures["stats"] <= 5),
    ]
    if "http" in figures:
        share = figures["http"]
        lines.append(check("HTTP discover / hello", f"{share:.0%}", ">= 40%", share >= 0.4))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, help="dataset (default var/bench-full.db, built)")
    parser.add_argument("--small", action="store_true", help="demo size: var/bench-demo.db")
    parser.add_argument("--no-http", action="store_true", help="skip the HTTP throughput part")
    parser.add_argument("--seconds", type=int, default=10, help="length of each wrk run")
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args()
    size = "small" if options.small else "full"
    path = options.db or DEFAULT_DBS[size]
    ensure_database(path, size)
    started = time.perf_counter()
    db = database.connect(path)  # migrates an older dataset in place
    migrated = time.perf_counter() - started
    guid, people, headquarters = largest_company(db)
    lines = [
        f"bench/discover.py on {machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"database {path} (opened and migrated in {migrated:.1f} s)",
        f"company {guid}: {people:,} current people, headquarters {headquarters}",
    ]
    filters = {
        "company_guid": guid,
        "jobTitle": common_titles(db, guid, 2),
        "location": [headquarters],
        "within_miles": 50,
    }
    print("\n".join(lines), flush=True)
    timing_lines, figures = in_process(db, filters)
    lines += ["", "in-process discover.discover():", *timing_lines]
    print("\n".join(lines[-len(timing_lines) - 1 :]), flush=True)
    db.conn.close()
    if not options.no_http:
        with tempfile.TemporaryDirectory(prefix="bench-discover-") as work:
            http_lines, figures["http"] = http_report(
                path, filters, options.workers, options.seconds, Path(work)
            )
        heading = (
            f"HTTP: gunicorn, {options.workers} sync workers; wrk, {2 * options.workers} "
            f"connections, {options.seconds} s per run"
        )
        lines += ["", heading, *http_lines]
        print("\n".join(lines[-len(http_lines) - 1 :]), flush=True)
    targets = target_lines(figures)
    lines += ["", *targets]
    print("\n".join(targets))
    if size == "full":
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
