"""An organization's usage as its admin sees it: the credit balance, today's requests against
`dailyRateLimit`, enrich calls and credits per day for a chart, and per endpoint (a
connection's events and previews are endpoints of their own)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta

from sqlite_utils import Database

from server import limits
from server.auth import Caller
from server.clock import iso
from server.limits.base import utc
from server.storage import store


@dataclass(frozen=True)
class Day:
    """One UTC day: enrich calls recorded as transactions, and the credits they cost."""

    day: str
    calls: int
    credits: int


@dataclass(frozen=True)
class Source:
    """Enrich calls made through one endpoint over the window, and the credits they cost."""

    endpoint: str
    calls: int
    credits: int


@dataclass(frozen=True)
class Usage:
    """What the usage page shows. `credits` None is an unlimited balance; `today` counts every
    request the daily limit counted (all endpoints of the HTTP API; a connector's enrichments
    are not limited), `days` and `sources` only enrich transactions, however made."""

    credits: int | None
    today: int
    daily_limit: int
    days: list[Day]
    sources: list[Source] = field(default_factory=list)


def usage(
    db: Database, limiter: limits.Limiter, caller: Caller, now: datetime, days: int = 30
) -> Usage:
    """The caller's organization's usage: the last `days` UTC days, today included, each
    present even without calls (a chart needs every day)."""
    org = store.organization(db, caller.org_id)
    assert org is not None  # the caller's key was just found through it
    today = utc(now).date()
    first = today - timedelta(days=days - 1)
    since = iso(datetime.combine(first, time.min, tzinfo=UTC))
    counted = {row["day"]: row for row in store.transactions_per_day(db, caller.org_id, since)}
    series = []
    for offset in range(days):
        day = (first + timedelta(days=offset)).isoformat()
        row = counted.get(day, {"calls": 0, "credits": 0})
        series.append(Day(day, row["calls"], row["credits"] or 0))
    daily = limits.organization_daily(caller.org_id, org["daily_rate_limit"])
    sources = [Source(**row) for row in store.transactions_per_endpoint(db, caller.org_id, since)]
    return Usage(
        org["credits"], limiter.count(daily, now), org["daily_rate_limit"], series, sources
    )
