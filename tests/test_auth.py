"""Authentication: the 401s that reveal nothing, the 403s that say which state, last use."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlite_utils import Database

from server import accounts, auth, keys
from server.clock import iso
from server.errors import Forbidden, InvalidApiKey, Unauthorized
from server.storage import db, store

pytestmark = pytest.mark.both_backends

NOW = datetime(2025, 4, 10, 12, 0, tzinfo=UTC)
SECRET = b"secret"


@pytest.fixture
def admin_key(database: Database) -> str:
    _, key = accounts.create_organization(
        database, SECRET, NOW, name="Acme", website="acme.org", tier="enterprise_standard"
    )
    return key


def test_a_valid_key_gives_its_caller(database: Database, admin_key: str) -> None:
    caller = auth.authenticate(database, SECRET, admin_key, NOW)
    assert (caller.role, caller.email, caller.tier) == (
        "admin",
        "admin@acme.org",
        "enterprise_standard",
    )
    assert (caller.qps_limit, caller.daily_limit, caller.org_active) == (5, 10_000, True)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (None, Unauthorized),
        ("", Unauthorized),
        ("not a key", InvalidApiKey),
        ("cdk_" + "a" * 38, InvalidApiKey),  # the right shape, a wrong checksum
        (keys.new_key(), InvalidApiKey),  # well formed, never issued
    ],
    ids=["none", "empty", "not a key", "wrong checksum", "never issued"],
)
def test_missing_malformed_and_unknown_keys(
    database: Database, admin_key: str, value: str | None, error: type
) -> None:
    with pytest.raises(error) as raised:
        auth.authenticate(database, SECRET, value, NOW)
    if error is InvalidApiKey:
        assert raised.value.message == "Invalid API key."


def test_the_same_key_under_another_secret_is_unknown(database: Database, admin_key: str) -> None:
    with pytest.raises(InvalidApiKey):
        auth.authenticate(database, b"another secret", admin_key, NOW)


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ("UPDATE api_keys SET status = 'suspended'", "key_suspended"),
        ("UPDATE users SET status = 'suspend'", "user_suspended"),
        ("UPDATE users SET status = 'deleted'", "user_deleted"),
    ],
)
def test_states_that_refuse_a_known_key(
    database: Database, admin_key: str, change: str, code: str
) -> None:
    database.execute(change)
    with pytest.raises(Forbidden) as raised:
        auth.authenticate(database, SECRET, admin_key, NOW)
    assert raised.value.code == code


def test_last_use_is_recorded_at_most_once_a_minute(database: Database, admin_key: str) -> None:
    def last_used() -> str:
        return next(database.query("SELECT last_used_at FROM api_keys"))["last_used_at"]

    auth.authenticate(database, SECRET, admin_key, NOW)
    assert last_used() == "2025-04-10T12:00:00.000+00:00"
    auth.authenticate(database, SECRET, admin_key, NOW + timedelta(seconds=59))
    assert last_used() == "2025-04-10T12:00:00.000+00:00"
    auth.authenticate(database, SECRET, admin_key, NOW + timedelta(seconds=60))
    assert last_used() == "2025-04-10T12:01:00.000+00:00"


def test_an_inactive_organization_is_refused_where_it_must_be_active(
    database: Database, admin_key: str
) -> None:
    org_id = store.organizations(database)[0]["id"]
    accounts.set_status(database, org_id, "inactive", NOW)
    caller = auth.authenticate(database, SECRET, admin_key, NOW)
    with pytest.raises(Forbidden) as raised:
        auth.require_active_organization(caller)
    assert raised.value.code == "organization_inactive"


def test_a_busy_database_does_not_hold_up_authentication(
    db_path: Path, database: Database, admin_key: str
) -> None:
    writer = db.connect(db_path, migrate=False)
    writer.execute("BEGIN")
    # SQLite: any write holds up every other (an import); PostgreSQL: the key's row
    writer.execute("UPDATE api_keys SET updated_at = updated_at")
    try:
        # Waiting out the busy timeout would end in "database is locked"; the last use is
        # skipped instead.
        caller = auth.authenticate(database, SECRET, admin_key, NOW)
        assert caller.role == "admin"
    finally:
        writer.execute("ROLLBACK")
    assert next(database.query("SELECT last_used_at FROM api_keys"))["last_used_at"] is None


def test_a_browser_session_names_the_value_and_ends_with_it(
    database: Database, admin_key: str
) -> None:
    caller, mark = auth.sign_in(database, SECRET, admin_key, NOW)
    assert admin_key not in mark and keys.key_hash(admin_key, SECRET) not in mark
    assert auth.resume(database, SECRET, caller.key_id, mark, NOW) == caller
    with pytest.raises(InvalidApiKey):
        auth.resume(database, SECRET, caller.key_id, "0" * 32, NOW)
    # A rotation in the same millisecond: the old value still names itself, not the new one.
    fresh = keys.key_hash(keys.new_key(), SECRET)
    store.rotate_key(
        database, caller.key_id, fresh, "cdk_…x", iso(NOW + timedelta(seconds=60)), iso(NOW)
    )
    assert auth.resume(database, SECRET, caller.key_id, mark, NOW).key_id == caller.key_id
    with pytest.raises(InvalidApiKey):
        auth.resume(database, SECRET, caller.key_id, mark, NOW + timedelta(seconds=61))


def test_a_suspended_key_does_not_sign_in(database: Database, admin_key: str) -> None:
    org = auth.authenticate(database, SECRET, admin_key, NOW)
    store.set_key_status(database, org.key_id, "suspended", iso(NOW))
    with pytest.raises(Forbidden) as raised:
        auth.sign_in(database, SECRET, admin_key, NOW)
    assert raised.value.code == "key_suspended"
