"""Organizations and their admin keys: the operator's use cases behind `contactdata org`."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from sqlite_utils import Database

from server import admin, audit, keys
from server import credits as credit_ledger
from server.clock import iso
from server.credits import MAX_CREDITS
from server.errors import AlreadyExists, InvalidParameter, NotFound
from server.storage import store
from server.storage.db import write

TIERS = ("enterprise_standard", "enterprise_plus", "pro")
ORG_STATUSES = ("active", "inactive")
# Limits an organization gets unless the operator says otherwise.
DEFAULT_DAILY_LIMIT = 10_000  # the vendor samples show 10000 per day and 5 per second
DEFAULT_QPS = 5
DEFAULT_DISCOVER_PER_MINUTE = 60
DEFAULT_PRO_CREDITS = 1_000


def cleaned_website(website: str) -> str:
    """The website reduced to its bare host: `https://www.acme.co.uk/x` -> `acme.co.uk`.

    Only a leading `www.` goes: `https://eu.acme.com` stays `eu.acme.com`, as the site it is.
    """
    text = website.strip()
    host = urlsplit(text if "//" in text else f"//{text}").hostname or ""
    return host.removeprefix("www.")


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
    email = admin.normalize_email(admin_email or f"admin@{domain or 'example.com'}")
    value = keys.new_key()
    with write(db):
        if not store.insert_organization(db, org):
            raise AlreadyExists(f"An organization named {org['name']!r} already exists.")
        user = _admin_user(org["id"], email, stamp)
        store.insert_user(db, user)
        key = admin.new_key_row(org["id"], user["id"], email, "admin", value, stamp)
        store.insert_api_key(db, key, keys.key_hash(value, secret), stamp)
        detail = {
            "tier": tier,
            "credits": org["credits"],
            "qpsLimit": qps,
            "dailyRateLimit": daily_limit,
        }
        audit.record(
            db,
            now,
            org_id=org["id"],
            actor=audit.OPERATOR,
            action="organization.create",
            target=org["name"],
            detail=detail,
        )
        if org["credits"]:
            credit_ledger.record(
                db,
                now,
                org_id=org["id"],
                change=org["credits"],
                balance=org["credits"],
                reason="opening balance",
            )
    return org, value


def _check_new_organization(
    name: str, tier: str, credits: int | None, daily: int, qps: int, per_minute: int
) -> None:
    if not name.strip():
        raise InvalidParameter("name must not be empty.")
    if tier not in TIERS:
        raise InvalidParameter(f"tier must be one of {', '.join(TIERS)}, not {tier!r}.")
    if credits is not None and not 0 <= credits <= MAX_CREDITS:
        raise InvalidParameter(f"credits must be 0 to {MAX_CREDITS:,}.")
    for field, value in (("daily limit", daily), ("qps", qps), ("discover limit", per_minute)):
        if not 1 <= value <= MAX_CREDITS:
            raise InvalidParameter(f"{field} must be 1 to {MAX_CREDITS:,}.")


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


def organization(db: Database, org_id: str) -> dict[str, Any]:
    """The organization with this id; NotFound otherwise."""
    org = store.organization(db, org_id)
    if org is None:
        raise NotFound(f"No organization with id {org_id}.")
    return org


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
        audit.record(db, now, org_id=org_id, actor=audit.OPERATOR, action=f"organization.{status}")
        org = store.organization(db, org_id)
    assert org is not None
    return org
