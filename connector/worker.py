"""The write-back worker: takes stored events in the order they fell due and, for each, reads
the CRM record's current values, enriches it (in-process, as the connection's organization),
writes back what the mapping's policies allow, and records what it wrote.

Exactly once: the enrichment's transaction id is derived from the event, so doing an event
again (after a crash between the CRM write and the event's commit) is not charged twice, and
the write is not repeated either: the CRM then holds our values, and values it holds are
never sent. Failures the CRM calls passing (429, 5xx, timeouts, resets) wait and try again
with capped exponential backoff and full jitter, honoring Retry-After; the others, and an
event out of attempts, become dead letters with the reason (`contactdata deliveries retry`).
One worker process runs at a time.
"""

from __future__ import annotations

import json
import random
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
from sqlite_utils import Database

import server
from connector import connections, mappings, outbound, sealing, store
from connector.adapters import adapter_for
from connector.adapters.base import Adapter, Permanent, Retriable

MAX_ATTEMPTS = 12
BACKOFF_FIRST_SECONDS = 30.0
BACKOFF_CAP_SECONDS = 6 * 3600.0
NO_CREDITS_WAIT_SECONDS = 3600.0  # an organization out of credits may be topped up
FRESH_FOR = timedelta(days=30)  # a record enriched this recently, from the same input, is left
_EVENTS = uuid.UUID("8a7f3c1e-5b2d-4e8f-9a6c-0d1e2f3a4b5c")
Row = dict[str, Any]


@dataclass(frozen=True)
class Worker:
    """What working off events needs: the database, the server secret (to open sealed
    secrets and check keys), the clock, the HTTP client adapters send with, and randomness
    for jitter."""

    db: Database
    secret: bytes
    clock: Callable[[], datetime]
    client: httpx.Client
    rng: random.Random

    def run_due(self, limit: int = 100) -> Counter[str]:
        """Work off up to `limit` due events; how many ended done, retrying or dead."""
        outcomes: Counter[str] = Counter()
        for event in store.due_events(self.db, server.iso(self.clock()), limit):
            outcomes[self.work(event)] += 1
        return outcomes

    def work(self, event: Row) -> str:
        """Do one event: "done", "retry" or "dead"."""
        try:
            written = self._deliver(event)
        except Retriable as failure:
            return self._postpone(event, failure.reason, failure.retry_after)
        except Permanent as failure:
            return self._bury(event, failure.reason)
        except server.ServiceError as error:
            if error.code == "insufficient_credits":
                return self._postpone(event, error.message, NO_CREDITS_WAIT_SECONDS)
            return self._bury(event, f"{error.code}: {error.message}")
        except (mappings.MappingError, sealing.UnsealError, outbound.UnsafeUrl) as error:
            return self._bury(event, str(error))
        with server.write(self.db):
            store.finish_event(self.db, event["id"], "done", written)
        return "done"

    def _deliver(self, event: Row) -> str:
        """Enrich and write back one event; a note on what the CRM refused, if anything."""
        link = store.connection(self.db, event["connection_id"])
        if link is None:
            raise Permanent("the connection was removed")
        mapping = mappings.load_current(link["mapping"])
        adapter = self._adapter(link)
        record_id = event["record_id"]
        if not record_id:
            raise Permanent("the event names no CRM record")
        current = adapter.read(record_id, _readable(mapping))
        cached = store.record(self.db, link["id"], record_id)
        ours = json.loads(cached["written"]) if cached else {}
        if cached and cached["pending"]:  # killed while writing: finish that write
            return self._write(link, adapter, record_id, json.loads(cached["pending"]), current)
        payload = current if event["thin"] else json.loads(event["payload"])
        given = mapping.enrich_input(payload)
        if cached and self._fresh(cached, given, ours):
            return f"unchanged since {cached['enriched_at']}: not enriched again"
        outcome = server.enrich_with_key(
            self.db,
            self.secret,
            sealing.unseal(self.secret, link["api_key_sealed"]),
            given,
            self.clock(),
            str(uuid.uuid5(_EVENTS, f"{link['id']}:{event['event_key']}")),
            f"/hooks/{link['id']}/events",
        )
        changes = mapping.changes(outcome.result, current, ours)
        fingerprint = _fingerprint(given, {**ours, **changes})
        row = _cache_row(link, record_id, outcome, fingerprint, ours, server.iso(self.clock()))
        with server.write(self.db):  # the intent first: a kill from here on is finished above
            store.save_record(self.db, {**row, "pending": json.dumps(changes)})
        return self._write(link, adapter, record_id, changes, current)

    def _write(self, link: Row, adapter: Adapter, record_id: str, intent: Row, current: Row) -> str:
        """Send what of `intent` the CRM does not hold yet, then record it as written; a note
        on what the CRM refused, if anything."""
        unsent = {k: v for k, v in intent.items() if str(v) != str(current.get(k))}
        result = adapter.write(record_id, unsent) if unsent else None
        dropped = result.dropped if result else {}
        with server.write(self.db):
            store.record_written(
                self.db,
                link["id"],
                record_id,
                {k: v for k, v in intent.items() if k not in dropped},
            )
        return "; ".join(f"{name}: {why}" for name, why in dropped.items())

    def _fresh(self, cached: Row, given: Row, ours: Row) -> bool:
        """Whether the record was enriched within FRESH_FOR from the same input: then an
        event (our own write echoed back, a user editing another field) needs no enrich."""
        recent = cached["enriched_at"] >= server.iso(self.clock() - FRESH_FOR)
        return recent and cached["input_fingerprint"] == _fingerprint(given, ours)

    def _adapter(self, link: Row) -> Adapter:
        if not connections.PLATFORMS[link["platform"]].crm:
            raise Permanent(f"{link['platform']} is not a CRM: nothing is written back")
        base_url = outbound.check_crm_url(link["crm_base_url"])  # again, before connecting
        token = sealing.unseal(self.secret, link["crm_token_sealed"])
        return adapter_for(link["platform"], base_url, token, self.client)

    def _postpone(self, event: Row, reason: str, retry_after: float | None) -> str:
        if event["attempts"] + 1 >= MAX_ATTEMPTS:
            return self._bury(event, f"gave up after {MAX_ATTEMPTS} attempts: {reason}")
        wait = max(retry_after or 0.0, self.backoff(event["attempts"]))
        due = server.iso(self.clock() + timedelta(seconds=wait))
        with server.write(self.db):
            store.postpone_event(self.db, event["id"], due, reason)
        return "retry"

    def _bury(self, event: Row, reason: str) -> str:
        with server.write(self.db):
            store.finish_event(self.db, event["id"], "dead", reason)
        return "dead"

    def backoff(self, attempts: int) -> float:
        """Seconds to wait after `attempts` failures: capped exponential, full jitter."""
        ceiling = min(BACKOFF_CAP_SECONDS, BACKOFF_FIRST_SECONDS * 2**attempts)
        return self.rng.uniform(ceiling / 2, ceiling)


def _readable(mapping: mappings.Mapping) -> list[str]:
    """The CRM properties to read: those written back, and the plain input paths (for
    events that carry only the record's id)."""
    plain = [path for paths in mapping.input.values() for path in paths if "." not in path]
    return list(dict.fromkeys([*(rule.property for rule in mapping.output), *plain]))


def _fingerprint(given: Row, ours: Row) -> str:
    """The enrich input as the user gave it: inputs holding a value we wrote (a company name
    we filled in) are left out, so our own write does not count as a change."""
    written = {str(value) for value in ours.values()}
    return json.dumps({k: v for k, v in given.items() if v not in written}, sort_keys=True)


def _cache_row(
    link: Row, record_id: str, outcome: server.Outcome, fingerprint: str, written: Row, now: str
) -> Row:
    """The transaction cache entry after enriching a record."""
    return {
        "connection_id": link["id"],
        "record_id": record_id,
        "transaction_id": outcome.transaction_id,
        "contact_guid": outcome.result.get("conGUID", ""),
        "company_guid": outcome.result.get("compGUID", ""),
        "input_fingerprint": fingerprint,
        "written": json.dumps(written),
        "enriched_at": now,
    }
