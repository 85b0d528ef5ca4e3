"""The scheduled jobs: plain functions that take what they need and say what they did, and the
one wrapper that records every run in job_runs. connector/scheduler.py only decides when."""

from __future__ import annotations

import json
import logging
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlite_utils import Database

import server
from connector import (
    backfill,
    changes,
    connections,
    outbound,
    signals_digest,
    store,
    subscriptions,
    worker,
)
from server import SETTING_DEFAULTS, load_settings, utcnow

REFRESH_CREDIT_CAP: int = SETTING_DEFAULTS["REFRESH_CREDIT_CAP"]  # CONTACTDATA_REFRESH_CREDIT_CAP
PURGE_AFTER = timedelta(days=30)  # done events; dead letters stay for the operator
JOB_RUNS_KEPT = timedelta(days=90)
RETRY_ROUNDS = 10  # rounds of up to 100 events: a run ends even if events keep coming
log = logging.getLogger(__name__)
Row = dict[str, Any]


class JobFailed(Exception):
    """A job that did what it could and failed in part; the message says what."""


class UnknownJob(LookupError):
    """A job id that is not one of JOBS."""

    def __init__(self, job_id: str) -> None:
        super().__init__(f"no job {job_id!r}; the jobs are: {', '.join(JOBS)}")


def reenrich(
    db: Database, secret: bytes, now: datetime, credit_cap: int = REFRESH_CREDIT_CAP
) -> str:
    """Queue a refresh event for each CRM record enriched longer ago than its connection's
    refresh interval; the worker then reads, enriches and writes it back as usual. Records
    whose last input names a person on the suppression list (hashed under the server secret
    `secret`) are skipped: no enrich, no write (the worker checks again before either).

    A refresh costs a credit, except where the tier refreshes contacts it was delivered
    before for nothing (enterprise_plus, server.FREE_REFRESH_TIERS). Per organization and
    run, refreshes that cost are capped at `credit_cap` and at the balance, its oldest
    records (over all its connections) first; the rest wait for the next run. The event key
    holds the day, so running twice a day adds nothing.
    """
    queued = held = skipped = 0
    listed: set[str] | None = None  # the suppression list, read once a record is stale
    for org_id, links in connections.crm_connections(db).items():
        org = server.organization(db, org_id)
        if org["status"] != "active":
            continue
        stale = sorted(
            (row for link in links for row in store.stale_records(db, link["id"], _due(link, now))),
            key=lambda row: row["enriched_at"],
        )
        if stale:
            listed = server.suppression_hashes(db) if listed is None else listed
            allowed = [row for row in stale if not _suppressed(row, secret, listed)]
            stale, skipped = allowed, skipped + len(stale) - len(allowed)
        free = org["tier"] in server.FREE_REFRESH_TIERS
        chosen = _affordable(stale, free, _budget(org["credits"], credit_cap))
        held += len(stale) - len(chosen)
        with server.write(db):
            queued += store.add_events(
                db,
                [
                    worker.refresh_event(row, f"refresh:{server.iso(now)[:10]}", now)
                    for row in chosen
                ],
            )
    return (
        f"{queued} records queued for refresh"
        + (f", {held} held back by the credit cap or balance" if held else "")
        + (f", {skipped} of suppressed people skipped" if skipped else "")
    )


def _suppressed(record: Row, secret: bytes, listed: set[str]) -> bool:
    """Whether a cached record's last enrich input names a person on the list `listed`."""
    found = server.named_in_input(json.loads(record["input_fingerprint"]))
    return not listed.isdisjoint(server.privacy.hashes(server.privacy.hasher(secret), found))


def _due(link: Row, now: datetime) -> str:
    """Records of `link` enriched before this are due for a refresh."""
    return server.iso(now - timedelta(days=link["refresh_days"]))


def _budget(balance: int | None, cap: int) -> int:
    """Credits a run may commit for one organization: the cap, or less when the (limited)
    balance is smaller."""
    return cap if balance is None else max(0, min(cap, balance))


def _affordable(stale: list[Row], free: bool, budget: int) -> list[Row]:
    """The stale records to refresh within `budget` credits, in the given order. A record
    with a matched contact costs nothing on a free-refresh tier; any other costs one."""
    chosen: list[Row] = []
    for record in stale:
        costs = not (free and record["contact_guid"])
        if costs and budget == 0:
            continue
        budget -= costs
        chosen.append(record)
    return chosen


def retry_deliveries(work: worker.Worker, rounds: int = RETRY_ROUNDS) -> str:
    """Work off the due events (retries whose wait is over among them) until none is due,
    at most `rounds` rounds. The worker loop does the same between its rounds; this job is
    the way to trigger it by hand (`contactdata jobs run retry_deliveries`)."""
    total: Counter[str] = Counter()
    for _ in range(rounds):
        outcomes = work.run_due()
        if not outcomes:
            break
        total += outcomes
    return " ".join(f"{name}={n}" for name, n in sorted(total.items())) or "nothing due"


def renew_subscriptions(
    db: Database, secret: bytes, client: httpx.Client, public_url: str, now: datetime
) -> str:
    """Enable or renew each Zoho connection's notification channel that is due; a failed
    renewal fails the run (naming it), and the next run tries again well before the channel
    lapses."""
    outcomes = subscriptions.renew(db, secret, client, public_url, now)
    failed = {key: why for key, why in outcomes.items() if why.startswith("failed")}
    kept = sum(why.endswith(subscriptions.NOT_DUE) for why in outcomes.values())
    due = len(outcomes) - kept
    summary = f"{due - len(failed)} of {due} zoho channels renewed ({kept} not due)"
    if failed:
        raise JobFailed("; ".join([summary, *(f"{key} {why}" for key, why in failed.items())]))
    return summary


def purge_deliveries(db: Database, now: datetime) -> str:
    """Delete done events older than PURGE_AFTER and job runs older than JOB_RUNS_KEPT, so
    the tables hold what an operator still looks at, and the answers kept for copies of a
    request (webhook-ids and Idempotency-Keys, the connector's and /v7/enrich's) once their
    day is over: they hold enriched personal data."""
    kept_since = server.iso(now - store.ANSWERS_KEPT)
    with server.write(db):
        events = store.purge_done_events(db, server.iso(now - PURGE_AFTER))
        runs = store.purge_job_runs(db, server.iso(now - JOB_RUNS_KEPT))
        answers = store.forget_webhooks(db, kept_since)
        answers += server.forget_idempotency_keys(db, kept_since)
    return f"deleted {events} done events, {runs} job runs and {answers} kept answers"


def retention(db: Database, now: datetime, payload_days: int, transaction_days: int) -> str:
    """Purge personal data kept past its time (docs/admins/privacy.md): the stored webhook payloads
    of events finished over `payload_days` ago; the transaction cache entries (each record's
    last input and the values written) and the transactions' matched contacts over
    `transaction_days` old."""
    payloads = now - timedelta(days=payload_days)
    transactions = server.iso(now - timedelta(days=transaction_days))
    with server.write(db):
        blanked = store.blank_payloads(db, server.iso(payloads))
        records = store.purge_records(db, transactions)
        matches = server.forget_matched_contacts(db, transactions)
    return (
        f"blanked {blanked} webhook payloads, deleted {records} cached records, "
        f"cleared the matched contact of {matches} transactions"
    )


@dataclass(frozen=True)
class Run:
    """One run's outcome, as job_runs records it."""

    ok: bool
    result: str


def recorded(
    db: Database, job_id: str, body: Callable[[], str], clock: Callable[[], datetime]
) -> Run:
    """Run a job body and note the run, failed or not, in job_runs (which the settings page
    and `contactdata jobs list` show): a failure's reason becomes the result, and the
    process it ran in (`worker.process_name`) is kept with it."""
    started = clock()
    try:
        run = Run(True, body())
    except JobFailed as failure:
        log.warning("job %s failed: %s", job_id, failure)
        run = Run(False, str(failure))
    except Exception as error:  # whatever ends a run is its outcome, kept for the operator
        log.exception("job %s failed", job_id)
        run = Run(False, f"{type(error).__name__}: {error}")
    row = {"job_id": job_id, "started_at": server.iso(started), "finished_at": server.iso(clock()),
           "ok": int(run.ok), "result": run.result, "ran_by": worker.process_name()}  # fmt: skip
    with server.write(db):
        store.record_job_run(db, row)
    return run


@dataclass(frozen=True)
class Context:
    """What the jobs take, built for one run from the settings."""

    db: Database
    settings: dict[str, Any]
    client: httpx.Client
    clock: Callable[[], datetime]

    @property
    def secret(self) -> bytes:
        """The server secret, read when a job needs it (so a failure to is the run's)."""
        return server.key_secret(self.settings)


# Each job by its id (the scheduler's job ids), called with a run's context.
JOBS: dict[str, Callable[[Context], str]] = {
    "reenrich": lambda c: reenrich(c.db, c.secret, c.clock(), c.settings["REFRESH_CREDIT_CAP"]),
    "retry_deliveries": lambda c: retry_deliveries(
        worker.Worker(c.db, c.secret, c.clock, c.client, random.Random())
    ),
    "renew_subscriptions": lambda c: renew_subscriptions(
        c.db, c.secret, c.client, c.settings["PUBLIC_URL"], c.clock()
    ),
    "purge_deliveries": lambda c: purge_deliveries(c.db, c.clock()),
    "retention": lambda c: retention(
        c.db,
        c.clock(),
        c.settings["RETENTION_PAYLOAD_DAYS"],
        c.settings["RETENTION_TRANSACTION_DAYS"],
    ),
    "advance_backfills": lambda c: backfill.advance_all(
        worker.Worker(c.db, c.secret, c.clock, c.client, random.Random())
    ),
    "changes": lambda c: changes.run(
        c.db, worker.Worker(c.db, c.secret, c.clock, c.client, random.Random()), c.clock()
    ),
    "signals_digest": lambda c: signals_digest.keep_digests(c.db, c.clock()),
}


def run(job_id: str, db_path: str | Path, clock: Callable[[], datetime] = utcnow) -> Run:
    """Run one job now, recorded, on a connection and HTTP client of its own: what the
    scheduler calls (from its thread; a SQLite connection belongs to one thread) and what
    `contactdata jobs run` calls."""
    if job_id not in JOBS:
        raise UnknownJob(job_id)
    settings = load_settings({"DB": str(db_path)})
    db = store.connect(db_path)
    try:
        with outbound.client(timeout=10.0) as client:
            context = Context(db, settings, client, clock)
            outcome = recorded(db, job_id, lambda: JOBS[job_id](context), clock)
    finally:
        db.close()
    log.info("job %s: %s", job_id, outcome.result)
    return outcome
