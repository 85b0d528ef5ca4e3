"""The admin settings page through the Flask test client: sign-in, its throttle and session,
CSRF, the security headers, and each action's effect in the database and the audit log."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlite_utils import Database
from werkzeug.test import TestResponse

import server
from connector import connections, mappings, scheduler, store
from connector.app import create_app
from connector.platforms import PLATFORMS
from connector.views import settings
from server import accounts, audit, auth, credits, keys, usage
from server import admin as use_cases
from server.clock import iso
from server.errors import ServiceError
from server.storage import store as service_store
from tests.helpers.clock import Clock
from tests.helpers.constants import SECRET
from tests.helpers.settings_forms import sign_in, source, submit, text, token

pytestmark = pytest.mark.both_backends

START = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
CSP = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
COOKIE = "contactdata_settings"
PAGES = (
    "keys", "users", "connections", "deliveries", "signals", "usage", "schedules", "audit",
    "credits", "do-not-enrich",
)  # fmt: skip


@dataclass
class Org:
    id: str
    admin_key: str
    admin_key_id: str
    admin_email: str


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def app(db_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> Flask:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")  # connections to 127.0.0.1
    return create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": clock})


@pytest.fixture
def database(app: Flask, db_path: Path) -> Database:
    return store.connect(db_path)


def make_org(database: Database, name: str, **options: Any) -> Org:
    org, value = accounts.create_organization(
        database, SECRET.encode(), START, name=name, website=f"{name.lower()}.example.org",
        tier="pro", **options,
    )  # fmt: skip
    caller = auth.authenticate(database, SECRET.encode(), value, START)
    return Org(org["id"], value, caller.key_id, caller.email)


@pytest.fixture
def acme(database: Database) -> Org:
    return make_org(database, "Acme", daily_limit=500)


@pytest.fixture
def globex(database: Database) -> Org:
    return make_org(database, "Globex")


@pytest.fixture
def signed_in(client: FlaskClient, acme: Org) -> FlaskClient:
    """A client signed in as Acme's admin."""
    response = sign_in(client, acme.admin_key)
    assert response.status_code == 303 and response.location == "/settings/keys"
    return client


def actions(database: Database, org: Org) -> list[tuple[str, str]]:
    return [(e["action"], e["target"]) for e in audit.entries(database, org.id)]


def new_value(response: TestResponse) -> str:
    found = re.search(r'id="new-key-value" type="text" readonly value="([^"]+)"', source(response))
    assert found, source(response)
    return found.group(1)


# --- sign-in, session, throttle --------------------------------------------------------------


def test_every_page_needs_a_signed_in_admin(client: FlaskClient, acme: Org) -> None:
    for page in PAGES:
        response = client.get(f"/settings/{page}")
        assert (response.status_code, response.location) == (303, "/settings/sign-in")
    assert client.get("/settings/").location == "/settings/sign-in"


def test_a_wrong_key_gets_the_form_again_and_nothing_else(
    client: FlaskClient, acme: Org, database: Database
) -> None:
    standard, _ = accounts_key(database, acme, "dev@acme.example.org")
    refusals = []
    for value in ("", "not a key", keys.new_key(), standard):  # empty, malformed, unknown, role
        response = sign_in(client, value)
        assert response.status_code == 401
        assert settings.SIGN_IN_FAILED in source(response)
        assert 'name="api_key"' in source(response)
        refusals.append(source(response).replace(token(response), ""))
    assert len(set(refusals)) == 1  # the same page, whatever was wrong
    assert client.get("/settings/keys").status_code == 303


def accounts_key(database: Database, org: Org, email: str) -> tuple[str, str]:
    """A standard key of `org` made through the admin use case: (value, id)."""
    caller = auth.authenticate(database, SECRET.encode(), org.admin_key, START)
    ctx = use_cases.Context(caller=caller, now=START, secret=SECRET.encode())
    key, value = use_cases.create_key(database, ctx, email)
    return value, key["id"]


def test_the_session_holds_the_key_id_and_org_never_the_key(
    client: FlaskClient, app: Flask, acme: Org, database: Database
) -> None:
    """The cookie names a session by a random id; the server's row holds its key and org."""
    response = sign_in(client, acme.admin_key)
    cookie = response.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/settings" in cookie
    assert "Secure" not in cookie  # plain http here
    value = cookie.split(";")[0].split("=", 1)[1]
    stored = app.session_interface.get_signing_serializer(app).loads(value)  # type: ignore[attr-defined]
    assert set(stored) <= {"session_id", "csrf_token", "_flashes"}
    [row] = database.query("SELECT * FROM settings_sessions")
    assert row["id"] != stored["session_id"]  # a digest: the table alone signs nobody in
    began = (acme.admin_key_id, acme.id, iso(START), "")
    assert (row["key_id"], row["org_id"], row["created_at"], row["ended_at"]) == began
    for text_ in (json.dumps(stored), cookie, json.dumps(row)):
        assert acme.admin_key not in text_ and acme.admin_key[-12:] not in text_


def at_public_url(app: Flask, public_url: str) -> FlaskClient:
    """A client of the settings page of an app on the same database reached at `public_url`."""
    config = {"DB": app.config["DB"], "KEY_SECRET": SECRET, "CLOCK": app.config["CLOCK"]}
    return create_app({**config, "PUBLIC_URL": public_url}).test_client()


@pytest.mark.parametrize(
    ("public_url", "called", "secure"),
    [
        ("https://settings.example", "https://settings.example", True),
        ("https://settings.example", "http://127.0.0.1:8080", True),  # a TLS proxy calls http
        ("http://settings.example", "https://settings.example", False),
    ],
)
def test_the_cookie_is_secure_exactly_when_the_public_url_is_https(
    app: Flask, acme: Org, public_url: str, called: str, secure: bool
) -> None:
    """The public URL decides, not the scheme the request came by; forms need no Referer
    (Referrer-Policy no-referrer: browsers send none with them)."""
    client = at_public_url(app, public_url)
    form = client.get("/settings/sign-in", base_url=called)
    response = client.post(
        "/settings/sign-in", base_url=called,
        data={"api_key": acme.admin_key, "csrf_token": token(form)},
    )  # fmt: skip
    assert response.status_code == 303
    assert ("Secure" in response.headers["Set-Cookie"]) is secure


def test_a_forwarded_proto_header_is_not_believed(app: Flask, acme: Org) -> None:
    client = app.test_client()
    form = client.get("/settings/sign-in")
    response = client.post(
        "/settings/sign-in",
        headers={"X-Forwarded-Proto": "https"},
        data={"api_key": acme.admin_key, "csrf_token": token(form)},
    )
    assert response.status_code == 303
    assert "Secure" not in response.headers["Set-Cookie"]


def test_sign_out_ends_the_session(signed_in: FlaskClient) -> None:
    response = submit(signed_in, "/settings/keys", "/settings/sign-out")
    assert response.location == "/settings/sign-in"
    assert "You are signed out." in source(signed_in.get("/settings/sign-in"))
    assert signed_in.get("/settings/keys").status_code == 303


def test_a_copied_cookie_is_refused_after_sign_out(
    signed_in: FlaskClient, app: Flask, acme: Org, database: Database
) -> None:
    """Signing out ends the session on the server: a copy of its cookie stops working."""
    copy = app.test_client()
    copy.set_cookie(COOKIE, cookie_of(signed_in), path="/settings")
    form = copy.get("/settings/keys")
    assert form.status_code == 200  # the copy works while the session lasts
    submit(signed_in, "/settings/keys", "/settings/sign-out")
    keys_before = len(use_cases.view_keys(database, admin_context(database, acme), None))

    response = copy.post(
        "/settings/keys", data={"email": "thief@acme.example.org", "csrf_token": token(form)}
    )
    assert (response.status_code, response.location) == (303, "/settings/sign-in")
    assert len(use_cases.view_keys(database, admin_context(database, acme), None)) == keys_before
    assert copy.get("/settings/keys").status_code == 303


def test_a_session_ends_8_hours_after_sign_in_however_recently_used(
    signed_in: FlaskClient, clock: Clock
) -> None:
    """Each message re-signs the cookie; the session's age still counts from sign-in."""
    clock.advance(8 * 3600 - 60)
    created = submit(signed_in, "/settings/keys", "/settings/keys", email="late@acme.example.org")
    assert created.status_code == 200 and "Set-Cookie" in created.headers  # used and re-signed
    clock.advance(60)
    response = signed_in.get("/settings/keys")
    assert response.location == "/settings/sign-in"
    assert "Your session ended 8 hours after you signed in" in source(
        signed_in.get(response.location)
    )


def test_signing_in_ends_the_previous_session_and_purges_old_ones(
    client: FlaskClient, app: Flask, acme: Org, database: Database, clock: Clock
) -> None:
    sign_in(client, acme.admin_key)
    first = cookie_of(client)
    clock.advance(3600)
    again = {"api_key": acme.admin_key, "csrf_token": token(client.get("/settings/keys"))}
    assert client.post("/settings/sign-in", data=again).status_code == 303
    assert cookie_of(client) != first  # the first session ended: its copy no longer works
    copy = app.test_client()
    copy.set_cookie(COOKIE, first, path="/settings")
    assert copy.get("/settings/keys").status_code == 303
    assert database.table("settings_sessions").count == 1  # the ended one is purged

    clock.advance(8 * 3600)
    sign_in(app.test_client(), acme.admin_key)  # the second one is 8 hours old: purged
    assert database.table("settings_sessions").count == 1


def cookie_of(client: FlaskClient) -> str:
    found = client.get_cookie(COOKIE, path="/settings")
    assert found is not None
    return found.value


def admin_context(database: Database, org: Org) -> use_cases.Context:
    caller = auth.authenticate(database, SECRET.encode(), org.admin_key, START)
    return use_cases.Context(caller=caller, now=START, secret=SECRET.encode())


def test_sign_in_attempts_are_throttled_per_address(app: Flask, acme: Org, clock: Clock) -> None:
    client = app.test_client()
    for _ in range(settings.SIGN_IN_ATTEMPTS):
        assert sign_in(client, "cdk_wrong").status_code == 401
    refused = sign_in(client, acme.admin_key)  # even the right key, until the minute is over
    assert refused.status_code == 429
    assert "Too many sign-in attempts" in source(refused)
    assert 1 <= int(refused.headers["Retry-After"]) <= 60
    assert refused.headers["Content-Security-Policy"] == CSP

    elsewhere = app.test_client()
    elsewhere.environ_base["REMOTE_ADDR"] = "192.0.2.7"
    assert sign_in(elsewhere, acme.admin_key).status_code == 303

    clock.advance(61)
    assert sign_in(client, acme.admin_key).status_code == 303


def test_successful_sign_ins_do_not_count_against_the_address(app: Flask, acme: Org) -> None:
    """Admins behind one proxy address never lock each other out by signing in."""
    for _ in range(settings.SIGN_IN_ATTEMPTS + 2):
        assert sign_in(app.test_client(), acme.admin_key).status_code == 303
    assert sign_in(app.test_client(), "cdk_wrong").status_code == 401


def forwarded(app: Flask, chain: str) -> FlaskClient:
    """A client behind the proxy at 10.0.0.1, which reports `chain` as X-Forwarded-For."""
    client = app.test_client()
    client.environ_base.update(REMOTE_ADDR="10.0.0.1", HTTP_X_FORWARDED_FOR=chain)
    return client


def test_behind_a_trusted_proxy_each_forwarded_client_is_throttled_alone(
    db_path: Path, clock: Clock, acme: Org
) -> None:
    app = create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": clock,
                      "TRUSTED_PROXIES": 1})  # fmt: skip
    attacker = forwarded(app, "203.0.113.5")
    for _ in range(settings.SIGN_IN_ATTEMPTS):
        assert sign_in(attacker, "cdk_wrong").status_code == 401
    assert sign_in(attacker, acme.admin_key).status_code == 429
    # what the client wrote itself, left of what the proxy added, changes nothing
    assert sign_in(forwarded(app, "198.51.100.9, 203.0.113.5"), acme.admin_key).status_code == 429
    assert sign_in(forwarded(app, "198.51.100.9"), acme.admin_key).status_code == 303
    with pytest.raises(ValueError, match="TRUSTED_PROXIES"):
        create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "TRUSTED_PROXIES": -1})


def test_without_trusted_proxies_x_forwarded_for_is_ignored(app: Flask, acme: Org) -> None:
    """Nobody escapes the throttle by writing the header: the address is the connection's."""
    for _ in range(settings.SIGN_IN_ATTEMPTS):
        assert sign_in(forwarded(app, "203.0.113.5"), "cdk_wrong").status_code == 401
    assert sign_in(forwarded(app, "198.51.100.9"), acme.admin_key).status_code == 429


def test_client_address_takes_the_entry_the_last_trusted_proxy_added() -> None:
    address = settings.client_address
    assert address("10.0.0.1", "203.0.113.5", 0) == "10.0.0.1"
    assert address("10.0.0.1", "6.6.6.6, 203.0.113.5", 1) == "203.0.113.5"
    assert address("10.0.0.2", "6.6.6.6, 203.0.113.5, 10.0.0.1", 2) == "203.0.113.5"
    assert address("10.0.0.1", "", 1) == "10.0.0.1"  # the header is missing: the proxy's
    assert address("10.0.0.2", "203.0.113.5", 2) == "10.0.0.2"  # fewer entries than proxies
    assert address(None, "", 0) == "unknown"
    assert address("10.0.0.1", "203.0.113.5:61000", 1) == "203.0.113.5"  # a port is no client
    assert address("10.0.0.1", "[2001:db8:1:2::7]:443", 1) == "2001:db8:1:2::/64"
    assert address("2001:db8:1:2:aaaa::1", "", 0) == address("2001:db8:1:2:bbbb::2", "", 0)
    assert address("::ffff:203.0.113.5", "", 0) == "203.0.113.5"


def test_a_suspended_key_ends_the_session(
    signed_in: FlaskClient, acme: Org, database: Database
) -> None:
    service_store.set_key_status(database, acme.admin_key_id, "suspended", iso(START))
    response = signed_in.get("/settings/users")
    assert response.location == "/settings/sign-in"
    assert "You were signed out: This API key is suspended." in source(
        signed_in.get(response.location)
    )
    assert signed_in.get("/settings/users").status_code == 303  # stays signed out


def test_a_value_rotated_out_ends_the_session(
    signed_in: FlaskClient, acme: Org, clock: Clock
) -> None:
    response = submit(
        signed_in, "/settings/keys", "/settings/keys/update",
        email=acme.admin_email, action="rotate", grace_seconds="3600",
    )  # fmt: skip
    assert response.status_code == 200
    fresh = new_value(response)
    clock.advance(3599)
    assert signed_in.get("/settings/keys").status_code == 200  # the grace period
    clock.advance(2)
    assert signed_in.get("/settings/keys").location == "/settings/sign-in"
    assert sign_in(signed_in, fresh).status_code == 303  # the new value signs in


# --- CSRF and headers ------------------------------------------------------------------------


def test_a_form_without_its_csrf_token_is_refused(
    signed_in: FlaskClient, acme: Org, database: Database
) -> None:
    before = actions(database, acme)
    for data in ({"email": "x@acme.example.org"},
                 {"email": "x@acme.example.org", "csrf_token": "forged"}):  # fmt: skip
        response = signed_in.post("/settings/keys", data=data)
        assert response.status_code == 400
        assert "security token is missing or out of date" in source(response)
        assert response.headers["Content-Security-Policy"] == CSP
    assert store_keys(database, acme) == [acme.admin_email]
    assert actions(database, acme) == before
    other = sign_in(signed_in.application.test_client(), acme.admin_key)
    assert other.status_code == 303  # a token is per session: another client's is no use here


def store_keys(database: Database, org: Org) -> list[str]:
    return [k["email"] for k in service_store.keys_of(database, org.id)]


def test_the_api_and_webhooks_take_no_csrf_token(
    client: FlaskClient, acme: Org, database: Database
) -> None:
    response = client.post(
        "/signals/v1/key/createsignalapikey",
        json={"email": "api@acme.example.org"},
        headers={"Api-Key": acme.admin_key},
    )
    assert response.status_code == 200
    assert "Content-Security-Policy" not in response.headers
    assert "Set-Cookie" not in response.headers
    hook = client.post("/hooks/unknown/events", data=b"{}", content_type="application/json")
    assert hook.status_code == 404 and hook.get_json()["error"]["code"] == "not_found"


def test_an_unknown_settings_url_answers_the_settings_404_signed_in_or_not(
    client: FlaskClient, acme: Org
) -> None:
    """The settings page's own 404 (405 where the URL takes other methods), with its headers:
    it needs no sign-in or CSRF token and shows nothing of any organization."""
    signed_out = client.application.test_client()
    sign_in(client, acme.admin_key)
    client.get("/settings/keys")  # takes the sign-in's message
    for browser in (client, signed_out):
        missing = [browser.get("/settings/no-such-page"), browser.post("/settings/a/b?c=d")]
        for response in missing:
            assert response.status_code == 404 and response.mimetype == "text/html"
            assert "There is no such settings page." in source(response)
            assert acme.admin_email not in source(response) and "Acme" not in source(response)
            assert "Sign out" not in source(response)
            assert response.headers["Content-Security-Policy"] == CSP
            assert response.headers["Cache-Control"] == "no-store"
        wrong = [browser.get("/settings/keys/update"), browser.put("/settings/keys")]
        for response, allowed in zip(wrong, ({"POST"}, {"GET", "HEAD", "POST"}), strict=True):
            assert response.status_code == 405 and response.mimetype == "text/html"
            assert set(response.headers["Allow"].split(", ")) == allowed
            assert response.headers["Content-Security-Policy"] == CSP
    bare = signed_out.get("/settings")
    assert (bare.status_code, bare.location) == (303, "/settings/sign-in")
    assert bare.headers["Content-Security-Policy"] == CSP


def test_no_settings_code_runs_for_a_request_outside_settings(connector_app: Flask) -> None:
    """The settings page adds no app-wide hook: a webhook or an API call runs none of it."""
    client = connector_app.test_client()
    outside = [
        lambda: client.get("/healthz"),
        lambda: client.post("/v7/enrich", json={"conEmail": "a@example.com"}),
        lambda: client.post("/hooks/unknown/events", data=b"{}", content_type="application/json"),
    ]
    for request_ in outside:
        response, called = settings_code_called(request_)
        assert response.status_code in (200, 401, 404)
        assert called == set(), response.request.path
    response, called = settings_code_called(lambda: client.get("/settings/sign-in"))
    assert response.status_code == 200 and "sign_in" in called  # the tracer sees it


def settings_code_called(send: Callable[[], TestResponse]) -> tuple[TestResponse, set[str]]:
    """What `send` answered, and the functions of connector/views/settings.py it called."""
    called: set[str] = set()

    def profile(frame: FrameType, event: str, arg: object) -> None:
        code = frame.f_code
        here = event == "call" and code.co_filename == settings.__file__
        if here and code.co_name != "<module>":
            called.add(code.co_name)

    sys.setprofile(profile)
    try:
        response = send()
    finally:
        sys.setprofile(None)
    return response, called


def test_every_settings_response_carries_the_headers(signed_in: FlaskClient) -> None:
    responses = [signed_in.get(f"/settings/{page}") for page in PAGES]
    responses += [signed_in.get("/settings/sign-in"), signed_in.get("/settings/no-such-page")]
    responses += [signed_in.get("/settings/keys/update")]  # 405
    for response in responses:
        assert response.headers["Content-Security-Policy"] == CSP
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["Referrer-Policy"] == "no-referrer"
        assert response.headers["Cache-Control"] == "no-store"
    assert responses[-2].status_code == 404 and responses[-1].status_code == 405
    for name in ("settings.css", "settings.js"):
        static = signed_in.get(f"/settings/static/{name}")
        assert static.status_code == 200
        assert static.headers["X-Content-Type-Options"] == "nosniff"
        static.close()


def test_pages_have_no_inline_script_style_or_handler(
    signed_in: FlaskClient, app: Flask, linked: dict[str, Any]
) -> None:
    pages = [signed_in.get(f"/settings/{page}") for page in PAGES]
    pages.append(app.test_client().get("/settings/sign-in"))
    for page, response in zip((*PAGES, "sign-in"), pages, strict=True):
        assert response.status_code == 200, page
        markup = source(response)
        assert not re.search(r"<script(?![^>]*\ssrc=)", markup), page
        assert not re.search(r"<style|\sstyle=", markup), page
        assert not re.search(r"\son[a-z]+=", markup), page


def test_every_control_has_a_label(signed_in: FlaskClient, linked: dict[str, Any]) -> None:
    for page in PAGES:
        markup = source(signed_in.get(f"/settings/{page}"))
        labelled = set(re.findall(r'<label for="([^"]+)"', markup))
        controls = re.findall(r"<(?:input|select)\b([^>]*)>", markup)
        for attributes in controls:
            if 'type="hidden"' in attributes:
                continue
            found = re.search(r'id="([^"]+)"', attributes)
            assert found and found.group(1) in labelled, (page, attributes)


# --- keys ------------------------------------------------------------------------------------


def test_create_a_key_shows_its_value_once(
    signed_in: FlaskClient, acme: Org, database: Database
) -> None:
    response = submit(signed_in, "/settings/keys", "/settings/keys", email="Dev@Acme.example.org")
    assert response.status_code == 200
    value = new_value(response)
    assert "Copy it now" in source(response) and 'data-copy="new-key-value"' in source(response)
    assert auth.authenticate(database, SECRET.encode(), value, START).email == (
        "dev@acme.example.org"
    )
    listed = source(signed_in.get("/settings/keys"))
    assert value not in listed and keys.mask(value) in listed
    entry = audit.entries(database, acme.id)[-1]
    assert (entry["action"], entry["target"]) == ("key.create", "dev@acme.example.org")
    assert entry["actor"] == f"key {acme.admin_key_id} ({acme.admin_email})"
    assert value not in json.dumps(audit.entries(database, acme.id))


def test_a_refused_action_says_why(signed_in: FlaskClient, acme: Org) -> None:
    submit(signed_in, "/settings/keys", "/settings/keys", email="dev@acme.example.org")
    again = submit(signed_in, "/settings/keys", "/settings/keys", email="dev@acme.example.org")
    assert again.location == "/settings/keys"
    page = source(signed_in.get("/settings/keys"))
    assert "A key for dev@acme.example.org already exists in this organization." in page
    bad = submit(signed_in, "/settings/keys", "/settings/keys", email="not an address")
    assert "email must be an e-mail address" in source(signed_in.get(bad.location))
    last = submit(
        signed_in,
        "/settings/keys",
        "/settings/keys/update",
        email=acme.admin_email,
        action="suspend",
    )
    assert "last active admin key cannot be suspended" in source(signed_in.get(last.location))


def test_suspend_and_reactivate_a_key(
    signed_in: FlaskClient, acme: Org, database: Database
) -> None:
    value, key_id = accounts_key(database, acme, "dev@acme.example.org")
    response = submit(
        signed_in, "/settings/keys", "/settings/keys/update",
        email="dev@acme.example.org", action="suspend",
    )  # fmt: skip
    assert response.location == "/settings/keys"
    assert "The key of dev@acme.example.org is suspended." in source(
        signed_in.get("/settings/keys")
    )
    with pytest.raises(ServiceError, match="suspended"):
        auth.authenticate(database, SECRET.encode(), value, START)
    submit(signed_in, "/settings/keys", "/settings/keys/update",
           email="dev@acme.example.org", action="activate")  # fmt: skip
    assert auth.authenticate(database, SECRET.encode(), value, START).key_id == key_id
    assert actions(database, acme)[-2:] == [
        ("key.suspend", "dev@acme.example.org"),
        ("key.activate", "dev@acme.example.org"),
    ]


def test_rotate_a_key_with_a_chosen_grace_period(
    signed_in: FlaskClient, acme: Org, database: Database, clock: Clock
) -> None:
    old, _ = accounts_key(database, acme, "dev@acme.example.org")
    response = submit(
        signed_in, "/settings/keys", "/settings/keys/update",
        email="dev@acme.example.org", action="rotate", grace_seconds="3600",
    )  # fmt: skip
    fresh = new_value(response)
    assert fresh != old and "the previous value works until 2026-03-02T10:30:00.000+00:00" in (
        source(response)
    )
    later = START + timedelta(seconds=3601)
    assert auth.authenticate(database, SECRET.encode(), fresh, later)
    with pytest.raises(ServiceError):
        auth.authenticate(database, SECRET.encode(), old, later)
    entry = audit.entries(database, acme.id)[-1]
    assert (entry["action"], json.loads(entry["detail"])) == ("key.rotate", {"graceSeconds": 3600})
    assert fresh not in source(signed_in.get("/settings/keys"))


# --- users -----------------------------------------------------------------------------------


def test_users_created_suspended_reactivated_and_deleted_after_confirmation(
    signed_in: FlaskClient, acme: Org, database: Database
) -> None:
    email = "udi@acme.example.org"
    response = submit(signed_in, "/settings/users", "/settings/users", email=email)
    value = new_value(response)
    assert auth.authenticate(database, SECRET.encode(), value, START).email == email

    def status() -> str:
        user = service_store.user_by_email(database, acme.id, email)
        assert user is not None
        return str(user["status"])

    submit(signed_in, "/settings/users", "/settings/users/update", email=email, action="suspend")
    assert status() == "suspend"
    submit(signed_in, "/settings/users", "/settings/users/update", email=email, action="active")
    assert status() == "active"

    confirm = signed_in.get("/settings/users/delete", query_string={"email": email})
    assert confirm.status_code == 200 and "This cannot be undone" in source(confirm)
    assert status() == "active"  # asking changes nothing
    done = signed_in.post(
        "/settings/users/delete", data={"email": email, "csrf_token": token(confirm)}
    )
    assert done.location == "/settings/users"
    assert status() == "deleted"
    assert f"The user {email} is deleted" in source(signed_in.get("/settings/users"))
    with pytest.raises(ServiceError, match="deleted"):
        auth.authenticate(database, SECRET.encode(), value, START)
    assert [a for a, target in actions(database, acme) if target == email] == [
        "user.create", "user.suspend", "user.active", "user.delete",
    ]  # fmt: skip


def test_another_organizations_user_is_not_found(
    signed_in: FlaskClient, globex: Org, database: Database
) -> None:
    confirm = signed_in.get("/settings/users/delete", query_string={"email": globex.admin_email})
    assert confirm.location == "/settings/users"
    assert f"No user {globex.admin_email} in this organization." in source(
        signed_in.get("/settings/users")
    )


def test_an_inactive_organization_may_look_but_not_change(
    signed_in: FlaskClient, acme: Org, database: Database
) -> None:
    accounts.set_status(database, acme.id, "inactive", START)
    for page in PAGES:
        assert signed_in.get(f"/settings/{page}").status_code == 200
    response = submit(signed_in, "/settings/keys", "/settings/keys", email="dev@acme.example.org")
    assert "The organization Acme is inactive." in source(signed_in.get(response.location))
    assert store_keys(database, acme) == [acme.admin_email]


# --- connections and deliveries --------------------------------------------------------------


@pytest.fixture
def linked(database: Database, acme: Org, globex: Org) -> dict[str, Any]:
    """Acme's HubSpot and Zapier connections, and Globex's HubSpot one."""
    crm = {"crm_base_url": "http://127.0.0.1:9", "crm_token": "crm-token-1234"}

    def add(org: Org, name: str, platform: str, **extra: Any) -> dict[str, Any]:
        return connections.add(
            database, SECRET.encode(), START, name=name, platform=platform,
            api_key=org.admin_key, **extra,
        ).row  # fmt: skip

    return {
        "hubspot": add(acme, "Acme HubSpot", "hubspot", secret="hubspot-app-secret", **crm),
        "zapier": add(acme, "Acme Zap", "zapier"),
        "globex": add(globex, "Globex HubSpot", "hubspot", secret="other-secret", **crm),
    }


def test_connections_show_urls_and_mapping(signed_in: FlaskClient, linked: dict[str, Any]) -> None:
    page = source(signed_in.get("/settings/connections"))
    hubspot = linked["hubspot"]
    assert f"http://127.0.0.1:8080/hooks/{hubspot['id']}/enrich" in page
    assert f"http://127.0.0.1:8080/hooks/{hubspot['id']}/events" in page
    mapping = mappings.load(hubspot["mapping"])
    assert (
        f"platform HubSpot, {len(mapping.input)} input fields, "
        f"{len(mapping.output)} output properties"
    ) in " ".join(page.split())
    assert "valid" in page and "Send test event" in page
    assert "Globex" not in page and linked["globex"]["id"] not in page
    assert "hubspot-app-secret" not in page and "crm-token-1234" not in page


def test_a_broken_mapping_is_reported(
    signed_in: FlaskClient, linked: dict[str, Any], database: Database, tmp_path: Path
) -> None:
    broken = tmp_path / "hubspot.yaml"
    broken.write_text("platform: hubspot\ninput: {}\n")
    database.execute(
        "UPDATE connections SET mapping = ? WHERE id = ?", [str(broken), linked["hubspot"]["id"]]
    )
    page = source(signed_in.get("/settings/connections"))
    assert "The mapping file hubspot.yaml is not valid" in page
    assert f"{broken}, line" in page


def test_send_test_event_stores_an_event_the_mapping_reads(
    signed_in: FlaskClient, acme: Org, linked: dict[str, Any], database: Database
) -> None:
    hubspot = linked["hubspot"]
    response = submit(
        signed_in, "/settings/connections", f"/settings/connections/{hubspot['id']}/test-event"
    )
    assert response.location == "/settings/deliveries"
    (event,) = store.events_of(database, hubspot["id"])
    assert event["status"] == "pending" and event["record_id"].startswith("settings-test-")
    payload = json.loads(event["payload"])
    mapping = mappings.load(hubspot["mapping"])
    assert mapping.record_id(payload) == event["record_id"]
    assert mapping.enrich_input(payload)["conEmail"] == "test.contact@example.com"
    deliveries = source(signed_in.get(response.location))
    assert "Test event stored for Acme HubSpot" in deliveries and event["record_id"] in deliveries
    assert actions(database, acme)[-1] == ("connection.test_event", "Acme HubSpot")

    zap = submit(signed_in, "/settings/connections",
                 f"/settings/connections/{linked['zapier']['id']}/test-event")  # fmt: skip
    assert "which takes no events" in source(signed_in.get(zap.location))
    other = submit(signed_in, "/settings/connections",
                   f"/settings/connections/{linked['globex']['id']}/test-event")  # fmt: skip
    assert other.status_code == 404  # another organization's connection: the page's 404
    assert store.events_of(database, linked["globex"]["id"]) == []


@pytest.mark.parametrize("platform", [p for p, kind in PLATFORMS.items() if kind.crm])
def test_every_crm_mapping_reads_the_synthetic_event(platform: str) -> None:
    mapping = mappings.load(connections.MAPPINGS / f"{platform}.yaml")
    row = settings.synthetic_event({"id": "c1"}, mapping, "2026-03-02T09:30:00.000+00:00")
    payload = json.loads(row["payload"])
    assert mapping.record_id(payload) == row["record_id"]
    given = mapping.enrich_input(payload)
    if "conEmail" in mapping.input:
        assert given["conEmail"] == "test.contact@example.com"


def add_event(
    database: Database, link: dict[str, Any], key: str, status: str, error: str,
    received: str = "2026-03-02T09:00:00.000+00:00", written: dict[str, Any] | None = None,
) -> int:  # fmt: skip
    store.add_events(
        database,
        [{"connection_id": link["id"], "event_key": key, "record_id": f"r-{key}",
          "payload": "{}", "thin": 0, "received_at": received}],
    )  # fmt: skip
    event_id = store.events_of(database, link["id"])[-1]["id"]
    if status != "pending":
        store.finish_event(database, event_id, status, error, written)
    return int(event_id)


def test_deliveries_list_and_retry_a_dead_letter(
    signed_in: FlaskClient, acme: Org, linked: dict[str, Any], database: Database
) -> None:
    dead = add_event(database, linked["hubspot"], "e1", "dead", "HubSpot answered 404")
    done = add_event(database, linked["hubspot"], "e2", "done", "")
    theirs = add_event(database, linked["globex"], "e3", "dead", "Globex's secret trouble")
    page = source(signed_in.get("/settings/deliveries"))
    assert "HubSpot answered 404" in page and "dead letter" in page and "r-e2" in page
    assert "Globex" not in page and "r-e3" not in page
    filtered = signed_in.get("/settings/deliveries?status=dead")
    assert (
        filtered.status_code == 200
        and "r-e1" in source(filtered)
        and "r-e2" not in source(filtered)
    )

    response = submit(signed_in, "/settings/deliveries", f"/settings/deliveries/{dead}/retry")
    assert f"Event {dead} is due again" in source(signed_in.get(response.location))
    event = store.event(database, dead)
    assert event is not None
    assert (event["status"], event["last_error"], event["due_at"]) == (
        "pending", "", "2026-03-02T09:30:00.000+00:00",
    )  # fmt: skip
    assert actions(database, acme)[-1] == ("delivery.retry", f"event {dead}")

    again = submit(signed_in, "/settings/deliveries", f"/settings/deliveries/{done}/retry")
    assert "only a dead letter can be retried" in source(signed_in.get(again.location))
    other = submit(signed_in, "/settings/deliveries", f"/settings/deliveries/{theirs}/retry")
    assert f"No event {theirs} in this organization." in source(signed_in.get(other.location))
    assert store.event(database, theirs)["status"] == "dead"  # type: ignore[index]


def test_an_event_id_past_sqlites_range_is_not_found(signed_in: FlaskClient) -> None:
    for event_id in (2**63, 10**30):
        path = f"/settings/deliveries/{event_id}/retry"
        response = submit(signed_in, "/settings/deliveries", path)
        assert response.status_code == 404
        assert "There is no such settings page." in source(response)
        assert response.headers["Content-Security-Policy"] == CSP
    largest = submit(signed_in, "/settings/deliveries", f"/settings/deliveries/{2**63 - 1}/retry")
    assert f"No event {2**63 - 1} in this organization." in source(signed_in.get(largest.location))


def test_deliveries_filter_by_connection_outcome_and_day(
    signed_in: FlaskClient, linked: dict[str, Any], database: Database
) -> None:
    add_event(database, linked["hubspot"], "e1", "dead", "HubSpot answered 404",
              received="2026-02-27T23:59:00.000+00:00")  # fmt: skip
    add_event(database, linked["hubspot"], "e2", "done", "")
    add_event(database, linked["zapier"], "e3", "pending", "")

    def shown(query: str) -> set[str]:
        return set(re.findall(r"<code>(r-e\d)</code>", source(signed_in.get(query))))

    hubspot, zapier = linked["hubspot"]["id"], linked["zapier"]["id"]
    assert shown("/settings/deliveries") == {"r-e1", "r-e2", "r-e3"}
    assert shown(f"/settings/deliveries?connection={hubspot}") == {"r-e1", "r-e2"}
    assert shown(f"/settings/deliveries?connection={zapier}&status=pending") == {"r-e3"}
    assert shown("/settings/deliveries?status=done") == {"r-e2"}
    assert shown("/settings/deliveries?to=2026-02-27") == {"r-e1"}  # the day is included
    assert shown("/settings/deliveries?from=2026-02-28") == {"r-e2", "r-e3"}
    assert shown("/settings/deliveries?from=2026-03-03") == set()
    other = linked["globex"]["id"]  # another organization's connection is no choice
    for query in (f"connection={other}", "status=lost", "from=yesterday", "before=x"):
        refused = signed_in.get(f"/settings/deliveries?{query}")
        assert refused.status_code == 303, query
        assert "message-error" in source(signed_in.get(refused.location)), query


def test_deliveries_show_one_backfills_events_or_only_the_platforms(
    signed_in: FlaskClient, linked: dict[str, Any], database: Database
) -> None:
    hubspot = linked["hubspot"]
    stamp = iso(START)
    runs = [
        store.start_backfill(database, {"connection_id": hubspot["id"], "kind": "contacts",
                                        "started_at": stamp, "updated_at": stamp})["id"]
        for _ in range(2)
    ]  # fmt: skip
    add_event(database, hubspot, "live", "done", "")
    for run in runs:
        add_event(database, hubspot, f"backfill:{run}:contacts:b{run}", "pending", "")
    database.execute("UPDATE events SET priority = 1 WHERE event_key LIKE 'backfill:%'")
    page = source(signed_in.get("/settings/deliveries"))
    assert f'<option value="backfill:{runs[0]}">backfill {runs[0]} of Acme HubSpot contacts' in page

    def shown(query: str) -> set[str]:
        found = re.findall(r"<code>(r-[^<]+)</code>", source(signed_in.get(query)))
        return {record.rsplit(":", 1)[-1] for record in found}

    assert shown(f"/settings/deliveries?source=backfill:{runs[1]}") == {f"b{runs[1]}"}
    assert shown("/settings/deliveries?source=live") == {"r-live"}
    refused = signed_in.get("/settings/deliveries?source=backfill:999")
    assert "message-error" in source(signed_in.get(refused.location))


def test_deliveries_page_past_fifty_without_moving_when_events_arrive(
    signed_in: FlaskClient, linked: dict[str, Any], database: Database
) -> None:
    ids = [add_event(database, linked["hubspot"], f"p{n}", "done", "") for n in range(60)]
    first = source(signed_in.get("/settings/deliveries"))
    assert first.count('<th scope="row">Event ') == 50 and f"Event {ids[-1]}<" in first
    older = re.search(r'href="(/settings/deliveries\?before=(\d+))">Older events', first)
    assert older and int(older.group(2)) == ids[10]
    add_event(database, linked["hubspot"], "late", "pending", "")  # arrives meanwhile
    second = source(signed_in.get(older.group(1)))
    rows = [int(n) for n in re.findall(r'<th scope="row">Event (\d+)<', second)]
    assert rows == ids[9::-1] and "Older events" not in second and ">Newest</a>" in second


def test_a_finished_event_shows_what_it_wrote_in_local_time_with_utc_on_hover(
    signed_in: FlaskClient, linked: dict[str, Any], database: Database
) -> None:
    wrote = {"jobtitle": "Head of Data", "company": "Acme Inc"}
    written = add_event(database, linked["hubspot"], "w1", "done", "phone: read-only in HubSpot",
                        written=wrote)  # fmt: skip
    add_event(database, linked["hubspot"], "w2", "done", "")  # nothing new to write
    store.save_record(  # the record holds more of ours, from an earlier event
        database,
        {"connection_id": linked["hubspot"]["id"], "kind": "contacts", "record_id": "r-w1",
         "transaction_id": "t-1", "input_fingerprint": "f", "enriched_at": iso(START),
         "written": json.dumps({**wrote, "city": "Austin"})},
    )  # fmt: skip
    page = source(signed_in.get("/settings/deliveries"))
    row = page[page.index(f"Event {written}<") :]
    assert "<dt>jobtitle</dt><dd>Head of Data</dd>" in row
    assert "<dt>company</dt><dd>Acme Inc</dd>" in row
    assert "Austin" not in row  # not this event's
    assert "Note: phone: read-only in HubSpot" in row
    assert "Nothing written: the record already held these values" in page
    moment = '<time datetime="2026-03-02T09:00:00.000+00:00" title="2026-03-02 09:00:00 UTC">'
    assert moment + "2026-03-02 09:00 UTC</time>" in page


CONNECTOR = Path(settings.__file__).parents[1]
# Every number a settings form posts: (the page the form is on, its action, the field, the
# form's other fields), with {hubspot} and {zapier} for the connections' ids.
NUMERIC_FIELDS = (
    ("/settings/connections", "/settings/connections", "refresh_days",
     {"name": "Numbers", "platform": "make"}),
    ("/settings/connections/{hubspot}", "/settings/connections/{hubspot}/edit", "refresh_days",
     {"name": "Acme HubSpot"}),
    ("/settings/connections/{zapier}", "/settings/connections/{zapier}/rotate-secret",
     "grace_seconds", {}),
    ("/settings/schedules", "/settings/schedules/connections/{hubspot}", "refresh_days", {}),
    ("/settings/schedules", "/settings/schedules/jobs/reenrich", "every_days", {"at": "02:00"}),
    ("/settings/keys", "/settings/keys/update", "grace_seconds", {"action": "rotate"}),
    ("/settings/connections/{hubspot}/backfill",
     "/settings/connections/{hubspot}/backfill/start", "credit_cap", {"kind": "contacts"}),
    ("/settings/connections/{hubspot}/backfill",
     "/settings/connections/{hubspot}/backfill/resume", "credit_cap", {"kind": "contacts"}),
    ("/settings/connections/{hubspot}/mapping",
     "/settings/connections/{hubspot}/mapping/restore?kind=contacts", "version", {}),
    ("/settings/connections/{hubspot}/mapping",
     "/settings/connections/{hubspot}/mapping?kind=contacts", "add", {"action": "add"}),
    ("/settings/connections/{hubspot}", "/settings/connections/{hubspot}/signals",
     "change_credit_cap", {"actions-contacts": "mark"}),
)  # fmt: skip


def test_the_numeric_fields_walked_are_every_one_the_pages_have() -> None:
    templates = " ".join(p.read_text() for p in (CONNECTOR / "templates").rglob("*.html"))
    views = " ".join(p.read_text() for p in (CONNECTOR / "views").glob("*.py"))
    found = set(re.findall(r'name="(\w+)" type="number"', templates))
    found |= set(re.findall(r'integer\("(\w+)"', views))
    assert found == {field for _, _, field, _ in NUMERIC_FIELDS}


@pytest.mark.parametrize("number", [2**63, -1, 10**30, store.LARGEST_ID])
def test_every_numeric_field_refuses_numbers_past_the_stores_range_with_a_message(
    signed_in: FlaskClient, acme: Org, linked: dict[str, Any], database: Database, number: int
) -> None:  # fmt: skip
    ids = {"hubspot": linked["hubspot"]["id"], "zapier": linked["zapier"]["id"]}
    before = store.connection(database, ids["hubspot"])
    for page, path, field, others in NUMERIC_FIELDS:
        form = {**others, field: str(number), "email": acme.admin_email}
        response = submit(signed_in, page.format(**ids), path.format(**ids), **form)
        assert response.status_code in (200, 303, 400), (path, field)
        if number != store.LARGEST_ID:  # the largest may be taken (a credit cap)
            assert "message-error" in source(signed_in.get(response.location)), (path, field)
    if number != store.LARGEST_ID:
        assert store.connection(database, ids["hubspot"]) == before
        assert not store.backfills_of(database, ids["hubspot"])


# --- usage -----------------------------------------------------------------------------------


def add_transaction(database: Database, org: Org, moment: datetime, credits: int) -> None:
    service_store.save_transaction(
        database,
        {"id": f"t-{moment.isoformat()}-{credits}", "org_id": org.id, "key_id": org.admin_key_id,
         "endpoint": "/v7/enrich", "record_status": "Active", "credits": credits,
         "created_at": iso(moment)},
    )  # fmt: skip


def test_usage_shows_credits_todays_requests_and_thirty_days(
    signed_in: FlaskClient, app: Flask, acme: Org, database: Database
) -> None:
    add_transaction(database, acme, START - timedelta(days=3), 1)
    add_transaction(database, acme, START - timedelta(days=3), 0)
    add_transaction(database, acme, START - timedelta(days=40), 1)  # outside the chart
    for _ in range(3):  # three requests counted by the daily limit
        signed_in.post("/signals/v1/key/view", json={}, headers={"Api-Key": acme.admin_key})
    found = usage.usage(database, app.extensions["limiter"], auth_caller(database, acme), START)
    assert (found.credits, found.today, found.daily_limit) == (1000, 3, 500)
    assert len(found.days) == 30 and found.days[-1].day == "2026-03-02"
    assert found.days[-4] == usage.Day("2026-02-27", 2, 1)
    assert sum(day.calls for day in found.days) == 2

    page = source(signed_in.get("/settings/usage"))
    assert "1,000" in page and '3 <span class="muted">of 500</span>' in page
    assert 'max="500" value="3"' in page
    assert page.count('<rect class="bar"') == 30
    assert "2026-02-27: 2 calls, 1 credits" in page


def test_the_headline_counts_what_the_chart_counts_and_says_who_made_the_calls(
    signed_in: FlaskClient, acme: Org, database: Database, linked: dict[str, Any]
) -> None:
    """Today's headline is the chart's last bar (enrich calls however made); the daily
    limit's figure is named apart: it counts API requests, which a connection's calls are not."""
    hubspot = linked["hubspot"]
    for n, endpoint in enumerate([f"/hooks/{hubspot['id']}/events"] * 3 + ["/v7/enrich"]):
        service_store.save_transaction(
            database,
            {"id": f"t-today-{n}", "org_id": acme.id, "key_id": acme.admin_key_id,
             "endpoint": endpoint, "record_status": "Active", "credits": 1,
             "created_at": iso(START - timedelta(minutes=n))},
        )  # fmt: skip
    add_event(database, hubspot, "u1", "done", "")
    add_event(database, hubspot, "u2", "dead", "HubSpot answered 404")
    page = text(signed_in.get("/settings/usage"))
    assert "Enrich calls today (UTC) 4 Every enrichment" in page
    assert "2026-03-02: 4 calls, 4 credits" in source(signed_in.get("/settings/usage"))
    assert "API requests today against the daily limit 0 of 500" in page
    assert "Acme HubSpot: its records' events 3 3" in page and "The API: /v7/enrich 1 1" in page
    assert "Acme HubSpot contacts 2 1 1 0" in page


def test_usage_names_each_source_of_calls() -> None:
    names = {"c1": "Acme HubSpot"}
    assert settings.source_name("/hooks/c1/events", names) == "Acme HubSpot: its records' events"
    assert settings.source_name("/settings/connections/c1/preview", names) == (
        "Acme HubSpot: previews"
    )
    assert settings.source_name("/hooks/gone/events", names).startswith("A removed connection")
    assert settings.source_name("/v7/enrich", names) == "The API: /v7/enrich"


def auth_caller(database: Database, org: Org) -> auth.Caller:
    return auth.authenticate(database, SECRET.encode(), org.admin_key, START)


def test_the_chart_scales_to_the_busiest_day() -> None:
    days = [usage.Day(f"2026-03-0{n}", calls, 0) for n, calls in ((1, 0), (2, 5), (3, 10))]
    drawn = settings.chart(days, width=300, height=100)
    assert [bar["height"] for bar in drawn["bars"]] == [0, 50.0, 100.0]
    assert [bar["y"] for bar in drawn["bars"]] == [100, 50.0, 0.0]
    assert settings.chart([usage.Day("2026-03-01", 0, 0)])["bars"][0]["height"] == 0


# --- schedules -------------------------------------------------------------------------------


def test_schedules_are_in_words_and_only_the_operator_changes_them_for_several_organizations(
    signed_in: FlaskClient, db_path: Path, globex: Org
) -> None:
    """The jobs run for every organization: where there are several, one organization's admin
    sees them in words, and only the operator (`contactdata jobs reschedule`) changes them."""
    page = source(signed_in.get("/settings/schedules"))
    for job in scheduler.status(db_path):
        assert job["name"] in page and job["runs"] in page and job["trigger"] not in page
    assert "every day at 02:00 UTC" in page and "every minute" in page
    assert 'name="every_days"' not in page and "contactdata jobs reschedule" in page
    # a run's result names every organization's connections: only its outcome is shown
    run = {"job_id": "renew_subscriptions", "started_at": "2026-11-23T12:00:00.000+00:00",
           "finished_at": "2026-11-23T12:00:01.000+00:00", "ok": 0,
           "result": "failed: zoho channel of another-organizations-connection: 401"}  # fmt: skip
    with server.write(store.connect(db_path)) as db:
        store.record_job_run(db, run)
    page = source(signed_in.get("/settings/schedules"))
    assert "another-organizations-connection" not in page and "failed" in page
    before = scheduler.status(db_path)
    refused = submit(
        signed_in, "/settings/schedules", "/settings/schedules/jobs/purge_deliveries",
        every_days="2", at="04:30",
    )  # fmt: skip
    assert "its operator changes them" in source(signed_in.get(refused.location))
    assert scheduler.status(db_path) == before


def test_the_admin_of_the_only_organization_runs_a_daily_job_every_n_days_at_a_time(
    signed_in: FlaskClient, acme: Org, db_path: Path, database: Database
) -> None:
    page = source(signed_in.get("/settings/schedules"))
    assert 'action="/settings/schedules/jobs/reenrich"' in page
    assert 'action="/settings/schedules/jobs/retry_deliveries"' not in page  # every minute
    response = submit(
        signed_in, "/settings/schedules", "/settings/schedules/jobs/reenrich",
        every_days="3", at="04:30",
    )  # fmt: skip
    done = source(signed_in.get(response.location))
    assert "Re-enrich stale records now runs every 3 days at 04:30 UTC" in done
    job = next(job for job in scheduler.status(db_path) if job["id"] == "reenrich")
    assert job["runs"] == "every 3 days at 04:30 UTC" and job["next_run"][10:] == (
        "T04:30:00.000+00:00"
    )
    assert 'value="3"' in done and 'value="04:30"' in done
    assert f'<dt>Next run</dt><dd><time datetime="{job["next_run"]}"' in done
    assert actions(database, acme)[-1] == ("schedule.change", "Re-enrich stale records")
    for form, message in (({"every_days": "0", "at": "04:30"}, "every 1 to 365 days"),
                          ({"every_days": "2", "at": "25:00"}, "HH:MM")):  # fmt: skip
        refused = submit(signed_in, "/settings/schedules", "/settings/schedules/jobs/reenrich",
                         **form)  # fmt: skip
        assert message in source(signed_in.get(refused.location))
    unknown = submit(signed_in, "/settings/schedules", "/settings/schedules/jobs/retry_deliveries",
                     every_days="1", at="01:00")  # fmt: skip
    assert unknown.status_code == 404


def test_change_a_connections_refresh_interval(
    signed_in: FlaskClient, acme: Org, linked: dict[str, Any], database: Database
) -> None:
    hubspot = linked["hubspot"]
    page = source(signed_in.get("/settings/schedules"))
    assert "Acme HubSpot" in page and "Acme Zap" not in page and "Globex" not in page
    path = f"/settings/schedules/connections/{hubspot['id']}"
    response = submit(signed_in, "/settings/schedules", path, refresh_days="7")
    assert "Acme HubSpot now refreshes records enriched over 7 days ago." in source(
        signed_in.get(response.location)
    )
    assert store.connection(database, hubspot["id"])["refresh_days"] == 7  # type: ignore[index]
    entry = audit.entries(database, acme.id)[-1]
    assert (entry["action"], json.loads(entry["detail"])) == (
        "connection.refresh_days", {"refreshDays": 7},
    )  # fmt: skip
    submit(signed_in, "/settings/schedules", path, refresh_days="0")
    theirs = f"/settings/schedules/connections/{linked['globex']['id']}"
    submit(signed_in, "/settings/schedules", theirs, refresh_days="5")
    assert store.connection(database, hubspot["id"])["refresh_days"] == 7  # type: ignore[index]
    assert store.connection(database, linked["globex"]["id"])["refresh_days"] == 30  # type: ignore[index]


def test_huge_or_non_integer_form_numbers_get_the_usual_message(
    signed_in: FlaskClient, acme: Org, linked: dict[str, Any], database: Database
) -> None:
    path = f"/settings/schedules/connections/{linked['hubspot']['id']}"
    for days, message in (
        (str(2**63), "The refresh interval must be 1 to 3650 days."),
        ("9" * 5000, "The refresh interval must be a whole number."),
        ("7 days", "The refresh interval must be a whole number."),
    ):
        response = submit(signed_in, "/settings/schedules", path, refresh_days=days)
        assert message in source(signed_in.get(response.location))
    assert store.connection(database, linked["hubspot"]["id"])["refresh_days"] == 30  # type: ignore[index]
    for grace, message in ((str(2**63), "graceSeconds must be between"),
                           ("1e9", "The grace period must be a whole number.")):  # fmt: skip
        response = submit(
            signed_in, "/settings/keys", "/settings/keys/update",
            email=acme.admin_email, action="rotate", grace_seconds=grace,
        )  # fmt: skip
        assert message in source(signed_in.get(response.location))
    assert not [action for action, _ in actions(database, acme) if action == "key.rotate"]


# --- audit log, credits, do not enrich -------------------------------------------------------


def test_the_audit_log_filters_by_action_actor_and_day_and_pages(
    signed_in: FlaskClient, acme: Org, globex: Org, database: Database
) -> None:
    def log(org: Org, action: str, actor: str, moment: datetime) -> None:
        with server.write(database):
            audit.record(database, moment, org_id=org.id, actor=actor, action=action,
                         target="t", detail={"refreshDays": 7})  # fmt: skip

    log(acme, "connection.edit", "key k1 (ann@acme.example.org)", START - timedelta(days=2))
    log(acme, "delivery.retry", "key k2 (bob@acme.example.org)", START)
    log(globex, "key.create", "key k9 (eve@globex.example.org)", START)

    def shown(query: str) -> list[str]:
        page = source(signed_in.get(f"/settings/audit{query}"))
        return re.findall(r"<code>([a-z_.]+)</code>", page)

    everything = shown("")
    # newest first, Acme's creation last; Globex's key is not Acme's to see
    assert everything == ["delivery.retry", "connection.edit", "organization.create"]
    assert shown("?action=connection.") == ["connection.edit"]
    assert shown("?actor=key+k2+(bob@acme.example.org)") == ["delivery.retry"]
    assert shown("?to=2026-02-28") == ["connection.edit"]
    page = text(signed_in.get("/settings/audit?action=connection."))
    assert "refreshDays 7" in page and "eve@globex" not in page
    for query in ("action=drop", "actor=key+k9+(eve@globex.example.org)", "from=3.3.2026"):
        refused = signed_in.get(f"/settings/audit?{query}")
        assert "message-error" in source(signed_in.get(refused.location)), query
    for _ in range(settings.ENTRIES_SHOWN + 5):
        log(acme, "mapping.save", "key k1 (ann@acme.example.org)", START)
    first = source(signed_in.get("/settings/audit?action=mapping."))
    older = re.search(r'href="(/settings/audit\?[^"]+)">Older entries', first)
    assert first.count("<code>mapping.save</code>") == 50 and older
    assert source(signed_in.get(older.group(1))).count("<code>mapping.save</code>") == 5


def test_credit_history_lists_each_change_newest_first(
    signed_in: FlaskClient, acme: Org, database: Database
) -> None:
    credits.top_up(database, acme.id, 250, START - timedelta(days=1))
    credits.debit(database, acme.id, 1, START, "t-1")
    page = text(signed_in.get("/settings/credits"))
    assert "1,249 credits now" in page
    assert page.index("-1 1,249 an enrichment delivered") < page.index("+250 1,250 credits added")


def test_an_admin_puts_a_person_on_the_do_not_enrich_list(
    signed_in: FlaskClient, acme: Org, database: Database
) -> None:
    response = submit(
        signed_in, "/settings/do-not-enrich", "/settings/do-not-enrich",
        email="Pat.Doe@Initech.example.com", reason="asked by e-mail",
    )  # fmt: skip
    assert "that person is on the do-not-enrich list" in source(signed_in.get(response.location))
    hash_of = server.privacy.hasher(SECRET.encode())
    listed = server.suppressed(
        database, [hash_of(server.privacy.email("pat.doe@initech.example.com"))]
    )
    assert [(row["action"], row["reason"]) for row in listed] == [("suppress", "asked by e-mail")]
    entry = audit.entries(database, acme.id)[-1]
    assert entry["action"] == "privacy.suppress" and acme.admin_email in entry["actor"]
    refusals = {
        "Name the person: the work e-mail address": {},
        "the full name and the company website go together": {"name": "Pat Doe"},
    }
    for message, form in refusals.items():
        refused = submit(signed_in, "/settings/do-not-enrich", "/settings/do-not-enrich", **form)
        assert message in source(signed_in.get(refused.location))
    page = source(signed_in.get("/settings/do-not-enrich"))
    assert "taking someone off the list" in page and "unsuppress" not in page
