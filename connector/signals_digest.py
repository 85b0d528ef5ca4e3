"""The job-change signals counted (issue 39): the tally of a set of signals the Signals page
heads its table with, and the weekly digest of each organization's counts (left, joined,
written, failed, per connection), kept as an audit entry of the organization ("signals.digest")
where its admin reads it: on the Signals page, in the audit log and `contactdata signals
digest`. Nothing leaves the machine."""

from __future__ import annotations

import json
from datetime import UTC, datetime, time, timedelta
from typing import Any

from sqlite_utils import Database

import server
from connector import store
from connector.platforms import PLATFORMS

Row = dict[str, Any]
DIGEST_ACTION = "signals.digest"
DIGEST_ACTOR = "scheduled job (weekly job-change digest)"
STATES = ("written", "pending", "failed", "skipped")
SIGNALS = ("left", "joined")
WEEK = timedelta(days=7)


def week_start(now: datetime) -> datetime:
    """Midnight UTC of the Monday of `now`'s week."""
    day = now.astimezone(UTC).date()
    return datetime.combine(day - timedelta(days=day.weekday()), time.min, UTC)


def week_days(start: datetime) -> tuple[str, str]:
    """The first and last day (YYYY-MM-DD, UTC) of the week from `start`."""
    return start.date().isoformat(), (start + WEEK - timedelta(days=1)).date().isoformat()


def tally(rows: list[Row], names: dict[str, str]) -> Row:
    """Counts of signals from `store.signal_counts` rows: in all (`total`), per signal and
    state, and per connection (named by `names`, by id) its left, joined, written and failed."""
    counts: Row = dict.fromkeys(("total", *SIGNALS, *STATES), 0)
    per: dict[str, Row] = {}
    for row in rows:
        name = names.get(row["connection_id"], "A removed connection")
        entry = per.setdefault(
            name, {"name": name, **dict.fromkeys(("total", *SIGNALS, *STATES), 0)}
        )
        for target in (counts, entry):
            target["total"] += row["signals"]
            target[row["signal"]] += row["signals"]
            target[row["state"]] += row["signals"]
    return {**counts, "connections": sorted(per.values(), key=lambda entry: entry["name"])}


def compose(db: Database, org_id: str, start: datetime) -> Row:
    """An organization's digest of the week from `start` (a Monday, UTC): the days it covers
    (`from`, `to`, both included) and its `tally`."""
    names = {link["id"]: link["name"] for link in store.connections(db) if link["org_id"] == org_id}
    bounds = {"since": server.iso(start), "until": server.iso(start + WEEK)}
    first, last = week_days(start)
    return {"from": first, "to": last, **tally(store.signal_counts(db, org_id, bounds), names)}


def keep_digests(db: Database, now: datetime) -> str:
    """The weekly job: for each organization with a CRM connection, the digest of the last
    full week (Monday to Sunday, UTC) before `now`, kept as its audit entry unless that week's
    is kept already (a second run adds nothing); what it did."""
    start = week_start(now) - WEEK
    first, last = week_days(start)
    kept = 0
    for org_id in organizations_with_crms(db):
        latest = latest_digest(db, org_id)
        if latest is not None and latest["from"] == first:
            continue
        digest = compose(db, org_id, start)
        with server.write(db):
            server.audit.record(
                db, now, org_id=org_id, actor=DIGEST_ACTOR, action=DIGEST_ACTION,
                target=f"week of {digest['from']}", detail=digest,
            )  # fmt: skip
        kept += 1
    return f"job-change digests of {first} to {last} kept for {kept} organizations"


def organizations_with_crms(db: Database) -> list[str]:
    """The organizations with a connection to a CRM (whose records can have job changes)."""
    found = {link["org_id"] for link in store.connections(db) if PLATFORMS[link["platform"]].crm}
    return sorted(found)


def latest_digest(db: Database, org_id: str) -> Row | None:
    """An organization's latest weekly digest (as `compose` made it, with `kept_at`: when),
    or None before the first."""
    rows = server.audit.page(db, org_id, {"action": DIGEST_ACTION}, None, 1)
    if not rows:
        return None
    return {**json.loads(rows[0]["detail"]), "kept_at": rows[0]["created_at"]}


def in_words(digest: Row) -> list[str]:
    """A digest as lines to read: the week, its counts, then each connection's."""
    lines = [
        f"Job changes from {digest['from']} to {digest['to']} (UTC): "
        f"{digest['left']} left, {digest['joined']} joined; {digest['written']} written to the "
        f"CRM, {digest['failed']} failed, {digest['pending']} waiting, "
        f"{digest['skipped']} skipped."
    ]
    lines += [
        f"  {entry['name']}: {entry['left']} left, {entry['joined']} joined, "
        f"{entry['written']} written, {entry['failed']} failed"
        for entry in digest["connections"]
    ]
    return lines
