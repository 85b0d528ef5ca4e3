"""The audit log: who did what to which key, user or organization, and when. Never a secret."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlite_utils import Database

from server.clock import iso
from server.storage import store

OPERATOR = "operator (command line)"


def record(
    db: Database,
    now: datetime,
    *,
    org_id: str,
    actor: str,
    action: str,
    target: str = "",
    detail: dict[str, Any] | None = None,
    request_id: str = "",
) -> None:
    """Append one action to the log (inside the caller's transaction, with the change)."""
    store.insert_audit_entry(
        db,
        {
            "org_id": org_id,
            "actor": actor,
            "action": action,
            "target": target,
            "detail": json.dumps(detail, sort_keys=True) if detail else "",
            "request_id": request_id,
            "created_at": iso(now),
        },
    )


def entries(db: Database, org_id: str) -> list[dict[str, Any]]:
    """An organization's actions, oldest first."""
    return store.audit_entries(db, org_id)


def page(
    db: Database, org_id: str, shown: dict[str, str], before: int | None, limit: int
) -> list[dict[str, Any]]:
    """One page of an organization's actions, newest first, older than entry `before`,
    filtered by `shown` (action prefix, actor, since and until: ISO bounds)."""
    return store.audit_page(db, org_id, shown, before, limit)


def actors(db: Database, org_id: str) -> list[str]:
    """Everyone who acted in an organization's log."""
    return store.audit_actors(db, org_id)
