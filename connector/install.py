"""Connecting a CRM connection with the operator's OAuth app (issue 22): the two halves of the
authorization-code flow an admin goes through from the settings page.

`begin` records a pending authorization and gives the platform's consent URL: a random
`state` (kept only as its SHA-256), bound to the admin's settings session and the connection,
and a PKCE verifier (kept sealed) where the platform takes one (`Platform.oauth_pkce`). `finish`
takes the callback: the state is deleted as it is read (single use: a replayed callback, or
the same code again, is refused before any token request), and must be this session's and
younger than STATE_LIFETIME; the code is exchanged at the token endpoint with our one
redirect URI, and the answer read into what `connections.set_crm` saves (`save`). Refusals
are `AuthorizationRefused`, whose messages never hold a token, code or secret.

`complete` then finishes the installation where the CRM's API allows (issue 37): the webhooks
registered (connector/webhook_setup.py), the connector's own custom fields created, and the
platform app's own webhook subscriptions set where the operator registered the app's developer
credentials (HubSpot's), so the connection's page lists only what is left to do by hand.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import httpx
from sqlite_utils import Database

import server
from connector import (
    connections,
    mapping_versions,
    mappings,
    oauth,
    oauth_apps,
    outbound,
    store,
    webhook_setup,
)
from connector.platforms import PLATFORMS
from connector.platforms.base import Permanent, Platform, Retriable
from connector.webhook_setup import Outcome
from server import InvalidParameter, ServiceError

Row = dict[str, Any]
STATE_LIFETIME = timedelta(minutes=10)
CALLBACK_PATH = "/settings/oauth/callback"
TENANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,253}")  # an Entra tenant id or domain name
CANCELLED = ("access_denied", "consent_required", "interaction_required")
SCOPE_SEPARATORS = re.compile(r"[\s,]+")  # between scopes: spaces (most), commas (Zoho)
# The connector's own custom fields, which connecting creates where missing: contactdata_*
# (after a Pipedrive lead's person/ or organization/ link).
OWN_FIELD = re.compile(r"(?:person/|organization/)?contactdata_\w+", re.IGNORECASE)


class AuthorizationRefused(ServiceError):
    """A callback that connects nothing; the message says why, and what to do."""

    status, code = 400, "authorization_refused"


@dataclass(frozen=True)
class Grant:
    """What a finished authorization connects: the connection, its CRM's API base, the
    access token and when it expires, the OAuth client that renews it, and the CRM account."""

    link: Row = field(repr=False)
    base_url: str
    access_token: str = field(repr=False)
    expires_at: datetime | None
    credentials: oauth.Credentials
    account_id: str


def redirect_uri(public_url: str) -> str:
    """The deployment's one redirect URI, registered with every platform's app."""
    return public_url.rstrip("/") + CALLBACK_PATH


def app_for(db: Database, platform: str) -> Row | None:
    """The operator's OAuth app for a platform, or None: connecting is then by token."""
    return store.oauth_app(db, platform)


def offer(db: Database, link: Row, now: datetime) -> Row:
    """What the connections page offers a CRM connection: Connect with the platform's OAuth
    app when one is registered (`app`), Reconnect once it is connected (`connected`),
    whether the platform asks for its environment first, and the state of its token."""
    kind = PLATFORMS[link["platform"]]
    state = connections.token_state(link, now) if link["crm_base_url"] else "not connected"
    app = app_for(db, kind.name) if kind.crm else None
    return {
        "app": app is not None,
        "consent_origin": _origin(app["authorize_url"]) if app else "",
        "environment": kind.oauth_environment,
        "token_state": state,
        "connected": bool(link["crm_base_url"]),
        "label": kind.title or kind.name,
    }


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def begin(
    db: Database,
    secret: bytes,
    now: datetime,
    *,
    link: Row,
    session_key: str,
    public_url: str,
    environment: str = "",
    tenant: str = "",
) -> str:
    """Record a pending authorization for connection `link` in this session; the URL of the
    platform's consent page to send the admin to."""
    kind = PLATFORMS[link["platform"]]
    app = app_for(db, kind.name)
    if app is None:
        raise InvalidParameter(f"No OAuth app is registered for {_title(kind)}: give a token.")
    environment, tenant = _environment(kind, environment, tenant)
    authorize, token_url = kind.consent_endpoints(app["authorize_url"], app["token_url"], tenant)
    state = secrets.token_urlsafe(32)
    verifier, challenge = oauth.pkce_pair() if kind.oauth_pkce else ("", "")
    row = {
        "state_hash": _hashed(state),
        "session_id": session_key,
        "connection_id": link["id"],
        "verifier_sealed": store.seal(secret, verifier) if verifier else "",
        "base_url": environment,
        "token_url": token_url,
        "created_at": server.iso(now),
    }
    with server.write(db):
        store.add_oauth_state(db, row, server.iso(now - STATE_LIFETIME))
    params = {
        "response_type": "code",
        "client_id": app["client_id"],
        "redirect_uri": redirect_uri(public_url),
        "scope": kind.consent_scope(asked_scope(kind, app["scope"]), environment),
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256" if challenge else "",
        **dict(kind.oauth_consent_params),
    }
    return oauth.consent_url(authorize, params)


def asked_scope(kind: Platform, saved: str) -> str:
    """The scope a consent asks through an app whose saved scope is `saved`: the platform's
    own when `saved` is part of it (an app saved with an earlier version's, which lacked a
    scope added since, such as HubSpot's crm.lists.read or Zoho's custom views), so that a
    connection made before is granted it by reconnecting; else `saved`, as the operator set it."""
    if _scopes(saved) <= _scopes(kind.oauth_scope):
        return kind.oauth_scope
    return saved


def _scopes(scope: str) -> set[str]:
    return set(SCOPE_SEPARATORS.split(scope.strip())) - {""}


def _environment(kind: Platform, environment: str, tenant: str) -> tuple[str, str]:
    """The environment URL (checked as a CRM URL is) and tenant a platform asks for before
    consent (Dynamics 365); nothing for the others."""
    if not kind.oauth_environment:
        return "", ""
    if not TENANT.fullmatch(tenant.strip()):
        raise InvalidParameter(
            "Give your Microsoft Entra tenant: its id (a GUID) or domain (contoso.onmicrosoft.com)."
        )
    try:
        url = outbound.check_crm_url(environment)
        kind.check_base_url(url, outbound.private_allowed())
    except ValueError as error:
        raise InvalidParameter(f"Environment URL: {error}") from None
    return url, tenant.strip()


def finish(
    db: Database,
    secret: bytes,
    client: httpx.Client,
    now: datetime,
    *,
    args: Mapping[str, str],
    session_key: str,
    org_id: str,
    public_url: str,
) -> Grant:
    """Take a callback's `args` (code and state, or error) in this session: what it grants,
    once; AuthorizationRefused otherwise."""
    pending = _pending(db, args.get("state", ""), session_key, now)
    link = store.connection(db, pending["connection_id"])
    if link is None or link["org_id"] != org_id:
        raise AuthorizationRefused("The connection was removed: nothing was connected.")
    kind = PLATFORMS[link["platform"]]
    if args.get("error"):
        raise AuthorizationRefused(_consent_refused(kind, args))
    app = app_for(db, kind.name)
    if app is None:
        raise AuthorizationRefused(f"The {_title(kind)} OAuth app was removed: nothing connected.")
    try:
        token_url = outbound.check_crm_url(kind.callback_token_url(pending["token_url"], args))
    except ValueError as error:
        raise AuthorizationRefused(f"The callback was refused: {error}.") from None
    credentials = oauth.Credentials(
        token_url, app["client_id"], store.unseal(secret, app["client_secret_sealed"]),
        basic=kind.oauth_basic,
    )  # fmt: skip
    verifier = (
        store.unseal(secret, pending["verifier_sealed"]) if pending["verifier_sealed"] else ""
    )
    answer = _exchange(client, credentials, args.get("code", ""), public_url, verifier, now)
    return Grant(
        link, _base_url(kind, answer, token_url, pending["base_url"]),
        answer.access_token, answer.expires_at,
        replace(credentials, refresh_token=answer.refresh_token),
        kind.installed_account(answer.fields),
    )  # fmt: skip


def _base_url(kind: Platform, answer: oauth.Consented, token_url: str, environment: str) -> str:
    """The CRM's API base URL the grant names (the token answer's, for most), checked as a
    pasted one is: a malformed or unsafe one is refused, saying so."""
    try:
        url = kind.installed_base_url(answer.fields, token_url, environment)
    except ValueError as error:
        raise AuthorizationRefused(f"{_title(kind)} did not connect: {error}.") from None
    try:
        return outbound.check_crm_url(url)
    except outbound.UnsafeUrl as error:
        message = f"{_title(kind)} did not connect: the API URL of its token answer, {error}."
        raise AuthorizationRefused(message) from None


def _pending(db: Database, state: str, session_key: str, now: datetime) -> Row:
    """The pending authorization `state` names, taken (deleted) whatever follows: refused
    unless it is this session's and younger than STATE_LIFETIME."""
    with server.write(db):
        pending = store.take_oauth_state(db, _hashed(state)) if state else None
    if pending is None:
        raise AuthorizationRefused(
            "That authorization is unknown or was already used: press Connect again."
        )
    if pending["created_at"] <= server.iso(now - STATE_LIFETIME):
        raise AuthorizationRefused("That authorization took over 10 minutes: press Connect again.")
    if pending["session_id"] != session_key:
        raise AuthorizationRefused(
            "That authorization was started in another session: press Connect again."
        )
    return pending


def _consent_refused(kind: Platform, args: Mapping[str, str]) -> str:
    """What to tell an admin whose consent did not come back (refused, cancelled, or failed)."""
    error = args.get("error", "")[:100]
    said = " ".join(args.get("error_description", "").split())[:200]
    if error in CANCELLED:
        start = f"Consent on {_title(kind)} was refused or cancelled: nothing was connected."
    else:
        start = f"{_title(kind)} did not authorize the connection ({error}): nothing was connected."
    return f"{start} {said}".strip() if said else start


def _exchange(
    client: httpx.Client,
    credentials: oauth.Credentials,
    code: str,
    public_url: str,
    verifier: str,
    now: datetime,
) -> oauth.Consented:
    """The token endpoint's answer to the callback's code."""
    if not code:
        raise AuthorizationRefused("The callback brought no authorization code: connect again.")
    request = oauth.code_request(credentials, code, redirect_uri(public_url), verifier)
    try:
        return oauth.answered(client.send(request, follow_redirects=False), now)
    except httpx.HTTPError as error:
        reason = f"the token endpoint could not be reached ({type(error).__name__})"
    except (Permanent, Retriable) as error:
        reason = str(error)
    raise AuthorizationRefused(f"Nothing was connected: {reason}. Press Connect again.")


def save(db: Database, secret: bytes, grant: Grant) -> Row:
    """Connect the grant's connection (`connections.set_crm`): the connection as saved.
    Refused when the CRM account is another connection's (HubSpot's portal): the grant is
    dropped unused, and the other connection keeps the account."""
    try:
        return connections.set_crm(
            db, secret, grant.link["id"], base_url=grant.base_url, token=grant.access_token,
            credentials=grant.credentials, expires_at=grant.expires_at,
            account_id=grant.account_id,
        )  # fmt: skip
    except connections.InvalidConnection as error:
        raise AuthorizationRefused(f"Nothing was connected: {error}") from None


def _hashed(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


def _title(kind: Platform) -> str:
    return kind.title or kind.name


# --- finishing the installation --------------------------------------------------------------


def complete(
    db: Database, secret: bytes, link: Row, client: httpx.Client, public_url: str,
    now: datetime, by: str,
) -> list[Outcome]:  # fmt: skip
    """Finish a just-connected connection's installation where its platform's API allows:
    its webhooks registered (`webhook_setup.set_up`) and the custom fields its mappings write
    created (`create_fields`). An outcome for each, for the admin; a refusal, in the CRM's
    words with what is left to do, never loses the connection."""
    webhooks = webhook_setup.set_up(db, secret, link, client, public_url, now)
    fields = create_fields(db, secret, link, client, now, by)
    return [webhooks, fields, subscribe_app(db, secret, link, client, public_url)]


def subscribe_app(
    db: Database, secret: bytes, link: Row, client: httpx.Client, public_url: str
) -> Outcome:
    """Set the platform app's own webhook target and subscriptions (HubSpot's, for what the
    connection's mappings read), where the operator's app holds its developer credentials
    and the connection was connected through it (its account known, which the app's events
    are routed by); nothing otherwise. A refusal says what to do in the app's settings."""
    kind = PLATFORMS[link["platform"]]
    through_app = bool(link["crm_base_url"] and link["crm_account_id"]) and kind.app_webhooks
    if not (through_app and oauth_apps.subscribes(db, kind.name)):
        return Outcome(True)
    read = {objects: mapping_versions.current(db, link, objects) for objects in kind.objects}
    try:
        app_id, key = oauth_apps.developer(db, secret, kind.name) or ("", "")
        made = kind.subscribe_app(client, link["crm_base_url"], app_id, key, public_url, read)
    except webhook_setup.FAILURES as error:
        return Outcome(False, f"Could not set the {_title(kind)} app's webhook subscriptions: "
                              f"{_reason(error)}. In the app's settings (Webhooks), set the "
                              f"target URL {public_url.rstrip('/')}/hooks/{kind.name}/events "
                              "and subscribe to contact and company creation and property "
                              "changes.")  # fmt: skip
    if not made:
        return Outcome(True, f"The {_title(kind)} app's webhook subscriptions were in place.")
    return Outcome(True, f"Subscribed the {_title(kind)} app to: {', '.join(made)}.")


def create_fields(
    db: Database, secret: bytes, link: Row, client: httpx.Client, now: datetime, by: str
) -> Outcome:
    """Create in the CRM the connector's own custom fields (`OWN_FIELD`) that the
    connection's mappings (one a kind of record) write and it lacks, where the connector
    creates fields (`webhook_setup.FIELDS_MADE`); a mapping is saved again (as `by`) writing
    to the name the CRM gave one (Pipedrive's key). Any other property the CRM lacks is the
    mapping editor's to report: it may be a CRM's own field, never made up here."""
    kind = PLATFORMS[link["platform"]]
    if kind.name not in webhook_setup.FIELDS_MADE or not link["crm_base_url"]:
        return Outcome(True)
    made: list[str] = []
    try:
        for objects in kind.objects:
            made += _fields_made(db, secret, link, objects, client, now, by)
    except (*webhook_setup.FAILURES, mappings.MappingError, ValueError) as error:
        so_far = f" (created before it: {', '.join(made)})" if made else ""
        return Outcome(False, f"Could not create the custom fields the mapping writes in "
                              f"{_title(kind)}{so_far}: {_reason(error)}. Create them from the "
                              "mapping editor (Create missing fields) or in "
                              f"{_title(kind)}.")  # fmt: skip
    return Outcome(True, f"Created in {_title(kind)}: {', '.join(made)}." if made else "")


def _fields_made(
    db: Database, secret: bytes, link: Row, kind: str, client: httpx.Client, now: datetime,
    by: str,
) -> list[str]:  # fmt: skip
    """Create the connector's own fields the `kind` mapping writes and the CRM lacks: each as
    "label (name)"."""
    clock = lambda: now  # noqa: E731
    mapping = mapping_versions.current(db, link, kind)
    fields = mapping_versions.crm_fields(db, secret, link, kind, client, clock)
    missing = mapping_versions.missing_fields(mapping, fields)
    wanted = [field for field in missing if OWN_FIELD.fullmatch(field[0])]
    made = mapping_versions.create_fields(db, secret, link, kind, client, clock, wanted)
    renamed = {name: field.name for (name, _, _), field in zip(wanted, made, strict=True)
               if field.name != name}  # fmt: skip
    with server.write(db):
        mapping_versions.rename_properties(db, link, kind, renamed, now, by)
    return [f"{field.label} ({field.name})" for field in made]


def _reason(error: Exception) -> str:
    """A failure in the CRM's words (Permanent and Retriable keep them as their reason)."""
    if isinstance(error, mappings.MappingError):
        return "; ".join(error.problems)
    return str(getattr(error, "reason", error)).rstrip(".")
