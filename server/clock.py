"""Time as the service writes it: UTC, ISO 8601 with milliseconds and a +00:00 offset."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """The current time in UTC (the one call to the wall clock; pass `now` along from here)."""
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """`2025-04-10T18:49:51.000+00:00` (contract §1)."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}+00:00"
