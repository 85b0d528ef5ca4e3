"""Connect with OAuth from the settings page (connector/install.py, connector/views/install.py),
through the Flask test client against a loopback fake authorization server for each of the
five CRMs: consent and callback, and every callback that must connect nothing (refused
consent, tampered, replayed, expired or another session's state, a token endpoint that
complains), a refresh token refused for good showing Reconnect, and no secret in a page or log."""

from __future__ import annotations

import html
import logging
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlite_utils import Database
from werkzeug.test import TestResponse

from connector import connections, oauth, oauth_apps, outbound, store
from connector.app import create_app
from connector.platforms import PLATFORMS as PLATFORMS_BY_NAME
from connector.views.settings import platform_title
from server import accounts
from tests.helpers.clock import Clock
from tests.helpers.constants import SECRET
from tests.helpers.oauth_server import (
    CLIENT_ID,
    CLIENT_SECRET,
    HUB_ID,
    FakeAuthServer,
    running,
)
from tests.helpers.settings_forms import signed_in, source, token

START = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
PUBLIC_URL = "https://connector.example.com"
CALLBACK = f"{PUBLIC_URL}/settings/oauth/callback"
PLATFORMS = ("hubspot", "salesforce", "pipedrive", "zoho", "dynamics")
TENANT = "contoso.onmicrosoft.com"
PKCE = {"salesforce", "dynamics"}


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def app(db_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> Flask:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")  # the fakes are on loopback
    config = {"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": clock, "PUBLIC_URL": PUBLIC_URL}
    return create_app(config)


@pytest.fixture
def database(app: Flask, db_path: Path) -> Database:
    return store.connect(db_path)


def admin_key(database: Database, name: str) -> str:
    _, value = accounts.create_organization(
        database, SECRET.encode(), START, name=name, website=f"{name.lower()}.example.org",
        tier="pro",
    )  # fmt: skip
    return value


@pytest.fixture(params=PLATFORMS)
def fake(request: pytest.FixtureRequest) -> Iterator[FakeAuthServer]:
    with running(request.param) as server:
        yield server


def register(database: Database, fake: FakeAuthServer) -> None:
    """The operator's app for the fake's platform, pointed at the fake."""
    oauth_apps.save(
        database, SECRET.encode(), START, platform=fake.platform, client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET, authorize_url=fake.authorize_url, token_url=fake.token_url,
    )  # fmt: skip


def connection(database: Database, key: str, platform: str, name: str = "crm") -> str:
    """A connection of the key's organization, with a token pasted earlier (the CLI's way)."""
    extra = {"salesforce": {"salesforce_org_ids": ("00D5e000000abcD",)},
             "hubspot": {"secret": "hubspot-app-secret"}}.get(platform, {})  # fmt: skip
    added = connections.add(
        database, SECRET.encode(), START, name=name, platform=platform, api_key=key,
        crm_base_url="http://127.0.0.1:9",
        crm_token="pasted-token", **extra,
    )  # fmt: skip
    return str(added.row["id"])


def start(client: FlaskClient, link_id: str, **form: str) -> TestResponse:
    """Press Connect on the connections page."""
    page = client.get("/settings/connections")
    data = {"csrf_token": token(page), **form}
    return client.post(f"/settings/connections/{link_id}/connect", data=data)


def consent(authorize_url: str) -> str:
    """The browser at the consent page, the admin agreeing: where it is sent back to."""
    answer = httpx.get(authorize_url, follow_redirects=False)
    assert answer.status_code == 302
    return answer.headers["location"]


def back(client: FlaskClient, callback: str) -> TestResponse:
    """The browser arriving at our callback (its path and query, on the test client)."""
    assert callback.startswith(CALLBACK + "?"), callback
    return client.get(callback.removeprefix(PUBLIC_URL))


def environment(fake: FakeAuthServer) -> dict[str, str]:
    return {"environment": fake.url, "tenant": TENANT} if fake.platform == "dynamics" else {}


@pytest.fixture
def acme(database: Database) -> str:
    return admin_key(database, "Acme")


def test_each_crm_connects_through_consent_and_the_callback(
    app: Flask, database: Database, acme: str, fake: FakeAuthServer,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    caplog.set_level(logging.DEBUG)
    register(database, fake)
    link_id = connection(database, acme, fake.platform)
    client = signed_in(app, acme)

    started = start(client, link_id, **environment(fake))
    assert started.status_code == 303
    asked = parse_qs(urlsplit(started.location).query)
    assert started.location.startswith(fake.authorize_url.replace("organizations", TENANT))
    assert asked["client_id"] == [CLIENT_ID] and asked["redirect_uri"] == [CALLBACK]
    assert asked["response_type"] == ["code"] and len(asked["state"][0]) >= 40
    assert ("code_challenge" in asked) == (fake.platform in PKCE)
    if fake.platform in PKCE:
        assert asked["code_challenge_method"] == ["S256"]
    callback = consent(started.location)
    done = back(client, callback)

    assert done.status_code == 303 and done.location == f"/settings/connections/{link_id}"
    page = source(client.get(done.location))
    assert f"crm is connected to {platform_title(fake.platform)}." in page
    form, _ = fake.seen.token_requests[-1]
    assert form["redirect_uri"] == CALLBACK and form["grant_type"] == "authorization_code"
    assert ("code_verifier" in form) == (fake.platform in PKCE)
    row = store.connection(database, link_id)
    assert row is not None and row["crm_base_url"] == fake.url
    assert row["crm_account_id"] == (str(HUB_ID) if fake.platform == "hubspot" else "")
    credentials = oauth.Credentials.loads(store.unseal(SECRET.encode(), row["crm_oauth_sealed"]))
    token_url = fake.token_url.replace("organizations", TENANT)
    assert credentials.token_url == (
        f"{fake.url}/oauth/v2/token" if fake.platform == "zoho" else token_url
    )
    assert credentials.refresh_token in fake.refresh_tokens
    assert credentials.basic == (fake.platform == "pipedrive")
    assert connections.token_state(row, START) == "valid"
    for value in (CLIENT_SECRET, credentials.refresh_token, store.crm_token(SECRET.encode(), row)):
        assert value not in page and value not in caplog.text


def test_a_refused_consent_comes_back_with_a_clear_message_and_connects_nothing(
    app: Flask, database: Database, acme: str, fake: FakeAuthServer
) -> None:
    register(database, fake)
    link_id = connection(database, acme, fake.platform)
    client = signed_in(app, acme)
    fake.deny = True

    done = back(client, consent(start(client, link_id, **environment(fake)).location))

    page = source(client.get(done.location))
    said = f"Consent on {platform_title(fake.platform)} was refused or cancelled"
    assert f"{said}: nothing was connected." in page
    assert "The user denied access" in page
    assert fake.seen.token_requests == []
    row = store.connection(database, link_id)
    assert row is not None and store.crm_token(SECRET.encode(), row) == "pasted-token"


@pytest.fixture
def hubspot() -> Iterator[FakeAuthServer]:
    with running("hubspot") as server:
        yield server


@pytest.fixture
def pending(
    app: Flask, database: Database, acme: str, hubspot: FakeAuthServer
) -> tuple[FlaskClient, str, str]:
    """Acme's admin sent to HubSpot's consent page: (client, connection id, callback URL)."""
    register(database, hubspot)
    link_id = connection(database, acme, "hubspot")
    client = signed_in(app, acme)
    return client, link_id, consent(start(client, link_id).location)


def refusal(client: FlaskClient, response: TestResponse) -> str:
    assert response.status_code == 303 and response.location.startswith("/settings/connections")
    return source(client.get(response.location))


def not_connected(database: Database, link_id: str) -> bool:
    row = store.connection(database, link_id)
    return row is not None and row["crm_oauth_sealed"] == ""


def test_a_tampered_state_is_refused_before_any_token_request(
    database: Database, pending: tuple[FlaskClient, str, str], hubspot: FakeAuthServer
) -> None:
    client, link_id, callback = pending
    state = parse_qs(urlsplit(callback).query)["state"][0]
    tampered = callback.replace(state, state[:-2] + ("AA" if state[-2:] != "AA" else "BB"))

    page = refusal(client, back(client, tampered))

    assert "That authorization is unknown or was already used" in page
    assert hubspot.seen.token_requests == [] and not_connected(database, link_id)


def test_a_replayed_callback_is_refused_before_its_code_is_used_again(
    database: Database, pending: tuple[FlaskClient, str, str], hubspot: FakeAuthServer
) -> None:
    client, link_id, callback = pending
    assert back(client, callback).status_code == 303
    assert len(hubspot.seen.token_requests) == 1
    store.set_crm_auth_error(database, link_id, "marked")  # to see whether it connects again

    page = refusal(client, back(client, callback))

    assert "That authorization is unknown or was already used" in page
    assert len(hubspot.seen.token_requests) == 1
    row = store.connection(database, link_id)
    assert row is not None and row["crm_auth_error"] == "marked"


def test_a_callback_in_another_admins_session_is_refused_and_spends_the_state(
    app: Flask, database: Database, pending: tuple[FlaskClient, str, str],
    hubspot: FakeAuthServer,
) -> None:  # fmt: skip
    client, link_id, callback = pending
    other = signed_in(app, admin_key(database, "Globex"))

    page = refusal(other, back(other, callback))

    assert "That authorization was started in another session" in page
    assert "unknown or was already used" in refusal(client, back(client, callback))
    assert hubspot.seen.token_requests == [] and not_connected(database, link_id)


def test_another_organizations_connection_cannot_be_connected(
    app: Flask, database: Database, acme: str, hubspot: FakeAuthServer
) -> None:
    register(database, hubspot)
    link_id = connection(database, acme, "hubspot")
    other = signed_in(app, admin_key(database, "Globex"))

    answer = start(other, link_id)

    assert answer.status_code == 404
    assert hubspot.seen.authorized == []


def test_hubspot_asks_for_its_default_scope_with_oauth(
    pending: tuple[FlaskClient, str, str], hubspot: FakeAuthServer
) -> None:
    """The install URL carries every scope the app requires (HubSpot refuses it otherwise):
    the platform's default, `oauth` included (tests/test_adapters_hubspot.py derives it)."""
    (asked,) = hubspot.seen.authorized
    assert asked["scope"] == PLATFORMS_BY_NAME["hubspot"].oauth_scope
    assert {"oauth", "crm.schemas.companies.write"} <= set(asked["scope"].split())


def test_a_hubspot_portal_connected_elsewhere_is_refused_and_stays_with_its_connection(
    app: Flask, database: Database, acme: str, hubspot: FakeAuthServer,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    """Two organizations connecting the same portal (the fake's HUB_ID): the second is
    refused, saying why without naming the first; the first keeps the portal and its grant,
    and reconnects to it at will. Once the first connection is removed, the portal is free."""
    register(database, hubspot)
    acme_link = connection(database, acme, "hubspot", name="Acme's HubSpot")
    acme_client = signed_in(app, acme)
    connect(acme_client, acme_link)
    before = store.connection(database, acme_link)
    assert before is not None and before["crm_account_id"] == str(HUB_ID)
    globex = admin_key(database, "Globex")
    globex_link = connection(database, globex, "hubspot", name="Globex's HubSpot")
    globex_client = signed_in(app, globex)

    page = refusal(globex_client, connect(globex_client, globex_link))

    assert (
        f"Nothing was connected: this HubSpot account ({HUB_ID}) is already connected to another "
        "connection" in html.unescape(page)
    )
    assert "Acme" not in page and "Acme" not in caplog.text
    assert not_connected(database, globex_link)
    assert store.connection(database, acme_link) == before
    assert store.connection_of_account(database, "hubspot", str(HUB_ID)) == before
    with pytest.raises(connections.InvalidConnection, match="already connected"):
        connections.set_crm(database, SECRET.encode(), globex_link, base_url=hubspot.url,
                            token="t", account_id=str(HUB_ID))  # fmt: skip

    assert connect(acme_client, acme_link).location == f"/settings/connections/{acme_link}"
    row = store.connection(database, acme_link)
    assert row is not None and row["crm_account_id"] == str(HUB_ID)
    assert row["crm_oauth_sealed"] != before["crm_oauth_sealed"]  # the new grant, saved

    assert connections.remove(database, acme_link)
    connect(globex_client, globex_link)
    holder = store.connection_of_account(database, "hubspot", str(HUB_ID))
    assert holder is not None and holder["id"] == globex_link


def connect(client: FlaskClient, link_id: str) -> TestResponse:
    """Press Connect, consent, and come back to the callback."""
    return back(client, consent(start(client, link_id).location))


@pytest.mark.parametrize("platform", ["hubspot", "salesforce", "zoho"])
def test_removing_a_connection_on_the_page_revokes_its_grant(
    app: Flask, database: Database, acme: str, platform: str
) -> None:
    """The refresh token the operator's app was given stops working when the connection goes."""
    with running(platform) as fake:
        register(database, fake)
        link_id = connection(database, acme, fake.platform)
        client = signed_in(app, acme)
        back(client, consent(start(client, link_id).location))
        granted = set(fake.refresh_tokens)
        assert len(granted) == 1

        page = client.get(f"/settings/connections/{link_id}/remove")
        gone = client.post(f"/settings/connections/{link_id}/remove",
                           data={"csrf_token": token(page)}, follow_redirects=True)  # fmt: skip

        assert gone.status_code == 200 and store.connection(database, link_id) is None
        assert [form["token"] for form in fake.seen.revocations] == list(granted)
        assert fake.refresh_tokens == set()
        assert f"Revoked the {platform_title(platform)} grant" in source(gone)


def test_an_authorization_older_than_ten_minutes_is_refused(
    database: Database, pending: tuple[FlaskClient, str, str], hubspot: FakeAuthServer,
    clock: Clock,
) -> None:  # fmt: skip
    client, link_id, callback = pending
    clock.advance(10 * 60 + 1)

    page = refusal(client, back(client, callback))

    assert "That authorization took over 10 minutes" in page
    assert hubspot.seen.token_requests == [] and not_connected(database, link_id)


def test_a_token_endpoint_complaining_about_the_redirect_uri_connects_nothing(
    database: Database, pending: tuple[FlaskClient, str, str], hubspot: FakeAuthServer
) -> None:
    client, link_id, callback = pending
    hubspot.complaint = {"error": "invalid_grant", "error_description": "redirect_uri mismatch"}

    page = refusal(client, back(client, callback))

    assert "the token endpoint refused the authorization (400: invalid_grant" in page
    assert "redirect_uri mismatch" in page and CLIENT_SECRET not in page
    assert hubspot.seen.token_requests[0][0]["redirect_uri"] == CALLBACK
    assert not_connected(database, link_id)


@pytest.mark.parametrize("instance_url", ["https://[::1", "https://my.salesforce.com:99999"])
def test_a_malformed_instance_url_in_the_token_answer_connects_nothing_and_says_why(
    app: Flask, database: Database, acme: str, instance_url: str
) -> None:
    with running("salesforce") as fake:
        fake.api_base = instance_url
        register(database, fake)
        link_id = connection(database, acme, "salesforce")
        client = signed_in(app, acme)

        page = refusal(client, back(client, consent(start(client, link_id).location)))

        said = f"Salesforce did not connect: the API URL of its token answer, {instance_url!r}"
        assert f"{said}: not a URL" in page
        assert len(fake.seen.token_requests) == 1 and not_connected(database, link_id)


def test_a_callback_without_the_session_cookie_asks_again_from_this_site(
    app: Flask, pending: tuple[FlaskClient, str, str], hubspot: FakeAuthServer
) -> None:
    client, _, callback = pending
    cookieless = app.test_client()  # as a browser sends no SameSite=Strict cookie cross-site

    again = back(cookieless, callback)

    assert again.status_code == 200 and "set-cookie" not in again.headers
    found = re.search(r'http-equiv="refresh" content="0;url=([^"]+)"', again.get_data(as_text=True))
    assert found and hubspot.seen.token_requests == []
    resumed = html.unescape(found.group(1))
    assert resumed.startswith("/settings/oauth/callback?") and resumed.endswith("&resumed=1")
    gone = cookieless.get(resumed)
    assert gone.status_code == 303 and gone.location == "/settings/sign-in"
    done = client.get(resumed)  # the page asking again, from the admin's browser with its cookie
    assert done.status_code == 303 and "is connected to HubSpot" in source(
        client.get(done.location)
    )


def test_without_an_app_the_page_says_so_and_connect_is_refused(
    app: Flask, database: Database, acme: str
) -> None:
    link_id = connection(database, acme, "pipedrive")
    client = signed_in(app, acme)

    page = source(client.get(f"/settings/connections/{link_id}"))
    answer = start(client, link_id)

    assert "No Pipedrive OAuth app is registered on this server" in page
    assert "Connect with Pipedrive" not in page
    assert "No OAuth app is registered for Pipedrive" in refusal(client, answer)


def test_dynamics_asks_for_a_tenant_before_consent(
    app: Flask, database: Database, acme: str
) -> None:
    with running("dynamics") as fake:
        register(database, fake)
        link_id = connection(database, acme, "dynamics")
        client = signed_in(app, acme)
        page = source(client.get(f"/settings/connections/{link_id}"))

        answer = start(client, link_id, environment=fake.url, tenant="../evil")

        assert 'name="tenant"' in page and "Reconnect with Microsoft Dynamics 365" in page
        assert "Give your Microsoft Entra tenant" in refusal(client, answer)
        assert fake.seen.authorized == []


def test_zoho_exchanges_the_code_only_at_a_zoho_accounts_server(
    app: Flask, database: Database, acme: str
) -> None:
    with running("zoho") as fake:
        register(database, fake)
        link_id = connection(database, acme, "zoho")
        client = signed_in(app, acme)
        callback = consent(start(client, link_id).location)
        elsewhere = callback.replace(
            f"accounts-server={fake.url.replace(':', '%3A').replace('/', '%2F')}",
            "accounts-server=https%3A%2F%2Faccounts.evil.example",
        )
        assert elsewhere != callback

        page = refusal(client, back(client, elsewhere))

        assert "'https://accounts.evil.example' is not a Zoho accounts server" in page
        assert fake.seen.token_requests == [] and not_connected(database, link_id)


def test_a_refresh_token_refused_for_good_shows_reconnect_until_connected_again(
    app: Flask, database: Database, pending: tuple[FlaskClient, str, str],
    hubspot: FakeAuthServer, clock: Clock,
) -> None:  # fmt: skip
    client, link_id, callback = pending
    back(client, callback)
    hubspot.revoked = True
    clock.advance(3600)  # past the access token's 30 minutes
    row = store.connection(database, link_id)
    assert row is not None and connections.token_state(row, clock()) == "renewing"
    renewing = store.crm_auth(database, SECRET.encode(), row, clock)

    with outbound.client() as http, pytest.raises(Exception, match="token revoked"):
        http.get(f"{hubspot.url}/crm/anything", auth=renewing)

    row = store.connection(database, link_id)
    assert row is not None and connections.token_state(row, clock()) == "needs reconnect"
    page = source(client.get(f"/settings/connections/{link_id}"))
    assert "needs reconnect" in page and "Reconnect with HubSpot" in page
    hubspot.revoked = False
    back(client, consent(start(client, link_id).location))
    row = store.connection(database, link_id)
    assert row is not None and connections.token_state(row, clock()) == "valid"
    again = source(client.get(f"/settings/connections/{link_id}"))
    assert "needs reconnect" not in again and "Reconnect with HubSpot" in again


def test_only_the_page_with_connect_lets_its_form_go_to_the_consent_origin(
    app: Flask, database: Database, acme: str, hubspot: FakeAuthServer
) -> None:
    """The CSP's form-action is 'self' everywhere, except that the connection page offering
    Connect also names the registered app's consent origin: a browser follows the form's
    redirect there only from that page."""
    link_id = connection(database, acme, "hubspot")
    client = signed_in(app, acme)

    def form_action(path: str) -> str:
        policy = client.get(path).headers["Content-Security-Policy"]
        return next(part for part in policy.split("; ") if part.startswith("form-action"))

    assert form_action(f"/settings/connections/{link_id}") == "form-action 'self'"  # no app yet
    register(database, hubspot)
    origin = f"http://127.0.0.1:{hubspot.server_address[1]}"
    assert form_action(f"/settings/connections/{link_id}") == f"form-action 'self' {origin}"
    for path in (
        "/settings/connections",
        "/settings/keys",
        f"/settings/connections/{link_id}/mapping",
    ):
        assert form_action(path) == "form-action 'self'"
