"""Error classes of the service, each with its contract §2 code and HTTP status (rendered by
server/http/error_handlers.py)."""

from __future__ import annotations


class ServiceError(Exception):
    """An error with an HTTP status and a contract error code; the message is for people."""

    status = 500
    code = "internal_error"

    def __init__(self, message: str, *, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.headers = headers or {}


class InvalidJson(ServiceError):
    status, code = 400, "invalid_json"


class InvalidParameter(ServiceError):
    status, code = 400, "invalid_parameter"


class MissingIdentifier(ServiceError):
    status, code = 400, "missing_identifier"


class UnsupportedMediaType(ServiceError):
    status, code = 415, "unsupported_media_type"


class Unauthorized(ServiceError):
    status, code = 401, "unauthorized"


class InvalidApiKey(ServiceError):
    status, code = 401, "invalid_api_key"


class InsufficientCredits(ServiceError):
    status, code = 402, "insufficient_credits"


class Forbidden(ServiceError):
    """403 with one of CODES (the OpenAPI document lists them)."""

    status = 403
    CODES = (
        "key_suspended",
        "user_suspended",
        "user_deleted",
        "organization_inactive",
        "admin_required",
    )

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class NotFound(ServiceError):
    status, code = 404, "not_found"


class NotEligible(ServiceError):
    status, code = 409, "not_eligible"


class AlreadyExists(ServiceError):
    status, code = 409, "already_exists"


class RequestInProgress(ServiceError):
    """A copy of this request (the same Idempotency-Key) is still being answered."""

    status, code = 409, "request_in_progress"


class IdempotencyKeyReused(ServiceError):
    """An Idempotency-Key sent again with a different body."""

    status, code = 422, "idempotency_key_reused"


class RateLimitExceeded(ServiceError):
    status, code = 429, "rate_limit_exceeded"
