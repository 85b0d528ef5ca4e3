"""Zoho CRM's rate limit at the worker: 429 with code TOO_MANY_REQUESTS, Zoho's answer once the
org's API credits of the rolling 24 hours are spent or too many of its calls run at once
(https://www.zoho.com/crm/developer/docs/api/v7/api-limits.html; the error's shape is the
status-codes page's, tests/vendor/zoho.json), holds the whole connection without spending an
attempt, as a HubSpot 429 does (tests/test_worker.py). Zoho states no time to wait (no
Retry-After): the worker holds the connection THROTTLED_WAIT_SECONDS; a Retry-After, should
one come, is the time held."""

from __future__ import annotations

import json
import random
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
from connector import connections, store, worker
from connector.platforms.zoho import PLATFORM as ZOHO
from tests.helpers.clock import Clock
from tests.helpers.constants import AVA, PLATFORMS, SECRET
from tests.helpers.orgs import connected
from tests.helpers.throttle import assert_held_until
from tests.helpers.vendors import VendorTransport
from tests.helpers.zoho_crm import FakeZohoRecords

pytestmark = pytest.mark.both_backends

AVA_ID, CARA_ID = "5725767000004000001", "5725767000004000002"
CARA = "cara.cole@lonestar-discover.com"  # in tests/data/discover_contacts.csv
SAMPLE = json.loads((PLATFORMS / "zoho_webhook.json").read_text())  # the enable page's callback
TOO_MANY_REQUESTS = {
    "code": "TOO_MANY_REQUESTS",
    "details": {},
    "message": "The number of concurrent requests has exceeded the limit",
    "status": "error",
}


@dataclass
class Org:
    app: Flask
    db: Database
    link: connections.Added
    crm: FakeZohoRecords
    work: worker.Worker
    clock: Clock

    def post(self, record_id: str, sent: int) -> None:
        """A Notification API callback (Zoho's sample, from the connection's channel) for an
        edit of one Contact, accepted."""
        body = {
            **SAMPLE, "module": "Contacts", "operation": "update", "ids": [record_id],
            "resource_uri": "https://www.zohoapis.com/crm/v7/Contacts", "server_time": sent,
            "token": self.link.secret, "channel_id": ZOHO.channel_id(self.link.row),
        }  # fmt: skip
        url = f"/hooks/{self.link.row['id']}/events"
        answer = self.app.test_client().post(url, data=json.dumps(body).encode())
        assert answer.status_code == 200 and answer.get_json() == {"accepted": 1}

    def events(self) -> list[dict[str, Any]]:
        return store.events_of(self.db, self.link.row["id"])


@pytest.fixture
def org(connector_app: Flask, db_path: Path, clock: Clock) -> Iterator[Org]:
    """Acme with a Zoho connection, and a worker writing to a fake Zoho holding Ava's and
    Cara's Contacts."""
    db, link, _ = connected(db_path, "zoho", "1000.zoho-access-token")
    crm = FakeZohoRecords({"Contacts": {
        AVA_ID: {"id": AVA_ID, "Email": AVA, "Last_Name": "Adams"},
        CARA_ID: {"id": CARA_ID, "Email": CARA, "Last_Name": "Cole"},
    }})  # fmt: skip
    with httpx.Client(transport=VendorTransport(crm)) as client:
        work = worker.Worker(db, SECRET.encode(), clock, client, random.Random(7))
        yield Org(connector_app, db, link, crm, work, clock)


@pytest.mark.parametrize(
    ("headers", "wait"),
    [({}, worker.THROTTLED_WAIT_SECONDS), ({"Retry-After": "30"}, 30.0)],
    ids=["as documented: no wait stated", "Retry-After"],
)
def test_too_many_requests_holds_the_whole_connection_without_spending_attempts(
    org: Org, headers: dict[str, str], wait: float
) -> None:
    org.post(AVA_ID, 1)
    org.crm.refusals.append(httpx.Response(429, headers=headers, json=TOO_MANY_REQUESTS))
    assert org.work.run_due(limit=1) == {"retry": 1}  # the 429 answers its read
    org.post(CARA_ID, 2)  # arrives during the hold
    held = org.clock.now + timedelta(seconds=wait)
    (event,) = [e for e in org.events() if e["record_id"] == AVA_ID]
    assert event["attempts"] == 0 and event["due_at"] == server.iso(held)
    assert "concurrent requests has exceeded the limit" in event["last_error"]
    assert_held_until(org.work, org.clock, org.crm.requests, held, org.events)
    assert written(org.crm) == {AVA_ID, CARA_ID}


def written(crm: FakeZohoRecords) -> set[str]:
    """The Contacts updated: the ids a batch update names, or a one-record update's path."""
    return {
        str(record.get("id") or path.rsplit("/", 1)[1])
        for path, records in crm.updates("Contacts")
        for record in records
    }
