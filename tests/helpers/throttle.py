"""The hold a CRM's rate limit puts on a connection, as the worker tests of each CRM check it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from connector import worker
from tests.helpers.clock import Clock


def assert_held_until(
    work: worker.Worker,
    clock: Clock,
    requests: list[Any],
    held: datetime,
    events: Callable[[], list[dict[str, Any]]],
) -> None:
    """Until `held` the connection's two events wait and the CRM (`requests`, its calls) is
    not called; then both are done, each in one attempt."""
    calls = len(requests)
    clock.now = held - timedelta(seconds=1)
    assert work.run_due() == {} and len(requests) == calls  # neither event is attempted
    clock.now = held
    assert work.run_due() == {"done": 2}
    assert {e["attempts"] for e in events()} == {1}
