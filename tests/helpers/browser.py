"""Debian's headless Chromium through Playwright, for the settings page's browser tests: one
launch per module, screenshots into tests/artifacts/, and axe-core's check of a page
(axe-playwright-python bundles axe-core, so it runs offline)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync",
]  # fmt: skip
ARTIFACTS = Path(__file__).parents[1] / "artifacts"
LAPTOP = {"width": 1366, "height": 900}
PHONE = {"width": 375, "height": 812}
SERIOUS = ("serious", "critical")  # axe-core's two highest impacts


@contextmanager
def chromium() -> Iterator[Any]:
    """Debian's Chromium, launched until the block ends (never a downloaded browser)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is missing: `make test` installs it (apt-get)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def shoot(page: Any, name: str) -> None:
    """A full-page screenshot, tests/artifacts/<name>.png."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def axe_problems(page: Any) -> list[str]:
    """axe-core's serious and critical violations on the page as shown, one line each: the
    rule, its help and the elements it found."""
    from axe_playwright_python.sync_playwright import Axe  # a test extra: missing, it fails

    found = Axe().run(page).response["violations"]
    return [
        f"{rule['id']} ({rule['impact']}): {rule['help']}: "
        + "; ".join(" ".join(node["target"]) for node in rule["nodes"])
        for rule in found
        if rule["impact"] in SERIOUS
    ]
