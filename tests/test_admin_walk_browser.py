"""Issue 37's "Done when", walked in a real browser (Debian's headless Chromium through
Playwright, 1366×900) as a new admin would, against the production server (gunicorn) and the
loopback fake HubSpot and its authorization server: connect HubSpot through OAuth consent,
take the recommended mapping, set a minimum match grade, preview a record (its decision beside
each value), backfill a HubSpot list after its credit estimate (the worker really runs: the
advance_backfills job lists it, `contactdata worker --once` works it off), find that
backfill's events in Deliveries by connection, outcome and date and read what one wrote,
change a schedule and read the audit log of it all. Each step is a test, in order, on one
server, one tab and one set of fakes; no page scrolls sideways nor has a serious accessibility
violation. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

from connector import oauth_apps, store
from server import importer
from server.clock import utcnow
from tests.helpers.browser import LAPTOP, axe_problems, chromium, shoot
from tests.helpers.constants import DATA
from tests.helpers.crm_server import Call, running
from tests.helpers.hubspot_lists import LIST_NAME, ListedCrm
from tests.helpers.oauth_server import CLIENT_ID, CLIENT_SECRET, HUB_ID, FakeAuthServer
from tests.helpers.oauth_server import running as authorizing
from tests.helpers.settings_site import Acme, acme_served
from tests.servers import CONTACTDATA

pytestmark = pytest.mark.slow

pytest.importorskip("playwright.sync_api")
# The list's members (ListedCrm: 1001 to 1012): two people the dataset holds (tests/data/
# discover_contacts.csv) found by their e-mail, one found by a misspelt name at her company's
# shorter name (graded A-, as tests/test_minimum_grade.py has it), and nine it does not know.
MEMBERS = {
    "1001": {"email": "ava.adams@lonestar-discover.com"},
    "1002": {"email": "ben.brown@lonestar-discover.com"},
    "1003": {"firstname": "Eva", "lastname": "Adamz", "company": "Lonestar Discover"},
}
WRITTEN = ("1001", "1002")  # at or above the minimum grade A
OUTSIDE = "2001"  # a contact the dataset knows, in no list: never written
MINIMUM = "A"


@dataclass
class Site:
    url: str
    db_path: Path
    acme: Acme
    crm: ListedCrm
    notes: dict[str, Any] = field(default_factory=dict)

    def db(self) -> Database:
        return store.connect(self.db_path)

    @property
    def link_id(self) -> str:
        return str(self.acme.link["id"])


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[ListedCrm, FakeAuthServer]]:
    """The loopback HubSpot with the list "Trade show leads" and a contact outside it, and
    HubSpot's authorization server, whose tokens name the fake HubSpot as the API base."""
    with ExitStack() as stack:
        crm = stack.enter_context(running(ListedCrm()))
        auth = stack.enter_context(authorizing("hubspot"))
        auth.api_base = crm.url
        crm.hubspot_oauth = auth
        contacts = crm.contacts["hubspot"]
        for key in ListedCrm.members:
            known = MEMBERS.get(key, {"email": f"someone{key}@unknown-firm.example"})
            contacts[key] = {**known, "jobtitle": "", "lastmodifieddate": "2025-06-01T10:00:00Z"}
        contacts[OUTSIDE] = {"email": "eli.evans@lonestar-discover.com", "jobtitle": ""}
        yield crm, auth


@pytest.fixture(scope="module")
def site(
    tmp_path_factory: pytest.TempPathFactory, fakes: tuple[ListedCrm, FakeAuthServer]
) -> Iterator[Site]:
    """Acme alone (so its admin may change the jobs), the discover dataset, the operator's
    HubSpot app pointed at the fakes, and Acme's HubSpot connection not connected yet."""
    crm, auth = fakes
    db_path = tmp_path_factory.mktemp("admin-walk") / "walk.db"

    def prepare(acme: Acme) -> None:
        importer.import_files(acme.db, companies=DATA / "discover_companies.csv",
                              contacts=DATA / "discover_contacts.csv")  # fmt: skip
        oauth_apps.save(
            acme.db, acme.secret, utcnow(), platform="hubspot", client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET, authorize_url=auth.authorize_url,
            token_url=f"{crm.url}/oauth/2026-03/token",  # on HubSpot's API host
        )  # fmt: skip

    with acme_served(db_path, "", prepare, credits=1_000) as served:
        yield Site(served.url, db_path, served.acme, crm)


@pytest.fixture(scope="module")
def page(site: Site) -> Iterator[Any]:
    """Acme's admin, signed in on a laptop: one tab the module's steps share, in order."""
    with chromium() as browser:
        context = browser.new_context(viewport=LAPTOP, base_url=site.url, locale="en-US")
        tab = context.new_page()
        complaints: list[str] = []
        tab.on(
            "console", lambda m: complaints.append(m.text) if "Content Security" in m.text else None
        )
        tab.goto("/settings/sign-in")
        tab.get_by_label("Admin API key").fill(site.acme.admin_key)
        tab.get_by_role("button", name="Sign in").click()
        tab.wait_for_url("**/settings/keys")
        site.notes["complaints"] = complaints
        yield tab
        context.close()


def looked_at(page: Any, name: str) -> None:
    """What every page of the walk must be: no sideways scrolling at 1366 px, no serious or
    critical accessibility violation; then a screenshot."""
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{name} scrolls {overflow}px sideways at 1366 px"
    assert axe_problems(page) == [], name
    shoot(page, f"walk-{name}")


def go_to(page: Any, section: str) -> None:
    """Follow the site navigation's link to a section of the settings."""
    page.get_by_role("navigation", name="Settings sections").get_by_role(
        "link", name=section
    ).click()


def messages(page: Any) -> str:
    """The page's flash messages, once it shows one."""
    page.locator(".message").first.wait_for(timeout=15_000)
    return " ".join(page.locator(".message").all_inner_texts())


def pairs(shown: Any) -> dict[str, str]:
    """A description list on the page (a delivery's values, an audit entry's details)."""
    names, values = shown.locator("dt").all_inner_texts(), shown.locator("dd").all_inner_texts()
    return dict(zip(names, values, strict=True))


def written(crm: ListedCrm) -> dict[str, dict[str, Any]]:
    """Each HubSpot contact written to (batch updates and single ones): what was sent."""
    found: dict[str, dict[str, Any]] = {}
    for call in crm.calls:
        for key, values in _writes(call).items():
            found.setdefault(key, {}).update(values)
    return found


def _writes(call: Call) -> dict[str, dict[str, Any]]:
    if call.method == "POST" and call.path.endswith("/contacts/batch/update"):
        return {item["id"]: item["properties"] for item in call.body["inputs"]}
    if call.method == "PATCH" and "/objects/contacts/" in call.path:
        return {call.path.rsplit("/", 1)[1]: call.body["properties"]}
    return {}


def work_off(db_path: Path) -> str:
    """What the worker does between two page loads: the advance_backfills job (as its
    scheduler runs it) lists and queues the running backfill, then `contactdata worker
    --once` works off every event due."""
    env = {**os.environ, "CONTACTDATA_ALLOW_PRIVATE_CRM_URLS": "1"}
    env.pop("CONTACTDATA_KEY_SECRET", None)  # the secret beside the database, as the server's
    said = []
    for command in (["jobs", "run", "advance_backfills"], ["worker", "--once"]):
        done = subprocess.run(
            [CONTACTDATA, *command, "--db", str(db_path)], env=env, capture_output=True,
            text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        said.append(done.stdout)
    return "\n".join(said)


# --- the walk, in order -------------------------------------------------------------------------


def test_connect_hubspot_through_its_consent(page: Any, site: Site) -> None:
    go_to(page, "Connections")
    page.get_by_role("link", name="Acme HubSpot").first.click()
    page.get_by_role("button", name="Connect with HubSpot").click()
    page.wait_for_url(f"**/settings/connections/{site.link_id}")
    assert "Acme HubSpot is connected to HubSpot." in messages(page)
    assert page.locator(".message-error").count() == 0, messages(page)
    assert page.get_by_role("button", name="Reconnect with HubSpot").count() == 1
    row = store.connection(site.db(), site.link_id)
    assert row is not None and row["crm_account_id"] == str(HUB_ID)
    assert row["crm_base_url"] == site.crm.url
    looked_at(page, "1-connected")


def test_take_the_recommended_mapping(page: Any, site: Site) -> None:
    page.get_by_role("navigation", name="Pages of Acme HubSpot").get_by_role(
        "link", name="Mapping"
    ).click()
    page.get_by_role("button", name="Use the recommended contacts mapping").click()
    assert "Saved as version 1 of the contacts mapping." in messages(page)
    first = page.locator("#row-0 summary").inner_text()
    assert first.startswith("firstname ← First name"), first  # in words, not enrich's names
    saved = store.mapping_versions(site.db(), site.link_id, "contacts")
    assert [row["version"] for row in saved] == [1]
    looked_at(page, "2-recommended")


def test_set_a_minimum_match_grade(page: Any, site: Site) -> None:
    page.get_by_label("Minimum match grade").select_option(MINIMUM)
    page.get_by_role("button", name="Save", exact=True).click()
    assert "Saved as version 2 of the contacts mapping." in messages(page)
    changed = page.locator(".map-changes", has_text="What version 2 changed")
    changed.locator("summary").click()
    assert f"Minimum match grade: any → {MINIMUM}" in changed.inner_text()
    assert page.get_by_label("Minimum match grade").input_value() == MINIMUM
    looked_at(page, "3-grade")


def test_preview_a_record_with_the_decision_beside_each_value(page: Any, site: Site) -> None:
    page.get_by_role("link", name="Preview a write").click()
    page.get_by_label("CRM record id").fill("1003")  # Eva Adamz, matched at A-
    page.get_by_role("button", name="Preview").click()
    page.wait_for_url(f"**/settings/connections/{site.link_id}/previews/*")
    below = f"the match grade A- is below the minimum {MINIMUM}"
    assert below in page.locator("#graded-out").inner_text()
    rows = page.locator("tbody tr")
    assert rows.count() > 0
    for row in rows.all():  # the decision in view, on the value's line
        value = row.locator("td[data-label='Enriched value']").bounding_box()
        decision = row.locator("td[data-label=Decision]").bounding_box()
        assert decision["x"] + decision["width"] <= LAPTOP["width"]
        assert abs(decision["y"] - value["y"]) < 2 and decision["x"] > value["x"]
    with_values = [
        r for r in rows.all() if r.locator("td[data-label='Enriched value']").inner_text()
    ]
    assert with_values and all(below in r.inner_text() for r in with_values)
    looked_at(page, "4-preview")
    assert written(site.crm) == {}


def test_backfill_the_list_after_its_estimate(page: Any, site: Site) -> None:
    page.get_by_role("link", name="Backfill").click()
    contacts = page.get_by_role("region", name="Contacts")
    contacts.get_by_role("link", name="Choose a list of contacts").click()
    contacts = page.get_by_role("region", name="Contacts")
    contacts.get_by_label("List").select_option(label=f"{LIST_NAME} (12)")
    contacts.get_by_role("button", name="Estimate contacts").click()
    estimate = page.get_by_role("status").filter(has_text="records listed")
    assert f"12 records listed in the list {LIST_NAME}" in estimate.inner_text()
    assert page.get_by_label("Credit cap").input_value() == "12"  # a credit a record at most
    looked_at(page, "5-estimate")
    page.get_by_role("button", name="Start this backfill of contacts").click()
    said = messages(page)
    assert "Backfill 1 of contacts started" in said, said

    work_off(site.db_path)

    page.reload()
    status = page.get_by_role("region", name="Contacts").inner_text()
    assert "done" in status, status
    events = page.get_by_role("link", name="What backfill 1's events wrote, in Deliveries")
    assert "source=backfill" in events.get_attribute("href")
    looked_at(page, "5-backfilled")
    sent = written(site.crm)
    assert sorted(sent) == sorted(WRITTEN), sent  # the list's, at or above the grade only
    assert all(sent[key] for key in WRITTEN)


def test_find_the_backfills_events_in_deliveries(page: Any, site: Site) -> None:
    go_to(page, "Deliveries")
    page.get_by_label("Connection").select_option(label="Acme HubSpot")
    page.get_by_label("Outcome").select_option(label="done")
    today = utcnow().date().isoformat()  # the filter's days are UTC days
    page.get_by_label("Received from").fill(today)
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**status=done**")
    run = page.locator("#source-filter option", has_text="backfill 1 of Acme HubSpot contacts")
    assert LIST_NAME in run.inner_text()  # the backfill told apart by the list it read
    rows = page.locator("tbody tr")
    records = page.locator("tbody td[data-label=Record] code").all_inner_texts()
    assert sorted(records) == sorted(ListedCrm.members), records
    sent = written(site.crm)
    for key in WRITTEN:  # what this event wrote, exactly as the fake HubSpot received it
        row = rows.filter(has=page.locator("td[data-label=Record] code", has_text=key))
        cell = row.locator("td[data-label='What happened']")
        assert "Written to the record" in cell.inner_text()
        assert pairs(cell) == {name: str(value) for name, value in sent[key].items()}
    eva = rows.filter(has=page.locator("td[data-label=Record] code", has_text="1003"))
    assert f"the match grade A- is below the minimum {MINIMUM}" in eva.inner_text()
    stranger = rows.filter(has=page.locator("td[data-label=Record] code", has_text="1012"))
    assert "no match was found" in stranger.inner_text()
    looked_at(page, "6-deliveries")


def test_change_a_schedule(page: Any, site: Site) -> None:
    go_to(page, "Schedules")
    job = page.get_by_role("region", name="Re-enrich stale records")
    job.get_by_label("Run every").fill("3")
    job.get_by_label("days at (UTC)").fill("05:15")
    job.get_by_role("button", name="Save the schedule of Re-enrich stale records").click()
    assert "Re-enrich stale records now runs every 3 days at 05:15 UTC" in messages(page)
    job = page.get_by_role("region", name="Re-enrich stale records")
    assert "every 3 days at 05:15 UTC" in job.inner_text()
    looked_at(page, "7-schedules")


def test_read_the_audit_log_of_the_day(page: Any, site: Site) -> None:
    go_to(page, "Audit log")
    entries = {
        row.locator("td[data-label=Action]").inner_text(): (
            row.locator("td[data-label=On]").inner_text(),
            pairs(row),
        )
        for row in page.locator("tbody tr").all()
    }
    on, said = entries["connection.oauth_connect"]
    assert on == "Acme HubSpot" and said == {"platform": "HubSpot", "accountId": str(HUB_ID)}
    assert entries["mapping.recommended"][0] == "Acme HubSpot"
    on, said = entries["mapping.save"]
    assert on == "Acme HubSpot" and said["changes"] == f"Minimum match grade: any → {MINIMUM}"
    on, said = entries["backfill.start"]
    assert said["list"] == LIST_NAME and said["creditCap"] == "12"  # the list by its name
    on, said = entries["schedule.change"]
    assert on == "Re-enrich stale records" and said["runs"] == "every 3 days at 05:15 UTC"
    assert said["nextRun"].endswith(" 05:15 UTC")  # not a raw ISO time
    looked_at(page, "8-audit")


def test_no_content_security_policy_violations(page: Any, site: Site) -> None:
    assert site.notes["complaints"] == []
