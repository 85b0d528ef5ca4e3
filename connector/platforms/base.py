"""What every platform builds on, in one place:

- What a platform declares (`Platform`: how its requests are verified, read into events and
  answered, how an echo of our own write is recognized, its OAuth endpoints, its CRM adapter,
  its connection rules), the plain data the receiver hands it (`Delivery`) and gets back
  (`Verified`, `Answer`), and the verifications several platforms share (`UrlSecret`,
  `BasicPassword`, `BearerToken`, `StandardWebhooks`).
- Events: what a verified request holds (`Event`: the platform's event id to deduplicate on,
  the CRM record's id when the payload names it, the record's fields as the mapping reads
  them), `Unparseable` for bytes that are not what the platform sends.
- Signatures: the checks every scheme is made of, over the raw body bytes and pure (the clock
  is passed in as `now`): errors (`SignatureError` and its subclasses, `UnusableSecret` for a
  secret that can check nothing), HMAC and constant-time comparison, case-insensitive
  headers, timestamp windows bounded both ways; and the Standard Webhooks scheme (Zapier,
  Make, n8n): the key is the base64 after `whsec_` (padded first, as the official libraries
  do), the signed content `{webhook-id}.{webhook-timestamp}.{body}`, any one `v1,` entry of
  the header may match (key rotation). As in stripe-python, the signature is checked before
  the timestamp, so `TimestampOutsideTolerance` is only raised for an authentic request.
  Messages name what was wrong, never the secret or the expected signature.
- Calling its CRM: what every adapter offers (`Adapter`), is built from and sends with
  (`CrmClient`, `send`), what a write did (`WriteResult`), and how failures are classified
  once for all: 429, 5xx, timeouts and resets are `Retriable` (a rate limit `throttled`:
  the worker then holds the whole connection until the time the CRM states); redirects and
  other 4xx are `Permanent`, with the CRM's own message; a 2xx whose body is not what the
  CRM documents is `garbled` (Retriable). Refused properties are reported with `write_dropping`.

The receiver, the worker, OAuth and the connection code ask a platform; none of them tests a
platform's name. A platform module subclasses `Platform` and registers an instance in
connector/platforms/__init__.py (a test may register its own at test time).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import re
import secrets
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeAlias
from urllib.parse import urlsplit

import httpx
from sqlite_utils import Database

from server import UnreadableJson, decode_json, metrics

if TYPE_CHECKING:
    from connector.oauth import Credentials

Row = dict[str, Any]
Schema = dict[str, Any]
log = logging.getLogger(__name__)


class Refused(Exception):
    """A request that is not the platform's own; the message says why, in full."""


@dataclass(frozen=True)
class Delivery:
    """A request as its platform sent it: the method, the URL as the sender called it (never
    one the server decoded), headers (names case-insensitive), query arguments, the raw body
    and the time it arrived."""

    method: str
    uri: str
    headers: Mapping[str, str]
    args: Mapping[str, str]
    body: bytes
    now: datetime


@dataclass(frozen=True)
class Verified:
    """A verified request: its delivery id when the platform names one (answered once), and
    a write to make now that it verified (HubSpot notes the signature versions it saw)."""

    delivery_id: str | None = None
    remember: Callable[[Database], None] | None = None


@dataclass(frozen=True)
class Answer:
    """How a request is acknowledged: the body and its content type."""

    body: bytes
    content_type: str = "application/json"


def json_answer(data: Any) -> Answer:
    return Answer(json.dumps(data).encode())


def same(sent: str, secret: str, refusal: str) -> None:
    """Refuse (with `refusal`) unless `sent` is the secret, compared in constant time."""
    if not (sent and hmac.compare_digest(sent.encode(), secret.encode())):
        raise Refused(refusal)


@dataclass(frozen=True, kw_only=True)
class Platform:
    """A platform's declaration. `signing` names how its requests prove they are its own (the
    OpenAPI document's security schemes, `signing_schemes`); `adapter_class` its CRM
    adapter, when records are written back to it (`crm`: it then sends events);
    `issues_secret` whether it makes the secret it signs with; `omit_empty` whether enrich
    answers leave out empty fields (they would blank the platform's own)."""

    name: str
    signing: str
    title: str = ""  # its name as people write it ("Zoho CRM"), where it differs from `name`
    issues_secret: bool = False
    url_param: str = "key"
    omit_empty: bool = False
    # The enrich URL of an automation platform (connector/platforms/automation.py): whether it
    # also reads the vendor API's own input names (contactEmail, conEmail, ...) beside the
    # mapping's keys; how many records one request may carry as a JSON array (0: only one
    # JSON object); and whether the answer's body names its transaction, credits and record.
    vendor_names: bool = False
    batch_limit: int = 0
    meta_in_body: bool = False
    refreshable: bool = False  # its API tokens expire: an OAuth client may renew them
    # Its app has webhook subscriptions of its own, which connecting sets with the app's
    # developer credentials when the operator registered them (HubSpot: `subscribe_app`).
    app_webhooks: bool = False
    # The kinds of CRM record it enriches, by our names: contacts, leads, companies.
    objects: tuple[str, ...] = ("contacts",)
    # What the CRM calls the saved selections of records a backfill can take (`Adapter.views`)
    view_noun: str = "list"
    conditions: bool = False  # whether a backfill may take a picked condition (`Condition`)
    # The contact property naming the company record it belongs to (Salesforce's AccountId):
    # an enriched contact's company fields then go to that record too (`linked_company`).
    company_link: str = ""
    # Its CRM adapter's class (`CrmClient`'s arguments); None when nothing is written back.
    adapter_class: Callable[..., Adapter] | None = None
    # Its OAuth app's defaults (the operator registers one app a platform, `oauth-app set`):
    # where an admin consents (browser GET), where the code is exchanged for tokens, and the
    # scope asked for, in the platform's own spelling; "" for a platform installed otherwise.
    oauth_authorize_url: str = ""
    oauth_token_url: str = ""
    oauth_scope: str = ""
    # Installing with the app (connector/install.py): whether its authorize URL takes a PKCE
    # S256 challenge, whether the client authenticates at the token endpoint with HTTP Basic
    # (else in the form body), and whether the admin names the CRM's environment and tenant
    # before consent (Dynamics 365: nothing in the token answer names them).
    oauth_pkce: bool = False
    oauth_basic: bool = False
    oauth_environment: bool = False
    oauth_consent_params: tuple[tuple[str, str], ...] = ()  # more the authorize URL needs

    @property
    def crm(self) -> bool:
        """Whether records are written back to it: it has a CRM adapter."""
        return self.adapter_class is not None

    @property
    def mapping_file(self) -> str:
        """The file name of its default mapping (of contacts), in mappings/."""
        return f"{self.name}.yaml"

    def mapping_file_for(self, kind: str) -> str:
        """The file name of the default mapping of its `kind` of record, in mappings/:
        `<platform>.yaml` for contacts, `<platform>.<kind>.yaml` for the others."""
        return self.mapping_file if kind == "contacts" else f"{self.name}.{kind}.yaml"

    # Receiving -------------------------------------------------------------------------

    def verify(self, link: Row, secret: str, delivery: Delivery) -> Verified:
        """Check the request came from the platform; raises Refused or SignatureError."""
        raise NotImplementedError(f"{self.name} declares no verification")

    def events(self, body: bytes) -> list[Event]:
        """The events in a verified request body; Unparseable when it is not what the
        platform sends."""
        raise ValueError(f"{self.name} sends no events")

    def admit(self, link: Row, found: list[Event]) -> None:
        """Refuse events the connection does not take from their sender (Refused)."""

    def acknowledgement(self, found: list[Event]) -> Answer:
        """The answer to a request whose events were stored."""
        return json_answer({"accepted": len(found)})

    def delivery_id(self, payload: dict[str, Any]) -> str | None:
        """The id naming one delivery in its JSON body, for copies to be answered once."""
        return None

    def kind_of(self, payload: dict[str, Any]) -> str:
        """The kind of record an enrich request's JSON body is about (its mapping is that
        kind's): contacts, unless the platform's bodies say otherwise."""
        return "contacts"

    # Automation actions that wait for their answer (HubSpot's custom workflow actions) ----

    def is_action(self, payload: Any) -> bool:
        """Whether a request (or stored event) is an action waiting for its answer."""
        return False

    def action_succeeded(self, fields: dict[str, Any]) -> Any:
        raise NotImplementedError(f"{self.name} has no actions")

    def action_failed(self, message: str) -> Any:
        raise NotImplementedError(f"{self.name} has no actions")

    def action_blocked(self) -> Any:
        raise NotImplementedError(f"{self.name} has no actions")

    def complete_action(self, adapter: Adapter, request: Row, answer: Any) -> str:
        """Complete a stored action through the platform's API: the state it ended in."""
        raise Permanent(f"{self.name} has no custom workflow actions")

    # Writing back ------------------------------------------------------------------------

    def adapter(
        self,
        base_url: str,
        token: str,
        client: httpx.Client,
        auth: httpx.Auth | None = None,
        kind: str = "contacts",
    ) -> Adapter:
        """Its CRM adapter for records of `kind` (one of `objects`) over `client`, with
        `token` (or the token `auth` renews); Permanent for a platform nothing is written
        back to, or a kind it does not have."""
        if self.adapter_class is None:
            raise Permanent(f"no CRM adapter for {self.name!r}")
        if kind not in self.objects:
            raise Permanent(f"{self.name} has no {kind} the connector enriches")
        return self.adapter_class(base_url, token, client, auth, kind)

    def linked_company(self, contact: Row) -> str:
        """The id of the company record a contact's current values link it to; "" if none."""
        value = contact.get(self.company_link) if self.company_link else None
        return str(value) if isinstance(value, str | int) and value != "" else ""

    def echo(self, change: Row, ours: Row) -> str:
        """The properties a change event reports when their new values are the ones we wrote
        last (our own write coming back); "" otherwise."""
        return ""

    # OAuth -------------------------------------------------------------------------------

    def token_url(self, base_url: str) -> str:
        """Where it hands out tokens for the API at `base_url`; "" when that cannot be known."""
        return ""

    def scope(self, base_url: str, refresh_token: str) -> str:
        """The scope a client_credentials grant asks for, when it needs one."""
        return ""

    def consent_scope(self, scope: str, base_url: str) -> str:
        """The scope an admin consents to for the API at `base_url`: the app's `scope`."""
        return scope

    def consent_endpoints(self, authorize_url: str, token_url: str, tenant: str) -> tuple[str, str]:
        """The app's authorize and token URLs for the admin's `tenant` (where it has one)."""
        return authorize_url, token_url

    def callback_token_url(self, token_url: str, args: Mapping[str, str]) -> str:
        """Where the code the callback's `args` carry is exchanged (and the grant renewed):
        the app's token URL, unless the platform's callback names another (ValueError when
        it names one that is not the platform's)."""
        return token_url

    def installed_base_url(self, answer: Row, token_url: str, environment: str) -> str:
        """The CRM's API base URL for a grant: from the token `answer`, the token URL or the
        `environment` the admin gave; ValueError when none names it."""
        raise ValueError(f"{self.name} is not installed with OAuth")

    def installed_account(self, answer: Row) -> str:
        """The CRM account the token `answer` is for, where the platform names one."""
        return ""

    def revocation(self, grant: Credentials, token: str, hint: str) -> httpx.Request | None:
        """The request, as the platform documents it, that revokes `token` (`hint`:
        refresh_token or access_token) of the OAuth `grant` when its connection is removed;
        None where there is nothing the connector can revoke (the default)."""
        return None

    def revoke_grant(self, client: httpx.Client, grant: Credentials, access_token: str) -> bool:
        """Revoke a connection's OAuth grant (its refresh token, else `access_token`): whether
        a revocation was asked for; Permanent, or Retriable (unreachable, busy), in the
        endpoint's words when it was not done."""
        token = grant.refresh_token or access_token
        hint = "refresh_token" if grant.refresh_token else "access_token"
        request = self.revocation(grant, token, hint) if token else None
        if request is None:
            return False
        try:
            response = client.send(request)
        except httpx.HTTPError as error:
            raise Retriable(f"{type(error).__name__}: {error}") from error
        said = body if isinstance(body := json_body(response), dict) else {}
        if response.status_code == 429 or response.status_code >= 500:
            raise Retriable(f"{response.status_code} {error_message(response)}")
        if response.is_error or said.get("error"):  # Zoho refuses in a 200 too
            words = said.get("error_description") or said.get("error") or error_message(response)
            raise Permanent(f"{response.status_code} {words}")
        return True

    # Connections -------------------------------------------------------------------------

    def check_secret(self, secret: str) -> None:
        """Refuse (ValueError, saying why) a secret its requests could not be checked with."""

    def new_secret(self) -> str:
        return secrets.token_urlsafe(24)

    def check_base_url(self, base_url: str, local: bool) -> None:
        """Refuse (ValueError) a CRM base URL the platform does not serve its API at."""

    def allowed_senders(self, ids: tuple[str, ...]) -> list[str]:
        """The sender accounts a connection takes events from (ValueError for bad ones)."""
        if any(i.strip() for i in ids):
            raise ValueError("--salesforce-org-id is for salesforce connections only")
        return []

    def events_url(self, base: str, secret: str | None) -> str:
        """The URL its events are posted to (the secret in it where the platform puts it)."""
        return f"{base}/events"

    def signing_schemes(self) -> dict[str, Schema]:
        """Its requests' OpenAPI security schemes (none: its proof is in the body)."""
        return {}

    # Notification channels that expire (Zoho's) ------------------------------------------

    subscribes: bool = False  # connector/subscriptions.py keeps its channel alive

    def channel_id(self, link: Row) -> str:
        """The connection's notification channel."""
        raise NotImplementedError(f"{self.name} keeps no channel")

    def subscribe(
        self, adapter: Adapter, link: Row, notify_url: str, token: str, until: datetime,
        lapsed: bool,
    ) -> datetime:  # fmt: skip
        """Enable or renew the connection's channel until `until`: the expiry confirmed."""
        raise NotImplementedError(f"{self.name} keeps no channel")

    # Webhooks: registered in the CRM by the connector, or installed by the admin ---------

    registers_webhooks: bool = False  # the connector registers the events URL in the CRM
    # The admin's installation steps, one sentence each, templates of {enrich} and {events}
    # (the connection's URLs), {events_base} (the events URL without its query), {hint}
    # (the secret's last characters), and for a sender of fields (not a CRM) {keys} (the
    # mapping's keys) and {example} (a body to paste); and what to do by hand when a
    # teardown failed.
    install: tuple[str, ...] = ()
    removal: tuple[str, ...] = ()

    def set_up_webhooks(self, adapter: Adapter, events_url: str, secret: str) -> list[str]:
        """Register the events URL in the CRM, with `secret` where the platform sends it: the
        ids of what was created ([] where its API cannot: the admin follows `install_steps`);
        Permanent or Retriable with the CRM's words, leaving nothing half made."""
        return []

    def tear_down_webhooks(self, adapter: Adapter, ids: Sequence[str]) -> None:
        """Delete what `set_up_webhooks` created (one already gone counts as deleted)."""

    def install_steps(
        self, urls: Mapping[str, str | None], secret_hint: str, sent: Mapping[str, str] = {}
    ) -> list[str]:
        """The steps an admin takes in the platform to install the connection, with its real
        URLs (`connections.urls`), the secret named by its last characters only, and what a
        sender of fields sends (`sent`: keys and example)."""
        return _filled(self.install, urls, secret_hint, sent)

    def subscribe_app(
        self, client: httpx.Client, base_url: str, app_id: str, key: str, public_url: str,
        read: Mapping[str, Any],
    ) -> list[str]:  # fmt: skip
        """Set the app's own webhook subscriptions for the mappings `read` (by kind), with its
        developer `key`: those made, described. None for a platform without (`app_webhooks`)."""
        return []

    def removal_steps(self, urls: Mapping[str, str | None], secret_hint: str) -> list[str]:
        """What an admin does by hand when the connector could not delete its webhooks."""
        return _filled(self.removal, urls, secret_hint)


SECRET_PLACEHOLDER = "<secret>"  # in a URL shown after the secret's first display


def _filled(
    templates: Sequence[str],
    urls: Mapping[str, str | None],
    secret_hint: str,
    sent: Mapping[str, str] = {},
) -> list[str]:
    """Steps from templates, with the connection's URLs, its secret's hint and what a sender
    sends; a URL shown with the secret's placeholder gets the step saying what goes there."""
    events = urls.get("eventsUrl") or ""
    values = {"enrich": urls.get("enrichUrl") or "", "events": events,
              "events_base": events.partition("?")[0], "hint": secret_hint,
              "keys": "", "example": "", **sent}  # fmt: skip
    steps = [template.format(**values) for template in templates]
    if any(SECRET_PLACEHOLDER in step for step in steps):
        steps.append(
            f"Replace {SECRET_PLACEHOLDER} in the URL with the connection's secret (shown once, "
            f"when it was made or rotated; it ends in {secret_hint})."
        )
    return steps


@dataclass(frozen=True, kw_only=True)
class UrlSecret(Platform):
    """The secret in the URL's `url_param` (Salesforce, Dataverse's WebhookKey `code`)."""

    signing: str = "url-secret"

    def verify(self, link: Row, secret: str, delivery: Delivery) -> Verified:
        sent = delivery.args.get(self.url_param, "")
        same(sent, secret, f"The {self.url_param} in the URL is not this connection's.")
        return Verified()

    def events_url(self, base: str, secret: str | None) -> str:
        return f"{base}/events?{self.url_param}={secret or SECRET_PLACEHOLDER}"

    def signing_schemes(self) -> dict[str, Schema]:
        scheme = {"type": "apiKey", "in": "query", "name": self.url_param}
        return {f"urlSecret_{self.url_param}": scheme}


@dataclass(frozen=True, kw_only=True)
class BasicPassword(Platform):
    """The secret as the HTTP Basic password (Pipedrive)."""

    signing: str = "basic"

    def verify(self, link: Row, secret: str, delivery: Delivery) -> Verified:
        sent = basic_password(delivery.headers.get("Authorization", ""))
        same(sent, secret, "Send the connection's secret as the Basic auth password.")
        return Verified()

    def signing_schemes(self) -> dict[str, Schema]:
        return {"connectionBasic": {"type": "http", "scheme": "basic"}}


BEARER = {"connectionBearer": {"type": "http", "scheme": "bearer"}}


def bearer(delivery: Delivery) -> str:
    """The token of an `Authorization: Bearer <token>` header (the scheme in any case, as RFC
    9110 §11.1 has it), or ""."""
    scheme, _, token = delivery.headers.get("Authorization", "").strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


@dataclass(frozen=True, kw_only=True)
class BearerToken(Platform):
    """The secret as a bearer token (Marketo's webhooks)."""

    signing: str = "bearer"

    def verify(self, link: Row, secret: str, delivery: Delivery) -> Verified:
        refusal = "Send the connection's secret as 'Authorization: Bearer <secret>'."
        same(bearer(delivery), secret, refusal)
        return Verified()

    def signing_schemes(self) -> dict[str, Schema]:
        return dict(BEARER)


@dataclass(frozen=True, kw_only=True)
class StandardWebhooks(Platform):
    """Standard Webhooks signatures (Zapier, Make, n8n), or, from senders that cannot sign
    (Zapier's Webhooks step), the secret itself as a bearer token. A signed delivery's
    webhook-id names it: its copies are answered once."""

    signing: str = "standard-webhooks"

    def verify(self, link: Row, secret: str, delivery: Delivery) -> Verified:
        if WEBHOOK_SIGNATURE in delivery.headers:
            return Verified(self._signed(secret, delivery))
        same(
            bearer(delivery),
            secret,
            "Sign the request (Standard Webhooks) or send the connection's secret as "
            "'Authorization: Bearer <secret>'.",
        )
        return Verified()

    def _signed(self, secret: str, delivery: Delivery) -> str:
        try:
            return verify_standard_webhooks(secret, delivery.body, delivery.headers, delivery.now)
        except UnusableSecret:  # saved before `connection add` checked secrets
            log.warning("connection secret unusable for Standard Webhooks")
            raise Refused(
                "This connection's secret cannot check Standard Webhooks signatures (it is "
                "not base64): send it as 'Authorization: Bearer <secret>', or add the "
                "connection again with the whsec_ secret the sender signs with."
            ) from None

    def check_secret(self, secret: str) -> None:
        try:
            standard_webhooks_key(secret)
        except UnusableSecret as error:
            raise ValueError(
                f"secret: {error}. Leave --secret out to have one made, or give the whsec_ "
                "secret the sender signs with"
            ) from None

    def new_secret(self) -> str:
        return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()

    def signing_schemes(self) -> dict[str, Schema]:
        description = f"With {WEBHOOK_ID} and {WEBHOOK_TIMESTAMP}."
        scheme = {"type": "apiKey", "in": "header", "name": WEBHOOK_SIGNATURE}
        return {"standardWebhooks": {**scheme, "description": description}, **BEARER}


# --- events ------------------------------------------------------------------------------


class Unparseable(ValueError):
    """A body that is not what the platform sends; the message says what was wrong."""


@dataclass(frozen=True)
class Event:
    """One change of one CRM record, as the platform reported it."""

    key: str
    record_id: str
    payload: dict[str, Any]
    thin: bool = False  # only ids: the record must be read from the CRM first
    source: dict[str, str] = field(default_factory=dict)  # e.g. Salesforce's OrganizationId
    kind: str = "contacts"  # which of the platform's `objects` the record is


def digest(body: bytes) -> str:
    """A body's SHA-256, in hex: the key of an event its platform gives no id."""
    return hashlib.sha256(body).hexdigest()


def json_document(body: bytes) -> Any:
    """A JSON body; Unparseable when it is not JSON."""
    try:
        return decode_json(body)
    except UnreadableJson as error:
        raise Unparseable(f"the body is not JSON: {error}") from None


def json_object(body: bytes) -> dict[str, Any]:
    """A JSON object body; Unparseable when it is not JSON or not an object."""
    document = json_document(body)
    if not isinstance(document, dict):
        raise Unparseable("the body must be a JSON object")
    return document


# --- signatures --------------------------------------------------------------------------


STANDARD_WEBHOOKS_TOLERANCE = 300
WEBHOOK_ID = "webhook-id"
WEBHOOK_TIMESTAMP = "webhook-timestamp"
WEBHOOK_SIGNATURE = "webhook-signature"
_BASE64 = re.compile(r"[A-Za-z0-9+/]*")  # the standard alphabet, padding stripped
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


def sign_standard_webhooks(secret: str, msg_id: str, timestamp: int | str, body: bytes) -> str:
    """One `webhook-signature` entry: `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`."""
    content = f"{msg_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac_sha256(standard_webhooks_key(secret), content)).decode()


def verify_standard_webhooks(
    secret: str,
    body: bytes,
    headers: Mapping[str, str],
    now: Now,
    *,
    tolerance: float = STANDARD_WEBHOOKS_TOLERANCE,
) -> str:
    """Verify a Standard Webhooks v1 request; return its `webhook-id` (the idempotency key)."""
    msg_id = require(headers, WEBHOOK_ID)
    timestamp = require(headers, WEBHOOK_TIMESTAMP)
    entries = require(headers, WEBHOOK_SIGNATURE).split()
    seconds = parse_timestamp(timestamp, WEBHOOK_TIMESTAMP)
    candidates = [sig for version, _, sig in (e.partition(",") for e in entries) if version == "v1"]
    if not candidates:
        raise MalformedHeader(f"{WEBHOOK_SIGNATURE} holds no v1 signature")
    expected = sign_standard_webhooks(secret, msg_id, timestamp, body).removeprefix("v1,")
    if not any(equal(expected, candidate) for candidate in candidates):
        raise SignatureMismatch(f"no v1 signature in {WEBHOOK_SIGNATURE} matches the request")
    check_window(seconds, now, tolerance, WEBHOOK_TIMESTAMP)
    return msg_id


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


def hmac_sha256(key: bytes, content: bytes) -> bytes:
    return hmac.new(key, content, hashlib.sha256).digest()


def equal(expected: str, received: str) -> bool:
    """Constant-time comparison; encoding first keeps non-ASCII input from raising TypeError."""
    return hmac.compare_digest(expected.encode(), received.encode("utf-8", "replace"))


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header's value by case-insensitive name; None when absent or blank."""
    value = headers.get(name)
    if value is None:
        wanted = name.lower()
        value = next((v for k, v in headers.items() if k.lower() == wanted), None)
    if value is None or not value.strip():
        return None
    return value.strip()


def require(headers: Mapping[str, str], name: str) -> str:
    value = header(headers, name)
    if value is None:
        raise MissingHeader(f"missing header {name}")
    return value


def parse_timestamp(value: str, name: str) -> int:
    if not (value.isascii() and value.isdigit() and len(value) <= 18):
        raise MalformedHeader(f"{name} is not an integer timestamp")
    return int(value)


def check_window(timestamp: float, now: Now, tolerance: float, name: str) -> None:
    age = unix_seconds(now) - timestamp
    if age > tolerance:
        raise TimestampOutsideTolerance(
            f"{name} is {age:.3f} s old; the tolerance is {tolerance} s"
        )
    if -age > tolerance:
        raise TimestampOutsideTolerance(
            f"{name} is {-age:.3f} s in the future; the tolerance is {tolerance} s"
        )


def unix_seconds(now: Now) -> float:
    if isinstance(now, datetime):
        if now.tzinfo is None:
            raise ValueError("now must be a timezone-aware datetime")
        return now.timestamp()
    return float(now)


# --- calling the CRM ---------------------------------------------------------------------


MESSAGE_LIMIT = 300  # characters of a CRM's error text kept in a reason
TOKEN_REFUSED = "token expired or revoked"  # every adapter's reason for a 401
DELAY_SECONDS = re.compile(r"\d+(\.\d+)?")  # Retry-After in seconds (RFC 9110: digits)


@dataclass(frozen=True)
class WriteResult:
    """What one record's write did: the properties the CRM accepted, with the values sent,
    and those it refused (property -> why, e.g. it does not exist)."""

    written: dict[str, Any]
    dropped: dict[str, str] = field(default_factory=dict)


class Retriable(Exception):
    """A failure worth trying again, after `retry_after` seconds when the CRM said how long.
    `throttled`: the CRM's rate limit refused it, so the whole connection waits that long
    (every call would be refused alike) and the wait costs the event no attempt."""

    def __init__(
        self, reason: str, retry_after: float | None = None, *, throttled: bool = False
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.throttled = throttled


class Permanent(Exception):
    """A failure that trying again will not change: the reason says what to fix."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Listed(NamedTuple):
    """One page of a CRM's records of a kind: each record's values by its id, the cursor of
    the next page (None after the last), and how many records remain from this page on when
    the CRM says (None when it does not)."""

    records: dict[str, dict[str, Any]]
    cursor: str | None
    remaining: int | None = None


class View(NamedTuple):
    """A CRM list or saved view of records a backfill can take: its id, its name as the CRM
    shows it, and how many records it holds when the CRM says (None when not)."""

    id: str
    name: str
    size: int | None = None


class Condition(NamedTuple):
    """A backfill's condition the admin builds by picking, never by typing a query: a field
    (one the CRM's field API lists), an operator of OPERATORS and a value as typed. As a
    backfill's source it is written `where:` and JSON (`source`, `of_source`)."""

    field: str
    operator: str
    value: str

    @property
    def source(self) -> str:
        return CONDITION_PREFIX + json.dumps(list(self), separators=(",", ":"))

    @property
    def label(self) -> str:
        return f"{self.field} {OPERATORS.get(self.operator, self.operator)} {self.value}"

    @classmethod
    def of_source(cls, source: str) -> Condition | None:
        """The condition a source names, or None when it names a list or view."""
        if not source.startswith(CONDITION_PREFIX):
            return None
        try:
            parts = json.loads(source.removeprefix(CONDITION_PREFIX))
        except ValueError:
            parts = None
        texts = isinstance(parts, list) and all(isinstance(part, str) for part in parts)
        if not (texts and len(parts) == 3):
            raise Permanent(f"not a condition: {source[:80]!r}")
        return cls(*parts)


CONDITION_PREFIX = "where:"
# A condition's operators, with the words the page shows for them.
OPERATORS = {"=": "is", "!=": "is not", "<": "is before or less than",
             "<=": "is at most", ">": "is after or more than", ">=": "is at least",
             "LIKE": "contains"}  # fmt: skip


FIELD_TYPES = (
    "text",
    "number",
    "boolean",
    "date",
    "datetime",
    "picklist",
    "multipicklist",
    "email",
    "phone",
    "url",
    "reference",
    "other",
)


@dataclass(frozen=True)
class CrmField:
    """One field of a CRM's kind of record as the CRM's field API describes it, for the
    mapping editor: its API name, its label, its type (one of FIELD_TYPES, the CRM's own
    type translated), the values a picklist accepts (as they are written), whether it can be
    written at all, and whether it is a custom field. Where a CRM writes a picklist by a code
    (Pipedrive's option ids, Dataverse's integers), `labels` names each option, in order."""

    name: str
    label: str
    type: str
    options: tuple[str, ...] = ()
    read_only: bool = False
    custom: bool = False
    labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class Task:
    """A task for a record's owner (a job change, connector/changes.py): subject, text and the
    day it is due (YYYY-MM-DD)."""

    subject: str
    body: str
    due_on: str


@dataclass(frozen=True)
class NewContact:
    """A person to add as a new contact: name, title, company, and a note (dated `noted_on`,
    YYYY-MM-DD) linking them to the record they were found through."""

    first_name: str
    last_name: str
    title: str
    company: str
    note: str
    noted_on: str


class Adapter(Protocol):
    """One CRM's contacts, read and written over an injected `httpx.Client`; with `auth`
    (a renewing OAuth token, connector/oauth.py), every request is authenticated by it."""

    platform: str
    auth: httpx.Auth | None

    def read(self, record_id: str, properties: Sequence[str]) -> dict[str, Any]:
        """The current values of `properties` (None where empty); Permanent if no record."""
        ...

    def read_many(
        self, record_ids: Sequence[str], properties: Sequence[str]
    ) -> dict[str, dict[str, Any] | Permanent]:
        """Several records' current values in as few calls as the CRM allows: each record's
        values as `read` gives them, or Permanent where there is no such record. A failure
        of a whole call worth retrying raises Retriable."""
        ...

    def write(self, record_id: str, properties: dict[str, Any]) -> WriteResult:
        """Write `properties` to one record, dropping those the CRM refuses as unknown."""
        ...

    def write_many(self, changes: dict[str, dict[str, Any]]) -> dict[str, WriteResult | Permanent]:
        """Write several records in as few calls as the CRM allows: each record's outcome.
        A failure of a whole call worth retrying raises Retriable."""
        ...

    def list_page(self, properties: Sequence[str], since: str | None, cursor: str | None) -> Listed:
        """A page of the CRM's existing records (modified at or after `since`, ISO 8601 UTC,
        when given) with the values of `properties`, from `cursor` (None: the first page).
        A failure worth retrying (a rate limit) raises Retriable; Permanent where the
        platform's listing is not built."""
        ...

    def views(self) -> list[View]:
        """The CRM's lists or saved views of the adapter's kind a backfill can take; Permanent
        where the platform's are not built."""
        ...

    def list_view_page(
        self, view: str, properties: Sequence[str], since: str | None, cursor: str | None
    ) -> Listed:
        """A page of the records in the list or saved view `view` (one of `views`), as
        `list_page` gives them."""
        ...

    def fields(self) -> list[CrmField]:
        """The fields of the adapter's kind of record, read from the CRM's field API."""
        ...

    def create_field(self, name: str, label: str, type: str) -> CrmField:
        """Create a custom field of the adapter's kind (a type of FIELD_TYPES); Permanent
        where the CRM's API cannot."""
        ...

    def find(self, email: str) -> str | None:
        """The id of a record of the adapter's kind whose e-mail is `email`, or None."""
        ...

    def create_task(self, record_id: str, task: Task) -> str:
        """Create a task for the owner of the record, linked to it; the task's id. Permanent
        where the CRM's API has none."""
        ...

    def create_contact(self, contact: NewContact, linked_to: str) -> str:
        """Create a contact (or the CRM's person) linked to the record `linked_to` by a note
        or association; its id. Permanent where not built."""
        ...


def send(
    client: httpx.Client,
    method: str,
    url: str,
    auth: httpx.Auth | None = None,
    *,
    platform: str = "other",
    **options: Any,
) -> httpx.Response:
    """`client.request` without following redirects, authenticated by `auth` when given;
    timeouts and connection failures become Retriable. Counted by `platform` and outcome."""
    how = httpx.USE_CLIENT_DEFAULT if auth is None else auth
    try:
        response = client.request(method, url, follow_redirects=False, auth=how, **options)
    except httpx.TimeoutException as error:
        metrics.crm_called(platform, "timeout")
        raise Retriable(f"{method} {url} timed out ({type(error).__name__})") from error
    except httpx.TransportError as error:
        metrics.crm_called(platform, "error")
        raise Retriable(f"{method} {url} failed: {type(error).__name__}: {error}") from error
    metrics.crm_called(platform, metrics.status_class(response.status_code))
    return response


class CrmClient:
    """What every adapter is built from and sends with: the CRM API's base URL, the injected
    HTTP client and the token, in the headers `token_headers` makes of it (a bearer token
    unless the CRM says otherwise); `auth`, when given, renews an OAuth token."""

    def __init__(
        self,
        base_url: str,
        token: str,
        client: httpx.Client,
        auth: httpx.Auth | None = None,
        kind: str = "contacts",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.client = client
        self.auth = auth
        self.kind = kind  # the kind of record it reads and writes (Platform.objects)
        self.headers = self.token_headers(token)

    def list_page(self, properties: Sequence[str], since: str | None, cursor: str | None) -> Listed:
        """Permanent: an adapter lists its CRM's records only where it says how (`Adapter`)."""
        raise Permanent("listing not built yet")

    def views(self) -> list[View]:
        """Permanent: an adapter offers lists or views only where it says how (`Adapter`)."""
        raise Permanent("this CRM's lists and views cannot be backfilled yet")

    def list_view_page(
        self, view: str, properties: Sequence[str], since: str | None, cursor: str | None
    ) -> Listed:
        """Permanent: an adapter lists a view's records only where it says how (`Adapter`)."""
        raise Permanent("this CRM's lists and views cannot be backfilled yet")

    def fields(self) -> list[CrmField]:
        """Permanent: an adapter lists its CRM's fields only where it says how (`Adapter`)."""
        raise Permanent("field listing not built yet")

    def create_field(self, name: str, label: str, type: str) -> CrmField:
        """Permanent: fields are created only where the CRM's API allows it (`Adapter`)."""
        raise Permanent("this CRM's fields cannot be created through its API")

    def find(self, email: str) -> str | None:
        """Permanent: an adapter finds records by e-mail only where it says how (`Adapter`)."""
        raise Permanent("finding a record by e-mail not built yet")

    def create_task(self, record_id: str, task: Task) -> str:
        """Permanent: tasks are created only where the adapter says how (`Adapter`)."""
        raise Permanent("creating a task in this CRM is not built yet")

    def create_contact(self, contact: NewContact, linked_to: str) -> str:
        """Permanent: contacts are created only where the adapter says how (`Adapter`)."""
        raise Permanent("creating a contact in this CRM is not built yet")

    def token_headers(self, token: str) -> dict[str, str]:
        """The headers every request carries: the token, and what else the CRM wants."""
        return {"Authorization": f"Bearer {token}"}

    def _send(
        self, method: str, path: str, headers: dict[str, str] | None = None, **options: Any
    ) -> httpx.Response:
        """A request to `path` below the base URL, with the token's headers (and `headers`)."""
        url = self.base_url + path
        merged = {**self.headers, **(headers or {})}
        name = self.platform_name
        return send(self.client, method, url, self.auth, platform=name, headers=merged, **options)

    @property
    def platform_name(self) -> str:
        """The platform's name, for metrics: its module's (connector/platforms/<name>.py)."""
        return type(self).__module__.rpartition(".")[2]


def classify(response: httpx.Response, now: datetime | None = None) -> None:
    """Nothing for a 2xx answer; otherwise raise: 429 and 5xx Retriable (honoring
    Retry-After; a 429 throttles the connection), redirects and other 4xx Permanent, with
    the CRM's message."""
    status = response.status_code
    if 200 <= status < 300:
        return
    reason = f"{status} {response.reason_phrase}: {error_message(response)}".rstrip(": ")
    if status == 429:
        raise Retriable(reason, retry_after(response, now), throttled=True)
    if status >= 500:
        raise Retriable(reason, retry_after(response, now))
    if 300 <= status < 400:
        where = response.headers.get("location", "nowhere")
        raise Permanent(f"{status} redirect to {where} not followed: check the CRM base URL")
    raise Permanent(reason)


def retry_after(response: httpx.Response, now: datetime | None = None) -> float | None:
    """Seconds the Retry-After header asks for, given in seconds or as an HTTP-date (then
    counted from the answer's Date header, else `now`); None when absent or unreadable."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    if DELAY_SECONDS.fullmatch(value):
        return float(value)
    when, sent = _http_date(value), _http_date(response.headers.get("date", ""))
    if when is None:
        return None
    return max(0.0, (when - (sent or now or datetime.now(UTC))).total_seconds())


def _http_date(text: str) -> datetime | None:
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def error_message(response: httpx.Response) -> str:
    """The CRM's own words for an error: the `message` of a JSON object, the messages of a
    JSON array (Salesforce), or the start of the text."""
    body = json_body(response)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return _short(body["message"])
    if isinstance(body, list):
        messages = [_described(item) for item in body if isinstance(item, dict)]
        return _short("; ".join(message for message in messages if message))
    return _short(response.text)


def _described(error: dict[str, Any]) -> str:
    code, message = error.get("errorCode") or error.get("statusCode"), error.get("message")
    return ": ".join(str(part) for part in (code, message) if part)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "…"


def json_body(response: httpx.Response) -> Any:
    """The answer's JSON, or None when it has none."""
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def garbled(response: httpx.Response, expected: str) -> Retriable:
    """A successful answer whose body is not `expected` (a proxy's page, an answer cut short,
    JSON of another shape). It tells nothing of the records: reading it as empty or missing
    would write over a user's values or bury the event, and a write it answers may have been
    applied or not. Asking again tells (values the CRM holds are not sent again)."""
    start = _short(response.text[:80])
    return Retriable(f"{response.status_code} answer is not {expected}: {start!r}")


def dicts(items: Any) -> list[dict[str, Any]]:
    """The objects of a JSON array (a CRM's list of results or errors); [] for anything else."""
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def read_each(
    read: Callable[[str, Sequence[str]], dict[str, Any]],
    record_ids: Sequence[str],
    properties: Sequence[str],
) -> dict[str, dict[str, Any] | Permanent]:
    """`read_many` for a CRM without batch reads: one `read` a record, a missing record's
    Permanent kept as its outcome (Retriable goes up: the rest would fail alike)."""
    found: dict[str, dict[str, Any] | Permanent] = {}
    for record_id in dict.fromkeys(record_ids):
        try:
            found[record_id] = read(record_id, properties)
        except Permanent as failure:
            found[record_id] = failure
    return found


def write_each(
    write: Callable[[str, dict[str, Any]], WriteResult], changes: dict[str, dict[str, Any]]
) -> dict[str, WriteResult | Permanent]:
    """`write_many` for a CRM without batch updates: one `write` a record, each record's
    outcome. Retriable stops the call (the records written are written again later, which
    sends nothing the CRM holds); a refused token is every record's outcome at once."""
    outcomes: dict[str, WriteResult | Permanent] = {}
    for record_id, properties in changes.items():
        try:
            outcomes[record_id] = write(record_id, properties)
        except Permanent as failure:
            outcomes[record_id] = failure
            if failure.reason == TOKEN_REFUSED:
                return {key: outcomes.get(key, failure) for key in changes}
    return outcomes


def id_chunks(record_ids: Sequence[str], size: int) -> Iterator[list[str]]:
    """Distinct record ids, as strings, in consecutive slices of at most `size`."""
    distinct = list(dict.fromkeys(map(str, record_ids)))
    for start in range(0, len(distinct), size):
        yield distinct[start : start + size]


def chunks(changes: dict[str, dict[str, Any]], size: int) -> Iterator[dict[str, dict[str, Any]]]:
    """`changes` in consecutive slices of at most `size` records."""
    items = list(changes.items())
    for start in range(0, len(items), size):
        yield dict(items[start : start + size])


def matching(properties: dict[str, Any], refused: dict[str, str]) -> dict[str, str]:
    """The properties of `properties` named in `refused` (names compared case-insensitively,
    as Salesforce does), each with the CRM's reason."""
    reasons = {name.lower(): why for name, why in refused.items()}
    return {name: reasons[name.lower()] for name in properties if name.lower() in reasons}


def without(properties: dict[str, Any], dropped: dict[str, str]) -> dict[str, Any]:
    """`properties` less the dropped ones."""
    return {name: value for name, value in properties.items() if name not in dropped}


Refusal = dict[str, str]  # properties a CRM refused as unknown or not writable -> why
Outcome = WriteResult | Permanent | Refusal  # one record's answer to one batch call


def write_dropping(
    attempt: Callable[[dict[str, Any]], Refusal], properties: dict[str, Any]
) -> WriteResult:
    """Write with `attempt`, which sends properties and returns those the CRM refused as
    unknown or not writable (empty when it wrote them). Drops the refused ones and sends the
    rest again, as long as each refusal names properties still sent (HubSpot names all the
    unknown ones at once, Salesforce may name one an answer): a refusal naming none is
    Permanent."""
    sending, dropped = dict(properties), {}
    while sending:
        refused = attempt(sending)
        if not refused:
            break
        newly = matching(sending, refused)
        if not newly:
            raise Permanent(f"refused: {_listed(refused)}")
        dropped.update(newly)
        sending = without(sending, newly)
    return WriteResult(written=sending, dropped=dropped)


def write_many_dropping(
    attempt: Callable[[dict[str, dict[str, Any]]], dict[str, Outcome]],
    changes: dict[str, dict[str, Any]],
    size: int,
) -> dict[str, WriteResult | Permanent]:
    """`write_dropping` for batch calls of up to `size` records: `attempt` sends records and
    answers each one's outcome."""
    outcomes: dict[str, WriteResult | Permanent] = {}
    for chunk in chunks(changes, size):
        outcomes.update(_write_batch_dropping(attempt, chunk))
    return outcomes


def _write_batch_dropping(
    attempt: Callable[[dict[str, dict[str, Any]]], dict[str, Outcome]],
    changes: dict[str, dict[str, Any]],
) -> dict[str, WriteResult | Permanent]:
    """One batch: refused records go again without the refused properties; one refused for
    properties it does not have (the whole call was refused) goes again as it is, as long as
    some record drops something each round."""
    outcomes: dict[str, WriteResult | Permanent] = {}
    dropped: dict[str, Refusal] = {key: {} for key in changes}
    pending = dict(changes)
    while pending:
        refusals = {}
        for key, outcome in attempt(pending).items():
            if isinstance(outcome, dict):
                refusals[key] = outcome
            elif isinstance(outcome, WriteResult):
                outcomes[key] = WriteResult(written=outcome.written, dropped=dropped[key])
            else:
                outcomes[key] = outcome
        newly = {key: matching(pending[key], refused) for key, refused in refusals.items()}
        if not any(newly.values()):
            outcomes.update(
                {key: Permanent(f"refused: {_listed(refusals[key])}") for key in refusals}
            )
            break
        for key in refusals:
            dropped[key].update(newly[key])
        pending = {key: without(pending[key], newly[key]) for key in refusals}
        outcomes.update({key: WriteResult({}, dropped[key]) for key in pending if not pending[key]})
        pending = {key: values for key, values in pending.items() if values}
    return outcomes


def _listed(refused: Refusal) -> str:
    return "; ".join(f"{name}: {why}" for name, why in refused.items())


def answer_url(answer: Row, name: str, platform: str) -> str:
    """The URL a token answer gives under `name` (Salesforce's instance_url, Zoho's and
    Pipedrive's api_domain); ValueError when it gives none."""
    url = answer.get(name)
    if not (isinstance(url, str) and url.strip()):
        raise ValueError(f"{platform}'s token answer names no {name}: connect again")
    return url.strip().rstrip("/")


def origin(url: str) -> str:
    """`scheme://host[:port]` of a URL."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
