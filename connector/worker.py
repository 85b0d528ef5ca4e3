"""The write-back worker: takes stored events in the order they fell due, a connection's at a
time, and for each reads the CRM record's current values, enriches it (in-process, as the
connection's organization) and saves what the mapping's policies allow it to write; then
writes the round's records in one call where the CRM has batch updates, and records what
each got. Echoes of our own writes cost nothing: a full-record event whose input is what we
last enriched is not enriched again (before any CRM call), and a change event reporting a
property's new value as the one we wrote is ignored.

Exactly once: the enrichment's transaction id is derived from the event, so doing an event
again (after a crash between the CRM write and the event's commit) is not charged twice, and
the write is not repeated either: the CRM then holds our values, and values it holds are
never sent. Failures the CRM calls passing (429, 5xx, timeouts, resets) wait and try again
with capped exponential backoff and full jitter, honoring Retry-After; the others, and an
event out of attempts, become dead letters with the reason (`contactdata deliveries retry`).
A CRM's rate limit (a `throttled` Retriable) is the connection's, not the event's: the event
waits until the time the CRM states, counting no attempt, and so does every other event of
the connection (it is claimed by no worker before then, and one already claimed is put back).
Anything else an event raises (a bug, MemoryError) is that event's failure, logged with its
traceback and retried like a passing one: one record never stops the worker, or the
write-back of every other connection behind it.
Any number of workers, on any machines, share one database: a round CLAIMS its events for
this worker until a lease ends (`LEASE`), renewed while the round goes on, so no event is
worked by two at once; a worker that dies leaves its claims to lapse, and another takes
them then. Finishing or postponing an event ends its claim. In one process one round runs at
a time (`ROUNDS`): the loop of `contactdata worker` and the scheduled retry_deliveries job
take turns.

A refresh event (`refresh_event`: payload {"refresh": true}, queued by the scheduled reenrich
job for records enriched longer ago than their connection's refresh interval, and by the change
job for records whose contact or company changed) is always enriched again: the "unchanged
since we enriched it" shortcut would otherwise skip it.
"""

from __future__ import annotations

import json
import logging
import os
import random
import secrets
import socket
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import httpx
from sqlite_utils import Database

import server
from connector import mappings, outbound, store, suppression
from connector.platforms import PLATFORMS
from connector.platforms.base import (
    TOKEN_REFUSED,
    Adapter,
    Permanent,
    Platform,
    Retriable,
    WriteResult,
    read_each,
)

MAX_ATTEMPTS = 12
BACKOFF_FIRST_SECONDS = 30.0
BACKOFF_CAP_SECONDS = 6 * 3600.0
NO_CREDITS_WAIT_SECONDS = 3600.0  # an organization out of credits may be topped up
THROTTLED_WAIT_SECONDS = 60.0  # a rate limit whose answer states no time (Zoho's 429)
FRESH_FOR = timedelta(days=30)  # a record enriched this recently, from the same input, is left
ROUNDS = threading.Lock()  # one round at a time in this process
LEASE = timedelta(seconds=60)  # a claim's life unless renewed: `contactdata worker --lease`
BATCH = 100  # events a round claims: `contactdata worker --batch`
COMPANY_OF = "company-of:"  # the event key of a company's fields delivered with its contact
_EVENTS = uuid.UUID("8a7f3c1e-5b2d-4e8f-9a6c-0d1e2f3a4b5c")
Row = dict[str, Any]
Auths = dict[str, httpx.Auth | None]  # connection id -> its token renewal for the round
# What ends an attempt at an event as expected; anything else is a bug, still that event's.
EXPECTED = (
    Retriable,
    Permanent,
    server.ServiceError,
    mappings.MappingError,
    store.UnsealError,
    outbound.UnsafeUrl,
)
log = logging.getLogger(__name__)
_NAMES: dict[int, str] = {}


def refresh_event(record: Row, reason: str, now: datetime) -> Row:
    """A thin event asking the worker to enrich a transaction-cache `record` again, keyed by
    `reason` ("refresh:<UTC day>", "change:<change id>") and the record, so that queueing it
    twice for one reason adds nothing."""
    kind = record["kind"]
    key = record["record_id"] if kind == "contacts" else f"{kind}:{record['record_id']}"
    return {
        "connection_id": record["connection_id"],
        "event_key": f"{reason}:{key}",
        "kind": kind,
        "record_id": record["record_id"],
        "payload": json.dumps({"refresh": True}),
        "thin": 1,
        "received_at": server.iso(now),
    }


def process_name() -> str:
    """This process among all workers on all machines: host, process id and a random part
    (a restarted container may have the same host name and process id)."""
    pid = os.getpid()
    return _NAMES.setdefault(pid, f"{socket.gethostname()}:{pid}:{secrets.token_hex(3)}")


@dataclass(frozen=True)
class Worker:
    """What working off events needs: the database, the server secret (to open sealed
    secrets and check keys), the clock, the HTTP client adapters send with, and randomness
    for jitter; the name its claims go by and how long they last unless renewed."""

    db: Database
    secret: bytes
    clock: Callable[[], datetime]
    client: httpx.Client
    rng: random.Random
    name: str = field(default_factory=process_name)
    lease: timedelta = LEASE

    def run_due(self, limit: int = BATCH) -> Counter[str]:
        """Claim up to `limit` due events and work them off, a connection's at a time (one
        CRM call writes them all, where the CRM has batch writes); how many ended done,
        retrying or dead. The claims are renewed between batches once a third of the lease
        has passed; an event another worker took meanwhile (this one stalled past its lease)
        is left to it. A connection's batches of the round share its token renewal: one token
        request a round at most (Zoho throttles token requests)."""
        outcomes: Counter[str] = Counter()
        auths: Auths = {}
        with ROUNDS:
            renewed = self.clock()
            ours: set[int] | None = None  # None: every claimed event, not renewed yet
            for batch in _batches(self.claim(limit)):
                if self.clock() - renewed >= self.lease / 3:
                    renewed, ours = self.clock(), self.extend()
                kept = [event for event in batch if ours is None or event["id"] in ours]
                if kept:
                    outcomes.update(self.work(kept, auths))
        return outcomes

    def claim(self, limit: int) -> list[Row]:
        """Claim up to `limit` due events no live claim holds, for this worker's lease."""
        now = self.clock()
        with server.write(self.db):
            return store.claim_events(
                self.db, self.name, server.iso(now), server.iso(now + self.lease), limit
            )

    def extend(self) -> set[int]:
        """Renew this worker's claims for another lease; the ids of the events still its."""
        with server.write(self.db):
            return store.extend_claims(self.db, self.name, server.iso(self.clock() + self.lease))

    def work(self, events: list[Row], auths: Auths | None = None) -> Counter[str]:
        """Do events of one connection, at most one per CRM record: how many ended "done",
        "retry" or "dead". The records are read in one call and written in one call where
        the CRM allows; the round's write intents are saved together before the write.
        `auths` holds the round's token renewal of each connection (made when missing)."""
        outcomes: Counter[str] = Counter()
        try:
            first = events[0]
            link, mapping, adapter = self._setup(
                first["connection_id"], first["kind"], {} if auths is None else auths
            )
        except Exception as error:
            return Counter(self._fail(event, error) for event in events)
        if link["throttled_until"] > server.iso(self.clock()):  # another batch hit the limit
            return self._hold(events, link["throttled_until"], "waiting for the CRM's rate limit")
        notes: list[tuple[Row, str]] = []  # events done with nothing to write, and why
        reads: list[Triaged] = []
        now = self.clock()  # the round's time: its records' enriched_at, its freshness checks
        cache = store.records(
            self.db, link["id"], first["kind"], [event["record_id"] for event in events]
        )
        limit: Retriable | None = None  # the CRM's rate limit, once an action met it
        for event in events:
            if limit is not None:
                outcomes[self._fail(event, limit)] += 1
                continue
            try:
                payload = json.loads(event["payload"])
                if PLATFORMS[link["platform"]].is_action(payload):
                    note = self._complete(event, link, mapping, adapter)
                    with server.write(self.db):  # at once: the action must not complete twice
                        store.finish_event(self.db, event["id"], "done", note)
                    outcomes["done"] += 1
                    continue
                triaged = self._triage(event, payload, link, mapping, cache, now)
            except Exception as error:
                outcomes[self._fail(event, error)] += 1
                limit = error if isinstance(error, Retriable) and error.throttled else None
                continue
            if isinstance(triaged, Triaged):
                reads.append(triaged)
            else:
                notes.append((event, triaged))
        if limit is not None:  # read nothing more while the CRM refuses
            outcomes.update(self._fail(triaged.event, limit) for triaged in reads)
            reads = []
        planned: list[Planned] = []
        platform = PLATFORMS[link["platform"]]
        linking = first["kind"] == "contacts" and "companies" in platform.objects
        also = [platform.company_link] if linking and platform.company_link else []
        for triaged, current in self._read(adapter, mapping, reads, outcomes, also):
            try:
                plan = self._plan(triaged, current, link, mapping, now)
            except Exception as error:
                outcomes[self._fail(triaged.event, error)] += 1
                continue
            if isinstance(plan, Planned):
                planned.append(plan)
            else:
                notes.append((triaged.event, plan))
        cancelled = [event["record_id"] for event, note in notes if note == suppression.SUPPRESSED]
        with server.write(self.db):  # the intents first: a kill from here on is finished later
            store.finish_events(self.db, [(event["id"], "done", note) for event, note in notes])
            store.clear_pending(self.db, link["id"], first["kind"], cancelled)
            store.save_records(self.db, [plan.saving for plan in planned if plan.saving])
            store.add_events(self.db, [plan.company for plan in planned if plan.company])
        outcomes["done"] += len(notes)
        return outcomes + self._write(link, adapter, planned)

    def setup(self, connection_id: str, kind: str) -> tuple[Row, mappings.Mapping, Adapter]:
        """The connection, the mapping of its `kind` of records and its adapter for them, as
        the worker uses them (a backfill lists records with them); Permanent when it has none."""
        return self._setup(connection_id, kind, {})

    def _setup(
        self, connection_id: str, kind: str, auths: Auths
    ) -> tuple[Row, mappings.Mapping, Adapter]:
        """The connection, the mapping of its `kind` of records and its adapter for them."""
        link = store.connection(self.db, connection_id)
        if link is None:
            raise Permanent("the connection was removed")
        platform = PLATFORMS[link["platform"]]
        if not platform.crm:
            raise Permanent(f"{platform.title} is not a CRM: nothing is written back")
        if kind not in platform.objects:
            raise Permanent(f"{platform.title} has no {kind} the connector enriches")
        mapping = store.mapping_in_use(self.db, link, platform.mapping_file_for(kind), kind)
        token = store.crm_token(self.secret, link)
        if connection_id not in auths:
            auths[connection_id] = store.crm_auth(self.db, self.secret, link, self.clock)
        # The URL was checked when saved; the client checks each address as it connects.
        auth = auths[connection_id]
        adapter = platform.adapter(link["crm_base_url"], token, self.client, auth, kind)
        return link, mapping, adapter

    def _triage(
        self,
        event: Row,
        payload: Row,
        link: Row,
        mapping: mappings.Mapping,
        cache: dict[str, Row],
        now: datetime,
    ) -> Triaged | str:
        """What an event (its `payload` parsed) needs before the CRM is read: a note when
        nothing is to be done (our own write echoed back, a full record unchanged since we
        enriched it). `cache` holds the transaction cache entries of the round's records."""
        record_id = event["record_id"]
        if not record_id:
            raise Permanent("the event names no CRM record")
        cached = cache.get(record_id)
        ours = json.loads(cached["written"]) if cached else {}
        if cached and cached["pending"]:  # killed while writing: finish that write
            return Triaged(event, record_id, {}, cached, ours, json.loads(cached["pending"]))
        if echoed := PLATFORMS[link["platform"]].echo(payload, ours):
            return f"our own write of {echoed} echoed back: ignored"
        if (
            not event["thin"]
            and cached
            and _fresh(cached, mapping.enrich_input(payload), ours, now)
        ):
            return f"unchanged since {cached['enriched_at']}: not enriched again"
        return Triaged(event, record_id, payload, cached, ours)

    def _read(
        self,
        adapter: Adapter,
        mapping: mappings.Mapping,
        reads: list[Triaged],
        outcomes: Counter[str],
        also: list[str],
    ) -> list[tuple[Triaged, Row]]:
        """The records' current values (and the properties `also` names), read in as few
        calls as the CRM allows; events whose record could not be read are failed (counted
        in `outcomes`)."""
        if not reads:
            return []
        try:
            properties = list(dict.fromkeys([*readable(mapping), *also]))
            found = _fetch(adapter, [t.record_id for t in reads], properties)
        except Exception as error:  # the whole call: every event waits or fails alike
            outcomes.update(self._fail(t.event, error) for t in reads)
            return []
        read: list[tuple[Triaged, Row]] = []
        for triaged in reads:
            current = found.get(triaged.record_id, Permanent("the CRM did not answer for it"))
            if isinstance(current, Permanent):
                outcomes[self._fail(triaged.event, current)] += 1
            else:
                read.append((triaged, current))
        return read

    def _plan(
        self, triaged: Triaged, current: Row, link: Row, mapping: mappings.Mapping, now: datetime
    ) -> Planned | str:
        """What to write back for one read record, with the transaction cache entry to save
        before the write; or, when nothing is to be written, a note saying why. `now` is the
        round's time."""
        event, cached, ours = triaged.event, triaged.cached, triaged.ours
        if triaged.resume is not None:
            held = suppression.of_intent(mapping, triaged.resume)
            if self.suppressed([*server.named_in_input(mapping.enrich_input(current)), *held]):
                return suppression.SUPPRESSED  # the pending write is cancelled
            return Planned(event, triaged.record_id, triaged.resume, current)
        # what the event carries wins; the rest (a Salesforce Outbound Message without the
        # e-mail field ticked) as the CRM holds it
        given = mapping.enrich_input({**current, **triaged.payload})
        if event["event_key"].startswith(COMPANY_OF):  # the worker's own (_company_event)
            outcome = server.Outcome(
                triaged.payload["transaction_id"], triaged.payload["result"], 0
            )
        else:
            refresh = triaged.payload.get("refresh") is True  # queued again: no skip
            if cached and not refresh and _fresh(cached, given, ours, now):
                return f"unchanged since {cached['enriched_at']}: not enriched again"
            allowed = self._enrich_allowed(link, event, given)
            if allowed is None:
                return suppression.SUPPRESSED
            outcome = allowed
        changes = mapping.changes(outcome.result, current, ours)
        input_print = fingerprint(given, {**ours, **changes})
        at = server.iso(now)
        row = cache_row(triaged.event, outcome, input_print, ours, at)
        saving = {**row, "pending": json.dumps(changes)}
        company = _company_event(PLATFORMS[link["platform"]], event, current, outcome, at)
        return Planned(event, triaged.record_id, changes, current, saving, company,
                       _unwritten(outcome.result, mapping))  # fmt: skip

    def _complete(self, event: Row, link: Row, mapping: mappings.Mapping, adapter: Adapter) -> str:
        """Enrich a BLOCKed action's record (a HubSpot custom workflow action) and complete
        the action with the output fields (failed with the reason when nothing could be
        enriched; an organization out of credits waits for them while attempts remain)."""
        platform: Platform = PLATFORMS[link["platform"]]
        request = json.loads(event["payload"])
        try:
            outcome = self._enrich_allowed(link, event, mapping.enrich_input(request))
            answer = (
                platform.action_failed(suppression.SUPPRESSED)
                if outcome is None
                else platform.action_succeeded(mapping.outputs(outcome.result))
            )
        except server.ServiceError as error:
            if error.code == "insufficient_credits" and event["attempts"] + 1 < MAX_ATTEMPTS:
                raise
            answer = platform.action_failed(error.message)
        return f"action completed: {platform.complete_action(adapter, request, answer)}"

    def suppressed(self, found: list[Any]) -> bool:
        """Whether any of these identifiers of a person is on the suppression list."""
        hashes = server.privacy.hashes(server.privacy.hasher(self.secret), found)
        return bool(server.suppressed(self.db, hashes))

    def _enrich_allowed(self, link: Row, event: Row, given: Row) -> server.Outcome | None:
        """`_enrich`, unless the input or the person found is on the suppression list: then
        None (not enriched when the input names them, nothing returned when the result does)."""
        if self.suppressed(server.named_in_input(given)):
            return None
        outcome = self._enrich(link, event, given)
        return None if self.suppressed(server.named_in_result(outcome.result)) else outcome

    def _enrich(self, link: Row, event: Row, given: Row) -> server.Outcome:
        """Enrich as the connection's organization; the transaction id comes from the event,
        so doing it again is not charged again."""
        transaction_id = str(uuid.uuid5(_EVENTS, f"{link['id']}:{event['event_key']}"))
        return self.enrich(link, given, transaction_id, f"/hooks/{link['id']}/events")

    def enrich(self, link: Row, given: Row, transaction_id: str, endpoint: str) -> server.Outcome:
        """Enrich `given` as the connection's organization with its key, charged and recorded
        as an API call (once per `transaction_id`) under `endpoint`."""
        return server.enrich_with_key(
            self.db,
            self.secret,
            store.unseal(self.secret, link["api_key_sealed"]),
            given,
            self.clock(),
            transaction_id,
            endpoint,
        )

    def _write(self, link: Row, adapter: Adapter, planned: list[Planned]) -> Counter[str]:
        """Send what of each plan's intent the CRM does not hold yet, in one call where the
        CRM allows, then record each record's outcome."""
        unsent = {plan.record_id: plan.unsent() for plan in planned}
        try:
            results = _send(adapter, {key: values for key, values in unsent.items() if values})
        except Exception as failure:  # the whole call: each unsent record waits or fails alike
            results = {key: failure for key, values in unsent.items() if values}
        outcomes: Counter[str] = Counter()
        failed = [plan for plan in planned if isinstance(results.get(plan.record_id), Exception)]
        for plan in failed:
            outcomes[self._fail(plan.event, results[plan.record_id])] += 1
        writes: list[tuple[str, Row]] = []  # record -> what it now holds of ours
        finished: list[tuple[int, str, str]] = []
        sent: dict[int, Row] = {}  # event -> what it wrote, for Deliveries
        for plan in planned:
            result = results.get(plan.record_id, WriteResult({}))
            if isinstance(result, WriteResult):
                written = {k: v for k, v in plan.intent.items() if k not in result.dropped}
                writes.append((plan.record_id, written))
                dropped = [f"{name}: {why}" for name, why in result.dropped.items()]
                finished.append((plan.event["id"], "done", "; ".join(dropped) or plan.note))
                wrote = unsent[plan.record_id]
                sent[plan.event["id"]] = {k: v for k, v in wrote.items() if k in written}
        if writes:
            kind = planned[0].event["kind"]  # a batch is of one kind of record
            with server.write(self.db):
                store.records_written(self.db, link["id"], kind, writes)
                store.finish_events(self.db, finished, sent)
        outcomes["done"] += len(finished)
        return outcomes

    def _fail(self, event: Row, error: Exception) -> str:
        """Postpone or bury an event after `error`: "retry" or "dead"."""
        if isinstance(error, Retriable) and error.throttled:
            return self._throttle(event, error)
        if isinstance(error, Retriable):
            return self._postpone(event, error.reason, error.retry_after)
        if isinstance(error, Permanent):
            return self._bury(event, error.reason)
        if isinstance(error, server.ServiceError):
            if error.code == "insufficient_credits":
                return self._postpone(event, error.message, NO_CREDITS_WAIT_SECONDS)
            return self._bury(event, f"{error.code}: {error.message}")
        if isinstance(error, EXPECTED):
            return self._bury(event, str(error))
        log.error("event %s failed unexpectedly", event["id"], exc_info=error)
        return self._postpone(event, f"internal error ({type(error).__name__}), logged", None)

    def _postpone(self, event: Row, reason: str, retry_after: float | None) -> str:
        if event["attempts"] + 1 >= MAX_ATTEMPTS:
            return self._bury(event, f"gave up after {MAX_ATTEMPTS} attempts: {reason}")
        wait = max(retry_after or 0.0, self.backoff(event["attempts"]))
        due = server.iso(self.clock() + timedelta(seconds=wait))
        with server.write(self.db):
            store.postpone_event(self.db, event["id"], due, reason)
        return "retry"

    def _throttle(self, event: Row, limit: Retriable) -> str:
        """The CRM's rate limit refused a call for `event`: hold its connection, and the event
        with it, until the time the CRM stated (THROTTLED_WAIT_SECONDS when it stated none)."""
        wait = THROTTLED_WAIT_SECONDS if limit.retry_after is None else limit.retry_after
        until = server.iso(self.clock() + timedelta(seconds=wait))
        with server.write(self.db):
            store.throttle_connection(self.db, event["connection_id"], until)
        self._hold([event], until, limit.reason)
        return "retry"

    def _hold(self, events: list[Row], until: str, reason: str) -> Counter[str]:
        """Make `events` due at `until` without counting an attempt: all "retry"."""
        with server.write(self.db):
            store.hold_events(self.db, [event["id"] for event in events], until, reason)
        return Counter(retry=len(events))

    def _bury(self, event: Row, reason: str) -> str:
        with server.write(self.db):
            store.finish_event(self.db, event["id"], "dead", reason)
        server.metrics.dead_letter()
        return "dead"

    def backoff(self, attempts: int) -> float:
        """Seconds to wait after `attempts` failures: capped exponential, full jitter."""
        ceiling = min(BACKOFF_CAP_SECONDS, BACKOFF_FIRST_SECONDS * 2**attempts)
        return self.rng.uniform(ceiling / 2, ceiling)


def _unwritten(result: Row, mapping: mappings.Mapping) -> str:
    """Why an enrichment writes nothing whatever the record holds, for Deliveries: no match,
    or a match below the mapping's minimum grade ("" otherwise)."""
    grade = str(result.get("accuracy") or "")
    if not grade:
        return "nothing written: no match was found"
    graded = mappings.below_minimum(grade, mapping.minimum_grade)
    return f"nothing written: {graded}" if graded else ""


def readable(mapping: mappings.Mapping) -> list[str]:
    """The CRM properties to read: those written back, and the plain input paths (for
    events that carry only the record's id)."""
    plain = [path for paths in mapping.input.values() for path in paths if "." not in path]
    return list(dict.fromkeys([*(rule.property for rule in mapping.output), *plain]))


def _company_event(
    platform: Platform, event: Row, contact: Row, outcome: server.Outcome, now: str
) -> Row | None:
    """For a contact whose company matched and whose CRM record links a company record: an
    event giving that record the company's fields of this enrichment (no second charge),
    stored with the contact's write intent, so a kill loses neither. None otherwise."""
    if event["kind"] != "contacts" or "companies" not in platform.objects:
        return None
    company_id = platform.linked_company(contact)
    if not company_id or not outcome.result.get("compGUID"):
        return None
    fields = {k: v for k, v in outcome.result.items() if k.startswith("comp")}
    result = {**fields, "recordStatus": "Active", "accuracy": outcome.result.get("accuracy", "")}
    payload = {"via_contact": event["record_id"], "transaction_id": outcome.transaction_id}
    return {
        "connection_id": event["connection_id"],
        "kind": "companies",
        "event_key": f"{COMPANY_OF}{outcome.transaction_id}",
        "record_id": company_id,
        "payload": json.dumps({**payload, "result": result}),
        "thin": 1,
        "received_at": now,
    }


def _fresh(cached: Row, given: Row, ours: Row, now: datetime) -> bool:
    """Whether the record was enriched within FRESH_FOR of `now` from the same input: then an
    event (our own write echoed back, a user editing another field) needs no enrich."""
    recent = cached["enriched_at"] >= server.iso(now - FRESH_FOR)
    return recent and cached["input_fingerprint"] == fingerprint(given, ours)


def fingerprint(given: Row, ours: Row) -> str:
    """The enrich input as the user gave it: inputs holding a value we wrote (a company name
    we filled in) are left out, so our own write does not count as a change."""
    written = {str(value) for value in ours.values()}
    return json.dumps({k: v for k, v in given.items() if v not in written}, sort_keys=True)


def cache_row(event: Row, outcome: server.Outcome, fingerprint: str, written: Row, now: str) -> Row:
    """The transaction cache entry after enriching the record of `event`."""
    return {
        "connection_id": event["connection_id"],
        "kind": event["kind"],
        "record_id": event["record_id"],
        "transaction_id": outcome.transaction_id,
        "contact_guid": outcome.result.get("conGUID", ""),
        "company_guid": outcome.result.get("compGUID", ""),
        "input_fingerprint": fingerprint,
        "written": json.dumps(written),
        "enriched_at": now,
    }


@dataclass(frozen=True)
class Triaged:
    """An event whose record must be read: its payload, its transaction cache entry and
    what we wrote last, and the intent of a write a kill interrupted (to finish it)."""

    event: Row
    record_id: str
    payload: Row
    cached: Row | None
    ours: Row
    resume: Row | None = None


@dataclass(frozen=True)
class Planned:
    """An event's write-back: the values to hold (`intent`), what the CRM holds now, and
    the transaction cache entry to save (with the intent) before writing."""

    event: Row
    record_id: str
    intent: Row
    current: Row
    saving: Row | None = None  # None when finishing a saved intent
    company: Row | None = None  # the event giving its company record the company's fields
    note: str = ""  # why nothing is written, when the match is below the minimum grade

    def unsent(self) -> Row:
        """What of the intent the CRM does not hold yet (in whatever form it holds it)."""
        return {k: v for k, v in self.intent.items() if not mappings.same(v, self.current.get(k))}


def _batches(events: list[Row]) -> list[list[Row]]:
    """Due events in batches of one connection and kind of record each, at most one event per
    CRM record in a batch (a record's later events go in later batches, in order)."""
    rounds: list[dict[tuple[str, str], list[Row]]] = []
    seen: Counter[tuple[str, str, str]] = Counter()
    for event in events:
        batch = (event["connection_id"], event["kind"])
        record = event["record_id"] or f"event {event['id']}"
        turn = seen[(*batch, record)]
        seen[(*batch, record)] += 1
        if turn == len(rounds):
            rounds.append({})
        rounds[turn].setdefault(batch, []).append(event)
    return [batch for turn in rounds for batch in turn.values()]


def _fetch(
    adapter: Adapter, record_ids: list[str], properties: list[str]
) -> dict[str, Row | Permanent]:
    """Read records: one by its own read, several by the CRM's batch read; a batch read
    refused as a whole (one malformed id can do that) is read again record by record, so
    the others are not failed with it."""
    if len(record_ids) != 1:
        try:
            return adapter.read_many(record_ids, properties)
        except Permanent as refused:
            if refused.reason == TOKEN_REFUSED:  # the same for every record: no use asking
                raise
            return read_each(adapter.read, record_ids, properties)
    try:
        return {record_ids[0]: adapter.read(record_ids[0], properties)}
    except Permanent as failure:
        return {record_ids[0]: failure}


def _send(adapter: Adapter, changes: dict[str, Row]) -> dict[str, WriteResult | Exception]:
    """Write `changes` (record -> values): one record by its own update, several by the
    CRM's batch update. A batch update refused as a whole (HubSpot refuses every contact of a
    batch for one contact's invalid value) is sent again record by record, so the others are
    not failed with it."""
    if len(changes) != 1:
        results = adapter.write_many(changes) if changes else {}
        return _write_each(adapter, changes) if _refused_as_a_whole(results) else results
    ((record_id, values),) = changes.items()
    try:
        return {record_id: adapter.write(record_id, values)}
    except Permanent as failure:
        return {record_id: failure}


def _refused_as_a_whole(results: dict[str, WriteResult | Permanent]) -> bool:
    """Whether several records were all refused for one reason (not an expired token: the
    same for each record, no use asking again)."""
    reasons = {r.reason if isinstance(r, Permanent) else None for r in results.values()}
    return len(results) > 1 and len(reasons) == 1 and not reasons & {None, TOKEN_REFUSED}


def _write_each(adapter: Adapter, changes: dict[str, Row]) -> dict[str, WriteResult | Exception]:
    """Each record by its own update; a Retriable failure is that record's outcome and the
    rest's, which are not sent (the CRM would answer them alike)."""
    results: dict[str, WriteResult | Exception] = {}
    for record_id, values in changes.items():
        try:
            results[record_id] = adapter.write(record_id, values)
        except Permanent as failure:
            results[record_id] = failure
        except Retriable as failure:
            return {**results, **{key: failure for key in changes if key not in results}}
    return results
