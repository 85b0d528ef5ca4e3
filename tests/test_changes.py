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
