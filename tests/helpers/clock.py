"""The test clock: the time the app, the worker and the jobs read, moved by the test."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from tests.helpers.constants import NOW


@dataclass
class Clock:
    """Callable like `server.clock.now`; `now` is set or moved by the test."""

    now: datetime = NOW

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)
