"""The fake CRM on loopback, for where a real client (the worker, `contactdata worker` in its own
process) calls a CRM over a socket: HubSpot's, Salesforce's, Pipedrive's, Zoho's and Dataverse's
contact endpoints on one server, contacts by platform and id, every call recorded and every
write applied; HubSpot's properties, the other four's contact field lists, Pipedrive's webhooks
and Zoho's notification channel (answered by their MockTransport fakes, in their shapes), and
HubSpot's token endpoint when a test gives it a fake authorization server. Subclasses change
how a call is met (`serve`): test_faults.py's misbehaves."""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import httpx

from connector import mappings
from connector.platforms.hubspot import API_VERSION, CALLBACKS, CONTACTS, PROPERTIES
from tests.helpers import hubspot_shapes
from tests.helpers.constants import OUTBOUND
from tests.helpers.crm import SEARCH_REACH, FakeSalesforce, invalid_option
from tests.helpers.crm import hubspot_search as search
from tests.helpers.crm_fields import (
    dataverse_attribute,
    pipedrive_field,
    salesforce_field,
    zoho_field,
)
from tests.helpers.dataverse import FakeDataverseTables
from tests.helpers.oauth_server import FakeAuthServer
from tests.helpers.pipedrive import HeldPipedrive, PipedriveWebhooks
from tests.helpers.vendors import Exchange, checked
from tests.helpers.zoho_crm import FakeZohoRecords
from tests.servers import serving

Row = dict[str, Any]
SF = "/services/data/v62.0"
DATAVERSE = "/api/data/v9.2"
PLATFORMS = ("hubspot", "salesforce", "pipedrive", "zoho", "dynamics")
# The property a record in `FakeCrm.refusing` never takes, whatever the value (a picklist or a
# dropdown without our option), in HubSpot and Salesforce.
REFUSED = {"hubspot": "contactdata_record_status", "salesforce": "ContactData_Record_Status__c"}


@dataclass(frozen=True)
class Call:
    """One request the fake CRM received."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names in lower case
    body: Any  # the JSON body, None when there was none
    at: float = field(default_factory=time.monotonic)
    raw: bytes = b""  # the body as sent


@dataclass
class Reply:
    """The CRM's answer to a call, and the writes it stands for (record id -> values), applied
    when the answer is given (or, by a misbehaving subclass, as its fault says)."""

    status: int
    body: Any = None
    platform: str = ""
    writes: dict[str, Row] = field(default_factory=dict)


class FakeCrm(ThreadingHTTPServer):
    """Contacts in `contacts[platform]` by id; every call in `calls`, each applied write counted
    per record in `writes`; `latency` seconds pass between applying a write and answering."""

    daemon_threads = True

    def __init__(self, latency: float = 0.0) -> None:
        super().__init__(("127.0.0.1", 0), CrmHandler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.latency = latency
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Forget every contact, call and write."""
        with self.lock:
            self.contacts: dict[str, dict[str, Row]] = {name: {} for name in PLATFORMS}
            self.refusing: set[str] = set()  # records whose REFUSED property is never taken
            self.calls: list[Call] = []
            self.writes: Counter[str] = Counter()
            # HubSpot's properties by kind: every one its mapping files write, as text
            self.properties = {kind: hubspot_properties(kind) for kind in ("contacts", "companies")}
            self.properties_refused = False
            # The MockTransport fakes answering what this one passes on (PASSED_ON): the other
            # four's contact fields (every one their mapping files write), Pipedrive's webhooks
            self.mocked = contact_field_lists()
            self.mocked["pipedrive-webhooks"] = PipedriveWebhooks()
            self.hubspot_oauth: FakeAuthServer | None = None  # answers HubSpot's token endpoint

    def serve(self, handler: CrmHandler, call: Call) -> None:
        """Answer `call` through `handler`."""
        reply = self.answer(call)
        time.sleep(self.latency)  # a client killed now: the write is applied, not recorded
        handler.send(reply.status, _content(reply))

    def answer(self, call: Call) -> Reply:
        """Record `call`, route it and apply the writes of its answer."""
        with self.lock:
            self.calls.append(call)
            reply = self.route(call)
            self.apply(reply)
        self.check(call, reply)
        return reply

    def check(self, call: Call, reply: Reply) -> None:
        """Hold the call and its answer to the vendor's description (tests/helpers/vendors.py)."""
        kind = call.headers.get("content-type", "")
        checked(Exchange(call.method, call.path, kind, call.raw, reply.status, _content(reply)))

    def route(self, call: Call) -> Reply:
        for pattern, method, route in ROUTES:
            found = re.fullmatch(pattern, call.path)
            if found and call.method == method:
                return route(self, call, *map(unquote, found.groups()))
        return Reply(404, [{"errorCode": "NOT_FOUND", "message": f"no route {call.path}"}])

    def apply(self, reply: Reply) -> None:
        for record_id, values in reply.writes.items():
            self.contacts[reply.platform][record_id].update(values)
            self.writes[record_id] += 1

    def refuses(self, platform: str, record_id: str, sent: Row | None) -> bool:
        return record_id in self.refusing and REFUSED[platform] in (sent or {})

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that died or gave up makes answering it fail: expected, quiet."""

    # HubSpot CRM (date-versioned paths) ---------------------------------------------------------

    def hubspot_object(self, record_id: str, values: Row, wanted: list[str] | None = None) -> Row:
        names = wanted if wanted is not None else list(values)
        properties = {name: values.get(name) for name in names}
        return {
            "id": record_id,
            "properties": {**properties, "hs_object_id": record_id},
            "createdAt": "2017-01-10T05:36:25.538Z",
            "updatedAt": "2026-11-23T12:00:00.000Z",
            "archived": False,
        }

    def hubspot_read(self, call: Call, record_id: str) -> Reply:
        if record_id not in self.contacts["hubspot"]:
            return Reply(404, HUBSPOT_NOT_FOUND)
        wanted = call.query["properties"].split(",") if "properties" in call.query else None
        return Reply(
            200, self.hubspot_object(record_id, self.contacts["hubspot"][record_id], wanted)
        )

    def hubspot_update(self, call: Call, record_id: str) -> Reply:
        stored = self.contacts["hubspot"].get(record_id)
        if stored is None:
            return Reply(404, HUBSPOT_NOT_FOUND)
        sent = call.body["properties"]
        if self.refuses("hubspot", record_id, sent):
            return Reply(400, hubspot_invalid_option(sent[REFUSED["hubspot"]]))
        answer = self.hubspot_object(record_id, {**stored, **sent})
        return Reply(200, answer, "hubspot", {record_id: sent})

    def hubspot_batch(self, call: Call, action: str) -> Reply:
        """batch/read and batch/update: 207 naming the contacts not found. HubSpot validates a
        batch update as a whole: one contact's refused value refuses them all, writing none."""
        inputs, contacts = call.body["inputs"], self.contacts["hubspot"]
        refused = [i for i in inputs if self.refuses("hubspot", i["id"], i.get("properties"))]
        if refused:
            value = refused[0]["properties"][REFUSED["hubspot"]]
            return Reply(400, hubspot_invalid_option(value))
        found = [item for item in inputs if item["id"] in contacts]
        missing = [item["id"] for item in inputs if item["id"] not in contacts]
        writes = {i["id"]: i["properties"] for i in found} if action == "update" else {}
        wanted = call.body.get("properties")
        results = [
            self.hubspot_object(i["id"], {**contacts[i["id"]], **writes.get(i["id"], {})}, wanted)
            for i in found
        ]
        body = {"status": "COMPLETE", "results": results, **BATCH_TIMES}
        if not missing:
            return Reply(200, body, "hubspot", writes)
        error = {**HUBSPOT_NOT_FOUND_IN_BATCH, "context": {"ids": missing}}
        return Reply(207, {**body, "numErrors": 1, "errors": [error]}, "hubspot", writes)

    def hubspot_properties(self, call: Call, kind: str) -> Reply:
        if self.properties_refused:  # the token lacks the schema scope, or was revoked
            return Reply(401, HUBSPOT_UNAUTHENTICATED)
        return Reply(200, {"results": self.properties[kind]})

    def hubspot_create_property(self, call: Call, kind: str) -> Reply:
        """A property created as HubSpot answers it (the body it was given, and defaults)."""
        created = hubspot_property(call.body["name"], call.body["type"], custom=True)
        created.update({k: call.body[k] for k in ("label", "fieldType", "groupName")})
        self.properties[kind].append(created)
        return Reply(201, created)

    def hubspot_callback(self, call: Call, callback_id: str) -> Reply:
        return Reply(204)

    def hubspot_token(self, call: Call) -> Reply:
        """HubSpot's token endpoint, on its API host as HubSpot has it, answered by the
        test's fake authorization server for HubSpot."""
        if self.hubspot_oauth is None:
            return Reply(404, HUBSPOT_NOT_FOUND)
        return Reply(*self.hubspot_oauth.token(call.body or {}, call.headers))

    # Passed on to MockTransport fakes ----------------------------------------------------------

    def passed_on(self, name: str, call: Call) -> Reply:
        """A call answered by the MockTransport fake `mocked[name]`, in its shapes."""
        content = b"" if call.body is None else json.dumps(call.body).encode()
        request = httpx.Request(
            call.method, f"{self.url}{call.path}", params=call.query, content=content
        )
        answer = self.mocked[name](request)
        return Reply(answer.status_code, answer.json() if answer.content else None)

    # Salesforce REST ----------------------------------------------------------------------------

    def salesforce_object(self, record_id: str, wanted: list[str]) -> Row:
        stored = self.contacts["salesforce"][record_id]
        attributes = {"type": "Contact", "url": f"{SF}/sobjects/Contact/{record_id}"}
        asked = {f: stored.get(f) for f in wanted if f != "Id"}  # the Id is the record's own
        return {"attributes": attributes, "Id": record_id, **asked}

    def salesforce_read(self, call: Call, record_id: str) -> Reply:
        stored = self.contacts["salesforce"].get(record_id)
        if stored is None:
            return Reply(404, SALESFORCE_NOT_FOUND)
        wanted = call.query["fields"].split(",") if "fields" in call.query else list(stored)
        return Reply(200, self.salesforce_object(record_id, wanted))

    def salesforce_records(self, call: Call) -> Reply:
        """sObject Collections GET: the records in the order asked, null for unknown ids."""
        contacts, wanted = self.contacts["salesforce"], call.query["fields"].split(",")
        asked = call.query["ids"].split(",")
        found = [self.salesforce_object(k, wanted) if k in contacts else None for k in asked]
        return Reply(200, found)

    def salesforce_update(self, call: Call, record_id: str) -> Reply:
        if record_id not in self.contacts["salesforce"]:
            return Reply(404, SALESFORCE_NOT_FOUND)
        if self.refuses("salesforce", record_id, call.body):
            value = call.body[REFUSED["salesforce"]]
            return Reply(400, [salesforce_bad_value(value, "errorCode")])
        return Reply(204, None, "salesforce", {record_id: call.body})

    def salesforce_collection(self, call: Call) -> Reply:
        """sObject Collections PATCH (allOrNone false): a SaveResult a record, in order."""
        results, writes = [], {}
        for record in call.body["records"]:
            key = record["id"]
            sent = {k: v for k, v in record.items() if k not in ("attributes", "id")}
            if key not in self.contacts["salesforce"]:
                results.append({"id": key, "success": False, "errors": [SALESFORCE_BAD_ID]})
            elif self.refuses("salesforce", key, sent):
                error = salesforce_bad_value(sent[REFUSED["salesforce"]], "statusCode")
                results.append({"id": key, "success": False, "errors": [error]})
            else:
                writes[key] = sent
                results.append({"id": key, "success": True, "errors": []})
        return Reply(200, results, "salesforce", writes)

    # Pipedrive API v2 ---------------------------------------------------------------------------

    def pipedrive_read(self, call: Call, record_id: str) -> Reply:
        if record_id not in self.contacts["pipedrive"]:
            return Reply(404, PIPEDRIVE_NOT_FOUND)
        return Reply(200, {"success": True, "data": self.contacts["pipedrive"][record_id]})

    def pipedrive_list(self, call: Call) -> Reply:
        """GET /persons?ids=: the persons asked for that exist, in the order asked."""
        persons, asked = self.contacts["pipedrive"], call.query["ids"].split(",")
        found = [persons[key] for key in asked if key in persons]
        return Reply(
            200, {"success": True, "data": found, "additional_data": {"next_cursor": None}}
        )

    def pipedrive_update(self, call: Call, record_id: str) -> Reply:
        """PATCH: lists (emails, phones) replaced whole, custom fields merged by key."""
        person = self.contacts["pipedrive"].get(record_id)
        if person is None:
            return Reply(404, PIPEDRIVE_NOT_FOUND)
        custom = {**person.get("custom_fields", {}), **call.body.get("custom_fields", {})}
        written = {**call.body, "custom_fields": custom}
        answer = {"success": True, "data": {**person, **written}}
        return Reply(200, answer, "pipedrive", {record_id: written})

    # Zoho CRM v7 --------------------------------------------------------------------------------

    def zoho_record(self, record_id: str, call: Call) -> Row:
        stored = self.contacts["zoho"][record_id]
        wanted = call.query["fields"].split(",") if "fields" in call.query else list(stored)
        return {**{name: stored.get(name) for name in wanted}, "id": record_id}

    def zoho_read(self, call: Call, record_id: str) -> Reply:
        if record_id not in self.contacts["zoho"]:
            return Reply(204)  # Zoho's answer for a record that is not there
        return Reply(200, {"data": [self.zoho_record(record_id, call)]})

    def zoho_list(self, call: Call) -> Reply:
        asked = call.query["ids"].split(",")
        records = [self.zoho_record(key, call) for key in asked if key in self.contacts["zoho"]]
        info = {"per_page": 200, "count": len(records), "page": 1, "more_records": False}
        return Reply(200, {"data": records, "info": info})

    def zoho_update(self, call: Call, record_id: str) -> Reply:
        (record,) = call.body["data"]
        reply = self.zoho_updates([(record_id, record)])
        reply.status = 400 if reply.body["data"][0]["status"] == "error" else 200
        return reply

    def zoho_update_many(self, call: Call) -> Reply:
        """PUT /Contacts: one answer a record, in the order sent; 207 when some failed."""
        reply = self.zoho_updates([(record["id"], record) for record in call.body["data"]])
        reply.status = 207 if any(a["status"] == "error" for a in reply.body["data"]) else 200
        return reply

    def zoho_updates(self, records: list[tuple[str, Row]]) -> Reply:
        answers, writes = [], {}
        for record_id, record in records:
            if record_id not in self.contacts["zoho"]:
                answers.append(ZOHO_INVALID_ID)
                continue
            writes[record_id] = {k: v for k, v in record.items() if k != "id"}
            answer = json.loads(json.dumps(ZOHO_UPDATED))
            answer["details"]["id"] = record_id
            answers.append(answer)
        return Reply(200, {"data": answers}, "zoho", writes)

    # Dataverse Web API --------------------------------------------------------------------------

    def dynamics_row(self, guid: str, columns: list[str]) -> Row:
        stored = self.contacts["dynamics"][guid]
        return {
            "@odata.etag": 'W/"4334726"',
            **{c: stored.get(c) for c in columns},
            "contactid": guid,
        }

    def dynamics_read(self, call: Call, guid: str) -> Reply:
        if guid not in self.contacts["dynamics"]:
            return Reply(404, dynamics_not_found(guid))
        columns = call.query["$select"].split(",")
        context = f"{self.url}{DATAVERSE}/$metadata#contacts({','.join(columns)})/$entity"
        return Reply(200, {"@odata.context": context, **self.dynamics_row(guid, columns)})

    def dynamics_query(self, call: Call) -> Reply:
        """$filter with Microsoft.Dynamics.CRM.In over contactid: the rows that exist."""
        listed = re.search(r"PropertyValues=\[([^\]]*)\]", call.query["$filter"])
        asked = [guid.strip("'") for guid in listed[1].split(",")] if listed else []
        columns = call.query["$select"].split(",")
        rows = [self.dynamics_row(g, columns) for g in asked if g in self.contacts["dynamics"]]
        context = f"{self.url}{DATAVERSE}/$metadata#contacts"
        return Reply(200, {"@odata.context": context, "value": rows})

    def dynamics_update(self, call: Call, guid: str) -> Reply:
        """PATCH with If-Match: * only: without it Dataverse would create a missing contact
        (an upsert), which the adapter must never ask for, so the fake refuses it."""
        if call.headers.get("if-match") != "*":
            return Reply(
                400, {"error": {"code": "0x0", "message": "the fake requires If-Match: *"}}
            )
        if guid not in self.contacts["dynamics"]:
            return Reply(404, dynamics_not_found(guid))
        return Reply(204, None, "dynamics", {guid: call.body})


def hubspot_property(
    name: str, type: str = "string", options: tuple[str, ...] = (), *, read_only: bool = False,
    custom: bool | None = None,
) -> Row:  # fmt: skip
    """A property as HubSpot's properties API describes it (its documented fields)."""
    widget = {"string": "text", "number": "number", "enumeration": "select"}.get(type, "text")
    return {
        "name": name,
        "label": name.replace("_", " ").title(),
        "description": "",
        "type": type,
        "fieldType": widget,
        "groupName": "contactinformation",
        "options": [
            {"label": value, "value": value, "hidden": False, "displayOrder": order}
            for order, value in enumerate(options)
        ],
        "modificationMetadata": {
            "archivable": True,
            "readOnlyDefinition": not custom,
            "readOnlyValue": read_only,
        },
        "hubspotDefined": not (name.startswith("contactdata_") if custom is None else custom),
    }


def hubspot_properties(kind: str) -> list[Row]:
    """The properties HubSpot's mapping of `kind` writes, as text (numbers where the mapping
    makes one), and hs_object_id (read-only)."""
    file = "hubspot.yaml" if kind == "contacts" else f"hubspot.{kind}.yaml"
    rules = mappings.load(mappings.DIRECTORY / file).output
    found = {
        rule.property: "number" if "integer" in rule.transforms else "string" for rule in rules
    }
    shown = [hubspot_property(name, type) for name, type in found.items()]
    return [*shown, hubspot_property("hs_object_id", "number", read_only=True)]


def mapped_properties(platform: str) -> dict[str, bool]:
    """Each property the platform's contacts mapping (or the mapping file named, e.g.
    zoho.leads) writes, and whether it is a number."""
    rules = mappings.load(mappings.DIRECTORY / f"{platform}.yaml").output
    return {rule.property: "integer" in rule.transforms for rule in rules}


def _label(name: str) -> str:
    return name.replace("_", " ").title()


# Pipedrive lists a person's e-mails and phones under these codes (the adapter's email, phone)
PIPEDRIVE_CODES = {"email": "emails", "phone": "phones"}


def contact_field_lists() -> dict[str, Callable[[httpx.Request], httpx.Response]]:
    """Salesforce's, Pipedrive's, Zoho's and Dataverse's MockTransport fakes, each holding the
    contact fields its mapping file writes (text, or a number where the mapping makes one):
    the loopback fake's answers to their field-list calls."""
    salesforce = FakeSalesforce({"Contact": set()})
    salesforce.described["Contact"] = [
        salesforce_field(name, "double" if number else "string", _label(name))
        for name, number in mapped_properties("salesforce").items()
    ]
    pipedrive = HeldPipedrive()
    pipedrive.fields["personFields"] = [
        pipedrive_field(PIPEDRIVE_CODES.get(name, name), _label(name),
                        "double" if number else "varchar")
        for name, number in mapped_properties("pipedrive").items()
    ]  # fmt: skip
    zoho = FakeZohoRecords({})
    zoho.fields = {
        module: [zoho_field(name, _label(name), "integer" if number else "text")
                 for name, number in mapped_properties(file).items()]
        for module, file in (("Contacts", "zoho"), ("Leads", "zoho.leads"),
                             ("Accounts", "zoho.companies"))
    }  # fmt: skip
    dynamics = FakeDataverseTables({})
    dynamics.attributes["contact"] = [
        dataverse_attribute(name, "Integer" if number else "String", _label(name))
        for name, number in mapped_properties("dynamics").items()
    ]
    return {"salesforce": salesforce, "pipedrive": pipedrive, "zoho": zoho, "dynamics": dynamics}


def hubspot_invalid_option(value: str) -> Row:
    """HubSpot's refusal of a dropdown value it has no option for (its one option "Checked")."""
    return invalid_option(REFUSED["hubspot"], value, {"Checked"})


def salesforce_bad_value(value: str, code_key: str) -> Row:
    """Salesforce's refusal of a value a restricted picklist does not hold."""
    return {
        code_key: "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST",
        "message": f"ContactData Record Status: bad value for restricted picklist field: {value}",
        "fields": [REFUSED["salesforce"]],
    }


def dynamics_not_found(guid: str) -> Row:
    """The Web API's 404 message; its code is left empty, as tests/test_adapters_dynamics has
    it (the code Dataverse gives was not verified)."""
    return {"error": {"code": "", "message": f"contact With Id = {guid} Does Not Exist"}}


HUBSPOT_UNAUTHENTICATED = hubspot_shapes.error(
    "INVALID_AUTHENTICATION", "Authentication credentials not found."
)
HUBSPOT_NOT_FOUND = hubspot_shapes.not_found()
HUBSPOT_NOT_FOUND_IN_BATCH = hubspot_shapes.batch_error(
    "OBJECT_NOT_FOUND", "Could not get some CONTACT objects, they may be deleted or not exist."
)
BATCH_TIMES = {"startedAt": "2026-11-23T12:00:00.000Z", "completedAt": "2026-11-23T12:00:00.100Z"}
SALESFORCE_NOT_FOUND = [
    {"errorCode": "NOT_FOUND", "message": "The requested resource does not exist"}
]
SALESFORCE_BAD_ID = {
    "statusCode": "INVALID_CROSS_REFERENCE_KEY",
    "message": "invalid cross reference id",
    "fields": [],
}
PIPEDRIVE_NOT_FOUND = {  # Pipedrive's error envelope, as tests/test_adapters_pipedrive has it
    "success": False,
    "error": "Person not found",
    "error_info": "Please check developers.pipedrive.com for more information about Pipedrive API.",
    "data": None,
    "additional_data": None,
}
ZOHO_UPDATED = json.loads((OUTBOUND / "zoho_update_records_response.json").read_text())["data"][0]
ZOHO_INVALID_ID = {
    "code": "INVALID_DATA",
    "details": {"api_name": "id", "json_path": "$.data[0].id"},
    "message": "the id given seems to be invalid",
    "status": "error",
}

Route = Callable[..., Reply]
ROUTES: list[tuple[str, str, Route]] = [
    (rf"{CONTACTS}/batch/(read|update)", "POST", FakeCrm.hubspot_batch),
    (rf"{CONTACTS}/([^/]+)", "GET", FakeCrm.hubspot_read),
    (rf"{CONTACTS}/([^/]+)", "PATCH", FakeCrm.hubspot_update),
    (rf"{CALLBACKS}/([^/]+)/complete", "POST", FakeCrm.hubspot_callback),
    (rf"{PROPERTIES}/(contacts|companies)", "GET", FakeCrm.hubspot_properties),
    (rf"{PROPERTIES}/(contacts|companies)", "POST", FakeCrm.hubspot_create_property),
    (rf"/oauth/{API_VERSION}/token", "POST", FakeCrm.hubspot_token),
    (r"/services/data/v\d+\.\d+/sobjects/Contact/([^/]+)", "GET", FakeCrm.salesforce_read),
    (r"/services/data/v\d+\.\d+/sobjects/Contact/([^/]+)", "PATCH", FakeCrm.salesforce_update),
    (r"/services/data/v\d+\.\d+/composite/sobjects", "PATCH", FakeCrm.salesforce_collection),
    (r"/services/data/v\d+\.\d+/composite/sobjects/Contact", "GET", FakeCrm.salesforce_records),
    (r"/api/v2/persons/([^/]+)", "GET", FakeCrm.pipedrive_read),
    (r"/api/v2/persons/([^/]+)", "PATCH", FakeCrm.pipedrive_update),
    (r"/api/v2/persons", "GET", FakeCrm.pipedrive_list),
    (r"/crm/v7/Contacts/([^/]+)", "GET", FakeCrm.zoho_read),
    (r"/crm/v7/Contacts/([^/]+)", "PUT", FakeCrm.zoho_update),
    (r"/crm/v7/Contacts", "GET", FakeCrm.zoho_list),
    (r"/crm/v7/Contacts", "PUT", FakeCrm.zoho_update_many),
    (r"/api/data/v9\.2/contacts\(([^)]+)\)", "GET", FakeCrm.dynamics_read),
    (r"/api/data/v9\.2/contacts\(([^)]+)\)", "PATCH", FakeCrm.dynamics_update),
    (r"/api/data/v9\.2/contacts", "GET", FakeCrm.dynamics_query),
]

# Calls answered by a MockTransport fake (FakeCrm.mocked): pattern, methods, the fake's name.
PASSED_ON = [
    (r"/services/data/v\d+\.\d+/sobjects/\w+/describe", ("GET",), "salesforce"),
    (r"/api/v2/(?:person|organization|deal)Fields", ("GET", "POST"), "pipedrive"),
    (r"/api/v1/webhooks(?:/\d+)?", ("POST", "DELETE"), "pipedrive-webhooks"),
    (r"/crm/v7/settings/fields(?:/\d+)?", ("GET", "POST"), "zoho"),
    (r"/crm/v7/actions/watch", ("POST", "PUT", "PATCH", "DELETE"), "zoho"),
    (r"/api/data/v9\.2/EntityDefinitions\(.+", ("GET",), "dynamics"),
]


def _passing_on(name: str) -> Route:
    return lambda crm, call: crm.passed_on(name, call)


ROUTES[:0] = [  # first: /sobjects/Contact/describe is no record's id
    (pattern, method, _passing_on(name))
    for pattern, methods, name in PASSED_ON
    for method in methods
]


def _body(raw: bytes, kind: str) -> Any:
    """A call's body: a form as a dict (a token request), JSON decoded, None when empty."""
    if kind.startswith("application/x-www-form-urlencoded"):
        return dict(parse_qsl(raw.decode()))
    return json.loads(raw) if raw else None


def _content(reply: Reply) -> bytes:
    return b"" if reply.body is None else json.dumps(reply.body).encode()


class CrmHandler(BaseHTTPRequestHandler):
    """Reads a call and hands it to the server; sends what the server answers."""

    protocol_version = "HTTP/1.1"  # keep-alive, as the CRMs answer: a reset can hit a reused one
    # Headers and body go in two writes: with Nagle, the body waits for the client's delayed
    # ACK (40 ms a request on Linux), a cost of this fake, not of a CRM.
    disable_nagle_algorithm = True
    server: FakeCrm

    def do_GET(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if len(raw) < length:
            self.close_connection = True
            return  # the client died while sending: the CRM applies nothing
        url = urlsplit(self.path)
        call = Call(
            method=self.command,
            path=url.path,
            query=dict(parse_qsl(url.query)),
            headers={name.lower(): value for name, value in self.headers.items()},
            body=_body(raw, self.headers.get("Content-Type", "")),
            raw=raw,
        )
        self.server.serve(self, call)

    def head(self, status: int, length: int, kind: str = "", headers: Row | None = None) -> None:
        self.send_response(status)
        if length:
            self.send_header("Content-Type", kind or "application/json;charset=UTF-8")
        self.send_header("Content-Length", str(length))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()

    def send(self, status: int, content: bytes, kind: str = "", headers: Row | None = None) -> None:
        self.head(status, len(content), kind, headers)
        self.wfile.write(content)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@contextmanager
def running(server: FakeCrm) -> Iterator[FakeCrm]:
    """`server` answering on its own thread until the block ends."""
    with serving(server, 0.05):
        yield server


def hubspot_search(server: FakeCrm, call: Call) -> Reply:
    """HubSpot's CRM search API over the HubSpot contacts (tests/helpers/crm.py's), paging
    through at most `server.search_reach` results a query when the test sets it."""
    reach = getattr(server, "search_reach", SEARCH_REACH)
    status, body = search(server.contacts["hubspot"], call.body, reach)
    return Reply(status, body)


ROUTES.append((rf"{CONTACTS}/search", "POST", hubspot_search))
