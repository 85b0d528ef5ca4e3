"""Threads released together, for tests of races."""

from __future__ import annotations

import threading
from collections.abc import Callable


def at_once(work: Callable[[], None], count: int) -> list[BaseException]:
    """Run `work` in `count` threads that start it at the same moment; what they raised."""
    start = threading.Barrier(count)
    failures: list[BaseException] = []

    def run() -> None:
        start.wait()
        try:
            work()
        except BaseException as error:  # collected for the test's assertion
            failures.append(error)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures
