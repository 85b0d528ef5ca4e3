"""Reading a request: the JSON body under the wire rules of contract §1."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from flask import request
from pydantic import BaseModel, ValidationError

from server.errors import InvalidJson, InvalidParameter, UnsupportedMediaType

M = TypeVar("M", bound=BaseModel)
# pydantic's error types and what the field should have been, in the caller's terms.
_EXPECTED = {"string_type": "a string", "int_type": "a whole number", "bool_type": "true or false"}


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


def parse(model: type[M]) -> M:
    """The JSON body checked against a pydantic model; a bad field answers invalid_parameter."""
    body = json_body()
    try:
        return model.model_validate(body)
    except ValidationError as error:
        raise InvalidParameter(_field_problem(error.errors()[0])) from None


def _field_problem(problem: Any) -> str:
    field = ".".join(str(part) for part in problem["loc"]) or "body"
    if problem["type"] == "missing":
        return f"{field} is required."
    wanted = _EXPECTED.get(problem["type"])
    if wanted:
        return f"{field} must be {wanted}, not {_json_type(problem.get('input'))}."
    return f"{field}: {problem['msg']}."


def _json_type(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    if value is None:
        return "null"
    return names.get(type(value), "an array" if isinstance(value, list) else "an object")
