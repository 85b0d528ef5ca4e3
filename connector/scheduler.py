"""When the jobs of connector/jobs.py run: APScheduler 3, started by `contactdata worker` only
(every gunicorn worker would start its own), with the schedule kept in its own SQLite file
or, on PostgreSQL, in the database.

However many workers run, one runs the jobs: each worker's scheduler runs only while its
process holds the database's scheduler lease (`Leader`), renewed every third of the lease;
the others keep theirs paused and try for the lease as often, so a dead scheduler's jobs are
taken over once its lease ends (a job it missed runs once then, within MISFIRE_GRACE).

The job store is APScheduler's SQLAlchemyJobStore. On SQLite it is `<db>.jobs`, apart from the
database: SQLAlchemy's writes to it would otherwise contend with the service's write
transactions. On PostgreSQL, whose row locks let them pass each other, it is the database's
table `apscheduler_jobs` (connector/schema.py), so every machine sees one schedule.
A job's trigger changed by a user persists: starting adds the default jobs that are missing
and leaves stored ones as they are.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any

from apscheduler.job import Job
from apscheduler.jobstores.base import BaseJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlite_utils import Database

import server
from connector import backfill, jobs, store, subscriptions, worker

# A run missed while the worker was down by less than this runs once when it is back.
MISFIRE_GRACE = timedelta(hours=6)
JOB_FUNCTION = "connector.jobs:run"  # by reference: the job store keeps it as text
LEADERSHIP = "scheduler"  # the lease whose holder runs the jobs
# The jobs run once a day or less, whose days and time of day a person may choose; the others
# run every minute or hour to keep work flowing, and only their operator changes them.
DAILY_JOBS = ("reenrich", "purge_deliveries", "retention")
EVERY_DAYS = (1, 365)
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Default:
    """A job as the code schedules it until a user changes its trigger."""

    id: str
    name: str
    trigger: str  # APScheduler's trigger alias
    fields: dict[str, Any]  # and its fields
    does: str


DEFAULTS = (
    Default(
        "reenrich",
        "Re-enrich stale records",
        "cron",
        {"hour": 2, "minute": 0, "timezone": "UTC"},
        "queue a refresh of each CRM record enriched longer ago than its connection's refresh "
        "interval; refreshes that cost credits at most CONTACTDATA_REFRESH_CREDIT_CAP "
        f"({jobs.REFRESH_CREDIT_CAP}) per organization a run, and never over its balance",
    ),
    Default(
        "retry_deliveries",
        "Retry deliveries",
        "interval",
        {"minutes": 1},
        "work off the due events, retries whose wait is over among them",
    ),
    Default(
        "renew_subscriptions",
        "Renew subscriptions",
        "interval",
        {"hours": 1},
        "renew each Zoho connection's notification channel (records' create and edit events) "
        f"for {subscriptions.CHANNEL_LIFETIME.days} days once the expiry Zoho confirmed is "
        f"within {subscriptions.RENEW_BEFORE.days} day, and enable it again when it lapsed",
    ),
    Default(
        "purge_deliveries",
        "Purge deliveries",
        "cron",
        {"hour": 3, "minute": 0, "timezone": "UTC"},
        f"delete done events last due over {jobs.PURGE_AFTER.days} days ago and job runs "
        f"over {jobs.JOB_RUNS_KEPT.days} days old",
    ),
    Default(
        "retention",
        "Purge old personal data",
        "cron",
        {"hour": 3, "minute": 30, "timezone": "UTC"},
        "blank the stored webhook payloads of events finished over "
        "CONTACTDATA_RETENTION_PAYLOAD_DAYS (30) days ago; delete transaction cache entries and "
        "clear the matched contact of transactions over CONTACTDATA_RETENTION_TRANSACTION_DAYS "
        "(395) days old",
    ),
    Default(
        "advance_backfills",
        "Advance backfills",
        "interval",
        {"minutes": 1},
        f"list and queue up to {backfill.PAGES_A_RUN} pages of each running backfill (started "
        "on the settings page, or resumed), so the worker enriches its records after the live "
        "events; one the CRM refuses for good is stopped with the reason",
    ),
    Default(
        "changes",
        "Push changes to CRM records",
        "interval",
        {"minutes": 15},
        "queue a refresh of each CRM record enriched from a contact or company that changed "
        "since the last run (free on a free-refresh tier, else at most the connection's change "
        "credit cap a run), and write each job change's mark, task and new contact as chosen",
    ),
    Default(
        "signals_digest",
        "Weekly job-change digest",
        "interval",  # every 7 days from a Monday 07:00 UTC: Mondays, said in words
        {"weeks": 1, "start_date": "2026-01-05 07:00:00", "timezone": "UTC"},
        "on Mondays, count each organization's job changes of the week before (left, joined, "
        "written, failed, per connection) and keep the digest in its audit log, where the "
        "Signals page shows the latest",
    ),
)


def start(db_path: str | Path) -> BackgroundScheduler:
    """Run the jobs of the database at `db_path` in background threads until `shutdown()`,
    whatever other processes do (`Leader` runs them in one process of many)."""
    scheduler = prepared(db_path)
    scheduler.resume()
    return scheduler


def prepared(db_path: str | Path) -> BackgroundScheduler:
    """A paused scheduler on the jobs of the database at `db_path`. Stored jobs keep their
    triggers; a job the code no longer has is removed, and stored arguments naming another
    database path (the files moved) are corrected."""
    scheduler = _opened(db_path)
    for job in scheduler.get_jobs():
        if job.id not in jobs.JOBS:
            scheduler.remove_job(job.id)
        elif list(job.args) != _args(job.id, db_path):
            scheduler.modify_job(job.id, args=_args(job.id, db_path))
    return scheduler


class Leader:
    """This process's scheduler, running while the process holds the scheduler lease and
    paused while another does. `keep` takes or renews the lease; `lead` does so every third
    of the lease in a thread of its own until `shutdown`, which hands the lease over."""

    def __init__(
        self,
        db_path: str | Path,
        holder: str,
        lease: timedelta = worker.LEASE,
        clock: Callable[[], datetime] = server.utcnow,
    ) -> None:
        self.db_path, self.holder, self.lease, self.clock = db_path, holder, lease, clock
        self.schedule = prepared(db_path)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._keep_leading, name="leader", daemon=True)

    def keep(self, db: Database) -> bool:
        """Take or renew the lease; run the jobs when this process holds it, pause them when
        not. Whether it leads."""
        now = self.clock()
        with server.write(db):
            leads = store.take_lease(
                db, LEADERSHIP, self.holder, server.iso(now), server.iso(now + self.lease)
            )
        if leads:
            self.schedule.resume()
        else:
            self.schedule.pause()
        return leads

    def step_down(self, db: Database) -> None:
        """Pause the jobs (unless already shut down) and give up the lease, so another process
        takes them at once."""
        if self.schedule.running:
            self.schedule.pause()
        with server.write(db):
            store.release_lease(db, LEADERSHIP, self.holder)

    def lead(self) -> Leader:
        """Keep the lease in a background thread, from now until `shutdown`."""
        self.thread.start()
        return self

    def shutdown(self) -> None:
        """Stop, waiting for a running job, and hand the lease over."""
        self.stopping.set()
        self.thread.join()

    def _keep_leading(self) -> None:
        db = store.connect(self.db_path)  # a SQLite connection belongs to its thread
        try:
            while True:
                try:
                    self.keep(db)
                except Exception:  # the database busy or gone: not sure to lead, so don't
                    log.exception("the scheduler lease could not be renewed")
                    self.schedule.pause()
                if self.stopping.wait(self.lease.total_seconds() / 3):
                    break
            self.schedule.shutdown()
            self.step_down(db)
        finally:
            db.close()


def status(db_path: str | Path) -> list[dict[str, Any]]:
    """Each job (in DEFAULTS order): id, name, trigger, next run (ISO; None when paused) and
    its last run (started_at, ok, result; None before the first): the settings page's table
    and `contactdata jobs list`."""
    scheduler = _opened(db_path)
    try:
        stored = {job.id: job for job in scheduler.get_jobs()}
    finally:
        scheduler.shutdown(wait=False)
    last = _last_runs(db_path)
    return [_shown(stored[d.id], last.get(d.id)) for d in DEFAULTS if d.id in stored]


def reschedule(db_path: str | Path, job_id: str, **trigger: Any) -> dict[str, Any]:
    """Give a job a new trigger (`trigger="interval", hours=6`, or `trigger="cron", hour=4`),
    stored at once: a running worker's scheduler reads it at its next wake-up (within a
    minute, as retry_deliveries runs every minute) and it stays after restarts. Returns the
    job as `status` shows it."""
    if job_id not in jobs.JOBS:
        raise jobs.UnknownJob(job_id)
    scheduler = _opened(db_path)
    try:
        job = scheduler.reschedule_job(job_id, **trigger)
    finally:
        scheduler.shutdown(wait=False)
    return _shown(job, _last_runs(db_path).get(job_id))


def run_every_days(
    db_path: str | Path, job_id: str, days: int, at: time, now: datetime
) -> dict[str, Any]:
    """Run one of DAILY_JOBS every `days` days at `at` (UTC), the first run at the next `at`
    after `now`; the job as `status` shows it."""
    if job_id not in DAILY_JOBS:
        raise jobs.UnknownJob(job_id)
    low, high = EVERY_DAYS
    if not low <= days <= high:
        raise server.InvalidParameter(f"A job runs every {low} to {high} days.")
    first = datetime.combine(now.astimezone(UTC).date(), at, UTC)
    if first <= now:
        first += timedelta(days=1)
    return reschedule(db_path, job_id, trigger="interval", days=days, start_date=first)


def in_words(trigger: BaseTrigger) -> str:
    """A trigger as people say it: "every 2 days at 03:00 UTC", "every minute"; a trigger
    this cannot say simply, as APScheduler writes it."""
    every = every_days(trigger)
    if every is not None:
        days, at = every
        return f"every {_count(days, 'day')} at {at} UTC".replace("every 1 day ", "every day ")
    if isinstance(trigger, IntervalTrigger):
        seconds = int(trigger.interval.total_seconds())
        for unit, size in (("hour", 3600), ("minute", 60)):
            if seconds % size == 0:
                return "every " + _count(seconds // size, unit).removeprefix("1 ")
    return str(trigger)


def every_days(trigger: BaseTrigger) -> tuple[int, str] | None:
    """(every how many days, at "HH:MM" UTC) of a trigger that runs so; None for others."""
    if isinstance(trigger, IntervalTrigger):
        interval = trigger.interval
        if interval.total_seconds() % 86_400 == 0 and interval.days >= 1:
            return interval.days, trigger.start_date.astimezone(UTC).strftime("%H:%M")
        return None
    if isinstance(trigger, CronTrigger) and str(trigger.timezone) == "UTC":
        fields = {field.name: str(field) for field in trigger.fields}
        rest = ("year", "month", "day", "week", "day_of_week")
        fixed = fields["hour"].isdigit() and fields["minute"].isdigit()
        if fixed and fields["second"] == "0" and all(fields[name] == "*" for name in rest):
            return 1, f"{int(fields['hour']):02d}:{int(fields['minute']):02d}"
    return None


def _count(number: int, unit: str) -> str:
    return f"{number} {unit}{'' if number == 1 else 's'}"


def _opened(db_path: str | Path) -> BackgroundScheduler:
    """A paused scheduler on the job store of `db_path`, holding every default job: stored
    jobs as they are, missing ones added with their default trigger."""
    scheduler = BackgroundScheduler(jobstores={"default": _job_store(db_path)}, timezone=UTC)
    scheduler.start(paused=True)
    for default in DEFAULTS:
        if scheduler.get_job(default.id) is None:
            scheduler.add_job(
                JOB_FUNCTION,
                id=default.id,
                name=default.name,
                args=_args(default.id, db_path),
                coalesce=True,  # runs missed while down: one, not each
                max_instances=1,
                misfire_grace_time=int(MISFIRE_GRACE.total_seconds()),
                replace_existing=True,  # another process added it meanwhile: one job still
                trigger=default.trigger,
                **default.fields,
            )
    return scheduler


def _job_store(db_path: str | Path) -> BaseJobStore:
    """The SQLAlchemyJobStore of `db_path`, its table made. APScheduler makes it when the
    scheduler starts, by asking whether it exists and then creating it: two processes starting
    at once on a new `<db>.jobs` both ask, and one's CREATE fails. Here that one finds the
    table made, which it wanted."""
    # Imported here: SQLAlchemy takes a third of a second to import, which every other
    # command of `contactdata` would pay.
    from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
    from sqlalchemy.exc import DBAPIError

    store = SQLAlchemyJobStore(url=_job_store_url(db_path), engine_options=_engine_options(db_path))
    try:
        store.jobs_t.create(store.engine, checkfirst=True)
    except DBAPIError as error:
        if "already exists" not in str(error):
            raise
    return store


def _job_store_url(db_path: str | Path) -> str:
    """SQLAlchemy's URL of the job store: `<db>.jobs`, or the PostgreSQL database itself
    (through psycopg 3, the driver the service uses)."""
    if server.is_database_url(db_path):
        return "postgresql+psycopg://" + str(db_path).split("://", 1)[1]
    return f"sqlite:///{Path(f'{db_path}.jobs').resolve()}"


def _engine_options(db_path: str | Path) -> dict[str, Any]:
    """SQLAlchemy's engine options: through a transaction pooler (server/storage/pg.py), its psycopg
    connections prepare no statement."""
    if server.is_database_url(db_path) and server.through_pooler():
        return {"connect_args": {"prepare_threshold": None}}
    return {}


def _args(job_id: str, db_path: str | Path) -> list[str]:
    """What jobs.run is called with: the job id and the database's absolute path (or URL)."""
    if server.is_database_url(db_path):
        return [job_id, str(db_path)]
    return [job_id, str(Path(db_path).resolve())]


def _last_runs(db_path: str | Path) -> dict[str, dict[str, Any]]:
    db = store.connect(db_path)
    try:
        return store.last_job_runs(db)
    finally:
        db.close()


def _shown(job: Job, last: dict[str, Any] | None) -> dict[str, Any]:
    """A job as the settings page and `jobs list` show it."""
    return {
        "id": job.id,
        "name": job.name,
        "trigger": str(job.trigger),
        "runs": in_words(job.trigger),
        "every_days": every_days(job.trigger) if job.id in DAILY_JOBS else None,
        "next_run": server.iso(job.next_run_time) if job.next_run_time else None,
        "last_run": None if last is None else {k: last[k] for k in ("started_at", "ok", "result")},
    }
