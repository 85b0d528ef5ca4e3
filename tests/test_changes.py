"""server/changes.py: changes recorded in order and read back from a number, by contact or time,
on both backends."""

from __future__ import annotations

import pytest
from sqlite_utils import Database

from server import changes
from server.storage import db

A, B = "a" * 32, "b" * 32
ACME = "1" * 16


@pytest.mark.both_backends
def test_changes_are_read_back_in_order_from_a_number(database: Database) -> None:
    left = changes.Change("job_ended", A, ACME, {"company": "Acme"}, {"left_on": "2026-10-01"})
    titled = changes.Change("title", B, ACME, {"job_title": "CTO"}, {"job_title": "CEO"})
    with db.write(database):
        assert changes.record(database, [left, titled], "2026-11-01T00:00:00Z") == 2
    read = changes.since(database)
    assert [(c.kind, c.contact_guid, c.after) for c in read] == [
        ("job_ended", A, {"left_on": "2026-10-01"}),
        ("title", B, {"job_title": "CEO"}),
    ]
    assert read[0].id < read[1].id == changes.latest_id(database)
    assert changes.since(database, after=read[0].id) == read[1:]
    assert changes.since(database, contacts=[B]) == read[1:]
    assert changes.since(database, recorded_since="2026-11-02T00:00:00Z") == []
    assert changes.since(database, limit=1) == read[:1]


def test_an_unknown_kind_is_refused(database: Database) -> None:
    with pytest.raises(ValueError, match="unknown change kind 'moved'"), db.write(database):
        changes.record(database, [changes.Change("moved", A)], "2026-11-01T00:00:00Z")


def test_the_changes_of_forgotten_contacts_are_deleted(database: Database) -> None:
    with db.write(database):
        changes.record(database, [changes.Change("email", A), changes.Change("email", B)], "t")
        assert changes.forget(database, [A]) == 1
    assert [change.contact_guid for change in changes.since(database)] == [B]


def job(contact: str, company: str, status: str, title: str = "CTO", **more: str) -> tuple:
    values = dict.fromkeys(changes.JOB_FIELDS, "")
    values.update(contact_guid=contact, company_guid=company, status=status, job_title=title)
    return tuple({**values, **more}.values())


def test_jobs_compare_as_people_move_return_and_keep_old_history() -> None:
    other = "2" * 16
    stored = [job(A, ACME, "No Longer"), job(B, ACME, "Active")]
    imported = [
        job(A, ACME, "Active", job_started_on="2026-11"),  # back at Acme
        job(A, other, "No Longer"),  # an old job the data now tells of: no change
        job(B, ACME, "Active", work_phone="+1 555 0100", direct_dial1="+1 555 0199"),
        job("c" * 32, ACME, "Active"),  # someone new
    ]
    found = changes.of_jobs(stored, imported, {ACME: "Acme"})
    assert [(c.kind, c.contact_guid, c.after) for c in found] == [
        ("job_started", A, {"company_guid": ACME, "company": "Acme", "job_title": "CTO",
                            "started_on": "2026-11-01"}),
        ("phone", B, {"work_phone": "+1 555 0100", "direct_dial1": "+1 555 0199"}),
    ]  # fmt: skip


def test_companies_compare_by_the_fields_that_changed() -> None:
    old = ("1" * 16, "Acme", "acme.com", "acme.com", "", "Austin", "TX", "", "US", "", 50, "", "")
    new = (*old[:10], 60, "$1M - $5M", "")
    assert changes.of_companies([old], [new, ("9" * 16, *old[1:])]) == [
        changes.Change("company", "", "1" * 16, {"employee_count": 50, "revenue_range": ""},
                       {"employee_count": 60, "revenue_range": "$1M - $5M"}),
    ]  # fmt: skip
