"""Benchmark: what finding the changes costs an import of updated data (issue 39).

    .venv/bin/python bench/changes_import.py            # 100,000 companies / 1,000,000 contacts
    .venv/bin/python bench/changes_import.py --small    # the demo's 5,000 / 100,000

Builds the dataset once (`contactdata demo-data` + `contactdata export`, kept in
var/bench-changes/ and reused), writes a copy of its files with 2% of the contacts changed
(`server.changes_data`: moves, promotions, new phones and addresses, and 1% of the companies'
headcounts), imports the original files into a database, then imports the changed copy into
copies of that database, with change detection and without, alternately, RUNS times each.

The baseline is the same import with detection switched off (`import_files(...,
detect_changes=False)`, a switch only this bench uses): the same rows into the same database,
so the difference is detection alone. (An import into an empty database would take the bulk
path, a different thing to time.) Each import runs as its own process; its wall time is the
figure, the best of its runs (the machine is shared: the slower runs were slowed by others),
beside its CPU time (every process of it). As the machine's pace varies by more than the
difference, the import with detection also times its detection itself (reading the stored
rows, comparing, recording the changes) and the bench gives that share of its wall time.
Target: detection adds at most 10%. Prints a table and writes it to
bench/results/changes_import.txt.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.dataset import CLI, machine, run_step  # noqa: E402

SIZES = {"small": (5_000, 100_000), "full": (100_000, 1_000_000)}
WORK = ROOT / "var" / "bench-changes"
RESULTS = Path(__file__).parent / "results" / "changes_import.txt"
SHARE = 0.02
RUNS = 2
SEED = 7


def build(name: str) -> tuple[Path, Path, Path]:
    """The dataset of size `name` and its exported files, made unless already there."""
    companies, contacts = SIZES[name]
    source = WORK / f"{name}.db"
    files = WORK / f"{name}-companies.csv", WORK / f"{name}-contacts.csv"
    if not all(path.exists() for path in files):
        if not source.exists():
            run_step(["demo-data", "--db", str(source), "--companies", str(companies),
                      "--contacts", str(contacts), "--seed", str(SEED)])  # fmt: skip
        run_step(["export", "--db", str(source), "--companies", str(files[0]),
                  "--contacts", str(files[1])])  # fmt: skip
    return source, *files


def changed_copy(source: Path, companies: Path, contacts: Path) -> tuple[Path, Path, Counter]:
    """The exported files with a month of changes to SHARE of the contacts laid over them."""
    from server import changes_data, export
    from server.storage import db

    month = changes_data.generate(db.connect(source), SEED, share=SHARE)
    changed = [WORK / f"changed-{path.name}" for path in (companies, contacts)]
    overlay(companies, changed[0], export.COMPANY_HEADER, month.companies, ("compGUID",))
    overlay(contacts, changed[1], export.CONTACT_HEADER, month.contacts, ("conGUID", "compGUID"))
    return changed[0], changed[1], month.kinds


def overlay(
    base: Path, target: Path, header: list[str], items: list[dict[str, str]], key: tuple[str, ...]
) -> None:
    """Copy `base` to `target`, each row of an item's key replaced by the item, the items of
    new keys added at the end."""
    fresh = {tuple(item[name] for name in key): [item[name] for name in header] for item in items}
    with (
        base.open(newline="", encoding="utf-8") as source,
        target.open("w", newline="", encoding="utf-8") as out,
    ):
        reader, writer = csv.reader(source), csv.writer(out, lineterminator="\n")
        names = next(reader)
        assert names == header, f"{base}: not the export's columns"
        places = [names.index(name) for name in key]
        writer.writerow(names)
        for row in reader:
            writer.writerow(fresh.pop(tuple(row[i] for i in places), row))
        writer.writerows(fresh.values())


def timed_import(
    database: Path, companies: Path, contacts: Path, detect: bool
) -> tuple[float, float, float]:
    """Wall and CPU seconds of one import in its own process (this script with --child), and
    the seconds it spent detecting changes."""
    args = [sys.executable, __file__, "--child", str(database), str(companies), str(contacts)]
    started = time.perf_counter()
    process = subprocess.Popen(
        [*args, "detect" if detect else "plain"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"import failed: {process.stderr.read().decode()[-500:]}")  # type: ignore[union-attr]
    detecting = float(process.stdout.read().decode().strip() or 0)  # type: ignore[union-attr]
    return elapsed, usage.ru_utime + usage.ru_stime, detecting


def child(database: str, companies: str, contacts: str, mode: str) -> None:
    """The import whose time is taken, with or without detection; prints the seconds spent
    detecting (the importer's detection functions, wrapped here)."""
    from server import changes, importer
    from server.storage import db

    spent = [0.0]

    def timed(function: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - started

        return run

    importer._company_changes = timed(importer._company_changes)  # type: ignore[assignment]
    importer._JobChanges.__call__ = timed(importer._JobChanges.__call__)  # type: ignore[method-assign]
    changes.record = timed(changes.record)  # type: ignore[assignment]
    importer.import_files(
        db.connect(database),
        companies=Path(companies),
        contacts=Path(contacts),
        detect_changes=mode == "detect",
    )
    print(f"{spent[0]:.3f}")


def base_database(name: str, companies: Path, contacts: Path) -> Path:
    """The original files imported into a new database (once), checkpointed for copying."""
    base = WORK / f"{name}-base.db"
    if not base.exists():
        partial = base.with_name(base.name + ".partial")
        for stale in WORK.glob(f"{partial.name}*"):
            stale.unlink()
        run_step(["import", "--db", str(partial), "--companies", str(companies),
                  "--contacts", str(contacts)])  # fmt: skip
        with sqlite3.connect(partial) as connection:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        os.replace(partial, base)
        for leftover in WORK.glob(f"{partial.name}-*"):
            leftover.unlink()
    return base


def recorded(database: Path) -> Counter:
    with sqlite3.connect(database) as connection:
        rows = connection.execute("SELECT kind, count(*) FROM contact_changes GROUP BY kind")
        return Counter(dict(rows.fetchall()))


def measure(name: str) -> list[str]:
    """Build, change, import the base, then time the changed import both ways."""
    source, companies, contacts = build(name)
    changed_companies, changed_contacts, made = changed_copy(source, companies, contacts)
    base = base_database(name, companies, contacts)
    rows = sum(1 for _ in changed_companies.open()) + sum(1 for _ in changed_contacts.open()) - 2
    times: dict[bool, list[tuple[float, float, float]]] = {True: [], False: []}
    found: Counter = Counter()
    for run in range(RUNS):
        for detect in (True, False) if run % 2 == 0 else (False, True):
            target = WORK / "run.db"
            for stale in WORK.glob("run.db*"):
                stale.unlink()
            shutil.copy(base, target)
            times[detect].append(timed_import(target, changed_companies, changed_contacts, detect))
            if detect:
                found = recorded(target)
            wall, cpu, detecting = times[detect][-1]
            print(f"{name}: {'with' if detect else 'without'} detection {wall:.1f} s, "
                  f"CPU {cpu:.1f} s, detecting {detecting:.1f} s", flush=True)  # fmt: skip
    best = {detect: min(runs) for detect, runs in times.items()}
    every = {d: ", ".join(f"{t[0]:.1f}" for t in times[d]) for d in times}
    cpu = {d: min(t[1] for t in times[d]) for d in times}
    detecting = min(t[2] / t[0] for t in times[True])
    counted = " ".join(f"{kind}={n}" for kind, n in sorted(found.items()))
    with_, without = best[True][0], best[False][0]
    return [
        f"{name}: {rows:,} rows imported over the same rows, {SHARE:.0%} of contacts changed "
        f"(generated: {sum(made.values()):,} changes)",
        f"{name}: without detection {without:7.1f} s = {rows / without:,.0f} rows/s, "
        f"CPU {cpu[False]:.1f} s (best of {every[False]} s)",
        f"{name}: with detection    {with_:7.1f} s = {rows / with_:,.0f} rows/s, "
        f"CPU {cpu[True]:.1f} s (best of {every[True]} s); recorded {counted}",
        f"{name}: overhead {with_ / without - 1:+.1%} wall, {cpu[True] / cpu[False] - 1:+.1%} "
        f"CPU; detection itself {detecting:.1%} of the import's wall time (target at most +10%)",
    ]


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        return child(*sys.argv[2:6])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="the demo size, for trying it")
    name = "small" if parser.parse_args().small else "full"
    WORK.mkdir(parents=True, exist_ok=True)
    assert Path(CLI).exists(), f"{CLI}: install the project first (make install)"
    lines = [f"bench/changes_import.py on {machine()}, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"]  # fmt: skip
    lines += measure(name)
    print("\n".join(lines))
    if name == "full":
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
