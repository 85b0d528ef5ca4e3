"""The settings page's Connect with OAuth (issue 22): the button that sends an admin to a
CRM's consent page for one of the organization's connections, and the deployment's one
callback, which connects it (connector/install.py does both halves) and finishes its
installation in the CRM where the platform's API allows (`finished`).

A browser coming back from the CRM's consent page (another site) sends no SameSite=Strict
session cookie; the callback then answers a page that asks again from this site, which does
send it (`resume`): the state stays pending until a request in its own session takes it."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from flask import Response, current_app, flash, g, redirect, request, url_for

import server
from connector import install, outbound
from connector.views import settings as page
from server import ServiceError

Row = dict[str, Any]
RESUMED = "resumed"  # the callback's mark that it already asked again for the cookie


@page.blueprint.post("/connections/<connection_id>/connect")
def connect_oauth(connection_id: str) -> Response:
    """Start connecting: a pending authorization, then off to the platform's consent page."""
    link = page.own_connection(connection_id)
    try:
        url = install.begin(
            page.db(), page.server_secret(), server.now(), link=link,
            session_key=page.session_key(), public_url=current_app.config["PUBLIC_URL"],
            environment=page.field("environment"), tenant=page.field("tenant"),
        )  # fmt: skip
    except ServiceError as error:
        return page.failed(error, ".connection", connection_id=connection_id)
    return redirect(url, 303)


@page.blueprint.get("/oauth/callback")
def oauth_callback() -> Response:
    """Where every platform sends the admin back: connect, or say why not."""
    caller = page.signed_in()
    if caller is None:
        return resume()
    try:
        with outbound.client(timeout=10.0) as client:
            grant = install.finish(
                page.db(), page.server_secret(), client, server.now(),
                args=request.args, session_key=page.session_key(), org_id=caller.org_id,
                public_url=current_app.config["PUBLIC_URL"],
            )  # fmt: skip
        detail = {"platform": page.platform_title(grant.link["platform"]),
                  "accountId": grant.account_id}  # fmt: skip
        save = lambda db: install.save(db, page.server_secret(), grant)  # noqa: E731
        page.change(save, "connection.oauth_connect", grant.link["name"], detail)
    except ServiceError as error:
        return page.failed(error, ".connections_page")
    title = page.platform_title(grant.link["platform"])
    flash(f"{grant.link['name']} is connected to {title}.", "success")
    finished(page.own_connection(grant.link["id"]))
    return redirect(url_for(".connection", connection_id=grant.link["id"]), 303)


def finished(link: Row) -> None:
    """Finish a just-connected connection's installation in its CRM (`install.complete`:
    webhooks, custom fields), each outcome flashed and what was done audited."""
    by = f"{g.caller.email} ({g.caller.key_id})"
    with outbound.client(timeout=10.0) as client:
        outcomes = install.complete(
            page.db(), page.server_secret(), link, client, current_app.config["PUBLIC_URL"],
            server.now(), by,
        )  # fmt: skip
    said = [outcome.message for outcome in outcomes if outcome.message]
    page.change(lambda _: bool(said), "connection.install", link["name"], {"outcomes": said})
    for outcome in outcomes:
        if outcome.message:
            flash(outcome.message, "success" if outcome.ok else "error")


def resume() -> Response:
    """A callback without the session: once, a page that asks for the same URL again from
    this site (its cookie then comes along); after that, sign-in (the state stays pending
    until it expires). Nothing here touches the session, which is not this browser's."""
    if request.args.get(RESUMED):
        return redirect(url_for(".sign_in"), 303)
    query = urlencode([*request.args.items(multi=True), (RESUMED, "1")])
    again = f"{url_for('.oauth_callback')}?{query}"
    return page.render("oauth_resume.html", again=again)
