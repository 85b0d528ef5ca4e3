"""The CRM adapters against fake CRMs (httpx.MockTransport): the exact requests they send,
and what they make of the answers in tests/data/platforms/outbound/."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from connector.adapters import ADAPTERS, adapter_for
from connector.adapters.base import Permanent, Retriable, WriteResult, classify, retry_after
from connector.adapters.hubspot import HubSpot
from connector.adapters.salesforce import Salesforce

SAMPLES = Path(__file__).parent / "data" / "platforms" / "outbound"
HUBSPOT = "https://api.hubapi.com"
SALESFORCE = "https://example.my.salesforce.com"
SF_DATA = f"{SALESFORCE}/services/data/v62.0"
TOKEN = "secret-token"
Answer = httpx.Response | Callable[[httpx.Request], httpx.Response]


def sample(name: str) -> Any:
    return json.loads((SAMPLES / name).read_text())


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
        return httpx.Client(transport=httpx.MockTransport(self))

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


def raising(error: type[httpx.TransportError]) -> Callable[[httpx.Request], httpx.Response]:
    def handler(request: httpx.Request) -> httpx.Response:
        raise error("simulated", request=request)

    return handler


# --- classify: once for every adapter ---------------------------------------------------------


def test_classify_lets_success_pass() -> None:
    assert classify(answer(204)) is None


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_classify_429_and_5xx_are_retriable_with_retry_after_seconds(status: int) -> None:
    with pytest.raises(Retriable) as caught:
        classify(answer(status, {"message": "slow down"}, {"Retry-After": "7"}))
    assert caught.value.retry_after == 7.0
    assert "slow down" in caught.value.reason


def test_retry_after_as_http_date_counts_from_the_answers_date() -> None:
    headers = {
        "Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT",
        "Date": "Wed, 21 Oct 2026 07:26:30 GMT",
    }
    assert retry_after(answer(503, headers=headers)) == 90.0


def test_retry_after_as_http_date_without_date_counts_from_now() -> None:
    now = datetime(2026, 10, 21, 7, 27, tzinfo=UTC)
    headers = {"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}
    assert retry_after(answer(503, headers=headers), now) == 60.0


def test_retry_after_absent_or_unreadable_is_none() -> None:
    assert retry_after(answer(503)) is None
    assert retry_after(answer(503, headers={"Retry-After": "soon"})) is None
    assert retry_after(answer(503, headers={"Retry-After": "inf"})) is None


def test_classify_other_4xx_is_permanent_with_the_crms_message() -> None:
    with pytest.raises(Permanent) as caught:
        classify(answer(404, {"status": "error", "message": "Object not found"}))
    assert caught.value.reason == "404 Not Found: Object not found"


def test_classify_salesforce_error_array_keeps_code_and_message() -> None:
    body = [{"errorCode": "NOT_FOUND", "message": "The requested resource does not exist"}]
    with pytest.raises(Permanent) as caught:
        classify(answer(404, body))
    assert caught.value.reason.endswith("NOT_FOUND: The requested resource does not exist")


@pytest.mark.parametrize("status", [301, 302])
def test_classify_redirect_is_permanent(status: int) -> None:
    with pytest.raises(Permanent, match="not followed"):
        classify(answer(status, headers={"Location": "https://elsewhere.example/"}))


# --- the registry ------------------------------------------------------------------------------


def test_registry_builds_each_platforms_adapter() -> None:
    client = httpx.Client(transport=httpx.MockTransport(FakeCRM()))
    assert set(ADAPTERS) == {"hubspot", "salesforce"}
    for platform in ADAPTERS:
        assert adapter_for(platform, "https://crm.example", TOKEN, client).platform == platform


def test_registry_refuses_a_platform_without_adapter() -> None:
    client = httpx.Client(transport=httpx.MockTransport(FakeCRM()))
    with pytest.raises(Permanent, match="no CRM adapter for 'zapier'"):
        adapter_for("zapier", "https://crm.example", TOKEN, client)


# --- contract: every adapter, every call, the same failures ----------------------------------


def calls(platform: str) -> list[Callable[[Any], Any]]:
    """One read, one batch read, one write and one batch write, as each adapter is called."""
    record = "512" if platform == "hubspot" else "003xx000004TmiQAAS"
    return [
        lambda adapter: adapter.read(record, ["jobtitle"]),
        lambda adapter: adapter.read_many([record, record + "0"], ["jobtitle"]),
        lambda adapter: adapter.write(record, {"jobtitle": "CTO"}),
        lambda adapter: adapter.write_many({record: {"jobtitle": "CTO"}}),
    ]


def build(platform: str, crm: FakeCRM) -> Any:
    return ADAPTERS[platform](
        {"hubspot": HUBSPOT, "salesforce": SALESFORCE}[platform], TOKEN, crm.client()
    )


CONTRACT = [(platform, n) for platform in ADAPTERS for n in range(4)]


@pytest.mark.parametrize(("platform", "n"), CONTRACT)
@pytest.mark.parametrize("error", [httpx.ReadTimeout, httpx.ConnectTimeout])
def test_timeouts_are_retriable(platform: str, n: int, error: type[httpx.TransportError]) -> None:
    crm = FakeCRM(raising(error))
    with pytest.raises(Retriable, match="timed out") as caught:
        calls(platform)[n](build(platform, crm))
    assert caught.value.retry_after is None


@pytest.mark.parametrize(("platform", "n"), CONTRACT)
def test_connection_reset_is_retriable(platform: str, n: int) -> None:
    crm = FakeCRM(raising(httpx.ConnectError))
    with pytest.raises(Retriable, match="ConnectError"):
        calls(platform)[n](build(platform, crm))


@pytest.mark.parametrize(("platform", "n"), CONTRACT)
def test_server_errors_are_retriable(platform: str, n: int) -> None:
    crm = FakeCRM(answer(503, headers={"Retry-After": "30"}))
    with pytest.raises(Retriable) as caught:
        calls(platform)[n](build(platform, crm))
    assert caught.value.retry_after == 30.0


@pytest.mark.parametrize(("platform", "n"), CONTRACT)
@pytest.mark.parametrize("status", [301, 302])
def test_redirects_are_not_followed(platform: str, n: int, status: int) -> None:
    crm = FakeCRM(answer(status, headers={"Location": "https://attacker.example/steal"}))
    outcome = None
    try:
        outcome = calls(platform)[n](build(platform, crm))
    except Permanent as failure:
        outcome = failure
    if isinstance(outcome, dict):  # write_many: the refusal is the record's outcome
        (outcome,) = outcome.values()
    assert isinstance(outcome, Permanent) and "not followed" in outcome.reason
    assert len(crm.requests) == 1


@pytest.mark.parametrize("platform", list(ADAPTERS))
def test_expired_token_is_permanent(platform: str) -> None:
    body = [{"message": "Session expired or invalid", "errorCode": "INVALID_SESSION_ID"}]
    if platform == "hubspot":
        body = {"status": "error", "message": "Authentication credentials not found."}
    crm = FakeCRM(answer(401, body), answer(401, body))
    adapter = build(platform, crm)
    with pytest.raises(Permanent) as caught:
        adapter.write("1", {"jobtitle": "CTO"})
    assert caught.value.reason == "token expired or revoked"
    assert adapter.write_many({"1": {"jobtitle": "CTO"}})["1"].reason == "token expired or revoked"


# --- HubSpot -----------------------------------------------------------------------------------


def test_hubspot_read_asks_for_the_properties() -> None:
    contact = {"id": "512", "properties": {"jobtitle": "CTO", "company": None, "email": "a@b.c"}}
    crm = FakeCRM(answer(200, contact))
    values = hubspot(crm).read("512", ["jobtitle", "company", "industry"])
    assert values == {"jobtitle": "CTO", "company": None, "industry": None}
    (request,) = crm.requests
    assert_sent(
        request,
        "GET",
        f"{HUBSPOT}/crm/v3/objects/contacts/512?properties=jobtitle%2Ccompany%2Cindustry",
    )
    assert request.url.params["properties"] == "jobtitle,company,industry"


def test_hubspot_read_of_a_missing_contact_is_permanent() -> None:
    crm = FakeCRM(
        answer(
            404, {"status": "error", "message": "Object not found", "category": "OBJECT_NOT_FOUND"}
        )
    )
    with pytest.raises(Permanent, match="Object not found"):
        hubspot(crm).read("999", ["jobtitle"])


def test_hubspot_record_id_cannot_leave_the_contacts_path() -> None:
    crm = FakeCRM(answer(200, {"id": "1", "properties": {}}))
    hubspot(crm).read("../../owners/1", [])
    assert crm.requests[0].url.raw_path == b"/crm/v3/objects/contacts/..%2F..%2Fowners%2F1"


def test_hubspot_read_many_asks_100_contacts_a_call_and_reports_the_missing() -> None:
    def found(request: httpx.Request) -> httpx.Response:
        asked = json.loads(request.content)
        results = [
            {"id": item["id"], "properties": {"jobtitle": f"T{item['id']}", "company": None}}
            for item in asked["inputs"]
            if item["id"] != "150"
        ]
        if len(results) == len(asked["inputs"]):
            return answer(200, {"status": "COMPLETE", "results": results})
        error = {
            "status": "error",
            "category": "OBJECT_NOT_FOUND",
            "message": "Could not get some CONTACT objects, they may be deleted or not exist.",
            "context": {"ids": ["150"]},
        }
        body = {"status": "COMPLETE", "results": results, "numErrors": 1, "errors": [error]}
        return answer(207, body)

    crm = FakeCRM(found, found)
    ids = [str(n) for n in range(101, 221)] + ["101"]  # 120 contacts, one named twice
    values = hubspot(crm).read_many(ids, ["jobtitle", "company"])
    assert [request.url.path for request in crm.requests] == [
        "/crm/v3/objects/contacts/batch/read"
    ] * 2
    assert [len(body["inputs"]) for body in crm.bodies()] == [100, 20]
    assert crm.bodies()[0]["properties"] == ["jobtitle", "company"]
    assert crm.bodies()[0]["inputs"][0] == {"id": "101"}
    assert values["101"] == {"jobtitle": "T101", "company": None} and len(values) == 120
    missing = values["150"]
    assert isinstance(missing, Permanent)
    assert missing.reason == (
        "no such contact: OBJECT_NOT_FOUND: Could not get some CONTACT objects, they may be "
        "deleted or not exist."
    )


def test_hubspot_write_sends_the_documented_body() -> None:
    properties = sample("hubspot_contact_patch_request.json")["properties"]
    crm = FakeCRM(answer(200, {"id": "512", "properties": properties}))
    result = hubspot(crm).write("512", properties)
    assert result == WriteResult(written=properties, dropped={})
    (request,) = crm.requests
    assert_sent(request, "PATCH", f"{HUBSPOT}/crm/v3/objects/contacts/512")
    assert request.headers["content-type"] == "application/json"
    assert crm.bodies() == [{"properties": properties}]


def test_hubspot_values_always_go_as_strings() -> None:
    crm = FakeCRM(answer(200, {"id": "512"}))
    values = {"numberofemployees": 17, "opted_in": True, "hobbies": ["chess", "go"], "fax": None}
    result = hubspot(crm).write("512", values)
    sent = crm.bodies()[0]["properties"]
    assert sent == {"numberofemployees": "17", "opted_in": "true", "hobbies": "chess;go", "fax": ""}
    assert result.written == values


def test_hubspot_drops_a_property_that_does_not_exist_and_retries_the_rest() -> None:
    refusal = sample("hubspot_error_400_property_doesnt_exist.json")
    crm = FakeCRM(answer(400, refusal), answer(200, {"id": "512"}))
    result = hubspot(crm).write("512", {"jobtitle": "CTO", "description": "Enriched"})
    assert result.written == {"jobtitle": "CTO"}
    assert result.dropped == {"description": 'Property "description" does not exist'}
    assert crm.bodies() == [
        {"properties": {"jobtitle": "CTO", "description": "Enriched"}},
        {"properties": {"jobtitle": "CTO"}},
    ]


def test_hubspot_write_of_only_unknown_properties_sends_once() -> None:
    crm = FakeCRM(answer(400, sample("hubspot_error_400_property_doesnt_exist.json")))
    result = hubspot(crm).write("512", {"description": "Enriched"})
    assert result == WriteResult(
        written={}, dropped={"description": 'Property "description" does not exist'}
    )
    assert len(crm.requests) == 1


def test_hubspot_other_validation_errors_are_permanent() -> None:
    refusal = {
        "status": "error",
        "message": 'Property values were not valid: "industry" has no option "Widgets"',
        "category": "VALIDATION_ERROR",
        "errors": [{"message": "no option Widgets", "code": "INVALID_OPTION"}],
    }
    crm = FakeCRM(answer(400, refusal))
    with pytest.raises(Permanent, match="has no option"):
        hubspot(crm).write("512", {"industry": "Widgets"})
    assert len(crm.requests) == 1


def test_hubspot_ten_secondly_limit_waits_retry_after() -> None:
    crm = FakeCRM(answer(429, sample("hubspot_error_429_ten_secondly.json"), {"Retry-After": "3"}))
    with pytest.raises(Retriable) as caught:
        hubspot(crm).write("512", {"jobtitle": "CTO"})
    assert caught.value.retry_after == 3.0
    assert "TEN_SECONDLY_ROLLING" in caught.value.reason


def test_hubspot_ten_secondly_limit_without_retry_after_waits_the_interval() -> None:
    headers = {
        "X-HubSpot-RateLimit-Interval-Milliseconds": "10000",
        "X-HubSpot-RateLimit-Remaining": "0",
    }
    crm = FakeCRM(answer(429, sample("hubspot_error_429_ten_secondly.json"), headers))
    with pytest.raises(Retriable) as caught:
        hubspot(crm).write("512", {"jobtitle": "CTO"})
    assert caught.value.retry_after == 10.0


def test_hubspot_ten_secondly_limit_without_headers_waits_ten_seconds() -> None:
    crm = FakeCRM(answer(429, sample("hubspot_error_429_ten_secondly.json")))
    with pytest.raises(Retriable) as caught:
        hubspot(crm).read("512", ["jobtitle"])
    assert caught.value.retry_after == 10.0


def test_hubspot_daily_limit_waits_a_day() -> None:
    crm = FakeCRM(answer(429, sample("hubspot_error_429_daily.json")))
    with pytest.raises(Retriable) as caught:
        hubspot(crm).write("512", {"jobtitle": "CTO"})
    assert caught.value.retry_after == 24 * 3600.0
    assert "DAILY" in caught.value.reason and "daily limit" in caught.value.reason


def test_hubspot_daily_limit_with_retry_after_waits_exactly_that() -> None:
    crm = FakeCRM(answer(429, sample("hubspot_error_429_daily.json"), {"Retry-After": "3600"}))
    with pytest.raises(Retriable) as caught:
        hubspot(crm).write("512", {"jobtitle": "CTO"})
    assert caught.value.retry_after == 3600.0


def hubspot_batch_answer(request: httpx.Request) -> httpx.Response:
    inputs = json.loads(request.content)["inputs"]
    results = [
        {"id": item["id"], "properties": item["properties"], "archived": False} for item in inputs
    ]
    return answer(200, {"status": "COMPLETE", "results": results})


def test_hubspot_batch_splits_250_contacts_into_100_100_50() -> None:
    changes = {str(n): {"jobtitle": f"title {n}", "numberofemployees": n} for n in range(250)}
    crm = FakeCRM(*[hubspot_batch_answer] * 3)
    outcomes = hubspot(crm).write_many(changes)
    assert [len(body["inputs"]) for body in crm.bodies()] == [100, 100, 50]
    for request in crm.requests:
        assert_sent(request, "POST", f"{HUBSPOT}/crm/v3/objects/contacts/batch/update")
    sent = [item for body in crm.bodies() for item in body["inputs"]]
    assert [item["id"] for item in sent] == list(changes)
    assert sent[7] == {"id": "7", "properties": {"jobtitle": "title 7", "numberofemployees": "7"}}
    assert outcomes == {key: WriteResult(written=values) for key, values in changes.items()}


def test_hubspot_batch_input_has_the_documented_shape() -> None:
    documented = sample("hubspot_contacts_batch_update_request.json")["inputs"][0]
    crm = FakeCRM(hubspot_batch_answer)
    hubspot(crm).write_many({documented["id"]: documented["properties"]})
    assert crm.bodies() == [{"inputs": [documented]}]


def test_hubspot_batch_207_reports_each_contact() -> None:
    multi = copy.deepcopy(sample("hubspot_batch_update_response.json"))
    multi["status"] = "COMPLETE"
    multi["numErrors"] = 1
    multi["errors"] = [
        {
            "status": "error",
            "category": "OBJECT_NOT_FOUND",
            "message": "Could not get some CONTACT objects, they may be deleted or not exist.",
            "context": {"ids": ["513"]},
        }
    ]
    crm = FakeCRM(answer(207, multi))
    outcomes = hubspot(crm).write_many(
        {"512": {"property_string": "value"}, "513": {"jobtitle": "CTO"}}
    )
    assert outcomes["512"] == WriteResult(written={"property_string": "value"})
    assert isinstance(outcomes["513"], Permanent)
    assert outcomes["513"].reason.startswith("OBJECT_NOT_FOUND: Could not get some CONTACT objects")


def test_hubspot_batch_errors_shaped_like_the_documented_sample_are_unnamed() -> None:
    documented = sample("hubspot_batch_update_response.json")  # nested context is a string
    crm = FakeCRM(answer(207, {**documented, "results": []}))
    outcomes = hubspot(crm).write_many({"512": {"property_string": "value"}})
    assert isinstance(outcomes["512"], Permanent)
    assert outcomes["512"].reason == "<string>: <string>"


def test_hubspot_batch_contact_left_out_of_the_answer_is_permanent() -> None:
    crm = FakeCRM(answer(200, {"status": "COMPLETE", "results": [{"id": "512"}]}))
    outcomes = hubspot(crm).write_many({"512": {"jobtitle": "CTO"}, "600": {"jobtitle": "CEO"}})
    assert (
        isinstance(outcomes["600"], Permanent) and "left this contact out" in outcomes["600"].reason
    )


def test_hubspot_batch_drops_unknown_properties_and_resends_the_batch() -> None:
    refusal = sample("hubspot_error_400_property_doesnt_exist.json")
    crm = FakeCRM(answer(400, refusal), hubspot_batch_answer)
    changes = {"1": {"jobtitle": "CTO", "description": "x"}, "2": {"jobtitle": "CEO"}}
    outcomes = hubspot(crm).write_many(changes)
    assert outcomes == {
        "1": WriteResult(
            written={"jobtitle": "CTO"},
            dropped={"description": 'Property "description" does not exist'},
        ),
        "2": WriteResult(written={"jobtitle": "CEO"}),
    }
    assert crm.bodies()[1] == {
        "inputs": [
            {"id": "1", "properties": {"jobtitle": "CTO"}},
            {"id": "2", "properties": {"jobtitle": "CEO"}},
        ]
    }


def test_hubspot_batch_rate_limit_raises_for_the_whole_call() -> None:
    crm = FakeCRM(answer(429, sample("hubspot_error_429_ten_secondly.json"), {"Retry-After": "2"}))
    with pytest.raises(Retriable) as caught:
        hubspot(crm).write_many({"512": {"jobtitle": "CTO"}})
    assert caught.value.retry_after == 2.0


def test_hubspot_batch_refused_call_is_each_contacts_outcome() -> None:
    refusal = {
        "status": "error",
        "message": "Unable to perform update",
        "category": "VALIDATION_ERROR",
    }
    crm = FakeCRM(answer(400, refusal))
    outcomes = hubspot(crm).write_many({"1": {"jobtitle": "CTO"}, "2": {"jobtitle": "CEO"}})
    assert {key: outcome.reason for key, outcome in outcomes.items()} == {
        "1": "400 Bad Request: Unable to perform update",
        "2": "400 Bad Request: Unable to perform update",
    }


# --- Salesforce ------------------------------------------------------------------------------

CONTACT_ID = "003xx000004TmiQAAS"


def test_salesforce_read_asks_for_the_fields() -> None:
    record = {
        "attributes": {
            "type": "Contact",
            "url": f"/services/data/v62.0/sobjects/Contact/{CONTACT_ID}",
        },
        "Id": CONTACT_ID,
        "Title": "Lead Engineer",
        "Department": None,
    }
    crm = FakeCRM(answer(200, record))
    values = salesforce(crm).read(CONTACT_ID, ["Title", "department"])
    assert values == {"Title": "Lead Engineer", "department": None}
    (request,) = crm.requests
    assert_sent(
        request, "GET", f"{SF_DATA}/sobjects/Contact/{CONTACT_ID}?fields=Title%2Cdepartment"
    )
    assert request.url.params["fields"] == "Title,department"


def test_salesforce_read_leaves_out_fields_the_org_does_not_have() -> None:
    unknown = [
        {
            "message": "No such column 'LinkedIn_URL__c' on entity 'Contact'. If you are "
            "attempting to use a custom field, be sure to append the '__c' after the custom "
            "field name.",
            "errorCode": "INVALID_FIELD",
        }
    ]
    crm = FakeCRM(answer(400, unknown), answer(200, {"Id": CONTACT_ID, "Title": "CTO"}))
    values = salesforce(crm).read(CONTACT_ID, ["Title", "LinkedIn_URL__c"])
    assert values == {"Title": "CTO", "LinkedIn_URL__c": None}
    assert [request.url.params["fields"] for request in crm.requests] == [
        "Title,LinkedIn_URL__c",
        "Title",
    ]


def test_salesforce_read_many_gets_a_collection_in_the_order_asked() -> None:
    """sObject Collections GET: null for an id that is invalid or not visible; a field the
    org does not have is left out and the collection asked again."""
    other = "003xx000004TmiRAAS"
    unknown = [{"message": "No such column 'LinkedIn_URL__c' on entity 'Contact'.",
                "errorCode": "INVALID_FIELD"}]  # fmt: skip
    record = {"attributes": {"type": "Contact"}, "Id": CONTACT_ID, "Title": "CTO"}
    crm = FakeCRM(answer(400, unknown), answer(200, [record, None]))
    values = salesforce(crm).read_many([CONTACT_ID, other], ["Title", "LinkedIn_URL__c"])
    assert values[CONTACT_ID] == {"Title": "CTO", "LinkedIn_URL__c": None}
    missing = values[other]
    assert isinstance(missing, Permanent) and missing.reason.startswith("no such Contact")
    first, second = crm.requests
    assert_sent(
        first,
        "GET",
        f"{SF_DATA}/composite/sobjects/Contact?ids={CONTACT_ID}%2C{other}"
        "&fields=Id%2CTitle%2CLinkedIn_URL__c",
    )
    assert second.url.params["fields"] == "Id,Title"


def test_salesforce_read_many_asks_200_contacts_a_call() -> None:
    ids = [f"003xx{n:013d}" for n in range(450)]
    crm = FakeCRM(*(lambda r: answer(200, [None] * len(r.url.params["ids"].split(","))),) * 3)
    values = salesforce(crm).read_many(ids, ["Title"])
    sizes = [len(request.url.params["ids"].split(",")) for request in crm.requests]
    assert sizes == [200, 200, 50] and len(values) == 450


def test_salesforce_read_of_a_missing_contact_is_permanent() -> None:
    body = [{"errorCode": "NOT_FOUND", "message": "The requested resource does not exist"}]
    crm = FakeCRM(answer(404, body))
    with pytest.raises(Permanent, match="NOT_FOUND"):
        salesforce(crm).read(CONTACT_ID, ["Title"])


def test_salesforce_write_sends_the_documented_body() -> None:
    fields = sample("salesforce_contact_patch_request.json")
    crm = FakeCRM(answer(204))
    result = salesforce(crm).write(CONTACT_ID, fields)
    assert result == WriteResult(written={"Title": "Lead Engineer"})
    (request,) = crm.requests
    assert_sent(request, "PATCH", f"{SF_DATA}/sobjects/Contact/{CONTACT_ID}")
    assert crm.bodies() == [fields]


def test_salesforce_api_version_is_a_constructor_argument() -> None:
    crm = FakeCRM(answer(204))
    salesforce(crm, api_version="v60.0").write(CONTACT_ID, {"Title": "CTO"})
    assert (
        str(crm.requests[0].url)
        == f"{SALESFORCE}/services/data/v60.0/sobjects/Contact/{CONTACT_ID}"
    )


def test_salesforce_drops_a_field_it_cannot_write_and_retries_the_rest() -> None:
    refusal = [
        {
            "message": "Unable to create/update fields: Title. Please check the security "
            "settings of this field.",
            "errorCode": "INVALID_FIELD_FOR_INSERT_UPDATE",
            "fields": ["Title"],
        }
    ]
    crm = FakeCRM(answer(400, refusal), answer(204))
    result = salesforce(crm).write(CONTACT_ID, {"Title": "CTO", "Department": "IT"})
    assert result.written == {"Department": "IT"}
    assert list(result.dropped) == ["Title"]
    assert result.dropped["Title"].startswith(
        "INVALID_FIELD_FOR_INSERT_UPDATE: Unable to create/update"
    )
    assert crm.bodies() == [{"Title": "CTO", "Department": "IT"}, {"Department": "IT"}]


def test_salesforce_drops_unknown_fields_named_one_answer_at_a_time() -> None:
    def no_such(name: str) -> httpx.Response:
        message = f"No such column '{name}' on sobject of type Contact"
        return answer(400, [{"message": message, "errorCode": "INVALID_FIELD"}])

    crm = FakeCRM(no_such("A__c"), no_such("B__c"), answer(204))
    result = salesforce(crm).write(CONTACT_ID, {"A__c": 1, "B__c": 2, "Title": "CTO"})
    assert result.written == {"Title": "CTO"}
    assert set(result.dropped) == {"A__c", "B__c"}
    assert crm.bodies() == [
        {"A__c": 1, "B__c": 2, "Title": "CTO"},
        {"B__c": 2, "Title": "CTO"},
        {"Title": "CTO"},
    ]


def test_salesforce_other_field_errors_are_permanent_with_the_message() -> None:
    body = [
        {
            "message": "Email: invalid email address: x",
            "errorCode": "INVALID_EMAIL_ADDRESS",
            "fields": ["Email"],
        }
    ]
    crm = FakeCRM(answer(400, body))
    with pytest.raises(Permanent, match="INVALID_EMAIL_ADDRESS: Email: invalid email address"):
        salesforce(crm).write(CONTACT_ID, {"Email": "x"})
    assert len(crm.requests) == 1


def test_salesforce_locked_row_is_retriable() -> None:
    body = [
        {
            "message": "unable to obtain exclusive access to this record",
            "errorCode": "UNABLE_TO_LOCK_ROW",
        }
    ]
    crm = FakeCRM(answer(400, body))
    with pytest.raises(Retriable, match="UNABLE_TO_LOCK_ROW"):
        salesforce(crm).write(CONTACT_ID, {"Title": "CTO"})


def test_salesforce_request_limit_waits_an_hour() -> None:
    crm = FakeCRM(answer(403, sample("salesforce_error_response.json")))
    with pytest.raises(Retriable) as caught:
        salesforce(crm).write(CONTACT_ID, {"Title": "CTO"})
    assert caught.value.retry_after == 3600.0
    assert "REQUEST_LIMIT_EXCEEDED" in caught.value.reason


def test_salesforce_other_403_is_permanent() -> None:
    body = [
        {"message": "insufficient access rights on object id", "errorCode": "INSUFFICIENT_ACCESS"}
    ]
    crm = FakeCRM(answer(403, body))
    with pytest.raises(Permanent, match="INSUFFICIENT_ACCESS"):
        salesforce(crm).write(CONTACT_ID, {"Title": "CTO"})


def salesforce_batch_answer(request: httpx.Request) -> httpx.Response:
    records = json.loads(request.content)["records"]
    return answer(200, [{"id": record["id"], "success": True, "errors": []} for record in records])


def test_salesforce_batch_splits_450_contacts_into_200_200_50() -> None:
    changes = {f"003{n:015d}": {"Title": f"title {n}"} for n in range(450)}
    crm = FakeCRM(*[salesforce_batch_answer] * 3)
    outcomes = salesforce(crm).write_many(changes)
    assert [len(body["records"]) for body in crm.bodies()] == [200, 200, 50]
    for request in crm.requests:
        assert_sent(request, "PATCH", f"{SF_DATA}/composite/sobjects")
    assert all(body["allOrNone"] is False for body in crm.bodies())
    assert outcomes == {key: WriteResult(written=values) for key, values in changes.items()}


def test_salesforce_batch_records_have_the_documented_shape() -> None:
    documented = sample("salesforce_composite_sobjects_update_request.json")
    contact = documented["records"][1]
    crm = FakeCRM(salesforce_batch_answer)
    salesforce(crm).write_many({contact["id"]: {"Title": contact["Title"]}})
    (body,) = crm.bodies()
    assert body.keys() == documented.keys()
    assert body == {"allOrNone": documented["allOrNone"], "records": [contact]}


def test_salesforce_batch_partial_failure_drops_the_field_for_that_record() -> None:
    partly = sample("salesforce_composite_sobjects_update_response.json")
    account_id, contact_id = (result["id"] for result in partly)
    crm = FakeCRM(answer(200, partly), salesforce_batch_answer)
    changes = {
        account_id: {"Title": "VP"},
        contact_id: {"Title": "Lead Engineer", "Department": "R&D"},
    }
    outcomes = salesforce(crm).write_many(changes)
    assert outcomes[account_id] == WriteResult(written={"Title": "VP"})
    assert outcomes[contact_id].written == {"Department": "R&D"}
    assert list(outcomes[contact_id].dropped) == ["Title"]
    assert crm.bodies()[1]["records"] == [
        {"attributes": {"type": "Contact"}, "id": contact_id, "Department": "R&D"}
    ]


def test_salesforce_batch_record_refused_for_other_reasons_is_permanent() -> None:
    refused = {
        "id": CONTACT_ID,
        "success": False,
        "errors": [
            {"statusCode": "ENTITY_IS_DELETED", "message": "entity is deleted", "fields": []}
        ],
    }
    crm = FakeCRM(answer(200, [refused]))
    outcomes = salesforce(crm).write_many({CONTACT_ID: {"Title": "CTO"}})
    assert outcomes[CONTACT_ID].reason == "ENTITY_IS_DELETED: entity is deleted"


def test_salesforce_batch_locked_row_raises_for_the_whole_call() -> None:
    locked = {
        "id": CONTACT_ID,
        "success": False,
        "errors": [
            {"statusCode": "UNABLE_TO_LOCK_ROW", "message": "unable to obtain exclusive access"}
        ],
    }
    crm = FakeCRM(answer(200, [locked]))
    with pytest.raises(Retriable, match="UNABLE_TO_LOCK_ROW"):
        salesforce(crm).write_many({CONTACT_ID: {"Title": "CTO"}})


def test_salesforce_batch_request_limit_raises_for_the_whole_call() -> None:
    crm = FakeCRM(answer(403, sample("salesforce_error_response.json")))
    with pytest.raises(Retriable) as caught:
        salesforce(crm).write_many({CONTACT_ID: {"Title": "CTO"}})
    assert caught.value.retry_after == 3600.0
