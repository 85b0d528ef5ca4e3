"""What the benchmarks share: the 1M-contact dataset, a copy of it served by gunicorn with an
organization no limit stops, wrk runs against it, and the machine the figures came from."""

from __future__ import annotations

import cProfile
import io
import json
import os
import platform
import pstats
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from server import accounts
from server.clock import utcnow
from server.storage import db as database

HERE = Path(__file__).parent
ROOT = HERE.parent
CLI = str(Path(sys.executable).parent / "contactdata")
SIZES = {"full": (100_000, 1_000_000), "small": (5_000, 100_000)}
DEFAULT_DBS = {"full": ROOT / "var" / "bench-full.db", "small": ROOT / "var" / "bench-demo.db"}
SECRET = "bench-secret"


def ensure_database(path: Path, size: str) -> None:
    """Build the dataset at `path` with `contactdata demo-data` (seed 7) unless it exists."""
    if path.exists():
        return
    companies, contacts = SIZES[size]
    path.parent.mkdir(parents=True, exist_ok=True)
    print(f"building {path} ({companies:,} companies, {contacts:,} contacts)...", flush=True)
    command = [CLI, "demo-data", "--db", str(path), "--companies", str(companies)]
    subprocess.run([*command, "--contacts", str(contacts), "--seed", "7"], check=True)


def read_only(path: Path) -> sqlite3.Connection:
    """A connection that cannot write to the database at `path`."""
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def percentile(sorted_ns: Sequence[int], p: float) -> float:
    """The p-th percentile (nearest rank) in milliseconds of nanosecond timings."""
    rank = max(0, min(len(sorted_ns) - 1, round(p / 100 * len(sorted_ns)) - 1))
    return sorted_ns[rank] / 1e6


def machine() -> str:
    """What the figures were measured on."""
    return (
        f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}"
    )


# --- serving ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_with_org(
    source: Path,
    target: Path,
    name: str,
    *,
    qps: int = 10**6,
    daily_limit: int = 10**9,
    discover_per_minute: int = 10**6,
) -> str:
    """Copy the database (SQLite backup, consistent; migrated) and add one unlimited
    enterprise_plus organization, with limits no benchmark reaches unless given; returns its
    admin key."""
    with read_only(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)
    return add_org(target, name, qps=qps, daily_limit=daily_limit,
                   discover_per_minute=discover_per_minute)  # fmt: skip


def add_org(
    target: str | Path,
    name: str,
    *,
    qps: int = 10**6,
    daily_limit: int = 10**9,
    discover_per_minute: int = 10**6,
) -> str:
    """Add one enterprise_plus organization to the database at `target` (a SQLite file or a
    postgresql:// URL, migrated), with limits no benchmark reaches unless given; its admin key."""
    db = database.connect(target)
    _, key = accounts.create_organization(
        db, SECRET.encode(), utcnow(), name=name, website="bench.example",
        tier="enterprise_plus", qps=qps, daily_limit=daily_limit,
        discover_per_minute=discover_per_minute,
    )  # fmt: skip
    db.conn.close()
    return key


def start_server(
    path: Path, port: int, workers: int, log: Path, command: list[str] | None = None
) -> subprocess.Popen[bytes]:
    """bench/hello_app.py under gunicorn on `path` (or `command`, serving on `port`); returns
    once /healthz answers."""
    # the URL platforms call is this server's: HubSpot's signatures cover it
    env = {**os.environ, "CONTACTDATA_KEY_SECRET": SECRET,
           "CONTACTDATA_PUBLIC_URL": f"http://127.0.0.1:{port}"}  # fmt: skip
    hello = [sys.executable, str(HERE / "hello_app.py"), "--db", str(path), "--port", str(port)]
    with log.open("wb") as output:
        process = subprocess.Popen(
            command or [*hello, "--workers", str(workers)],
            stdout=output,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    for _ in range(600):
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                return process
        except OSError:
            time.sleep(0.1)
    stop_server(process)
    raise RuntimeError("server did not start in 60 s")


def stop_server(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=30)


def post(port: int, path: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
    """POST a JSON body; the status and the JSON answer ({} for an HTTP error)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **headers},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, {}


# --- wrk -------------------------------------------------------------------------------------


def lua_script(bodies: Sequence[Any], headers: dict[str, str], path: str) -> str:
    """A wrk script POSTing `bodies` to `path` in turn, each thread from its own offset."""
    items = ",\n".join(f"  [==[{json.dumps(body)}]==]" for body in bodies)
    sent = {"Content-Type": "application/json", **headers}
    header_table = ", ".join(f'["{name}"] = "{value}"' for name, value in sent.items())
    return f"""local bodies = {{
{items}
}}
local headers = {{ {header_table} }}
local i = 0
function setup(thread)
  thread:set("offset", math.random(#bodies))
end
function init(args)
  i = offset or 0
end
function request()
  i = i % #bodies + 1
  return wrk.format("POST", "{path}", headers, bodies[i])
end
"""


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def wrk(url: str, connections: int, seconds: int, script: Path | None) -> dict[str, float]:
    """Run wrk; requests/s, p50 and p99 in ms, and responses that were not 2xx/3xx."""
    command = wrk_command(url, connections, seconds, script)
    return wrk_figures(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


def wrk_together(
    runs: Sequence[tuple[str, int, Path | None]], seconds: int
) -> list[dict[str, float]]:
    """One wrk process per (url, connections, script) of `runs`, all at the same time for
    `seconds`; the figures of each, as `wrk` gives them."""
    processes = [
        subprocess.Popen(
            wrk_command(url, connections, seconds, script),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for url, connections, script in runs
    ]
    outputs = [process.communicate() for process in processes]
    for process, (output, errors) in zip(processes, outputs, strict=True):
        if process.returncode:
            raise subprocess.CalledProcessError(process.returncode, process.args, output, errors)
    return [wrk_figures(output) for output, _ in outputs]


def wrk_command(url: str, connections: int, seconds: int, script: Path | None) -> list[str]:
    """The wrk command line: up to 2 threads, latency percentiles, the script if any."""
    command = ["wrk", f"-t{min(connections, 2)}", f"-c{connections}", f"-d{seconds}s", "--latency"]
    return [*command, *(["-s", str(script)] if script else []), url]


def wrk_figures(output: str) -> dict[str, float]:
    """Requests/s, p50 and p99 in ms, and responses that were not 2xx/3xx, from wrk's output."""

    def latency_at(p: str) -> float:
        number, unit = re.search(rf"^\s+{p}%\s+([\d.]+)(us|ms|s)\s*$", output, re.M).groups()  # type: ignore[union-attr]
        return float(number) * _UNITS[unit]

    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),  # type: ignore[union-attr]
        "p50": latency_at("50"),
        "p99": latency_at("99"),
        "errors": float(errors.group(1)) if errors else 0.0,
    }


STATUS_COUNTER = r"""
-- added by bench/serving.py count_statuses: answers counted by status, per thread
local counted_threads = {}
local setup_before, done_before = setup, done
statuses = {}
function setup(thread)
  table.insert(counted_threads, thread)
  if setup_before then setup_before(thread) end
end
function response(status, headers, body)
  local key = tostring(status)
  if status == 429 then
    local policy = headers["RateLimit"] or headers["ratelimit"] or ""
    key = "429 " .. (string.match(policy, '^"([^"]*)"') or "?")
  end
  statuses[key] = (statuses[key] or 0) + 1
end
function done(summary, latency, requests)
  if done_before then done_before(summary, latency, requests) end
  local totals = {}
  for _, thread in ipairs(counted_threads) do
    for key, n in pairs(thread:get("statuses")) do totals[key] = (totals[key] or 0) + n end
  end
  local e = summary.errors
  local file = io.open([==[COUNTS]==], "w")
  for key, n in pairs(totals) do file:write(string.format("%s\t%d\n", key, n)) end
  file:write(string.format("socket errors\t%d\n", e.connect + e.read + e.write + e.timeout))
  file:close()
end
"""


def count_statuses(script: str, counts: Path) -> str:
    """`script` (a wrk script with no `response` function) counting its answers by status,
    a 429 by the policy its `RateLimit` header names (`429 discover`); at the end it writes
    them and its socket errors to `counts`, after running any `setup` and `done` it has."""
    return script + STATUS_COUNTER.replace("COUNTS", str(counts))


def read_counts(counts: Path) -> dict[str, int]:
    """What a `count_statuses` script wrote: answers by status, and "socket errors"."""
    lines = (line.split("\t") for line in counts.read_text().splitlines())
    return {key: int(n) for key, n in sorted(lines)}


def between_baselines(
    base: str,
    connections: int,
    seconds: int,
    baseline: str,
    measured: Sequence[tuple[str, str, Path | None]],
) -> list[tuple[str, dict[str, float]]]:
    """wrk on the `baseline` path, then each (name, path, script) of `measured`, then the
    baseline again: the machine is shared, so the baseline brackets what it is compared to."""
    name = baseline.strip("/")
    runs = [(name, wrk(base + baseline, connections, seconds, None))]
    runs += [
        (label, wrk(base + path, connections, seconds, script)) for label, path, script in measured
    ]
    runs.append((f"{name} again", wrk(base + baseline, connections, seconds, None)))
    return runs


def baseline_rps(runs: Sequence[tuple[str, dict[str, float]]]) -> float:
    """The mean throughput of the baseline runs before and after."""
    return (runs[0][1]["rps"] + runs[-1][1]["rps"]) / 2


def wrk_line(name: str, run: dict[str, float]) -> str:
    """One wrk run as a line of a results file."""
    return (
        f"{name:<12} {run['rps']:8,.0f} req/s  p50 {run['p50']:6.2f} ms  p99 "
        f"{run['p99']:6.2f} ms  non-2xx {run['errors']:,.0f}"
    )


def top_functions(profiler: cProfile.Profile, top: int) -> tuple[str, list[str]]:
    """A profile's summary ("N function calls in S seconds") and its `top` functions by own
    time, the table's header first."""
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
    table = text.getvalue().splitlines()
    begin = next(i for i, row in enumerate(table) if "ncalls" in row)
    total = next(row for row in table if "function calls" in row).strip()
    return total, [row.rstrip() for row in table[begin:] if row.strip()]
