"""Starting and stopping real servers (gunicorn through `contactdata serve`) in tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

CONTACTDATA = str(Path(sys.executable).parent / "contactdata")


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, process: subprocess.Popen[bytes]) -> None:
    """Return once `url` answers 200; raise with the server's output if it exits first."""
    for _ in range(150):
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {process.stdout.read().decode()[-2000:]}")  # type: ignore[union-attr]
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError("server did not start")


def start(command: list[str], port: int) -> subprocess.Popen[bytes]:
    """Run a server command in its own process group and wait until /healthz answers."""
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    wait_for(f"http://127.0.0.1:{port}/healthz", process)
    return process


def serve(db: Path, port: int, workers: int = 2) -> subprocess.Popen[bytes]:
    """`contactdata serve` on `db` (gunicorn, sync workers), started."""
    command = [CONTACTDATA, "serve", "--db", str(db), "--port", str(port)]
    return start([*command, "--workers", str(workers)], port)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a server and every worker it forked."""
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=15)
