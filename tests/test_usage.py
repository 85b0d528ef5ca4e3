"""An organization's usage: credits, today's requests as the daily limit counts them, and
enrich calls and credits per UTC day, every day of the window present."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlite_utils import Database

from server import accounts, auth, limits, usage
from server.clock import iso
from server.storage import store

SECRET = b"test-secret"
NOW = datetime(2026, 3, 2, 0, 30, tzinfo=UTC)


def transaction(database: Database, org_id: str, moment: datetime, credits: int) -> None:
    store.save_transaction(
        database,
        {"id": f"t-{iso(moment)}-{credits}", "org_id": org_id, "endpoint": "/v7/enrich",
         "record_status": "Active", "credits": credits, "created_at": iso(moment)},
    )  # fmt: skip


def test_usage_of_an_organization(database: Database, db_path: Path) -> None:
    org, key = accounts.create_organization(
        database, SECRET, NOW, name="Acme", website="acme.example.org", tier="pro",
        credits=12, daily_limit=50,
    )  # fmt: skip
    other, _ = accounts.create_organization(
        database, SECRET, NOW, name="Globex", website="globex.example.org", tier="pro"
    )
    caller = auth.authenticate(database, SECRET, key, NOW)
    transaction(database, org["id"], NOW - timedelta(minutes=31), 1)  # yesterday, 23:59 UTC
    transaction(database, org["id"], NOW, 0)
    transaction(database, org["id"], NOW - timedelta(days=30), 1)  # before the window
    transaction(database, other["id"], NOW, 1)
    limiter = limits.SqliteLimiter(f"{db_path}.limits")
    daily = limits.organization_daily(org["id"], 50)
    for _ in range(4):
        limiter.hit([daily], NOW)

    found = usage.usage(database, limiter, caller, NOW)

    assert (found.credits, found.today, found.daily_limit) == (12, 4, 50)
    assert [day.day for day in found.days[:1] + found.days[-2:]] == [
        "2026-02-01", "2026-03-01", "2026-03-02",
    ]  # fmt: skip
    assert found.days[-2:] == [usage.Day("2026-03-01", 1, 1), usage.Day("2026-03-02", 1, 0)]
    assert sum(day.calls for day in found.days) == 2
    assert found.sources == [usage.Source("/v7/enrich", 2, 1)]  # the window's, Acme's only
    assert limiter.count(daily, NOW) == 4  # reading counted nothing


def test_usage_per_endpoint_busiest_first(database: Database, db_path: Path) -> None:
    """A connection's events and previews are endpoints of their own, so the settings page can
    say which connection made the calls."""
    org, key = accounts.create_organization(
        database, SECRET, NOW, name="Acme", website="acme.example.org", tier="pro"
    )
    caller = auth.authenticate(database, SECRET, key, NOW)
    for n, (endpoint, credits) in enumerate(
        [("/hooks/c1/events", 1)] * 3 + [("/settings/connections/c1/preview", 0)]
    ):
        store.save_transaction(
            database,
            {"id": f"t-{n}", "org_id": org["id"], "endpoint": endpoint,
             "record_status": "Active", "credits": credits, "created_at": iso(NOW)},
        )  # fmt: skip
    found = usage.usage(database, limits.SqliteLimiter(f"{db_path}.limits"), caller, NOW)
    assert found.sources == [
        usage.Source("/hooks/c1/events", 3, 3),
        usage.Source("/settings/connections/c1/preview", 1, 0),
    ]
    assert found.days[-1].calls == sum(source.calls for source in found.sources)
