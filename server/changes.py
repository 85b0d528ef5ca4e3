"""What changed in the contact data, import by import: the kinds of change, and the record of
each one that readers (the connector's change job, `POST /v1/changes`) go through in order."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from server.storage import changes as changes_store

# A contact's job ended (`before`: company_guid, company name, job title; `after`: left on);
# a new job began (`after`: company_guid, company name, job title, started on); a field of a
# current job changed (`before` and `after`: that field); a company's firmographics changed
# (`contact_guid` '', `before`/`after`: the fields that changed).
KINDS = ("job_ended", "job_started", "title", "email", "phone", "location", "company")


@dataclass(frozen=True)
class Change:
    """One change, as recorded; `id` orders them (0 before it is recorded)."""

    kind: str
    contact_guid: str = ""
    company_guid: str = ""
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    changed_on: str = ""  # YYYY-MM-DD when the data says when it happened, else ''
    recorded_at: str = ""
    id: int = 0


def record(db: Any, changes: Iterable[Change], recorded_at: str) -> int:
    """Record `changes` (inside the caller's write transaction); how many."""
    rows = [
        (c.contact_guid, c.company_guid, c.kind, json.dumps(c.before), json.dumps(c.after),
         c.changed_on, recorded_at)
        for c in changes
    ]  # fmt: skip
    for change in rows:
        if change[2] not in KINDS:
            raise ValueError(f"unknown change kind {change[2]!r}")
    return changes_store.insert(db, rows)


def since(
    db: Any,
    after: int = 0,
    limit: int = 1000,
    *,
    contacts: Sequence[str] = (),
    recorded_since: str = "",
) -> list[Change]:
    """Changes numbered above `after`, oldest first, at most `limit`; only of `contacts` (GUIDs)
    when given, only recorded at or after `recorded_since` (ISO time) when given."""
    rows = changes_store.select(db, after, limit, list(contacts), recorded_since)
    return [_change(row) for row in rows]


def latest_id(db: Any) -> int:
    """The number of the last change recorded (0: none)."""
    return changes_store.latest_id(db)


def _change(row: dict[str, Any]) -> Change:
    return Change(
        kind=row["kind"],
        contact_guid=row["contact_guid"],
        company_guid=row["company_guid"],
        before=json.loads(row["before"]),
        after=json.loads(row["after"]),
        changed_on=row["changed_on"],
        recorded_at=row["recorded_at"],
        id=row["id"],
    )
