"""HubSpot's answers in the shapes its 2026-03 documents give them (tests/vendor/hubspot/, with
the departures recorded there): a record (SimplePublicObject), a batch's answer
(BatchResponseSimplePublicObject, and WithErrors for a 207), one error of a batch
(StandardError), an error answer (Error), a page of search results
(CollectionResponseWithTotalSimplePublicObject), a token answer (AccessTokenResponse) and the
429 body of HubSpot's usage-details page. The fakes build their answers from these, so what
HubSpot always sends is never left out."""

from __future__ import annotations

from typing import Any

Row = dict[str, Any]
CREATED_AT = "2026-01-05T09:30:00.000Z"
UPDATED_AT = "2026-11-23T12:00:00.000Z"
STARTED_AT = "2026-11-23T12:00:00.000Z"
COMPLETED_AT = "2026-11-23T12:00:00.100Z"
CORRELATION_ID = "aeb5f871-7f07-4993-9211-075dc63e7cbf"  # the documents' own example
REQUEST_ID = "3d3e35b7-0dae-4b9f-a6e3-9c230cbcf8dd"
# The usage-details page's example of each policy's 429 message.
LIMIT_MESSAGES = {
    "DAILY": "You have reached your daily limit.",
    "TEN_SECONDLY_ROLLING": "You have reached your ten_secondly_rolling limit.",
}


def record(record_id: str, properties: Row, **extra: Any) -> Row:
    """A record as the CRM objects API answers it (SimplePublicObject): its id, the
    properties asked for (None where defined but empty), when it was created and updated,
    and whether it is archived."""
    return {
        "id": str(record_id),
        "properties": dict(properties),
        "createdAt": CREATED_AT,
        "updatedAt": UPDATED_AT,
        "archived": False,
        **extra,
    }


def batch(results: list[Row], errors: list[Row] | None = None, status: str = "COMPLETE") -> Row:
    """A batch read's or update's answer: 200 without errors, 207 with them
    (BatchResponseSimplePublicObject / ...WithErrors)."""
    body: Row = {
        "status": status,
        "results": results,
        "startedAt": STARTED_AT,
        "completedAt": COMPLETED_AT,
    }
    if errors:
        body.update(numErrors=len(errors), errors=errors)
    return body


def batch_error(category: str, message: str, context: Row | None = None, **extra: Any) -> Row:
    """One error of a 207's `errors` (StandardError): its category and message, and the
    context naming what it is about (`{"ids": [...]}`)."""
    return {
        "status": "error",
        "category": category,
        "message": message,
        "context": context or {},
        "errors": [],
        "links": {},
        **extra,
    }


def error(category: str, message: str, **extra: Any) -> Row:
    """An error answer (the documents' Error; HubSpot adds "status": "error")."""
    return {
        "status": "error",
        "message": message,
        "correlationId": CORRELATION_ID,
        "category": category,
        **extra,
    }


def not_found() -> Row:
    """A 404 for a record id the account does not hold."""
    return error("OBJECT_NOT_FOUND", "Object not found.")


def rate_limited(policy: str = "TEN_SECONDLY_ROLLING") -> Row:
    """A 429, as https://developers.hubspot.com/docs/guides/apps/api-usage/usage-details shows
    it (tests/vendor/hubspot/departures.json): no `category`, an `errorType`, the policy."""
    return {
        "status": "error",
        "message": LIMIT_MESSAGES.get(policy, "You have reached your limit."),
        "errorType": "RATE_LIMIT",
        "correlationId": CORRELATION_ID,
        "policyName": policy,
        "requestId": REQUEST_ID,
    }


def search_page(results: list[Row], total: int, after: str | None = None) -> Row:
    """A page of CRM search results, `after` naming the next page when there is one."""
    page: Row = {"total": total, "results": results}
    if after is not None:
        page["paging"] = {"next": {"after": after}}
    return page


def token(access_token: str, refresh_token: str, expires_in: int = 1800, **extra: Any) -> Row:
    """The token endpoint's answer to a code or a refresh token (AccessTokenResponse)."""
    return {
        "access_token": access_token,
        "refresh_token": refresh_token,
        "expires_in": expires_in,
        "token_type": "bearer",
        "token_use": "access_token",
        **extra,
    }
