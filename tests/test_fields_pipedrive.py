"""Pipedrive's fields, custom fields created, and records found by e-mail, for the mapping
editor and the preview: each kind's adapter over a Pipedrive holding records and field lists
(tests/helpers/pipedrive.py, API v2's shapes); and the settings page's "Create missing"
pressed for a Pipedrive connection, over the loopback fake CRM."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from flask import Flask

import server
from connector import connections, mapping_versions, mappings, store
from connector.app import create_app
from connector.platforms.base import FIELD_TYPES, TOKEN_REFUSED, CrmField, Permanent
from connector.platforms.pipedrive import HASH_KEY, PLATFORM
from tests.helpers.clock import Clock
from tests.helpers.constants import NOW, SECRET
from tests.helpers.crm_fields import pipedrive_field as field
from tests.helpers.crm_server import FakeCrm, running
from tests.helpers.orgs import organization
from tests.helpers.pipedrive import HeldPipedrive, lead
from tests.helpers.settings_forms import signed_in, token

HASH = "d4de1c1518b4531717c676029a45911c340390a6"  # a custom field's key (40 hex characters)
LEAD_ID = "adf21080-0e10-11eb-879b-05d71fb426ec"


SENIORITY = field(HASH, "Seniority", "enum", True, options=[
    {"id": 27, "label": "Senior", "color": None},
    {"id": 28, "label": "Junior", "color": None}])  # fmt: skip
PERSON_FIELDS = [
    field("id", "ID", "int"), field("name", "Name", "varchar"), field("emails", "Email", "varchar"),
    field("phones", "Phone", "phone"), field("org_id", "Organization", "org"),
    field("add_time", "Person created", "date"), field("job_title", "Job title", "varchar"),
    SENIORITY, field("e" * 40, "Interests", "set", True, options=[{"id": 1, "label": "AI"}]),
]  # fmt: skip


@pytest.fixture
def crm() -> HeldPipedrive:
    held = HeldPipedrive(
        persons={
            "7": {"id": 7, "name": "Ava", "emails": [{"value": "ava@acme.example"}]},
            "8": {"id": 8, "name": "Bo", "emails": [{"value": "o'brien@acme.example"}]},
        },
        leads={LEAD_ID: lead(LEAD_ID, "Lonestar", person_id=7)},
    )  # fmt: skip
    held.fields["personFields"] = list(PERSON_FIELDS)
    held.fields["organizationFields"] = [field("name", "Name", "varchar"),
                                         field("address", "Address", "address")]  # fmt: skip
    held.fields["dealFields"] = [field("title", "Title", "varchar"),
                                 field("f" * 40, "Budget", "monetary", True)]  # fmt: skip
    return held


def adapter(crm: HeldPipedrive, kind: str = "contacts") -> Any:
    return PLATFORM.adapter("https://acme.pipedrive.com", "token", crm.client(), kind=kind)


def test_a_persons_fields_are_named_as_the_adapter_writes_them() -> None:
    crm = HeldPipedrive()
    crm.fields["personFields"] = list(PERSON_FIELDS)
    fields = {f.name: f for f in adapter(crm).fields()}
    assert fields[HASH] == CrmField(HASH, "Seniority", "picklist", ("27", "28"), False, True,
                                    labels=("Senior", "Junior"))  # fmt: skip
    assert fields["e" * 40].type == "multipicklist" and fields["e" * 40].custom
    assert fields["email"] == CrmField(
        "email", "Email", "email"
    )  # `emails`, as the adapter reads it
    assert fields["phone"] == CrmField("phone", "Phone", "phone")
    assert fields["org_id"] == CrmField("org_id", "Organization", "reference")
    # The update body has no place for these: the adapter cannot write them.
    assert fields["job_title"].read_only and fields["id"].read_only
    assert not fields["name"].read_only
    assert all(f.type in FIELD_TYPES for f in fields.values())


def test_field_lists_are_read_page_by_page() -> None:
    crm = HeldPipedrive()
    many = [field(f"{n:040x}", f"Field {n}", "varchar", True) for n in range(1, 1203)]
    crm.fields["personFields"] = many
    listed = adapter(crm).fields()
    assert [f.name for f in listed] == [f["field_code"] for f in many]
    pages = [r.url.params for r in crm.requests]
    assert len(pages) == 3 and all(p["limit"] == "500" for p in pages)
    assert "cursor" not in pages[0] and pages[1]["cursor"] != pages[2]["cursor"]


def test_an_organizations_fields_come_from_its_own_list(crm: HeldPipedrive) -> None:
    fields = {f.name: f for f in adapter(crm, "companies").fields()}
    assert crm.requests[0].url.path == "/api/v2/organizationFields"
    assert fields["address"] == CrmField("address", "Address", "other")
    assert not fields["address"].read_only  # the adapter writes an organization's address


def test_a_leads_fields_are_its_own_deals_custom_ones_and_its_links(crm: HeldPipedrive) -> None:
    fields = {f.name: f for f in adapter(crm, "leads").fields()}
    assert fields["title"] == CrmField("title", "Title", "text")
    assert fields["f" * 40] == CrmField("f" * 40, "Budget", "number", custom=True)
    assert "dealFields" not in {f.name for f in fields.values()} and "deal/title" not in fields
    assert fields[f"person/{HASH}"].label == "Person: Seniority"
    assert fields[f"person/{HASH}"].options == ("27", "28")
    assert fields["person/job_title"].read_only
    assert fields["organization/name"] == CrmField(
        "organization/name", "Organization: Name", "text"
    )


def test_a_refused_token_is_permanent() -> None:
    crm = HeldPipedrive()
    crm.failures = [httpx.Response(401, json={"success": False, "error": "unauthorized access"})]
    with pytest.raises(Permanent, match=TOKEN_REFUSED):
        adapter(crm).fields()


@pytest.mark.parametrize(
    ("kind", "path"), [("contacts", "/api/v2/personFields"), ("leads", "/api/v2/dealFields")]
)
def test_a_custom_field_is_created_and_named_by_the_key_pipedrive_gives_it(
    crm: HeldPipedrive, kind: str, path: str
) -> None:
    created = adapter(crm, kind).create_field("contactdata_score", "ContactData Score", "number")
    (request,) = crm.requests
    assert (request.method, request.url.path) == ("POST", path)
    assert crm.sent("POST") == [(path, {"field_name": "ContactData Score", "field_type": "double"})]
    assert (
        len(created.name) == 40
        and created.name == crm.fields[path.split("/")[-1]][-1]["field_code"]
    )
    assert created == CrmField(created.name, "ContactData Score", "number", custom=True)


def test_a_leads_person_field_is_created_on_persons_and_named_as_the_lead_writes_it(
    crm: HeldPipedrive,
) -> None:
    created = adapter(crm, "leads").create_field("person/contactdata_score", "Score", "number")
    assert crm.sent("POST") == [("/api/v2/personFields",
                                 {"field_name": "Score", "field_type": "double"})]  # fmt: skip
    key = crm.fields["personFields"][-1]["field_code"]
    assert created == CrmField(f"person/{key}", "Person: Score", "number", custom=True)


def test_a_picklist_is_not_created_without_its_options(crm: HeldPipedrive) -> None:
    with pytest.raises(Permanent, match="created in Pipedrive"):
        adapter(crm).create_field("x", "Seniority", "picklist")
    assert crm.requests == []


def test_a_person_and_its_lead_are_found_by_email(crm: HeldPipedrive) -> None:
    assert adapter(crm).find("AVA@acme.example") == "7"
    assert adapter(crm, "leads").find("ava@acme.example") == LEAD_ID
    search = crm.requests[0].url
    assert search.path == "/api/v2/persons/search"
    assert dict(search.params) == {"term": "AVA@acme.example", "fields": "email",
                                   "exact_match": "true", "limit": "1"}  # fmt: skip
    assert crm.requests[-1].url.params["person_id"] == "7"


def test_no_person_is_none_and_a_quote_is_sent_as_it_is(crm: HeldPipedrive) -> None:
    assert adapter(crm).find("nobody@acme.example") is None
    assert adapter(crm, "leads").find("nobody@acme.example") is None
    assert adapter(crm).find("o'brien@acme.example") == "8"  # a query parameter, URL-encoded
    assert adapter(crm, "leads").find("o'brien@acme.example") is None  # Bo has no lead
    assert "o%27brien%40acme.example" in str(crm.requests[-2].url)


def test_an_organization_is_not_found_by_email(crm: HeldPipedrive) -> None:
    with pytest.raises(Permanent, match="no e-mail"):
        adapter(crm, "companies").find("ava@acme.example")


# --- "Create missing custom fields" on the settings page ---------------------------------------


@pytest.fixture
def fake() -> Iterator[FakeCrm]:
    with running(FakeCrm()) as server:
        yield server


def test_create_missing_maps_the_key_pipedrive_gave_and_a_second_press_creates_nothing(
    db_path: Path, fake: FakeCrm, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 35: the created field is named by Pipedrive's new key (AddPersonField200Response's
    data.field_code); the mapping is saved again writing to it, so the field is found next."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")  # the fake CRM on loopback
    app: Flask = create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": Clock(NOW)})
    db = store.connect(db_path)
    _, key = organization(db, name="Acme")
    link = connections.add(
        db, SECRET.encode(), NOW, name="Acme Pipedrive", platform="pipedrive", api_key=key,
        crm_base_url=fake.url, crm_token="0123456789abcdef0123456789abcdef01234567",
    ).row  # fmt: skip
    # a version saved while the field list could not be read: its job title field to create
    _, text = mapping_versions.current_text(db, link, "contacts")
    rows = [{"field": r.field, "property": r.property, "transforms": " ".join(r.transforms),
             "policy": r.policy} for r in mappings.parse(text, "pipedrive").output]  # fmt: skip
    rows.append({"field": "conJobTitleEn", "property": "contactdata_job_title", "policy": "always"})
    with server.write(db):
        mapping_versions.save(db, link, "contacts", mapping_versions.with_outputs(text, rows),
                              NOW, "test")  # fmt: skip
    client = signed_in(app, key)
    page = f"/settings/connections/{link['id']}/mapping?kind=contacts"
    press = f"/settings/connections/{link['id']}/mapping/create-fields?kind=contacts"

    for _ in range(2):
        assert client.post(press, data={"csrf_token": token(client.get(page))}).status_code == 303

    pipedrive = fake.mocked["pipedrive"]
    assert isinstance(pipedrive, HeldPipedrive)
    assert pipedrive.sent("POST") == [
        ("/api/v2/personFields", {"field_name": "Contactdata job title", "field_type": "varchar"})
    ]  # once: the second press finds it
    created = pipedrive.fields["personFields"][-1]["field_code"]
    assert HASH_KEY.fullmatch(created)
    mapping = mapping_versions.current(db, link, "contacts")
    assert [r.property for r in mapping.output if r.field == "conJobTitleEn"] == [created]
    assert [v["version"] for v in mapping_versions.versions(db, link, "contacts")] == [2, 1]
