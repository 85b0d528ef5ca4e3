"""HubSpot as a public app: the app's one events URL and one action URL serve every installed
account, each request signed (v3) with the registered app's client secret by HubSpot's own
client and routed by portal id to that account's connection; and `contactdata hubspot
register-action` creating, then updating, the app's custom workflow action definition on a
loopback fake HubSpot."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient
from hubspot import webhooks as sdk_webhooks
from hubspot.automation import actions as sdk_actions
from hubspot.utils.signature import Signature
from werkzeug.test import TestResponse

from connector import connections, jobs, mappings, oauth_apps, store
from connector.cli import main
from connector.platforms import hubspot
from server import importer
from server.storage import db
from tests.helpers.clock import Clock
from tests.helpers.constants import AVA, CRM, DATA, NOW, PLATFORMS, SECRET
from tests.helpers.hubspot_developer import FakeHubSpotDeveloper, sdk_model, sdk_refusal
from tests.helpers.orgs import organization

APP_SECRET = "app-client-secret-0123456789"
EVENTS = "http://localhost/hooks/hubspot/events"
ACTION = "http://localhost/hooks/hubspot/action"
ACME_PORTAL, GLOBEX_PORTAL, STRANGER_PORTAL = 62515, 77001, 99999


@pytest.fixture
def portals(connector_app: Flask, db_path: Path) -> dict[int, connections.Added]:
    """The HubSpot app registered, and two organizations each with a HubSpot connection to
    their own portal (set as the OAuth callback sets it)."""
    database = store.connect(db_path)
    importer.import_files(
        database,
        companies=DATA / "discover_companies.csv",
        contacts=DATA / "discover_contacts.csv",
    )
    oauth_apps.save(database, SECRET.encode(), NOW, platform="hubspot", client_id="app-1",
                    client_secret=APP_SECRET)  # fmt: skip
    found = {}
    for name, portal in (("Acme", ACME_PORTAL), ("Globex", GLOBEX_PORTAL)):
        _, key = organization(database, name, credits=10)
        link = connections.add(database, SECRET.encode(), NOW, name=name, platform="hubspot",
                               api_key=key, crm_base_url=CRM, crm_token="t",
                               secret=f"{name}-connection-secret")  # fmt: skip
        connections.set_crm(database, SECRET.encode(), link.row["id"], base_url=CRM,
                            token="t", account_id=str(portal))  # fmt: skip
        found[portal] = link
    return found


@pytest.fixture
def client(connector_app: Flask) -> FlaskClient:
    return connector_app.test_client()


def _signed(url: str, body: bytes, secret: str = APP_SECRET, at: datetime = NOW) -> dict[str, str]:
    """The v3 headers HubSpot sends with `body` to `url`, made by HubSpot's own client."""
    stamp = str(int(at.timestamp() * 1000))
    signature = Signature.get_signature(secret, body.decode(), "v3", http_uri=url, timestamp=stamp)
    return {
        "X-HubSpot-Signature-v3": signature,
        "X-HubSpot-Request-Timestamp": stamp,
        "Content-Type": "application/json",
    }


def _post(client: FlaskClient, url: str, payload: Any, secret: str = APP_SECRET) -> TestResponse:
    body = json.dumps(payload).encode()
    return client.post(url, data=body, headers=_signed(url, body, secret))


def _batch(*portal_and_object: tuple[int, int]) -> list[dict[str, Any]]:
    """A Webhooks API batch: HubSpot's sample event, once for each (portal, contact)."""
    sample = json.loads((PLATFORMS / "hubspot_webhooks_api_event_batch.json").read_text())[0]
    return [
        {**sample, "eventId": n, "portalId": portal, "objectId": record}
        for n, (portal, record) in enumerate(portal_and_object, start=1)
    ]


def _stored(db_path: Path, link: connections.Added) -> list[str]:
    return [row["record_id"] for row in store.events_of(db.connect(db_path), link.row["id"])]


def _all_events(db_path: Path) -> int:
    return db.connect(db_path).execute("SELECT count(*) FROM events").fetchone()[0]


def test_one_batch_of_two_portals_reaches_each_portals_connection(
    client: FlaskClient, portals: dict[int, connections.Added], db_path: Path
) -> None:
    batch = _batch((ACME_PORTAL, 101), (GLOBEX_PORTAL, 201), (ACME_PORTAL, 102))
    response = _post(client, EVENTS, batch)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.get_json() == {"accepted": 3, "unrouted": 0}
    assert _stored(db_path, portals[ACME_PORTAL]) == ["101", "102"]
    assert _stored(db_path, portals[GLOBEX_PORTAL]) == ["201"]
    again = _post(client, EVENTS, batch)  # HubSpot's retry: each event stored once
    assert again.status_code == 200 and _all_events(db_path) == 3


def test_a_wrong_signature_is_401_in_the_contracts_shape_and_stores_nothing(
    client: FlaskClient, portals: dict[int, connections.Added], db_path: Path
) -> None:
    connection_secret = portals[ACME_PORTAL].secret  # a connection's own secret is not the app's
    for secret in ("not-the-app-secret", connection_secret):
        response = _post(client, EVENTS, _batch((ACME_PORTAL, 101)), secret)
        assert response.status_code == 401
        error = response.get_json()["error"]
        assert error["code"] == "invalid_signature" and error["status"] == 401
        assert error["message"] and APP_SECRET not in response.get_data(as_text=True)
    unsigned = client.post(EVENTS, json=_batch((ACME_PORTAL, 101)))
    assert unsigned.status_code == 401 and _all_events(db_path) == 0


def test_events_of_a_portal_with_no_connection_are_acknowledged_not_stored(
    client: FlaskClient,
    portals: dict[int, connections.Added],
    db_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    batch = _batch((STRANGER_PORTAL, 301), (GLOBEX_PORTAL, 201), (STRANGER_PORTAL, 302))
    response = _post(client, EVENTS, batch)
    assert response.status_code == 200
    assert response.get_json() == {"accepted": 1, "unrouted": 2}
    assert _all_events(db_path) == 1 and _stored(db_path, portals[GLOBEX_PORTAL]) == ["201"]
    assert f"2 events of HubSpot portal {STRANGER_PORTAL}" in caplog.text


def test_without_a_registered_app_nothing_verifies(
    client: FlaskClient, portals: dict[int, connections.Added], db_path: Path
) -> None:
    oauth_apps.remove(store.connect(db_path), "hubspot")
    response = _post(client, EVENTS, _batch((ACME_PORTAL, 101)))
    assert (
        response.status_code == 401
        and "oauth-app set hubspot" in response.get_json()["error"]["message"]
    )


def test_a_workflow_webhook_object_is_not_an_app_event_batch(
    client: FlaskClient, portals: dict[int, connections.Added]
) -> None:
    response = _post(client, EVENTS, {"vid": 1, "portal-id": ACME_PORTAL})
    assert response.status_code == 400
    assert response.get_json()["error"]["code"] == "invalid_payload"


def _action(portal: int, callback: str, email: str = AVA) -> dict[str, Any]:
    request = json.loads((PLATFORMS / "hubspot_custom_action_execution_request.json").read_text())
    request["origin"]["portalId"] = portal
    request["callbackId"] = callback
    request["object"]["properties"]["email"] = email
    return request


def _charged(db_path: Path, link: connections.Added) -> int:
    sql = "SELECT credits FROM organizations WHERE id = ?"
    return db.connect(db_path).execute(sql, [link.row["org_id"]]).fetchone()[0]


def test_an_action_request_is_enriched_for_the_connection_of_its_portal(
    client: FlaskClient, portals: dict[int, connections.Added], db_path: Path
) -> None:
    response = _post(client, ACTION, _action(GLOBEX_PORTAL, "ap-1"))
    assert response.status_code == 200, response.get_data(as_text=True)
    output = response.get_json()["outputFields"]
    assert output["hs_execution_state"] == "SUCCESS"
    assert output["jobtitle"] == "Vice President of Sales"
    assert response.headers["credits-deducted"] == "1" and response.headers["smarteTransactionId"]
    assert (_charged(db_path, portals[GLOBEX_PORTAL]), _charged(db_path, portals[ACME_PORTAL])) == (
        9,
        10,
    )
    copy = _post(client, ACTION, _action(GLOBEX_PORTAL, "ap-1"))  # one callbackId: answered once
    assert copy.get_json() == response.get_json() and _charged(db_path, portals[GLOBEX_PORTAL]) == 9


def test_an_action_of_an_unconnected_portal_fails_and_lets_the_workflow_go_on(
    client: FlaskClient, portals: dict[int, connections.Added], db_path: Path
) -> None:
    response = _post(client, ACTION, _action(STRANGER_PORTAL, "ap-2"))
    assert response.status_code == 200
    output = response.get_json()["outputFields"]
    assert output["hs_execution_state"] == "FAIL_CONTINUE"
    assert str(STRANGER_PORTAL) in output["contactdata_error"]
    assert response.headers["credits-deducted"] == "0"
    wrong = _post(client, ACTION, _action(ACME_PORTAL, "ap-3"), "not-the-app-secret")
    assert wrong.status_code == 401 and wrong.get_json()["error"]["code"] == "invalid_signature"
    assert _charged(db_path, portals[ACME_PORTAL]) == 10


# --- contactdata hubspot register-action ---------------------------------------------------


def _signed_v2(url: str, body: bytes) -> dict[str, str]:
    """The v2 header alone (timeless: method, URL and body), by HubSpot's own client."""
    signature = Signature.get_signature(
        APP_SECRET, body.decode(), "v2", http_uri=url, http_method="POST"
    )
    return {"X-HubSpot-Signature": signature, "X-HubSpot-Signature-Version": "v2",
            "Content-Type": "application/json"}  # fmt: skip


def test_once_the_app_has_received_v3_on_actions_a_v2_copy_is_refused(
    client: FlaskClient, portals: dict[int, connections.Added], db_path: Path
) -> None:
    """As on a connection's URLs: a captured action stripped of its v3 headers is refused
    rather than verified by its v2 signature, which never expires."""
    body = json.dumps(_action(ACME_PORTAL, "ap-v2")).encode()
    before = client.post(ACTION, data=body, headers=_signed_v2(ACTION, body))
    assert before.status_code == 200  # no v3 seen yet: v2, as HubSpot documents actions
    assert _post(client, ACTION, _action(ACME_PORTAL, "ap-v3")).status_code == 200
    other = json.dumps(_action(ACME_PORTAL, "ap-v2-again")).encode()
    refused = client.post(ACTION, data=other, headers=_signed_v2(ACTION, other))
    assert refused.status_code == 401
    assert (
        "This HubSpot app has received HubSpot's v3 signature on custom-action requests"
        in (refused.get_json()["error"]["message"])
    )
    assert _charged(db_path, portals[ACME_PORTAL]) == 8
    events = json.dumps(_batch((ACME_PORTAL, 1))).encode()  # another kind: v1 still taken
    assert client.post(EVENTS, data=events, headers=_signed(EVENTS, events)).status_code == 200


def test_an_action_replayed_however_late_is_never_charged_again(
    connector_app: Flask, portals: dict[int, connections.Added], db_path: Path, clock: Clock
) -> None:
    """Its answer is kept a day (then blanked: it holds personal data), its callbackId for
    good: a v2 copy a month later fails, answered once already, charged nothing."""
    client = connector_app.test_client()
    body = json.dumps(_action(GLOBEX_PORTAL, "ap-late")).encode()
    first = client.post(ACTION, data=body, headers=_signed_v2(ACTION, body))
    assert first.get_json()["outputFields"]["hs_execution_state"] == "SUCCESS"
    clock.now = NOW + timedelta(days=30)
    assert "kept answers" in jobs.purge_deliveries(store.connect(db_path), clock.now)
    late = client.post(ACTION, data=body, headers=_signed_v2(ACTION, body))
    output = late.get_json()["outputFields"]
    assert output["hs_execution_state"] == "FAIL_CONTINUE"
    assert output["contactdata_error"] == (
        "This execution was answered on 2026-11-23; it is not answered again."
    )
    assert late.headers["credits-deducted"] == "0" and late.headers["Idempotent-Replayed"] == "true"
    assert _charged(db_path, portals[GLOBEX_PORTAL]) == 9
    kept = list(db.connect(db_path).query("SELECT body FROM webhook_replays"))
    assert kept == [{"body": ""}]  # no personal data kept past the day


@pytest.fixture
def developer(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHubSpotDeveloper]:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    monkeypatch.setenv("CONTACTDATA_PUBLIC_URL", "https://connector.example")
    with FakeHubSpotDeveloper.running(app_id="4242", key="dev-key-1") as fake:
        yield fake


def _register(developer: FakeHubSpotDeveloper, *extra: str) -> dict[str, Any]:
    args = ["hubspot", "register-action", "--app-id", "4242", "--base-url", developer.url,
            "--json", *extra]  # fmt: skip
    result = CliRunner().invoke(main, args, env={"CONTACTDATA_HUBSPOT_DEVELOPER_KEY": "dev-key-1"})
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_register_action_creates_then_updates_one_definition(
    developer: FakeHubSpotDeveloper,
) -> None:
    first = _register(developer)
    assert first["created"] is True and len(developer.definitions) == 1
    again = _register(developer, "--publish")
    assert again == {"id": first["id"], "created": False, "published": True}
    assert len(developer.definitions) == 1 and developer.methods() == [
        "GET",
        "POST",
        "GET",
        "PATCH",
    ]
    assert all(call["key"] == "dev-key-1" for call in developer.calls)
    definition = developer.definitions[first["id"]]
    assert definition["published"] is True
    assert definition["actionUrl"] == "https://connector.example/hooks/hubspot/action"
    assert definition["objectTypes"] == ["CONTACT"]


def test_the_definition_declares_the_mappings_inputs_and_typed_outputs(
    developer: FakeHubSpotDeveloper,
) -> None:
    created = _register(developer)
    definition = developer.definitions[created["id"]]
    mapping = mappings.load(mappings.DIRECTORY / "hubspot.yaml")
    inputs = {field["typeDefinition"]["name"]: field for field in definition["inputFields"]}
    assert set(inputs) == {
        "email", "firstname", "lastname", "jobtitle", "company", "website", "linkedin_url",
        "country", "contactdata_contact_guid",
    }  # fmt: skip
    assert inputs["email"]["typeDefinition"] == {"name": "email", **TEXT}
    assert inputs["email"]["supportedValueTypes"] == ["OBJECT_PROPERTY", "STATIC_VALUE"]
    outputs = {f["typeDefinition"]["name"]: f["typeDefinition"] for f in definition["outputFields"]}
    assert set(outputs) == {rule.property for rule in mapping.output} | {"contactdata_error"}
    assert outputs["jobtitle"] == {"name": "jobtitle", **TEXT}
    assert definition["objectRequestOptions"]["properties"] == sorted(inputs)
    labels = definition["labels"]["en"]
    assert labels["actionName"] and set(labels["inputFieldLabels"]) == set(inputs)
    assert set(labels["outputFieldLabels"]) == set(outputs)


def test_a_company_action_types_its_number_outputs(developer: FakeHubSpotDeveloper) -> None:
    created = _register(developer, "--object", "companies")
    definition = developer.definitions[created["id"]]
    outputs = {f["typeDefinition"]["name"]: f["typeDefinition"] for f in definition["outputFields"]}
    assert definition["objectTypes"] == ["COMPANY"]
    assert outputs["numberofemployees"] == {"name": "numberofemployees", "type": "number",
                                            "fieldType": "number", **NO_OPTIONS}  # fmt: skip
    contacts = _register(developer)  # another object's action is another definition
    assert contacts["created"] is True and len(developer.definitions) == 2


# A field type's `options` and `externalOptions`, which the specification (and the SDK's
# FieldTypeDefinition) mark required: our fields have no options.
NO_OPTIONS = {"options": [], "externalOptions": False}
TEXT = {"type": "string", "fieldType": "text", **NO_OPTIONS}


@pytest.mark.parametrize("mapping", ["hubspot.yaml", "hubspot.companies.yaml"])
def test_the_create_and_update_bodies_are_the_sdks_models(mapping: str) -> None:
    """hubspot-api-client's PublicActionDefinitionEgg (create) and PublicActionDefinitionPatch
    (update), validating as they load, take each body and give it back unchanged: no
    required field missing (the create's `functions`; each field type's `options` and
    `externalOptions`), none the model does not know."""
    loaded = mappings.load(mappings.DIRECTORY / mapping)
    created = hubspot.action_definition(loaded, ACTION, published=False)
    updated = hubspot.action_patch(created)
    client = sdk_actions.ApiClient()
    egg = sdk_model("PublicActionDefinitionEgg", created)
    patch = sdk_model("PublicActionDefinitionPatch", updated)
    assert isinstance(egg, sdk_actions.PublicActionDefinitionEgg) and egg.functions == []
    assert client.sanitize_for_serialization(egg) == created
    assert client.sanitize_for_serialization(patch) == updated
    assert set(created) - set(updated) == {"functions"}


def test_the_sdk_refuses_a_definition_without_the_required_fields() -> None:
    """The check above is not vacuous: what the body lacked before, `functions` on create
    and a field type's `options` or `externalOptions`, each makes the SDK refuse it."""
    loaded = mappings.load(mappings.DIRECTORY / "hubspot.yaml")
    created = hubspot.action_definition(loaded, ACTION, published=False)
    without_functions = hubspot.action_patch(created)
    assert "`functions`" in sdk_refusal("PublicActionDefinitionEgg", without_functions)
    for missing in NO_OPTIONS:
        typed = {key: value for key, value in TEXT.items() if key != missing}
        bare = {**without_functions, "outputFields": [{"typeDefinition": {"name": "x", **typed}}]}
        assert f"`{_snake(missing)}`" in sdk_refusal("PublicActionDefinitionPatch", bare)


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def test_register_action_sends_the_update_without_functions(
    developer: FakeHubSpotDeveloper,
) -> None:
    _register(developer)
    _register(developer, "--publish")
    create, update = (call["body"] for call in developer.calls if call["body"] is not None)
    assert create["functions"] == [] and "functions" not in update
    assert update == hubspot.action_patch({**create, "published": True})


def test_a_refused_developer_key_fails_the_command_without_showing_it(
    developer: FakeHubSpotDeveloper,
) -> None:
    args = ["hubspot", "register-action", "--app-id", "4242", "--base-url", developer.url]
    result = CliRunner().invoke(main, args, env={"CONTACTDATA_HUBSPOT_DEVELOPER_KEY": "wrong-key"})
    assert result.exit_code != 0 and "401" in result.output
    assert "wrong-key" not in result.output and developer.definitions == {}


def test_the_apps_subscriptions_are_creation_and_changes_of_what_the_mappings_read() -> None:
    """Never a change of a property the mapping always writes (its own contactdata_*), whose
    every write would come back as an event; each body one the SDK's model takes."""
    read = {"contacts": mappings.load(mappings.DIRECTORY / "hubspot.yaml"),
            "companies": mappings.load(mappings.DIRECTORY / "hubspot.companies.yaml")}  # fmt: skip

    wanted = hubspot.app_subscriptions(read)

    assert [(s["eventType"], s.get("propertyName", "")) for s in wanted] == [
        ("contact.creation", ""),
        *[("contact.propertyChange", name) for name in (
            "company", "country", "email", "firstname", "jobtitle", "lastname", "linkedin_url",
            "website")],
        ("company.creation", ""),
        *[("company.propertyChange", name) for name in (
            "country", "domain", "linkedin_company_page", "name", "website")],
    ]  # fmt: skip
    assert all(s["active"] is True for s in wanted)
    assert [sdk_refusal("SubscriptionCreateRequest", s, sdk_webhooks) for s in wanted] == [
        ""
    ] * len(wanted)
    unknown = {"eventType": "contact.nonsense", "active": True}
    assert sdk_refusal("SubscriptionCreateRequest", unknown, sdk_webhooks)  # not blind
