"""The limiters, each test run over every backend (SQLite, Redis, PostgreSQL), the pure
decision and its headers, and limits holding across processes and across servers sharing one
Redis."""

from __future__ import annotations

import multiprocessing
import shutil
import threading
from collections.abc import Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta, timezone
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import redis
from sqlite_utils import Database

from server.http.app import create_app
from server.limits import (
    DAY,
    Decision,
    Limit,
    Limiter,
    LimitStatus,
    PostgresLimiter,
    SqliteLimiter,
    Usage,
    decide,
    headers,
    limiter_for,
    organization_daily,
)
from server.limits import sqlite as sqlite_limits
from server.storage import db, pg
from tests.helpers.constants import SECRET
from tests.helpers.orgs import organization
from tests.helpers.postgres import PostgresServer
from tests.helpers.redis_server import redis_server
from tests.servers import free_port, serve, stop

T0 = datetime(2025, 4, 10, 18, 49, 51, 250_000, tzinfo=UTC)
QPS = Limit.per_window("org:1:qps", "qps", 5, 1)
DAILY = Limit.per_utc_day("org:1:daily", "daily", 10_000)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture
def postgres_url(postgres: PostgresServer) -> Iterator[str]:
    """A fresh PostgreSQL database with the service's schema (the limiter's tables in it)."""
    url = postgres.create_database(postgres.migrated_template())
    yield url
    pg.release(url)


@pytest.fixture(params=["sqlite", "redis", "postgresql"])
def settings(request: pytest.FixtureRequest, db_path: Path) -> dict[str, str]:
    """Settings choosing each backend: SQLite beside the test's database, the tests' Redis
    server, emptied first, or a PostgreSQL database, whose own tables hold the counts."""
    if request.param == "sqlite":
        return {"DB": str(db_path)}
    if request.param == "postgresql":
        return {"DB": request.getfixturevalue("postgres_url")}
    url = request.getfixturevalue("redis_url")
    with closing(redis.Redis.from_url(url)) as client:
        client.flushdb()
    return {"DB": str(db_path), "RATE_LIMITER": url}


@pytest.fixture
def limiter(settings: dict[str, str]) -> Limiter:
    return limiter_for(settings)


def stored_events(limiter: Any, bucket: str) -> int:
    """How many requests the backend keeps for the sliding limit of `bucket`."""
    if isinstance(limiter, SqliteLimiter):
        with closing(Database(limiter.path)) as database:
            query = "SELECT count(*) FROM rate_events WHERE bucket = ?"
            return database.execute(query, [bucket]).fetchone()[0]
    if isinstance(limiter, PostgresLimiter):
        with psycopg.connect(limiter.url) as conn:
            query = "SELECT count(*) FROM rate_events WHERE bucket = %s"
            return conn.execute(query, [bucket]).fetchone()[0]  # type: ignore[index]
    return limiter.redis.zcard(limiter.key(bucket))


def stored_days(limiter: Any, bucket: str) -> dict[str, int]:
    """The counts the backend keeps for the daily limit of `bucket`, by UTC date."""
    if isinstance(limiter, SqliteLimiter):
        with closing(Database(limiter.path)) as database:
            query = "SELECT period, count FROM rate_counts WHERE bucket = ?"
            return dict(database.execute(query, [bucket]).fetchall())
    if isinstance(limiter, PostgresLimiter):
        with psycopg.connect(limiter.url) as conn:
            query = "SELECT period, count FROM rate_counts WHERE bucket = %s"
            return dict(conn.execute(query, [bucket]).fetchall())  # type: ignore[arg-type]
    days = limiter.redis.hgetall(limiter.key(bucket))
    return {day.decode(): int(count) for day, count in days.items()}


def status(decision: Decision, name: str) -> LimitStatus:
    return next(s for s in decision.statuses if s.limit.name == name)


def test_sliding_window_admits_exactly_its_quota_at_one_instant(limiter: Limiter) -> None:
    allowed = [limiter.hit([QPS], T0).allowed for _ in range(20)]
    assert allowed == [True] * 5 + [False] * 15
    assert not limiter.hit([QPS], at(0.999)).allowed
    assert [limiter.hit([QPS], at(1)).allowed for _ in range(6)] == [True] * 5 + [False]


def test_sliding_window_admits_again_once_the_oldest_leaves(limiter: Limiter) -> None:
    assert all(limiter.hit([QPS], at(0.2 * i)).allowed for i in range(5))
    refused = limiter.hit([QPS], at(0.9))
    assert not refused.allowed and refused.retry_after == 1
    assert limiter.hit([QPS], at(1)).allowed  # the request of T0 left the window
    assert not limiter.hit([QPS], at(1)).allowed
    assert limiter.hit([QPS], at(1.2)).allowed


def test_retry_after_is_when_the_oldest_request_leaves_the_window(
    limiter: Limiter,
) -> None:
    per_minute = Limit.per_window("key:1:discover", "discover", 3, 60)
    for seconds in (0, 10, 20):
        assert limiter.hit([per_minute], at(seconds)).allowed
    refused = limiter.hit([per_minute], at(30.5))
    assert (refused.allowed, refused.retry_after) == (False, 30)
    assert not limiter.hit([per_minute], at(59.9)).allowed
    assert limiter.hit([per_minute], at(60)).allowed


def test_a_refused_hit_counts_in_none_of_the_limits(limiter: Limiter) -> None:
    assert sum(limiter.hit([QPS, DAILY], T0).allowed for _ in range(15)) == 5
    assert stored_days(limiter, DAILY.bucket) == {"2025-04-10": 5}
    assert status(limiter.hit([QPS, DAILY], at(2)), "daily").remaining == 10_000 - 6
    short_day = Limit.per_utc_day("org:2:daily", "daily", 2)
    other_qps = Limit.per_window("org:2:qps", "qps", 5, 1)
    decisions = [limiter.hit([other_qps, short_day], at(i / 10)) for i in range(4)]
    assert [d.allowed for d in decisions] == [True, True, False, False]
    assert status(decisions[-1], "qps").remaining == 3
    assert stored_events(limiter, "org:1:qps") == 1  # T0's were pruned
    assert stored_events(limiter, "org:2:qps") == 2


def test_daily_limit_resets_at_utc_midnight(limiter: Limiter) -> None:
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
    assert stored_days(limiter, daily.bucket) == {"2025-04-11": 1}


def test_count_reads_a_limit_without_counting(limiter: Limiter) -> None:
    daily = organization_daily("1", 3)
    assert daily == Limit.per_utc_day("org:1:daily", "daily", 3)
    assert limiter.count(daily, at(0)) == 0
    limiter.hit([daily, QPS], at(0))
    limiter.hit([daily], at(1))
    assert [limiter.count(daily, at(2)) for _ in range(3)] == [2, 2, 2]
    assert limiter.count(QPS, at(0.5)) == 1 and limiter.count(QPS, at(1)) == 0
    assert limiter.count(daily, datetime(2025, 4, 11, tzinfo=UTC)) == 0  # a new UTC day


def test_remaining_and_reset_of_each_limit(limiter: Limiter) -> None:
    first = limiter.hit([QPS, DAILY], T0)
    # 18:49:51.25 to midnight is 5 h 10 min 8.75 s: 18608.75, rounded up.
    assert first == Decision(True, (LimitStatus(QPS, 4, 1), LimitStatus(DAILY, 9_999, 18_609)))
    per_minute = Limit.per_window("key:1:discover", "discover", 10, 60)
    limiter.hit([per_minute], T0)
    later = limiter.hit([per_minute], at(15))
    assert later.statuses == (LimitStatus(per_minute, 8, 45),)


def test_a_window_over_its_lowered_quota_waits_for_enough_requests_to_leave(
    limiter: Limiter,
) -> None:
    generous = Limit.per_window("org:1:minute", "minute", 10, 60)
    for seconds in range(10):
        limiter.hit([generous], at(seconds))
    lowered = Limit.per_window("org:1:minute", "minute", 4, 60)
    refused = limiter.hit([lowered], at(10))
    # Seven of the ten must leave: the seventh oldest, of second 6, leaves at second 66.
    assert (refused.allowed, refused.retry_after) == (False, 56)
    assert status(refused, "minute").remaining == 0


def test_limits_as_large_as_an_organizations_admit_and_count(limiter: Limiter) -> None:
    """10**12, the most an organization's limits may be (server/accounts.py)."""
    daily = organization_daily("1", 10**12)
    per_second = Limit.per_window("org:1:qps", "qps", 10**12, 1)
    decision = limiter.hit([per_second, daily], T0)
    assert decision.allowed and status(decision, "daily").remaining == 10**12 - 1
    assert limiter.count(daily, T0) == 1 and limiter.count(per_second, T0) == 1


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


def test_a_limiter_refuses_shared_buckets_and_naive_datetimes(limiter: Limiter) -> None:
    with pytest.raises(ValueError, match="bucket"):
        limiter.hit([QPS, Limit.per_window(QPS.bucket, "minute", 100, 60)], T0)
    with pytest.raises(ValueError, match="timezone"):
        limiter.hit([QPS], datetime(2025, 4, 10, 12, 0))


def sqlite_steps(limiter: SqliteLimiter, read: Any) -> int:
    """How many SQLite virtual machine steps `read()` takes on the limiter's connection."""
    steps = [0]

    def step() -> int:
        steps[0] += 1
        return 0

    connection = limiter._db().conn
    connection.set_progress_handler(step, 1)
    try:
        read()
    finally:
        connection.set_progress_handler(None, 1)
    return steps[0]


def test_reading_a_sliding_window_costs_the_same_however_many_it_counts(db_path: Path) -> None:
    """Steps, not seconds: a window counting 2,000 requests is read in as many steps as one
    counting 20 (counting the window's rows took a step per row)."""
    limiter = SqliteLimiter(f"{db_path}.limits")
    busy = Limit.per_window("org:busy:qps", "qps", 10_000, 1)
    quiet = Limit.per_window("org:quiet:qps", "qps", 10_000, 1)
    for i in range(2_000):
        limiter.hit([busy], at(i / 4_000))
    for i in range(20):
        limiter.hit([quiet], at(i / 40))
    busy_steps = sqlite_steps(limiter, lambda: limiter.count(busy, at(0.9)))
    quiet_steps = sqlite_steps(limiter, lambda: limiter.count(quiet, at(0.9)))
    assert limiter.count(busy, at(0.9)) == 2_000 and limiter.count(quiet, at(0.9)) == 20
    assert busy_steps <= quiet_steps + 20
    assert limiter.count(busy, at(1.2999)) == 800  # not yet pruned: the first 1,200 left


def test_a_limits_file_from_before_kept_counts_goes_on_counting_its_requests(
    db_path: Path,
) -> None:
    """A `<db>.limits` written before `rate_windows` existed: the requests it holds still
    count, and keep counting as new ones come and old ones leave."""
    path = f"{db_path}.limits"
    with closing(Database(path)) as old:
        old.execute("CREATE TABLE rate_events (bucket TEXT NOT NULL, at REAL NOT NULL)")
        old.execute("CREATE INDEX rate_events_bucket ON rate_events (bucket, at)")
        for i in range(3):
            old.execute(
                "INSERT INTO rate_events VALUES (?, ?)", [QPS.bucket, at(i / 10).timestamp()]
            )
    limiter = SqliteLimiter(path)
    assert limiter.count(QPS, at(0.5)) == 3
    assert [limiter.hit([QPS], at(0.5)).allowed for _ in range(3)] == [True, True, False]
    assert limiter.count(QPS, at(1.05)) == 4  # the request of T0 left
    assert limiter.hit([QPS], at(1.05)).allowed
    assert limiter.count(QPS, at(1.05)) == 5 and stored_events(limiter, QPS.bucket) == 5


def test_limiter_for_chooses_the_backend_the_setting_names(db_path: Path) -> None:
    chosen = limiter_for({"DB": str(db_path)})
    assert isinstance(chosen, SqliteLimiter) and chosen.path == f"{db_path}.limits"
    remote = limiter_for({"DB": str(db_path), "RATE_LIMITER": "redis://:pw@10.0.0.7:6380/2"})
    assert type(remote).__name__ == "RedisLimiter"
    assert remote.redis.connection_pool.connection_kwargs["db"] == 2  # type: ignore[attr-defined]
    for unknown in ("redis", "memcached://:pw@10.0.0.7"):
        with pytest.raises(ValueError, match=r"RATE_LIMITER.*known: sqlite, redis://") as raised:
            limiter_for({"DB": str(db_path), "RATE_LIMITER": unknown})
        assert "pw" not in str(raised.value)  # a URL's password is not repeated


def test_redis_keys_expire_once_idle(redis_url: str) -> None:
    """Nothing needs cleaning up: a sliding bucket's key lives a minute past its window, a
    daily one's a day past its UTC day (18,609 s after T0)."""
    limiter: Any = limiter_for({"DB": "unused.db", "RATE_LIMITER": redis_url})
    limiter.redis.flushdb()
    limiter.hit([QPS, DAILY], T0)
    assert 50 < limiter.redis.ttl(limiter.key(QPS.bucket)) <= 61
    assert 18_600 + DAY < limiter.redis.ttl(limiter.key(DAILY.bucket)) <= 18_609 + DAY


def test_a_request_is_refused_while_redis_cannot_be_reached(db_path: Path) -> None:
    """No limit is checked, so nothing passes: 500 in the contract's shape, no password."""
    with closing(db.connect(db_path)) as database:
        _, key = organization(database, now=datetime.now(UTC))
    unreachable = f"redis://:s3cret-pw@127.0.0.1:{free_port()}/0"
    app = create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "RATE_LIMITER": unreachable})
    answer = app.test_client().post("/signals/v1/key/view", json={}, headers={"Api-Key": key})
    assert answer.status_code == 500 and answer.json["error"]["code"] == "internal_error"
    assert "s3cret-pw" not in answer.text and "RateLimit" not in answer.headers


def _hammer(settings: dict[str, str], start: Barrier, allowed: Queue) -> None:
    """One worker process: 25 hits on the shared buckets at one instant."""
    limiter = limiter_for(settings)
    limiter.count(QPS, T0)  # connect before the race starts
    start.wait()
    allowed.put(sum(limiter.hit([QPS, DAILY], T0).allowed for _ in range(25)))


def test_limits_hold_across_processes(settings: dict[str, str]) -> None:
    """Four processes hit at once: the quota is admitted exactly, and a request refused by
    one limit is counted in no other."""
    context = multiprocessing.get_context("spawn")
    start, allowed = context.Barrier(4), context.Queue()
    workers = [context.Process(target=_hammer, args=(settings, start, allowed)) for _ in range(4)]
    for worker in workers:
        worker.start()
    counts = [allowed.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    limiter = limiter_for(settings)
    assert sum(counts) == 5
    assert limiter.count(DAILY, T0) == 5 and stored_events(limiter, QPS.bucket) == 5


@pytest.mark.slow
def test_a_qps_limit_holds_across_two_servers_sharing_one_redis(
    tmp_path: Path, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two `contactdata serve`, each on its own copy of the database as on two machines,
    count one organization's requests in one Redis: 20 at once admit its 5 per second."""
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    with closing(db.connect(first)) as database:
        _, key = organization(database, qps=5, now=datetime.now(UTC))
    shutil.copy(first, second)
    with closing(redis.Redis.from_url(redis_url)) as client:
        client.flushdb()
    monkeypatch.setenv("CONTACTDATA_KEY_SECRET", SECRET)
    monkeypatch.setenv("CONTACTDATA_RATE_LIMITER", redis_url)
    ports = [free_port(), free_port()]
    processes = []
    try:
        for path, port in zip((first, second), ports, strict=True):
            processes.append(serve(path, port, workers=1))
        answers = _at_once([f"http://127.0.0.1:{port}" for port in ports] * 10, key)
    finally:
        for process in processes:
            stop(process)
    assert sorted(status for _, status in answers) == [200] * 5 + [429] * 15
    for port in ports:  # each server refused some: it saw the other's requests counted
        assert (f"http://127.0.0.1:{port}", 429) in answers


def _at_once(bases: list[str], key: str) -> list[tuple[str, int]]:
    """One request to each of `bases`, all sent at once: (base, status) of each."""
    start, answers = threading.Barrier(len(bases)), []

    def call(base: str) -> None:
        with httpx.Client(base_url=base, timeout=10) as client:
            start.wait()
            answer = client.post("/signals/v1/key/view", json={}, headers={"Api-Key": key})
            answers.append((base, answer.status_code))

    threads = [threading.Thread(target=call, args=(base,)) for base in bases]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def statements_run(url: str, trace_file: Path, work: Any) -> int:
    """How many statements this thread's pooled connection to `url` runs while `work()` does:
    the Execute (extended protocol) and Query (simple protocol) messages libpq traces."""
    pgconn = pg.database(url).conn.raw.pgconn
    with trace_file.open("w") as trace:
        pgconn.trace(trace.fileno())
        pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)
        try:
            work()
        finally:
            pgconn.untrace()
    sent = [line.split("\t") for line in trace_file.read_text().splitlines()]
    return sum(1 for message in sent if message[0] == "F" and message[2] in ("Execute", "Query"))


def test_a_hit_on_postgresql_is_one_statement(postgres_url: str, tmp_path: Path) -> None:
    """Admitted or refused, one round trip (the SQLite limiter's transaction took seven)."""
    limiter = limiter_for({"DB": postgres_url})
    limiter.count(QPS, T0)  # the thread's pooled connection, taken before tracing

    def hits() -> None:
        for _ in range(8):
            limiter.hit([QPS, DAILY], T0)

    assert statements_run(postgres_url, tmp_path / "trace", hits) == 8
    assert limiter.count(DAILY, T0) == 5


def test_a_hit_on_postgresql_does_not_wait_for_the_services_writers(postgres_url: str) -> None:
    """Another connection holds a long write transaction (an import's: the dataset lock and
    its tables, server/storage/pg.py; and every organization's row): the gate still answers."""
    with psycopg.connect(postgres_url, autocommit=True) as writer, writer.transaction():
        writer.execute("SELECT pg_advisory_xact_lock(%s)", [pg.DATASET_LOCK])
        writer.execute("LOCK TABLE companies, contacts, employments")
        writer.execute("SELECT * FROM organizations FOR UPDATE")
        assert limiter_for({"DB": postgres_url}).hit([QPS, DAILY], T0).allowed


def test_counts_the_sqlite_limiter_kept_on_postgresql_go_on_counting(
    postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database whose limits the SQLite limiter kept (its tables made on first use), then
    counted by the PostgreSQL limiter, whose migrations keep those tables: the requests it
    counted still count, in the window and in the day."""
    # Its tables as PostgreSQL was sent them then: the facade wrote REAL as DOUBLE PRECISION
    # and dropped WITHOUT ROWID (it sends statements as written now).
    then = [
        statement.replace(" REAL ", " DOUBLE PRECISION ").replace(" WITHOUT ROWID", "")
        for statement in sqlite_limits._SCHEMA
    ]
    monkeypatch.setattr(sqlite_limits, "_SCHEMA", then)
    url = postgres.create_database()
    db.connect(url).close()  # the service's schema
    before = SqliteLimiter(url)
    assert all(before.hit([QPS, DAILY], at(i / 10)).allowed for i in range(3))
    before._db().close()
    after = limiter_for({"DB": url})
    assert isinstance(after, PostgresLimiter)
    assert [after.hit([QPS, DAILY], at(0.5)).allowed for _ in range(3)] == [True, True, False]
    assert after.count(DAILY, at(0.5)) == 5 and after.hit([QPS, DAILY], at(1.05)).allowed
    pg.release(url)
