"""Connections: one platform account bound to one organization key, one mapping file, an
inbound secret and, for CRMs, the CRM's API base URL and token (or the OAuth client that
renews it). Adding, listing, showing and removing them; secret values are sealed at rest and
shown in full only when first made."""

from __future__ import annotations

import base64
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlite_utils import Database

import server
from connector import mappings, oauth, outbound, sealing, signatures, store
from connector.adapters.zoho import ZOHO_API_DOMAINS

MAPPINGS = Path(__file__).resolve().parent.parent / "mappings"
ZOHO_TOKEN_LIMIT = 50  # characters of a notification channel's token
Row = dict[str, Any]


@dataclass(frozen=True)
class Platform:
    """How a platform proves what it sends is its own, and whether it is a CRM we write
    back to."""

    # "hubspot" (its signatures), "standard-webhooks" (or the secret as a bearer token),
    # "url-secret" (the secret in the URL's `url_param`), "basic" (the secret as the HTTP
    # Basic password), "body-token" (the secret as the body's `token`: Zoho) or "bearer"
    signing: str
    crm: bool
    issues_secret: bool = False  # the platform makes the secret (HubSpot's app secret)
    url_param: str = "key"
    omit_empty: bool = False  # answers leave out empty fields (they would blank the CRM's)


PLATFORMS: dict[str, Platform] = {
    "hubspot": Platform("hubspot", crm=True, issues_secret=True),
    "salesforce": Platform("url-secret", crm=True),
    "pipedrive": Platform("basic", crm=True),
    "zoho": Platform("body-token", crm=True),
    "dynamics": Platform("url-secret", crm=True, url_param="code"),  # Dataverse's WebhookKey
    "marketo": Platform("bearer", crm=False, omit_empty=True),  # Response Mappings write all
    "zapier": Platform("standard-webhooks", crm=False),
    "make": Platform("standard-webhooks", crm=False),
    "n8n": Platform("standard-webhooks", crm=False),
}


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
    api_key: str,
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

    A CRM needs `crm_base_url` and a token: `crm_token` (used until it is refused), or an
    OAuth client (`crm_client_id`, `crm_client_secret`, and `crm_refresh_token` or, for
    client_credentials, `crm_scope`) that renews it at `crm_token_url` (see connector/oauth.py).
    """
    kind = PLATFORMS.get(platform)
    if kind is None:
        raise InvalidConnection(f"platform must be one of {', '.join(PLATFORMS)}, not {platform!r}")
    if not name.strip():
        raise InvalidConnection("name: give the connection a name")
    if store.connection_named(db, name.strip()):
        raise InvalidConnection(f"a connection named {name.strip()!r} already exists")
    caller = server.authenticate(db, server_secret, api_key, now)
    mapping_path = _mapping(mapping, platform)
    inbound = secret or _new_secret(kind, platform)
    _check_secret(kind, inbound)
    allowed = _allowed_organizations(platform, salesforce_org_ids)
    client = (crm_client_id, crm_client_secret, crm_refresh_token, crm_token_url, crm_scope)
    credentials = _oauth(platform, crm_base_url, *client) if any(client) and kind.crm else None
    base_url, token = _crm(kind, platform, crm_base_url, crm_token, any(client))
    if credentials:  # like the base URL, last: checking resolves the host's name
        credentials = replace(credentials, token_url=_checked(credentials.token_url, "token-url"))
    row = {
        "id": str(uuid.uuid4()),
        "name": name.strip(),
        "platform": platform,
        "org_id": caller.org_id,
        "api_key_sealed": sealing.seal(server_secret, api_key),
        "api_key_hint": sealing.hint(api_key),
        "mapping": str(mapping_path),
        "secret_sealed": sealing.seal(server_secret, inbound),
        "secret_hint": sealing.hint(inbound),
        "crm_base_url": base_url,
        "crm_token_sealed": sealing.seal(server_secret, token) if token else "",
        "crm_token_hint": sealing.hint(token) if token else "",
        "crm_oauth_sealed": sealing.seal(server_secret, credentials.dumps()) if credentials else "",
        "allowed_organizations": ",".join(allowed),
        "created_at": server.iso(now),
    }
    with server.write(db):
        store.insert_connection(db, row)
    return Added(row, inbound)


def _mapping(mapping: Path | None, platform: str) -> Path:
    path = (mapping or MAPPINGS / f"{platform}.yaml").resolve()
    if not path.is_file():
        raise InvalidConnection(f"mapping: no file {path}")
    try:
        loaded = mappings.load(path)
    except mappings.MappingError as error:
        raise InvalidConnection(f"mapping: {error}") from None
    if loaded.platform != platform:
        raise InvalidConnection(f"mapping: {path} is for {loaded.platform}, not {platform}")
    return path


def _crm(
    kind: Platform, platform: str, base_url: str, token: str, renewed: bool
) -> tuple[str, str]:
    """The CRM's checked base URL and the token given; this resolves names, so it goes last."""
    if not kind.crm:
        if base_url or token or renewed:
            raise InvalidConnection(f"{platform} is not a CRM: give no --crm-base-url or token")
        return "", ""
    if not (base_url and (token or renewed)):
        raise InvalidConnection(
            f"{platform} is written back to: give --crm-base-url, and --crm-token or an OAuth "
            "client (--crm-client-id and --crm-client-secret)"
        )
    local = outbound.private_allowed()  # a local fake Zoho, for tests
    if platform == "zoho" and not local and base_url.rstrip("/") not in ZOHO_API_DOMAINS.values():
        raise InvalidConnection(
            "crm-base-url: give your Zoho data centre's API domain (the api_domain of the "
            f"OAuth token answer): one of {', '.join(ZOHO_API_DOMAINS.values())}"
        )
    return _checked(base_url, "base-url"), token


def _checked(url: str, option: str) -> str:
    try:
        return outbound.check_crm_url(url)
    except outbound.UnsafeUrl as error:
        raise InvalidConnection(f"crm-{option}: {error}") from None


def _oauth(
    platform: str,
    base_url: str,
    client_id: str,
    client_secret: str,
    refresh_token: str,
    token_url: str,
    scope: str,
) -> oauth.Credentials:
    """The OAuth client that renews the connection's token, checked."""
    if platform not in oauth.REFRESHABLE:
        raise InvalidConnection(f"{platform} tokens do not expire: give --crm-token only")
    if not (client_id.strip() and client_secret.strip()):
        raise InvalidConnection(
            "an OAuth client needs both --crm-client-id and --crm-client-secret"
        )
    token_url = token_url.strip() or oauth.default_token_url(platform, base_url)
    if not token_url:
        raise InvalidConnection(
            "crm-token-url: give your Entra ID tenant's token endpoint, "
            "https://login.microsoftonline.com/<tenant id>/oauth2/v2.0/token"
        )
    scope = scope.strip() or oauth.default_scope(platform, base_url, refresh_token)
    if not (refresh_token.strip() or scope):
        raise InvalidConnection(
            "give --crm-refresh-token (the refresh_token grant) or --crm-scope (client credentials)"
        )
    return oauth.Credentials(
        token_url, client_id.strip(), client_secret.strip(), refresh_token.strip(), scope
    )


def crm_token(server_secret: bytes, row: Row) -> str:
    """A connection's current CRM token; "" when an OAuth client has not asked for one yet."""
    sealed = row["crm_token_sealed"]
    return sealing.unseal(server_secret, sealed) if sealed else ""


def crm_auth(
    db: Database, server_secret: bytes, row: Row, clock: Callable[[], datetime]
) -> oauth.Renewing | None:
    """The authentication that renews a connection's CRM token and saves each new one; None
    for a connection with a fixed token."""
    if not row["crm_oauth_sealed"]:
        return None
    credentials = oauth.Credentials.loads(sealing.unseal(server_secret, row["crm_oauth_sealed"]))
    outbound.check_crm_url(credentials.token_url)  # again, before connecting
    token = crm_token(server_secret, row)
    expires = row["crm_token_expires_at"]

    def save(got: oauth.Granted) -> None:
        values = {
            "crm_token_sealed": sealing.seal(server_secret, got.access_token),
            "crm_token_hint": sealing.hint(got.access_token),
            "crm_token_expires_at": got.expires_at.isoformat() if got.expires_at else "",
        }
        if got.credentials != credentials:  # a rotated refresh token; else another process's
            values["crm_oauth_sealed"] = sealing.seal(server_secret, got.credentials.dumps())
        with server.write(db):
            store.save_crm_grant(db, row["id"], values)

    when = datetime.fromisoformat(expires) if expires else None
    return oauth.Renewing(credentials, token, when, save, clock)


def _allowed_organizations(platform: str, ids: tuple[str, ...]) -> list[str]:
    """Salesforce signs nothing: its messages are taken only from the organizations named."""
    cleaned = [i.strip() for i in ids if i.strip()]
    if platform != "salesforce":
        if cleaned:
            raise InvalidConnection("--salesforce-org-id is for salesforce connections only")
        return []
    if not cleaned or not all(len(i) in (15, 18) and i.isalnum() for i in cleaned):
        raise InvalidConnection(
            "salesforce: give --salesforce-org-id, the 15- or 18-character id of each "
            "Salesforce organization allowed to send (Setup > Company Information)"
        )
    return cleaned


def _check_secret(kind: Platform, secret: str) -> None:
    """Refuse a secret the platform's requests could not be checked with."""
    if kind.signing == "body-token" and len(secret) > ZOHO_TOKEN_LIMIT:
        raise InvalidConnection(
            f"secret: Zoho takes a token of {ZOHO_TOKEN_LIMIT} characters at most"
        )
    if kind.signing == "standard-webhooks":
        try:
            signatures.standard_webhooks_key(secret)
        except signatures.UnusableSecret as error:
            raise InvalidConnection(
                f"secret: {error}. Leave --secret out to have one made, or give the whsec_ "
                "secret the sender signs with"
            ) from None


def _new_secret(kind: Platform, platform: str) -> str:
    if kind.issues_secret:
        raise InvalidConnection(f"{platform} issues the secret it signs with: give --secret")
    if kind.signing == "standard-webhooks":
        return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()
    return secrets.token_urlsafe(24)


def channel_id(row: Row) -> str:
    """The Zoho notification channel of a connection: a number (Zoho's channel ids are longs)
    made from the connection's id, so it needs no storing and never changes."""
    return str(10**17 + uuid.UUID(row["id"]).int % (9 * 10**17))


def urls(row: Row, public_url: str, secret: str | None = None) -> dict[str, str | None]:
    """The connection's webhook URLs: events only for CRMs, Salesforce's with the secret in it
    (`secret` when known)."""
    base = f"{public_url.rstrip('/')}/hooks/{row['id']}"
    kind = PLATFORMS[row["platform"]]
    events = f"{base}/events" if kind.crm else None
    if events and kind.signing == "url-secret":
        events += f"?{kind.url_param}={secret or '<secret>'}"
    return {"enrichUrl": f"{base}/enrich", "eventsUrl": events}


def shown(row: Row) -> Row:
    """A connection as listed: secrets only by their last characters."""
    hidden = ("api_key_sealed", "secret_sealed", "crm_token_sealed", "crm_oauth_sealed")
    return {name: value for name, value in row.items() if name not in hidden}


def remove(db: Database, connection_id: str) -> bool:
    """Delete a connection; whether there was one."""
    with server.write(db):
        return store.delete_connection(db, connection_id)
