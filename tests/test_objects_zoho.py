"""Zoho CRM's leads (module Leads) and companies (module Accounts), end to end: a
Notification API callback shaped as Zoho's sample (tests/data/platforms/zoho_webhook.json, a
Leads one) is verified by its channel's token and id and stored with its kind; the worker
reads the record from its own module, enriches it (a company from its name and web site, a
company-only match) and writes the mapped fields back to that module's endpoints of a fake
Zoho (httpx.MockTransport), in batches by module; the channel watches every module."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlite_utils import Database

from connector import connections, store, subscriptions, worker
from connector.platforms.base import Permanent
from connector.platforms.zoho import PLATFORM as ZOHO
from connector.platforms.zoho import Zoho
from server import accounts
from tests.helpers.clock import Clock
from tests.helpers.constants import AVA, NOW, PLATFORMS, SECRET
from tests.helpers.crm import FakeCRM, answer
from tests.helpers.orgs import connected
from tests.helpers.vendors import VendorTransport
from tests.helpers.zoho_crm import FakeZohoRecords

LEAD = "5725767000003000064"  # the sample callback's id
ACCOUNT = "5725767000003000101"
SAMPLE = json.loads((PLATFORMS / "zoho_webhook.json").read_text())  # module "Leads", "insert"
# Hill Country Analytics LLC, as tests/data/discover_companies.csv holds it.
HILL_COUNTRY = {"GUID": "D15C0000000000B2", "website": "https://hillcountry-analytics.com"}
Setup = tuple[Database, connections.Added, dict[str, Any]]


@pytest.fixture
def setup(connector_app: Flask, db_path: Path) -> Setup:
    """Acme (pro, 10 credits) with a Zoho connection, and the discover dataset."""
    return connected(db_path, "zoho", "1000.zoho-access-token")


@pytest.fixture
def hooks(connector_app: Flask) -> FlaskClient:
    return connector_app.test_client()


def notification(link: connections.Added, **changes: Any) -> bytes:
    """Zoho's sample callback, from the connection's channel (its token and id)."""
    channel = {"token": link.secret, "channel_id": ZOHO.channel_id(link.row)}
    return json.dumps({**SAMPLE, **channel, **changes}).encode()


def accounts_notification(link: connections.Added, ids: list[str], **changes: Any) -> bytes:
    return notification(
        link, module="Accounts", resource_uri="https://www.zohoapis.com/crm/v7/Accounts",
        ids=ids, **{"operation": "update", **changes},
    )  # fmt: skip


def post(hooks: FlaskClient, link: connections.Added, body: bytes) -> Any:
    response = hooks.post(f"/hooks/{link.row['id']}/events", data=body)
    assert response.status_code == 200, response.get_json()
    return response.get_json()


@pytest.fixture
def run(setup: Setup) -> Iterator[Any]:
    """Work off the due events against a fake Zoho: (fake) -> outcomes."""
    db = setup[0]
    clients: list[httpx.Client] = []

    def work(zoho: FakeZohoRecords) -> Any:
        client = httpx.Client(transport=VendorTransport(zoho))
        clients.append(client)
        return worker.Worker(db, SECRET.encode(), Clock(), client, random.Random(7)).run_due()

    yield work
    for client in clients:
        client.close()


def credits(db: Database, org: dict[str, Any]) -> int:
    return int(accounts.organization(db, org["id"])["credits"])


def kinds(db: Database, link: connections.Added) -> list[tuple[str, str]]:
    return [(e["kind"], e["record_id"]) for e in store.events_of(db, link.row["id"])]


# --- events --------------------------------------------------------------------------------


def test_zohos_leads_callback_is_stored_as_a_lead(setup: Setup, hooks: FlaskClient) -> None:
    db, link, _ = setup
    assert post(hooks, link, notification(link)) == {"accepted": 1}
    (event,) = store.events_of(db, link.row["id"])
    assert (event["kind"], event["record_id"], event["thin"]) == ("leads", LEAD, 1)
    assert json.loads(event["payload"])["module"] == "Leads"
    forged = hooks.post(
        f"/hooks/{link.row['id']}/events", data=notification(link, token="not-ours")
    )
    assert forged.status_code == 401


def test_an_accounts_callback_is_stored_as_companies_and_deletions_as_nothing(
    setup: Setup, hooks: FlaskClient
) -> None:
    db, link, _ = setup
    assert post(hooks, link, accounts_notification(link, [ACCOUNT, "5725767000003000102"])) == {
        "accepted": 2
    }
    deleted = accounts_notification(link, [ACCOUNT], operation="delete", server_time=1)
    assert post(hooks, link, deleted) == {"accepted": 0}
    deals = notification(link, module="Deals", server_time=2)  # a module nobody declared
    assert post(hooks, link, deals) == {"accepted": 0}
    assert kinds(db, link) == [("companies", ACCOUNT), ("companies", "5725767000003000102")]


# --- write-back ----------------------------------------------------------------------------


def test_a_lead_is_read_enriched_and_written_back_to_leads(
    setup: Setup, hooks: FlaskClient, run: Any
) -> None:
    db, link, org = setup
    post(hooks, link, notification(link))
    lead = {"id": LEAD, "Email": AVA, "First_Name": None, "Last_Name": "Adams",
            "Company": "Lonestar Discover", "Designation": None, "City": "Dallas"}  # fmt: skip
    zoho = FakeZohoRecords({"Leads": {LEAD: lead}, "Contacts": {}, "Accounts": {}})
    assert run(zoho) == {"done": 1}
    read = zoho.requests[0]
    assert (read.method, read.url.path) == ("GET", f"/crm/v7/Leads/{LEAD}")
    fields = read.url.params["fields"].split(",")
    assert {"Email", "Designation", "Company", "Website", "Street", "Zip_Code"} <= set(fields)
    ((path, (written,)),) = zoho.updates("Leads")
    assert path == f"/crm/v7/Leads/{LEAD}"
    assert written == {
        "First_Name": "Ava",
        "Designation": "Vice President of Sales",
        "State": "TX",
        "Zip_Code": "78701",
        "Country": "United States",
        "Website": "https://www.lonestar-discover.com",
        "ContactData_Company_Name": "Lonestar Discover Works Inc.",
        "ContactData_Company_Domain": "lonestar-discover.com",
        "ContactData_Job_Levels": "VP",
        "ContactData_Job_Functions": "Sales",
        "ContactData_Record_Status": "Active",
        "ContactData_Contact_GUID": "D15C00000000000000000000000000C1",
    }  # City: a user's "Dallas" stays; Company already named
    assert json.loads(zoho.requests[-1].content)["trigger"] == []
    assert credits(db, org) == 9
    assert store.record(db, link.row["id"], LEAD, "leads") is not None
    assert store.record(db, link.row["id"], LEAD) is None  # no contact of that id


def test_an_account_is_enriched_from_its_name_and_web_site_and_written_to_accounts(
    setup: Setup, hooks: FlaskClient, run: Any
) -> None:
    db, link, org = setup
    post(hooks, link, accounts_notification(link, [ACCOUNT]))
    account = {"id": ACCOUNT, "Account_Name": "Hill Country Analytics",
               "Website": "hillcountry-analytics.com", "Billing_City": None,
               "Phone": "+1 512 555 0199"}  # fmt: skip
    zoho = FakeZohoRecords({"Accounts": {ACCOUNT: account}, "Contacts": {}, "Leads": {}})
    assert run(zoho) == {"done": 1}
    assert zoho.requests[0].url.path == f"/crm/v7/Accounts/{ACCOUNT}"
    ((path, (written,)),) = zoho.updates("Accounts")
    assert path == f"/crm/v7/Accounts/{ACCOUNT}"
    assert written == {
        "Billing_City": "Austin",
        "Billing_State": "TX",
        "Billing_Code": "78701",
        "Billing_Country": "United States",
        "ContactData_Record_Status": "Active",
        "ContactData_Company_GUID": HILL_COUNTRY["GUID"],
    }  # Website and Phone hold the user's values
    assert credits(db, org) == 9  # a company-only match: one credit on pro
    cached = store.record(db, link.row["id"], ACCOUNT, "companies")
    assert cached is not None
    assert (cached["company_guid"], cached["contact_guid"]) == (HILL_COUNTRY["GUID"], "")


def test_leads_are_read_and_written_in_one_batch_each(
    setup: Setup, hooks: FlaskClient, run: Any
) -> None:
    _, link, _ = setup
    other = "5725767000003000065"
    post(hooks, link, notification(link, ids=[LEAD, other]))
    leads = {
        LEAD: {"id": LEAD, "Email": AVA, "Last_Name": "Adams", "Company": "Lonestar"},
        other: {"id": other, "Email": "ben.brown@lonestar-discover.com", "Last_Name": "Brown",
                "Company": "Lonestar"},
    }  # fmt: skip
    zoho = FakeZohoRecords({"Leads": leads, "Contacts": {}, "Accounts": {}})
    assert run(zoho) == {"done": 2}
    read, _ = zoho.requests  # and the update
    assert (read.method, read.url.path, read.url.params["ids"]) == (
        "GET",
        "/crm/v7/Leads",
        f"{LEAD},{other}",
    )
    ((path, records),) = zoho.updates("Leads")
    assert path == "/crm/v7/Leads"
    assert [(r["id"], r["Designation"]) for r in records] == [
        (LEAD, "Vice President of Sales"),
        (other, "VP, Marketing"),
    ]


def test_a_contact_and_an_account_with_the_same_id_stay_apart(
    setup: Setup, hooks: FlaskClient, run: Any
) -> None:
    db, link, _ = setup
    same = "5725767000003000777"
    contacts = notification(link, module="Contacts", ids=[same], operation="update")
    post(hooks, link, contacts)
    post(hooks, link, accounts_notification(link, [same]))  # same channel, time and id
    assert kinds(db, link) == [("contacts", same), ("companies", same)]
    contact = {"id": same, "Email": AVA, "Last_Name": "Adams", "Title": None,
               "Account_Name": {"name": "Lonestar", "id": "1"}}  # fmt: skip
    account = {"id": same, "Account_Name": "Hill Country Analytics LLC",
               "Website": HILL_COUNTRY["website"]}  # fmt: skip
    zoho = FakeZohoRecords({"Contacts": {same: contact}, "Accounts": {same: account}, "Leads": {}})
    assert run(zoho) == {"done": 2}
    ((_, (to_contact,)),) = zoho.updates("Contacts")
    ((_, (to_account,)),) = zoho.updates("Accounts")
    assert to_contact["Title"] == "Vice President of Sales"
    assert to_contact["ContactData_Company_Name"] == "Lonestar Discover Works Inc."
    assert to_account["ContactData_Company_GUID"] == HILL_COUNTRY["GUID"]
    assert "Title" not in to_account and "ContactData_Company_GUID" not in to_contact
    as_contact = store.record(db, link.row["id"], same, "contacts")
    as_company = store.record(db, link.row["id"], same, "companies")
    assert as_contact is not None and as_company is not None
    assert as_contact["contact_guid"] == "D15C00000000000000000000000000C1"
    assert as_company["company_guid"] == HILL_COUNTRY["GUID"]


# --- the adapter and the channel -----------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "module"), [("contacts", "Contacts"), ("leads", "Leads"), ("companies", "Accounts")]
)
def test_the_adapter_reads_and_writes_its_kinds_module(kind: str, module: str) -> None:
    updated = {"code": "SUCCESS", "details": {"id": "1"}, "message": "record updated",
               "status": "success"}  # fmt: skip
    crm = FakeCRM(
        answer(200, {"data": [{"id": "1", "Phone": "+15125550100"}]}),
        answer(200, {"data": [updated]}),
    )
    adapter = ZOHO.adapter("https://www.zohoapis.eu", "token", crm.client(), kind=kind)
    assert adapter.read("1", ["Phone"]) == {"Phone": "+15125550100"}
    assert adapter.write_many({"1": {"Phone": "+15125550101"}, "2": {"Phone": "x"}})
    assert [str(request.url) for request in crm.requests] == [
        f"https://www.zohoapis.eu/crm/v7/{module}/1?fields=Phone",
        f"https://www.zohoapis.eu/crm/v7/{module}",
    ]


def test_a_missing_account_is_permanent_and_named_as_an_account() -> None:
    crm = FakeCRM(answer(204))
    adapter = Zoho("https://www.zohoapis.eu", "token", crm.client(), kind="companies")
    with pytest.raises(Permanent, match="no Zoho account 7: 204 No Content"):
        adapter.read("7", ["Website"])


def test_an_undeclared_kind_has_no_adapter() -> None:
    with pytest.raises(Permanent, match="zoho has no deals"):
        ZOHO.adapter("https://www.zohoapis.eu", "token", httpx.Client(), kind="deals")


def test_the_channel_watches_every_declared_module(setup: Setup) -> None:
    db, link, _ = setup
    assert ZOHO.objects == ("contacts", "leads", "companies")
    zoho = FakeZohoRecords({})
    with httpx.Client(transport=VendorTransport(zoho)) as client:
        renewed = subscriptions.renew(db, SECRET.encode(), client, "https://hooks.example", NOW)
    assert renewed == {
        link.row["id"]: f"channel {ZOHO.channel_id(link.row)} until 2026-11-29T12:00:00+00:00"
    }
    (request,) = zoho.requests
    assert request.url.path == "/crm/v7/actions/watch"
    assert json.loads(request.content)["watch"][0]["events"] == [
        "Contacts.create",
        "Contacts.edit",
        "Leads.create",
        "Leads.edit",
        "Accounts.create",
        "Accounts.edit",
    ]


# --- companies through their contacts --------------------------------------------------------


def test_a_contacts_account_gets_the_company_fields_of_its_enrichment_without_a_charge(
    setup: Setup, hooks: FlaskClient, run: Any
) -> None:
    """An enriched Contact whose Account_Name (a lookup) links an Account gives that Account
    the company's fields of the same enrichment, in the next round and for no credit; the
    Account's own notification for our write is then not enriched again."""
    db, link, org = setup
    contact_id = "5725767000003000888"
    post(hooks, link, notification(link, module="Contacts", ids=[contact_id], operation="update"))
    contact = {"id": contact_id, "Email": AVA, "Last_Name": "Adams", "Title": None,
               "Account_Name": {"name": "Lonestar", "id": ACCOUNT}}  # fmt: skip
    account = {"id": ACCOUNT, "Account_Name": "Lonestar", "Website": None, "Billing_City": None}
    zoho = FakeZohoRecords({"Contacts": {contact_id: contact}, "Accounts": {ACCOUNT: account}})

    assert run(zoho) == {"done": 1}
    assert credits(db, org) == 9
    read = zoho.requests[0]
    assert read.url.path == f"/crm/v7/Contacts/{contact_id}"
    assert read.url.params["fields"].split(",").count("Account_Name") == 1
    company_event = [e for e in store.events_of(db, link.row["id"]) if e["kind"] == "companies"]
    assert [(e["record_id"], e["status"]) for e in company_event] == [(ACCOUNT, "pending")]
    ((_, (to_contact,)),) = zoho.updates("Contacts")
    assert "Account_Name" not in to_contact  # the lookup is read, never written

    assert run(zoho) == {"done": 1}  # the next round: the Account is written
    ((path, (to_account,)),) = zoho.updates("Accounts")
    assert path == f"/crm/v7/Accounts/{ACCOUNT}"
    assert to_account["Billing_City"] == "Austin"
    assert to_account["ContactData_Company_GUID"] == "D15C0000000000A1"
    assert "Account_Name" not in to_account and "Title" not in to_account
    assert credits(db, org) == 9  # delivered with the contact: not charged again
    cached = store.record(db, link.row["id"], ACCOUNT, "companies")
    assert cached is not None and cached["company_guid"] == "D15C0000000000A1"

    post(hooks, link, accounts_notification(link, [ACCOUNT]))  # Zoho reports our write
    assert run(zoho) == {"done": 1}
    assert store.events_of(db, link.row["id"])[-1]["last_error"].startswith("unchanged since")
    assert credits(db, org) == 9 and len(zoho.updates("Accounts")) == 1


def test_a_contact_without_an_account_links_no_company() -> None:
    assert ZOHO.company_link
    assert ZOHO.linked_company({"Account_Name": "Lonestar", "Account_Name.id": ACCOUNT}) == ACCOUNT
    assert ZOHO.linked_company({"Account_Name": None, "Account_Name.id": None}) == ""
    crm = FakeCRM(answer(200, {"data": [{"id": "9", "Account_Name": None}]}))
    adapter = Zoho("https://www.zohoapis.eu", "token", crm.client())
    assert adapter.read("9", ["Account_Name", ZOHO.company_link]) == {
        "Account_Name": None, ZOHO.company_link: None,
    }  # fmt: skip
    assert crm.requests[0].url.params["fields"] == "Account_Name"
