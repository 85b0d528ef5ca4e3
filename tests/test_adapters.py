"""The CRM adapters against fake CRMs (httpx.MockTransport): one contract every adapter keeps,
on every call, in each CRM's own error shapes; then the exact requests HubSpot's and Salesforce's
send, and what they make of the answers in tests/data/platforms/outbound/."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from hubspot.automation import actions as sdk_actions
from hubspot.crm import contacts as sdk_contacts

from connector.adapters.base import (
    Adapter,
    Permanent,
    Retriable,
    WriteResult,
    classify,
    retry_after,
)
from connector.platforms import PLATFORMS as DECLARED
from connector.platforms import adapter_for
from connector.platforms.hubspot import HubSpot
from connector.platforms.salesforce import Salesforce
from tests.helpers.crm import (
    CRMS,
    HS_CONTACTS,
    HUBSPOT,
    REDIRECT,
    SALESFORCE,
    SF_DATA,
    TITLE,
    TOKEN,
    FakeCRM,
    Platform,
    Reply,
    answer,
    hubspot_answers,
    raising,
    replying,
    sample,
    sent,
)

ADAPTERS = {name: p.adapter for name, p in DECLARED.items() if p.crm}


def hubspot(crm: FakeCRM) -> HubSpot:
    return HubSpot(HUBSPOT, TOKEN, crm.client())


def salesforce(crm: FakeCRM, **options: Any) -> Salesforce:
    return Salesforce(SALESFORCE, TOKEN, crm.client(), **options)


def assert_sent(request: httpx.Request, method: str, url: str) -> None:
    assert (request.method, str(request.url)) == (method, url)
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    if request.content:
        assert request.headers["content-type"] == "application/json"


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
    assert set(ADAPTERS) == {"hubspot", "salesforce", "pipedrive", "zoho", "dynamics"}
    for platform in ADAPTERS:
        assert adapter_for(platform, "https://crm.example", TOKEN, client).platform == platform


def test_registry_refuses_a_platform_without_adapter() -> None:
    client = httpx.Client(transport=httpx.MockTransport(FakeCRM()))
    with pytest.raises(Permanent, match="no CRM adapter for 'zapier'"):
        adapter_for("zapier", "https://crm.example", TOKEN, client)


# --- contract: every adapter, every call, the same failures ----------------------------------
#
# The failure ladder of the issue, written once and run over every adapter in ADAPTERS and each
# of its four calls (a read, a batch read of two records, a write, a batch write of two). What
# differs by CRM (where it lives, its record ids, its token header, its answers in its own
# documented shapes) is one row of CRMS.

CALLS: dict[str, Callable[[Adapter, tuple[str, str], dict[str, Any]], Any]] = {
    "read": lambda adapter, ids, values: adapter.read(ids[0], list(values)),
    "read_many": lambda adapter, ids, values: adapter.read_many(list(ids), list(values)),
    "write": lambda adapter, ids, values: adapter.write(ids[0], dict(values)),
    "write_many": lambda adapter, ids, values: adapter.write_many(
        {key: dict(values) for key in ids}
    ),
}


# Every adapter's every call, as `platform-call`.
CONTRACT = [
    pytest.param(platform, call, id=f"{platform}-{call}") for platform in ADAPTERS for call in CALLS
]


def contract_crm(reply: Reply, requests: int = 4) -> FakeCRM:
    """A fake CRM giving `reply` to each of up to `requests` requests; one more fails the test,
    so an adapter asking again and again is caught."""
    return FakeCRM(*[reply] * requests)


def asked(platform: str, call: str) -> list[str]:
    """The records a call is about: both ids for a batch call, else the first."""
    ids = CRMS[platform].ids
    return list(ids) if call.endswith("_many") else [ids[0]]


def rounds(platform: str, call: str) -> int:
    """Requests a call makes when the CRM answers each at once: one, or one a record for a
    batch write to a CRM without batch update."""
    return 2 if call == "write_many" and not CRMS[platform].batch_writes else 1


def calling(platform: str, call: str, crm: FakeCRM, values: dict[str, Any] | None = None) -> Any:
    """Build the platform's adapter over `crm` and make the call (reads ask for `values`' names)."""
    spec = CRMS[platform]
    adapter = ADAPTERS[platform](spec.base_url, TOKEN, crm.client())
    return CALLS[call](adapter, spec.ids, values or {spec.known: TITLE})


def outcomes(
    platform: str, call: str, crm: FakeCRM, values: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Each asked record's outcome: what the call answered for it, or the Permanent it raised."""
    try:
        result = calling(platform, call, crm, values)
    except Permanent as failure:
        return dict.fromkeys(asked(platform, call), failure)
    return result if call.endswith("_many") else {asked(platform, call)[0]: result}


def test_contract_covers_every_adapter() -> None:
    assert set(CRMS) == set(ADAPTERS)
    assert list(CALLS) == ["read", "read_many", "write", "write_many"]


@pytest.mark.parametrize(("platform", "call"), CONTRACT)
def test_each_call_succeeds_with_the_token_in_the_platforms_header(
    platform: str, call: str
) -> None:
    spec = CRMS[platform]
    crm = contract_crm(spec.answers)
    done = outcomes(platform, call, crm)
    values = {spec.known: TITLE}
    expected = values if call.startswith("read") else WriteResult(written=values)
    assert done == dict.fromkeys(asked(platform, call), expected)
    assert len(crm.requests) == rounds(platform, call)
    header, token = spec.auth
    for request in crm.requests:
        assert str(request.url).startswith(f"{spec.base_url}/")
        assert request.headers[header] == token


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        pytest.param({"Retry-After": "17"}, 17.0, id="seconds"),
        pytest.param(
            {
                "Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT",
                "Date": "Wed, 21 Oct 2026 07:26:30 GMT",
            },
            90.0,
            id="http-date",
        ),
    ],
)
@pytest.mark.parametrize(("platform", "call"), CONTRACT)
def test_429_with_retry_after_waits_exactly_that(
    platform: str, call: str, headers: dict[str, str], wait: float
) -> None:
    crm = contract_crm(replying(429, CRMS[platform].rate_limited, headers))
    with pytest.raises(Retriable) as caught:
        calling(platform, call, crm)
    assert caught.value.retry_after == wait
    assert len(crm.requests) == 1


@pytest.mark.parametrize(("platform", "call"), CONTRACT)
def test_429_without_retry_after_is_retriable(platform: str, call: str) -> None:
    spec = CRMS[platform]
    crm = contract_crm(replying(429, spec.rate_limited))
    with pytest.raises(Retriable) as caught:
        calling(platform, call, crm)
    assert caught.value.retry_after == spec.wait
    assert caught.value.retry_after is None or caught.value.retry_after >= 0
    assert len(crm.requests) == 1


@pytest.mark.parametrize("status", [500, 502, 503])
@pytest.mark.parametrize(("platform", "call"), CONTRACT)
def test_server_errors_are_retriable(platform: str, call: str, status: int) -> None:
    body = CRMS[platform].server_error
    crm = contract_crm(replying(status, body, {"Retry-After": "30"}))
    with pytest.raises(Retriable) as caught:
        calling(platform, call, crm)
    assert caught.value.retry_after == 30.0
    assert len(crm.requests) == 1


READS = [param for param in CONTRACT if param.values[1] in ("read", "read_many")]
GARBAGE = {
    "a proxy's page": lambda request: httpx.Response(200, text="<html><body>Bad gateway</body>"),
    "JSON of another shape": lambda request: httpx.Response(200, json={"unexpected": [1, 2]}),
}


@pytest.mark.parametrize("garbage", GARBAGE.values(), ids=GARBAGE.keys())
@pytest.mark.parametrize(("platform", "call"), READS)
def test_a_garbled_read_is_retriable_not_a_blank_or_missing_record(
    platform: str, call: str, garbage: Reply
) -> None:
    """Read as empty, it would let fill-only rules write over a user's values; read as
    missing, it would bury the event. Asking again tells."""
    crm = contract_crm(garbage)
    with pytest.raises(Retriable, match="200 answer is not"):
        calling(platform, call, crm)


@pytest.mark.parametrize("error", [httpx.ReadTimeout, httpx.ConnectTimeout])
@pytest.mark.parametrize(("platform", "call"), CONTRACT)
def test_timeouts_are_retriable(
    platform: str, call: str, error: type[httpx.TransportError]
) -> None:
    crm = contract_crm(raising(error))
    with pytest.raises(Retriable, match="timed out") as caught:
        calling(platform, call, crm)
    assert caught.value.retry_after is None
    assert len(crm.requests) == 1


@pytest.mark.parametrize(
    ("error", "message"),
    [
        pytest.param(httpx.ConnectError, "[Errno 111] Connection refused", id="ConnectError"),
        pytest.param(httpx.ReadError, "[Errno 104] Connection reset by peer", id="ReadError"),
        pytest.param(
            httpx.RemoteProtocolError,
            "Server disconnected without sending a response.",
            id="RemoteProtocolError",
        ),
    ],
)
@pytest.mark.parametrize(("platform", "call"), CONTRACT)
def test_connection_failures_and_resets_are_retriable(
    platform: str, call: str, error: type[httpx.TransportError], message: str
) -> None:
    crm = contract_crm(raising(error, message))
    with pytest.raises(Retriable) as caught:
        calling(platform, call, crm)
    assert f"{error.__name__}: {message}" in caught.value.reason
    assert caught.value.retry_after is None
    assert len(crm.requests) == 1


def refusing(spec: Platform, call: str, refusal: Reply | None = None) -> Reply:
    """The CRM refusing, in its own shape, each request naming its unknown property (with
    `refusal`, else the platform's refusal of an unknown one), and answering the others."""
    if refusal is None:
        refusal = spec.refuses_read if call.startswith("read") else spec.refuses_write

    def reply(request: httpx.Request) -> httpx.Response:
        if refusal is not None and spec.unknown in sent(request):
            return refusal(request)
        return spec.answers(request)

    return reply


@pytest.mark.parametrize(("platform", "call"), CONTRACT)
def test_400_naming_an_unknown_field_drops_it_and_reports_it(platform: str, call: str) -> None:
    spec = CRMS[platform]
    crm = contract_crm(refusing(spec, call))
    done = outcomes(platform, call, crm, {spec.known: TITLE, spec.unknown: "Active"})
    if call.startswith("read"):
        expected: Any = {spec.known: TITLE, spec.unknown: None}
    else:
        expected = WriteResult(written={spec.known: TITLE}, dropped={spec.unknown: spec.dropped})
    assert done == dict.fromkeys(asked(platform, call), expected)
    if call.startswith("read") and spec.refuses_read is None:
        assert len(crm.requests) == 1
    else:  # refused once, then the rest sent again without it (a record at a time if need be)
        named = [spec.unknown in sent(request) for request in crm.requests]
        assert named == [True, False] * rounds(platform, call)
        assert all(spec.known in sent(request) for request in crm.requests)


# Every adapter's write calls, for the CRMs whose row gives their refusal of a value.
VALUE_REFUSALS = [
    param
    for param in CONTRACT
    if param.values[1].startswith("write") and CRMS[param.values[0]].refuses_value
]


@pytest.mark.parametrize(("platform", "call"), VALUE_REFUSALS)
def test_a_value_refused_drops_that_field_alone_and_reports_why(platform: str, call: str) -> None:
    """A field-level refusal of a value (not only of an unknown property) costs the record
    that field alone: the rest is written, and the CRM's reason goes with the write."""
    spec = CRMS[platform]
    crm = contract_crm(refusing(spec, call, spec.refuses_value))
    done = outcomes(platform, call, crm, {spec.known: TITLE, spec.unknown: "Active"})
    expected = WriteResult(written={spec.known: TITLE}, dropped={spec.unknown: spec.value_dropped})
    assert done == dict.fromkeys(asked(platform, call), expected)
    named = [spec.unknown in sent(request) for request in crm.requests]
    assert named == [True, False] * rounds(platform, call)


@pytest.mark.parametrize(("platform", "call"), CONTRACT)
def test_401_token_expired_is_permanent(platform: str, call: str) -> None:
    spec = CRMS[platform]
    crm = contract_crm(replying(401, spec.expired, spec.expired_headers))
    done = outcomes(platform, call, crm)
    assert all(isinstance(outcome, Permanent) for outcome in done.values())
    reasons = {key: getattr(outcome, "reason", outcome) for key, outcome in done.items()}
    assert reasons == dict.fromkeys(asked(platform, call), "token expired or revoked")
    assert len(crm.requests) == 1  # a refused token is refused for every record: asked once


@pytest.mark.parametrize("status", [301, 302, 307, 308])
@pytest.mark.parametrize(("platform", "call"), CONTRACT)
def test_redirects_are_never_followed(platform: str, call: str, status: int) -> None:
    crm = contract_crm(replying(status, None, REDIRECT))
    done = outcomes(platform, call, crm)
    assert list(done) == asked(platform, call)
    for outcome in done.values():
        assert isinstance(outcome, Permanent)
        assert outcome.reason == (
            f"{status} redirect to https://attacker.example/steal not followed: "
            "check the CRM base URL"
        )
    # Nothing went to the Location, and no record was asked twice (a CRM without batch update
    # is asked once a record: each gets the redirect, none follows it).
    host = httpx.URL(CRMS[platform].base_url).host
    assert [request.url.host for request in crm.requests] == [host] * rounds(platform, call)


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
        f"{HUBSPOT}{HS_CONTACTS}/512?properties=jobtitle%2Ccompany%2Cindustry",
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
    assert crm.requests[0].url.raw_path == f"{HS_CONTACTS}/..%2F..%2Fowners%2F1".encode()


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
    assert [request.url.path for request in crm.requests] == [f"{HS_CONTACTS}/batch/read"] * 2
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
    assert_sent(request, "PATCH", f"{HUBSPOT}{HS_CONTACTS}/512")
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


def test_hubspot_validation_errors_naming_no_property_are_permanent() -> None:
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


INVALID_INDUSTRY = (
    'INVALID_OPTION: Computer Software was not one of the allowed options: [label: "Computer '
    'Software (COMPUTER_SOFTWARE)" value: "COMPUTER_SOFTWARE" display_order: 0 hidden: false '
    'read_only: false , label: "Internet" value: "INTERNET" display_order: 1 hidden: false '
    "read_only: false ]"
)


def test_hubspot_drops_an_invalid_option_and_writes_the_rest() -> None:
    """An enumeration value the property has no option for (INVALID_OPTION, naming the
    property) refuses the whole update: the contact's other properties go again without it,
    and the reason is HubSpot's."""
    refusal = sample("hubspot_error_400_invalid_option.json")
    crm = FakeCRM(answer(400, refusal), answer(200, {"id": "512"}))
    result = hubspot(crm).write("512", {"jobtitle": "CTO", "industry": "Computer Software"})
    assert result == WriteResult(
        written={"jobtitle": "CTO"}, dropped={"industry": INVALID_INDUSTRY}
    )
    assert crm.bodies() == [
        {"properties": {"jobtitle": "CTO", "industry": "Computer Software"}},
        {"properties": {"jobtitle": "CTO"}},
    ]


def test_hubspot_reads_the_refused_properties_from_the_messages_list() -> None:
    """Answers without `errors` name the properties only in the message's JSON list (as the
    v3 APIs long did): every invalid one is dropped at once."""
    listed = [
        {"isValid": False, "message": "12 cats was not a valid number.", "error":
         "INVALID_INTEGER", "name": "numberofemployees"},
        {"isValid": False, "message": "Widgets was not one of the allowed options: [A, B]",
         "error": "INVALID_OPTION", "name": "industry"},
    ]  # fmt: skip
    refusal = {
        "status": "error",
        "message": f"Property values were not valid: {json.dumps(listed)}",
        "correlationId": "3f7e2a61-0d5c-4c41-9e4b-5b0f1d2c9a77",
        "category": "VALIDATION_ERROR",
    }
    crm = FakeCRM(answer(400, refusal), answer(200, {"id": "512"}))
    values = {"jobtitle": "CTO", "industry": "Widgets", "numberofemployees": "12 cats"}
    result = hubspot(crm).write("512", values)
    assert result == WriteResult(
        written={"jobtitle": "CTO"},
        dropped={
            "numberofemployees": "INVALID_INTEGER: 12 cats was not a valid number.",
            "industry": "INVALID_OPTION: Widgets was not one of the allowed options: [A, B]",
        },
    )
    assert len(crm.requests) == 2


def test_hubspot_batch_refused_for_one_contacts_invalid_option_is_each_contacts_outcome() -> None:
    """The refusal does not say whose value it was: dropping the property from every contact
    would lose valid values, so each contact is refused alike (the worker then writes them
    one at a time, where HubSpot names the contact)."""
    crm = FakeCRM(answer(400, sample("hubspot_error_400_invalid_option.json")))
    changes = {"1": {"industry": "INTERNET"}, "2": {"industry": "Computer Software"}}
    outcomes = hubspot(crm).write_many(changes)
    assert all(isinstance(outcome, Permanent) for outcome in outcomes.values())
    reasons = {getattr(outcome, "reason", None) for outcome in outcomes.values()}
    assert len(reasons) == 1 and "INVALID_OPTION" in str(reasons)
    assert len(crm.requests) == 1


def test_hubspot_batch_207_drops_an_invalid_option_named_for_one_contact() -> None:
    failed = {
        "status": "error",
        "category": "VALIDATION_ERROR",
        "message": "Property values were not valid",
        "context": {"ids": ["513"]},
        "errors": [
            {
                "message": "Widgets was not one of the allowed options: [A, B]",
                "code": "INVALID_OPTION",
                "context": {"propertyName": ["industry"]},
            }
        ],
    }
    written = {"id": "512", "properties": {"industry": "A"}}
    multi = {"status": "COMPLETE", "results": [written], "numErrors": 1, "errors": [failed]}
    crm = FakeCRM(answer(207, multi), hubspot_batch_answer)
    changes = {"512": {"industry": "A"}, "513": {"jobtitle": "CTO", "industry": "Widgets"}}
    outcomes = hubspot(crm).write_many(changes)
    assert outcomes == {
        "512": WriteResult(written={"industry": "A"}),
        "513": WriteResult(
            written={"jobtitle": "CTO"},
            dropped={
                "industry": "INVALID_OPTION: Widgets was not one of the allowed options: [A, B]"
            },
        ),
    }
    assert crm.bodies()[1] == {"inputs": [{"id": "513", "properties": {"jobtitle": "CTO"}}]}


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
        assert_sent(request, "POST", f"{HUBSPOT}{HS_CONTACTS}/batch/update")
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


def test_hubspot_calls_the_date_versioned_paths() -> None:
    """HubSpot ends /crm/v3 and /automation/v4 in 2027; its date-versioned paths replace them
    with the same request and response shapes."""
    crm = FakeCRM(*[hubspot_answers] * 4, answer(204))
    adapter = hubspot(crm)
    adapter.read("512", ["jobtitle"])
    adapter.read_many(["512", "513"], ["jobtitle"])
    adapter.write("512", {"jobtitle": "CTO"})
    adapter.write_many({"512": {"jobtitle": "CTO"}, "513": {"jobtitle": "CEO"}})
    adapter.complete_action("ap-102670506-56776413549-7-0", {"outputFields": {}})
    assert [(request.method, request.url.path) for request in crm.requests] == [
        ("GET", "/crm/objects/2026-03/contacts/512"),
        ("POST", "/crm/objects/2026-03/contacts/batch/read"),
        ("PATCH", "/crm/objects/2026-03/contacts/512"),
        ("POST", "/crm/objects/2026-03/contacts/batch/update"),
        ("POST", "/automation/actions/callbacks/2026-03/ap-102670506-56776413549-7-0/complete"),
    ]


def sdk_model(api: Any, body: bytes, model: str) -> tuple[Any, Any]:
    """`body` loaded into the HubSpot SDK's generated `model` with client-side validation on
    (a field the specification marks required and the body lacks raises ValueError), and the
    SDK's client, which turns the model back into JSON."""
    configuration = api.Configuration()
    configuration.client_side_validation = True
    client = api.ApiClient(configuration)
    return client.deserialize(SimpleNamespace(data=body), model), client


def test_hubspot_batch_read_body_is_the_sdks_model_with_every_required_field() -> None:
    """The specification marks `propertiesWithHistory` required; the SDK refuses a body
    without it."""
    crm = FakeCRM(hubspot_answers)
    hubspot(crm).read_many(["512", "513"], ["jobtitle", "company"])
    (request,) = crm.requests
    model, client = sdk_model(sdk_contacts, request.content, "BatchReadInputSimplePublicObjectId")
    assert isinstance(model, sdk_contacts.BatchReadInputSimplePublicObjectId)
    assert model.properties_with_history == []
    assert client.sanitize_for_serialization(model) == json.loads(request.content)


def test_hubspot_update_bodies_are_the_sdks_models() -> None:
    crm = FakeCRM(hubspot_answers, hubspot_batch_answer)
    adapter = hubspot(crm)
    adapter.write("512", {"jobtitle": "CTO", "numberofemployees": 17})
    adapter.write_many({"512": {"jobtitle": "CTO"}, "513": {"hobbies": ["chess", "go"]}})
    single, batch = crm.requests
    model, client = sdk_model(sdk_contacts, single.content, "SimplePublicObjectInput")
    assert model.properties == {"jobtitle": "CTO", "numberofemployees": "17"}
    assert client.sanitize_for_serialization(model) == json.loads(single.content)
    model, client = sdk_model(sdk_contacts, batch.content, "BatchInputSimplePublicObjectBatchInput")
    assert [item.id for item in model.inputs] == ["512", "513"]
    assert client.sanitize_for_serialization(model) == json.loads(batch.content)


# CallbackCompletionRequest's required fields in HubSpot's date-versioned specification
# (PublicApiSpecs/Automation/Actions V4/Rollouts/148901/2026-03 and 2026-09/actionsV4.json).
CALLBACK_REQUIRED = {"outputFields", "typedOutputs"}


def test_hubspot_completes_an_action_as_the_specification_and_the_sdk_say() -> None:
    """Output fields as strings (the specification's and the SDK's `dict[str, str]`, and the
    documentation's examples), a value left out where there is none, and `typedOutputs`,
    which the date-versioned specification marks required, empty."""
    crm = FakeCRM(answer(204))
    fields = {"hs_execution_state": "SUCCESS", "contactdata_employee_count": 1200,
              "contactdata_verified": True, "contactdata_phone": None}  # fmt: skip
    hubspot(crm).complete_action("ap-1", {"outputFields": fields})
    (request,) = crm.requests
    body = json.loads(request.content)
    assert set(body) >= CALLBACK_REQUIRED and body["typedOutputs"] == {}
    model, _ = sdk_model(sdk_actions, request.content, "CallbackCompletionRequest")
    assert model.output_fields == {
        "hs_execution_state": "SUCCESS",
        "contactdata_employee_count": "1200",
        "contactdata_verified": "true",
    }


def test_the_sdk_check_catches_a_missing_required_field() -> None:
    """The check above is not vacuous: the SDK refuses a batch read without
    propertiesWithHistory, as the adapter sent it before."""
    without = json.dumps({"properties": ["jobtitle"], "inputs": [{"id": "512"}]}).encode()
    with pytest.raises(ValueError, match="properties_with_history"):
        sdk_model(sdk_contacts, without, "BatchReadInputSimplePublicObjectId")


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


# Salesforce's refusals of a value, as they were answered in public reports (the field names
# are the Contact's where the report was about a Lead or a custom object).
COUNTRY_REFUSED = {  # verbb/formie#963 (a Lead's Country), with Contact's label and field
    "message": "There's a problem with this country, even though it may appear correct. Please "
    "select a country/territory from the list of valid countries.: Mailing Country",
    "errorCode": "FIELD_INTEGRITY_EXCEPTION",
    "fields": ["MailingCountry"],
}
RANGE_REFUSED = {  # the shape of SalesforceFoundation/NPSP#5409's "bad value" on our field
    "message": "Employee Range: bad value for restricted picklist field: 5001 to 10,000",
    "errorCode": "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST",
    "fields": ["ContactData_Employee_Range__c"],
}
EMAIL_REFUSED = {
    "message": "Email: invalid email address: x",
    "errorCode": "INVALID_EMAIL_ADDRESS",
    "fields": ["Email"],
}
STATE_REFUSED = {  # SalesforceFoundation/NPSP#2432 (Billing), for the Mailing address
    "message": "The existing country/territory doesn't recognize the state value for field: "
    "Mailing State/Province Code",
    "errorCode": "FIELD_INTEGRITY_EXCEPTION",
    "fields": ["MailingStateCode"],
}


@pytest.mark.parametrize(
    ("error", "refused"),
    [
        pytest.param(COUNTRY_REFUSED, "MailingCountry", id="country picklist"),
        pytest.param(RANGE_REFUSED, "ContactData_Employee_Range__c", id="restricted picklist"),
        pytest.param(EMAIL_REFUSED, "Email", id="invalid e-mail"),
    ],
)
def test_salesforce_drops_a_value_it_refuses_and_writes_the_rest(
    error: dict[str, Any], refused: str
) -> None:
    """A refused value costs that field alone: the rest of the Contact is written, and the
    reason, Salesforce's own, goes with the write (into the delivery's note)."""
    fields = {"Title": "CTO", "MailingCity": "Seoul", refused: "x"}
    crm = FakeCRM(answer(400, [error]), answer(204))
    result = salesforce(crm).write(CONTACT_ID, fields)
    rest = {"Title": "CTO", "MailingCity": "Seoul"}
    assert result == WriteResult(
        written=rest, dropped={refused: f"{error['errorCode']}: {error['message']}"}
    )
    assert crm.bodies() == [fields, rest]


def test_salesforce_a_state_refused_for_the_country_we_send_drops_that_country() -> None:
    """State and country are checked together: a refusal naming the state's code, which we did
    not send, is the country we sent (the Contact's state belongs to another country)."""
    crm = FakeCRM(answer(400, [STATE_REFUSED]), answer(204))
    result = salesforce(crm).write(CONTACT_ID, {"MailingCountry": "Canada", "Title": "CTO"})
    assert result.written == {"Title": "CTO"}
    assert result.dropped == {
        "MailingCountry": "FIELD_INTEGRITY_EXCEPTION (MailingStateCode): The existing "
        "country/territory doesn't recognize the state value for field: Mailing State/Province Code"
    }
    assert crm.bodies()[1] == {"Title": "CTO"}


def test_salesforce_a_refusal_naming_the_code_of_a_state_sent_as_text_drops_the_text() -> None:
    crm = FakeCRM(answer(400, [STATE_REFUSED]), answer(204))
    sent = {"MailingState": "ON", "MailingCountry": "Canada", "Title": "CTO"}
    result = salesforce(crm).write(CONTACT_ID, sent)
    assert result.written == {"MailingCountry": "Canada", "Title": "CTO"}
    assert list(result.dropped) == ["MailingState"]


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(
            {
                "message": "Required fields are missing: [LastName]",
                "errorCode": "REQUIRED_FIELD_MISSING",
                "fields": ["LastName"],
            },
            id="a field not sent",
        ),
        pytest.param(
            {
                "message": "Contacts need an account.",
                "errorCode": "FIELD_CUSTOM_VALIDATION_EXCEPTION",
                "fields": [],
            },
            id="no field",
        ),
    ],
)
def test_salesforce_a_refusal_naming_no_field_sent_is_permanent_with_the_message(
    error: dict[str, Any],
) -> None:
    crm = FakeCRM(answer(400, [error]))
    with pytest.raises(Permanent) as caught:
        salesforce(crm).write(CONTACT_ID, {"Title": "CTO"})
    assert caught.value.reason == f"400 Bad Request: {error['errorCode']}: {error['message']}"
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


def refusing_per_record(error: dict[str, Any]) -> Reply:
    """sObject Collections' answer refusing, record by record, each record that sends a field
    `error` names (SaveResult errors carry `statusCode`), and saving the others."""
    named = error["fields"][0]

    def reply(request: httpx.Request) -> httpx.Response:
        results = []
        for record in json.loads(request.content)["records"]:
            refused = named in record
            saved = {"statusCode": error["errorCode"], "message": error["message"]}
            errors = [{**saved, "fields": error["fields"]}] if refused else []
            results.append({"id": record["id"], "success": not refused, "errors": errors})
        return answer(200, results)

    return reply


def test_salesforce_batch_drops_a_refused_value_and_writes_that_record_again() -> None:
    other = "003xx000004TmiRAAS"
    crm = FakeCRM(refusing_per_record(COUNTRY_REFUSED), refusing_per_record(COUNTRY_REFUSED))
    changes = {
        CONTACT_ID: {"Title": "CTO", "MailingCountry": "South Korea"},
        other: {"Title": "VP", "Department": "R&D"},
    }
    outcomes = salesforce(crm).write_many(changes)
    reason = f"FIELD_INTEGRITY_EXCEPTION: {COUNTRY_REFUSED['message']}"
    assert outcomes == {
        CONTACT_ID: WriteResult(written={"Title": "CTO"}, dropped={"MailingCountry": reason}),
        other: WriteResult(written={"Title": "VP", "Department": "R&D"}),
    }
    first, again = crm.bodies()
    assert [record["id"] for record in first["records"]] == [CONTACT_ID, other]
    assert again["records"] == [
        {"attributes": {"type": "Contact"}, "id": CONTACT_ID, "Title": "CTO"}
    ]


def test_salesforce_batch_bodies_hold_what_the_specification_requires() -> None:
    """ "Update Records Using sObject Collections": `allOrNone` (ours false, so one record's
    refusal is its own), and for each record `attributes.type` and `id`; at most 200 records.
    Held for every call, the sending again of refused records included."""
    changes = {f"003xx{n:013d}": {"Title": f"t{n}", "MailingCountry": "x"} for n in range(201)}
    crm = FakeCRM(*[refusing_per_record(COUNTRY_REFUSED)] * 4)
    outcomes = salesforce(crm).write_many(changes)
    assert all(outcome.dropped.keys() == {"MailingCountry"} for outcome in outcomes.values())
    bodies = crm.bodies()
    assert [len(body["records"]) for body in bodies] == [200, 200, 1, 1]
    for body in bodies:
        assert set(body) == {"allOrNone", "records"} and body["allOrNone"] is False
        for record in body["records"]:
            assert record["attributes"] == {"type": "Contact"}
            assert isinstance(record["id"], str) and record["id"] in changes
            assert set(record) - {"attributes", "id"} <= set(changes[record["id"]])


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
