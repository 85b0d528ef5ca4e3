"""Who is calling: an API key value checked against its hash, its user and its organization.

Unknown, malformed and rotated-out keys are indistinguishable to the caller (401); a known
key whose key, user or organization is not active answers 403 naming which (contract §2).
Nothing is cached, so a suspension takes effect on the next request in every process.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlite_utils import Database

from server import keys
from server.clock import iso
from server.errors import Forbidden, InvalidApiKey, Unauthorized
from server.storage import store
from server.storage.db import is_postgres, patience, write

# A key's last use is written at most this often, so reads do not each take the write lock
# (SQLite's; on PostgreSQL the key's row), and never waited for long: it is a hint for
# admins, not worth holding up a request.
LAST_USE_RESOLUTION = timedelta(seconds=60)
LAST_USE_PATIENCE_MS = 50
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Caller:
    """The holder of a valid key: the key, its organization and what that allows."""

    key_id: str
    email: str
    role: str
    org_id: str
    org_name: str
    org_active: bool
    tier: str
    qps_limit: int
    daily_limit: int
    discover_per_minute: int

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"


def authenticate(db: Database, secret: bytes, value: str | None, now: datetime) -> Caller:
    """The caller holding key `value`; raises the contract's 401 or 403 otherwise."""
    if not value:
        raise Unauthorized("Authentication credentials are missing: send your API key.")
    if not keys.is_well_formed(value):
        raise InvalidApiKey("Invalid API key.")
    row = store.key_by_hash(db, keys.key_hash(value, secret), iso(now))
    if row is None:
        raise InvalidApiKey("Invalid API key.")
    _require_active(row)
    _note_use(db, row, now)
    return _caller(row)


def sign_in(db: Database, secret: bytes, value: str | None, now: datetime) -> tuple[Caller, str]:
    """The admin holding key `value`, and a mark naming that value without revealing it: what
    a browser session keeps instead of the value (see `resume`). Raises as `authenticate`, or
    admin_required for a standard key."""
    caller = authenticate(db, secret, value, now)
    require_admin(caller)
    return caller, _value_mark(secret, keys.key_hash(value or "", secret))


def resume(db: Database, secret: bytes, key_id: str, mark: str, now: datetime) -> Caller:
    """The admin of a browser session, checked again on each request as a key is: the session
    ends (401/403) once the value it signed in with is rotated out, or the key, its user or
    its role no longer admits it."""
    moment = iso(now)
    for key_hash in store.live_key_hashes(db, key_id, moment):
        if hmac.compare_digest(_value_mark(secret, key_hash), mark):
            row = store.key_by_hash(db, key_hash, moment)
            if row is not None:
                _require_active(row)
                caller = _caller(row)
                require_admin(caller)
                return caller
    raise InvalidApiKey("The key this session signed in with is no longer valid.")


def _value_mark(secret: bytes, key_hash: str) -> str:
    """An HMAC of a value's stored hash under its own label: neither the value nor its hash,
    so a session cookie that is read (it is signed, not encrypted) gives away neither."""
    return hmac.new(secret, f"session:{key_hash}".encode(), hashlib.sha256).hexdigest()[:32]


def _require_active(row: dict) -> None:
    """Refuse a key whose user is deleted or suspended, or which is suspended itself."""
    if row["user_status"] == "deleted":
        raise Forbidden("user_deleted", "The user this key belongs to has been deleted.")
    if row["user_status"] == "suspend":
        raise Forbidden("user_suspended", "The user this key belongs to is suspended.")
    if row["status"] != "active":
        raise Forbidden("key_suspended", "This API key is suspended.")


def _caller(row: dict) -> Caller:
    return Caller(
        key_id=row["id"],
        email=row["email"],
        role=row["role"],
        org_id=row["org_id"],
        org_name=row["org_name"],
        org_active=row["org_status"] == "active",
        tier=row["org_tier"],
        qps_limit=row["org_qps_limit"],
        daily_limit=row["org_daily_rate_limit"],
        discover_per_minute=row["org_discover_per_minute"],
    )


def require_admin(caller: Caller) -> None:
    """Refuse a non-admin key (administration endpoints)."""
    if not caller.is_admin:
        raise Forbidden("admin_required", "This endpoint needs the organization's admin key.")


def require_active_organization(caller: Caller) -> None:
    """Refuse an inactive organization (data calls and update actions)."""
    if not caller.org_active:
        raise Forbidden("organization_inactive", f"The organization {caller.org_name} is inactive.")


def _note_use(db: Database, row: dict, now: datetime) -> None:
    """Record the key's use, at most once a LAST_USE_RESOLUTION. On PostgreSQL one statement
    that waits for nothing (store.touch_key); SQLite's writers take turns, so there it waits
    for its turn LAST_USE_PATIENCE_MS at most."""
    last = row["last_used_at"]
    if last is not None and last > iso(now - LAST_USE_RESOLUTION):
        return
    if is_postgres(db):
        store.touch_key(db, row["id"], iso(now))
        return
    try:
        with patience(db, LAST_USE_PATIENCE_MS), write(db):
            store.touch_key(db, row["id"], iso(now))
    except sqlite3.OperationalError as error:  # another write holds it
        log.info("last use of key %s not recorded: %s", row["id"], error)
