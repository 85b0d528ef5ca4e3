"""Server processes the kill tests start, each in its own process group with its output in a
file per life, killed with SIGKILL (the whole group: gunicorn's forked workers too) and
started again."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections import Counter
from pathlib import Path

from tests.servers import wait_for


class Processes:
    """Named commands run under `env`; every process ever started, for `kill_all`."""

    def __init__(self, commands: dict[str, list[str]], env: dict[str, str], logs: Path) -> None:
        self.commands, self.env, self.logs = commands, env, logs
        self.started: list[subprocess.Popen[bytes]] = []
        self.current: dict[str, tuple[subprocess.Popen[bytes], Path]] = {}
        self.kills: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.stopped = False

    def start(self, name: str, health: str = "") -> subprocess.Popen[bytes]:
        """Start `name`; with a `health` URL, return once it answers 200."""
        log = self.logs / f"{name}-{self.kills[name]}.log"
        with log.open("wb") as output:
            process = subprocess.Popen(
                self.commands[name], stdout=output, stderr=subprocess.STDOUT,
                env=self.env, start_new_session=True,
            )  # fmt: skip
        with self.lock:
            self.started.append(process)
            if self.stopped:  # the test ended while this one was being restarted
                _killpg(process)
                raise RuntimeError(f"{name} started after the end")
        self.current[name] = (process, log)
        if health:
            try:
                wait_for(health, process)
            except Exception as error:
                raise RuntimeError(f"{name} did not start: {tail(log)}") from error
        return process

    def kill(self, name: str, health: str = "") -> None:
        """SIGKILL to `name`'s whole group, then start it again."""
        _killpg(self.current[name][0])
        self.kills[name] += 1
        self.start(name, health)

    def exited(self) -> list[str]:
        """The processes running now that exited by themselves, with their output's end."""
        return [
            f"{name} exited ({process.returncode}): {tail(log)}"
            for name, (process, log) in self.current.items()
            if process.poll() is not None
        ]

    def kill_all(self) -> None:
        """Kill every process group started, and any started from now on."""
        with self.lock:
            self.stopped = True
        for process in self.started:
            _killpg(process)


def _killpg(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group is gone already
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=15)


def tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:]
