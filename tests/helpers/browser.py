"""Debian's headless Chromium through Playwright, for the settings page's browser tests: one
launch per module, screenshots into tests/artifacts/."""

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
