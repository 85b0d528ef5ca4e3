"""Pipedrive's rate limits (issue 35, rate limits tested per CRM), as its documentation states
them (https://pipedrive.readme.io/docs/core-api-concepts-rate-limiting): a 429 whose headers
say how long (x-ratelimit-reset: the 2-second window's rest; x-daily-requests-left 0: the day's
POST/PUT allowance, until midnight UTC; neither: the daily token budget, the worker's
THROTTLED_WAIT_SECONDS) holds the whole Pipedrive connection's work until then, spending no
attempt; and a backfill's listing page answered so waits that long and is listed again."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from datetime import timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

import server
from connector import backfill, connections, store, worker
from tests.helpers.clock import Clock
from tests.helpers.constants import AVA, NOW, PLATFORMS, SECRET
from tests.helpers.crm import answer
from tests.helpers.orgs import connected
from tests.helpers.pipedrive import RATE_LIMITED, HeldPipedrive
from tests.helpers.throttle import assert_held_until

PERSON_CHANGED = json.loads((PLATFORMS / "pipedrive_v2_person_updated.json").read_text())
CARA = "cara.cole@lonestar-discover.com"  # in tests/data/discover_contacts.csv

Setup = tuple[Database, worker.Worker, connections.Added, Clock, HeldPipedrive]


def person(record_id: int, email: str) -> dict[str, Any]:
    """A person as GET /api/v2/persons/{id} gives it (the webhook sample's), with `email`."""
    emails = [{"value": email, "primary": True, "label": "work"}]
    return {**PERSON_CHANGED["data"], "id": record_id, "emails": emails}


def person_event(db: Database, link: connections.Added, key: str, record: dict[str, Any]) -> None:
    """A webhook v2 `change` of `record`, stored as the receiver stores it."""
    body = copy.deepcopy(PERSON_CHANGED)
    body["meta"].update(id=key, entity_id=str(record["id"]))
    body["data"] = record
    row = {"connection_id": link.row["id"], "event_key": key, "record_id": str(record["id"]),
           "payload": json.dumps(body), "thin": 0, "received_at": server.iso(NOW)}  # fmt: skip
    with store.server.write(db):
        store.add_events(db, [row])


@pytest.fixture
def setup(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    """Acme (pro, 10 credits) with a Pipedrive connection, the discover dataset, and a worker
    on the test clock writing to a Pipedrive holding Ava's and Cara's persons."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    db, link, _ = connected(db_path, "pipedrive", "0123456789abcdef0123456789abcdef01234567")
    crm = HeldPipedrive(persons={"12": person(12, AVA), "14": person(14, CARA)})
    clock = Clock()
    with crm.client() as client:
        work = worker.Worker(db, SECRET.encode(), clock, client, random.Random(7))
        yield db, work, link, clock, crm


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"x-ratelimit-limit": "40", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "2"},
         timedelta(seconds=2)),
        ({"x-daily-requests-left": "0", "Date": format_datetime(NOW, usegmt=True)},
         timedelta(hours=12)),  # NOW is noon UTC: until midnight
        ({}, timedelta(seconds=worker.THROTTLED_WAIT_SECONDS)),  # the daily token budget
    ],
    ids=["2-second-window", "daily-allowance", "token-budget"],
)  # fmt: skip
@pytest.mark.both_backends
def test_a_rate_limit_holds_the_whole_connection_without_spending_attempts(
    setup: Setup, headers: dict[str, str], wait: timedelta
) -> None:
    db, work, link, clock, crm = setup
    person_event(db, link, "e-12", person(12, AVA))
    crm.failures.append(answer(429, RATE_LIMITED, headers))
    assert work.run_due(limit=1) == {"retry": 1}  # the 429 answers its first call
    person_event(db, link, "e-14", person(14, CARA))  # arrives during the hold
    held = clock.now + wait
    (event,) = [e for e in store.events_of(db, link.row["id"]) if e["record_id"] == "12"]
    assert event["attempts"] == 0 and event["due_at"] == server.iso(held)
    assert "429 Too Many Requests: Request over limit" in event["last_error"]
    assert_held_until(work, clock, crm.requests, held, lambda: store.events_of(db, link.row["id"]))
    first, again = crm.requests  # the 429, then one read of both persons
    assert first.url.path == "/api/v2/persons/12"
    assert sorted(again.url.params["ids"].split(",")) == ["12", "14"]


def test_a_backfill_page_answered_429_waits_as_pipedrive_says_and_is_listed_again(
    setup: Setup,
) -> None:
    db, work, link, _, crm = setup
    crm.failures.append(answer(429, RATE_LIMITED, {"x-ratelimit-reset": "2"}))
    slept: list[float] = []

    estimate = backfill.dry_run(work, link.row["id"], "contacts", "", slept.append)

    assert slept == [2.0]  # the window's rest, then the same page again
    assert [dict(q) for q in crm.lists()] == [
        {"limit": "500", "sort_by": "id", "sort_direction": "asc"}
    ] * 2
    assert (estimate.listed, estimate.identified) == (2, 2)
    assert store.events_of(db, link.row["id"]) == []
