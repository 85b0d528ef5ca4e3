"""Every settings page in a real browser (Debian's headless Chromium through Playwright) behind
gunicorn, at a laptop's size (1366×900) and a phone's (375×812): none scrolls sideways, the
preview's decision sits beside its value inside a laptop's viewport, axe-core (bundled by
axe-playwright-python, run offline) finds no serious or critical violation, messages are
announced (an error is also focused) and the current section is marked."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

import server
from connector import connections, store
from server import importer
from server.clock import utcnow
from tests.helpers.browser import LAPTOP, PHONE, axe_problems, chromium, shoot
from tests.helpers.constants import AVA, DATA, SECRET
from tests.helpers.crm_server import FakeCrm, running
from tests.helpers.orgs import organization
from tests.helpers.signals import add_signal
from tests.servers import free_port, serve, stop

pytestmark = pytest.mark.slow

pytest.importorskip("playwright.sync_api")
LONG_ERROR = "HubSpot answered 400: " + "Property values were not valid: " * 6 + "x" * 90
AVA_IN_THE_CRM = {  # values a laptop's table must wrap, one with nowhere to break
    "email": AVA, "firstname": "Ava",
    "website": "https://www.lonestar-discover.com/about/leadership/" + "sales-team-" * 12,
    "address": "Suite 1200, Congress Avenue Tower, 100 Congress Avenue, Austin, Texas",
}  # fmt: skip


@dataclass
class Site:
    url: str
    db_path: Path
    admin_key: str
    hubspot_id: str
    zapier_id: str

    def db(self) -> Database:
        return store.connect(self.db_path)


@pytest.fixture(scope="module")
def crm() -> Iterator[FakeCrm]:
    """The fake HubSpot on loopback, holding Ava (contact 501)."""
    with running(FakeCrm()) as fake:
        fake.contacts["hubspot"]["501"] = dict(AVA_IN_THE_CRM)
        yield fake


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, crm: FakeCrm) -> Iterator[Site]:
    """Acme (the discover dataset, credits, a second user, a HubSpot connection to the fake CRM
    with a dead letter whose error is long, a Zapier connection) behind gunicorn."""
    db_path = tmp_path_factory.mktemp("settings-pages") / "settings.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
        patch.setenv("CONTACTDATA_KEY_SECRET", SECRET)
        database = store.connect(db_path)
        importer.import_files(database, companies=DATA / "discover_companies.csv",
                              contacts=DATA / "discover_contacts.csv")  # fmt: skip
        _, key = organization(database, "Acme", credits=100)
        hubspot = _connection(database, key, "Acme HubSpot with a long name", "hubspot", crm.url)
        zapier = _connection(database, key, "Acme Zapier", "zapier", "")
        _dead_letter(database, hubspot)
        _job_changes(database, hubspot)
        database.close()
        port = free_port()
        process = serve(db_path, port)
    try:
        yield Site(f"http://127.0.0.1:{port}", db_path, key, hubspot, zapier)
    finally:
        stop(process)


def _connection(database: Database, key: str, name: str, platform: str, crm_url: str) -> str:
    crm = {"crm_base_url": crm_url, "crm_token": "acme-token", "secret": "hubspot-app-secret"}
    added = connections.add(
        database, SECRET.encode(), utcnow(), name=name, platform=platform, api_key=key,
        **(crm if crm_url else {}),
    )  # fmt: skip
    return str(added.row["id"])


def _dead_letter(database: Database, connection_id: str) -> None:
    row = {"connection_id": connection_id, "event_key": "pages-dead", "record_id": "501",
           "payload": "{}", "thin": 0, "received_at": server.iso(utcnow())}  # fmt: skip
    with server.write(database):
        store.add_events(database, [row])
        (event,) = store.events_of(database, connection_id)
        store.finish_event(database, event["id"], "dead", LONG_ERROR)


def _job_changes(database: Database, connection_id: str) -> None:
    """This week's job changes: one written in full, one waiting, one failed at length."""
    now = server.iso(utcnow())
    add_signal(database, connection_id, now)
    add_signal(database, connection_id, now, signal="joined", person="Ravi Shah",
               old_company="Initech", state="pending", written={})  # fmt: skip
    add_signal(database, connection_id, now, person="Lena Berg", state="failed", written={},
               error=LONG_ERROR)  # fmt: skip


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


@pytest.fixture(scope="module")
def signed_in(browser: Any, site: Site) -> Iterator[dict[str, Any]]:
    """A signed-in session's storage state, for a context of any size."""
    context = browser.new_context(viewport=LAPTOP, base_url=site.url)
    page = context.new_page()
    page.goto("/settings/sign-in")
    page.get_by_label("Admin API key").fill(site.admin_key)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/settings/keys")
    yield context.storage_state()
    context.close()


@pytest.fixture(scope="module")
def pages(browser: Any, site: Site, signed_in: dict[str, Any]) -> dict[str, str]:
    """Every page to check, by name: each one the nav lists, each of a connection's pages, a
    preview made through the page, the confirmations, and a page that is not there."""
    context = browser.new_context(viewport=LAPTOP, base_url=site.url, storage_state=signed_in)
    page = context.new_page()
    page.goto(f"/settings/connections/{site.hubspot_id}")
    found = {
        f"nav-{link.inner_text().strip().lower()}": link.get_attribute("href")
        for link in page.locator("nav.site-nav a, nav.sub-nav a").all()
    }
    page.goto(f"/settings/connections/{site.hubspot_id}/preview")
    page.get_by_label("or its e-mail").fill(AVA)
    page.get_by_role("button", name="Preview", exact=True).click()
    page.wait_for_url("**/previews/*")
    preview = page.url.removeprefix(site.url)
    context.close()
    connection = f"/settings/connections/{site.hubspot_id}"
    return {
        **found,
        "preview": preview,
        "zapier-connection": f"/settings/connections/{site.zapier_id}",
        "mapping-companies": f"{connection}/mapping?kind=companies",
        "confirm-remove": f"{connection}/remove",
        "confirm-delete": "/settings/users/delete?email=admin%40acme.example",
        "dead-letters": "/settings/deliveries?status=dead",
        "not-found": "/settings/no-such-page",
    }


def test_the_pages_include_every_section_and_each_page_of_a_connection(
    pages: dict[str, str],
) -> None:
    for name in ("keys", "users", "connections", "deliveries", "signals", "usage", "schedules"):
        assert pages[f"nav-{name}"] == f"/settings/{name}"
    for name in ("overview", "mapping", "preview a write", "backfill"):
        assert f"nav-{name}" in pages
    assert "/previews/" in pages["preview"]


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_no_page_scrolls_sideways(
    browser: Any, site: Site, signed_in: dict[str, Any], pages: dict[str, str], size: dict
) -> None:
    """document.documentElement.scrollWidth never passes the viewport's width."""
    device = "phone" if size is PHONE else "laptop"
    with sized(browser, site, size) as page:  # signed out
        wide = overflows(page, {"sign-in": "/settings/sign-in"}, device)
    with sized(browser, site, size, signed_in) as page:
        wide |= overflows(page, pages, device)
    assert wide == {}, f"pages wider than {size['width']}px, by px: {wide}"


def overflows(page: Any, pages: dict[str, str], device: str) -> dict[str, int]:
    """By how many pixels each page is wider than the viewport, where it is (a screenshot of
    each, tests/artifacts/<device>-<name>.png)."""
    wide: dict[str, int] = {}
    for name, path in pages.items():
        page.goto(path)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        if overflow > 0:
            wide[name] = overflow
        shoot(page, f"{device}-{name}")
    return wide


def test_the_preview_decision_is_beside_each_value_on_a_laptop(
    browser: Any, site: Site, signed_in: dict[str, Any], pages: dict[str, str]
) -> None:
    with sized(browser, site, LAPTOP, signed_in) as page:
        page.goto(pages["preview"])
        shown = page.get_by_role("region", name="What a write would change").bounding_box()
        rows = page.locator("table tbody tr")
        assert rows.count() > 10 and rows.filter(has_text="sales-team-sales-team").count() == 1
        for index in range(rows.count()):
            value = rows.nth(index).locator("td[data-label='Enriched value']").bounding_box()
            decision = rows.nth(index).locator("td[data-label='Decision']").bounding_box()
            right = decision["x"] + decision["width"]
            assert right <= min(LAPTOP["width"], shown["x"] + shown["width"]), index
            assert decision["y"] == value["y"] and decision["x"] > value["x"]  # beside it


def test_axe_finds_no_serious_or_critical_violation(
    browser: Any, site: Site, signed_in: dict[str, Any], pages: dict[str, str]
) -> None:
    found: dict[str, list[str]] = {}
    with sized(browser, site, LAPTOP) as page:  # signed out
        page.goto("/settings/sign-in")
        page.get_by_label("Admin API key").fill("cdk_not_a_key")
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("alert").wait_for()  # checked with its error shown
        found["sign-in"] = axe_problems(page)
    with sized(browser, site, LAPTOP, signed_in) as page:
        for name, path in pages.items():
            page.goto(path)
            found[name] = axe_problems(page)
    assert {name: problems for name, problems in found.items() if problems} == {}


def test_the_check_reports_serious_violations(browser: Any) -> None:
    """The check is not blind: an image without a text and an empty button are reported."""
    page = browser.new_page()
    page.set_content('<html lang="en"><title>t</title><main><img src="data:,"><button></button>')
    problems = axe_problems(page)
    page.close()
    assert [problem.split(":")[0] for problem in problems] == [
        "button-name (critical)", "image-alt (critical)",
    ]  # fmt: skip


def test_a_notice_is_announced_and_an_error_announced_and_focused(
    browser: Any, site: Site, signed_in: dict[str, Any]
) -> None:
    with sized(browser, site, LAPTOP, signed_in) as page:
        add_user(page, "noor@acme.example")
        notice = page.get_by_role("status").filter(has_text="User noor@acme.example created")
        notice.wait_for()
        assert page.get_by_role("alert").count() == 0
        assert focused(page) == "<body>"  # a notice takes no focus

        add_user(page, "noor@acme.example")  # again: refused
        alert = page.get_by_role("alert")
        assert "noor@acme.example" in alert.inner_text()
        assert focused(page) == '<p class="message message-error" role="alert" tabindex="-1">'
        assert page.evaluate("document.activeElement.textContent") == alert.inner_text()


def focused(page: Any) -> str:
    """The start tag of the element in focus once the page (already the answer's) has loaded
    and its script has run."""
    page.wait_for_load_state()
    return str(page.evaluate("document.activeElement.outerHTML.split('>')[0] + '>'"))


def add_user(page: Any, email: str) -> None:
    page.goto("/settings/users")
    page.get_by_label("E-mail address").fill(email)
    page.get_by_role("button", name="Add user").click()


@pytest.mark.parametrize("sub_page", ["mapping", "preview a write", "backfill", "overview"])
def test_the_current_section_and_page_are_marked(
    browser: Any, site: Site, signed_in: dict[str, Any], pages: dict[str, str], sub_page: str
) -> None:
    """Connections is the current section (aria-current="true") and the connection's page the
    current page (aria-current="page"), each told apart by more than colour."""
    with sized(browser, site, LAPTOP, signed_in) as page:
        page.goto(pages[f"nav-{sub_page}"])
        section = page.locator("nav.site-nav").get_by_role("link", name="Connections")
        assert section.get_attribute("aria-current") == "true"
        here = page.locator("nav.sub-nav [aria-current]")
        assert here.count() == 1 and here.inner_text().strip().lower() == sub_page
        assert here.get_attribute("aria-current") == "page"
        other = page.locator("nav.sub-nav a:not([aria-current])").first
        assert weight(here) == "700" and weight(other) != "700"
        assert weight(section) == "700"
        assert page.locator("nav.site-nav [aria-current]").count() == 1


def weight(link: Any) -> str:
    return str(link.evaluate("a => getComputedStyle(a).fontWeight"))


@contextmanager
def sized(browser: Any, site: Site, size: dict, state: dict | None = None) -> Iterator[Any]:
    """A page of `size` (a phone's is touch and mobile), signed in with `state` if given,
    until the block ends."""
    mobile = {"is_mobile": True, "has_touch": True} if size is PHONE else {}
    context = browser.new_context(viewport=size, base_url=site.url, storage_state=state, **mobile)
    try:
        yield context.new_page()
    finally:
        context.close()
