"""Webhook routes.

`POST /hooks/<connection_id>/events` (CRM connections only): verify the raw bytes, read the
events, store each once (by the platform's event id), then acknowledge: 2xx for accepted and
duplicate events alike, 401 for a bad signature, 400 for a body the platform would not send,
503 with Retry-After when the store cannot take it. Never a redirect, never 410.

A connection's secret verifies, and after a rotation the secret it replaced too while its
grace period lasts. A paused connection's events are verified, stored and acknowledged as
ever (the worker holds them until it is resumed); its enrich URL answers 409
`connection_paused` after verifying, charging nothing.

`POST /hooks/<connection_id>/enrich`: an automation step's fields in, the enriched fields
(mapped as the connection's mapping says; for another kind of record than contacts, which
the platform reads from the body, e.g. a HubSpot custom action on a company, as the
platform's mapping of that kind) out, in the same response; a HubSpot custom workflow
action gets them as `outputFields` with `hs_execution_state`. Every answer, errors
included, carries `smarteTransactionId` (the transaction recorded) and `credits-deducted`.

A Standard Webhooks delivery (Zapier, Make, n8n), or any request with an Idempotency-Key, is
answered once: a copy with the same `webhook-id` (for a HubSpot custom action, the same
`callbackId`; the same key and body) that arrives within store.ANSWERS_KEPT gets the first
answer again (status, body, smarteTransactionId) with credits-deducted 0 and
Idempotent-Replayed true, and is charged nothing. The first delivery claims its id in one write
before enriching; a copy arriving before that answer is kept gets 503 `delivery_in_progress`
(409 `request_in_progress` for a key) with Retry-After (every sender retries a 5xx; HubSpot's
custom actions fail on other 4xx but 429); sent again, it gets the answer. Only successes are
kept: a refused or failed delivery charged nothing, so its copy is tried afresh. Kept answers
older than store.ANSWERS_KEPT are forgotten whenever a delivery is claimed (a custom action's
callbackId is remembered for good, its answer blanked).

The platform of the connection (connector/platforms/) verifies, reads and acknowledges each
request; the receiver never asks which platform it is. What a platform verifies sees the URL
as the sender called it (PUBLIC_URL followed by the request target as sent: `_called_uri`),
which HubSpot's v2 and v3 signatures cover.

HubSpot as a public app sends every installed account's requests to the app's one URL of
each kind, signed with the app's client secret (the operator's registered OAuth app, see
connector/oauth_apps.py), not a connection's: `POST /hooks/hubspot/events` (Webhooks API
batches) and `POST /hooks/hubspot/action` (custom workflow action executions). Each is
verified (v3 when sent, else the version HubSpot signs its kind with), then routed by portal id
to the connection of that HubSpot account (`connections.crm_account_id`, filled when the account
connects by OAuth). A batch mixing accounts is split, each account's events stored for its
connection as the per-connection URL stores them (once by event key, in one write), then
acknowledged: `{"accepted": n, "unrouted": m}`. Events of an account with no connection (an
install not connected yet, or one removed) are acknowledged, so HubSpot does not retry them
for days, but not stored: logged with their portal id and counted in `unrouted`. An action
is answered as the per-connection enrich URL answers it, once per callbackId; an action of an
account with no connection FAIL_CONTINUEs with the reason in `contactdata_error`.

HubSpot custom actions that cannot be answered now are BLOCKed: the execution request is
stored as an event and the worker completes the action later through HubSpot's callback API.
That is every action posted to the events URL, and on the enrich URL an action whose
organization is out of credits (completed once credits are added) or whose enrichment found
the database too busy.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from flask import Blueprint, Response, current_app, g, request
from sqlite_utils import Database

import server
from connector import answers, connections, store
from connector.platforms import PLATFORMS, hubspot
from connector.platforms.base import (
    Answer,
    Delivery,
    Event,
    Platform,
    Refused,
    SignatureError,
    Unparseable,
    Verified,
)
from server import ServiceError, UnreadableJson, decode_json

blueprint = Blueprint("hooks", __name__, url_prefix="/hooks")
RETRY_AFTER_SECONDS = 30
IN_PROGRESS_RETRY_AFTER = 2  # seconds
REPLAYED_HEADERS = ("Content-Type", "smarteTransactionId")
REPLAYED = "Idempotent-Replayed"  # "true" on the answer kept for an earlier copy, else "false"
_ENRICH_PATH = re.compile(r"/hooks/[^/]+/enrich|/hooks/hubspot/action")
Row = dict[str, Any]


class UnknownConnection(ServiceError):
    status, code = 404, "not_found"


class BadSignature(ServiceError):
    status, code = 401, "invalid_signature"


class InvalidPayload(ServiceError):
    status, code = 400, "invalid_payload"


class StoreUnavailable(ServiceError):
    status, code = 503, "unavailable"


class ConnectionPaused(ServiceError):
    status, code = 409, "connection_paused"


class DeliveryInProgress(ServiceError):
    status, code = 503, "delivery_in_progress"  # 5xx: every sender sends it again


@blueprint.post("/<connection_id>/events")
def receive_events(connection_id: str) -> Response:
    """Accept a platform's events for later enrichment and write-back."""
    link = _connection(connection_id)
    platform = PLATFORMS[link["platform"]]
    if not platform.crm:
        raise UnknownConnection(
            f"Connection {connection_id} is a {platform.title} connection, which takes no "
            f"events: there is no CRM record to write back to. Post the step's fields to "
            f"/hooks/{connection_id}/enrich and use the fields it answers with."
        )
    body = request.get_data(cache=True)
    _verify(link, body)
    found = _events(link, platform, body)
    _store(link, found)
    return _answer(platform.acknowledgement(found))


@blueprint.post("/<connection_id>/enrich")
def enrich_now(connection_id: str) -> Response:
    """Enrich the record an automation step sent and answer with the mapped fields; a
    Standard Webhooks delivery or a HubSpot custom action's execution once, whatever the
    number of its copies."""
    link = _connection(connection_id)
    body = request.get_data(cache=True)
    webhook_id = _verify(link, body)
    return _enrich_verified(link, body, _records(PLATFORMS[link["platform"]], body), webhook_id)


@blueprint.post("/hubspot/events")
def receive_hubspot_app_events() -> Response:
    """Accept the HubSpot app's Webhooks API batch: each account's events for its connection."""
    body = request.get_data(cache=True)
    _verify_hubspot_app(body)
    if hubspot.hubspot_kind(body) != "webhooks-api":
        raise InvalidPayload("The body is not a HubSpot Webhooks API batch (a JSON array).")
    rows, unrouted = _routed(PLATFORMS["hubspot"], _events_of(PLATFORMS["hubspot"], body))
    _persist(rows, "events of the HubSpot app")
    return _json({"accepted": len(rows), "unrouted": unrouted})


def _routed(platform: Platform, found: list[Event]) -> tuple[list[Row], int]:
    """The rows to store of each portal's events for the connection of that HubSpot account,
    and how many events had no connection (logged, not stored)."""
    by_portal: dict[str, list[Event]] = {}
    for event in found:
        by_portal.setdefault(hubspot.event_portal(event), []).append(event)
    rows, unrouted = [], 0
    for portal, events in by_portal.items():
        link = store.connection_of_account(server.get_db(), "hubspot", portal)
        if link is None:
            unrouted += len(events)
            current_app.logger.warning(
                "%d events of HubSpot portal %s not stored: no connection", len(events), portal
            )
            continue
        _admit(link, platform, events)
        rows += [_row(link, event) for event in events]
    return rows, unrouted


@blueprint.post("/hubspot/action")
def hubspot_app_action() -> Response:
    """Answer the HubSpot app's custom action for the connection of the account it runs in."""
    body = request.get_data(cache=True)
    _verify_hubspot_app(body)
    payload = _json_object(body)
    if not hubspot.is_action(payload):
        raise InvalidPayload("The body is not a HubSpot custom action execution request.")
    portal = hubspot.action_portal(payload)
    link = store.connection_of_account(server.get_db(), "hubspot", portal)
    if link is None:
        current_app.logger.warning("custom action of HubSpot portal %s: no connection", portal)
        message = f"HubSpot account {portal or '(none named)'} is not connected to contact data."
        return _named(_json(hubspot.action_failed(message)))
    return _enrich_verified(link, body, payload, None)


def _enrich_verified(
    link: Row, body: bytes, payload: dict[str, Any] | list[Any], webhook_id: str | None
) -> Response:
    """Enrich a verified request for `link`; once per delivery id (its webhook-id, the id its
    platform's body names, or its Idempotency-Key) when it has one."""
    if connections.is_paused(link):
        raise ConnectionPaused(
            f"Connection {link['name']} is paused: it enriches nothing until an admin resumes "
            "it. Nothing was charged."
        )
    platform = PLATFORMS[link["platform"]]
    delivery_id = webhook_id or (
        platform.delivery_id(payload) if isinstance(payload, dict) else None
    )
    key = server.idempotency_key()  # checked as /v7/enrich checks it
    answer = lambda: _enrich(link, body, payload)  # noqa: E731
    if delivery_id is not None:
        return _answer_once(link, delivery_id, answer)
    if key is not None:  # the same key with another body is another request: refused
        digest = hashlib.sha256(body).hexdigest()
        return _answer_once(link, f"idempotency-key:{key}", answer, digest)
    return answer()


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


def _enrich(link: Row, body: bytes, payload: dict[str, Any] | list[Any]) -> Response:
    platform = PLATFORMS[link["platform"]]
    _within_limits(link)
    if isinstance(payload, list):
        return _enrich_batch(link, platform, payload)
    custom_action = platform.is_action(payload)
    kind = platform.kind_of(payload)  # mapped as the worker maps that kind (a HubSpot company)
    if kind not in platform.objects:
        message = f"{platform.title} has no {kind} the connector enriches"
        if not custom_action:
            raise InvalidPayload(f"{message}.")
        return _named(_json(platform.action_failed(message)))
    mapping = store.mapping_in_use(server.get_db(), link, platform.mapping_file_for(kind), kind)
    try:
        outcome = server.enrich_with_key(
            server.get_db(),
            current_app.config["KEY_SECRET_BYTES"],
            _api_key(link),
            answers.enrich_input(platform, mapping, payload),
            server.now(),
            g.transaction_id,
            f"/hooks/{link['id']}/enrich",
        )
    except ServiceError as error:
        if not custom_action:
            raise answers.in_senders_words(platform, mapping, error) from None
        if error.code == "insufficient_credits":
            return _named(_block(link, platform, body))
        return _named(_json(platform.action_failed(error.message)))
    except server.DB_ERRORS:
        if not custom_action:
            raise
        current_app.logger.warning("custom action of connection %s blocked", link["id"])
        return _named(_block(link, platform, body))
    fields = answers.fields(platform, mapping, outcome.result)
    if custom_action:
        return _named(_json(platform.action_succeeded(fields)), outcome.credits)
    if platform.meta_in_body:
        fields |= answers.meta(mapping.record_id(payload), g.transaction_id, outcome.credits)
    return _named(_json(fields), outcome.credits)


def _enrich_batch(link: Row, platform: Platform, records: list[Any]) -> Response:
    """Enrich each record of an array in order, each its own transaction: the answer is an
    array in the same order, a refused record an error item charged nothing."""
    mapping = store.mapping_in_use(server.get_db(), link, platform.mapping_file, "contacts")
    inputs = [
        answers.enrich_input(platform, mapping, r) if isinstance(r, dict) else r for r in records
    ]
    outcomes = server.enrich_each_with_key(
        server.get_db(),
        current_app.config["KEY_SECRET_BYTES"],
        _api_key(link),
        inputs,
        server.now(),
        f"/hooks/{link['id']}/enrich",
    )
    items = [answers.entry(platform, mapping, r, a) for r, a in zip(records, outcomes, strict=True)]
    return _named(_json(items), sum(item["creditsDeducted"] for item in items))


def _within_limits(link: Row) -> None:
    """Count the request against its organization's daily limit (shared with its API keys)
    and its connection's own rate (the organization's qpsLimit a second, so one busy CRM
    leaves the API its own); 429 with Retry-After, charging nothing, past either."""
    secret, now = current_app.config["KEY_SECRET_BYTES"], server.now()
    caller = server.authenticate(server.get_db(), secret, _api_key(link), now)
    checked = [
        server.limits.organization_daily(caller.org_id, caller.daily_limit),
        server.limits.Limit.per_window(f"connection:{link['id']}:qps", "qps", caller.qps_limit, 1),
    ]
    decision = current_app.extensions["limiter"].hit(checked, now)
    g.rate_limit_headers = server.limits.headers(decision)
    if not decision.allowed:
        refused = min(decision.statuses, key=lambda status: status.remaining).limit.name
        server.metrics.rate_limited(refused)
        raise server.RateLimitExceeded(
            f"Connection {link['name']} is over its organization's {refused} limit; send it "
            "again after Retry-After seconds. Nothing was charged.",
            headers=server.limits.headers(decision),
        )


def _api_key(link: Row) -> str:
    return store.unseal(current_app.config["KEY_SECRET_BYTES"], link["api_key_sealed"])


def _named(response: Response, credits: int = 0) -> Response:
    """An answer with its transaction's headers, kept with it for copies of the delivery."""
    response.headers["smarteTransactionId"] = g.transaction_id
    response.headers["credits-deducted"] = str(credits)
    return response


def _answer_once(
    link: Row, webhook_id: str, answer: Callable[[], Response], fingerprint: str = ""
) -> Response:
    """Answer a delivery unless a copy (of the same body, by `fingerprint`) was answered
    within store.ANSWERS_KEPT: then that answer."""
    db, now = server.get_db(), server.now()
    forget_before = server.iso(now - store.ANSWERS_KEPT)
    lapsed = server.iso(now - store.CLAIM_LAPSES_AFTER)
    with server.write(db):
        seen = store.claim_webhook(
            db, link["id"], webhook_id, server.iso(now), forget_before, fingerprint, lapsed
        )
    if seen is not None:
        return _replayed(link, seen, fingerprint)
    response = None
    try:
        response = answer()
        response.headers[REPLAYED] = "false"
        return response
    finally:
        _settle(link, webhook_id, response)


def _replayed(link: Row, seen: Row, fingerprint: str) -> Response:
    """The answer kept for a copy: charged nothing, and saying so. A custom action's
    execution answered long ago (its answer blanked) fails, answered once already."""
    if seen["fingerprint"] != fingerprint:
        raise server.IdempotencyKeyReused(
            "This Idempotency-Key was sent with another body within 24 hours: send a new key "
            "with a new request."
        )
    if not seen["status"]:
        in_progress = server.RequestInProgress if fingerprint else DeliveryInProgress
        raise in_progress(
            "A copy of this request is being answered; send it again for that answer.",
            headers={"Retry-After": str(IN_PROGRESS_RETRY_AFTER)},
        )
    if not seen["body"]:
        answered = seen["received_at"][:10]
        message = f"This execution was answered on {answered}; it is not answered again."
        failed = _json(PLATFORMS[link["platform"]].action_failed(message))
        failed.headers[REPLAYED] = "true"
        return failed
    headers = {**json.loads(seen["headers"]), REPLAYED: "true"}
    body = answers.charged_nothing(seen["body"])
    return current_app.response_class(body, status=seen["status"], headers=headers)


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
    except server.DB_ERRORS:  # its copies get 503 until the claim is forgotten
        current_app.logger.exception("delivery to connection %s not settled", link["id"])


def _store(link: Row, found: list[Event]) -> None:
    """Store a connection's events durably (each once)."""
    _persist([_row(link, event) for event in found], f"events of connection {link['id']}")


def _persist(rows: list[Row], what: str) -> None:
    """Store events' rows in one write (each once); 503 with Retry-After when the store
    cannot."""
    try:
        with server.write(server.get_db()) as db:
            store.add_events(db, rows)
    except server.DB_ERRORS:
        current_app.logger.exception("%s not stored", what)
        headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
        raise StoreUnavailable(
            "The events could not be stored; send them again.", headers=headers
        ) from None


def _block(link: Row, platform: Platform, body: bytes) -> Response:
    """Store an action's request for the worker to complete, and answer that it will be."""
    _store(link, platform.events(body))
    return _json(platform.action_blocked())


def _json_object(body: bytes) -> dict[str, Any]:
    payload = _json_value(body)
    if not isinstance(payload, dict):
        raise InvalidPayload("The body must be a JSON object.")
    return payload


def _records(platform: Platform, body: bytes) -> dict[str, Any] | list[Any]:
    """An enrich request's JSON body: one object, or where the platform sends batches an
    array of 1 to `batch_limit` records."""
    payload = _json_value(body)
    if isinstance(payload, dict):
        return payload
    limit = platform.batch_limit
    if not (limit and isinstance(payload, list)):
        kind = f"object or an array of up to {limit} objects" if limit else "object"
        raise InvalidPayload(f"The body must be a JSON {kind}.")
    if not 0 < len(payload) <= limit:
        raise InvalidPayload(
            f"The body is an array of {len(payload)} records: send 1 to {limit} a request."
        )
    return payload


def _json_value(body: bytes) -> Any:
    try:
        return decode_json(body)
    except UnreadableJson as error:
        raise InvalidPayload(f"The body is not JSON: {error}.") from None


def _json(data: Any) -> Response:
    return current_app.response_class(json.dumps(data), status=200, mimetype="application/json")


def _answer(answer: Answer) -> Response:
    return current_app.response_class(answer.body, status=200, content_type=answer.content_type)


def _connection(connection_id: str) -> Row:
    link = store.connection(server.get_db(), connection_id)
    if link is None:
        raise UnknownConnection(f"No connection {connection_id}.")
    return link


def _secret(link: Row) -> str:
    return store.unseal(current_app.config["KEY_SECRET_BYTES"], link["secret_sealed"])


def _verify(link: Row, body: bytes) -> str | None:
    """Check the request came from the connection's platform (and keep what that taught,
    e.g. the signature versions HubSpot sends); the delivery's id when the platform names
    one in its signature (a Standard Webhooks webhook-id, answered once), else None."""
    delivery = Delivery(
        request.method, _called_uri(), request.headers, request.args, body, server.now()
    )
    try:
        verified = _verified(link, delivery)
    except SignatureError as error:
        raise BadSignature(f"The request signature does not verify: {error}") from None
    except Refused as error:
        raise BadSignature(str(error)) from None
    if verified.remember is not None:
        _remember(link, verified.remember)
    return verified.delivery_id


def _verified(link: Row, delivery: Delivery) -> Verified:
    """The platform's verification with the connection's secret or, while a rotation's grace
    period lasts, the secret it replaced; the current secret's refusal when neither verifies."""
    platform = PLATFORMS[link["platform"]]
    try:
        return platform.verify(link, _secret(link), delivery)
    except (SignatureError, Refused):
        secret = current_app.config["KEY_SECRET_BYTES"]
        previous = connections.previous_secret(secret, link, delivery.now)
        if previous is None:
            raise
        try:
            return platform.verify(link, previous, delivery)
        except (SignatureError, Refused):
            pass
        raise


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
    return sent_uri(current_app.config["PUBLIC_URL"], target, request.script_root)


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


def _remember(link: Row, remember: Callable[[Database], None]) -> None:
    try:
        with server.write(server.get_db()) as db:
            remember(db)
    except server.DB_ERRORS:  # learned again with the next such request
        current_app.logger.warning("what connection %s's request taught not kept", link["id"])


def _events(link: Row, platform: Platform, body: bytes) -> list[Event]:
    """The request's events, each from a sender the connection takes them from."""
    found = _events_of(platform, body)
    _admit(link, platform, found)
    return found


def _admit(link: Row, platform: Platform, found: list[Event]) -> None:
    """Refuse (401) events the connection does not take from their sender."""
    try:
        platform.admit(link, found)
    except Refused as error:
        raise BadSignature(str(error)) from None


def _events_of(platform: Platform, body: bytes) -> list[Event]:
    try:
        return platform.events(body)
    except Unparseable as error:
        raise InvalidPayload(f"The body is not a {platform.title} event: {error}") from None


def _verify_hubspot_app(body: bytes) -> None:
    """Check the request came from the operator's HubSpot app, signed with its client secret."""
    app = store.oauth_app(server.get_db(), "hubspot")
    if app is None:
        raise BadSignature(
            "No HubSpot app is registered to verify this request: the operator registers it "
            "with `contactdata oauth-app set hubspot`."
        )
    secret = store.unseal(current_app.config["KEY_SECRET_BYTES"], app["client_secret_sealed"])
    delivery = Delivery(
        request.method, _called_uri(), request.headers, request.args, body, server.now()
    )
    try:
        kind = hubspot.verify_app_request(secret, delivery, app["hubspot_v3_kinds"])
    except SignatureError as error:
        raise BadSignature(f"The request signature does not verify: {error}") from None
    except Refused as error:
        raise BadSignature(str(error)) from None
    if kind:  # from now on v3 alone for this kind, as for a connection
        _remember_hubspot_app_v3(kind)


def _remember_hubspot_app_v3(kind: str) -> None:
    try:
        with server.write(server.get_db()) as db:
            store.note_app_v3(db, "hubspot", kind)
    except server.DB_ERRORS:  # learned again with the next such request
        current_app.logger.warning("the HubSpot app's v3 on %s requests not kept", kind)


def _row(link: Row, event: Event) -> Row:
    return {
        "connection_id": link["id"],
        "event_key": event.key,
        "kind": event.kind,
        "record_id": event.record_id,
        "payload": json.dumps(event.payload),
        "thin": int(event.thin),
        "received_at": server.iso(server.now()),
    }
