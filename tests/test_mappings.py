"""Tests for connector.mappings: the shipped files, the reference payloads, every transform
and policy, write-back changes, and load errors that name file, line and field."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from connector.mappings import (
    DIRECTORY,
    KEPT,
    NO_VALUE,
    SAME_VALUE,
    TRANSFORMS,
    Mapping,
    MappingError,
    Rule,
    below_minimum,
    check,
    is_empty,
    load,
    load_all,
    load_current,
    may_write,
    parse,
    same,
    value_at,
)
from connector.platforms import PLATFORMS as DECLARED
from server.enrich import OUTPUT_FIELDS
from tests.helpers.constants import PLATFORMS
from tests.helpers.yaml_bombs import ALIAS_BOMB, DEEP, nested

MAPPINGS = Path(__file__).resolve().parent.parent / "mappings"

# An enrich result as server/enrich.py gives it: every field, all strings, "" when unknown.
RESULT: dict[str, str] = {name: "" for name in OUTPUT_FIELDS} | {
    "recordStatus": "Active",
    "accuracy": "A+",
    "compGUID": "A1A1A1A1A1A1A1A1",
    "compName": "Lonestar Works Inc.",
    "compWebsite": "https://www.lonestar-works.com/",
    "compPhoneNo": "+1 512-555-0100",
    "compCity": "Austin",
    "compState": "TX",
    "compCountry": "United States",
    "compEmpCount": "1200",
    "compEmpRange": "1001 to 5000",
    "compRevRange": "$10M - $25M",
    "compIndustry": "Software",
    "compPubProfileUrl": "https://www.linkedin.com/company/lonestar-works",
    "conGUID": "AAAA0000AAAA0000AAAA0000AAAA0001",
    "conFirstName": "Ava",
    "conLastName": "Stone",
    "conFullName": "Ava Stone",
    "conEmail": "Ava.Stone@Lonestar-Works.com",
    "conJobTitleEn": "Vice President of Sales",
    "conLevels": "VP",
    "conFunctions": "Sales | Top Management",
    "conPubProfileUrl": "https://www.linkedin.com/in/ava-stone",
    "conWorkLocCity": "Austin",
    "conWorkLocState": "TX",
    "conWorkLocCountry": "United States",
    "conWorkLocPhoneNo": "+1 512-555-0100",
    "directDial1": "+1 512-555-XXXX",
}


def sample(name: str) -> Any:
    return json.loads((PLATFORMS / name).read_text())


def salesforce_sobject() -> dict[str, str | None]:
    """The sample Outbound Message's sObject as the flat dict the Salesforce mapping reads."""
    root = ElementTree.parse(PLATFORMS / "salesforce_outbound_message.xml").getroot()
    sobject = root.find(".//{http://soap.sforce.com/2005/09/outbound}sObject")
    assert sobject is not None
    return {child.tag.split("}")[1]: child.text for child in sobject}


@pytest.fixture(scope="module")
def shipped() -> dict[str, Mapping]:
    return load_all(MAPPINGS)


# --- the shipped files -----------------------------------------------------------------------


def test_every_mapping_file_loads_under_its_own_platform(shipped: dict[str, Mapping]) -> None:
    declared = [
        platform.mapping_file_for(kind).removesuffix(".yaml")
        for platform in DECLARED.values()
        for kind in platform.objects
    ]
    assert sorted(shipped) == sorted(declared)  # each kind a platform declares, mapped
    for path in MAPPINGS.glob("*.yaml"):
        assert check(path) == []
        assert load(path).name == path.stem  # <platform>.yaml, <platform>.<kind>.yaml


# --- reference payloads ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("platform", "payload", "record_id", "enrich_input"),
    [
        (
            "hubspot",
            sample("hubspot_workflow_webhook.json"),
            "3234574",
            {"conFirstName": "HubSpot", "conLastName": "Test"},
        ),
        (
            "hubspot",
            sample("hubspot_custom_action_execution_request.json"),
            "904",
            {"conEmail": "ajenkenbb@gnu.org"},
        ),
        ("hubspot", sample("hubspot_webhooks_api_event_batch.json")[0], "123", {}),
        (
            "salesforce",
            salesforce_sobject(),
            "003o000000xxxxxxxxx",
            {"conFirstName": "some", "conLastName": "dude"},
        ),
        (
            "zapier",
            sample("zapier_webhooks_post_action.json"),
            None,
            {"conFirstName": "Bryan", "conLastName": "Helmig"},
        ),
        (
            "zapier",
            sample("standard_webhooks_payload.json"),
            "1f81eb52-5198-4599-803e-771906343485",
            {"conFullName": "John Smith"},
        ),
        (
            "make",
            sample("standard_webhooks_payload.json"),
            "1f81eb52-5198-4599-803e-771906343485",
            {"conFullName": "John Smith"},
        ),
        (
            "n8n",
            sample("standard_webhooks_payload.json"),
            "1f81eb52-5198-4599-803e-771906343485",
            {"conFullName": "John Smith"},
        ),
    ],
)
def test_reference_payloads_give_their_record_id_and_enrich_input(
    shipped: dict[str, Mapping],
    platform: str,
    payload: Any,
    record_id: str | None,
    enrich_input: dict[str, str],
) -> None:
    assert shipped[platform].record_id(payload) == record_id
    assert shipped[platform].enrich_input(payload) == enrich_input


def test_hubspot_reads_the_v1_contact_the_custom_body_and_the_custom_action(
    shipped: dict[str, Mapping],
) -> None:
    hubspot = shipped["hubspot"]
    v1 = {
        "vid": 7,
        "canonical-vid": 9,
        "properties": {"email": {"value": "ava@lonestar-works.com"}, "company": {"value": ""}},
    }
    custom_body = {"hs_object_id": "51", "email": "ben@bluebonnet-labs.io", "company": "Bluebonnet"}
    action = {
        "object": {"objectId": 904, "properties": {"email": "[[unknown]]"}},
        "inputFields": {"email": " jane@acme.com ", "company": "Acme", "website": "acme.com"},
    }
    assert (hubspot.record_id(v1), hubspot.enrich_input(v1)) == (
        "9",
        {"conEmail": "ava@lonestar-works.com"},
    )
    assert (hubspot.record_id(custom_body), hubspot.enrich_input(custom_body)) == (
        "51",
        {"conEmail": "ben@bluebonnet-labs.io", "compName": "Bluebonnet"},
    )
    assert (hubspot.record_id(action), hubspot.enrich_input(action)) == (
        "904",
        {"conEmail": "jane@acme.com", "compName": "Acme", "compWebsite": "acme.com"},
    )


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("identities.0.value", "a@b.co"),
        ("identities.1.value", None),
        ("identities.first.value", None),
        ("name.first", None),
        ("name", "Ava"),
        ("missing.key", None),
    ],
)
def test_value_at_follows_dict_keys_and_list_indexes(path: str, value: Any) -> None:
    assert value_at({"identities": [{"value": "a@b.co"}], "name": "Ava"}, path) == value


def test_only_present_values_feed_enrich_and_scalars_become_text() -> None:
    mapping = Mapping.model_validate(
        {
            "platform": "test",
            "record_id": ["id"],
            "input": {
                "conEmail": ["email", "work_email"],
                "compName": ["company"],
                "compWebsite": ["site"],
                "country": ["country"],
                "conJobTitle": ["title"],
            },
            "output": [{"field": "compName", "property": "company"}],
        }
    )
    payload = {
        "id": 42,
        "email": "[[unknown]]",
        "work_email": "ava@lonestar-works.com",
        "company": "   ",
        "site": None,
        "country": {"code": "US"},
        "title": 7,
    }
    assert mapping.record_id(payload) == "42"
    assert mapping.enrich_input(payload) == {
        "conEmail": "ava@lonestar-works.com",
        "conJobTitle": "7",
    }
    assert mapping.record_id({}) is None


# --- transforms ------------------------------------------------------------------------------

TRANSFORM_CASES = [
    ("strip", "  Sales  ", "Sales"),
    ("lower", "Ava.Stone@Lonestar-Works.com", "ava.stone@lonestar-works.com"),
    ("lower", ["VP", "MD"], ["vp", "md"]),
    ("upper", "tx", "TX"),
    ("integer", "1,200", 1200),
    ("integer", "1200", 1200),
    ("integer", "1200.0", 1200),
    ("integer", "", None),
    ("integer", "1001 to 5000", None),
    ("split", "Sales | Top Management", ["Sales", "Top Management"]),
    ("split", "Sales", ["Sales"]),
    ("split", "", []),
    ("first", "Sales | Top Management", "Sales"),
    ("first", ["Sales", "Top Management"], "Sales"),
    ("first", "", ""),
    ("e164", "+1 512-555-0100", "+15125550100"),
    ("e164", "+1 (512) 555-0199", "+15125550199"),
    ("e164", "+44 20 7946 0958", "+442079460958"),
    ("e164", "+1 512-555-XXXX", ""),
    ("e164", "(281) 332-2575", ""),
    ("e164", "+1 555", ""),
    ("e164", "", ""),
    ("domain", "https://www.lonestar-works.com/", "lonestar-works.com"),
    ("domain", "HTTP://Sub.Acme.CO.UK/about", "acme.co.uk"),
    ("domain", "bluebonnet-labs.io", "bluebonnet-labs.io"),
    ("domain", "", ""),
]


@pytest.mark.parametrize(("name", "given", "expected"), TRANSFORM_CASES)
def test_transform(name: str, given: Any, expected: Any) -> None:
    assert TRANSFORMS[name](given) == expected


def test_every_transform_is_tested() -> None:
    assert sorted(TRANSFORMS) == sorted({name for name, _, _ in TRANSFORM_CASES})


def test_transforms_apply_in_order_and_an_empty_field_stays_empty() -> None:
    rule = Rule(field="conFunctions", property="f", transforms=("split", "first", "upper"))
    assert rule.value(RESULT) == "SALES"
    assert rule.value({"conFunctions": "[[unknown]]"}) == ""
    assert rule.value({}) == ""


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_no_transform_makes_a_value_of_an_empty_field(name: str) -> None:
    """Mapping.changes skips a rule whose result field is empty before transforming it."""
    assert is_empty(TRANSFORMS[name](""))
    rule = Rule(field="conFunctions", property="f", transforms=(name,))
    mapping = Mapping.model_validate(
        {"platform": "p", "record_id": ["id"], "input": {"conEmail": ["email"]}, "output": [rule]}
    )
    assert mapping.changes({"conFunctions": "[[unknown]]"}, {"f": ""}) == {}


@pytest.mark.parametrize("policy", ["fill_if_empty", "overwrite_if_ours", "always", "never"])
@pytest.mark.parametrize(
    "value", ["", " ", "[[unknown]]", ";", " | ", "a", "a;b", 0, 0.0, False, [], [""], ["a"]]
)
def test_changes_into_a_field_the_crm_leaves_empty_follow_the_policy(
    policy: str, value: Any
) -> None:
    """Its quick path for a property absent from the CRM's values answers as the rules do."""
    rule = Rule(field="conFunctions", property="f", policy=policy)
    mapping = Mapping.model_validate(
        {"platform": "p", "record_id": ["id"], "input": {"conEmail": ["email"]}, "output": [rule]}
    )
    allowed = not is_empty(value) and not same(value, None) and may_write(policy, None, "a")
    assert mapping.changes({"conFunctions": value}, {}, {"f": "a"}) == (
        {"f": value} if allowed else {}
    )


# --- policies --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "current", "ours", "allowed"),
    [
        ("fill_if_empty", None, None, True),
        ("fill_if_empty", "", None, True),
        ("fill_if_empty", "  ", None, True),
        ("fill_if_empty", "[[unknown]]", None, True),
        ("fill_if_empty", "Head of Sales", None, False),
        ("fill_if_empty", "Head of Sales", "Head of Sales", False),
        ("overwrite_if_ours", "", None, True),
        ("overwrite_if_ours", "[[unknown]]", None, True),
        ("overwrite_if_ours", "Head of Sales", "Head of Sales", True),
        ("overwrite_if_ours", "1200", 1200, True),
        ("overwrite_if_ours", "Chief Revenue Officer", "Head of Sales", False),
        ("overwrite_if_ours", "Head of Sales", None, False),
        ("always", "Chief Revenue Officer", None, True),
        ("always", "", None, True),
        ("never", "", None, False),
        ("never", "Chief Revenue Officer", "Chief Revenue Officer", False),
    ],
)
def test_may_write(policy: str, current: Any, ours: Any, allowed: bool) -> None:
    assert may_write(policy, current, ours) is allowed


POLICIES = Mapping.model_validate(
    {
        "platform": "test",
        "record_id": ["id"],
        "input": {"conEmail": ["email"]},
        "output": [
            {"field": "conJobTitleEn", "property": "title"},
            {"field": "compName", "property": "company", "policy": "overwrite_if_ours"},
            {"field": "recordStatus", "property": "status", "policy": "always"},
            {"field": "conEmail", "property": "email", "policy": "never"},
            {"field": "compEmpCount", "property": "employees", "transforms": ["integer"]},
        ],
    }
)


def test_fill_if_empty_fills_empty_and_unknown_fields_only() -> None:
    for current in ({}, {"title": None}, {"title": ""}, {"title": "[[unknown]]"}):
        assert POLICIES.changes(RESULT, current)["title"] == "Vice President of Sales"
    assert "title" not in POLICIES.changes(RESULT, {"title": "Head of Sales"})


def test_overwrite_if_ours_leaves_a_user_edit_alone() -> None:
    ours = {"company": "Lonestar Works"}
    assert POLICIES.changes(RESULT, {"company": "Lonestar Works"}, ours)["company"] == (
        "Lonestar Works Inc."
    )
    assert "company" not in POLICIES.changes(RESULT, {"company": "Lonestar (Austin)"}, ours)
    assert "company" not in POLICIES.changes(RESULT, {"company": "Lonestar Works"}, {})
    assert POLICIES.changes(RESULT, {"company": ""}, {})["company"] == "Lonestar Works Inc."


def test_always_overwrites_and_never_writes_nothing_but_still_shows() -> None:
    current = {"status": "No Longer", "email": ""}
    changes = POLICIES.changes(RESULT, current, {})
    assert changes["status"] == "Active"
    assert "email" not in changes
    assert POLICIES.outputs(RESULT) == {
        "title": "Vice President of Sales",
        "company": "Lonestar Works Inc.",
        "status": "Active",
        "email": "Ava.Stone@Lonestar-Works.com",
        "employees": 1200,
    }


# A list we wrote, as each CRM gives it back: HubSpot (multiple checkboxes), Salesforce
# (multi-select picklists) and Dataverse as text joined with ";" (in their option order, not
# ours), Zoho and Pipedrive v2 as a JSON array, and enrich's own " | ".
LIST_WRITTEN = ["Sales", "Marketing"]
LIST_FORMS = {
    "hubspot": "Sales;Marketing",
    "salesforce, reordered": "Marketing;Sales",
    "spaced": "Sales ; Marketing",
    "zoho": ["Sales", "Marketing"],
    "pipedrive, reordered": ["Marketing", "Sales"],
    "enrich": "Sales | Marketing",
}


@pytest.mark.parametrize("held", LIST_FORMS.values(), ids=LIST_FORMS.keys())
def test_a_list_we_wrote_is_ours_whatever_form_the_crm_holds_it_in(held: Any) -> None:
    assert may_write("overwrite_if_ours", held, LIST_WRITTEN)
    assert may_write("overwrite_if_ours", held, "Sales | Marketing")


@pytest.mark.parametrize("held", ["Sales;Operations", "Sales", ["Sales"], "Sales;Marketing;Legal"])
def test_a_list_a_user_changed_is_not_ours(held: Any) -> None:
    assert not may_write("overwrite_if_ours", held, LIST_WRITTEN)


LISTS = Mapping.model_validate(
    {
        "platform": "test",
        "record_id": ["id"],
        "input": {"conEmail": ["email"]},
        "output": [
            {
                "field": "conFunctions",
                "property": "functions",
                "transforms": ["split"],
                "policy": "overwrite_if_ours",
            }
        ],
    }
)


@pytest.mark.parametrize("held", LIST_FORMS.values(), ids=LIST_FORMS.keys())
def test_a_list_the_crm_already_holds_is_not_written_again(held: Any) -> None:
    always = LISTS.model_copy(
        update={"output": (LISTS.output[0].model_copy(update={"policy": "always"}),)}
    )
    result = {"conFunctions": "Sales | Marketing"}
    assert always.changes(result, {"functions": held}, {"functions": LIST_WRITTEN}) == {}


def test_a_list_we_wrote_is_kept_fresh_by_overwrite_if_ours() -> None:
    """Written as ["Sales", "Marketing"], held by HubSpot as "Sales;Marketing": when enrich
    later finds another function, the field is still ours and is updated."""
    result = {"conFunctions": "Sales | Marketing | Finance"}
    changes = LISTS.changes(result, {"functions": "Sales;Marketing"}, {"functions": LIST_WRITTEN})
    assert changes == {"functions": ["Sales", "Marketing", "Finance"]}


def test_changes_leave_out_unchanged_values_and_never_clear_a_field() -> None:
    current = {
        "title": "",
        "company": "Lonestar Works Inc.",
        "status": "Active",
        "email": "",
        "employees": "1200",
    }
    ours = {"company": "Lonestar Works Inc."}
    assert POLICIES.changes(RESULT, current, ours) == {"title": "Vice President of Sales"}
    no_match = {name: "" for name in OUTPUT_FIELDS} | {"recordStatus": "No Match"}
    current = {"title": "CTO", "company": "Acme", "status": "Active", "employees": "5"}
    assert POLICIES.changes(no_match, current, {"company": "Acme"}) == {"status": "No Match"}


def test_hubspot_write_back_of_a_full_result(shipped: dict[str, Mapping]) -> None:
    current = {
        "firstname": "Ava",
        "lastname": "",
        "jobtitle": "VP Sales",  # what we wrote last time: refreshed
        "company": "Lonestar",  # typed by a user: kept
        "phone": "+15125550100",  # already the same: left out
        "city": "[[unknown]]",
        "contactdata_record_status": "No Longer",
    }
    ours = {"jobtitle": "VP Sales", "company": "Lonestar Works"}
    assert shipped["hubspot"].changes(RESULT, current, ours) == {
        "lastname": "Stone",
        "jobtitle": "Vice President of Sales",
        "website": "https://www.lonestar-works.com/",
        "industry": "Software",
        "city": "Austin",
        "state": "TX",
        "country": "United States",
        "linkedin_url": "https://www.linkedin.com/in/ava-stone",
        "contactdata_employee_count": 1200,
        "contactdata_employee_range": "1001 to 5000",
        "contactdata_revenue_range": "$10M - $25M",
        "contactdata_job_levels": "VP",
        "contactdata_job_functions": "Sales | Top Management",
        "contactdata_record_status": "Active",
        "contactdata_contact_guid": "AAAA0000AAAA0000AAAA0000AAAA0001",
    }


def test_salesforce_write_back_of_a_full_result(shipped: dict[str, Mapping]) -> None:
    current = {"FirstName": "Ava", "LastName": "Stone", "Title": "", "Email": ""}
    changes = shipped["salesforce"].changes(RESULT, current, {})
    assert changes == {
        "Email": "ava.stone@lonestar-works.com",
        "Title": "Vice President of Sales",
        "Department": "Sales",
        "Phone": "+15125550100",
        "MailingCity": "Austin",
        "MailingState": "TX",
        "MailingCountry": "United States",
        "LinkedIn_URL__c": "https://www.linkedin.com/in/ava-stone",
        "ContactData_Company_Name__c": "Lonestar Works Inc.",
        "ContactData_Company_Domain__c": "lonestar-works.com",
        "ContactData_Industry__c": "Software",
        "ContactData_Employees__c": 1200,
        "ContactData_Employee_Range__c": "1001 to 5000",
        "ContactData_Revenue_Range__c": "$10M - $25M",
        "ContactData_Job_Levels__c": "VP",
        "ContactData_Job_Functions__c": "Sales | Top Management",
        "ContactData_Record_Status__c": "Active",
        "ContactData_Contact_GUID__c": "AAAA0000AAAA0000AAAA0000AAAA0001",
    }


def test_zapier_outputs_every_mapped_key_for_the_synchronous_response(
    shipped: dict[str, Mapping],
) -> None:
    assert shipped["zapier"].outputs(RESULT) == {
        "record_status": "Active",
        "accuracy": "A+",
        "contact_guid": "AAAA0000AAAA0000AAAA0000AAAA0001",
        "first_name": "Ava",
        "last_name": "Stone",
        "full_name": "Ava Stone",
        "email": "ava.stone@lonestar-works.com",
        "job_title": "Vice President of Sales",
        "job_levels": ["VP"],
        "job_functions": ["Sales", "Top Management"],
        "linkedin_url": "https://www.linkedin.com/in/ava-stone",
        "phone": "+15125550100",
        "city": "Austin",
        "state": "TX",
        "zip": "",
        "country": "United States",
        "company_guid": "A1A1A1A1A1A1A1A1",
        "company": "Lonestar Works Inc.",
        "company_website": "https://www.lonestar-works.com/",
        "company_domain": "lonestar-works.com",
        "company_phone": "+15125550100",
        "company_industry": "Software",
        "company_employees": 1200,
        "company_employee_range": "1001 to 5000",
        "company_revenue_range": "$10M - $25M",
        "company_city": "Austin",
        "company_state": "TX",
        "company_country": "United States",
        "company_linkedin_url": "https://www.linkedin.com/company/lonestar-works",
    }


# --- load errors -----------------------------------------------------------------------------

GOOD = """\
platform: test
record_id: [id]
input:
  conEmail: [email]
output:
  - field: conJobTitleEn
    property: title
    transforms: [strip]
    policy: overwrite_if_ours
"""


REFUSED_ANCHOR = (
    "YAML anchors and aliases (&name, *name) are refused: a mapping file never needs them; "
    "write the value out"
)


def write(tmp_path: Path, text: str, name: str = "test.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("old", "new", "problems"),
    [
        (
            "transforms: [strip]",
            "transforms: [strip, lowercase]",
            [
                "line 8, output[0].transforms[1]: unknown transform 'lowercase'; "
                "did you mean 'lower'?"
            ],
        ),
        (
            "policy: overwrite_if_ours",
            "policy: overwrite",
            [
                "line 9, output[0].policy: unknown value 'overwrite'; use 'fill_if_empty', "
                "'overwrite_if_ours', 'always' or 'never'"
            ],
        ),
        (
            "    policy:",
            "    polcy:",
            [
                "line 9, output[0].polcy: unknown key; "
                "the keys here are field, constant, property, transforms, policy"
            ],
        ),
        (
            "record_id:",
            "record_ids:",
            [
                "line 1, record_id: this required key is missing",
                "line 2, record_ids: unknown key; "
                "the keys here are platform, object, record_id, input, output, minimum_grade",
            ],
        ),
        (
            "conEmail:",
            "conMail:",
            [
                "line 4, input.conMail: unknown enrich input field 'conMail'; "
                "did you mean 'conEmail'?"
            ],
        ),
        (
            "conEmail:",
            "contactEmail:",
            ["line 4, input.contactEmail: 'contactEmail' is enrich's older name; write 'conEmail'"],
        ),
        (
            "field: conJobTitleEn",
            "field: conTitle",
            [
                "line 6, output[0].field: unknown enrich result field 'conTitle'; "
                "did you mean 'conJobTitleEn'?"
            ],
        ),
        (
            "  - field: conJobTitleEn\n    property: title",
            "  - property: title",
            [
                "line 6, output[0]: give field (an enrich field) or constant (a static value "
                "to write)"
            ],
        ),
        (
            "[email]",
            "[email, properties..email]",
            [
                "line 4, input.conEmail[1]: 'properties..email' is not a dotted path "
                "(keys and indexes joined by dots)"
            ],
        ),
        (
            "  conEmail: [email]\n",
            "  conEmail: [email]\n  conEmail: [work_email]\n",
            ["line 5, input.conEmail: this key is given twice"],
        ),
        (
            "policy: overwrite_if_ours\n",
            "policy: overwrite_if_ours\n  - {field: conFunctions, property: title}\n",
            ["line 10, output[1].property: property 'title' is already written by output[0]"],
        ),
        (
            "record_id: [id]",
            "record_id: id",
            ["line 2, record_id: expected a list, like [a, b]"],
        ),
        ("record_id: [id]", "record_id: []", ["line 2, record_id: give at least one"]),
        (
            "platform: test",
            "platform: Test CRM",
            ["line 1, platform: 'Test CRM' is not a platform name (lower-case letters, digits, _)"],
        ),
        (
            "[email]",
            "[email",
            ["line 5, near conEmail: not valid YAML: expected ',' or ']', but got ':'"],
        ),
        ("record_id: [id]", "record_id: &ids [id]", [f"line 2, record_id: {REFUSED_ANCHOR}"]),
        ("[email]", "*email", [f"line 4, input.conEmail: {REFUSED_ANCHOR}"]),
    ],
)
def test_load_errors_name_file_line_and_field(
    tmp_path: Path, old: str, new: str, problems: list[str]
) -> None:
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new))
    expected = [f"{path}, {problem}" for problem in problems]
    with pytest.raises(MappingError) as raised:
        load(path)
    assert raised.value.problems == expected
    assert str(raised.value) == "\n".join(expected)
    assert check(path) == expected


def test_all_problems_of_a_file_are_listed_in_line_order(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        GOOD.replace("platform: test", "platform: test\nextra: 1")
        .replace("[strip]", "[strip, titlecase]")
        .replace("conEmail", "conEmial"),
    )
    assert check(path) == [
        f"{path}, line 2, extra: unknown key; the keys here are platform, object, record_id, "
        "input, output, minimum_grade",
        f"{path}, line 5, input.conEmial: unknown enrich input field 'conEmial'; "
        "did you mean 'conEmail'?",
        f"{path}, line 9, output[0].transforms[1]: unknown transform 'titlecase'; "
        "known: domain, e164, first, integer, lower, split, strip, upper",
    ]


def test_an_empty_or_unreadable_file_is_a_problem(tmp_path: Path) -> None:
    empty = write(tmp_path, "# nothing yet\n")
    assert check(empty) == [
        f"{empty}, line 1: the file is empty; a mapping needs platform, record_id, input, output"
    ]
    missing = tmp_path / "missing.yaml"
    assert check(missing) == [f"{missing}: cannot be read (No such file or directory)"]


def test_check_of_a_good_file_finds_nothing(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    assert check(path) == []
    assert load(path).output == (
        Rule(
            field="conJobTitleEn",
            property="title",
            transforms=("strip",),
            policy="overwrite_if_ours",
        ),
    )


def test_load_all_lists_the_problems_of_every_file_and_a_platform_mapped_twice(
    tmp_path: Path,
) -> None:
    write(tmp_path, GOOD, "a.yaml")
    twice = write(tmp_path, GOOD, "b.yaml")
    bad = write(tmp_path, GOOD.replace("[strip]", "[strip, lowercase]"), "c.yaml")
    write(tmp_path, "not: [a mapping", "d.txt")  # not *.yaml: not read
    with pytest.raises(MappingError) as raised:
        load_all(tmp_path)
    assert raised.value.problems == [
        f"{twice}, line 1, platform: platform 'test' is already mapped by {tmp_path / 'a.yaml'}",
        f"{bad}, line 8, output[0].transforms[1]: unknown transform 'lowercase'; "
        "did you mean 'lower'?",
    ]
    with pytest.raises(MappingError, match="not a directory"):
        load_all(tmp_path / "a.yaml")


def test_each_rules_decision_says_why_and_the_written_ones_are_the_changes() -> None:
    mapping = Mapping.model_validate(
        {
            "platform": "hubspot",
            "record_id": ["id"],
            "input": {"conEmail": ["email"]},
            "output": [
                {"field": "conFirstName", "property": "firstname"},
                {"field": "conLastName", "property": "lastname"},
                {"field": "conJobTitleEn", "property": "jobtitle", "policy": "overwrite_if_ours"},
                {"field": "compName", "property": "company", "policy": "overwrite_if_ours"},
                {"field": "compIndustry", "property": "industry"},
                {"field": "recordStatus", "property": "status", "policy": "never"},
                {"field": "compEmpCount", "property": "employees", "transforms": ["integer"]},
            ],
        }
    )
    result = {"conFirstName": "Ava", "conLastName": "Adams", "conJobTitleEn": "VP Sales",
              "compName": "Lonestar", "recordStatus": "Active",
              "compEmpCount": "1,200"}  # fmt: skip
    current = {"firstname": "Ava", "lastname": "A.", "jobtitle": "Wizard", "company": "Old"}
    decided = mapping.decisions(result, current, {"company": "Old"})
    assert [(d.property, d.value, d.reason) for d in decided] == [
        ("firstname", "Ava", SAME_VALUE),
        ("lastname", "Adams", KEPT["fill_if_empty"]),
        ("jobtitle", "VP Sales", KEPT["overwrite_if_ours"]),
        ("company", "Lonestar", ""),
        ("industry", "", NO_VALUE),
        ("status", "Active", KEPT["never"]),
        ("employees", 1200, ""),
    ]
    changes = mapping.changes(result, current, {"company": "Old"})
    assert changes == {d.property: d.value for d in decided if d.write}


# --- what a sender of fields sends ---------------------------------------------------------------


def test_a_sender_may_write_the_mappings_keys_or_the_enrich_apis_own_names() -> None:
    n8n = load_current(DIRECTORY / "n8n.yaml")
    body = {"email": "a@x.com", "contactFullName": "Ann Lee", "compName": "", "record_id": 7,
            "data": {"companyName": "X Inc", "conEmail": "b@x.com", "contactJobTitle": "CEO"},
            "age": "40"}  # fmt: skip
    assert n8n.with_vendor_names(body) == {
        "conEmail": "a@x.com",  # the mapping's, not the envelope's conEmail
        "compName": "X Inc",  # the mapping reads data.companyName itself
        "contactFullName": "Ann Lee",
        "contactJobTitle": "CEO",
        "recordId": "7",
    }


def test_the_keys_and_the_example_are_the_mappings_plain_keys() -> None:
    marketo = load_current(DIRECTORY / "marketo.yaml")
    assert list(marketo.sender_keys().values())[:3] == ["email", "firstName", "lastName"]
    assert marketo.record_key == "id"
    sample = {"conEmail": "j@x.com", "compName": "X", "conGuid": "not a key of marketo's"}
    assert marketo.example(sample) == {"id": "1", "email": "j@x.com", "company": "X"}


# --- the bounded reader: every text is read, or refused, at a cost its size bounds -----------


def test_an_alias_bomb_is_refused_at_its_first_anchor_before_any_alias_is_followed(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, ALIAS_BOMB)  # 396 bytes standing for 9**9 values (issue 34)
    started = time.perf_counter()
    assert check(path) == [f"{path}, line 1, a0: {REFUSED_ANCHOR}"]
    assert time.perf_counter() - started < 1  # followed, the aliases took minutes


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (DEEP, f"line 2, record_id{'[0]' * 19}: nested more than 20 levels deep; a mapping file "
               "needs 4"),
        ("- " * 500 + "x\n", f"line 1, {'[0]' * 20}: nested more than 20 levels deep; a mapping "
                             "file needs 4"),
        ("- x\n" * 5000, "line 5000, [4999]: more than 5000 keys, values and list items; a "
         "mapping file needs hundreds"),  # the list and 4999 items are read
        (GOOD.replace("property: title", "property: " + "t" * 1001), "line 7, "
         "output[0].property: a value of over 1000 characters; names and paths are short"),
        ("platform: " + "1" * 5000, "line 1, platform: a value of over 1000 characters; names "
         "and paths are short"),  # as a number, more digits than Python converts (a 500)
        (GOOD + "#" * 64 * 1024, "line 1: the text is over 64 KiB; a mapping file is a few KiB"),
    ],
    ids=["1000-lists", "500-block-lists", "5001-values", "long-value", "long-number", "64-KiB"],
)  # fmt: skip
def test_the_reader_refuses_what_no_mapping_needs_naming_the_line(text: str, problem: str) -> None:
    with pytest.raises(MappingError) as raised:
        parse(text, "upload")
    assert raised.value.problems == [f"upload, {problem}"]


def test_twenty_levels_are_read_and_a_file_over_the_size_is_refused_unread(
    tmp_path: Path,
) -> None:
    with pytest.raises(MappingError) as raised:
        parse(nested(19), "upload")  # 20 levels with the file's own: read, then checked
    assert "upload, line 2, record_id[0]: expected text" in raised.value.problems
    big = write(tmp_path, GOOD + "#" * 64 * 1024)
    assert check(big) == [f"{big}, line 1: the text is over 64 KiB; a mapping file is a few KiB"]


# --- the minimum match grade -----------------------------------------------------------------


def test_a_match_below_the_minimum_grade_writes_nothing_and_each_row_says_why() -> None:
    mapping = load(DIRECTORY / "hubspot.yaml").model_copy(update={"minimum_grade": "A"})
    result = {"accuracy": "A-", "conFirstName": "Ava", "conLastName": "Adams"}
    assert mapping.changes(result, {}) == {}
    decided = {d.property: d.reason for d in mapping.decisions(result, {})}
    assert decided["lastname"] == "the match grade A- is below the minimum A"
    assert decided["industry"] == NO_VALUE  # nothing to write says so first
    assert mapping.changes({**result, "accuracy": "A+"}, {}) == {
        "firstname": "Ava", "lastname": "Adams"
    }  # fmt: skip


def test_below_minimum_orders_the_grades_best_first() -> None:
    assert [below_minimum(g, "A") == "" for g in ("A+", "A", "A-", "B", "")] == [
        True, True, False, False, False
    ]  # fmt: skip
    assert below_minimum("B", "") == ""  # no minimum: every grade


def test_an_unknown_minimum_grade_is_refused_naming_the_grades(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD + "minimum_grade: C\n")
    (problem,) = check(path)
    assert problem.endswith("minimum_grade: unknown grade 'C'; use one of A+, A, A-, B")


# --- static values ---------------------------------------------------------------------------


def test_a_static_value_is_written_to_each_matched_record_as_its_policy_allows() -> None:
    rule = Rule(constant="Contact data", property="lead_source")
    mapping = load(DIRECTORY / "hubspot.yaml").model_copy(update={"output": (rule,)})
    assert mapping.changes({"accuracy": "A"}, {}) == {"lead_source": "Contact data"}
    assert mapping.changes({"accuracy": "A"}, {"lead_source": "Web"}) == {}  # fill if empty
    assert mapping.changes({"accuracy": ""}, {}) == {}  # nothing matched: nothing to mark
    (decided,) = mapping.decisions({"accuracy": "A"}, {})
    assert (decided.field, decided.value, decided.write) == ("(static value)", "Contact data", True)


def test_a_rule_gives_an_enrich_field_or_a_static_value_not_both_nor_neither(
    tmp_path: Path,
) -> None:
    both = "  - field: conJobTitleEn\n    constant: VP\n    property: title"
    path = write(tmp_path, GOOD.replace("  - field: conJobTitleEn\n    property: title", both))
    assert check(path) == [
        f"{path}, line 6, output[0]: give field (an enrich field) or constant (a static value), "
        "not both"
    ]
