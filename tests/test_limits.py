import multiprocessing
from datetime import UTC, datetime, timedelta, timezone
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest
from sqlite_utils import Database

from server.limits import (
    Decision,
    Limit,
    LimitStatus,
    SqliteLimiter,
    Usage,
    decide,
    headers,
    limiter_for,
    organization_daily,
)

T0 = datetime(2025, 4, 10, 18, 49, 51, 250_000, tzinfo=UTC)
QPS = Limit.per_window("org:1:qps", "qps", 5, 1)
DAILY = Limit.per_utc_day("org:1:daily", "daily", 10_000)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.fixture
def limiter(database: Database, db_path: Path) -> SqliteLimiter:
    """A limiter counting in the test's database file (it makes its own tables there)."""
    return SqliteLimiter(db_path)


def status(decision: Decision, name: str) -> LimitStatus:
    return next(s for s in decision.statuses if s.limit.name == name)


def test_sliding_window_admits_exactly_its_quota_at_one_instant(limiter: SqliteLimiter) -> None:
    allowed = [limiter.hit([QPS], T0).allowed for _ in range(20)]
    assert allowed == [True] * 5 + [False] * 15
    assert not limiter.hit([QPS], at(0.999)).allowed
    assert [limiter.hit([QPS], at(1)).allowed for _ in range(6)] == [True] * 5 + [False]


def test_sliding_window_admits_again_once_the_oldest_leaves(limiter: SqliteLimiter) -> None:
    assert all(limiter.hit([QPS], at(0.2 * i)).allowed for i in range(5))
    refused = limiter.hit([QPS], at(0.9))
    assert not refused.allowed and refused.retry_after == 1
    assert limiter.hit([QPS], at(1)).allowed  # the request of T0 left the window
    assert not limiter.hit([QPS], at(1)).allowed
    assert limiter.hit([QPS], at(1.2)).allowed


def test_retry_after_is_when_the_oldest_request_leaves_the_window(
    limiter: SqliteLimiter,
) -> None:
    per_minute = Limit.per_window("key:1:discover", "discover", 3, 60)
    for seconds in (0, 10, 20):
        assert limiter.hit([per_minute], at(seconds)).allowed
    refused = limiter.hit([per_minute], at(30.5))
    assert (refused.allowed, refused.retry_after) == (False, 30)
    assert not limiter.hit([per_minute], at(59.9)).allowed
    assert limiter.hit([per_minute], at(60)).allowed


def test_a_refused_hit_counts_in_none_of_the_limits(
    limiter: SqliteLimiter, database: Database
) -> None:
    assert sum(limiter.hit([QPS, DAILY], T0).allowed for _ in range(15)) == 5
    assert database.execute("SELECT sum(count) FROM rate_counts").fetchone()[0] == 5
    assert status(limiter.hit([QPS, DAILY], at(2)), "daily").remaining == 10_000 - 6
    short_day = Limit.per_utc_day("org:2:daily", "daily", 2)
    other_qps = Limit.per_window("org:2:qps", "qps", 5, 1)
    decisions = [limiter.hit([other_qps, short_day], at(i / 10)) for i in range(4)]
    assert [d.allowed for d in decisions] == [True, True, False, False]
    assert status(decisions[-1], "qps").remaining == 3
    events = "SELECT count(*) FROM rate_events WHERE bucket = ?"
    assert database.execute(events, ["org:1:qps"]).fetchone()[0] == 1  # T0's were pruned
    assert database.execute(events, ["org:2:qps"]).fetchone()[0] == 2


def test_daily_limit_resets_at_utc_midnight(limiter: SqliteLimiter, database: Database) -> None:
    daily = Limit.per_utc_day("org:1:daily", "daily", 3)
    evening = datetime(2025, 4, 10, 23, 59, tzinfo=UTC)
    assert all(limiter.hit([daily], evening).allowed for _ in range(3))
    refused = limiter.hit([daily], evening + timedelta(seconds=30))
    assert (refused.allowed, refused.retry_after) == (False, 30)
    # 01:59:59.5 at UTC+2 is still April 10th in UTC.
    two_hours_east = datetime(2025, 4, 11, 1, 59, 59, 500_000, tzinfo=timezone(timedelta(hours=2)))
    assert limiter.hit([daily], two_hours_east).retry_after == 1
    midnight = datetime(2025, 4, 11, tzinfo=UTC)
    admitted = limiter.hit([daily], midnight)
    assert admitted.allowed and admitted.statuses[0] == LimitStatus(daily, 2, 86_400)
    rows = database.execute("SELECT period, count FROM rate_counts").fetchall()
    assert rows == [("2025-04-11", 1)]


def test_count_reads_a_limit_without_counting(limiter: SqliteLimiter) -> None:
    daily = organization_daily("1", 3)
    assert daily == Limit.per_utc_day("org:1:daily", "daily", 3)
    assert limiter.count(daily, at(0)) == 0
    limiter.hit([daily, QPS], at(0))
    limiter.hit([daily], at(1))
    assert [limiter.count(daily, at(2)) for _ in range(3)] == [2, 2, 2]
    assert limiter.count(QPS, at(0.5)) == 1 and limiter.count(QPS, at(1)) == 0
    assert limiter.count(daily, datetime(2025, 4, 11, tzinfo=UTC)) == 0  # a new UTC day


def test_remaining_and_reset_of_each_limit(limiter: SqliteLimiter) -> None:
    first = limiter.hit([QPS, DAILY], T0)
    # 18:49:51.25 to midnight is 5 h 10 min 8.75 s: 18608.75, rounded up.
    assert first == Decision(True, (LimitStatus(QPS, 4, 1), LimitStatus(DAILY, 9_999, 18_609)))
    per_minute = Limit.per_window("key:1:discover", "discover", 10, 60)
    limiter.hit([per_minute], T0)
    later = limiter.hit([per_minute], at(15))
    assert later.statuses == (LimitStatus(per_minute, 8, 45),)


def test_a_window_over_its_lowered_quota_waits_for_enough_requests_to_leave(
    limiter: SqliteLimiter,
) -> None:
    generous = Limit.per_window("org:1:minute", "minute", 10, 60)
    for seconds in range(10):
        limiter.hit([generous], at(seconds))
    lowered = Limit.per_window("org:1:minute", "minute", 4, 60)
    refused = limiter.hit([lowered], at(10))
    # Seven of the ten must leave: the seventh oldest, of second 6, leaves at second 66.
    assert (refused.allowed, refused.retry_after) == (False, 56)
    assert status(refused, "minute").remaining == 0


def test_decide_is_pure_arithmetic_over_usages() -> None:
    refused = decide([QPS, DAILY], [Usage(5, T0.timestamp() - 0.5), Usage(7)], T0)
    assert refused.statuses == (LimitStatus(QPS, 0, 1), LimitStatus(DAILY, 9_993, 18_609))
    assert refused.retry_after == 1
    assert decide([], [], T0) == Decision(True, ())


def test_headers_name_every_policy_and_the_tightest_one() -> None:
    allowed = Decision(True, (LimitStatus(QPS, 4, 1), LimitStatus(DAILY, 9_999, 18_609)))
    assert headers(allowed) == {
        "RateLimit-Policy": '"qps";q=5;w=1, "daily";q=10000;w=86400',
        "RateLimit": '"qps";r=4;t=1',
    }
    refused = Decision(False, (LimitStatus(QPS, 3, 1), LimitStatus(DAILY, 0, 18_609)), 18_609)
    assert headers(refused) == {
        "RateLimit-Policy": '"qps";q=5;w=1, "daily";q=10000;w=86400',
        "RateLimit": '"daily";r=0;t=18609',
        "Retry-After": "18609",
    }


def test_headers_prefer_the_longer_wait_among_equally_tight_policies() -> None:
    both_spent = Decision(False, (LimitStatus(QPS, 0, 1), LimitStatus(DAILY, 0, 600)), 600)
    assert headers(both_spent)["RateLimit"] == '"daily";r=0;t=600'
    assert headers(Decision(True, ())) == {}


def test_headers_escape_policy_names_as_structured_field_strings() -> None:
    odd = Limit.per_window("b", 'a"b\\c', 1, 1)
    assert headers(Decision(True, (LimitStatus(odd, 0, 1),)))["RateLimit"] == '"a\\"b\\\\c";r=0;t=1'


def test_limits_refuse_impossible_values() -> None:
    for make in (
        lambda: Limit.per_window("b", "qps", 0, 1),
        lambda: Limit.per_window("b", "qps", 1, 0),
        lambda: Limit("b", "daily", 1, 3600, "utc_day"),
        lambda: Limit.per_window("b", "qps\n", 1, 1),
    ):
        with pytest.raises(ValueError):
            make()


def test_a_limiter_refuses_shared_buckets_and_naive_datetimes(limiter: SqliteLimiter) -> None:
    with pytest.raises(ValueError, match="bucket"):
        limiter.hit([QPS, Limit.per_window(QPS.bucket, "minute", 100, 60)], T0)
    with pytest.raises(ValueError, match="timezone"):
        limiter.hit([QPS], datetime(2025, 4, 10, 12, 0))


def test_limiter_for_chooses_the_backend_the_setting_names(db_path: Path) -> None:
    chosen = limiter_for({"DB": str(db_path)})
    assert isinstance(chosen, SqliteLimiter) and chosen.path == f"{db_path}.limits"
    with pytest.raises(ValueError, match=r"RATE_LIMITER.*'redis'"):
        limiter_for({"DB": str(db_path), "RATE_LIMITER": "redis"})


def _hammer(path: str, start: Barrier, allowed: Queue) -> None:
    """One worker process: 25 hits on the shared bucket at one instant."""
    limiter = SqliteLimiter(path)
    limiter._db()  # open the connection before the race starts
    start.wait()
    allowed.put(sum(limiter.hit([QPS], T0).allowed for _ in range(25)))


def test_limits_hold_across_processes(database: Database, db_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    start, allowed = context.Barrier(4), context.Queue()
    workers = [
        context.Process(target=_hammer, args=(str(db_path), start, allowed)) for _ in range(4)
    ]
    for worker in workers:
        worker.start()
    counts = [allowed.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    assert sum(counts) == 5
    assert database.execute("SELECT count(*) FROM rate_events").fetchone()[0] == 5
