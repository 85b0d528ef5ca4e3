"""Connections managed from the settings page: add (with a key of its own, the secret shown
once), the connection's page, CRM credentials, edit, pause and resume, secret rotation with
its grace period (through the real receiver, signed for real), removal; tenancy and CSRF."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlite_utils import Database
from standardwebhooks import Webhook
from werkzeug.test import TestResponse

from connector import connections, oauth_apps, store
from connector.app import create_app
from server import accounts, audit, auth
from server.storage import store as service_store
from tests.helpers.clock import Clock
from tests.helpers.constants import PLATFORMS, SECRET
from tests.helpers.crm_server import FakeCrm, running
from tests.helpers.pipedrive import refusal
from tests.helpers.settings_forms import sign_in, source, submit, text

START = datetime(2026, 3, 2, 9, 30, tzinfo=UTC)
CRM = "http://127.0.0.1:9"
Row = dict[str, Any]


@pytest.fixture
def clock() -> Clock:
    return Clock(START)


@pytest.fixture
def app(db_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> Flask:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")  # CRM URLs on 127.0.0.1
    return create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": clock})


@pytest.fixture
def database(app: Flask, db_path: Path) -> Database:
    return store.connect(db_path)


def organization(database: Database, name: str) -> tuple[str, str]:
    """A pro organization: its id and admin key."""
    org, value = accounts.create_organization(
        database, SECRET.encode(), START, name=name, website=f"{name.lower()}.example.org",
        tier="pro",
    )  # fmt: skip
    return org["id"], value


@pytest.fixture
def acme(database: Database) -> tuple[str, str]:
    return organization(database, "Acme")


@pytest.fixture
def signed_in(client: FlaskClient, acme: tuple[str, str]) -> FlaskClient:
    assert sign_in(client, acme[1]).status_code == 303
    return client


def post(client: FlaskClient, path: str, **data: Any) -> TestResponse:
    """Post a form with the Connections tab's CSRF token, as the browser does."""
    return submit(client, "/settings/connections", path, **data)


def add(client: FlaskClient, name: str, platform: str = "make", **extra: Any) -> TestResponse:
    return post(client, "/settings/connections", name=name, platform=platform, refresh_days=30,
                **extra)  # fmt: skip


def named(database: Database, name: str) -> dict[str, Any]:
    row = store.connection_named(database, name)
    assert row is not None
    return row


def shown_secret(response: TestResponse) -> str:
    found = re.search(
        r'id="new-secret-value" type="text" readonly value="([^"]+)"', source(response)
    )
    assert found, source(response)
    return found.group(1)


def actions(database: Database, org_id: str) -> list[str]:
    return [entry["action"] for entry in audit.entries(database, org_id)]


def test_adding_makes_a_key_of_its_own_and_shows_the_secret_once(
    signed_in: FlaskClient, database: Database, acme: tuple[str, str]
) -> None:
    response = post(signed_in, "/settings/connections", name="Zap", platform="make",
                    refresh_days=7)  # fmt: skip
    assert response.status_code == 200
    secret = shown_secret(response)
    row = named(database, "Zap")
    assert row["org_id"] == acme[0] and row["refresh_days"] == 7
    assert store.unseal(SECRET.encode(), row["secret_sealed"]) == secret
    key_value = store.unseal(SECRET.encode(), row["api_key_sealed"])
    caller = auth.authenticate(database, SECRET.encode(), key_value, START)
    assert (
        caller.org_id == acme[0]
        and caller.role == "standard"
        and caller.email == (row["own_key_email"])
    )
    page = source(signed_in.get(f"/settings/connections/{row['id']}"))
    assert secret not in page and key_value not in page and row["api_key_hint"] in page
    assert f"/hooks/{row['id']}/enrich" in page and "{# install steps #}" not in page
    assert secret not in source(signed_in.get("/settings/connections"))
    assert actions(database, acme[0])[-2:] == ["key.create", "connection.add"]


def test_a_crm_added_from_the_page_is_not_connected_until_its_credentials_are_pasted(
    signed_in: FlaskClient, database: Database
) -> None:
    refused = add(signed_in, "HubSpot", "hubspot")  # HubSpot issues its own secret
    assert refused.status_code == 303 and store.connection_named(database, "HubSpot") is None
    assert "issues the secret" in source(signed_in.get("/settings/connections"))
    assert add(signed_in, "HubSpot", "hubspot", secret="hubspot-app-secret").status_code == 200
    row = named(database, "HubSpot")
    assert "not connected" in source(signed_in.get(f"/settings/connections/{row['id']}"))
    saved = post(signed_in, f"/settings/connections/{row['id']}/crm", base_url=CRM,
                 token="pat-na1-0123456789")  # fmt: skip
    assert saved.status_code == 303
    row = named(database, "HubSpot")
    assert row["crm_base_url"] == CRM and connections.state(row) == "active"
    page = source(signed_in.get(f"/settings/connections/{row['id']}"))
    assert "pat-na1-0123456789" not in page and "…6789" in page


@pytest.mark.parametrize(
    "base_url",
    ["https://api.hubapi.com:99999", "https://[::1", "https://api.hubapi.com:443x",
     "https://[::1]:-1"],
)  # fmt: skip
def test_a_malformed_crm_url_is_refused_on_the_page_not_answered_with_a_500(
    signed_in: FlaskClient, database: Database, base_url: str
) -> None:
    add(signed_in, "HubSpot", "hubspot", secret="hubspot-app-secret")
    row = named(database, "HubSpot")
    refused = post(signed_in, f"/settings/connections/{row['id']}/crm", base_url=base_url,
                   token="pat-na1-0123456789")  # fmt: skip
    assert refused.status_code == 303
    page = source(signed_in.get(refused.location))
    assert f"{base_url!r}: not a URL" in page
    assert named(database, "HubSpot")["crm_base_url"] == ""


def test_a_hubspot_connection_signs_with_the_registered_apps_secret_when_none_is_given(
    signed_in: FlaskClient, database: Database
) -> None:
    oauth_apps.save(database, SECRET.encode(), START, platform="hubspot",
                    client_id="app-id", client_secret="the-apps-client-secret")  # fmt: skip
    assert add(signed_in, "Hub", "hubspot").status_code == 200
    row = named(database, "Hub")
    assert store.unseal(SECRET.encode(), row["secret_sealed"]) == "the-apps-client-secret"
    assert add(signed_in, "Hub 2", "hubspot", secret="its-own-secret").status_code == 200
    assert store.unseal(SECRET.encode(), named(database, "Hub 2")["secret_sealed"]) == (
        "its-own-secret"
    )
    assert add(signed_in, "Zap", "zapier").status_code == 200  # others make their own
    zap = store.unseal(SECRET.encode(), named(database, "Zap")["secret_sealed"])
    assert zap.startswith("whsec_")


def test_a_salesforce_connection_is_added_with_the_organizations_it_takes_events_from(
    signed_in: FlaskClient, database: Database
) -> None:
    refused = add(signed_in, "Salesforce", "salesforce")
    assert refused.status_code == 303 and store.connection_named(database, "Salesforce") is None
    assert "Salesforce organization" in source(signed_in.get("/settings/connections"))
    org_ids = "00D5e000000abcD, 00D5e000000abcEAAA"
    assert add(signed_in, "Salesforce", "salesforce", salesforce_org_ids=org_ids).status_code == 200
    row = named(database, "Salesforce")
    assert row["allowed_organizations"] == "00D5e000000abcD,00D5e000000abcEAAA"


def test_edit_renames_and_sets_the_refresh_interval(
    signed_in: FlaskClient, database: Database, acme: tuple[str, str]
) -> None:
    add(signed_in, "Zap")
    add(signed_in, "Other")
    row = named(database, "Zap")
    path = f"/settings/connections/{row['id']}/edit"
    assert post(signed_in, path, name="Zap 2", refresh_days=9).status_code == 303
    assert named(database, "Zap 2")["refresh_days"] == 9
    post(signed_in, path, name="Other", refresh_days=9)  # taken: refused, nothing changes
    post(signed_in, path, name="Zap 3", refresh_days=0)  # out of range
    assert named(database, "Zap 2")["refresh_days"] == 9
    assert actions(database, acme[0]).count("connection.edit") == 1


def test_paused_events_are_acknowledged_and_kept_and_enrich_refuses_until_resumed(
    signed_in: FlaskClient, database: Database, client: FlaskClient
) -> None:
    secret = shown_secret(add(signed_in, "Zap"))
    row = named(database, "Zap")
    assert post(signed_in, f"/settings/connections/{row['id']}/pause").status_code == 303
    assert connections.state(named(database, "Zap")) == "paused"
    refused = client.post(f"/hooks/{row['id']}/enrich", json={"email": "a@example.com"},
                          headers={"Authorization": f"Bearer {secret}"})  # fmt: skip
    assert refused.status_code == 409
    assert refused.get_json()["error"]["code"] == "connection_paused"
    unsigned = client.post(f"/hooks/{row['id']}/enrich", json={"email": "a@example.com"})
    assert unsigned.status_code == 401  # verified first: a paused URL tells strangers nothing
    post(signed_in, f"/settings/connections/{row['id']}/resume")
    assert connections.state(named(database, "Zap")) == "active"


def standard(secret: str, message_id: str, at: datetime) -> dict[str, str]:
    """Standard Webhooks headers signing the test body with `secret`, by the official library."""
    signature = Webhook(secret).sign(message_id, at, BODY.decode())
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
        "Content-Type": "application/json",
    }


BODY = json.dumps({"email": "nobody@example.com"}).encode()
PIPEDRIVE_EVENT = (PLATFORMS / "pipedrive_v2_person_updated.json").read_bytes()


def test_after_a_rotation_old_and_new_secrets_verify_during_the_grace_period_only(
    signed_in: FlaskClient, database: Database, client: FlaskClient, clock: Clock
) -> None:
    old = shown_secret(add(signed_in, "Zap", "zapier"))
    row = named(database, "Zap")
    rotated = post(signed_in, f"/settings/connections/{row['id']}/rotate-secret",
                   grace_seconds=3600)  # fmt: skip
    new = shown_secret(rotated)
    assert new != old and new.startswith("whsec_")
    url = f"/hooks/{row['id']}/enrich"

    def sent(secret: str, message_id: str) -> int:
        return client.post(
            url, data=BODY, headers=standard(secret, message_id, clock())
        ).status_code

    assert sent(new, "msg_new_1") != 401 and sent(old, "msg_old_1") != 401
    assert sent(connections.PLATFORMS["zapier"].new_secret(), "msg_wrong") == 401
    assert "previous secret works until" in source(
        signed_in.get(f"/settings/connections/{row['id']}")
    )
    clock.advance(3601)
    assert sent(old, "msg_old_2") == 401 and sent(new, "msg_new_2") != 401
    assert new not in source(signed_in.get(f"/settings/connections/{row['id']}"))


def test_rotating_with_no_grace_stops_the_old_secret_at_once(
    signed_in: FlaskClient, database: Database, client: FlaskClient, clock: Clock
) -> None:
    old = shown_secret(add(signed_in, "Zap", "zapier"))
    row = named(database, "Zap")
    post(signed_in, f"/settings/connections/{row['id']}/rotate-secret", grace_seconds=0)
    response = client.post(f"/hooks/{row['id']}/enrich", data=BODY,
                           headers=standard(old, "msg_1", clock()))  # fmt: skip
    assert response.status_code == 401


@pytest.fixture
def crm() -> Iterator[FakeCrm]:
    with running(FakeCrm()) as fake:
        yield fake


def pipedrive_registered(signed_in: FlaskClient, database: Database, crm: FakeCrm) -> Row:
    """A Pipedrive connection connected from the page to the loopback Pipedrive, which holds
    the webhooks the connector registered there."""
    add(signed_in, "Pipe", "pipedrive")
    row = named(database, "Pipe")
    post(signed_in, f"/settings/connections/{row['id']}/crm", base_url=crm.url,
         token="pipedrive-api-token")  # fmt: skip
    row = named(database, "Pipe")
    assert len(store.webhook_ids(row)) == 3, row
    return row


def passwords(crm: FakeCrm) -> set[str]:
    return {hook["http_auth_password"] for hook in crm.mocked["pipedrive-webhooks"].held.values()}


def delivered(client: FlaskClient, crm: FakeCrm, password: str) -> int:
    """A Pipedrive delivery to the URL its webhooks post to, with `password`: its status."""
    (url,) = {hook["subscription_url"] for hook in crm.mocked["pipedrive-webhooks"].held.values()}
    response = client.post(urlsplit(url).path, data=PIPEDRIVE_EVENT, auth=("pipedrive", password))
    return response.status_code


def test_a_rotation_registers_the_pipedrive_webhooks_again_with_the_new_secret(
    signed_in: FlaskClient, database: Database, client: FlaskClient, clock: Clock, crm: FakeCrm
) -> None:
    row = pipedrive_registered(signed_in, database, crm)
    old = store.unseal(SECRET.encode(), row["secret_sealed"])
    assert passwords(crm) == {old}

    rotated = post(signed_in, f"/settings/connections/{row['id']}/rotate-secret",
                   grace_seconds=3600)  # fmt: skip

    new, held = shown_secret(rotated), crm.mocked["pipedrive-webhooks"].held
    assert passwords(crm) == {new} and len(held) == 3  # the old ones deleted
    assert store.webhook_ids(named(database, "Pipe")) == sorted(held)
    page = text(rotated)
    assert "registered again Registered again in Pipedrive with the new secret: webhooks" in page
    assert "Copy it into Pipedrive" not in page
    clock.advance(3601)  # the grace period is over
    assert delivered(client, crm, new) == 200 and delivered(client, crm, old) == 401


def test_a_pipedrive_refusal_keeps_the_rotation_and_says_what_to_do_by_hand(
    signed_in: FlaskClient, database: Database, client: FlaskClient, crm: FakeCrm
) -> None:
    row = pipedrive_registered(signed_in, database, crm)
    old = store.unseal(SECRET.encode(), row["secret_sealed"])
    crm.mocked["pipedrive-webhooks"].failures.append(refusal(403, "Webhooks limit reached"))

    rotated = post(signed_in, f"/settings/connections/{row['id']}/rotate-secret",
                   grace_seconds=0)  # fmt: skip

    new = shown_secret(rotated)
    assert store.unseal(SECRET.encode(), named(database, "Pipe")["secret_sealed"]) == new
    page = text(rotated)
    assert (
        "not registered again Could not register the webhook again in Pipedrive with the new "
        "secret: 403 Forbidden: Webhooks limit reached; it still sends the previous one, which "
        "no longer works. Do it by hand: In Pipedrive, open Settings > Tools and apps > Webhooks "
        "and delete the webhooks whose endpoint URL is"
    ) in page
    assert f"(ending in {store.hint(new)})" in page and "Copy it into Pipedrive now" in page
    assert passwords(crm) == {old} and delivered(client, crm, new) == 200  # the page still takes it
    again = submit(signed_in, f"/settings/connections/{row['id']}",
                   f"/settings/connections/{row['id']}/webhooks")  # fmt: skip
    assert again.status_code == 303 and passwords(crm) == {new}


def test_removal_is_confirmed_then_its_urls_answer_404_and_its_key_is_suspended(
    signed_in: FlaskClient, database: Database, client: FlaskClient, acme: tuple[str, str]
) -> None:
    secret = shown_secret(add(signed_in, "Zap"))
    row = named(database, "Zap")
    confirm = signed_in.get(f"/settings/connections/{row['id']}/remove")
    assert confirm.status_code == 200 and "cannot be undone" in source(confirm)
    assert store.connection(database, row["id"]) is not None  # asking removes nothing
    removed = post(signed_in, f"/settings/connections/{row['id']}/remove")
    assert removed.status_code == 303 and store.connection(database, row["id"]) is None
    hook = client.post(f"/hooks/{row['id']}/enrich", json={},
                       headers={"Authorization": f"Bearer {secret}"})  # fmt: skip
    assert hook.status_code == 404
    key = service_store.key_by_email(database, acme[0], row["own_key_email"])
    assert key is not None and key["status"] == "suspended"
    assert actions(database, acme[0])[-2:] == ["key.suspend", "connection.remove"]


def test_another_organizations_connection_is_404_on_every_route(
    signed_in: FlaskClient, database: Database, app: Flask
) -> None:
    _, globex_key = organization(database, "Globex")
    theirs = connections.add(database, SECRET.encode(), START, name="Theirs", platform="make",
                             api_key=globex_key).row  # fmt: skip
    before = store.connection(database, theirs["id"])
    base = f"/settings/connections/{theirs['id']}"
    assert signed_in.get(base).status_code == 404
    assert signed_in.get(f"{base}/remove").status_code == 404
    for action in ("crm", "edit", "pause", "resume", "rotate-secret", "remove"):
        response = post(signed_in, f"{base}/{action}", name="Mine", refresh_days=3,
                        grace_seconds=0, base_url=CRM, token="t-123456789")  # fmt: skip
        assert response.status_code == 404, action
    assert store.connection(database, theirs["id"]) == before  # untouched
    assert "Theirs" not in source(signed_in.get("/settings/connections"))


def test_every_connection_form_needs_its_csrf_token(
    signed_in: FlaskClient, database: Database
) -> None:
    assert signed_in.post("/settings/connections", data={"name": "Zap", "platform": "make",
                          "refresh_days": 30}).status_code == 400  # fmt: skip
    assert store.connection_named(database, "Zap") is None
    add(signed_in, "Zap")
    row = named(database, "Zap")
    for action in ("edit", "pause", "rotate-secret", "remove", "crm"):
        path = f"/settings/connections/{row['id']}/{action}"
        assert signed_in.post(path, data={"name": "x", "refresh_days": 3}).status_code == 400
    assert named(database, "Zap")["secret_sealed"] == row["secret_sealed"]
    assert connections.state(named(database, "Zap")) == "active"


# --- platform names as the platforms write them (issue 37) ------------------------------------

# Lower-case platform ids that must not show in a page's copy, but in a path or file name
# (mappings/marketo.yaml): Make's and n8n's ids are their names (and "make" a word).
IDS = re.compile(
    r"(?<![/\w])(hubspot|salesforce|pipedrive|zoho|dynamics|zapier|marketo)(?![\w/]|\.\w)"
)


def copy(response: TestResponse) -> str:
    """A page's text as people read it: no code (commands), no tags."""
    body = re.sub(r"<code>.*?</code>|<script.*?</script>", " ", response.get_data(as_text=True),
                  flags=re.S)  # fmt: skip
    return " ".join(re.sub(r"<[^>]*>", " ", body).split())


def test_pages_name_each_platform_as_it_writes_itself(
    database: Database, signed_in: FlaskClient, acme: tuple[str, str]
) -> None:
    names = {"hubspot": "HubSpot", "salesforce": "Salesforce", "pipedrive": "Pipedrive",
             "zoho": "Zoho CRM", "dynamics": "Microsoft Dynamics 365", "zapier": "Zapier",
             "make": "Make", "n8n": "n8n", "marketo": "Marketo"}  # fmt: skip
    for platform in names:
        extra = {"secret": "issued-secret"} if platform == "hubspot" else {}
        if platform == "salesforce":
            extra = {"salesforce_org_ids": "00D5e000000abcD"}
        assert add(signed_in, f"Acme {names[platform]}", platform, **extra).status_code == 200

    listed = signed_in.get("/settings/connections")
    assert IDS.findall(copy(listed)) == []
    for row in store.connections(database):
        page = signed_in.get(f"/settings/connections/{row['id']}")
        shown = copy(page)
        assert IDS.findall(shown) == [], row["platform"]
        assert f"Installation in {names[row['platform']]}" in shown
    assert "Signing secret the platform issued (only HubSpot; " in copy(listed)
    assert "organization ids allowed to send (only Salesforce; " in copy(listed)
