"""Connections: one platform account bound to one organization key, one mapping file, an
inbound secret and, for CRMs, the CRM's API base URL and token (or the OAuth client that
renews it). Adding, listing, showing and removing them; secret values are sealed at rest and
shown in full only when first made."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlite_utils import Database

import server
from connector import mappings, oauth, outbound, store
from connector.platforms import PLATFORMS
from connector.platforms.base import Platform

MAPPINGS = mappings.DIRECTORY
REFRESH_DAYS = (1, 3650)
MAX_GRACE_SECONDS = 604_800  # as long as a rotated key's (server/admin.py)
KEY_DOMAIN = "connections.invalid"  # the e-mail of a connection's own key: connection-<id>@…
Row = dict[str, Any]


class InvalidConnection(ValueError):
    """A connection that cannot be added as asked; the message says why."""


@dataclass(frozen=True)
class Added:
    """A new connection, with its inbound secret in full (shown this once)."""

    row: Row
    secret: str


def add(
    db: Database,
    server_secret: bytes,
    now: datetime,
    *,
    name: str,
    platform: str,
    api_key: str = "",
    own_key: Callable[[str], str] | None = None,
    connected: bool = True,
    refresh_days: int | None = None,
    mapping: Path | None = None,
    crm_base_url: str = "",
    crm_token: str = "",
    crm_client_id: str = "",
    crm_client_secret: str = "",
    crm_refresh_token: str = "",
    crm_token_url: str = "",
    crm_scope: str = "",
    secret: str = "",
    salesforce_org_ids: tuple[str, ...] = (),
) -> Added:
    """Check and save a connection; raises InvalidConnection (or the key's ServiceError).

    It enriches with `api_key`, or else a key of its own: `own_key(email)` makes it, once
    all else is checked, and answers its value (the key is suspended when the connection
    is removed). A CRM added with `connected=False` may come without base URL and token: it
    is not connected, and its events wait until `set_crm` connects it. Otherwise a CRM needs
    `crm_base_url` and a token: `crm_token` (used until it is refused), or an OAuth client
    (`crm_client_id`, `crm_client_secret`, and `crm_refresh_token` or, for client_credentials,
    `crm_scope`) that renews it at `crm_token_url` (see connector/oauth.py).
    """
    kind = PLATFORMS.get(platform)
    if kind is None:
        raise InvalidConnection(f"platform must be one of {', '.join(PLATFORMS)}, not {platform!r}")
    if not name.strip():
        raise InvalidConnection("name: give the connection a name")
    if store.connection_named(db, name.strip()):
        raise InvalidConnection(f"a connection named {name.strip()!r} already exists")
    _check_refresh_days(refresh_days)
    if not (api_key or own_key):
        raise InvalidConnection("give the connection's --api-key")
    mapping_path = _mapping(mapping, kind)
    inbound = secret or _new_secret(kind)
    _asked_of(kind)(lambda: kind.check_secret(inbound))
    allowed = _asked_of(kind)(lambda: kind.allowed_senders(salesforce_org_ids))
    client = (crm_client_id, crm_client_secret, crm_refresh_token, crm_token_url, crm_scope)
    credentials = _oauth(kind, crm_base_url, *client) if any(client) and kind.crm else None
    later = not connected and not (crm_base_url or crm_token or any(client))
    base_url, token = ("", "") if later else _crm(kind, crm_base_url, crm_token, any(client))
    if credentials:  # like the base URL, last: checking resolves the host's name
        credentials = replace(credentials, token_url=_checked(credentials.token_url, "token-url"))
    connection_id = str(uuid.uuid4())
    key_email = "" if api_key else f"connection-{connection_id}@{KEY_DOMAIN}"
    if own_key and not api_key:
        api_key = own_key(key_email)
    caller = server.authenticate(db, server_secret, api_key, now)
    row = {
        "id": connection_id,
        "name": name.strip(),
        "platform": platform,
        "org_id": caller.org_id,
        "api_key_sealed": store.seal(server_secret, api_key),
        "api_key_hint": store.hint(api_key),
        "mapping": str(mapping_path),
        "secret_sealed": store.seal(server_secret, inbound),
        "secret_hint": store.hint(inbound),
        "crm_base_url": base_url,
        "crm_token_sealed": store.seal(server_secret, token) if token else "",
        "crm_token_hint": store.hint(token) if token else "",
        "crm_oauth_sealed": store.seal(server_secret, credentials.dumps()) if credentials else "",
        "allowed_organizations": ",".join(allowed),
        "created_at": server.iso(now),
        "own_key_email": key_email,
        **({} if refresh_days is None else {"refresh_days": refresh_days}),
    }
    with server.write(db):
        store.insert_connection(db, row)
    return Added(row, inbound)


def set_crm(
    db: Database,
    server_secret: bytes,
    connection_id: str,
    *,
    base_url: str,
    token: str = "",
    credentials: oauth.Credentials | None = None,
    expires_at: datetime | None = None,
    account_id: str = "",
) -> Row:
    """Connect (or connect again) a CRM connection: its CRM's API base URL, checked, with a
    token (used until it is refused, or until `expires_at`) and, for a token that is renewed,
    the OAuth client that renews it; `account_id` is the CRM account the grant is for, where
    the platform names one (HubSpot's portal id). An account belongs to one connection at a
    time: connecting another to it is refused, and the one connected keeps it. The connection
    as saved; raises InvalidConnection."""
    row = store.connection(db, connection_id)
    if row is None:
        raise InvalidConnection(f"no connection {connection_id}")
    kind = PLATFORMS[row["platform"]]
    if not kind.crm:
        raise InvalidConnection(f"{kind.name} is not a CRM: it is not written back to")
    if not (token or credentials):
        raise InvalidConnection("give the CRM's token, or connect with OAuth")
    base_url, _ = _crm(kind, base_url, token, credentials is not None)
    values = {
        "crm_base_url": base_url,
        "crm_token_sealed": store.seal(server_secret, token) if token else "",
        "crm_token_hint": store.hint(token) if token else "",
        "crm_token_expires_at": expires_at.isoformat() if expires_at else "",
        "crm_oauth_sealed": store.seal(server_secret, credentials.dumps()) if credentials else "",
        "crm_account_id": account_id,
        "crm_auth_error": "",  # connected again: the grant works
    }
    with server.write(db):
        _check_account_free(db, kind, connection_id, account_id)
        store.save_crm_grant(db, connection_id, values)
    return store.connection(db, connection_id) or row


def _check_account_free(db: Database, kind: Platform, connection_id: str, account_id: str) -> None:
    """Refuse a CRM account another connection holds (it could be another organization's:
    its requests would reach one of the two, and be charged to it). Its own account again is
    fine. Nothing about the other connection is told."""
    holder = store.connection_of_account(db, kind.name, account_id)
    if holder is not None and holder["id"] != connection_id:
        title = kind.title or kind.name
        raise InvalidConnection(
            f"this {title} account ({account_id}) is already connected to another connection, "
            f"perhaps another organization's: a {title} account is connected to one connection "
            f"at a time. Connect another {title} account, or remove that connection first."
        )


def edit(db: Database, connection_id: str, name: str, refresh_days: int) -> bool:
    """Rename a connection and set its refresh interval; whether there was one. Raises
    InvalidConnection for an empty name, one another connection has, or days out of range."""
    name = name.strip()
    if not name:
        raise InvalidConnection("name: give the connection a name")
    _check_refresh_days(refresh_days)
    with server.write(db):
        other = store.connection_named(db, name)
        if other is not None and other["id"] != connection_id:
            raise InvalidConnection(f"a connection named {name!r} already exists")
        return store.edit_connection(db, connection_id, name, refresh_days)


def pause(db: Database, connection_id: str, now: datetime) -> bool:
    """Pause a connection: its requests are still verified, its events stored and
    acknowledged, but the worker holds them (and its enrich URL refuses) until it is
    resumed. Whether it was running."""
    with server.write(db):
        return store.set_paused(db, connection_id, server.iso(now))


def resume(db: Database, connection_id: str) -> bool:
    """Resume a paused connection: the worker works off what it held. Whether it was paused."""
    with server.write(db):
        return store.set_paused(db, connection_id, "")


def is_paused(row: Row) -> bool:
    return bool(row.get("paused_at"))


def crm_connections(db: Database) -> dict[str, list[Row]]:
    """The CRM connections (those with records to write back to) by organization."""
    found: dict[str, list[Row]] = {}
    for link in store.connections(db):
        if PLATFORMS[link["platform"]].crm:
            found.setdefault(link["org_id"], []).append(link)
    return found


def state(row: Row) -> str:
    """How a connection stands: paused, not connected (a CRM without its CRM yet) or active."""
    if is_paused(row):
        return "paused"
    if PLATFORMS[row["platform"]].crm and not row["crm_base_url"]:
        return "not connected"
    return "active"


def rotate_secret(
    db: Database,
    server_secret: bytes,
    connection_id: str,
    now: datetime,
    grace_seconds: int,
    secret: str = "",
) -> str:
    """Give a connection a new inbound secret (for a platform that issues its own, `secret`,
    the one it issued); the previous one still verifies for `grace_seconds`. The new value,
    shown this once; raises InvalidConnection."""
    row = store.connection(db, connection_id)
    if row is None:
        raise InvalidConnection(f"no connection {connection_id}")
    kind = PLATFORMS[row["platform"]]
    if not 0 <= grace_seconds <= MAX_GRACE_SECONDS:
        raise InvalidConnection(f"the grace period must be 0 to {MAX_GRACE_SECONDS} seconds")
    secret = secret.strip()
    if kind.issues_secret and not secret:
        raise InvalidConnection(f"{kind.name} issues the secret it signs with: paste the new one")
    new = secret or kind.new_secret()
    _asked_of(kind)(lambda: kind.check_secret(new))
    expires = server.iso(now + timedelta(seconds=grace_seconds)) if grace_seconds else ""
    with server.write(db):
        store.lock_connection(db, connection_id)  # the secret replaced is the one kept
        current = store.connection(db, connection_id) or row
        values = {
            "secret_sealed": store.seal(server_secret, new),
            "secret_hint": store.hint(new),
            "previous_secret_sealed": current["secret_sealed"] if grace_seconds else "",
            "previous_secret_expires_at": expires,
        }
        store.rotate_secret(db, connection_id, values)
    return new


def previous_secret(server_secret: bytes, row: Row, now: datetime) -> str | None:
    """The inbound secret a rotation replaced, while its grace period lasts; else None."""
    expires = row.get("previous_secret_expires_at") or ""
    if not (row.get("previous_secret_sealed") and expires > server.iso(now)):
        return None
    return store.unseal(server_secret, row["previous_secret_sealed"])


def _check_refresh_days(days: int | None) -> None:
    low, high = REFRESH_DAYS
    if days is not None and not low <= days <= high:
        raise InvalidConnection(f"The refresh interval must be {low} to {high} days.")


def _asked_of(kind: Platform) -> Callable[[Callable[[], Any]], Any]:
    """Call a platform's check, its ValueError an InvalidConnection."""

    def asked(check: Callable[[], Any]) -> Any:
        try:
            return check()
        except ValueError as error:
            raise InvalidConnection(str(error)) from None

    return asked


def _mapping(mapping: Path | None, kind: Platform) -> Path:
    platform = kind.name
    path = (mapping or MAPPINGS / kind.mapping_file).resolve()
    if not path.is_file():
        raise InvalidConnection(f"mapping: no file {path}")
    try:
        loaded = mappings.load(path)
    except mappings.MappingError as error:
        raise InvalidConnection(f"mapping: {error}") from None
    if loaded.platform != kind.name:
        raise InvalidConnection(f"mapping: {path} is for {loaded.platform}, not {platform}")
    return path


def _crm(kind: Platform, base_url: str, token: str, renewed: bool) -> tuple[str, str]:
    """The CRM's checked base URL and the token given; this resolves names, so it goes last."""
    platform = kind.name
    if not kind.crm:
        if base_url or token or renewed:
            raise InvalidConnection(f"{platform} is not a CRM: give no --crm-base-url or token")
        return "", ""
    if not (base_url and (token or renewed)):
        raise InvalidConnection(
            f"{platform} is written back to: give --crm-base-url, and --crm-token or an OAuth "
            "client (--crm-client-id and --crm-client-secret)"
        )
    local = outbound.private_allowed()  # a local fake CRM, for tests
    _asked_of(kind)(lambda: kind.check_base_url(base_url, local))
    return _checked(base_url, "base-url"), token


def _checked(url: str, option: str) -> str:
    try:
        return outbound.check_crm_url(url)
    except outbound.UnsafeUrl as error:
        raise InvalidConnection(f"crm-{option}: {error}") from None


def _oauth(
    kind: Platform,
    base_url: str,
    client_id: str,
    client_secret: str,
    refresh_token: str,
    token_url: str,
    scope: str,
) -> oauth.Credentials:
    """The OAuth client that renews the connection's token, checked."""
    if not kind.refreshable:
        raise InvalidConnection(f"{kind.name} tokens do not expire: give --crm-token only")
    if not (client_id.strip() and client_secret.strip()):
        raise InvalidConnection(
            "an OAuth client needs both --crm-client-id and --crm-client-secret"
        )
    token_url = token_url.strip() or kind.token_url(base_url)
    if not token_url:
        raise InvalidConnection(
            "crm-token-url: give your Entra ID tenant's token endpoint, "
            "https://login.microsoftonline.com/<tenant id>/oauth2/v2.0/token"
        )
    scope = scope.strip() or kind.scope(base_url, refresh_token)
    if not (refresh_token.strip() or scope):
        raise InvalidConnection(
            "give --crm-refresh-token (the refresh_token grant) or --crm-scope (client credentials)"
        )
    return oauth.Credentials(
        token_url, client_id.strip(), client_secret.strip(), refresh_token.strip(), scope
    )


def _new_secret(kind: Platform) -> str:
    if kind.issues_secret:
        raise InvalidConnection(f"{kind.name} issues the secret it signs with: give --secret")
    return kind.new_secret()


def urls(row: Row, public_url: str, secret: str | None = None) -> dict[str, str | None]:
    """The connection's webhook URLs: events only for CRMs, Salesforce's with the secret in it
    (`secret` when known)."""
    base = f"{public_url.rstrip('/')}/hooks/{row['id']}"
    kind = PLATFORMS[row["platform"]]
    events = kind.events_url(base, secret) if kind.crm else None
    return {"enrichUrl": f"{base}/enrich", "eventsUrl": events}


def token_state(row: Row, now: datetime) -> str:
    """A CRM connection's token at a glance: "needs reconnect" when its token endpoint refused
    to renew the grant for good (`crm_auth_error`, cleared by `set_crm`), "renewing" when its
    renewable token has expired or not been asked for yet (the next call renews it), else
    "valid" (a fixed token is valid until the CRM refuses it)."""
    if row.get("crm_auth_error"):
        return "needs reconnect"
    if not row.get("crm_oauth_sealed"):
        return "valid"
    expires = row.get("crm_token_expires_at") or ""
    if not row.get("crm_token_sealed") or (expires and datetime.fromisoformat(expires) <= now):
        return "renewing"
    return "valid"


def shown(row: Row) -> Row:
    """A connection as listed: secrets only by their last characters."""
    hidden = ("api_key_sealed", "secret_sealed", "crm_token_sealed", "crm_oauth_sealed")
    return {name: value for name, value in row.items() if name not in hidden}


def remove(
    db: Database,
    connection_id: str,
    revoke: Callable[[Database, Row], None] | None = None,
) -> bool:
    """Delete a connection (its URLs answer 404 at once); whether there was one. A key made
    for it (`own_key_email`) is suspended in the same transaction by `revoke(db, row)`."""
    with server.write(db):
        row = store.connection(db, connection_id)
        if row is None or not store.delete_connection(db, connection_id):
            return False
        if row.get("own_key_email") and revoke is not None:
            revoke(db, row)
        return True


def revoker(
    server_secret: bytes, now: datetime, ctx: Any = None
) -> Callable[[Database, Row], None]:
    """What suspends a removed connection's own key, audited as `ctx`'s admin (an
    admin.Context), or, without one (the CLI), as the key itself."""

    def revoke(db: Database, row: Row) -> None:
        value = store.unseal(server_secret, row["api_key_sealed"])
        try:
            acting = ctx or server.admin.Context(
                caller=server.authenticate(db, server_secret, value, now),
                now=now,
                secret=server_secret,
            )
        except server.ServiceError:  # suspended already
            return
        server.admin.update_key(db, acting, row["own_key_email"], "suspend")

    return revoke
