"""The scheduled jobs' bodies, called directly on a real database with a fake CRM: reenrich
queues exactly the stale records within the credits, and its refresh goes through the worker
to a write-back; purging, retrying, renewing; every run recorded; `contactdata jobs`."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from click.testing import CliRunner
from sqlite_utils import Database

from connector import connections, jobs, scheduler, store, worker
from connector.cli import main
from server import accounts, importer
from server.clock import iso
from server.errors import ServiceError
from server.storage import store as server_store
from tests.helpers.clock import Clock
from tests.helpers.constants import AVA, CRM, DATA, NOW, SECRET
from tests.helpers.crm import FakeHubSpot, FakeZohoWatch
from tests.helpers.orgs import organization
from tests.helpers.vendors import VendorTransport

pytestmark = pytest.mark.both_backends

Row = dict[str, Any]
KEY = SECRET.encode()  # the server secret the suppression list is hashed under


def _org(db: Database, name: str, tier: str, credits: int | None = None) -> str:
    """A new organization's admin key."""
    extra = {} if credits is None else {"credits": credits}
    _, key = organization(db, name, tier, **extra)
    return key


def _hubspot(db: Database, name: str, key: str) -> connections.Added:
    return connections.add(
        db, SECRET.encode(), NOW, name=name, platform="hubspot", api_key=key,
        secret="hubspot-app-secret", crm_base_url=CRM, crm_token="pat-na1-token",
    )  # fmt: skip


def _cached(
    db: Database, link: connections.Added, record_id: str, days_ago: float, contact: str = ""
) -> None:
    """A transaction cache entry for a record enriched `days_ago` before NOW."""
    store.save_record(
        db,
        {
            "connection_id": link.row["id"],
            "record_id": record_id,
            "transaction_id": f"t-{record_id}",
            "contact_guid": contact,
            "input_fingerprint": "{}",
            "enriched_at": iso(NOW - timedelta(days=days_ago)),
        },
    )


def _queued(db: Database, link: connections.Added) -> list[str]:
    """The records of the connection's pending refresh events, in the order queued."""
    events = store.events_of(db, link.row["id"])
    return [e["record_id"] for e in events if e["event_key"].startswith("refresh:")]


@pytest.fixture
def db(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Database]:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    monkeypatch.setenv("CONTACTDATA_KEY_SECRET", SECRET)  # reenrich hashes under it
    database = store.connect(db_path)
    yield database
    database.close()


def test_reenrich_queues_exactly_the_stale_records_once_a_day(db: Database) -> None:
    link = _hubspot(db, "hs", _org(db, "Acme", "pro"))
    zap = connections.add(db, SECRET.encode(), NOW, name="zap", platform="zapier",
                          api_key=_org(db, "Zed", "pro"))  # fmt: skip
    for record_id, days in (("old", 40), ("recent", 10), ("older", 31), ("today", 0)):
        _cached(db, link, record_id, days)
    _cached(db, zap, "not-a-crm-record", 90)

    assert jobs.reenrich(db, KEY, NOW) == "2 records queued for refresh"
    assert _queued(db, link) == ["old", "older"] and _queued(db, zap) == []
    (event, _) = store.events_of(db, link.row["id"])
    assert event["thin"] == 1 and json.loads(event["payload"]) == {"refresh": True}
    assert event["event_key"] == "refresh:2026-11-23:old" and event["due_at"] == iso(NOW)

    assert jobs.reenrich(db, KEY, NOW + timedelta(hours=3)) == "0 records queued for refresh"
    store.set_refresh_days(db, link.row["id"], 7)  # a shorter interval takes in "recent" too
    assert jobs.reenrich(db, KEY, NOW + timedelta(hours=4)) == "1 records queued for refresh"
    assert _queued(db, link) == ["old", "older", "recent"]
    # the next day: queued refreshes not worked off yet are not queued again
    assert jobs.reenrich(db, KEY, NOW + timedelta(days=1)) == "0 records queued for refresh"


def test_reenrich_on_pro_stops_at_the_credit_cap_and_the_balance(db: Database) -> None:
    key = _org(db, "Acme", "pro", credits=10)
    first, second = _hubspot(db, "hs-1", key), _hubspot(db, "hs-2", key)  # one organization
    for n in range(8):  # ages interleaved: b7 is the oldest, then a7, b6, a6, ...
        _cached(db, first, f"a{n}", 40 + 2 * n, contact="D15C-contact")  # pro pays for these
        _cached(db, second, f"b{n}", 41 + 2 * n)

    assert jobs.reenrich(db, KEY, NOW, credit_cap=5) == (
        "5 records queued for refresh, 11 held back by the credit cap or balance"
    )
    assert (_queued(db, first), _queued(db, second)) == (["a7", "a6"], ["b7", "b6", "b5"])

    db.execute("DELETE FROM events")
    assert jobs.reenrich(db, KEY, NOW) == (  # the cap is 1000: the balance of 10 holds it
        "10 records queued for refresh, 6 held back by the credit cap or balance"
    )
    assert _queued(db, first) == ["a7", "a6", "a5", "a4", "a3"]
    assert _queued(db, second) == ["b7", "b6", "b5", "b4", "b3"]


def test_reenrich_on_enterprise_plus_queues_delivered_contacts_for_nothing(db: Database) -> None:
    link = _hubspot(db, "hs", _org(db, "Big", "enterprise_plus"))
    for n in range(4):
        _cached(db, link, f"known{n}", 40, contact=f"C{n}")  # refreshed for free
        _cached(db, link, f"no-contact{n}", 50)  # a first contact match would cost a credit
    assert jobs.reenrich(db, KEY, NOW, credit_cap=1) == (
        "5 records queued for refresh, 3 held back by the credit cap or balance"
    )
    assert sorted(_queued(db, link)) == ["known0", "known1", "known2", "known3", "no-contact0"]


def test_reenrich_leaves_inactive_organizations_alone(db: Database) -> None:
    link = _hubspot(db, "hs", _org(db, "Acme", "pro"))
    _cached(db, link, "old", 40)
    accounts.set_status(db, link.row["org_id"], "inactive", NOW)
    assert jobs.reenrich(db, KEY, NOW) == "0 records queued for refresh"


@pytest.fixture
def hubspot_worker(
    db: Database, request: pytest.FixtureRequest
) -> Iterator[tuple[worker.Worker, connections.Added, FakeHubSpot]]:
    """A worker writing to a fake HubSpot for Acme (pro, or the tier the test's `tier`
    parameter names) with 10 credits."""
    importer.import_files(
        db, companies=DATA / "discover_companies.csv", contacts=DATA / "discover_contacts.csv"
    )
    tier = getattr(request, "param", "pro")
    link = _hubspot(db, "hs", _org(db, "Acme", tier, credits=10))
    crm = FakeHubSpot()
    with httpx.Client(transport=VendorTransport(crm)) as client:
        yield worker.Worker(db, SECRET.encode(), Clock(), client, random.Random(7)), link, crm


def _credits(db: Database) -> int:
    return db.execute("SELECT credits FROM organizations WHERE name = 'Acme'").fetchone()[0]


def _thin_event(db: Database, link: connections.Added, key: str) -> None:
    row = {"connection_id": link.row["id"], "event_key": key, "record_id": "501",
           "payload": "{}", "thin": 1, "received_at": iso(NOW)}  # fmt: skip
    with store.server.write(db):
        store.add_events(db, [row])


@pytest.mark.parametrize(
    ("hubspot_worker", "cost"), [("pro", 1), ("enterprise_plus", 0)], indirect=["hubspot_worker"]
)
def test_a_refresh_goes_through_the_worker_to_a_write_back(
    db: Database, hubspot_worker: Any, cost: int
) -> None:
    work, link, crm = hubspot_worker
    _thin_event(db, link, "created")
    assert work.run_due() == {"done": 1} and _credits(db) == 9
    assert crm.contacts["501"]["jobtitle"] == "Vice President of Sales"
    # Ava is promoted in the data; the connection refreshes weekly; eight days pass
    db.execute("UPDATE employments SET job_title = 'Chief Revenue Officer' WHERE email = ?", [AVA])
    store.set_refresh_days(db, link.row["id"], 7)
    work.clock.now = NOW + timedelta(days=8)  # type: ignore[attr-defined]
    _thin_event(db, link, "edited")  # an ordinary event: the record looks unchanged, skipped
    assert work.run_due() == {"done": 1} and _credits(db) == 9
    assert "not enriched again" in store.events_of(db, link.row["id"])[-1]["last_error"]

    assert jobs.reenrich(db, KEY, work.clock()) == "1 records queued for refresh"
    assert work.run_due() == {"done": 1}
    refresh = store.events_of(db, link.row["id"])[-1]
    assert refresh["event_key"].startswith("refresh:") and refresh["status"] == "done"
    assert refresh["last_error"] == ""
    assert crm.contacts["501"]["jobtitle"] == "Chief Revenue Officer"  # ours, so overwritten
    assert _credits(db) == 9 - cost  # pro pays for a refresh; enterprise_plus does not
    cached = store.record(db, link.row["id"], "501")
    assert cached is not None and cached["enriched_at"] == iso(work.clock())
    assert jobs.reenrich(db, KEY, work.clock()) == "0 records queued for refresh"


def test_retry_deliveries_works_off_what_is_due(db: Database, hubspot_worker: Any) -> None:
    work, link, crm = hubspot_worker
    _thin_event(db, link, "one")
    crm.failures.append(httpx.Response(503, json={}))
    assert jobs.retry_deliveries(work) == "retry=1"
    assert jobs.retry_deliveries(work) == "nothing due"  # backing off
    work.clock.now += timedelta(hours=7)  # type: ignore[attr-defined]
    assert jobs.retry_deliveries(work) == "done=1"


def test_purge_deletes_only_old_done_events_job_runs_and_kept_answers(db: Database) -> None:
    link = _hubspot(db, "hs", _org(db, "Acme", "pro"))
    rows = [("done-old", "done", 31), ("done-new", "done", 29), ("dead-old", "dead", 90),
            ("pending-old", "pending", 90)]  # fmt: skip
    for key, status, days in rows:
        when = iso(NOW - timedelta(days=days))
        event = {"connection_id": link.row["id"], "event_key": key, "payload": "{}",
                 "received_at": when}  # fmt: skip
        store.add_events(db, [{**event, "record_id": "", "thin": 0}])
        db.execute("UPDATE events SET status = ? WHERE event_key = ?", [status, key])
    for days in (91, 89):
        stamp = iso(NOW - timedelta(days=days))
        store.record_job_run(db, {"job_id": "reenrich", "started_at": stamp,
                                  "finished_at": stamp, "ok": 1, "result": f"{days}"})  # fmt: skip
    for webhook_id, hours in (("msg_old", 25), ("msg_new", 23)):
        stamp = iso(NOW - timedelta(hours=hours))
        store.claim_webhook(db, link.row["id"], webhook_id, stamp, forget_before="")
        scope = (link.row["org_id"], "/v7/enrich", webhook_id)  # a key of /v7/enrich's
        server_store.claim_idempotency_key(db, scope, "digest", stamp, "", "")

    assert jobs.purge_deliveries(db, NOW) == (
        "deleted 1 done events, 1 job runs and 2 kept answers"
    )
    kept = [row["webhook_id"] for row in db.query("SELECT webhook_id FROM webhook_replays")]
    keys = [row["idempotency_key"] for row in db.query("SELECT * FROM idempotency_keys")]
    assert kept == keys == ["msg_new"]
    left = [e["event_key"] for e in store.events_of(db, link.row["id"])]
    assert left == ["done-new", "dead-old", "pending-old"]
    assert store.last_job_runs(db)["reenrich"]["result"] == "89"


def test_retention_purges_payloads_cache_entries_and_matched_contacts_past_their_time(
    db: Database,
) -> None:
    link = _hubspot(db, "hs", _org(db, "Acme", "pro"))
    link_id, org_id = link.row["id"], link.row["org_id"]
    payload = json.dumps({"email": AVA})
    rows = [("done-old", "done", 8), ("dead-old", "dead", 8), ("done-new", "done", 6),
            ("pending-old", "pending", 8)]  # fmt: skip
    for key, status, days in rows:
        event = {"connection_id": link_id, "event_key": key, "payload": payload, "thin": 0,
                 "received_at": iso(NOW - timedelta(days=days)), "record_id": "501"}  # fmt: skip
        store.add_events(db, [event])
        db.execute("UPDATE events SET status = ? WHERE event_key = ?", [status, key])
    for record_id, days, pending in (("old", 31, ""), ("new", 29, ""), ("old-writing", 31, "{}")):
        _cached(db, link, record_id, days, contact="C-AVA")
        db.execute("UPDATE records SET pending = ? WHERE record_id = ?", [pending, record_id])
    for transaction_id, days in (("t-old", 31), ("t-new", 29)):
        server_store.save_transaction(db, {
            "id": transaction_id, "org_id": org_id, "endpoint": "/v1/enrich", "credits": 1,
            "contact_guid": "C-AVA", "created_at": iso(NOW - timedelta(days=days)),
        })  # fmt: skip

    done = jobs.retention(db, NOW, payload_days=7, transaction_days=30)
    assert done == (
        "blanked 2 webhook payloads, deleted 1 cached records, "
        "cleared the matched contact of 1 transactions"
    )
    events = {e["event_key"]: e for e in store.events_of(db, link_id)}
    assert [k for k, e in events.items() if e["payload"] == payload] == ["done-new", "pending-old"]
    assert events["dead-old"]["thin"] == 1  # retried, it reads its record from the CRM
    assert [r["record_id"] for r in db.query("SELECT record_id FROM records ORDER BY 1")] == [
        "new",
        "old-writing",
    ]
    matched = {t["id"]: t["contact_guid"] for t in server_store.transactions_of(db, org_id)}
    assert matched == {"t-old": "", "t-new": "C-AVA"}
    assert jobs.retention(db, NOW, payload_days=7, transaction_days=30) == (
        "blanked 0 webhook payloads, deleted 0 cached records, "
        "cleared the matched contact of 0 transactions"
    )


def test_retention_runs_with_the_configured_periods(
    db: Database, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTACTDATA_RETENTION_PAYLOAD_DAYS", "1")
    link = _hubspot(db, "hs", _org(db, "Acme", "pro"))
    old = iso(NOW - timedelta(days=2))  # the command runs on the real clock: long ago
    event = {"connection_id": link.row["id"], "event_key": "e", "record_id": "501", "thin": 0,
             "payload": json.dumps({"email": AVA}), "received_at": old}  # fmt: skip
    store.add_events(db, [event])
    db.execute("UPDATE events SET status = 'done'")
    ran = _cli("jobs", "run", "retention", "--db", str(db_path))
    assert ran.exit_code == 0, ran.output
    assert ran.stdout.startswith("blanked 1 webhook payloads")


def test_renew_subscriptions_fails_the_run_naming_the_channels_not_renewed(db: Database) -> None:
    key = _org(db, "Acme", "pro")
    zoho = connections.add(db, SECRET.encode(), NOW, name="zoho", platform="zoho", api_key=key,
                           crm_base_url=CRM, crm_token="1000.token")  # fmt: skip
    fake = FakeZohoWatch()
    clock = Clock()
    with httpx.Client(transport=VendorTransport(fake)) as client:

        def renew() -> str:
            return jobs.renew_subscriptions(db, SECRET.encode(), client, "https://x.io", clock())

        assert jobs.recorded(db, "renew_subscriptions", renew, clock) == jobs.Run(
            True, "1 of 1 zoho channels renewed (0 not due)"
        )
        assert jobs.recorded(db, "renew_subscriptions", renew, clock) == jobs.Run(
            True, "0 of 0 zoho channels renewed (1 not due)"
        )
        expired = {"code": "INVALID_TOKEN", "details": {}, "message": "invalid oauth token",
                   "status": "error"}  # fmt: skip
        fake.failures.append(httpx.Response(401, json=expired))
        clock.now += timedelta(days=5, hours=1)  # within a day of the channel's expiry
        failed = jobs.recorded(db, "renew_subscriptions", renew, clock)
    assert not failed.ok
    assert failed.result.startswith("0 of 1 zoho channels renewed (0 not due); ")
    assert f"{zoho.row['id']} failed: token expired or revoked" in failed.result
    last = store.last_job_runs(db)["renew_subscriptions"]
    assert (last["ok"], last["result"]) == (0, failed.result)


def test_a_run_that_raises_is_recorded_with_its_reason(db: Database) -> None:
    clock = Clock()

    def broken() -> str:
        clock.now += timedelta(seconds=2)
        raise ValueError("the CRM answered nonsense")

    assert jobs.recorded(db, "reenrich", broken, clock) == jobs.Run(
        False, "ValueError: the CRM answered nonsense"
    )
    run = store.last_job_runs(db)["reenrich"]
    assert (run["started_at"], run["finished_at"], run["ok"]) == (
        iso(NOW),
        iso(NOW + timedelta(seconds=2)),
        0,
    )


def _cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def test_jobs_run_records_the_run_and_jobs_list_shows_it(db: Database, db_path: Path) -> None:
    link = _hubspot(db, "hs", _org(db, "Acme", "pro"))
    _cached(db, link, "old", days_ago=365 * 30)  # the command runs on the real clock
    ran = _cli("jobs", "run", "reenrich", "--db", str(db_path))
    assert ran.exit_code == 0, ran.output
    assert ran.stdout == "1 records queued for refresh\n"
    assert _cli("jobs", "run", "purge_deliveries", "--db", str(db_path)).exit_code == 0

    listed = _cli("jobs", "list", "--db", str(db_path), "--json")
    assert listed.exit_code == 0, listed.output
    rows = {row["id"]: row for row in json.loads(listed.output)}
    assert list(rows) == [
        "reenrich",
        "retry_deliveries",
        "renew_subscriptions",
        "purge_deliveries",
        "retention",
        "advance_backfills",
        "changes",
        "signals_digest",
    ]
    assert rows["reenrich"]["last_run"]["result"] == "1 records queued for refresh"
    assert rows["reenrich"]["last_run"]["ok"] == 1 and rows["retry_deliveries"]["last_run"] is None
    assert rows["reenrich"]["trigger"] == "cron[hour='2', minute='0']"
    assert datetime.fromisoformat(rows["reenrich"]["next_run"]).hour == 2

    text = _cli("jobs", "list", "--db", str(db_path)).output
    assert "reenrich" in text and "ok at " in text and "never run" in text
    assert "every day at 02:00 UTC" in text and "cron[" not in text  # triggers in words


@pytest.mark.usefixtures("db")
def test_jobs_run_of_an_unknown_job_names_the_jobs(db_path: Path) -> None:
    result = _cli("jobs", "run", "reenrich_everything", "--db", str(db_path))
    assert result.exit_code == 1
    assert "no job 'reenrich_everything'" in result.output
    named = "purge_deliveries, retention, advance_backfills, changes"
    assert named in result.output


@pytest.mark.usefixtures("db")
def test_the_operator_reschedules_a_job_from_the_command_line(db_path: Path) -> None:
    changed = _cli("jobs", "reschedule", "purge_deliveries", "--every", "6", "--db", str(db_path))
    assert changed.exit_code == 0, changed.output
    assert changed.stdout.startswith("purge_deliveries: every 6 hours, next run ")
    (job,) = [j for j in scheduler.status(db_path) if j["id"] == "purge_deliveries"]
    assert job["trigger"] == "interval[6:00:00]"
    unknown = _cli("jobs", "reschedule", "nope", "--every", "1", "--db", str(db_path))
    assert unknown.exit_code == 1 and "nope" in unknown.output


def test_triggers_read_in_words() -> None:
    utc = {"timezone": "UTC"}
    start = datetime(2026, 3, 3, 4, 30, tzinfo=UTC)
    assert scheduler.in_words(CronTrigger(hour=2, minute=0, **utc)) == "every day at 02:00 UTC"
    assert scheduler.in_words(IntervalTrigger(minutes=1, **utc)) == "every minute"
    assert scheduler.in_words(IntervalTrigger(hours=6, **utc)) == "every 6 hours"
    assert scheduler.in_words(IntervalTrigger(minutes=90, **utc)) == "every 90 minutes"
    every_3 = IntervalTrigger(days=3, start_date=start, **utc)
    assert scheduler.in_words(every_3) == "every 3 days at 04:30 UTC"
    assert scheduler.every_days(every_3) == (3, "04:30")
    weekdays = CronTrigger(day_of_week="mon-fri", hour=2, **utc)  # no simpler words: as written
    assert scheduler.every_days(weekdays) is None
    assert scheduler.in_words(weekdays) == str(weekdays)


def test_a_daily_job_runs_every_n_days_from_its_next_time_of_day(db_path: Path) -> None:
    """The first run is the next such time of day after now (APScheduler counts from the real
    clock, so the test does too)."""
    moment = datetime.now(UTC)

    def minute(shift: int) -> time:
        return (moment + timedelta(minutes=shift)).time().replace(second=0, microsecond=0)

    for job_id, days, at in (("purge_deliveries", 2, minute(-5)), ("retention", 1, minute(5))):
        shown = scheduler.run_every_days(db_path, job_id, days, at, moment)
        first = datetime.combine(moment.date(), at, UTC)
        expected = first if first > moment else first + timedelta(days=1)
        assert shown["next_run"] == iso(expected), job_id
        every = "every day" if days == 1 else f"every {days} days"
        assert shown["runs"] == f"{every} at {at:%H:%M} UTC"
    status = {job["id"]: job for job in scheduler.status(db_path)}
    assert status["purge_deliveries"]["every_days"] == (2, f"{minute(-5):%H:%M}")
    assert status["retry_deliveries"]["every_days"] is None  # every minute: not a daily job
    with pytest.raises(jobs.UnknownJob):
        scheduler.run_every_days(db_path, "retry_deliveries", 1, time(1, 0), moment)
    with pytest.raises(ServiceError, match="every 1 to 365 days"):
        scheduler.run_every_days(db_path, "reenrich", 400, time(1, 0), moment)
