"""Zoho CRM's fields and records found by e-mail, for the mapping editor and the preview: each
kind's adapter over a Zoho holding records and each module's field meta
(tests/helpers/zoho_crm.py, in the shapes of Zoho's field meta and search-records pages)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from connector.platforms.base import FIELD_TYPES, TOKEN_REFUSED, CrmField, Permanent
from connector.platforms.zoho import PLATFORM
from tests.helpers.crm_fields import zoho_field as meta
from tests.helpers.crm_fields import zoho_value as value
from tests.helpers.vendors import VendorTransport
from tests.helpers.zoho_crm import FakeZohoRecords

API_DOMAIN = "https://www.zohoapis.com"


CONTACT_FIELDS = [
    meta("Email", "Email", "email"), meta("Phone", "Phone", "phone"),
    meta("Lead_Source", "Lead Source", "picklist",
         pick_list_values=[value("-None-", "-None-"), value("Web Download", "Web")]),
    meta("Job_Functions", "Job Functions", "multiselectpicklist", custom_field=True,
         pick_list_values=[value("Engineering", "Engineering")]),
    meta("Employees", "Employees", "integer", custom_field=True),
    meta("Created_Time", "Created Time", "datetime", read_only=True),
    meta("Full_Name", "Full Name", "text", field_read_only=True),
    meta("Record_Id", "Record Id", "bigint",
         operation_type={"web_update": False, "api_create": False, "web_create": False,
                         "api_update": False}),
    meta("Account_Name", "Account Name", "lookup"), meta("Website", "Website", "website"),
    meta("Date_of_Birth", "Date of Birth", "date"),
    meta("Email_Opt_Out", "Email Opt Out", "boolean"),
    meta("Record_Image", "Record Image", "profileimage"),
]  # fmt: skip


@pytest.fixture
def crm() -> FakeZohoRecords:
    fake = FakeZohoRecords({
        "Contacts": {"1": {"id": "1", "Email": "ava@acme.example"},
                     "2": {"id": "2", "Email": "o'brien@acme.example"}},
        "Leads": {"9": {"id": "9", "Email": "ava@acme.example"}},
        "Accounts": {},
    })  # fmt: skip
    fake.fields = {"Contacts": CONTACT_FIELDS,
                   "Leads": [meta("Lead_Status", "Lead Status", "picklist",
                                  pick_list_values=[value("Contacted", "Contacted")])],
                   "Accounts": [meta("Industry", "Industry", "picklist",
                                     pick_list_values=[value("ASP", "ASP")])]}  # fmt: skip
    return fake


def adapter(crm: Any, kind: str = "contacts") -> Any:
    client = httpx.Client(transport=VendorTransport(crm))
    return PLATFORM.adapter(API_DOMAIN, "token", client, kind=kind)


def test_a_contacts_fields_come_from_the_field_meta_api_translated(crm: FakeZohoRecords) -> None:
    fields = {f.name: f for f in adapter(crm).fields()}
    asked = crm.requests[0].url
    assert (asked.path, dict(asked.params)) == ("/crm/v7/settings/fields", {"module": "Contacts"})
    assert fields["Lead_Source"] == CrmField(
        "Lead_Source", "Lead Source", "picklist", ("-None-", "Web Download")
    )  # the actual values, as a write sends them
    assert fields["Job_Functions"] == CrmField(
        "Job_Functions", "Job Functions", "multipicklist", ("Engineering",), custom=True
    )
    assert [name for name, f in fields.items() if f.read_only] == [
        "Created_Time", "Full_Name", "Record_Id"
    ]  # fmt: skip
    assert {name: f.type for name, f in fields.items()} == {
        "Email": "email", "Phone": "phone", "Lead_Source": "picklist",
        "Job_Functions": "multipicklist", "Employees": "number", "Created_Time": "datetime",
        "Full_Name": "text", "Record_Id": "number", "Account_Name": "reference",
        "Website": "url", "Date_of_Birth": "date", "Email_Opt_Out": "boolean",
        "Record_Image": "other",
    }  # fmt: skip
    assert all(f.type in FIELD_TYPES for f in fields.values())


@pytest.mark.parametrize(
    ("kind", "module", "picklist"),
    [("leads", "Leads", ("Lead_Status", ("Contacted",))),
     ("companies", "Accounts", ("Industry", ("ASP",)))],
)  # fmt: skip
def test_each_kind_lists_its_own_modules_fields(
    crm: FakeZohoRecords, kind: str, module: str, picklist: tuple[str, tuple[str, ...]]
) -> None:
    (field,) = adapter(crm, kind).fields()
    assert crm.requests[0].url.params["module"] == module
    assert (field.name, field.options) == picklist


def test_a_refused_token_is_permanent() -> None:
    invalid = {"code": "INVALID_TOKEN", "details": {}, "message": "invalid oauth token",
               "status": "error"}  # fmt: skip
    with pytest.raises(Permanent, match=TOKEN_REFUSED):
        adapter(lambda request: httpx.Response(401, json=invalid)).fields()


def test_a_field_is_created_labelled_so_zoho_names_it_as_asked(crm: FakeZohoRecords) -> None:
    made = adapter(crm, "leads").create_field("ContactData_Employees", "Unused", "number")

    create, read_back = crm.requests
    assert (create.method, create.url.path, dict(create.url.params)) == (
        "POST", "/crm/v7/settings/fields", {"module": "Leads"}
    )  # fmt: skip
    assert json.loads(create.content) == {"fields": [
        {"field_label": "ContactData Employees", "data_type": "integer", "length": 9}
    ]}  # fmt: skip
    field_id = crm.fields["Leads"][-1]["id"]
    assert read_back.url.path == f"/crm/v7/settings/fields/{field_id}"
    assert made == CrmField("ContactData_Employees", "ContactData Employees", "number",
                            custom=True)  # fmt: skip
    assert made in adapter(crm, "leads").fields()


def test_a_field_is_named_as_zoho_named_it(crm: FakeZohoRecords) -> None:
    """The name comes from Zoho's own description of the field, not from the one asked."""
    crm.api_names["ContactData Job Title"] = "ContactData_Job_Title1"
    made = adapter(crm).create_field("ContactData_Job_Title", "Job title", "text")
    assert (made.name, made.type) == ("ContactData_Job_Title1", "text")
    assert json.loads(crm.requests[0].content)["fields"][0]["length"] == 255


def test_a_refused_field_says_why_in_zohos_words(crm: FakeZohoRecords) -> None:
    refused = {"code": "INVALID_DATA", "message": "invalid data", "status": "error",
               "details": {"api_name": "data_type", "json_path": "$.fields[0].data_type",
                           "expected_data_type": "string"}}  # fmt: skip
    crm.refusals.append(httpx.Response(400, json={"fields": [refused]}))
    with pytest.raises(Permanent, match="INVALID_DATA: invalid data"):
        adapter(crm).create_field("ContactData_Industry", "Industry", "text")
    assert len(crm.requests) == 1  # nothing read back


def test_a_grant_without_the_create_scope_is_told_so(crm: FakeZohoRecords) -> None:
    mismatch = {"code": "OAUTH_SCOPE_MISMATCH", "details": {}, "status": "error",
                "message": "invalid oauth scope to access this URL"}  # fmt: skip
    crm.refusals.append(httpx.Response(401, json=mismatch))
    with pytest.raises(
        Permanent, match=r"lacks the scope ZohoCRM\.settings\.fields\.CREATE"
    ) as said:
        adapter(crm).create_field("ContactData_Industry", "Industry", "text")
    assert "Reconnect with Zoho CRM" in str(said.value)


def test_a_picklist_is_left_to_zohos_setup(crm: FakeZohoRecords) -> None:
    with pytest.raises(Permanent, match="Setup"):
        adapter(crm).create_field("ContactData_Level", "Level", "picklist")
    assert crm.requests == []


def test_a_contact_and_a_lead_are_found_by_email_and_none_is_zohos_204(
    crm: FakeZohoRecords,
) -> None:
    assert adapter(crm).find("AVA@acme.example") == "1"
    assert adapter(crm, "leads").find("ava@acme.example") == "9"
    assert adapter(crm).find("nobody@acme.example") is None
    assert crm.requests[0].url.path == "/crm/v7/Contacts/search"
    assert crm.requests[1].url.path == "/crm/v7/Leads/search"


def test_a_quote_in_the_address_is_sent_encoded_in_the_query(crm: FakeZohoRecords) -> None:
    assert adapter(crm).find("o'brien@acme.example") == "2"
    assert crm.requests[0].url.params["email"] == "o'brien@acme.example"
    assert "email=o%27brien%40acme.example" in str(crm.requests[0].url)


def test_an_account_is_not_found_by_email(crm: FakeZohoRecords) -> None:
    with pytest.raises(Permanent, match="no e-mail"):
        adapter(crm, "companies").find("ava@acme.example")
