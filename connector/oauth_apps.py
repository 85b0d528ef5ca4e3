"""The operator's OAuth apps: one registered app a CRM platform, through which admins install
the connector themselves (issue 22). Setting one (its endpoints and scope default to the
platform's own; overriding them points tests and sandboxes elsewhere), listing and removing
them; the client secret is sealed at rest and shown only by its last characters. A platform
whose app has webhook subscriptions of its own (HubSpot's) may also hold the app's id and its
developer account's API key (sealed alike), with which connecting sets them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlite_utils import Database

import server
from connector import outbound, store
from connector.platforms import PLATFORMS
from connector.platforms.base import Platform

Row = dict[str, Any]


class InvalidOAuthApp(ValueError):
    """An OAuth app that cannot be set as asked; the message says why."""


def crm_platform(name: str) -> Platform:
    """The CRM platform named, which has an OAuth app; InvalidOAuthApp otherwise."""
    kind = PLATFORMS.get(name)
    crms = ", ".join(n for n, k in PLATFORMS.items() if k.crm and k.oauth_authorize_url)
    if kind is None:
        raise InvalidOAuthApp(f"no platform {name!r}: give one of {crms}")
    if not (kind.crm and kind.oauth_authorize_url):
        raise InvalidOAuthApp(f"{name} is not a CRM installed by OAuth: give one of {crms}")
    return kind


def save(
    db: Database,
    server_secret: bytes,
    now: datetime,
    *,
    platform: str,
    client_id: str,
    client_secret: str,
    scope: str | None = None,
    authorize_url: str = "",
    token_url: str = "",
    app_id: str = "",
    developer_key: str = "",
) -> Row:
    """Check and save a platform's OAuth app (replacing its last); the row as `shown`."""
    kind = crm_platform(platform)
    client_id, client_secret = client_id.strip(), client_secret.strip()
    if not client_id:
        raise InvalidOAuthApp("give the app's --client-id")
    if not client_secret:
        raise InvalidOAuthApp("give the app's --client-secret")
    app_id, developer_key = _developer(kind, app_id.strip(), developer_key.strip())
    row = {
        "platform": kind.name,
        "client_id": client_id,
        "client_secret_sealed": store.seal(server_secret, client_secret),
        "client_secret_hint": store.hint(client_secret),
        "scope": _scope(kind, scope),
        "authorize_url": _url(authorize_url, kind.oauth_authorize_url, "authorize-url"),
        "token_url": _url(token_url, kind.oauth_token_url, "token-url"),
        "app_id": app_id,
        "developer_key_sealed": store.seal(server_secret, developer_key) if developer_key else "",
        "developer_key_hint": store.hint(developer_key) if developer_key else "",
        "updated_at": server.iso(now),
    }
    with server.write(db):
        store.save_oauth_app(db, row)
    return shown(row)


def _developer(kind: Platform, app_id: str, key: str) -> tuple[str, str]:
    """The app's id and developer key, both or neither, for a platform whose app has its own
    webhook subscriptions."""
    if not (app_id or key):
        return "", ""
    if not kind.app_webhooks:
        raise InvalidOAuthApp(f"{kind.name} takes no --app-id or --developer-key")
    if not (app_id.isdigit() and key):
        raise InvalidOAuthApp("give both the app's --app-id (a number) and --developer-key")
    return app_id, key


def developer(db: Database, server_secret: bytes, platform: str) -> tuple[str, str] | None:
    """The app id and developer API key of the platform's registered app, or None when it
    has no such credentials (its subscriptions are then the operator's to make)."""
    row = store.oauth_app(db, platform)
    if row is None or not (row["app_id"] and row["developer_key_sealed"]):
        return None
    return row["app_id"], store.unseal(server_secret, row["developer_key_sealed"])


def subscribes(db: Database, platform: str) -> bool:
    """Whether connecting sets the platform's app subscriptions: its registered app holds
    the app's id and developer key."""
    row = store.oauth_app(db, platform)
    return bool(row and row["app_id"] and row["developer_key_sealed"])


def _scope(kind: Platform, scope: str | None) -> str:
    if scope is None:
        return kind.oauth_scope
    if scope.strip() and not kind.oauth_scope:
        raise InvalidOAuthApp(
            f"{kind.name} takes no scope: its scopes are ticked on the app in its developer hub"
        )
    return scope.strip()


def _url(given: str, default: str, option: str) -> str:
    """The URL given, checked as a connection's CRM URL is (https, public); else the default."""
    if not given.strip():
        return default
    try:
        return outbound.check_crm_url(given)
    except outbound.UnsafeUrl as error:
        raise InvalidOAuthApp(f"{option}: {error}") from None


# The secrets; what its URLs learned.
HIDDEN = ("client_secret_sealed", "developer_key_sealed", "hubspot_v3_kinds")


def shown(row: Row) -> Row:
    """An app as listed: its client secret only by its last characters."""
    return {name: value for name, value in row.items() if name not in HIDDEN}


def client_secret(db: Database, server_secret: bytes, platform: str) -> str:
    """The client secret of the platform's registered app ("" when none is registered): what
    a platform that signs with its app's secret (HubSpot) signs a connection's requests with."""
    row = store.oauth_app(db, platform)
    return store.unseal(server_secret, row["client_secret_sealed"]) if row else ""


def listed(db: Database) -> list[Row]:
    return [shown(row) for row in store.oauth_apps(db)]


def remove(db: Database, platform: str) -> bool:
    """Delete a platform's OAuth app; whether it had one."""
    with server.write(db):
        return store.delete_oauth_app(db, platform)
