"""The write-back worker against a fake HubSpot (httpx.MockTransport): enrich, write back
what the mapping allows, exactly once; retries, dead letters and retrying them."""

from __future__ import annotations

import dataclasses
import json
import random
import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from click.testing import CliRunner
from sqlite_utils import Database

import server
from connector import cli, connections, outbound, schema, store, worker
from connector.cli import main
from connector.platforms.hubspot import CONTACTS
from server import accounts
from tests import servers
from tests.helpers import hubspot_shapes
from tests.helpers.constants import AVA, NOW, SECRET
from tests.helpers.crm import FakeHubSpot
from tests.helpers.events import hubspot_event
from tests.helpers.throttle import assert_held_until
from tests.helpers.vendors import VendorTransport

pytestmark = pytest.mark.both_backends


def _only_event(db: Database, link: connections.Added) -> dict[str, Any]:
    (event,) = store.events_of(db, link.row["id"])
    return event


def _credits(db: Database) -> int:
    return db.execute("SELECT credits FROM organizations WHERE name = 'Acme'").fetchone()[0]


@pytest.mark.through_pgbouncer
def test_an_event_is_enriched_and_written_back_once(worker_setup: Any, crm: FakeHubSpot) -> None:
    db, work, link, _ = worker_setup
    hubspot_event(db, link, "e1")
    assert work.run_due() == {"done": 1}
    (written,) = crm.patches()
    assert written["jobtitle"] == "Vice President of Sales"
    assert written["company"] == "Lonestar Discover Works Inc." and "email" not in written
    assert crm.requests[0].headers["Authorization"] == "Bearer pat-na1-token"
    assert _only_event(db, link)["status"] == "done" and _credits(db) == 9
    cached = store.record(db, link.row["id"], "501")
    assert cached is not None and json.loads(cached["written"])["jobtitle"] == written["jobtitle"]

    # the worker died before marking the event done: done again, neither charged nor written
    db.execute("UPDATE events SET status = 'pending'")
    assert work.run_due() == {"done": 1}
    assert len(crm.patches()) == 1 and _credits(db) == 9


def test_a_thin_event_reads_the_record_first(worker_setup: Any, crm: FakeHubSpot) -> None:
    db, work, link, _ = worker_setup
    hubspot_event(db, link, "thin-1", thin=True)
    assert work.run_due() == {"done": 1}
    assert crm.requests[0].method == "GET" and "email" in crm.requests[0].url.params["properties"]
    assert crm.patches()[0]["jobtitle"] == "Vice President of Sales"


def test_a_value_the_user_set_is_kept(worker_setup: Any, crm: FakeHubSpot) -> None:
    db, work, link, _ = worker_setup
    crm.contacts["501"]["jobtitle"] = "Chief Revenue Wizard"  # overwrite_if_ours: not ours
    hubspot_event(db, link, "e1")
    work.run_due()
    assert "jobtitle" not in crm.patches()[0]


def test_429_waits_at_least_retry_after_then_succeeds(worker_setup: Any, crm: FakeHubSpot) -> None:
    db, work, link, clock = worker_setup
    hubspot_event(db, link, "e1")
    limited = hubspot_shapes.rate_limited("TEN_SECONDLY_ROLLING")
    crm.failures.append(httpx.Response(429, headers={"Retry-After": "120"}, json=limited))
    assert work.run_due() == {"retry": 1}
    event = _only_event(db, link)
    assert event["attempts"] == 0 and event["due_at"] >= "2026-11-23T12:02:00"
    assert work.run_due() == {}  # not due yet
    clock.now += timedelta(seconds=300)
    assert work.run_due() == {"done": 1}


# HubSpot's 429: policyName in the body, Retry-After when sent, else the window's length in
# X-HubSpot-RateLimit-Interval-Milliseconds (https://developers.hubspot.com/docs/guides/apps/
# api-usage/usage-details); DAILY without Retry-After waits 24 h (connector/platforms/hubspot.py).
@pytest.mark.parametrize(
    ("policy", "headers", "wait"),
    [
        ("TEN_SECONDLY_ROLLING", {"Retry-After": "7"}, timedelta(seconds=7)),
        ("SECONDLY", {"X-HubSpot-RateLimit-Interval-Milliseconds": "10000"}, timedelta(seconds=10)),
        ("DAILY", {}, timedelta(hours=24)),
    ],
)
def test_a_rate_limit_holds_the_whole_connection_without_spending_attempts(
    worker_setup: Any, crm: FakeHubSpot, policy: str, headers: dict[str, str], wait: timedelta
) -> None:
    db, work, link, clock = worker_setup
    crm.contacts["502"] = {"email": "cara.cole@lonestar-discover.com"}
    hubspot_event(db, link, "e-501", thin=True)
    body = hubspot_shapes.rate_limited(policy)
    crm.failures.append(httpx.Response(429, headers=headers, json=body))
    assert work.run_due(limit=1) == {"retry": 1}  # one event: the 429 answers its read
    hubspot_event(db, link, "e-502", thin=True, record="502")  # arrives during the hold
    held = clock.now + wait
    (event,) = [e for e in store.events_of(db, link.row["id"]) if e["record_id"] == "501"]
    assert event["attempts"] == 0 and event["due_at"] == server_iso(held)
    assert_held_until(work, clock, crm.requests, held, lambda: store.events_of(db, link.row["id"]))


def test_events_claimed_with_a_rate_limited_one_are_put_back_unattempted(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, clock = worker_setup
    hubspot_event(db, link, "first", thin=True)
    hubspot_event(db, link, "second", thin=True)  # the same record: the round's next batch
    limited = hubspot_shapes.rate_limited("TEN_SECONDLY_ROLLING")
    crm.failures.append(httpx.Response(429, headers={"Retry-After": "10"}, json=limited))
    assert work.run_due() == {"retry": 2}
    assert len(crm.requests) == 1  # the second batch did not call the CRM
    due = server_iso(clock.now + timedelta(seconds=10))
    assert [(e["attempts"], e["due_at"]) for e in store.events_of(db, link.row["id"])] == [
        (0, due),
        (0, due),
    ]


def server_iso(when: datetime) -> str:
    return server.iso(when)


def test_timeouts_back_off_and_give_up_into_a_dead_letter(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, clock = worker_setup
    hubspot_event(db, link, "e1")

    def timeout(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    waits = []
    with httpx.Client(transport=VendorTransport(timeout)) as client:
        failing = worker.Worker(db, SECRET.encode(), clock, client, random.Random(7))
        for _ in range(worker.MAX_ATTEMPTS):
            clock.now += timedelta(hours=7)
            failing.run_due()
            waits.append(_only_event(db, link)["due_at"])
    event = _only_event(db, link)
    assert event["status"] == "dead" and "gave up after 12 attempts" in event["last_error"]
    assert [work.backoff(n) <= min(6 * 3600, 30 * 2**n) for n in range(12)] == [True] * 12


def test_a_permanent_failure_is_a_dead_letter_that_can_be_retried(
    worker_setup: Any, crm: FakeHubSpot, db_path: Path
) -> None:
    db, work, link, clock = worker_setup
    hubspot_event(db, link, "e1")
    expired = hubspot_shapes.error("EXPIRED_AUTHENTICATION", "expired")
    crm.failures.append(httpx.Response(401, json=expired))
    assert work.run_due() == {"dead": 1}
    event = _only_event(db, link)
    assert "token expired or revoked" in event["last_error"]
    listed = CliRunner().invoke(main, ["deliveries", "list", "--db", str(db_path), "--json"])
    assert json.loads(listed.output)[0]["status"] == "dead"
    retried = CliRunner().invoke(
        main, ["deliveries", "retry", "--db", str(db_path), str(event["id"])]
    )
    assert retried.exit_code == 0, retried.output
    for past_sqlite in ([str(2**64)], ["--", str(-(2**64))]):
        command = ["deliveries", "retry", "--db", str(db_path), *past_sqlite]
        refused = CliRunner().invoke(main, command)
        assert refused.exit_code == 2 and "is not in the range" in refused.output
    many = ["deliveries", "list", "--db", str(db_path), "--limit", str(2**64)]
    assert CliRunner().invoke(main, many).exit_code == 2
    clock.now = datetime.now(UTC)  # the command made it due at the real time
    assert work.run_due() == {"done": 1}


def test_a_person_we_do_not_know_gets_only_the_record_status(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, _ = worker_setup
    crm.contacts["501"]["email"] = "nobody@nowhere-at-all.example"
    hubspot_event(db, link, "thin-2", thin=True)
    assert work.run_due() == {"done": 1}
    assert crm.patches() == [{"contactdata_record_status": "No Match"}] and _credits(db) == 10


def test_an_echo_of_our_own_write_is_not_enriched_again_until_it_is_stale(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, clock = worker_setup
    hubspot_event(db, link, "e1", thin=True)
    work.run_due()
    assert _credits(db) == 9
    hubspot_event(
        db, link, "echo", thin=True
    )  # HubSpot tells us about the properties we just wrote
    assert work.run_due() == {"done": 1}
    assert _credits(db) == 9 and len(crm.patches()) == 1
    assert "not enriched again" in store.events_of(db, link.row["id"])[-1]["last_error"]
    clock.now += worker.FRESH_FOR + timedelta(days=1)
    hubspot_event(db, link, "a month later", thin=True)
    assert work.run_due() == {"done": 1}
    assert _credits(db) == 8  # pro pays for a refresh


MOVER = "rosa.ruiz@lonestar-discover.com"  # No Longer at Lonestar, Active at Hill Country


def test_a_worker_killed_between_the_crm_write_and_its_record_does_not_write_twice(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, _ = worker_setup
    crm.contacts["501"] = {"email": MOVER}
    hubspot_event(db, link, "e1", thin=True)
    assert work.run_due() == {"done": 1}
    (first,) = crm.patches()
    # what a kill after HubSpot applied the PATCH, before the worker recorded it, leaves:
    db.execute("UPDATE records SET written = '{}', pending = ?", [json.dumps(first)])
    db.execute("UPDATE events SET status = 'pending'")
    assert work.run_due() == {"done": 1}
    assert crm.patches() == [first]  # the company we wrote did not change the match
    cached = store.record(db, link.row["id"], "501")
    assert cached is not None and json.loads(cached["written"]) == first and not cached["pending"]


def test_a_write_that_failed_after_its_intent_was_saved_is_finished(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, clock = worker_setup
    hubspot_event(db, link, "e1", thin=True)
    crm.failures += [httpx.Response(200, json=hubspot_shapes.record("501", crm.contacts["501"]))]
    crm.failures += [httpx.Response(503, json={})]  # the GET answers, the PATCH fails
    assert work.run_due() == {"retry": 1}
    assert store.record(db, link.row["id"], "501")["pending"]  # type: ignore[index]
    clock.now += timedelta(hours=7)
    assert work.run_due() == {"done": 1}
    assert crm.patches()[-1]["jobtitle"] == "Vice President of Sales" and _credits(db) == 9


@pytest.mark.through_pgbouncer
def test_events_of_several_records_go_out_in_one_batch_update(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, _ = worker_setup
    people = {
        "501": AVA,
        "502": "cara.cole@lonestar-discover.com",
        "503": "fay.fox@lonestar-discover.com",
    }
    for record, email in people.items():
        crm.contacts[record] = {"email": email}
        hubspot_event(db, link, f"e-{record}", thin=True, record=record)
    assert work.run_due() == {"done": 3}
    (batch,) = crm.batches()
    assert crm.patches() == [] and sorted(batch) == ["501", "502", "503"]
    titles = {record: values["jobtitle"] for record, values in batch.items()}
    assert titles == {
        "501": "Vice President of Sales",
        "502": "Sr. Software Engineer",
        "503": "Chief Technology Officer",
    }
    for record in people:
        cached = store.record(db, link.row["id"], record)
        assert cached is not None and not cached["pending"]
        assert json.loads(cached["written"])["jobtitle"] == titles[record]


def test_a_batch_read_refused_as_a_whole_is_read_record_by_record(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    """One malformed id (a settings page test event) must not fail the round's others."""
    db, work, link, _ = worker_setup
    crm.contacts["502"] = {"email": "cara.cole@lonestar-discover.com"}
    invalid = hubspot_shapes.error("VALIDATION_ERROR", "Invalid input")
    crm.failures.append(httpx.Response(400, json=invalid))  # the batch read
    hubspot_event(db, link, "e-501", thin=True)
    hubspot_event(db, link, "e-test", thin=True, record="settings-test-1")
    hubspot_event(db, link, "e-502", thin=True, record="502")
    assert work.run_due() == {"done": 2, "dead": 1}
    paths = [request.url.path for request in crm.requests if request.method != "PATCH"]
    assert paths[:4] == [
        f"{CONTACTS}/batch/read",
        f"{CONTACTS}/501",
        f"{CONTACTS}/settings-test-1",
        f"{CONTACTS}/502",
    ]
    dead = [e for e in store.events_of(db, link.row["id"]) if e["status"] == "dead"]
    assert [e["event_key"] for e in dead] == ["e-test"]


def test_an_expired_token_fails_the_round_without_reading_each_record(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, _ = worker_setup
    crm.contacts["502"] = {"email": "cara.cole@lonestar-discover.com"}
    expired = hubspot_shapes.error("EXPIRED_AUTHENTICATION", "expired")
    crm.failures.append(httpx.Response(401, json=expired))
    hubspot_event(db, link, "e-501", thin=True)
    hubspot_event(db, link, "e-502", thin=True, record="502")
    assert work.run_due() == {"dead": 2}
    assert len(crm.requests) == 1


def test_a_contact_the_batch_could_not_write_is_a_dead_letter_and_the_rest_are_done(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, _ = worker_setup
    crm.contacts["502"] = {"email": "cara.cole@lonestar-discover.com"}
    hubspot_event(db, link, "e-501", thin=True)
    hubspot_event(db, link, "e-502", thin=True, record="502")
    real = crm.__call__

    def merged_away(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/batch/update"):
            crm.contacts.pop("502")  # merged into another contact meanwhile
        return real(request)

    with httpx.Client(transport=VendorTransport(merged_away)) as client:
        batching = worker.Worker(db, SECRET.encode(), work.clock, client, random.Random(7))
        assert batching.run_due() == {"done": 1, "dead": 1}
    status = {
        e["record_id"]: (e["status"], e["last_error"]) for e in store.events_of(db, link.row["id"])
    }
    assert status["501"] == ("done", "")
    assert status["502"][0] == "dead" and "OBJECT_NOT_FOUND" in status["502"][1]


def test_a_rate_limited_batch_retries_every_event_in_it(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, _, link, clock = worker_setup
    crm.contacts["502"] = {"email": "cara.cole@lonestar-discover.com"}
    hubspot_event(db, link, "e-501", thin=True)
    hubspot_event(db, link, "e-502", thin=True, record="502")
    limited = httpx.Response(
        429, headers={"Retry-After": "60"}, json=hubspot_shapes.rate_limited("TEN_SECONDLY_ROLLING")
    )
    real = crm.__call__
    calls = []

    def limit_batches(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if request.url.path.endswith("/batch/update") and calls.count(request.url.path) == 1:
            return limited
        return real(request)

    with httpx.Client(transport=VendorTransport(limit_batches)) as client:
        batching = worker.Worker(db, SECRET.encode(), clock, client, random.Random(7))
        assert batching.run_due() == {"retry": 2}
        assert store.record(db, link.row["id"], "502")["pending"]  # type: ignore[index]
        clock.now += timedelta(hours=1)
        assert batching.run_due() == {"done": 2}
    assert _credits(db) == 8  # each enriched once: the second round finished the saved intents
    assert crm.contacts["502"]["jobtitle"] == "Sr. Software Engineer"


def test_two_events_of_one_record_are_done_in_turn(worker_setup: Any, crm: FakeHubSpot) -> None:
    db, work, link, _ = worker_setup
    hubspot_event(db, link, "first", thin=True)
    hubspot_event(db, link, "second", thin=True)
    assert work.run_due() == {"done": 2}
    first, second = store.events_of(db, link.row["id"])
    assert first["last_error"] == "" and "not enriched again" in second["last_error"]
    assert len(crm.patches()) == 1 and _credits(db) == 9


def test_a_property_change_reporting_our_own_write_is_ignored_without_calling_the_crm(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, _ = worker_setup
    hubspot_event(db, link, "e1", thin=True)
    work.run_due()
    before = len(crm.requests)
    change = {"subscriptionType": "contact.propertyChange", "objectId": 501,
              "propertyName": "jobtitle", "propertyValue": "Vice President of Sales"}  # fmt: skip
    hubspot_event(db, link, "echo", thin=True, payload=change)
    assert work.run_due() == {"done": 1}
    assert len(crm.requests) == before and _credits(db) == 9
    assert store.events_of(db, link.row["id"])[-1]["last_error"] == (
        "our own write of jobtitle echoed back: ignored"
    )
    # a user changing the same property is not an echo
    hubspot_event(db, link, "user", thin=True, payload={**change, "propertyValue": "Head of Sales"})
    crm.contacts["501"]["jobtitle"] = "Head of Sales"
    assert work.run_due() == {"done": 1}
    assert len(crm.requests) > before


def test_a_full_record_event_we_already_enriched_needs_no_crm_call(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, _ = worker_setup
    hubspot_event(db, link, "e1")
    work.run_due()
    before = len(crm.requests)
    hubspot_event(db, link, "workflow fired again")  # same contact, same input
    assert work.run_due() == {"done": 1}
    assert len(crm.requests) == before and _credits(db) == 9


def test_a_record_that_breaks_enrichment_fails_alone_and_the_worker_goes_on(
    worker_setup: Any,
    crm: FakeHubSpot,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A bug or MemoryError on one record (as a company name that once exploded the matcher
    caused) is that event's failure: logged, retried later; the round's others are written."""
    db, work, link, _ = worker_setup
    poison = "cara.cole@lonestar-discover.com"
    enrich = store.server.enrich_with_key

    def breaking(db: Database, secret: bytes, key: str, given: dict[str, Any], *rest: Any) -> Any:
        if given.get("conEmail") == poison:
            raise MemoryError
        return enrich(db, secret, key, given, *rest)

    monkeypatch.setattr(store.server, "enrich_with_key", breaking)
    crm.contacts["502"] = {"email": poison}
    hubspot_event(db, link, "e-501", thin=True, record="501")
    hubspot_event(db, link, "e-502", thin=True, record="502")
    assert work.run_due() == {"done": 1, "retry": 1}
    patched = [r.url.path.rsplit("/", 1)[-1] for r in crm.requests if r.method == "PATCH"]
    assert patched == ["501"] and crm.contacts["501"]["jobtitle"] == "Vice President of Sales"
    broken = next(e for e in store.events_of(db, link.row["id"]) if e["record_id"] == "502")
    assert broken["status"] == "pending" and broken["attempts"] == 1
    assert broken["last_error"] == "internal error (MemoryError), logged"
    assert "MemoryError" in caplog.text


def test_the_worker_connects_only_to_the_address_it_checked(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DNS rebinding (issue 19): the CRM's name answers a public address to the checks, then
    127.0.0.1. The worker's client connects to nothing on loopback, and the event waits with
    the check's reason: nothing there tells whether a port on this machine is open."""
    monkeypatch.delenv(outbound.ALLOW_PRIVATE, raising=False)
    monkeypatch.setenv("CONTACTDATA_KEY_SECRET", SECRET)
    servers.loopback_only(monkeypatch)
    answers = iter(["104.18.0.1"])  # the check on adding; then the client's, as it connects
    resolve = socket.getaddrinfo

    def rebinding(host: str, port: Any, *args: Any, **options: Any) -> list[tuple[Any, ...]]:
        if host != "crm.example":
            return resolve(host, port, *args, **options)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers, "127.0.0.1"), port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    db = store.connect(db_path)
    _, key = accounts.create_organization(
        db, SECRET.encode(), NOW, name="Acme", website="acme.example", tier="pro", credits=10
    )
    listener = servers.Listener()
    try:
        link = connections.add(
            db, SECRET.encode(), NOW, name="hs", platform="hubspot", api_key=key,
            secret="hubspot-app-secret", crm_base_url=f"https://crm.example:{listener.port}",
            crm_token="pat-na1-token",
        )  # fmt: skip
        hubspot_event(db, link, "e1")
        ran = CliRunner().invoke(main, ["worker", "--db", str(db_path), "--once"])
    finally:
        listener.close()
    assert ran.exit_code == 0, ran.output
    assert listener.accepted == 0
    event = _only_event(db, link)
    assert event["status"] == "pending" and event["attempts"] == 1
    assert event["last_error"].endswith("crm.example resolves to 127.0.0.1, not public")


REFUSED_LEVEL = (
    "contactdata_job_levels: INVALID_OPTION: VP was not one of the allowed options: "
    "['Director', 'Manager']"
)


def test_an_invalid_option_drops_only_that_field_and_the_delivery_says_why(
    worker_setup: Any, crm: FakeHubSpot, db_path: Path
) -> None:
    """A dropdown set up without our value (HubSpot's INVALID_OPTION) used to bury the whole
    contact; now the rest is written and the delivery names the field and HubSpot's reason."""
    db, work, link, _ = worker_setup
    crm.options["contactdata_job_levels"] = {"Director", "Manager"}
    hubspot_event(db, link, "e1", thin=True)
    assert work.run_due() == {"done": 1}
    refused, written = crm.patches()
    assert refused["contactdata_job_levels"] == "VP"
    assert "contactdata_job_levels" not in written
    assert written == {k: v for k, v in refused.items() if k != "contactdata_job_levels"}
    assert crm.contacts["501"]["jobtitle"] == "Vice President of Sales"
    assert _only_event(db, link)["last_error"] == REFUSED_LEVEL
    listed = CliRunner().invoke(main, ["deliveries", "list", "--db", str(db_path), "--json"])
    assert json.loads(listed.output)[0]["last_error"] == REFUSED_LEVEL
    cached = store.record(db, link.row["id"], "501")
    assert cached is not None and "contactdata_job_levels" not in json.loads(cached["written"])


def test_a_batch_refused_for_one_contacts_invalid_option_writes_every_contact(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    """HubSpot refuses a whole batch update for one contact's invalid option: each contact is
    then written on its own, the offending one without the refused field."""
    db, work, link, _ = worker_setup
    crm.options["contactdata_job_levels"] = {"Director", "Manager", "Staff/Principal"}
    crm.contacts["502"] = {"email": "cara.cole@lonestar-discover.com"}
    hubspot_event(db, link, "e-501", thin=True)
    hubspot_event(db, link, "e-502", thin=True, record="502")
    assert work.run_due() == {"done": 2}
    assert len(crm.batches()) == 1  # refused as a whole, then a PATCH a contact
    assert crm.contacts["501"]["jobtitle"] == "Vice President of Sales"
    assert "contactdata_job_levels" not in crm.contacts["501"]
    assert crm.contacts["502"]["contactdata_job_levels"] == "Staff/Principal"
    notes = {e["record_id"]: e["last_error"] for e in store.events_of(db, link.row["id"])}
    assert notes["502"] == ""
    assert notes["501"].startswith("contactdata_job_levels: INVALID_OPTION: VP was not one")


LISTING = """\
platform: hubspot
record_id: [objectId, vid]
input:
  conEmail: [properties.email.value, email]
output:
  - {field: conFunctions, property: contactdata_job_functions, transforms: [split],
     policy: overwrite_if_ours}
"""


def test_a_list_we_wrote_echoed_back_in_hubspots_form_is_recognized_as_ours(
    worker_setup: Any, crm: FakeHubSpot, tmp_path: Path
) -> None:
    """HubSpot keeps a multiple-checkbox value as "a;b" in its options' order; the list we
    wrote must still be ours, or its own echo would count as a user's edit."""
    db, work, link, _ = worker_setup
    (tmp_path / "hubspot.yaml").write_text(LISTING)
    db.execute("UPDATE connections SET mapping = ?", [str(tmp_path / "hubspot.yaml")])
    crm.contacts["501"] = {"email": "milo.moore@lonestar-discover.com"}
    hubspot_event(db, link, "e1", thin=True)
    assert work.run_due() == {"done": 1}
    assert crm.patches() == [{"contactdata_job_functions": "Sales;Marketing"}]
    before = len(crm.requests)
    change = {"subscriptionType": "contact.propertyChange", "objectId": 501,
              "propertyName": "contactdata_job_functions",
              "propertyValue": "Marketing;Sales"}  # fmt: skip
    hubspot_event(db, link, "echo", thin=True, payload=change)
    assert work.run_due() == {"done": 1}
    assert len(crm.requests) == before
    assert store.events_of(db, link.row["id"])[-1]["last_error"] == (
        "our own write of contactdata_job_functions echoed back: ignored"
    )


def test_m010_keeps_each_cached_record_as_a_contact_and_lets_kinds_share_ids(
    tmp_path: Path,
) -> None:
    """A database cached before records had kinds: its records are contacts after m010, and
    a company may then have the id a contact has (a CRM numbers each kind on its own). (A
    step PostgreSQL takes too, on a new database: it had no records before.)"""
    db_path = tmp_path / "test.db"
    db = Database(db_path)
    with server.write(db):
        schema.MIGRATIONS.apply(db, stop_before="m010_record_kinds")
    cached = {
        "connection_id": "c1", "record_id": "501", "transaction_id": "t1",
        "contact_guid": "g1", "input_fingerprint": "f", "written": '{"jobtitle": "CTO"}',
        "enriched_at": "2026-11-01T00:00:00.000+00:00", "pending": "",
    }  # fmt: skip
    db["records"].insert(cached)
    with server.write(db):
        schema.MIGRATIONS.apply(db)
    assert store.record(db, "c1", "501") == {**cached, "kind": "contacts", "company_guid": ""}
    store.save_record(db, {**cached, "kind": "companies", "written": "{}"})
    assert store.record(db, "c1", "501", "companies")["written"] == "{}"
    assert store.record(db, "c1", "501")["written"] == '{"jobtitle": "CTO"}'


def test_a_paused_connections_events_wait_until_it_is_resumed(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, clock = worker_setup
    assert connections.pause(db, link.row["id"], clock())
    hubspot_event(db, link, "held-1")
    assert work.run_due() == {} and crm.requests == []
    assert _only_event(db, link)["status"] == "pending"  # acknowledged, kept, not lost
    assert connections.resume(db, link.row["id"])
    assert work.run_due() == {"done": 1}
    assert crm.patches()[0]["jobtitle"] == "Vice President of Sales"


def test_a_crm_connection_not_connected_yet_holds_its_events(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, clock = worker_setup
    key = store.unseal(SECRET.encode(), link.row["api_key_sealed"])
    later = connections.add(
        db, SECRET.encode(), clock(), name="later", platform="hubspot", api_key=key,
        secret="hubspot-app-secret-2", connected=False,
    )  # fmt: skip
    assert later.row["crm_base_url"] == "" and connections.state(later.row) == "not connected"
    hubspot_event(db, later, "waits-1")
    assert work.run_due() == {} and crm.requests == []
    connections.set_crm(
        db, SECRET.encode(), later.row["id"], base_url=link.row["crm_base_url"],
        token="pat-na1-token",
    )  # fmt: skip
    assert work.run_due() == {"done": 1} and len(crm.patches()) == 1


@pytest.mark.through_pgbouncer
def test_an_event_claimed_by_one_worker_is_not_worked_by_another_until_its_lease_ends(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, clock = worker_setup
    hubspot_event(db, link, "e1")
    other = dataclasses.replace(work, name="another-host:7:abc")
    (claimed,) = work.claim(10)  # then this worker dies mid-batch
    assert claimed["claimed_by"] == work.name and claimed["lease_until"] > claimed["due_at"]
    assert other.run_due() == {} and crm.patches() == []
    clock.advance(work.lease.total_seconds())  # its lease ran out: the event is due again
    assert other.run_due() == {"done": 1} and len(crm.patches()) == 1
    event = _only_event(db, link)
    assert (event["status"], event["claimed_by"], event["lease_until"]) == ("done", "", "")


@pytest.mark.through_pgbouncer
def test_a_worker_extends_its_claims_while_it_works(worker_setup: Any) -> None:
    db, work, link, clock = worker_setup
    hubspot_event(db, link, "e1")
    other = dataclasses.replace(work, name="another-host:7:abc")
    work.claim(10)
    clock.advance(0.9 * work.lease.total_seconds())
    assert work.extend() == {_only_event(db, link)["id"]}
    clock.advance(0.5 * work.lease.total_seconds())  # past the first lease, within the second
    assert other.claim(10) == []
    clock.advance(work.lease.total_seconds())
    assert [event["claimed_by"] for event in other.claim(10)] == [other.name]
    assert work.extend() == set()  # taken over: this worker must not go on with it


def test_a_postponed_event_is_released_for_any_worker(worker_setup: Any, crm: FakeHubSpot) -> None:
    db, work, link, clock = worker_setup
    hubspot_event(db, link, "e1")
    crm.failures.append(httpx.Response(503, json={}))
    assert work.run_due() == {"retry": 1}
    event = _only_event(db, link)
    assert (event["claimed_by"], event["lease_until"]) == ("", "")
    clock.advance(worker.BACKOFF_FIRST_SECONDS * 2)  # the longest first wait
    other = dataclasses.replace(work, name="another-host:7:abc")
    assert other.run_due() == {"done": 1}


def test_a_round_the_database_ends_is_given_up_and_the_worker_goes_on() -> None:
    """On PostgreSQL write transactions run side by side, so one may meet a deadlock or wait
    too long for a row: the round is rolled back, its claims lapse, and the worker lives on."""

    class Rounds:
        def __init__(self) -> None:
            self.calls = 0

        def run_due(self, batch: int) -> dict[str, int]:
            self.calls += 1
            if self.calls == 1:
                raise psycopg.errors.DeadlockDetected("deadlock detected")
            return {}

    rounds = Rounds()
    cli._work_off(rounds, once=True, idle=0, batch=10)  # type: ignore[arg-type]
    assert rounds.calls == 2
