"""Reading a request: the JSON body under the wire rules of contract §1, and the JSON reader the
connector's webhooks share."""

from __future__ import annotations

import json
from typing import Annotated, Any, TypeVar

from flask import request
from pydantic import BaseModel, BeforeValidator, ValidationError
from pydantic_core import PydanticCustomError

from server.errors import InvalidJson, InvalidParameter, UnsupportedMediaType

M = TypeVar("M", bound=BaseModel)
# Arrays and objects inside one another: far more than any caller or platform sends, and far
# fewer than would exhaust the interpreter's recursion wherever a document is walked or written.
MAX_NESTING = 64
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


def _numbers_only(value: Any) -> Any:
    if isinstance(value, bool | str):
        raise PydanticCustomError("int_type", "Input should be a valid integer")
    return value


# For an int field (after its Field bounds, so they stay JSON Schema's minimum and maximum):
# JSON has one number type, and 100.0 is the whole number 100, as JSON Schema's "integer" and
# the published document say; "100" and true are not numbers and are refused.
NUMBERS_ONLY = BeforeValidator(_numbers_only)
WholeNumber = Annotated[int, NUMBERS_ONLY]


class UnreadableJson(ValueError):
    """Bytes that are not a JSON document the service can hold; the message says why."""


def decode_json(raw: bytes) -> Any:
    """The JSON document in `raw`: UTF-8 (RFC 8259), no NaN or Infinity, nested at most
    MAX_NESTING deep, and with no string holding half of a UTF-16 surrogate pair (a lone
    `\\udc80` escape: Python reads it, but no UTF-8 store or answer can hold it; I-JSON, RFC
    7493, forbids it)."""
    try:
        document = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise UnreadableJson("it is not UTF-8") from None
    except json.JSONDecodeError as error:
        raise UnreadableJson(f"{error.msg} at line {error.lineno} column {error.colno}") from None
    except RecursionError:
        raise UnreadableJson(f"it nests more than {MAX_NESTING} levels deep") from None
    _check_document(document)
    return document


def _no_constant(name: str) -> None:
    """Python reads NaN and Infinity; JSON has no such values."""
    raise UnreadableJson(f"{name} is not a JSON value")


def _check_document(document: Any) -> None:
    """Walk the document without recursion: its depth and its strings, keys included."""
    pending: list[tuple[Any, int]] = [(document, 0)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, str):
            _check_text(value)
        elif isinstance(value, dict | list):
            if depth == MAX_NESTING:
                raise UnreadableJson(f"it nests more than {MAX_NESTING} levels deep")
            items = [*value, *value.values()] if isinstance(value, dict) else value
            pending.extend((item, depth + 1) for item in items)


def _check_text(text: str) -> None:
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UnreadableJson("a string holds a lone UTF-16 surrogate (\\ud800-\\udfff)") from None


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
