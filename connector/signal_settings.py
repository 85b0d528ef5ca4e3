"""What a job change does in one connection's CRM, per kind of record (issue 39): the admin's
choice among ACTIONS, kept as JSON in `connections.signal_actions`, and the credits a round of
change updates may spend (`connections.change_credit_cap`)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from sqlite_utils import Database

from connector import store

# mark: write the contactdata_job_change fields (left on, new company, new title) on the record;
# task: a task or note for the record's owner where the CRM has them;
# new_contact: the person at the new company as a new lead/contact linked to the old record.
ACTIONS = ("mark", "task", "new_contact")
DEFAULT_ACTIONS: tuple[str, ...] = ("mark",)
CHANGE_CREDIT_CAP = 1000  # credits one round of change updates may spend, unless set


class InvalidSignalSettings(ValueError):
    """An unknown action or a negative cap."""


def actions_for(connection: dict[str, Any], kind: str) -> tuple[str, ...]:
    """The actions a job change in a `kind` record of this connection (a connections row)
    takes, in ACTIONS order; DEFAULT_ACTIONS unless the admin chose."""
    chosen = json.loads(connection.get("signal_actions") or "{}")
    return tuple(chosen[kind]) if kind in chosen else DEFAULT_ACTIONS


def credit_cap(connection: dict[str, Any]) -> int:
    """The credits one round of change updates may spend for this connection."""
    cap = connection.get("change_credit_cap")
    return CHANGE_CREDIT_CAP if cap is None else int(cap)


def set_actions(db: Database, connection_id: str, kind: str, actions: Iterable[str]) -> bool:
    """Choose what a job change in a `kind` record does; whether the connection exists."""
    wanted = set(actions)
    unknown = wanted - set(ACTIONS)
    if unknown:
        raise InvalidSignalSettings(f"unknown job-change action {sorted(unknown)[0]!r}")
    row = store.connection(db, connection_id)
    if row is None:
        return False
    chosen = json.loads(row["signal_actions"] or "{}")
    chosen[kind] = [action for action in ACTIONS if action in wanted]
    store.set_signal_settings(db, connection_id, json.dumps(chosen), row["change_credit_cap"])
    return True


def set_credit_cap(db: Database, connection_id: str, cap: int | None) -> bool:
    """Set the credits a round of change updates may spend (None: the default); whether the
    connection exists."""
    if cap is not None and not 0 <= cap <= store.LARGEST_ID:
        raise InvalidSignalSettings(f"the change credit cap must be 0 to {store.LARGEST_ID}")
    row = store.connection(db, connection_id)
    if row is None:
        return False
    store.set_signal_settings(db, connection_id, row["signal_actions"], cap)
    return True
