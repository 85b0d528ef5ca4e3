"""What platforms send, read into events: `Event` (the platform's event id to deduplicate on,
the CRM record's id when the payload names it, the record's fields as the mapping reads them)
and `Unparseable` for bytes that are not what the platform sends. Each platform reads its own
bodies (`Platform.events`, connector/platforms/).

Zapier, Make, n8n and Marketo send no events: they call the enrich URL and use its answer.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


class Unparseable(ValueError):
    """A body that is not what the platform sends; the message says what was wrong."""


@dataclass(frozen=True)
class Event:
    """One change of one CRM record, as the platform reported it."""

    key: str
    record_id: str
    payload: dict[str, Any]
    thin: bool = False  # only ids: the record must be read from the CRM first
    source: dict[str, str] = field(default_factory=dict)  # e.g. Salesforce's OrganizationId


def digest(body: bytes) -> str:
    """A body's SHA-256, in hex: the key of an event its platform gives no id."""
    return hashlib.sha256(body).hexdigest()
