"""Zoho notification channels kept alive: enabled or renewed (each time for six days) for
every Zoho connection at each run of the renew_subscriptions job; a failure is reported."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from connector import connections, store, subscriptions
from server import accounts

SECRET = "test-secret"
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
ZOHO = "http://127.0.0.1:9"  # never contacted: the client's transport answers
PUBLIC_URL = "https://hooks.acme.example"


class FakeZoho:
    """Answers /crm/v7/actions/watch as Zoho documents, confirming the expiry asked for
    (or the queued failures first); keeps the requests."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.failures: list[httpx.Response] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.failures:
            return self.failures.pop(0)
        (channel,) = json.loads(request.content)["watch"]
        event = {"channel_expiry": channel["channel_expiry"], "resource_name": "Contacts",
                 "channel_id": channel["channel_id"]}  # fmt: skip
        answer = {"code": "SUCCESS", "details": {"events": [event]}, "status": "success",
                  "message": "Successfully updated the subscribe details"}  # fmt: skip
        return httpx.Response(200, json={"watch": [answer]})


@pytest.fixture
def setup(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, connections.Added]:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    db = store.connect(db_path)
    _, key = accounts.create_organization(
        db, SECRET.encode(), NOW, name="Acme", website="acme.example", tier="pro"
    )
    link = connections.add(
        db, SECRET.encode(), NOW, name="zoho", platform="zoho", api_key=key,
        crm_base_url=ZOHO, crm_token="1000.zoho-access-token",
    )  # fmt: skip
    return db, link


def test_a_zoho_channel_is_enabled_then_renewed(setup: Any) -> None:
    db, link = setup
    zoho = FakeZoho()
    client = httpx.Client(transport=httpx.MockTransport(zoho))
    channel = connections.channel_id(link.row)
    assert subscriptions.renew(db, SECRET.encode(), client, PUBLIC_URL, NOW) == {
        link.row["id"]: f"channel {channel} until 2026-11-29T12:00:00+00:00"
    }
    (request,) = zoho.requests
    assert (request.method, request.url.path) == ("PATCH", "/crm/v7/actions/watch")
    assert request.headers["authorization"] == "Zoho-oauthtoken 1000.zoho-access-token"
    assert json.loads(request.content)["watch"][0] == {
        "channel_id": channel,
        "events": ["Contacts.create", "Contacts.edit"],
        "channel_expiry": "2026-11-29T12:00:00+00:00",
        "token": link.secret,
        "notify_url": f"https://hooks.acme.example/hooks/{link.row['id']}/events",
        "notify_on_related_action": False,
    }
    later = NOW + timedelta(hours=12)  # the next run: the same channel, six days from then
    renewed = subscriptions.renew(db, SECRET.encode(), client, PUBLIC_URL, later)
    assert renewed == {link.row["id"]: f"channel {channel} until 2026-11-30T00:00:00+00:00"}
    assert json.loads(zoho.requests[1].content)["watch"][0]["channel_id"] == channel


def test_a_failed_renewal_is_reported_and_the_next_run_tries_again(setup: Any) -> None:
    db, _ = setup
    zoho = FakeZoho()
    zoho.failures.append(httpx.Response(503, json={"code": "INTERNAL_ERROR"}))
    client = httpx.Client(transport=httpx.MockTransport(zoho))
    (outcome,) = subscriptions.renew(db, SECRET.encode(), client, PUBLIC_URL, NOW).values()
    assert outcome.startswith("failed: 503")
    (outcome,) = subscriptions.renew(db, SECRET.encode(), client, PUBLIC_URL, NOW).values()
    assert outcome.startswith("channel ") and len(zoho.requests) == 2


def test_only_zoho_connections_have_channels(db_path: Path) -> None:
    db = store.connect(db_path)
    _, key = accounts.create_organization(
        db, SECRET.encode(), NOW, name="Acme", website="acme.example", tier="pro"
    )
    connections.add(db, SECRET.encode(), NOW, name="zap", platform="zapier", api_key=key)
    client = httpx.Client(transport=httpx.MockTransport(FakeZoho()))
    assert subscriptions.renew(db, SECRET.encode(), client, PUBLIC_URL, NOW) == {}
