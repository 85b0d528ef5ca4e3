"""Benchmark: enrich against /healthz over HTTP, on SQLite and on PostgreSQL, in one run.

    PYTHONPATH=. .venv/bin/python bench/http_ratio.py            # 10 s a wrk run
    PYTHONPATH=. .venv/bin/python bench/http_ratio.py --quick    # 3 s a run, fewer profiled calls

Data: the demo-size dataset (5,000 companies, 100,000 contacts, seed 7; var/bench-demo.db,
built when missing), copied for SQLite and generated again with the same seed into a database
of a throwaway PostgreSQL cluster (tests/helpers/postgres.py); each gets one unlimited
enterprise_plus organization. Rate limits: the default limiter (`<db>.limits` on SQLite,
tables of the database on PostgreSQL); no Redis.

Throughput: `contactdata serve` with 1, then 2 sync workers on each backend; wrk at 1, 2, then
8 connections (contention apart from inherent cost) on GET /healthz, POST /v7/enrich
(bench/enrich.py's 500 known queries in turn), then /healthz again, one server; enrich /
healthz (the mean of the two) for each, and on each backend enrich with 2 workers / 1 worker
two ways: at 8 connections each, and a connection per worker (1 worker at 1 connection, 2 at
2: how issue 23 measured its 1.40x), each beside healthz's own scaling, which touches no
database: the machine's ceiling, as wrk shares its 2 cores. Targets (issue 23): on SQLite
with 2 workers at 8 connections enrich / healthz >= 0.35; enrich 2 workers / 1 worker >= 1.8.

Where the time goes: the server's CPU per request (its processes' CPU over the requests wrk
got answered: what the machine's other load changes least); enrich in-process through the
WSGI app of `contactdata serve` (no HTTP), CPU a call on each backend split by step, and on
SQLite again with another connection committing before each call (what a second worker
does); a cProfile of the SQLite calls, the top functions by own time.
Writes bench/results/http_ratio.txt.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from dataset import process_stats
from enrich import HTTP_BODIES
from enrich_workers import bodies_for
from serving import (
    CLI,
    DEFAULT_DBS,
    SECRET,
    SIZES,
    add_org,
    copy_with_org,
    ensure_database,
    free_port,
    lua_script,
    machine,
    start_server,
    stop_server,
    top_functions,
    wrk,
    wrk_line,
)
from werkzeug.test import EnvironBuilder

sys.path.insert(0, str(Path(__file__).parent.parent))

from tests.helpers.postgres import PostgresServer

RESULTS = Path(__file__).parent / "results" / "http_ratio.txt"
CONNECTIONS = (1, 2, 8)
GOAL_CONNECTIONS = 8
WORKERS = (1, 2)
RATIO_GOAL = 0.35
SCALING_GOAL = 1.8


@contextmanager
def databases(source: Path, work: Path) -> Iterator[dict[str, tuple[str, str]]]:
    """Each backend's served database and its organization's key, by backend name."""
    sqlite = work / "served.db"
    served = {"sqlite": (str(sqlite), copy_with_org(source, sqlite, "Ratio bench"))}
    with PostgresServer.running() as cluster:
        url = cluster.create_database()
        companies, contacts = SIZES["small"]
        subprocess.run(
            [CLI, "demo-data", "--db", url, "--companies", str(companies),
             "--contacts", str(contacts), "--seed", "7"],
            check=True, capture_output=True,
        )  # fmt: skip
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE")  # what autovacuum would do a minute later
        served["postgresql"] = (url, add_org(url, "Ratio bench"))
        yield served


# (workers, connections): enrich's requests/s, enrich / healthz, healthz's requests/s
Figures = dict[tuple[int, int], tuple[float, float, float]]


def throughput(
    backend: str, db: str, key: str, bodies: Sequence[Any], seconds: int, work: Path
) -> tuple[list[str], Figures]:
    """wrk on /healthz, /v7/enrich, /healthz for each worker count and number of connections:
    the lines, and enrich's requests/s and enrich / healthz by (workers, connections)."""
    script = work / f"enrich-{backend}.lua"
    script.write_text(lua_script(bodies, {"apikey": key}, "/v7/enrich"))
    lines: list[str] = []
    figures: Figures = {}
    for workers in WORKERS:
        port = free_port()
        command = [CLI, "serve", "--db", db, "--port", str(port), "--workers", str(workers)]
        log = work / f"serve-{backend}-{workers}.log"
        server = start_server(Path(db), port, workers, log, command)
        try:
            for connections in CONNECTIONS:
                label = f"{backend} {workers}w {connections}c"
                runs = _bracketed(server.pid, port, connections, seconds, script)
                enrich = runs[1][1]["rps"]
                healthz = (runs[0][1]["rps"] + runs[2][1]["rps"]) / 2
                figures[(workers, connections)] = (enrich, enrich / healthz, healthz)
                lines += [f"{wrk_line(f'{label} {name}', run)}  {cpu}" for name, run, cpu in runs]
                lines.append(f"{label} enrich / healthz {enrich / healthz:.2f}")
                print("\n".join(lines[-4:]), flush=True)
        finally:
            stop_server(server)
    return lines, figures


def _bracketed(
    group: int, port: int, connections: int, seconds: int, script: Path
) -> list[tuple[str, dict[str, float], str]]:
    """/healthz, /v7/enrich, /healthz again (the machine is shared: the baseline brackets
    what it is compared to); each run's figures and the server's CPU per request."""
    runs = []
    for name, path, lua in (
        ("healthz", "/healthz", None),
        ("enrich", "/v7/enrich", script),
        ("healthz again", "/healthz", None),
    ):
        before = _group_cpu(group)
        run = wrk(f"http://127.0.0.1:{port}{path}", connections, seconds, lua)
        cpu = _group_cpu(group) - before
        runs.append((name, run, f"server CPU {1e3 * cpu / (run['rps'] * seconds):.3f} ms/req"))
    return runs


def _group_cpu(group: int) -> float:
    """CPU seconds (user and system) of the living processes of session `group` (a server
    started by serving.start_server: its master and workers)."""
    ticks = sum(int(f[11]) + int(f[12]) for _, f in process_stats() if int(f[3]) == group)
    return ticks / os.sysconf("SC_CLK_TCK")


def summary(figures: dict[str, Figures]) -> list[str]:
    """The figures the issue asks for, each backend on one line, with the goals."""
    lines = []
    for backend, by_run in figures.items():
        ratio = by_run[(2, GOAL_CONNECTIONS)][1]
        goal = (
            f" (goal >= {RATIO_GOAL} {_mark(ratio >= RATIO_GOAL)})" if backend == "sqlite" else ""
        )
        lines.append(
            f"{backend:<10} 2 workers, {GOAL_CONNECTIONS} connections: "
            f"enrich / healthz {ratio:.2f}{goal}"
        )
        for label, two, one in (
            (f"at {GOAL_CONNECTIONS} connections", (2, GOAL_CONNECTIONS), (1, GOAL_CONNECTIONS)),
            ("a connection per worker (2w 2c / 1w 1c)", (2, 2), (1, 1)),
        ):
            scaling = by_run[two][0] / by_run[one][0]
            goal = ""
            if backend == "sqlite":
                goal = f" (goal >= {SCALING_GOAL} {_mark(scaling >= SCALING_GOAL)})"
            lines.append(
                f"{backend:<10} 2 workers / 1 worker {label}: enrich {scaling:.2f}x{goal}; "
                f"healthz, which touches no database, {by_run[two][2] / by_run[one][2]:.2f}x"
            )
    return lines


def _mark(ok: bool) -> str:
    return "pass" if ok else "FAIL"


# --- in-process ------------------------------------------------------------------------------


def _app(db: str) -> Any:
    os.environ["CONTACTDATA_KEY_SECRET"] = SECRET
    from connector import app
    from server import config

    return app.create_app(config.load({"DB": db}))  # the app `contactdata serve` serves


Request = tuple[dict[str, Any], bytes]


def _request(key: str, body: Any) -> Request:
    """The WSGI environ of POST /v7/enrich with `body`, as gunicorn would pass it, and the body."""
    builder = EnvironBuilder(
        path="/v7/enrich", method="POST", data=json.dumps(body),
        headers={"apikey": key, "Content-Type": "application/json"},
    )  # fmt: skip
    environ = builder.get_environ()
    return environ, environ["wsgi.input"].read()


def _call(app: Any, request: Request) -> None:
    """One request straight through the WSGI callable, its answer read to the end."""
    environ, body = request
    started: list[str] = []
    answer = app.wsgi_app(
        {**environ, "wsgi.input": io.BytesIO(body)},
        lambda status, headers, *_: started.append(status),
    )
    b"".join(answer)
    if not started[0].startswith("200"):
        raise RuntimeError(f"enrich answered {started[0]}")


def _requests(db: str, key: str, bodies: Sequence[Any]) -> tuple[Any, list[Request]]:
    app, requests = _app(db), [_request(key, body) for body in bodies]
    for request in requests[:20]:  # warm up: connections, caches
        _call(app, request)
    return app, requests


ROUNDS = 5


def breakdown(backend: str, db: str, key: str, bodies: Sequence[Any], calls: int) -> list[str]:
    """CPU of this process per call through the WSGI app (the least of ROUNDS rounds of
    `calls`, so that other load counts least): /healthz, /v7/enrich, and enrich's steps."""
    app, requests = _requests(db, key, bodies)
    healthz = (EnvironBuilder(path="/healthz").get_environ(), b"")
    healthz_ms = _least_cpu(lambda: _call(app, healthz), calls)[0]
    cycle = _cycle(requests)
    enrich_ms = _least_cpu(lambda: _call(app, next(cycle)), calls)[0]
    with _timed_steps(app) as steps:
        _, by_step = _least_cpu(lambda: _call(app, next(cycle)), calls, steps)
    shown = ", ".join(f"{name} {ms:.3f}" for name, ms in by_step.items())
    rest = enrich_ms - sum(by_step.values())
    lines = [
        f"{backend:<10} in-process CPU a call: healthz {healthz_ms:.3f} ms, enrich "
        f"{enrich_ms:.3f} ms = {shown}, the rest (Flask, hooks) {rest:.3f}"
    ]
    if backend == "sqlite":
        lines.append(_after_other_writes(db, lambda: _call(app, next(cycle)), calls, enrich_ms))
    return lines


def _after_other_writes(db: str, call: Callable[[], None], calls: int, alone_ms: float) -> str:
    """Enrich's CPU a call when another connection commits to the database before each call,
    as the other gunicorn worker does: SQLite then empties this connection's page cache."""
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("CREATE TABLE IF NOT EXISTS bench_other_writer (n INTEGER)")

    def commit() -> None:
        other.execute("INSERT INTO bench_other_writer VALUES (1)")

    commit_ms = _least_cpu(commit, calls)[0]
    both_ms = _least_cpu(lambda: (commit(), call()), calls)[0]
    other.close()
    return (
        f"{'':<10} ... with another connection committing before each call: enrich "
        f"{both_ms - commit_ms:.3f} ms (alone {alone_ms:.3f}; the other's commit, "
        f"{commit_ms:.3f} ms, taken off)"
    )


def _cycle(requests: Sequence[Request]) -> Iterator[Request]:
    """The requests in turn, for ever."""
    while True:
        yield from requests


def _least_cpu(
    call: Callable[[], None], calls: int, steps: dict[str, float] | None = None
) -> tuple[float, dict[str, float]]:
    """The least CPU milliseconds a call over ROUNDS rounds of `calls` calls, and `steps`'
    CPU seconds in that round, in milliseconds a call."""
    best: tuple[float, dict[str, float]] = (float("inf"), {})
    for _ in range(ROUNDS):
        if steps is not None:
            steps.clear()
        started = time.process_time()
        for _ in range(calls):
            call()
        per_call = 1e3 * (time.process_time() - started) / calls
        if per_call < best[0]:
            best = (per_call, {name: 1e3 * s / calls for name, s in (steps or {}).items()})
    return best


@contextmanager
def _timed_steps(app: Any) -> Iterator[dict[str, float]]:
    """Inside, the CPU seconds spent in each step of an enrich call add up by step name."""
    from server import auth, enrich, matching
    from server.http import enrich_api

    steps: dict[str, float] = {}
    limiter = app.extensions["limiter"]
    wrapped = [
        ("authenticate", auth, "authenticate"),
        ("rate limit", limiter, "hit"),
        ("parse body", enrich_api, "json_body"),
        ("match", matching, "find_probed"),
        ("read rows shown", enrich, "_view"),
        ("charge and record", enrich, "_deliver"),
        ("result", enrich, "build_result"),
        ("JSON answer", enrich_api, "jsonify"),
    ]
    originals = [(owner, name, getattr(owner, name)) for _, owner, name in wrapped]
    for (step, owner, name), (_, _, original) in zip(wrapped, originals, strict=True):
        setattr(owner, name, _timing(original, step, steps))
    try:
        yield steps
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)


def _timing(function: Any, step: str, steps: dict[str, float]) -> Any:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            steps[step] = steps.get(step, 0.0) + time.process_time() - started

    return timed


def profile(db: str, key: str, bodies: Sequence[Any], calls: int) -> list[str]:
    """cProfile of `calls` enrich calls through the WSGI app: the top 15 by own time."""
    app, requests = _requests(db, key, bodies)
    profiler = cProfile.Profile()
    profiler.enable()
    for i in range(calls):
        _call(app, requests[i % len(requests)])
    profiler.disable()
    total, table = top_functions(profiler, 15)
    return [f"cProfile, {calls} calls on SQLite through the WSGI app: {total}", *table]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=DEFAULT_DBS["small"])
    parser.add_argument("--seconds", type=int, default=10, help="length of each wrk run")
    parser.add_argument("--quick", action="store_true", help="3 s a wrk run, fewer calls")
    options = parser.parse_args()
    seconds, calls = (3, 300) if options.quick else (options.seconds, 2_000)
    ensure_database(options.db, "small")
    lines = [
        f"bench/http_ratio.py on {machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        f"wrk, {seconds} s a run, {CONNECTIONS} connections, {HTTP_BODIES} known queries in turn",
    ]
    print("\n".join(lines), flush=True)
    bodies = bodies_for(options.db)
    with tempfile.TemporaryDirectory(prefix="bench-ratio-") as work:
        figures: dict[str, Figures] = {}
        cpu_lines: list[str] = []
        with databases(options.db, Path(work)) as served:
            for backend, (db, key) in served.items():
                measured, figures[backend] = throughput(
                    backend, db, key, bodies, seconds, Path(work)
                )
                lines += measured
                cpu_lines += breakdown(backend, db, key, bodies, calls)
            db, key = served["sqlite"]
            profiled = profile(db, key, bodies, calls)
    lines += ["", *summary(figures), "", *cpu_lines, "", *profiled]
    print("\n".join(lines[-25:]))
    RESULTS.write_text("\n".join(line.rstrip() for line in lines) + "\n")


if __name__ == "__main__":
    main()
