"""The connector honours the suppression list: nothing of a suppressed person is written
back (a pending write is cancelled), scheduled refreshes skip them, and its part of an
erasure deletes its stored copies of their data."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest
from sqlite_utils import Database

import server
from connector import jobs, store, suppression
from server import privacy
from server.clock import iso
from tests.helpers.constants import AVA, NOW, SECRET
from tests.helpers.crm import FakeHubSpot
from tests.helpers.enrich_data import suppress
from tests.helpers.events import hubspot_event
from tests.servers import CONTACTDATA

pytestmark = pytest.mark.both_backends

AVA_PROFILE = "https://www.linkedin.com/in/ava-adams"


def _suppress(db: Database, *found: privacy.Identifier | None) -> None:
    """Put these identifiers on the suppression list (under the worker's secret)."""
    suppress(db, *found, secret=SECRET.encode())


def _credits(db: Database) -> int:
    return db.execute("SELECT credits FROM organizations WHERE name = 'Acme'").fetchone()[0]


def _only_event(db: Database, link: Any) -> dict[str, Any]:
    (event,) = store.events_of(db, link.row["id"])
    return event


def test_identifiers_are_read_from_an_input_in_either_naming_and_from_a_result() -> None:
    newer = {"conEmail": " Ava.Adams@Lonestar-Discover.com ", "conFirstName": "Ava",
             "conLastName": "Adams", "compWebsite": "lonestar-discover.com"}  # fmt: skip
    older = {"contactEmail": AVA, "contactFullName": "Ava Adams", "companyWebAddress": "x.com"}
    assert server.named_in_input(newer) == [
        privacy.Identifier("email", AVA),
        privacy.Identifier("name_domain", "ava adams@lonestar-discover.com"),
    ]
    assert server.named_in_input(older)[1] == privacy.Identifier("name_domain", "ava adams@x.com")
    result = {"conEmail": AVA, "conPubProfileUrl": "linkedin.com/in/Ava-Adams/", "compName": "L"}
    assert server.named_in_result(result) == [
        privacy.Identifier("email", AVA),
        privacy.Identifier("profile_url", AVA_PROFILE),
    ]
    assert server.named_in_result({"compName": "Lonestar"}) == []


def test_a_suppressed_person_is_neither_enriched_nor_written_back(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, _ = worker_setup
    _suppress(db, privacy.email(AVA.upper()))
    hubspot_event(db, link, "e1")
    assert work.run_due() == {"done": 1}
    assert crm.patches() == [] and _credits(db) == 10  # no write, no charge
    event = _only_event(db, link)
    assert event["status"] == "done" and event["last_error"] == suppression.SUPPRESSED


def test_a_person_suppressed_by_another_identifier_is_not_written_back(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    """The CRM record gives only the e-mail; the list names Ava by name at her company."""
    db, work, link, _ = worker_setup
    _suppress(db, privacy.name_at("Ava Adams", "lonestar-discover.com"))
    hubspot_event(db, link, "e1")
    assert work.run_due() == {"done": 1}
    assert all("jobtitle" not in patch for patch in crm.patches())  # nothing of hers


def test_a_pending_write_of_a_person_suppressed_since_is_cancelled(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, _ = worker_setup
    hubspot_event(db, link, "e1", thin=True)
    assert work.run_due() == {"done": 1}
    (first,) = crm.patches()
    # a kill after the intent was saved, before HubSpot was called; then Ava opts out
    db.execute("UPDATE records SET written = '{}', pending = ?", [json.dumps(first)])
    db.execute("UPDATE events SET status = 'pending'")
    crm.contacts["501"] = {"email": AVA, "jobtitle": ""}
    _suppress(db, privacy.email(AVA))
    assert work.run_due() == {"done": 1}
    assert crm.patches() == [first]  # the first write only: the pending one was not sent
    cached = store.record(db, link.row["id"], "501")
    assert cached is not None and cached["pending"] == ""
    assert _only_event(db, link)["last_error"] == suppression.SUPPRESSED


def test_reenrich_skips_records_whose_input_names_a_suppressed_person(worker_setup: Any) -> None:
    db, _, link, _ = worker_setup
    for record_id, email in (("501", AVA), ("502", "ben.brown@lonestar-discover.com")):
        store.save_record(db, {
            "connection_id": link.row["id"], "record_id": record_id, "transaction_id": record_id,
            "input_fingerprint": json.dumps({"conEmail": email}),
            "enriched_at": "2026-01-01T00:00:00.000+00:00",
        })  # fmt: skip
    _suppress(db, privacy.email(AVA))
    assert jobs.reenrich(db, SECRET.encode(), NOW) == (
        "1 records queued for refresh, 1 of suppressed people skipped"
    )
    assert [event["record_id"] for event in store.events_of(db, link.row["id"])] == ["502"]


def _event(db: Database, link: Any, key: str, record: str, payload: dict[str, Any]) -> None:
    hubspot_event(db, link, key, record=record, payload=payload)
    db.execute("UPDATE events SET status = 'done' WHERE event_key = ?", [key])


def test_the_eraser_deletes_the_connectors_copies_of_the_persons_data(worker_setup: Any) -> None:
    db, _, link, _ = worker_setup
    link_id = link.row["id"]
    _event(db, link, "by-email", "601", {"properties": {"email": {"value": AVA.upper()}}})
    _event(db, link, "by-url", "602", {"linkedin_url": "HTTP://LinkedIn.com/in/ava-adams/"})
    _event(db, link, "thin", "603", {})  # names nobody: its record matched Ava's contact
    _event(db, link, "other", "604", {"email": "ben_brown@lonestar-discover.com"})
    _event(db, link, "wrote", "605", {})  # it wrote her e-mail (Deliveries shows what it wrote)
    db.execute(
        "UPDATE events SET written = ? WHERE event_key = 'wrote'", [json.dumps({"email": AVA})]
    )
    for record_id, guid in (("603", "C-AVA"), ("604", "C-BEN")):  # a job change of each seen
        db.execute(
            "INSERT INTO signals (connection_id, record_id, contact_guid, change_id, signal, "
            "person, created_at) VALUES (?, ?, ?, 1, 'left', 'Ava Adams', ?)",
            [link_id, record_id, guid, iso(NOW)],
        )
    for record_id, guid in (("603", "C-AVA"), ("604", "C-BEN")):
        store.save_record(db, {
            "connection_id": link_id, "record_id": record_id, "transaction_id": record_id,
            "contact_guid": guid, "input_fingerprint": "{}", "enriched_at": iso(NOW),
        })  # fmt: skip
    for webhook_id, body in (("w1", json.dumps({"conEmail": AVA})), ("w2", "{}")):
        db.execute(
            "INSERT INTO webhook_replays (connection_id, webhook_id, received_at, status, body) "
            "VALUES (?, ?, ?, 200, ?)",
            [link_id, webhook_id, iso(NOW), body],
        )
    erasure = privacy.Erasure(
        (privacy.email(AVA), privacy.profile(AVA_PROFILE), privacy.name_at("Ava Adams", "x.com")),
        ("hashes are not the connector's concern",),
        ("C-AVA",),
    )  # type: ignore[arg-type]
    with store.server.write(db):
        erased = suppression.erase(db, erasure)
    assert erased == {"webhook payloads": 4, "kept delivery answers": 1, "previews": 0,
                      "cached records": 1, "job changes": 1}  # fmt: skip
    assert [row[0] for row in db.execute("SELECT contact_guid FROM signals")] == ["C-BEN"]
    assert [e["event_key"] for e in store.events_of(db, link_id)] == ["other"]
    assert store.record(db, link_id, "603") is None and store.record(db, link_id, "604")
    kept = db.execute("SELECT webhook_id FROM webhook_replays").fetchall()
    assert [row[0] for row in kept] == ["w2"]


def test_erasure_needles_are_lower_case_and_leave_out_the_profile_host() -> None:
    found = [
        privacy.email("Ava@X.com"),
        privacy.profile(AVA_PROFILE),
        privacy.name_at("A B", "x.com"),
    ]
    assert suppression.needles([i for i in found if i]) == [
        "ava@x.com",
        "linkedin.com/in/ava-adams",
    ]


def test_the_eraser_finds_an_address_literally(worker_setup: Any) -> None:
    """An underscore in an address is no wildcard: the look-alike's payload stays."""
    db, _, link, _ = worker_setup
    _event(db, link, "hers", "701", {"email": "ava_adams@x.com"})
    _event(db, link, "look-alike", "702", {"email": "avaXadams@x.com"})
    with store.server.write(db):
        erasure = privacy.Erasure((privacy.email("ava_adams@x.com"),), (), ())  # type: ignore[arg-type]
        erased = suppression.erase(db, erasure)
    assert erased["webhook payloads"] == 1
    assert [e["event_key"] for e in store.events_of(db, link.row["id"])] == ["look-alike"]


def test_contactdata_privacy_erase_runs_the_connectors_part(
    worker_setup: Any, db_path: Any
) -> None:
    db, _, link, _ = worker_setup
    _event(db, link, "hers", "801", {"properties": {"email": {"value": AVA}}})
    _event(db, link, "other", "802", {"email": "ben_brown@lonestar-discover.com"})
    command = [CONTACTDATA, "privacy", "erase", "--db", str(db_path), "--email", AVA]
    done = subprocess.run(command, capture_output=True, text=True, check=False,
                          env={**os.environ, "CONTACTDATA_KEY_SECRET": SECRET})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "webhook payloads=1" in done.stdout
    assert [e["event_key"] for e in store.events_of(db, link.row["id"])] == ["other"]
