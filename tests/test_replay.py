"""End-to-end replay of the HubSpot, Salesforce, Zapier and Standard Webhooks samples in
tests/data/platforms: each is signed for real (by the published algorithms, computed here),
received by the connector's app, worked off by the worker over a real HTTP client, and written
back to a fake CRM listening on loopback, whose requests are checked field by field.

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
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit
from xml.etree import ElementTree

import httpx
import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlite_utils import Database
from werkzeug.test import TestResponse

from connector import connections, store, worker
from server import accounts, importer
from tests.test_receiver import NOW, PLATFORMS, SECRET, Clock, app, clock  # noqa: F401

DATA = Path(__file__).parent / "data"
HUBSPOT_SECRET = "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy"  # the client secret of HubSpot's docs
HUBSPOT_TOKEN = "pat-na1-5eb10000-0000-4000-8000-000000000001"
SALESFORCE_TOKEN = "00Do0000000xxxxxxx!AQ4AQReplay.Access.Token"
SALESFORCE_ORG = "00Do0000000xxxxxxx"  # the sample's (redacted) organization id
SALESFORCE_CONTACT = "003o000000xxxxxxxxx"  # the sample's (redacted, 19-character) Contact id
SF = "/services/data/v62.0"
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

# The people of tests/data/replay_contacts.csv, by contact GUID.
HUBSPOT_TEST = "5EB10000000000000000000000000C01"
ARDYS_JENKEN = "5EB10000000000000000000000000C02"
SOME_DUDE = "5EB10000000000000000000000000C03"
BRYAN_HELMIG = "5EB10000000000000000000000000C04"
JOHN_SMITH = "5EB10000000000000000000000000C05"
PRIYA_RAMAN = "5EB10000000000000000000000000C06"

# What the worker reads of a contact: the mapping's output properties, then its plain inputs.
HUBSPOT_READ = (
    "firstname,lastname,jobtitle,company,website,industry,phone,address,city,state,zip,country,"
    "linkedin_url,contactdata_employee_count,contactdata_employee_range,"
    "contactdata_revenue_range,contactdata_job_levels,contactdata_job_functions,"
    "contactdata_record_status,contactdata_contact_guid,email"
)
SALESFORCE_READ = (
    "FirstName,Email,Title,Department,Phone,MailingStreet,MailingCity,MailingState,"
    "MailingPostalCode,MailingCountry,LinkedIn_URL__c,ContactData_Company_Name__c,"
    "ContactData_Company_Domain__c,ContactData_Industry__c,ContactData_Employees__c,"
    "ContactData_Employee_Range__c,ContactData_Revenue_Range__c,ContactData_Job_Levels__c,"
    "ContactData_Job_Functions__c,ContactData_Record_Status__c,ContactData_Contact_GUID__c,"
    "LastName,Account_Name__c,Account_Website__c"
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


@dataclass(frozen=True)
class Call:
    """One request the fake CRM received."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names in lower case
    body: Any  # the JSON body, None when there was none


class FakeCrm(ThreadingHTTPServer):
    """HubSpot's and Salesforce's contact endpoints on one loopback server: contacts by id,
    writes applied, every request recorded in `calls`."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _CrmHandler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Forget every contact and call."""
        with self.lock:
            self.hubspot: dict[str, dict[str, str]] = {}
            self.salesforce: dict[str, dict[str, Any]] = {}
            self.calls: list[Call] = []

    def answer(self, call: Call) -> tuple[int, Any]:
        """Record `call` and answer it: status and JSON body (None for no body)."""
        with self.lock:
            self.calls.append(call)
            for pattern, method, route in _ROUTES:
                found = re.fullmatch(pattern, call.path)
                if found and call.method == method:
                    return route(self, call, *map(unquote, found.groups()))
        return 404, [{"errorCode": "NOT_FOUND", "message": f"no route {call.path}"}]

    # HubSpot CRM v3 -------------------------------------------------------------------------

    def hubspot_object(self, record_id: str, wanted: list[str] | None = None) -> dict[str, Any]:
        stored = self.hubspot[record_id]
        names = wanted if wanted is not None else list(stored)
        properties = {name: stored.get(name) for name in names}
        return {
            "id": record_id,
            "properties": {**properties, "hs_object_id": record_id},
            "createdAt": "2017-01-10T05:36:25.538Z",
            "updatedAt": "2026-11-23T12:00:00.000Z",
            "archived": False,
        }

    def hubspot_read(self, call: Call, record_id: str) -> tuple[int, Any]:
        if record_id not in self.hubspot:
            return 404, _HUBSPOT_NOT_FOUND
        wanted = call.query["properties"].split(",") if "properties" in call.query else None
        return 200, self.hubspot_object(record_id, wanted)

    def hubspot_update(self, call: Call, record_id: str) -> tuple[int, Any]:
        if record_id not in self.hubspot:
            return 404, _HUBSPOT_NOT_FOUND
        self.hubspot[record_id].update(call.body["properties"])
        return 200, self.hubspot_object(record_id)

    def hubspot_batch(self, call: Call, action: str) -> tuple[int, Any]:
        inputs = call.body["inputs"]
        missing = [item["id"] for item in inputs if item["id"] not in self.hubspot]
        results = []
        for item in inputs:
            if item["id"] in missing:
                continue
            if action == "update":
                self.hubspot[item["id"]].update(item["properties"])
            results.append(self.hubspot_object(item["id"], call.body.get("properties")))
        body = {
            "status": "COMPLETE",
            "results": results,
            "startedAt": "2026-11-23T12:00:00.000Z",
            "completedAt": "2026-11-23T12:00:00.100Z",
        }
        if not missing:
            return 200, body
        error = {"status": "error", "category": "OBJECT_NOT_FOUND", "context": {"ids": missing}}
        error["message"] = "Could not get some CONTACT objects, they may be deleted or not exist."
        return 207, {**body, "numErrors": 1, "errors": [error]}

    def hubspot_callback(self, call: Call, callback_id: str) -> tuple[int, Any]:
        return 204, None

    # Salesforce REST ------------------------------------------------------------------------

    def salesforce_read(self, call: Call, record_id: str) -> tuple[int, Any]:
        if record_id not in self.salesforce:
            return 404, _SALESFORCE_NOT_FOUND
        stored = self.salesforce[record_id]
        wanted = call.query["fields"].split(",") if "fields" in call.query else list(stored)
        attributes = {"type": "Contact", "url": f"{SF}/sobjects/Contact/{record_id}"}
        return 200, {
            "attributes": attributes,
            "Id": record_id,
            **{f: stored.get(f) for f in wanted},
        }

    def salesforce_records(self, call: Call) -> tuple[int, Any]:
        """sObject Collections GET: the records in the order asked, null for unknown ids."""
        wanted = call.query["fields"].split(",")
        found = []
        for record_id in call.query["ids"].split(","):
            stored = self.salesforce.get(record_id)
            attributes = {"type": "Contact", "url": f"{SF}/sobjects/Contact/{record_id}"}
            record = {"attributes": attributes, **{f: (stored or {}).get(f) for f in wanted}}
            found.append(None if stored is None else {**record, "Id": record_id})
        return 200, found

    def salesforce_update(self, call: Call, record_id: str) -> tuple[int, Any]:
        if record_id not in self.salesforce:
            return 404, _SALESFORCE_NOT_FOUND
        self.salesforce[record_id].update(call.body)
        return 204, None

    def salesforce_collection(self, call: Call) -> tuple[int, Any]:
        results = []
        for record in call.body["records"]:
            fields = {k: v for k, v in record.items() if k not in ("attributes", "id")}
            if record["id"] in self.salesforce:
                self.salesforce[record["id"]].update(fields)
                results.append({"id": record["id"], "success": True, "errors": []})
            else:
                errors = [_SALESFORCE_BAD_ID]
                results.append({"id": record["id"], "success": False, "errors": errors})
        return 200, results


_HUBSPOT_NOT_FOUND = {
    "status": "error",
    "message": "Object not found.",
    "category": "OBJECT_NOT_FOUND",
}
_SALESFORCE_NOT_FOUND = [
    {"errorCode": "NOT_FOUND", "message": "The requested resource does not exist"}
]
_SALESFORCE_BAD_ID = {
    "statusCode": "INVALID_CROSS_REFERENCE_KEY",
    "message": "invalid cross reference id",
    "fields": [],
}
_ROUTES = [
    (r"/crm/v3/objects/contacts/batch/(read|update)", "POST", FakeCrm.hubspot_batch),
    (r"/crm/v3/objects/contacts/([^/]+)", "GET", FakeCrm.hubspot_read),
    (r"/crm/v3/objects/contacts/([^/]+)", "PATCH", FakeCrm.hubspot_update),
    (r"/automation/v4/actions/callbacks/([^/]+)/complete", "POST", FakeCrm.hubspot_callback),
    (r"/services/data/v\d+\.\d+/sobjects/Contact/([^/]+)", "GET", FakeCrm.salesforce_read),
    (r"/services/data/v\d+\.\d+/sobjects/Contact/([^/]+)", "PATCH", FakeCrm.salesforce_update),
    (r"/services/data/v\d+\.\d+/composite/sobjects", "PATCH", FakeCrm.salesforce_collection),
    (r"/services/data/v\d+\.\d+/composite/sobjects/Contact", "GET", FakeCrm.salesforce_records),
]


class _CrmHandler(BaseHTTPRequestHandler):
    server: FakeCrm

    def do_GET(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        url = urlsplit(self.path)
        call = Call(
            method=self.command,
            path=url.path,
            query=dict(parse_qsl(url.query)),
            headers={name.lower(): value for name, value in self.headers.items()},
            body=json.loads(raw) if raw else None,
        )
        status, answer = self.server.answer(call)
        content = b"" if answer is None else json.dumps(answer).encode()
        self.send_response(status)
        if content:
            self.send_header("Content-Type", "application/json;charset=UTF-8")
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@pytest.fixture(scope="module")
def crm_server() -> Iterator[FakeCrm]:
    server = FakeCrm()
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def crm(crm_server: FakeCrm) -> FakeCrm:
    crm_server.reset()
    return crm_server


# --- the product -----------------------------------------------------------------------------


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
    _, key = accounts.create_organization(
        db, SECRET.encode(), NOW, name="Acme", website="acme.example", tier="pro", credits=10
    )

    def add(name: str, platform: str, **extra: Any) -> connections.Added:
        return connections.add(
            db, SECRET.encode(), NOW, name=name, platform=platform, api_key=key, **extra
        )

    crm = crm_server.url
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
    app: Flask,  # noqa: F811
    db_path: Path,
    dataset: Dataset,
    clock: Clock,  # noqa: F811
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
    crm.hubspot["3234574"] = dict(WORKFLOW_CONTACT)
    response = _hubspot(client, replay.links["hubspot"], "events", WORKFLOW, "v2")
    assert (response.status_code, response.get_json()) == (200, {"accepted": 1})

    assert replay.work.run_due() == {"dead": 1}
    (read,) = crm.calls
    assert (read.method, read.path, read.query) == (
        "GET",
        "/crm/v3/objects/contacts/3234574",
        {"properties": HUBSPOT_READ},
    )
    assert read.headers["authorization"] == f"Bearer {HUBSPOT_TOKEN}"
    event = replay.event("hubspot")
    assert (event["status"], event["last_error"]) == (
        "dead",
        f"missing_identifier: {MISSING_IDENTIFIER}",
    )
    assert crm.hubspot["3234574"] == WORKFLOW_CONTACT and replay.credits() == 10


def test_the_hubspot_workflow_sample_with_an_email_is_written_back(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """The same contact once it has an e-mail: names and the location the user typed are
    kept (the zip differs from ours and stays), the gaps and our own properties are filled."""
    email = "hubspot.test@hubspot.com"
    crm.hubspot["3234574"] = {**WORKFLOW_CONTACT, "email": email}
    body = _with(WORKFLOW, properties__email={"value": email})
    for _ in range(2):  # HubSpot retries a delivery: the copy is acknowledged, not stored
        response = _hubspot(client, replay.links["hubspot"], "events", body, "v2")
        assert (response.status_code, response.get_json()) == (200, {"accepted": 1})

    assert replay.work.run_due() == {"done": 1}
    read, write = crm.calls
    assert (read.method, read.path) == ("GET", "/crm/v3/objects/contacts/3234574")
    assert (write.method, write.path, write.query) == (
        "PATCH",
        "/crm/v3/objects/contacts/3234574",
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
    assert crm.hubspot["3234574"]["zip"] == "02139" and replay.credits() == 9
    assert (replay.event("hubspot")["status"], replay.event("hubspot")["last_error"]) == (
        "done",
        "",
    )


def test_the_hubspot_webhooks_api_batch_reads_the_contact_then_writes_it_back(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """The batch names contact 123 only: the worker reads it (an e-mail, a first name and a
    job title the user typed), enriches by the e-mail and fills the rest."""
    assert hubspot_v1(HUBSPOT_SECRET, BATCH) == (
        "232db2615f3d666fe21a8ec971ac7b5402d33b9a925784df3ca654d05f4817de"  # HubSpot's docs
    )
    crm.hubspot["123"] = {
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
        "/crm/v3/objects/contacts/123",
        {"properties": HUBSPOT_READ},
    )
    assert (write.method, write.path) == ("PATCH", "/crm/v3/objects/contacts/123")
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
    assert crm.hubspot["123"]["jobtitle"] == "Head of Ops" and replay.credits() == 9


ARDYS_OUTPUT = {  # the custom action sample's contact, as the hubspot mapping outputs her
    "firstname": "Ardys",
    "lastname": "Jenken",
    "jobtitle": "Licensing and Compliance Manager",
    "company": "Free Software Foundation, Inc.",
    "website": "https://www.fsf.org",
    "industry": "",
    "phone": "",
    "address": "",
    "city": "Boston",
    "state": "MA",
    "zip": "02110",
    "country": "United States",
    "linkedin_url": "",
    "contactdata_employee_count": "",
    "contactdata_employee_range": "",
    "contactdata_revenue_range": "",
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


CALLBACK = "/automation/v4/actions/callbacks/ap-102670506-56776413549-7-0/complete"


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
    """One callback completion, in the shape of HubSpot's sample, with `output`."""
    (call,) = crm.calls
    documented = json.loads(
        (PLATFORMS / "hubspot_custom_action_callback_complete_request.json").read_text()
    )
    assert (call.method, call.path) == ("POST", CALLBACK)
    assert call.headers["authorization"] == f"Bearer {HUBSPOT_TOKEN}"
    assert call.body.keys() == documented.keys() and call.body["outputFields"] == output


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
    clock: Clock,  # noqa: F811
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
    crm.salesforce[SALESFORCE_CONTACT] = dict(SOME_DUDE_CONTACT)
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
    assert crm.salesforce[SALESFORCE_CONTACT]["FirstName"] == "some" and replay.credits() == 9


def test_a_salesforce_contact_nothing_identifies_is_a_dead_letter(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """A name alone identifies nobody: neither the message nor the Contact has more."""
    crm.salesforce[SALESFORCE_CONTACT] = {"FirstName": "some", "LastName": "dude"}
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
    "company_employees": "",
    "company_employee_range": "",
    "company_revenue_range": "",
    "company_city": "San Francisco",
    "company_state": "CA",
    "company_country": "United States",
    "company_linkedin_url": "",
}


def _assert_missing_identifier(response: TestResponse) -> None:
    assert response.status_code == 400
    assert response.get_json() == {
        "error": {"code": "missing_identifier", "message": MISSING_IDENTIFIER, "status": 400}
    }


def test_the_zapier_sample_alone_is_refused_for_want_of_an_identifier(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    """first_name and last_name are read (age is not); a name alone identifies nobody."""
    _assert_missing_identifier(_zapier(client, replay.links["zapier"], "enrich", ZAP))
    assert crm.calls == [] and replay.credits() == 10


def test_the_zapier_sample_with_a_company_gets_the_enriched_fields(
    client: FlaskClient, replay: Replay, crm: FakeCrm
) -> None:
    response = _zapier(client, replay.links["zapier"], "enrich", _with(ZAP, company="Zapier"))
    assert response.status_code == 200, response.get_json()
    assert response.get_json() == BRYAN_HELMIG_FIELDS
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
    clock: Clock,  # noqa: F811
    crm: FakeCrm,
) -> None:
    """data.fullName is read; the address, phone number, birthday and occupation ("Engineer,
    ACME") are not, so nothing identifies John Smith's company."""
    clock.now, link = SPEC_SENT_AT, replay.links["zapier"]
    _assert_missing_identifier(_standard_webhooks(client, link, "enrich", STANDARD_PAYLOAD))
    assert crm.calls == [] and replay.credits() == 10


def test_the_standard_webhooks_sample_with_a_company_gets_the_enriched_fields(
    client: FlaskClient,
    replay: Replay,
    clock: Clock,  # noqa: F811
    crm: FakeCrm,
) -> None:
    clock.now = SPEC_SENT_AT
    body = _with(STANDARD_PAYLOAD, data__company="ACME Aerospace")
    response = _standard_webhooks(client, replay.links["zapier"], "enrich", body)
    assert response.status_code == 200, response.get_json()
    assert response.get_json() == {
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
        "company_employees": "",
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
    clock: Clock,  # noqa: F811
    crm: FakeCrm,
) -> None:
    clock.now, link = SPEC_SENT_AT, replay.links["zapier"]
    response = _standard_webhooks(client, link, "events", STANDARD_PAYLOAD)
    assert (response.status_code, response.get_json()["error"]["code"]) == (404, "not_found")
    assert store.events_of(replay.db, link.row["id"]) == [] and crm.calls == []


# --- concurrency -----------------------------------------------------------------------------


def test_twenty_concurrent_copies_of_one_event_make_one_job_and_one_write_back(
    app: Flask,  # noqa: F811
    replay: Replay,
    crm: FakeCrm,
) -> None:
    """HubSpot retrying a delivery twenty times at once: one event stored, one PATCH."""
    email = "hubspot.test@hubspot.com"
    crm.hubspot["3234574"] = {**WORKFLOW_CONTACT, "email": email}
    body = _with(WORKFLOW, properties__email={"value": email})

    def send(_: int) -> int:
        link = replay.links["hubspot"]
        return _hubspot(app.test_client(), link, "events", body, "v2").status_code

    with ThreadPoolExecutor(max_workers=20) as pool:
        assert list(pool.map(send, range(20))) == [200] * 20
    assert replay.work.run_due() == {"done": 1} and replay.work.run_due() == {}
    writes = [call for call in crm.calls if call.method != "GET"]
    assert [(call.method, call.path) for call in writes] == [
        ("PATCH", "/crm/v3/objects/contacts/3234574")
    ]
    assert replay.credits() == 9


# --- the fake CRM itself ---------------------------------------------------------------------


def test_the_fake_crm_takes_batches_and_custom_action_callbacks(crm: FakeCrm) -> None:
    """What later tests (batched write-backs, BLOCKed custom actions) will send it."""
    crm.hubspot["512"] = {"email": "a@example.com"}
    crm.salesforce["003xx000004TmiQAAS"] = {"LastName": "Engineer"}
    callback = "ap-102670506-56776413549-7-0"
    completed = {"outputFields": {"hs_execution_state": "SUCCESS"}}
    with httpx.Client(base_url=crm.url) as http:
        updated = http.post(
            "/crm/v3/objects/contacts/batch/update",
            json={"inputs": [{"id": "512", "properties": {"jobtitle": "CTO"}}, {"id": "9"}]},
        )
        read = http.post(
            "/crm/v3/objects/contacts/batch/read",
            json={"properties": ["jobtitle"], "inputs": [{"id": "512"}]},
        )
        collection = http.patch(
            f"{SF}/composite/sobjects",
            json={
                "allOrNone": False,
                "records": [
                    {"attributes": {"type": "Contact"}, "id": "003xx000004TmiQAAS", "Title": "Lead"}
                ],
            },
        )
        done = http.post(f"/automation/v4/actions/callbacks/{callback}/complete", json=completed)
    assert updated.status_code == 207 and updated.json()["errors"][0]["context"] == {"ids": ["9"]}
    assert read.json()["results"][0]["properties"] == {"jobtitle": "CTO", "hs_object_id": "512"}
    assert collection.json() == [{"id": "003xx000004TmiQAAS", "success": True, "errors": []}]
    assert crm.salesforce["003xx000004TmiQAAS"]["Title"] == "Lead"
    assert (done.status_code, done.content) == (204, b"")
    assert (crm.calls[-1].path, crm.calls[-1].body) == (
        f"/automation/v4/actions/callbacks/{callback}/complete",
        completed,
    )


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
