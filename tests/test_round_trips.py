"""An enrich reaches PostgreSQL in few round trips: counted on the wire between the service
and the database (tests/helpers/pg_wire.py) while the app answers `/v7/enrich`, so that a
change adding one fails here, naming the statements of each round trip."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask.testing import FlaskClient

from server.http.app import create_app
from server.storage import db, pg
from tests.helpers.clock import Clock
from tests.helpers.constants import SECRET
from tests.helpers.enrich_data import AVA_EMAIL, NOBODY, NOW, copy_dataset
from tests.helpers.orgs import organization
from tests.helpers.pg_wire import RoundTrips, tapped
from tests.helpers.redis_server import redis_server

# Authentication, the rate limits, matching (the company, the person), the rows shown, and the
# charge with its record (a free refresh's lookup and lock in the same trip). The issue's
# bound is 8: this is what the service takes now, held so that a change adding one fails.
ENRICH_ROUND_TRIPS = 6
# After an idle pause the pool checks the connection, and a key's use is noted once a minute.
AFTER_AN_IDLE_PAUSE = ENRICH_ROUND_TRIPS + 2
# An Idempotency-Key adds its claim and the answer kept for its copies.
WITH_AN_IDEMPOTENCY_KEY = ENRICH_ROUND_TRIPS + 2
CY_EMAIL = {"contactEmail": "cy.park@bluebonnet-labs.io"}
AVA_AT_HER_COMPANY = {"contactFirstName": "Ava", "contactLastName": "Stone",
                      "companyName": "Lonestar Works"}  # fmt: skip


@pytest.fixture
def backend() -> str:
    return "postgresql"


@pytest.fixture
def tap(db_path: str, enrich_dataset: Path) -> Iterator[tuple[str, RoundTrips]]:
    """The enrich dataset on PostgreSQL, reached through a tap: its URL and what it counts."""
    copy_dataset(enrich_dataset, db_path).close()
    with tapped(db_path) as (url, trips):
        yield url, trips
        pg.release(url)


def service(url: str, **settings: Any) -> FlaskClient:
    app = create_app({"DB": url, "KEY_SECRET": SECRET, "CLOCK": Clock(NOW), **settings})
    return app.test_client()


def key_of_new_organization(db_path: str, tier: str) -> str:
    database = db.connect(db_path)
    _, key = organization(database, f"{tier}-{uuid.uuid4().hex[:6]}", tier, credits=100, qps=1000)
    database.close()
    return key


def enrich(client: FlaskClient, body: dict[str, str], key: str, **headers: str) -> int:
    """Enrich `body` with `key`; the credits it cost."""
    response = client.post("/v7/enrich", json=body, headers={"apikey": key, **headers})
    assert response.status_code == 200, response.get_data(as_text=True)
    return int(response.headers["credits-deducted"])


def warmed(client: FlaskClient, key: str) -> None:
    """Two calls first: the pool's connections made and given back, the key's use noted."""
    for _ in range(2):
        enrich(client, AVA_EMAIL, key)


def counted(trips: RoundTrips, client: FlaskClient, body: dict[str, str], key: str,
            **headers: str) -> tuple[int, int]:  # fmt: skip
    """The round trips of one enrich, and the credits it cost."""
    trips.clear()
    cost = enrich(client, body, key, **headers)
    return len(trips), cost


@pytest.mark.parametrize(
    ("tier", "body", "cost"),
    [
        ("pro", AVA_EMAIL, 1),  # delivered and charged
        ("pro", NOBODY, 0),  # No Match
        ("pro", AVA_AT_HER_COMPANY, 1),  # matched by name at a company
        ("enterprise_plus", CY_EMAIL, 1),  # a first delivery, looked up first, charged
        ("enterprise_plus", AVA_EMAIL, 0),  # a refresh of a contact delivered before: free
    ],
    ids=["charged", "no-match", "by-name", "plus-first-delivery", "plus-free-refresh"],
)
def test_an_enrich_reaches_the_database_in_at_most_6_round_trips(
    tap: tuple[str, RoundTrips], db_path: str, tier: str, body: dict[str, str], cost: int
) -> None:
    url, trips = tap
    client, key = service(url), key_of_new_organization(db_path, tier)
    warmed(client, key)
    round_trips, charged = counted(trips, client, body, key)
    assert round_trips <= ENRICH_ROUND_TRIPS and charged == cost, trips.breakdown()


def test_a_keys_first_call_after_an_idle_pause_adds_at_most_two(
    tap: tuple[str, RoundTrips], db_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool checks a connection idle for a while (one round trip) and a key's use is
    noted once a minute (another): together still within the budget."""
    url, trips = tap
    client = service(url)
    warmed(client, key_of_new_organization(db_path, "pro"))
    monkeypatch.setattr(pg, "CHECK_AFTER_IDLE_S", 0.0)  # every connection checked
    round_trips, _ = counted(trips, client, AVA_EMAIL, key_of_new_organization(db_path, "pro"))
    assert round_trips <= AFTER_AN_IDLE_PAUSE, trips.breakdown()
    assert "(an empty statement)" in trips.breakdown() and "last_used_at" in trips.breakdown()


def test_an_idempotency_key_adds_at_most_its_claim_and_the_answer_kept(
    tap: tuple[str, RoundTrips], db_path: str
) -> None:
    url, trips = tap
    client, key = service(url), key_of_new_organization(db_path, "pro")
    warmed(client, key)
    once = {"Idempotency-Key": str(uuid.uuid4())}
    round_trips, cost = counted(trips, client, AVA_EMAIL, key, **once)
    assert round_trips <= WITH_AN_IDEMPOTENCY_KEY and cost == 1, trips.breakdown()
    round_trips, cost = counted(trips, client, AVA_EMAIL, key, **once)  # its copy
    assert round_trips <= ENRICH_ROUND_TRIPS and cost == 0, trips.breakdown()


def test_with_the_limits_in_redis_the_limiter_costs_no_round_trip_to_postgresql(
    tap: tuple[str, RoundTrips], db_path: str, tmp_path: Path
) -> None:
    url, trips = tap
    with redis_server(tmp_path) as limits:
        client, key = service(url, RATE_LIMITER=limits), key_of_new_organization(db_path, "pro")
        warmed(client, key)
        round_trips, _ = counted(trips, client, AVA_EMAIL, key)
    assert round_trips <= ENRICH_ROUND_TRIPS - 1, trips.breakdown()
    assert "rate_limit_hit" not in trips.breakdown()
