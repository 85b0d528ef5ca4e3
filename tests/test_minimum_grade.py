"""A connection's minimum match grade (a mapping's `minimum_grade`): below it the worker writes
nothing and a preview shows each row's decision as the grade's; at or above it, as before.
Against the fake HubSpot: Ava's e-mail matches her at A+, a misspelt name at her company's
shorter name matches the company alone at A-."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import connector.app
from connector import connections, mapping_versions, mappings, preview, store, worker
from connector.store import server as store_server
from server import importer
from tests.helpers.clock import Clock
from tests.helpers.constants import AVA, DATA, NOW, SECRET
from tests.helpers.crm import FakeHubSpot, SearchableHubSpot
from tests.helpers.crm_server import FakeCrm, running
from tests.helpers.events import hubspot_event
from tests.helpers.orgs import connected, organization
from tests.helpers.settings_forms import signed_in, submit, text
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
    low, high = store.events_of(db, link.row["id"])  # as Deliveries shows them
    assert (low["last_error"], low["written"]) == (
        "nothing written: the match grade A- is below the minimum A",
        "",
    )
    assert (high["last_error"], json.loads(high["written"])) == ("", written)


def test_the_grade_set_in_the_editor_shows_in_the_previews_page(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    config = {"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": Clock()}
    app = connector.app.create_app(config)
    db = store.connect(db_path)
    importer.import_files(
        db, companies=DATA / "discover_companies.csv", contacts=DATA / "discover_contacts.csv"
    )
    _, key = organization(db, "Acme", credits=10)
    with running(FakeCrm()) as fake:
        fake.contacts["hubspot"]["503"] = dict(A_MINUS)
        link = connections.add(
            db, SECRET.encode(), NOW, name="Acme HubSpot", platform="hubspot", api_key=key,
            crm_base_url=fake.url, crm_token="pat-na1-token", secret="hubspot-app-secret",
        ).row  # fmt: skip
        client = signed_in(app, key)
        editor = f"/settings/connections/{link['id']}/mapping?kind=contacts"
        form = {name: [r[name] for r in _rows(HUBSPOT_FILE)]
                for name in ("property", "field", "transforms", "policy")}  # fmt: skip
        saved = submit(client, editor, editor, **form, minimum_grade="A", action="save")
        assert saved.status_code == 303, text(saved)
        back = client.get(saved.location)
        page = text(back)
        assert "Saved as version 1" in page and "Minimum match grade: any → A" in page
        assert '<option value="A" selected>A or better</option>' in back.get_data(as_text=True)

        asked = f"/settings/connections/{link['id']}/preview"
        made = submit(client, asked, asked, kind="contacts", record_id="503", email="")
        shown = text(client.get(made.location))
        assert "Nothing is written: the match grade A- is below the minimum A." in shown
        assert "Apply: write" not in shown and fake.writes["503"] == 0
        assert "Company name" in shown and "compName" not in shown  # fields in words
