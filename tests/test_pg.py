"""The PostgreSQL backend: statements sent as written but for the driver's parameter style,
and never prepared when their plan depends on their values; its connections held by a thread
until its request ends or the thread does, closed when a gunicorn worker exits; write
transactions that wait for one another only over the row they are about (an organization's,
a connection's), never all for one lock; the order transactions were recorded in; the COPY
text lines an import sends; and numbers as large as the product allows (balances and limits
of 10**12, credit caps of 2**63 - 1) held as SQLite holds them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from flask import Flask
from sqlite_utils import Database

from connector import backfill
from connector import store as connector_store
from connector.cli import MOVED
from server import accounts, admin, auth, credits, limits
from server.clock import iso
from server.credits import MAX_CREDITS
from server.errors import AlreadyExists, InvalidParameter
from server.http.app import create_app
from server.http.serve import gunicorn_options
from server.storage import db, dialect, move, pg, store
from tests.helpers.constants import NOW, SECRET
from tests.helpers.enrich_data import AVA_EMAIL, copy_dataset
from tests.helpers.orgs import connected, organization
from tests.helpers.postgres import PostgresServer

MORE_THAN_THE_POOL = pg.POOL_MAX + 2
PATIENCE_S = 10  # far less than the pool's 30 s wait for a free connection


@pytest.fixture
def pg_url(postgres: PostgresServer) -> Iterator[str]:
    url = postgres.create_database(postgres.migrated_template())
    yield url
    pg.release(url)


def connections_to(url: str, *, settled: int | None = None) -> int:
    """How many other sessions are connected to the database at `url`; with `settled`, once
    that many are left or PATIENCE_S has passed (a backend leaves soon after its client)."""
    query = (
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid != pg_backend_pid()"
    )
    deadline = time.monotonic() + PATIENCE_S
    with psycopg.connect(url, autocommit=True) as conn:
        while True:
            count = conn.execute(query).fetchone()[0]
            if count == settled or settled is None or time.monotonic() > deadline:
                return count
            time.sleep(0.05)


def test_threads_that_end_give_their_connections_back(pg_url: str) -> None:
    answered: list[int] = []

    def use_and_end() -> None:
        answered.append(pg.database(pg_url).execute("SELECT 1").fetchone()[0])

    for _ in range(MORE_THAN_THE_POOL):
        thread = threading.Thread(target=use_and_end, daemon=True)
        thread.start()
        thread.join(PATIENCE_S)
    assert answered == [1] * MORE_THAN_THE_POOL


@pytest.mark.both_backends
def test_more_threads_than_the_pool_each_serve_a_request(app: Flask) -> None:
    """As a threaded server's threads do: each lives on after its request."""
    statuses: list[int] = []
    all_served = threading.Barrier(MORE_THAN_THE_POOL + 1, timeout=PATIENCE_S)

    def serve_and_live_on() -> None:
        statuses.append(app.test_client().get("/healthz").status_code)
        all_served.wait()

    threads = [
        threading.Thread(target=serve_and_live_on, daemon=True) for _ in range(MORE_THAN_THE_POOL)
    ]
    for thread in threads:
        thread.start()
    all_served.wait()
    assert statuses == [200] * MORE_THAN_THE_POOL


def test_a_gunicorn_worker_closes_its_connections_as_it_exits(pg_url: str) -> None:
    pg.database(pg_url).execute("SELECT 1")
    assert connections_to(pg_url) >= 1

    gunicorn_options("127.0.0.1", 8000, 1)["worker_exit"](None, None)

    assert connections_to(pg_url, settled=0) == 0
    assert pg.database(pg_url).execute("SELECT 2").fetchone() == (2,)  # a new pool


def test_queries_whose_plan_depends_on_their_values_are_never_prepared(pg_url: str) -> None:
    """Prepared, they would soon run a generic plan for any values: on a company of 20,000
    people the page of discover took 50-100 ms instead of 3. Those run as such, and those
    with a list of values (one statement per length, too)."""
    database = pg.database(pg_url)
    for _ in range(12):  # psycopg prepares a statement at its sixth run
        database.execute("SELECT count(*) FROM companies WHERE guid = ?", ["A" * 16])
        sql = "SELECT count(*) FROM companies WHERE domain = ?"
        dialect.execute_planned_per_call(database, sql, ["a.example"])
        database.execute("SELECT count(*) FROM companies WHERE guid IN (?, ?)", ["A", "B"])

    prepared = database.execute("SELECT statement FROM pg_prepared_statements").fetchall()
    assert [text for (text,) in prepared] == ["SELECT count(*) FROM companies WHERE guid = $1"]


def test_paramstyle_writes_sqlites_placeholders_as_psycopgs() -> None:
    assert pg.paramstyle("SELECT ? WHERE a = :a AND b = ?") == (
        "SELECT %s WHERE a = %(a)s AND b = %s"
    )


def test_paramstyle_leaves_string_literals_and_casts_alone_but_for_their_percent() -> None:
    sql = "SELECT '?', ':name', '5%', 'it''s ?', x::jsonb FROM t WHERE y LIKE ? || '%'"

    assert pg.paramstyle(sql) == (
        "SELECT '?', ':name', '5%%', 'it''s ?', x::jsonb FROM t WHERE y LIKE %s || '%%'"
    )


def test_a_statement_reaches_postgresql_as_written(pg_url: str) -> None:
    database = pg.database(pg_url)

    positional = database.execute("SELECT ? || '%?:x', 7 % ?", ["a", 4]).fetchone()
    named = database.execute("SELECT :y || '%?:x', 7 % :four", {"y": "b", "four": 4}).fetchone()

    assert (positional, named) == (("a%?:x", 3), ("b%?:x", 3))


def open_transactions(url: str) -> int:
    """How many other sessions of the database at `url` are inside a transaction."""
    query = (
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid != pg_backend_pid() AND xact_start IS NOT NULL"
    )
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(query).fetchone()[0]


def test_a_write_transaction_begins_with_its_first_statement(pg_url: str) -> None:
    database = pg.connect(pg_url)
    database.execute("CREATE TABLE notes (text TEXT)")
    with db.write(database):
        assert database.conn.in_transaction and open_transactions(pg_url) == 0  # nothing sent
        database.execute("INSERT INTO notes VALUES ('kept')")
        assert open_transactions(pg_url) == 1  # BEGIN and the INSERT in one go
    with pytest.raises(RuntimeError), db.write(database):
        database.conn.raw.execute("INSERT INTO notes VALUES ('rolled back')")  # sends BEGIN
        raise RuntimeError
    with db.write(database):
        pass  # begun and ended without a round trip
    assert [row[0] for row in database.execute("SELECT text FROM notes")] == ["kept"]
    assert not database.conn.in_transaction and open_transactions(pg_url) == 0
    database.close()


def _charge_and_add_a_key(database: Database, org: dict, key: str, email: str) -> None:
    """Writes of one organization: a credit charged, another added, a key made."""
    caller = auth.authenticate(database, SECRET.encode(), key, NOW)
    credits.debit(database, org["id"], 1, NOW, f"tx-{org['name']}")
    credits.top_up(database, org["id"], 1, NOW)
    admin.create_key(database, admin.Context(caller, NOW, secret=SECRET.encode()), email)


def test_write_transactions_of_two_organizations_do_not_wait_for_each_other(
    pg_url: str,
) -> None:
    """No lock that every write transaction takes, on any node: while one holds its
    transaction open after charging an organization and changing its keys, another does as
    much for another organization (it waited for the first's commit when every write took
    one advisory lock)."""
    first, second = pg.connect(pg_url), pg.connect(pg_url)
    (acme, acme_key), (zeta, zeta_key) = (
        organization(first, name=name, credits=5) for name in ("Acme", "Zeta")
    )
    with db.write(first):
        _charge_and_add_a_key(first, acme, acme_key, "ann@acme.example")
        with db.patience(second, 200):
            _charge_and_add_a_key(second, zeta, zeta_key, "zoe@zeta.example")
        assert open_transactions(pg_url) == 1  # the first's, still open
    assert [store.organization(first, org["id"])["credits"] for org in (acme, zeta)] == [5, 5]
    first.close()
    second.close()


def test_an_organizations_key_changes_wait_for_each_other(pg_url: str) -> None:
    """What they wait for instead is the organization's row: while a key change of one
    organization is not committed, another of the same organization waits for it (here past
    its patience), so that what it checks (e-mails taken, admin keys left) is what the first
    left."""
    first, second = pg.connect(pg_url), pg.connect(pg_url)
    org, key = organization(first, name="Acme")
    caller = auth.authenticate(first, SECRET.encode(), key, NOW)
    ctx = admin.Context(caller, NOW, secret=SECRET.encode())
    with db.write(first):
        admin.create_key(first, ctx, "ann@acme.example")
        with db.patience(second, 100), pytest.raises(pg.LockNotAvailable):
            admin.create_key(second, ctx, "bob@acme.example")  # another e-mail, still waits
    admin.create_key(second, ctx, "bob@acme.example")
    with pytest.raises(AlreadyExists):
        admin.create_key(second, ctx, "ann@acme.example")
    emails = sorted(k["email"] for k in store.keys_of(first, org["id"]))
    assert emails == ["admin@acme.example", "ann@acme.example", "bob@acme.example"]
    first.close()
    second.close()


def test_two_saves_of_a_connections_mapping_at_once_number_theirs_one_after_the_other(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next version number is read, then written: a second save while the first is not
    committed waits for the connection's row, then reads the first's number (without it, it
    would take the same number and fail on the first's)."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    first, link, _ = connected(pg_url, "hubspot", "pat-na1-token", secret="x")
    second = pg.connect(pg_url)

    def save(database: Database, text: str) -> int:
        with db.write(database):
            at = iso(NOW)
            return connector_store.add_mapping_version(
                database, link.row["id"], "contacts", text, at, "t"
            )

    numbers: list[int] = []
    with db.write(first):
        numbers.append(save(first, "first"))
        waiting = threading.Thread(target=lambda: numbers.append(save(second, "second")))
        waiting.start()
        time.sleep(0.3)  # the second save is under way, waiting
    waiting.join(timeout=PATIENCE_S)
    assert numbers == [1, 2]
    first.close()
    second.close()


def test_a_failed_first_statement_leaves_its_transaction_for_the_writer_to_roll_back(
    pg_url: str,
) -> None:
    database = pg.connect(pg_url)
    database.execute("CREATE TABLE notes (text TEXT PRIMARY KEY)")
    database.execute("INSERT INTO notes VALUES ('taken')")
    with pytest.raises(psycopg.errors.InFailedSqlTransaction), db.write(database):
        try:
            database.execute("INSERT INTO notes VALUES ('taken')")
        except psycopg.errors.UniqueViolation:  # the next statement must not run on its own
            database.execute("INSERT INTO notes VALUES ('after the failure')")
    assert [row[0] for row in database.execute("SELECT text FROM notes")] == ["taken"]
    database.close()


@pytest.mark.both_backends
def test_transactions_recorded_at_once_stay_in_the_order_recorded(database: Database) -> None:
    org, _ = accounts.create_organization(
        database, b"secret", NOW, name="Order Inc", website="order.example", tier="pro"
    )
    org_id = org["id"]
    with db.write(database):
        for transaction_id in ("first", "second"):
            store.save_transaction(database, transaction(transaction_id, org_id))
    with db.write(database):  # an update moves a row on PostgreSQL (a new ctid)
        database.execute("UPDATE transactions SET credits = 1 WHERE id = 'first'")

    assert [t["id"] for t in store.transactions_of(database, org_id)] == ["first", "second"]


def transaction(transaction_id: str, org_id: str) -> dict[str, object]:
    return {"id": transaction_id, "org_id": org_id, "endpoint": "/v7/enrich",
            "created_at": "2026-11-27T12:00:00Z"}  # fmt: skip


def test_copy_line_writes_text_numbers_and_nulls_between_tabs() -> None:
    line = pg.copy_line(("Ava", "", 1200, 30.25, -0.5, None, "é"))

    assert line == "Ava\t\t1200\t30.25\t-0.5\t\\N\té\n".encode()


def test_copy_line_escapes_what_copy_would_read_as_syntax() -> None:
    line = pg.copy_line(("a\tb", "back\\slash", "\\N", "two\nlines\r", None), end="\t")

    assert line == b"a\\tb\tback\\\\slash\t\\\\N\ttwo\\nlines\\r\t\\N\t"


def test_copy_line_writes_a_str_subclass_as_its_text() -> None:
    class Name(str):
        pass

    assert pg.copy_line((Name("Stone"), Name("x\ty"))) == b"Stone\tx\\ty\n"


# --- numbers past PostgreSQL's INTEGER -------------------------------------------------------

LARGEST_ID = connector_store.LARGEST_ID  # 2**63 - 1: the largest credit cap a form or CLI takes
# Each limit and the balance as large as the product allows (server/accounts.py).
LARGEST_LIMITS = {"credits": MAX_CREDITS, "daily_limit": MAX_CREDITS, "qps": MAX_CREDITS,
                  "discover_per_minute": MAX_CREDITS}  # fmt: skip
# The columns that hold such numbers: PostgreSQL's INTEGER stops at 2**31 - 1.
BIGINT_COLUMNS = {
    ("organizations", "credits"), ("organizations", "daily_rate_limit"),
    ("organizations", "qps_limit"), ("organizations", "discover_per_minute"),
    ("credit_ledger", "change"), ("credit_ledger", "balance"),
    ("rate_counts", "count"), ("rate_windows", "count"), ("mapping_versions", "version"),
    ("backfills", "listed"), ("backfills", "queued"), ("backfills", "skipped"),
    ("backfills", "total"), ("backfills", "credit_cap"), ("backfills", "page_listed"),
    ("backfills", "page_skipped"), ("previews", "credits"),
}  # fmt: skip


@pytest.mark.both_backends
def test_an_organization_of_the_largest_balance_and_limits_enriches_and_counts(
    db_path: Path | str, enrich_dataset: Path
) -> None:
    database = copy_dataset(enrich_dataset, db_path)
    org, key = organization(database, "Largest", **LARGEST_LIMITS)
    app = create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": lambda: NOW})

    answer = app.test_client().post("/v7/enrich", json=AVA_EMAIL, headers={"apikey": key})

    assert answer.status_code == 200, answer.get_json()
    assert '"daily";q=1000000000000;w=86400' in answer.headers["RateLimit-Policy"]
    daily = limits.organization_daily(org["id"], MAX_CREDITS)
    assert limits.limiter_for({"DB": str(db_path)}).count(daily, NOW) == 1
    ledger = [(e["change"], e["balance"]) for e in credits.ledger(database, org["id"])]
    assert ledger == [(MAX_CREDITS, MAX_CREDITS), (-1, MAX_CREDITS - 1)]
    database.close()


@pytest.mark.both_backends
def test_a_top_up_reaches_the_largest_balance_and_no_further(database: Database) -> None:
    org, _ = organization(database, "Topped", credits=1)

    assert credits.top_up(database, org["id"], MAX_CREDITS - 1, NOW) == MAX_CREDITS
    with pytest.raises(InvalidParameter, match="at most 1,000,000,000,000"):
        credits.top_up(database, org["id"], 1, NOW)

    assert store.organization(database, org["id"])["credits"] == MAX_CREDITS
    assert credits.ledger(database, org["id"])[-1]["balance"] == MAX_CREDITS


@pytest.mark.both_backends
def test_a_backfill_credit_cap_of_the_largest_id_is_saved_and_read_back(
    db_path: Path | str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    database, link, _ = connected(db_path, "hubspot", "pat-na1-token", secret="x")
    started = backfill.start(database, link.row["id"], "contacts", "", LARGEST_ID, NOW)
    backfill.stop(database, link.row["id"], "contacts", NOW)
    backfill.resume(database, link.row["id"], "contacts", LARGEST_ID - 1, NOW)

    assert connector_store.backfill(database, started["id"])["credit_cap"] == LARGEST_ID - 1
    assert started["credit_cap"] == LARGEST_ID
    database.close()


def test_the_columns_of_counts_credits_and_limits_are_bigint(pg_url: str) -> None:
    """As SQLite's INTEGER: the mapping versions too (numbered one by one, so never that high
    in a test), and the quotas the rate limiter's function takes."""
    with psycopg.connect(pg_url) as conn:
        types = conn.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = current_schema()"
        ).fetchall()
        arguments = conn.execute(
            "SELECT pg_get_function_identity_arguments('rate_limit_hit'::regproc)"
        ).fetchone()[0]  # type: ignore[index]
    assert {(t, c): kind for t, c, kind in types if (t, c) in BIGINT_COLUMNS} == dict.fromkeys(
        BIGINT_COLUMNS, "bigint"
    )
    assert "quotas bigint[]" in arguments


def test_a_sqlite_database_of_the_largest_numbers_moves_into_postgresql(
    tmp_path: Path, postgres: PostgresServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    source = tmp_path / "largest.db"
    database, link, org = connected(
        source, "hubspot", "pat-na1-token", credits=MAX_CREDITS, secret="x"
    )
    backfill.start(database, link.row["id"], "contacts", "", LARGEST_ID, NOW)
    database.close()
    target = postgres.create_database()

    move.move(source, target, [MOVED])

    moved = db.connect(target)
    assert store.organization(moved, org["id"])["credits"] == MAX_CREDITS
    [row] = connector_store.backfills_of(moved, link.row["id"])
    assert row["credit_cap"] == LARGEST_ID
    moved.close()
    pg.release(target)
