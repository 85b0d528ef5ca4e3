"""Dynamics 365 / Dataverse leads and accounts (our companies) end to end: the webhook body
Dataverse posts about a lead or an account (Microsoft's RemoteExecutionContext sample, about
that row), sent with the connection's WebhookKey, is stored with its kind; the worker enriches
it and PATCHes the row of the right table of a fake Web API (httpx.MockTransport), with the
fields its default mapping (mappings/dynamics.leads.yaml, dynamics.companies.yaml) gives."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from flask import Flask
from sqlite_utils import Database

from connector import connections, store, worker
from tests.helpers.clock import Clock
from tests.helpers.constants import AVA, SECRET
from tests.helpers.dataverse import (
    LOOKUP_NAME,
    ListedDataverseTables,
    remote_execution_context,
)
from tests.helpers.orgs import connected
from tests.helpers.vendors import VendorTransport

LEAD = "2f5a3c10-8b1e-ef11-9f89-000d3a5c8f21"
OTHER_LEAD = "9b1d7e24-3c4f-ef11-9f89-000d3a5c8f21"
ACCOUNT = "475b158c-541c-e511-80d3-3863bb347ba8"  # Microsoft's Web API samples' account id
GLYNN = "6d81597f-0f9f-e711-8122-000d3aa2331c"  # the webhook sample's contact
# OperationIds of further webhook calls (the sample's is 4af10637-4ea2-e711-8122-000d3aa2331c)
LATER = ("5bf21748-5fb3-e711-8122-000d3aa2331c", "6c032859-60c4-e711-8122-000d3aa2331c")
TOKEN = "entra-access-token"
# A company the discover dataset holds (tests/data/discover_companies.csv), and its people.
HILL_COUNTRY = {"name": "Hill Country Analytics LLC", "websiteurl": "hillcountry-analytics.com"}
HILL_COUNTRY_GUID = "D15C0000000000B2"
LONESTAR = {
    "name": "Lonestar Discover Works Inc.",
    "websiteurl": "https://www.lonestar-discover.com",
}
AVA_LEAD = {"firstname": "Ava", "lastname": "Adams", "emailaddress1": AVA}


@dataclass
class Setup:
    """A Dynamics connection of Acme (pro, 10 credits), the discover dataset, and a worker
    writing to `crm` on the test clock."""

    db: Database
    link: connections.Added
    hooks: Any  # the connector app's test client
    crm: ListedDataverseTables
    work: worker.Worker

    def post(self, body: bytes) -> Any:
        url = connections.urls(self.link.row, "http://localhost", self.link.secret)["eventsUrl"]
        return self.hooks.post(url, data=body)

    def events(self) -> list[dict[str, Any]]:
        return store.events_of(self.db, self.link.row["id"])

    def credits(self) -> int:
        return self.db.execute("SELECT credits FROM organizations WHERE name = 'Acme'").fetchone()[
            0
        ]


@pytest.fixture
def setup(
    connector_app: Flask, db_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Setup]:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    db, link, _ = connected(db_path, "dynamics", TOKEN)
    crm = ListedDataverseTables({})
    with httpx.Client(transport=VendorTransport(crm)) as client:
        work = worker.Worker(db, SECRET.encode(), clock, client, random.Random(7))
        yield Setup(db, link, connector_app.test_client(), crm, work)


def test_a_lead_is_stored_as_a_lead_enriched_and_patched_to_its_table(setup: Setup) -> None:
    setup.crm.tables["leads"][LEAD] = {**AVA_LEAD, "companyname": None, "jobtitle": None}
    body = remote_execution_context("lead", LEAD, {"firstname": "Ava"}, message="Create")
    assert setup.post(body).get_json() == {"accepted": 1}
    (event,) = setup.events()
    assert (event["kind"], event["record_id"], event["status"]) == ("leads", LEAD, "pending")

    assert setup.work.run_due() == {"done": 1}
    (read,) = setup.crm.reads("leads")
    assert read.url.path == f"/api/data/v9.2/leads({LEAD})"
    assert {"emailaddress1", "companyname", "jobtitle"} <= set(
        read.url.params["$select"].split(",")
    )
    assert read.headers["authorization"] == f"Bearer {TOKEN}"
    ((guid, written),) = setup.crm.patches("leads")
    assert guid == LEAD and setup.crm.patches("contacts") == []
    assert written == {
        "jobtitle": "Vice President of Sales",
        "companyname": "Lonestar Discover Works Inc.",
        "websiteurl": "https://www.lonestar-discover.com",
        "address1_city": "Austin",
        "address1_stateorprovince": "TX",
        "address1_postalcode": "78701",
        "address1_country": "United States",
        "new_contactdata_job_levels": "VP",
        "new_contactdata_job_functions": "Sales",
        "new_contactdata_record_status": "Active",
        "new_contactdata_contact_guid": "D15C00000000000000000000000000C1",
    }  # the direct dial is never written; the names and e-mail were there
    assert setup.events()[0]["status"] == "done" and setup.credits() == 9
    cached = store.record(setup.db, setup.link.row["id"], LEAD, "leads")
    assert cached is not None and json.loads(cached["written"]) == written


def test_an_echo_of_our_write_to_a_lead_is_not_enriched_again(setup: Setup) -> None:
    setup.crm.tables["leads"][LEAD] = dict(AVA_LEAD)
    setup.post(remote_execution_context("lead", LEAD, AVA_LEAD))
    assert setup.work.run_due() == {"done": 1}
    ((_, written),) = setup.crm.patches("leads")
    # Dataverse reports our own update: its Target holds the columns we wrote
    setup.post(remote_execution_context("lead", LEAD, written, operation=LATER[0]))
    assert setup.work.run_due() == {"done": 1}
    assert len(setup.crm.patches("leads")) == 1 and setup.credits() == 9
    assert "not enriched again" in setup.events()[-1]["last_error"]


def test_leads_of_one_round_are_read_in_one_query(setup: Setup) -> None:
    ben = {
        "firstname": "Ben",
        "lastname": "Brown",
        "emailaddress1": AVA.replace("ava.adams", "ben.brown"),
    }
    setup.crm.tables["leads"].update({LEAD: dict(AVA_LEAD), OTHER_LEAD: ben})
    setup.post(remote_execution_context("lead", LEAD, {}))
    setup.post(remote_execution_context("lead", OTHER_LEAD, {}, operation=LATER[0]))
    assert setup.work.run_due() == {"done": 2}
    (query,) = setup.crm.reads("leads")
    assert query.url.path == "/api/data/v9.2/leads"
    assert query.url.params["$filter"] == (
        f"Microsoft.Dynamics.CRM.In(PropertyName='leadid',PropertyValues=['{LEAD}','{OTHER_LEAD}'])"
    )
    titles = {guid: body["jobtitle"] for guid, body in setup.crm.patches("leads")}
    assert titles == {LEAD: "Vice President of Sales", OTHER_LEAD: "VP, Marketing"}


def test_a_deleted_lead_is_a_dead_letter_and_a_throttled_one_waits(setup: Setup) -> None:
    setup.post(remote_execution_context("lead", LEAD, AVA_LEAD))
    assert setup.work.run_due() == {"dead": 1}
    assert setup.events()[0]["last_error"].startswith("no such lead: 404")

    setup.crm.tables["leads"][OTHER_LEAD] = dict(AVA_LEAD)
    setup.post(remote_execution_context("lead", OTHER_LEAD, AVA_LEAD, operation=LATER[1]))
    throttled = httpx.Response(429, headers={"Retry-After": "120"}, json={"error": {
        "code": "0x80072322", "message": "Number of requests exceeded the limit of 6000 "
        "over time window of 300 seconds."}})  # fmt: skip
    setup.crm.failures.append(throttled)
    assert setup.work.run_due() == {"retry": 1}
    event = setup.events()[1]
    assert event["status"] == "pending" and "0x80072322" in event["last_error"]
    assert event["due_at"] >= "2026-11-23T12:02:00"


def test_an_account_is_enriched_from_its_name_and_website_alone(setup: Setup) -> None:
    setup.crm.tables["accounts"][ACCOUNT] = dict(HILL_COUNTRY)
    body = remote_execution_context("account", ACCOUNT, HILL_COUNTRY, message="Create")
    assert setup.post(body).get_json() == {"accepted": 1}
    (event,) = setup.events()
    assert (event["kind"], event["record_id"]) == ("companies", ACCOUNT)

    assert setup.work.run_due() == {"done": 1}
    ((guid, written),) = setup.crm.patches("accounts")
    assert guid == ACCOUNT and setup.crm.patches("contacts") == []
    assert written == {
        "address1_city": "Austin",
        "address1_stateorprovince": "TX",
        "address1_postalcode": "78701",
        "address1_country": "United States",
        "new_contactdata_company_guid": HILL_COUNTRY_GUID,
    }  # its name and website are the user's own: kept
    cached = store.record(setup.db, setup.link.row["id"], ACCOUNT, "companies")
    assert cached is not None
    assert (cached["company_guid"], cached["contact_guid"]) == (HILL_COUNTRY_GUID, "")
    assert setup.credits() == 9  # a company-only match: 1 credit on pro


def test_a_contact_and_an_account_with_the_same_id_stay_apart(setup: Setup) -> None:
    setup.crm.tables["contacts"][GLYNN] = {"firstname": "James", "emailaddress1": AVA}
    setup.crm.tables["accounts"][GLYNN] = dict(LONESTAR)
    # Microsoft's sample as it is (a contact), and the same operation about an account
    setup.post(remote_execution_context("contact", GLYNN, {"firstname": "James"}))
    setup.post(remote_execution_context("account", GLYNN, LONESTAR))
    kinds = [(event["kind"], event["record_id"]) for event in setup.events()]
    assert kinds == [("contacts", GLYNN), ("companies", GLYNN)]

    assert setup.work.run_due() == {"done": 2}
    ((_, person),) = setup.crm.patches("contacts")
    ((_, company),) = setup.crm.patches("accounts")
    assert person["jobtitle"] == "Vice President of Sales"
    assert "jobtitle" not in company and company["address1_city"] == "Austin"
    assert company["new_contactdata_company_guid"] == "D15C0000000000A1"
    link = setup.link.row["id"]
    contact = store.record(setup.db, link, GLYNN, "contacts")
    account = store.record(setup.db, link, GLYNN, "companies")
    assert contact is not None and account is not None
    assert contact["contact_guid"] == "D15C00000000000000000000000000C1"
    assert (account["contact_guid"], account["company_guid"]) == ("", "D15C0000000000A1")


# --- companies through their contacts ---------------------------------------------------------


def _with_company(table: str, guid: str) -> dict[str, Any]:
    """Ava's contact row, its company (parentcustomerid, a customer lookup) a row of `table`."""
    return {**AVA_LEAD, "_parentcustomerid_value": guid,
            f"_parentcustomerid_value@{LOOKUP_NAME}": table}  # fmt: skip


def test_a_contacts_account_gets_the_company_fields_of_its_enrichment_without_a_charge(
    setup: Setup,
) -> None:
    """Companies through their contacts: an enriched contact whose parentcustomerid names an
    account gives it the company's fields of that enrichment, at once and for no credit; the
    account's own webhook for our write is then not enriched again."""
    setup.crm.tables["contacts"][GLYNN] = _with_company("account", ACCOUNT)
    setup.crm.tables["accounts"][ACCOUNT] = {"name": "Lonestar"}
    setup.post(remote_execution_context("contact", GLYNN, {"emailaddress1": AVA}))

    assert setup.work.run_due() == {"done": 1}
    assert setup.credits() == 9
    (read,) = setup.crm.reads("contacts")
    assert "_parentcustomerid_value" in read.url.params["$select"].split(",")
    assert read.headers["prefer"] == f'odata.include-annotations="{LOOKUP_NAME}"'
    (company_event,) = [e for e in setup.events() if e["kind"] == "companies"]
    assert company_event["record_id"] == ACCOUNT and company_event["status"] == "pending"

    assert setup.work.run_due() == {"done": 1}  # the next round: the account is written
    ((guid, written),) = setup.crm.patches("accounts")
    assert guid == ACCOUNT and written["address1_city"] == "Austin"
    assert written["new_contactdata_company_guid"] == "D15C0000000000A1"
    assert "name" not in written and "jobtitle" not in written
    assert setup.credits() == 9  # delivered with the contact: not charged again
    cached = store.record(setup.db, setup.link.row["id"], ACCOUNT, "companies")
    assert cached is not None and cached["company_guid"] == "D15C0000000000A1"

    # the account's own webhook for our write: unchanged, not enriched
    setup.post(remote_execution_context("account", ACCOUNT, written, operation=LATER[0]))
    assert setup.work.run_due() == {"done": 1}
    assert setup.events()[-1]["last_error"].startswith("unchanged since")
    assert setup.credits() == 9 and len(setup.crm.patches("accounts")) == 1


def test_a_contacts_company_that_is_a_contact_is_left_alone(setup: Setup) -> None:
    """parentcustomerid may name a contact (a customer lookup): that is no company record."""
    setup.crm.tables["contacts"][GLYNN] = _with_company("contact", OTHER_LEAD)
    setup.post(remote_execution_context("contact", GLYNN, {"emailaddress1": AVA}))
    assert setup.work.run_due() == {"done": 1}
    (read,) = setup.crm.reads("contacts")  # the link was read, with the table it names
    assert read.headers["prefer"] == f'odata.include-annotations="{LOOKUP_NAME}"'
    assert [e["kind"] for e in setup.events()] == ["contacts"]
    assert setup.crm.reads("accounts") == [] and setup.crm.patches("accounts") == []
    ((_, person),) = setup.crm.patches("contacts")
    assert person["jobtitle"] == "Vice President of Sales"
