"""The preview pages of the settings page: /settings/connections/<id>/preview asks for a CRM
record (its id or e-mail) and kind, shows what enriching it would write (connector/preview.py)
and writes exactly that once when the admin presses Apply; and shows what the connection's
pending job changes would write (marks, tasks, new contacts). Another organization's
connection or preview is a 404."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

from flask import Response, abort, flash, g, redirect, url_for

import server
from connector import mapping_words, outbound, preview, worker
from connector.platforms import PLATFORMS
from connector.views import settings as page
from server import NotFound, ServiceError, auth


@page.blueprint.get("/connections/<connection_id>/preview")
def preview_form(connection_id: str) -> Response:
    """The form: which kind of record, by record id or e-mail."""
    link = page.own_connection(connection_id)
    kinds = PLATFORMS[link["platform"]].objects
    return page.render("preview.html", link=link, kinds=kinds, shown=None, expired=False)


@page.blueprint.post("/connections/<connection_id>/preview")
def make_preview(connection_id: str) -> Response:
    """Read and enrich the record (charged like any enrichment); then show the preview."""
    link = page.own_connection(connection_id)
    try:
        with _worker() as work:
            shown = preview.show(
                work, link["id"], page.field("kind") or "contacts",
                record_id=page.field("record_id"), email=page.field("email"),
                created_by=g.caller.email,
            )  # fmt: skip
    except ServiceError as error:
        return page.failed(error, ".preview_form", connection_id=connection_id)
    return redirect(url_for(".show_preview", connection_id=link["id"], preview_id=shown.id), 303)


@page.blueprint.post("/connections/<connection_id>/preview/job-changes")
def preview_job_changes(connection_id: str) -> Response:
    """What the connection's job changes not written yet would write (read from the CRM,
    nothing written, nothing charged)."""
    link = page.own_connection(connection_id)
    try:
        with _worker() as work:
            shown = preview.job_changes(work, link["id"])
    except ServiceError as error:
        return page.failed(error, ".preview_form", connection_id=connection_id)
    kinds = PLATFORMS[link["platform"]].objects
    return page.render(
        "preview.html", link=link, kinds=kinds, shown=None, expired=False, job_changes=shown
    )


@page.blueprint.get("/connections/<connection_id>/previews/<preview_id>")
def show_preview(connection_id: str, preview_id: str) -> Response:
    """A stored preview's rows and, until it is applied or expires, its Apply button."""
    link = page.own_connection(connection_id)
    shown = _stored(link["id"], preview_id)
    cutoff = server.iso(server.now() - preview.LIFETIME)
    expired = not shown.applied_at and shown.created_at < cutoff
    kinds = PLATFORMS[link["platform"]].objects
    return page.render(
        "preview.html", link=link, kinds=kinds, shown=shown, expired=expired, labels=_labels(shown)
    )


@page.blueprint.post("/connections/<connection_id>/previews/<preview_id>/apply")
def apply_preview(connection_id: str, preview_id: str) -> Response:
    """Write what the preview showed, once; a second Apply says it was applied already."""
    link = page.own_connection(connection_id)
    _stored(link["id"], preview_id)
    try:
        auth.require_active_organization(g.caller)
        with _worker() as work:
            done = preview.apply(work, link["id"], preview_id)
        detail = {"recordId": done.record_id, "kind": done.kind, "outcome": done.outcome}
        page.change(lambda database: True, "connection.preview_applied", link["name"], detail)
    except ServiceError as error:
        flash(error.message, "error")
    else:
        flash(f"Applied to record {done.record_id}: {done.outcome}.", "success")
    return redirect(url_for(".show_preview", connection_id=link["id"], preview_id=preview_id), 303)


@contextmanager
def _worker() -> Iterator[worker.Worker]:
    """The worker's setup and enrichment, on the app's clock, over a checked outbound client."""
    with outbound.client(timeout=15.0) as client:
        yield worker.Worker(page.db(), page.server_secret(), server.now, client, random.Random())


def _stored(connection_id: str, preview_id: str) -> preview.Preview:
    """The connection's preview; a 404 page for any other id."""
    try:
        return preview.stored(page.db(), connection_id, preview_id)
    except NotFound:
        abort(404)


def _labels(shown: preview.Preview) -> dict[str, str]:
    """The enrich fields of a preview's rows, in words."""
    return {row["field"]: mapping_words.label(row["field"]) for row in shown.rows}
