"""Connections made before the backfill's list scopes were asked (issue 37): HubSpot's
crm.lists.read, Zoho's ZohoCRM.settings.custom_views.READ (and its fields.CREATE). Listing
lists on the backfill page then says a reconnect grants it (not a 500, nor an empty list), and
the reconnect asks the platform's scope as it is now, although the operator's app was saved
with the former one (connector/install.py's `asked_scope`). Against the loopback HubSpot and
Zoho's MockTransport fake, every answer in the vendor's shapes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from flask import Flask
from sqlite_utils import Database

from connector import connections, install, oauth_apps, store
from connector.app import create_app
from connector.platforms import PLATFORMS
from connector.platforms.base import Permanent
from connector.platforms.zoho import PLATFORM as ZOHO
from tests.helpers import hubspot_shapes
from tests.helpers.clock import Clock
from tests.helpers.constants import NOW, SECRET
from tests.helpers.crm_server import Call, Reply, running
from tests.helpers.hubspot_lists import LISTS, ListedCrm
from tests.helpers.orgs import organization
from tests.helpers.settings_forms import signed_in, source, text, token
from tests.helpers.vendors import VendorTransport
from tests.helpers.zoho_crm import FakeZohoRecords

# The scopes the operator's apps were saved with before the list scopes were asked (the
# platforms' defaults then).
FORMER_HUBSPOT = (
    "oauth crm.objects.contacts.read crm.objects.contacts.write crm.schemas.contacts.read "
    "crm.schemas.contacts.write crm.objects.companies.read crm.objects.companies.write "
    "crm.schemas.companies.read crm.schemas.companies.write automation"
)
FORMER_ZOHO = (
    "ZohoCRM.modules.contacts.ALL,ZohoCRM.modules.leads.ALL,ZohoCRM.modules.accounts.ALL,"
    "ZohoCRM.settings.fields.READ,ZohoCRM.notifications.ALL"
)


class UnlistedCrm(ListedCrm):
    """The loopback HubSpot refusing the Lists API to a grant without crm.lists.read: 403,
    category MISSING_SCOPES, the scopes named in the Error's context (lists.json's example)."""

    def route(self, call: Call) -> Reply:
        if call.path.startswith(LISTS):
            refusal = hubspot_shapes.error(
                "MISSING_SCOPES",
                "This app hasn't been granted all required scopes to make this call.",
                context={"missingScopes": ["crm.lists.read"]},
            )
            return Reply(403, refusal)
        return super().route(call)


@pytest.fixture
def hub() -> Iterator[UnlistedCrm]:
    with running(UnlistedCrm()) as fake:
        yield fake


@pytest.fixture
def app(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Flask:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")  # the loopback HubSpot
    return create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": Clock(NOW)})


@pytest.fixture
def acme(app: Flask, db_path: Path, hub: UnlistedCrm) -> tuple[Database, str, str]:
    """Acme's HubSpot connection, connected through the operator's app saved with the former
    scope; the database, the admin's key and the connection's id."""
    db = store.connect(db_path)
    _, key = organization(db, "Acme", credits=100)
    oauth_apps.save(db, SECRET.encode(), NOW, platform="hubspot", client_id="client-1",
                    client_secret="app-secret", scope=FORMER_HUBSPOT)  # fmt: skip
    link = connections.add(
        db, SECRET.encode(), NOW, name="Acme HubSpot", platform="hubspot", api_key=key,
        secret="app-secret", crm_base_url=hub.url, crm_token="token-without-lists",
    ).row  # fmt: skip
    return db, key, str(link["id"])


def test_listing_lists_without_the_scope_says_to_reconnect(
    app: Flask, acme: tuple[Database, str, str]
) -> None:
    _, key, link_id = acme
    client = signed_in(app, key)

    answer = client.get(f"/settings/connections/{link_id}/backfill?lists=contacts")

    assert answer.status_code == 200
    said = text(answer)
    assert "The CRM did not list its lists of contacts" in said
    assert "lacks the scope crm.lists.read" in said and "Reconnect with HubSpot" in said
    assert 'name="source"' not in source(answer)  # no empty chooser offered


def test_the_reconnect_asks_the_list_scope_the_app_was_saved_without(
    app: Flask, acme: tuple[Database, str, str]
) -> None:
    _, key, link_id = acme
    client = signed_in(app, key)
    page = client.get(f"/settings/connections/{link_id}")
    assert "Reconnect with HubSpot" in source(page)

    started = client.post(f"/settings/connections/{link_id}/connect",
                          data={"csrf_token": token(page)})  # fmt: skip

    assert started.status_code == 303
    asked = parse_qs(urlsplit(started.location).query)["scope"][0].split()
    assert "crm.lists.read" in asked
    assert set(asked) == set(PLATFORMS["hubspot"].oauth_scope.split())


def test_an_app_scope_beyond_the_platforms_is_asked_as_the_operator_saved_it() -> None:
    hubspot = PLATFORMS["hubspot"]
    wider = f"{FORMER_HUBSPOT} crm.objects.deals.read"
    assert install.asked_scope(hubspot, wider) == wider
    assert install.asked_scope(hubspot, FORMER_HUBSPOT) == hubspot.oauth_scope
    assert install.asked_scope(ZOHO, FORMER_ZOHO) == ZOHO.oauth_scope
    assert "ZohoCRM.settings.custom_views.READ" in ZOHO.oauth_scope.split(",")
    assert install.asked_scope(PLATFORMS["pipedrive"], "") == ""


def test_zoho_views_without_the_scope_say_to_reconnect() -> None:
    crm = FakeZohoRecords({"Contacts": {}})
    mismatch = {"code": "OAUTH_SCOPE_MISMATCH", "details": {}, "status": "error",
                "message": "invalid oauth scope to access this URL"}  # fmt: skip
    crm.refusals.append(httpx.Response(401, json=mismatch))
    client = httpx.Client(transport=VendorTransport(crm))
    adapter = ZOHO.adapter("https://www.zohoapis.com", "token", client, kind="contacts")

    with pytest.raises(Permanent) as refused:
        adapter.views()

    assert "lacks the scope ZohoCRM.settings.custom_views.READ" in refused.value.reason
    assert "Reconnect with Zoho CRM" in refused.value.reason
