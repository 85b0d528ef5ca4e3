"""server/logs.py: what the service's logs may hold."""

from __future__ import annotations

import logging

import pytest
from nameparser import HumanName

from server import logs


def test_no_log_holds_the_names_nameparser_parses_even_at_debug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """nameparser logs every name it parses at DEBUG: a person's name in the log, which an
    erasure could not reach."""
    caplog.set_level(logging.DEBUG)
    logs.configure("DEBUG", "text")
    HumanName("Ava Zyxwvutsrq Stone")
    assert "Zyxwvutsrq" not in caplog.text
    assert logging.getLogger("HumanName").level == logging.WARNING
