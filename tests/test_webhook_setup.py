"""Webhooks set up for the admin (issue 22, item 3): connecting a Pipedrive connection
registers one webhook per kind of record at the events URL with the secret as its Basic
password, Zoho's notification channel is enabled; removing the connection deletes exactly
what was made; a refusal is reported in the CRM's words with the steps to do it by hand, and
the connection is kept. Every platform's installation steps carry the connection's real URLs
and never its secret in full."""

from __future__ import annotations

import base64
import json
import re
from datetime import datetime, timedelta
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import httpx
import pytest
from flask import Flask, render_template
from sqlite_utils import Database

from connector import connections, oauth, store, webhook_setup
from connector.app import create_app
from connector.mappings import DIRECTORY
from connector.platforms import PLATFORMS
from connector.platforms.base import Delivery, Refused
from connector.platforms.zoho import PLATFORM as ZOHO
from tests.helpers.constants import CRM, NOW, SECRET
from tests.helpers.crm import FakeZohoWatch
from tests.helpers.orgs import organization
from tests.helpers.pipedrive import PipedriveWebhooks, refusal
from tests.helpers.settings_forms import signed_in, source, token
from tests.helpers.vendors import VendorTransport, broken

PUBLIC_URL = "https://hooks.acme.example"
SCOPE_REFUSAL = "You do not have the scope webhooks:full"  # our words, Pipedrive's shape


@pytest.fixture
def db(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Database:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    return store.connect(db_path)


def connected(db: Database, platform: str, **options: Any) -> connections.Added:
    """A connection of a new organization to `platform`'s CRM (at CRM, never contacted)."""
    _, key = organization(db, name=f"Org{len(store.connections(db))}")
    return connections.add(
        db, SECRET.encode(), NOW, name=f"{platform}-{len(store.connections(db))}",
        platform=platform, api_key=key, crm_base_url=CRM, crm_token="crm-token", **options,
    )  # fmt: skip


def saved(db: Database, link: connections.Added) -> dict[str, Any]:
    row = store.connection(db, link.row["id"])
    assert row is not None
    return row


def set_up(db: Database, link: connections.Added, fake: Any) -> webhook_setup.Outcome:
    client = httpx.Client(transport=VendorTransport(fake))
    return webhook_setup.set_up(db, SECRET.encode(), saved(db, link), client, PUBLIC_URL, NOW)


def remove(db: Database, link: connections.Added, fake: Any) -> webhook_setup.Outcome:
    client = httpx.Client(transport=VendorTransport(fake))
    return webhook_setup.remove(db, SECRET.encode(), saved(db, link), client, PUBLIC_URL, NOW)


def events_url(link: connections.Added) -> str:
    return f"{PUBLIC_URL}/hooks/{link.row['id']}/events"


def test_connecting_pipedrive_registers_a_webhook_per_kind_at_the_events_url(db: Database) -> None:
    link = connected(db, "pipedrive")
    pipedrive = PipedriveWebhooks()

    outcome = set_up(db, link, pipedrive)

    assert outcome.ok, outcome.message
    posted = [json.loads(r.content) for r in pipedrive.requests if r.method == "POST"]
    assert sorted(body["event_object"] for body in posted) == ["lead", "organization", "person"]
    for body in posted:
        assert body["subscription_url"] == events_url(link)
        assert (body["event_action"], body["version"]) == ("*", "2.0")
        assert body["http_auth_password"] == link.secret
    assert {r.headers["x-api-token"] for r in pipedrive.requests} == {"crm-token"}
    assert store.webhook_ids(saved(db, link)) == ["101", "102", "103"]
    assert events_url(link) in outcome.message and link.secret not in outcome.message


def test_what_a_registered_webhook_sends_is_what_the_receiver_takes(db: Database) -> None:
    link = connected(db, "pipedrive")
    pipedrive = PipedriveWebhooks()
    set_up(db, link, pipedrive)
    webhook = pipedrive.held["101"]
    user_password = f"{webhook['http_auth_user']}:{webhook['http_auth_password']}"
    basic = "Basic " + base64.b64encode(user_password.encode()).decode()

    def delivered(authorization: str) -> Delivery:
        headers = {"Authorization": authorization}
        return Delivery("POST", webhook["subscription_url"], headers, {}, b"{}", NOW)

    PLATFORMS["pipedrive"].verify(link.row, link.secret, delivered(basic))  # no Refused
    with pytest.raises(Refused):
        PLATFORMS["pipedrive"].verify(link.row, link.secret, delivered("Basic Zm9vOmJhcg=="))


def test_removing_the_connection_deletes_exactly_the_webhooks_it_made(db: Database) -> None:
    link = connected(db, "pipedrive")
    admins_own = {"id": 7, "subscription_url": "https://elsewhere.example/hook"}
    pipedrive = PipedriveWebhooks(**{"7": admins_own})
    set_up(db, link, pipedrive)

    outcome = remove(db, link, pipedrive)

    assert outcome.ok, outcome.message
    deleted = [r.url.path for r in pipedrive.requests if r.method == "DELETE"]
    assert deleted == [f"/api/v1/webhooks/{n}" for n in ("101", "102", "103")]
    assert list(pipedrive.held) == ["7"]
    assert store.connection(db, link.row["id"]) is None


def test_connecting_again_replaces_the_webhooks_instead_of_adding_more(db: Database) -> None:
    link = connected(db, "pipedrive")
    pipedrive = PipedriveWebhooks()
    set_up(db, link, pipedrive)

    assert set_up(db, link, pipedrive).ok

    assert sorted(pipedrive.held) == ["104", "105", "106"]
    assert store.webhook_ids(saved(db, link)) == ["104", "105", "106"]


def test_a_refusal_is_reported_in_the_crms_words_and_the_connection_kept(db: Database) -> None:
    link = connected(db, "pipedrive")
    pipedrive = PipedriveWebhooks()
    pipedrive.failures.append(refusal(403, SCOPE_REFUSAL))

    outcome = set_up(db, link, pipedrive)

    assert not outcome.ok
    assert outcome.message.startswith(
        f"Could not register the webhook: 403 Forbidden: {SCOPE_REFUSAL}, do it by hand: "
    )
    assert "Settings > Tools and apps > Webhooks" in outcome.message
    assert events_url(link) in outcome.message and link.secret not in outcome.message
    row = saved(db, link)  # kept as it was
    assert row["crm_webhook_ids"] == "" and row["crm_base_url"] == CRM


def test_a_refusal_half_way_leaves_no_webhook_behind(db: Database) -> None:
    link = connected(db, "pipedrive")
    pipedrive = PipedriveWebhooks()
    real = pipedrive.__call__

    def second_refused(request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and len(pipedrive.held) == 1:
            return refusal(400, "Webhooks limit reached")
        return real(request)

    outcome = set_up(db, link, second_refused)

    assert "400 Bad Request: Webhooks limit reached" in outcome.message
    assert pipedrive.held == {}  # the first one made was deleted again
    assert saved(db, link)["crm_webhook_ids"] == ""


def test_a_failed_teardown_is_reported_and_the_connection_removed_all_the_same(
    db: Database,
) -> None:
    link = connected(db, "pipedrive")
    pipedrive = PipedriveWebhooks()
    set_up(db, link, pipedrive)
    pipedrive.failures.append(refusal(403, "Forbidden to delete"))

    outcome = remove(db, link, pipedrive)

    assert not outcome.ok
    assert outcome.message.startswith(
        "Could not delete the webhook in Pipedrive: 403 Forbidden: Forbidden to delete, do it "
        "by hand: In Pipedrive, open Settings > Tools and apps > Webhooks and delete the "
        f"webhooks whose endpoint URL is {events_url(link)}."
    )
    assert store.connection(db, link.row["id"]) is None  # its URLs stop at once


def test_connecting_zoho_enables_its_channel_and_removing_it_disables_it(db: Database) -> None:
    link = connected(db, "zoho")
    zoho = FakeZohoWatch()
    channel = ZOHO.channel_id(link.row)

    outcome = set_up(db, link, zoho)

    assert outcome.ok, outcome.message
    (enabled,) = zoho.requests
    assert (enabled.method, enabled.url.path) == ("POST", "/crm/v7/actions/watch")
    watch = json.loads(enabled.content)["watch"][0]
    assert (watch["notify_url"], watch["token"]) == (events_url(link), link.secret)
    row = saved(db, link)
    assert store.webhook_ids(row) == [channel]
    assert row["zoho_channel_expires_at"] == "2026-11-29T12:00:00.000+00:00"  # not due before

    assert remove(db, link, zoho).ok
    disabled = zoho.requests[-1]
    assert disabled.method == "DELETE" and disabled.url.params["channel_ids"] == channel


def rotated(db: Database, link: connections.Added, fake: Any) -> tuple[str, webhook_setup.Outcome]:
    """Rotate the connection's secret (an hour's grace), then register again what the
    connector registered, as the settings page and the command line do: the new secret, and
    what became of the registration."""
    new = connections.rotate_secret(db, SECRET.encode(), link.row["id"], NOW, 3600)
    client = httpx.Client(transport=VendorTransport(fake))
    row = saved(db, link)
    return new, webhook_setup.set_up_again(db, SECRET.encode(), row, client, PUBLIC_URL, NOW)


def test_a_rotation_registers_the_pipedrive_webhooks_again_with_the_new_secret(
    db: Database,
) -> None:
    link = connected(db, "pipedrive")
    pipedrive = PipedriveWebhooks()
    set_up(db, link, pipedrive)

    new, outcome = rotated(db, link, pipedrive)

    assert outcome.ok
    assert outcome.message == (
        "Registered again in Pipedrive with the new secret: webhooks 104, 105, 106 posting to "
        f"{events_url(link)}."
    )
    assert {hook["http_auth_password"] for hook in pipedrive.held.values()} == {new}
    assert sorted(pipedrive.held) == store.webhook_ids(saved(db, link)) == ["104", "105", "106"]
    later = NOW + timedelta(seconds=3601)  # the grace period over: what Pipedrive sends verifies
    hook = pipedrive.held["104"]
    PLATFORMS["pipedrive"].verify(saved(db, link), new, basic(hook, later))  # no Refused
    assert connections.previous_secret(SECRET.encode(), saved(db, link), later) is None


def basic(hook: dict[str, Any], now: datetime) -> Delivery:
    """The delivery a Pipedrive webhook makes: its Basic user and password."""
    user_password = f"{hook['http_auth_user']}:{hook['http_auth_password']}"
    headers = {"Authorization": "Basic " + base64.b64encode(user_password.encode()).decode()}
    return Delivery("POST", hook["subscription_url"], headers, {}, b"{}", now)


def test_a_refused_registration_keeps_the_rotation_and_says_what_to_do_by_hand(
    db: Database,
) -> None:
    link = connected(db, "pipedrive")
    pipedrive = PipedriveWebhooks()
    set_up(db, link, pipedrive)
    pipedrive.failures.append(refusal(403, SCOPE_REFUSAL))

    new, outcome = rotated(db, link, pipedrive)

    row = saved(db, link)
    assert store.unseal(SECRET.encode(), row["secret_sealed"]) == new  # kept
    assert not outcome.ok
    assert outcome.message.startswith(
        "Could not register the webhook again in Pipedrive with the new secret: 403 Forbidden: "
        f"{SCOPE_REFUSAL}; it still sends the previous one, which works until "
        f"{row['previous_secret_expires_at']}. Do it by hand: In Pipedrive, open Settings > "
        f"Tools and apps > Webhooks and delete the webhooks whose endpoint URL is "
        f"{events_url(link)}. In Pipedrive, open Settings > Tools and apps > Webhooks and "
        "choose Create new webhook."
    )
    assert f"(ending in {row['secret_hint']})" in outcome.message
    assert new not in outcome.message and link.secret not in outcome.message
    assert store.webhook_ids(row) == ["101", "102", "103"]  # still there, deleted at removal


def test_a_rotation_enables_the_zoho_channel_again_with_the_new_token(db: Database) -> None:
    link = connected(db, "zoho")
    zoho = FakeZohoWatch()
    set_up(db, link, zoho)

    new, outcome = rotated(db, link, zoho)

    assert outcome.ok and outcome.message.startswith(
        f"Registered again in Zoho CRM with the new secret: notification channel "
        f"{ZOHO.channel_id(link.row)} posting to"
    )
    watch = json.loads(zoho.requests[-1].content)["watch"][0]
    assert (watch["channel_id"], watch["token"]) == (ZOHO.channel_id(link.row), new)


def test_a_rotation_registers_nothing_the_connector_did_not(db: Database) -> None:
    link = connected(db, "pipedrive")  # its webhooks made by hand: the admin pastes the secret
    pipedrive = PipedriveWebhooks()

    _, outcome = rotated(db, link, pipedrive)

    assert outcome == webhook_setup.Outcome(True) and pipedrive.requests == []


def test_platforms_without_such_an_api_register_nothing(db: Database) -> None:
    link = connected(db, "dynamics", crm_client_id="app", crm_client_secret="shh",
                     crm_token_url=f"{CRM}/token", crm_scope="x/.default")  # fmt: skip
    calls: list[httpx.Request] = []

    outcome = set_up(db, link, lambda request: calls.append(request) or httpx.Response(500))

    assert outcome == webhook_setup.Outcome(True) and calls == []


def every_platform_row(platform: str) -> dict[str, Any]:
    secret = f"whsec_{'A' * 30}{platform}"
    return {"id": f"conn-{platform}", "platform": platform, "crm_base_url": "",
            "secret_hint": store.hint(secret), "crm_webhook_ids": "", "secret": secret,
            "mapping": str(DIRECTORY / f"{platform}.yaml"), "name": platform}  # fmt: skip


@pytest.mark.parametrize("platform", list(PLATFORMS))
def test_every_platform_has_steps_with_the_connections_real_urls(
    platform: str, db: Database
) -> None:
    row = every_platform_row(platform)
    shown = webhook_setup.install(db, row, PUBLIC_URL)
    text = " ".join(shown["steps"])

    expected = f"{PUBLIC_URL}/hooks/{row['id']}/{'events' if PLATFORMS[platform].crm else 'enrich'}"
    assert expected in text
    assert row["secret_hint"] in text
    assert row["secret"] not in text and row["secret"][-12:] not in text


def test_a_secret_in_the_url_is_shown_only_when_given(db: Database) -> None:
    link = connected(db, "salesforce", salesforce_org_ids=("00D000000000001",))
    later = " ".join(webhook_setup.install(db, saved(db, link), PUBLIC_URL)["steps"])
    first = " ".join(webhook_setup.install(db, saved(db, link), PUBLIC_URL, link.secret)["steps"])

    assert f"{events_url(link)}?key=<secret>" in later and link.secret not in later
    assert "Replace <secret> in the URL with the connection's secret" in later
    assert f"{events_url(link)}?key={link.secret}" in first


def test_the_partial_renders_the_steps_escaped_with_no_secret(
    page_app: Flask, db: Database
) -> None:
    link = connected(db, "dynamics", crm_client_id="app", crm_client_secret="shh",
                     crm_token_url=f"{CRM}/token", crm_scope="x/.default")  # fmt: skip
    with page_app.test_request_context():
        install = webhook_setup.install(db, saved(db, link), PUBLIC_URL)
        page = render_template("settings/_install_steps.html", install=install)

    steps = [unescape(step) for step in re.findall(r"<li>(.*?)</li>", page, re.S)]
    assert steps == install["steps"]
    assert f"Endpoint URL {events_url(link)}, Authentication WebhookKey" in steps[0]
    assert link.secret not in page and "<form" not in page  # nothing the connector registers


# --- the settings page ------------------------------------------------------------------------


@pytest.fixture
def page_app(db_path: Path, db: Database) -> Flask:
    return create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "PUBLIC_URL": PUBLIC_URL})


def test_the_connection_page_offers_registering_again_to_its_own_admin_only(
    page_app: Flask, db: Database
) -> None:
    _, key = organization(db, name="Paging")
    link = connections.add(
        db, SECRET.encode(), NOW, name="crm", platform="pipedrive", api_key=key,
        crm_base_url=CRM, crm_token="crm-token",
    )  # fmt: skip
    admin = signed_in(page_app, key)
    tab = admin.get(f"/settings/connections/{link.row['id']}")
    text = source(tab)
    assert "not registered" in text and "Register the webhook" in text
    assert f"endpoint URL: {events_url(link)}" in text and link.secret not in text

    _, other_key = organization(db, name="Other")
    stranger = signed_in(page_app, other_key)
    path = f"/settings/connections/{link.row['id']}/webhooks"
    refused = stranger.post(path, data={"csrf_token": token(stranger.get("/settings/keys"))})
    assert refused.status_code == 404
    no_token = admin.post(path)
    assert no_token.status_code == 400  # CSRF

    # Nothing listens at CRM: the refusal comes back to the page, and the connection stays.
    tried = admin.post(path, data={"csrf_token": token(tab)}, follow_redirects=True)
    shown = source(tried)
    assert "Could not register the webhook: POST http://127.0.0.1:9/api/v1/webhooks failed" in shown
    assert link.secret not in shown
    assert store.connection(db, link.row["id"]) is not None


# Revoking the OAuth grant (issue 35, item 4) ------------------------------------------------

# Each platform's documented revocation: method, path on the grant's token host, and what it
# sends (form, or Zoho's query), the client authenticated as the platform asks.
REVOCATIONS = {
    "hubspot": ("/oauth/2026-03/token", "/oauth/2026-03/token/revoke",
                {"client_id": "app", "client_secret": "shh", "token": "rt-1",
                 "token_type_hint": "refresh_token"}),
    "salesforce": ("/services/oauth2/token", "/services/oauth2/revoke", {"token": "rt-1"}),
    "zoho": ("/oauth/v2/token", "/oauth/v2/token/revoke", {}),
    "pipedrive": ("/oauth/token", "/oauth/revoke",
                  {"token": "rt-1", "token_type_hint": "refresh_token"}),
}  # fmt: skip


class RevocationEndpoint:
    """An authorization server's revocation endpoint answering `status` (and `body`); every
    request it is sent is kept."""

    def __init__(self, status: int = 200, body: Any = None) -> None:
        self.status, self.body = status, body
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(self.status, json=self.body)


def granted(db: Database, platform: str, token_path: str, refresh_token: str = "rt-1") -> Any:
    """A connection connected through the operator's OAuth app (its grant sealed)."""
    options: dict[str, Any] = {"salesforce": {"salesforce_org_ids": ("00D5e000000abcD",)}}.get(
        platform,
        {"secret": "app-client-secret-0123456789"} if PLATFORMS[platform].issues_secret else {},
    )
    link = connected(db, platform, **options)
    grant = oauth.Credentials(f"{CRM}{token_path}", "app", "shh", refresh_token,
                              basic=platform == "pipedrive")  # fmt: skip
    sealed = store.seal(SECRET.encode(), grant.dumps())
    store.save_crm_grant(db, link.row["id"], {"crm_oauth_sealed": sealed})
    return link


@pytest.mark.parametrize("platform", sorted(REVOCATIONS))
def test_removing_a_connection_revokes_its_grant_as_the_platform_documents(
    db: Database, platform: str
) -> None:
    token_path, revoke_path, form = REVOCATIONS[platform]
    link = granted(db, platform, token_path)
    # Salesforce's is a bare 200; HubSpot's document gives its revocation no answer body
    done = {"zoho": {"status": "success"}, "salesforce": None, "hubspot": None}
    endpoint = RevocationEndpoint(200, done.get(platform, {}))

    outcome = remove(db, link, endpoint)

    assert outcome.ok, outcome.message
    [sent] = endpoint.requests
    assert (sent.method, sent.url.path) == ("POST", revoke_path)
    assert dict(parse_qsl(sent.content.decode())) == form
    if platform == "zoho":
        assert dict(sent.url.params) == {"token": "rt-1"}
    if platform == "pipedrive":
        assert sent.headers["authorization"] == "Basic " + base64.b64encode(b"app:shh").decode()
    assert "refresh token no longer works" in outcome.message
    assert store.connection(db, link.row["id"]) is None


def test_a_refused_revocation_still_removes_the_connection_and_says_so(db: Database) -> None:
    link = granted(db, "hubspot", "/oauth/2026-03/token")
    # HubSpot's OAuth refusals: RFC 6749's error and error_description, its legacy status and
    # message beside them (changelog: new-oauth-v3-api-endpoints-and-standardized-error-responses)
    refusal = {"error": "invalid_grant", "error_description": "refresh token is invalid",
               "status": "BAD_REFRESH_TOKEN", "message": "refresh token is invalid"}  # fmt: skip
    endpoint = RevocationEndpoint(400, refusal)

    outcome = remove(db, link, endpoint)

    assert not outcome.ok
    assert "The HubSpot grant could not be revoked: 400 refresh token is invalid" in outcome.message
    assert "revoke it in HubSpot's Connected Apps" in outcome.message
    assert store.connection(db, link.row["id"]) is None


@pytest.mark.parametrize(
    ("status", "body", "words"),
    [(400, None, "400"), (200, {"error": "invalid_token"}, "invalid_token")],
    ids=["documented 400", "in a 200"],
)
def test_zohos_refusal_is_a_refusal(db: Database, status: int, body: Any, words: str) -> None:
    """Zoho's revocation page answers an invalid token 400 (no body shown). Its accounts
    server answers its token endpoint's refusals {"error": ...} in a 200; the connector reads
    one from the revocation endpoint as a refusal too, though that page shows none (so the
    answer is marked as no answer of Zoho's documented ones)."""
    link = granted(db, "zoho", "/oauth/v2/token")
    endpoint = RevocationEndpoint(status, body)
    refusing = endpoint if status != 200 else lambda request: broken(endpoint(request))

    outcome = remove(db, link, refusing)

    assert not outcome.ok and words in outcome.message
    assert store.connection(db, link.row["id"]) is None


def test_a_pasted_token_is_not_revoked_and_the_message_says_so(db: Database) -> None:
    link = connected(db, "hubspot", secret="app-client-secret-0123456789")
    endpoint = RevocationEndpoint()

    outcome = remove(db, link, endpoint)

    assert outcome.ok and endpoint.requests == []
    assert "The token pasted for it was not revoked" in outcome.message


def test_a_dynamics_client_credentials_grant_has_nothing_to_revoke(db: Database) -> None:
    link = granted(db, "dynamics", "/tenant/oauth2/v2.0/token", refresh_token="")
    endpoint = RevocationEndpoint()

    outcome = remove(db, link, endpoint)

    assert outcome.ok and endpoint.requests == []
    assert "Microsoft Dynamics 365 offers no revocation of one grant" in outcome.message
    assert store.connection(db, link.row["id"]) is None
