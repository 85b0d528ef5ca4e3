"""Every administration route against every kind of caller: only the right ones get through."""

from __future__ import annotations

from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from server import accounts, keys
from server.storage import db
from tests.helpers.admin import START, Org, error_code, make_org, new_key, new_user, post

pytestmark = pytest.mark.both_backends

ROUTES = {
    "key/createsignalapikey": {"email": "new@acme.example.org"},
    "key/view": {"email": "k@acme.example.org"},
    "key/update": {"email": "k@acme.example.org", "action": "suspend"},
    "user/createsignalapikey": {"email": "new@acme.example.org"},
    "user/view": {},
    "user/update": {"email": "u@acme.example.org", "action": "suspend"},
}
VIEWS = {"key/view", "user/view"}
CREATES = {"key/createsignalapikey", "user/createsignalapikey"}


def expected(caller: str, route: str) -> tuple[int, str | None]:
    """The status and error code each kind of caller must get on each route."""
    fixed = {
        "no key": (401, "unauthorized"),
        "malformed key": (401, "invalid_api_key"),
        "unknown key": (401, "invalid_api_key"),
        "suspended key": (403, "key_suspended"),
        "suspended user's key": (403, "user_suspended"),
        "deleted user's key": (403, "user_deleted"),
        "standard key": (403, "admin_required"),
        "admin key": (200, None),
    }
    if caller in fixed:
        return fixed[caller]
    if caller == "inactive organization's admin key":  # may look (at its own), not change
        if route in VIEWS:
            return (200, None) if route == "user/view" else (404, "not_found")
        return (403, "organization_inactive")
    # Another organization's admin acts in its own organization: it may create there and
    # list its own, but an e-mail address of this organization is not found.
    assert caller == "another organization's admin key"
    return (200, None) if route in CREATES | {"user/view"} else (404, "not_found")


CALLERS = [
    "no key",
    "malformed key",
    "unknown key",
    "suspended key",
    "suspended user's key",
    "deleted user's key",
    "standard key",
    "another organization's admin key",
    "inactive organization's admin key",
    "admin key",
]


@pytest.fixture
def callers(app: Flask, client: FlaskClient, db_path: Path) -> dict[str, str | None]:
    acme = make_org(db_path, "Acme")
    new_key(client, acme, "k@acme.example.org")
    new_user(client, acme, "u@acme.example.org")
    suspended = new_key(client, acme, "suspended@acme.example.org")
    post(client, "key/update", {"email": "suspended@acme.example.org", "action": "suspend"},
         acme.admin_key)  # fmt: skip
    on_leave = new_user(client, acme, "on-leave@acme.example.org")
    post(client, "user/update", {"email": "on-leave@acme.example.org", "action": "suspend"},
         acme.admin_key)  # fmt: skip
    gone = new_user(client, acme, "gone@acme.example.org")
    post(client, "user/update", {"email": "gone@acme.example.org", "action": "delete"},
         acme.admin_key)  # fmt: skip
    globex: Org = make_org(db_path, "Globex")
    initech = make_org(db_path, "Initech")
    accounts.set_status(db.connect(db_path), initech.id, "inactive", START)
    return {
        "no key": None,
        "malformed key": "cdk_not-a-key",
        "unknown key": keys.new_key(),
        "suspended key": suspended,
        "suspended user's key": on_leave,
        "deleted user's key": gone,
        "standard key": acme.keys["k@acme.example.org"],
        "another organization's admin key": globex.admin_key,
        "inactive organization's admin key": initech.admin_key,
        "admin key": acme.admin_key,
    }


@pytest.mark.parametrize("route", ROUTES)
def test_authorization_matrix(
    client: FlaskClient, callers: dict[str, str | None], route: str
) -> None:
    got = {}
    for caller in CALLERS:
        r = post(client, route, ROUTES[route], callers[caller])
        got[caller] = (r.status_code, error_code(r))
    assert got == {caller: expected(caller, route) for caller in CALLERS}


def test_a_non_admin_key_is_refused_whatever_the_spelling(
    client: FlaskClient, callers: dict[str, str | None]
) -> None:
    standard, admin = callers["standard key"], callers["admin key"]
    paths = ["/signals/v1/key/view", "/signals/v1/key/view/", "/SIGNALS/v1/Key/View", "/signals/x"]
    for method in ("POST", "GET", "PUT", "DELETE"):
        for path in paths:
            r = client.open(path, method=method, json={}, headers={"Api-Key": standard})
            assert (r.status_code, error_code(r)) == (403, "admin_required"), (method, path)
    r = client.get("/signals/v1/key/view", headers={"Api-Key": admin})
    assert (r.status_code, error_code(r)) == (405, "method_not_allowed")
    r = client.get("/signals/v1/key/view")
    assert (r.status_code, error_code(r)) == (405, "method_not_allowed")
    r = client.post("/signals/v1/key/view/", json={}, headers={"Api-Key": admin})
    assert (r.status_code, error_code(r)) == (404, "not_found")
