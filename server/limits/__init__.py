"""Rate limits (contract §6): what is limited, the decision, its headers, and the backends."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from server import config
from server.limits.base import (
    DAY,
    Decision,
    Kind,
    Limit,
    Limiter,
    LimitStatus,
    Usage,
    decide,
    headers,
    organization_daily,
)
from server.limits.postgres import PostgresLimiter
from server.limits.sqlite import SqliteLimiter

__all__ = [
    "DAY",
    "Decision",
    "Kind",
    "Limit",
    "LimitStatus",
    "Limiter",
    "PostgresLimiter",
    "SqliteLimiter",
    "Usage",
    "decide",
    "headers",
    "limiter_for",
    "organization_daily",
]


def limiter_for(settings: Mapping[str, Any]) -> Limiter:
    """The limiter the `RATE_LIMITER` setting names: "sqlite" (the default, `<DB>.limits`;
    on PostgreSQL, tables of the service's database, each request checked and counted in one
    statement, server/limits/postgres.py) or a Redis URL (`redis://…`, `rediss://…`), which
    loads redis-py only then."""
    backend = str(settings.get("RATE_LIMITER", "sqlite"))
    if backend == "sqlite" and config.is_url(settings["DB"]):
        return PostgresLimiter(settings["DB"])
    if backend == "sqlite":
        return SqliteLimiter(f"{settings['DB']}.limits")
    if backend.startswith(("redis://", "rediss://")):
        from server.limits.redis import RedisLimiter

        return RedisLimiter(backend)
    shown = backend.split("://", 1)[0] + "://…" if "://" in backend else backend
    raise ValueError(
        f"RATE_LIMITER setting: unknown rate limiter {shown!r}; known: sqlite, redis://…"
    )
