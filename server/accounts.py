"""Organizations and their admin keys: the operator's use cases behind `contactdata org`."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from sqlite_utils import Database

from server import keys, store
from server.clock import iso
from server.db import write
from server.errors import AlreadyExists, InvalidParameter, NotFound
from server.normalize import registrable_domain

TIERS = ("enterprise_standard", "enterprise_plus", "pro")
ORG_STATUSES = ("active", "inactive")
# Limits an organization gets unless the operator says otherwise.
DEFAULT_DAILY_LIMIT = 10_000  # the vendor samples show 10000 per day and 5 per second
DEFAULT_QPS = 5
DEFAULT_DISCOVER_PER_MINUTE = 60
DEFAULT_PRO_CREDITS = 1_000


def cleaned_website(website: str) -> str:
    """The website reduced to its bare domain: `https://www.acme.co.uk/x` -> `acme.co.uk`."""
    text = website.strip()
    host = urlsplit(text if "//" in text else f"//{text}").hostname or ""
    return registrable_domain(host) or host.removeprefix("www.")


def create_organization(
    db: Database,
    secret: bytes,
    now: datetime,
    *,
    name: str,
    website: str,
    tier: str,
    credits: int | None = None,
    daily_limit: int = DEFAULT_DAILY_LIMIT,
    qps: int = DEFAULT_QPS,
    discover_per_minute: int = DEFAULT_DISCOVER_PER_MINUTE,
    admin_email: str | None = None,
) -> tuple[dict[str, Any], str]:
    """Create an organization with its admin user and admin key; returns (org, key value).

    Pro organizations start with DEFAULT_PRO_CREDITS unless `credits` is given; the
    enterprise tiers are unlimited (None) unless it is.
    """
    _check_new_organization(name, tier, credits, daily_limit, qps, discover_per_minute)
    stamp = iso(now)
    domain = cleaned_website(website)
    org = {
        "id": str(uuid.uuid4()),
        "name": name.strip(),
        "website": website.strip(),
        "cleaned_website": domain,
        "tier": tier,
        "status": "active",
        "credits": DEFAULT_PRO_CREDITS if credits is None and tier == "pro" else credits,
        "daily_rate_limit": daily_limit,
        "qps_limit": qps,
        "discover_per_minute": discover_per_minute,
        "created_at": stamp,
        "updated_at": stamp,
    }
    email = admin_email or f"admin@{domain or 'example.com'}"
    value = keys.new_key()
    with write(db):
        if store.organization_named(db, org["name"]):
            raise AlreadyExists(f"An organization named {org['name']!r} already exists.")
        store.insert_organization(db, org)
        user = _admin_user(org["id"], email, stamp)
        store.insert_user(db, user)
        store.insert_api_key(
            db,
            _admin_key(org["id"], user["id"], email, value, stamp),
            keys.key_hash(value, secret),
            stamp,
        )
    return org, value


def _check_new_organization(
    name: str, tier: str, credits: int | None, daily: int, qps: int, per_minute: int
) -> None:
    if not name.strip():
        raise InvalidParameter("name must not be empty.")
    if tier not in TIERS:
        raise InvalidParameter(f"tier must be one of {', '.join(TIERS)}, not {tier!r}.")
    if credits is not None and credits < 0:
        raise InvalidParameter("credits must be 0 or more.")
    for field, value in (("daily limit", daily), ("qps", qps), ("discover limit", per_minute)):
        if value < 1:
            raise InvalidParameter(f"{field} must be at least 1.")


def _admin_user(org_id: str, email: str, stamp: str) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "org_id": org_id,
        "email": email,
        "role": "admin",
        "status": "active",
        "created_at": stamp,
        "updated_at": stamp,
    }


def _admin_key(org_id: str, user_id: str, email: str, value: str, stamp: str) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "org_id": org_id,
        "user_id": user_id,
        "email": email,
        "role": "admin",
        "status": "active",
        "masked": keys.mask(value),
        "last_used_at": None,
        "created_at": stamp,
        "updated_at": stamp,
    }


def list_organizations(db: Database) -> list[dict[str, Any]]:
    """Every organization."""
    return store.organizations(db)


def set_status(db: Database, org_id: str, status: str, now: datetime) -> dict[str, Any]:
    """Activate or deactivate an organization (operator only, contract §3)."""
    if status not in ORG_STATUSES:
        raise InvalidParameter(f"status must be active or inactive, not {status!r}.")
    with write(db):
        if not store.set_organization_status(db, org_id, status, iso(now)):
            raise NotFound(f"No organization with id {org_id}.")
        org = store.organization(db, org_id)
    assert org is not None
    return org
