"""HubSpot Webhooks API deliveries as the kill tests send them: one event per contact (ids
only), shuffled into signed batches, sent again until a node acknowledges them."""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from typing import Any

import httpx

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


def deliver(
    client: httpx.Client, urls: list[str], first: int, batch: bytes, secret: str, deadline: float
) -> tuple[httpx.Response | None, Counter[str]]:
    """Send a signed `batch` as HubSpot does until a node answers other than 5xx: first to
    `urls[first % len(urls)]`, after a failure (down, killed mid-request, 5xx) to the next,
    as a load balancer would. The answer (None: `deadline`, a monotonic time, passed first)
    and the failures by cause."""
    headers = signed_headers(secret, batch)
    failures: Counter[str] = Counter()
    n = first
    while time.monotonic() < deadline:
        try:
            response = client.post(urls[n % len(urls)], content=batch, headers=headers)
        except httpx.TransportError as error:
            failures[type(error).__name__] += 1
        else:
            if response.status_code < 500:
                return response, failures
            failures[f"{response.status_code} {response.text[:200]}"] += 1
        n += 1
        time.sleep(0.05)
    return None, failures
