"""Inbound webhook signature checks over the raw body bytes: HubSpot v1/v2/v3, Standard Webhooks
v1, and the Salesforce organization allowlist. Pure: no I/O, the clock is passed in as `now`.

Verifying (each raises a `SignatureError` subclass when the request is not authentic)::

    verify_hubspot(secret, method, uri, body, headers, now, *, fallback="v2", tolerance=300)
        -> "v3" | "v2" | "v1"     the version that matched
    hubspot_legacy_version(body) -> "v1" | "v2"   the fallback HubSpot's docs give the request
    sent_uri(public_url, target, mount="") -> str   the URL a sender called, as it signed it
    verify_standard_webhooks(secret, body, headers, now, *, tolerance=300)
        -> str                    the webhook-id, the sender's idempotency key
    salesforce_organization_allowed(organization_id, allowed) -> bool
    standard_webhooks_key(secret) -> bytes    the key; UnusableSecret when there is none
    basic_password(authorization) -> str      an `Authorization: Basic` header's password

Signing (tests and benchmarks produce real signatures with these)::

    sign_hubspot_v1(secret, body) -> hex
    sign_hubspot_v2(secret, method, uri, body) -> hex
    sign_hubspot_v3(secret, method, uri, body, timestamp_ms) -> base64
    sign_standard_webhooks(secret, msg_id, timestamp, body) -> "v1,<base64>"
    hubspot_v3_uri(uri) -> str    the URI as HubSpot signs it for v3

Errors: `SignatureError(ValueError)` and its subclasses `MissingHeader`, `MalformedHeader`,
`TimestampOutsideTolerance` and `SignatureMismatch`; `UnusableSecret(ValueError)` for a secret
that can check no signature (a configuration error, not the request's).

`body` is the raw request body as bytes (Flask: `request.get_data(cache=True)` before any JSON
parsing). `headers` is any mapping; names are matched case-insensitively. `now` is an aware
`datetime` or unix seconds. `method` is the HTTP method as HubSpot sent it (upper case) and `uri`
the full URL HubSpot called: scheme, host, path and query in their original order, escapes as
sent (`sent_uri`: never a URL the server decoded, nor one rebuilt from a proxy's own address).

HubSpot: `verify_hubspot` checks v3 (`X-HubSpot-Signature-v3` + `X-HubSpot-Request-Timestamp`,
milliseconds) when either v3 header is present; otherwise it checks `X-HubSpot-Signature` with
the `fallback` version (v2 for workflow webhooks and custom actions, v1 for Webhooks API
subscriptions, as `hubspot_legacy_version` tells from the body; `None` accepts v3 only); an
`X-HubSpot-Signature-Version` naming another version is refused. v1 and v2 carry no
timestamp, so they have no replay window. For v3 the
percent-encoded characters HubSpot's doc lists (`_HUBSPOT_V3_DECODED`) are decoded in the URI
before signing, both here and in `sign_hubspot_v3`.

Standard Webhooks: the key is the base64-decoded part of the secret after `whsec_` (padded
first, as the official libraries do); the signed
content is `{webhook-id}.{webhook-timestamp}.{body}`; any one `v1,` entry of the space-separated
`webhook-signature` header may match (key rotation); other versions (`v1a`) are ignored.

As in stripe-python, the signature is checked before the timestamp window, so
`TimestampOutsideTolerance` is only raised for an authentic request (a replay or clock skew).
Both directions are bounded: a timestamp more than `tolerance` seconds old or ahead is rejected.
Messages name what was wrong, never the secret or the expected signature. A secret that cannot
be used (Standard Webhooks secret not base64) is a configuration error: `UnusableSecret`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Literal, TypeAlias

HUBSPOT_TOLERANCE = 300
STANDARD_WEBHOOKS_TOLERANCE = 300
# A copy of a delivery passes the timestamp check until the signed timestamp is TOLERANCE old,
# and that timestamp may be up to TOLERANCE ahead of our clock when the first copy arrives.
STANDARD_WEBHOOKS_REPLAY_WINDOW = timedelta(seconds=2 * STANDARD_WEBHOOKS_TOLERANCE)

HUBSPOT_SIGNATURE = "X-HubSpot-Signature"
HUBSPOT_SIGNATURE_VERSION = "X-HubSpot-Signature-Version"
HUBSPOT_SIGNATURE_V3 = "X-HubSpot-Signature-v3"
HUBSPOT_TIMESTAMP = "X-HubSpot-Request-Timestamp"
WEBHOOK_ID = "webhook-id"
WEBHOOK_TIMESTAMP = "webhook-timestamp"
WEBHOOK_SIGNATURE = "webhook-signature"

# HubSpot request-validation doc, v3: these escapes are decoded in the URI before signing;
# every other escape (%20, %23, %26, %2B, %3D, %25, ...) stays as sent.
_HUBSPOT_V3_DECODED = {
    "3A": ":",
    "2F": "/",
    "3F": "?",
    "40": "@",
    "21": "!",
    "24": "$",
    "27": "'",
    "28": "(",
    "29": ")",
    "2A": "*",
    "2C": ",",
    "3B": ";",
}
_HUBSPOT_V3_ESCAPE = re.compile("%(" + "|".join(_HUBSPOT_V3_DECODED) + ")", re.IGNORECASE)
_BASE64 = re.compile(r"[A-Za-z0-9+/]*")  # the standard alphabet, padding stripped
_SALESFORCE_ID = re.compile(r"[A-Za-z0-9]{15}(?:[A-Za-z0-9]{3})?")

Now: TypeAlias = datetime | float


class SignatureError(ValueError):
    """The request is not an authentic, fresh request from the sender it claims."""


class MissingHeader(SignatureError):
    """A header the scheme needs is absent or empty."""


class MalformedHeader(SignatureError):
    """A header is present but cannot be read (bad timestamp, no usable signature entry)."""


class TimestampOutsideTolerance(SignatureError):
    """The signature matches but the timestamp is too old or too far in the future."""


class SignatureMismatch(SignatureError):
    """No signature in the request matches the body, secret and signed request details."""


class UnusableSecret(ValueError):
    """A secret that cannot check the scheme's signatures: a configuration error."""


def sign_hubspot_v1(secret: str, body: bytes) -> str:
    """HubSpot v1: hex sha256 of client secret + body."""
    return hashlib.sha256(secret.encode() + body).hexdigest()


def sign_hubspot_v2(secret: str, method: str, uri: str, body: bytes) -> str:
    """HubSpot v2: hex sha256 of client secret + method + URI + body (URI exactly as sent)."""
    return hashlib.sha256(secret.encode() + method.encode() + uri.encode() + body).hexdigest()


def sign_hubspot_v3(
    secret: str, method: str, uri: str, body: bytes, timestamp_ms: int | str
) -> str:
    """HubSpot v3: base64 HMAC-SHA256(secret, method + decoded URI + body + timestamp)."""
    content = method.encode() + hubspot_v3_uri(uri).encode() + body + str(timestamp_ms).encode()
    return base64.b64encode(_hmac_sha256(secret.encode(), content)).decode()


def hubspot_v3_uri(uri: str) -> str:
    """The URI as HubSpot signs it for v3: the escapes of its documented table decoded."""
    return _HUBSPOT_V3_ESCAPE.sub(lambda m: _HUBSPOT_V3_DECODED[m.group(1).upper()], uri)


def sign_standard_webhooks(secret: str, msg_id: str, timestamp: int | str, body: bytes) -> str:
    """One `webhook-signature` entry: `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`."""
    content = f"{msg_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(_hmac_sha256(standard_webhooks_key(secret), content)).decode()


def verify_hubspot(
    secret: str,
    method: str,
    uri: str,
    body: bytes,
    headers: Mapping[str, str],
    now: Now,
    *,
    fallback: Literal["v1", "v2"] | None = "v2",
    tolerance: float = HUBSPOT_TOLERANCE,
) -> str:
    """Verify a HubSpot request: v3 when its headers are present, else `fallback`; return it."""
    if _header(headers, HUBSPOT_SIGNATURE_V3) or _header(headers, HUBSPOT_TIMESTAMP):
        _verify_hubspot_v3(secret, method, uri, body, headers, now, tolerance)
        return "v3"
    if fallback is None:
        raise MissingHeader(f"missing header {HUBSPOT_SIGNATURE_V3}")
    _verify_hubspot_legacy(secret, method, uri, body, headers, fallback)
    return fallback


def sent_uri(public_url: str, target: str, mount: str = "") -> str:
    """The URL a sender called, as it signed it: the public URL it was given (scheme, host and
    any path prefix a proxy removes) followed by the request target (path and query exactly
    as sent, percent-escapes kept), less `mount`, the prefix the app is mounted at (WSGI's
    SCRIPT_NAME, which a public URL names already). An absolute-form target (`http://h/p`)
    gives only its path and query: the public URL names the scheme and host."""
    if not target.startswith("/"):
        target = "/" + target.partition("://")[2].partition("/")[2]
    if mount and target.startswith(f"{mount}/"):
        target = target[len(mount) :]
    return public_url.rstrip("/") + target


def hubspot_legacy_version(body: bytes) -> Literal["v1", "v2"]:
    """The version HubSpot signs a request with besides v3: v1 for a Webhooks API
    subscription's batch (a JSON array), v2 for a workflow webhook or custom action."""
    return "v1" if body.lstrip()[:1] == b"[" else "v2"


def _verify_hubspot_legacy(
    secret: str,
    method: str,
    uri: str,
    body: bytes,
    headers: Mapping[str, str],
    version: Literal["v1", "v2"],
) -> None:
    signature = _header(headers, HUBSPOT_SIGNATURE)
    if signature is None:
        raise MissingHeader(
            f"missing header {HUBSPOT_SIGNATURE_V3} (or {HUBSPOT_SIGNATURE} for {version})"
        )
    declared = _header(headers, HUBSPOT_SIGNATURE_VERSION)
    if declared is not None and declared.lower() != version:
        raise SignatureMismatch(f"{HUBSPOT_SIGNATURE_VERSION} is not {version}, the one accepted")
    if version == "v1":
        expected = sign_hubspot_v1(secret, body)
    else:
        expected = sign_hubspot_v2(secret, method, uri, body)
    if not _equal(expected, signature):
        raise SignatureMismatch(f"{HUBSPOT_SIGNATURE} ({version}) does not match the request")


def _verify_hubspot_v3(
    secret: str,
    method: str,
    uri: str,
    body: bytes,
    headers: Mapping[str, str],
    now: Now,
    tolerance: float,
) -> None:
    signature = _require(headers, HUBSPOT_SIGNATURE_V3)
    timestamp = _require(headers, HUBSPOT_TIMESTAMP)
    timestamp_ms = _parse_timestamp(timestamp, HUBSPOT_TIMESTAMP)
    if not _equal(sign_hubspot_v3(secret, method, uri, body, timestamp), signature):
        raise SignatureMismatch(f"{HUBSPOT_SIGNATURE_V3} does not match the request")
    _check_window(timestamp_ms / 1000, now, tolerance, HUBSPOT_TIMESTAMP)


def verify_standard_webhooks(
    secret: str,
    body: bytes,
    headers: Mapping[str, str],
    now: Now,
    *,
    tolerance: float = STANDARD_WEBHOOKS_TOLERANCE,
) -> str:
    """Verify a Standard Webhooks v1 request; return its `webhook-id` (the idempotency key)."""
    msg_id = _require(headers, WEBHOOK_ID)
    timestamp = _require(headers, WEBHOOK_TIMESTAMP)
    entries = _require(headers, WEBHOOK_SIGNATURE).split()
    seconds = _parse_timestamp(timestamp, WEBHOOK_TIMESTAMP)
    candidates = [sig for version, _, sig in (e.partition(",") for e in entries) if version == "v1"]
    if not candidates:
        raise MalformedHeader(f"{WEBHOOK_SIGNATURE} holds no v1 signature")
    expected = sign_standard_webhooks(secret, msg_id, timestamp, body).removeprefix("v1,")
    if not any(_equal(expected, candidate) for candidate in candidates):
        raise SignatureMismatch(f"no v1 signature in {WEBHOOK_SIGNATURE} matches the request")
    _check_window(seconds, now, tolerance, WEBHOOK_TIMESTAMP)
    return msg_id


def salesforce_organization_allowed(organization_id: str, allowed: Iterable[str]) -> bool:
    """Whether an OrganizationId is allowed: ids compared by their case-sensitive 15-char form."""
    wanted = _salesforce_id15(organization_id)
    return wanted is not None and any(_salesforce_id15(a) == wanted for a in allowed)


def basic_password(authorization: str) -> str:
    """The password of an `Authorization: Basic` header; "" when the header is not one or
    cannot be read (not base64, not UTF-8, no colon, non-ASCII: werkzeug's parser raises on
    that last one, which made such a header a 500)."""
    scheme, _, credentials = authorization.strip().partition(" ")
    credentials = credentials.strip()
    if scheme.lower() != "basic" or not credentials.isascii():
        return ""
    try:
        decoded = base64.b64decode(credentials, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return ""
    return decoded.partition(":")[2]


def _salesforce_id15(salesforce_id: str) -> str | None:
    """The 15-character id (an 18-character id adds a case checksum), None if not an id."""
    text = salesforce_id.strip()
    return text[:15] if _SALESFORCE_ID.fullmatch(text) else None


def standard_webhooks_key(secret: str) -> bytes:
    """The signing key of a Standard Webhooks secret: the base64 after `whsec_`, decoded as the
    official libraries do (padding optional); UnusableSecret when it cannot be one key alone
    (characters outside standard base64, which other libraries read differently, or none)."""
    encoded = secret.removeprefix("whsec_").rstrip("=")
    if not _BASE64.fullmatch(encoded):
        raise UnusableSecret(
            "a Standard Webhooks secret is base64 after an optional whsec_, and this one "
            "holds characters base64 does not use"
        )
    if not encoded:
        raise UnusableSecret("a Standard Webhooks secret is base64 key bytes, and it is empty")
    if len(encoded) % 4 == 1:
        raise UnusableSecret(
            "a Standard Webhooks secret is base64 key bytes, and this one's length is not "
            "that of a whole number of bytes"
        )
    return base64.b64decode(encoded + "=" * (-len(encoded) % 4))


def _hmac_sha256(key: bytes, content: bytes) -> bytes:
    return hmac.new(key, content, hashlib.sha256).digest()


def _equal(expected: str, received: str) -> bool:
    """Constant-time comparison; encoding first keeps non-ASCII input from raising TypeError."""
    return hmac.compare_digest(expected.encode(), received.encode("utf-8", "replace"))


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """A header's value by case-insensitive name; None when absent or blank."""
    value = headers.get(name)
    if value is None:
        wanted = name.lower()
        value = next((v for k, v in headers.items() if k.lower() == wanted), None)
    if value is None or not value.strip():
        return None
    return value.strip()


def _require(headers: Mapping[str, str], name: str) -> str:
    value = _header(headers, name)
    if value is None:
        raise MissingHeader(f"missing header {name}")
    return value


def _parse_timestamp(value: str, name: str) -> int:
    if not (value.isascii() and value.isdigit() and len(value) <= 18):
        raise MalformedHeader(f"{name} is not an integer timestamp")
    return int(value)


def _check_window(timestamp: float, now: Now, tolerance: float, name: str) -> None:
    age = _unix_seconds(now) - timestamp
    if age > tolerance:
        raise TimestampOutsideTolerance(
            f"{name} is {age:.3f} s old; the tolerance is {tolerance} s"
        )
    if -age > tolerance:
        raise TimestampOutsideTolerance(
            f"{name} is {-age:.3f} s in the future; the tolerance is {tolerance} s"
        )


def _unix_seconds(now: Now) -> float:
    if isinstance(now, datetime):
        if now.tzinfo is None:
            raise ValueError("now must be a timezone-aware datetime")
        return now.timestamp()
    return float(now)
