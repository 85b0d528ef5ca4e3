"""Salesforce leads (Lead) and companies (Account) beside contacts, end to end: an Outbound
Message on each sObject (shaped as tests/data/platforms/salesforce_outbound_message.xml, its
sObject's xsi:type naming the type) posted with the connection's URL key is stored with its
kind, and the worker enriches it and writes that sObject's REST endpoint of a fake Salesforce
(httpx.MockTransport) with the fields its mapping names."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

import httpx
import pytest
from flask import Flask
from sqlite_utils import Database

from connector import backfill, connections, store, worker
from connector.platforms.base import Permanent, Retriable
from connector.platforms.salesforce import PLATFORM, salesforce_events
from tests.helpers.clock import Clock
from tests.helpers.constants import AVA, CRM, DATA, SECRET
from tests.helpers.crm import SF_DATA, FakeCRM, FakeSalesforce, salesforce, salesforce_answers
from tests.helpers.orgs import connected
from tests.helpers.vendors import VendorTransport

ORG = "00Do0000000xxxxxxx"  # the reference sample's organization
LEAD, OTHER_LEAD = "00Q5e00000AbCdEFGH", "00Q5e00000AbCdEFGI"
ACCOUNT = "0015e00000XyZaBCDE"
LONESTAR = {"Name": "Lonestar Discover Works Inc.", "Website": "https://www.lonestar-discover.com"}
SAM = "sam@hillcountry-analytics.com"  # in tests/data/discover_contacts.csv

# The fields each sObject type of the fake org has: the standard ones the mappings write,
# and the custom ones an admin created. NaicsCode, NaicsDesc and SicDesc are not there.
CUSTOM = {f"ContactData_{name}__c" for name in (
    "Company_Name Company_Domain Industry Employees Employee_Range Revenue_Range Job_Levels "
    "Job_Functions Record_Status Contact_GUID Company_GUID LinkedIn_URL Job_Change_Left_On "
    "Job_Change_New_Company Job_Change_New_Title"
).split()}  # fmt: skip
FIELDS = {
    "Contact": {"AccountId", "FirstName", "LastName", "Email", "Title", "Department", "Phone",
                "MailingStreet", "MailingCity", "MailingState", "MailingPostalCode",
                "MailingCountry", "LinkedIn_URL__c", "Account_Name__c", "Account_Website__c",
                *CUSTOM},
    "Lead": {"FirstName", "LastName", "Email", "Title", "Company", "Website", "Industry",
             "NumberOfEmployees", "AnnualRevenue", "Phone", "Street", "City", "State",
             "PostalCode", "Country", "LinkedIn_URL__c", *CUSTOM},
    "Account": {"Name", "Website", "Industry", "NumberOfEmployees", "AnnualRevenue", "Phone",
                "BillingStreet", "BillingCity", "BillingState", "BillingPostalCode",
                "BillingCountry", "Sic", "Description", *CUSTOM},
}  # fmt: skip


def outbound_message(sobject: str, *records: tuple[str, dict[str, str]]) -> bytes:
    """An Outbound Message as Salesforce sends it (the reference sample's envelope): one
    Notification (its id, then the sObject of `sobject` type with its fields) a record."""
    notifications = "".join(
        f"<Notification><Id>{key}</Id>"
        f'<sObject xsi:type="sf:{sobject}" xmlns:sf="urn:sobject.enterprise.soap.sforce.com">'
        + "".join(f"<sf:{name}>{escape(value)}</sf:{name}>" for name, value in fields.items())
        + "</sObject></Notification>"
        for key, fields in records
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" '
        'xmlns:xsd="http://www.w3.org/2001/XMLSchema" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"><soapenv:Body>'
        '<notifications xmlns="http://soap.sforce.com/2005/09/outbound">'
        f"<OrganizationId>{ORG}</OrganizationId><ActionId>04ko0000000xxxxxxx</ActionId>"
        '<SessionId xsi:nil="true"/>'
        "<EnterpriseUrl>https://nax.salesforce.com/services/Soap/c/30.0/00Do0000xxxxxxx"
        "</EnterpriseUrl>"
        "<PartnerUrl>https://nax.salesforce.com/services/Soap/u/30.0/00Do0000xxxxxxx"
        "</PartnerUrl>"
        f"{notifications}</notifications></soapenv:Body></soapenv:Envelope>"
    ).encode()


@dataclass
class Org:
    """The connector's app, its database, a Salesforce connection and a worker writing to
    `crm` (a fake Salesforce org) on the test clock."""

    app: Flask
    db: Database
    link: connections.Added
    crm: FakeSalesforce
    work: worker.Worker

    def post(self, body: bytes) -> None:
        """Post an Outbound Message with the connection's key; Salesforce's ack expected."""
        url = f"/hooks/{self.link.row['id']}/events?key={self.link.secret}"
        response = self.app.test_client().post(url, data=body, content_type="text/xml")
        assert response.status_code == 200 and b"<Ack>true</Ack>" in response.data

    def events(self) -> list[dict[str, Any]]:
        return store.events_of(self.db, self.link.row["id"])

    def credits(self) -> int:
        return self.db.execute("SELECT credits FROM organizations").fetchone()[0]


@pytest.fixture
def org(connector_app: Flask, db_path: Path, clock: Clock) -> Iterator[Org]:
    db, link, _ = connected(db_path, "salesforce", "00Dxx!sf-token", salesforce_org_ids=(ORG,))
    crm = FakeSalesforce(FIELDS)
    with httpx.Client(transport=VendorTransport(crm)) as client:
        work = worker.Worker(db, SECRET.encode(), clock, client, random.Random(7))
        yield Org(connector_app, db, link, crm, work)


# --- leads -----------------------------------------------------------------------------------


def test_leads_are_stored_as_leads_and_written_back_to_lead_in_one_collection(org: Org) -> None:
    ava = {"Id": LEAD, "LastName": "Adams", "Email": AVA, "Company": "[[unknown]]"}
    sam = {"Id": OTHER_LEAD, "FirstName": "Sam", "LastName": "Stone", "Email": SAM,
           "Company": "Hill Country", "Title": "Sales guy"}  # fmt: skip
    org.crm.records["Lead"] = {LEAD: dict(ava), OTHER_LEAD: dict(sam)}
    org.post(outbound_message("Lead", ("04l5e00000QrStUVWX", ava), ("04l5e00000QrStUVWY", sam)))
    assert [(e["kind"], e["record_id"]) for e in org.events()] == [
        ("leads", LEAD),
        ("leads", OTHER_LEAD),
    ]

    assert org.work.run_due() == {"done": 2}
    read, written = org.crm.requests
    assert read.url.path == "/services/data/v62.0/composite/sobjects/Lead"
    assert read.url.params["ids"] == f"{LEAD},{OTHER_LEAD}"
    assert written.url.path == "/services/data/v62.0/composite/sobjects"
    assert {r["attributes"]["type"] for r in json.loads(written.content)["records"]} == {"Lead"}
    ((ava_lead, sam_lead),) = [list(batch.values()) for batch in org.crm.writes("Lead")]
    assert ava_lead["Company"] == "Lonestar Discover Works Inc."  # the placeholder filled
    assert ava_lead["FirstName"] == "Ava" and ava_lead["Title"] == "Vice President of Sales"
    assert (ava_lead["City"], ava_lead["State"], ava_lead["Country"]) == (
        "Austin", "TX", "United States",
    )  # fmt: skip
    assert ava_lead["Website"] == "https://www.lonestar-discover.com"
    assert ava_lead["ContactData_Contact_GUID__c"] == "D15C00000000000000000000000000C1"
    assert ava_lead["ContactData_Company_Domain__c"] == "lonestar-discover.com"
    # a user's values are kept: Sam's company and title
    assert "Company" not in sam_lead and "Title" not in sam_lead
    assert sam_lead["ContactData_Company_Name__c"] == "Hill Country Analytics LLC"
    assert org.crm.records["Lead"][LEAD]["Company"] == "Lonestar Discover Works Inc."
    assert [e["status"] for e in org.events()] == ["done", "done"] and org.credits() == 8
    cached = store.record(org.db, org.link.row["id"], LEAD, "leads")
    assert cached is not None and cached["contact_guid"] == "D15C00000000000000000000000000C1"


# --- companies -------------------------------------------------------------------------------


def test_an_account_is_enriched_by_its_name_and_website_alone(org: Org) -> None:
    account = {"Id": ACCOUNT, **LONESTAR, "Phone": "(512) 555-0100"}
    org.crm.records["Account"] = {ACCOUNT: dict(account)}
    org.post(outbound_message("Account", ("04l5e00000QrStUVWZ", account)))
    ((kind, record_id),) = [(e["kind"], e["record_id"]) for e in org.events()]
    assert (kind, record_id) == ("companies", ACCOUNT)

    assert org.work.run_due() == {"done": 1}
    *reads, written = org.crm.requests
    assert {f"{r.method} {r.url.path}" for r in reads} == {
        f"GET /services/data/v62.0/sobjects/Account/{ACCOUNT}"
    }
    # the fields this org lacks, refused one an answer, are asked no more
    lacking = [set(r.url.params["fields"].split(",")) - FIELDS["Account"] for r in reads]
    assert lacking == [{"SicDesc", "NaicsCode", "NaicsDesc"}, {"NaicsCode", "NaicsDesc"},
                       {"NaicsDesc"}, set()]  # fmt: skip
    assert (written.method, written.url.path) == (
        "PATCH", f"/services/data/v62.0/sobjects/Account/{ACCOUNT}",
    )  # fmt: skip
    assert json.loads(written.content) == {
        "BillingCity": "Austin",
        "BillingState": "TX",
        "BillingPostalCode": "78701",
        "BillingCountry": "United States",
        "ContactData_Company_Domain__c": "lonestar-discover.com",
        "ContactData_Record_Status__c": "Active",
        "ContactData_Company_GUID__c": "D15C0000000000A1",
    }
    assert written.headers["Authorization"] == "Bearer 00Dxx!sf-token"
    # a company-only match, one credit on the pro tier
    (transaction,) = org.db.execute(
        "SELECT company_guid, contact_guid, credits FROM transactions"
    ).fetchall()
    assert tuple(transaction) == ("D15C0000000000A1", "", 1) and org.credits() == 9
    (event,) = org.events()
    assert event["status"] == "done"


def test_a_contact_and_an_account_with_the_same_id_stay_apart(org: Org) -> None:
    """Salesforce's ids differ by type (003 Contact, 001 Account); the connector does not
    count on it: each kind's record is cached and written on its own."""
    contact = {"Id": ACCOUNT, "LastName": "Adams", "Email": AVA}
    account = {"Id": ACCOUNT, **LONESTAR}
    org.crm.records["Contact"] = {ACCOUNT: dict(contact)}
    org.crm.records["Account"] = {ACCOUNT: dict(account)}
    org.post(outbound_message("Contact", ("04l5e00000QrStUVW1", contact)))
    org.post(outbound_message("Account", ("04l5e00000QrStUVW2", account)))
    assert [e["kind"] for e in org.events()] == ["contacts", "companies"]

    assert org.work.run_due() == {"done": 2}
    ((contact_write,),) = [list(w.values()) for w in org.crm.writes("Contact")]
    ((account_write,),) = [list(w.values()) for w in org.crm.writes("Account")]
    assert (
        contact_write["Title"] == "Vice President of Sales" and "BillingCity" not in contact_write
    )
    assert account_write["BillingCity"] == "Austin" and "Title" not in account_write
    link = org.link.row["id"]
    cached_contact = store.record(org.db, link, ACCOUNT, "contacts")
    cached_account = store.record(org.db, link, ACCOUNT, "companies")
    assert cached_contact and cached_contact["contact_guid"] == "D15C00000000000000000000000000C1"
    assert cached_account and cached_account["contact_guid"] == ""
    assert json.loads(cached_account["written"])["BillingCity"] == "Austin"

    # the account sent again unchanged is not enriched again; the contact's cache is not it
    org.post(outbound_message("Account", ("04l5e00000QrStUVW3", account)))
    assert org.work.run_due() == {"done": 1}
    assert org.events()[-1]["last_error"].startswith("unchanged since")
    assert org.credits() == 8


def test_a_contacts_account_gets_the_company_fields_of_its_enrichment_without_a_charge(
    org: Org,
) -> None:
    """Companies through their contacts: an enriched contact whose AccountId names an
    Account gives it the company's fields of that enrichment, at once and for no credit;
    the Account's own event for our write is then not enriched again."""
    contact = {"Id": "0035e00000AbCdEFGH", "LastName": "Adams", "Email": AVA}
    org.crm.records["Contact"] = {contact["Id"]: {**contact, "AccountId": ACCOUNT}}
    org.crm.records["Account"] = {ACCOUNT: {"Id": ACCOUNT, "Name": "Lonestar"}}
    org.post(outbound_message("Contact", ("04l5e00000QrStUVW4", contact)))

    assert org.work.run_due() == {"done": 1}
    assert org.credits() == 9
    ((company_event, _),) = [(e, e["payload"]) for e in org.events() if e["kind"] == "companies"]
    assert company_event["record_id"] == ACCOUNT and company_event["status"] == "pending"

    assert org.work.run_due() == {"done": 1}  # the next round: the Account is written
    ((account_write,),) = [list(w.values()) for w in org.crm.writes("Account")]
    assert account_write["BillingCity"] == "Austin"
    assert account_write["ContactData_Company_GUID__c"] == "D15C0000000000A1"
    assert "Name" not in account_write and "Title" not in account_write
    assert org.credits() == 9  # delivered with the contact: not charged again
    cached = store.record(org.db, org.link.row["id"], ACCOUNT, "companies")
    assert cached is not None and cached["company_guid"] == "D15C0000000000A1"

    # the Account's own Outbound Message for our write: unchanged, not enriched
    account = {"Id": ACCOUNT, "Name": "Lonestar", "Website": ""}
    org.post(outbound_message("Account", ("04l5e00000QrStUVW5", account)))
    assert org.work.run_due() == {"done": 1}
    assert org.events()[-1]["last_error"].startswith("unchanged since")
    assert org.credits() == 9


def test_an_sobject_type_the_connector_does_not_enrich_is_a_dead_letter_naming_it(
    org: Org,
) -> None:
    opportunity = {"Id": "0065e00000LmNoPQRS", "Name": "Lonestar renewal"}
    org.post(outbound_message("Opportunity", ("04l5e00000QrStUVW4", opportunity)))
    assert org.work.run_due() == {"dead": 1}
    (event,) = org.events()
    assert event["kind"] == "Opportunity"
    assert "Salesforce has no Opportunity the connector enriches" in event["last_error"]
    assert org.crm.requests == [] and org.credits() == 10


# --- the reader and the adapter, by kind ----------------------------------------------------


def test_each_notification_is_of_the_kind_its_sobject_type_names() -> None:
    body = outbound_message("Lead", ("04l5e00000QrStUVWX", {"Id": LEAD, "Company": "Acme"}))
    (event,) = salesforce_events(body)
    assert (event.kind, event.record_id, event.payload["attributes"]) == (
        "leads", LEAD, {"type": "Lead"},
    )  # fmt: skip
    account = outbound_message("Account", ("04l5e00000QrStUVWZ", {"Id": ACCOUNT}))
    assert salesforce_events(account)[0].kind == "companies"
    assert PLATFORM.objects == ("contacts", "leads", "companies")


@pytest.mark.parametrize(("kind", "sobject"), [("leads", "Lead"), ("companies", "Account")])
def test_the_adapter_calls_its_kinds_sobject_endpoints(kind: str, sobject: str) -> None:
    crm = FakeCRM(*[salesforce_answers] * 4)
    adapter = salesforce(crm, kind=kind)
    assert adapter.read("a1", ["Title"]) == {"Title": "CTO"}
    assert set(adapter.read_many(["a1", "a2"], ["Title"])) == {"a1", "a2"}
    assert adapter.write("a1", {"Industry": "Software"}).written == {"Industry": "Software"}
    adapter.write_many({"a1": {"Industry": "Software"}, "a2": {"Industry": "Retail"}})
    assert [f"{r.method} {r.url.copy_with(query=None)}" for r in crm.requests] == [
        f"GET {SF_DATA}/sobjects/{sobject}/a1",
        f"GET {SF_DATA}/composite/sobjects/{sobject}",
        f"PATCH {SF_DATA}/sobjects/{sobject}/a1",
        f"PATCH {SF_DATA}/composite/sobjects",
    ]
    records = json.loads(crm.requests[-1].content)["records"]
    assert [r["attributes"] for r in records] == [{"type": sobject}] * 2


def test_the_adapter_names_its_sobject_for_a_record_it_cannot_see() -> None:
    crm = FakeCRM(httpx.Response(200, json=[None, None]))
    found = salesforce(crm, kind="leads").read_many(["a1", "a2"], ["Title"])
    assert isinstance(found["a1"], Permanent) and found["a1"].reason.startswith("no such Lead")


def test_a_kind_salesforce_does_not_have_has_no_adapter() -> None:
    with pytest.raises(Permanent, match="salesforce has no deals"):
        PLATFORM.adapter(CRM, "token", httpx.Client(), kind="deals")


# --- listing a kind's records (a backfill) ---------------------------------------------------

SINCE = "2025-01-01T00:00:00.000+00:00"  # as backfill.since_from gives it
DISCOVER = DATA / "discover_contacts.csv"


def _listed_contacts(crm: FakeSalesforce, count: int) -> list[str]:
    """`count` Contacts of the fake org by ascending id, each modified in 2025 but the first
    (modified in 2024), each with a Discover e-mail; their ids."""
    emails = [row.split(",")[4] for row in DISCOVER.read_text().splitlines()[1 : count + 1]]
    ids = [f"0035e00000Bf{n:06d}" for n in range(count)]
    crm.records["Contact"] = {
        key: {"LastName": f"L{n}", "Email": email,
              "LastModifiedDate": f"{2024 if n == 0 else 2025}-06-01T08:00:00.000Z"}
        for n, (key, email) in enumerate(zip(ids, emails, strict=True))
    }  # fmt: skip
    return ids


def _adapter(crm: FakeSalesforce, kind: str = "contacts") -> Any:
    """An adapter over its own client: a page from a cursor saved by another process."""
    return PLATFORM.adapter(CRM, "token", httpx.Client(transport=VendorTransport(crm)), kind=kind)


def test_listing_pages_through_a_soql_query_by_its_next_records_url_resumed_anywhere() -> None:
    crm = FakeSalesforce(FIELDS)
    crm.batch = 2
    ids = _listed_contacts(crm, 7)
    asked = ["Email", "LastName", "NaicsCode"]  # NaicsCode: this org's Contact has none

    first = _adapter(crm).list_page(asked, SINCE, None)
    second = _adapter(crm).list_page(asked, SINCE, first.cursor)
    third = _adapter(crm).list_page(asked, SINCE, second.cursor)

    assert [list(page.records) for page in (first, second, third)] == [ids[1:3], ids[3:5], ids[5:]]
    assert first.records[ids[1]] == {"Email": crm.records["Contact"][ids[1]]["Email"],
                                     "LastName": "L1", "NaicsCode": None}  # fmt: skip
    assert [page.remaining for page in (first, second, third)] == [6, 4, 2]
    assert third.cursor is None and first.cursor and second.cursor
    assert first.cursor.startswith("/services/data/v62.0/query/01gFAKE")
    where = "WHERE LastModifiedDate >= 2025-01-01T00:00:00Z ORDER BY Id"
    assert crm.queries() == [  # the field the org lacks, refused, is asked no more
        f"SELECT Id, Email, LastName, NaicsCode FROM Contact {where}",
        f"SELECT Id, Email, LastName FROM Contact {where}",
    ]
    followed = [r.url.path for r in crm.requests if not r.url.path.endswith("/query")]
    assert followed == [first.cursor.split()[0], second.cursor.split()[0]]


def test_listing_asks_again_from_the_last_id_when_the_query_locator_expired() -> None:
    crm = FakeSalesforce(FIELDS)
    crm.batch = 2
    ids = _listed_contacts(crm, 7)
    first = _adapter(crm, "contacts").list_page(["Email"], SINCE, None)
    crm.cursors.clear()  # 15 minutes idle, or released by the user's eleventh cursor

    second = _adapter(crm).list_page(["Email"], SINCE, first.cursor)
    rest = _adapter(crm).list_page(["Email"], SINCE, second.cursor)

    assert (list(second.records), second.remaining) == (ids[3:5], 4)
    assert list(rest.records) == ids[5:] and rest.cursor is None
    assert crm.queries()[-1] == (
        "SELECT Id, Email FROM Contact WHERE LastModifiedDate >= 2025-01-01T00:00:00Z "
        f"AND Id > '{ids[2]}' ORDER BY Id"
    )


def test_listing_accounts_queries_account_with_no_date_when_no_since() -> None:
    crm = FakeSalesforce(FIELDS)
    crm.records["Account"] = {ACCOUNT: {**LONESTAR}}
    listed = _adapter(crm, "companies").list_page(["Name", "Website"], None, None)
    assert listed == ({ACCOUNT: LONESTAR}, None, 1)
    assert crm.queries() == ["SELECT Id, Name, Website FROM Account ORDER BY Id"]


@pytest.mark.parametrize(
    ("answer", "failure", "said"),
    [
        (httpx.Response(403, json=[{"message": "TotalRequests Limit exceeded.",
                                    "errorCode": "REQUEST_LIMIT_EXCEEDED"}]),
         Retriable, "REQUEST_LIMIT_EXCEEDED"),
        (httpx.Response(200, json={"totalSize": 3, "done": False, "records": []}),
         Retriable, "answer is not"),
        (httpx.Response(400, json=[{"message": "unexpected token: FROM",
                                    "errorCode": "MALFORMED_QUERY"}]),
         Permanent, "MALFORMED_QUERY"),
    ],
)  # fmt: skip
def test_a_listing_failure_is_retriable_or_permanent_as_any_call(
    answer: httpx.Response, failure: type[Exception], said: str
) -> None:
    crm = FakeSalesforce(FIELDS)
    crm.failures.append(answer)
    with pytest.raises(failure, match=said) as raised:
        _adapter(crm).list_page(["Email"], None, None)
    if "REQUEST_LIMIT" in said:
        assert raised.value.retry_after == 3600.0


def test_a_cursor_that_is_not_a_query_locator_is_not_followed() -> None:
    crm = FakeSalesforce(FIELDS)
    with pytest.raises(Permanent, match="not a Salesforce query cursor"):
        _adapter(crm).list_page(
            ["Email"], None, "https://attacker.example/steal 0035e00000Bf000001"
        )
    assert crm.requests == []


def test_a_backfill_of_salesforce_contacts_is_counted_then_queued_and_written_once(
    org: Org,
) -> None:
    org.crm.batch = 8
    ids = _listed_contacts(org.crm, 20)
    link_id = org.link.row["id"]

    estimate = backfill.dry_run(org.work, link_id, "contacts", "", lambda _: None)

    assert (estimate.listed, estimate.identified, estimate.to_enrich) == (20, 20, 20)
    assert "a run queues at most 10 records (the balance)" in estimate.summary()
    assert len(org.crm.queries()) == 1 and not org.events()  # one query, its locator followed
    lines: list[str] = []

    row = backfill.run(org.work, link_id, "contacts", "", None, report=lines.append)

    assert (row["state"], row["queued"], row["note"]) == ("stopped", 10, "at the balance")
    # two batches of 8: the second's 6 the balance left out are left for later, not listed
    assert lines[-1].startswith("listed 10 of 20, queued 10, skipped 0, 6 left for later")
    while org.work.run_due():
        pass
    events = org.events()
    assert [e["status"] for e in events] == ["done"] * 10
    assert [e["record_id"] for e in events] == ids[:10]
    written = Counter(key for batch in org.crm.writes("Contact") for key in batch)
    assert sorted(written) == ids[:10] and set(written.values()) == {1}
    assert all(org.crm.records["Contact"][key].get("Title") for key in ids[:10])
