"""Benchmark: enrich, discover and webhooks driven together against `contactdata serve`, next to
the hello-world route measured in the same run; checks that the only errors are the 429s the
organization's limits call for.

    .venv/bin/python bench/load.py
    .venv/bin/python bench/load.py --seconds 30 --db /work/bench-data/full.db

Data: a copy of the 100,000-company / 1,000,000-contact dataset (var/bench-full.db, seed 7,
built with `contactdata demo-data` when missing), with one enterprise_plus organization whose
limits are qps 5,000 and 1,000,000 a day (more than two workers can serve, so neither binds)
and discover 600 per minute per key (contract §5), which the discover stream passes within
its first seconds; and one Salesforce connection (its CRM on loopback, never called: no
worker runs).

Load: `contactdata serve` (gunicorn, 2 sync workers) and three wrk processes at once for
`--seconds` (60), 2 threads each, one organization key, 50 connections split 20/10/20:

- enrich (20 connections): POST /v7/enrich rotating over 500 noisy queries (the noise model of
  bench/enrich_queries.py) for employments sampled from the dataset, "No Longer" ones included;
- discover (10): POST /v1/discover over the 50 companies with the most current people: pages 1
  and 2 of 100 people, their two most common titles within 50 miles of their headquarters, and
  the Stats of those titles (each checked in-process to find people);
- webhooks (20): Salesforce Outbound Messages to /hooks/<id>/events?key=<secret>, as in
  bench/webhooks.py: one Contact notification each, about a real contact, with a Notification
  Id unique to the request (so every one is a new event to store).

Each stream's wrk script counts its answers by status (a 429 by the policy its `RateLimit`
header names) and its socket errors. Check, printed with pass/FAIL: every non-2xx answer is a
429 of the discover limit on the discover stream; no 5xx, no other 4xx, no socket errors; the
discover limit admitted what it allows; every 2xx webhook is stored. What it allows: at most
600 in any 60 s, and one discover call before the load (checking that the server answers)
counts too, so at least 599. wrk stops at its first 100 ms tick after the duration, so a 60 s
run reaches into a second window: the probe's slot frees during the load, and the load's first
admitted calls can leave the window before wrk stops, letting one or two more in; the upper
bound is 600 per window the run touches (two for 60 s).

Baseline: bench/hello_app.py's /hello under the same gunicorn settings on the same database,
with the load's 50 connections, for `--baseline-seconds` (10) before and after the load.
Writes bench/results/load.txt.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from discover import common_titles
from enrich import sample_contacts
from enrich_queries import known_queries
from serving import (
    CLI,
    DEFAULT_DBS,
    SECRET,
    baseline_rps,
    copy_with_org,
    count_statuses,
    ensure_database,
    free_port,
    lua_script,
    machine,
    post,
    read_counts,
    read_only,
    start_server,
    stop_server,
    wrk,
    wrk_line,
    wrk_together,
)
from sqlite_utils import Database
from webhooks import SALESFORCE_ORG, contactdata, people, sender_script

from server import discover
from server.errors import ServiceError
from server.storage import db as database

RESULTS = Path(__file__).parent / "results" / "load.txt"
QPS, DAILY, DISCOVER_PER_MINUTE = 5_000, 1_000_000, 600
CONNECTIONS = {"enrich": 20, "discover": 10, "webhooks": 20}
ENRICH_BODIES, DISCOVER_COMPANIES, WEBHOOK_CONTACTS = 500, 50, 500
PROBES = 1  # discover calls before the load, counted by the discover limit
Row = dict[str, Any]


# --- requests --------------------------------------------------------------------------------


def enrich_bodies(source: Path, n: int, rng: random.Random) -> list[Row]:
    """Noisy enrich inputs for `n` employments sampled from the dataset."""
    with read_only(source) as conn:
        contacts = sample_contacts(conn, n, rng)
    return [case.body() for case in known_queries(rng, contacts, [])]


def companies_with_most_people(db: Database, n: int) -> list[tuple[str, str]]:
    """The GUIDs of the `n` companies with the most current people, with their headquarters
    ("City, ST", or the city alone)."""
    rows = db.execute(
        "SELECT e.company_guid, co.city, co.state FROM employments e "
        "JOIN companies co ON co.guid = e.company_guid WHERE e.status = 'Active' "
        "GROUP BY e.company_guid ORDER BY count(*) DESC, e.company_guid LIMIT ?",
        [n],
    )
    return [(guid, ", ".join(part for part in (city, state) if part)) for guid, city, state in rows]


def discover_bodies(db: Database, companies: int, rng: random.Random) -> list[Row]:
    """Pages, filtered pages and Stats for the companies with the most people, shuffled;
    only those that find people."""
    bodies = []
    for guid, headquarters in companies_with_most_people(db, companies):
        titles = common_titles(db, guid, 2)
        paged = {"company_guid": guid, "pagination_required": True, "page_size": 100}
        nearby = {"jobTitle": titles, "location": [headquarters], "within_miles": 50}
        bodies += [
            {**paged, "page_number": 1},
            {**paged, "page_number": 2},
            {**paged, **nearby},
            {"company_guid": guid, "jobTitle": titles, "mode": "Stats"},
        ]
    found = [body for body in bodies if _finds_people(db, body)]
    rng.shuffle(found)
    return found


def _finds_people(db: Database, body: Row) -> bool:
    try:
        request = discover.DiscoverRequest.model_validate(body)
        data = discover.discover(db, "enterprise_plus", request)["data"]
    except (ServiceError, ValueError):
        return False
    return data["total_count"] > 0 and ("contacts" not in data or bool(data["contacts"]))


def webhook_connection(db: Path, key: str) -> Row:
    """A Salesforce connection for the organization's key, added with the command line; its
    CRM on loopback is never called (no worker runs)."""
    return contactdata(
        db, "connection", "add", "--name", "salesforce load", "--platform", "salesforce",
        "--api-key", key, "--salesforce-org-id", SALESFORCE_ORG,
        "--crm-base-url", "http://127.0.0.1:9", "--crm-token", "bench-crm-token",
    )  # fmt: skip


# --- the run ---------------------------------------------------------------------------------


def hello(db: Path, workers: int, seconds: int, log: Path) -> dict[str, float]:
    """wrk on bench/hello_app.py's /hello (server/http/serve.py's gunicorn settings) with the
    load's connections."""
    port = free_port()
    server = start_server(db, port, workers, log)
    try:
        return wrk(f"http://127.0.0.1:{port}/hello", sum(CONNECTIONS.values()), seconds, None)
    finally:
        stop_server(server)


def load(
    db: Path, key: str, link: Row, bodies: dict[str, list[Row]], workers: int, seconds: int,
    work: Path,
) -> dict[str, Row]:  # fmt: skip
    """The three streams at once against `contactdata serve`; per stream, wrk's figures and
    the answers counted by status ("counts"); the webhook senders' own counts ("sent")."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    hook = f"/hooks/{link['id']}/events?key={link['secret']}"
    scripts = {
        "enrich": lua_script(bodies["enrich"], {"apikey": key}, "/v7/enrich"),
        "discover": lua_script(bodies["discover"], {"API_KEY": key}, "/v1/discover"),
        "webhooks": sender_script(hook, bodies["webhooks"], work / "webhooks.sent"),
    }
    paths = {"enrich": "/v7/enrich", "discover": "/v1/discover", "webhooks": hook}
    for name, script in scripts.items():
        (work / f"{name}.lua").write_text(count_statuses(script, work / f"{name}.counts"))
    command = [CLI, "serve", "--db", str(db), "--port", str(port), "--workers", str(workers)]
    server = start_server(db, port, workers, work / "serve.log", command)
    try:
        for path, headers, body in (
            ("/v7/enrich", {"apikey": key}, bodies["enrich"][0]),
            ("/v1/discover", {"API_KEY": key}, bodies["discover"][0]),  # PROBES
        ):
            status, _ = post(port, path, headers, body)
            if status != 200:
                raise RuntimeError(f"POST {path} answers HTTP {status} before the load")
        runs = wrk_together(
            [(base + paths[name], CONNECTIONS[name], work / f"{name}.lua") for name in scripts],
            seconds,
        )
    finally:
        stop_server(server)  # gunicorn finishes the requests it has before it stops
    found = {
        name: {**run, "counts": read_counts(work / f"{name}.counts")}
        for name, run in zip(scripts, runs, strict=True)
    }
    sent, answered, _, _ = (int(n) for n in (work / "webhooks.sent").read_text().split())
    with read_only(db) as conn:
        stored = conn.execute(
            "SELECT count(*) FROM events WHERE connection_id = ?", [link["id"]]
        ).fetchone()[0]
    found["webhooks"].update(sent=sent, answered=answered, stored=stored)
    return found


def ok_answers(counts: dict[str, int]) -> int:
    """The 2xx answers among `counts`."""
    return sum(n for status, n in counts.items() if status.startswith("2"))


def problems(streams: dict[str, Row], seconds: int) -> list[str]:
    """Whatever the limits do not call for: any non-2xx answer but the discover stream's 429s
    from the discover limit, socket errors, the discover limit admitting more than it allows
    or fewer than it must, and a 2xx webhook whose event is not stored."""
    found = []
    for name, stream in streams.items():
        for status, n in stream["counts"].items():
            expected = status.startswith("2") or (name, status) == ("discover", "429 discover")
            if n and not expected:
                found.append(f"{name}: {n:,} {status}")
    # Past its limit, the stream got at least what the probe left of the first window, and
    # at most a window's worth per window the run touches (wrk overruns its duration a little).
    counts = streams["discover"]["counts"]
    admitted, least = ok_answers(counts), DISCOVER_PER_MINUTE - PROBES
    most = DISCOVER_PER_MINUTE * (seconds // 60 + 1)
    if not counts.get("429 discover"):
        found.append("discover: no 429, the stream did not pass its limit")
    elif not least <= admitted <= most:
        found.append(f"discover: {admitted:,} 2xx, the limit admits {least:,} to {most:,}")
    webhooks = streams["webhooks"]
    if webhooks["stored"] < ok_answers(webhooks["counts"]):
        found.append(f"webhooks: {webhooks['stored']:,} events stored, fewer than 2xx answers")
    return found


def stream_lines(streams: dict[str, Row], seconds: int, hello_rps: float) -> list[str]:
    """Each stream's wrk figures and answers, the three together, the stored events."""
    lines = []
    for name, stream in streams.items():
        answers = "; ".join(f"{status} {n:,}" for status, n in stream["counts"].items())
        lines += [
            wrk_line(name, stream) + f"  ({CONNECTIONS[name]} connections)",
            f"{'':<12} answers: {answers}",
        ]
    total = sum(stream["rps"] for stream in streams.values())
    admitted = sum(ok_answers(stream["counts"]) for stream in streams.values())
    webhooks = streams["webhooks"]
    lines += [
        f"{'together':<12} {total:8,.0f} req/s ({total / hello_rps:.0%} of hello), of which 2xx "
        f"{admitted / seconds:,.0f}/s",
        f"webhooks: sent {webhooks['sent']:,}, answered {webhooks['answered']:,}, events stored "
        f"{webhooks['stored']:,} ({webhooks['stored'] - ok_answers(webhooks['counts']):,} more "
        "than 2xx answers: in flight when wrk stopped)",
    ]
    return lines


def set_up(source: Path, db: Path, seed: int) -> tuple[str, Row, dict[str, list[Row]], str]:
    """The database copy at `db` with the organization and connection, and each stream's
    requests; the key, the connection, the requests and a line about the copy."""
    started = time.perf_counter()
    key = copy_with_org(
        source, db, "Load bench", qps=QPS, daily_limit=DAILY,
        discover_per_minute=DISCOVER_PER_MINUTE,
    )  # fmt: skip
    link = webhook_connection(db, key)
    with read_only(db) as conn:
        (companies,), (contacts,) = (
            conn.execute(f"SELECT count(*) FROM {t}").fetchone() for t in ("companies", "contacts")
        )
    line = (
        f"database: a copy of {source} ({companies:,} companies, {contacts:,} contacts), with the "
        f"organization and connection, in {time.perf_counter() - started:.0f} s"
    )
    rng = random.Random(seed)
    connection = database.connect(db, migrate=False)
    bodies = {
        "enrich": enrich_bodies(source, ENRICH_BODIES, rng),
        "discover": discover_bodies(connection, DISCOVER_COMPANIES, rng),
        "webhooks": people(db, WEBHOOK_CONTACTS),
    }
    connection.conn.close()
    return key, link, bodies, line


def run(source: Path, options: argparse.Namespace, work: Path) -> tuple[list[str], dict[str, Row]]:
    """Set-up, hello, the load, hello again; the lines after the heading and the streams."""
    db = work / "load.db"
    key, link, bodies, copied = set_up(source, db, options.seed)
    connections = sum(CONNECTIONS.values())
    lines = [
        copied,
        f"organization: enterprise_plus, qps {QPS:,}, daily {DAILY:,}, discover "
        f"{DISCOVER_PER_MINUTE:,} per minute per key; one Salesforce connection",
        f"requests: enrich {len(bodies['enrich']):,} noisy queries for sampled employments; "
        f"discover {len(bodies['discover']):,} pages, filtered pages and Stats over the "
        f"{DISCOVER_COMPANIES} companies with the most people; webhooks Outbound Messages about "
        f"{len(bodies['webhooks']):,} contacts, a unique Notification Id each",
        "",
        f"contactdata serve (gunicorn, {options.workers} sync workers); 3 wrk processes at once "
        f"for {options.seconds} s, 2 threads each, {connections} connections split "
        f"{'/'.join(str(n) for n in CONNECTIONS.values())} ({'/'.join(CONNECTIONS)}); hello: "
        f"bench/hello_app.py, same gunicorn settings and database, {connections} connections, "
        f"{options.baseline_seconds} s before and after",
    ]
    print("\n".join(lines), flush=True)
    before = hello(db, options.workers, options.baseline_seconds, work / "hello.log")
    print(wrk_line("hello", before), flush=True)
    streams = load(db, key, link, bodies, options.workers, options.seconds, work)
    after = hello(db, options.workers, options.baseline_seconds, work / "hello-again.log")
    hello_rps = baseline_rps([("hello", before), ("hello again", after)])
    figures = stream_lines(streams, options.seconds, hello_rps)
    print("\n".join([*figures, wrk_line("hello again", after)]), flush=True)
    lines += [wrk_line("hello", before), *figures, wrk_line("hello again", after)]
    return lines, streams


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, help="dataset (default var/bench-full.db, built)")
    parser.add_argument("--seconds", type=int, default=60, help="length of the load")
    parser.add_argument("--baseline-seconds", type=int, default=10, help="each hello run")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7, help="sampling seed")
    options = parser.parse_args()
    # Every process of the run: one server secret, and the Salesforce connection's CRM URL on
    # loopback allowed.
    os.environ["CONTACTDATA_KEY_SECRET"] = SECRET
    os.environ["CONTACTDATA_ALLOW_PRIVATE_CRM_URLS"] = "1"
    source = options.db or DEFAULT_DBS["full"]
    ensure_database(source, "full")
    heading = f"bench/load.py on {machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    print(heading, flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-load-") as folder:
        lines, streams = run(source, options, Path(folder))
    failed = problems(streams, options.seconds)
    check = (
        f"no errors other than the 429s the limits call for: {'pass' if not failed else 'FAIL'}"
        + "".join(f"\n  {problem}" for problem in failed)
    )
    print(check)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text("\n".join([heading, *lines, "", check]) + "\n")


if __name__ == "__main__":
    main()
