"""Rate limits counted in Redis, shared by every process on every machine that names it.

A sliding limit is a sorted set of counted requests scored by POSIX time, pruned to the
window on each counted hit; a daily limit is a hash of UTC date to count, emptied on the
bucket's first request of a day. One Lua script reads every limit of a request and counts it
in all of them only when all admit it, so the check and the count are one atomic step on the
server. Idle keys expire. The request's `now` is the caller's clock, as with SQLite: machines
sharing a Redis keep their clocks in step (NTP).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime, time, timedelta

import redis

from server.limits.base import DAY, Decision, Limit, Usage, decide, utc, utc_day, window_start

PREFIX = "contactdata:limits:"
_MARGIN = 60  # seconds an idle sliding bucket outlives its window

# KEYS: one per limit. ARGV: this request's member and POSIX time, then four per limit: its
# kind, quota, period (a sliding window's cut-off, or the UTC date) and the key's lifetime.
# A sliding window counts requests later than its cut-off; counting prunes the rest.
# Replies, per limit: the count before this request, and for a sliding limit the score of
# the request whose leaving admits one more ("" when none is counted).
_HIT = """
local member, now, usages, allowed = ARGV[1], ARGV[2], {}, true
for i, key in ipairs(KEYS) do
  local kind, quota, period = ARGV[4 * i - 1], tonumber(ARGV[4 * i]), ARGV[4 * i + 1]
  local count, oldest = 0, ""
  if kind == "utc_day" then
    count = tonumber(redis.call("HGET", key, period) or "0")
  else
    count = redis.call("ZCOUNT", key, "(" .. period, "+inf")
    if count > 0 then
      local offset = math.max(count - quota, 0)
      oldest = redis.call("ZRANGEBYSCORE", key, "(" .. period, "+inf",
                          "WITHSCORES", "LIMIT", offset, 1)[2]
    end
  end
  if count >= quota then allowed = false end
  usages[2 * i - 1], usages[2 * i] = count, oldest
end
if allowed then
  for i, key in ipairs(KEYS) do
    local kind, period, lifetime = ARGV[4 * i - 1], ARGV[4 * i + 1], ARGV[4 * i + 2]
    if kind == "utc_day" then
      if usages[2 * i - 1] == 0 then redis.call("DEL", key) end
      redis.call("HINCRBY", key, period, 1)
    else
      redis.call("ZREMRANGEBYSCORE", key, "-inf", period)
      redis.call("ZADD", key, now, member)
    end
    redis.call("EXPIRE", key, lifetime)
  end
end
return usages
"""


class RedisLimiter:
    """The `Limiter` over the Redis server at `url` (`redis://[:password@]host:port/db`,
    `rediss://` for TLS); connections are opened on first use, per process."""

    def __init__(self, url: str) -> None:
        self.redis = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
        self._hit = self.redis.register_script(_HIT)

    def key(self, bucket: str) -> str:
        """The Redis key holding `bucket`'s counts."""
        return PREFIX + bucket

    def hit(self, limits: Sequence[Limit], now: datetime) -> Decision:
        """Check all `limits` and count the request in each only if every one admits it."""
        if len({limit.bucket for limit in limits}) < len(limits):
            raise ValueError("each rate limit needs its own bucket")
        now = utc(now)
        arguments: list[str | int] = [secrets.token_hex(8), repr(now.timestamp())]
        for limit in limits:
            arguments += [limit.kind, limit.quota, _period(limit, now), _lifetime(limit, now)]
        replies = self._hit(keys=[self.key(limit.bucket) for limit in limits], args=arguments)
        pairs = zip(replies[::2], replies[1::2], strict=True)
        return decide(limits, [_usage(count, oldest) for count, oldest in pairs], now)

    def count(self, limit: Limit, now: datetime) -> int:
        """How many requests `limit` counts at `now`, counting none."""
        now, key = utc(now), self.key(limit.bucket)
        if limit.kind == "utc_day":
            return int(self.redis.hget(key, utc_day(now)) or 0)  # type: ignore[arg-type]
        return int(self.redis.zcount(key, f"({_period(limit, now)}", "+inf"))  # type: ignore[arg-type]


def _period(limit: Limit, now: datetime) -> str:
    """The UTC date a daily limit counts in; a sliding window's cut-off (a request exactly
    `window` seconds old has left), by datetime arithmetic as in SQLite."""
    if limit.kind == "utc_day":
        return utc_day(now)
    return repr(window_start(limit, now))


def _lifetime(limit: Limit, now: datetime) -> int:
    """Seconds a key lives after its last count: a minute past its window, or a day past its
    UTC day, a margin for machines' clocks (and tests' frozen ones) against Redis's."""
    if limit.kind == "utc_day":
        midnight = datetime.combine(now.date() + timedelta(days=1), time(), now.tzinfo)
        return int((midnight - now).total_seconds()) + 1 + DAY
    return limit.window + _MARGIN


def _usage(count: int, oldest: bytes) -> Usage:
    return Usage(int(count), float(oldest) if oldest else None)
