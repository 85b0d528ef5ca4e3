"""Salesforce's fields and records found by e-mail, for the mapping editor and the preview:
the adapter of each kind reads its sObject's describe and queries its records by Email, from a
fake Salesforce (tests/helpers/crm.py) answering in the shapes Salesforce documents
(DescribeSObjectResult's `fields`, each a DescribeFieldResult; the Query resource's records)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from connector.platforms.base import FIELD_TYPES, TOKEN_REFUSED, CrmField, Permanent, Retriable
from connector.platforms.salesforce import PLATFORM
from tests.helpers.crm import SALESFORCE, FakeCRM, FakeSalesforce, answer, salesforce
from tests.helpers.crm_fields import salesforce_field as described
from tests.helpers.crm_fields import salesforce_picklist as picklist
from tests.helpers.vendors import VendorTransport, broken

CONTACT, OTHER_CONTACT, LEAD = "0035e00000AbCdEFGH", "0035e00000AbCdEFGI", "00Q5e00000AbCdEFGH"


CONTACT_FIELDS = [
    described("Id", "id", "Contact ID", updateable=False, createable=False, nillable=False),
    described("Email", "email", "Email"),
    described("Name", "string", "Full Name", updateable=False, createable=False),
    described("AccountId", "reference", "Account ID", referenceTo=["Account"]),
    described("LeadSource", "picklist", "Lead Source",
              picklistValues=picklist("Web", "Phone Inquiry", "Trade Show",
                                      inactive=("Trade Show",))),
    described("ContactData_Job_Functions__c", "multipicklist", "Job Functions",
              picklistValues=picklist("Engineering", "Sales")),
    described("ContactData_Employees__c", "double", "Employees"),
    described("Birthdate", "date"), described("LastModifiedDate", "datetime", updateable=False),
    described("DoNotCall", "boolean"), described("Phone", "phone"),
    described("LinkedIn_URL__c", "url"),
    described("MailingAddress", "address", updateable=False),
]  # fmt: skip


@pytest.fixture
def crm() -> FakeSalesforce:
    fake = FakeSalesforce({"Contact": {"Email"}, "Lead": {"Email"}, "Account": {"Name"}})
    fake.described = {
        "Contact": CONTACT_FIELDS,
        "Lead": [described("Status", "picklist", "Lead Status",
                           picklistValues=picklist("Open", "Qualified")),
                 described("Company", "string", "Company")],
        "Account": [described("Industry", "picklist", picklistValues=picklist("Banking")),
                    described("Name", "string", "Account Name")],
    }  # fmt: skip
    return fake


def adapter(crm: FakeSalesforce, kind: str = "contacts") -> Any:
    return PLATFORM.adapter(SALESFORCE, "token", httpx.Client(transport=VendorTransport(crm)),
                            kind=kind)  # fmt: skip


def test_a_contacts_fields_come_from_its_describe_translated() -> None:
    crm = FakeSalesforce({"Contact": set()})
    crm.described = {"Contact": CONTACT_FIELDS}
    fields = {field.name: field for field in adapter(crm).fields()}
    assert crm.requests[0].url.path == "/services/data/v62.0/sobjects/Contact/describe"
    assert fields["LeadSource"] == CrmField(
        "LeadSource", "Lead Source", "picklist", ("Web", "Phone Inquiry"), False, False
    )  # the inactive Trade Show is not offered
    assert fields["ContactData_Job_Functions__c"] == CrmField(
        "ContactData_Job_Functions__c", "Job Functions", "multipicklist",
        ("Engineering", "Sales"), read_only=False, custom=True,
    )  # fmt: skip
    assert fields["Name"].read_only and fields["Id"].read_only and not fields["Email"].read_only
    assert {name: field.type for name, field in fields.items()} == {
        "Id": "reference", "Email": "email", "Name": "text", "AccountId": "reference",
        "LeadSource": "picklist", "ContactData_Job_Functions__c": "multipicklist",
        "ContactData_Employees__c": "number", "Birthdate": "date", "LastModifiedDate": "datetime",
        "DoNotCall": "boolean", "Phone": "phone", "LinkedIn_URL__c": "url",
        "MailingAddress": "other",
    }  # fmt: skip
    assert all(field.type in FIELD_TYPES for field in fields.values())


@pytest.mark.parametrize(
    ("kind", "sobject", "picklist_field", "options"),
    [("leads", "Lead", "Status", ("Open", "Qualified")),
     ("companies", "Account", "Industry", ("Banking",))],
)  # fmt: skip
def test_each_kind_describes_its_own_sobject(
    crm: FakeSalesforce, kind: str, sobject: str, picklist_field: str, options: tuple[str, ...]
) -> None:
    fields = {field.name: field for field in adapter(crm, kind).fields()}
    assert crm.requests[0].url.path == f"/services/data/v62.0/sobjects/{sobject}/describe"
    assert fields[picklist_field].options == options
    assert fields[picklist_field].type == "picklist"


def test_a_refused_token_is_permanent_and_a_garbled_describe_is_not_read_as_no_fields() -> None:
    expired = [{"message": "Session expired or invalid", "errorCode": "INVALID_SESSION_ID"}]
    with pytest.raises(Permanent, match=TOKEN_REFUSED):
        salesforce(FakeCRM(answer(401, expired))).fields()
    with pytest.raises(Retriable, match="describe of Contact"):
        page = broken(httpx.Response(200, text="<html>maintenance</html>"))  # a proxy's page
        salesforce(FakeCRM(page)).fields()


def test_fields_are_created_in_salesforce_setup_not_through_the_api(crm: FakeSalesforce) -> None:
    with pytest.raises(Permanent, match="Setup"):
        adapter(crm).create_field("ContactData_Score__c", "Score", "number")
    assert crm.requests == []


def test_a_contact_and_a_lead_are_found_by_their_email_in_any_case(crm: FakeSalesforce) -> None:
    crm.records["Contact"] = {
        CONTACT: {"Email": "ava@acme.example"},
        OTHER_CONTACT: {"Email": "x@y.example"},
    }
    crm.records["Lead"] = {LEAD: {"Email": "ava@acme.example"}}
    assert adapter(crm).find("Ava@Acme.example") == CONTACT
    assert adapter(crm, "leads").find("ava@acme.example") == LEAD
    assert adapter(crm).find("nobody@acme.example") is None
    assert crm.requests[0].url.params["q"] == (
        "SELECT Id FROM Contact WHERE Email = 'Ava@Acme.example' ORDER BY CreatedDate LIMIT 1"
    )


def test_a_quote_or_backslash_in_the_address_is_escaped_in_the_soql(crm: FakeSalesforce) -> None:
    odd = "o'brien\\x@acme.example"  # a quote and a backslash are legal in a local part
    crm.records["Contact"] = {CONTACT: {"Email": odd}, OTHER_CONTACT: {"Email": "o"}}
    assert adapter(crm).find(odd) == CONTACT
    assert "'o\\'brien\\\\x@acme.example'" in crm.requests[0].url.params["q"]
    assert adapter(crm).find("o' OR Email != '") is None  # stays one literal: no injection


def test_an_account_is_not_found_by_email(crm: FakeSalesforce) -> None:
    with pytest.raises(Permanent, match="no e-mail"):
        adapter(crm, "companies").find("ava@acme.example")
    assert crm.requests == []
