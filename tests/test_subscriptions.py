"""Zoho notification channels kept alive: the renew_subscriptions job (hourly) enables a
channel, renews it (for six days) once the expiry Zoho confirmed is within a day, and enables
a lapsed one again; a failure is reported and tried again at the next run."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from connector import connections, store, subscriptions
from connector.platforms.zoho import PLATFORM as ZOHO_PLATFORM
from tests.helpers.constants import NOW, SECRET
from tests.helpers.crm import FakeZohoWatch
from tests.helpers.orgs import organization
from tests.helpers.vendors import VendorTransport

ZOHO = "http://127.0.0.1:9"  # never contacted: the client's transport answers
PUBLIC_URL = "https://hooks.acme.example"


@pytest.fixture
def setup(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, connections.Added]:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    db = store.connect(db_path)
    _, key = organization(db)
    link = connections.add(
        db, SECRET.encode(), NOW, name="zoho", platform="zoho", api_key=key,
        crm_base_url=ZOHO, crm_token="1000.zoho-access-token",
    )  # fmt: skip
    return db, link


def renewing(db: Any, zoho: FakeZohoWatch) -> Callable[[datetime], dict[str, str]]:
    """A run of the renewal at a given time, over the fake."""
    client = httpx.Client(transport=VendorTransport(zoho))
    return lambda now: subscriptions.renew(db, SECRET.encode(), client, PUBLIC_URL, now)


def stored_expiry(db: Any, link: connections.Added) -> str:
    row = store.connection(db, link.row["id"])
    assert row is not None
    return str(row["zoho_channel_expires_at"])


def test_a_zoho_channel_is_enabled_then_renewed_when_a_day_is_left(setup: Any) -> None:
    db, link = setup
    zoho = FakeZohoWatch()
    renew = renewing(db, zoho)
    channel = ZOHO_PLATFORM.channel_id(link.row)
    assert renew(NOW) == {link.row["id"]: f"channel {channel} until 2026-11-29T12:00:00+00:00"}
    (request,) = zoho.requests
    assert (request.method, request.url.path) == ("POST", "/crm/v7/actions/watch")
    assert request.headers["authorization"] == "Zoho-oauthtoken 1000.zoho-access-token"
    assert json.loads(request.content)["watch"][0] == {
        "channel_id": channel,
        "events": [
            "Contacts.create",
            "Contacts.edit",
            "Leads.create",
            "Leads.edit",
            "Accounts.create",
            "Accounts.edit",
        ],
        "channel_expiry": "2026-11-29T12:00:00+00:00",
        "token": link.secret,
        "notify_url": f"https://hooks.acme.example/hooks/{link.row['id']}/events",
        "notify_on_related_action": False,
    }
    assert stored_expiry(db, link) == "2026-11-29T12:00:00.000+00:00"

    kept = renew(NOW + timedelta(days=4, hours=23))  # more than a day left: not asked
    assert kept == {link.row["id"]: f"channel {channel} until 2026-11-29T12:00:00+00:00: not due"}
    assert len(zoho.requests) == 1

    later = NOW + timedelta(days=5, hours=1)  # within a day: the same channel, six days more
    renewed = renew(later)
    assert renewed == {link.row["id"]: f"channel {channel} until 2026-12-04T13:00:00+00:00"}
    assert zoho.requests[1].method == "PATCH"
    assert json.loads(zoho.requests[1].content)["watch"][0]["channel_id"] == channel
    assert stored_expiry(db, link) == "2026-12-04T13:00:00.000+00:00"


def test_a_channel_is_renewed_from_the_expiry_zoho_confirms(setup: Any) -> None:
    """Zoho answers an expiry beyond its maximum with its one-hour default: the channel is
    renewed at the next hourly run, not when six days would have passed."""
    db, link = setup
    zoho = FakeZohoWatch()
    zoho.confirms = "2026-11-23T18:30:00+05:30"  # NOW plus Zoho's hour, in India's time
    renew = renewing(db, zoho)
    (outcome,) = renew(NOW).values()
    assert outcome.endswith(" until 2026-11-23T18:30:00+05:30")
    assert stored_expiry(db, link) == "2026-11-23T13:00:00.000+00:00"
    zoho.confirms = "2026-11-23T19:20:00+05:30"
    (outcome,) = renew(NOW + timedelta(minutes=50)).values()
    assert outcome.endswith(" until 2026-11-23T19:20:00+05:30")
    assert [request.method for request in zoho.requests] == ["POST", "PATCH"]
    assert stored_expiry(db, link) == "2026-11-23T13:50:00.000+00:00"


def test_a_lapsed_channel_is_enabled_again(setup: Any) -> None:
    db, link = setup
    zoho = FakeZohoWatch()
    zoho.confirms = "2026-11-23T13:00:00+00:00"
    renew = renewing(db, zoho)
    renew(NOW)
    zoho.confirms = ""
    later = NOW + timedelta(hours=3)  # the worker was down: the channel lapsed two hours ago
    (outcome,) = renew(later).values()
    assert outcome.endswith(" until 2026-11-29T15:00:00+00:00")
    assert [request.method for request in zoho.requests] == ["POST", "POST"]
    assert stored_expiry(db, link) == "2026-11-29T15:00:00.000+00:00"


def test_a_failed_renewal_is_reported_and_the_next_run_tries_again(setup: Any) -> None:
    db, _ = setup
    zoho = FakeZohoWatch()
    zoho.failures.append(httpx.Response(503, json={"code": "INTERNAL_ERROR"}))
    client = httpx.Client(transport=VendorTransport(zoho))
    (outcome,) = subscriptions.renew(db, SECRET.encode(), client, PUBLIC_URL, NOW).values()
    assert outcome.startswith("failed: 503")
    (outcome,) = subscriptions.renew(db, SECRET.encode(), client, PUBLIC_URL, NOW).values()
    assert outcome.startswith("channel ") and len(zoho.requests) == 2


def test_only_zoho_connections_have_channels(db_path: Path) -> None:
    db = store.connect(db_path)
    _, key = organization(db)
    connections.add(db, SECRET.encode(), NOW, name="zap", platform="zapier", api_key=key)
    client = httpx.Client(transport=VendorTransport(FakeZohoWatch()))
    assert subscriptions.renew(db, SECRET.encode(), client, PUBLIC_URL, NOW) == {}
