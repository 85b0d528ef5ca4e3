"""Administration of an organization's keys and users: the use cases and their state rules.

Every function acts inside the caller's own organization only: an e-mail address of another
organization is simply not found. Each change is one transaction with its audit entry, which
first locks the organization's row: what it checks (an e-mail not taken, another active admin
key left) still holds when it writes, however many run at once.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlite_utils import Database

from server import audit, keys
from server.auth import Caller, require_active_organization
from server.clock import iso
from server.errors import AlreadyExists, InvalidParameter, NotEligible, NotFound
from server.storage import store
from server.storage.db import write

Row = dict[str, Any]

KEY_ACTIONS = {
    "suspend": "suspend",
    "activate": "activate",
    "active": "activate",
    "rotate": "rotate",
}
USER_ACTIONS = {"suspend": "suspend", "active": "active", "activate": "active", "delete": "delete"}
DEFAULT_GRACE_SECONDS = 86_400
MAX_GRACE_SECONDS = 604_800
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


@dataclass(frozen=True)
class Context:
    """Who acts, when, and the request to name in the audit log."""

    caller: Caller
    now: datetime
    request_id: str = ""
    secret: bytes = b""


def normalize_email(value: str) -> str:
    """An e-mail address as keys and users are stored under: trimmed, lower case."""
    email = value.strip().casefold()
    if not _EMAIL.fullmatch(email) or len(email) > 254:
        raise InvalidParameter(f"email must be an e-mail address, not {value!r}.")
    return email


# --- keys ------------------------------------------------------------------------------------


def create_key(db: Database, ctx: Context, email: str) -> tuple[Row, str]:
    """A new standard key for `email`; returns the key row and its value (shown once)."""
    require_active_organization(ctx.caller)
    email = normalize_email(email)
    value = keys.new_key()
    with write(db):
        store.lock_organization(db, ctx.caller.org_id)
        if store.key_by_email(db, ctx.caller.org_id, email):
            raise AlreadyExists(f"A key for {email} already exists in this organization.")
        key = new_key_row(ctx.caller.org_id, None, email, "standard", value, iso(ctx.now))
        store.insert_api_key(db, key, keys.key_hash(value, ctx.secret), iso(ctx.now))
        _audit(db, ctx, "key.create", email)
        return _key(db, ctx.caller.org_id, email), value


def view_keys(db: Database, ctx: Context, email: str | None) -> Row | list[Row]:
    """All keys of the caller's organization, or the one key of `email`."""
    if email is None:
        return store.keys_of(db, ctx.caller.org_id)
    return _key(db, ctx.caller.org_id, normalize_email(email))


def update_key(
    db: Database, ctx: Context, email: str, action: str, grace_seconds: int | None = None
) -> tuple[Row, str | None]:
    """Suspend, activate or rotate a key; returns the key and, after a rotation, its new value.

    After `rotate` the previous value keeps working for `grace_seconds` (default one day).
    """
    require_active_organization(ctx.caller)
    email = normalize_email(email)
    step = _choice(action, KEY_ACTIONS, "action")
    if grace_seconds is not None and step != "rotate":
        raise InvalidParameter("graceSeconds applies only to the rotate action.")
    grace = DEFAULT_GRACE_SECONDS if grace_seconds is None else grace_seconds
    if not 0 <= grace <= MAX_GRACE_SECONDS:
        raise InvalidParameter(f"graceSeconds must be between 0 and {MAX_GRACE_SECONDS}.")
    stamp = iso(ctx.now)
    with write(db):
        store.lock_organization(db, ctx.caller.org_id)
        key = _key(db, ctx.caller.org_id, email)
        if key["user_status"] == "deleted":
            raise NotEligible(f"The key of {email} was revoked when its user was deleted.")
        value = None
        if step == "suspend":
            if key["role"] == "admin" and _is_last_admin_key(db, key):
                raise NotEligible("The organization's last active admin key cannot be suspended.")
            store.set_key_status(db, key["id"], "suspended", stamp)
        elif step == "activate":
            if key["status"] != "suspended":
                raise NotEligible(
                    f"Only a suspended key can be activated; this one is {key['status']}."
                )
            store.set_key_status(db, key["id"], "active", stamp)
        else:
            value = keys.new_key()
            expires = iso(ctx.now + timedelta(seconds=grace))
            store.rotate_key(
                db, key["id"], keys.key_hash(value, ctx.secret), keys.mask(value), expires, stamp
            )
        _audit(db, ctx, f"key.{step}", email, {"graceSeconds": grace} if value else None)
        return _key(db, ctx.caller.org_id, email), value


def _key(db: Database, org_id: str, email: str) -> Row:
    key = store.key_by_email(db, org_id, email)
    if key is None:
        raise NotFound(f"No key for {email} in this organization.")
    return key


def _is_last_admin_key(db: Database, key: Row) -> bool:
    active = key["status"] == "active" and key["user_status"] in (None, "active")
    return active and store.active_admin_keys(db, key["org_id"]) <= 1


def new_key_row(
    org_id: str, user_id: str | None, email: str, role: str, value: str, stamp: str
) -> Row:
    """The api_keys row of a new active key with value `value` (stored masked only)."""
    return {
        "id": str(uuid.uuid4()),
        "org_id": org_id,
        "user_id": user_id,
        "email": email,
        "role": role,
        "status": "active",
        "masked": keys.mask(value),
        "last_used_at": None,
        "created_at": stamp,
        "updated_at": stamp,
    }


# --- users -----------------------------------------------------------------------------------


def create_user(db: Database, ctx: Context, email: str) -> tuple[Row, Row, str]:
    """A new active user with role `user` and its own standard key: (org, user, key value)."""
    require_active_organization(ctx.caller)
    email = normalize_email(email)
    stamp = iso(ctx.now)
    value = keys.new_key()
    with write(db):
        store.lock_organization(db, ctx.caller.org_id)
        if store.user_by_email(db, ctx.caller.org_id, email) or store.key_by_email(
            db, ctx.caller.org_id, email
        ):
            raise AlreadyExists(f"A user or key for {email} already exists in this organization.")
        user = {
            "id": str(uuid.uuid4()),
            "org_id": ctx.caller.org_id,
            "email": email,
            "role": "user",
            "status": "active",
            "created_at": stamp,
            "updated_at": stamp,
        }
        store.insert_user(db, user)
        key = new_key_row(ctx.caller.org_id, user["id"], email, "standard", value, stamp)
        store.insert_api_key(db, key, keys.key_hash(value, ctx.secret), stamp)
        _audit(db, ctx, "user.create", email)
        return _organization(db, ctx), user, value


def view_users(db: Database, ctx: Context) -> tuple[Row, list[Row]]:
    """The caller's organization and every one of its users."""
    return _organization(db, ctx), store.users_of(db, ctx.caller.org_id)


def update_user(db: Database, ctx: Context, email: str, action: str) -> tuple[Row, Row]:
    """Suspend, reactivate or delete a user (deleted is final and revokes the user's key)."""
    require_active_organization(ctx.caller)
    email = normalize_email(email)
    step = _choice(action, USER_ACTIONS, "action")
    target = {"suspend": "suspend", "active": "active", "delete": "deleted"}[step]
    with write(db):
        store.lock_organization(db, ctx.caller.org_id)
        user = store.user_by_email(db, ctx.caller.org_id, email)
        if user is None:
            raise NotFound(f"No user {email} in this organization.")
        if user["status"] == "deleted":
            raise NotEligible(f"The user {email} is deleted; a deleted user cannot change.")
        if step == "suspend" and user["status"] != "active":
            raise NotEligible(f"Only an active user can be suspended; {email} is {user['status']}.")
        if step == "active" and user["status"] != "suspend":
            raise NotEligible(
                f"Only a suspended user can be activated; {email} is {user['status']}."
            )
        if step != "active" and user["role"] == "admin" and _holds_last_admin_key(db, user):
            raise NotEligible("The user holding the last active admin key cannot be disabled.")
        store.set_user_status(db, user["id"], target, iso(ctx.now))
        _audit(db, ctx, f"user.{step}", email)
        found = store.user_by_email(db, ctx.caller.org_id, email)
        assert found is not None
        return _organization(db, ctx), found


def _holds_last_admin_key(db: Database, user: Row) -> bool:
    key = store.key_by_email(db, user["org_id"], user["email"])
    return key is not None and key["role"] == "admin" and _is_last_admin_key(db, key)


def _organization(db: Database, ctx: Context) -> Row:
    org = store.organization(db, ctx.caller.org_id)
    assert org is not None  # the caller's key was just found through it
    return org


# --- shared ----------------------------------------------------------------------------------


def _choice(value: str, allowed: dict[str, str], name: str) -> str:
    try:
        return allowed[value.strip().casefold()]
    except KeyError:
        options = ", ".join(dict.fromkeys(allowed))
        raise InvalidParameter(f"{name} must be one of {options}, not {value!r}.") from None


def record_action(
    db: Database, ctx: Context, action: str, target: str, detail: dict | None = None
) -> None:
    """Log an action taken for an admin elsewhere (the connector's settings page retrying a
    delivery, changing a schedule) under the same actor as key and user changes; call it
    inside the transaction that makes the change."""
    _audit(db, ctx, action, target, detail)


def actor(ctx: Context) -> str:
    """How the audit log names the admin acting: their key, and its user's e-mail address."""
    return f"key {ctx.caller.key_id} ({ctx.caller.email})"


def _audit(
    db: Database, ctx: Context, action: str, target: str, detail: dict | None = None
) -> None:
    audit.record(
        db,
        ctx.now,
        org_id=ctx.caller.org_id,
        actor=actor(ctx),
        action=action,
        target=target,
        detail=detail,
        request_id=ctx.request_id,
    )
