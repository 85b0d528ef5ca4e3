"""The settings page's webhook registration: an admin registers a connection's events URL in
its CRM again (after a refusal, a new scope, a new public URL), through
connector/webhook_setup.py. Routes join the settings blueprint (views/settings.py PAGES)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Response, current_app, flash, redirect, url_for

import server
from connector import outbound, webhook_setup
from connector.views import settings as page
from server import ServiceError

Row = dict[str, Any]


@page.blueprint.post("/connections/<connection_id>/webhooks")
def register_webhooks(connection_id: str) -> Response:
    """Register the connection's webhook in its CRM; the outcome flashed, in the CRM's words
    when it refused (the connection stays as it was)."""
    link = page.own_connection(connection_id)  # another organization's: 404
    try:
        page.change(lambda _: True, "connection.register_webhooks", link["name"])
    except ServiceError as error:
        flash(error.message, "error")
        return redirect(url_for("settings.connection", connection_id=link["id"]), 303)
    registered(link)
    return redirect(url_for("settings.connection", connection_id=link["id"]), 303)


def registered(link: Row) -> None:
    """Register a connection's webhook in its CRM (after it is connected, or again), its
    outcome flashed."""
    _flashed(webhook_setup.set_up, link)


def torn_down(link: Row) -> None:
    """Delete the webhooks the connector registered in a connection's CRM, before the
    connection goes; a refusal flashed in the CRM's words."""
    _flashed(webhook_setup.tear_down, link)


def grant_revoked(link: Row) -> None:
    """Revoke a removed connection's OAuth grant in its CRM; the outcome flashed."""
    _flashed(webhook_setup.revoke_grant, link)


def _flashed(step: Callable[..., webhook_setup.Outcome], link: Row) -> None:
    """Run a webhook_setup step for `link` with a client of its own; its outcome flashed."""
    public_url = current_app.config["PUBLIC_URL"]
    with outbound.client(timeout=10.0) as client:
        outcome = step(page.db(), page.server_secret(), link, client, public_url, server.now())
    if outcome.message:
        flash(outcome.message, "success" if outcome.ok else "error")
