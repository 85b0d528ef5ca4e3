"""Administration endpoints through the Flask app: vendor shapes, states, tenancy, rotation."""

from __future__ import annotations

from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from server import accounts, keys
from server.http.app import create_app
from server.storage import db
from tests.helpers.admin import START, Org, error_code, make_org, new_key, new_user, post
from tests.helpers.clock import Clock
from tests.helpers.constants import SECRET

pytestmark = pytest.mark.both_backends


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def app(db_path: Path, clock: Clock) -> Flask:
    # Limits high enough that only the rate-limit tests meet them.
    return create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": clock})


@pytest.fixture
def acme(app: Flask, db_path: Path) -> Org:
    return make_org(db_path, "Acme")


@pytest.fixture
def globex(app: Flask, db_path: Path) -> Org:
    return make_org(db_path, "Globex")


# --- the vendor's flows and shapes ------------------------------------------------------------


def test_create_view_and_update_a_key_in_the_vendor_shapes(client: FlaskClient, acme: Org) -> None:
    r = post(
        client, "key/createsignalapikey", {"email": "Dev.User@Acme.example.org"}, acme.admin_key
    )
    body = r.get_json()
    assert r.status_code == 200 and body["message"] == "Key generated successfully"
    created = body["data"]
    assert created["email"] == "dev.user@acme.example.org"
    assert (created["role"], created["status"]) == ("standard", "active")
    assert keys.is_well_formed(created["apiKey"])
    assert r.headers["Cache-Control"] == "no-store"

    r = post(client, "key/view", {}, acme.admin_key)
    assert r.get_json()["message"] == "Key details fetched successfully"
    listed = r.get_json()["data"]
    assert [k["role"] for k in listed] == ["admin", "standard"]
    assert created["apiKey"] not in r.get_data(as_text=True)
    assert listed[1]["apiKey"] == keys.mask(created["apiKey"])
    assert "no-store" not in r.headers.get("Cache-Control", "")

    r = post(client, "key/view", {"email": "dev.user@acme.example.org"}, acme.admin_key)
    one = r.get_json()["data"]
    assert isinstance(one, dict) and one["keyId"] == created["keyId"]

    r = post(client, "key/update", {"email": "dev.user@acme.example.org", "action": "suspend"},
             acme.admin_key)  # fmt: skip
    assert r.get_json()["message"] == "Action performed successfully"
    assert r.get_json()["data"]["status"] == "suspended"
    assert r.get_json()["data"]["apiKey"] == keys.mask(created["apiKey"])


def test_create_view_and_update_a_user_in_the_vendor_shapes(
    client: FlaskClient, acme: Org, clock: Clock
) -> None:
    r = post(client, "user/createsignalapikey", {"email": "dev.udi@acme.example.org"},
             acme.admin_key, "Admin-Api-Key")  # fmt: skip
    body = r.get_json()
    assert body["message"] == "New User registered successfully. Key Generated"
    user = body["data"]
    assert (user["role"], user["status"]) == ("user", "active")
    assert user["createdAt"] == user["updatedAt"] == "2025-04-10T18:49:51.123+00:00"
    assert len(user["apiKey"]) == 1 and keys.is_well_formed(user["apiKey"][0])
    assert r.headers["Cache-Control"] == "no-store"
    assert user["organization"] == {
        "orgId": acme.id,
        "orgName": "Acme",
        "website": "https://www.acme.example.org/",
        "cleanedWebsite": "acme.example.org",
        "status": "active",
        "dailyRateLimit": 100_000,
        "qpsLimit": 1000,
        "createdAt": "2025-04-10T18:49:51.123+00:00",
        "updatedAt": "2025-04-10T18:49:51.123+00:00",
        "adminApiKey": None,
    }

    clock.advance(5)
    r = post(client, "user/update", {"email": "dev.udi@acme.example.org", "action": "suspend"},
             acme.admin_key, "Admin-Api-Key")  # fmt: skip
    updated = r.get_json()["data"]
    assert (updated["status"], updated["apiKey"]) == ("suspend", None)
    assert updated["updatedAt"] == "2025-04-10T18:49:56.123+00:00"

    r = post(client, "user/view", {}, acme.admin_key, "Admin-Api-Key")
    assert r.get_json()["message"] == "All User details fetched successfully"
    users = r.get_json()["data"]
    assert [(u["role"], u["status"], u["apiKey"]) for u in users] == [
        ("admin", "active", None),
        ("user", "suspend", None),
    ]


def test_the_key_may_come_in_any_key_header(client: FlaskClient, acme: Org) -> None:
    for header in ("Api-Key", "api-key", "API_KEY", "Admin-Api-Key", "Admin_Api_Key", "apikey"):
        assert post(client, "key/view", {}, acme.admin_key, header).status_code == 200, header
        assert post(client, "user/view", {}, acme.admin_key, header).status_code == 200, header


# --- states and transitions -------------------------------------------------------------------

KEY_TRANSITIONS = [
    # state before, action, status, error code, state after
    ("active", "suspend", 200, None, "suspended"),
    ("suspended", "suspend", 200, None, "suspended"),
    ("suspended", "activate", 200, None, "active"),
    ("suspended", "active", 200, None, "active"),
    ("active", "activate", 409, "not_eligible", "active"),
    ("active", "active", 409, "not_eligible", "active"),
    ("active", "rotate", 200, None, "active"),
    ("suspended", "rotate", 200, None, "suspended"),
    ("active", "delete", 400, "invalid_parameter", "active"),
    ("suspended", "", 400, "invalid_parameter", "suspended"),
]


@pytest.mark.parametrize(("before", "action", "status", "code", "after"), KEY_TRANSITIONS)
def test_key_transitions(
    client: FlaskClient, acme: Org, before: str, action: str, status: int, code: str | None,
    after: str,
) -> None:  # fmt: skip
    email = "k@acme.example.org"
    new_key(client, acme, email)
    if before == "suspended":
        post(client, "key/update", {"email": email, "action": "suspend"}, acme.admin_key)

    r = post(client, "key/update", {"email": email, "action": action}, acme.admin_key)

    assert (r.status_code, error_code(r)) == (status, code)
    view = post(client, "key/view", {"email": email}, acme.admin_key).get_json()["data"]
    assert view["status"] == after


USER_TRANSITIONS = [
    ("active", "suspend", 200, None, "suspend"),
    ("suspend", "suspend", 409, "not_eligible", "suspend"),
    ("deleted", "suspend", 409, "not_eligible", "deleted"),
    ("suspend", "active", 200, None, "active"),
    ("suspend", "activate", 200, None, "active"),
    ("active", "active", 409, "not_eligible", "active"),
    ("deleted", "active", 409, "not_eligible", "deleted"),
    ("active", "delete", 200, None, "deleted"),
    ("suspend", "delete", 200, None, "deleted"),
    ("deleted", "delete", 409, "not_eligible", "deleted"),
    ("active", "remove", 400, "invalid_parameter", "active"),
]


@pytest.mark.parametrize(("before", "action", "status", "code", "after"), USER_TRANSITIONS)
def test_user_transitions(
    client: FlaskClient, acme: Org, before: str, action: str, status: int, code: str | None,
    after: str,
) -> None:  # fmt: skip
    email = "u@acme.example.org"
    new_user(client, acme, email)
    steps = {"active": [], "suspend": ["suspend"], "deleted": ["delete"]}[before]
    for step in steps:
        r = post(client, "user/update", {"email": email, "action": step}, acme.admin_key)
        assert r.status_code == 200

    r = post(client, "user/update", {"email": email, "action": action}, acme.admin_key)

    assert (r.status_code, error_code(r)) == (status, code)
    users = post(client, "user/view", {}, acme.admin_key).get_json()["data"]
    assert {u["email"]: u["status"] for u in users}[email] == after


def test_a_deleted_users_key_is_revoked_for_good(client: FlaskClient, acme: Org) -> None:
    email = "gone@acme.example.org"
    value = new_user(client, acme, email)
    post(client, "user/update", {"email": email, "action": "delete"}, acme.admin_key)

    r = post(client, "key/view", {}, value)
    assert (r.status_code, error_code(r)) == (403, "user_deleted")
    for action in ("activate", "rotate", "suspend"):
        r = post(client, "key/update", {"email": email, "action": action}, acme.admin_key)
        assert (r.status_code, error_code(r)) == (409, "not_eligible"), action


def test_the_last_active_admin_key_cannot_be_suspended(client: FlaskClient, acme: Org) -> None:
    admin_email = "admin@acme.example.org"
    for path, action in (("key/update", "suspend"), ("user/update", "suspend"),
                         ("user/update", "delete")):  # fmt: skip
        r = post(client, path, {"email": admin_email, "action": action}, acme.admin_key)
        assert (r.status_code, error_code(r)) == (409, "not_eligible"), (path, action)
    assert post(client, "key/view", {}, acme.admin_key).status_code == 200


def test_an_inactive_organization_may_look_but_not_change(
    client: FlaskClient, acme: Org, db_path: Path
) -> None:
    new_key(client, acme, "k@acme.example.org")
    accounts.set_status(db.connect(db_path), acme.id, "inactive", START)

    assert post(client, "key/view", {}, acme.admin_key).status_code == 200
    assert post(client, "user/view", {}, acme.admin_key).status_code == 200
    refused = [
        ("key/createsignalapikey", {"email": "n@acme.example.org"}),
        ("key/update", {"email": "k@acme.example.org", "action": "suspend"}),
        ("user/createsignalapikey", {"email": "n@acme.example.org"}),
        ("user/update", {"email": "admin@acme.example.org", "action": "suspend"}),
    ]
    for path, body in refused:
        r = post(client, path, body, acme.admin_key)
        assert (r.status_code, error_code(r)) == (403, "organization_inactive"), path


def test_one_key_and_one_user_per_email(client: FlaskClient, acme: Org) -> None:
    new_key(client, acme, "taken@acme.example.org")
    for path in ("key/createsignalapikey", "user/createsignalapikey"):
        r = post(client, path, {"email": "TAKEN@acme.example.org"}, acme.admin_key)
        assert (r.status_code, error_code(r)) == (409, "already_exists"), path


# --- tenancy ----------------------------------------------------------------------------------


def test_another_organizations_keys_and_users_are_not_found(
    client: FlaskClient, acme: Org, globex: Org
) -> None:
    new_user(client, acme, "u@acme.example.org")
    for path, body in [
        ("key/view", {"email": "u@acme.example.org"}),
        ("key/update", {"email": "u@acme.example.org", "action": "suspend"}),
        ("user/update", {"email": "u@acme.example.org", "action": "suspend"}),
    ]:
        r = post(client, path, body, globex.admin_key)
        assert (r.status_code, error_code(r)) == (404, "not_found"), path
        missing = post(client, path, {**body, "email": "nobody@acme.example.org"}, acme.admin_key)
        assert (
            r.get_json()["error"]["message"].replace("u@", "nobody@")
            == (missing.get_json()["error"]["message"])
        )
    seen = post(client, "key/view", {}, globex.admin_key).get_data(as_text=True)
    seen += post(client, "user/view", {}, globex.admin_key).get_data(as_text=True)
    assert "acme" not in seen.lower() and acme.id not in seen


# --- rotation ---------------------------------------------------------------------------------


def test_a_rotated_key_works_until_its_grace_period_ends(
    client: FlaskClient, acme: Org, clock: Clock
) -> None:
    old = new_key(client, acme, "k@acme.example.org")
    r = post(client, "key/update",
             {"email": "k@acme.example.org", "action": "rotate", "graceSeconds": 3600},
             acme.admin_key)  # fmt: skip
    data = r.get_json()["data"]
    new = data["apiKey"]
    assert r.status_code == 200 and new != old and keys.is_well_formed(new)
    assert r.headers["Cache-Control"] == "no-store"
    assert data["previousKeyExpiresAt"] == "2025-04-10T19:49:51.123+00:00"

    def works(value: str) -> int:
        return post(client, "key/view", {}, value).status_code  # 403: a standard key, accepted

    assert works(new) == 403 and works(old) == 403
    clock.advance(3599)
    assert works(old) == 403
    clock.advance(1)
    assert works(old) == 401 and works(new) == 403
    r = post(client, "key/view", {}, old)
    assert error_code(r) == "invalid_api_key"


def test_rotating_the_admin_key_with_no_grace(client: FlaskClient, acme: Org) -> None:
    r = post(client, "key/update",
             {"email": "admin@acme.example.org", "action": "rotate", "graceSeconds": 0},
             acme.admin_key)  # fmt: skip
    new = r.get_json()["data"]["apiKey"]
    assert post(client, "key/view", {}, acme.admin_key).status_code == 401
    assert post(client, "key/view", {}, new).status_code == 200


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"action": "rotate"}, "email is required."),
        ({"email": 5, "action": "rotate"}, "email must be a string, not a number."),
        ({"email": "k@acme.example.org"}, "action is required."),
        ({"email": "not-an-address", "action": "rotate"}, "email must be an e-mail address"),
        ({"email": "k@acme.example.org", "action": "rotate", "graceSeconds": -1}, "graceSeconds"),
        ({"email": "k@acme.example.org", "action": "rotate", "graceSeconds": 604801}, "604800"),
        ({"email": "k@acme.example.org", "action": "rotate", "graceSeconds": "1"}, "whole number"),
        ({"email": "k@acme.example.org", "action": "suspend", "graceSeconds": 5}, "rotate"),
    ],
)
def test_bad_update_bodies_name_the_field(
    client: FlaskClient, acme: Org, body: dict, message: str
) -> None:
    new_key(client, acme, "k@acme.example.org")
    r = post(client, "key/update", body, acme.admin_key)
    assert (r.status_code, error_code(r)) == (400, "invalid_parameter")
    assert message in r.get_json()["error"]["message"]


def test_unknown_body_fields_are_ignored(client: FlaskClient, acme: Org) -> None:
    r = post(client, "key/createsignalapikey", {"email": "a@acme.example.org", "x": [1]},
             acme.admin_key)  # fmt: skip
    assert r.status_code == 200


# --- audit log and stored secrets -------------------------------------------------------------


def test_every_change_is_audited_without_secrets(
    client: FlaskClient, acme: Org, db_path: Path
) -> None:
    value = new_key(client, acme, "k@acme.example.org")
    client.post("/signals/v1/key/update", json={"email": "k@acme.example.org", "action": "rotate"},
                headers={"Api-Key": acme.admin_key, "X-Request-Id": "req-42"})  # fmt: skip
    new_user(client, acme, "u@acme.example.org")
    post(client, "user/update", {"email": "u@acme.example.org", "action": "delete"}, acme.admin_key)
    post(client, "key/view", {}, acme.admin_key)  # a read: not an action

    entries = list(db.connect(db_path).query("SELECT * FROM audit_log ORDER BY id"))
    assert [(e["action"], e["target"]) for e in entries] == [
        ("organization.create", "Acme"),
        ("key.create", "k@acme.example.org"),
        ("key.rotate", "k@acme.example.org"),
        ("user.create", "u@acme.example.org"),
        ("user.delete", "u@acme.example.org"),
    ]
    assert entries[2]["request_id"] == "req-42" and '"graceSeconds": 86400' in entries[2]["detail"]
    assert all(e["org_id"] == acme.id for e in entries)
    assert "admin@acme.example.org" in entries[1]["actor"]
    text = str(entries)
    assert value not in text and acme.admin_key not in text


def test_the_database_file_holds_no_issued_key(
    client: FlaskClient, acme: Org, db_path: Path
) -> None:
    issued = [acme.admin_key, new_key(client, acme, "k@acme.example.org")]
    issued.append(new_user(client, acme, "u@acme.example.org"))
    r = post(client, "key/update", {"email": "k@acme.example.org", "action": "rotate"},
             acme.admin_key)  # fmt: skip
    issued.append(r.get_json()["data"]["apiKey"])
    connection = db.connect(db_path)
    if isinstance(db_path, str):  # PostgreSQL: every row of every table, as text
        tables = connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        rows = [connection.execute(f"SELECT array_agg(t::text) FROM {t} t") for (t,) in tables]
        stored = repr([row.fetchone() for row in rows]).encode()
    else:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        stored = b"".join(p.read_bytes() for p in db_path.parent.glob(f"{db_path.name}*"))
    connection.close()
    for value in issued:
        assert value.encode() not in stored
        assert value[len(keys.PREFIX) :].encode() not in stored
