"""The settings pages of daily work in a real browser (Debian's headless Chromium through
Playwright) against the production server: find events in Deliveries by connection, outcome
and page, read what was written and when in the reader's own time, change a job's schedule,
read the audit log by filter and the credit history, put a person on the do-not-enrich list;
and every one of these pages fits a laptop and a phone without sideways scrolling."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

import server
from connector import store
from server import credits
from server.clock import utcnow
from tests.helpers.browser import LAPTOP, chromium, shoot
from tests.helpers.settings_site import Acme, acme_served

pytestmark = pytest.mark.slow

pytest.importorskip("playwright.sync_api")
PHONE = {"width": 375, "height": 812}
PAGES = ("deliveries", "usage", "schedules", "audit", "credits", "do-not-enrich")
EVENTS = 55  # done events: one page of 50 and another


@dataclass
class Site:
    url: str
    db_path: Path
    admin_key: str
    org_id: str

    def db(self) -> Database:
        return store.connect(self.db_path)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """Acme alone (so its admin may change the jobs), with a HubSpot connection whose events
    are done (the newest wrote a job title) but one dead letter, and credits topped up."""
    db_path = tmp_path_factory.mktemp("settings-daily") / "settings.db"

    def prepare(acme: Acme) -> None:
        _events(acme.db, acme.link["id"])
        credits.top_up(acme.db, acme.org["id"], 250, utcnow())

    with acme_served(db_path, prepare=prepare, credits=100) as served:
        yield Site(served.url, db_path, served.acme.admin_key, served.acme.org["id"])


def _events(database: Database, connection_id: str) -> None:
    received = server.iso(utcnow() - timedelta(hours=1))
    rows = [
        {"connection_id": connection_id, "event_key": f"e{n}", "record_id": str(600 + n),
         "payload": "{}", "thin": 0, "received_at": received}
        for n in range(EVENTS + 1)
    ]  # fmt: skip
    newest = str(600 + EVENTS)
    with server.write(database):
        store.add_events(database, rows)
        for event in store.events_of(database, connection_id):
            dead = event["record_id"] == "600"
            error = "HubSpot answered 404: no contact 600" if dead else ""
            wrote = {"jobtitle": "Head of Data"} if event["record_id"] == newest else None
            store.finish_event(database, event["id"], "dead" if dead else "done", error, wrote)
        run = store.start_backfill(
            database,
            {
                "connection_id": connection_id,
                "kind": "contacts",
                "started_at": received,
                "updated_at": received,
            },
        )
        store.add_events(database, [
            {"connection_id": connection_id, "event_key": f"backfill:{run['id']}:contacts:{n}",
             "record_id": str(n), "payload": "{}", "thin": 1, "received_at": received,
             "priority": 1}
            for n in (900, 901)
        ])  # fmt: skip
        store.save_record(
            database,
            {"connection_id": connection_id, "kind": "contacts", "record_id": newest,
             "transaction_id": "t-browser", "input_fingerprint": "f",
             "enriched_at": received, "written": json.dumps({"jobtitle": "Head of Data"})},
        )  # fmt: skip


@dataclass
class Tab:
    """A browser page and the Content-Security-Policy complaints it logged."""

    page: Any
    violations: list[str]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def tab(browser: Any, site: Site) -> Iterator[Tab]:
    """One signed-in laptop-size tab in New York time, shared by the module's tests in order."""
    context = browser.new_context(
        viewport=LAPTOP, base_url=site.url, timezone_id="America/New_York", locale="en-US"
    )
    page = context.new_page()
    violations: list[str] = []
    page.on(
        "console",
        lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None,
    )
    sign_in(page, site)
    yield Tab(page, violations)
    context.close()


def sign_in(page: Any, site: Site) -> None:
    page.goto("/settings/sign-in")
    page.get_by_label("Admin API key").fill(site.admin_key)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/settings/keys")


def fits(page: Any, name: str, size: str) -> None:
    page.goto(f"/settings/{name}")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{name} is {overflow}px wider than a {size}"
    shoot(page, f"daily-{size}-{name}")


def test_find_a_dead_letter_by_connection_and_outcome(tab: Tab) -> None:
    page = tab.page
    page.get_by_role("link", name="Deliveries").click()
    page.get_by_label("Connection").select_option(label="Acme HubSpot")
    page.get_by_label("Outcome").select_option(label="dead letters")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**status=dead**")
    rows = page.locator("tbody tr")
    assert rows.count() == 1 and "HubSpot answered 404: no contact 600" in rows.inner_text()


def test_find_a_backfills_events(tab: Tab) -> None:
    page = tab.page
    run = page.locator("#source-filter option", has_text=re.compile(r"^backfill \d+ of Acme"))
    page.get_by_label("Source").select_option(run.get_attribute("value"))
    page.get_by_label("Outcome").select_option(label="every outcome")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**source=backfill**")
    records = page.locator("tbody td[data-label=Record] code").all_inner_texts()
    assert sorted(records) == ["900", "901"]


def test_a_finished_event_shows_what_was_written_in_local_time(tab: Tab) -> None:
    page = tab.page
    page.goto("/settings/deliveries?status=done")
    newest = page.locator("tbody tr").first
    assert "jobtitle" in newest.inner_text() and "Head of Data" in newest.inner_text()
    received = newest.locator("td[data-label=Received] time")
    assert received.get_attribute("title").endswith(" UTC")  # the UTC value on hover
    shown = received.inner_text()
    assert "UTC" not in shown and ("AM" in shown or "PM" in shown), shown  # New York's time
    shoot(page, "daily-deliveries")


def test_page_past_the_first_fifty(tab: Tab) -> None:
    page = tab.page
    assert page.locator("tbody tr").count() == 50
    page.get_by_role("link", name="Older events").click()
    page.wait_for_url("**before=**")
    assert "status=done" in page.url
    assert page.locator("tbody tr").count() == EVENTS - 50
    assert page.get_by_role("link", name="Newest").is_visible()


def test_change_when_a_daily_job_runs(tab: Tab, site: Site) -> None:
    page = tab.page
    page.get_by_role("link", name="Schedules").click()
    job = page.get_by_role("region", name="Re-enrich stale records")
    assert "every day at 02:00 UTC" in job.inner_text()
    job.get_by_label("Run every").fill("2")
    job.get_by_label("days at (UTC)").fill("04:30")
    job.get_by_role("button", name="Save the schedule of Re-enrich stale records").click()
    done = page.locator(".message-success")
    assert "Re-enrich stale records now runs every 2 days at 04:30 UTC" in done.inner_text()
    assert done.get_attribute("role") == "status"  # announced
    job = page.get_by_role("region", name="Re-enrich stale records")
    assert "every 2 days at 04:30 UTC" in job.inner_text()
    retry = page.get_by_role("region", name="Retry deliveries")
    assert "every minute" in retry.inner_text() and retry.get_by_role("button").count() == 0
    shoot(page, "daily-schedules")


def test_read_the_audit_log_by_filter(tab: Tab) -> None:
    page = tab.page
    page.get_by_role("link", name="Audit log").click()
    page.get_by_label("Actions on").select_option(label="schedules")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**action=schedule.**")
    rows = page.locator("tbody tr")
    assert rows.count() == 1 and "schedule.change" in rows.inner_text()
    assert "every 2 days at 04:30 UTC" in rows.inner_text()
    shoot(page, "daily-audit")


def test_read_the_credit_history(tab: Tab) -> None:
    page = tab.page
    page.get_by_role("link", name="Credits").click()
    assert "350 credits now" in page.locator("main").inner_text()
    assert "+250" in page.locator("tbody tr").first.inner_text()


def test_put_a_person_on_the_do_not_enrich_list(tab: Tab, site: Site) -> None:
    page = tab.page
    page.get_by_role("link", name="Do not enrich").click()
    page.get_by_role("button", name="Add to the do-not-enrich list").click()  # no one named
    assert "Name the person" in page.get_by_role("alert").inner_text()
    page.get_by_label("Work e-mail address").fill("pat.doe@initech.example.com")
    page.get_by_role("button", name="Add to the do-not-enrich list").click()
    done = page.locator(".message-success")
    assert "that person is on the do-not-enrich list" in done.inner_text()
    entries = server.audit.entries(site.db(), site.org_id)
    assert entries[-1]["action"] == "privacy.suppress"


@pytest.mark.parametrize("name", PAGES)
def test_every_page_fits_a_laptop(tab: Tab, name: str) -> None:
    fits(tab.page, name, "laptop")


def test_every_page_fits_a_phone(browser: Any, site: Site) -> None:
    context = browser.new_context(viewport=PHONE, base_url=site.url, is_mobile=True)
    page = context.new_page()
    sign_in(page, site)
    for name in PAGES:
        fits(page, name, "phone")
    context.close()


def test_no_content_security_policy_violations(tab: Tab) -> None:
    assert tab.violations == []
