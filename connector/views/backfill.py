"""The backfill page of a connection, /settings/connections/<id>/backfill, and the health
actions of the Connections tab: per kind of record the platform has, every record or one CRM
list (`?lists=<kind>` asks the CRM for them), modified since a date or not; the dry run's count
and credit estimate, then start with a credit cap, progress, stop and resume
(connector/backfill.py); and the retry of a connection's dead letters (connector/health.py).

Starting queues nothing in the request: it saves a running backfill, which the worker's
advance_backfills job lists page by page (connector/jobs.py). The dry run does list the CRM's
records in the request, so it runs only when the admin asks for it, and does not wait when
the CRM asks to; nor does asking for the lists.
"""

from __future__ import annotations

import random
from typing import Any

import httpx
from flask import Response, abort, flash, redirect, request, url_for

import server
from connector import backfill, health, outbound, store, worker
from connector.platforms import PLATFORMS
from connector.platforms.base import OPERATORS, Condition, CrmField, Permanent, Retriable, View
from connector.views import settings as page
from server import InvalidParameter, ServiceError

Row = dict[str, Any]
NAME_LIMIT = 200  # characters of a list's name kept beside its id
REFRESH_SECONDS = 10  # how often the page reloads itself while a backfill runs
DRY_RUN_TIMEOUT = 10.0


@page.blueprint.get("/connections/<connection_id>/backfill")
def backfill_page(connection_id: str) -> Response:
    """Each kind's latest backfill and what can be done with it; with `?lists=<kind>`, the
    CRM's lists of that kind to choose from."""
    link = _own_crm(connection_id)
    kind = request.args.get("lists", "")
    if kind not in PLATFORMS[link["platform"]].objects:
        return _page(link)
    fields: list[CrmField] = []
    try:
        with outbound.client(timeout=DRY_RUN_TIMEOUT) as client:
            found = backfill.views(_worker(client), link["id"], kind)
            if PLATFORMS[link["platform"]].conditions:
                fields = backfill.condition_fields(_worker(client), link["id"], kind)
    except (Permanent, Retriable) as failure:
        noun = PLATFORMS[link["platform"]].view_noun
        flash(f"The CRM did not list its {noun}s of {kind}: {failure.reason}", "error")
        return _page(link)
    return _page(link, views={kind: found}, fields={kind: fields})


@page.blueprint.post("/connections/<connection_id>/backfill/estimate")
def estimate_backfill(connection_id: str) -> Response:
    """The dry run of one kind: records listed, to enrich, and credits at most."""
    link = _own_crm(connection_id)
    try:
        kind, since, source = _kind(link), _since(), _source()
        with outbound.client(timeout=DRY_RUN_TIMEOUT) as client:
            found = backfill.dry_run(_worker(client), link["id"], kind, since, _no_wait, source)
    except ServiceError as error:
        return _back(link, error)
    except (Permanent, Retriable) as failure:
        return _back(link, InvalidParameter(f"The CRM did not list the {kind}: {failure.reason}"))
    return _page(link, {kind: found})


@page.blueprint.post("/connections/<connection_id>/backfill/start")
def start_backfill(connection_id: str) -> Response:
    """Start a backfill of one kind with a credit cap; the worker lists and queues it."""
    link = _own_crm(connection_id)
    try:
        kind, cap, since = _kind(link), _cap(), _since()
        source, name = page.field("source"), page.field("source_name")[:NAME_LIMIT]
        now = server.now()
        start = lambda db: backfill.start(db, link["id"], kind, since, cap, now, source, name)  # noqa: E731
        audit = {"kind": kind, "creditCap": cap, "since": since, "list": name or source}
        row = page.change(start, "backfill.start", link["name"], audit)
    except ServiceError as error:
        return _back(link, error)
    flash(f"Backfill {row['id']} of {kind} started: the worker lists and queues the records "
          "within a minute.", "success")  # fmt: skip
    return _back(link)


@page.blueprint.post("/connections/<connection_id>/backfill/stop")
def stop_backfill(connection_id: str) -> Response:
    """Stop the running backfill of one kind; what it queued is still worked off."""
    link = _own_crm(connection_id)
    try:
        kind = _kind(link)
        stop = lambda db: backfill.stop(db, link["id"], kind, server.now())  # noqa: E731
        row = page.change(stop, "backfill.stop", link["name"], {"kind": kind})
    except ServiceError as error:
        return _back(link, error)
    flash(f"Backfill {row['id']} of {kind} stopped; resume it to go on where it left off.",
          "success")  # fmt: skip
    return _back(link)


@page.blueprint.post("/connections/<connection_id>/backfill/resume")
def resume_backfill(connection_id: str) -> Response:
    """Resume the stopped backfill of one kind from its cursor, with a credit cap."""
    link = _own_crm(connection_id)
    try:
        kind, cap = _kind(link), _cap()
        now = server.now()
        resume = lambda db: backfill.resume(db, link["id"], kind, cap, now)  # noqa: E731
        row = page.change(resume, "backfill.resume", link["name"], {"kind": kind, "creditCap": cap})
    except ServiceError as error:
        return _back(link, error)
    flash(f"Backfill {row['id']} of {kind} resumes where it left off.", "success")
    return _back(link)


@page.blueprint.post("/connections/<connection_id>/retry-dead")
def retry_dead_letters(connection_id: str) -> Response:
    """Make every dead letter of a connection due again now."""
    link = page.own_connection(connection_id)
    try:
        retry = lambda db: health.retry_dead(db, link["id"], server.now())  # noqa: E731
        count = page.change(retry, "connection.retry_dead", link["name"])
    except ServiceError as error:
        return page.failed(error, ".connections_page")
    if count:
        flash(f"{count} dead letter{'s' if count != 1 else ''} of {link['name']} due again; "
              "the worker takes them up next.", "success")  # fmt: skip
    else:
        flash(f"{link['name']} has no dead letters to retry.", "error")
    return redirect(url_for(".connections_page"), 303)


# --- helpers ---------------------------------------------------------------------------------


def _page(link: Row, estimates: dict[str, backfill.Estimate] | None = None,
          views: dict[str, list[View]] | None = None,
          fields: dict[str, list[CrmField]] | None = None) -> Response:  # fmt: skip
    latest: dict[str, Row] = {}
    for row in backfill.status(page.db(), link["id"], server.now()):
        latest.setdefault(row["kind"], row)
    kinds = PLATFORMS[link["platform"]].objects
    running = any(row["state"] == "running" for row in latest.values())
    return page.render(
        "backfill.html", link=link, kinds=kinds, latest=latest, estimates=estimates or {},
        views=views or {}, fields=fields or {}, operators=OPERATORS,
        noun=PLATFORMS[link["platform"]].view_noun,
        platform_conditions=PLATFORMS[link["platform"]].conditions,
        refresh=REFRESH_SECONDS if running else None,
        progress=backfill.progress_line, reasons=backfill.skipped_reasons,
    )  # fmt: skip


def _worker(client: httpx.Client) -> worker.Worker:
    """A worker over the request's client, for the calls the page makes to the CRM."""
    return worker.Worker(page.db(), page.server_secret(), server.now, client, random.Random())


def _own_crm(connection_id: str) -> Row:
    """The organization's connection to a CRM (others have no records to backfill)."""
    link = page.own_connection(connection_id)
    if not PLATFORMS[link["platform"]].crm:
        abort(404)
    return link


def _kind(link: Row) -> str:
    kind = page.field("kind")
    objects = PLATFORMS[link["platform"]].objects
    if kind not in objects:
        raise InvalidParameter(f"Choose one of {', '.join(objects)}.")
    return kind


def _source() -> str:
    """The form's list or view, or the condition picked (a field, an operator and a value:
    the adapter checks the field and the value against the CRM's field API)."""
    field, operator = page.field("field"), page.field("operator")
    if not field:
        return page.field("source")
    if operator not in OPERATORS:
        raise InvalidParameter(f"Choose one of the operators {', '.join(OPERATORS)}.")
    return Condition(field, operator, page.field("value")).source


def _since() -> str:
    """The form's modified-since date (or time) as ISO 8601 UTC; "" for none."""
    text = page.field("since")
    try:
        return backfill.since_from(text)
    except ValueError:
        raise InvalidParameter(f"{text!r} is not a date: give one as YYYY-MM-DD.") from None


def _cap() -> int:
    cap = page.integer("credit_cap", "credit cap")
    if not 1 <= cap <= store.LARGEST_ID:  # past it SQLite cannot hold the cap
        raise InvalidParameter(f"The credit cap must be 1 to {store.LARGEST_ID:,}.")
    return cap


def _no_wait(seconds: float) -> None:
    """A page waits for no CRM: a 429 or 5xx ends the dry run with the reason."""
    raise Retriable(f"it asks to wait {seconds:.0f} seconds; estimate again later")


def _back(link: Row, error: ServiceError | None = None) -> Response:
    """Back to the connection's backfill page, with what went wrong."""
    if error is not None:
        flash(error.message, "error")
    return redirect(url_for(".backfill_page", connection_id=link["id"]), 303)
