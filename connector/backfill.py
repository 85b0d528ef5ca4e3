"""Backfills (`contactdata backfill`): a CRM's existing records of one kind, listed page by
page through its adapter (`Adapter.list_page`) and queued as thin events that the worker then
enriches and writes back like any other, after the live ones (events.priority 1).

A run is resumable: each page's events and the backfill's new cursor and counts are saved in
one transaction (the backfills table), so a run killed goes on from its last saved page, and
an event key per backfill and record (`backfill:<id>:<kind>:<record id>`) queues no record
twice. It queues no record without an identifier enrich can use, none enriched within the
connection's refresh interval (as the reenrich job), and no more records than the credit cap
or the organization's balance allows, counting one credit a record and every event of the
connection still pending (conservative: a No Match, or a refresh on a free-refresh tier, costs
nothing). The dry run lists the same records and says what a run would queue and cost.

A backfill is started (`start`, the settings page) and then advanced page by page by whoever
drives it: `contactdata backfill run` in the foreground, or the worker's advance_backfills job
for every running one (`advance_all`). Two drivers never queue a page twice: each page is saved
only if the backfill is as its driver read it (still running, same cursor and counts). Stopped
(`stop`, or at the cap or balance), it resumes (`resume`) from its saved cursor: the page it
stopped in is listed again, its records already queued are not queued again, and it adds to the
counts only what it did not add the first time (page_listed, page_fresh, page_skipped), so no
count goes back. Skipped records are counted by reason (enriched recently, no identifier); those
the cap or the balance left out are not skipped but left for later (`capped`).

A backfill takes every record of its kind, or those of one CRM list or saved view (`source`,
the ids `Adapter.views` offers, listed by `Adapter.list_view_page`); either modified since a
date when given.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlite_utils import Database

import server
from connector import mappings, store, worker
from connector.platforms import PLATFORMS
from connector.platforms.base import (
    Adapter,
    Condition,
    CrmField,
    Listed,
    Permanent,
    Retriable,
    View,
)

PRIORITY = 1  # events.priority of a backfill's events: the worker takes live ones (0) first
PAGE_TRIES = 8  # attempts at one page the CRM asks us to wait for (429, 5xx), then give up
WAIT_FIRST_SECONDS = 1.0
WAIT_CAP_SECONDS = 120.0
UNLIMITED = 2**62
PAGES_A_RUN = 20  # pages the advance_backfills job lists of each running backfill a run
Row = dict[str, Any]
Report = Callable[[str], None]
Sleep = Callable[[float], None]


def since_from(text: str | None) -> str:
    """`--since` (a date or an ISO 8601 time, UTC unless it says) as ISO 8601 UTC; "" for none."""
    if not text:
        return ""
    when = datetime.fromisoformat(text)
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return server.iso(when.astimezone(UTC))


@dataclass(frozen=True)
class Sorted:
    """A page's records sorted: those a run would queue (`eligible`, in the CRM's order) and
    of them those delivered before (`free` on a free-refresh tier); the others counted."""

    listed: int
    identified: int
    fresh: int
    eligible: list[str]
    free: int
    fresh_ids: frozenset[str] = frozenset()

    @property
    def unidentified(self) -> int:
        """Records without an identifier enrich can use."""
        return self.listed - self.identified


def sort_page(
    db: Database, link: Row, mapping: mappings.Mapping, records: Row, now: datetime
) -> Sorted:
    """Which listed records need enriching: an identifier enrich can use (server.parse_input
    accepts the mapped input) and not enriched within the connection's refresh interval."""
    identified = [key for key, values in records.items() if _identifies(mapping, values)]
    cached = {
        row["record_id"]: row
        for row in store.cached_records(db, link["id"], mapping.kind, identified)
    }
    due = server.iso(now - timedelta(days=link["refresh_days"]))
    fresh = {key for key, row in cached.items() if row["enriched_at"] >= due}
    eligible = [key for key in identified if key not in fresh]
    free = sum(1 for key in eligible if key in cached and cached[key]["contact_guid"])
    return Sorted(len(records), len(identified), len(fresh), eligible, free, frozenset(fresh))


def _identifies(mapping: mappings.Mapping, values: Row) -> bool:
    try:
        server.parse_input(mapping.enrich_input(values))
    except server.ServiceError:
        return False
    return True


def listed_properties(mapping: mappings.Mapping) -> list[str]:
    """The CRM properties a listing asks for: the mapping's plain input paths."""
    plain = [path for paths in mapping.input.values() for path in paths if "." not in path]
    return list(dict.fromkeys(plain))


def page(adapter: Adapter, properties: list[str], since: str, cursor: str, sleep: Sleep,
         source: str = "") -> Listed:  # fmt: skip
    """One page from `cursor` ("" for the first) of every record, or of the CRM list or saved
    view `source`, waiting as the CRM asks (Retriable's retry_after, else capped doubling) up
    to PAGE_TRIES attempts; then Retriable goes up."""
    for attempt in range(PAGE_TRIES):
        try:
            if source:
                return adapter.list_view_page(source, properties, since or None, cursor or None)
            return adapter.list_page(properties, since or None, cursor or None)
        except Retriable as failure:
            if attempt + 1 == PAGE_TRIES:
                raise
            backoff = min(WAIT_CAP_SECONDS, WAIT_FIRST_SECONDS * 2**attempt)
            sleep(max(failure.retry_after or 0.0, backoff))
    raise AssertionError("unreachable")


def pages(
    adapter: Adapter, properties: list[str], since: str, cursor: str, sleep: Sleep, source: str = ""
) -> Iterator[Listed]:
    """Every page from `cursor` on (of the list or view `source` when given)."""
    while True:
        listed = page(adapter, properties, since, cursor, sleep, source)
        yield listed
        if listed.cursor is None:
            return
        cursor = listed.cursor


# --- the dry run -------------------------------------------------------------------------------


@dataclass
class Estimate:
    """What a dry run found: records listed, with an identifier, enriched recently, to
    enrich, and of those delivered before; the organization's tier and balance."""

    tier: str
    balance: int | None
    listed: int = 0
    identified: int = 0
    fresh: int = 0
    to_enrich: int = 0
    delivered_before: int = 0
    since: str = ""
    source: str = ""
    source_name: str = ""
    noun: str = "list"  # what the CRM calls its saved selection (Platform.view_noun)

    @property
    def credits(self) -> int:
        """At most this many credits: one a record enriched, less those refreshed for nothing."""
        free = self.delivered_before if self.tier in server.FREE_REFRESH_TIERS else 0
        return self.to_enrich - free

    def add(self, sorted_page: Sorted) -> None:
        self.listed += sorted_page.listed
        self.identified += sorted_page.identified
        self.fresh += sorted_page.fresh
        self.to_enrich += len(sorted_page.eligible)
        self.delivered_before += sorted_page.free

    def scope(self) -> str:
        """Which records were listed, in words ("" for every one)."""
        named = f" in the {self.noun} {self.source_name or self.source}" if self.source else ""
        named = f" where {self.source_name}" if self.noun == "condition" else named
        return named + (f" modified since {self.since[:10]}" if self.since else "")

    def summary(self) -> list[str]:
        """The dry run's report, a few lines."""
        balance = "unlimited" if self.balance is None else f"{self.balance:,}"
        free = self.tier in server.FREE_REFRESH_TIERS
        refreshed = ", and a contact delivered before is refreshed for nothing" if free else ""
        lines = [
            f"{self.listed:,} records listed{self.scope()}; {self.identified:,} carry an "
            "identifier (an e-mail, a company name or website, a profile URL or a GUID)",
            f"skipped: {self.fresh:,} enriched within the refresh interval, "
            f"{self.listed - self.identified:,} without an identifier; "
            f"{self.to_enrich:,} to enrich",
            f"at most {self.credits:,} credits at the {self.tier} tier (an upper bound: only a "
            f"delivered match is charged, a No Match costs nothing{refreshed}); "
            f"balance {balance}",
        ]
        if self.balance is not None and self.balance < self.to_enrich:
            lines.append(f"a run queues at most {self.balance:,} records (the balance)")
        return lines


def views(work: worker.Worker, connection_id: str, kind: str) -> list[View]:
    """The CRM's lists or saved views of `kind` a backfill can take."""
    _, _, adapter = work.setup(connection_id, kind)
    return adapter.views()


def condition_fields(work: worker.Worker, connection_id: str, kind: str) -> list[CrmField]:
    """The fields of `kind` a picked condition may compare (none of several values, nor of
    a type the CRM's API does not say)."""
    _, _, adapter = work.setup(connection_id, kind)
    return [field for field in adapter.fields() if field.type not in ("multipicklist", "other")]


class NoSuchView(server.ServiceError):
    """A backfill asked of a list or view the CRM does not have (any more)."""

    status, code = 400, "no_such_view"


def source_named(adapter: Adapter, link: Row, kind: str, source: str) -> tuple[str, str]:
    """What the CRM calls the list, view or condition `source` of `kind` ("" for none) and
    what it is (the platform's view noun, or "condition"); NoSuchView when the CRM has no
    list or view of that id."""
    condition = Condition.of_source(source)
    noun = "condition" if condition else PLATFORMS[link["platform"]].view_noun
    if not source or condition:
        return (condition.label if condition else ""), noun
    named = {view.id: view.name for view in adapter.views()}
    if source not in named:
        raise NoSuchView(f"The CRM has no {noun} of {kind} with the id {source!r}.")
    return named[source], noun


def dry_run(work: worker.Worker, connection_id: str, kind: str, since: str, sleep: Sleep,
            source: str = "") -> Estimate:  # fmt: skip
    """List the records a run would (of the list or view `source` when given, which must be
    one of the CRM's), and count them; nothing is written."""
    link, mapping, adapter = work.setup(connection_id, kind)
    org = server.organization(work.db, link["org_id"])
    name, noun = source_named(adapter, link, kind, source)
    estimate = Estimate(org["tier"], org["credits"], since=since, source=source,
                        source_name=name, noun=noun)  # fmt: skip
    for listed in pages(adapter, listed_properties(mapping), since, "", sleep, source):
        estimate.add(sort_page(work.db, link, mapping, listed.records, work.clock()))
    return estimate


# --- the run -----------------------------------------------------------------------------------


class BackfillRefused(server.ServiceError):
    """A backfill that cannot be started, stopped or resumed as asked; the message says why."""

    status, code = 409, "backfill_refused"


def start(db: Database, connection_id: str, kind: str, since: str, max_credits: int | None,
          now: datetime, source: str = "", source_name: str = "") -> Row:  # fmt: skip
    """A new running backfill of `kind` (of the CRM list or saved view `source`, which the
    CRM names `source_name`, when given), nothing listed yet (a driver lists it); refused
    while one of that kind is running. Like every change of a connection's backfills, it
    locks the connection first: of two starts at once, the second finds the first's."""
    stamp = server.iso(now)
    with server.write(db):
        store.lock_connection(db, connection_id)
        if store.running_backfill(db, connection_id, kind) is not None:
            raise BackfillRefused(f"A backfill of {kind} is running already: stop it first.")
        return store.start_backfill(db, {"connection_id": connection_id, "kind": kind,
                                         "since": since, "credit_cap": max_credits,
                                         "source": source, "source_name": source_name,
                                         "started_at": stamp, "updated_at": stamp})  # fmt: skip


def stop(db: Database, connection_id: str, kind: str, now: datetime) -> Row:
    """Stop the running backfill of `kind`: no page is queued for it any more (one being
    listed now is dropped), and it can be resumed from its cursor."""
    with server.write(db):
        store.lock_connection(db, connection_id)
        row = store.running_backfill(db, connection_id, kind)
        if row is None:
            raise BackfillRefused(f"No backfill of {kind} is running.")
        values = {"state": "stopped", "note": "on request", "updated_at": server.iso(now)}
        store.update_backfill(db, row["id"], values)
    return {**row, **values}


def resume(db: Database, connection_id: str, kind: str, max_credits: int | None,
           now: datetime) -> Row:  # fmt: skip
    """Run the latest backfill of `kind` again from its cursor, if it stopped (on request,
    or at its cap or the balance), with `max_credits` as its cap over all it queued."""
    with server.write(db):
        store.lock_connection(db, connection_id)
        latest = next((r for r in store.backfills_of(db, connection_id) if r["kind"] == kind), None)
        if latest is None or latest["state"] != "stopped":
            state = "none" if latest is None else latest["state"]
            raise BackfillRefused(f"No stopped backfill of {kind} to resume (latest: {state}).")
        if max_credits is not None and max_credits <= latest["queued"]:
            raise BackfillRefused(
                f"The credit cap must be more than the {latest['queued']:,} records it queued."
            )
        values = {"state": "running", "note": "", "credit_cap": max_credits,
                  "updated_at": server.iso(now)}  # fmt: skip
        store.update_backfill(db, latest["id"], values)
    return {**latest, **values}


def run(
    work: worker.Worker,
    connection_id: str,
    kind: str,
    since: str,
    max_credits: int | None,
    sleep: Sleep = time.sleep,
    report: Report = lambda line: None,
    source: str = "",
) -> Row:
    """Queue the records of a backfill page by page (of the list or view `source` when
    given, which must be one of the CRM's); resume the connection's backfill of `kind` left
    running (its own since, source and cap) when there is one. The backfill at the end:
    done, stopped (at the cap or balance, or on request), or (a Retriable raised) running."""
    link, _, adapter = work.setup(connection_id, kind)  # one that cannot be listed starts nothing
    row = store.running_backfill(work.db, connection_id, kind)
    if row is None:
        name, noun = source_named(adapter, link, kind, source)
        row = start(work.db, connection_id, kind, since, max_credits, work.clock(), source, name)
        of = f" ({noun} {name})" if name else ""
        report(f"backfill {row['id']} of {kind}{of} started")
    else:
        report(f"backfill {row['id']} of {kind} resumed after {row['listed']:,} records listed")
    return advance(work, row, None, sleep, report)


def advance(
    work: worker.Worker,
    row: Row,
    pages: int | None,
    sleep: Sleep = time.sleep,
    report: Report = lambda line: None,
) -> Row:
    """List and queue up to `pages` pages (None: all) of a running backfill; the backfill
    after them."""
    link, mapping, adapter = work.setup(row["connection_id"], row["kind"])
    properties = listed_properties(mapping)
    while row["state"] == "running" and pages != 0:
        listed = page(adapter, properties, row["since"], row["cursor"], sleep, row["source"])
        row = _queue(work, link, mapping, row, listed)
        report(progress_line(row))
        pages = None if pages is None else pages - 1
    return row


def advance_all(work: worker.Worker, pages: int = PAGES_A_RUN, sleep: Sleep = time.sleep) -> str:
    """The advance_backfills job: up to `pages` pages of every running backfill. One the CRM
    refuses for good (Permanent) is stopped with the reason; one it asks to wait for stays
    running for the next run."""
    lines = []
    for row in store.running_backfills(work.db):
        try:
            row = advance(work, row, pages, sleep)
        except Permanent as failure:
            values = {"state": "stopped", "note": f"refused: {failure.reason}",
                      "updated_at": server.iso(work.clock())}  # fmt: skip
            with server.write(work.db):
                store.update_backfill(work.db, row["id"], values)
            row = {**row, **values}
        except Retriable as failure:
            lines.append(f"backfill {row['id']} waits: {failure.reason}")
            continue
        lines.append(f"backfill {row['id']}: {progress_line(row)}")
    return "; ".join(lines) or "no backfill running"


def _queue(
    work: worker.Worker, link: Row, mapping: mappings.Mapping, row: Row, listed: Listed
) -> Row:
    """Queue a page's eligible records within the budget, and save the backfill's cursor and
    counts with them, in one transaction; nothing when the backfill changed since `row` was
    read (stopped, or advanced by another driver): the backfill as it is then. The connection
    is locked first: neither the backfill changes, nor does another backfill of the connection
    queue (the budget counts its events), until this page is queued."""
    now = work.clock()
    sorted_page = sort_page(work.db, link, mapping, listed.records, now)
    with server.write(work.db):
        store.lock_connection(work.db, link["id"])
        current = store.backfill(work.db, row["id"])
        if current is None or _moved(current, row):
            return current or {**row, "state": "stopped"}
        queued_before = store.queued_records(
            work.db, link["id"], f"{key_prefix(row['id'])}{row['kind']}:", list(listed.records)
        )
        eligible = [key for key in sorted_page.eligible if key not in queued_before]
        budget, limit = _budget(work.db, link, row)
        chosen = eligible[:budget]
        queued = store.add_events(work.db, [_event(row, link, key, now) for key in chosen])
        capped = len(eligible) - len(chosen)
        fresh = len(sorted_page.fresh_ids - queued_before)  # not those enriched since queued
        values = {**counts(row, sorted_page, fresh, capped), "queued": row["queued"] + queued,
                  "capped": capped, "updated_at": server.iso(now)}  # fmt: skip
        if listed.remaining is not None:
            values["total"] = row["listed"] - row["page_listed"] + listed.remaining
        if capped:  # the cursor stays: resumed, this page is listed again
            values["state"], values["note"] = "stopped", f"at the {limit}"
        elif listed.cursor is None:
            values.update(state="done", total=values["listed"])
        else:
            values["cursor"] = listed.cursor
        store.update_backfill(work.db, row["id"], values)
    return {**row, **values}


def counts(row: Row, sorted_page: Sorted, fresh: int, capped: int) -> Row:
    """A backfill's counts after a page of which `fresh` records were enriched recently and
    `capped` were left for later (by the cap or the balance): listed (less those left),
    skipped by reason, and what the page added to them (page_*). A page listed again after
    a resume adds only what it did not add the first time, so no count ever goes back."""
    page_now = {"listed": sorted_page.listed - capped, "fresh": fresh,
                "unidentified": sorted_page.unidentified}  # fmt: skip
    page_before = {"listed": row["page_listed"], "fresh": row["page_fresh"],
                   "unidentified": row["page_skipped"] - row["page_fresh"]}  # fmt: skip
    added = {name: max(0, page_now[name] - page_before[name]) for name in page_now}
    kept = {name: page_before[name] + added[name] if capped else 0 for name in page_now}
    return {
        "listed": row["listed"] + added["listed"],
        "skipped": row["skipped"] + added["fresh"] + added["unidentified"],
        "skipped_fresh": row["skipped_fresh"] + added["fresh"],
        "skipped_unidentified": row["skipped_unidentified"] + added["unidentified"],
        "page_listed": kept["listed"],
        "page_fresh": kept["fresh"],
        "page_skipped": kept["fresh"] + kept["unidentified"],
    }


def _moved(current: Row, read: Row) -> bool:
    """Whether a backfill is no longer as it was read: stopped, or a page further."""
    fields = ("state", "cursor", "listed", "queued")
    return any(current[name] != read[name] for name in fields)


def _budget(db: Database, link: Row, row: Row) -> tuple[int, str]:
    """How many more records the backfill may queue, and what limits it: the credit cap
    (less what it queued) or the balance (less every event of the connection pending)."""
    limits = {"credit cap": UNLIMITED, "balance": UNLIMITED}
    if row["credit_cap"] is not None:
        limits["credit cap"] = row["credit_cap"] - row["queued"]
    balance = server.organization(db, link["org_id"])["credits"]
    if balance is not None:
        limits["balance"] = balance - store.pending_events(db, link["id"])
    limit = min(limits, key=lambda name: limits[name])
    return max(0, limits[limit]), limit


def _event(row: Row, link: Row, record_id: str, now: datetime) -> Row:
    """A thin event asking the worker to read, enrich and write back one listed record."""
    return {
        "connection_id": link["id"],
        "event_key": f"{key_prefix(row['id'])}{row['kind']}:{record_id}",
        "kind": row["kind"],
        "record_id": record_id,
        "payload": json.dumps({"backfill": row["id"]}),
        "thin": 1,
        "received_at": server.iso(now),
        "priority": PRIORITY,
    }


def key_prefix(backfill_id: int) -> str:
    """What the event keys of a backfill start with."""
    return f"backfill:{backfill_id}:"


# --- progress ----------------------------------------------------------------------------------


def progress_line(row: Row) -> str:
    """A run's progress after a page: listed of total, queued, skipped (by reason), and the
    records the cap or the balance left for later."""
    total = "?" if row["total"] is None else f"{row['total']:,}"
    cap = "" if row["credit_cap"] is None else f" (cap {row['credit_cap']:,})"
    state = "" if row["state"] == "running" else f"; {row['state']} {row['note']}".rstrip()
    waiting = row["capped"] if row["state"] == "stopped" else 0
    left = f", {waiting:,} left for later" if waiting else ""
    return (
        f"listed {row['listed']:,} of {total}, queued {row['queued']:,}{cap}, "
        f"skipped {row['skipped']:,}{skipped_reasons(row)}{left}{state}"
    )


def skipped_reasons(row: Row) -> str:
    """Why records were skipped, in parentheses ("" when none were, or for a backfill from
    before the reasons were counted)."""
    reasons = [
        f"{row['skipped_fresh']:,} enriched recently" if row["skipped_fresh"] else "",
        f"{row['skipped_unidentified']:,} without an identifier"
        if row["skipped_unidentified"] else "",
    ]  # fmt: skip
    said = ", ".join(reason for reason in reasons if reason)
    return f" ({said})" if said else ""


def status(db: Database, connection_id: str, now: datetime) -> list[Row]:
    """Each backfill of a connection, newest first, with how its events were worked off:
    `worked` (done or dead) of `queued`, `dead`, `credits` (at most: events done whose record
    matched) and `seconds_left` (an estimate from the rate so far; None before any)."""
    found = []
    for row in store.backfills_of(db, connection_id):
        counts = store.backfill_progress(db, connection_id, key_prefix(row["id"]))
        worked = (counts["done"] or 0) + (counts["dead"] or 0)
        expected = row["queued"]
        if row["state"] == "running" and row["total"] is not None:
            expected += max(0, row["total"] - row["listed"])  # a guess: all of them queued
        elapsed = (now - datetime.fromisoformat(row["started_at"])).total_seconds()
        left = (expected - worked) * elapsed / worked if worked else None
        found.append({**row, "worked": worked, "dead": counts["dead"] or 0,
                      "credits": counts["matched"] or 0, "seconds_left": left})  # fmt: skip
    return found


def status_line(row: Row) -> str:
    """One backfill's status, for `contactdata backfill status`."""
    left = row["seconds_left"]
    eta = "unknown" if left is None else f"about {timedelta(seconds=round(left))}"
    return (
        f"backfill {row['id']} {row['kind']} {row['state']}: {progress_line(row)}; worked off "
        f"{row['worked']:,} of {row['queued']:,} ({row['dead']:,} dead), credits spent at most "
        f"{row['credits']:,}, time left {eta if row['worked'] < row['queued'] else 'none'}"
    )
