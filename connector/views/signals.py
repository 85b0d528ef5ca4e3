"""The settings page's Signals page, /settings/signals: the job changes seen in the records of
the organization's CRMs (issue 39), this week unless the admin picks days, filtered by
connection, signal and state, 50 a page, each with what was written for it; headed by the
counts of what the filters pick and by the latest weekly digest (connector/signals_digest.py).
Each connection's own job-change settings are on its page (views/connections.py)."""

from __future__ import annotations

import json
from typing import Any

from flask import Response, g, request

import server
from connector import signals_digest, store
from connector.views import settings as page
from server import ServiceError

Row = dict[str, Any]
SIGNALS_SHOWN = 50
SIGNAL_WORDS = {"left": "left their company", "joined": "joined an account of yours"}
STATE_WORDS = {"written": "written", "pending": "waiting", "failed": "failed", "skipped": "skipped"}
# The contactdata_job_change fields a mark writes, by how their CRM property names end.
MARK_WORDS = {"left_on": "Left on", "new_company": "New company", "new_title": "New title"}


@page.blueprint.get("/signals")
def signals() -> Response:
    """The organization's job changes, newest first, a page at a time, with their counts."""
    names = {link["id"]: link["name"] for link in page.own_connections()}
    try:
        shown, args = _filters(names)
        before = page.older_than()
    except ServiceError as error:
        return page.failed(error, ".signals")
    rows = store.signals_page(page.db(), g.caller.org_id, shown, before, SIGNALS_SHOWN + 1)
    counts = store.signal_counts(page.db(), g.caller.org_id, shown)
    return page.render(
        "signals.html",
        signals=[shown_signal(row) for row in rows[:SIGNALS_SHOWN]],
        counts=signals_digest.tally(counts, names),
        digest=signals_digest.latest_digest(page.db(), g.caller.org_id),
        names=names,
        shown=args,
        signal_words=SIGNAL_WORDS,
        state_words=STATE_WORDS,
        older=rows[SIGNALS_SHOWN - 1]["id"] if len(rows) > SIGNALS_SHOWN else None,
    )


def _filters(names: dict[str, str]) -> tuple[Row, dict[str, str]]:
    """What the query string picks (for the store) and the filters to show in the form. With
    no day named at all (neither `from` nor `to`, even empty), the days of this week."""
    shown: Row = {
        "connection_id": page.choice("connection", names),
        "signal": page.choice("signal", SIGNAL_WORDS),
        "state": page.choice("state", STATE_WORDS),
    }
    args = request.args.to_dict()
    if "from" in args or "to" in args:
        return {**shown, **page.day_bounds()}, args
    monday = signals_digest.week_start(server.now())
    return {**shown, "since": server.iso(monday)}, {**args, "from": monday.date().isoformat()}


def shown_signal(row: Row) -> Row:
    """A signals row as the page shows it: the change in words and what was written."""
    return {**row, "change": change_in_words(row), "written": written_parts(row["written"])}


def change_in_words(row: Row) -> str:
    """ "left Acme for Globex as VP Sales", "joined Globex as VP Sales (from Acme)"."""
    old, new, title = row["old_company"], row["new_company"], row["new_title"]
    at_new = f"{new} as {title}" if new and title else new or (f"as {title}" if title else "")
    if row["signal"] == "left":
        return f"left {old or 'their company'}" + (f" for {at_new}" if at_new else "")
    return f"joined {at_new or 'a company'}" + (f" (from {old})" if old else "")


def written_parts(text: str) -> Row:
    """What was written for a signal (JSON): the fields marked on the record (`marked`, name:
    value), the task made for its owner (`task`: id, subject) and the new contact made at the
    new company (`contact`: id); absent parts left out."""
    found = json.loads(text) if text else {}
    if not isinstance(found, dict):
        return {}
    parts: Row = {}
    for name in ("marked", "task", "contact"):
        if isinstance(found.get(name), dict) and found[name]:
            parts[name] = found[name]
    if "marked" in parts:
        parts["marked"] = {field_words(name): value for name, value in parts["marked"].items()}
    return parts


def field_words(name: str) -> str:
    """A marked CRM property as people read it: "Left on (contactdata_job_change_left_on)";
    another property by its name."""
    for ending, words in MARK_WORDS.items():
        if name.lower().endswith(ending):
            return f"{words} ({name})"
    return name
