"""The CRM adapters against fake CRMs (httpx.MockTransport): one contract every adapter keeps,
on every call, in each CRM's own error shapes (the answer tables are tests/helpers/crm.py's
CRMS). Each CRM's own requests and answers: tests/test_adapters_<platform>.py."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from connector.platforms import PLATFORMS as DECLARED
from connector.platforms.base import (
    Adapter,
    Permanent,
    Retriable,
    WriteResult,
    classify,
    retry_after,
)
from tests.helpers.crm import (
    CRMS,
    REDIRECT,
    TITLE,
    TOKEN,
    FakeCRM,
    Platform,
    Reply,
    answer,
    raising,
    replying,
    sent,
)
from tests.helpers.vendors import VendorTransport, broken

ADAPTERS = {name: p.adapter for name, p in DECLARED.items() if p.crm}


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
    client = httpx.Client(transport=VendorTransport(FakeCRM()))
    assert set(ADAPTERS) == {"hubspot", "salesforce", "pipedrive", "zoho", "dynamics"}
    for platform in ADAPTERS:
        assert DECLARED[platform].adapter("https://crm.example", TOKEN, client).platform == platform


def test_registry_refuses_a_platform_without_adapter() -> None:
    client = httpx.Client(transport=VendorTransport(FakeCRM()))
    with pytest.raises(Permanent, match="no CRM adapter for 'zapier'"):
        DECLARED["zapier"].adapter("https://crm.example", TOKEN, client)


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
# The CRMs whose API answers its rate limit 429. Salesforce's REST API documents no 429: its
# limit is 403 REQUEST_LIMIT_EXCEEDED (errorcodes.htm), held on every call in
# tests/test_adapters_salesforce.py and for the whole connection in test_throttle_salesforce.py.
LIMITED_BY_429 = [param for param in CONTRACT if param.values[0] != "salesforce"]


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
@pytest.mark.parametrize(("platform", "call"), LIMITED_BY_429)
def test_429_with_retry_after_waits_exactly_that(
    platform: str, call: str, headers: dict[str, str], wait: float
) -> None:
    crm = contract_crm(replying(429, CRMS[platform].rate_limited, headers))
    with pytest.raises(Retriable) as caught:
        calling(platform, call, crm)
    assert caught.value.retry_after == wait
    assert len(crm.requests) == 1


@pytest.mark.parametrize(("platform", "call"), LIMITED_BY_429)
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
    "a proxy's page": lambda request: broken(httpx.Response(200, text="<html>Bad gateway</html>")),
    "JSON of another shape": lambda request: broken(httpx.Response(200, json={"unexpected": [1]})),
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
