"""Preview, then apply (the settings page and `contactdata preview`): one CRM record, given by
its id or found by its e-mail, read and enriched as the worker would (charged like any
enrichment; a free refresh stays free) and shown rule by rule with the mapping's decision
(`mappings.Mapping.decisions`, the worker's own); the planned write is kept (the previews
table) so Apply sends exactly it, once, within LIFETIME of the preview, and records it in
the transaction cache as the worker does (our values are then recognized when they echo).
"""

from __future__ import annotations

import json
import secrets
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlite_utils import Database

import server
from connector import changes, mappings, outbound, store, worker
from connector.platforms.base import Adapter, Permanent, Retriable
from server import InvalidParameter, NotFound, ServiceError

JOB_CHANGES_SHOWN = 10  # job changes a preview shows
LIFETIME = timedelta(minutes=30)  # a preview older than this is shown again, not applied
_PREVIEWS = uuid.UUID("3c0e5b7a-9d21-4f6e-8b4a-7e2d1c5f9a30")  # transaction ids of previews
Row = dict[str, Any]


class CrmFailed(ServiceError):
    """The CRM refused or could not answer a call; the message says what it said."""

    status, code = 502, "crm_failed"


class AlreadyApplied(ServiceError):
    status, code = 409, "already_applied"


class PreviewExpired(ServiceError):
    status, code = 410, "preview_expired"


@dataclass(frozen=True)
class Preview:
    """A stored preview: its record, the rows shown (`mappings.Decision` as dicts), the write
    planned (property -> value), the credits the enrichment cost, and when it was applied."""

    id: str
    connection_id: str
    kind: str
    record_id: str
    rows: list[Row]
    planned: Row
    credits: int
    created_at: str
    applied_at: str | None
    outcome: str

    @property
    def graded_out(self) -> str:
        """Why nothing is written when the match is below the mapping's minimum grade ("")."""
        return next((r["reason"] for r in self.rows if r["reason"].startswith(mappings.BELOW)), "")

    @classmethod
    def of(cls, row: Row) -> Preview:
        """A previews table row as a Preview."""
        return cls(
            row["id"], row["connection_id"], row["kind"], row["record_id"],
            json.loads(row["rows"]), json.loads(row["planned"]), row["credits"],
            row["created_at"], row["applied_at"], row["outcome"],
        )  # fmt: skip


def show(
    work: worker.Worker,
    connection_id: str,
    kind: str,
    record_id: str = "",
    email: str = "",
    created_by: str = "",
) -> Preview:
    """Read a record (by id, else found by `email`), enrich it and store what a write would
    be; nothing is written to the CRM."""
    link, mapping, adapter = _setup(work, connection_id, kind)
    record_id = record_id.strip() or _find(adapter, email)
    current = _crm(lambda: adapter.read(record_id, worker.readable(mapping)), record_id)
    cached = store.record(work.db, connection_id, record_id, kind)
    ours = json.loads(cached["written"]) if cached else {}
    given = mapping.enrich_input(current)
    preview_id = secrets.token_urlsafe(18)
    transaction_id = str(uuid.uuid5(_PREVIEWS, preview_id))
    endpoint = f"/settings/connections/{connection_id}/preview"
    outcome = work.enrich(link, given, transaction_id, endpoint)
    decided = mapping.decisions(outcome.result, current, ours)
    planned = {d.property: d.value for d in decided if d.write}
    now = server.iso(work.clock())
    target = {"connection_id": connection_id, "kind": kind, "record_id": record_id}
    printed = worker.fingerprint(given, {**ours, **planned})
    saving = worker.cache_row(target, outcome, printed, ours, now)
    row = {
        **target, "id": preview_id, "rows": json.dumps([vars(d) for d in decided]),
        "planned": json.dumps(planned), "saving": json.dumps(saving),
        "credits": outcome.credits, "created_by": created_by, "created_at": now,
    }  # fmt: skip
    with server.write(work.db):
        store.save_preview(work.db, row)
    return Preview.of({**row, "applied_at": None, "outcome": ""})


def job_changes(
    work: worker.Worker, connection_id: str, limit: int = JOB_CHANGES_SHOWN
) -> list[tuple[Row, Row]]:
    """What the connection's job changes not written yet would write (the record's marks,
    the task, the new contact; connector/changes.py `planned`, as the change job builds it):
    each signal with its writes as plain data; nothing is written, nothing charged."""
    link = store.connection(work.db, connection_id)
    if link is None:
        raise NotFound(f"No connection {connection_id}.")
    shown = []
    for signal in store.pending_signals(work.db, connection_id, limit):
        try:
            _, writes = changes.planned(work, link, signal)
        except (Permanent, Retriable) as failure:
            raise CrmFailed(f"The CRM did not answer for record {signal['record_id']}: "
                            f"{failure.reason}") from None  # fmt: skip
        shown.append((signal, writes.shown()))
    return shown


def stored(db: Database, connection_id: str, preview_id: str) -> Preview:
    """A preview of this connection; NotFound for any other id."""
    row = store.preview(db, preview_id)
    if row is None or row["connection_id"] != connection_id:
        raise NotFound(f"No preview {preview_id} of this connection.")
    return Preview.of(row)


def apply(work: worker.Worker, connection_id: str, preview_id: str) -> Preview:
    """Write a preview's planned write through the adapter, once: claimed (marked applied)
    with the write's intent saved in one transaction, so a second Apply, a double click or a
    replayed form writes nothing (AlreadyApplied). A write the CRM refuses leaves the
    preview to apply again (CrmFailed)."""
    shown = stored(work.db, connection_id, preview_id)
    _, _, adapter = _setup(work, connection_id, shown.kind)
    _claim(work, shown)
    try:
        result = adapter.write(shown.record_id, shown.planned) if shown.planned else None
    except (Permanent, Retriable) as failure:
        with server.write(work.db):
            store.release_preview(work.db, preview_id, f"not written: {failure.reason}")
        raise CrmFailed(f"The CRM did not take the write: {failure.reason}") from None
    dropped = result.dropped if result else {}
    written = {k: v for k, v in shown.planned.items() if k not in dropped}
    outcome = _outcome(written, dropped)
    with server.write(work.db):
        store.records_written(work.db, connection_id, shown.kind, [(shown.record_id, written)])
        store.preview_applied(work.db, preview_id, outcome)
    return stored(work.db, connection_id, preview_id)


def lines(shown: Preview) -> list[str]:
    """A preview as text, a line a mapped property (`contactdata preview`)."""
    head = f"{shown.kind} record {shown.record_id}: {shown.credits} credit(s) charged"
    decided = [
        f"{row['property']}: skip ({row['reason']}); CRM {row['current']!r}, enriched "
        f"{row['value']!r}"
        if row["reason"]
        else f"{row['property']}: write {row['value']!r} over {row['current']!r}"
        for row in shown.rows
    ]
    return [head, *decided]


def _claim(work: worker.Worker, shown: Preview) -> None:
    """Mark the preview applied and save its intent in the transaction cache, as the worker
    saves one before writing (what we hold so far kept); or say why it cannot be applied."""
    now = work.clock()
    with server.write(work.db):
        claimed = store.claim_preview(
            work.db, shown.id, server.iso(now), server.iso(now - LIFETIME)
        )
        if claimed:
            row = store.preview(work.db, shown.id)
            assert row is not None
            cached = store.record(  # held: a worker's write meanwhile is not lost
                work.db, shown.connection_id, shown.record_id, shown.kind, lock=True
            )
            written = cached["written"] if cached else "{}"
            pending = json.dumps(shown.planned)
            saving = {**json.loads(row["saving"]), "written": written, "pending": pending}
            store.save_records(work.db, [saving])
    if claimed:
        return
    if shown.applied_at:
        raise AlreadyApplied(f"This preview was already applied at {shown.applied_at}.")
    raise PreviewExpired(
        f"This preview is older than {LIFETIME.seconds // 60} minutes: preview the record "
        "again to see what a write would change now."
    )


def _outcome(written: Row, dropped: dict[str, str]) -> str:
    """What an applied write did, one line."""
    said = f"wrote {', '.join(written) or 'nothing'}"
    refused = "; ".join(f"{name}: {why}" for name, why in dropped.items())
    return f"{said}; the CRM refused {refused}" if refused else said


def _setup(
    work: worker.Worker, connection_id: str, kind: str
) -> tuple[Row, mappings.Mapping, Adapter]:
    """The worker's setup of a connection's `kind` of records; its refusals as messages."""
    try:
        return work.setup(connection_id, kind)
    except Permanent as failure:
        raise InvalidParameter(f"Cannot preview {kind}: {failure.reason}.") from None
    except (mappings.MappingError, store.UnsealError, outbound.UnsafeUrl) as error:
        raise InvalidParameter(f"Cannot preview {kind}: {error}") from None


def _find(adapter: Adapter, email: str) -> str:
    """The id of the record whose e-mail is `email`; NotFound when the CRM has none."""
    if not email.strip():
        raise InvalidParameter("Give a CRM record id or an e-mail.")
    found = _crm(lambda: adapter.find(email), f"with e-mail {email.strip()}")
    if found is None:
        raise NotFound(f"The CRM has no record with the e-mail {email.strip()}.")
    return found


def _crm(call: Callable[[], Any], record: str) -> Any:
    """`call()`, its CRM failures as CrmFailed naming the record."""
    try:
        return call()
    except (Permanent, Retriable) as failure:
        raise CrmFailed(f"The CRM did not answer for record {record}: {failure.reason}") from None
