"""Benchmark: `contactdata import` into PostgreSQL (COPY) against the SQLite import, one run.

    .venv/bin/python bench/import_pg.py                 # demo size (5k companies, 100k contacts)
    .venv/bin/python bench/import_pg.py --size full     # 100k / 1M
    .venv/bin/python bench/import_pg.py --files c.csv p.csv   # files exported before
    .venv/bin/python bench/import_pg.py --files c.csv p.csv --split   # CPU per process

Generates the demo data, exports it to CSV, then imports the same files into a new SQLite
file and into a new database of a throwaway PostgreSQL cluster (tests/helpers/postgres.py,
fsync off as in the tests), each as its own `contactdata` process, and prints rows/s side by
side, with the CPU of the import's processes and, for PostgreSQL, of the cluster's. Target
(issue 23): at least 50,000 rows/s into PostgreSQL. Writes bench/results/import_pg.txt.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent))

from bench.dataset import SIZES, machine, process_stats, run_step
from tests.helpers.postgres import PostgresServer

RESULTS = Path(__file__).parent / "results" / "import_pg.txt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=SIZES, default="demo")
    parser.add_argument("--files", nargs=2, type=Path, metavar=("COMPANIES", "CONTACTS"))
    parser.add_argument("--split", action="store_true", help="CPU per process, in-process")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-import-pg-"))
    comp_csv, cont_csv = args.files or export(args.size, work)
    if args.split:
        print(split(comp_csv, cont_csv))
        return
    rows = sum(1 for _ in comp_csv.open()) + sum(1 for _ in cont_csv.open()) - 2
    files = ["--companies", str(comp_csv), "--contacts", str(cont_csv)]
    lines = [machine()]
    with PostgresServer.running() as server:
        targets = {"sqlite": str(work / "t.db"), "postgresql": server.create_database()}
        for name, target in targets.items():
            before = cluster_cpu(server)
            seconds, peak_mb, cpu = run_step(["import", "--db", target, *files])
            database = f", the database {cluster_cpu(server) - before:.1f} s" * (name != "sqlite")
            lines.append(
                f"{name:<10} import {rows:>9,} rows: {seconds:7.1f} s = {rows / seconds:,.0f} "
                f"rows/s, peak {peak_mb:.0f} MB, CPU {cpu:.1f} s (the import's processes)"
                + database
            )
    print("\n".join(lines))
    RESULTS.write_text("\n".join(lines) + "\n")


def export(size: str, work: Path) -> tuple[Path, Path]:
    """Generate the demo data of `size` and export it to two CSV files."""
    companies, contacts = SIZES[size]
    source, comp_csv, cont_csv = work / "s.db", work / "c.csv", work / "p.csv"
    run_step(["demo-data", "--db", str(source), "--companies", str(companies),
              "--contacts", str(contacts), "--seed", "7"])  # fmt: skip
    run_step(["export", "--db", str(source), "--companies", str(comp_csv),
              "--contacts", str(cont_csv)])  # fmt: skip
    return comp_csv, cont_csv


def split(comp_csv: Path, cont_csv: Path) -> str:
    """Import into a new PostgreSQL database in this process; its wall time and the CPU
    seconds of this process (the writer), of the converters it forked and of the cluster."""
    from server import importer, places
    from server.storage import db

    places.warm_up()  # as the `import` command's process does before it forks
    with PostgresServer.running() as server:
        target = db.connect(server.create_database())
        before = (_cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN), cluster_cpu(server))
        started = time.perf_counter()
        report = importer.import_files(target, companies=comp_csv, contacts=cont_csv)
        seconds = time.perf_counter() - started
        after = (_cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN), cluster_cpu(server))
    writer, converters, database = (b - a for a, b in zip(before, after, strict=True))
    rows = report.companies + report.contacts
    total = writer + converters + database
    return (
        f"postgresql import {rows:>9,} rows: {seconds:7.1f} s = {rows / seconds:,.0f} rows/s; "
        f"CPU writer {writer:.2f} s, converters {converters:.2f} s, the database "
        f"{database:.2f} s, total {total:.2f} s = {total / rows * 1e6:.1f} us/row"
    )


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def cluster_cpu(server: PostgresServer) -> float:
    """CPU seconds of the cluster's processes so far (the postmaster's children; a backend
    that has exited is counted by its parent)."""
    postmaster = int((server.data / "postmaster.pid").read_text().split()[0])
    total = 0.0
    for pid, fields in process_stats():
        if pid == postmaster or int(fields[1]) == postmaster:
            times = fields[11:15] if pid == postmaster else fields[11:13]
            total += sum(int(ticks) for ticks in times)
    return total / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()
