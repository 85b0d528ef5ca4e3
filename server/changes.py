"""What changed in the contact data, import by import: the kinds of change, and the record of
each one that readers (the connector's change job, `POST /v1/changes`) go through in order."""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from server.storage import changes as changes_store

# A contact's job ended (`before`: company_guid, company, job_title; `after`: left_on);
# a new job began (`after`: company_guid, company, job_title, started_on); a field of a
# current job changed (`before`/`after`: title {job_title}, email {email}, phone the ones of
# work_phone, direct_dial1, direct_dial2 that changed, location {work_city, work_state,
# work_country}); a company's firmographics changed (`contact_guid` '', `before`/`after`: the
# fields of COMPANY_FIELDS that changed, as stored). Dates are YYYY-MM-DD; the data gives
# months, so a month's first day (left_on, started_on, changed_on).
KINDS = ("job_ended", "job_started", "title", "email", "phone", "location", "company")

# What an import compares, in this order, for employments and companies: the stored row and
# the imported one, as tuples (the key first), equal when nothing watched changed.
JOB_FIELDS = (
    "contact_guid", "company_guid", "status", "job_title", "email", "work_phone",
    "direct_dial1", "direct_dial2", "work_city", "work_state", "work_country",
    "job_started_on", "job_updated_on",
)  # fmt: skip
COMPANY_FIELDS = (
    "guid", "name", "website", "domain", "address", "city", "state", "zipcode", "country",
    "phone", "employee_count", "revenue_range", "industry",
)  # fmt: skip
ACTIVE = "Active"
_PAIR, _FIRST = itemgetter(0, 1), itemgetter(0)
_FIELD_KINDS = (
    ("title", ("job_title",), False),
    ("email", ("email",), False),
    ("phone", ("work_phone", "direct_dial1", "direct_dial2"), False),
    ("location", ("work_city", "work_state", "work_country"), True),
)  # (kind, fields, whether all of them are told when one changed)


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
    delivered_to: str = "",
) -> list[Change]:
    """Changes numbered above `after`, oldest first, at most `limit`; only of `contacts` (GUIDs)
    when given, only recorded at or after `recorded_since` (ISO time) when given, only of what
    the organization `delivered_to` (an org id) was delivered by enrich when given."""
    rows = changes_store.select(db, after, limit, list(contacts), recorded_since, delivered_to)
    return [_change(row) for row in rows]


def forget(db: Any, contacts: Sequence[str]) -> int:
    """Delete the recorded changes of these contacts (people suppressed or erased: their old
    and new e-mail addresses and numbers are in them), inside the caller's write transaction;
    how many."""
    return changes_store.delete_of_contacts(db, list(contacts))


def latest_id(db: Any) -> int:
    """The number of the last change recorded (0: none)."""
    return changes_store.latest_id(db)


def of_jobs(
    stored: Iterable[Sequence[Any]],
    imported: Iterable[Sequence[Any]],
    names: dict[str, str],
    new: Collection[str] = (),
) -> list[Change]:
    """The changes from `stored` employments (JOB_FIELDS tuples, every employment of the
    contacts imported) to the `imported` ones that differ from them; `names` are company names
    by GUID. A contact with no stored employment is new, not changed, as are those in `new`
    (new to the import under way, whose first rows an earlier batch wrote)."""
    stored = list(stored)
    before = dict(zip(map(_PAIR, stored), stored, strict=True))  # no Python per stored row
    known = set(map(_FIRST, stored)).difference(new)
    found: list[Change] = []
    for row in imported:
        if row[0] in known:
            old = before.get(_PAIR(row))
            was = None if old is None else dict(zip(JOB_FIELDS, old, strict=True))
            found.extend(_job_changes(was, dict(zip(JOB_FIELDS, row, strict=True)), names))
    return sorted(found, key=lambda change: (change.contact_guid, KINDS.index(change.kind)))


def _job_changes(
    old: dict[str, Any] | None, new: dict[str, Any], names: dict[str, str]
) -> list[Change]:
    """What happened between an employment as stored (None: not there) and as imported."""
    was, now = bool(old) and old["status"] == ACTIVE, new["status"] == ACTIVE
    if now and not was:
        return [_started(new, names)]
    if was and not now:
        return [_ended(old, new, names)]  # type: ignore[arg-type]
    if not (was and now):
        return []
    return [
        _field_change(kind, old, new, fields, whole)  # type: ignore[arg-type]
        for kind, fields, whole in _FIELD_KINDS
        if any(old[name] != new[name] for name in fields)  # type: ignore[index]
    ]


def _started(job: dict[str, Any], names: dict[str, str]) -> Change:
    company = job["company_guid"]
    started = month_day(job["job_started_on"])
    after = {"company_guid": company, "company": names.get(company, ""),
             "job_title": job["job_title"], "started_on": started}  # fmt: skip
    return Change("job_started", job["contact_guid"], company, {}, after, started)


def _ended(old: dict[str, Any], new: dict[str, Any], names: dict[str, str]) -> Change:
    company = old["company_guid"]
    left = month_day(new["job_updated_on"])
    before = {"company_guid": company, "company": names.get(company, ""),
              "job_title": old["job_title"]}  # fmt: skip
    return Change("job_ended", old["contact_guid"], company, before, {"left_on": left}, left)


def _field_change(
    kind: str, old: dict[str, Any], new: dict[str, Any], fields: Sequence[str], whole: bool
) -> Change:
    told = fields if whole else [name for name in fields if old[name] != new[name]]
    return Change(
        kind,
        new["contact_guid"],
        new["company_guid"],
        {name: old[name] for name in told},
        {name: new[name] for name in told},
        month_day(new["job_updated_on"]),
    )


def of_companies(
    stored: Iterable[Sequence[Any]], imported: Iterable[Sequence[Any]]
) -> list[Change]:
    """The firmographic changes from `stored` companies to the `imported` ones that differ
    (COMPANY_FIELDS tuples); a company not stored is new, not changed."""
    before = {row[0]: row for row in stored}
    found = []
    for row in imported:
        old = before.get(row[0])
        if old is None:
            continue
        differ = [i for i in range(1, len(COMPANY_FIELDS)) if old[i] != row[i]]
        if differ:
            found.append(Change("company", "", row[0],
                                {COMPANY_FIELDS[i]: old[i] for i in differ},
                                {COMPANY_FIELDS[i]: row[i] for i in differ}))  # fmt: skip
    return found


def month_day(month: str) -> str:
    """A stored month (YYYY-MM) as its first day (YYYY-MM-01); '' stays ''."""
    return f"{month}-01" if month else ""


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
