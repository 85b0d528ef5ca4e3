"""The settings page in a real browser (Debian's headless Chromium through Playwright) against
the production server (`contactdata serve`: gunicorn, two workers, so a session and its CSRF
token must hold across processes): sign in, create a key, rotate it and use the new value,
suspend a user, retry a dead letter, change a schedule. A screenshot of each page goes to
tests/artifacts/; tests/test_settings_pages.py holds every page's fit and accessibility."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlite_utils import Database

import server
from connector import store
from server.clock import utcnow
from server.storage import store as service_store
from tests.helpers.browser import LAPTOP, chromium, shoot
from tests.helpers.settings_site import Acme, acme_served

pytestmark = pytest.mark.slow

pytest.importorskip("playwright.sync_api")


@dataclass
class Site:
    url: str
    db_path: Path
    admin_key: str
    org_id: str
    hubspot_id: str
    dead_event: int

    def db(self) -> Database:
        return store.connect(self.db_path)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """Acme (admin key, a user, a HubSpot connection with one dead letter) behind gunicorn."""
    db_path = tmp_path_factory.mktemp("settings-browser") / "settings.db"
    dead: list[int] = []

    def prepare(acme: Acme) -> None:
        dead.append(_dead_letter(acme.db, acme.link["id"]))

    with acme_served(db_path, prepare=prepare, qps=1000) as served:
        acme = served.acme
        yield Site(served.url, db_path, acme.admin_key, acme.org["id"], acme.link["id"], dead[0])


def _dead_letter(database: Database, connection_id: str) -> int:
    row = {"connection_id": connection_id, "event_key": "browser-dead", "record_id": "501",
           "payload": "{}", "thin": 0, "received_at": server.iso(utcnow())}  # fmt: skip
    with server.write(database):
        store.add_events(database, [row])
        (event,) = store.events_of(database, connection_id)
        store.finish_event(database, event["id"], "dead", "HubSpot answered 404: no contact 501")
    return int(event["id"])


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@dataclass
class Tab:
    """A browser page and the Content-Security-Policy complaints it logged."""

    page: Any
    violations: list[str]


@pytest.fixture(scope="module")
def tab(browser: Any, site: Site) -> Iterator[Tab]:
    """One signed-out laptop-size tab, shared by the module's tests in order."""
    context = browser.new_context(viewport=LAPTOP, base_url=site.url)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site.url)
    page = context.new_page()
    violations: list[str] = []
    page.on(
        "console",
        lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None,
    )
    yield Tab(page, violations)
    context.close()


def message(page: Any) -> str:
    return str(page.locator(".message").first.inner_text())


def row(page: Any, text: str) -> Any:
    return page.locator("tbody tr").filter(has=page.get_by_role("rowheader", name=text))


# --- the flows, in order ---------------------------------------------------------------------


def test_sign_in_with_the_keyboard(tab: Tab, site: Site) -> None:
    page = tab.page
    page.goto("/settings/keys")
    assert page.url.endswith("/settings/sign-in")
    shoot(page, "sign-in")
    page.get_by_label("Admin API key").fill("cdk_not_a_key")
    page.get_by_role("button", name="Sign in").click()
    assert "Sign-in failed" in page.get_by_role("alert").inner_text()
    page.wait_for_function("document.activeElement?.id === 'sign-in-error'", timeout=5000)  # first
    page.keyboard.press("Tab")  # then the key field it describes
    assert page.evaluate("document.activeElement.id") == "api_key"
    page.keyboard.type(site.admin_key)
    page.keyboard.press("Enter")
    page.wait_for_url("**/settings/keys")
    assert "Signed in to Acme" in message(page)
    assert page.get_by_role("link", name="Keys").get_attribute("aria-current") == "page"


def test_create_a_key_copy_it_rotate_it_and_use_the_new_value(tab: Tab, site: Site) -> None:
    page = tab.page
    page.get_by_label("E-mail address of the key's holder").fill("dev@acme.example.org")
    page.get_by_role("button", name="Create key").click()
    created = page.get_by_label("Key value").input_value()
    assert created.startswith("cdk_")
    page.get_by_role("button", name="Copy Key value").click()
    assert page.evaluate("navigator.clipboard.readText()") == created
    assert enrich(site, created).status_code == 200
    shoot(page, "keys-new-value")

    page.goto("/settings/keys")
    assert created not in page.content()  # shown once
    dev = row(page, "dev@acme.example.org")
    dev.get_by_label("Previous value keeps working for").select_option(
        label="no time: it stops at once"
    )
    dev.get_by_role("button", name="Rotate").click()
    assert "was rotated" in message(page)
    rotated = page.get_by_label("Key value").input_value()
    assert rotated != created
    answer = enrich(site, rotated)
    assert answer.status_code == 200 and answer.json()["recordStatus"] == "No Match"
    assert enrich(site, created).json()["error"]["code"] == "invalid_api_key"
    page.goto("/settings/keys")
    shoot(page, "keys")


def enrich(site: Site, key: str) -> httpx.Response:
    body = {"companyName": "Nobody Here Ltd"}
    return httpx.post(f"{site.url}/v7/enrich", json=body, headers={"apikey": key}, timeout=10)


def test_suspend_a_user(tab: Tab, site: Site) -> None:
    page = tab.page
    page.get_by_role("link", name="Users").click()
    page.get_by_label("E-mail address").fill("udi@acme.example.org")
    page.get_by_role("button", name="Add user").click()
    value = page.get_by_label("Key value").input_value()
    assert enrich(site, value).status_code == 200
    page.goto("/settings/users")
    row(page, "udi@acme.example.org").get_by_role("button", name="Suspend").click()
    assert message(page) == "The user udi@acme.example.org is suspended."
    assert row(page, "udi@acme.example.org").locator(".badge").inner_text() == "suspended"
    user = service_store.user_by_email(site.db(), site.org_id, "udi@acme.example.org")
    assert user is not None and user["status"] == "suspend"
    assert enrich(site, value).json()["error"]["code"] == "user_suspended"
    shoot(page, "users")
    row(page, "udi@acme.example.org").get_by_role("button", name="Delete…").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Delete udi@acme.example.org?"
    shoot(page, "users-confirm-delete")
    page.get_by_role("link", name="Cancel").click()


def test_connections_and_a_test_event(tab: Tab, site: Site) -> None:
    page = tab.page
    page.get_by_role("link", name="Connections").click()
    enrich_url = page.get_by_label("Enrich URL").input_value()
    assert enrich_url == f"{site.url}/hooks/{site.hubspot_id}/enrich"  # serve's own address
    assert "valid" in page.locator(".badge-good").first.inner_text()
    shoot(page, "connections")
    page.get_by_role("button", name="Send test event").click()
    page.wait_for_url("**/settings/deliveries")
    assert "Test event stored for Acme HubSpot" in message(page)
    events = store.events_of(site.db(), site.hubspot_id)
    assert [e["status"] for e in events] == ["dead", "pending"]


def test_retry_a_dead_letter(tab: Tab, site: Site) -> None:
    page = tab.page
    page.goto("/settings/deliveries?status=dead")
    dead = row(page, f"Event {site.dead_event}")
    assert "HubSpot answered 404" in dead.inner_text()
    shoot(page, "deliveries")
    dead.get_by_role("button", name="Retry").click()
    assert message(page) == f"Event {site.dead_event} is due again; the worker takes it up next."
    event = store.event(site.db(), site.dead_event)
    assert event is not None and (event["status"], event["last_error"]) == ("pending", "")


def test_usage(tab: Tab, site: Site) -> None:
    page = tab.page
    page.get_by_role("link", name="Usage").click()
    assert page.locator("svg.chart rect.bar").count() == 30
    today = page.locator("#today-meter")
    assert today.get_attribute("value") == "3"  # the enrich calls that passed the gate above
    assert ": 3 calls, 0 credits" in page.locator("svg.chart rect.bar").last.inner_html()
    assert page.get_by_role("img", name="Enrich calls per day").is_visible()
    shoot(page, "usage")


def test_change_a_schedule(tab: Tab, site: Site) -> None:
    page = tab.page
    page.get_by_role("link", name="Schedules").click()
    page.get_by_label("Refresh interval of Acme HubSpot, in days").fill("14")
    page.get_by_role("button", name="Save the refresh interval of Acme HubSpot").click()
    assert message(page) == "Acme HubSpot now refreshes records enriched over 14 days ago."
    assert store.connection(site.db(), site.hubspot_id)["refresh_days"] == 14  # type: ignore[index]

    job = page.get_by_role("region", name="Retry deliveries")
    assert "Next run" in job.inner_text() and job.get_by_role("button").count() == 0
    shoot(page, "schedules")


def test_no_content_security_policy_violations(tab: Tab) -> None:
    assert tab.violations == []


def test_signing_out_ends_the_session(tab: Tab) -> None:
    page = tab.page
    page.get_by_role("button", name="Sign out").click()
    assert message(page) == "You are signed out."
    page.goto("/settings/keys")
    assert re.search(r"/settings/sign-in$", page.url)
