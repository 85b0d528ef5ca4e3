"""A throwaway PgBouncer in transaction pooling mode in front of the tests' PostgreSQL cluster,
as hosted PostgreSQL runs it: Debian's `pgbouncer` (which `make test` installs), a temporary
directory, a free loopback port, every database of the cluster under its own name.

PgBouncer refuses to run as root: when the tests run as root it switches to the `postgres`
user the PostgreSQL package creates, as the cluster does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from tests.helpers.postgres import PostgresServer
from tests.servers import free_port

BINARY = Path("/usr/sbin/pgbouncer")
# The backend of tests marked `through_pgbouncer` (tests/conftest.py).
BACKEND = "pgbouncer"
# pool_mode = transaction: a client's transactions run on whichever server session is free.
# The cluster trusts loopback connections (initdb -A trust), so PgBouncer does too, of the
# users its auth_file names. An idle server session is closed soon: each test has its own
# database, and so its own pool of them.
CONFIG = """\
[databases]
* = host=127.0.0.1 port={postgres_port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = trust
auth_file = {directory}/userlist.txt
pool_mode = transaction
max_client_conn = 2000
default_pool_size = 20
server_idle_timeout = 5
ignore_startup_parameters = extra_float_digits
log_connections = 0
log_disconnections = 0
"""


def available() -> bool:
    """Whether PgBouncer is installed."""
    return BINARY.exists()


class PgBouncer:
    """PgBouncer on a free loopback port in front of `postgres`."""

    def __init__(self, directory: Path, postgres: PostgresServer) -> None:
        self.directory, self.postgres = directory, postgres
        self.port = free_port()

    @classmethod
    @contextmanager
    def running(cls, postgres: PostgresServer) -> Iterator[PgBouncer]:
        """PgBouncer working in a new temporary directory, stopped and removed afterwards."""
        directory = Path(tempfile.mkdtemp(prefix="contactdata-pgbouncer-"))
        bouncer = cls(directory, postgres)
        try:
            with bouncer._process():
                yield bouncer
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    @contextmanager
    def _process(self) -> Iterator[None]:
        """PgBouncer on its configuration, written here, until the block ends."""
        config = self.directory / "pgbouncer.ini"
        where = {"postgres_port": self.postgres.port, "port": self.port}
        config.write_text(CONFIG.format(**where, directory=self.directory))
        (self.directory / "userlist.txt").write_text('"postgres" ""\n')
        user = []
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres", "postgres")
            user = ["-u", "postgres"]
        log = self.directory / "log"
        with log.open("wb") as output:
            command = [str(BINARY), *user, str(config)]
            process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        try:
            self._wait_for(process, log)
            yield
        finally:
            process.terminate()
            process.wait(timeout=15)

    def _wait_for(self, process: subprocess.Popen[bytes], log: Path) -> None:
        """Return once a query through PgBouncer is answered; raise with its log if it exits
        first."""
        for _ in range(100):
            if process.poll() is not None:
                raise RuntimeError(f"pgbouncer exited: {log.read_text()[-2000:]}")
            try:
                with psycopg.connect(self.url(self.postgres.url()), connect_timeout=1) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError:
                time.sleep(0.05)
        raise RuntimeError("pgbouncer did not start")

    def url(self, url: str) -> str:
        """`url`, one of the cluster's, reached through PgBouncer."""
        database = url.rsplit("/", 1)[1]
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"
