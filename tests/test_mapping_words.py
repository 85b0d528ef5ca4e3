"""The mapping editor's words (connector/mapping_words.py): enrich fields labelled with an
example, rows refused by row (a duplicate named by the row the admin sees), and what changed
between two versions, on literal data."""

from __future__ import annotations

from connector import mapping_words, mappings
from connector.platforms.base import CrmField
from server import OUTPUT_FIELDS

HUBSPOT = mappings.load(mappings.DIRECTORY / "hubspot.yaml")


def row(property: str, field: str, policy: str = "fill_if_empty", transforms: str = "") -> dict:
    return {"property": property, "field": field, "transforms": transforms, "policy": policy}


def test_every_enrich_field_has_a_label_and_a_documented_sample() -> None:
    shown = mapping_words.enrich_fields({})
    assert [field.name for field in shown] == [*OUTPUT_FIELDS, *mappings.SIGNAL_FIELDS]
    assert all(field.label and field.label != field.name for field in shown)
    assert all(field.example for field in shown)
    by_name = {field.name: field for field in shown}
    assert by_name["compEmpRange"].label == "Employee range"
    assert by_name["conWorkLocAddr"].label == "Work street address"


def test_the_organizations_own_values_are_the_examples_where_it_has_them() -> None:
    rules = [mappings.Rule(field="conJobTitleEn", property="jobtitle"),
             mappings.Rule(field="compName", property="company")]  # fmt: skip
    preview_rows = [{"field": "compName", "value": "Lonestar Discover Works Inc."},
                    {"field": "compIndustry", "value": ""}]  # fmt: skip
    own = mapping_words.own_examples(preview_rows, {"jobtitle": "Head of Ops"}, rules)
    assert own == {"conJobTitleEn": "Head of Ops",
                   "compName": "Lonestar Discover Works Inc."}  # fmt: skip
    by_name = {field.name: field for field in mapping_words.enrich_fields(own)}
    assert by_name["conJobTitleEn"].example == "Head of Ops"
    assert by_name["compIndustry"].example == "Software"  # the sample: the org has none


def test_policies_read_in_words_one_for_each() -> None:
    assert mappings.POLICY_WORDS == {
        "fill_if_empty": "Fill if empty",
        "overwrite_if_ours": "Overwrite until a user edits",
        "always": "Always overwrite",
        "never": "Never",
    }
    assert set(mappings.POLICY_WORDS) == set(mappings.Policy.__args__)


def test_a_duplicate_property_is_named_by_the_rows_the_admin_sees() -> None:
    rows = [row("firstname", "conFirstName"), row("jobtitle", "conJobTitleEn"),
            row("jobtitle", "conFunctions")]  # fmt: skip
    assert mapping_words.row_refusals(rows) == {2: ["row 2 already writes jobtitle"]}


def test_a_rows_own_problems_are_said_of_its_columns() -> None:
    rows = [row("jobtitle", "conJobTitel"), row("", "compName"), row("x", "compName", "sometimes")]
    refused = mapping_words.row_refusals(rows)
    assert refused[0] == ["enrich field: unknown enrich result field 'conJobTitel'; did you mean "
                          "'conJobTitleEn'?"]  # fmt: skip
    assert refused[1] == ["CRM field: '' is not a property name (no spaces, not empty)"]
    assert refused[2][0].startswith("policy: unknown value 'sometimes'")


def test_what_the_crm_refuses_is_put_on_its_row() -> None:
    rows = [
        row("firstname", "conFirstName"),
        row("hs_object_id", "compEmpCount", "always", "integer"),
    ]
    mapping = HUBSPOT.model_copy(
        update={
            "output": tuple(
                mappings.Rule.model_validate({**r, "transforms": r["transforms"].split()})
                for r in rows
            )
        }
    )
    fields = [CrmField("firstname", "First Name", "text"),
              CrmField("hs_object_id", "Record ID", "number", read_only=True)]  # fmt: skip
    refused = mapping_words.crm_refusals(rows, mapping, fields)
    assert refused == {1: ["Record ID is read-only in the CRM"]}


def test_differences_between_versions_read_in_words() -> None:
    old = HUBSPOT
    output = [r for r in old.output if r.property != "phone"]
    output = [r.model_copy(update={"policy": "always"}) if r.property == "jobtitle" else r
              for r in output]  # fmt: skip
    output.append(mappings.Rule(field="conLevels", property="seniority", policy="never"))
    new = old.model_copy(update={"output": tuple(output), "minimum_grade": "A"})
    assert sorted(mapping_words.differences(old, new)) == sorted([
        "Adds seniority ← Job levels, Never",
        "Removes phone ← Work phone (e164), Overwrite until a user edits",
        "Changes jobtitle: policy Overwrite until a user edits → Always overwrite",
        "Minimum match grade: any → A",
    ])  # fmt: skip
    assert mapping_words.differences(old, old) == []


def test_the_fields_table_is_beside_the_mappings_not_one_of_them() -> None:
    assert mapping_words.FIELDS_FILE.parent == mappings.DIRECTORY
    assert mapping_words.FIELDS_FILE.suffix == ".csv"  # load_all reads *.yaml only
    assert "hubspot" in mappings.load_all(mappings.DIRECTORY)


def test_a_static_value_is_checked_against_the_crms_field() -> None:
    status = CrmField("status", "Lead Status", "picklist", ("NEW", "OPEN", "CONNECTED"))
    assert mapping_words.constant_refusal("OPEN", status) == ""
    assert mapping_words.constant_refusal("Open", status) == (
        "'Open' is not one of Lead Status's options as the CRM writes them (NEW, OPEN, CONNECTED)"
    )
    count = CrmField("seats", "Seats", "number")
    assert "holds numbers" in mapping_words.constant_refusal("ten", count)
    assert mapping_words.constant_refusal(10, count) == ""
    assert mapping_words.constant_refusal("x", None).startswith("no such field")


def test_a_static_value_reads_as_one_in_the_differences() -> None:
    rule = mappings.Rule(constant="Contact data", property="lead_source", policy="always")
    assert mapping_words.describe(rule) == 'lead_source ← "Contact data" (static value), ' \
        "Always overwrite"  # fmt: skip
    assert mapping_words.row_refusals([row("x", "compName") | {"constant": "y"}]) == {
        0: ["give field (an enrich field) or constant (a static value), not both"]
    }
