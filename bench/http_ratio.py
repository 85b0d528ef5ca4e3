"""Benchmark: enrich against /healthz over HTTP at 8 connections, on SQLite and on PostgreSQL.

    PYTHONPATH=. .venv/bin/python bench/http_ratio.py            # 10 s a wrk run
    PYTHONPATH=. .venv/bin/python bench/http_ratio.py --quick    # 3 s a run, fewer profiled calls

Data: the demo-size dataset (5,000 companies, 100,000 contacts, seed 7; var/bench-demo.db,
built when missing), copied for SQLite and generated again with the same seed into a database
of a throwaway PostgreSQL cluster (tests/helpers/postgres.py); each gets one unlimited
enterprise_plus organization. Rate limits: the default limiter (`<db>.limits` on SQLite,
tables of the database on PostgreSQL); no Redis.

Throughput: `contactdata serve` with 1, then 2 sync workers on each backend; wrk at 8
connections on GET /healthz, POST /v7/enrich (bench/enrich.py's 500 known queries in turn),
then /healthz again, one server; enrich / healthz (the mean of the two) for each, and on each
backend enrich with 2 workers / 1 worker. Targets (issue 23): on SQLite with 2 workers enrich
/ healthz >= 0.35; enrich 2 workers / 1 worker >= 1.8.

Where the time goes: one enrich call in-process through the WSGI app (no HTTP), CPU per call
on each backend, and a cProfile of the SQLite calls, the top functions by own time.
Writes bench/results/http_ratio.txt.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
from enrich import HTTP_BODIES
from enrich_workers import bodies_for
from serving import (
    CLI,
    DEFAULT_DBS,
    SECRET,
    SIZES,
    add_org,
    baseline_rps,
    copy_with_org,
    ensure_database,
    free_port,
    lua_script,
    machine,
    start_server,
    stop_server,
    wrk,
    wrk_line,
)
from werkzeug.test import EnvironBuilder

sys.path.insert(0, str(Path(__file__).parent.parent))

from tests.helpers.postgres import PostgresServer

RESULTS = Path(__file__).parent / "results" / "http_ratio.txt"
CONNECTIONS = 8
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


def throughput(
    backend: str, db: str, key: str, bodies: Sequence[Any], seconds: int, work: Path
) -> tuple[list[str], dict[int, tuple[float, float]]]:
    """wrk on /healthz, /v7/enrich, /healthz at CONNECTIONS for each worker count: the lines,
    and by worker count enrich's requests/s and enrich / healthz."""
    script = work / f"enrich-{backend}.lua"
    script.write_text(lua_script(bodies, {"apikey": key}, "/v7/enrich"))
    lines, figures = [], {}
    for workers in WORKERS:
        port = free_port()
        command = [CLI, "serve", "--db", db, "--port", str(port), "--workers", str(workers)]
        log = work / f"serve-{backend}-{workers}.log"
        server = start_server(Path(db), port, workers, log, command)
        base = f"http://127.0.0.1:{port}"
        try:
            runs = [
                (name, *_with_cpu(server.pid, base + path, seconds, lua))
                for name, path, lua in (
                    ("healthz", "/healthz", None),
                    ("enrich", "/v7/enrich", script),
                    ("healthz again", "/healthz", None),
                )
            ]
        finally:
            stop_server(server)
        enrich = runs[1][1]["rps"]
        figures[workers] = (enrich, enrich / baseline_rps([(n, r) for n, r, _ in runs]))
        lines += [
            f"{wrk_line(f'{backend} {workers}w {name}', run)}  server CPU "
            f"{1e3 * cpu / (run['rps'] * seconds):.3f} ms/req"
            for name, run, cpu in runs
        ]
        lines.append(f"{backend} {workers}w enrich / healthz {figures[workers][1]:.2f}")
        print("\n".join(lines[-4:]), flush=True)
    return lines, figures


def _with_cpu(
    group: int, url: str, seconds: int, script: Path | None
) -> tuple[dict[str, float], float]:
    """wrk at CONNECTIONS on `url`: its figures, and the CPU seconds the processes of session
    `group` (the server's master and workers) used meanwhile."""
    before = _group_cpu(group)
    figures = wrk(url, CONNECTIONS, seconds, script)
    return figures, _group_cpu(group) - before


def _group_cpu(group: int) -> float:
    """CPU seconds (user and system) of the living processes of session `group`."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended meanwhile
            continue
        if int(fields[3]) == group:  # fields[3] is the session id
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def summary(figures: dict[str, dict[int, tuple[float, float]]]) -> list[str]:
    """The figures the issue asks for, each backend on one line, with the goals."""
    lines = []
    for backend, by_workers in figures.items():
        ratio, scaling = by_workers[2][1], by_workers[2][0] / by_workers[1][0]
        goals = ""
        if backend == "sqlite":
            goals = (
                f"  (goals: ratio >= {RATIO_GOAL} {_mark(ratio >= RATIO_GOAL)}, "
                f"2w/1w >= {SCALING_GOAL} {_mark(scaling >= SCALING_GOAL)})"
            )
        lines.append(
            f"{backend:<10} 2 workers, {CONNECTIONS} connections: enrich / healthz {ratio:.2f}; "
            f"enrich 2 workers / 1 worker {scaling:.2f}x{goals}"
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


def cpu_per_call(backend: str, db: str, key: str, bodies: Sequence[Any], calls: int) -> str:
    """`calls` enrich calls through the WSGI app: wall and CPU time of this process a call."""
    app, requests = _requests(db, key, bodies)
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(calls):
        _call(app, requests[i % len(requests)])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return (
        f"{backend:<10} in-process, {calls} calls: {1e3 * wall / calls:.3f} ms a call, "
        f"of which CPU of this process {1e3 * cpu / calls:.3f} ms"
    )


def profile(db: str, key: str, bodies: Sequence[Any], calls: int) -> list[str]:
    """cProfile of `calls` enrich calls through the WSGI app: the top 15 by own time."""
    app, requests = _requests(db, key, bodies)
    profiler = cProfile.Profile()
    profiler.enable()
    for i in range(calls):
        _call(app, requests[i % len(requests)])
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(15)
    table = text.getvalue().splitlines()
    begin = next(i for i, line in enumerate(table) if "ncalls" in line)
    total = next(line for line in table if "function calls" in line).strip()
    return [f"cProfile, {calls} calls on SQLite through the WSGI app: {total}", *table[begin:]]


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
        figures: dict[str, dict[int, tuple[float, float]]] = {}
        cpu_lines: list[str] = []
        with databases(options.db, Path(work)) as served:
            for backend, (db, key) in served.items():
                measured, figures[backend] = throughput(
                    backend, db, key, bodies, seconds, Path(work)
                )
                lines += measured
                cpu_lines.append(cpu_per_call(backend, db, key, bodies, calls))
            db, key = served["sqlite"]
            profiled = profile(db, key, bodies, calls)
    lines += ["", *summary(figures), "", *cpu_lines, "", *profiled]
    print("\n".join(lines[-25:]))
    RESULTS.write_text("\n".join(line.rstrip() for line in lines) + "\n")


if __name__ == "__main__":
    main()
