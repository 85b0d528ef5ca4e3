"""What an enrich URL answers, shaped for its platform: the mapped fields (the empty ones left
out where the platform would write them over its own), the request's own in the body (its
record id, transaction and credits), a batch's entries, a missing identifier told in the keys
the sender sends, and a kept answer given again for nothing. Pure: data in, data out."""

from __future__ import annotations

import json
from typing import Any

import server
from connector import mappings
from connector.platforms.base import Platform
from server import ServiceError

Row = dict[str, Any]


def entry(platform: Platform, mapping: mappings.Mapping, record: Any, answer: Any) -> Row:
    """One record's entry of a batch's answer: its status, its record id, its transaction and
    credits, and the enriched fields (`data`) or the error."""
    record_id = mapping.record_id(record) if isinstance(record, dict) else None
    if isinstance(answer, server.EnrichFailure):
        error = in_senders_words(platform, mapping, answer.error)
        shown_meta = meta(record_id, answer.transaction_id, 0)
        shown = {"code": error.code, "message": error.message, "status": error.status}
        return {"status": error.status, **shown_meta, "error": shown}
    found = fields(platform, mapping, answer.result)
    return {
        "status": 200,
        **meta(record_id, answer.transaction_id, answer.credits),
        "data": found,
    }


def fields(platform: Platform, mapping: mappings.Mapping, result: Row) -> Row:
    """The mapped fields of a result (the empty ones left out where the platform would write
    them over its own)."""
    mapped = mapping.outputs(result)
    if platform.omit_empty:
        mapped = {name: value for name, value in mapped.items() if not mappings.is_empty(value)}
    return mapped


def meta(record_id: str | None, transaction_id: str, credits: int) -> Row:
    """What an answer's body says of its request: the sender's record id, the transaction and
    the credits it cost."""
    return {
        "recordId": record_id,
        "smarteTransactionId": transaction_id,
        "creditsDeducted": credits,
    }


def enrich_input(platform: Platform, mapping: mappings.Mapping, payload: dict[str, Any]) -> Row:
    """The enrich input of a body: the mapping's fields (and the enrich API's own names, where
    the platform's senders may write them)."""
    return (
        mapping.with_vendor_names(payload)
        if platform.vendor_names
        else mapping.enrich_input(payload)
    )


def in_senders_words(
    platform: Platform, mapping: mappings.Mapping, error: ServiceError
) -> ServiceError:
    """`error`, a missing identifier told in the keys the platform's senders send."""
    if error.code != "missing_identifier" or not platform.vendor_names:
        return error
    return type(error)(mapping.missing_identifier(mappings.PLACEHOLDER), headers=error.headers)


def charged_nothing(body: str) -> str:
    """A kept answer's body, its creditsDeducted (of a batch's items too) made 0."""
    try:
        answer = json.loads(body)
    except ValueError:
        return body
    for item in answer if isinstance(answer, list) else [answer]:
        if isinstance(item, dict) and "creditsDeducted" in item:
            item["creditsDeducted"] = 0
    return json.dumps(answer)
