"""HTTP routes of enrichment (`/v7/enrich`, `/v7/enrich/bulk`) in the vendor's shapes.

Handlers admit the caller, read the body, call one use case of `enrich` and shape the reply.
Every response under `/v7/enrich` carries `smarteTransactionId` and `credits-deducted`
headers, errors included (contract §1, §4.2).

A request with an `Idempotency-Key` header (draft-ietf-httpapi-idempotency-key-header) is
answered once per organization, endpoint and key within IDEMPOTENCY_WINDOW: the key is
claimed in one write before enriching, and a 2xx answer is kept and given again, charged
nothing, to a copy with the same body (the SHA-256 of its raw bytes). A copy with another body
gets 422, one arriving while the first is being answered 409. A refused or failed request
keeps nothing (it was charged nothing), so its copy is tried afresh.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from flask import Blueprint, Response, current_app, g, jsonify, request

from server import auth, enrich, privacy
from server.clock import iso
from server.errors import (
    IdempotencyKeyReused,
    InvalidParameter,
    RequestInProgress,
    ServiceError,
)
from server.http.access import admit, get_db, key_from_headers, now
from server.http.body import json_body
from server.storage import store
from server.storage.db import DB_ERRORS, write_at_once

blueprint = Blueprint("enrich", __name__, url_prefix="/v7")

KEY_HEADER = "apikey"
IDEMPOTENCY_HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
IDEMPOTENCY_WINDOW = timedelta(hours=24)
# An unanswered claim older than this lost its request (the production server kills a worker
# silent for 30 s, server/http/serve.py): a copy then takes the key over.
CLAIM_LAPSES_AFTER = timedelta(seconds=60)
IN_PROGRESS_RETRY_AFTER = 2  # seconds
IDEMPOTENCY_KEY_PATTERN = r"[\x20-\x7e]{1,255}"  # printable ASCII, compared as sent
_IDEMPOTENCY_KEY = re.compile(IDEMPOTENCY_KEY_PATTERN)


@blueprint.before_request
def _assign_transaction_id() -> None:
    g.transaction_id = str(uuid.uuid4())


@blueprint.post("/enrich")
def enrich_record() -> Response:
    """Enrich one input record: the flat result object, or No Match."""
    who, body, key = _admitted("/v7/enrich")
    return _answered_once(who, key, lambda: _enriched(who, body))


@blueprint.post("/enrich/bulk")
def enrich_bulk() -> Response:
    """Enrich up to 100 records of `{"records": [...]}`; one entry per record, in order."""
    who, body, key = _admitted("/v7/enrich/bulk")
    return _answered_once(who, key, lambda: _enriched_bulk(who, body))


def _enriched(who: enrich.Requester, body: dict[str, Any]) -> Response:
    outcome = enrich.enrich(get_db(), who, body, now(), g.transaction_id)
    g.credits_deducted = outcome.credits
    return jsonify(outcome.result)


def _enriched_bulk(who: enrich.Requester, body: dict[str, Any]) -> Response:
    answers = enrich.enrich_bulk(get_db(), who, body, now(), g.transaction_id)
    g.credits_deducted = sum(a.credits for a in answers if isinstance(a, enrich.Outcome))
    return jsonify({"results": [bulk_entry(answer) for answer in answers]})


def bulk_entry(answer: enrich.Outcome | enrich.Failure) -> dict[str, Any]:
    """One record's answer: its HTTP-like status, transaction id, and result or error."""
    if isinstance(answer, enrich.Outcome):
        return {"status": 200, "smarteTransactionId": answer.transaction_id, "data": answer.result}
    error = answer.error
    return {
        "status": error.status,
        "smarteTransactionId": answer.transaction_id,
        "error": {"code": error.code, "message": error.message, "status": error.status},
    }


def _admitted(endpoint: str) -> tuple[enrich.Requester, dict[str, Any], str | None]:
    """The caller, the JSON body and the Idempotency-Key. With the key in a header, the caller
    is admitted first and a bad body is recorded as a transaction; else the key is read from
    the body. A bad Idempotency-Key is refused (and recorded) once the caller is admitted."""
    header_key = key_from_headers(KEY_HEADER)
    if header_key is None:
        body = json_body()
        who = _requester(key_from_headers(KEY_HEADER, [body.get("apikey")]), endpoint)
        with _recorded(who):
            return who, body, idempotency_key()
    who = _requester(header_key, endpoint)
    with _recorded(who):
        return who, json_body(), idempotency_key()


def _requester(key: str | None, endpoint: str) -> enrich.Requester:
    caller = admit(key)
    auth.require_active_organization(caller)
    return enrich.Requester(
        org_id=caller.org_id,
        tier=caller.tier,
        key_id=caller.key_id,
        endpoint=endpoint,
        request_id=g.get("request_id", ""),
        hash_of=privacy.hasher(current_app.config["KEY_SECRET_BYTES"]),
    )


@contextmanager
def _recorded(who: enrich.Requester) -> Iterator[None]:
    """Record a refusal raised inside as a transaction of `who` (nothing is charged)."""
    try:
        yield
    except ServiceError as error:
        enrich.record_failure(get_db(), who, error.code, now(), g.transaction_id)
        raise


# --- Idempotency-Key -------------------------------------------------------------------------


def idempotency_key() -> str | None:
    """The request's Idempotency-Key as sent (None: none sent); 400 unless it is 1 to 255
    printable ASCII characters (the draft's quoted form, `"…"`, is one such value)."""
    value = request.headers.get(IDEMPOTENCY_HEADER)
    if value is not None and not _IDEMPOTENCY_KEY.fullmatch(value):
        raise InvalidParameter(
            f"The {IDEMPOTENCY_HEADER} header must be 1 to 255 printable ASCII characters "
            "(a UUID will do)."
        )
    return value


def _answered_once(
    who: enrich.Requester, key: str | None, answer: Callable[[], Response]
) -> Response:
    """`answer()`, or for a copy of a request answered under its Idempotency-Key, that answer
    again; refusals of the key are recorded as transactions of `who`."""
    if key is None:
        return answer()
    g.idempotency_key = key
    scope = (who.org_id, who.endpoint, key)
    with _recorded(who):
        seen = _claim(scope)
    if seen is not None:
        return _replayed(seen)
    response = None
    try:
        response = answer()
        return response
    finally:
        _settle(scope, response)


def _claim(scope: store.KeyScope) -> store.Row | None:
    """Claim the key in one write: None when the request is new, else the answer kept for
    it (`_kept_answer`)."""
    db, moment = get_db(), now()
    fingerprint = hashlib.sha256(request.get_data(cache=True)).hexdigest()
    forget_before, lapsed = iso(moment - IDEMPOTENCY_WINDOW), iso(moment - CLAIM_LAPSES_AFTER)
    with write_at_once(db):
        seen = store.claim_idempotency_key(
            db, scope, fingerprint, iso(moment), forget_before, lapsed
        )
    return None if seen is None else _kept_answer(seen, fingerprint)


def _kept_answer(seen: store.Row, fingerprint: str) -> store.Row:
    """The row of a key seen before, if it holds this body's answer; 422 when the key came
    with another body, 409 while its first request is being answered."""
    if seen["fingerprint"] != fingerprint:
        raise IdempotencyKeyReused(
            f"This {IDEMPOTENCY_HEADER} was sent in the last 24 hours with a different body; "
            "send a new key with a new request, or this key with the first body."
        )
    if not seen["status"]:
        raise RequestInProgress(
            f"A request with this {IDEMPOTENCY_HEADER} is still being answered; send it again "
            f"after {IN_PROGRESS_RETRY_AFTER} seconds for its answer.",
            headers={"Retry-After": str(IN_PROGRESS_RETRY_AFTER)},
        )
    return seen


def _replayed(seen: store.Row) -> Response:
    """The kept answer given again: its status, body and transaction id; charged nothing."""
    headers = {"smarteTransactionId": seen["transaction_id"], REPLAYED_HEADER: "true"}
    return current_app.response_class(
        seen["body"], status=seen["status"], headers=headers, mimetype="application/json"
    )


def _settle(scope: store.KeyScope, response: Response | None) -> None:
    """Keep a 2xx answer for the key's copies, or drop the claim (nothing was charged)."""
    try:
        with write_at_once(get_db()) as db:
            if response is None or not 200 <= response.status_code < 300:
                store.release_idempotency_key(db, scope)
                return
            body, status = response.get_data(as_text=True), response.status_code
            store.answer_idempotency_key(db, scope, status, body, g.transaction_id)
    except DB_ERRORS:  # its copies get 409 until the claim lapses
        current_app.logger.exception("answer for an Idempotency-Key of org %s not kept", scope[0])


@blueprint.after_app_request
def _add_transaction_headers(response: Response) -> Response:
    """Every answer under /v7/enrich names its transaction and what it cost (0 on errors);
    an answer given again keeps the first's transaction. Every answer to a request with an
    accepted Idempotency-Key says whether it was given again."""
    if request.path.startswith("/v7/enrich"):
        response.headers.setdefault("smarteTransactionId", g.get("transaction_id") or _new_id())
        response.headers["credits-deducted"] = str(g.get("credits_deducted", 0))
        if g.get("idempotency_key") is not None:
            response.headers.setdefault(REPLAYED_HEADER, "false")
    return response


def _new_id() -> str:
    return str(uuid.uuid4())
