"""Reading a request: its JSON body under the wire rules of contract §1 (server/wire.py), checked
against a pydantic model, and every refusal in the caller's terms."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from flask import request
from pydantic import BaseModel, ValidationError

from server.errors import InvalidJson, InvalidParameter, UnsupportedMediaType
from server.wire import UnreadableJson, decode_json

M = TypeVar("M", bound=BaseModel)
# pydantic's error types and what the field should have been, in the caller's terms.
_EXPECTED = {
    "string_type": "a string",
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "bool_type": "true or false",
    "list_type": "an array",
}
# Bound violations, in the caller's terms, from the context pydantic reports.
_BOUNDS = {
    "greater_than_equal": "must be at least {ge}",
    "less_than_equal": "must be at most {le}",
    "too_long": "must hold at most {max_length} entries",
    "string_too_long": "must be at most {max_length} characters long",
}


def json_body() -> dict[str, Any]:
    """The request's JSON object, or the contract error that says why there is none."""
    if request.mimetype != "application/json":
        shown = request.mimetype or "none"
        raise UnsupportedMediaType(f"Content-Type must be application/json, not {shown}.")
    raw = request.get_data(cache=True)
    try:
        body = decode_json(raw) if raw.strip() else None
    except UnreadableJson as error:
        raise InvalidJson(f"The request body is not valid JSON: {error}.") from None
    if not isinstance(body, dict):
        raise InvalidJson("The request body must be a JSON object.")
    return body


def parse(model: type[M]) -> M:
    """The JSON body checked against a pydantic model; a bad field answers invalid_parameter."""
    body = json_body()
    try:
        return model.model_validate(body)
    except ValidationError as error:
        raise InvalidParameter(_field_problem(error.errors()[0])) from None


def _field_problem(problem: Any) -> str:
    field = _field_name(problem["loc"])
    if problem["type"] == "missing":
        return f"{field} is required."
    wanted = _EXPECTED.get(problem["type"])
    if wanted:
        return f"{field} must be {wanted}, not {_json_type(problem.get('input'))}."
    bound = _BOUNDS.get(problem["type"])
    if bound:
        given = problem.get("input")
        shown = f"{len(given)}" if isinstance(given, list | str) else json.dumps(given)
        return f"{field} {bound.format(**problem.get('ctx', {}))}, not {shown}."
    return f"{field}: {problem['msg']}."


def _field_name(location: tuple[Any, ...]) -> str:
    """A field path as JSON callers write it: `records[2].email`."""
    name = ""
    for part in location:
        name += f"[{part}]" if isinstance(part, int) else f".{part}"
    return name.lstrip(".") or "body"


def _json_type(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    if value is None:
        return "null"
    return names.get(type(value), "an array" if isinstance(value, list) else "an object")
