"""Reading a request: the JSON body under the wire rules of contract §1."""

from __future__ import annotations

import json
from typing import Any

from flask import request

from server.errors import InvalidJson, UnsupportedMediaType


def json_body() -> dict[str, Any]:
    """The request's JSON object, or the contract error that says why there is none."""
    if request.mimetype != "application/json":
        shown = request.mimetype or "none"
        raise UnsupportedMediaType(f"Content-Type must be application/json, not {shown}.")
    raw = request.get_data(cache=True)
    try:
        text = raw.decode("utf-8")  # RFC 8259: JSON between systems is UTF-8
        body = json.loads(text) if text.strip() else None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise InvalidJson(f"The request body is not valid JSON: {_reason(error)}.") from None
    if not isinstance(body, dict):
        raise InvalidJson("The request body must be a JSON object.")
    return body


def _reason(error: ValueError) -> str:
    if isinstance(error, json.JSONDecodeError):
        return f"{error.msg} at line {error.lineno} column {error.colno}"
    return "it is not UTF-8"
