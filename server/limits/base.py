"""Rate limits as data, the decision on one request, and the headers it becomes. Pure, no I/O.

A `Limiter` checks a request against several limits and counts it in all of them only when
every one admits it: a refused request changes nothing (contract §6). `SqliteLimiter` holds
the counts in a file beside the service's database, shared by the worker processes of one
machine. For several machines, `PostgresLimiter` keeps them in the service's PostgreSQL
database and `RedisLimiter` in Redis, each checking and counting a request in one step on the
server (a PL/pgSQL function, a Lua script). Backends read a `Usage` per limit and leave the
arithmetic to `decide`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from typing import Literal, Protocol

DAY = 86_400
Kind = Literal["sliding", "utc_day"]


@dataclass(frozen=True)
class Limit:
    """At most `quota` requests counted in `bucket` per window; `name` is the policy's name.

    A "sliding" limit holds in every interval of `window` seconds; a "utc_day" limit counts
    per calendar day in UTC and resets at 00:00 UTC (its `window` is a day).
    """

    bucket: str
    name: str
    quota: int
    window: int
    kind: Kind = "sliding"

    def __post_init__(self) -> None:
        if self.quota < 1 or self.window < 1:
            raise ValueError(f"limit {self.name!r}: quota and window must be positive")
        if self.kind == "utc_day" and self.window != DAY:
            raise ValueError(f"limit {self.name!r}: a UTC day is {DAY} seconds")
        if not (self.name.isascii() and self.name.isprintable()):
            raise ValueError(f"limit {self.name!r}: the name must be printable ASCII")

    @classmethod
    def per_window(cls, bucket: str, name: str, quota: int, window: int) -> Limit:
        """`quota` requests in any `window` seconds."""
        return cls(bucket, name, quota, window, "sliding")

    @classmethod
    def per_utc_day(cls, bucket: str, name: str, quota: int) -> Limit:
        """`quota` requests per calendar day in UTC."""
        return cls(bucket, name, quota, DAY, "utc_day")


@dataclass(frozen=True)
class LimitStatus:
    """One limit after the request: requests left, and whole seconds until it frees more."""

    limit: Limit
    remaining: int
    reset: int


@dataclass(frozen=True)
class Decision:
    """Whether the request may proceed; when not, `retry_after` seconds (at least 1)."""

    allowed: bool
    statuses: tuple[LimitStatus, ...]
    retry_after: int | None = None


@dataclass(frozen=True)
class Usage:
    """What a backend found for one limit before counting the request.

    `count` is the number of requests the limit counts now. For a sliding limit, `oldest` is
    the POSIX time of the counted request whose leaving the window admits one more: the
    oldest one, or, in a window holding more than its quota, the (count - quota + 1)-th
    oldest. None when nothing is counted, and for daily limits.
    """

    count: int
    oldest: float | None = None


class Limiter(Protocol):
    def hit(self, limits: Sequence[Limit], now: datetime) -> Decision:
        """Check `limits` at `now` (timezone-aware) and, only if all admit, count the request
        in each of them. Each limit needs its own bucket."""
        ...

    def count(self, limit: Limit, now: datetime) -> int:
        """How many requests `limit` counts at `now`, counting none (an admin's usage page)."""
        ...


def organization_daily(org_id: str, quota: int) -> Limit:
    """An organization's `dailyRateLimit` over all its keys and endpoints (contract §6)."""
    return Limit.per_utc_day(f"org:{org_id}:daily", "daily", quota)


def utc(now: datetime) -> datetime:
    """`now` in UTC; a naive datetime is refused (its day and timestamp would be guesses)."""
    if now.tzinfo is None:
        raise ValueError("rate limits need a timezone-aware datetime")
    return now.astimezone(UTC)


def utc_day(now: datetime) -> str:
    """The period a daily limit counts `now` in: `YYYY-MM-DD` of the UTC date."""
    return utc(now).date().isoformat()


def window_start(limit: Limit, now: datetime) -> float:
    """A sliding window's cut-off as a POSIX time, by datetime arithmetic: a request exactly
    `window` seconds old has left."""
    return (now - timedelta(seconds=limit.window)).timestamp()


def decide(limits: Sequence[Limit], usages: Sequence[Usage], now: datetime) -> Decision:
    """The decision on a request at `now`, given each limit's usage before it."""
    moment, pairs = utc(now), list(zip(limits, usages, strict=True))
    allowed = all(usage.count < limit.quota for limit, usage in pairs)
    statuses = tuple(_status(limit, usage, allowed, moment) for limit, usage in pairs)
    if allowed:
        return Decision(True, statuses)
    retry_after = max(status.reset for status in statuses if status.remaining == 0)
    return Decision(False, statuses, retry_after)


def _status(limit: Limit, usage: Usage, allowed: bool, now: datetime) -> LimitStatus:
    counted = usage.count + 1 if allowed else usage.count
    remaining = max(limit.quota - counted, 0)
    if limit.kind == "utc_day":
        midnight = datetime.combine(now.date() + timedelta(days=1), time(), UTC)
        return LimitStatus(limit, remaining, _whole_seconds((midnight - now).total_seconds()))
    oldest = usage.oldest
    if allowed:  # this request is counted too, and may be the oldest
        oldest = min(oldest if oldest is not None else math.inf, now.timestamp())
    if oldest is None:
        return LimitStatus(limit, remaining, 0)
    return LimitStatus(limit, remaining, _whole_seconds(oldest + limit.window - now.timestamp()))


def _whole_seconds(seconds: float) -> int:
    """Rounded up, at least 1 (rounded to microseconds first: float noise is not a second)."""
    return max(1, math.ceil(round(seconds, 6)))


def headers(decision: Decision) -> dict[str, str]:
    """`RateLimit-Policy`, `RateLimit` (the tightest policy) and, when refused, `Retry-After`.

    As in draft-ietf-httpapi-ratelimit-headers-08 and later: Structured Field lists of
    string items, e.g. `"qps";q=5;w=1, "daily";q=10000;w=86400` and `"qps";r=0;t=1`.
    """
    if not decision.statuses:
        return {}
    # The fewest left; among equals the longest wait, so `t` never undercuts Retry-After.
    tightest = min(decision.statuses, key=lambda status: (status.remaining, -status.reset))
    fields = {
        "RateLimit-Policy": ", ".join(_policy(status.limit) for status in decision.statuses),
        "RateLimit": f"{_sf_string(tightest.limit.name)};r={tightest.remaining};t={tightest.reset}",
    }
    if decision.retry_after is not None:
        fields["Retry-After"] = str(decision.retry_after)
    return fields


def _policy(limit: Limit) -> str:
    return f"{_sf_string(limit.name)};q={limit.quota};w={limit.window}"


def _sf_string(text: str) -> str:
    """A Structured Field String (RFC 8941 §3.3.3): quoted, with `\\` and `"` escaped."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
