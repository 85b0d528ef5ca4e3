"""The operator's OAuth apps (`contactdata oauth-app set|list|remove`): one per CRM platform,
its endpoints and scope defaulting to the platform's own, its client secret sealed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from connector import oauth_apps, store
from connector.cli import main
from connector.platforms import PLATFORMS
from tests.helpers.constants import SECRET

CLIENT_SECRET = "s3cr3t-client-value-9xyz"


@pytest.fixture(autouse=True)
def _server_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTACTDATA_KEY_SECRET", SECRET)
    monkeypatch.delenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", raising=False)


@pytest.fixture
def db_path(db_path: Path) -> Path:
    """The operator's database, made first: the commands refuse a missing file."""
    store.connect(db_path).close()
    return db_path


def invoke(db_path: Path, *args: str) -> Result:
    """`contactdata oauth-app ARGS --db DB`."""
    return CliRunner().invoke(main, ["oauth-app", *args, "--db", str(db_path)])


def ok(db_path: Path, *args: str) -> str:
    result = invoke(db_path, *args)
    assert result.exit_code == 0, result.output
    return result.output


def refused(db_path: Path, *args: str) -> str:
    result = invoke(db_path, *args)
    assert result.exit_code != 0, result.output
    return result.output


def set_app(db_path: Path, platform: str, *extra: str) -> str:
    return ok(
        db_path, "set", platform, "--client-id", f"{platform}-id",
        "--client-secret", CLIENT_SECRET, *extra,
    )  # fmt: skip


def listed(db_path: Path) -> dict[str, dict]:
    return {row["platform"]: row for row in json.loads(ok(db_path, "list", "--json"))}


def test_each_crm_platform_declares_its_own_oauth_endpoints_and_scope() -> None:
    declared = {
        name: (kind.oauth_authorize_url, kind.oauth_token_url, kind.oauth_scope)
        for name, kind in PLATFORMS.items()
        if kind.crm
    }
    assert declared == {
        "hubspot": (
            "https://app.hubspot.com/oauth/authorize",
            "https://api.hubapi.com/oauth/2026-03/token",
            # derived from the adapter's calls in tests/test_adapters_hubspot.py
            PLATFORMS["hubspot"].oauth_scope,
        ),
        "salesforce": (
            "https://login.salesforce.com/services/oauth2/authorize",
            "https://login.salesforce.com/services/oauth2/token",
            "api refresh_token",
        ),
        "pipedrive": (
            "https://oauth.pipedrive.com/oauth/authorize",
            "https://oauth.pipedrive.com/oauth/token",
            "",
        ),
        "zoho": (
            "https://accounts.zoho.com/oauth/v2/auth",
            "https://accounts.zoho.com/oauth/v2/token",
            "ZohoCRM.modules.contacts.ALL,ZohoCRM.modules.leads.ALL,ZohoCRM.modules.accounts.ALL,"
            "ZohoCRM.modules.tasks.CREATE,ZohoCRM.settings.fields.READ,"
            "ZohoCRM.settings.fields.CREATE,ZohoCRM.settings.custom_views.READ,"
            "ZohoCRM.notifications.ALL",
        ),
        "dynamics": (
            "https://login.microsoftonline.com/organizations/oauth2/v2.0/authorize",
            "https://login.microsoftonline.com/organizations/oauth2/v2.0/token",
            "offline_access",
        ),
    }
    not_crms = [kind for kind in PLATFORMS.values() if not kind.crm]
    assert not_crms and all(not kind.oauth_authorize_url for kind in not_crms)


def test_dynamics_asks_for_the_environment_it_is_connected_to_at_connect_time() -> None:
    dynamics, hubspot = PLATFORMS["dynamics"], PLATFORMS["hubspot"]
    assert dynamics.consent_scope("offline_access", "https://contoso.crm.dynamics.com/") == (
        "offline_access https://contoso.crm.dynamics.com/user_impersonation"
    )
    assert hubspot.consent_scope("automation", "https://api.hubapi.com") == "automation"


@pytest.mark.parametrize("platform", ["hubspot", "salesforce", "pipedrive", "zoho", "dynamics"])
def test_set_without_overrides_takes_the_platforms_defaults(db_path: Path, platform: str) -> None:
    out = set_app(db_path, platform)
    assert f"oauth app for {platform} saved" in out
    kind = PLATFORMS[platform]
    row = listed(db_path)[platform]
    assert row == {
        "platform": platform,
        "client_id": f"{platform}-id",
        "client_secret_hint": "…9xyz",
        "scope": kind.oauth_scope,
        "authorize_url": kind.oauth_authorize_url,
        "token_url": kind.oauth_token_url,
        "app_id": "",
        "developer_key_hint": "",
        "updated_at": row["updated_at"],
    }
    assert row["updated_at"].startswith("20")


def test_overrides_point_the_app_elsewhere_and_setting_again_replaces_it(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_app(db_path, "salesforce")
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")  # a local fake, as tests do
    set_app(
        db_path, "salesforce", "--scope", "api refresh_token id",
        "--authorize-url", "http://127.0.0.1:8001/services/oauth2/authorize/",
        "--token-url", "http://127.0.0.1:8001/services/oauth2/token",
    )  # fmt: skip
    apps = listed(db_path)
    assert list(apps) == ["salesforce"]
    assert apps["salesforce"]["scope"] == "api refresh_token id"
    assert apps["salesforce"]["authorize_url"] == "http://127.0.0.1:8001/services/oauth2/authorize"
    assert apps["salesforce"]["token_url"] == "http://127.0.0.1:8001/services/oauth2/token"


def test_the_client_secret_is_sealed_in_the_table_and_never_printed(db_path: Path) -> None:
    out = set_app(db_path, "hubspot") + ok(db_path, "list") + ok(db_path, "list", "--json")
    assert CLIENT_SECRET not in out
    assert "hubspot-id" in ok(db_path, "list") and "…9xyz" in ok(db_path, "list")
    rows = list(store.connect(db_path).query("SELECT * FROM oauth_apps"))
    assert len(rows) == 1
    assert all(CLIENT_SECRET not in str(value) for value in rows[0].values())
    assert store.unseal(SECRET.encode(), rows[0]["client_secret_sealed"]) == CLIENT_SECRET
    app = store.oauth_app(store.connect(db_path), "hubspot")
    assert app is not None and app["client_id"] == "hubspot-id"


def test_remove_deletes_one_app_and_says_when_there_is_none(db_path: Path) -> None:
    set_app(db_path, "hubspot")
    set_app(db_path, "zoho")
    assert "removed the oauth app for hubspot" in ok(db_path, "remove", "hubspot")
    assert list(listed(db_path)) == ["zoho"]
    assert "no oauth app for hubspot" in refused(db_path, "remove", "hubspot")


def test_list_says_when_none_is_set(db_path: Path) -> None:
    assert "no oauth app" in ok(db_path, "list")
    assert json.loads(ok(db_path, "list", "--json")) == []


@pytest.mark.parametrize(
    ("platform", "says"),
    [
        ("marketo", "marketo is not a CRM"),
        ("zapier", "zapier is not a CRM"),
        ("freshsales", "no platform 'freshsales'"),
    ],
)
def test_a_platform_without_an_oauth_app_is_refused(
    db_path: Path, platform: str, says: str
) -> None:
    out = refused(db_path, "set", platform, "--client-id", "i", "--client-secret", "s")
    assert says in out and "hubspot, salesforce, pipedrive, zoho, dynamics" in out
    assert json.loads(ok(db_path, "list", "--json")) == []


@pytest.mark.parametrize(
    ("option", "url", "says"),
    [
        ("--authorize-url", "http://login.example.com/authorize", "must start with https://"),
        ("--token-url", "https://127.0.0.1/token", "not public"),
        ("--token-url", "https://10.1.2.3/token", "not public"),
        ("--authorize-url", "https://user:pw@login.example.com/a", "without user name"),
    ],
)
def test_an_http_or_private_url_is_refused_like_a_connections(
    db_path: Path, option: str, url: str, says: str
) -> None:
    out = refused(
        db_path, "set", "salesforce", "--client-id", "i", "--client-secret", "s", option, url
    )
    assert option.lstrip("-") in out and says in out
    assert json.loads(ok(db_path, "list", "--json")) == []


def test_empty_client_credentials_and_a_pipedrive_scope_are_refused(db_path: Path) -> None:
    out = refused(db_path, "set", "hubspot", "--client-id", " ", "--client-secret", "s")
    assert "--client-id" in out
    out = refused(db_path, "set", "hubspot", "--client-id", "i", "--client-secret", "")
    assert "--client-secret" in out
    out = refused(
        db_path, "set", "pipedrive", "--client-id", "i", "--client-secret", "s", "--scope", "base"
    )
    assert "pipedrive takes no scope" in out


DEVELOPER_KEY = "d3v3l0per-key-4abc"


def test_hubspots_app_id_and_developer_key_are_kept_the_key_sealed(db_path: Path) -> None:
    out = set_app(db_path, "hubspot", "--app-id", "1234567", "--developer-key", DEVELOPER_KEY)
    out += ok(db_path, "list") + ok(db_path, "list", "--json")

    assert DEVELOPER_KEY not in out
    assert "app 1234567 developer key …4abc" in ok(db_path, "list")
    row = listed(db_path)["hubspot"]
    assert (row["app_id"], row["developer_key_hint"]) == ("1234567", "…4abc")
    database = store.connect(db_path)
    (stored,) = database.query("SELECT * FROM oauth_apps")
    assert all(DEVELOPER_KEY not in str(value) for value in stored.values())
    assert oauth_apps.developer(database, SECRET.encode(), "hubspot") == ("1234567", DEVELOPER_KEY)
    assert oauth_apps.subscribes(database, "hubspot")


@pytest.mark.parametrize(
    ("platform", "extra", "says"),
    [
        ("zoho", ("--app-id", "1", "--developer-key", "k"), "zoho takes no --app-id"),
        ("hubspot", ("--app-id", "1234567"), "give both"),
        ("hubspot", ("--developer-key", "k"), "give both"),
        ("hubspot", ("--app-id", "my-app", "--developer-key", "k"), "(a number)"),
    ],
)
def test_developer_credentials_are_hubspots_and_go_together(
    db_path: Path, platform: str, extra: tuple[str, ...], says: str
) -> None:
    out = refused(db_path, "set", platform, "--client-id", "i", "--client-secret", "s", *extra)
    assert says in out
    assert json.loads(ok(db_path, "list", "--json")) == []


def test_an_app_without_developer_credentials_leaves_its_subscriptions_to_the_operator(
    db_path: Path,
) -> None:
    set_app(db_path, "hubspot")
    database = store.connect(db_path)
    assert oauth_apps.developer(database, SECRET.encode(), "hubspot") is None
    assert not oauth_apps.subscribes(database, "hubspot")
