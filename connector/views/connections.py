"""The settings page's connections: the list with its add form, and each connection's page
(its URLs, state, CRM credentials, edit, pause and resume, secret rotation and removal).

A connection added here enriches with a standard key of its own, made through the admin use
case (audited like the keys page's) and shown only by its last characters; removing the
connection suspends that key. Its inbound secret is shown in full once, on the answer to
the add or the rotation that made it. Every change is audited through `page.change`, and
another organization's connection answers 404 on every route.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flask import Response, current_app, flash, g, redirect, request, url_for

import server
from connector import (
    connections,
    health,
    install,
    mapping_versions,
    mappings,
    oauth_apps,
    outbound,
    signal_settings,
    store,
    webhook_setup,
)
from connector.platforms import PLATFORMS
from connector.views import settings as page
from connector.views import webhooks
from connector.views.install import finished
from server import InvalidParameter, ServiceError, admin

Row = dict[str, Any]
DEFAULT_REFRESH_DAYS = 30
# What a job change may do in a record (signal_settings.ACTIONS), in words.
SIGNAL_ACTION_WORDS = {
    "mark": "Mark the record",
    "task": "Create a task for the owner",
    "new_contact": "Add the person at their new company",
}


class ConnectionRefused(ServiceError):
    """A connection change refused as asked (connections.InvalidConnection's message)."""

    status, code = 400, "invalid_connection"


class SignalSettingsRefused(ServiceError):
    """Job-change settings refused as asked (signal_settings.InvalidSignalSettings)."""

    status, code = 400, "invalid_signal_settings"


# --- list and add ----------------------------------------------------------------------------


@page.blueprint.get("/connections")
def connections_page() -> Response:
    """The organization's connections (URLs, mapping and its validation) and the add form."""
    return page.render("connections.html", connections=_listed(), **_add_form())


@page.blueprint.post("/connections")
def add_connection() -> Response:
    """Add a connection with a key of its own; its inbound secret is shown on this answer."""
    try:
        days = page.integer("refresh_days", "refresh interval")
        added = page.change(lambda db: _add(db, days), "connection.add", page.field("name"))
    except ServiceError as error:
        return page.failed(error, ".connections_page")
    flash(
        f"Connection {added.row['name']} added. Copy its inbound secret now: it is not shown "
        "again.",
        "success",
    )
    return _detail(added.row, new_secret=added.secret)


def _add(db: Any, days: int) -> connections.Added:
    ctx = page.context()
    try:
        return connections.add(
            db,
            page.server_secret(),
            ctx.now,
            name=page.field("name"),
            platform=page.field("platform"),
            own_key=lambda email: admin.create_key(db, ctx, email)[1],
            connected=False,
            refresh_days=days,
            secret=page.field("secret") or _app_secret(db),
            salesforce_org_ids=tuple(page.field("salesforce_org_ids").replace(",", " ").split()),
        )
    except connections.InvalidConnection as error:
        raise ConnectionRefused(str(error)) from None


def _app_secret(db: Any) -> str:
    """For a platform that signs with its app's client secret (HubSpot), the registered app's,
    when the admin gives none (a public app's connections are all signed with it)."""
    platform = PLATFORMS.get(page.field("platform"))
    if platform is None or not platform.issues_secret:
        return ""
    return oauth_apps.client_secret(db, page.server_secret(), platform.name)


def _listed() -> list[Row]:
    public_url, now = current_app.config["PUBLIC_URL"], server.now()
    return [
        {
            "row": connections.shown(link),
            "state": connections.state(link),
            "urls": connections.urls(link, public_url),
            "mapping": _mapping_summary(link),
            "takes_events": PLATFORMS[link["platform"]].crm,
            "health": health.of(page.db(), link["id"], now)
            if PLATFORMS[link["platform"]].crm
            else None,
            "token": connections.token_state(link, now) if link["crm_base_url"] else "",
        }
        for link in page.own_connections()
    ]


def _add_form() -> Row:
    return {
        "platforms": list(PLATFORMS),
        "issuing": [name for name, kind in PLATFORMS.items() if kind.issues_secret],
        "default_refresh_days": DEFAULT_REFRESH_DAYS,
        "refresh_days": connections.REFRESH_DAYS,
    }


def _mapping_summary(link: Row) -> Row:
    """The contacts mapping in use (its saved version, else its file): its platform and
    counts, or the problems that make it unusable."""
    version = store.mapping_version_number(page.db(), link["id"], "contacts")
    name = f"version {version}" if version else Path(link["mapping"]).name
    summary: Row = {"file": name, "problems": []}
    try:
        mapping = mapping_versions.current(page.db(), link, "contacts")
    except (mappings.MappingError, OSError) as error:
        problems = error.problems if isinstance(error, mappings.MappingError) else [str(error)]
        return {**summary, "problems": problems}
    counts = {"inputs": len(mapping.input), "outputs": len(mapping.output)}
    return {**summary, "platform": mapping.platform, **counts}


# --- one connection --------------------------------------------------------------------------


@page.blueprint.get("/connections/<connection_id>")
def connection(connection_id: str) -> Response:
    """One connection: state, key hint, webhook URLs, installation and what can be done."""
    return _detail(page.own_connection(connection_id))


@page.blueprint.post("/connections/<connection_id>/crm")
def set_crm_credentials(connection_id: str) -> Response:
    """Save a token the CRM issues to its admins, with the CRM's API base URL."""
    link = page.own_connection(connection_id)
    apply = lambda db: connections.set_crm(  # noqa: E731
        db, page.server_secret(), link["id"],
        base_url=page.field("base_url"), token=page.field("token"),
    )  # fmt: skip
    if (refused := _changed(apply, "connection.crm", link)) is not None:
        return refused
    flash(f"{link['name']} is connected to its CRM; held events are worked off now.", "success")
    finished(page.own_connection(link["id"]))
    return _back(link)


@page.blueprint.post("/connections/<connection_id>/edit")
def edit_connection(connection_id: str) -> Response:
    """Rename a connection or change its refresh interval."""
    link = page.own_connection(connection_id)
    try:
        days = page.integer("refresh_days", "refresh interval")
    except ServiceError as error:
        return page.failed(error, ".connection", connection_id=link["id"])
    name = page.field("name")
    apply = lambda db: connections.edit(db, link["id"], name, days)  # noqa: E731
    detail = {"name": name, "refreshDays": days}
    if (refused := _changed(apply, "connection.edit", link, detail)) is not None:
        return refused
    flash(f"Connection {name} saved.", "success")
    return _back(link)


@page.blueprint.post("/connections/<connection_id>/signals")
def set_signal_settings(connection_id: str) -> Response:
    """Choose what a job change does in each kind of record the connection enriches, and the
    credits a round of change updates may spend (empty: the default); audited."""
    link = page.own_connection(connection_id)
    try:
        if not PLATFORMS[link["platform"]].crm:
            raise InvalidParameter(f"{link['name']} writes no records: it has no job changes.")
        text = page.field("change_credit_cap")
        cap = page.integer("change_credit_cap", "change credit cap") if text else None
        chosen = {kind: request.form.getlist(f"actions-{kind}") for kind in _kinds(link)}
        apply = lambda db: _save_signal_settings(db, link["id"], chosen, cap)  # noqa: E731
        detail = {"actions": chosen, "changeCreditCap": cap}
        page.change(apply, "connection.signals", link["name"], detail)
    except signal_settings.InvalidSignalSettings as error:
        refused = SignalSettingsRefused(f"{str(error)[:1].upper()}{str(error)[1:]}.")
        return page.failed(refused, ".connection", connection_id=link["id"])
    except ServiceError as error:
        return page.failed(error, ".connection", connection_id=link["id"])
    flash(f"Job-change settings of {link['name']} saved.", "success")
    return _back(link)


def _save_signal_settings(
    db: Any, connection_id: str, chosen: dict[str, list[str]], cap: int | None
) -> bool:
    """Save the cap, then each kind's actions (in the caller's transaction: all or none)."""
    done = signal_settings.set_credit_cap(db, connection_id, cap)
    for kind, actions in chosen.items():
        done = signal_settings.set_actions(db, connection_id, kind, actions) and done
    return done


def _kinds(link: Row) -> tuple[str, ...]:
    """The kinds of record a connection's platform enriches (contacts, leads, companies)."""
    return PLATFORMS[link["platform"]].objects


def _signal_form(link: Row) -> Row:
    """The job-change section's values: each kind's chosen actions and the change credit cap
    (None: the default, shown beside it)."""
    return {
        "actions": {kind: signal_settings.actions_for(link, kind) for kind in _kinds(link)},
        "words": SIGNAL_ACTION_WORDS,
        "cap": link.get("change_credit_cap"),
        "default_cap": signal_settings.CHANGE_CREDIT_CAP,
        "largest": store.LARGEST_ID,
    }


@page.blueprint.post("/connections/<connection_id>/pause")
def pause_connection(connection_id: str) -> Response:
    """Pause: requests still verified and events stored, but nothing processed."""
    link = page.own_connection(connection_id)
    now = server.now()
    page.change(lambda db: connections.pause(db, link["id"], now), "connection.pause", link["name"])
    flash(
        f"{link['name']} is paused: its events are stored and acknowledged, and worked off "
        "when you resume it; its enrich URL refuses until then.",
        "success",
    )
    return _back(link)


@page.blueprint.post("/connections/<connection_id>/resume")
def resume_connection(connection_id: str) -> Response:
    """Resume: the worker works off the events held while paused."""
    link = page.own_connection(connection_id)
    page.change(lambda db: connections.resume(db, link["id"]), "connection.resume", link["name"])
    flash(f"{link['name']} is running again; held events are worked off now.", "success")
    return _back(link)


@page.blueprint.post("/connections/<connection_id>/rotate-secret")
def rotate_secret(connection_id: str) -> Response:
    """A new inbound secret (pasted, for a platform that issues its own), shown this once;
    the previous one verifies for the grace period chosen. What the connector registered in
    the CRM is registered again with it, the outcome shown beside it (a refusal keeps it)."""
    link = page.own_connection(connection_id)
    try:
        grace = page.integer("grace_seconds", "grace period")
    except ServiceError as error:
        return page.failed(error, ".connection", connection_id=link["id"])
    now, secret = server.now(), page.field("secret")
    apply = lambda db: connections.rotate_secret(  # noqa: E731
        db, page.server_secret(), link["id"], now, grace, secret
    )
    try:
        value = page.change(
            apply, "connection.rotate_secret", link["name"], {"graceSeconds": grace}
        )
    except connections.InvalidConnection as error:
        return page.failed(ConnectionRefused(str(error)), ".connection", connection_id=link["id"])
    except ServiceError as error:
        return page.failed(error, ".connection", connection_id=link["id"])
    flash(
        f"{link['name']} has a new inbound secret. Copy it now: it is not shown again.", "success"
    )
    rotated = page.own_connection(link["id"])
    return _detail(rotated, new_secret=value, registered=_set_up_again(rotated))


def _set_up_again(link: Row) -> webhook_setup.Outcome:
    """What the connector registered in the CRM registered again with the new secret."""
    public_url = current_app.config["PUBLIC_URL"]
    with outbound.client(timeout=10.0) as client:
        return webhook_setup.set_up_again(
            page.db(), page.server_secret(), link, client, public_url, server.now()
        )


@page.blueprint.get("/connections/<connection_id>/remove")
def confirm_remove_connection(connection_id: str) -> Response:
    """The confirmation step before a removal, which cannot be undone."""
    return page.render("confirm_remove.html", link=page.own_connection(connection_id))


@page.blueprint.post("/connections/<connection_id>/remove")
def remove_connection(connection_id: str) -> Response:
    """Remove a connection: its URLs answer 404 at once, its own key is suspended and its
    OAuth grant revoked where the CRM allows."""
    link = page.own_connection(connection_id)
    webhooks.torn_down(link)
    link = page.own_connection(connection_id)  # a teardown may have renewed its grant
    revoke = connections.revoker(page.server_secret(), server.now(), page.context())
    apply = lambda db: connections.remove(db, link["id"], revoke)  # noqa: E731
    page.change(apply, "connection.remove", link["name"])
    webhooks.grant_revoked(link)
    flash(f"Connection {link['name']} removed; its URLs and its key no longer work.", "success")
    return redirect(url_for(".connections_page"), 303)


def _detail(
    link: Row, new_secret: str | None = None, registered: webhook_setup.Outcome | None = None
) -> Response:
    kind = PLATFORMS[link["platform"]]
    connect = install.offer(page.db(), link, server.now())
    if connect["consent_origin"]:  # the Connect form's answer sends the browser there
        g.form_targets = [connect["consent_origin"]]
    return page.render(
        "connection.html",
        link=connections.shown(link),
        state=connections.state(link),
        kind=kind,
        urls=connections.urls(link, current_app.config["PUBLIC_URL"], new_secret),
        install=webhook_setup.install(
            page.db(), link, current_app.config["PUBLIC_URL"], new_secret
        ),
        new_secret=new_secret,
        registered=registered,
        connect=connect,
        grace_choices=page.GRACE_CHOICES,
        default_grace=page.DEFAULT_GRACE,
        refresh_days=connections.REFRESH_DAYS,
        signals=_signal_form(link) if kind.crm else None,
    )


def _changed(apply: Any, action: str, link: Row, detail: Row | None = None) -> Response | None:
    """Make an audited change; None when done, else the page telling why it was refused."""
    try:
        page.change(apply, action, link["name"], detail)
    except connections.InvalidConnection as error:
        return page.failed(ConnectionRefused(str(error)), ".connection", connection_id=link["id"])
    except ServiceError as error:
        return page.failed(error, ".connection", connection_id=link["id"])
    return None


def _back(link: Row) -> Response:
    return redirect(url_for(".connection", connection_id=link["id"]), 303)
