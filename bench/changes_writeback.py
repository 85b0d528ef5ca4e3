"""Benchmark (issue 39): 20,000 changed contacts held by one HubSpot connection's CRM records,
pushed by the change job and written through the worker to a fake HubSpot on loopback, timed.

    .venv/bin/python bench/changes_writeback.py
    .venv/bin/python bench/changes_writeback.py --records 5000

Data: a copy of var/bench-demo.db when it exists, else a dataset built in a temporary directory
with `contactdata demo-data --companies 2000 --contacts 40000 --seed 7` (bench/webhooks.py's).
On it: one enterprise_plus organization and a HubSpot connection whose CRM is bench/backfill.py's
fake HubSpot (batch/read and batch/update of at most 100, as HubSpot allows), holding one contact
per Active employment with an e-mail (its e-mail, name, title and our contact GUID), each with
its transaction cache entry (enriched a month ago, the title ours). Then a month of changes:
each of those people's title changes in the data, one `title` change each recorded
(server.changes).

Timed: (a) `connector.changes.act_on_changes`, which queues a refresh event per record; (b) the
worker (`Worker.run_due` rounds of 100, as `contactdata worker` does: batch read, enrich,
batch update) until nothing is due: the worker time, against the target (at most 60 s for
20,000); (c) `enrich_with_key` alone on the same inputs, 100 just before each worker round
(both meet the same load: the machine is shared), and what the worker would take at the idle
machine's enrich rate. Writes bench/results/changes_writeback.txt.
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import tempfile
import threading
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from backfill import FakeHubSpot
from serving import SECRET, machine
from sqlite_utils import Database
from webhooks import prepare_database

import server
from connector import changes, connections, store, worker
from server import accounts
from server.clock import utcnow

RESULTS = Path(__file__).parent / "results" / "changes_writeback.txt"
TARGET_SECONDS = 60.0  # for 20,000 records
FIRST_ID = 1_000_001
BATCH = 100
IDLE_ENRICH = 2_361  # enrich_with_key calls/s on this machine idle (bench/results/backfill.txt)
Row = dict[str, Any]


def people(db: Path, count: int) -> list[Row]:
    """`count` Active employments with an e-mail: contact and company GUIDs, e-mail, names,
    title."""
    sql = (
        "SELECT e.contact_guid, e.company_guid, e.email, c.first_name, c.last_name, e.job_title "
        "FROM employments e JOIN contacts c ON c.guid = e.contact_guid "
        "WHERE e.status = 'Active' AND e.email != '' ORDER BY e.rowid LIMIT ?"
    )
    with sqlite3.connect(db) as connection:
        rows = connection.execute(sql, [count]).fetchall()
    names = ("contact_guid", "company_guid", "email", "first", "last", "title")
    return [dict(zip(names, row, strict=True)) for row in rows]


def set_up(db: Path, crm: FakeHubSpot, chosen: list[Row]) -> tuple[str, str]:
    """The organization, the connection and its records; the connection id and the key."""
    database = store.connect(db)
    now = utcnow()
    _, key = accounts.create_organization(
        database, SECRET.encode(), now, name="Bench", website="bench.example",
        tier="enterprise_plus",
    )  # fmt: skip
    link = connections.add(
        database, SECRET.encode(), now, name="hs", platform="hubspot", api_key=key,
        secret="hubspot-app-secret", crm_base_url=crm.base_url, crm_token="pat-na1-bench",
    )  # fmt: skip
    month_ago = server.iso(now - timedelta(days=30))
    rows = [
        {"connection_id": link.row["id"], "kind": "contacts", "record_id": str(FIRST_ID + n),
         "transaction_id": f"bench-{n}", "contact_guid": person["contact_guid"],
         "company_guid": person["company_guid"], "input_fingerprint": "{}",
         "written": f'{{"jobtitle": "{person["title"]}"}}', "enriched_at": month_ago,
         "pending": ""}
        for n, person in enumerate(chosen)
    ]  # fmt: skip
    with server.write(database):
        store.save_records(database, rows)
        store.set_changes_seen(database, link.row["id"], server.changes.latest_id(database))
    database.conn.close()
    return str(link.row["id"]), key


def a_month_of_changes(db: Path, chosen: list[Row]) -> None:
    """Each person's title changes in the data, with its change recorded."""
    database = store.connect(db)
    found = [
        server.changes.Change("title", p["contact_guid"], p["company_guid"],
                              before={"title": p["title"]}, after={"title": p["title"] + " II"})
        for p in chosen
    ]  # fmt: skip
    with server.write(database):
        database.conn.executemany(
            "UPDATE employments SET job_title = job_title || ' II' "
            "WHERE contact_guid = ? AND company_guid = ?",
            [(p["contact_guid"], p["company_guid"]) for p in chosen],
        )
        server.changes.record(database, found, server.iso(utcnow()))
    database.conn.close()


def run(db: Path, link_id: str, api_key: str, chosen: list[Row]) -> Row:
    """(a) the change job's queueing, (b) the worker until nothing is due, each round timed
    after (c) enriching as many of the same inputs alone, timed, so both meet the same load
    on the machine; the figures."""
    with httpx.Client(timeout=10.0, follow_redirects=False) as client:
        work = worker.Worker(store.connect(db), SECRET.encode(), utcnow, client, random.Random(7))
        began = time.perf_counter()
        said = changes.act_on_changes(work.db, utcnow())
        queued = time.perf_counter() - began
        outcomes: dict[str, int] = {}
        working = alone = 0.0
        rounds = 0
        while True:
            alone += enrich_alone(work.db, api_key, chosen[rounds * BATCH : (rounds + 1) * BATCH])
            began = time.perf_counter()
            done = work.run_due(BATCH)
            working += time.perf_counter() - began
            if not done:
                break
            rounds += 1
            for name, n in done.items():
                outcomes[name] = outcomes.get(name, 0) + n
        work.db.conn.close()
    return {"said": said, "queued": queued, "working": working, "outcomes": outcomes,
            "rounds": rounds, "alone": alone}  # fmt: skip


def enrich_alone(database: Database, api_key: str, chosen: list[Row]) -> float:
    """Seconds of `enrich_with_key` alone on inputs like the worker's (e-mail, names, GUID)."""
    began = time.perf_counter()
    for person in chosen:
        given = {"conEmail": person["email"], "conFirstName": person["first"],
                 "conLastName": person["last"], "conGuid": person["contact_guid"]}  # fmt: skip
        server.enrich_with_key(
            database, SECRET.encode(), api_key, given, utcnow(), str(uuid.uuid4()), "/bench"
        )
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000)
    options = parser.parse_args()
    os.environ["CONTACTDATA_ALLOW_PRIVATE_CRM_URLS"] = "1"
    with tempfile.TemporaryDirectory() as work:
        db = Path(work) / "bench.db"
        built = prepare_database(None, db)
        chosen = people(db, options.records)
        contacts = {
            str(FIRST_ID + n): {"email": p["email"], "firstname": p["first"],
                                "lastname": p["last"], "jobtitle": p["title"],
                                "contactdata_contact_guid": p["contact_guid"]}
            for n, p in enumerate(chosen)
        }  # fmt: skip
        crm = FakeHubSpot(contacts)
        threading.Thread(target=crm.serve_forever, daemon=True).start()
        link_id, key = set_up(db, crm, chosen)
        a_month_of_changes(db, chosen)
        figures = run(db, link_id, key, chosen)
        crm.shutdown()
    ratio = figures["alone"] / figures["working"]
    fresh = sum(c["jobtitle"].endswith(" II") for c in contacts.values())
    count = len(chosen)
    target = TARGET_SECONDS * count / 20_000
    verdict = "pass" if figures["working"] <= target else "FAIL"
    lines = [
        f"bench/changes_writeback.py on {machine()}",
        f"database {built}",
        "",
        f"{count:,} HubSpot contacts held by one connection's records, each person's title "
        "changed in a month of changes (one title change each)",
        f"(a) change job (act_on_changes): {figures['said']} in {figures['queued']:.2f} s",
        f"(b) worker (run_due rounds of {BATCH}: batch read, enrich, batch update): "
        f"{figures['rounds']} rounds in {figures['working']:.2f} s: "
        f"{count / figures['working']:,.0f} records/s; target {target:.0f} s: {verdict}",
        f"    outcomes: {figures['outcomes']}; CRM calls: {dict(crm.calls)}",
        f"    contacts holding the new title: {fresh:,} of {count:,}",
        f"(c) enrich_with_key alone on the same inputs, {BATCH} before each worker round: "
        f"{count / figures['alone']:,.0f} calls/s; worker / enrich alone {ratio:.0%}",
        f"    at this machine's idle enrich rate ({IDLE_ENRICH:,} calls/s, bench/results/"
        f"backfill.txt) and this ratio the worker would take about "
        f"{count / (IDLE_ENRICH * ratio):.0f} s (an estimate; load average during the run "
        f"{os.getloadavg()[1]:.1f} on {os.cpu_count()} cores, shared with other work)",
    ]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if count == 20_000:
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()
