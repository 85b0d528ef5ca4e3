"""The backfill page in a real browser (Debian's headless Chromium through Playwright) against
the production server and the loopback HubSpot with one list: an admin chooses the list and a
date, reads the estimate, starts from it; the page fits a laptop and a phone without sideways
scrolling, its estimate announced. Screenshots go to tests/artifacts/."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.browser import LAPTOP, chromium, shoot
from tests.helpers.crm_server import running
from tests.helpers.hubspot_lists import LIST_NAME, ListedCrm
from tests.helpers.settings_site import acme_served

pytestmark = pytest.mark.slow

pytest.importorskip("playwright.sync_api")
PHONE = {"width": 375, "height": 812}
NEW = "2025-06-01T10:00:00.000Z"


@dataclass
class Site:
    url: str
    db_path: Path
    admin_key: str
    link_id: str


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """Acme (pro, 1,000 credits) with a HubSpot connection to the loopback HubSpot (twelve
    contacts in the list, the first three last modified in 2024), behind gunicorn."""
    db_path = tmp_path_factory.mktemp("backfill-browser") / "backfill.db"
    with running(ListedCrm()) as hub:
        for n in range(12):
            modified = "2024-06-01T10:00:00.000Z" if n < 3 else NEW
            hub.contacts["hubspot"][str(1001 + n)] = {
                "email": f"p{n}@firm{n}.example", "jobtitle": "", "lastmodifieddate": modified,
            }  # fmt: skip
        with acme_served(db_path, hub.url, credits=1_000) as served:
            yield Site(served.url, db_path, served.acme.admin_key, served.acme.link["id"])


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


def _signed_in(browser: Any, site: Site, viewport: dict[str, int]) -> Any:
    context = browser.new_context(viewport=viewport, base_url=site.url)
    page = context.new_page()
    page.goto("/settings/sign-in")
    page.get_by_label("Admin API key").fill(site.admin_key)
    page.get_by_role("button", name="Sign in").click()
    return page


def _overflow(page: Any) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth"))


def test_the_backfill_page_fits_a_phone(browser: Any, site: Site) -> None:
    page = _signed_in(browser, site, PHONE)
    page.goto(f"/settings/connections/{site.link_id}/backfill?lists=contacts")
    assert _overflow(page) <= 0, "the list chooser scrolls sideways on a phone"
    contacts = page.get_by_role("region", name="Contacts")
    contacts.get_by_label("List").select_option(label=f"{LIST_NAME} (12)")
    contacts.get_by_role("button", name="Estimate contacts").click()
    page.get_by_role("status").filter(has_text="records listed").wait_for()
    assert _overflow(page) <= 0, "the estimate scrolls sideways on a phone"
    shoot(page, "backfill-estimate-phone")
    page.context.close()


def test_an_admin_backfills_a_list_after_its_estimate(browser: Any, site: Site) -> None:
    page = _signed_in(browser, site, LAPTOP)
    violations: list[str] = []
    page.on(
        "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
    )
    page.goto(f"/settings/connections/{site.link_id}/backfill")
    contacts = page.get_by_role("region", name="Contacts")
    contacts.get_by_role("link", name="Choose a list of contacts").click()

    contacts = page.get_by_role("region", name="Contacts")
    contacts.get_by_label("List").select_option(label=f"{LIST_NAME} (12)")
    contacts.get_by_label("Modified since").fill("2025-01-01")
    contacts.get_by_role("button", name="Estimate contacts").click()

    estimate = page.get_by_role("status").filter(has_text="records listed")
    assert "9 records listed in the list Trade show leads modified since 2025-01-01" in (
        estimate.inner_text()
    )
    assert _overflow(page) <= 0
    shoot(page, "backfill-estimate-laptop")
    assert page.get_by_label("Credit cap").input_value() == "9"
    page.get_by_role("button", name="Start this backfill of contacts").click()

    page.locator(".message").first.wait_for()
    assert "Backfill 1 of contacts started" in page.locator(".message").first.inner_text()
    status = page.get_by_role("region", name="Contacts").inner_text()
    assert "of the list Trade show leads, modified since 2025-01-01" in status
    assert _overflow(page) <= 0
    shoot(page, "backfill-running-laptop")
    assert violations == []
    page.context.close()
