"""Changes in the contact data reaching the CRM records enriched from them (issue 39): the change
job that turns each connection's new changes into refresh events and job-change signals, the
writing of each signal's actions (mark, task, new contact) through the CRM adapters, and the
one pure function that says what a signal writes, which the preview shows.

Design (docs/changes.md says it for admins):

- Each connection keeps the number of the last service change it acted on (`changes_seen`).
  A round reads the changes numbered after it, a page (`PAGE`) at a time, oldest first, and
  finds the CRM records of the connection that hold each one: a contact's changes reach the
  records enriched from that contact (records.contact_guid), a company's firmographics the
  records enriched from that company (records.company_guid); a record enriched after the
  change was recorded already holds it and is left out (so a new connection, whose
  `changes_seen` starts at 0, is not sent the whole history).
- Each such record gets one refresh event per page (the thin event the reenrich job queues,
  keyed `change:<last change id of the record in the page>:<record>`, so running a round
  again adds nothing): the worker reads the record, enriches it again and writes back what
  the mapping's policies allow, in batch updates where the CRM has them.
- A refresh is free where the tier refreshes for nothing (server.FREE_REFRESH_TIERS, for a
  record with a matched contact); otherwise it costs a credit, and a round spends at most
  the connection's change credit cap (signal_settings.credit_cap) and never more than the
  organization's balance. The change whose records the budget cannot pay for, and every later
  one, waits for the next round: `changes_seen` only advances past changes queued or held by
  no record.
- A job_ended change whose old company is the company the CRM record names (its
  company_guid) is a 'left' signal on that record; a job_started change at a company that is
  a `companies` record of the connection is a 'joined' signal on that company record. Each is
  stored once (signals' unique key), then acted on per signal_settings.actions_for: `mark`
  (the mapping's jobChange* rules, under their policies), `task` (for the record's owner)
  and `new_contact` (the person at the new company, linked to the old record by a note).
  Each action is recorded in signals.written as it is done, so a retry does only the rest.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlite_utils import Database

import server
from connector import connections, mappings, signal_settings, store, worker
from connector.platforms.base import Adapter, NewContact, Permanent, Retriable, Task

PAGE = 1000  # changes read at a time
SIGNALS_A_ROUND = 500  # signals a round acts on, a connection
PERSON_KINDS = ("contacts", "leads")  # the kinds of record that are a person
THROTTLED = "throttled"  # a signal left pending by the CRM's rate limit (its connection waits)
Row = dict[str, Any]


@dataclass
class Tally:
    """What a round did: refresh events queued, records held back by credits, signals found."""

    queued: int = 0
    held: int = 0
    signals: int = 0

    def add(self, other: Tally) -> None:
        self.queued, self.held = self.queued + other.queued, self.held + other.held
        self.signals += other.signals


def act_on_changes(db: Database, now: datetime, page: int = PAGE) -> str:
    """For each CRM connection of an active organization, turn the changes after its
    `changes_seen` into refresh events and signals (see the module docstring); a summary."""
    total = Tally()
    for org_id, links in connections.crm_connections(db).items():
        org = server.organization(db, org_id)
        if org["status"] != "active":
            continue
        free = org["tier"] in server.FREE_REFRESH_TIERS
        balance = org["credits"]
        for link in links:
            budget = signal_settings.credit_cap(link)
            budget = budget if balance is None else max(0, min(budget, balance))
            tally, spent = _connection_round(db, link, free, budget, now, page)
            balance = None if balance is None else balance - spent
            total.add(tally)
    return (
        f"{total.queued} records queued for refresh from changes, {total.signals} job changes"
        + (f", {total.held} held back by the credit cap or balance" if total.held else "")
    )


def _connection_round(
    db: Database, link: Row, free: bool, budget: int, now: datetime, page: int
) -> tuple[Tally, int]:
    """One connection's round, page by page; what it did and the credits it committed."""
    tally, spent, seen = Tally(), 0, link["changes_seen"]
    while True:
        batch = server.changes.since(db, seen, page)
        if not batch:
            break
        chosen = _chosen(db, link, batch, free, budget - spent)
        with server.write(db):
            tally.queued += store.add_events(db, chosen.events(now))
            tally.signals += store.add_signals(db, _signals(db, link, chosen, batch, now))
            store.set_changes_seen(db, link["id"], chosen.last)
        spent += chosen.spent
        tally.held += chosen.held
        if chosen.held or len(batch) < page or chosen.last == seen:
            break
        seen = chosen.last
    return tally, spent


@dataclass
class Chosen:
    """A page's changes acted on: the records to refresh (key -> record, last change id),
    the changes acted on, the last of them, credits committed and records held back."""

    refresh: dict[tuple[str, str], tuple[Row, int]] = field(default_factory=dict)
    changes: list[server.changes.Change] = field(default_factory=list)
    holders: dict[str, list[Row]] = field(default_factory=dict)
    last: int = 0
    spent: int = 0
    held: int = 0

    def events(self, now: datetime) -> list[Row]:
        """A refresh event for each record, keyed by its last change."""
        return [
            worker.refresh_event(row, f"change:{change_id}", now)
            for row, change_id in self.refresh.values()
        ]


def _chosen(
    db: Database, link: Row, batch: list[server.changes.Change], free: bool, budget: int
) -> Chosen:
    """The changes of `batch` to act on within `budget` credits, in order: a change whose new
    records cannot be paid for ends the page (held, with every later one)."""
    holders = _holders(db, link["id"], batch)
    chosen = Chosen(holders=holders, last=batch[0].id - 1)
    for change in batch:
        holding = _holding(change, holders)
        rows = [row for row in holding if _key(row) not in chosen.refresh]
        cost = sum(not (free and row["contact_guid"]) for row in rows)
        if cost > budget - chosen.spent:
            chosen.held = len(rows)
            break
        chosen.spent += cost
        for row in holding:
            chosen.refresh[_key(row)] = (row, change.id)
        chosen.changes.append(change)
        chosen.last = change.id
    return chosen


def _holders(
    db: Database, connection_id: str, batch: list[server.changes.Change]
) -> dict[str, list[Row]]:
    """The connection's records by the contact or company GUID they were enriched from
    (`c:` or `k:` before it), for the GUIDs `batch` names."""
    contacts = [c.contact_guid for c in batch if c.contact_guid]
    companies = [c.company_guid for c in batch if c.kind == "company" and c.company_guid]
    companies += [c.after.get("company_guid", "") for c in batch if c.kind == "job_started"]
    found: dict[str, list[Row]] = {}
    for row in store.records_of(db, connection_id, "contact_guid", contacts):
        found.setdefault(f"c:{row['contact_guid']}", []).append(row)
    for row in store.records_of(db, connection_id, "company_guid", [g for g in companies if g]):
        found.setdefault(f"k:{row['company_guid']}", []).append(row)
    return found


def _holding(change: server.changes.Change, holders: dict[str, list[Row]]) -> list[Row]:
    """The records a change reaches: a company's (firmographics), else the person's."""
    if change.kind == "company":
        return _before(change, holders.get(f"k:{change.company_guid}", []))
    return _before(change, holders.get(f"c:{change.contact_guid}", []))


def _before(change: server.changes.Change, rows: list[Row]) -> list[Row]:
    """The records enriched before the change was recorded (one enriched since holds it)."""
    return [row for row in rows if row["enriched_at"] < change.recorded_at]


def _key(row: Row) -> tuple[str, str]:
    return (row["kind"], row["record_id"])


# --- job-change signals


def _signals(
    db: Database, link: Row, chosen: Chosen, batch: list[server.changes.Change], now: datetime
) -> list[Row]:
    """The 'left' and 'joined' signals among the changes acted on, each with the person's
    name as the data holds it."""
    found: list[Row] = []
    for change in chosen.changes:
        if change.kind == "job_ended":
            started = _started(db, change, batch)
            for row in _before(change, chosen.holders.get(f"c:{change.contact_guid}", [])):
                if row["kind"] in PERSON_KINDS and row["company_guid"] == change.before.get(
                    "company_guid"
                ):
                    found.append(_signal(link, row, change, "left", started, now))
        elif change.kind == "job_started":
            guid = change.after.get("company_guid", "")
            for row in _before(change, chosen.holders.get(f"k:{guid}", []) if guid else []):
                if row["kind"] == "companies":
                    found.append(_signal(link, row, change, "joined", change, now))
    names = server.contact_names(db, sorted({row["contact_guid"] for row in found}))
    return [{**row, "person": names.get(row["contact_guid"], "")} for row in found]


def _started(
    db: Database, ended: server.changes.Change, batch: list[server.changes.Change]
) -> server.changes.Change | None:
    """The new job recorded with a job's end (same contact, same import), if any."""
    later = [c for c in batch if c.id > ended.id and c.contact_guid == ended.contact_guid]
    if not later or later[-1].id == batch[-1].id:  # the page may end before it: ask
        later = server.changes.since(db, ended.id, 20, contacts=[ended.contact_guid])
    for change in later:
        if change.kind == "job_started" and change.recorded_at == ended.recorded_at:
            return change
    return None


def _signal(
    link: Row,
    record: Row,
    change: server.changes.Change,
    signal: str,
    started: server.changes.Change | None,
    now: datetime,
) -> Row:
    new = started.after if started else {}
    return {
        "connection_id": link["id"],
        "kind": record["kind"],
        "record_id": record["record_id"],
        "contact_guid": change.contact_guid,
        "change_id": change.id,
        "signal": signal,
        "old_company": change.before.get("company", "") if signal == "left" else "",
        "new_company": new.get("company", ""),
        "new_company_guid": new.get("company_guid", ""),
        "new_title": new.get("job_title", ""),
        "changed_on": change.after.get("left_on") or new.get("started_on") or change.changed_on,
        "created_at": server.iso(now),
    }


@dataclass(frozen=True)
class SignalWrites:
    """What a signal writes in the CRM: the record's mark properties, a task for its owner,
    the person as a new contact; and why an action chosen writes nothing."""

    marks: dict[str, Any] = field(default_factory=dict)
    task: Task | None = None
    contact: NewContact | None = None
    skipped: dict[str, str] = field(default_factory=dict)

    def shown(self) -> Row:
        """As plain data (signals.written, the preview)."""
        return {
            "marks": self.marks,
            "task": asdict(self.task) if self.task else None,
            "contact": asdict(self.contact) if self.contact else None,
            "skipped": self.skipped,
        }


def signal_writes(
    signal: Row,
    actions: Iterable[str],
    mapping: mappings.Mapping,
    current: Row,
    ours: Row,
) -> SignalWrites:
    """What `signal` writes, given the admin's `actions`, the record's mapping, its `current`
    CRM values and `ours` (what we last wrote there): pure, the one function the change job
    and the preview share."""
    chosen = set(actions)
    person = person_of(mapping, current) or signal.get("person", "")
    skipped: dict[str, str] = {}
    marks = _marks(signal, mapping, current, ours) if "mark" in chosen else {}
    if "mark" in chosen and not marks:
        skipped["mark"] = (
            "no jobChange* rule of the mapping writes (or may write) here"
            if signal["signal"] == "left"
            else "a person who joined has no record of their own here to mark"
        )
    task = _task(signal, person) if "task" in chosen else None
    contact = None
    if "new_contact" in chosen:
        contact = _new_contact(signal, mapping, current)
        if contact is None:
            skipped["new_contact"] = (
                "the person's name is not known here, or no new company"
                if signal["signal"] == "left"
                else "a person who joined is named in the task, not added as a contact"
            )
    return SignalWrites(marks, task, contact, skipped)


def signal_values(signal: Row) -> Row:
    """A signal as the jobChange* fields a mapping's mark rules read."""
    return {
        "jobChangeLeftOn": signal["changed_on"] if signal["signal"] == "left" else "",
        "jobChangeNewCompany": signal["new_company"],
        "jobChangeNewTitle": signal["new_title"],
    }


def _marks(signal: Row, mapping: mappings.Mapping, current: Row, ours: Row) -> Row:
    """The mark rules' properties to write, under their policies."""
    if signal["signal"] != "left":
        return {}
    values = signal_values(signal)
    written: Row = {}
    for rule in mapping.output:
        if rule.field not in mappings.SIGNAL_FIELDS or mappings.is_empty(values[rule.field]):
            continue
        value = rule.transformed(values[rule.field])
        name = rule.property
        if not mappings.skip_reason(rule.policy, value, current.get(name), ours.get(name)):
            written[name] = value
    return written


def person_of(mapping: mappings.Mapping, current: Row) -> str:
    """The person a record names (first and last name, else full name, else e-mail), or ''."""
    first, last = _names(mapping.enrich_input(current))
    return f"{first} {last}".strip() or str(mapping.enrich_input(current).get("conEmail") or "")


def _names(given: Row) -> tuple[str, str]:
    """A first and a last name from an enrich input: its own, else its full name split at
    the last space (Pipedrive keeps one name)."""
    first, last = (str(given.get(k) or "").strip() for k in ("conFirstName", "conLastName"))
    if not (first or last):
        first, _, last = str(given.get("conFullName") or "").strip().rpartition(" ")
    return first, last


def _task(signal: Row, person: str) -> Task:
    """The task for the record's owner."""
    who = person or "A person"
    due = signal["created_at"][:10]
    new = f"{signal['new_title']} at {signal['new_company']}".strip(" at")
    if signal["signal"] == "left":
        subject = f"{who} left {signal['old_company'] or 'their company'}"
        body = f"{who} left {signal['old_company']} on {signal['changed_on']}" + (
            f"; now {new}." if new else "."
        )
        return Task(subject, body + " Reach them at their new company; find who takes over.", due)
    subject = f"New contact at {signal['new_company'] or 'this account'}"
    body = f"{who} joined {signal['new_company']} on {signal['changed_on']}" + (
        f" as {signal['new_title']}." if signal["new_title"] else "."
    )
    return Task(subject, body, due)


def _new_contact(signal: Row, mapping: mappings.Mapping, current: Row) -> NewContact | None:
    """The person at the new company, linked to the old record; None without a name or
    a new company."""
    first, last = _names(mapping.enrich_input(current))
    if signal["signal"] != "left" or not last or not signal["new_company"]:
        return None
    note = (
        f"{first} {last} left {signal['old_company']} on {signal['changed_on']}; this is their "
        f"new job. The record at {signal['old_company']} is {signal['record_id']}."
    )
    due = signal["created_at"][:10]
    return NewContact(first, last, signal["new_title"], signal["new_company"], note, due)


# --- acting on signals


def write_signals(work: worker.Worker, limit: int = SIGNALS_A_ROUND) -> str:
    """Do the chosen actions of each connection's pending signals through its CRM adapter,
    recording what each wrote (signals.written), its state and any error; a summary."""
    counts = {"written": 0, "skipped": 0, "failed": 0, "pending": 0}
    now = server.iso(work.clock())
    for link in store.connections(work.db):
        if link["paused_at"] or not link["crm_base_url"] or link["throttled_until"] > now:
            continue  # held, as the worker holds its events
        for signal in store.pending_signals(work.db, link["id"], limit):
            state = _act(work, link, signal)
            counts["pending" if state == THROTTLED else state] += 1
            if state == THROTTLED:  # the CRM's rate limit: the rest of its signals wait
                break
    return ", ".join(f"{n} signals {state}" for state, n in counts.items() if n) or "no signals"


def planned(work: worker.Worker, link: Row, signal: Row) -> tuple[Adapter, SignalWrites]:
    """The adapter of a signal's record and what the signal writes there now: the record read
    from the CRM, `signal_writes` under the connection's chosen actions (the preview shows
    exactly this)."""
    _, mapping, adapter = work.setup(link["id"], signal["kind"])
    cached = store.record(work.db, link["id"], signal["record_id"], signal["kind"]) or {}
    ours = json.loads(cached.get("written") or "{}")
    current = adapter.read(signal["record_id"], worker.readable(mapping))
    actions = signal_settings.actions_for(link, signal["kind"])
    return adapter, signal_writes(signal, actions, mapping, current, ours)


def _act(work: worker.Worker, link: Row, signal: Row) -> str:
    """Do one signal's remaining actions: its new state ("pending" when worth retrying)."""
    done = json.loads(signal["written"] or "{}")
    try:
        adapter, writes = planned(work, link, signal)
        steps = _steps(adapter, signal, writes)
        for action, do in steps:
            if action not in done:
                done[action] = do()
                _save(work.db, signal, "pending", done, "")
        if writes.marks:
            marked = [(signal["record_id"], writes.marks)]
            with server.write(work.db):
                store.records_written(work.db, link["id"], signal["kind"], marked)
        state = "written" if steps or done else "skipped"
        _save(work.db, signal, state, {**done, "skipped": writes.skipped}, "")
        return state
    except Retriable as error:
        _save(work.db, signal, "pending", done, error.reason)
        if not error.throttled:
            return "pending"
        wait = worker.THROTTLED_WAIT_SECONDS if error.retry_after is None else error.retry_after
        until = server.iso(work.clock() + timedelta(seconds=wait))
        with server.write(work.db):
            store.throttle_connection(work.db, link["id"], until)
        return THROTTLED
    except (Permanent, mappings.MappingError, store.UnsealError) as error:
        _save(work.db, signal, "failed", done, str(error))
        return "failed"


def _steps(adapter: Any, signal: Row, writes: SignalWrites) -> list[tuple[str, Any]]:
    """Each action to do: its name and a call doing it (returning what it wrote)."""
    record_id = signal["record_id"]
    steps: list[tuple[str, Any]] = []
    if writes.marks:
        steps.append(("marks", lambda: adapter.write(record_id, writes.marks).written))
    if writes.task:
        task = writes.task
        steps.append(("task", lambda: {**asdict(task), "id": adapter.create_task(record_id, task)}))
    if writes.contact:
        new = writes.contact
        steps.append(
            ("contact", lambda: {**asdict(new), "id": adapter.create_contact(new, record_id)})
        )
    return steps


def _save(db: Database, signal: Row, state: str, written: Row, error: str) -> None:
    with server.write(db):
        store.finish_signal(db, signal["id"], state, written, error)


def run(db: Database, work: worker.Worker, now: datetime) -> str:
    """The change job: act on the new changes, then on the pending signals."""
    return f"{act_on_changes(db, now)}; {write_signals(work)}"
