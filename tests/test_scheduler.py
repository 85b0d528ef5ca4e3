"""The scheduler on a real job store (`<db>.jobs`): the default jobs and their options, a
changed trigger kept across a restart, the stored function reference running a job, and the
status the settings page shows. No test waits for a schedule: jobs are called directly."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.schedulers.base import STATE_PAUSED, STATE_RUNNING, STATE_STOPPED

from connector import jobs, scheduler, store
from tests.helpers.clock import Clock
from tests.helpers.threads import at_once

pytestmark = pytest.mark.both_backends


@pytest.fixture
def running() -> Iterator[list[BackgroundScheduler]]:
    """Schedulers a test started, shut down after it."""
    started: list[BackgroundScheduler] = []
    yield started
    for each in started:
        if each.running:
            each.shutdown(wait=False)


def test_every_job_has_a_body_and_a_default_schedule() -> None:
    assert [d.id for d in scheduler.DEFAULTS] == list(jobs.JOBS)


def test_the_default_jobs_are_stored_in_their_own_file_or_the_postgresql_database(
    db_path: Path | str, backend: str, running: list[BackgroundScheduler]
) -> None:
    running.append(scheduler.start(db_path))
    stored = {job.id: job for job in running[0].get_jobs()}
    assert set(stored) == set(jobs.JOBS)
    if backend == "sqlite":
        assert Path(f"{db_path}.jobs").exists()
        where = str(Path(db_path).resolve())
    else:  # in the database itself, and the jobs name its URL
        kept = store.connect(db_path).execute("SELECT id FROM apscheduler_jobs ORDER BY id")
        assert [job_id for (job_id,) in kept] == sorted(jobs.JOBS)
        where = str(db_path)
    assert str(stored["reenrich"].trigger) == "cron[hour='2', minute='0']"
    assert str(stored["reenrich"].trigger.timezone) == "UTC"
    assert str(stored["retry_deliveries"].trigger) == "interval[0:01:00]"
    assert str(stored["renew_subscriptions"].trigger) == "interval[1:00:00]"
    assert str(stored["purge_deliveries"].trigger) == "cron[hour='3', minute='0']"
    for job in stored.values():
        assert job.func_ref == scheduler.JOB_FUNCTION
        assert list(job.args) == [job.id, where]
        assert (job.coalesce, job.max_instances, job.misfire_grace_time) == (True, 1, 6 * 3600)
    assert stored["reenrich"].next_run_time.astimezone(UTC).hour == 2


def test_schedulers_started_together_on_a_new_database_all_start(tmp_path: Path) -> None:
    # APScheduler makes its table by asking whether it exists, then creating it: started at
    # once, every scheduler but one failed with "table apscheduler_jobs already exists".
    failures: list[BaseException] = []
    for round_ in range(5):
        path = tmp_path / f"race{round_}.db"
        failures += at_once(lambda path=path: scheduler._opened(path).shutdown(wait=False), 4)
    assert failures == []


def test_scheduled_jobs_persist_across_a_restart(
    db_path: Path, running: list[BackgroundScheduler]
) -> None:
    first = scheduler.start(db_path)
    running.append(first)
    changed = scheduler.reschedule(db_path, "reenrich", trigger="interval", hours=5)
    assert changed["trigger"] == "interval[5:00:00]"
    kept_next_run = first.get_job("reenrich").next_run_time  # the running one sees the store
    assert scheduler.status(db_path)[0]["next_run"] == changed["next_run"]
    first.shutdown()

    second = scheduler.start(db_path)  # a restarted worker: same files
    running.append(second)
    job = second.get_job("reenrich")
    assert str(job.trigger) == "interval[5:00:00]"
    assert job.next_run_time == kept_next_run
    assert str(second.get_job("purge_deliveries").trigger) == "cron[hour='3', minute='0']"
    second.shutdown()
    (shown,) = [row for row in scheduler.status(db_path) if row["id"] == "reenrich"]
    assert shown["trigger"] == "interval[5:00:00]" and shown["next_run"] == changed["next_run"]


def test_a_restart_on_moved_files_points_the_jobs_at_the_new_path(
    tmp_path: Path, running: list[BackgroundScheduler]
) -> None:
    old, new = tmp_path / "old.db", tmp_path / "moved" / "new.db"
    scheduler.start(old).shutdown()
    new.parent.mkdir()
    Path(f"{old}.jobs").rename(f"{new}.jobs")
    running.append(scheduler.start(new))
    assert {tuple(job.args)[1] for job in running[0].get_jobs()} == {str(new.resolve())}


def test_the_stored_reference_runs_the_job_and_records_the_run(
    db_path: Path, running: list[BackgroundScheduler]
) -> None:
    running.append(scheduler.start(db_path))
    job = running[0].get_job("purge_deliveries")
    outcome = job.func(*job.args)  # what the scheduler's thread does when the time comes
    assert outcome == jobs.Run(True, "deleted 0 done events, 0 job runs and 0 kept answers")
    (row,) = [r for r in scheduler.status(db_path) if r["id"] == "purge_deliveries"]
    assert row["last_run"]["ok"] == 1 and row["last_run"]["result"] == outcome.result
    started = datetime.fromisoformat(row["last_run"]["started_at"])
    assert datetime.now(UTC) - started < timedelta(minutes=1)


def test_status_lists_every_job_before_any_worker_ran(db_path: Path) -> None:
    rows = scheduler.status(db_path)
    assert [row["id"] for row in rows] == list(jobs.JOBS)
    assert all(row["last_run"] is None and row["next_run"] for row in rows)
    assert rows[0] == {**rows[0], "name": "Re-enrich stale records"}


def test_rescheduling_an_unknown_job_names_the_jobs(db_path: Path) -> None:
    with pytest.raises(jobs.UnknownJob, match="retry_deliveries"):
        scheduler.reschedule(db_path, "nope", trigger="interval", hours=1)
    assert store.last_job_runs(store.connect(db_path)) == {}


def test_one_of_two_schedulers_runs_the_jobs_and_a_dead_ones_are_taken_over(db_path: Path) -> None:
    clock = Clock()
    first = scheduler.Leader(db_path, "host-a:1:aa", clock=clock)
    second = scheduler.Leader(db_path, "host-b:2:bb", clock=clock)
    db = store.connect(db_path)
    try:
        assert first.keep(db) and not second.keep(db)
        assert first.schedule.state == STATE_RUNNING and second.schedule.state == STATE_PAUSED
        clock.advance(0.5 * first.lease.total_seconds())
        assert first.keep(db)  # renewed
        clock.advance(0.9 * first.lease.total_seconds())  # past the first lease, not the renewal
        assert not second.keep(db) and second.schedule.state == STATE_PAUSED

        clock.advance(first.lease.total_seconds())  # the first died: it renewed no more
        assert second.keep(db) and second.schedule.state == STATE_RUNNING
        assert not first.keep(db)  # back from a stall: it finds the jobs taken and pauses
        assert first.schedule.state == STATE_PAUSED
        assert store.lease_holder(db, scheduler.LEADERSHIP) == "host-b:2:bb"
    finally:
        first.schedule.shutdown(wait=False)
        second.schedule.shutdown(wait=False)
        db.close()


def test_a_scheduler_that_stops_hands_the_jobs_over_at_once(db_path: Path) -> None:
    clock = Clock()
    first = scheduler.Leader(db_path, "host-a:1:aa", clock=clock)
    second = scheduler.Leader(db_path, "host-b:2:bb", clock=clock)
    db = store.connect(db_path)
    try:
        assert first.keep(db)
        first.step_down(db)
        assert first.schedule.state == STATE_PAUSED and second.keep(db)
    finally:
        first.schedule.shutdown(wait=False)
        second.schedule.shutdown(wait=False)
        db.close()


def test_a_leading_scheduler_shut_down_releases_its_lease(db_path: Path) -> None:
    leader = scheduler.Leader(db_path, "host-a:1:aa").lead()
    db = store.connect(db_path)
    try:
        deadline = time.monotonic() + 10
        while store.lease_holder(db, scheduler.LEADERSHIP) != "host-a:1:aa":
            assert time.monotonic() < deadline, "the scheduler never took the lease"
            time.sleep(0.01)
        leader.shutdown()
        assert leader.schedule.state == STATE_STOPPED
        assert store.lease_holder(db, scheduler.LEADERSHIP) is None
    finally:
        db.close()
