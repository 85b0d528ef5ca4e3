"""The wire rules of contract §1 that need no request: the JSON reader the service and the
connector's webhooks share, and the number type request models use."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

# Arrays and objects inside one another: far more than any caller or platform sends, and far
# fewer than would exhaust the interpreter's recursion wherever a document is walked or written.
MAX_NESTING = 64


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
