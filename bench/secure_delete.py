"""Benchmark: what `PRAGMA secure_delete = ON` (server/storage/db.py, issue 34) costs the service's
writes, against OFF in the same run, and what an erasure's WAL checkpoint costs.

    .venv/bin/python bench/secure_delete.py                       # 40,000 contacts, 3 rounds
    .venv/bin/python bench/secure_delete.py --contacts 100000 --rounds 5

Data: `contactdata demo-data` (seed 7) exported to CSV, built once in a temporary directory.
Each round, for each setting (the order alternates between rounds), a fresh database with the
connector's tables, on which these are timed:
  import     the CSV files into the empty database (importer.import_files)
  re-import  the same files again: every row upserted, aliases and employments replaced
  suppress   --suppress people, PER_ACT to a call (suppression.act "suppress", as a file of
             opt-outs is imported by `privacy import`)
  erase      --erase people one at a time, each as `privacy erase` does it (suppression.act
             with the connector's eraser), its WAL checkpoint included and shown apart
  retention  the connector's retention job (the payloads of EVENTS done events blanked, the
             transactions' matched contact cleared), then purge_deliveries (events deleted)
Before suppress, EVENTS webhook events (a payload of about PAYLOAD_BYTES each, naming a person)
and a transaction per contact are added, untimed; the WAL is checkpointed and truncated,
untimed, between workloads. Printed per workload and setting: the median seconds over the
rounds and the bytes this process wrote meanwhile (wchar in /proc/self/io: WAL frames and
checkpoints), and the ratio ON / OFF. Writes bench/results/secure_delete.txt.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent))
sys.path.insert(0, str(Path(__file__).parent))

from serving import CLI, machine
from sqlite_utils import Database

from connector import connections, jobs, store
from connector.suppression import erase as connector_eraser
from server import accounts, importer, privacy, suppression

RESULTS = Path(__file__).parent / "results" / "secure_delete.txt"
SETTINGS = ("OFF", "ON")
WORKLOADS = ("import", "re-import", "suppress", "erase", "retention")
SUPPRESSED, PER_ACT, ERASED = 5_000, 1_000, 50
EVENTS, PAYLOAD_BYTES = 10_000, 2_000
SECRET = b"bench-secret"
NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)

Tally = dict[tuple[str, str], list[tuple[float, int]]]  # (workload, setting): (s, bytes) a round


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--companies", type=int, default=2_000)
    parser.add_argument("--contacts", type=int, default=40_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--suppress", type=int, default=SUPPRESSED, help="people suppressed")
    parser.add_argument("--erase", type=int, default=ERASED, help="people erased")
    args = parser.parse_args()
    started = datetime.now(UTC)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="bench-secure-delete-") as work:
        files = dataset(Path(work), args.companies, args.contacts)
        emails = addresses(files[1])
        if len(emails) < args.suppress + args.erase:
            raise SystemExit(f"{len(emails):,} addresses: too few to suppress and erase")
        people = [suppression.person(email=e) for e in emails[: args.suppress + args.erase]]
        doomed = (people[: args.suppress], people[args.suppress :])
        tally: Tally = defaultdict(list)
        checkpoints: dict[str, list[float]] = defaultdict(list)
        for round_ in range(args.rounds):
            for setting in SETTINGS if round_ % 2 == 0 else SETTINGS[::-1]:
                path = Path(work) / f"round{round_}-{setting}.db"
                one_round(path, setting, files, emails, doomed, tally, checkpoints[setting])
                print(f"round {round_ + 1} secure_delete={setting} done", flush=True)
    lines = [
        f"bench/secure_delete.py on {machine()}, {started:%Y-%m-%d %H:%M} UTC, "
        f"load average {load} at the start",
        f"{args.companies:,} companies, {args.contacts:,} contacts; suppress {args.suppress:,} "
        f"people ({PER_ACT:,} a call), erase {args.erase} one at a time, {EVENTS:,} events of "
        f"~{PAYLOAD_BYTES:,} bytes; median of {args.rounds} rounds, secure_delete OFF vs ON",
        *report(tally, checkpoints),
    ]
    print("\n".join(lines))
    RESULTS.write_text("\n".join(lines) + "\n")


def dataset(work: Path, companies: int, contacts: int) -> tuple[Path, Path]:
    """The demo dataset's companies and contacts files (built with the CLI, seed 7)."""
    source = work / "source.db"
    files = (work / "companies.csv", work / "contacts.csv")
    size = ["--companies", str(companies), "--contacts", str(contacts), "--seed", "7"]
    run = {"check": True, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    subprocess.run([CLI, "demo-data", "--db", str(source), *size], **run)  # type: ignore[call-overload]
    export = ["--companies", str(files[0]), "--contacts", str(files[1])]
    subprocess.run([CLI, "export", "--db", str(source), *export], **run)  # type: ignore[call-overload]
    return files


def addresses(contacts: Path) -> list[str]:
    """The contacts file's distinct e-mail addresses, in file order."""
    with contacts.open(newline="") as handle:
        found = (row["conEmail"] for row in csv.DictReader(handle) if row["conEmail"])
        return list(dict.fromkeys(found))


def one_round(
    path: Path,
    setting: str,
    files: tuple[Path, Path],
    emails: list[str],
    doomed: tuple[list[suppression.Person], list[suppression.Person]],
    tally: Tally,
    checkpoints: list[float],
) -> None:
    """Every workload once on a fresh database at `path` with secure_delete `setting`;
    `doomed`: the people to suppress, and those to erase."""
    db = store.connect(path)
    db.execute(f"PRAGMA secure_delete = {setting}")
    hash_of = privacy.hasher(SECRET)
    suppressed, erased = doomed
    steps: dict[str, Callable[[], object]] = {
        "import": lambda: importer.import_files(db, companies=files[0], contacts=files[1]),
        "re-import": lambda: importer.import_files(db, companies=files[0], contacts=files[1]),
        "suppress": lambda: [
            suppression.act(db, hash_of, NOW, suppressed[i : i + PER_ACT], "suppress")
            for i in range(0, len(suppressed), PER_ACT)
        ],
        "erase": lambda: [
            suppression.act(db, hash_of, NOW, [one], "erase", [connector_eraser]) for one in erased
        ],
        "retention": lambda: (jobs.retention(db, NOW, 7, 30), jobs.purge_deliveries(db, NOW)),
    }
    with timed_checkpoints(checkpoints):
        for workload, step in steps.items():
            if workload == "suppress":
                add_history(db, emails)
            truncate(db)
            tally[(workload, setting)].append(measured(step))
    truncate(db)
    db.close()
    for companion in path.parent.glob(f"{path.name}*"):
        companion.unlink()


def add_history(db: Database, emails: list[str]) -> None:
    """EVENTS done webhook events, each naming a person and padded to PAYLOAD_BYTES, and a
    transaction per contact, all old enough for the retention job."""
    org, key = accounts.create_organization(
        db, SECRET, NOW, name="Acme", website="acme.example", tier="pro"
    )
    os.environ["CONTACTDATA_ALLOW_PRIVATE_CRM_URLS"] = "1"  # a CRM never contacted
    link = connections.add(db, SECRET, NOW, name="hubspot", platform="hubspot", api_key=key,
                           crm_base_url="http://127.0.0.1:9", crm_token="token",
                           secret="app")  # fmt: skip
    old = (NOW - timedelta(days=60)).isoformat()
    rows = [event(link.row["id"], n, emails[n % len(emails)], old) for n in range(EVENTS)]
    with store.server.write(db):
        store.add_events(db, rows)
        db.execute("UPDATE events SET status = 'done'")
        db.execute(
            "INSERT INTO transactions (id, org_id, endpoint, contact_guid, created_at) "
            "SELECT guid, ?, '/v7/enrich', guid, ? FROM contacts",
            [org["id"], old],
        )


def event(connection_id: str, n: int, email: str, received_at: str) -> dict[str, object]:
    """A HubSpot contact event naming `email`, with notes that bring it to PAYLOAD_BYTES."""
    notes = (f"call {n} about the renewal; " * (PAYLOAD_BYTES // 25))[:PAYLOAD_BYTES]
    payload = {"vid": str(n), "properties": {"email": {"value": email}, "notes": {"value": notes}}}
    return {"connection_id": connection_id, "event_key": f"e{n}", "record_id": str(n),
            "payload": json.dumps(payload), "thin": 0, "received_at": received_at}  # fmt: skip


def truncate(db: Database) -> None:
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def measured(step: Callable[[], object]) -> tuple[float, int]:
    """The seconds `step` took and the bytes this process wrote meanwhile."""
    written = bytes_written()
    started = time.perf_counter()
    step()
    return time.perf_counter() - started, bytes_written() - written


def bytes_written() -> int:
    """Bytes this process has passed to write() (0 where /proc/self/io is missing)."""
    try:
        with open("/proc/self/io") as io:
            return next(int(line.split()[1]) for line in io if line.startswith("wchar:"))
    except OSError:
        return 0


@contextmanager
def timed_checkpoints(seconds: list[float]) -> Iterator[None]:
    """Each erasure's WAL checkpoint (suppression._truncate_wal) timed into `seconds`."""
    checkpoint = suppression._truncate_wal

    def timed(db: Database) -> int:
        started = time.perf_counter()
        try:
            return checkpoint(db)
        finally:
            seconds.append(time.perf_counter() - started)

    suppression._truncate_wal = timed  # type: ignore[assignment]
    try:
        yield
    finally:
        suppression._truncate_wal = checkpoint  # type: ignore[assignment]


def report(tally: Tally, checkpoints: dict[str, list[float]]) -> Iterator[str]:
    """A line per workload: each setting's median seconds and MB written, ON / OFF."""
    for workload in WORKLOADS:
        figures = {}
        for setting in SETTINGS:
            runs = tally[(workload, setting)]
            figures[setting] = (statistics.median(s for s, _ in runs),
                                statistics.median(b for _, b in runs) / 1e6)  # fmt: skip
        (off_s, off_mb), (on_s, on_mb) = figures["OFF"], figures["ON"]
        every = " / ".join(
            ", ".join(f"{s:.2f}" for s, _ in tally[(workload, setting)]) for setting in SETTINGS
        )
        yield (
            f"{workload:<9}  OFF {off_s:7.2f} s {off_mb:8.1f} MB   ON {on_s:7.2f} s {on_mb:8.1f} MB"
            f"   ON/OFF time {on_s / off_s:5.2f}  written {on_mb / max(off_mb, 1e-9):5.2f}"
            f"   (rounds, s: {every})"
        )
    for setting in SETTINGS:
        spent = checkpoints[setting]
        yield (
            f"erase's WAL checkpoint (TRUNCATE), secure_delete {setting}: median "
            f"{statistics.median(spent) * 1000:.1f} ms, max {max(spent) * 1000:.1f} ms a person "
            f"({len(spent)} erasures)"
        )


if __name__ == "__main__":
    main()
