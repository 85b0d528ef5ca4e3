"""Preview, then apply (connector/preview.py and its settings pages): a CRM record read and
enriched, each mapped property shown with the policy's decision, and Apply writing exactly
what was shown, once; against the fake HubSpot and Salesforce, and through the real app."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from sqlite_utils import Database

import connector.app
import server
from connector import connections, mappings, preview, signal_settings, store, worker
from connector.cli import main
from server import NotFound, ServiceError, importer
from tests.helpers import hubspot_shapes
from tests.helpers.clock import Clock
from tests.helpers.constants import AVA, DATA, NOW, SECRET
from tests.helpers.crm import FakeSalesforce, SearchableHubSpot
from tests.helpers.crm_server import FakeCrm, running
from tests.helpers.orgs import connected, organization
from tests.helpers.settings_forms import signed_in, source, submit, text, token
from tests.helpers.vendors import VendorTransport

Row = dict[str, Any]
SF_ORG = "00D000000000001AAA"  # the Salesforce organization allowed to send


@pytest.fixture
def hubspot(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Row]:
    """Acme (10 credits) connected to a fake HubSpot holding Ava (contact 501) whose job
    title a user typed, and a worker on the test clock calling it."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    db, link, _ = connected(db_path, "hubspot", "pat-na1-token", secret="hubspot-app-secret")
    crm = SearchableHubSpot()
    crm.contacts["501"] = {"email": AVA, "firstname": "Ava", "jobtitle": "Chief Revenue Wizard"}
    clock = Clock()
    with httpx.Client(transport=VendorTransport(crm)) as client:
        work = worker.Worker(db, SECRET.encode(), clock, client, random.Random(7))
        yield {"db": db, "work": work, "id": link.row["id"], "crm": crm, "clock": clock}


def credits(db: Database) -> int:
    return db.execute("SELECT credits FROM organizations WHERE name = 'Acme'").fetchone()[0]


def rows_by_property(shown: preview.Preview) -> dict[str, Row]:
    return {row["property"]: row for row in shown.rows}


def test_a_preview_shows_each_mapped_property_and_writes_nothing(hubspot: Row) -> None:
    shown = preview.show(hubspot["work"], hubspot["id"], "contacts", record_id="501")
    rows = rows_by_property(shown)
    assert [row["property"] for row in shown.rows][:3] == ["firstname", "lastname", "jobtitle"]
    assert rows["firstname"] == {"property": "firstname", "field": "conFirstName",
                                 "current": "Ava", "value": "Ava",
                                 "reason": mappings.SAME_VALUE}  # fmt: skip
    assert rows["lastname"]["value"] == "Adams" and rows["lastname"]["reason"] == ""
    assert rows["jobtitle"]["current"] == "Chief Revenue Wizard"
    assert rows["jobtitle"]["value"] == "Vice President of Sales"
    assert rows["jobtitle"]["reason"] == mappings.KEPT["overwrite_if_ours"]
    assert rows["industry"]["reason"] == mappings.NO_VALUE and rows["industry"]["value"] == ""
    assert shown.planned == {r["property"]: r["value"] for r in shown.rows if not r["reason"]}
    assert "jobtitle" not in shown.planned and shown.planned["lastname"] == "Adams"
    # read once, nothing written, charged once like any enrichment
    assert [r.method for r in hubspot["crm"].requests] == ["GET"]
    assert shown.credits == 1 and credits(hubspot["db"]) == 9
    assert store.record(hubspot["db"], hubspot["id"], "501") is None  # the worker is not told


def test_apply_writes_exactly_the_shown_properties_once(hubspot: Row) -> None:
    db, work, crm = hubspot["db"], hubspot["work"], hubspot["crm"]
    shown = preview.show(work, hubspot["id"], "contacts", record_id="501")
    crm.contacts["501"]["firstname"] = "Avery"  # changed since: Apply still sends what was shown
    applied = preview.apply(work, hubspot["id"], shown.id)
    (written,) = crm.patches()
    assert written == {name: str(value) for name, value in shown.planned.items()}
    assert applied.applied_at and applied.outcome.startswith("wrote lastname")
    cached = store.record(db, hubspot["id"], "501")
    assert cached is not None and cached["pending"] == ""
    assert json.loads(cached["written"]) == shown.planned  # the echo is recognized as ours

    with pytest.raises(preview.AlreadyApplied, match="already applied"):
        preview.apply(work, hubspot["id"], shown.id)
    assert len(crm.patches()) == 1 and credits(db) == 9


def test_after_apply_our_values_may_be_kept_fresh(hubspot: Row) -> None:
    """The write is recorded as the worker records it: overwrite_if_ours now sees it as ours."""
    work = hubspot["work"]
    hubspot["crm"].contacts["501"]["jobtitle"] = ""
    first = preview.show(work, hubspot["id"], "contacts", record_id="501")
    preview.apply(work, hubspot["id"], first.id)
    again = rows_by_property(preview.show(work, hubspot["id"], "contacts", record_id="501"))
    assert again["jobtitle"]["reason"] == mappings.SAME_VALUE


def test_a_record_is_found_by_its_email(hubspot: Row) -> None:
    shown = preview.show(hubspot["work"], hubspot["id"], "contacts", email=f" {AVA.upper()} ")
    assert shown.record_id == "501"
    (search,) = hubspot["crm"].searches()
    (group,) = search["filterGroups"]
    assert group["filters"] == [{"propertyName": "email", "operator": "EQ", "value": AVA}]


def test_an_email_the_crm_does_not_have_is_a_clear_message(hubspot: Row) -> None:
    with pytest.raises(NotFound, match=r"no record with the e-mail nobody@example\.com"):
        preview.show(hubspot["work"], hubspot["id"], "contacts", email="nobody@example.com")
    assert credits(hubspot["db"]) == 10


def test_a_record_the_crm_does_not_have_is_a_clear_message(hubspot: Row) -> None:
    with pytest.raises(preview.CrmFailed, match="record 999: 404"):
        preview.show(hubspot["work"], hubspot["id"], "contacts", record_id="999")
    assert credits(hubspot["db"]) == 10


def test_an_organization_out_of_credits_is_told_so(hubspot: Row) -> None:
    hubspot["db"].execute("UPDATE organizations SET credits = 0 WHERE name = 'Acme'")
    with pytest.raises(ServiceError) as refused:
        preview.show(hubspot["work"], hubspot["id"], "contacts", record_id="501")
    assert refused.value.code == "insufficient_credits"
    assert list(hubspot["db"].query("SELECT id FROM previews")) == []


def test_a_preview_older_than_its_lifetime_is_refused(hubspot: Row) -> None:
    shown = preview.show(hubspot["work"], hubspot["id"], "contacts", record_id="501")
    hubspot["clock"].advance(preview.LIFETIME.total_seconds() + 1)
    with pytest.raises(preview.PreviewExpired, match="preview the record again"):
        preview.apply(hubspot["work"], hubspot["id"], shown.id)
    assert hubspot["crm"].patches() == []


def test_a_write_the_crm_refuses_may_be_applied_again(hubspot: Row) -> None:
    work, crm = hubspot["work"], hubspot["crm"]
    shown = preview.show(work, hubspot["id"], "contacts", record_id="501")
    expired = hubspot_shapes.error("EXPIRED_AUTHENTICATION", "expired")
    crm.failures.append(httpx.Response(401, json=expired))
    with pytest.raises(preview.CrmFailed, match="token expired or revoked"):
        preview.apply(work, hubspot["id"], shown.id)
    assert preview.apply(work, hubspot["id"], shown.id).applied_at
    assert len(crm.patches()) == 2  # the refused one, then the one written


def test_another_connections_preview_is_not_found(hubspot: Row, db_path: Path) -> None:
    shown = preview.show(hubspot["work"], hubspot["id"], "contacts", record_id="501")
    with pytest.raises(NotFound):
        preview.apply(hubspot["work"], "another-connection", shown.id)
    assert hubspot["crm"].patches() == []


def test_salesforce_contacts_are_previewed_and_applied_once(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    db, link, _ = connected(db_path, "salesforce", "sf-token", salesforce_org_ids=(SF_ORG,))
    mapping = mappings.load(connections.MAPPINGS / "salesforce.yaml")
    crm = FakeSalesforce({"Contact": set(worker.readable(mapping))})
    crm.records["Contact"]["003A"] = {"Email": AVA, "LastName": "Adams", "Title": "Boss"}
    with httpx.Client(transport=VendorTransport(crm)) as client:
        work = worker.Worker(db, SECRET.encode(), Clock(), client, random.Random(7))
        shown = preview.show(work, link.row["id"], "contacts", record_id="003A")
        rows = rows_by_property(shown)
        assert rows["Title"]["reason"] == mappings.KEPT["overwrite_if_ours"]
        city = {"property": "MailingCity", "field": "conWorkLocCity", "current": None}
        assert rows["MailingCity"] == {**city, "value": "Austin", "reason": ""}
        preview.apply(work, link.row["id"], shown.id)
        with pytest.raises(preview.AlreadyApplied):
            preview.apply(work, link.row["id"], shown.id)
    patches = [json.loads(r.content) for r in crm.requests if r.method == "PATCH"]
    assert patches == [shown.planned]
    assert crm.records["Contact"]["003A"]["MailingCity"] == "Austin"


# --- the settings pages, through the real app and a fake CRM on loopback ----------------------


@pytest.fixture
def fake_crm() -> Iterator[FakeCrm]:
    with running(FakeCrm()) as server:
        server.contacts["hubspot"]["501"] = {"email": AVA, "firstname": "Ava"}
        yield server


@pytest.fixture
def site(db_path: Path, fake_crm: FakeCrm, monkeypatch: pytest.MonkeyPatch) -> Row:
    """The app; Acme (10 credits) with a HubSpot connection to the loopback CRM, and Globex
    with one of its own; each organization's admin key."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    app = connector.app.create_app(
        {
            "DB": str(db_path),
            "KEY_SECRET": SECRET,
            "CLOCK": Clock(),
            "PUBLIC_URL": "http://localhost",
        }
    )
    db = store.connect(db_path)
    importer.import_files(
        db, companies=DATA / "discover_companies.csv", contacts=DATA / "discover_contacts.csv"
    )
    found: Row = {"app": app, "db": db}
    for name in ("Acme", "Globex"):
        _, key = organization(db, name, credits=10)
        link = connections.add(
            db, SECRET.encode(), NOW, name=f"{name} HubSpot", platform="hubspot", api_key=key,
            crm_base_url=fake_crm.url, crm_token=f"{name}-token", secret="hubspot-app-secret",
        )  # fmt: skip
        found[name] = {"key": key, "id": link.row["id"]}
    return found


def test_the_page_previews_then_applies_exactly_once(site: Row, fake_crm: FakeCrm) -> None:
    client, acme = signed_in(site["app"], site["Acme"]["key"]), site["Acme"]
    form = f"/settings/connections/{acme['id']}/preview"
    assert "Preview a write" in text(client.get("/settings/connections"))
    made = submit(client, form, form, kind="contacts", record_id="", email=AVA)
    assert made.status_code == 303
    page = client.get(made.location)
    shown = text(page)
    assert "Adams" in shown and "Vice President of Sales" in shown and "Apply: write" in shown
    assert fake_crm.writes["501"] == 0

    applied = client.post(f"{made.location}/apply", data={"csrf_token": token(page)})
    assert applied.status_code == 303
    assert "Applied to record 501: wrote" in text(client.get(applied.location))
    assert (
        fake_crm.writes["501"] == 1 and fake_crm.contacts["hubspot"]["501"]["lastname"] == "Adams"
    )

    # the same form replayed (a double click, the back button) writes nothing again
    again = client.post(f"{made.location}/apply", data={"csrf_token": token(page)})
    assert "already applied" in text(client.get(again.location))
    assert fake_crm.writes["501"] == 1


def test_the_page_shows_what_a_job_change_would_write_and_writes_nothing(
    site: Row, fake_crm: FakeCrm
) -> None:
    client, acme = signed_in(site["app"], site["Acme"]["key"]), site["Acme"]
    signal_settings.set_actions(site["db"], acme["id"], "contacts", ["mark", "task"])
    signal = {"connection_id": acme["id"], "kind": "contacts", "record_id": "501",
              "contact_guid": "D15C00000000000000000000000000C1", "change_id": 1,
              "signal": "left", "old_company": "Lonestar Discover Works Inc.",
              "new_company": "Hill Country Analytics LLC", "new_title": "Chief Revenue Officer",
              "changed_on": "2026-12-01", "created_at": "2026-12-02T09:00:00Z"}  # fmt: skip
    with server.write(site["db"]):
        store.add_signals(site["db"], [signal])
    form = f"/settings/connections/{acme['id']}/preview"
    shown = text(submit(client, form, f"{form}/job-changes"))
    assert "Left: contacts record 501" in shown
    assert "contactdata_job_change_new_company Hill Country Analytics LLC" in shown
    assert "Task (due 2026-12-02): Ava left Lonestar Discover Works Inc." in shown
    (stored,) = store.signals_of(site["db"], acme["id"])
    assert stored["state"] == "pending" and fake_crm.writes["501"] == 0


def test_errors_are_messages_on_the_page(site: Row, fake_crm: FakeCrm) -> None:
    client, acme = signed_in(site["app"], site["Acme"]["key"]), site["Acme"]
    form = f"/settings/connections/{acme['id']}/preview"
    missing = submit(client, form, form, kind="contacts", record_id="999")
    assert missing.status_code == 303
    assert "The CRM did not answer for record 999: 404" in text(client.get(missing.location))
    site["db"].execute("UPDATE organizations SET credits = 0")
    broke = submit(client, form, form, kind="contacts", record_id="501")
    assert "credit" in text(client.get(broke.location)).lower()
    assert "Acme-token" not in source(client.get(form))  # attributes too


def test_another_organizations_connection_and_preview_are_404(site: Row) -> None:
    acme, globex = site["Acme"], site["Globex"]
    theirs = signed_in(site["app"], globex["key"])
    form = f"/settings/connections/{globex['id']}/preview"
    made = submit(theirs, form, form, kind="contacts", record_id="501")
    preview_url = made.location
    assert preview_url.startswith(f"/settings/connections/{globex['id']}/previews/")

    client = signed_in(site["app"], acme["key"])
    own_form = client.get(f"/settings/connections/{acme['id']}/preview")
    assert client.get(form).status_code == 404
    assert client.get(preview_url).status_code == 404
    assert (
        client.post(f"{preview_url}/apply", data={"csrf_token": token(own_form)}).status_code == 404
    )
    under_own = preview_url.replace(globex["id"], acme["id"])
    assert client.get(under_own).status_code == 404
    assert (
        client.post(f"{under_own}/apply", data={"csrf_token": token(own_form)}).status_code == 404
    )


def test_apply_without_the_csrf_token_is_refused(site: Row, fake_crm: FakeCrm) -> None:
    client, acme = signed_in(site["app"], site["Acme"]["key"]), site["Acme"]
    form = f"/settings/connections/{acme['id']}/preview"
    assert client.post(form, data={"kind": "contacts", "record_id": "501"}).status_code == 400
    made = submit(client, form, form, kind="contacts", record_id="501")
    refused = client.post(f"{made.location}/apply", data={})
    assert refused.status_code == 400 and "security token" in text(refused)
    assert fake_crm.writes["501"] == 0


# --- the command line --------------------------------------------------------------------------


def test_the_cli_previews_and_with_apply_writes_once(
    site: Row, fake_crm: FakeCrm, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTACTDATA_KEY_SECRET", SECRET)
    acme = site["Acme"]["id"]
    args = ["preview", "--db", str(db_path), acme, "--email", AVA]
    shown = CliRunner().invoke(main, args, catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    assert "lastname: write 'Adams'" in shown.output and "nothing written" in shown.output
    assert fake_crm.writes["501"] == 0
    applied = CliRunner().invoke(main, [*args, "--apply"], catch_exceptions=False)
    assert applied.exit_code == 0 and "wrote " in applied.output
    assert fake_crm.writes["501"] == 1
    missing = CliRunner().invoke(main, ["preview", "--db", str(db_path), acme, "--record", "9"])
    assert missing.exit_code == 1 and "record 9: 404" in missing.output
