"""Salesforce's rate limit at the worker: the org's API request limit, answered 403 with
errorCode REQUEST_LIMIT_EXCEEDED (REST API Developer Guide, "Status Codes and Error Responses":
https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/errorcodes.htm; the
limit counts the org's requests over a rolling 24 hours: https://developer.salesforce.com/docs/
atlas.en-us.salesforce_app_limits_cheatsheet.meta/salesforce_app_limits_cheatsheet/
salesforce_app_limits_platform_api.htm), holds the whole connection for the adapter's hour
without spending an attempt, as a HubSpot 429 does (tests/test_worker.py)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import httpx
import pytest
from flask import Flask
from sqlite_utils import Database

import server
from connector import connections, mappings, store, worker
from connector.platforms.salesforce import REQUEST_LIMIT_WAIT_SECONDS
from tests.helpers.clock import Clock
from tests.helpers.constants import AVA, SECRET
from tests.helpers.crm import FakeSalesforce, sample
from tests.helpers.orgs import connected
from tests.helpers.throttle import assert_held_until
from tests.helpers.vendors import VendorTransport

pytestmark = pytest.mark.both_backends

ORG = "00Do0000000xxxxxxx"  # the reference Outbound Message's organization
AVA_ID, CARA_ID = "0035e00000AbCdEFGH", "0035e00000AbCdEFGI"
CARA = "cara.cole@lonestar-discover.com"  # in tests/data/discover_contacts.csv
# Salesforce's answer to a call past the org's limit (tests/data/platforms/outbound/).
LIMIT_EXCEEDED = sample("salesforce_error_response.json")


class LimitedSalesforce(FakeSalesforce):
    """A fake Salesforce org answering its next requests from `refusals` first."""

    def __init__(self, fields: dict[str, set[str]]) -> None:
        super().__init__(fields)
        self.refusals: list[httpx.Response] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if self.refusals:
            self.requests.append(request)
            return self.refusals.pop(0)
        return super().__call__(request)


@dataclass
class Org:
    app: Flask
    db: Database
    link: connections.Added
    crm: LimitedSalesforce
    work: worker.Worker
    clock: Clock

    def post(self, notification: str, contact: str, email: str) -> None:
        """An Outbound Message for one Contact (the reference sample's envelope), posted with
        the connection's key and acknowledged."""
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" '
            'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>'
            '<notifications xmlns="http://soap.sforce.com/2005/09/outbound">'
            f"<OrganizationId>{ORG}</OrganizationId><ActionId>04ko0000000xxxxxxx</ActionId>"
            f"<Notification><Id>{notification}</Id>"
            '<sObject xsi:type="sf:Contact" xmlns:sf="urn:sobject.enterprise.soap.sforce.com">'
            f"<sf:Id>{contact}</sf:Id><sf:Email>{escape(email)}</sf:Email>"
            "</sObject></Notification></notifications></soapenv:Body></soapenv:Envelope>"
        )
        url = f"/hooks/{self.link.row['id']}/events?key={self.link.secret}"
        answer = self.app.test_client().post(url, data=body, content_type="text/xml")
        assert answer.status_code == 200 and b"<Ack>true</Ack>" in answer.data

    def events(self) -> list[dict[str, Any]]:
        return store.events_of(self.db, self.link.row["id"])


@pytest.fixture
def org(connector_app: Flask, db_path: Path, clock: Clock) -> Iterator[Org]:
    """Acme with a Salesforce connection, and a worker writing to a fake org whose Contacts
    have every field the contacts mapping reads and writes."""
    db, link, _ = connected(db_path, "salesforce", "00Dxx!sf-token", salesforce_org_ids=(ORG,))
    mapping = mappings.load(connections.MAPPINGS / "salesforce.yaml")
    fields = set(worker.readable(mapping)) | {rule.property for rule in mapping.output}
    crm = LimitedSalesforce({"Contact": fields})
    crm.records["Contact"] = {
        AVA_ID: {"Email": AVA, "LastName": "Adams"},
        CARA_ID: {"Email": CARA, "LastName": "Cole"},
    }
    with httpx.Client(transport=VendorTransport(crm)) as client:
        work = worker.Worker(db, SECRET.encode(), clock, client, random.Random(7))
        yield Org(connector_app, db, link, crm, work, clock)


def test_the_request_limit_holds_the_whole_connection_an_hour_without_spending_attempts(
    org: Org,
) -> None:
    org.post("04l5e00000QrStUVWX", AVA_ID, AVA)
    org.crm.refusals.append(httpx.Response(403, json=LIMIT_EXCEEDED))
    assert org.work.run_due(limit=1) == {"retry": 1}  # the 403 answers its first call
    org.post("04l5e00000QrStUVWY", CARA_ID, CARA)  # arrives during the hold
    held = org.clock.now + timedelta(seconds=REQUEST_LIMIT_WAIT_SECONDS)
    assert REQUEST_LIMIT_WAIT_SECONDS == 3600.0  # the module docstring's hour
    (event,) = [e for e in org.events() if e["record_id"] == AVA_ID]
    assert event["attempts"] == 0 and event["due_at"] == server.iso(held)
    assert "REQUEST_LIMIT_EXCEEDED" in event["last_error"]
    assert_held_until(org.work, org.clock, org.crm.requests, held, org.events)
    assert {key for batch in org.crm.writes("Contact") for key in batch} == {AVA_ID, CARA_ID}
