"""Connect finishes the installation where the CRM's API allows (issue 37, connector/install.py's
`complete`): after the OAuth callback (or a pasted token) the connector creates the custom
fields the mapping writes and the CRM lacks (HubSpot's properties, Pipedrive's person fields,
the mapping then writing to the key Pipedrive gave), registers the webhooks it can (Pipedrive),
and the connection's page lists only the steps left; a refusal says so in the CRM's words and
keeps the connection. The button reads Reconnect once connected. Against the loopback fake CRM
and fake authorization servers, every call held to the vendors' descriptions."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlite_utils import Database

import server
from connector import connections, mapping_versions, mappings, oauth_apps, store
from connector.app import create_app
from server import audit
from tests.helpers.clock import Clock
from tests.helpers.constants import NOW, SECRET
from tests.helpers.crm_server import Call, FakeCrm, Reply, running
from tests.helpers.hubspot_developer import FakeHubSpotDeveloper
from tests.helpers.oauth_server import CLIENT_ID, CLIENT_SECRET, FakeAuthServer
from tests.helpers.oauth_server import running as authorizing
from tests.helpers.orgs import organization
from tests.helpers.pipedrive import HeldPipedrive
from tests.helpers.settings_forms import signed_in, source, token
from tests.helpers.zoho_crm import FakeZohoRecords

PUBLIC_URL = "https://connector.example.com"
HASH_KEY = re.compile(r"[0-9a-f]{40}")
HUBSPOT_MISSING = "contactdata_job_functions"  # a property the HubSpot contacts mapping writes
FIELDS_STEP = "Create the contactdata_* contact and company properties the mapping writes."
ZOHO_MISSING = "ContactData_Industry"  # a field the Zoho leads mapping writes
ZOHO_FIELDS_STEP = (
    "Create the ContactData_* fields of Contacts, Leads and Accounts the mapping writes."
)


@pytest.fixture
def crm() -> Iterator[FakeCrm]:
    with running(FakeCrm()) as fake:
        yield fake


@pytest.fixture
def app(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Flask:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")  # the fakes are on loopback
    config = {"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": Clock(NOW),
              "PUBLIC_URL": PUBLIC_URL}  # fmt: skip
    return create_app(config)


@pytest.fixture
def database(app: Flask, db_path: Path) -> Database:
    return store.connect(db_path)


@pytest.fixture
def acme(database: Database) -> tuple[str, str]:
    row, key = organization(database, "Acme", credits=100)
    return str(row["id"]), key


@contextmanager
def authorized(platform: str, crm: FakeCrm, database: Database) -> Iterator[FakeAuthServer]:
    """The platform's fake authorization server, naming the fake CRM as the API base, and the
    operator's app pointed at it (HubSpot's token endpoint is on its API host)."""
    with authorizing(platform) as auth:
        auth.api_base = crm.url
        token_url = auth.token_url
        if platform == "hubspot":
            crm.hubspot_oauth = auth
            token_url = f"{crm.url}/oauth/2026-03/token"
        oauth_apps.save(
            database, SECRET.encode(), NOW, platform=platform, client_id=CLIENT_ID,
            client_secret=CLIENT_SECRET, authorize_url=auth.authorize_url, token_url=token_url,
        )  # fmt: skip
        yield auth


def added(database: Database, key: str, platform: str) -> str:
    """A connection not yet connected to its CRM."""
    extra = {"secret": CLIENT_SECRET} if platform == "hubspot" else {}
    link = connections.add(database, SECRET.encode(), NOW, name="Acme CRM", platform=platform,
                           api_key=key, connected=False, **extra)  # fmt: skip
    return str(link.row["id"])


def connect(client: FlaskClient, link_id: str, again: bool = False) -> str:
    """Press Connect (Reconnect, `again`), agree on the fake consent page, come back: the
    connection's page."""
    page = client.get(f"/settings/connections/{link_id}")
    button = "Reconnect with" if again else "Connect with"
    assert button in source(page) and ("Reconnect with" in source(page)) == again
    started = client.post(f"/settings/connections/{link_id}/connect",
                          data={"csrf_token": token(page)})  # fmt: skip
    assert started.status_code == 303
    callback = httpx.get(started.location, follow_redirects=False).headers["location"]
    done = client.get(callback.removeprefix(PUBLIC_URL))
    assert done.status_code == 303 and done.location == f"/settings/connections/{link_id}"
    return source(client.get(done.location))


def install_section(page: str) -> str:
    """The connection page's installation section."""
    found = re.search(r'<section[^>]*aria-labelledby="install-title">(.*?)</section>', page, re.S)
    assert found, "no installation section"
    return found.group(1)


def test_hubspot_connect_creates_the_missing_properties_and_drops_that_step(
    app: Flask, database: Database, acme: tuple[str, str], crm: FakeCrm
) -> None:
    org_id, key = acme
    crm.properties["contacts"] = [
        p for p in crm.properties["contacts"] if p["name"] != HUBSPOT_MISSING
    ]
    link_id = added(database, key, "hubspot")
    client = signed_in(app, key)
    before = install_section(source(client.get(f"/settings/connections/{link_id}")))
    assert FIELDS_STEP in before

    with authorized("hubspot", crm, database):
        page = connect(client, link_id)

    created = [c for c in crm.calls if c.method == "POST" and "/properties/" in c.path]
    assert [(c.path, c.body["name"], c.body["type"]) for c in created] == [
        ("/crm/properties/2026-03/contacts", HUBSPOT_MISSING, "string")
    ]
    assert "Acme CRM is connected to HubSpot." in page
    assert f"Created in HubSpot: {created[0].body['label']} ({HUBSPOT_MISSING})." in page
    section = install_section(page)
    assert FIELDS_STEP not in section and "fields by the connector" in section
    assert "Left to do in HubSpot:" in section and "Send a webhook" in section
    assert "Reconnect with HubSpot" in page and "Connect with HubSpot" not in page
    logged = [e for e in audit.entries(database, org_id) if e["action"] == "connection.install"]
    assert len(logged) == 1 and HUBSPOT_MISSING in json.loads(logged[0]["detail"])["outcomes"][0]


def test_a_refused_property_creation_says_why_and_keeps_the_connection(
    app: Flask, database: Database, acme: tuple[str, str], crm: FakeCrm
) -> None:
    _, key = acme
    link_id = added(database, key, "hubspot")
    client = signed_in(app, key)
    crm.properties_refused = True  # the grant lacks crm.schemas.contacts.read

    with authorized("hubspot", crm, database):
        page = connect(client, link_id)

    assert "Acme CRM is connected to HubSpot." in page
    said = "Could not create the custom fields the mapping writes in HubSpot: "
    assert said in page and "token expired or revoked" in page
    assert "Create missing fields" in page
    row = store.connection(database, link_id)
    assert row is not None and row["crm_base_url"] == crm.url


def test_pipedrive_connect_creates_the_field_registers_webhooks_and_maps_the_new_key(
    app: Flask, database: Database, acme: tuple[str, str], crm: FakeCrm
) -> None:
    _, key = acme
    link_id = added(database, key, "pipedrive")
    link = store.connection(database, link_id)
    assert link is not None
    _, text = mapping_versions.current_text(database, link, "contacts")
    rows = [{"field": "conJobTitleEn", "property": "contactdata_job_title", "policy": "always"}]
    with_title = mapping_versions.with_outputs(text, [*_outputs(text), *rows])
    with server.write(database):
        mapping_versions.save(database, link, "contacts", with_title, NOW, "test")
    client = signed_in(app, key)

    with authorized("pipedrive", crm, database):
        page = connect(client, link_id)

    pipedrive = crm.mocked["pipedrive"]
    assert isinstance(pipedrive, HeldPipedrive)
    assert pipedrive.sent("POST") == [
        ("/api/v2/personFields", {"field_name": "Contactdata job title", "field_type": "varchar"})
    ]  # only the connector's own: the fake lists no organization field, none is made up
    assert 'class="message message-error' not in page
    made = pipedrive.fields["personFields"][-1]["field_code"]
    assert HASH_KEY.fullmatch(made) and f"Contactdata job title ({made})" in page
    mapping = mapping_versions.current(database, link, "contacts")
    assert [r.property for r in mapping.output if r.field == "conJobTitleEn"] == [made]
    section = install_section(page)
    assert "registered" in section and "<ol" not in section  # nothing left to do by hand
    assert "Registered in Pipedrive" in page


def test_a_pasted_token_finishes_the_installation_too(
    app: Flask, database: Database, acme: tuple[str, str], crm: FakeCrm
) -> None:
    _, key = acme
    crm.properties["contacts"] = [
        p for p in crm.properties["contacts"] if p["name"] != HUBSPOT_MISSING
    ]
    link_id = added(database, key, "hubspot")
    client = signed_in(app, key)
    path = f"/settings/connections/{link_id}"
    form = {"csrf_token": token(client.get(path)), "base_url": crm.url, "token": "pat-na1-1"}

    done = client.post(f"{path}/crm", data=form)

    page = source(client.get(done.location))
    assert f"Created in HubSpot: Contactdata job functions ({HUBSPOT_MISSING})." in page
    assert FIELDS_STEP not in install_section(page)


def test_salesforce_fields_are_left_to_the_admin_and_their_step_stays(
    app: Flask, database: Database, acme: tuple[str, str], crm: FakeCrm
) -> None:
    _, key = acme
    link_id = connections.add(
        database, SECRET.encode(), NOW, name="Acme CRM", platform="salesforce", api_key=key,
        salesforce_org_ids=("00D5e000000abcD",), connected=False,
    ).row["id"]  # fmt: skip
    client = signed_in(app, key)

    with authorized("salesforce", crm, database):
        page = connect(client, str(link_id))

    assert not [c for c in crm.calls if c.method == "POST" and "tooling" in c.path]
    section = install_section(page)
    assert "Create the ContactData_*__c fields the mapping writes." in section
    assert "fields by the connector" not in section and "Left to do in Salesforce:" in section
    assert "Reconnect with Salesforce" in page


def _outputs(text: str) -> list[dict[str, str]]:
    """The rows of a mapping's outputs, as the editor posts them."""
    return [{"field": r.field, "property": r.property, "transforms": " ".join(r.transforms),
             "policy": r.policy} for r in mappings.parse(text, "pipedrive").output]  # fmt: skip


def test_a_missing_property_not_the_connectors_own_is_never_made_up(
    app: Flask, database: Database, acme: tuple[str, str], crm: FakeCrm
) -> None:
    """HubSpot's own jobtitle missing from the list read (a scope, a partial answer) is left
    to the mapping editor to report: connecting creates only contactdata_* properties."""
    _, key = acme
    crm.properties["contacts"] = [p for p in crm.properties["contacts"] if p["name"] != "jobtitle"]
    link_id = added(database, key, "hubspot")
    client = signed_in(app, key)

    with authorized("hubspot", crm, database):
        page = connect(client, link_id)

    assert [c for c in crm.calls if c.method == "POST" and "/properties/" in c.path] == []
    assert "Created in HubSpot" not in page and 'class="message message-error' not in page


def test_zoho_connect_creates_the_missing_fields_under_the_names_the_mapping_writes(
    app: Flask, database: Database, acme: tuple[str, str], crm: FakeCrm
) -> None:
    zoho = crm.mocked["zoho"]
    assert isinstance(zoho, FakeZohoRecords)
    zoho.fields["Leads"] = [f for f in zoho.fields["Leads"] if f["api_name"] != ZOHO_MISSING]
    link_id = added(database, key := acme[1], "zoho")
    client = signed_in(app, key)
    before = install_section(source(client.get(f"/settings/connections/{link_id}")))
    assert ZOHO_FIELDS_STEP in before

    with authorized("zoho", crm, database) as auth:
        page = connect(client, link_id)

    assert "ZohoCRM.settings.fields.CREATE" in auth.seen.authorized[-1]["scope"].split(",")
    created = [r for r in zoho.requests if r.method == "POST" and "/settings/" in r.url.path]
    assert [(r.url.params["module"], json.loads(r.content)) for r in created] == [
        ("Leads", {"fields": [{"field_label": "ContactData Industry", "data_type": "text",
                               "length": 255}]})
    ]  # fmt: skip
    assert f"Created in Zoho CRM: ContactData Industry ({ZOHO_MISSING})." in page
    assert 'class="message message-error' not in page
    link = store.connection(database, link_id)
    assert link is not None
    leads = mapping_versions.current(database, link, "leads")
    assert ZOHO_MISSING in [rule.property for rule in leads.output]  # written as it was
    section = install_section(page)
    assert ZOHO_FIELDS_STEP not in section and "fields by the connector" in section


APP_ID, DEVELOPER_KEY = "1234567", "developer-key-1"
APP_EVENTS = f"{PUBLIC_URL}/hooks/hubspot/events"
APP_STEP = "Or the app's webhook subscriptions"


class HubSpotWithApp(FakeCrm):
    """The loopback HubSpot answering, on its one API host, the developer API of the app
    APP_ID too (tests/helpers/hubspot_developer.py's webhook settings and subscriptions)."""

    def __init__(self) -> None:
        super().__init__()
        self.developer = FakeHubSpotDeveloper(APP_ID, DEVELOPER_KEY)
        self.developer.server_close()  # its answers only: the CRM's server serves them

    def route(self, call: Call) -> Reply:
        if not call.path.startswith("/webhooks/"):
            return super().route(call)
        status, body = self.developer.answer(
            call.method, f"{call.path}?{urlencode(call.query)}", call.body
        )
        return Reply(status, body)


@pytest.fixture
def app_hub() -> Iterator[HubSpotWithApp]:
    with running(HubSpotWithApp()) as fake:
        yield fake


def with_developer(database: Database) -> None:
    """The operator's HubSpot app registered again with its id and developer key."""
    app = store.oauth_app(database, "hubspot")
    assert app is not None
    oauth_apps.save(
        database, SECRET.encode(), NOW, platform="hubspot", client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET, authorize_url=app["authorize_url"],
        token_url=app["token_url"], app_id=APP_ID, developer_key=DEVELOPER_KEY,
    )  # fmt: skip


def test_hubspot_connect_sets_the_apps_target_url_and_subscriptions_once(
    app: Flask, database: Database, acme: tuple[str, str], app_hub: HubSpotWithApp
) -> None:
    _, key = acme
    link_id = added(database, key, "hubspot")
    client = signed_in(app, key)
    assert APP_EVENTS in install_section(source(client.get(f"/settings/connections/{link_id}")))

    with authorized("hubspot", app_hub, database):
        with_developer(database)
        page = connect(client, link_id)
        again = connect(client, link_id, again=True)  # nothing made twice

    developer = app_hub.developer
    assert developer.settings is not None and developer.settings["targetUrl"] == APP_EVENTS
    assert developer.settings["throttling"] == {"maxConcurrentRequests": 10}
    made = {(s["eventType"], s.get("propertyName", "")) for s in developer.subscriptions.values()}
    assert {("contact.creation", ""), ("contact.propertyChange", "email"),
            ("company.creation", ""), ("company.propertyChange", "domain")} <= made  # fmt: skip
    assert not any(name.startswith("contactdata_") for _, name in made)  # never our own writes
    assert len(made) == len(developer.subscriptions)
    assert all(call["key"] == DEVELOPER_KEY for call in developer.calls)
    assert "Subscribed the HubSpot app to: contact.creation, contact.propertyChange" in page
    assert "The HubSpot app's webhook subscriptions were in place." in again
    assert [c["method"] for c in developer.calls].count("POST") == len(made)
    section = install_section(again)
    assert APP_STEP not in section and "app subscriptions by the connector" in section
    assert DEVELOPER_KEY not in page + again


def test_a_paused_subscription_is_activated_and_a_refusal_says_what_to_do(
    app: Flask, database: Database, acme: tuple[str, str], app_hub: HubSpotWithApp
) -> None:
    _, key = acme
    developer = app_hub.developer
    paused = {"id": "77", "eventType": "contact.creation", "active": False,
              "createdAt": "2026-01-05T09:30:00.000Z"}  # fmt: skip
    developer.subscriptions["77"] = paused
    link_id = added(database, key, "hubspot")
    client = signed_in(app, key)

    with authorized("hubspot", app_hub, database):
        with_developer(database)
        connect(client, link_id)
        developer.key = "another-key"  # the developer key was replaced in HubSpot since
        refused = connect(client, link_id, again=True)

    assert developer.subscriptions["77"]["active"] is True
    assert ("PATCH", f"/webhooks/2026-03/{APP_ID}/subscriptions/77") in [
        (c["method"], c["path"]) for c in developer.calls
    ]
    said = "Could not set the HubSpot app's webhook subscriptions: 401"
    assert said in refused and f"set the target URL {APP_EVENTS}" in refused
    assert "Acme CRM is connected to HubSpot." in refused


def test_without_developer_credentials_the_subscriptions_step_stays(
    app: Flask, database: Database, acme: tuple[str, str], app_hub: HubSpotWithApp
) -> None:
    _, key = acme
    link_id = added(database, key, "hubspot")
    client = signed_in(app, key)

    with authorized("hubspot", app_hub, database):
        page = connect(client, link_id)

    assert app_hub.developer.calls == []
    section = install_section(page)
    assert APP_STEP in section and APP_EVENTS in section
    assert "--developer-key" in section and "app subscriptions by the connector" not in section
    assert "Left to do in HubSpot:" in section
