"""Webhook routes.

`POST /hooks/<connection_id>/events` (CRM connections only): verify the raw bytes, read the
events, store each once (by the platform's event id), then acknowledge: 2xx for accepted and
duplicate events alike, 401 for a bad signature, 400 for a body the platform would not send,
503 with Retry-After when the store cannot take it. Never a redirect, never 410.

`POST /hooks/<connection_id>/enrich`: an automation step's fields in, the enriched fields
(mapped as the connection's mapping says) out, in the same response; a HubSpot custom
workflow action gets them as `outputFields` with `hs_execution_state`. Every answer, errors
included, carries `smarteTransactionId` (the transaction recorded) and `credits-deducted`.

A Standard Webhooks delivery (Zapier, Make, n8n) is answered once: a copy with the same
`webhook-id` (for a HubSpot custom action, the same `callbackId`) that arrives within
REPLAY_WINDOW (while a copy could still pass the timestamp
check) gets the first answer again (status, body, smarteTransactionId, credits-deducted) and
is charged nothing. The first delivery claims its id in one write before enriching; a copy
arriving before that answer is kept gets 503 `delivery_in_progress` with Retry-After (every
sender retries a 5xx; HubSpot's custom actions fail on other 4xx but 429); sent again, it
gets the answer. Only successes are kept: a refused or failed delivery charged
nothing, so its copy is tried afresh. Kept answers older than REPLAY_WINDOW are deleted
whenever a delivery is claimed.

HubSpot signatures: v2 and v3 cover the URL, taken as HubSpot called it (PUBLIC_URL followed by
the request target as sent: `_called_uri`). A request carrying v3 headers is verified by v3
alone (its timestamp bounds replays to 5 minutes). One without them is verified by the version
HubSpot documents for its kind: v1 for a Webhooks API batch (a JSON array), v2 for a workflow
webhook or custom action (an object); never the version the request declares. HubSpot's apps
send v3 beside v1/v2, so once a connection has received a valid v3 signature on a kind of
request (Webhooks API batch, custom action, workflow webhook: connections.hubspot_v3_kinds), it
takes v3 alone for that kind: such a request stripped of its v3 headers is refused, not
verified by its timeless v1/v2 signature. Kinds are told apart because not every sender adds v3
(a workflow's "Send a webhook" signs v2, and v3 only on newer platforms): one that never did
keeps working.

HubSpot custom actions that cannot be answered now are BLOCKed: the execution request is
stored as an event and the worker completes the action later through HubSpot's callback API.
That is every action posted to the events URL, and on the enrich URL an action whose
organization is out of credits (completed once credits are added) or whose enrichment found
the database too busy.
"""

from __future__ import annotations

import hmac
import json
import re
import sqlite3
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from flask import Blueprint, Response, current_app, g, request

import server
from connector import connections, inbound, mappings, sealing, signatures, store
from server import ServiceError
from server.wire import UnreadableJson, decode_json

blueprint = Blueprint("hooks", __name__, url_prefix="/hooks")
RETRY_AFTER_SECONDS = 30
REPLAY_WINDOW = signatures.STANDARD_WEBHOOKS_REPLAY_WINDOW
IN_PROGRESS_RETRY_AFTER = 2  # seconds
REPLAYED_HEADERS = ("Content-Type", "smarteTransactionId", "credits-deducted")
_ENRICH_PATH = re.compile(r"/hooks/[^/]+/enrich")
Row = dict[str, Any]


class UnknownConnection(ServiceError):
    status, code = 404, "not_found"


class BadSignature(ServiceError):
    status, code = 401, "invalid_signature"


class InvalidPayload(ServiceError):
    status, code = 400, "invalid_payload"


class StoreUnavailable(ServiceError):
    status, code = 503, "unavailable"


class DeliveryInProgress(ServiceError):
    status, code = 503, "delivery_in_progress"  # 5xx: every sender sends it again


@blueprint.post("/<connection_id>/events")
def receive_events(connection_id: str) -> Response:
    """Accept a platform's events for later enrichment and write-back."""
    link = _connection(connection_id)
    if not connections.PLATFORMS[link["platform"]].crm:
        raise UnknownConnection(
            f"Connection {connection_id} is a {link['platform']} connection, which takes no "
            f"events: there is no CRM record to write back to. Post the step's fields to "
            f"/hooks/{connection_id}/enrich and use the fields it answers with."
        )
    body = request.get_data(cache=True)
    _verify(link, body)
    found = _events(link, body)
    _store(link, found)
    return _acknowledgement(link, found)


@blueprint.post("/<connection_id>/enrich")
def enrich_now(connection_id: str) -> Response:
    """Enrich the record an automation step sent and answer with the mapped fields; a
    Standard Webhooks delivery or a HubSpot custom action's execution once, whatever the
    number of its copies."""
    link = _connection(connection_id)
    body = request.get_data(cache=True)
    delivery_id = _verify(link, body) or _callback_id(link, body)
    if delivery_id is None:
        return _enrich(link, body)
    return _answer_once(link, delivery_id, lambda: _enrich(link, body))


@blueprint.before_request
def _assign_transaction_id() -> None:
    g.transaction_id = _new_id()


def _new_id() -> str:
    return str(uuid.uuid4())


@blueprint.after_app_request
def _name_the_transaction(response: Response) -> Response:
    """Every answer of an enrich URL names its transaction and what it cost (0 on errors),
    as /v7/enrich's do; an answer given again keeps the first's."""
    if _ENRICH_PATH.fullmatch(request.path):
        response.headers.setdefault("smarteTransactionId", g.get("transaction_id") or _new_id())
        response.headers.setdefault("credits-deducted", "0")
    return response


def _enrich(link: Row, body: bytes) -> Response:
    payload = _json_object(body)
    mapping = mappings.load_current(link["mapping"])
    custom_action = link["platform"] == "hubspot" and inbound.is_action(payload)
    try:
        outcome = server.enrich_with_key(
            server.get_db(),
            current_app.config["KEY_SECRET_BYTES"],
            sealing.unseal(current_app.config["KEY_SECRET_BYTES"], link["api_key_sealed"]),
            mapping.enrich_input(payload),
            server.now(),
            g.transaction_id,
            f"/hooks/{link['id']}/enrich",
        )
    except ServiceError as error:
        if not custom_action:
            raise
        if error.code == "insufficient_credits":
            return _named(_block(link, body, payload))
        return _named(_json(inbound.action_failed(error.message)))
    except sqlite3.OperationalError:
        if not custom_action:
            raise
        current_app.logger.warning("custom action of connection %s blocked", link["id"])
        return _named(_block(link, body, payload))
    fields = mapping.outputs(outcome.result)
    if connections.PLATFORMS[link["platform"]].omit_empty:
        fields = {name: value for name, value in fields.items() if not mappings.is_empty(value)}
    return _named(_json(inbound.action_succeeded(fields) if custom_action else fields),
                  outcome.credits)  # fmt: skip


def _named(response: Response, credits: int = 0) -> Response:
    """An answer with its transaction's headers, kept with it for copies of the delivery."""
    response.headers["smarteTransactionId"] = g.transaction_id
    response.headers["credits-deducted"] = str(credits)
    return response


def _callback_id(link: Row, body: bytes) -> str | None:
    """A HubSpot custom action's `callbackId`, which names one execution of the action: a
    copy (a replay within v3's 5 minutes, or HubSpot's own retry) is answered once too."""
    if link["platform"] != "hubspot":
        return None
    try:
        payload = decode_json(body)
    except UnreadableJson:
        return None
    return f"callbackId:{payload['callbackId']}" if inbound.is_action(payload) else None


def _answer_once(link: Row, webhook_id: str, answer: Callable[[], Response]) -> Response:
    """Answer a delivery unless a copy was answered within REPLAY_WINDOW: then that answer."""
    db, now = server.get_db(), server.now()
    forget_before = server.iso(now - REPLAY_WINDOW)
    with server.write(db):
        seen = store.claim_webhook(db, link["id"], webhook_id, server.iso(now), forget_before)
    if seen is not None:
        return _replayed(seen)
    response = None
    try:
        response = answer()
        return response
    finally:
        _settle(link, webhook_id, response)


def _replayed(seen: Row) -> Response:
    if not seen["status"]:
        raise DeliveryInProgress(
            "A copy of this delivery is being answered; send it again for that answer.",
            headers={"Retry-After": str(IN_PROGRESS_RETRY_AFTER)},
        )
    headers = json.loads(seen["headers"])
    return current_app.response_class(seen["body"], status=seen["status"], headers=headers)


def _settle(link: Row, webhook_id: str, response: Response | None) -> None:
    """Keep a delivery's successful answer for its copies, or drop its claim."""
    try:
        with server.write(server.get_db()) as db:
            if response is None or response.status_code >= 300:
                store.release_webhook(db, link["id"], webhook_id)
                return
            headers = {k: v for k, v in response.headers.items() if k in REPLAYED_HEADERS}
            body = response.get_data(as_text=True)
            store.answer_webhook(
                db, link["id"], webhook_id, response.status_code, body, json.dumps(headers)
            )
    except sqlite3.OperationalError:  # its copies get 503 until the claim is forgotten
        current_app.logger.exception("delivery to connection %s not settled", link["id"])


def _store(link: Row, found: list[inbound.Event]) -> None:
    """Store events durably (each once); 503 with Retry-After when the store cannot."""
    try:
        with server.write(server.get_db()) as db:
            store.add_events(db, [_row(link, event) for event in found])
    except sqlite3.OperationalError:
        current_app.logger.exception("events of connection %s not stored", link["id"])
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
        raise StoreUnavailable(
            "The events could not be stored; send them again.", headers=headers
        ) from None


def _block(link: Row, body: bytes, payload: dict[str, Any]) -> Response:
    """Store a custom action's request for the worker to complete, and answer BLOCK."""
    _store(link, inbound.hubspot_events(payload, body))
    return _json(inbound.action_blocked())


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        payload = decode_json(body)
    except UnreadableJson as error:
        raise InvalidPayload(f"The body is not JSON: {error}.") from None
    if not isinstance(payload, dict):
        raise InvalidPayload("The body must be a JSON object.")
    return payload


def _json(data: Any) -> Response:
    return current_app.response_class(json.dumps(data), status=200, mimetype="application/json")


def _connection(connection_id: str) -> Row:
    link = store.connection(server.get_db(), connection_id)
    if link is None:
        raise UnknownConnection(f"No connection {connection_id}.")
    return link


def _secret(link: Row) -> str:
    return sealing.unseal(current_app.config["KEY_SECRET_BYTES"], link["secret_sealed"])


def _verify(link: Row, body: bytes) -> str | None:
    """Check the request came from the platform; the webhook-id of a signed Standard Webhooks
    delivery (answered once), else None."""
    kind = connections.PLATFORMS[link["platform"]]
    secret = _secret(link)
    try:
        if kind.signing == "hubspot":
            _verify_hubspot(link, secret, body)
        elif kind.signing == "standard-webhooks":
            return _verify_standard_webhooks(secret, body)
        elif kind.signing == "url-secret":
            sent = request.args.get(kind.url_param, "")
            _same(sent, secret, f"The {kind.url_param} in the URL is not this connection's.")
        elif kind.signing == "basic":
            sent = signatures.basic_password(request.headers.get("Authorization", ""))
            _same(sent, secret, "Send the connection's secret as the Basic auth password.")
        elif kind.signing == "body-token":
            _verify_zoho(link, secret, body)
        elif kind.signing == "bearer":
            sent = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
            _same(sent, secret, "Send the connection's secret as 'Authorization: Bearer <secret>'.")
        else:
            raise ValueError(f"no verification for signing {kind.signing!r}")
    except signatures.SignatureError as error:
        raise BadSignature(f"The request signature does not verify: {error}") from None
    return None


def _verify_hubspot(link: Row, secret: str, body: bytes) -> None:
    """v3 when sent; else v1 or v2 as HubSpot signs this kind of request, unless the
    connection has received v3 on this kind before (then v3 alone)."""
    kind = inbound.hubspot_kind(body)
    v3_only = kind in link["hubspot_v3_kinds"].split(",")
    legacy = None if v3_only else signatures.hubspot_legacy_version(body)
    uri = _called_uri()
    try:
        version = signatures.verify_hubspot(
            secret, request.method, uri, body, request.headers, server.now(), fallback=legacy
        )
    except signatures.MissingHeader as error:
        if not v3_only:
            raise
        raise BadSignature(
            f"The request signature does not verify: {error}. This connection has received "
            f"HubSpot's v3 signature on {kind} requests, so it takes no v1 or v2 for them."
        ) from None
    except signatures.SignatureMismatch as error:
        raise BadSignature(
            f"The request signature does not verify: {error} (v2 and v3 cover the URL, taken "
            f"as {uri.partition('?')[0]}: CONTACTDATA_PUBLIC_URL must be the one HubSpot calls)."
        ) from None
    if version == "v3" and not v3_only:
        _note_hubspot_v3(link, kind)


def _called_uri() -> str:
    """The URL the sender called, as it signed it: the public URL with the request's path and
    query as sent (gunicorn's RAW_URI; REQUEST_URI elsewhere), never Werkzeug's decoded
    `request.url`, nor a URL rebuilt from a proxy's plain-http request."""
    environ = request.environ
    target = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if target is None:  # a server that keeps neither: the path escaped again
        query = environ.get("QUERY_STRING", "")
        target = quote(request.script_root + request.path) + (f"?{query}" if query else "")
    target = target.encode("latin-1", "replace").decode("utf-8", "replace")  # WSGI's str
    return signatures.sent_uri(current_app.config["PUBLIC_URL"], target, request.script_root)


def _note_hubspot_v3(link: Row, kind: str) -> None:
    try:
        with server.write(server.get_db()) as db:
            store.note_hubspot_v3(db, link["id"], kind)
    except sqlite3.OperationalError:  # noted with the next v3 request
        current_app.logger.warning("v3 of HubSpot connection %s not noted", link["id"])


def _same(sent: str, secret: str, refusal: str) -> None:
    if not (sent and hmac.compare_digest(sent.encode(), secret.encode())):
        raise BadSignature(refusal)


def _verify_zoho(link: Row, secret: str, body: bytes) -> None:
    """Zoho signs nothing: its notifications carry the channel's token (our secret) and id."""
    try:
        document = decode_json(body)
    except UnreadableJson:
        document = None
    if not isinstance(document, dict):
        raise BadSignature("A Zoho notification carries its channel's token: none found.")
    _same(str(document.get("token", "")), secret, "The token is not this connection's.")
    if str(document.get("channel_id", "")) != connections.channel_id(link):
        raise BadSignature("The notification is not from this connection's Zoho channel.")


def _verify_standard_webhooks(secret: str, body: bytes) -> str | None:
    """A Standard Webhooks signature (its webhook-id returned), or, from senders that cannot
    sign (Zapier's Webhooks step), the secret itself as a bearer token (None)."""
    if "webhook-signature" in request.headers:
        try:
            return signatures.verify_standard_webhooks(secret, body, request.headers, server.now())
        except signatures.UnusableSecret:  # saved before `connection add` checked secrets
            current_app.logger.warning("connection secret unusable for Standard Webhooks")
            raise BadSignature(
                "This connection's secret cannot check Standard Webhooks signatures (it is "
                "not base64): send it as 'Authorization: Bearer <secret>', or add the "
                "connection again with the whsec_ secret the sender signs with."
            ) from None
    sent = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    _same(
        sent,
        secret,
        "Sign the request (Standard Webhooks) or send the connection's secret as "
        "'Authorization: Bearer <secret>'.",
    )
    return None


def _events(link: Row, body: bytes) -> list[inbound.Event]:
    try:
        found = inbound.events(link["platform"], body)
    except inbound.Unparseable as error:
        raise InvalidPayload(f"The body is not a {link['platform']} event: {error}") from None
    allowed = [org for org in link["allowed_organizations"].split(",") if org]
    for event in found:
        organization = event.source.get("OrganizationId")
        if organization is not None and not signatures.salesforce_organization_allowed(
            organization, allowed
        ):
            raise BadSignature(f"Salesforce organization {organization} is not allowed to send.")
    return found


def _row(link: Row, event: inbound.Event) -> Row:
    return {
        "connection_id": link["id"],
        "event_key": event.key,
        "record_id": event.record_id,
        "payload": json.dumps(event.payload),
        "thin": int(event.thin),
        "received_at": server.iso(server.now()),
    }


def _acknowledgement(link: Row, found: list[inbound.Event]) -> Response:
    if link["platform"] == "salesforce":
        return Response(inbound.SALESFORCE_ACK, status=200, content_type="text/xml; charset=utf-8")
    if link["platform"] == "hubspot" and len(found) == 1 and inbound.is_action(found[0].payload):
        return _json(inbound.action_blocked())
    return _json({"accepted": len(found)})
