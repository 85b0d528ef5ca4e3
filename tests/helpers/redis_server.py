"""A throwaway `redis-server` for the tests: a free loopback port, a temporary working
directory, nothing persisted (Debian's redis-server, which `make test` installs)."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from tests.servers import free_port


@contextmanager
def redis_server(directory: Path) -> Iterator[str]:
    """`redis-server` on a free loopback port, working in `directory`, saving nothing: its
    URL until the block ends."""
    executable = shutil.which("redis-server")
    if executable is None:
        raise RuntimeError("redis-server is not installed: `make test` installs it")
    port = free_port()
    command = [executable, "--bind", "127.0.0.1", "--port", str(port), "--dir", str(directory),
               "--save", "", "--appendonly", "no", "--loglevel", "warning"]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        _wait_for(url, process)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=15)


def _wait_for(url: str, process: subprocess.Popen[bytes]) -> None:
    """Return once the server answers PING; raise with its output if it exits first."""
    client = redis.Redis.from_url(url, socket_connect_timeout=1)
    for _ in range(100):
        if process.poll() is not None:
            raise RuntimeError(f"redis-server exited: {process.stdout.read().decode()}")  # type: ignore[union-attr]
        try:
            client.ping()
            client.close()
            return
        except redis.ConnectionError:
            time.sleep(0.05)
    raise RuntimeError("redis-server did not start")
