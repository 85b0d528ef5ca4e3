"""A connection's minimum match grade (a mapping's `minimum_grade`): below it the worker writes
nothing and a preview shows each row's decision as the grade's; at or above it, as before.
Against the fake HubSpot: Ava's e-mail matches her at A+, a misspelt name at her company's
shorter name matches the company alone at A-."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from connector import mapping_versions, mappings, preview, worker
from connector.store import server as store_server
from tests.helpers.clock import Clock
from tests.helpers.constants import AVA, NOW, SECRET
from tests.helpers.crm import FakeHubSpot, SearchableHubSpot
from tests.helpers.events import hubspot_event
from tests.helpers.orgs import connected
from tests.helpers.vendors import VendorTransport

Row = dict[str, Any]
HUBSPOT_FILE = (mappings.DIRECTORY / "hubspot.yaml").read_text()
A_MINUS = {"firstname": "Eva", "lastname": "Adamz", "company": "Lonestar Discover"}


def _with_minimum(db: Any, link: Row, grade: str) -> None:
    """Save the HubSpot file with a minimum grade as the connection's contacts mapping."""
    text = mapping_versions.with_outputs(HUBSPOT_FILE, _rows(HUBSPOT_FILE), grade)
    mapping_versions.validated(link, "contacts", text)
    with store_server.write(db):
        mapping_versions.save(db, link, "contacts", text, NOW, "test")


def _rows(text: str) -> list[Row]:
    return [{"property": r.property, "field": r.field, "transforms": " ".join(r.transforms),
             "policy": r.policy} for r in mappings.parse(text, "test").output]  # fmt: skip


@pytest.fixture
def hubspot(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Row]:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    db, link, _ = connected(db_path, "hubspot", "pat-na1-token", secret="hubspot-app-secret")
    crm = SearchableHubSpot()
    crm.contacts["501"] = {"email": AVA, "firstname": "Ava"}
    crm.contacts["503"] = dict(A_MINUS)
    with httpx.Client(transport=VendorTransport(crm)) as client:
        work = worker.Worker(db, SECRET.encode(), Clock(), client, random.Random(7))
        yield {"db": db, "work": work, "link": link.row, "crm": crm}


def test_a_preview_below_the_minimum_shows_the_grade_as_every_rows_decision(hubspot: Row) -> None:
    _with_minimum(hubspot["db"], hubspot["link"], "A")
    shown = preview.show(hubspot["work"], hubspot["link"]["id"], "contacts", record_id="503")
    below = "the match grade A- is below the minimum A"
    with_values = [row for row in shown.rows if row["value"] != ""]
    assert with_values and all(row["reason"] == below for row in with_values)
    assert shown.planned == {}


def test_a_preview_at_or_above_the_minimum_is_decided_by_the_policies(hubspot: Row) -> None:
    _with_minimum(hubspot["db"], hubspot["link"], "A")
    shown = preview.show(hubspot["work"], hubspot["link"]["id"], "contacts", record_id="501")
    assert shown.planned["lastname"] == "Adams"
    assert not any("below the minimum" in row["reason"] for row in shown.rows)


def test_the_worker_writes_nothing_below_the_minimum_and_writes_above_it(
    worker_setup: Any, crm: FakeHubSpot
) -> None:
    db, work, link, _ = worker_setup
    _with_minimum(db, link.row, "A")
    crm.contacts["503"] = dict(A_MINUS)
    properties = {name: {"value": value} for name, value in A_MINUS.items()}
    hubspot_event(db, link, "low", record="503", payload={"vid": "503", "properties": properties})
    assert work.run_due() == {"done": 1}
    assert crm.patches() == []
    graded = db.execute("SELECT accuracy FROM transactions").fetchall()
    assert graded == [("A-",)]  # enriched, and matched: only the grade kept it from the CRM
    hubspot_event(db, link, "high")
    assert work.run_due() == {"done": 1}
    (written,) = crm.patches()
    assert written["lastname"] == "Adams"
