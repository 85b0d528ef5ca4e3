"""Shared fixtures: a fresh app on a throwaway database and its test client, the test clock,
the connector's app, the enrich dataset, and a worker writing to a fake HubSpot."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlite_utils import Database

import connector.app
from connector import connections, worker
from server.http.app import create_app
from server.storage import db, pg
from tests.helpers import pgbouncer as bouncer
from tests.helpers.clock import Clock
from tests.helpers.constants import SECRET
from tests.helpers.crm import FakeHubSpot
from tests.helpers.enrich_data import build_dataset
from tests.helpers.orgs import connected
from tests.helpers.postgres import BACKENDS, PostgresServer, available
from tests.helpers.vendors import VendorTransport, take_problems


@pytest.fixture(autouse=True)
def vendors_agree() -> Iterator[None]:
    """Fails the test in which a fake CRM answered, or the connector sent it, what the vendor's
    specification refuses (tests/helpers/vendors.py)."""
    take_problems()
    yield
    problems = take_problems()
    assert not problems, "not as the vendor specifies:\n" + "\n".join(dict.fromkeys(problems))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Tests marked `both_backends` run once on SQLite and once on PostgreSQL; those also
    marked `through_pgbouncer` once more on PostgreSQL through PgBouncer."""
    marked = metafunc.definition.get_closest_marker
    if "backend" in metafunc.fixturenames and marked("both_backends"):
        pooled = (bouncer.BACKEND,) if marked("through_pgbouncer") else ()
        metafunc.parametrize("backend", BACKENDS + pooled, indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """The database the test runs on: "sqlite" unless the test is marked `both_backends`."""
    return getattr(request, "param", "sqlite")


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL cluster for the whole run, started when a test first needs it."""
    if not available():
        pytest.skip("PostgreSQL is not installed (make test installs it)")
    with PostgresServer.running() as server:
        yield server


@pytest.fixture(scope="session")
def pgbouncer(postgres: PostgresServer) -> Iterator[bouncer.PgBouncer]:
    """PgBouncer in transaction pooling mode in front of the cluster, for the whole run,
    started when a test first needs it."""
    if not bouncer.available():
        pytest.skip("PgBouncer is not installed (make test installs it)")
    with bouncer.PgBouncer.running(postgres) as running:
        yield running


@pytest.fixture
def db_path(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path | str]:
    """The `DB` setting of the test: a SQLite file, or the URL of a fresh PostgreSQL
    database with the service's schema (its pooled connections closed afterwards), reached
    directly or, with CONTACTDATA_PG_POOLER set for the test and its processes, through
    PgBouncer."""
    if backend == "sqlite":
        yield tmp_path / "test.db"
        return
    server: PostgresServer = request.getfixturevalue("postgres")
    url = server.create_database(server.migrated_template())
    if backend == bouncer.BACKEND:
        monkeypatch.setenv("CONTACTDATA_PG_POOLER", "transaction")
        url = request.getfixturevalue("pgbouncer").url(url)
    yield url
    pg.release(url)


@pytest.fixture
def database(db_path: Path) -> Iterator[Database]:
    connection = db.connect(db_path)
    yield connection
    connection.close()


@pytest.fixture
def app(db_path: Path) -> Flask:
    return create_app({"DB": str(db_path), "KEY_SECRET": "test-secret"})


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def connector_app(db_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> Flask:
    """The connector's app on the test clock, taking CRM URLs on loopback, its public URL the
    test client's (the URL HubSpot signs)."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    settings = {"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": clock}
    return connector.app.create_app({**settings, "PUBLIC_URL": "http://localhost"})


@pytest.fixture
def client(app: Flask) -> FlaskClient:
    return app.test_client()


@pytest.fixture(scope="session")
def enrich_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The enrich tests' dataset (tests/data/enrich_*.csv) imported once; tests copy it."""
    return build_dataset(tmp_path_factory.mktemp("enrich-dataset"))


# --- the worker against a fake HubSpot (MockTransport) -----------------------------------------


@pytest.fixture
def crm() -> FakeHubSpot:
    return FakeHubSpot()


@pytest.fixture
def worker_setup(
    db_path: Path, crm: FakeHubSpot, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Database, worker.Worker, connections.Added, Clock]]:
    """Acme (pro, 10 credits) with a HubSpot connection, the discover dataset, and a worker
    writing to `crm` on the test clock: (db, worker, connection, clock)."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    db, link, _ = connected(db_path, "hubspot", "pat-na1-token", secret="hubspot-app-secret")
    clock = Clock()
    with httpx.Client(transport=VendorTransport(crm)) as client:
        yield db, worker.Worker(db, SECRET.encode(), clock, client, random.Random(7)), link, clock
