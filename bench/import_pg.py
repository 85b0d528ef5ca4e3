"""Benchmark: `contactdata import` into PostgreSQL (COPY) against the SQLite import, one run.

    .venv/bin/python bench/import_pg.py                 # demo size (5k companies, 100k contacts)
    .venv/bin/python bench/import_pg.py --size full     # 100k / 1M

Generates the demo data, exports it to CSV, then imports the same files into a new SQLite
file and into a new database of a throwaway PostgreSQL cluster (tests/helpers/postgres.py,
fsync off as in the tests), each as its own `contactdata` process, and prints rows/s side by
side. Target (issue 23): at least 50,000 rows/s into PostgreSQL. Writes
bench/results/import_pg.txt.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent))

from bench.dataset import SIZES, machine, run_step
from tests.helpers.postgres import PostgresServer

RESULTS = Path(__file__).parent / "results" / "import_pg.txt"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=SIZES, default="demo")
    companies, contacts = SIZES[parser.parse_args().size]
    work = Path(tempfile.mkdtemp(prefix="bench-import-pg-"))
    source, comp_csv, cont_csv = work / "s.db", work / "c.csv", work / "p.csv"
    run_step(["demo-data", "--db", str(source), "--companies", str(companies),
              "--contacts", str(contacts), "--seed", "7"])  # fmt: skip
    run_step(["export", "--db", str(source), "--companies", str(comp_csv),
              "--contacts", str(cont_csv)])  # fmt: skip
    rows = sum(1 for _ in comp_csv.open()) + sum(1 for _ in cont_csv.open()) - 2
    files = ["--companies", str(comp_csv), "--contacts", str(cont_csv)]
    lines = [machine()]
    with PostgresServer.running() as server:
        targets = {"sqlite": str(work / "t.db"), "postgresql": server.create_database()}
        for name, target in targets.items():
            seconds, peak_mb, cpu = run_step(["import", "--db", target, *files])
            lines.append(
                f"{name:<10} import {rows:>9,} rows: {seconds:7.1f} s = {rows / seconds:,.0f} "
                f"rows/s, peak {peak_mb:.0f} MB, CPU {cpu:.1f} s (the import's processes)"
            )
    print("\n".join(lines))
    RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
