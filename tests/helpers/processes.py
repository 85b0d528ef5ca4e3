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
from collections.abc import Callable
from pathlib import Path

from tests.servers import wait_for

Process = subprocess.Popen[bytes]
Ready = Callable[[Process], None]  # returns once a process just started is ready, or raises


def healthy(url: str) -> Ready:
    """Ready once `url` (a server's /healthz) answers 200."""
    return lambda process: wait_for(url, process)


class Processes:
    """Named commands run under `env`, each ready as `ready` says (at once when it does not
    name it); every process ever started, for `kill_all`; processes found exited by
    themselves when the test came to kill them, in `unexpected`."""

    def __init__(
        self,
        commands: dict[str, list[str]],
        env: dict[str, str],
        logs: Path,
        ready: dict[str, Ready] | None = None,
    ) -> None:
        self.commands, self.env, self.logs, self.ready = commands, env, logs, ready or {}
        self.started: list[Process] = []
        self.current: dict[str, tuple[Process, Path]] = {}
        self.kills: Counter[str] = Counter()
        self.unexpected: list[str] = []
        self.killed: set[Process] = set()  # by the test
        self.lock = threading.Lock()
        self.stopped = False

    def start(self, name: str) -> Process:
        """Start `name` and return once it is ready."""
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
        try:
            self.ready.get(name, lambda _: None)(process)
        except Exception as error:
            raise RuntimeError(f"{name} did not start: {tail(log)}") from error
        return process

    def kill(self, name: str) -> None:
        """SIGKILL to `name`'s whole group, then start it again."""
        self.unexpected.extend(self.exited(name))
        process = self.current[name][0]
        self.killed.add(process)
        _killpg(process)
        self.kills[name] += 1
        self.start(name)

    def exited(self, *names: str) -> list[str]:
        """Which of the processes running now (or of `names`) exited by themselves, with
        their output's end (one being killed and started again is not among them)."""
        return [
            f"{name} exited by itself ({process.returncode}): {tail(log)}"
            for name, (process, log) in list(self.current.items())
            if (not names or name in names)
            and process not in self.killed
            and process.poll() is not None
        ]

    def kill_all(self) -> None:
        """Kill every process group started, and any started from now on."""
        with self.lock:
            self.stopped = True
        self.killed.update(self.started)
        for process in self.started:
            _killpg(process)


def _killpg(process: Process) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group is gone already
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=15)


def tail(log: Path) -> str:
    """The end of a process's output."""
    return log.read_text(errors="replace")[-2000:]
