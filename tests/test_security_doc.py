"""SECURITY.md points each protection to the tests that prove it: every test it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# `tests/test_x.py::test_y`, or `::test_y` for another test of the file named last
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)?(?:::(\w+))?`")


def test_every_test_security_md_names_exists() -> None:
    text = (ROOT / "SECURITY.md").read_text()
    named: list[tuple[str, str | None]] = []
    current = ""
    for path, test in REFERENCE.findall(text):
        current = path or current
        if path or test:
            named.append((current, test or None))
    assert len(named) >= 30
    for path, test in named:
        source = ROOT / path
        assert source.is_file(), f"SECURITY.md names {path}, which does not exist"
        if test:
            assert re.search(rf"^def {test}\(", source.read_text(), re.M), f"{path}::{test}"
