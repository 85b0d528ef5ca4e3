"""The one place that renders errors, of every route, in the shape of contract §2."""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, g, jsonify, request
from werkzeug.exceptions import HTTPException

from server.errors import ServiceError

log = logging.getLogger(__name__)


# What werkzeug raises for protocol-level problems, in the contract's words.
_HTTP_CODES = {
    400: ("invalid_json", "The request body is not valid JSON."),
    404: ("not_found", "No such endpoint: {path}."),
    405: ("method_not_allowed", "{method} is not allowed on {path}; use {allowed}."),
    413: ("payload_too_large", "The request body is larger than 1 MiB."),
    415: ("unsupported_media_type", "Content-Type must be application/json."),
}


def error_response(status: int, code: str, message: str) -> Response:
    """The contract §2 body for an error, with its status."""
    response = jsonify({"error": {"code": code, "message": message, "status": status}})
    response.status_code = status
    return response


def _render_service_error(error: ServiceError) -> Response:
    response = error_response(error.status, error.code, error.message)
    response.headers.update(error.headers)
    return response


def _render_http_exception(error: HTTPException) -> Response:
    status = error.code or 500
    if status == 413:
        _drain_body()
    code, template = _HTTP_CODES.get(status, ("internal_error", "The request failed."))
    allowed = " or ".join(m for m in getattr(error, "valid_methods", None) or [] if m != "HEAD")
    message = template.format(method=request.method, path=request.path, allowed=allowed)
    response = error_response(status, code, message)
    if status == 405 and allowed:
        response.headers["Allow"] = ", ".join(error.valid_methods)
    return response


def _render_unexpected(error: Exception) -> Response:
    log.exception("unhandled error, request id %s", g.get("request_id", "-"), exc_info=error)
    return error_response(500, "internal_error", "An internal error occurred; it was logged.")


def _drain_body() -> None:
    """Read and discard an oversize body so the client gets the 413 rather than a reset."""
    stream = request.environ.get("wsgi.input")
    if stream is not None:
        drain(stream, request.content_length)


def drain(stream: Any, length: int | None = None, limit: int = 64 << 20) -> None:
    """Read and discard up to `length` bytes (the rest, when not given) of `stream`, at most
    `limit`: a client still sending would see its connection reset instead of our answer."""
    remaining = min(length or limit, limit)
    while remaining > 0:
        chunk = stream.read(min(remaining, 1 << 16))
        if not chunk:
            break
        remaining -= len(chunk)


def init_app(app: Flask) -> None:
    """Render every error of every route in the contract's shape."""
    app.register_error_handler(ServiceError, _render_service_error)
    app.register_error_handler(HTTPException, _render_http_exception)
    app.register_error_handler(Exception, _render_unexpected)
