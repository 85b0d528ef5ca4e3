"""Benchmark: a backfill's records/s through a fake HubSpot on loopback, beside enrich alone on
the same inputs in the same run.

    .venv/bin/python bench/backfill.py
    .venv/bin/python bench/backfill.py --records 5000

Data: a copy of var/bench-demo.db when it exists (never modified), else a dataset built in a
temporary directory with `contactdata demo-data --companies 2000 --contacts 40000 --seed 7`
(bench/webhooks.py's). On it, with the command line as an operator would: one enterprise_plus
organization no limit stops and a HubSpot connection whose CRM is a fake HubSpot on loopback
(`CONTACTDATA_ALLOW_PRIVATE_CRM_URLS=1`), holding one contact per Active employment of the
dataset (its e-mail and name), by ascending numeric id.

The fake answers as HubSpot's CRM API does at the sizes it allows: the search API (filters on
hs_object_id GT, sorted by id, pages of at most 200, no paging past 10,000 results a query),
batch/read and batch/update of at most 100 inputs; it does not throttle (HubSpot's search is
limited to a few requests a second per account: see the results' note).

(a) listing and queueing: `connector.backfill.run` lists every contact, search pages of 100,
    and queues each page's thin events in one transaction;
(b) the worker works them off: `connector.worker.Worker.run_due` rounds of 100, as
    `contactdata worker` does (read the round's contacts in one batch read, enrich each, write
    them in one batch update), timed per round;
(c) the baseline: `enrich_with_key` alone on the same inputs, 100 just before each worker
    round (both then meet the same load on the machine), and all at once before (a).

Printed: records/s of (a), (b) and end to end (a then b), and end to end / enrich alone, against
the target (at least 50%, with pass/FAIL); and where the time goes: cProfile of one listing
page and of one worker round (cumulative, top 15). The profiled round is left out of (b)'s
rate. Writes bench/results/backfill.txt.
"""

from __future__ import annotations

import argparse
import bisect
import cProfile
import io
import json
import os
import pstats
import random
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from serving import SECRET, machine, percentile
from webhooks import contactdata, enrich_baseline, people, prepare_database

import server
from connector import backfill, store, worker
from connector.platforms.hubspot import CONTACTS
from server.clock import utcnow

RESULTS = Path(__file__).parent / "results" / "backfill.txt"
TARGET = 0.5  # end to end at least half of enrich alone, on the same inputs
BATCH = 100  # events the worker takes a round, as `contactdata worker` does
BATCH_LIMIT = 100  # HubSpot's batch/read and batch/update: inputs a call
SEARCH_LIMIT = 200  # HubSpot's search API: results a page
SEARCH_REACH = 10_000  # HubSpot's search API: results one query can page through
FIRST_ID = 1_000_001
PROFILED_ROUND = 2  # the worker round profiled (from 0), left out of (b)'s rate
TOP = 15
Row = dict[str, Any]


# --- the fake HubSpot ------------------------------------------------------------------------


class FakeHubSpot(ThreadingHTTPServer):
    """HubSpot's contacts on loopback under the adapter's contacts path: POST search,
    batch/read and batch/update, each refusing what HubSpot refuses (too many inputs, paging
    past the search's reach). `calls` counts calls by name."""

    daemon_threads = True

    def __init__(self, contacts: dict[str, Row]) -> None:
        super().__init__(("127.0.0.1", 0), _HubSpotHandler)
        self.contacts = contacts
        self.ids = sorted(int(key) for key in contacts)  # search answers by ascending id
        self.written: Counter[str] = Counter()  # writes per contact
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def search(self, body: Row) -> tuple[int, Row]:
        """A search over the contacts: ids above a hs_object_id GT filter, ascending."""
        after, limit = int(body.get("after") or 0), int(body.get("limit") or 10)
        if limit > SEARCH_LIMIT:
            return 400, _invalid(f"limit must be at most {SEARCH_LIMIT}")
        if after + limit > SEARCH_REACH:
            return 400, _invalid(f"paging past {SEARCH_REACH} results is not allowed")
        filters = [f for group in body.get("filterGroups") or [] for f in group["filters"]]
        bounds = [int(f["value"]) for f in filters if f["propertyName"] == "hs_object_id"]
        start = bisect.bisect_right(self.ids, max(bounds, default=0))
        found = self.ids[start + after : start + after + limit]
        answer: Row = {
            "total": len(self.ids) - start,
            "results": [self.contact(str(key), body.get("properties", [])) for key in found],
        }
        if start + after + limit < len(self.ids):
            answer["paging"] = {"next": {"after": str(after + limit)}}
        return 200, answer

    def batch(self, action: str, body: Row) -> tuple[int, Row]:
        """batch/read or batch/update of at most BATCH_LIMIT contacts."""
        inputs = body["inputs"]
        if len(inputs) > BATCH_LIMIT:
            return 400, _invalid(f"a batch takes at most {BATCH_LIMIT} inputs")
        if action == "update":
            with self.lock:
                for item in inputs:
                    self.contacts[item["id"]].update(item["properties"])
                    self.written[item["id"]] += 1
        wanted = body.get("properties") or list(inputs[0].get("properties", {}))
        results = [self.contact(item["id"], wanted) for item in inputs]
        return 200, {"status": "COMPLETE", "results": results,
                     "startedAt": "2026-11-25T12:00:00.000Z",
                     "completedAt": "2026-11-25T12:00:00.050Z"}  # fmt: skip

    def contact(self, key: str, wanted: list[str]) -> Row:
        """A contact as HubSpot answers one: the properties asked for, and its id."""
        values = self.contacts[key]
        shown = {name: values.get(name) for name in wanted}
        return {
            "id": key,
            "properties": {**shown, "hs_object_id": key},
            "createdAt": "2017-01-10T05:36:25.538Z",
            "updatedAt": "2026-11-23T12:00:00.000Z",
            "archived": False,
        }


def _invalid(message: str) -> Row:
    return {"status": "error", "category": "VALIDATION_ERROR", "message": message}


class _HubSpotHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as HubSpot's API answers
    disable_nagle_algorithm = True  # no delayed-ACK wait between headers and body
    server: FakeHubSpot

    def do_POST(self) -> None:
        action = urlsplit(self.path).path.removeprefix(f"{CONTACTS}/")
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if action == "search":
            status, answer = self.server.search(body)
        elif action in ("batch/read", "batch/update"):
            status, answer = self.server.batch(action.removeprefix("batch/"), body)
        else:
            status, answer = 404, {"status": "error", "message": "resource not found"}
        with self.server.lock:
            self.server.calls[action] += 1
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: thousands of calls."""


# --- profiling -------------------------------------------------------------------------------


def profiled(call: Callable[[], Any]) -> tuple[Any, list[str]]:
    """`call()`'s answer, and its cProfile: cumulative time, top TOP functions."""
    profile = cProfile.Profile()
    answer = profile.runcall(call)
    text = io.StringIO()
    stats = pstats.Stats(profile, stream=text)
    stats.strip_dirs().sort_stats("cumulative").print_stats(TOP)
    lines = text.getvalue().strip().splitlines()
    start = next(n for n, line in enumerate(lines) if "function calls" in line)
    return answer, [*_shares(stats), *("  " + line for line in lines[start:] if line.strip())]


# Parts of a worker round or a listing page worth naming: (module, function) -> what it is.
PARTS = {
    ("enrich.py", "enrich_with_key"): "enrich_with_key",
    ("mappings.py", "changes"): "mappings.changes (what to write)",
    ("worker.py", "unsent"): "worker unsent (the intent against the CRM's values)",
    ("store.py", "unseal"): "store.unseal (the connection's API key, each event)",
    ("base.py", "_send"): "CRM calls (adapter _send)",
    ("backfill.py", "sort_page"): "backfill.sort_page",
}


def _shares(stats: pstats.Stats) -> list[str]:
    """A line naming the PARTS the profile went through, with their cumulative share."""
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    total = stats.total_tt  # type: ignore[attr-defined]
    found: Counter[str] = Counter()
    for (module, _, function), (_, _, _, cumulative, _) in table.items():
        if (module, function) in PARTS:
            found[PARTS[module, function]] += cumulative
    named = ", ".join(
        f"{name} {seconds * 1e3:.0f} ms ({seconds / total:.0%})"
        for name, seconds in found.most_common()
    )
    return [f"  under the profiler, of {total * 1e3:.0f} ms: {named}"]


# --- (a) listing and queueing ----------------------------------------------------------------


def new_worker(db: Path, client: httpx.Client) -> worker.Worker:
    return worker.Worker(store.connect(db), SECRET.encode(), utcnow, client, random.Random(7))


def list_and_queue(db: Path, link_id: str) -> Row:
    """`backfill.run` over every contact; its backfill row, the seconds, and the seconds spent
    in the CRM's search calls."""
    with TimedClient(timeout=10.0, follow_redirects=False) as client:
        work = new_worker(db, client)
        started = time.perf_counter()
        row = backfill.run(work, link_id, "contacts", "", None)
        elapsed = time.perf_counter() - started
        work.db.conn.close()
    return {**row, "elapsed": elapsed, "searching": client.spent["search"]}


class TimedClient(httpx.Client):
    """An httpx client adding up the seconds of its calls (sending, the fake answering,
    receiving) by the last part of their path: "search", "read", "update"."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.spent: Counter[str] = Counter()

    def send(self, request: httpx.Request, **options: Any) -> httpx.Response:
        began = time.perf_counter()
        try:
            return super().send(request, **options)
        finally:
            self.spent[request.url.path.rsplit("/", 1)[-1]] += time.perf_counter() - began


def profile_listing(db: Path, link_id: str) -> list[str]:
    """cProfile of one listing page (a dry run of the first page's records: search and sort)."""
    with httpx.Client(timeout=httpx.Timeout(10.0), follow_redirects=False) as client:
        work = new_worker(db, client)
        link, mapping, adapter = work.setup(link_id, "contacts")
        properties = backfill.listed_properties(mapping)

        def one_page() -> backfill.Sorted:
            listed = backfill.page(adapter, properties, "", "", time.sleep)
            return backfill.sort_page(work.db, link, mapping, listed.records, work.clock())

        _, lines = profiled(one_page)
        work.db.conn.close()
    return lines


# --- (b) the worker --------------------------------------------------------------------------


class EnrichAlone:
    """The baseline: `enrich_with_key` alone on the inputs of the worker's events, 100 at a
    time, run just before each worker round so that both meet the same load on the machine."""

    def __init__(self, db: Path, api_key: str, contacts: list[Row]) -> None:
        self.database = store.connect(db)
        self.api_key = api_key
        self.contacts = contacts
        self.calls = 0
        self.ns = 0

    def chunk(self, number: int) -> None:
        """Enrich the `number`th BATCH of inputs, timed."""
        chosen = self.contacts[number * BATCH : (number + 1) * BATCH]
        began = time.perf_counter_ns()
        for contact in chosen:
            given = {"conEmail": contact["email"], "conFirstName": contact["firstname"],
                     "conLastName": contact["lastname"]}  # fmt: skip
            server.enrich_with_key(
                self.database, SECRET.encode(), self.api_key, given, utcnow(),
                str(uuid.uuid4()), "/bench",
            )  # fmt: skip
        self.ns += time.perf_counter_ns() - began
        self.calls += len(chosen)

    @property
    def rate(self) -> float:
        return self.calls / (self.ns / 1e9)


def work_off(db: Path, link_id: str, alone: EnrichAlone) -> Row:
    """Work off every due event with the production worker, a round at a time, timing each
    and enriching the round's number of inputs alone before it (one round profiled, and left
    out of both rates); the figures."""
    spent: list[int] = []
    outcomes: Counter[str] = Counter()
    profile: list[str] = []
    profiled_round: Row = {}
    with TimedClient(timeout=10.0, follow_redirects=False) as client:
        work = new_worker(db, client)
        for round_number in range(10**6):
            if round_number == PROFILED_ROUND:
                calls = Counter(client.spent)
                began = time.perf_counter_ns()
                done, profile = profiled(lambda: work.run_due(BATCH))
                profiled_round = {"events": done.total(), "ns": time.perf_counter_ns() - began}
                client.spent = calls  # the profiled round's calls left out too
                outcomes += done
                continue
            alone.chunk(round_number)
            began = time.perf_counter_ns()
            done = work.run_due(BATCH)
            if not done:
                break
            outcomes += done
            spent.append(time.perf_counter_ns() - began)
        matched = work.db.execute(
            "SELECT count(*) FROM records WHERE connection_id = ? AND contact_guid != ''",
            [link_id],
        ).fetchone()[0]
        work.db.conn.close()
    timed_events = outcomes.total() - profiled_round.get("events", 0)
    seconds = sum(spent) / 1e9
    spent.sort()
    return {
        "events": outcomes.total(), "outcomes": outcomes, "matched": matched,
        "timed_events": timed_events, "elapsed": seconds, "rate": timed_events / seconds,
        "p50": percentile(spent, 50), "p99": percentile(spent, 99), "rounds": len(spent),
        "profile": profile, "profiled": profiled_round, "calls": client.spent,
    }  # fmt: skip


# --- the run ---------------------------------------------------------------------------------


def set_up(db: Path, crm: FakeHubSpot) -> tuple[str, str]:
    """The organization and the HubSpot connection, made with the command line; the admin key
    and the connection's id."""
    org = contactdata(
        db, "org", "create", "--name", "Backfill bench", "--website", "bench.example",
        "--tier", "enterprise_plus", "--qps", "1000000", "--daily-limit", "1000000000",
    )  # fmt: skip
    hubspot = contactdata(
        db, "connection", "add", "--name", "hubspot bench", "--platform", "hubspot",
        "--api-key", org["adminApiKey"], "--secret", "bench-hubspot-client-secret",
        "--crm-base-url", crm.base_url, "--crm-token", "bench-crm-token",
    )  # fmt: skip
    return org["adminApiKey"], hubspot["id"]


def run(options: argparse.Namespace, work: Path) -> tuple[list[str], float]:
    """The three parts on a fresh database in `work`; the lines after the heading and the
    ratio of end to end to enrich alone."""
    db = work / "backfill.db"
    started = time.perf_counter()
    origin = prepare_database(options.db, db)
    contacts = people(db, options.records)
    records = {str(FIRST_ID + n): dict(contact) for n, contact in enumerate(contacts)}
    crm = FakeHubSpot(records)
    threading.Thread(target=crm.serve_forever, daemon=True).start()
    try:
        key, link_id = set_up(db, crm)
        lines = [f"database {origin}, ready in {time.perf_counter() - started:.0f} s", ""]
        print("\n".join(lines), flush=True)
        before = enrich_baseline(db, key, contacts)  # also warms SQLite's cache for (a), (b)
        listing = list_and_queue(db, link_id)
        searches = crm.calls["search"]
        alone = EnrichAlone(db, key, contacts)
        worked = work_off(db, link_id, alone)
        alone.database.conn.close()
        listing_profile = profile_listing(db, link_id)
    finally:
        crm.shutdown()
    figures = {"listing": listing, "searches": searches, "worked": worked}
    return _lines(lines, len(contacts), (before, alone), figures, crm, listing_profile)


def _lines(
    lines: list[str],
    count: int,
    baselines: tuple[float, EnrichAlone],
    figures: Row,
    crm: FakeHubSpot,
    listing_profile: list[str],
) -> tuple[list[str], float]:
    """The results' lines and the end-to-end ratio."""
    listing, searches, worked = figures["listing"], figures["searches"], figures["worked"]
    baseline = baselines[1].rate
    list_rate = listing["queued"] / listing["elapsed"]
    work_seconds = worked["timed_events"] / worked["rate"]
    per_record = listing["elapsed"] / listing["queued"] + 1 / worked["rate"]
    end_to_end = 1 / per_record
    outcomes = ", ".join(f"{name} {n:,}" for name, n in sorted(worked["outcomes"].items()))
    searching = listing["searching"]
    profiled = worked["profiled"]
    lines += [
        f"{count:,} HubSpot contacts on the fake CRM (one per Active employment with an e-mail)",
        "",
        f"(a) listing and queueing (backfill.run, search pages of 100): {listing['listed']:,} "
        f"listed, {listing['queued']:,} queued in {listing['elapsed']:.2f} s: "
        f"{list_rate:,.0f} records/s; {searches:,} search calls, {searching:.2f} s in them "
        f"({searching / listing['elapsed']:.0%}), the rest sorting and queueing; "
        f"backfill {listing['state']}",
        f"(b) worker (run_due rounds of {BATCH}: batch read, enrich, batch update): "
        f"{worked['timed_events']:,} events in {worked['rounds']:,} rounds, "
        f"{work_seconds:.2f} s: {worked['rate']:,.0f} records/s; per round p50 "
        f"{worked['p50']:.0f} ms, p99 {worked['p99']:.0f} ms (round {PROFILED_ROUND}, "
        f"{profiled.get('events', 0)} events profiled, {profiled.get('ns', 0) / 1e6:.0f} ms "
        "under cProfile, left out)",
        f"    outcomes: {outcomes}; enrichments matched a contact: {worked['matched']:,}; "
        f"written back: {len(crm.written):,} contacts in {crm.calls['batch/update']:,} batch "
        f"updates, read in {crm.calls['batch/read']:,} batch reads",
        _split_line(worked, work_seconds, baseline),
        f"(a+b) end to end: {end_to_end:,.0f} records/s "
        f"({listing['elapsed'] / listing['queued'] * 1e3:.2f} ms listing + "
        f"{1e3 / worked['rate']:.2f} ms working a record)",
        f"(c) enrich_with_key alone on the same inputs: {baseline:,.0f} calls/s "
        f"({baselines[1].calls:,} calls, {BATCH} before each timed worker round); "
        f"{baselines[0]:,.0f} calls/s on all {count:,} at once before (a)",
        f"    worker / enrich {worked['rate'] / baseline:.0%}; "
        f"end to end / enrich {end_to_end / baseline:.0%}",
        "note: the fake does not throttle. HubSpot limits its search API to a few requests a "
        "second (4 to 5 by its documentation): against HubSpot itself (a) is capped near "
        "400-500 records/s, and runs beside the worker (`contactdata backfill` and "
        "`contactdata worker` are separate processes)",
        "",
        f"where the time goes: one listing page (search 100, sort), cProfile top {TOP} cumulative:",
        *listing_profile,
        "",
        f"where the time goes: worker round {PROFILED_ROUND} ({profiled.get('events', 0)} "
        f"events), cProfile top {TOP} cumulative:",
        *worked["profile"],
    ]
    return lines, end_to_end / baseline


def _split_line(worked: Row, seconds: float, baseline: float) -> str:
    """Where (b)'s seconds go without a profiler: the CRM calls (timed by the client), enrich
    (at the baseline's rate) and the rest (reading events, mapping, saving, in this process)."""
    reads, updates = worked["calls"]["read"], worked["calls"]["update"]
    enrich = worked["timed_events"] / baseline
    rest = seconds - reads - updates - enrich
    return (
        f"    of (b)'s {seconds:.2f} s: batch reads {reads:.2f} s, batch updates {updates:.2f} s "
        f"(HTTP and the fake answering), enrich {enrich:.2f} s at the baseline's rate, the rest "
        f"{rest:.2f} s ({rest / seconds:.0%}: events, triage, mapping the changes, saving)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, help="dataset to copy (default var/bench-demo.db)")
    parser.add_argument("--records", type=int, default=5000, help="HubSpot contacts to backfill")
    options = parser.parse_args()
    # Every process of the run: one server secret, and the fake CRM on loopback allowed.
    os.environ["CONTACTDATA_KEY_SECRET"] = SECRET
    os.environ["CONTACTDATA_ALLOW_PRIVATE_CRM_URLS"] = "1"
    heading = (
        f"bench/backfill.py on {machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print(heading, flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-backfill-") as work:
        lines, ratio = run(options, Path(work))
    verdict = (
        f"backfill end to end / enrich alone {ratio:6.0%}  target >= {TARGET:.0%}  "
        f"{'pass' if ratio >= TARGET else 'FAIL'}"
    )
    print("\n".join([*lines[2:], "", verdict]))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n".join([heading, *lines, "", verdict]) + "\n")


if __name__ == "__main__":
    main()
