"""End-to-end replay of the HubSpot, Salesforce, Pipedrive, Zoho, Dynamics 365, Marketo, Zapier
and Standard Webhooks samples in tests/data/platforms: each is signed or authenticated as its
platform does (signatures by the published algorithms, computed here), received by the
connector's app, worked off by the worker over a real HTTP client, and written back to a fake
CRM listening on loopback, whose requests are checked field by field.

The people the samples name are in tests/data/replay_*.csv. Where a sample alone does not
identify anyone (a name without an e-mail or company), the verbatim replay shows what the
product does with it, and a copy with the one field a user would add shows the write-back.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
import re
import shutil
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import httpx
import pytest
import yaml
from flask import Flask
from flask.testing import FlaskClient
from sqlite_utils import Database
from werkzeug.test import TestResponse

from connector import connections, mappings, store, worker
from connector.platforms.base import Permanent, WriteResult
from connector.platforms.dynamics import Dynamics
from connector.platforms.hubspot import CALLBACKS, CONTACTS
from connector.platforms.pipedrive import Pipedrive
from connector.platforms.zoho import PLATFORM as ZOHO_PLATFORM
from connector.platforms.zoho import Zoho
from server import importer
from tests.helpers.clock import Clock
from tests.helpers.constants import DATA, NOW, PLATFORMS, SECRET
from tests.helpers.crm_server import DATAVERSE, SF, Call, FakeCrm, running
from tests.helpers.orgs import organization

ROOT = Path(__file__).resolve().parent.parent
# The "Job title" person custom field a Pipedrive admin creates (mappings/pipedrive.yaml).
PIPEDRIVE_JOB_TITLE = "0b3c7f1e9a5d4c2b8e6f1a3d5c7b9e2f4a6c8d0b"
HUBSPOT_SECRET = "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy"  # the client secret of HubSpot's docs
HUBSPOT_TOKEN = "pat-na1-5eb10000-0000-4000-8000-000000000001"
SALESFORCE_TOKEN = "00Do0000000xxxxxxx!AQ4AQReplay.Access.Token"
SALESFORCE_ORG = "00Do0000000xxxxxxx"  # the sample's (redacted) organization id
SALESFORCE_CONTACT = "003o000000xxxxxxxxx"  # the sample's (redacted, 19-character) Contact id
VECTORS = json.loads((PLATFORMS / "hubspot_signature_test_vectors.json").read_text())["vectors"]
STANDARD_VECTOR = json.loads((PLATFORMS / "standard_webhooks_test_vector.json").read_text())
STANDARD_SECRET = STANDARD_VECTOR["secret"]

WORKFLOW = (PLATFORMS / "hubspot_workflow_webhook.json").read_bytes()
BATCH = (PLATFORMS / "hubspot_webhooks_api_event_batch.json").read_bytes()
CUSTOM_ACTION = (PLATFORMS / "hubspot_custom_action_execution_request.json").read_bytes()
OUTBOUND_MESSAGE = (PLATFORMS / "salesforce_outbound_message.xml").read_bytes()
ZAP = (PLATFORMS / "zapier_webhooks_post_action.json").read_bytes()
STANDARD_PAYLOAD = (PLATFORMS / "standard_webhooks_payload.json").read_bytes()
STANDARD_HEADERS = dict(
    line.split(": ", 1)
    for line in (PLATFORMS / "standard_webhooks_headers.txt").read_text().splitlines()
    if line and not line.startswith("#")
)
SPEC_SENT_AT = datetime.fromtimestamp(int(STANDARD_HEADERS["webhook-timestamp"]), UTC)
PIPEDRIVE_PERSON_CHANGED = (PLATFORMS / "pipedrive_v2_person_updated.json").read_bytes()
# The same change as a webhook v1 sends it (`event`, `current`, the whole `previous`).
PIPEDRIVE_V1_CHANGED = (DATA / "pipedrive_v1_person_updated.json").read_bytes()
ZOHO_NOTIFICATION = (PLATFORMS / "zoho_webhook.json").read_bytes()
DYNAMICS_CONTEXT = (PLATFORMS / "dynamics365_webhook_remote_execution_context.json").read_bytes()
MARKETO_RESPONSE = json.loads((PLATFORMS / "marketo_webhook_response_example.json").read_text())
PIPEDRIVE_TOKEN = "5eb1000000000000000000000000000000000001"  # a user's API token: 40 hex
ZOHO_TOKEN = "1000.5eb10000000000000000000000000001.5eb10000000000000000000000000002"
ZOHO_SECRET = json.loads(ZOHO_NOTIFICATION)["token"]  # the channel's token, as in Zoho's docs
DYNAMICS_TOKEN = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.replay.entra-access-token"

# The people of tests/data/replay_contacts.csv, by contact GUID.
HUBSPOT_TEST = "5EB10000000000000000000000000C01"
ARDYS_JENKEN = "5EB10000000000000000000000000C02"
SOME_DUDE = "5EB10000000000000000000000000C03"
BRYAN_HELMIG = "5EB10000000000000000000000000C04"
JOHN_SMITH = "5EB10000000000000000000000000C05"
PRIYA_RAMAN = "5EB10000000000000000000000000C06"
PERSON_NAME = "5EB10000000000000000000000000C07"
JASON_SMITH = "5EB10000000000000000000000000C08"
JAMES_GLYNN = "5EB10000000000000000000000000C09"
JANE_DOE = "5EB10000000000000000000000000C0A"

# What the worker reads of a contact: the mapping's output properties, then its plain inputs.
HUBSPOT_READ = (
    "firstname,lastname,jobtitle,company,website,industry,phone,address,city,state,zip,country,"
    "linkedin_url,contactdata_employee_count,contactdata_employee_range,"
    "contactdata_revenue_range,contactdata_job_levels,contactdata_job_functions,"
    "contactdata_record_status,contactdata_contact_guid,contactdata_job_change_left_on,"
    "contactdata_job_change_new_company,contactdata_job_change_new_title,email,"
    "associatedcompanyid"  # the contact's primary company
)
SALESFORCE_READ = (
    "FirstName,Email,Title,Department,Phone,MailingStreet,MailingCity,MailingState,"
    "MailingPostalCode,MailingCountry,LinkedIn_URL__c,ContactData_Company_Name__c,"
    "ContactData_Company_Domain__c,ContactData_Industry__c,ContactData_Employees__c,"
    "ContactData_Employee_Range__c,ContactData_Revenue_Range__c,ContactData_Job_Levels__c,"
    "ContactData_Job_Functions__c,ContactData_Record_Status__c,ContactData_Contact_GUID__c,"
    "ContactData_Job_Change_Left_On__c,ContactData_Job_Change_New_Company__c,"
    "ContactData_Job_Change_New_Title__c,"
    "LastName,Account_Name__c,Account_Website__c,AccountId"  # AccountId: the contact's account
)
MISSING_IDENTIFIER = (
    "At least one identifier is needed: compName, compWebsite, compLinkedinUrl or compGuid; "
    "or conEmail, conLinkedinUrl or conGuid; or conFullName (or conFirstName with conLastName) "
    "together with compName or compWebsite."
)


# --- signing, by the published algorithms ----------------------------------------------------


def hubspot_v1(secret: str, body: bytes) -> str:
    """hex(sha256(client secret + body))"""
    return hashlib.sha256(secret.encode() + body).hexdigest()


def hubspot_v2(secret: str, method: str, uri: str, body: bytes) -> str:
    """hex(sha256(client secret + method + URI + body))"""
    return hashlib.sha256(f"{secret}{method}{uri}".encode() + body).hexdigest()


def hubspot_v3(secret: str, method: str, uri: str, body: bytes, timestamp: str) -> str:
    """base64(HMAC-SHA256(client secret, method + URI + body + timestamp)); the URIs here
    hold no escapes, so none need decoding."""
    content = f"{method}{uri}".encode() + body + timestamp.encode()
    return base64.b64encode(hmac.new(secret.encode(), content, hashlib.sha256).digest()).decode()


def standard_webhooks(secret: str, msg_id: str, timestamp: str, body: bytes) -> str:
    """v1, + base64(HMAC-SHA256(base64-decoded secret, id.timestamp.body))"""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    content = f"{msg_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, content, hashlib.sha256).digest()).decode()


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_the_signers_here_reproduce_hubspots_published_vectors(vector: dict[str, str]) -> None:
    secret, body = vector["client_secret"], vector["body"].encode()
    signed = {
        "v1": lambda: hubspot_v1(secret, body),
        "v2": lambda: hubspot_v2(secret, vector["method"], vector["uri"], body),
        "v3": lambda: hubspot_v3(
            secret, vector["method"], vector["uri"], body, vector["timestamp"]
        ),
    }[vector["version"]]()
    assert signed == vector["expected"]


def test_the_signer_here_reproduces_the_standard_webhooks_vector() -> None:
    headers = STANDARD_VECTOR["headers"]
    body = STANDARD_VECTOR["raw_body"].encode()
    signed = standard_webhooks(
        STANDARD_SECRET, headers["webhook-id"], headers["webhook-timestamp"], body
    )
    assert signed == headers["webhook-signature"]


# --- the fake CRM ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def crm_server() -> Iterator[FakeCrm]:
    with running(FakeCrm()) as server:
        yield server


@pytest.fixture
def crm(crm_server: FakeCrm) -> FakeCrm:
    crm_server.reset()
    return crm_server


# --- the product -----------------------------------------------------------------------------


@pytest.fixture
def app(connector_app: Flask) -> Flask:
    return connector_app


@dataclass(frozen=True)
class Replay:
    """The database, the connections by platform, and a worker calling the fake CRM."""

    db: Database
    links: dict[str, connections.Added]
    work: worker.Worker

    def event(self, platform: str) -> dict[str, Any]:
        (event,) = store.events_of(self.db, self.links[platform].row["id"])
        return event

    def credits(self) -> int:
        return self.db.execute("SELECT credits FROM organizations").fetchone()[0]


@dataclass(frozen=True)
class Dataset:
    """A database file holding the people of tests/data/replay_*.csv, an organization and
    its connections (the CRMs' at the fake CRM), and those connections with their secrets."""

    path: Path
    links: dict[str, connections.Added]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory, crm_server: FakeCrm) -> Dataset:
    """Made once (importing and loading mappings is slow), copied for each test."""
    path = tmp_path_factory.mktemp("replay") / "dataset.db"
    db = store.connect(path)
    importer.import_files(
        db, companies=DATA / "replay_companies.csv", contacts=DATA / "replay_contacts.csv"
    )
    _, key = organization(db, credits=10)

    def add(name: str, platform: str, **extra: Any) -> connections.Added:
        return connections.add(
            db, SECRET.encode(), NOW, name=name, platform=platform, api_key=key, **extra
        )

    crm = crm_server.url
    job_title = _pipedrive_job_title_mapping(path.parent / "pipedrive.yaml")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
        links = {
            "hubspot": add(
                "hs", "hubspot", secret=HUBSPOT_SECRET, crm_base_url=crm, crm_token=HUBSPOT_TOKEN
            ),
            "salesforce": add(
                "sf",
                "salesforce",
                salesforce_org_ids=(SALESFORCE_ORG,),
                crm_base_url=crm,
                crm_token=SALESFORCE_TOKEN,
            ),
            "zapier": add("zap", "zapier", secret=STANDARD_SECRET),
            "pipedrive": add(
                "pd", "pipedrive", mapping=job_title, crm_base_url=crm, crm_token=PIPEDRIVE_TOKEN
            ),
            "zoho": add("zoho", "zoho", secret=ZOHO_SECRET, crm_base_url=crm, crm_token=ZOHO_TOKEN),
            "dynamics": add("d365", "dynamics", crm_base_url=crm, crm_token=DYNAMICS_TOKEN),
            "marketo": add("mkto", "marketo"),
        }
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return Dataset(path, links)


@pytest.fixture
def db_path(tmp_path: Path, dataset: Dataset) -> Path:
    """The app's database (tests/test_receiver's `app` opens it): a copy of the dataset."""
    path = tmp_path / "test.db"
    shutil.copyfile(dataset.path, path)
    return path


@pytest.fixture
def replay(
    app: Flask,
    db_path: Path,
    dataset: Dataset,
    clock: Clock,
    crm: FakeCrm,
) -> Iterator[Replay]:
    db = store.connect(db_path)
    with httpx.Client(timeout=httpx.Timeout(10.0), follow_redirects=False) as client:
        yield Replay(
            db, dataset.links, worker.Worker(db, SECRET.encode(), clock, client, random.Random(7))
        )
    db.close()


def _hubspot(
    client: FlaskClient, link: connections.Added, route: str, body: bytes, version: str
) -> TestResponse:
    """POST `body` to a HubSpot connection, signed as HubSpot signs with `version`."""
    url = f"http://localhost/hooks/{link.row['id']}/{route}"
    if version == "v3":
        stamp = str(int(NOW.timestamp() * 1000))
        signature = hubspot_v3(HUBSPOT_SECRET, "POST", url, body, stamp)
        signed = {"X-HubSpot-Signature-v3": signature, "X-HubSpot-Request-Timestamp": stamp}
    else:
        signature = (
            hubspot_v1(HUBSPOT_SECRET, body)
            if version == "v1"
            else hubspot_v2(HUBSPOT_SECRET, "POST", url, body)
        )
        signed = {"X-HubSpot-Signature": signature, "X-HubSpot-Signature-Version": version}
    return client.post(url, data=body, headers={"Content-Type": "application/json", **signed})


def _salesforce(client: FlaskClient, link: connections.Added, body: bytes) -> TestResponse:
    """POST an Outbound Message to the URL Salesforce is given (the secret in its query)."""
    url = connections.urls(link.row, "http://localhost", link.secret)["eventsUrl"]
    headers = {"SOAPAction": '""', "Content-Type": "text/xml; charset=utf-8"}
    return client.post(url, data=body, headers=headers)


def _standard_webhooks(
    client: FlaskClient, link: connections.Added, route: str, body: bytes
) -> TestResponse:
    """POST `body` with the spec's example headers, its v1 signature (made with a key the
    spec does not give) replaced by a real one; its v1a entry stays, to be ignored. The app's
    clock must read SPEC_SENT_AT."""
    msg_id, stamp = STANDARD_HEADERS["webhook-id"], STANDARD_HEADERS["webhook-timestamp"]
    entries = STANDARD_HEADERS["webhook-signature"].split()
    signed = [standard_webhooks(link.secret, msg_id, stamp, body)]
    signed += [entry for entry in entries if not entry.startswith("v1,")]
    headers = {
        "Content-Type": "application/json",
        "webhook-id": msg_id,
        "webhook-timestamp": stamp,
        "webhook-signature": " ".join(signed),
    }
    return client.post(f"/hooks/{link.row['id']}/{route}", data=body, headers=headers)


def _zapier(client: FlaskClient, link: connections.Added, route: str, body: bytes) -> TestResponse:
    """POST as a Webhooks by Zapier step does: it cannot sign, so the secret is a bearer token."""
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {link.secret}"}
    return client.post(f"/hooks/{link.row['id']}/{route}", data=body, headers=headers)


def _pipedrive(
    client: FlaskClient, link: connections.Added, body: bytes, password: str | None = None
) -> TestResponse:
    """POST as a Pipedrive webhook does: the user name and password given when the webhook was
    made go as HTTP Basic auth, the password being the connection's secret."""
    secret = link.secret if password is None else password
    credentials = base64.b64encode(f"contactdata:{secret}".encode()).decode()
    headers = {"Content-Type": "application/json", "Authorization": f"Basic {credentials}"}
    return client.post(f"/hooks/{link.row['id']}/events", data=body, headers=headers)


def _zoho(client: FlaskClient, link: connections.Added, body: bytes) -> TestResponse:
    """POST a Notification API callback: Zoho signs nothing, the body carries the token."""
    headers = {"Content-Type": "application/json"}
    return client.post(f"/hooks/{link.row['id']}/events", data=body, headers=headers)


def _zoho_notification(link: connections.Added, **fields: Any) -> bytes:
    """Zoho's sample as the connection's own channel delivers it (with `fields` changed)."""
    return _with(ZOHO_NOTIFICATION, channel_id=ZOHO_PLATFORM.channel_id(link.row), **fields)


def _dynamics(
    client: FlaskClient, link: connections.Added, body: bytes, code: str | None = None
) -> TestResponse:
    """POST a RemoteExecutionContext to the URL the service endpoint is given (WebhookKey
    authentication: the key as ?code=, here the connection's secret unless `code`)."""
    url = connections.urls(link.row, "http://localhost", code or link.secret)["eventsUrl"]
    headers = {
        "Content-Type": "application/json",
        "x-ms-dynamics-entity-name": "contact",
        "x-ms-dynamics-request-name": "Update",
    }
    return client.post(url, data=body, headers=headers)


def _marketo(client: FlaskClient, link: connections.Added, route: str, body: bytes) -> TestResponse:
    """POST as a Marketo webhook whose custom header carries the connection's secret."""
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {link.secret}"}
    return client.post(f"/hooks/{link.row['id']}/{route}", data=body, headers=headers)


def _pipedrive_job_title_mapping(path: Path) -> Path:
    """The shipped Pipedrive mapping with the job title custom field its header describes."""
    mapping = yaml.safe_load((ROOT / "mappings" / "pipedrive.yaml").read_text())
    key = PIPEDRIVE_JOB_TITLE
    mapping["input"]["conJobTitle"] += [f"data.custom_fields.{key}", key]
    rule = {"field": "conJobTitleEn", "property": key, "policy": "overwrite_if_ours"}
    mapping["output"].append(rule)
    path.write_text(yaml.safe_dump(mapping, sort_keys=False))
    return path


def _with(sample: bytes, **fields: Any) -> bytes:
    """A JSON sample with `fields` added; `a__b` names key b of object a."""
    document = json.loads(sample)
    for dotted, value in fields.items():
        *parents, name = dotted.split("__")
        target = document
        for parent in parents:
            target = target[parent]
        target[name] = value
    return json.dumps(document, indent=2).encode()


# --- HubSpot ---------------------------------------------------------------------------------

WORKFLOW_CONTACT = {  # the workflow sample's contact 3234574 as HubSpot holds it
    "firstname": "HubSpot",
    "lastname": "Test",
    "phone": "555-122-2323",
    "city": "Cambridge",
    "state": "MA",
    "zip": "02139",
    "lead_source": "DiscoverOrg",
    "annualrevenue": "181900000",
    "associatedcompanyid": "184896670",
    "twitterhandle": "ghidinelli",
}


def test_the_hubspot_workflow_sample_names_nobody_enrich_can_find(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """The sample's contact has a first and last name and nothing else that identifies a
    person (no e-mail, no company name): the record is read, then the event is a dead letter
    naming what is missing, and nothing is written or charged."""
    crm.contacts["hubspot"]["3234574"] = dict(WORKFLOW_CONTACT)
    response = _hubspot(client, replay.links["hubspot"], "events", WORKFLOW, "v2")
    assert (response.status_code, response.get_json()) == (200, {"accepted": 1})

    assert replay.work.run_due() == {"dead": 1}
    (read,) = crm.calls
    assert (read.method, read.path, read.query) == (
        "GET",
        f"{CONTACTS}/3234574",
        {"properties": HUBSPOT_READ},
    )
    assert read.headers["authorization"] == f"Bearer {HUBSPOT_TOKEN}"
    event = replay.event("hubspot")
    assert (event["status"], event["last_error"]) == (
        "dead",
        f"missing_identifier: {MISSING_IDENTIFIER}",
    )
    assert crm.contacts["hubspot"]["3234574"] == WORKFLOW_CONTACT and replay.credits() == 10


def test_the_hubspot_workflow_sample_with_an_email_is_written_back(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """The same contact once it has an e-mail: names and the location the user typed are
    kept (the zip differs from ours and stays), the gaps and our own properties are filled."""
    email = "hubspot.test@hubspot.com"
    crm.contacts["hubspot"]["3234574"] = {**WORKFLOW_CONTACT, "email": email}
    body = _with(WORKFLOW, properties__email={"value": email})
    for _ in range(2):  # HubSpot retries a delivery: the copy is acknowledged, not stored
        response = _hubspot(client, replay.links["hubspot"], "events", body, "v2")
        assert (response.status_code, response.get_json()) == (200, {"accepted": 1})

    assert replay.work.run_due() == {"done": 1}
    read, write = crm.calls
    assert (read.method, read.path) == ("GET", f"{CONTACTS}/3234574")
    assert (write.method, write.path, write.query) == (
        "PATCH",
        f"{CONTACTS}/3234574",
        {},
    )
    assert write.headers["authorization"] == f"Bearer {HUBSPOT_TOKEN}"
    assert write.headers["content-type"] == "application/json"
    assert write.body == {
        "properties": {
            "jobtitle": "Marketing Manager",
            "company": "HubSpot, Inc.",
            "website": "https://www.hubspot.com",
            "country": "United States",
            "contactdata_job_levels": "Manager",
            "contactdata_job_functions": "Marketing",
            "contactdata_record_status": "Active",
            "contactdata_contact_guid": HUBSPOT_TEST,
        }
    }
    assert crm.contacts["hubspot"]["3234574"]["zip"] == "02139" and replay.credits() == 9
    contact, company = store.events_of(replay.db, replay.links["hubspot"].row["id"])
    assert (contact["status"], contact["last_error"]) == ("done", "")
    # its primary company (associatedcompanyid) gets the company's fields in the next round
    assert (company["kind"], company["record_id"]) == ("companies", "184896670")


def test_the_hubspot_webhooks_api_batch_reads_the_contact_then_writes_it_back(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """The batch names contact 123 only: the worker reads it (an e-mail, a first name and a
    job title the user typed), enriches by the e-mail and fills the rest."""
    assert hubspot_v1(HUBSPOT_SECRET, BATCH) == (
        "232db2615f3d666fe21a8ec971ac7b5402d33b9a925784df3ca654d05f4817de"  # HubSpot's docs
    )
    crm.contacts["hubspot"]["123"] = {
        "email": "priya.raman@northwindhealth.com",
        "firstname": "Priya",
        "jobtitle": "Head of Ops",
    }
    response = _hubspot(client, replay.links["hubspot"], "events", BATCH, "v1")
    assert (response.status_code, response.get_json()) == (200, {"accepted": 1})

    assert replay.work.run_due() == {"done": 1}
    read, write = crm.calls
    assert (read.method, read.path, read.query) == (
        "GET",
        f"{CONTACTS}/123",
        {"properties": HUBSPOT_READ},
    )
    assert (write.method, write.path) == ("PATCH", f"{CONTACTS}/123")
    assert write.headers["authorization"] == f"Bearer {HUBSPOT_TOKEN}"
    assert write.body == {
        "properties": {
            "lastname": "Raman",
            "company": "Northwind Health Partners LLC",
            "website": "northwindhealth.com",
            "city": "Seattle",
            "state": "WA",
            "zip": "98101",
            "country": "United States",
            "contactdata_job_levels": "Director",
            "contactdata_job_functions": "Operations and related",
            "contactdata_record_status": "Active",
            "contactdata_contact_guid": PRIYA_RAMAN,
        }
    }
    assert crm.contacts["hubspot"]["123"]["jobtitle"] == "Head of Ops" and replay.credits() == 9


ARDYS_OUTPUT = {  # the custom action sample's contact, as the hubspot mapping outputs her:
    # fields without a value (industry, phone, the employee count, ...) are left out, since
    # HubSpot's typed output fields refuse "" (a number field, an enumeration)
    "firstname": "Ardys",
    "lastname": "Jenken",
    "jobtitle": "Licensing and Compliance Manager",
    "company": "Free Software Foundation, Inc.",
    "website": "https://www.fsf.org",
    "city": "Boston",
    "state": "MA",
    "zip": "02110",
    "country": "United States",
    "contactdata_job_levels": "Manager",
    "contactdata_job_functions": "Legal /Regulatory & Compliance",
    "contactdata_record_status": "Active",
    "contactdata_contact_guid": ARDYS_JENKEN,
    "hs_execution_state": "SUCCESS",
}


def test_the_hubspot_custom_action_sample_is_answered_with_output_fields(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """A custom workflow action is answered in the same response, in the shape of HubSpot's
    execution response sample; nothing is written to the CRM."""
    response = _hubspot(client, replay.links["hubspot"], "enrich", CUSTOM_ACTION, "v3")
    assert response.status_code == 200, response.get_json()
    documented = json.loads(
        (PLATFORMS / "hubspot_custom_action_execution_response.json").read_text()
    )
    answer = response.get_json()
    assert answer.keys() == documented.keys()
    assert answer["outputFields"] == ARDYS_OUTPUT
    assert response.headers["credits-deducted"] == "1" and response.headers["smarteTransactionId"]
    assert crm.calls == [] and replay.credits() == 9


CALLBACK = f"{CALLBACKS}/ap-102670506-56776413549-7-0/complete"


def _assert_blocked(response: TestResponse) -> None:
    """BLOCK, in the shape of HubSpot's sample, waiting up to a week (HubSpot's default)."""
    assert response.status_code == 200, response.get_json()
    documented = json.loads((PLATFORMS / "hubspot_custom_action_block_response.json").read_text())
    assert response.get_json().keys() == documented.keys()
    assert response.get_json()["outputFields"] == {
        "hs_execution_state": "BLOCK",
        "hs_expiration_duration": "P7D",
    }


def _assert_completed(crm: FakeCrm, output: dict[str, Any]) -> None:
    """One callback completion, in the shape of HubSpot's sample, with `output`, and the
    `typedOutputs` the date-versioned specification marks required, empty (as HubSpot's
    2026-03 reference example sends it)."""
    (call,) = crm.calls
    documented = json.loads(
        (PLATFORMS / "hubspot_custom_action_callback_complete_request.json").read_text()
    )
    assert (call.method, call.path) == ("POST", CALLBACK)
    assert call.headers["authorization"] == f"Bearer {HUBSPOT_TOKEN}"
    assert call.body == {**documented, "outputFields": output, "typedOutputs": {}}


def test_a_custom_action_posted_to_the_events_url_is_blocked_then_completed_by_callback(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    response = _hubspot(client, replay.links["hubspot"], "events", CUSTOM_ACTION, "v3")
    _assert_blocked(response)
    assert replay.event("hubspot")["event_key"] == "ap-102670506-56776413549-7-0"
    assert crm.calls == []
    assert replay.work.run_due() == {"done": 1}
    _assert_completed(crm, ARDYS_OUTPUT)  # the record itself is not written: the workflow is
    assert replay.event("hubspot")["last_error"] == "action completed: SUCCESS"
    assert replay.credits() == 9


def test_a_custom_action_out_of_credits_is_blocked_until_credits_come(
    client: FlaskClient,
    replay: Replay,
    crm: FakeCrm,
    clock: Clock,
) -> None:
    replay.db.execute("UPDATE organizations SET credits = 0")
    response = _hubspot(client, replay.links["hubspot"], "enrich", CUSTOM_ACTION, "v3")
    _assert_blocked(response)
    assert replay.work.run_due() == {"retry": 1} and crm.calls == []
    replay.db.execute("UPDATE organizations SET credits = 5")  # the admin tops up
    clock.now += timedelta(hours=2)
    assert replay.work.run_due() == {"done": 1}
    _assert_completed(crm, ARDYS_OUTPUT)
    assert replay.credits() == 4


def test_a_custom_action_nothing_can_be_found_for_is_completed_as_failed(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    nobody = _with(CUSTOM_ACTION, object={"objectId": 904, "objectType": "CONTACT"})
    _assert_blocked(_hubspot(client, replay.links["hubspot"], "events", nobody, "v3"))
    assert replay.work.run_due() == {"done": 1}
    (call,) = crm.calls
    assert call.body["outputFields"]["hs_execution_state"] == "FAIL_CONTINUE"
    assert call.body["outputFields"]["contactdata_error"].startswith("At least one identifier")


# --- Salesforce ------------------------------------------------------------------------------

SOME_DUDE_CONTACT = {  # the sample's Contact as the org holds it, Email included
    "FirstName": "some",
    "LastName": "dude",
    "Email": "some.dude@cascadetimber.com",
}


def _assert_salesforce_ack(response: TestResponse) -> None:
    """200, text/xml, and the same document as Salesforce's documented acknowledgement."""
    assert response.status_code == 200 and response.mimetype == "text/xml"
    documented = (PLATFORMS / "salesforce_outbound_message_ack.xml").read_bytes()
    assert _xml(response.data) == _xml(documented)


def _xml(document: bytes) -> list[tuple[str, str]]:
    """Each element's namespaced tag and text, in document order."""
    return [
        (node.tag, (node.text or "").strip()) for node in ElementTree.fromstring(document).iter()
    ]


SOME_DUDE_WRITE = {  # what the salesforce mapping writes to his Contact
    "Title": "Purchasing Manager",
    "Department": "Supply Chain Management",
    "MailingCity": "Portland",
    "MailingState": "OR",
    "MailingPostalCode": "97204",
    "MailingCountry": "United States",
    "ContactData_Company_Name__c": "Cascade Timber Supply Co.",
    "ContactData_Company_Domain__c": "cascadetimber.com",
    "ContactData_Job_Levels__c": "Manager",
    "ContactData_Job_Functions__c": "Supply Chain Management",
    "ContactData_Record_Status__c": "Active",
    "ContactData_Contact_GUID__c": SOME_DUDE,
}


@pytest.mark.parametrize("email_ticked", [False, True])
def test_the_salesforce_sample_is_enriched_and_written_back(
    client: FlaskClient, replay: Replay, crm: FakeCrm, email_ticked: bool
) -> None:
    """The Outbound Message as published carries FirstName and LastName only: the worker
    reads the Contact and enriches with the e-mail the org holds. With Email ticked in the
    message's fields, the message's value is used."""
    crm.contacts["salesforce"][SALESFORCE_CONTACT] = dict(SOME_DUDE_CONTACT)
    message = OUTBOUND_MESSAGE
    if email_ticked:
        last_name = b"<sf:LastName>dude</sf:LastName>"
        email = b"\n     <sf:Email>some.dude@cascadetimber.com</sf:Email>"
        message = OUTBOUND_MESSAGE.replace(last_name, last_name + email)
    _assert_salesforce_ack(_salesforce(client, replay.links["salesforce"], message))

    assert replay.work.run_due() == {"done": 1}
    read, write = crm.calls
    assert (read.method, read.path, read.query) == (
        "GET",
        f"{SF}/sobjects/Contact/{SALESFORCE_CONTACT}",
        {"fields": SALESFORCE_READ},
    )
    assert (write.method, write.path, write.query) == (
        "PATCH",
        f"{SF}/sobjects/Contact/{SALESFORCE_CONTACT}",
        {},
    )
    for call in (read, write):
        assert call.headers["authorization"] == f"Bearer {SALESFORCE_TOKEN}"
    assert write.headers["content-type"] == "application/json"
    assert write.body == SOME_DUDE_WRITE
    assert replay.event("salesforce")["event_key"] == "04lo0000000xxxxxxx"
    assert (
        crm.contacts["salesforce"][SALESFORCE_CONTACT]["FirstName"] == "some"
        and replay.credits() == 9
    )


def test_a_salesforce_contact_nothing_identifies_is_a_dead_letter(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """A name alone identifies nobody: neither the message nor the Contact has more."""
    crm.contacts["salesforce"][SALESFORCE_CONTACT] = {"FirstName": "some", "LastName": "dude"}
    _assert_salesforce_ack(_salesforce(client, replay.links["salesforce"], OUTBOUND_MESSAGE))
    assert replay.work.run_due() == {"dead": 1}
    assert [call.method for call in crm.calls] == ["GET"]
    event = replay.event("salesforce")
    assert (event["status"], event["last_error"]) == (
        "dead",
        f"missing_identifier: {MISSING_IDENTIFIER}",
    )
    assert replay.credits() == 10


# --- Zapier and Standard Webhooks (answered in the response; nothing written back) ----------

BRYAN_HELMIG_FIELDS = {
    "record_status": "Active",
    "accuracy": "A+",
    "contact_guid": BRYAN_HELMIG,
    "first_name": "Bryan",
    "last_name": "Helmig",
    "full_name": "Bryan Helmig",
    "email": "bryan@zapier.com",
    "job_title": "Chief Technology Officer",
    "job_levels": ["Founder/CXO"],
    "job_functions": ["Top Management", "Engineering and Development"],
    "linkedin_url": "",
    "phone": "",
    "city": "San Francisco",
    "state": "CA",
    "zip": "94107",
    "country": "United States",
    "company_guid": "5EB1000000000004",
    "company": "Zapier, Inc.",
    "company_website": "https://zapier.com",
    "company_domain": "zapier.com",
    "company_phone": "",
    "company_industry": "",
    "company_employees": None,  # a number, or null
    "company_employee_range": "",
    "company_revenue_range": "",
    "company_city": "San Francisco",
    "company_state": "CA",
    "company_country": "United States",
    "company_linkedin_url": "",
}


def _assert_missing_identifier(response: TestResponse, platform: str) -> None:
    """400, told in the keys the platform's mapping reads (and that the API's own work too)."""
    mapping = mappings.load_current(mappings.DIRECTORY / f"{platform}.yaml")
    message = mapping.missing_identifier(mappings.PLACEHOLDER)
    assert response.status_code == 400
    assert response.get_json() == {
        "error": {"code": "missing_identifier", "message": message, "status": 400}
    }
    assert message.startswith("At least one identifier is needed: send email, company")
    assert "contactEmail" in message


def _fields(response: TestResponse) -> dict[str, Any]:
    """An automation answer's enriched fields, its request's own (record id, transaction,
    credits) checked against the headers and left out."""
    body = dict(response.get_json())
    assert body.pop("smarteTransactionId") == response.headers["smarteTransactionId"]
    assert str(body.pop("creditsDeducted")) == response.headers["credits-deducted"]
    body.pop("recordId")
    return body


def test_the_zapier_sample_alone_is_refused_for_want_of_an_identifier(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """first_name and last_name are read (age is not); a name alone identifies nobody."""
    _assert_missing_identifier(_zapier(client, replay.links["zapier"], "enrich", ZAP), "zapier")
    assert crm.calls == [] and replay.credits() == 10


def test_the_zapier_sample_with_a_company_gets_the_enriched_fields(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    response = _zapier(client, replay.links["zapier"], "enrich", _with(ZAP, company="Zapier"))
    assert response.status_code == 200, response.get_json()
    assert _fields(response) == BRYAN_HELMIG_FIELDS
    assert response.headers["credits-deducted"] == "1"
    assert crm.calls == [] and replay.credits() == 9


def test_the_zapier_sample_sent_as_an_event_is_refused_naming_the_enrich_url(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """Zapier is no CRM: nothing could be written back, so /events says where to post."""
    link = replay.links["zapier"]
    response = _zapier(client, link, "events", ZAP)
    assert response.status_code == 404
    assert f"/hooks/{link.row['id']}/enrich" in response.get_json()["error"]["message"]
    assert store.events_of(replay.db, link.row["id"]) == []
    assert crm.calls == [] and replay.credits() == 10


def test_the_standard_webhooks_sample_reads_only_the_full_name(
    client: FlaskClient,
    replay: Replay,
    clock: Clock,
    crm: FakeCrm,
) -> None:
    """data.fullName is read; the address, phone number, birthday and occupation ("Engineer,
    ACME") are not, so nothing identifies John Smith's company."""
    clock.now, link = SPEC_SENT_AT, replay.links["zapier"]
    _assert_missing_identifier(
        _standard_webhooks(client, link, "enrich", STANDARD_PAYLOAD), "zapier"
    )
    assert crm.calls == [] and replay.credits() == 10


def test_the_standard_webhooks_sample_with_a_company_gets_the_enriched_fields(
    client: FlaskClient,
    replay: Replay,
    clock: Clock,
    crm: FakeCrm,
) -> None:
    clock.now = SPEC_SENT_AT
    body = _with(STANDARD_PAYLOAD, data__company="ACME Aerospace")
    response = _standard_webhooks(client, replay.links["zapier"], "enrich", body)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["recordId"] == "1f81eb52-5198-4599-803e-771906343485"
    assert _fields(response) == {
        "record_status": "Active",
        "accuracy": "A+",
        "contact_guid": JOHN_SMITH,
        "first_name": "John",
        "last_name": "Smith",
        "full_name": "John Smith",
        "email": "john.smith@acme-aerospace.com",
        "job_title": "Senior Systems Engineer",
        "job_levels": ["Staff/Principal"],
        "job_functions": ["Information Technology"],
        "linkedin_url": "",
        "phone": "",
        "city": "Webster",
        "state": "TX",
        "zip": "77598",
        "country": "United States",
        "company_guid": "5EB1000000000005",
        "company": "ACME Aerospace Inc.",
        "company_website": "https://www.acme-aerospace.com",
        "company_domain": "acme-aerospace.com",
        "company_phone": "",
        "company_industry": "",
        "company_employees": None,  # a number, or null
        "company_employee_range": "",
        "company_revenue_range": "",
        "company_city": "Webster",
        "company_state": "TX",
        "company_country": "United States",
        "company_linkedin_url": "",
    }
    assert crm.calls == [] and replay.credits() == 9


def test_the_standard_webhooks_sample_sent_as_an_event_is_refused(
    client: FlaskClient,
    replay: Replay,
    clock: Clock,
    crm: FakeCrm,
) -> None:
    clock.now, link = SPEC_SENT_AT, replay.links["zapier"]
    response = _standard_webhooks(client, link, "events", STANDARD_PAYLOAD)
    assert (response.status_code, response.get_json()["error"]["code"]) == (404, "not_found")
    assert store.events_of(replay.db, link.row["id"]) == [] and crm.calls == []


# --- Pipedrive -------------------------------------------------------------------------------

PIPEDRIVE_PERSON = {  # the sample's person 12 as GET /api/v2/persons/12 gives it
    **json.loads(PIPEDRIVE_PERSON_CHANGED)["data"],
    "custom_fields": {PIPEDRIVE_JOB_TITLE: None},  # the custom field the mapping writes
}


def _assert_pipedrive_call(call: Call, method: str, body: Any) -> None:
    assert (call.method, call.path, call.query) == (method, "/api/v2/persons/12", {})
    assert call.headers["x-api-token"] == PIPEDRIVE_TOKEN
    assert "authorization" not in call.headers
    assert call.body == body


def test_the_pipedrive_sample_is_enriched_and_written_back(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """The sample as published: the user typed person@example.com into person 12 (change
    source "app"). The e-mail finds the person; the name and e-mail the person has are kept,
    and the job title, empty, is filled."""
    crm.contacts["pipedrive"]["12"] = json.loads(json.dumps(PIPEDRIVE_PERSON))
    # A redelivery: attempt 2 of the same meta.id (that a retry keeps meta.id is what inbound
    # assumes; Pipedrive's docs seen do not say), acknowledged and not stored again.
    redelivery = _with(PIPEDRIVE_PERSON_CHANGED, meta__attempt=2)
    for body in (PIPEDRIVE_PERSON_CHANGED, redelivery):
        response = _pipedrive(client, replay.links["pipedrive"], body)
        assert (response.status_code, response.get_json()) == (200, {"accepted": 1})
    event = replay.event("pipedrive")
    assert (event["event_key"], event["record_id"], event["thin"]) == (
        "123456789-1234-1234-1234-123456789012",
        "12",
        0,
    )

    assert replay.work.run_due() == {"done": 1}
    read, write = crm.calls
    _assert_pipedrive_call(read, "GET", None)
    _assert_pipedrive_call(
        write, "PATCH", {"custom_fields": {PIPEDRIVE_JOB_TITLE: "Operations Manager"}}
    )
    assert write.headers["content-type"] == "application/json"
    assert crm.contacts["pipedrive"]["12"]["name"] == "Person Name" and replay.credits() == 9
    assert store.record(replay.db, replay.links["pipedrive"].row["id"], "12")["contact_guid"] == (
        PERSON_NAME
    )
    assert (replay.event("pipedrive")["status"], replay.event("pipedrive")["last_error"]) == (
        "done",
        "",
    )


def _pipedrive_change(source: str, event_id: str) -> bytes:
    """Pipedrive's event for the write of the test above: the job title is what we wrote,
    `previous` lists it alone, made by an API call ("api") or by a user in the app ("app")."""
    return _with(
        PIPEDRIVE_PERSON_CHANGED,
        data__custom_fields={PIPEDRIVE_JOB_TITLE: "Operations Manager"},
        previous={"custom_fields": {PIPEDRIVE_JOB_TITLE: None}},
        meta__change_source=source,
        meta__id=event_id,
    )


@pytest.mark.parametrize(
    ("days_later", "source", "reads", "note", "credits"),
    [
        (0, "api", 0, f"our own write of {PIPEDRIVE_JOB_TITLE} echoed back: ignored", 9),
        (31, "api", 0, f"our own write of {PIPEDRIVE_JOB_TITLE} echoed back: ignored", 9),
        (0, "app", 0, "unchanged since 2026-11-23T12:00:00.000+00:00: not enriched again", 9),
        (31, "app", 1, "", 8),
    ],
)
def test_a_pipedrive_echo_of_our_write_is_ignored_and_the_same_change_in_the_app_is_not(
    client: FlaskClient,
    replay: Replay,
    crm: FakeCrm,
    clock: Clock,
    days_later: int,
    source: str,
    reads: int,
    note: str,
    credits: int,
) -> None:
    """Our PATCH comes back as a change made through the API whose changed fields hold what
    we wrote: done at once, whenever it comes. The same change made in the app is no echo:
    within 30 days of our enrichment its input is the one we enriched from (our own job
    title does not count), so it is not enriched again either; later it is enriched anew,
    and nothing is written, as the person holds our values."""
    crm.contacts["pipedrive"]["12"] = json.loads(json.dumps(PIPEDRIVE_PERSON))
    link = replay.links["pipedrive"]
    assert _pipedrive(client, link, PIPEDRIVE_PERSON_CHANGED).status_code == 200
    assert replay.work.run_due() == {"done": 1} and len(crm.calls) == 2
    crm.calls.clear()

    clock.now += timedelta(days=days_later)
    change = _pipedrive_change(source, "223456789-1234-1234-1234-123456789012")
    assert _pipedrive(client, link, change).get_json() == {"accepted": 1}
    assert replay.work.run_due() == {"done": 1}
    assert [(call.method, call.path) for call in crm.calls] == [
        ("GET", "/api/v2/persons/12")
    ] * reads
    echo = store.events_of(replay.db, link.row["id"])[-1]
    assert (echo["status"], echo["last_error"]) == ("done", note)
    assert crm.contacts["pipedrive"]["12"]["custom_fields"] == {
        PIPEDRIVE_JOB_TITLE: "Operations Manager"
    }
    cached = store.record(replay.db, link.row["id"], "12")
    assert json.loads(cached["written"]) == {PIPEDRIVE_JOB_TITLE: "Operations Manager"}
    assert replay.credits() == credits


def test_a_pipedrive_webhook_still_on_v1_is_enriched_written_back_and_its_echo_ignored(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """A v1 webhook was answered {"accepted": 0} and never enriched anything. Read like v2:
    written back the same, and our write coming back through the API (v1's `previous` holds
    the whole person) is recognized by the one field that changed."""
    crm.contacts["pipedrive"]["12"] = json.loads(json.dumps(PIPEDRIVE_PERSON))
    link = replay.links["pipedrive"]
    for body in (PIPEDRIVE_V1_CHANGED, _with(PIPEDRIVE_V1_CHANGED, retry=1)):  # once
        response = _pipedrive(client, link, body)
        assert (response.status_code, response.get_json()) == (200, {"accepted": 1})
    assert replay.work.run_due() == {"done": 1}
    _read, write = crm.calls
    titled = {"custom_fields": {PIPEDRIVE_JOB_TITLE: "Operations Manager"}}
    _assert_pipedrive_call(write, "PATCH", titled)
    crm.calls.clear()

    echo = _with(  # v1 holds custom fields at the person's top level
        PIPEDRIVE_V1_CHANGED,
        **{f"current__{PIPEDRIVE_JOB_TITLE}": "Operations Manager"},
        **{f"previous__{PIPEDRIVE_JOB_TITLE}": None},
        previous__email=[{"label": "work", "value": "person@example.com", "primary": True}],
        meta__change_source="api",
        meta__timestamp_micro=1750349300000000,
    )
    assert _pipedrive(client, link, echo).get_json() == {"accepted": 1}
    assert replay.work.run_due() == {"done": 1} and crm.calls == []
    last = store.events_of(replay.db, link.row["id"])[-1]
    assert last["last_error"] == f"our own write of {PIPEDRIVE_JOB_TITLE} echoed back: ignored"
    assert replay.credits() == 9


# --- Zoho CRM --------------------------------------------------------------------------------

ZOHO_CONTACT_ID = json.loads(ZOHO_NOTIFICATION)["ids"][0]
JASON_SMITH_CONTACT = {  # a Contact as Zoho's get-records docs show one, under the sample's id
    "Owner": {"name": "Patricia Boyle", "id": "554023000000235011", "email": "p.boyle@zylker.com"},
    "Email": "j.smith@zylker.com",
    "First_Name": "Jason",
    "Last_Name": "Smith",
    "Title": None,
    "Account_Name": {"name": "Zylker", "id": "554023000000238121"},
}
ZOHO_READ = (
    "First_Name,Title,Department,Phone,Mailing_Street,Mailing_City,Mailing_State,Mailing_Zip,"
    "Mailing_Country,LinkedIn_URL,ContactData_Company_Name,ContactData_Company_Domain,"
    "ContactData_Industry,ContactData_Employees,ContactData_Employee_Range,"
    "ContactData_Revenue_Range,ContactData_Job_Levels,ContactData_Job_Functions,"
    "ContactData_Record_Status,ContactData_Contact_GUID,ContactData_Job_Change_Left_On,"
    "ContactData_Job_Change_New_Company,ContactData_Job_Change_New_Title,Email,Last_Name,"
    "Account_Name"
)


def test_the_zoho_sample_is_a_leads_notification_stored_as_a_lead(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """The sample as published comes from channel 1000000068001, which no connection has (a
    connection's channel is made from its id: 18 digits), so it is refused. From our own
    channel, the Lead it reports inserted is stored as a lead (the channel watches Leads
    too), keyed apart from a Contact of the same id."""
    link = replay.links["zoho"]
    refused = _zoho(client, link, ZOHO_NOTIFICATION)
    assert (refused.status_code, refused.get_json()["error"]["code"]) == (401, "invalid_signature")
    response = _zoho(client, link, _zoho_notification(link))
    assert (response.status_code, response.get_json()) == (200, {"accepted": 1})
    (event,) = store.events_of(replay.db, link.row["id"])
    assert (event["kind"], event["record_id"], event["event_key"]) == (
        "leads",
        ZOHO_CONTACT_ID,
        f"{ZOHO_PLATFORM.channel_id(link.row)}:1718117126473:Leads:{ZOHO_CONTACT_ID}",
    )


def test_the_zoho_sample_for_a_contact_is_read_enriched_and_written_back(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """The same notification for module Contacts (resource_uri is not read): the ids alone
    come, so the worker reads the Contact (Account_Name, a lookup, read as its name), enriches
    by its e-mail and updates it with no workflow triggered."""
    crm.contacts["zoho"][ZOHO_CONTACT_ID] = dict(JASON_SMITH_CONTACT)
    link = replay.links["zoho"]
    notification = _zoho_notification(link, module="Contacts")
    response = _zoho(client, link, notification)
    assert (response.status_code, response.get_json()) == (200, {"accepted": 1})
    event = replay.event("zoho")
    assert (event["event_key"], event["record_id"], event["thin"]) == (
        f"{ZOHO_PLATFORM.channel_id(link.row)}:1718117126473:{ZOHO_CONTACT_ID}",
        ZOHO_CONTACT_ID,
        1,
    )

    assert replay.work.run_due() == {"done": 1}
    read, write = crm.calls
    path = f"/crm/v7/Contacts/{ZOHO_CONTACT_ID}"
    assert (read.method, read.path, read.query) == ("GET", path, {"fields": ZOHO_READ})
    assert (write.method, write.path, write.query) == ("PUT", path, {})
    for call in (read, write):
        assert call.headers["authorization"] == f"Zoho-oauthtoken {ZOHO_TOKEN}"
    assert write.headers["content-type"] == "application/json"
    assert write.body == {
        "data": [
            {
                "Title": "Sales Director",
                "Department": "Sales",
                "Mailing_City": "Pleasanton",
                "Mailing_State": "CA",
                "Mailing_Zip": "94588",
                "Mailing_Country": "United States",
                "ContactData_Company_Name": "Zylker Corp",
                "ContactData_Company_Domain": "zylker.com",
                "ContactData_Job_Levels": "Director",
                "ContactData_Job_Functions": "Sales",
                "ContactData_Record_Status": "Active",
                "ContactData_Contact_GUID": JASON_SMITH,
            }
        ],
        "trigger": [],
    }
    assert (
        crm.contacts["zoho"][ZOHO_CONTACT_ID]["Account_Name"] == JASON_SMITH_CONTACT["Account_Name"]
    )
    assert replay.credits() == 9


PRIYA_RAMAN_CONTACT_ID = "5725767000003000065"


def test_a_zoho_notification_naming_two_contacts_is_read_and_written_in_one_call_each(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """Zoho lists every id a change touched: one thin event each, read together by their
    ids and updated together, one answer a record."""
    crm.contacts["zoho"][ZOHO_CONTACT_ID] = dict(JASON_SMITH_CONTACT)
    crm.contacts["zoho"][PRIYA_RAMAN_CONTACT_ID] = {
        "Email": "priya.raman@northwindhealth.com",
        "First_Name": "Priya",
        "Last_Name": "Raman",
        "Account_Name": None,
    }
    link = replay.links["zoho"]
    ids = [ZOHO_CONTACT_ID, PRIYA_RAMAN_CONTACT_ID]
    response = _zoho(client, link, _zoho_notification(link, module="Contacts", ids=ids))
    assert (response.status_code, response.get_json()) == (200, {"accepted": 2})

    assert replay.work.run_due() == {"done": 2}
    read, write = crm.calls
    assert (read.method, read.path, read.query) == (
        "GET",
        "/crm/v7/Contacts",
        {"ids": f"{ZOHO_CONTACT_ID},{PRIYA_RAMAN_CONTACT_ID}", "fields": ZOHO_READ},
    )
    assert (write.method, write.path, write.query) == ("PUT", "/crm/v7/Contacts", {})
    assert write.headers["authorization"] == f"Zoho-oauthtoken {ZOHO_TOKEN}"
    assert write.body == {
        "data": [
            {
                "id": ZOHO_CONTACT_ID,
                "Title": "Sales Director",
                "Department": "Sales",
                "Mailing_City": "Pleasanton",
                "Mailing_State": "CA",
                "Mailing_Zip": "94588",
                "Mailing_Country": "United States",
                "ContactData_Company_Name": "Zylker Corp",
                "ContactData_Company_Domain": "zylker.com",
                "ContactData_Job_Levels": "Director",
                "ContactData_Job_Functions": "Sales",
                "ContactData_Record_Status": "Active",
                "ContactData_Contact_GUID": JASON_SMITH,
            },
            {
                "id": PRIYA_RAMAN_CONTACT_ID,
                "Title": "Director of Operations",
                "Department": "Operations and related",
                "Mailing_City": "Seattle",
                "Mailing_State": "WA",
                "Mailing_Zip": "98101",
                "Mailing_Country": "United States",
                "ContactData_Company_Name": "Northwind Health Partners LLC",
                "ContactData_Company_Domain": "northwindhealth.com",
                "ContactData_Job_Levels": "Director",
                "ContactData_Job_Functions": "Operations and related",
                "ContactData_Record_Status": "Active",
                "ContactData_Contact_GUID": PRIYA_RAMAN,
            },
        ],
        "trigger": [],
    }
    assert replay.credits() == 8


# --- Dynamics 365 ----------------------------------------------------------------------------

JAMES_GLYNN_CONTACT_ID = "6d81597f-0f9f-e711-8122-000d3aa2331c"  # the sample's PrimaryEntityId
JAMES_GLYNN_CONTACT = {  # the sample's contact as Dataverse holds it: no e-mail, no account
    "firstname": "James",
    "lastname": "Glynn (sample)",
    "fullname": "James Glynn (sample)",
}
DYNAMICS_READ = (
    "firstname,lastname,emailaddress1,jobtitle,department,websiteurl,telephone1,address1_line1,"
    "address1_city,address1_stateorprovince,address1_postalcode,address1_country,"
    "new_contactdata_linkedin_url,new_contactdata_company_name,new_contactdata_industry,"
    "new_contactdata_employee_count,new_contactdata_employee_range,"
    "new_contactdata_revenue_range,new_contactdata_job_levels,new_contactdata_job_functions,"
    "new_contactdata_record_status,new_contactdata_contact_guid,"
    "new_contactdata_job_change_left_on,new_contactdata_job_change_new_company,"
    "new_contactdata_job_change_new_title,fullname,"
    "_parentcustomerid_value"  # the contact's company (an account, or a contact)
)
JAMES_GLYNN_PATH = f"{DATAVERSE}/contacts({JAMES_GLYNN_CONTACT_ID})"


def _with_email(context: bytes, email: str) -> bytes:
    """The RemoteExecutionContext with an e-mail among the Target's attributes, as Dataverse
    sends it when the user fills in the contact's e-mail (a filtering attribute)."""
    document = json.loads(context)
    (target,) = [item["value"] for item in document["InputParameters"] if item["key"] == "Target"]
    target["Attributes"].append({"key": "emailaddress1", "value": email})
    return json.dumps(document, indent=4).encode()


def _assert_dataverse_headers(call: Call) -> None:
    assert call.headers["authorization"] == f"Bearer {DYNAMICS_TOKEN}"
    assert call.headers["accept"] == "application/json"
    assert (call.headers["odata-maxversion"], call.headers["odata-version"]) == ("4.0", "4.0")


def test_the_dynamics_sample_names_james_glynn_whom_a_name_alone_does_not_find(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """The sample changes a first name; the contact has a full name and nothing else that
    identifies him (no e-mail, no account, so no company). The worker reads him, then the
    event is a dead letter naming what is missing; nothing is written or charged."""
    crm.contacts["dynamics"][JAMES_GLYNN_CONTACT_ID] = dict(JAMES_GLYNN_CONTACT)
    response = _dynamics(client, replay.links["dynamics"], DYNAMICS_CONTEXT)
    assert (response.status_code, response.get_json()) == (200, {"accepted": 1})
    event = replay.event("dynamics")
    assert (event["event_key"], event["record_id"], event["thin"]) == (
        f"4af10637-4ea2-e711-8122-000d3aa2331c:{JAMES_GLYNN_CONTACT_ID}",
        JAMES_GLYNN_CONTACT_ID,
        0,
    )
    assert json.loads(event["payload"])["fullname"] == "James Glynn (sample)"

    assert replay.work.run_due() == {"dead": 1}
    (read,) = crm.calls
    assert (read.method, read.path, read.query) == (
        "GET",
        JAMES_GLYNN_PATH,
        {"$select": DYNAMICS_READ},
    )
    _assert_dataverse_headers(read)
    event = replay.event("dynamics")
    assert (event["status"], event["last_error"]) == (
        "dead",
        f"missing_identifier: {MISSING_IDENTIFIER}",
    )
    assert crm.contacts["dynamics"][JAMES_GLYNN_CONTACT_ID] == JAMES_GLYNN_CONTACT
    assert replay.credits() == 10


def test_the_dynamics_sample_with_an_email_is_written_back(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """Once the user fills in his e-mail: the names he has are kept (the "(sample)" of his
    last name too), the empty columns and our own columns are filled."""
    email = "james.glynn@cohowinery.com"
    crm.contacts["dynamics"][JAMES_GLYNN_CONTACT_ID] = {
        **JAMES_GLYNN_CONTACT,
        "emailaddress1": email,
    }
    context = _with_email(DYNAMICS_CONTEXT, email)
    response = _dynamics(client, replay.links["dynamics"], context)
    assert (response.status_code, response.get_json()) == (200, {"accepted": 1})

    assert replay.work.run_due() == {"done": 1}
    read, write = crm.calls
    assert (read.method, read.path, read.query) == (
        "GET",
        JAMES_GLYNN_PATH,
        {"$select": DYNAMICS_READ},
    )
    assert (write.method, write.path, write.query) == ("PATCH", JAMES_GLYNN_PATH, {})
    for call in (read, write):
        _assert_dataverse_headers(call)
    assert write.headers["if-match"] == "*" and "if-match" not in read.headers
    assert write.headers["content-type"] == "application/json"
    assert write.body == {
        "jobtitle": "Head of Sales",
        "department": "Sales",
        "websiteurl": "https://www.cohowinery.com",
        "address1_city": "Napa",
        "address1_stateorprovince": "CA",
        "address1_postalcode": "94559",
        "address1_country": "United States",
        "new_contactdata_company_name": "Coho Winery",
        "new_contactdata_job_levels": "Head",
        "new_contactdata_job_functions": "Sales",
        "new_contactdata_record_status": "Active",
        "new_contactdata_contact_guid": JAMES_GLYNN,
    }
    assert crm.contacts["dynamics"][JAMES_GLYNN_CONTACT_ID]["lastname"] == "Glynn (sample)"
    assert replay.credits() == 9


# --- Marketo (answered in the response, which its response mappings apply) ------------------

MARKETO_LEAD = {  # the sample's lead (profileId 1234, Jane Doe) as the webhook template sends it
    "id": MARKETO_RESPONSE["profileId"],
    "firstName": MARKETO_RESPONSE["firstName"],
    "lastName": MARKETO_RESPONSE["lastName"],
}
ADDRESSABLE = re.compile(r"[A-Za-z0-9_-]+")  # a response attribute Marketo can name


def test_the_marketo_samples_lead_by_name_alone_is_refused_for_want_of_an_identifier(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """Jane Doe with no e-mail and no company: 400, so Marketo maps nothing onto the lead."""
    link = replay.links["marketo"]
    body = json.dumps(MARKETO_LEAD).encode()
    _assert_missing_identifier(_marketo(client, link, "enrich", body), "marketo")
    assert crm.calls == [] and replay.credits() == 10


def test_the_marketo_answer_is_flat_json_its_response_mappings_can_address(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """With her e-mail: every attribute at the top level, named by letters, digits, - and _,
    its value a string or number (none a list or object), so a Response Attribute of the
    bare name ("jobTitle") maps it; firstName and lastName as in Marketo's sample. Empty
    values are left out: a response mapping would blank the lead's field with them."""
    lead = {**MARKETO_LEAD, "email": "jane.doe@lakeshoreanalytics.com"}
    response = _marketo(client, replay.links["marketo"], "enrich", json.dumps(lead).encode())
    assert response.status_code == 200, response.get_json()
    assert response.mimetype == "application/json"
    answer = response.get_json()
    assert answer == {
        "recordStatus": "Active",
        "accuracy": "A+",
        "contactGuid": JANE_DOE,
        "firstName": "Jane",
        "lastName": "Doe",
        "email": "jane.doe@lakeshoreanalytics.com",
        "jobTitle": "VP of Marketing",
        "jobLevel": "VP",
        "jobFunction": "Marketing",
        "city": "Chicago",
        "state": "IL",
        "postalCode": "60601",
        "country": "United States",
        "companyGuid": "5EB100000000000A",
        "company": "Lakeshore Analytics Inc.",
        "website": "https://www.lakeshoreanalytics.com",
        "billingCity": "Chicago",
        "billingState": "IL",
        "billingCountry": "United States",
    }
    assert all(ADDRESSABLE.fullmatch(key) for key in answer)
    assert all(isinstance(value, str | int | float) for value in answer.values())
    assert {key: answer[key] for key in ("firstName", "lastName")} == {
        "firstName": MARKETO_RESPONSE["firstName"],
        "lastName": MARKETO_RESPONSE["lastName"],
    }
    assert response.headers["credits-deducted"] == "1"
    assert crm.calls == [] and replay.credits() == 9


def test_the_marketo_lead_sent_as_an_event_is_refused_naming_the_enrich_url(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    link = replay.links["marketo"]
    response = _marketo(client, link, "events", json.dumps(MARKETO_LEAD).encode())
    assert response.status_code == 404
    assert f"/hooks/{link.row['id']}/enrich" in response.get_json()["error"]["message"]
    assert store.events_of(replay.db, link.row["id"]) == [] and crm.calls == []


# --- refusals --------------------------------------------------------------------------------


def _forged(client: FlaskClient, replay: Replay, kind: str) -> TestResponse:
    """A request whose proof of origin is wrong in one way only."""
    links = replay.links
    if kind == "pipedrive: wrong Basic password":
        return _pipedrive(client, links["pipedrive"], PIPEDRIVE_PERSON_CHANGED, "not-the-secret")
    if kind == "pipedrive: no Basic auth":
        url = f"/hooks/{links['pipedrive'].row['id']}/events"
        return client.post(url, data=PIPEDRIVE_PERSON_CHANGED, content_type="application/json")
    if kind == "zoho: wrong token":
        body = _zoho_notification(links["zoho"], module="Contacts", token="not-the-token")
        return _zoho(client, links["zoho"], body)
    if kind == "zoho: the sample's own channel":
        return _zoho(client, links["zoho"], _with(ZOHO_NOTIFICATION, module="Contacts"))
    if kind == "dynamics: wrong ?code=":
        return _dynamics(client, links["dynamics"], DYNAMICS_CONTEXT, code="not-the-key")
    if kind == "dynamics: no ?code=":
        url = f"/hooks/{links['dynamics'].row['id']}/events"
        return client.post(url, data=DYNAMICS_CONTEXT, content_type="application/json")
    body = json.dumps({**MARKETO_LEAD, "email": "jane.doe@lakeshoreanalytics.com"}).encode()
    headers = {"Authorization": "Bearer not-the-secret"}
    url = f"/hooks/{links['marketo'].row['id']}/enrich"
    return client.post(url, data=body, headers=headers, content_type="application/json")


@pytest.mark.parametrize(
    "kind",
    [
        "pipedrive: wrong Basic password",
        "pipedrive: no Basic auth",
        "zoho: wrong token",
        "zoho: the sample's own channel",
        "dynamics: wrong ?code=",
        "dynamics: no ?code=",
        "marketo: wrong bearer token",
    ],
)
def test_a_request_not_proven_to_come_from_the_platform_is_401_and_nothing_is_stored(
    client: FlaskClient, replay: Replay, crm: FakeCrm, kind: str
) -> None:
    """Each would otherwise be stored (a Contact, a person, a contact) or charged (Marketo)."""
    response = _forged(client, replay, kind)
    assert response.status_code == 401, response.get_data(as_text=True)
    assert response.get_json()["error"]["code"] == "invalid_signature"
    platform = kind.split(":")[0]
    assert store.events_of(replay.db, replay.links[platform].row["id"]) == []
    assert replay.work.run_due() == {} and crm.calls == [] and replay.credits() == 10


# --- concurrency -----------------------------------------------------------------------------


def test_twenty_concurrent_copies_of_one_event_make_one_job_and_one_write_back(
    app: Flask,
    replay: Replay,
    crm: FakeCrm,
) -> None:
    """HubSpot retrying a delivery twenty times at once: one event stored, one PATCH."""
    email = "hubspot.test@hubspot.com"
    # no primary company: the contact's event is the only job
    crm.contacts["hubspot"]["3234574"] = {**WORKFLOW_CONTACT, "email": email,
                                          "associatedcompanyid": None}  # fmt: skip
    body = _with(WORKFLOW, properties__email={"value": email})

    def send(_: int) -> int:
        link = replay.links["hubspot"]
        return _hubspot(app.test_client(), link, "events", body, "v2").status_code

    with ThreadPoolExecutor(max_workers=20) as pool:
        assert list(pool.map(send, range(20))) == [200] * 20
    assert replay.work.run_due() == {"done": 1} and replay.work.run_due() == {}
    writes = [call for call in crm.calls if call.method != "GET"]
    assert [(call.method, call.path) for call in writes] == [("PATCH", f"{CONTACTS}/3234574")]
    assert replay.credits() == 9


# --- the fake CRM itself ---------------------------------------------------------------------


def test_the_fake_crm_takes_batches_and_custom_action_callbacks(crm: FakeCrm) -> None:
    """What later tests (batched write-backs, BLOCKed custom actions) will send it."""
    crm.contacts["hubspot"]["512"] = {"email": "a@example.com"}
    crm.contacts["salesforce"]["003xx000004TmiQAAS"] = {"LastName": "Engineer"}
    callback = "ap-102670506-56776413549-7-0"
    completed = {"outputFields": {"hs_execution_state": "SUCCESS"}, "typedOutputs": {}}
    updates = [{"id": "512", "properties": {"jobtitle": "CTO"}}, {"id": "9", "properties": {}}]
    reads = {"properties": ["jobtitle"], "propertiesWithHistory": [], "inputs": [{"id": "512"}]}
    with httpx.Client(base_url=crm.url) as http:
        updated = http.post(f"{CONTACTS}/batch/update", json={"inputs": updates})
        read = http.post(f"{CONTACTS}/batch/read", json=reads)
        collection = http.patch(
            f"{SF}/composite/sobjects",
            json={
                "allOrNone": False,
                "records": [
                    {"attributes": {"type": "Contact"}, "id": "003xx000004TmiQAAS", "Title": "Lead"}
                ],
            },
        )
        done = http.post(f"{CALLBACKS}/{callback}/complete", json=completed)
    assert updated.status_code == 207 and updated.json()["errors"][0]["context"] == {"ids": ["9"]}
    assert read.json()["results"][0]["properties"] == {"jobtitle": "CTO", "hs_object_id": "512"}
    assert collection.json() == [{"id": "003xx000004TmiQAAS", "success": True, "errors": []}]
    assert crm.contacts["salesforce"]["003xx000004TmiQAAS"]["Title"] == "Lead"
    assert (done.status_code, done.content) == (204, b"")
    assert (crm.calls[-1].path, crm.calls[-1].body) == (
        f"{CALLBACKS}/{callback}/complete",
        completed,
    )


def test_the_fake_crm_answers_the_new_adapters_batch_calls(crm: FakeCrm) -> None:
    """The batch routes a round of several events takes, called by the adapters themselves:
    found records, a missing one in each, and Dataverse's PATCH refused without If-Match."""
    crm.contacts["pipedrive"]["12"] = json.loads(json.dumps(PIPEDRIVE_PERSON))
    crm.contacts["zoho"][ZOHO_CONTACT_ID] = dict(JASON_SMITH_CONTACT)
    crm.contacts["dynamics"][JAMES_GLYNN_CONTACT_ID] = dict(JAMES_GLYNN_CONTACT)
    other_guid = "7e92608f-1fa0-f811-9233-111e4bb3442d"
    with httpx.Client(timeout=httpx.Timeout(10.0)) as http:
        pipedrive = Pipedrive(crm.url, PIPEDRIVE_TOKEN, http)
        zoho = Zoho(crm.url, ZOHO_TOKEN, http)
        dynamics = Dynamics(crm.url, DYNAMICS_TOKEN, http)
        persons = pipedrive.read_many(["12", "13"], ["email", "job_title"])
        contacts = zoho.read_many([ZOHO_CONTACT_ID, "1"], ["Email", "Account_Name"])
        written = zoho.write_many({ZOHO_CONTACT_ID: {"Title": "CTO"}, "1": {"Title": "CTO"}})
        rows = dynamics.read_many([JAMES_GLYNN_CONTACT_ID, other_guid], ["firstname"])
        upsert = http.patch(f"{crm.url}{JAMES_GLYNN_PATH}", json={"jobtitle": "CTO"})
    assert persons["12"] == {"email": "person@example.com", "job_title": None}
    assert persons["13"].reason == "no such person: not in Pipedrive's answer (deleted or merged?)"
    assert crm.calls[0].query == {"ids": "12,13", "limit": "100"}
    assert contacts[ZOHO_CONTACT_ID] == {"Email": "j.smith@zylker.com", "Account_Name": "Zylker"}
    assert isinstance(contacts["1"], Permanent)
    assert written[ZOHO_CONTACT_ID] == WriteResult(written={"Title": "CTO"})
    assert written["1"].reason == "INVALID_DATA: the id given seems to be invalid (id)"
    assert crm.contacts["zoho"][ZOHO_CONTACT_ID]["Title"] == "CTO"
    assert rows[JAMES_GLYNN_CONTACT_ID] == {"firstname": "James"}
    assert isinstance(rows[other_guid], Permanent)
    assert crm.calls[3].query == {
        "$select": "contactid,firstname",
        "$filter": "Microsoft.Dynamics.CRM.In(PropertyName='contactid',PropertyValues="
        f"['{JAMES_GLYNN_CONTACT_ID}','{other_guid}'])",
    }
    assert upsert.status_code == 400
    assert "jobtitle" not in crm.contacts["dynamics"][JAMES_GLYNN_CONTACT_ID]


def test_a_custom_action_meeting_a_busy_database_is_blocked_then_completed(
    client: FlaskClient, replay: Replay, crm: FakeCrm, monkeypatch: pytest.MonkeyPatch
) -> None:
    from connector import receiver

    def locked(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError("database is locked")

    with monkeypatch.context() as patch:
        patch.setattr(receiver.server, "enrich_with_key", locked)
        _assert_blocked(_hubspot(client, replay.links["hubspot"], "enrich", CUSTOM_ACTION, "v3"))
    assert replay.work.run_due() == {"done": 1}
    _assert_completed(crm, ARDYS_OUTPUT)
