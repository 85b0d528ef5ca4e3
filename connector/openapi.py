"""The connector's part of the OpenAPI document: the /hooks routes (a connection's, and the
HubSpot app's), and how each platform
proves a request is its own (each platform's `signing_schemes`), as security schemes."""

from __future__ import annotations

from collections.abc import Iterable

from flask import Flask

import server
from connector.platforms import PLATFORMS
from connector.platforms.base import Platform
from server import ERROR_DESCRIPTIONS, Operation, Schema

HOOK_ERRORS = {
    **ERROR_DESCRIPTIONS,
    400: "invalid_payload (not what the platform sends); on /enrich also invalid_parameter "
    "or missing_identifier.",
    401: "invalid_signature; on /enrich also invalid_api_key when the connection's key no "
    "longer works.",
    403: "The connection's key, its user or its organization is not active.",
    404: "not_found: no such connection (for /events, also one with no CRM to write back to).",
    503: "unavailable: the events could not be stored, or delivery_in_progress: a copy of this "
    "delivery (same webhook-id or callbackId) is being answered; send it again after "
    "Retry-After.",
}
# /v7/enrich's Idempotency-Key header, scoped to the connection.
IDEMPOTENCY_KEY: Schema = {
    **server.IDEMPOTENCY_KEY_PARAMETER,
    "description": "Answer this request once: a copy sent to this connection within 24 hours "
    "with the same key and the same body gets the first answer again, with its "
    "smarteTransactionId, credits-deducted 0 (creditsDeducted 0 in the body) and "
    "Idempotent-Replayed true. Only 2xx answers are kept.",
}
# The request's own, in the body of Zapier's, Make's and n8n's answers.
_META: dict[str, Schema] = {
    "recordId": {"type": ["string", "null"], "description": "The record id the body sent."},
    "smarteTransactionId": {"type": "string"},
    "creditsDeducted": {"type": "integer", "minimum": 0},
}
BATCH_ITEM: Schema = {
    "type": "object",
    "description": "One record of a batch: data (its mapped fields) or error.",
    "required": ["status", *_META],
    "properties": {
        "status": {"type": "integer"},
        **_META,
        "data": {"type": "object"},
        "error": {"type": "object"},
    },
}


def security_of(
    platforms: Iterable[Platform],
) -> tuple[dict[str, Schema], list[Schema]]:
    """The schemes of these platforms, and the operation's list of alternatives (`{}` when one
    of them signs nothing outside the body)."""
    schemes: dict[str, Schema] = {}
    unsigned = False
    for platform in platforms:
        found = platform.signing_schemes()
        schemes.update(found)
        unsigned = unsigned or not found
    alternatives: list[Schema] = [{name: []} for name in schemes]
    return schemes, [*alternatives, {}] if unsigned else alternatives


def hook_operations(
    enrich_security: list[Schema], events_security: list[Schema]
) -> dict[str, Operation]:
    """The two webhook routes by their Flask endpoint names."""
    return {
        "hooks.enrich_now": Operation(
            summary="Enrich an automation step's fields; the mapped result in the answer.",
            description="The body's field names are the connection's mapping file's (and, "
            "from an automation platform, the enrich API's own input names). A HubSpot "
            "custom workflow action is answered with outputFields and hs_execution_state. "
            "Zapier, Make and n8n get recordId, smarteTransactionId and creditsDeducted in the "
            "body too, and may send an array of 1 to 100 records, answered with an array in "
            "the same order (each record charged on its own; a refused one is an error item). "
            "A Standard Webhooks delivery, a custom action's execution, or a request with an "
            "Idempotency-Key is answered once: a copy gets the same answer, charged nothing.",
            tag="hooks",
            body={"type": ["object", "array"], "maxItems": 100},
            ok={
                "oneOf": [
                    {"type": "object"},
                    {"type": "array", "items": BATCH_ITEM},
                ]
            },
            errors=(400, 401, 402, 403, 404, 409, 413, 422, 500, 503),
            ok_headers=("smarteTransactionId", "credits-deducted", "Idempotent-Replayed"),
            error_headers=("smarteTransactionId", "credits-deducted"),
            security=enrich_security,
            parameters=(IDEMPOTENCY_KEY,),
            described=server.IDEMPOTENCY_ERRORS,
            retry_after=(409,),
        ),
        "hooks.receive_events": Operation(
            summary="Accept a CRM's events for later enrichment and write-back.",
            description="JSON from HubSpot (an object or a batch array), Pipedrive, Zoho and "
            "Dynamics; a SOAP Outbound Message (XML) from Salesforce, acknowledged in XML.",
            tag="hooks",
            body={"type": ["object", "array"]},
            ok={
                "type": "object",
                "properties": {"accepted": {"type": "integer", "minimum": 0}},
            },
            errors=(400, 401, 404, 413, 500, 503),
            other_media={"text/xml": {"type": "string"}},  # Salesforce: SOAP, answered in XML
            security=events_security,
        ),
    }


def hubspot_app_operations(security: list[Schema]) -> dict[str, Operation]:
    """The HubSpot app's own routes, which every installed account's requests come to."""
    return {
        "hooks.receive_hubspot_app_events": Operation(
            summary="Accept the HubSpot app's Webhooks API events, each account's for its "
            "connection.",
            description="Signed with the registered HubSpot app's client secret (v3, or v1). "
            "Routed by portalId to the connection of that HubSpot account; events of an account "
            "with no connection are acknowledged, logged and counted in `unrouted`, not stored.",
            tag="hooks",
            body={"type": "array", "items": {"type": "object"}},
            ok={
                "type": "object",
                "properties": {
                    "accepted": {"type": "integer", "minimum": 0},
                    "unrouted": {"type": "integer", "minimum": 0},
                },
            },
            errors=(400, 401, 413, 500, 503),
            security=security,
        ),
        "hooks.hubspot_app_action": Operation(
            summary="Answer the HubSpot app's custom workflow action for the account it runs in.",
            description="Signed with the registered HubSpot app's client secret (v3, or v2). "
            "Routed by origin.portalId and answered as a connection's /enrich answers a custom "
            "action, once per callbackId; an account with no connection gets FAIL_CONTINUE.",
            tag="hooks",
            body={"type": "object"},
            ok={"type": "object"},
            errors=(400, 401, 402, 403, 413, 500, 503),
            ok_headers=("smarteTransactionId", "credits-deducted"),
            error_headers=("smarteTransactionId", "credits-deducted"),
            security=security,
        ),
    }


def add_hooks(app: Flask) -> None:
    """Add the /hooks routes of `app` to its document (built by server.openapi)."""
    document = app.extensions["openapi"]
    platforms = PLATFORMS.values()
    schemes, enrich_security = security_of(platforms)
    _, events_security = security_of(p for p in platforms if p.crm)
    document["components"]["securitySchemes"].update(schemes)
    document["tags"].append(
        {"name": "hooks", "description": "Webhooks of connections: CRMs and automation platforms."}
    )
    _, hubspot_security = security_of([PLATFORMS["hubspot"]])
    operations = {
        **hook_operations(enrich_security, events_security),
        **hubspot_app_operations(hubspot_security),
    }
    server.add_operations(document, app, operations, HOOK_ERRORS)
