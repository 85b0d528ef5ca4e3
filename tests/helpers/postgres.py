"""A throwaway PostgreSQL cluster for the tests: Debian's binaries, a temporary directory,
a free loopback port, and a database per test made from a migrated template.

PostgreSQL refuses to run as root, so the cluster runs as the `postgres` user the Debian
package creates when the tests run as root. The cluster uses the C locale: text sorts by
code point, as in SQLite.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

BIN = Path("/usr/lib/postgresql/15/bin")
TEMPLATE = "contactdata_template"
BACKENDS = ("sqlite", "postgresql")


def available() -> bool:
    """Whether PostgreSQL's server binaries are installed."""
    return (BIN / "pg_ctl").exists()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    """A PostgreSQL cluster in `directory`, started on a free loopback port."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.data = directory / "data"
        self.port = _free_port()
        self._numbers = itertools.count(1)

    @classmethod
    @contextmanager
    def running(cls) -> Iterator[PostgresServer]:
        """A cluster in a new temporary directory (not pytest's: the `postgres` user cannot
        enter root's 0700 one), stopped and removed afterwards."""
        directory = Path(tempfile.mkdtemp(prefix="contactdata-pg-"))
        server = cls(directory)
        try:
            yield server.start()
        finally:
            server.stop()
            # A run leaves gigabytes of test databases: removed in the background, as it took
            # the run's last 18 s to do here.
            subprocess.Popen(["rm", "-rf", str(directory)], start_new_session=True)

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *command], check=True, capture_output=True, text=True)

    def start(self) -> PostgresServer:
        """initdb, then pg_ctl start (unix sockets in the temporary directory only)."""
        if os.geteuid() == 0:
            shutil.chown(self.directory, "postgres", "postgres")
        self._run(str(BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
                  "--no-locale", "-E", "UTF8")  # fmt: skip
        options = (
            f"-h 127.0.0.1 -p {self.port} -k {self.directory} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._run(str(BIN / "pg_ctl"), "-D", str(self.data), "-o", options, "-w",
                  "-l", str(self.directory / "log"), "start")  # fmt: skip
        return self

    def stop(self) -> None:
        """Stop the cluster at once (its data is thrown away)."""
        if (self.data / "postmaster.pid").exists():
            self._run(str(BIN / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def over_socket(self, url: str) -> str:
        """`url`, one of this cluster's, reached over its Unix socket instead of TCP."""
        database = url.rsplit("/", 1)[1]
        return f"postgresql://postgres@/{database}?host={self.directory}&port={self.port}"

    def create_database(self, template: str = "template0") -> str:
        """A new empty database (a copy of `template`), by URL."""
        name = f"test_{os.getpid()}_{next(self._numbers)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        return self.url(name)

    def schema_dump(self, url: str) -> str:
        """What pg_dump --schema-only writes of the database at `url`, one of this cluster's,
        less the lines that differ from run to run (pg_dump's version, psql's \\restrict key)."""
        database = url.rsplit("/", 1)[1]
        dumped = subprocess.run(
            [str(BIN / "pg_dump"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
             "--schema-only", "--no-owner", "--no-privileges", database],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        kept = (line for line in dumped.splitlines() if not line.startswith(("\\", "-- Dumped")))
        return "\n".join(kept)

    def migrated_template(self) -> str:
        """The name of a database holding the service's, the connector's and the PostgreSQL
        limiter's schema, made on first use, for `create_database` to copy (quicker than
        migrating each test's)."""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [TEMPLATE])
            if exists.fetchone() is None:
                conn.execute(f'CREATE DATABASE "{TEMPLATE}" TEMPLATE template0')
                from connector import store
                from server.limits import postgres

                store.connect(self.url(TEMPLATE)).close()
                postgres.migrate(self.url(TEMPLATE))
        return TEMPLATE
