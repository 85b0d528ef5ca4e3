"""PostgreSQL behind PgBouncer in transaction pooling mode (server/storage/pg.py): without
CONTACTDATA_PG_POOLER the service's sessions are refused and prepared statements meet another
client's; with it nothing is prepared, the service's and the job store's alike, and a write
transaction's lock timeout ends with it. The enrich and worker suites run through it too
(tests marked `through_pgbouncer`)."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from apscheduler.schedulers.background import BackgroundScheduler

from connector import scheduler
from server.storage import db, pg
from tests.helpers.pgbouncer import PgBouncer
from tests.helpers.postgres import PostgresServer

RUNS = 8  # psycopg prepares a statement at its sixth run
# A prepared statement's name met in a server session that has another of it, or none.
PREPARED_ELSEWHERE = (
    psycopg.errors.DuplicatePreparedStatement,
    psycopg.errors.InvalidSqlStatementName,
)


@pytest.fixture
def pooled_url(postgres: PostgresServer, pgbouncer: PgBouncer) -> Iterator[str]:
    """A fresh migrated database, reached through PgBouncer."""
    url = pgbouncer.url(postgres.create_database(postgres.migrated_template()))
    yield url
    pg.release(url)


@pytest.fixture
def pooler_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTACTDATA_PG_POOLER", "transaction")


def test_without_the_setting_pgbouncer_refuses_the_services_session_options(
    pooled_url: str,
) -> None:
    with pytest.raises(psycopg.OperationalError, match="unsupported startup parameter: options"):
        pg.connect(pooled_url)


def test_statements_prepared_through_pgbouncer_meet_another_clients(pooled_url: str) -> None:
    """Why nothing may be prepared: psycopg names the statements it prepares on a connection
    `_pg3_0`, `_pg3_1`, …, and through the pooler they land in a server session that another
    client prepared its own in, or that never saw them."""
    first, second = (psycopg.connect(pooled_url, autocommit=True) for _ in range(2))
    with pytest.raises(PREPARED_ELSEWHERE):
        for client in (first, second):
            for _ in range(RUNS):
                client.execute("SELECT count(*) FROM organizations WHERE id <> %s", ["none"])


@pytest.mark.usefixtures("pooler_set")
def test_with_the_setting_statements_run_often_are_never_prepared(pooled_url: str) -> None:
    first, second = (pg.connect(pooled_url) for _ in range(2))
    for client in (first, second, first):
        for _ in range(RUNS):
            assert client.execute("SELECT count(*) FROM organizations WHERE id <> ?", ["none"])
            with db.write(client):
                client.execute("UPDATE organizations SET credits = credits WHERE id = ?", ["none"])
    first.close()
    second.close()


@pytest.mark.usefixtures("pooler_set")
def test_with_the_setting_the_job_store_prepares_nothing(pooled_url: str) -> None:
    schedulers: list[BackgroundScheduler] = [scheduler.prepared(pooled_url) for _ in range(2)]
    for each in (*schedulers, schedulers[0]):
        for _ in range(RUNS):
            assert each.get_jobs()
    for each in schedulers:
        each.shutdown(wait=False)


@pytest.mark.usefixtures("pooler_set")
def test_a_write_transaction_sets_its_lock_timeout_and_leaves_the_session_as_it_was(
    pooled_url: str,
) -> None:
    database = pg.connect(pooled_url)

    def lock_timeout() -> str:
        return database.execute("SHOW lock_timeout").fetchone()[0]

    with db.write(database):
        assert lock_timeout() == "10s"
    with db.patience(database, 5), db.write(database):
        assert lock_timeout() == "5ms"
    with db.write(database), db.patience(database, 7):
        assert lock_timeout() == "7ms"
    assert lock_timeout() == "0"  # the server's: no SET outlived its transaction
    with db.write(database):
        assert lock_timeout() == "10s"
    database.close()


def test_a_pooler_setting_other_than_transaction_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CONTACTDATA_PG_POOLER", "session")
    with pytest.raises(ValueError, match="CONTACTDATA_PG_POOLER"):
        pg.through_pooler()
