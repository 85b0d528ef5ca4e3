"""Dataverse's columns and rows found by e-mail, for the mapping editor and the preview, and
multi-select choice columns written and read back: each kind's adapter over a Dataverse
holding rows and table definitions (tests/helpers/dataverse.py, in the shapes of "Query table
definitions using the Web API" and "Use choices columns to store multiple options")."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from connector import mappings
from connector.platforms.base import FIELD_TYPES, TOKEN_REFUSED, CrmField, Permanent, WriteResult
from connector.platforms.dynamics import PLATFORM
from tests.helpers.crm import DYNAMICS
from tests.helpers.crm_fields import (
    dataverse_attribute as attribute,
)
from tests.helpers.crm_fields import (
    dataverse_options as options,
)
from tests.helpers.dataverse import FakeDataverseTables, unauthorized
from tests.helpers.vendors import VendorTransport

AVA_ID, BO_ID = "0b0a5c3e-8f1d-4c53-a6f2-6a0b2f5b1c01", "0b0a5c3e-8f1d-4c53-a6f2-6a0b2f5b1c02"
LEAD_ID = "1c0a5c3e-8f1d-4c53-a6f2-6a0b2f5b1c01"
ACCOUNT_ID = "2d0a5c3e-8f1d-4c53-a6f2-6a0b2f5b1c01"


CONTACT_ATTRIBUTES = [
    attribute("contactid", "Uniqueidentifier", "Contact", "UniqueIdentifierAttributeMetadata",
              IsValidForUpdate=False),
    attribute("emailaddress1", "String", "Email"), attribute("jobtitle", "String", "Job Title"),
    attribute("fullname", "String", "Full Name", IsValidForUpdate=False),
    attribute("parentcustomerid", "Customer", "Company Name", "LookupAttributeMetadata"),
    attribute("preferredcontactmethodcode", "Picklist", "Preferred Method of Contact",
              OptionSet=options((1, "Any"), (2, "Email"), (3, "Phone"))),
    attribute("new_jobfunctions", "Virtual", "Job Functions",
              "MultiSelectPicklistAttributeMetadata", IsCustomAttribute=True,
              GlobalOptionSet=options((100000000, "Engineering"), (100000001, "Sales"))),
    attribute("new_employees", "Integer", "Employees", IsCustomAttribute=True),
    attribute("donotemail", "Boolean", "Do not allow Emails"),
    attribute("birthdate", "DateTime", "Birthday"),
    attribute("creditlimit", "Money", "Credit Limit"),
]  # fmt: skip


@pytest.fixture
def crm() -> FakeDataverseTables:
    fake = FakeDataverseTables({
        "contacts": {AVA_ID: {"emailaddress1": "ava@acme.example"},
                     BO_ID: {"emailaddress1": "o'brien@acme.example"}},
        "leads": {LEAD_ID: {"emailaddress1": "ava@acme.example"}},
        "accounts": {ACCOUNT_ID: {"emailaddress1": "info@acme.example"}},
    })  # fmt: skip
    fake.attributes = {
        "contact": CONTACT_ATTRIBUTES,
        "lead": [attribute("leadqualitycode", "Picklist", "Rating",
                           OptionSet=options((1, "Hot"), (2, "Warm")))],
        "account": [attribute("industrycode", "Picklist", "Industry",
                              OptionSet=options((1, "Accounting")))],
    }  # fmt: skip
    return fake


def adapter(crm: Any, kind: str = "contacts") -> Any:
    client = httpx.Client(transport=VendorTransport(crm))
    return PLATFORM.adapter(DYNAMICS, "token", client, kind=kind)


def test_a_contacts_columns_come_from_its_attribute_definitions(crm: FakeDataverseTables) -> None:
    fields = {f.name: f for f in adapter(crm).fields()}
    assert fields["preferredcontactmethodcode"] == CrmField(
        "preferredcontactmethodcode", "Preferred Method of Contact", "picklist",
        ("1", "2", "3"), labels=("Any", "Email", "Phone"),
    )  # fmt: skip
    assert fields["new_jobfunctions"] == CrmField(
        "new_jobfunctions", "Job Functions", "multipicklist", ("100000000", "100000001"),
        custom=True, labels=("Engineering", "Sales"),
    )  # fmt: skip
    assert [name for name, f in fields.items() if f.read_only] == ["contactid", "fullname"]
    assert {name: f.type for name, f in fields.items()} == {
        "contactid": "other", "emailaddress1": "text", "jobtitle": "text", "fullname": "text",
        "parentcustomerid": "reference", "preferredcontactmethodcode": "picklist",
        "new_jobfunctions": "multipicklist", "new_employees": "number", "donotemail": "boolean",
        "birthdate": "datetime", "creditlimit": "number",
    }  # fmt: skip
    assert all(f.type in FIELD_TYPES for f in fields.values())
    paths = [r.url.path.rsplit("/", 1)[-1] for r in crm.requests]
    assert paths == ["Microsoft.Dynamics.CRM.PicklistAttributeMetadata",
                     "Microsoft.Dynamics.CRM.MultiSelectPicklistAttributeMetadata",
                     "Attributes"]  # fmt: skip
    assert "EntityDefinitions(LogicalName='contact')" in crm.requests[0].url.path


@pytest.mark.parametrize(
    ("kind", "table", "name", "options"),
    [("leads", "lead", "leadqualitycode", ("1", "2")),
     ("companies", "account", "industrycode", ("1",))],
)  # fmt: skip
def test_each_kind_lists_its_own_tables_columns(
    crm: FakeDataverseTables, kind: str, table: str, name: str, options: tuple[str, ...]
) -> None:
    (field,) = adapter(crm, kind).fields()
    assert f"LogicalName='{table}'" in crm.requests[0].url.path
    assert (field.name, field.type, field.options) == (name, "picklist", options)


def test_a_refused_token_is_permanent() -> None:
    with pytest.raises(Permanent, match=TOKEN_REFUSED):
        adapter(lambda request: unauthorized()).fields()


def test_columns_are_created_in_the_maker_portal(crm: FakeDataverseTables) -> None:
    with pytest.raises(Permanent, match="maker portal"):
        adapter(crm).create_field("new_score", "Score", "number")
    assert crm.requests == []


@pytest.mark.parametrize(
    ("kind", "email", "found"),
    [("contacts", "AVA@acme.example", AVA_ID), ("leads", "ava@acme.example", LEAD_ID),
     ("companies", "info@acme.example", ACCOUNT_ID), ("contacts", "nobody@acme.example", None)],
)  # fmt: skip
def test_a_row_is_found_by_its_emailaddress1(
    crm: FakeDataverseTables, kind: str, email: str, found: str | None
) -> None:
    assert adapter(crm, kind).find(email) == found
    assert crm.requests[0].url.params["$filter"] == f"emailaddress1 eq '{email}'"


def test_a_quote_in_the_address_is_doubled_in_the_filter(crm: FakeDataverseTables) -> None:
    assert adapter(crm).find("o'brien@acme.example") == BO_ID
    assert crm.requests[0].url.params["$filter"] == "emailaddress1 eq 'o''brien@acme.example'"
    assert adapter(crm).find("x' or emailaddress1 ne '") is None  # one literal: no injection


# --- multi-select choice columns -------------------------------------------------------------

JOB_FUNCTIONS = ["100000000", "100000001"]  # Engineering, Sales: a `split` list of option values


def test_a_multi_select_is_written_as_comma_separated_option_values(
    crm: FakeDataverseTables,
) -> None:
    result = adapter(crm).write(AVA_ID, {"new_jobfunctions": JOB_FUNCTIONS, "jobtitle": "CTO"})

    assert result == WriteResult(written={"new_jobfunctions": JOB_FUNCTIONS, "jobtitle": "CTO"})
    assert crm.patches("contacts") == [
        (AVA_ID, {"new_jobfunctions": "100000000,100000001", "jobtitle": "CTO"})
    ]
    assert crm.tables["contacts"][AVA_ID]["new_jobfunctions"] == "100000000,100000001"


def test_dataverse_refuses_a_multi_select_joined_with_semicolons(crm: FakeDataverseTables) -> None:
    client = httpx.Client(transport=VendorTransport(crm))
    url = f"{DYNAMICS}/api/data/v9.2/contacts({AVA_ID})"
    answer = client.patch(url, json={"new_jobfunctions": "100000000;100000001"},
                          headers={"If-Match": "*"})  # fmt: skip
    assert answer.status_code == 400
    assert crm.tables["contacts"][AVA_ID].get("new_jobfunctions") is None


@pytest.mark.parametrize(
    "ours", [JOB_FUNCTIONS, [100000000, 100000001], ("100000001", "100000000")]
)
def test_a_multi_select_we_wrote_reads_back_as_ours(crm: FakeDataverseTables, ours: Any) -> None:
    contacts = adapter(crm)
    contacts.write(AVA_ID, {"new_jobfunctions": ours})

    read = contacts.read(AVA_ID, ["new_jobfunctions"])["new_jobfunctions"]
    (many,) = contacts.read_many([AVA_ID], ["new_jobfunctions"]).values()

    assert isinstance(many, dict) and many["new_jobfunctions"] == read
    assert mappings.same(ours, read)
    cast = "Microsoft.Dynamics.CRM.MultiSelectPicklistAttributeMetadata"
    assert [r for r in crm.requests if r.url.path.endswith(cast)] == crm.requests[:1]  # once


def test_comma_separated_numbers_in_a_text_column_stay_text(crm: FakeDataverseTables) -> None:
    crm.tables["contacts"][AVA_ID]["jobtitle"] = "1,200"
    contacts = adapter(crm)

    assert contacts.read(AVA_ID, ["jobtitle"]) == {"jobtitle": "1,200"}
    contacts.write(AVA_ID, {"jobtitle": ["3", "4"]})
    assert crm.tables["contacts"][AVA_ID]["jobtitle"] == "3;4"
