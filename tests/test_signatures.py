"""Signature checks (connector/platforms/: base, hubspot, salesforce; receiver.sent_uri):
published vectors, tampering, replay window, rotation, ids."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import random
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from standardwebhooks import Webhook
from werkzeug.datastructures import Headers

from connector.platforms import hubspot
from connector.platforms.base import (
    MalformedHeader,
    MissingHeader,
    Now,
    SignatureError,
    SignatureMismatch,
    TimestampOutsideTolerance,
    UnusableSecret,
    basic_password,
    sign_standard_webhooks,
    verify_standard_webhooks,
)
from connector.platforms.salesforce import organization_allowed
from connector.receiver import sent_uri
from tests.helpers.constants import PLATFORMS

HUBSPOT_VECTORS = json.loads((PLATFORMS / "hubspot_signature_test_vectors.json").read_text())
STANDARD_VECTOR = json.loads((PLATFORMS / "standard_webhooks_test_vector.json").read_text())

NOW = 1_750_000_000  # unix seconds: the frozen clock of every test that does not set its own
URI = "https://connector.example.com/webhooks/hubspot?portalId=62515&kind=contact"
MSG_ID = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"
BODY = (
    b'[{"eventId":1,"subscriptionId":12345,"portalId":62515,"occurredAt":1564113600000,'
    b'"subscriptionType":"contact.creation","attemptNumber":0,"objectId":123,'
    b'"changeSource":"CRM","changeFlag":"NEW","appId":54321,"name":"Yll\xc3\xa4"}]'
)

SCHEMES = ["hubspot_v1", "hubspot_v2", "hubspot_v3", "standard_webhooks"]
TIMED = ["hubspot_v3", "standard_webhooks"]
SECRETS = {
    "hubspot_v1": "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy",
    "hubspot_v2": "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy",
    "hubspot_v3": "yyyyyyyy-yyyy-yyyy-yyyy-yyyyyyyyyyyy",
    "standard_webhooks": "whsec_" + base64.b64encode(b"the current signing key, 32 b..").decode(),
}
OTHER_SECRETS = {
    "hubspot_v1": "zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz",
    "hubspot_v2": "zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz",
    "hubspot_v3": "zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz",
    "standard_webhooks": "whsec_" + base64.b64encode(b"the previous signing key, 32 b..").decode(),
}
SIGNATURE_HEADER = {
    "hubspot_v1": "X-HubSpot-Signature",
    "hubspot_v2": "X-HubSpot-Signature",
    "hubspot_v3": "X-HubSpot-Signature-v3",
    "standard_webhooks": "webhook-signature",
}
TIMESTAMP_HEADER = {
    "hubspot_v3": "X-HubSpot-Request-Timestamp",
    "standard_webhooks": "webhook-timestamp",
}


def sign(scheme: str, body: bytes, *, secret: str | None = None, age: int = 0) -> dict[str, str]:
    """The headers a sender of `scheme` sends with `body`, signed `age` seconds before NOW."""
    secret = secret or SECRETS[scheme]
    if scheme == "standard_webhooks":
        ts = str(NOW - age)
        signature = sign_standard_webhooks(secret, MSG_ID, ts, body)
        return {"webhook-id": MSG_ID, "webhook-timestamp": ts, "webhook-signature": signature}
    if scheme == "hubspot_v3":
        ts = str((NOW - age) * 1000)
        signature = hubspot.sign_v3(secret, "POST", URI, body, ts)
        return {"X-HubSpot-Signature-v3": signature, "X-HubSpot-Request-Timestamp": ts}
    if scheme == "hubspot_v2":
        signature = hubspot.sign_v2(secret, "POST", URI, body)
        return {"X-HubSpot-Signature": signature, "X-HubSpot-Signature-Version": "v2"}
    signature = hubspot.sign_v1(secret, body)
    return {"X-HubSpot-Signature": signature, "X-HubSpot-Signature-Version": "v1"}


def verify(
    scheme: str, body: bytes, headers: dict[str, str], *, now: Now = NOW, secret: str | None = None
) -> str:
    """Verify as the receiver of `scheme` does."""
    secret = secret or SECRETS[scheme]
    if scheme == "standard_webhooks":
        return verify_standard_webhooks(secret, body, headers, now)
    fallback = "v1" if scheme == "hubspot_v1" else "v2"
    return hubspot.verify_signature(secret, "POST", URI, body, headers, now, fallback=fallback)


def mutate(body: bytes, rng: random.Random) -> tuple[str, bytes]:
    """Flip, insert or delete one byte at a random place; the result always differs."""
    data = bytearray(body)
    kind = rng.choice(["flip", "insert", "delete"])
    if kind == "flip":
        data[rng.randrange(len(data))] ^= rng.randrange(1, 256)
    elif kind == "insert":
        data.insert(rng.randrange(len(data) + 1), rng.randrange(256))
    else:
        del data[rng.randrange(len(data))]
    return kind, bytes(data)


# Published vectors


@pytest.mark.parametrize("vector", HUBSPOT_VECTORS["vectors"], ids=lambda v: v["name"])
def test_hubspot_published_vector_is_signed_and_verified(vector: dict[str, str]) -> None:
    secret, version, body = vector["client_secret"], vector["version"], vector["body"].encode()
    method, uri = vector.get("method", "POST"), vector.get("uri", "")
    if version == "v3":
        signature = hubspot.sign_v3(secret, method, uri, body, vector["timestamp"])
        headers = {
            "X-HubSpot-Signature-v3": vector["expected"],
            "X-HubSpot-Request-Timestamp": vector["timestamp"],
        }
        now: Now = int(vector["timestamp"]) / 1000  # frozen at the signing instant
    else:
        if version == "v1":
            signature = hubspot.sign_v1(secret, body)
        else:
            signature = hubspot.sign_v2(secret, method, uri, body)
        headers = {
            "X-HubSpot-Signature": vector["expected"],
            "X-HubSpot-Signature-Version": version,
        }
        now = NOW
    fallback = "v1" if version == "v1" else "v2"

    assert signature == vector["expected"]
    assert (
        hubspot.verify_signature(secret, method, uri, body, headers, now, fallback=fallback)
        == version
    )


def test_hubspot_published_v3_vector_is_rejected_as_a_replay_today() -> None:
    vector = next(v for v in HUBSPOT_VECTORS["vectors"] if v["version"] == "v3")
    headers = {
        "X-HubSpot-Signature-v3": vector["expected"],
        "X-HubSpot-Request-Timestamp": vector["timestamp"],
    }
    with pytest.raises(TimestampOutsideTolerance, match="old; the tolerance is 300 s"):
        hubspot.verify_signature(
            vector["client_secret"], "POST", vector["uri"], vector["body"].encode(), headers, NOW
        )


def test_standard_webhooks_published_vector_is_signed_and_verified() -> None:
    secret, headers = STANDARD_VECTOR["secret"], STANDARD_VECTOR["headers"]
    body = STANDARD_VECTOR["raw_body"].encode()
    signed_at = int(headers["webhook-timestamp"])

    signature = sign_standard_webhooks(secret, headers["webhook-id"], signed_at, body)

    assert signature == headers["webhook-signature"]
    assert verify_standard_webhooks(secret, body, headers, signed_at) == headers["webhook-id"]
    # The Go tests accept the secret without its prefix too.
    bare = secret.removeprefix("whsec_")
    assert verify_standard_webhooks(bare, body, headers, signed_at) == headers["webhook-id"]


def test_standard_webhooks_published_invalid_signature_is_rejected() -> None:
    headers = dict(STANDARD_VECTOR["headers"])
    headers["webhook-signature"] = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
    now = int(headers["webhook-timestamp"])
    with pytest.raises(SignatureMismatch, match="no v1 signature in webhook-signature matches"):
        verify_standard_webhooks(
            STANDARD_VECTOR["secret"], STANDARD_VECTOR["raw_body"].encode(), headers, now
        )


# Tampering, wrong secrets


@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_one_byte_mutation_of_the_body_is_rejected(scheme: str) -> None:
    headers = sign(scheme, BODY)
    assert verify(scheme, BODY, headers)  # the untouched body passes
    rng = random.Random(f"mutations/{scheme}")
    kinds: Counter[str] = Counter()
    for _ in range(1000):
        kind, mutated = mutate(BODY, rng)
        kinds[kind] += 1
        assert mutated != BODY
        with pytest.raises(SignatureMismatch):
            verify(scheme, mutated, headers)
    assert set(kinds) == {"flip", "insert", "delete"}


@pytest.mark.parametrize("scheme", SCHEMES)
def test_wrong_secret_is_rejected_without_revealing_secret_or_signature(scheme: str) -> None:
    headers = sign(scheme, BODY, secret=OTHER_SECRETS[scheme])
    with pytest.raises(SignatureMismatch) as caught:
        verify(scheme, BODY, headers)

    message = str(caught.value)
    expected = sign(scheme, BODY)[SIGNATURE_HEADER[scheme]].removeprefix("v1,")
    assert SIGNATURE_HEADER[scheme] in message
    assert expected not in message
    assert SECRETS[scheme].removeprefix("whsec_") not in message


@pytest.mark.parametrize("scheme", ["hubspot_v2", "hubspot_v3"])
@pytest.mark.parametrize(
    ("method", "uri"),
    [
        ("GET", URI),
        ("POST", URI.replace("https://", "http://")),
        ("POST", "https://connector.example.com/webhooks/hubspot?kind=contact&portalId=62515"),
        ("POST", "https://attacker.example.com/webhooks/hubspot?portalId=62515&kind=contact"),
    ],
)
def test_hubspot_signature_binds_method_and_uri(scheme: str, method: str, uri: str) -> None:
    headers = sign(scheme, BODY)
    with pytest.raises(SignatureMismatch):
        hubspot.verify_signature(SECRETS[scheme], method, uri, BODY, headers, NOW)


def test_tampered_timestamp_is_rejected_as_a_mismatch() -> None:
    headers = sign("standard_webhooks", BODY, age=200)
    headers["webhook-timestamp"] = str(NOW)
    with pytest.raises(SignatureMismatch):
        verify("standard_webhooks", BODY, headers)


@pytest.mark.parametrize("scheme", ["hubspot_v3", "standard_webhooks"])
def test_non_ascii_signature_is_a_mismatch_not_a_crash(scheme: str) -> None:
    headers = sign(scheme, BODY)
    prefix = "v1," if scheme == "standard_webhooks" else ""
    headers[SIGNATURE_HEADER[scheme]] = prefix + "é" * 43 + "\udcff"  # a lone surrogate too
    with pytest.raises(SignatureMismatch):
        verify(scheme, BODY, headers)


# Replay window


@pytest.mark.parametrize("scheme", TIMED)
@pytest.mark.parametrize(("age", "accepted"), [(0, True), (299, True), (300, True), (301, False)])
def test_old_timestamps_are_rejected_past_300_seconds(
    scheme: str, age: int, accepted: bool
) -> None:
    headers = sign(scheme, BODY, age=age)
    if accepted:
        assert verify(scheme, BODY, headers)
    else:
        with pytest.raises(TimestampOutsideTolerance, match=f"{TIMESTAMP_HEADER[scheme]} is 301"):
            verify(scheme, BODY, headers)


@pytest.mark.parametrize("scheme", TIMED)
@pytest.mark.parametrize(("ahead", "accepted"), [(299, True), (301, False), (86_400, False)])
def test_future_timestamps_are_rejected_past_300_seconds(
    scheme: str, ahead: int, accepted: bool
) -> None:
    headers = sign(scheme, BODY, age=-ahead)
    if accepted:
        assert verify(scheme, BODY, headers)
    else:
        with pytest.raises(TimestampOutsideTolerance, match="in the future"):
            verify(scheme, BODY, headers)


def test_hubspot_window_is_exact_to_the_millisecond() -> None:
    secret = SECRETS["hubspot_v3"]
    for timestamp_ms, accepted in [(NOW * 1000 - 300_000, True), (NOW * 1000 - 300_001, False)]:
        headers = {
            "X-HubSpot-Signature-v3": hubspot.sign_v3(secret, "POST", URI, BODY, timestamp_ms),
            "X-HubSpot-Request-Timestamp": str(timestamp_ms),
        }
        if accepted:
            assert hubspot.verify_signature(secret, "POST", URI, BODY, headers, NOW) == "v3"
        else:
            with pytest.raises(TimestampOutsideTolerance, match=r"is 300\.001 s old"):
                hubspot.verify_signature(secret, "POST", URI, BODY, headers, NOW)


def test_standard_webhooks_window_uses_a_fractional_clock() -> None:
    headers = sign("standard_webhooks", BODY, age=300)
    assert verify("standard_webhooks", BODY, headers, now=NOW)
    with pytest.raises(TimestampOutsideTolerance, match=r"is 300\.500 s old"):
        verify("standard_webhooks", BODY, headers, now=NOW + 0.5)


@pytest.mark.parametrize("scheme", TIMED)
def test_now_may_be_an_aware_datetime(scheme: str) -> None:
    headers = sign(scheme, BODY, age=299)
    now = datetime.fromtimestamp(NOW, UTC)
    assert verify(scheme, BODY, headers, now=now)
    with pytest.raises(TimestampOutsideTolerance):
        verify(scheme, BODY, headers, now=now + timedelta(seconds=2))
    with pytest.raises(ValueError, match="timezone-aware"):
        verify(scheme, BODY, headers, now=now.replace(tzinfo=None))


@pytest.mark.parametrize("scheme", TIMED)
def test_signature_is_checked_before_the_window(scheme: str) -> None:
    headers = sign(scheme, BODY, secret=OTHER_SECRETS[scheme], age=3600)
    with pytest.raises(SignatureMismatch):
        verify(scheme, BODY, headers)


# Standard Webhooks: rotation and versions


def test_rotation_passes_when_the_second_signature_is_valid() -> None:
    headers = sign("standard_webhooks", BODY)
    old = sign("standard_webhooks", BODY, secret=OTHER_SECRETS["standard_webhooks"])
    headers["webhook-signature"] = f"{old['webhook-signature']} {headers['webhook-signature']}"
    assert verify("standard_webhooks", BODY, headers) == MSG_ID


def test_rotation_fails_when_no_signature_is_valid() -> None:
    old = sign("standard_webhooks", BODY, secret=OTHER_SECRETS["standard_webhooks"])
    headers = sign("standard_webhooks", BODY, secret="whsec_" + base64.b64encode(b"x").decode())
    headers["webhook-signature"] = f"{old['webhook-signature']} {headers['webhook-signature']}"
    with pytest.raises(SignatureMismatch):
        verify("standard_webhooks", BODY, headers)


def test_other_signature_versions_are_ignored() -> None:
    headers = sign("standard_webhooks", BODY)
    valid = headers["webhook-signature"].removeprefix("v1,")
    # The v1a entry is the ed25519 example of the spec's example headers.
    v1a = (
        "v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+"
        "m7TBAg=="
    )
    headers["webhook-signature"] = f"v1,{'A' * 43}= v2,{valid} {v1a} v1,{valid}"
    assert verify("standard_webhooks", BODY, headers) == MSG_ID

    headers["webhook-signature"] = f"v2,{valid} {v1a}"
    with pytest.raises(MalformedHeader, match="holds no v1 signature"):
        verify("standard_webhooks", BODY, headers)


def test_standard_webhooks_secret_that_is_not_base64_is_a_configuration_error() -> None:
    with pytest.raises(UnusableSecret, match="characters base64 does not use") as caught:
        verify_standard_webhooks("whsec_not*base64!", BODY, sign("standard_webhooks", BODY), NOW)
    assert not isinstance(caught.value, SignatureError)


@pytest.mark.parametrize("padding", ["=", ""], ids=["padded", "unpadded"])
def test_standard_webhooks_keys_are_the_official_librarys(padding: str) -> None:
    """The official library pads the secret before decoding it; so do we, and what each side
    signs the other verifies."""
    secret = "whsec_" + base64.b64encode(b"twenty-six bytes of a key!").decode().rstrip("=")
    secret += padding
    official = Webhook(secret)
    now = datetime.now(UTC)  # the library verifies against the wall clock
    stamp = str(int(now.timestamp()))
    ours = sign_standard_webhooks(secret, MSG_ID, stamp, BODY)
    assert ours == official.sign(MSG_ID, now, BODY.decode())
    headers = {"webhook-id": MSG_ID, "webhook-timestamp": stamp, "webhook-signature": ours}
    official.verify(BODY, headers, json_parse=False)
    assert verify_standard_webhooks(secret, BODY, headers, now) == MSG_ID


# Missing and malformed headers


LEGACY_MISSING = "missing header X-HubSpot-Signature-v3 (or X-HubSpot-Signature for {})"
REQUIRED_HEADERS = [
    ("hubspot_v1", "X-HubSpot-Signature", LEGACY_MISSING.format("v1")),
    ("hubspot_v2", "X-HubSpot-Signature", LEGACY_MISSING.format("v2")),
    ("hubspot_v3", "X-HubSpot-Signature-v3", "missing header X-HubSpot-Signature-v3"),
    ("hubspot_v3", "X-HubSpot-Request-Timestamp", "missing header X-HubSpot-Request-Timestamp"),
    ("standard_webhooks", "webhook-id", "missing header webhook-id"),
    ("standard_webhooks", "webhook-timestamp", "missing header webhook-timestamp"),
    ("standard_webhooks", "webhook-signature", "missing header webhook-signature"),
]


@pytest.mark.parametrize(("scheme", "header", "message"), REQUIRED_HEADERS)
@pytest.mark.parametrize("blank", [False, True])
def test_missing_header_is_named(scheme: str, header: str, message: str, blank: bool) -> None:
    headers = sign(scheme, BODY)
    if blank:
        headers[header] = "  "
    else:
        del headers[header]
    with pytest.raises(MissingHeader) as caught:
        verify(scheme, BODY, headers)
    assert str(caught.value) == message


def test_hubspot_without_any_signature_names_both_headers() -> None:
    with pytest.raises(MissingHeader) as caught:
        hubspot.verify_signature(SECRETS["hubspot_v2"], "POST", URI, BODY, {}, NOW)
    assert str(caught.value) == LEGACY_MISSING.format("v2")


def test_hubspot_v3_only_refuses_a_v2_request() -> None:
    headers = sign("hubspot_v2", BODY)
    with pytest.raises(MissingHeader) as caught:
        hubspot.verify_signature(
            SECRETS["hubspot_v2"], "POST", URI, BODY, headers, NOW, fallback=None
        )
    assert str(caught.value) == "missing header X-HubSpot-Signature-v3"


@pytest.mark.parametrize("scheme", TIMED)
@pytest.mark.parametrize("value", ["soon", "-1", "1.75e9", "1750000000.5", "１７５０", "9" * 40])
def test_malformed_timestamp_is_named(scheme: str, value: str) -> None:
    headers = sign(scheme, BODY)
    headers[TIMESTAMP_HEADER[scheme]] = value
    with pytest.raises(MalformedHeader, match=f"{TIMESTAMP_HEADER[scheme]} is not an integer"):
        verify(scheme, BODY, headers)


@pytest.mark.parametrize("scheme", SCHEMES)
def test_header_names_are_case_insensitive(scheme: str) -> None:
    signed = sign(scheme, BODY)
    upper = {name.upper(): value for name, value in signed.items()}
    lower = {name.lower(): value for name, value in signed.items()}
    assert verify(scheme, BODY, upper) == verify(scheme, BODY, lower)
    assert verify(scheme, BODY, Headers(upper))


# HubSpot specifics


def test_hubspot_v3_wins_over_an_invalid_v2_signature() -> None:
    headers = sign("hubspot_v3", BODY) | {"X-HubSpot-Signature": "0" * 64}
    assert hubspot.verify_signature(SECRETS["hubspot_v3"], "POST", URI, BODY, headers, NOW) == "v3"


def test_hubspot_invalid_v3_does_not_fall_back_to_a_valid_v2() -> None:
    headers = sign("hubspot_v2", BODY) | {
        "X-HubSpot-Signature-v3": "A" * 43 + "=",
        "X-HubSpot-Request-Timestamp": str(NOW * 1000),
    }
    with pytest.raises(SignatureMismatch, match="X-HubSpot-Signature-v3"):
        hubspot.verify_signature(SECRETS["hubspot_v2"], "POST", URI, BODY, headers, NOW)


def test_hubspot_declared_version_must_be_the_one_accepted() -> None:
    headers = sign("hubspot_v1", BODY)
    with pytest.raises(SignatureMismatch, match="X-HubSpot-Signature-Version is not v2"):
        hubspot.verify_signature(SECRETS["hubspot_v1"], "POST", URI, BODY, headers, NOW)


def test_hubspot_v3_uri_decodes_only_the_documented_escapes() -> None:
    sent = "https://x.example/h?a=%3A%2f%3F%40%21%24%27%28%29%2A%2C%3B&b=%20%23%26%3D%2B%25%253A"
    signed = "https://x.example/h?a=:/?@!$'()*,;&b=%20%23%26%3D%2B%25%253A"
    assert hubspot.v3_uri(sent) == signed


def test_hubspot_v3_is_verified_over_the_decoded_uri() -> None:
    sent = "https://connector.example.com/hook?email=ada%40example.com&tags=a%2Cb&q=a%20b"
    decoded = "https://connector.example.com/hook?email=ada@example.com&tags=a,b&q=a%20b"
    secret, timestamp = SECRETS["hubspot_v3"], str(NOW * 1000)
    content = b"POST" + decoded.encode() + BODY + timestamp.encode()
    digest = hmac.new(secret.encode(), content, hashlib.sha256).digest()
    headers = {
        "X-HubSpot-Signature-v3": base64.b64encode(digest).decode(),
        "X-HubSpot-Request-Timestamp": timestamp,
    }
    assert hubspot.verify_signature(secret, "POST", sent, BODY, headers, NOW) == "v3"


def test_hubspot_v2_uri_must_match_exactly() -> None:
    sent = "https://connector.example.com/hook?email=ada%40example.com"
    signature = hubspot.sign_v2(SECRETS["hubspot_v2"], "POST", hubspot.v3_uri(sent), BODY)
    headers = {"X-HubSpot-Signature": signature, "X-HubSpot-Signature-Version": "v2"}
    with pytest.raises(SignatureMismatch):
        hubspot.verify_signature(SECRETS["hubspot_v2"], "POST", sent, BODY, headers, NOW)


@pytest.mark.parametrize(
    ("public_url", "target", "mount", "called"),
    [
        ("https://hooks.example", "/hooks/1/events?q=a%7Eb", "", "https://hooks.example/hooks/1/events?q=a%7Eb"),
        ("https://hooks.example/", "/hooks/1/events", "", "https://hooks.example/hooks/1/events"),
        ("https://x.example/cd", "/hooks/1/events?n=Jos%C3%A9", "", "https://x.example/cd/hooks/1/events?n=Jos%C3%A9"),
        ("https://x.example/cd", "/cd/hooks/1/events?a=%3A", "/cd", "https://x.example/cd/hooks/1/events?a=%3A"),
        ("https://hooks.example", "http://10.0.0.7:8080/hooks/1/events?a=%40", "", "https://hooks.example/hooks/1/events?a=%40"),
    ],
)  # fmt: skip
def test_the_uri_checked_is_the_public_url_with_the_target_as_sent(
    public_url: str, target: str, mount: str, called: str
) -> None:
    """Path and query as the sender wrote them (a proxy's scheme and host never count; a
    proxy that removes the public URL's prefix, or an app mounted at it, alike)."""
    assert sent_uri(public_url, target, mount) == called


# Salesforce OrganizationId allowlist

ORG_15 = "00D000000000062"
ORG_18 = "00D000000000062EAA"  # the 18-character form: a 3-character case checksum appended
MIXED_15 = "00D5g000004SaLt"
MIXED_18 = "00D5g000004SaLtEAK"


@pytest.mark.parametrize(
    ("organization_id", "allowed", "expected"),
    [
        (ORG_15, [ORG_15], True),
        (ORG_18, [ORG_15], True),
        (ORG_15, [ORG_18], True),
        (ORG_18, [ORG_18], True),
        (MIXED_18, ["00Dxx0000001gPL", MIXED_15], True),
        (f" {MIXED_15}\n", [MIXED_18], True),
        ("00D5g000004SaLT", [MIXED_15], False),  # ids are case-sensitive
        ("00D5g000004SALTEA0", [MIXED_18], False),
        ("00D5g000004SaLu", [MIXED_15], False),
        (ORG_18, [], False),
        ("", [""], False),
        ("00D000000000062E", [ORG_15], False),  # 16 characters: not an id
        ("00D000000000062EAAX", [ORG_15], False),  # 19 characters: not an id
        ("00D00000000006-", ["00D00000000006-"], False),
        ("00Do0000000xxxxxxx", ["00Do0000000xxxx"], True),  # the fixture's redacted id
    ],
)
def test_organization_allowed(organization_id: str, allowed: list[str], expected: bool) -> None:
    assert organization_allowed(organization_id, allowed) is expected


@pytest.mark.parametrize(
    ("header", "password"),
    [
        ("Basic " + base64.b64encode(b"contactdata:s3cret:x").decode(), "s3cret:x"),
        ("basic   " + base64.b64encode("u:\u00e9".encode()).decode() + " ", "\u00e9"),
        ("Basic \u00e9\u00e9", ""),  # werkzeug raised ValueError on this
        ("Basic " + base64.b64encode(b"u:\xff").decode(), ""),  # not UTF-8
        ("Basic " + base64.b64encode(b"no colon").decode(), ""),
        ("Basic !!!", ""),
        ("Basic ", ""),
        ("Bearer " + base64.b64encode(b"u:p").decode(), ""),
        ("", ""),
    ],
)
def test_basic_password_reads_a_basic_header_or_gives_nothing(header: str, password: str) -> None:
    assert basic_password(header) == password


@pytest.mark.parametrize(
    ("body", "version"),
    [(BODY, "v1"), (b" \n[]", "v1"), (b'{"vid": 1}', "v2"), (b"", "v2"), (b"not json", "v2")],
)
def test_hubspot_legacy_version_is_v1_for_a_webhooks_api_batch_only(
    body: bytes, version: str
) -> None:
    assert hubspot.legacy_version(body) == version
