"""What every platform declares, and the defaults most share: `Platform` (how its requests are
verified, read into events and answered, how an echo of our own write is recognized, its
OAuth endpoints, its CRM adapter, its connection rules), the plain data the receiver hands it
(`Delivery`) and gets back (`Verified`, `Answer`), and the verifications several platforms
share (`UrlSecret`, `BasicPassword`, `BearerToken`, `StandardWebhooks`).

The receiver, the worker, OAuth and the connection code ask a platform; none of them tests a
platform's name. A platform module subclasses `Platform` and registers an instance in
connector/platforms/__init__.py (a test may register its own at test time).
"""

from __future__ import annotations

import base64
import hmac
import json
import logging
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
from sqlite_utils import Database

from connector import signatures
from connector.adapters.base import Adapter, Permanent
from connector.inbound import Event, Unparseable
from server import UnreadableJson, decode_json

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
    OpenAPI document's security schemes, `signing_schemes`); `crm` whether records are written
    back to it (it then sends events and has an `adapter`); `issues_secret` whether it makes
    the secret it signs with; `omit_empty` whether enrich answers leave out empty fields
    (they would blank the platform's own)."""

    name: str
    signing: str
    crm: bool = False
    issues_secret: bool = False
    url_param: str = "key"
    omit_empty: bool = False
    refreshable: bool = False  # its API tokens expire: an OAuth client may renew them

    @property
    def mapping_file(self) -> str:
        """The file name of its default mapping, in mappings/."""
        return f"{self.name}.yaml"

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

    def adapter(self, base_url: str, token: str, client: httpx.Client) -> Adapter:
        """Its CRM adapter over `client`; Permanent for a platform nothing is written to."""
        raise Permanent(f"no CRM adapter for {self.name!r}")

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


@dataclass(frozen=True, kw_only=True)
class UrlSecret(Platform):
    """The secret in the URL's `url_param` (Salesforce, Dataverse's WebhookKey `code`)."""

    signing: str = "url-secret"

    def verify(self, link: Row, secret: str, delivery: Delivery) -> Verified:
        sent = delivery.args.get(self.url_param, "")
        same(sent, secret, f"The {self.url_param} in the URL is not this connection's.")
        return Verified()

    def events_url(self, base: str, secret: str | None) -> str:
        return f"{base}/events?{self.url_param}={secret or '<secret>'}"

    def signing_schemes(self) -> dict[str, Schema]:
        scheme = {"type": "apiKey", "in": "query", "name": self.url_param}
        return {f"urlSecret_{self.url_param}": scheme}


@dataclass(frozen=True, kw_only=True)
class BasicPassword(Platform):
    """The secret as the HTTP Basic password (Pipedrive)."""

    signing: str = "basic"

    def verify(self, link: Row, secret: str, delivery: Delivery) -> Verified:
        sent = signatures.basic_password(delivery.headers.get("Authorization", ""))
        same(sent, secret, "Send the connection's secret as the Basic auth password.")
        return Verified()

    def signing_schemes(self) -> dict[str, Schema]:
        return {"connectionBasic": {"type": "http", "scheme": "basic"}}


BEARER = {"connectionBearer": {"type": "http", "scheme": "bearer"}}


def bearer(delivery: Delivery) -> str:
    return delivery.headers.get("Authorization", "").removeprefix("Bearer ").strip()


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
        if signatures.WEBHOOK_SIGNATURE in delivery.headers:
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
            return signatures.verify_standard_webhooks(
                secret, delivery.body, delivery.headers, delivery.now
            )
        except signatures.UnusableSecret:  # saved before `connection add` checked secrets
            log.warning("connection secret unusable for Standard Webhooks")
            raise Refused(
                "This connection's secret cannot check Standard Webhooks signatures (it is "
                "not base64): send it as 'Authorization: Bearer <secret>', or add the "
                "connection again with the whsec_ secret the sender signs with."
            ) from None

    def check_secret(self, secret: str) -> None:
        try:
            signatures.standard_webhooks_key(secret)
        except signatures.UnusableSecret as error:
            raise ValueError(
                f"secret: {error}. Leave --secret out to have one made, or give the whsec_ "
                "secret the sender signs with"
            ) from None

    def new_secret(self) -> str:
        return "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()

    def signing_schemes(self) -> dict[str, Schema]:
        description = f"With {signatures.WEBHOOK_ID} and {signatures.WEBHOOK_TIMESTAMP}."
        scheme = {"type": "apiKey", "in": "header", "name": signatures.WEBHOOK_SIGNATURE}
        return {"standardWebhooks": {**scheme, "description": description}, **BEARER}


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
