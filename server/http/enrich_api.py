"""HTTP routes of enrichment (`/v7/enrich`, `/v7/enrich/bulk`) in the vendor's shapes.

Handlers admit the caller, read the body, call one use case of `enrich` and shape the reply.
Every response under `/v7/enrich` carries `smarteTransactionId` and `credits-deducted`
headers, errors included (contract §1, §4.2).
"""

from __future__ import annotations

import uuid
from typing import Any

from flask import Blueprint, Response, current_app, g, jsonify, request

from server import auth, enrich, privacy
from server.errors import ServiceError
from server.http.access import admit, get_db, key_from_headers, now
from server.http.body import json_body

blueprint = Blueprint("enrich", __name__, url_prefix="/v7")

KEY_HEADER = "apikey"


@blueprint.before_request
def _assign_transaction_id() -> None:
    g.transaction_id = str(uuid.uuid4())


@blueprint.post("/enrich")
def enrich_record() -> Response:
    """Enrich one input record: the flat result object, or No Match."""
    who, body = _admitted("/v7/enrich")
    outcome = enrich.enrich(get_db(), who, body, now(), g.transaction_id)
    g.credits_deducted = outcome.credits
    return jsonify(outcome.result)


@blueprint.post("/enrich/bulk")
def enrich_bulk() -> Response:
    """Enrich up to 100 records of `{"records": [...]}`; one entry per record, in order."""
    who, body = _admitted("/v7/enrich/bulk")
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


def _admitted(endpoint: str) -> tuple[enrich.Requester, dict[str, Any]]:
    """The caller and the JSON body. With the key in a header, the caller is admitted first
    and a bad body is recorded as a transaction; else the key is read from the body."""
    header_key = key_from_headers(KEY_HEADER)
    if header_key is None:
        body = json_body()
        return _requester(key_from_headers(KEY_HEADER, [body.get("apikey")]), endpoint), body
    who = _requester(header_key, endpoint)
    try:
        return who, json_body()
    except ServiceError as error:
        enrich.record_failure(get_db(), who, error.code, now(), g.transaction_id)
        raise


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


@blueprint.after_app_request
def _add_transaction_headers(response: Response) -> Response:
    """Every answer under /v7/enrich names its transaction and what it cost (0 on errors)."""
    if request.path.startswith("/v7/enrich"):
        response.headers["smarteTransactionId"] = g.get("transaction_id") or str(uuid.uuid4())
        response.headers["credits-deducted"] = str(g.get("credits_deducted", 0))
    return response
