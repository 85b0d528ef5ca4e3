"""Benchmark: does enrich scale from one gunicorn worker to two on one machine (SQLite)?

    .venv/bin/python bench/enrich_workers.py
    .venv/bin/python bench/enrich_workers.py --db /work/main/var/bench-full.db --seconds 10

Data: a copy of the 1M-contact dataset (var/bench-full.db, built when missing) with one
unlimited enterprise_plus organization; 500 known queries of bench/enrich.py (seed 7).

Throughput: `contactdata serve` with 1, then 2 sync workers; wrk at 1 and 4 connections on
GET /healthz (the baseline: the same app, no database write) and POST /v7/enrich, side by side
in the same run; the 2-worker / 1-worker ratio of each. Goal: enrich scales >= 1.8x at 4
connections (healthz shows what the machine gives: wrk shares its 2 cores).

Where the time goes: the app in-process (Flask's client, no HTTP), 2,000 enrich calls in one
process, then in 2 processes at once; each times its write transactions' waits for the lock
(entering `db.write` to holding the lock: the limiter's file and the main database) apart from
the rest. And a cProfile of 300 calls in one process, the top functions by own time.
Writes bench/results/enrich_workers.txt.
"""

from __future__ import annotations

import argparse
import cProfile
import multiprocessing
import os
import random
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from enrich import HTTP_BODIES, build_queries
from serving import (
    CLI,
    DEFAULT_DBS,
    SECRET,
    copy_with_org,
    ensure_database,
    free_port,
    lua_script,
    machine,
    read_only,
    start_server,
    stop_server,
    top_functions,
    wrk,
    wrk_line,
)

RESULTS = Path(__file__).parent / "results" / "enrich_workers.txt"
CONNECTIONS = (1, 4)
CALLS = 2_000
PROFILED = 300
GOAL = 1.8


def routes(script: Path) -> tuple[tuple[str, str, Path | None], ...]:
    """What is measured: the baseline, then enrich."""
    return (("healthz", "/healthz", None), ("enrich", "/v7/enrich", script))


def bodies_for(path: Path) -> list[dict[str, str]]:
    """The 500 known queries bench/enrich.py sends over HTTP."""
    with read_only(path) as conn:
        known = [case for case in build_queries(conn, 7, 0) if not case.absent]
    return [case.body() for case in random.Random(1).sample(known, HTTP_BODIES)]


# --- throughput under gunicorn ---------------------------------------------------------------


def throughput(db: Path, key: str, bodies: Sequence[Any], seconds: int, work: Path) -> list[str]:
    """wrk on /healthz and /v7/enrich with 1 and 2 workers; the lines and the ratios."""
    script = work / "enrich.lua"
    script.write_text(lua_script(bodies, {"apikey": key}, "/v7/enrich"))
    figures: dict[tuple[str, int, int], dict[str, float]] = {}
    lines = []
    for workers in (1, 2):
        port = free_port()
        command = [CLI, "serve", "--db", str(db), "--port", str(port), "--workers", str(workers)]
        server = start_server(db, port, workers, work / f"serve-{workers}.log", command)
        try:
            for connections in CONNECTIONS:
                for name, path, lua in routes(script):
                    run = wrk(f"http://127.0.0.1:{port}{path}", connections, seconds, lua)
                    figures[(name, workers, connections)] = run
                    label = f"{name} {workers}w {connections}c"
                    lines.append(wrk_line(f"{label:<18}", run))
                    print(lines[-1], flush=True)
        finally:
            stop_server(server)
    for connections in CONNECTIONS:
        ratios = {
            name: figures[(name, 2, connections)]["rps"] / figures[(name, 1, connections)]["rps"]
            for name in ("healthz", "enrich")
        }
        mark = "pass" if ratios["enrich"] >= GOAL else "FAIL"
        goal = f"  (goal enrich >= {GOAL}x: {mark})" if connections == CONNECTIONS[-1] else ""
        lines.append(
            f"2 workers / 1 worker at {connections} connection(s): healthz "
            f"{ratios['healthz']:.2f}x, enrich {ratios['enrich']:.2f}x{goal}"
        )
    return lines


# --- where the time goes, in-process ---------------------------------------------------------


def _client(db: Path) -> Any:
    os.environ["CONTACTDATA_KEY_SECRET"] = SECRET
    from server import config
    from server.http import app

    return app.create_app(config.load({"DB": str(db)})).test_client()


def _timing_writes(waits: list[float]) -> None:
    """Make every outermost `db.write` add its wait for the lock to `waits` (this process)."""
    from server import auth, credits, enrich
    from server.limits import sqlite
    from server.storage import db

    original = db.write

    @contextmanager
    def timed(database: Any) -> Iterator[Any]:
        outermost = not database.conn.in_transaction
        started = time.perf_counter()
        with original(database) as held:
            if outermost:
                waits.append(time.perf_counter() - started)
            yield held

    for module in (auth, credits, db, enrich, sqlite):
        module.write = timed  # type: ignore[attr-defined]


def _calls(db: Path, key: str, bodies: Sequence[Any], start: Any, out: Any) -> None:
    """CALLS enrich calls once `start` is set; puts (seconds, lock wait seconds, writes)."""
    client, waits = _client(db), []
    _timing_writes(waits)
    for body in bodies[:20]:  # warm up: connections, caches
        client.post("/v7/enrich", json=body, headers={"apikey": key})
    waits.clear()
    start.wait()
    began = time.perf_counter()
    for i in range(CALLS):
        response = client.post("/v7/enrich", json=bodies[i % len(bodies)], headers={"apikey": key})
        assert response.status_code == 200, response.get_data(as_text=True)
    out.put((time.perf_counter() - began, sum(waits), len(waits)))


def lock_waits(db: Path, key: str, bodies: Sequence[Any]) -> list[str]:
    """CALLS in-process enrich calls in 1, then 2 processes at once: calls/s and lock waits."""
    lines = []
    context = multiprocessing.get_context("fork")
    for processes in (1, 2):
        start, out = context.Event(), context.Queue()
        workers = [
            context.Process(target=_calls, args=(db, key, bodies, start, out))
            for _ in range(processes)
        ]
        for worker in workers:
            worker.start()
        time.sleep(3)  # every process warmed up
        start.set()
        results = [out.get() for _ in workers]
        for worker in workers:
            worker.join()
        rate = sum(CALLS / seconds for seconds, _, _ in results)
        per_call = [1e3 * seconds / CALLS for seconds, _, _ in results]
        waited = [1e3 * wait / CALLS for _, wait, _ in results]
        writes = results[0][2] / CALLS
        lines.append(
            f"in-process, {processes} process(es): {rate:,.0f} calls/s; per call "
            f"{sum(per_call) / processes:.3f} ms of which waiting for write locks "
            f"{sum(waited) / processes:.3f} ms ({writes:.1f} write transactions a call)"
        )
        print(lines[-1], flush=True)
    return lines


def profile(db: Path, key: str, bodies: Sequence[Any]) -> list[str]:
    """cProfile of PROFILED enrich calls in this process: the top 12 functions by own time."""
    client = _client(db)
    for body in bodies[:20]:
        client.post("/v7/enrich", json=body, headers={"apikey": key})
    profiler = cProfile.Profile()
    profiler.enable()
    for i in range(PROFILED):
        client.post("/v7/enrich", json=bodies[i % len(bodies)], headers={"apikey": key})
    profiler.disable()
    total, table = top_functions(profiler, 12)
    return [f"cProfile, {PROFILED} calls in one process: {total}", *table]


def _today() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=DEFAULT_DBS["full"])
    parser.add_argument("--seconds", type=int, default=10, help="length of each wrk run")
    parser.add_argument("--waits-only", action="store_true", help="in-process lock waits only")
    options = parser.parse_args()
    ensure_database(options.db, "full")
    lines = [
        f"bench/enrich_workers.py on {machine()}, {_today()}",
        f"database: a copy of {options.db} with one unlimited enterprise_plus organization",
    ]
    print("\n".join(lines), flush=True)
    bodies = bodies_for(options.db)
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as work:
        copy = Path(work) / "served.db"
        key = copy_with_org(options.db, copy, "Workers bench")
        if options.waits_only:
            lock_waits(copy, key, bodies)
            return
        lines += ["", f"wrk, {options.seconds} s a run, 500 known queries in turn"]
        lines += throughput(copy, key, bodies, options.seconds, Path(work))
        lines += ["", *lock_waits(copy, key, bodies), ""]
        lines += profile(copy, key, bodies)
    print("\n".join(lines[-20:]))
    RESULTS.write_text("\n".join(line.rstrip() for line in lines) + "\n")


if __name__ == "__main__":
    main()
