"""Benchmark: enrich with PostgreSQL one network hop away, at 1 and 12 connections, beside a read
route and hello, with the round trips each request takes (issue 36, "measured past one machine").

    .venv/bin/python bench/cluster.py          # 1 ms a round trip, 2 workers x 6 threads, 10 s runs
    .venv/bin/python bench/cluster.py --round-trip-ms 2 --workers 4 --threads 3 --seconds 5

Data: the demo-size dataset (var/bench-demo.db, 5,000 companies / 100,000 contacts, seed 7,
built when missing) exported and imported into a database of a throwaway PostgreSQL cluster
(tests/helpers/postgres.py, fsync off as in the tests), with one unlimited enterprise_plus
organization; the rate limits in a throwaway `redis-server`, reached directly. Enrich bodies:
the 500 known queries of bench/enrich.py (seed 7), in turn.

The hop: a TCP proxy in this process between the server and PostgreSQL sends every chunk on
DELAY ms after the kernel received it, each way (a thread a direction, `time.sleep` with 1 µs
timer slack), and counts round trips: a client burst after a server reply is one. DELAY is
calibrated before the runs so that a round trip through the proxy (`SELECT 1`, the median of
200) takes the asked round trip (1 ms) more than directly: the threads' wake-ups and forwarding
are part of the hop, not added to it (0.5 ms each way made a 1.2 ms round trip). A run's
round trips a request are what the proxy counted less what an idle period of the same length
counted, over the requests wrk got answered; requests sent one at a time cross-check it.

The server: bench/hello_app.py, the service's app as `contactdata serve` runs it (gunicorn,
`--workers` workers of `--threads` threads, server/http/serve.py's settings: 2 x 6 keep 12
requests in flight) plus GET /hello, a route that touches no database. wrk at 1 and 12
connections on GET /hello, POST /signals/v1/key/view (`{}`, the key in Api-Key: a read) and
POST /v7/enrich; then enrich at 1 connection through the proxy at 0 ms (the proxy's own cost);
from a second server, on PostgreSQL directly; and from a third, of `--sync-workers` sync
workers (12: a request in flight each), enrich at 1 and 12 connections through the proxy,
what threads are compared with.
wrk runs 1 thread at 1 connection, 2 at 12 (bench/serving.py `wrk_command`). Each run prints
its CPU a request by process (workers, PostgreSQL, proxy, Redis, wrk) and how many of the
machine's cores were busy, by these and by everything (the machine is shared). Then, in this
process through the app (Flask's test client, no HTTP): the statements of an enrich and their
times at DELAY and on loopback (as bench/pg_speed.py `statement_times`), the API's path p50 on
loopback, and a cProfile of enrich on loopback, the top functions by own time.

Targets (issue 36), printed with pass/FAIL: enrich alone (1 connection) p50 <= 10 ms at the
round trip; enrich at 12 connections >= 6x its rate at 1; enrich p50 <= 2 ms on loopback PostgreSQL.
Writes bench/results/cluster.txt.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import resource
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent.parent))

import psycopg
from dataset import process_stats
from enrich_workers import bodies_for
from import_pg import cluster_cpu
from pg_speed import load_postgres, profile, statement_times
from serving import (
    DEFAULT_DBS,
    HERE,
    SECRET,
    add_org,
    ensure_database,
    free_port,
    lua_script,
    machine,
    percentile,
    start_server,
    stop_server,
    wrk_command,
    wrk_figures,
)

from server.http import app as service
from server.storage import db as database
from tests.helpers.postgres import PostgresServer
from tests.helpers.redis_server import redis_server

RESULTS = HERE / "results" / "cluster.txt"
CONNECTIONS = (1, 12)
SINGLE_REQUESTS = 20
PROFILED_AT_DELAY, PROFILED_LOOPBACK, WARM_UP, PROFILED = 100, 1_000, 100, 300
CALIBRATIONS = 8  # tries at the proxy's delay, each measured by round_trip_ms
GOALS = {"alone_ms": 10.0, "scaling": 6.0, "loopback_ms": 2.0}
TICK = os.sysconf("SC_CLK_TCK")
CONSUMERS = ("workers", "PostgreSQL", "proxy", "Redis", "wrk")  # of CPU, measured a run


# --- the hop ---------------------------------------------------------------------------------

# Linux's numbers (asm-generic/socket.h, linux/prctl.h), which Python 3.11's modules do not name.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
PR_SET_TIMERSLACK = 29


class DelayingProxy:
    """A loopback TCP proxy to `target_port` that sends every chunk on `delay` seconds after
    the kernel received it, each way, and counts round trips (a client burst after a server
    reply). One thread a direction a connection."""

    def __init__(self, target_port: int, delay: float) -> None:
        self.target_port, self.delay = target_port, delay
        self.round_trips = 0
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, url: str) -> str:
        """`url`, a database of the cluster, reached through the proxy."""
        return re.sub(r"@127\.0\.0\.1:\d+/", f"@127.0.0.1:{self.port}/", url)

    def close(self) -> None:
        for sock in [self._listener, *self._sockets]:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self) -> None:
        # 1 µs, not 50: a sleep of this thread and of those it starts ends when it should.
        ctypes.CDLL(None).prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0)
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            self._sockets += [client, server]
            last_to_speak = ["server"]  # so the client's first message counts
            for source, sink, side in ((client, server, "client"), (server, client, "server")):
                relay = (source, sink, last_to_speak, side)
                threading.Thread(target=self._relay, args=relay, daemon=True).start()

    def _relay(
        self, source: socket.socket, sink: socket.socket, last: list[str], side: str
    ) -> None:
        """Send each chunk from `source` to `sink` when it is due; count a round trip when the
        client speaks after the server did; at the end of the stream, end the other side's."""
        while chunk := _receive(source):
            data, arrived = chunk
            if side == "client" and last[0] == "server":
                with self._lock:
                    self.round_trips += 1
            last[0] = side
            if (wait := arrived + self.delay - time.time()) > 0:
                time.sleep(wait)
            try:
                sink.sendall(data)
            except OSError:
                break
        with suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _receive(source: socket.socket) -> tuple[bytes, float] | None:
    """The next chunk and when the kernel received it (None at the end): a chunk that came
    while the relay slept is due its delay after it came, not after it was read."""
    try:
        data, ancillary, _, _ = source.recvmsg(65536, socket.CMSG_SPACE(16))
    except OSError:
        return None
    if not data:
        return None
    for level, kind, value in ancillary:
        if (level, kind) == (socket.SOL_SOCKET, SO_TIMESTAMPNS):
            seconds, nanoseconds = struct.unpack("qq", value[:16])
            return data, seconds + nanoseconds / 1e9
    return data, time.time()


def calibrated(proxy: DelayingProxy, url: str, round_trip: float) -> str:
    """Set the proxy's delay so that a round trip through it takes `round_trip` seconds more
    than one directly (its wake-ups and forwarding included); the line saying so."""
    direct = min(round_trip_ms(url) for _ in range(3))  # the first connection's is slower
    proxied = proxy.url(url)
    proxy.delay = round_trip / 2
    for _ in range(CALIBRATIONS):
        added = round_trip_ms(proxied) / 1e3 - direct / 1e3
        if abs(added - round_trip) < round_trip / 100:
            break
        proxy.delay = max(0.0, proxy.delay + (round_trip - added) / 2)
    through = round_trip_ms(proxied)
    return (
        f"PostgreSQL one hop away: a loopback TCP proxy (this process's threads) holding each "
        f"chunk {1e3 * proxy.delay:.3f} ms each way, calibrated: SELECT 1 takes {through:.3f} ms "
        f"through it, {direct:.3f} ms directly, so the hop adds {through - direct:.3f} ms a "
        f"round trip (asked {1e3 * round_trip:g}); Redis reached directly"
    )


def round_trip_ms(url: str, calls: int = 200) -> float:
    """The median ms of `SELECT 1` on a new connection to `url`: one round trip."""
    with psycopg.connect(url, autocommit=True) as conn:
        spent = []
        for _ in range(calls):
            started = time.perf_counter_ns()
            conn.execute("SELECT 1").fetchone()
            spent.append(time.perf_counter_ns() - started)
    return percentile(sorted(spent), 50)


# --- CPU ---------------------------------------------------------------------------------------


def machine_busy() -> float:
    """CPU seconds the whole machine has been busy so far, every core's, from /proc/stat."""
    user, nice, system, _, _, irq, softirq, steal = map(
        int, Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]
    )
    return (user + nice + system + irq + softirq + steal) / TICK


def redis_cpu() -> float:
    """CPU seconds of this process's children that run redis-server (tests/helpers's)."""
    ticks = 0
    for pid, fields in process_stats():
        with suppress(OSError):
            if int(fields[1]) == os.getpid() and _command(pid) == "redis-server":
                ticks += int(fields[11]) + int(fields[12])
    return ticks / TICK


def _command(pid: int) -> str:
    return Path(f"/proc/{pid}/comm").read_text().strip()


def group_cpu(group: int) -> float:
    """CPU seconds of the living processes of session `group` (a server's master and workers)."""
    ticks = sum(int(f[11]) + int(f[12]) for _, f in process_stats() if int(f[3]) == group)
    return ticks / TICK


@dataclass
class Meters:
    """What a run is measured by: the server, the cluster and the proxy."""

    server: subprocess.Popen[bytes]
    cluster: PostgresServer
    proxy: DelayingProxy

    def read(self) -> dict[str, float]:
        """Round trips and CPU seconds so far, by whom; the machine's busy CPU seconds; the
        clock."""
        busy = machine_busy()
        return {
            "round trips": self.proxy.round_trips,
            "workers": group_cpu(self.server.pid),
            "PostgreSQL": cluster_cpu(self.cluster),
            "proxy": time.process_time(),  # this process: its proxy threads, its idle main one
            "Redis": redis_cpu(),
            "wrk": _children_cpu(),
            "busy": busy,
            "wall": time.monotonic(),
        }


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# --- runs ------------------------------------------------------------------------------------


@dataclass
class Run:
    """One wrk run: wrk's figures, the requests answered, and what the meters counted."""

    name: str
    connections: int
    figures: dict[str, float]
    requests: int
    counted: dict[str, float]

    def per_request(self, what: str) -> float:
        return self.counted[what] / self.requests

    def line(self) -> str:
        f, wall = self.figures, self.counted["wall"]
        ours = sum(self.counted[w] for w in CONSUMERS)
        per_ms = "  ".join(f"{1e3 * self.per_request(w):5.2f}" for w in CONSUMERS)
        return (
            f"{self.name:<26} {self.connections:>2}  {f['rps']:7,.0f}  {f['p50']:6.2f}  "
            f"{f['p99']:6.2f}  {f['errors']:>5,.0f}  {self.per_request('round trips'):6.2f}   "
            f"{per_ms}   {ours / wall:4.2f} / {self.counted['busy'] / wall:4.2f}"
        )


RUN_HEADER = (
    f"{'route':<26} {'c':>2}  {'req/s':>7}  {'p50 ms':>6}  {'p99 ms':>6}  {'non2xx':>5}  "
    f"{'RT/req':>6}   CPU ms/req: workers PostgreSQL proxy Redis wrk   cores busy: these / all"
)


def wrk_run(
    meters: Meters, name: str, url: str, connections: int, seconds: int, script: Path | None,
    idle_rate: float = 0.0,
) -> Run:  # fmt: skip
    """wrk on `url`; the round trips counted less `idle_rate` a second, and CPU, over the run."""
    before = meters.read()
    command = wrk_command(url, connections, seconds, script)
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    after = meters.read()
    counted = {what: after[what] - before[what] for what in before}
    counted["round trips"] -= idle_rate * counted["wall"]
    requests = int(re.search(r"(\d+) requests in", output).group(1))  # type: ignore[union-attr]
    run = Run(name, connections, wrk_figures(output), requests, counted)
    print(run.line(), flush=True)
    return run


def idle_round_trips(proxy: DelayingProxy, seconds: int) -> float:
    """Round trips a second the proxy counts while nobody calls the server."""
    before = proxy.round_trips
    time.sleep(seconds)
    return (proxy.round_trips - before) / seconds


def one_at_a_time(
    proxy: DelayingProxy, port: int, path: str, headers: dict[str, str], body: Any
) -> Counter[int]:
    """Round trips of SINGLE_REQUESTS requests sent one after another, each counted alone."""
    counts: Counter[int] = Counter()
    for n in range(SINGLE_REQUESTS):
        before = proxy.round_trips
        data = None if body is None else json.dumps(body[n % len(body)]).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}{path}", data=data,
            headers={"Content-Type": "application/json", **headers},
        )  # fmt: skip
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
        time.sleep(0.05)  # anything the worker sends after answering
        counts[proxy.round_trips - before] += 1
    return counts


@contextmanager
def serving(db_url: str, redis_url: str, workers: int, threads: int, work: Path) -> Iterator[Any]:
    """bench/hello_app.py on `db_url`, limits in Redis, `workers` workers of `threads` threads:
    its process, port."""
    port = free_port()
    command = ["env", f"CONTACTDATA_RATE_LIMITER={redis_url}", sys.executable,
               str(HERE / "hello_app.py"), "--db", db_url, "--port", str(port),
               "--workers", str(workers), "--threads", str(threads)]  # fmt: skip
    process = start_server(Path(db_url), port, workers, work / f"serve-{port}.log", command)
    try:
        settle(process.pid)
        yield process, port
    finally:
        stop_server(process)


def settle(group: int, quiet: float = 0.05, most: float = 60) -> None:
    """Return once the server's processes took under `quiet` CPU seconds in half a second
    (every worker has booted), or after `most` seconds."""
    deadline, before = time.monotonic() + most, group_cpu(group)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        spent, before = group_cpu(group) - before, group_cpu(group)
        if spent < quiet:
            return


@dataclass
class Setup:
    """What every run uses: the cluster, its database, the proxy, Redis, the key and scripts."""

    cluster: PostgresServer
    url: str
    proxy: DelayingProxy
    redis_url: str
    key: str
    bodies: list[dict[str, str]]
    scripts: dict[str, Path]
    workers: int
    threads: int
    sync_workers: int
    seconds: int
    work: Path
    round_trip: float  # seconds a round trip through the proxy adds (its delay is calibrated)


def routes(setup: Setup) -> list[tuple[str, str, Path | None]]:
    return [
        ("hello", "/hello", None),
        ("key/view (a read)", "/signals/v1/key/view", setup.scripts["view"]),
        ("enrich", "/v7/enrich", setup.scripts["enrich"]),
    ]


def proxied_runs(setup: Setup) -> tuple[list[Run], list[str]]:
    """Each route at 1 and 12 connections through the proxy, then enrich with the proxy at
    0 ms; the requests one at a time; the runs and the lines of the idle and one-at-a-time
    counts."""
    proxied = setup.proxy.url(setup.url)
    with serving(proxied, setup.redis_url, setup.workers, setup.threads, setup.work) as (
        process,
        port,
    ):
        meters = Meters(process, setup.cluster, setup.proxy)
        base = f"http://127.0.0.1:{port}"
        for _, path, script in routes(setup):  # every worker booted, connected and warm
            wrk_run(meters, "(warm-up)", base + path, max(CONNECTIONS), 2, script)
        time.sleep(1)
        idle = idle_round_trips(setup.proxy, setup.seconds)
        runs = [
            wrk_run(meters, name, base + path, c, setup.seconds, script, idle)
            for name, path, script in routes(setup)
            for c in CONNECTIONS
        ]
        delay, setup.proxy.delay = setup.proxy.delay, 0.0
        enrich = base + "/v7/enrich"
        runs.append(wrk_run(meters, "enrich, proxy at 0 ms", enrich, 1, setup.seconds,
                            setup.scripts["enrich"], idle))  # fmt: skip
        setup.proxy.delay = delay
        singles = singles_lines(setup, port)
    return runs, [f"idle: the proxy counted {idle:.2f} round trips a second", *singles]


def singles_lines(setup: Setup, port: int) -> list[str]:
    """The round trips of single requests, as `count x times`, per route."""
    asked = [
        ("healthz", "/healthz", {}, None),
        ("key/view", "/signals/v1/key/view", {"Api-Key": setup.key}, [{}]),
        ("enrich", "/v7/enrich", {"apikey": setup.key}, setup.bodies),
    ]
    lines = [f"round trips of {SINGLE_REQUESTS} requests sent one at a time (count x requests):"]
    for name, path, headers, bodies in asked:
        counts = one_at_a_time(setup.proxy, port, path, headers, bodies)
        shown = ", ".join(f"{n} x{times}" for n, times in sorted(counts.items()))
        mean = sum(n * times for n, times in counts.items()) / SINGLE_REQUESTS
        lines.append(f"  {name:<9} {shown}  (mean {mean:.2f})")
    return lines


def enrich_runs(
    setup: Setup, db_url: str, workers: int, threads: int, name: str, connections: Sequence[int]
) -> list[Run]:
    """Enrich at each of `connections` from a server of `workers` x `threads` on `db_url`."""
    with serving(db_url, setup.redis_url, workers, threads, setup.work) as (process, port):
        meters = Meters(process, setup.cluster, setup.proxy)
        enrich, script = f"http://127.0.0.1:{port}/v7/enrich", setup.scripts["enrich"]
        wrk_run(meters, "(warm-up)", enrich, max(CONNECTIONS), 2, script)
        return [wrk_run(meters, name, enrich, c, setup.seconds, script) for c in connections]


def direct_run(setup: Setup) -> Run:
    """Enrich at 1 connection from a server on PostgreSQL directly (loopback, no proxy)."""
    name = "enrich, PostgreSQL direct"
    return enrich_runs(setup, setup.url, setup.workers, setup.threads, name, [1])[0]


def sync_runs(setup: Setup) -> list[Run]:
    """Enrich at 1 and 12 connections through the proxy from `sync_workers` sync workers."""
    name = f"enrich, {setup.sync_workers} sync workers"
    return enrich_runs(setup, setup.proxy.url(setup.url), setup.sync_workers, 1, name, CONNECTIONS)


# --- in-process: where an enrich's time goes ---------------------------------------------------


def app_calls(setup: Setup, db_url: str, count: int) -> list[Callable[[], None]]:
    """`count` enrich requests through the service's app on `db_url` (Flask's test client)."""
    settings = {"DB": db_url, "KEY_SECRET": SECRET, "RATE_LIMITER": setup.redis_url}
    client = service.create_app(settings).test_client()

    def call(body: dict[str, str]) -> None:
        answer = client.post("/v7/enrich", json=body, headers={"apikey": setup.key})
        assert answer.status_code == 200, answer.get_data(as_text=True)

    return [lambda body=body: call(body) for body in (setup.bodies * 3)[:count]]


def breakdown(setup: Setup, db_url: str, count: int, where: str) -> tuple[list[str], float]:
    """The statements of `count` enrich requests through the app (after a warm-up), with the
    proxy's round trips and the time outside the statements; and their p50 in ms."""
    calls = app_calls(setup, db_url, WARM_UP + count)
    for call in calls[:WARM_UP]:
        call()
    measured, spent = calls[WARM_UP:], []
    for call in measured:
        started = time.perf_counter_ns()
        call()
        spent.append(time.perf_counter_ns() - started)
    rounds = setup.proxy.round_trips
    started = time.perf_counter()
    lines = statement_times(f"enrich requests through the app {where},", measured)
    whole = 1e3 * (time.perf_counter() - started) / count
    rounds = (setup.proxy.round_trips - rounds) / count
    p50, p99 = percentile(sorted(spent), 50), percentile(sorted(spent), 99)
    database.done(db_url)
    proxied = f"; {rounds:.2f} round trips a call through the proxy" * (db_url != setup.url)
    return [
        f"enrich through the app {where}: p50 {p50:.2f} ms, p99 {p99:.2f} ms ({count} calls); "
        f"{whole:.2f} ms a call while its statements were timed{proxied}",
        *lines,
    ], p50


def where_the_time_goes(setup: Setup) -> tuple[list[str], float]:
    """The proxy's cost a round trip; the statements of an enrich at the delay and on
    loopback; a cProfile of enrich on loopback; the app's p50 on loopback."""
    proxied = setup.proxy.url(setup.url)
    delay, setup.proxy.delay = setup.proxy.delay, 0.0
    at_zero = round_trip_ms(proxied)
    setup.proxy.delay = delay
    direct, at_delay = round_trip_ms(setup.url), round_trip_ms(proxied)
    lines = [
        f"one round trip (SELECT 1, median of 200): PostgreSQL directly {direct:.3f} ms; "
        f"through the proxy at 0 ms {at_zero:.3f} ms, at {1e3 * delay:.3f} ms each way "
        f"{at_delay:.3f} ms",
        "",
    ]
    statements, _ = breakdown(
        setup, proxied, PROFILED_AT_DELAY, f"at {1e3 * setup.round_trip:g} ms a round trip"
    )
    loopback, p50 = breakdown(setup, setup.url, PROFILED_LOOPBACK, "on loopback")
    profiled = profile("enrich requests through the app", app_calls(setup, setup.url, PROFILED))
    database.pg.release(proxied)
    database.pg.release(setup.url)
    return [*lines, *statements, "", *loopback, "", *profiled], p50


# --- the figures -------------------------------------------------------------------------------


def summary(
    runs: Sequence[Run], direct: Run, synced: Sequence[Run], app_p50: float, round_trip: float
) -> list[str]:
    """Each route's scaling, sync workers' beside, how enrich's time at one connection adds up,
    its CPU bound at 12 connections, and the targets."""
    by = {(run.name, run.connections): run for run in runs}
    scaling = {
        name.split(" ")[0]: by[(name, 12)].figures["rps"] / by[(name, 1)].figures["rps"]
        for name in ("hello", "key/view (a read)", "enrich")
    }
    alone, at_zero, busy = by[("enrich", 1)], by[("enrich, proxy at 0 ms", 1)], by[("enrich", 12)]
    trips = alone.per_request("round trips")
    added = (alone.figures["p50"] - at_zero.figures["p50"]) / trips
    ceiling = (os.cpu_count() or 1) / sum(busy.per_request(w) for w in CONSUMERS)
    others = sum(run.counted["busy"] - sum(run.counted[w] for w in CONSUMERS) for run in runs)
    lines = [
        f"the machine's other processes took {others / sum(r.counted['wall'] for r in runs):.2f}"
        " cores on average during these runs (none on a quiet machine)",
        "scaling, 12 connections / 1: "
        + ", ".join(f"{name} {factor:.2f}x" for name, factor in scaling.items())
        + f"; {synced[0].name[len('enrich, ') :]} instead of threads: enrich "
        f"{synced[0].figures['rps']:,.0f} and {synced[1].figures['rps']:,.0f} req/s, "
        f"{synced[1].figures['rps'] / synced[0].figures['rps']:.2f}x",
        f"enrich at 1 connection, p50: {direct.figures['p50']:.2f} ms on PostgreSQL directly; "
        f"{at_zero.figures['p50']:.2f} ms through the proxy at 0 ms (its forwarding); "
        f"{alone.figures['p50']:.2f} ms at {1e3 * round_trip:g} ms a round trip: {trips:.2f} "
        f"round trips x {added:.2f} ms added a round trip (directly + round trips x the hop "
        f"would be {direct.figures['p50'] + trips * 1e3 * round_trip:.2f} ms)",
        f"enrich at 12 connections: {1e3 / ceiling * (os.cpu_count() or 1):.2f} ms of CPU a "
        f"request ({', '.join(CONSUMERS)}), so {os.cpu_count()} cores serve at most "
        f"{ceiling:,.0f} req/s, {ceiling / alone.figures['rps']:.2f}x one connection's rate; "
        f"measured {busy.figures['rps']:,.0f}",
        "",
    ]
    return lines + targets(alone, scaling["enrich"], direct, app_p50, round_trip)


def targets(
    alone: Run, scaling: float, direct: Run, app_p50: float, round_trip: float
) -> list[str]:
    """Each issue-36 target beside its figure, with pass/FAIL."""
    checks = [
        (f"enrich alone (1 connection) p50 at {1e3 * round_trip:g} ms a round trip",
         alone.figures["p50"], "ms", "<=", GOALS["alone_ms"]),
        ("enrich 12 connections / 1 connection", scaling, "x", ">=", GOALS["scaling"]),
        ("enrich p50 on loopback PostgreSQL, over HTTP (wrk, 1 c)", direct.figures["p50"], "ms",
         "<=", GOALS["loopback_ms"]),
        ("enrich p50 on loopback PostgreSQL, the API's path in-process", app_p50, "ms", "<=",
         GOALS["loopback_ms"]),
    ]  # fmt: skip
    return [target_line(*check) for check in checks]


def target_line(label: str, value: float, unit: str, sense: str, goal: float) -> str:
    met = value <= goal if sense == "<=" else value >= goal
    return (
        f"{label:<62} {value:6.2f} {unit:<2}  target {sense} {goal:g}  {'pass' if met else 'FAIL'}"
    )


# --- setup and main ----------------------------------------------------------------------------


@contextmanager
def prepared(options: argparse.Namespace, work: Path) -> Iterator[tuple[Setup, list[str]]]:
    """The cluster with the dataset and the bench's organization, Redis, the proxy, the wrk
    scripts; and the lines saying so."""
    with ExitStack() as stack:
        cluster = stack.enter_context(PostgresServer.running())
        url = cluster.create_database()
        loaded = load_postgres(options.db, url, work)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")  # what autovacuum would do a minute after the load
        key = add_org(url, "Cluster bench")
        redis_url = stack.enter_context(redis_server(work))
        round_trip = options.round_trip_ms / 1e3
        proxy = DelayingProxy(cluster.port, round_trip / 2)
        stack.callback(proxy.close)
        hop = calibrated(proxy, url, round_trip)
        bodies = bodies_for(options.db)
        scripts = {"enrich": work / "enrich.lua", "view": work / "view.lua"}
        scripts["enrich"].write_text(lua_script(bodies, {"apikey": key}, "/v7/enrich"))
        scripts["view"].write_text(lua_script([{}], {"Api-Key": key}, "/signals/v1/key/view"))
        yield Setup(cluster, url, proxy, redis_url, key, bodies, scripts, options.workers,
                    options.threads, options.sync_workers, options.seconds, work,
                    round_trip), [hop, *loaded]  # fmt: skip


def header(options: argparse.Namespace) -> list[str]:
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return [
        f"bench/cluster.py on {machine()}, {when}",
        f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        f"dataset {options.db} on a throwaway PostgreSQL 15 cluster; limits in a throwaway Redis",
        f"server: bench/hello_app.py (the app as `contactdata serve` runs it, plus GET /hello), "
        f"gunicorn, {options.workers} workers x {options.threads} threads (gthread); wrk "
        f"{options.seconds} s a run, 1 thread at 1 connection, 2 at 12",
        f"The machine: the server's {options.workers} workers, PostgreSQL, Redis, the proxy and "
        f"wrk share {os.cpu_count()} cores, so 12 connections are bounded by the CPU before "
        "the network: hello's and the read route's scaling in the same run are the ceiling "
        "enrich's is compared with, and each run's CPU a request says what it costs the machine.",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=DEFAULT_DBS["small"], help="SQLite dataset")
    parser.add_argument("--round-trip-ms", type=float, default=1.0, help="the hop's round trip")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=6, help="a worker's")
    parser.add_argument("--sync-workers", type=int, default=12, help="compared with")
    parser.add_argument("--seconds", type=int, default=10, help="length of each wrk run")
    options = parser.parse_args()
    ensure_database(options.db, "small")
    lines = header(options)
    print("\n".join(lines), flush=True)
    with (
        tempfile.TemporaryDirectory(prefix="bench-cluster-") as work,
        prepared(options, Path(work)) as (setup, loaded),
    ):
        print(RUN_HEADER, flush=True)
        runs, counts = proxied_runs(setup)
        direct = direct_run(setup)
        synced = sync_runs(setup)
        profiled, app_p50 = where_the_time_goes(setup)
    lines += [*loaded, "", RUN_HEADER, *(run.line() for run in [*runs, direct, *synced]), ""]
    lines += [*counts, ""]
    lines += [*summary(runs, direct, synced, app_p50, options.round_trip_ms / 1e3), "", *profiled]
    print("\n".join(lines[lines.index(RUN_HEADER) :]))
    RESULTS.write_text("\n".join(line.rstrip() for line in lines) + "\n")


if __name__ == "__main__":
    main()
