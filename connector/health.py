"""Each connection's health at a glance (the settings page's Connections tab): when it last
received an event and last wrote a record, what became of its events in the last 24 hours,
and the retry of its dead letters. SQL in connector/store.py; the clock passed in."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlite_utils import Database

import server
from connector import store

WINDOW = timedelta(hours=24)


@dataclass(frozen=True)
class Health:
    """One connection's: when its latest event came in and its latest record was written
    (None before any), its events done and dead in the WINDOW (by when they were last
    tried), those retrying now, and every dead letter kept (what "Retry" requeues)."""

    last_received: str | None
    last_write: str | None
    done: int
    retrying: int
    dead: int
    dead_total: int


def of(db: Database, connection_id: str, now: datetime) -> Health:
    """The health of a connection at `now`."""
    counts = store.event_health(db, connection_id, server.iso(now - WINDOW))
    return Health(
        last_received=counts["last_received"],
        last_write=store.last_write(db, connection_id),
        done=counts["done"],
        retrying=counts["retrying"],
        dead=counts["dead"],
        dead_total=counts["dead_total"],
    )


def retry_dead(db: Database, connection_id: str, now: datetime) -> int:
    """Make every dead letter of a connection (not only the window's) due again now, so the
    worker takes them up next; how many. Inside the caller's write transaction."""
    return store.retry_dead_events(db, connection_id, server.iso(now))
