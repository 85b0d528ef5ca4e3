"""Dataverse's service protection limits at the worker (issue 35, rate limits tested per CRM),
as "Service protection API limits" states them
(https://learn.microsoft.com/power-apps/developer/data-platform/api-limits): past a limit, the
Web API answers 429 Too Many Requests with Retry-After in seconds (0x80072322 number of requests,
0x80072321 execution time, 0x80072326 concurrent requests), and "a service protection API Limit
error will be returned on subsequent requests ... until the Retry-After duration has ended".
So the whole Dynamics connection's work waits until then, spending no attempt (as a HubSpot 429
does, tests/test_worker.py); and a backfill's listing page answered so waits that long and is
listed again."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from flask import Flask
from sqlite_utils import Database

import server
from connector import backfill, connections, store, worker
from tests.helpers.clock import Clock
from tests.helpers.constants import AVA, SECRET
from tests.helpers.dataverse import ListedDataverseTables, remote_execution_context
from tests.helpers.orgs import connected
from tests.helpers.throttle import assert_held_until
from tests.helpers.vendors import VendorTransport

TOKEN = "entra-access-token"
AVA_ID = "6d81597f-0f9f-e711-8122-000d3aa2331c"  # the webhook sample's contact
CARA_ID = "7e92608f-1fa0-f811-9233-111e4bb3442d"
CARA = "cara.cole@lonestar-discover.com"  # in tests/data/discover_contacts.csv
IN = re.compile(r"Microsoft\.Dynamics\.CRM\.In\(PropertyName='contactid',PropertyValues=\[(.*)\]\)")
LATER = "5bf21748-5fb3-e711-8122-000d3aa2331c"  # another webhook call's OperationId
# The three service protection limits: hex code and message as the page gives them, and a
# Retry-After each ("The Retry-After duration will depend on the nature of the operations").
LIMITS = {
    "number-of-requests": (
        "0x80072322",
        "Number of requests exceeded the limit of 6000 over time window of 300 seconds.",
        37,
    ),
    "execution-time": (
        "0x80072321",
        "Combined execution time of incoming requests exceeded limit of 1,200,000 milliseconds "
        "over time window of 300 seconds. Decrease number of concurrent requests or reduce the "
        "duration of requests and try again later.",
        300,
    ),
    "concurrent-requests": (
        "0x80072326",
        "Number of concurrent requests exceeded the limit of 52.",
        1,
    ),
}


def limited(code: str, message: str, seconds: int) -> httpx.Response:
    """The Web API's 429: the OData error body and Retry-After in seconds."""
    headers = {"Retry-After": str(seconds), "x-ms-ratelimit-burst-remaining-xrm-requests": "0"}
    return httpx.Response(429, headers=headers, json={"error": {"code": code, "message": message}})


@dataclass
class Setup:
    """Acme (pro, 10 credits) with a Dynamics connection, the discover dataset, and a worker on
    the test clock writing to a Dataverse holding Ava's and Cara's contacts."""

    db: Database
    link: connections.Added
    hooks: Any  # the connector app's test client
    crm: ListedDataverseTables
    work: worker.Worker
    clock: Clock

    def post(self, guid: str, email: str, operation: str = "") -> None:
        """Dataverse's webhook about the contact `guid`, sent with the connection's key."""
        url = connections.urls(self.link.row, "http://localhost", self.link.secret)["eventsUrl"]
        body = remote_execution_context("contact", guid, {"emailaddress1": email}, operation)
        assert self.hooks.post(url, data=body).get_json() == {"accepted": 1}

    def events(self) -> list[dict[str, Any]]:
        return store.events_of(self.db, self.link.row["id"])


@pytest.fixture
def setup(connector_app: Flask, db_path: Path, clock: Clock) -> Iterator[Setup]:
    db, link, _ = connected(db_path, "dynamics", TOKEN)
    crm = ListedDataverseTables({"contacts": {
        AVA_ID: {"emailaddress1": AVA, "firstname": "Ava", "lastname": "Adams"},
        CARA_ID: {"emailaddress1": CARA, "firstname": "Cara", "lastname": "Cole"},
    }})  # fmt: skip
    with httpx.Client(transport=VendorTransport(crm)) as client:
        work = worker.Worker(db, SECRET.encode(), clock, client, random.Random(7))
        yield Setup(db, link, connector_app.test_client(), crm, work, clock)


@pytest.mark.parametrize(("code", "message", "seconds"), LIMITS.values(), ids=LIMITS.keys())
@pytest.mark.both_backends
def test_a_service_protection_limit_holds_the_whole_connection_without_spending_attempts(
    setup: Setup, code: str, message: str, seconds: int
) -> None:
    setup.post(AVA_ID, AVA)
    setup.crm.failures.append(limited(code, message, seconds))
    assert setup.work.run_due(limit=1) == {"retry": 1}  # the 429 answers its read
    setup.post(CARA_ID, CARA, LATER)  # arrives during the hold
    held = setup.clock.now + timedelta(seconds=seconds)
    (event,) = [e for e in setup.events() if e["record_id"] == AVA_ID]
    assert event["attempts"] == 0 and event["due_at"] == server.iso(held)
    assert event["last_error"] == f"429 Too Many Requests: {code}: {message}"
    assert_held_until(setup.work, setup.clock, setup.crm.requests, held, setup.events)
    first, again = setup.crm.reads("contacts")  # the 429, then one query of both contacts
    assert first.url.path == f"/api/data/v9.2/contacts({AVA_ID})"
    asked = IN.fullmatch(again.url.params["$filter"])
    assert asked and sorted(asked[1].split(",")) == [f"'{AVA_ID}'", f"'{CARA_ID}'"]
    assert sorted(guid for guid, _ in setup.crm.patches("contacts")) == [AVA_ID, CARA_ID]


def test_a_backfill_page_answered_429_waits_as_dataverse_says_and_is_listed_again(
    setup: Setup,
) -> None:
    code, message, _ = LIMITS["number-of-requests"]
    setup.crm.page_failures[1] = limited(code, message, 30)
    slept: list[float] = []

    estimate = backfill.dry_run(setup.work, setup.link.row["id"], "contacts", "", slept.append)

    assert slept == [30.0]  # Retry-After, then the same first page again
    first, again = setup.crm.listings("contacts")
    assert first.url == again.url and again.headers["prefer"] == first.headers["prefer"]
    assert (estimate.listed, estimate.identified) == (2, 2)
    assert setup.events() == []
