"""HubSpot Webhooks API deliveries as the kill tests send them: one event per contact (ids
only), shuffled into signed batches."""

from __future__ import annotations

import json
import random
from typing import Any

from connector.platforms import hubspot

Row = dict[str, Any]


def event(n: int, record_id: str) -> Row:
    """A HubSpot Webhooks API event: a contact's e-mail changed (ids only)."""
    return {
        "eventId": 7000 + n, "subscriptionId": 4242, "portalId": 62515,
        "occurredAt": 1795000000000 + n, "subscriptionType": "contact.propertyChange",
        "attemptNumber": 0, "objectId": int(record_id), "propertyName": "email",
        "changeSource": "CRM", "appId": 54321,
    }  # fmt: skip


def batches(record_ids: list[str], rng: random.Random) -> list[bytes]:
    """One event per contact, shuffled into Webhooks API batches of 1 to 20 events (HubSpot
    sends up to 100 at once)."""
    events = [event(n, record_id) for n, record_id in enumerate(record_ids)]
    rng.shuffle(events)
    found = []
    while events:
        size = rng.randint(1, 20)
        found.append(json.dumps(events[:size]).encode())
        events = events[size:]
    return found


def signed_headers(secret: str, batch: bytes) -> dict[str, str]:
    """The headers HubSpot sends a batch with, signed (v1) with the app's `secret`."""
    return {
        "Content-Type": "application/json",
        "X-HubSpot-Signature-Version": "v1",
        "X-HubSpot-Signature": hubspot.sign_v1(secret, batch),
    }
