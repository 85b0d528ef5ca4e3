"""The mapping editor in a real browser (Debian's headless Chromium through Playwright) against
the production server and the loopback fake HubSpot: the rows reached with few Tab presses, a
row opened and changed from the keyboard, a refusal announced and marked on its row, and the
page without sideways scrolling at laptop and phone width."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from connector import mappings, store
from tests.helpers.browser import LAPTOP, chromium, shoot
from tests.helpers.crm_server import FakeCrm, running
from tests.helpers.settings_site import acme_served

pytestmark = pytest.mark.slow

pytest.importorskip("playwright.sync_api")
PHONE = {"width": 375, "height": 812}
ROWS = len(mappings.load(mappings.DIRECTORY / "hubspot.yaml").output)


@dataclass
class Site:
    url: str
    db_path: Path
    admin_key: str
    link_id: str

    def db(self) -> Any:
        return store.connect(self.db_path)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """Acme with a HubSpot connection to the loopback fake HubSpot, behind gunicorn."""
    db_path = tmp_path_factory.mktemp("mapping-browser") / "mapping.db"
    with running(FakeCrm()) as fake, acme_served(db_path, fake.url, qps=1000) as served:
        yield Site(served.url, db_path, served.acme.admin_key, served.acme.link["id"])


@pytest.fixture(scope="module")
def page(site: Site) -> Iterator[Any]:
    """A signed-in laptop-size tab on the editor."""
    with chromium() as browser:
        context = browser.new_context(viewport=LAPTOP, base_url=site.url)
        tab = context.new_page()
        tab.goto("/settings/sign-in")
        tab.get_by_label("Admin API key").fill(site.admin_key)
        tab.get_by_role("button", name="Sign in").click()
        tab.wait_for_url("**/settings/keys")
        yield tab
        context.close()


def _editor(page: Any, site: Site) -> None:
    page.goto(f"/settings/connections/{site.link_id}/mapping?kind=contacts")


def _tabs_to(page: Any, selector: str, most: int) -> int:
    """Tab presses from the editor's form's first stop until `selector` has the focus (fail
    past `most`): the page's navigation before it (the site's, the connection's) is the
    same on every page, and a skip link's to pass, not the editor's."""
    page.evaluate(
        "document.querySelector('button[value=save]').form"
        ".querySelector('summary, input:not([type=hidden]), select, button, a').focus()"
    )
    for presses in range(1, most + 1):
        page.keyboard.press("Tab")
        if page.evaluate(f"document.activeElement.matches({selector!r})"):
            return presses
    raise AssertionError(f"{selector} not reached in {most} Tab presses")


def test_the_rows_and_save_are_reached_in_few_tab_stops(page: Any, site: Site) -> None:
    _editor(page, site)
    presses = _tabs_to(page, "button[value=save]", 80)
    # a summary per saved row, the new row's five controls, add, grade and the form's own
    assert presses <= ROWS + 25, presses
    shoot(page, "mapping-editor-laptop")


def test_a_row_is_opened_and_changed_from_the_keyboard(page: Any, site: Site) -> None:
    _editor(page, site)
    page.locator("#row-2 summary").focus()
    page.keyboard.press("Enter")
    assert page.locator("#row-2 details").get_attribute("open") is not None
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "property-2"
    page.locator("#policy-2").select_option(label="Always overwrite")
    page.get_by_role("button", name="Save", exact=True).click()
    assert "Saved as version 1" in page.locator(".message").first.inner_text()
    saved = store.mapping_version(site.db(), site.link_id, "contacts", 1)
    assert saved is not None and "property: jobtitle\n  policy: always" in saved["yaml"]


def test_a_refusal_is_announced_and_marked_on_its_row(page: Any, site: Site) -> None:
    _editor(page, site)
    last = page.locator("select[name=property]").count() - 1
    page.locator(f"#property-{last}").select_option("hs_object_id")
    page.locator(f"#field-{last}").select_option("compName")
    page.get_by_role("button", name="Save", exact=True).click()
    alert = page.get_by_role("alert")
    assert "Not saved: 1 row refused" in alert.inner_text()
    assert page.evaluate("document.activeElement.id") == "refusals"
    assert page.locator(f"#property-{last}").get_attribute("aria-invalid") == "true"
    assert "read-only" in page.locator(f"#problem-{last}").inner_text()
    shoot(page, "mapping-editor-refused")


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["laptop", "phone"])
def test_the_editor_fits_without_sideways_scrolling(page: Any, site: Site, size: dict) -> None:
    page.set_viewport_size(size)
    _editor(page, site)
    page.locator("#row-0 details").evaluate("details => { details.open = true }")
    wide = page.evaluate("document.documentElement.scrollWidth")
    assert wide <= size["width"], wide
    shoot(page, f"mapping-editor-{size['width']}")
    page.set_viewport_size(LAPTOP)
