"""The fake CRMs the connector's tests call through httpx.MockTransport: FakeCRM, answering
queued responses; the answer table of each CRM the adapter contract meets (CRMS); a HubSpot
holding contacts (FakeHubSpot) and Zoho's notification channels (FakeZohoWatch)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import unquote

import httpx

from connector.platforms.hubspot import HubSpot
from connector.platforms.salesforce import Salesforce
from tests.helpers import hubspot_shapes
from tests.helpers.constants import AVA, OUTBOUND
from tests.helpers.vendors import VendorTransport

HUBSPOT = "https://api.hubapi.com"
HS_CONTACTS = "/crm/objects/2026-03/contacts"  # HubSpot's date-versioned path (2026-03)
SALESFORCE = "https://example.my.salesforce.com"
SF_DATA = f"{SALESFORCE}/services/data/v62.0"
DYNAMICS = "https://contoso.crm.dynamics.com"
TOKEN = "secret-token"
Answer = httpx.Response | Callable[[httpx.Request], httpx.Response]


def sample(name: str) -> Any:
    return json.loads((OUTBOUND / name).read_text())


class FakeCRM:
    """Answers each request with the next queued answer (a response, or a function of the
    request that may raise), and keeps the requests it was sent."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        return answer(request) if callable(answer) else answer

    def client(self) -> httpx.Client:
        return httpx.Client(transport=VendorTransport(self))

    def bodies(self) -> list[Any]:
        return [json.loads(request.content) for request in self.requests]


def answer(status: int, body: Any = None, headers: dict[str, str] | None = None) -> httpx.Response:
    if body is None:
        return httpx.Response(status, headers=headers)
    return httpx.Response(status, json=body, headers=headers)


def hubspot(crm: FakeCRM) -> HubSpot:
    return HubSpot(HUBSPOT, TOKEN, crm.client())


def salesforce(crm: FakeCRM, **options: Any) -> Salesforce:
    return Salesforce(SALESFORCE, TOKEN, crm.client(), **options)


def assert_sent(request: httpx.Request, method: str, url: str) -> None:
    assert (request.method, str(request.url)) == (method, url)
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    if request.content:
        assert request.headers["content-type"] == "application/json"


def raising(
    error: type[httpx.TransportError], message: str = "simulated"
) -> Callable[[httpx.Request], httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        raise error(message, request=request)

    return handler


Reply = Callable[[httpx.Request], httpx.Response]
TITLE = "CTO"  # what each fake CRM holds in the property it has
GUIDS = re.compile(r"[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}")
REDIRECT = {"Location": "https://attacker.example/steal"}


@dataclass(frozen=True)
class Platform:
    """One CRM as the contract meets it: where it lives, two of its record ids, a property it
    has (holding TITLE) and one it lacks, and its answers in its own documented shapes."""

    base_url: str
    ids: tuple[str, str]
    auth: tuple[str, str]  # the header carrying the token, and its value
    known: str
    unknown: str
    answers: Reply  # its successes, for each of the four calls
    refuses_read: Reply | None  # a 400 for asking `unknown`; None: a 200 leaves it out
    refuses_write: Reply  # a 400 for sending `unknown`
    dropped: str  # that refusal's reason, as WriteResult.dropped names it
    expired: Any  # a 401's body: the token expired or was revoked
    rate_limited: Any  # a 429's body
    wait: float | None  # a 429 without Retry-After waits this (the adapter's documented rule)
    server_error: Any  # a 5xx's body
    batch_writes: bool  # write_many is one call (else one update a record)
    expired_headers: dict[str, str] = field(default_factory=dict)
    # A refusal of the value sent in `unknown` (a property the CRM has, say a picklist whose
    # options lack ours) naming it, in the CRM's shape for each write call; and its reason,
    # as WriteResult.dropped names it. None: the contract does not hold this CRM to it yet.
    refuses_value: Reply | None = None
    value_dropped: str = ""


def replying(status: int, body: Any = None, headers: dict[str, str] | None = None) -> Reply:
    """A fresh response for each request (one response object is not sent twice)."""
    return lambda request: answer(status, body, headers)


def sent(request: httpx.Request) -> str:
    """Everything a request says: its URL (decoded) and its body."""
    return unquote(str(request.url)) + request.content.decode()


def last_segment(request: httpx.Request) -> str:
    return unquote(request.url.path.rsplit("/", 1)[1])


def hubspot_answers(request: httpx.Request) -> httpx.Response:
    """A contact (GET, PATCH), or a batch's results (batch/read, batch/update), in the shapes
    of HubSpot's documents (tests/helpers/hubspot_shapes.py)."""

    def contact(key: str) -> dict[str, Any]:
        return hubspot_shapes.record(key, {"hs_object_id": key, "jobtitle": TITLE})

    if request.method == "POST":
        inputs = json.loads(request.content)["inputs"]
        return answer(200, hubspot_shapes.batch([contact(item["id"]) for item in inputs]))
    return answer(200, contact(last_segment(request)))


def salesforce_answers(request: httpx.Request) -> httpx.Response:
    """A Contact, a collection of them in the order asked, 204 for an update, and a SaveResult
    a record for a collection update."""

    def contact(key: str) -> dict[str, Any]:
        url = f"/services/data/v62.0/sobjects/Contact/{key}"
        return {"attributes": {"type": "Contact", "url": url}, "Id": key, "Title": TITLE}

    if request.method == "GET" and "ids" in request.url.params:
        return answer(200, [contact(key) for key in request.url.params["ids"].split(",")])
    if request.method == "GET":
        return answer(200, contact(last_segment(request)))
    if request.url.path.endswith("/composite/sobjects"):
        records = json.loads(request.content)["records"]
        return answer(200, [{"id": item["id"], "success": True, "errors": []} for item in records])
    return answer(204)


def pipedrive_answers(request: httpx.Request) -> httpx.Response:
    """API v2's {"success": true, "data": ...}: a person (GET, PATCH), or a list of them."""

    def person(key: str) -> dict[str, Any]:
        email = {"value": "jane@acme.example", "primary": True, "label": "work"}
        custom = {PIPEDRIVE_KEY: TITLE}
        return {"id": int(key), "name": "Jane Doe", "emails": [email], "custom_fields": custom}

    if "ids" in request.url.params:
        people = [person(key) for key in request.url.params["ids"].split(",")]
        return answer(200, {"success": True, "data": people, "additional_data": {}})
    return answer(200, {"success": True, "data": person(last_segment(request))})


def zoho_answers(request: httpx.Request) -> httpx.Response:
    """Records under "data" (GET one, GET by ids), or SUCCESS a record sent, in order (PUT)."""
    if request.method == "PUT":
        keys = [
            item.get("id") or last_segment(request) for item in json.loads(request.content)["data"]
        ]
        done = [
            {
                "code": "SUCCESS",
                "details": {"id": key},
                "message": "record updated",
                "status": "success",
            }
            for key in keys
        ]
        return answer(200, {"data": done})
    params = request.url.params
    keys = params["ids"].split(",") if "ids" in params else [last_segment(request)]
    info = {"per_page": 200, "count": len(keys), "page": 1, "more_records": False}
    return answer(200, {"data": [{"Title": TITLE, "id": key} for key in keys], "info": info})


def dynamics_answers(request: httpx.Request) -> httpx.Response:
    """A contact (GET contacts(id)), a query's rows under "value", 204 for an update."""
    if request.method == "PATCH":
        return answer(204)
    rows = [
        {"@odata.etag": 'W/"4334726"', "contactid": guid, "jobtitle": TITLE}
        for guid in GUIDS.findall(sent(request))
    ]
    context = f"{DYNAMICS}/api/data/v9.2/$metadata#contacts(contactid,jobtitle)"
    if "$filter" in request.url.params:
        return answer(200, {"@odata.context": context, "value": rows})
    return answer(200, {"@odata.context": f"{context}/$entity", **rows[0]})


def zoho_refuses_write(request: httpx.Request) -> httpx.Response:
    """Update Records' per-record INVALID_DATA, naming the field, one a record sent."""
    refusals = [
        {
            "code": "INVALID_DATA",
            "details": {
                "expected_data_type": "text",
                "api_name": "ContactData_Record_Status",
                "json_path": f"$.data[{n}].ContactData_Record_Status",
            },
            "message": "invalid data",
            "status": "error",
        }
        for n, _ in enumerate(json.loads(request.content)["data"])
    ]
    return answer(400, {"data": refusals})


# Microsoft's "Troubleshoot Dataverse Web API client errors": an unknown property in $select,
# and in a body (POST there; the page's message, with its line breaks and "<truncated>" left out).
DYNAMICS_UNKNOWN_ON_READ = (
    "Could not find a property named 'new_contactdata_record_status' on type "
    "'Microsoft.Dynamics.CRM.contact'."
)
DYNAMICS_UNKNOWN_ON_WRITE = (
    "An error occurred while validating input parameters: Microsoft.Crm.CrmException: Invalid "
    "property 'new_contactdata_record_status' was found in entity 'Microsoft.Dynamics.CRM.contact'."
    " ---> Microsoft.OData.ODataException: Does not support untyped value in non-open type."
)
SALESFORCE_NO_SUCH_COLUMN = (
    "No such column 'ContactData_Record_Status__c' on sobject of type Contact"
)
BAD_PICKLIST = "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST"
SALESFORCE_BAD_STATUS = {  # the shape of SalesforceFoundation/NPSP#5409's "bad value"
    "message": "ContactData Record Status: bad value for restricted picklist field: Active",
    "fields": ["ContactData_Record_Status__c"],
}
# Pipedrive names a custom field by its key: one the account has (a text field holding
# TITLE), and one it does not. v2's refusals name the path ("Validation failed: <path>: <why>",
# pipedrive/client-nodejs#651); their wording for a custom field is unverified.
PIPEDRIVE_KEY = "d4de1c1518b4531717c676029a45911c340390a6"
PIPEDRIVE_OTHER_KEY = "e5ef2d2629c5642828d787b1aa56a22d451401b7"
PIPEDRIVE_NOT_ALLOWED = f"custom_fields: Unknown custom field '{PIPEDRIVE_OTHER_KEY}'"
PIPEDRIVE_BAD_OPTION = f"custom_fields.{PIPEDRIVE_OTHER_KEY}: must be one of the field's options"


def salesforce_refuses_status(request: httpx.Request) -> httpx.Response:
    """A restricted picklist refusing our record status: a 400 for one Contact, a failed
    SaveResult for each record sending it in a collection (the others saved)."""
    if not request.url.path.endswith("/composite/sobjects"):
        return answer(400, [{**SALESFORCE_BAD_STATUS, "errorCode": BAD_PICKLIST}])
    refused = [{**SALESFORCE_BAD_STATUS, "statusCode": BAD_PICKLIST}]
    results = [
        {"id": record["id"], "success": not errors, "errors": errors}
        for record in json.loads(request.content)["records"]
        for errors in [refused if "ContactData_Record_Status__c" in record else []]
    ]
    return answer(200, results)


def pipedrive_refusing(why: str) -> Reply:
    """v2's refusal of a request's values: "Validation failed: " and each path's reason."""
    body = {"success": False, "error": f"Validation failed: {why}"}
    return replying(400, {**body, "code": "ERR_SCHEMA_VALIDATION_FAILED"})


CRMS: dict[str, Platform] = {
    "hubspot": Platform(
        base_url=HUBSPOT,
        ids=("512", "513"),
        auth=("authorization", f"Bearer {TOKEN}"),
        known="jobtitle",
        unknown="contactdata_record_status",
        answers=hubspot_answers,
        # HubSpot's reference for `properties`: "If any of the specified properties are not
        # present on the requested object(s), they will be ignored."
        refuses_read=None,
        refuses_write=replying(
            400,
            json.loads(
                (OUTBOUND / "hubspot_error_400_property_doesnt_exist.json")
                .read_text()
                .replace("description", "contactdata_record_status")
            ),
        ),
        dropped='Property "contactdata_record_status" does not exist',
        # An expired OAuth token, as HubSpot answered it (airbytehq/airbyte#74726).
        expired={
            "status": "error",
            "message": "The OAuth token used to make this call expired 0 second(s) ago.",
            "correlationId": "019cd9fe-d093-7d4f-99bc-45975fdcf7c6",
            "category": "EXPIRED_AUTHENTICATION",
            "context": {"expire time": ["2026-03-10T23:04:41.164Z"]},
        },
        # As HubSpot's usage-details page shows it (tests/vendor/hubspot/departures.json).
        rate_limited=hubspot_shapes.rate_limited("TEN_SECONDLY_ROLLING"),
        wait=10.0,  # TEN_SECONDLY_ROLLING's window
        # A 500 has no category (HubSpot/hubspot-api-python#111; departures.json).
        server_error={
            "status": "error",
            "message": "internal error",
            "correlationId": "5e0a9d5b-55a6-4b3c-9b5e-8d1a8a1f0c11",
        },
        batch_writes=True,
    ),
    "salesforce": Platform(
        base_url=SALESFORCE,
        ids=("003xx000004TmiQAAS", "003xx000004TmiRAAS"),
        auth=("authorization", f"Bearer {TOKEN}"),
        known="Title",
        unknown="ContactData_Record_Status__c",
        answers=salesforce_answers,
        refuses_read=replying(
            400,
            [
                {
                    "message": "No such column 'ContactData_Record_Status__c' on entity "
                    "'Contact'. If you are attempting to use a custom field, be sure to append "
                    "the '__c' after the custom field name. Please reference your WSDL or the "
                    "describe call for the appropriate names.",
                    "errorCode": "INVALID_FIELD",
                }
            ],
        ),
        # For a collection update too: the whole request refused (unverified for collections).
        refuses_write=replying(
            400, [{"message": SALESFORCE_NO_SUCH_COLUMN, "errorCode": "INVALID_FIELD"}]
        ),
        dropped=f"INVALID_FIELD: {SALESFORCE_NO_SUCH_COLUMN}",
        expired=[{"message": "Session expired or invalid", "errorCode": "INVALID_SESSION_ID"}],
        # Its REST API documents no 429 (its limit is 403 REQUEST_LIMIT_EXCEEDED): the contract's
        # 429 tests leave it out (tests/test_adapters.py LIMITED_BY_429).
        rate_limited=None,
        wait=None,
        server_error=[
            {
                "errorCode": "UNKNOWN_EXCEPTION",
                "message": "An unexpected error occurred. Please include this ErrorId if you "
                "contact support: 1931340523-53744 (-1159404474)",
            }
        ],
        batch_writes=True,
        refuses_value=salesforce_refuses_status,
        value_dropped=f"{BAD_PICKLIST}: {SALESFORCE_BAD_STATUS['message']}",
    ),
    "pipedrive": Platform(
        base_url="https://acme.pipedrive.com",
        ids=("12", "14"),
        auth=("x-api-token", TOKEN),
        known=PIPEDRIVE_KEY,
        unknown=PIPEDRIVE_OTHER_KEY,
        answers=pipedrive_answers,
        refuses_read=None,  # a person comes whole: a field it lacks is absent
        refuses_write=pipedrive_refusing(PIPEDRIVE_NOT_ALLOWED),
        dropped=PIPEDRIVE_NOT_ALLOWED,
        expired={
            "success": False,
            "error": "unauthorized access",
            "errorCode": 401,
            "error_info": "Please check developers.pipedrive.com for more information about "
            "Pipedrive API.",
        },
        rate_limited={"success": False, "error": "Request over limit", "errorCode": 429},
        wait=None,  # no header: the worker waits THROTTLED_WAIT_SECONDS
        server_error={"success": False, "error": "Service Unavailable", "errorCode": 503},
        batch_writes=False,
        refuses_value=pipedrive_refusing(PIPEDRIVE_BAD_OPTION),
        value_dropped=PIPEDRIVE_BAD_OPTION,
    ),
    "zoho": Platform(
        base_url="https://www.zohoapis.com",
        ids=("554023000000527002", "554023000000531001"),
        auth=("authorization", f"Zoho-oauthtoken {TOKEN}"),
        known="Title",
        unknown="ContactData_Record_Status",
        answers=zoho_answers,
        refuses_read=replying(
            400,
            {
                "code": "INVALID_DATA",
                "details": {"api_name": "ContactData_Record_Status"},
                "message": "invalid data",
                "status": "error",
            },
        ),
        refuses_write=zoho_refuses_write,
        dropped="INVALID_DATA: invalid data",
        expired={
            "code": "INVALID_TOKEN",
            "details": {},
            "message": "invalid oauth token",
            "status": "error",
        },
        rate_limited={
            "code": "TOO_MANY_REQUESTS",
            "details": {},
            "message": "The number of concurrent requests has exceeded the limit",
            "status": "error",
        },
        wait=None,  # Zoho documents no wait: the worker holds THROTTLED_WAIT_SECONDS
        server_error={
            "code": "INTERNAL_ERROR",
            "details": {},
            "message": "Internal Server Error",
            "status": "error",
        },
        batch_writes=True,
    ),
    "dynamics": Platform(
        base_url=DYNAMICS,
        ids=("6d81597f-0f9f-e711-8122-000d3aa2331c", "7e92608f-1fa0-f811-9233-111e4bb3442d"),
        auth=("authorization", f"Bearer {TOKEN}"),
        known="jobtitle",
        unknown="new_contactdata_record_status",
        answers=dynamics_answers,
        refuses_read=replying(400, {"error": {"code": "0x0", "message": DYNAMICS_UNKNOWN_ON_READ}}),
        refuses_write=replying(
            400, {"error": {"code": "0x0", "message": DYNAMICS_UNKNOWN_ON_WRITE}}
        ),
        dropped=DYNAMICS_UNKNOWN_ON_WRITE,
        expired=None,  # the Web API's 401 has no body: its challenge is in WWW-Authenticate
        # The challenge's parameters are unverified; the adapter reads only the status.
        expired_headers={
            "WWW-Authenticate": "Bearer authorization_uri=https://login.microsoftonline.com/"
            f"common/oauth2/authorize, resource_id={DYNAMICS}/"
        },
        rate_limited={
            "error": {
                "code": "0x80072322",
                "message": "Number of requests exceeded the limit of 6000 over time window of "
                "300 seconds.",
            }
        },
        wait=None,  # Microsoft always sends Retry-After; without one the worker's backoff decides
        server_error={"error": {"code": "0x80040216", "message": "An unexpected error occurred."}},
        batch_writes=False,
    ),
}


# --- HubSpot holding contacts and companies, for the worker -------------------------------

HS_COMPANIES = "/crm/objects/2026-03/companies"
HS_CALLBACKS = "/automation/actions/callbacks/2026-03"
HS_CREATED = ("tasks", "notes", "contacts")  # the objects FakeHubSpot creates (POST)


class FakeHubSpot:
    """Contacts and companies by id (each kind numbered on its own, as HubSpot does: a
    contact and a company may share an id); records every request; answers with what
    `failures` holds first."""

    def __init__(self) -> None:
        self.contacts: dict[str, dict[str, Any]] = {"501": {"email": AVA, "jobtitle": ""}}
        self.companies: dict[str, dict[str, Any]] = {}
        self.requests: list[httpx.Request] = []
        self.failures: list[httpx.Response] = []
        self.options: dict[str, set[str]] = {}  # dropdown properties: the values they allow
        self.completed: dict[str, dict[str, Any]] = {}  # custom actions: callbackId -> body
        self.created: dict[str, list[dict[str, Any]]] = {"tasks": [], "notes": []}  # bodies

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.failures:
            return self.failures.pop(0)
        if request.url.path.startswith(HS_CALLBACKS):  # .../{callbackId}/complete: 204
            self.completed[unquote(request.url.path.split("/")[-2])] = json.loads(request.content)
            return httpx.Response(204)
        if request.method == "POST" and request.url.path.rsplit("/", 1)[-1] in HS_CREATED:
            return self._create(request)
        records = self._records(request)
        if request.url.path.endswith("/batch/update"):
            return self._batch_update(records, json.loads(request.content)["inputs"])
        if request.url.path.endswith("/batch/read"):
            return self._batch_read(records, json.loads(request.content))
        record_id = request.url.path.rsplit("/", 1)[-1]
        if record_id not in records:
            return httpx.Response(404, json=hubspot_shapes.not_found())
        if request.method == "PATCH":
            sent = json.loads(request.content)["properties"]
            if refused := self._invalid_option([sent]):
                return refused
            records[record_id].update(sent)
        properties = records[record_id]
        return httpx.Response(200, json=hubspot_shapes.record(record_id, properties))

    def _create(self, request: httpx.Request) -> httpx.Response:
        """POST /crm/objects/2026-03/{tasks,notes,contacts}: 201 with the object created (a
        SimplePublicObject); tasks and notes are kept in `created` as sent."""
        kind = request.url.path.rsplit("/", 1)[-1]
        body = json.loads(request.content)
        if kind == "contacts":
            key = str(max((int(k) for k in self.contacts if k.isdigit()), default=500) + 1)
            self.contacts[key] = dict(body["properties"])
        else:
            self.created[kind].append(body)
            key = str(9000 + sum(map(len, self.created.values())))
        return httpx.Response(201, json=hubspot_shapes.record(key, body["properties"]))

    def _records(self, request: httpx.Request) -> dict[str, dict[str, Any]]:
        """The kind of record a request's path names: companies, else contacts."""
        return self.companies if request.url.path.startswith(HS_COMPANIES) else self.contacts

    def _batch_update(
        self, records: dict[str, dict[str, Any]], inputs: list[dict[str, Any]]
    ) -> httpx.Response:
        """HubSpot's batch update: 200 when every record was written, else 207 with an
        error naming the missing ones; one record's invalid option refuses them all."""
        if refused := self._invalid_option([item["properties"] for item in inputs]):
            return refused
        found = [item for item in inputs if item["id"] in records]
        for item in found:
            records[item["id"]].update(item["properties"])
        results = [hubspot_shapes.record(item["id"], item["properties"]) for item in found]
        missing = [item["id"] for item in inputs if item["id"] not in records]
        if not missing:
            return httpx.Response(200, json=hubspot_shapes.batch(results))
        error = hubspot_shapes.batch_error("OBJECT_NOT_FOUND", "Not found", {"ids": missing})
        return httpx.Response(207, json=hubspot_shapes.batch(results, [error]))

    def _invalid_option(self, sent: list[dict[str, Any]]) -> httpx.Response | None:
        """HubSpot's 400 for a dropdown value it has no option for; None when every value
        sent is allowed."""
        for name, value in ((n, v) for values in sent for n, v in values.items()):
            if name in self.options and value not in self.options[name]:
                return httpx.Response(400, json=invalid_option(name, value, self.options[name]))
        return None

    def _batch_read(
        self, records: dict[str, dict[str, Any]], body: dict[str, Any]
    ) -> httpx.Response:
        """HubSpot's batch read: the records found, 207 naming the missing ones."""
        ids = [item["id"] for item in body["inputs"]]
        results = [
            hubspot_shapes.record(key, {name: records[key].get(name)
                                        for name in body["properties"]})
            for key in ids if key in records
        ]  # fmt: skip
        missing = [key for key in ids if key not in records]
        if not missing:
            return httpx.Response(200, json=hubspot_shapes.batch(results))
        kind = "COMPANY" if records is self.companies else "CONTACT"
        error = hubspot_shapes.batch_error("OBJECT_NOT_FOUND",
                                           f"Could not get some {kind} objects",
                                           {"ids": missing})  # fmt: skip
        return httpx.Response(207, json=hubspot_shapes.batch(results, [error]))

    def patches(self) -> list[dict[str, Any]]:
        return [json.loads(r.content)["properties"] for r in self.requests if r.method == "PATCH"]

    def batches(self) -> list[dict[str, dict[str, Any]]]:
        """Each batch update's contacts: id -> properties."""
        return [
            {item["id"]: item["properties"] for item in json.loads(r.content)["inputs"]}
            for r in self.requests
            if r.url.path.endswith("/batch/update")
        ]


def invalid_option(name: str, value: str, allowed: set[str]) -> dict[str, Any]:
    """HubSpot's VALIDATION_ERROR for an option a dropdown lacks, naming the property in its
    message's list and in `errors` (the shape of tests/data/platforms/outbound's samples)."""
    message = f"{value} was not one of the allowed options: {sorted(allowed)}"
    listed = [{"isValid": False, "message": message, "error": "INVALID_OPTION", "name": name,
               "localizedErrorMessage": message}]  # fmt: skip
    return {
        "status": "error",
        "message": f"Property values were not valid: {json.dumps(listed)}",
        "correlationId": "3f7e2a61-0d5c-4c41-9e4b-5b0f1d2c9a77",
        "category": "VALIDATION_ERROR",
        "errors": [
            {"message": message, "code": "INVALID_OPTION", "context": {"propertyName": [name]}}
        ],
    }


# --- Zoho's notification channels ---------------------------------------------------------


class FakeZohoWatch:
    """Answers /crm/v7/actions/watch as Zoho documents (tests/vendor/zoho.json): a channel
    enabled (POST, 201 Created) or its details updated (PATCH, 200), confirming the expiry
    asked for, or `confirms` when set, and disabling channels (DELETE ?channel_ids=); the
    queued failures first; keeps the requests."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.failures: list[httpx.Response] = []
        self.confirms = ""

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.failures:
            return self.failures.pop(0)
        if request.method == "DELETE":  # disabled: Zoho's documented answer, one a channel
            unsubscribed = {"code": "SUCCESS", "status": "success",
                            "message": "Successfully un-subscribed from actions-watch"}  # fmt: skip
            ids = request.url.params["channel_ids"].split(",")
            return httpx.Response(200, json={"watch": [
                {**unsubscribed, "details": {"channel_id": i}} for i in ids]})  # fmt: skip
        (channel,) = json.loads(request.content)["watch"]
        expiry = self.confirms or channel["channel_expiry"]
        event = {"channel_expiry": expiry, "resource_name": "Contacts",
                 "resource_uri": "https://www.zohoapis.com/crm/v7/Contacts",
                 "resource_id": "554023000000000131",
                 "channel_id": channel["channel_id"]}  # fmt: skip
        enabled = request.method == "POST"
        message = ("Successfully subscribed for actions-watch of the given module" if enabled
                   else "Successfully updated the subscribe details")  # fmt: skip
        answer = {"code": "SUCCESS", "details": {"events": [event]}, "status": "success",
                  "message": message}  # fmt: skip
        return httpx.Response(201 if enabled else 200, json={"watch": [answer]})


# --- Salesforce holding records of each sObject type, for the worker -----------------------


class FakeSalesforce:
    """Records by sObject type (Contact, Lead, Account) and id, each type with the fields the
    org has (`fields`); answers the REST calls the adapter makes as Salesforce documents
    them: one record (GET, PATCH /sobjects/{type}/{id}), sObject Collections (GET
    /composite/sobjects/{type}?ids=..., PATCH /composite/sobjects, each record naming its
    type), and the Query resource (GET /query?q=SOQL, then its nextRecordsUrl, `batch`
    records an answer; or a record found by e-mail, `FIND`). A field the type lacks is
    refused as INVALID_FIELD; records every request. `described` holds each type's fields as
    its describe (GET /sobjects/{type}/describe) answers them."""

    def __init__(self, fields: dict[str, set[str]]) -> None:
        self.fields = fields
        self.records: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in fields}
        self.requests: list[httpx.Request] = []
        self.batch = 2_000  # records a query answer holds (Salesforce's default batch size)
        self.cursors: dict[str, tuple[str, list[str], list[str]]] = {}  # open query locators
        self.failures: list[httpx.Response] = []  # answers to the next queries, first
        self.described: dict[str, list[dict[str, Any]]] = {}  # DescribeFieldResults a type

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path.split("/services/data/v62.0/", 1)[1].split("/")
        if path[0] == "sobjects" and path[2:] == ["describe"]:
            return self._describe(path[1])
        if path[0] == "query" and FIND.fullmatch(request.url.params.get("q", "")):
            return self._find(request.url.params["q"])
        if path[0] == "query":
            return self._query_more(path[1]) if path[1:] else self._query(request)
        if path[:2] == ["composite", "sobjects"] and request.method == "GET":
            return self._read_collection(path[2], request.url.params)
        if path[:2] == ["composite", "sobjects"]:
            return self._update_collection(json.loads(request.content)["records"])
        if path[0] == "sobjects" and len(path) == 2 and request.method == "POST":
            return self._create(path[1], json.loads(request.content))
        _, sobject, key = path
        if key not in self.records[sobject]:
            error = {"errorCode": "NOT_FOUND", "message": "The requested resource does not exist"}
            return httpx.Response(404, json=[error])
        if request.method == "GET":
            return self._read(sobject, key, request.url.params["fields"].split(","))
        sent = json.loads(request.content)
        if refused := self._unknown(sobject, sent):
            return refused
        self.records[sobject][key].update(sent)
        return httpx.Response(204)

    def _create(self, sobject: str, sent: dict[str, Any]) -> httpx.Response:
        """A record of `sobject` created (POST /sobjects/{type}): 201 with its SaveResult; a
        field the type lacks refused as on an update."""
        if refused := self._unknown(sobject, sent):
            return refused
        key = f"00T{len(self.records[sobject]) + 1:012d}"[:15] + "AAA"
        self.records[sobject][key] = dict(sent)
        return httpx.Response(201, json={"id": key, "success": True, "errors": []})

    def _read(self, sobject: str, key: str, fields: list[str]) -> httpx.Response:
        if refused := self._unknown(sobject, fields):
            return refused
        return httpx.Response(200, json=self._record(sobject, key, fields))

    def _read_collection(self, sobject: str, params: httpx.QueryParams) -> httpx.Response:
        fields = params["fields"].split(",")
        if refused := self._unknown(sobject, fields):
            return refused
        keys = params["ids"].split(",")
        return httpx.Response(200, json=[self._record(sobject, key, fields) for key in keys])

    def _record(self, sobject: str, key: str, fields: list[str]) -> dict[str, Any] | None:
        """A record as a read answers it (its attributes, then the fields asked); None for an
        id that is not this type's."""
        stored = self.records[sobject].get(key)
        if stored is None:
            return None
        url = f"/services/data/v62.0/sobjects/{sobject}/{key}"
        values = {name: stored.get(name) for name in fields if name.lower() != "id"}
        return {"attributes": {"type": sobject, "url": url}, "Id": key, **values}

    def _update_collection(self, records: list[dict[str, Any]]) -> httpx.Response:
        """Each record saved to its own type; the whole call refused for a field one lacks
        (as the CRMS table assumes); a record of an id its type lacks is not saved."""
        for record in records:
            sent = {k: v for k, v in record.items() if k not in ("attributes", "id")}
            if refused := self._unknown(record["attributes"]["type"], sent):
                return refused
        results = []
        for record in records:
            sobject, key = record["attributes"]["type"], record["id"]
            if key not in self.records[sobject]:
                error = {"statusCode": "INVALID_CROSS_REFERENCE_KEY",
                         "message": "invalid cross reference id", "fields": []}  # fmt: skip
                results.append({"id": key, "success": False, "errors": [error]})
                continue
            sent = {k: v for k, v in record.items() if k not in ("attributes", "id")}
            self.records[sobject][key].update(sent)
            results.append({"id": key, "success": True, "errors": []})
        return httpx.Response(200, json=results)

    def _unknown(self, sobject: str, names: Any) -> httpx.Response | None:
        """Salesforce's 400 INVALID_FIELD for the first field the type lacks; None if none."""
        missing = [name for name in names if name != "Id" and name not in self.fields[sobject]]
        if not missing:
            return None
        message = f"No such column '{missing[0]}' on entity '{sobject}'."
        return httpx.Response(400, json=[{"message": message, "errorCode": "INVALID_FIELD"}])

    def writes(self, sobject: str) -> list[dict[str, dict[str, Any]]]:
        """Each update of `sobject` records that Salesforce saved or refused: id -> fields,
        in order (one record's PATCH, or a collection's records of that type)."""
        found = []
        for request in self.requests:
            if request.method != "PATCH":
                continue
            body = json.loads(request.content)
            if request.url.path.endswith("/composite/sobjects"):
                records = [r for r in body["records"] if r["attributes"]["type"] == sobject]
                sent = {r["id"]: {k: v for k, v in r.items() if k not in ("attributes", "id")}
                        for r in records}  # fmt: skip
            elif f"/sobjects/{sobject}/" in request.url.path:
                sent = {last_segment(request): body}
            else:
                continue
            if sent:
                found.append(sent)
        return found

    # The REST API's Query resource (a backfill's listing) -----------------------------------

    def _query(self, request: httpx.Request) -> httpx.Response:
        """GET /query?q=SELECT Id, <fields> FROM <type> [WHERE <conditions>] ORDER BY Id, the
        conditions (ANDed) `LastModifiedDate >= <dateTime>` and `Id > '<id>'`; a dateTime
        not in a format SOQL documents is MALFORMED_QUERY. Opens a query locator."""
        if self.failures:
            return self.failures.pop(0)
        shape = SOQL.fullmatch(request.url.params["q"])
        if shape is None:
            return malformed(request.url.params["q"])
        fields, sobject = shape["fields"].split(", "), shape["sobject"]
        if refused := self._unknown(sobject, fields):
            return refused
        kept = []
        for condition in (shape["where"] or "").split(" AND ") if shape["where"] else []:
            test = soql_condition(condition)
            if test is None:
                return malformed(condition)
            kept.append(test)
        records = self.records[sobject]
        keys = sorted(k for k in records if all(t({**records[k], "Id": k}) for t in kept))
        locator = f"01gFAKE{len(self.cursors):011d}"
        self.cursors[locator] = (sobject, fields, keys)
        return self._query_answer(locator, 0)

    def _query_more(self, located: str) -> httpx.Response:
        """GET /query/<locator>-<offset>: the next batch, or INVALID_QUERY_LOCATOR for a
        locator expired (or released: `cursors` cleared) or never opened."""
        if self.failures:
            return self.failures.pop(0)
        locator, _, offset = located.rpartition("-")
        if locator not in self.cursors:
            error = {"message": "invalid query locator", "errorCode": "INVALID_QUERY_LOCATOR"}
            return httpx.Response(400, json=[error])
        return self._query_answer(locator, int(offset))

    def _query_answer(self, locator: str, offset: int) -> httpx.Response:
        sobject, fields, keys = self.cursors[locator]
        batch = keys[offset : offset + self.batch]
        body: dict[str, Any] = {
            "totalSize": len(keys),
            "done": offset + self.batch >= len(keys),
            "records": [self._record(sobject, key, fields[1:]) for key in batch],
        }
        if not body["done"]:
            body["nextRecordsUrl"] = f"/services/data/v62.0/query/{locator}-{offset + self.batch}"
        return httpx.Response(200, json=body)

    def _describe(self, sobject: str) -> httpx.Response:
        """The describe of a type (DescribeSObjectResult: its name, label and `fields`)."""
        if sobject not in self.described:
            error = {"errorCode": "NOT_FOUND", "message": "The requested resource does not exist"}
            return httpx.Response(404, json=[error])
        body = {"name": sobject, "label": sobject, "custom": False,
                "fields": self.described[sobject]}  # fmt: skip
        return httpx.Response(200, json=body)

    def _find(self, soql: str) -> httpx.Response:
        """SELECT Id FROM <type> WHERE <field> = '<literal>' ORDER BY CreatedDate LIMIT 1:
        the literal read as SOQL unescapes it, compared without regard to case."""
        shape = FIND.fullmatch(soql)
        assert shape is not None
        wanted = re.sub(r"\\(.)", lambda m: SOQL_UNESCAPES.get(m[1], m[1]), shape["value"])
        held = self.records[shape["sobject"]]
        keys = [
            k for k, r in held.items() if str(r.get(shape["field"], "")).lower() == wanted.lower()
        ]
        records = [{"attributes": {"type": shape["sobject"]}, "Id": key} for key in keys[:1]]
        return httpx.Response(
            200, json={"totalSize": len(records), "done": True, "records": records}
        )

    def queries(self) -> list[str]:
        """The SOQL of each query sent (not the locators followed), in order."""
        return [r.url.params["q"] for r in self.requests if r.url.path.endswith("/query")]


SOQL = re.compile(r"SELECT (?P<fields>Id(?:, \w+)*) FROM (?P<sobject>\w+)"
                  r"(?: WHERE (?P<where>.+?))? ORDER BY Id")  # fmt: skip
# The query finding a record by e-mail; its literal's quotes and backslashes escaped.
FIND = re.compile(r"SELECT Id FROM (?P<sobject>\w+) WHERE (?P<field>\w+) = "
                  r"'(?P<value>(?:[^'\\]|\\.)*)' ORDER BY CreatedDate LIMIT 1")  # fmt: skip
SOQL_UNESCAPES = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f"}
SOQL_DATETIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:Z|[+-]\d\d:\d\d)")


def soql_condition(condition: str) -> Callable[[dict[str, Any]], bool] | None:
    """A test of a record for one condition of the two the fake reads, None for another:
    `LastModifiedDate >= <dateTime literal, unquoted>` or `Id > '<id>'`."""
    name, _, value = condition.partition(" >= ")
    if name == "LastModifiedDate" and SOQL_DATETIME.fullmatch(value):
        since = datetime.fromisoformat(value)
        return lambda record: datetime.fromisoformat(record["LastModifiedDate"]) >= since
    name, _, value = condition.partition(" > ")
    if name == "Id" and re.fullmatch(r"'\w+'", value):
        return lambda record: record["Id"] > value.strip("'")
    return None


def malformed(text: str) -> httpx.Response:
    error = {"message": f"unexpected token: {text}", "errorCode": "MALFORMED_QUERY"}
    return httpx.Response(400, json=[error])


# --- HubSpot's CRM search API (a backfill's listing) --------------------------------------

SEARCH_REACH = 10_000  # results one HubSpot search query pages through


def hubspot_search(
    records: dict[str, dict[str, Any]], body: dict[str, Any], reach: int = SEARCH_REACH
) -> tuple[int, dict[str, Any]]:
    """HubSpot's POST /crm/objects/{version}/{object}/search over `records` (id -> values):
    the filters of one group ANDed (GT, GTE on numbers, EQ on text), sorted by hs_object_id,
    `limit` a page from `after`; a 400 for paging past `reach` results, as HubSpot refuses."""
    filters = [f for group in body.get("filterGroups") or [] for f in group["filters"]]
    after, limit = int(body.get("after") or 0), int(body.get("limit") or 10)
    if after + limit > reach:
        return 400, hubspot_shapes.error(
            "VALIDATION_ERROR", f"paging past {reach} results is not allowed"
        )

    def kept(key: str) -> bool:
        values = {**records[key], "hs_object_id": key}
        for f in filters:
            if f["operator"] == "EQ":
                if str(values.get(f["propertyName"])) != f["value"]:
                    return False
                continue
            have, want = int(values.get(f["propertyName"]) or 0), int(f["value"])
            if not (have > want if f["operator"] == "GT" else have >= want):
                return False
        return True

    found = sorted((key for key in records if kept(key)), key=int)
    results = [
        hubspot_shapes.record(key, {n: records[key].get(n) for n in body.get("properties", [])})
        for key in found[after : after + limit]
    ]
    following = str(after + limit) if after + limit < len(found) else None
    return 200, hubspot_shapes.search_page(results, len(found), following)


class SearchableHubSpot(FakeHubSpot):
    """FakeHubSpot answering the CRM search API over its contacts and companies too."""

    def __init__(self, reach: int = SEARCH_REACH) -> None:
        super().__init__()
        self.reach = reach

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if not request.url.path.endswith(("/contacts/search", "/companies/search")):
            return super().__call__(request)
        self.requests.append(request)
        if self.failures:
            return self.failures.pop(0)
        records = self._records(request)
        status, body = hubspot_search(records, json.loads(request.content), self.reach)
        return httpx.Response(status, json=body)

    def searches(self) -> list[dict[str, Any]]:
        """The bodies of the search requests, in order."""
        return [json.loads(r.content) for r in self.requests if r.url.path.endswith("/search")]
