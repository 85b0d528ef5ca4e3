"""Pipedrive's organizations (our companies) and leads end to end: a webhook v2 body of each,
posted as Pipedrive posts it (the connection's secret as the Basic auth password), is stored
with its kind, and the worker enriches it and writes the right endpoint of a Pipedrive fake
(httpx.MockTransport): an organization by its name and web site, a lead through the person
and the organization it links. A person and an organization with the same id stay apart."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlite_utils import Database

from connector import connections, store, worker
from connector.platforms import PLATFORMS as DECLARED
from tests.helpers.constants import AVA, CRM, NOW, PLATFORMS, SECRET
from tests.helpers.orgs import connected
from tests.helpers.pipedrive import HeldPipedrive, lead

PERSON_CHANGED = json.loads((PLATFORMS / "pipedrive_v2_person_updated.json").read_text())
LEAD_ID = "adf21080-0e10-11eb-879b-05d71fb426ec"  # a lead's UUID (Pipedrive's docs' example)
LONESTAR = "Lonestar Discover Works Inc."  # in tests/data/discover_companies.csv
WEBSITE = "https://www.lonestar-discover.com"
# An organization as GET /api/v2/organizations/{id} gives it (OrganizationItem), no address
# (OrganizationItem's `address` is an object when there is one, never null).
ORGANIZATION = {
    "id": 12, "name": LONESTAR, "owner_id": 12345678, "add_time": "2025-06-19T16:00:00Z",
    "update_time": "2025-06-19T16:07:36Z", "is_deleted": False, "visible_to": 3,
    "label_ids": [], "custom_fields": {}, "website": WEBSITE,
}  # fmt: skip
# A lead as GET /api/v1/leads/{id} gives it: it links person 7 and organization 12.
LEAD = lead(LEAD_ID, "Lonestar deal", person_id=7, organization_id=12)
# What the worker writes to an organization without an address, from Lonestar's record.
AUSTIN = {
    "address": {
        "locality": "Austin", "admin_area_level_1": "TX", "postal_code": "78701",
        "country": "United States", "value": "Austin, TX 78701, United States",
    }
}  # fmt: skip


def webhook(entity: str, data: dict[str, Any], key: str = "", **meta: Any) -> dict[str, Any]:
    """A webhook v2 body about `entity`: the person sample's meta, for this record."""
    body = copy.deepcopy(PERSON_CHANGED)
    key = key or f"{entity}-event"
    body["meta"].update(entity=entity, entity_id=str(data["id"]), id=key, **meta)
    body["data"], body["previous"] = data, {"name": None}
    return body


@pytest.fixture
def setup(
    connector_app: Flask, db_path: Path
) -> Iterator[tuple[Database, connections.Added, Flask]]:
    """The discover dataset, Acme (pro, 10 credits) with a Pipedrive connection, its app."""
    db, link, _ = connected(db_path, "pipedrive", "0123456789abcdef0123456789abcdef01234567")
    yield db, link, connector_app


def post(app: Flask, link: connections.Added, body: dict[str, Any]) -> Any:
    url = f"/hooks/{link.row['id']}/events"
    response = app.test_client().post(url, json=body, auth=("pipedrive", link.secret))
    assert response.status_code == 200
    return response.get_json()


def work(db: Database, crm: HeldPipedrive) -> dict[str, int]:
    with crm.client() as client:
        return dict(worker.Worker(db, SECRET.encode(), lambda: NOW, client, random.Random(7))
                    .run_due())  # fmt: skip


def test_an_organization_is_a_company_enriched_by_name_and_web_site_into_its_address(
    setup: tuple[Database, connections.Added, Flask],
) -> None:
    db, link, app = setup
    assert post(app, link, webhook("organization", ORGANIZATION)) == {"accepted": 1}
    (event,) = store.events_of(db, link.row["id"])
    assert (event["kind"], event["record_id"]) == ("companies", "12")

    crm = HeldPipedrive(organizations={"12": ORGANIZATION})
    assert work(db, crm) == {"done": 1}
    assert crm.sent("GET") == [
        ("/api/v2/organizations/12", None),  # its values
        ("/api/v2/organizations/12", None),  # its address, read whole before it is written
    ]
    assert crm.sent() == [("/api/v2/organizations/12", AUSTIN)]
    cached = store.record(db, link.row["id"], "12", "companies")
    assert cached is not None and cached["company_guid"] == "D15C0000000000A1"
    assert cached["contact_guid"] == ""  # a company-only match

    # Pipedrive's webhook for our own write (change_source "api") is ignored, unenriched.
    echo = webhook("organization", {**ORGANIZATION, **AUSTIN}, "echo", change_source="api")
    echo["previous"] = {"address": None}
    post(app, link, echo)
    assert work(db, crm) == {"done": 1}
    assert store.events_of(db, link.row["id"])[-1]["last_error"].startswith(
        "our own write of address_country"
    )
    assert len(crm.sent()) == 1


def test_an_address_a_user_typed_keeps_its_text_and_parts() -> None:
    typed = {"value": "Congress Ave 100, Austin", "locality": "Austin", "route": "Congress Ave"}
    crm = HeldPipedrive(organizations={"12": {**ORGANIZATION, "address": typed}})
    adapter = DECLARED["pipedrive"].adapter(CRM, "token", crm.client(), kind="companies")
    adapter.write("12", {"address_postal_code": "78701", "address_country": "United States"})
    assert crm.sent()[0][1] == {
        "address": {**typed, "postal_code": "78701", "country": "United States"}
    }


def test_an_address_keeps_its_subpremise_when_a_part_is_written() -> None:
    """Issue 35: OrganizationItemAddress has a `subpremise` (the suite or apartment number,
    pipedrive/client-nodejs src/versions/v2/models/organization-item-address.ts); a PATCH
    replaces the address whole, so the parts written were sent without it and it was lost."""
    typed = {"value": "100 Congress Ave, Suite 200", "route": "Congress Ave",
             "street_number": "100", "subpremise": "Suite 200"}  # fmt: skip
    crm = HeldPipedrive(organizations={"12": {**ORGANIZATION, "address": typed}})
    adapter = DECLARED["pipedrive"].adapter(CRM, "token", crm.client(), kind="companies")
    assert adapter.read("12", ["address_subpremise"]) == {"address_subpremise": "Suite 200"}
    adapter.write("12", {"address_locality": "Austin"})
    assert crm.sent()[0][1] == {"address": {**typed, "locality": "Austin"}}


def test_a_person_and_an_organization_with_the_same_id_stay_apart(
    setup: tuple[Database, connections.Added, Flask],
) -> None:
    db, link, app = setup
    person = {**PERSON_CHANGED["data"], "emails": [{"value": AVA, "primary": True}]}
    post(app, link, webhook("person", person))
    post(app, link, webhook("organization", ORGANIZATION))
    kinds = {e["kind"]: e["record_id"] for e in store.events_of(db, link.row["id"])}
    assert kinds == {"contacts": "12", "companies": "12"}

    crm = HeldPipedrive(persons={"12": person}, organizations={"12": ORGANIZATION})
    assert work(db, crm) == {"done": 2}
    assert [path for path, _ in crm.sent()] == ["/api/v2/organizations/12"]
    assert crm.held["persons"]["12"].get("address") is None
    contact = store.record(db, link.row["id"], "12", "contacts")
    company = store.record(db, link.row["id"], "12", "companies")
    assert contact is not None and company is not None
    assert contact["contact_guid"] == "D15C00000000000000000000000000C1"
    assert json.loads(company["written"]) == {
        "address_locality": "Austin", "address_admin_area_level_1": "TX",
        "address_postal_code": "78701", "address_country": "United States",
    }  # fmt: skip


def test_a_lead_is_enriched_through_the_person_and_organization_it_links(
    setup: tuple[Database, connections.Added, Flask],
) -> None:
    db, link, app = setup
    assert post(app, link, webhook("lead", LEAD)) == {"accepted": 1}
    (event,) = store.events_of(db, link.row["id"])
    assert (event["kind"], event["record_id"]) == ("leads", LEAD_ID)

    person = {**PERSON_CHANGED["data"], "id": 7, "name": "Ava Adams"}
    person["emails"] = [{"value": AVA, "primary": True, "label": "work"}]
    crm = HeldPipedrive(
        persons={"7": person}, organizations={"12": ORGANIZATION}, leads={LEAD_ID: LEAD}
    )
    assert work(db, crm) == {"done": 1}
    reads = [(r.url.path, r.url.params.get("ids")) for r in crm.requests if r.method == "GET"]
    assert reads[:3] == [
        (f"/api/v1/leads/{LEAD_ID}", None),
        ("/api/v2/persons", "7"),
        ("/api/v2/organizations", "12"),
    ]
    assert crm.sent() == [("/api/v2/organizations/12", AUSTIN)]  # Ava's e-mail is there
    cached = store.record(db, link.row["id"], LEAD_ID, "leads")
    assert cached is not None and cached["contact_guid"] == "D15C00000000000000000000000000C1"
    assert json.loads(cached["written"])["organization/address_locality"] == "Austin"


def test_a_lead_without_an_organization_has_its_parts_dropped_with_the_reason() -> None:
    crm = HeldPipedrive(leads={LEAD_ID: {**LEAD, "organization_id": None}})
    adapter = DECLARED["pipedrive"].adapter(CRM, "token", crm.client(), kind="leads")
    result = adapter.write(LEAD_ID, {"organization/address_locality": "Austin"})
    assert result.dropped == {
        "organization/address_locality": "not sent: the lead links no organization"
    }
    assert crm.sent() == []


def test_a_v1_organization_webhook_is_read_as_v2_with_its_address_as_one_object() -> None:
    v1 = {
        "v": 1, "event": "updated.organization",
        "meta": {"v": 1, "action": "updated", "object": "organization", "id": 12,
                 "timestamp_micro": 1750349256754000, "change_source": "app",
                 "webhook_id": "1234567"},
        "current": {"id": 12, "name": LONESTAR, "address": "Austin, TX", "address_locality":
                    "Austin", "address_country": None, "address_formatted_address": "Austin"},
        "previous": {"id": 12, "name": "Lonestar", "address": None, "address_locality": None},
    }  # fmt: skip
    (event,) = DECLARED["pipedrive"].events(json.dumps(v1).encode())
    assert (event.kind, event.record_id) == ("companies", "12")
    address = event.payload["data"]["address"]
    assert (address["value"], address["locality"]) == ("Austin, TX", "Austin")
    assert "address_locality" not in event.payload["data"]
    assert event.payload["previous"]["name"] == "Lonestar"


def test_a_persons_organization_gets_the_company_fields_of_its_enrichment_without_a_charge(
    setup: tuple[Database, connections.Added, Flask],
) -> None:
    """Companies through their contacts: an enriched person whose org_id (v2: the
    organization's id, an integer) names an organization gives it the company's fields of
    that enrichment, for no credit; the organization's webhook for our write is our echo."""
    db, link, app = setup
    person = {**PERSON_CHANGED["data"], "id": 7, "name": "Ava Adams", "org_id": 12}
    person["emails"] = [{"value": AVA, "primary": True, "label": "work"}]
    assert DECLARED["pipedrive"].company_link == "org_id"
    crm = HeldPipedrive(persons={"7": person}, organizations={"12": ORGANIZATION})
    post(app, link, webhook("person", {**person, "org_id": None}))  # the read says 12

    assert work(db, crm) == {"done": 1}
    assert credits(db) == 9
    company = [e for e in store.events_of(db, link.row["id"]) if e["kind"] == "companies"]
    assert [(e["record_id"], e["status"]) for e in company] == [("12", "pending")]
    assert crm.sent() == []  # Ava's person has her e-mail and name: nothing to write

    assert work(db, crm) == {"done": 1}  # the next round: the organization is written
    assert crm.sent() == [("/api/v2/organizations/12", AUSTIN)]
    assert credits(db) == 9  # delivered with the person: not charged again
    cached = store.record(db, link.row["id"], "12", "companies")
    assert cached is not None and cached["company_guid"] == "D15C0000000000A1"

    echo = webhook("organization", {**ORGANIZATION, **AUSTIN}, "echo", change_source="api")
    echo["previous"] = {"address": None}
    post(app, link, echo)
    assert work(db, crm) == {"done": 1}
    assert store.events_of(db, link.row["id"])[-1]["last_error"].startswith("our own write")
    assert len(crm.sent()) == 1 and credits(db) == 9


def credits(db: Database) -> int:
    return int(db.execute("SELECT credits FROM organizations").fetchone()[0])
