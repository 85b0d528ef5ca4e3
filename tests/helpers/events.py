"""Events as the receiver stores them, put straight into the connector's store for the worker."""

from __future__ import annotations

import json
from typing import Any

from sqlite_utils import Database

from connector import connections, store
from tests.helpers.constants import AVA


def hubspot_event(
    db: Database,
    link: connections.Added,
    key: str,
    thin: bool = False,
    record: str = "501",
    payload: dict[str, Any] | None = None,
) -> None:
    """A HubSpot event for `record` (Ava's contact, full or thin unless `payload` says)."""
    full = {"vid": record, "properties": {"email": {"value": AVA}}}
    row = {
        "connection_id": link.row["id"],
        "event_key": key,
        "record_id": record,
        "payload": json.dumps(payload if payload is not None else {} if thin else full),
        "thin": int(thin),
        "received_at": "2026-11-23T12:00:00.000+00:00",
    }
    with store.server.write(db):
        store.add_events(db, [row])
