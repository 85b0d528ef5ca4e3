"""Webhooks set up for the admin. When a connection's CRM is connected, the connector registers
the connection's events URL in the CRM where the platform's API allows it (Pipedrive's
webhooks, Zoho's notification channel) and records what it made (connections.crm_webhook_ids);
when the connection's inbound secret is rotated, it registers them again with the new one
(they send it, and the old one is refused after its grace period); when the connection is
removed, it deletes exactly those, never one an admin made by hand. A refusal is reported in
the CRM's own words with the steps to do it by hand, and never loses the connection (nor a
rotation). Also what a connection's page shows of its installation (`install`): the
platform's own steps with the connection's real URLs, the secret named by its last
characters only."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
from sqlite_utils import Database

import server
from connector import connections, mappings, oauth, oauth_apps, outbound, store, subscriptions
from connector.platforms import PLATFORMS
from connector.platforms.base import Adapter, Permanent, Platform, Retriable

Row = dict[str, Any]
# What a registration or a deletion can fail with: the CRM's refusal, a CRM that cannot be
# reached, a base URL no longer allowed, a token this server secret cannot open.
FAILURES = (Permanent, Retriable, outbound.UnsafeUrl, store.UnsealError)
# The platforms whose field API the connector creates the mapping's custom fields through when
# a connection is connected (connector/install.py's `create_fields`; crm-install.md §3):
# Salesforce's needs the Tooling API and field-level security, Dataverse's a solution
# publisher's prefix: their admins make them.
FIELDS_MADE = frozenset({"hubspot", "pipedrive", "zoho"})


@dataclass(frozen=True)
class Outcome:
    """What became of a setup or a teardown: whether it went as asked, and one message for
    the admin ("" when there was nothing to do)."""

    ok: bool
    message: str = ""


def set_up(
    db: Database, secret: bytes, row: Row, client: httpx.Client, public_url: str, now: datetime
) -> Outcome:
    """Register the connection's events URL in its CRM, where the platform's API allows it,
    and record what was made (replacing what an earlier connect made). A refusal is the
    outcome, with the CRM's words and the steps to do it by hand; the connection stays."""
    platform = PLATFORMS[row["platform"]]
    if not (platform.registers_webhooks and row["crm_base_url"]):
        return Outcome(True)
    urls = connections.urls(row, public_url)
    try:
        ids = _replaced(db, secret, row, client, public_url, now)
    except FAILURES as error:
        steps = " ".join(platform.install_steps(urls, row["secret_hint"]))
        return Outcome(False, f"Could not register the webhook: {_words(error, secret, row)}, "
                              f"do it by hand: {steps}")  # fmt: skip
    return Outcome(True, f"Registered in {platform.title}: {_what(platform, ids)} posting to "
                         f"{urls['eventsUrl']}.")  # fmt: skip


def set_up_again(
    db: Database, secret: bytes, row: Row, client: httpx.Client, public_url: str, now: datetime
) -> Outcome:
    """After a rotation of the connection's inbound secret (`row` read after it): register
    again, with the new secret, what the connector registered in the CRM, which sends the
    secret (Pipedrive's Basic password, Zoho's channel token) and is refused once the grace
    period ends; nothing to do (Outcome(True)) where it registered none. A refusal is the
    outcome, with the steps to do it by hand; the new secret stays."""
    platform = PLATFORMS[row["platform"]]
    if not (platform.registers_webhooks and row["crm_base_url"] and store.webhook_ids(row)):
        return Outcome(True)
    urls = connections.urls(row, public_url)
    try:
        ids = _replaced(db, secret, row, client, public_url, now)
    except FAILURES as error:
        until = row["previous_secret_expires_at"]
        works = f"which works until {until}" if until else "which no longer works"
        steps = platform.removal_steps(urls, row["secret_hint"])
        steps = " ".join(steps + platform.install_steps(urls, row["secret_hint"]))
        return Outcome(False, f"Could not register the webhook again in {platform.title} with "
                              f"the new secret: {_words(error, secret, row)}; it still sends "
                              f"the previous one, {works}. Do it by hand: {steps}")  # fmt: skip
    return Outcome(True, f"Registered again in {platform.title} with the new secret: "
                         f"{_what(platform, ids)} posting to {urls['eventsUrl']}.")  # fmt: skip


def tear_down(
    db: Database, secret: bytes, row: Row, client: httpx.Client, public_url: str, now: datetime
) -> Outcome:
    """Delete the webhooks the connector registered for the connection, and forget them; a
    failure is the outcome, with the CRM's words and what to do by hand."""
    platform, ids = PLATFORMS[row["platform"]], store.webhook_ids(row)
    if not ids:
        return Outcome(True)
    try:
        _on_adapter(db, secret, row, client, now, lambda a: platform.tear_down_webhooks(a, ids))
    except FAILURES as error:
        urls = connections.urls(row, public_url)
        steps = " ".join(platform.removal_steps(urls, row["secret_hint"]))
        words = _words(error, secret, row)
        return Outcome(False, f"Could not delete the webhook in {platform.title}: {words}, "
                              f"do it by hand: {steps}")  # fmt: skip
    with server.write(db):
        store.save_webhook_ids(db, row["id"], [])
    return Outcome(True, f"Deleted in {platform.title}: {_what(platform, ids)}.")


def remove(
    db: Database,
    secret: bytes,
    row: Row,
    client: httpx.Client,
    public_url: str,
    now: datetime,
    revoke: Callable[[Database, Row], None] | None = None,
) -> Outcome:
    """Remove a connection, its CRM's webhooks deleted first and its OAuth grant revoked
    after (`revoke_grant`): the connection goes whether or not the CRM let them be (its URLs
    stop at once, its own key revoked by `revoke`); both outcomes in one."""
    outcome = tear_down(db, secret, row, client, public_url, now)
    row = store.connection(db, row["id"]) or row  # as the teardown left it (a rotated grant)
    connections.remove(db, row["id"], revoke)
    grant = revoke_grant(db, secret, row, client, public_url, now)
    message = " ".join(part for part in (outcome.message, grant.message) if part)
    return Outcome(outcome.ok and grant.ok, message)


def revoke_grant(
    db: Database, secret: bytes, row: Row, client: httpx.Client, public_url: str, now: datetime
) -> Outcome:
    """Revoke the OAuth grant the connection was connected with (its refresh token, else its
    access token) where the platform documents how; a token the admin pasted is theirs to
    revoke. A refusal is the outcome, in the endpoint's words, with where to do it by hand."""
    platform = PLATFORMS[row["platform"]]
    if not row.get("crm_oauth_sealed"):
        pasted = f"The token pasted for it was not revoked: revoke it in {platform.title}."
        return Outcome(True, pasted if row.get("crm_token_sealed") else "")
    try:
        grant = oauth.Credentials.loads(store.unseal(secret, row["crm_oauth_sealed"]))
        outbound.check_crm_url(grant.token_url)
        revoked = platform.revoke_grant(client, grant, store.crm_token(secret, row))
    except (*FAILURES, ValueError) as error:
        return Outcome(False, f"The {platform.title} grant could not be revoked: "
                              f"{_words(error, secret, row)}; revoke it in {platform.title}'s "
                              "Connected Apps.")  # fmt: skip
    if not revoked:
        return Outcome(True, f"{platform.title} offers no revocation of one grant: remove "
                             "the app's access there if nothing else uses it.")  # fmt: skip
    token = "refresh token" if grant.refresh_token else "access token"
    return Outcome(True, f"Revoked the {platform.title} grant: its {token} no longer works.")


def install(db: Database, row: Row, public_url: str, secret: str | None = None) -> Row:
    """What the installation partial (templates/settings/_install_steps.html) shows of a
    connection: its platform's steps with its real URLs (`secret` in them only when given,
    at its first display) and, for a sender of fields, the keys it sends and a body to paste;
    whether the connector registers the webhook itself, and how many it has registered;
    whether it made the custom fields at connect, and the app's own subscriptions (their
    steps are then not among those left)."""
    platform = PLATFORMS[row["platform"]]
    urls = connections.urls(row, public_url, secret)
    steps = platform.install_steps(urls, row["secret_hint"], sent_fields(db, row))
    fields_made = bool(row["crm_base_url"]) and platform.name in FIELDS_MADE
    app_subscribed = bool(row["crm_base_url"] and row["crm_account_id"]) and (
        platform.app_webhooks and oauth_apps.subscribes(db, platform.name)
    )
    made = [(fields_made, is_fields_step), (app_subscribed, is_app_subscriptions_step)]
    return {
        "connection_id": row["id"],
        "platform": platform.title,
        "registers": platform.registers_webhooks and platform.crm,
        "registered": len(store.webhook_ids(row)),
        "connected": bool(row["crm_base_url"]),
        "fields_made": fields_made,
        "app_subscribed": app_subscribed,
        "steps": [step for step in steps if not _made(step, made)],
    }


def _made(step: str, made: list[tuple[bool, Callable[[str], bool]]]) -> bool:
    """Whether connecting did what the installation `step` says (`made`: whether it did a
    thing, and how its step is known)."""
    return any(done and is_step(step) for done, is_step in made)


def is_fields_step(step: str) -> bool:
    """Whether an installation step is the one creating the custom fields the mapping writes
    ("Create the contactdata_* ... the mapping writes."), which connecting does where
    FIELDS_MADE says so."""
    return step.startswith("Create the ") and step.endswith("the mapping writes.")


def is_app_subscriptions_step(step: str) -> bool:
    """Whether an installation step is the one making the app's own webhook subscriptions
    ("Or the app's webhook subscriptions ..."), which connecting does where the operator's app
    holds its developer credentials (connector/install.py's `subscribe_app`)."""
    return step.startswith("Or the app's webhook subscriptions")


def sent_fields(db: Database, row: Row) -> dict[str, str]:
    """What a connection's sender of fields (an automation platform) sends, for its steps: the
    keys of its mapping, and a body with a contact of this database, which enriches as it is."""
    platform = PLATFORMS[row["platform"]]
    if platform.crm:
        return {}
    mapping = store.mapping_in_use(db, row, platform.mapping_file, "contacts")
    keys = list(mapping.sender_keys().values())
    if mapping.record_key:
        keys.append(f"and {mapping.record_key} (the record's id, answered back as recordId)")
    return {"keys": ", ".join(keys), "example": json.dumps(mapping.example(example_values(db)))}


def example_values(db: Database) -> dict[str, str]:
    """A contact of this database by enrich input name (the placeholder's when it has none)."""
    row = server.sample_employment(db)
    if row is None:
        return dict(mappings.PLACEHOLDER)
    return {"conEmail": row["email"], "conFirstName": row["first_name"],
            "conLastName": row["last_name"], "compName": row["company_name"]}  # fmt: skip


def _replaced(
    db: Database, secret: bytes, row: Row, client: httpx.Client, public_url: str, now: datetime
) -> list[str]:
    """Register the webhooks, delete those an earlier connect made that are not among them,
    and record them: their ids; raises one of FAILURES, recording nothing."""
    ids = _register(db, secret, row, client, public_url, now)
    stale = [webhook for webhook in store.webhook_ids(row) if webhook not in ids]
    tear_down_webhooks = PLATFORMS[row["platform"]].tear_down_webhooks
    with contextlib.suppress(*FAILURES):  # made by an earlier connect, maybe to another account
        _on_adapter(db, secret, row, client, now, lambda a: tear_down_webhooks(a, stale))
    with server.write(db):
        store.save_webhook_ids(db, row["id"], ids)
    return ids


def _register(
    db: Database, secret: bytes, row: Row, client: httpx.Client, public_url: str, now: datetime
) -> list[str]:
    """Make the webhooks: a platform keeping a channel enables it now (renewed hourly after),
    the others register theirs through the adapter."""
    platform = PLATFORMS[row["platform"]]
    if platform.subscribes:
        subscriptions.enable(db, row, secret, client, public_url, now)
        return [platform.channel_id(row)]
    events_url = connections.urls(row, public_url)["eventsUrl"] or ""
    inbound = store.unseal(secret, row["secret_sealed"])
    return list(
        _on_adapter(db, secret, row, client, now,
                    lambda adapter: platform.set_up_webhooks(adapter, events_url, inbound))
    )  # fmt: skip


def _on_adapter(
    db: Database,
    secret: bytes,
    row: Row,
    client: httpx.Client,
    now: datetime,
    call: Callable[[Adapter], Any],
) -> Any:
    """`call` on the connection's CRM adapter (its base URL checked again, its token renewed
    when it has an OAuth grant)."""
    base_url = outbound.check_crm_url(row["crm_base_url"])
    token = store.crm_token(secret, row)
    auth = store.crm_auth(db, secret, row, lambda: now)
    return call(PLATFORMS[row["platform"]].adapter(base_url, token, client, auth))


def _words(error: Exception, secret: bytes, row: Row) -> str:
    """The CRM's words for a failure, the connection's secret never among them."""
    reason = str(getattr(error, "reason", error)).rstrip(".")
    with contextlib.suppress(store.UnsealError):  # a secret it cannot open it cannot show
        inbound = store.unseal(secret, row["secret_sealed"])
        return reason.replace(inbound, "<secret>") if inbound else reason
    return reason


def _what(platform: Platform, ids: list[str]) -> str:
    if platform.subscribes:
        return f"notification channel {', '.join(ids)}"
    return f"webhook{'' if len(ids) == 1 else 's'} {', '.join(ids)}"
