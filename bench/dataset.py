"""Benchmark: demo-data generation time, import rows/s and peak memory at two sizes.

    .venv/bin/python bench/dataset.py                 # demo (5k/100k) and full (100k/1M)
    .venv/bin/python bench/dataset.py --sizes demo    # only the demo size

Each step runs as its own `contactdata` process, so its wall time and peak RSS are its own.
Targets (issue 2): demo size under 60 s; full size within 10 minutes and 2 GB; import at
least 20,000 rows/s. Prints a table and writes it to bench/results/dataset.txt. As a
baseline from the same run (this machine is shared and its pace varies by a factor of two
within an hour), it also times a bare csv.reader pass over the exported files. The import
runs IMPORT_RUNS times, each into a new database; the best run is the figure (the others
were slowed by the machine, not by the import), and every run is printed beside it.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

SIZES = {"demo": (5_000, 100_000), "full": (100_000, 1_000_000)}
CLI = str(Path(sys.executable).parent / "contactdata")
RESULTS = Path(__file__).parent / "results" / "dataset.txt"
IMPORT_RUNS = 3


def run_step(args: list[str]) -> tuple[float, float, float]:
    """Run one contactdata command; (seconds, peak RSS in MB, CPU seconds) of that process
    alone, its CPU with that of the processes it waited for (the import's converters)."""
    started = time.perf_counter()
    process = subprocess.Popen([CLI, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"contactdata {args[0]} failed: {process.stderr.read().decode()[-500:]}")
    return elapsed, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def measure(name: str, companies: int, contacts: int, work: Path) -> list[str]:
    """Generate, export, and import into a fresh database; one result line per step."""
    source, target = work / f"{name}.db", work / f"{name}-import.db"
    comp_csv, cont_csv = work / f"{name}-companies.csv", work / f"{name}-contacts.csv"
    gen_s, gen_mb, _ = run_step(
        [
            "demo-data",
            "--db",
            str(source),
            "--companies",
            str(companies),
            "--contacts",
            str(contacts),
            "--seed",
            "7",
        ]
    )
    exp_s, _, _ = run_step(
        ["export", "--db", str(source), "--companies", str(comp_csv), "--contacts", str(cont_csv)]
    )
    rows = sum(1 for _ in comp_csv.open()) + sum(1 for _ in cont_csv.open()) - 2
    read_s = csv_read_seconds([comp_csv, cont_csv])
    runs = []
    for _ in range(IMPORT_RUNS):
        for stale in work.glob(f"{target.name}*"):
            stale.unlink()
        runs.append(run_step(["import", "--db", str(target), "--companies", str(comp_csv),
                              "--contacts", str(cont_csv)]))  # fmt: skip
    imp_s, imp_mb, imp_cpu = min(runs)
    every = ", ".join(f"{seconds:.1f}" for seconds, _, _ in runs)
    size_mb = source.stat().st_size / 1e6
    return [
        f"{name:<5} generate {companies:>7,} companies / {contacts:>9,} contacts: "
        f"{gen_s:7.1f} s, peak {gen_mb:6.0f} MB, database {size_mb:,.0f} MB",
        f"{name:<5} export   {rows:>9,} rows: {exp_s:7.1f} s",
        f"{name:<5} import   {rows:>9,} rows: {imp_s:7.1f} s = {rows / imp_s:,.0f} rows/s, "
        f"peak {imp_mb:6.0f} MB, CPU {imp_cpu:.1f} s (all processes); best of {every} s",
        f"{name:<5} baseline: Python's csv.reader alone reads the same files at "
        f"{rows / read_s:,.0f} rows/s in this run; the import is {read_s / imp_s:.0%} of that",
    ]


def csv_read_seconds(paths: list[Path]) -> float:
    """Seconds for csv.reader to read every row of `paths`: the machine's pace right now."""
    started = time.perf_counter()
    for path in paths:
        with path.open(newline="", encoding="utf-8") as handle:
            for _ in csv.reader(handle):
                pass
    return time.perf_counter() - started


def process_stats() -> Iterator[tuple[int, list[str]]]:
    """Each living process's pid and the fields of its /proc/<pid>/stat after the command
    name (fields[1] is the parent, [3] the session, [11:15] user, system and children's
    CPU ticks); a process that ended meanwhile is left out."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            yield int(stat.parent.name), stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue


def machine() -> str:
    """What the figures were measured on."""
    return (
        f"{platform.node()} {platform.machine()} {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, SQLite {sqlite_version()}"
    )


def sqlite_version() -> str:
    import sqlite3

    return sqlite3.sqlite_version


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="demo,full", help="comma-separated: demo, full")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    sizes = parser.parse_args().sizes.split(",")
    work = Path(tempfile.mkdtemp(prefix="bench-dataset-"))
    lines = [
        f"bench/dataset.py on {machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    ]
    try:
        for name in sizes:
            for line in measure(name, *SIZES[name], work):
                print(line, flush=True)
                lines.append(line)
    finally:
        if not parser.parse_args().keep:
            shutil.rmtree(work, ignore_errors=True)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
