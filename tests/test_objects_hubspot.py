"""HubSpot companies end to end: each way HubSpot reports a company (a Webhooks API
subscription, a company-based workflow's webhook, a custom action on a company), signed as
HubSpot signs it (by its own Python client) and posted through the connector's app, is stored
as a company; the worker enriches it by domain and name and writes the companies endpoint of
a fake HubSpot (MockTransport), in bodies the HubSpot SDK's company models take. A contact and
a company with the same id stay apart."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from flask import Flask
from flask.testing import FlaskClient
from hubspot.crm import companies as sdk_companies
from hubspot.utils.signature import Signature
from sqlite_utils import Database
from werkzeug.test import TestResponse

from connector import connections, store
from connector.platforms.base import Permanent
from connector.platforms.hubspot import PLATFORM
from tests.helpers.constants import AVA, NOW, PLATFORMS
from tests.helpers.crm import HS_COMPANIES, HS_CONTACTS, FakeHubSpot
from tests.helpers.vendors import VendorTransport

SECRET = "hubspot-app-secret"  # worker_setup's connection
LONESTAR = "D15C0000000000A1"  # tests/data/discover_companies.csv
HILL_COUNTRY = "D15C0000000000B2"
# What enrich finds for Lonestar by its domain and name, as the companies mapping writes it.
LONESTAR_WRITTEN = {
    "website": "https://www.lonestar-discover.com",
    "city": "Austin",
    "state": "TX",
    "zip": "78701",
    "country": "United States",
    "contactdata_company_guid": LONESTAR,
}


def _signed(version: str, url: str, body: bytes) -> dict[str, str]:
    """The headers HubSpot sends with `body` to `url`, signed by HubSpot's own client."""
    if version == "v3":
        stamp = str(int(NOW.timestamp() * 1000))
        signature = Signature.get_signature(
            SECRET, body.decode(), "v3", http_uri=url, timestamp=stamp
        )
        return {"X-HubSpot-Signature-v3": signature, "X-HubSpot-Request-Timestamp": stamp}
    signature = Signature.get_signature(SECRET, body.decode(), version, http_uri=url)
    return {"X-HubSpot-Signature": signature, "X-HubSpot-Signature-Version": version}


def _post(client: FlaskClient, link: connections.Added, body: Any, version: str) -> TestResponse:
    raw = json.dumps(body).encode()
    url = f"http://localhost/hooks/{link.row['id']}/events"
    headers = {**_signed(version, url, raw), "Content-Type": "application/json"}
    return client.post(url, data=raw, headers=headers)


def _subscription(kind: str, object_id: int, event_id: int, **fields: Any) -> dict[str, Any]:
    """One event of a Webhooks API batch, in the shape of HubSpot's documented example."""
    return {
        "objectId": object_id,
        "changeSource": "CRM",
        "eventId": event_id,
        "subscriptionId": 25,
        "portalId": 62515,
        "appId": 1160452,
        "occurredAt": 1462216307945 + event_id,
        "subscriptionType": kind,
        "attemptNumber": 0,
        **fields,
    }


def _lonestar() -> dict[str, Any]:
    """Lonestar's company record in HubSpot: a name a user typed, and its domain."""
    return {"name": "Lonestar Discover Works", "domain": "lonestar-discover.com", "city": ""}


def _paths(crm: FakeHubSpot) -> list[tuple[str, str]]:
    return [(request.method, request.url.path) for request in crm.requests]


def _credits(db: Database) -> int:
    return db.execute("SELECT credits FROM organizations WHERE name = 'Acme'").fetchone()[0]


def _events(db: Database, link: connections.Added) -> list[dict[str, Any]]:
    return store.events_of(db, link.row["id"])


def test_a_company_subscription_event_is_a_company_enriched_and_written_to_companies(
    connector_app: Flask, worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, _ = worker_setup
    crm.companies["501"] = _lonestar()
    change = _subscription(
        "company.propertyChange", 501, 3816279340,
        propertyName="domain", propertyValue="lonestar-discover.com",
    )  # fmt: skip
    answer = _post(connector_app.test_client(), link, [change], "v1")
    assert (answer.status_code, answer.get_json()) == (200, {"accepted": 1})
    (event,) = _events(db, link)
    assert (event["kind"], event["record_id"], event["thin"]) == ("companies", "501", 1)

    assert work.run_due() == {"done": 1}
    assert _paths(crm) == [("GET", f"{HS_COMPANIES}/501"), ("PATCH", f"{HS_COMPANIES}/501")]
    read = crm.requests[0].url.params["properties"].split(",")
    assert {"name", "domain", "website", "city", "numberofemployees"} <= set(read)
    (written,) = crm.patches()
    assert written.items() >= LONESTAR_WRITTEN.items()
    assert "name" not in written and "domain" not in written  # the user's, kept
    assert crm.companies["501"]["city"] == "Austin"
    assert crm.contacts["501"] == {"email": AVA, "jobtitle": ""}  # the contact 501: untouched
    assert _credits(db) == 9  # a company-only match: 1 credit on pro
    assert store.record(db, link.row["id"], "501", "companies") is not None
    assert store.record(db, link.row["id"], "501") is None  # no contact 501 was enriched


def test_a_company_workflow_webhook_is_a_company_written_to_companies(
    connector_app: Flask, worker_setup: Any, crm: FakeHubSpot
) -> None:
    """A company-based workflow's "Send a webhook" posts the company as HubSpot's companies
    API gives it (companyId, properties with value, timestamp, source and versions)."""
    db, work, link, _ = worker_setup
    crm.companies["184896670"] = _lonestar()
    domain = {"value": "lonestar-discover.com", "timestamp": 1457708103847,
              "source": "COMPANIES", "sourceId": None,
              "versions": [{"name": "domain", "value": "lonestar-discover.com",
                            "timestamp": 1457708103847, "source": "COMPANIES",
                            "sourceVid": []}]}  # fmt: skip
    name = {"value": "Lonestar Discover Works", "timestamp": 1457708103906, "source": "CRM_UI",
            "sourceId": "name", "versions": []}  # fmt: skip
    company = {"portalId": 62515, "companyId": 184896670, "isDeleted": False,
               "properties": {"domain": domain, "name": name}}  # fmt: skip
    answer = _post(connector_app.test_client(), link, company, "v3")
    assert answer.status_code == 200, answer.get_data(as_text=True)
    (event,) = _events(db, link)
    assert (event["kind"], event["record_id"], event["thin"]) == ("companies", "184896670", 0)

    assert work.run_due() == {"done": 1}
    assert [path for _, path in _paths(crm)] == [f"{HS_COMPANIES}/184896670"] * 2
    assert crm.patches()[0].items() >= LONESTAR_WRITTEN.items()
    assert _credits(db) == 9


def test_a_custom_action_on_a_company_is_completed_with_the_companys_fields(
    connector_app: Flask, worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, _ = worker_setup
    request = json.loads((PLATFORMS / "hubspot_custom_action_execution_request.json").read_text())
    request["object"] = {"objectId": 904, "objectType": "COMPANY",
                         "properties": {"name": "Lonestar Discover Works",
                                        "domain": "lonestar-discover.com"}}  # fmt: skip
    answer = _post(connector_app.test_client(), link, request, "v3")
    assert answer.get_json()["outputFields"]["hs_execution_state"] == "BLOCK"
    (event,) = _events(db, link)
    assert (event["kind"], event["record_id"]) == ("companies", "904")

    assert work.run_due() == {"done": 1}
    outputs = crm.completed[request["callbackId"]]["outputFields"]
    assert outputs["hs_execution_state"] == "SUCCESS"
    assert outputs["contactdata_company_guid"] == LONESTAR and outputs["city"] == "Austin"
    assert "jobtitle" not in outputs  # the companies mapping's outputs, not the contacts'
    assert crm.patches() == [] and _credits(db) == 9


def test_a_contact_and_a_company_with_the_same_id_stay_apart(
    connector_app: Flask, worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, _ = worker_setup
    crm.companies["501"] = _lonestar()
    batch = [_subscription("contact.creation", 501, 1), _subscription("company.creation", 501, 2)]
    assert _post(connector_app.test_client(), link, batch, "v1").get_json() == {"accepted": 2}
    assert sorted(event["kind"] for event in _events(db, link)) == ["companies", "contacts"]

    assert work.run_due() == {"done": 2}
    patched = {
        r.url.path: json.loads(r.content)["properties"] for r in crm.requests if r.method == "PATCH"
    }
    assert set(patched) == {f"{HS_CONTACTS}/501", f"{HS_COMPANIES}/501"}
    assert patched[f"{HS_CONTACTS}/501"]["jobtitle"] == "Vice President of Sales"
    assert "jobtitle" not in patched[f"{HS_COMPANIES}/501"]
    assert patched[f"{HS_COMPANIES}/501"].items() >= LONESTAR_WRITTEN.items()
    contact = store.record(db, link.row["id"], "501", "contacts")
    company = store.record(db, link.row["id"], "501", "companies")
    assert contact is not None and company is not None
    assert json.loads(company["written"])["contactdata_company_guid"] == LONESTAR
    assert "contactdata_company_guid" not in json.loads(contact["written"])

    # our own write of the company's city echoed back: ignored, no CRM call, no credit
    before, credits = len(crm.requests), _credits(db)
    echo = _subscription("company.propertyChange", 501, 3, propertyName="city",
                         propertyValue="Austin")  # fmt: skip
    _post(connector_app.test_client(), link, [echo], "v1")
    assert work.run_due() == {"done": 1}
    assert len(crm.requests) == before and _credits(db) == credits
    assert "echoed back" in _events(db, link)[-1]["last_error"]


def _sdk_model(body: bytes, model: str) -> tuple[Any, Any]:
    """`body` in the HubSpot SDK's companies `model`, validated as the SDK validates (a
    required field missing raises ValueError), and the SDK's client to serialize it again."""
    configuration = sdk_companies.Configuration()
    configuration.client_side_validation = True
    client = sdk_companies.ApiClient(configuration)
    return client.deserialize(SimpleNamespace(data=body), model), client


def test_companies_of_one_round_are_read_and_written_in_one_batch_each(
    connector_app: Flask, worker_setup: Any, crm: FakeHubSpot
) -> None:
    """Two companies, one reported by a generic subscription (object.*, objectTypeId 0-2):
    one batch read and one batch update of companies, in the SDK's company models."""
    db, work, link, _ = worker_setup
    crm.companies["501"] = _lonestar()
    crm.companies["502"] = {"name": "Hill Country Analytics", "domain": "hillcountry-analytics.com"}
    batch = [
        _subscription("company.creation", 501, 1),
        _subscription("object.creation", 502, 2, objectTypeId="0-2"),
    ]
    assert _post(connector_app.test_client(), link, batch, "v1").get_json() == {"accepted": 2}
    assert [event["kind"] for event in _events(db, link)] == ["companies", "companies"]

    assert work.run_due() == {"done": 2}
    assert _paths(crm) == [
        ("POST", f"{HS_COMPANIES}/batch/read"),
        ("POST", f"{HS_COMPANIES}/batch/update"),
    ]
    read, update = crm.requests
    model, client = _sdk_model(read.content, "BatchReadInputSimplePublicObjectId")
    assert [item.id for item in model.inputs] == ["501", "502"]
    assert client.sanitize_for_serialization(model) == json.loads(read.content)
    model, client = _sdk_model(update.content, "BatchInputSimplePublicObjectBatchInput")
    assert client.sanitize_for_serialization(model) == json.loads(update.content)
    guids = {item.id: item.properties["contactdata_company_guid"] for item in model.inputs}
    assert guids == {"501": LONESTAR, "502": HILL_COUNTRY}
    assert _credits(db) == 8


def test_an_event_about_another_hubspot_object_is_refused_not_read_as_a_contact(
    connector_app: Flask, worker_setup: Any, crm: FakeHubSpot
) -> None:
    """A deal numbered as a contact is not that contact: before, it was enriched as one."""
    db, work, link, _ = worker_setup
    deal = _subscription("deal.propertyChange", 501, 1, propertyName="amount", propertyValue="9")
    _post(connector_app.test_client(), link, [deal], "v1")
    (event,) = _events(db, link)
    assert event["kind"] == "deal"
    assert work.run_due() == {"dead": 1}
    assert _events(db, link)[0]["last_error"] == "HubSpot has no deal the connector enriches"
    assert crm.requests == [] and _credits(db) == 10


def test_the_companies_adapter_calls_the_companies_paths() -> None:
    crm = FakeHubSpot()
    crm.companies["7"] = {"name": "Acme", "domain": "acme.example"}
    with httpx.Client(transport=VendorTransport(crm)) as client:
        adapter = PLATFORM.adapter("https://api.hubapi.com", "token", client, kind="companies")
        assert adapter.read("7", ["domain"]) == {"domain": "acme.example"}
        found = adapter.read_many(["7", "8"], ["name"])
        adapter.write("7", {"numberofemployees": 120})
        adapter.write_many({"7": {"city": "Austin"}, "501": {"city": "Dallas"}})
    assert found["7"] == {"name": "Acme"}
    assert isinstance(found["8"], Permanent)
    assert (
        found["8"].reason == "no such company: OBJECT_NOT_FOUND: Could not get some COMPANY objects"
    )
    assert {path for _, path in _paths(crm)} == {
        f"{HS_COMPANIES}/7", f"{HS_COMPANIES}/batch/read", f"{HS_COMPANIES}/batch/update",
    }  # fmt: skip
    assert crm.companies["7"] == {"name": "Acme", "domain": "acme.example",
                                  "numberofemployees": "120", "city": "Austin"}  # fmt: skip
    assert crm.contacts["501"] == {"email": AVA, "jobtitle": ""}  # 501 is no company here


def test_hubspot_declares_contacts_and_companies_and_no_leads() -> None:
    assert PLATFORM.objects == ("contacts", "companies")
    assert PLATFORM.mapping_file_for("companies") == "hubspot.companies.yaml"
    with pytest.raises(Permanent, match="no leads"):
        PLATFORM.adapter("https://api.hubapi.com", "token", httpx.Client(), kind="leads")


def test_a_customized_company_webhook_body_names_its_object_and_feeds_domain_and_name(
    connector_app: Flask, worker_setup: Any, crm: FakeHubSpot
) -> None:
    """A workflow's customized body is flat property names; "objectType": "COMPANY" (the
    name custom actions give companies) says it is a company, else it is read as a contact."""
    db, work, link, _ = worker_setup
    crm.companies["77"] = {"name": "", "domain": ""}
    body = {"objectType": "COMPANY", "hs_object_id": "77", "name": "Lonestar Discover Works",
            "domain": "lonestar-discover.com"}  # fmt: skip
    assert _post(connector_app.test_client(), link, body, "v3").status_code == 200
    (event,) = _events(db, link)
    assert (event["kind"], event["record_id"]) == ("companies", "77")
    assert work.run_due() == {"done": 1}
    (written,) = crm.patches()
    assert written.items() >= {**LONESTAR_WRITTEN, "domain": "lonestar-discover.com"}.items()
    assert written["name"] == "Lonestar Discover Works Inc."  # filled: it was empty


def test_a_contacts_primary_company_gets_the_company_fields_of_its_enrichment_without_a_charge(
    connector_app: Flask, worker_setup: Any, crm: FakeHubSpot
) -> None:
    """Companies through their contacts: a contact's read-only associatedcompanyid (the id
    of its primary company) is read with it; once enriched, that company gets the company
    fields of the same enrichment in the next round, for no credit, and HubSpot's event for
    our write of it is not enriched again."""
    db, work, link, _ = worker_setup
    crm.contacts["501"]["associatedcompanyid"] = "184896670"
    crm.companies["184896670"] = _lonestar()
    contact = _subscription("contact.creation", 501, 1)
    assert _post(connector_app.test_client(), link, [contact], "v1").status_code == 200

    assert work.run_due() == {"done": 1}
    read = crm.requests[0].url.params["properties"].split(",")
    assert "associatedcompanyid" in read
    assert crm.patches()[0]["jobtitle"] == "Vice President of Sales"
    assert "associatedcompanyid" not in crm.patches()[0]  # read-only: never written
    assert _credits(db) == 9
    (company,) = [event for event in _events(db, link) if event["kind"] == "companies"]
    assert (company["record_id"], company["status"]) == ("184896670", "pending")

    assert work.run_due() == {"done": 1}  # the next round: the company is written
    assert _paths(crm)[-2:] == [("GET", f"{HS_COMPANIES}/184896670"),
                                ("PATCH", f"{HS_COMPANIES}/184896670")]  # fmt: skip
    written = crm.patches()[-1]
    assert written.items() >= LONESTAR_WRITTEN.items() and "jobtitle" not in written
    assert "name" not in written and "domain" not in written  # the user's, kept
    assert _credits(db) == 9  # delivered with the contact: not charged again
    cached = store.record(db, link.row["id"], "184896670", "companies")
    assert cached is not None and cached["company_guid"] == LONESTAR

    # HubSpot's event for our write of the company's city: our own, ignored
    before = len(crm.requests)
    echo = _subscription("company.propertyChange", 184896670, 2, propertyName="city",
                         propertyValue="Austin")  # fmt: skip
    _post(connector_app.test_client(), link, [echo], "v1")
    assert work.run_due() == {"done": 1}
    assert len(crm.requests) == before and _credits(db) == 9


def test_a_contact_without_a_primary_company_gives_no_company_event(
    connector_app: Flask, worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, _ = worker_setup
    crm.contacts["501"]["associatedcompanyid"] = None  # HubSpot's null: no company
    _post(connector_app.test_client(), link, [_subscription("contact.creation", 501, 1)], "v1")
    assert work.run_due() == {"done": 1}
    assert [event["kind"] for event in _events(db, link)] == ["contacts"]
    assert PLATFORM.linked_company({"associatedcompanyid": "184896670"}) == "184896670"


def _enrich(client: FlaskClient, link: connections.Added, body: Any) -> TestResponse:
    """`body` posted to the connection's enrich URL, signed v3 as HubSpot signs it."""
    raw = json.dumps(body).encode()
    url = f"http://localhost/hooks/{link.row['id']}/enrich"
    headers = {**_signed("v3", url, raw), "Content-Type": "application/json"}
    return client.post(url, data=raw, headers=headers)


def test_a_custom_action_on_a_company_at_the_enrich_url_is_answered_with_its_fields(
    connector_app: Flask, worker_setup: Any
) -> None:
    """Answered at once, by the companies mapping: before, the contacts mapping read the
    company's properties, found no e-mail nor company name, and failed the action."""
    db, _, link, _ = worker_setup
    request = json.loads((PLATFORMS / "hubspot_custom_action_execution_request.json").read_text())
    request["object"] = {"objectId": 904, "objectType": "COMPANY",
                         "properties": {"name": "Lonestar Discover Works",
                                        "domain": "lonestar-discover.com"}}  # fmt: skip
    answer = _enrich(connector_app.test_client(), link, request)

    assert answer.status_code == 200, answer.get_data(as_text=True)
    outputs = answer.get_json()["outputFields"]
    assert outputs["hs_execution_state"] == "SUCCESS"
    assert outputs.items() >= {**LONESTAR_WRITTEN, "domain": "lonestar-discover.com"}.items()
    assert "jobtitle" not in outputs and "company" not in outputs  # no contacts' outputs
    assert answer.headers["credits-deducted"] == "1" and _credits(db) == 9
    assert _events(db, link) == []  # answered now, nothing left to the worker


def test_a_custom_action_on_another_object_at_the_enrich_url_fails_naming_it(
    connector_app: Flask, worker_setup: Any
) -> None:
    db, _, link, _ = worker_setup
    request = json.loads((PLATFORMS / "hubspot_custom_action_execution_request.json").read_text())
    request["object"] = {"objectId": 77, "objectType": "DEAL", "properties": {"amount": "9"}}
    answer = _enrich(connector_app.test_client(), link, request)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert answer.get_json()["outputFields"] == {
        "hs_execution_state": "FAIL_CONTINUE",
        "contactdata_error": "HubSpot has no deal the connector enriches",
    }
    assert answer.headers["credits-deducted"] == "0" and _credits(db) == 10
    request["object"]["objectType"] = "CONTACT"  # a contact's: the contacts mapping still
    request["object"]["properties"] = {"email": AVA}
    request["callbackId"] = "ap-102-2-3-9"
    outputs = _enrich(connector_app.test_client(), link, request).get_json()["outputFields"]
    assert outputs["jobtitle"] == "Vice President of Sales"
