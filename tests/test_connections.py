"""Connections from the command line: what `connection add` checks, prints and stores."""

from __future__ import annotations

import ipaddress
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner, Result

from connector import connections, oauth, outbound, schema, store
from connector.cli import main
from server.storage import db
from tests.helpers.constants import NOW, SECRET
from tests.helpers.crm_server import FakeCrm, running
from tests.helpers.orgs import organization
from tests.helpers.pipedrive import refusal


@pytest.fixture
def key(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("CONTACTDATA_KEY_SECRET", SECRET)
    monkeypatch.setenv("CONTACTDATA_PUBLIC_URL", "https://hooks.acme.example")
    _, value = organization(db.connect(db_path))
    return value


@pytest.fixture
def public_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every host name resolves to a public address (the machine has no DNS)."""
    public = [ipaddress.ip_address("93.184.215.14")]
    monkeypatch.setattr(outbound, "_addresses", lambda host, port, resolve: public)


def _run(db_path: Path, *args: str) -> Result:
    return CliRunner().invoke(main, [*args[:2], "--db", str(db_path), *args[2:]])


def _add(db_path: Path, key: str, *args: str) -> Result:
    return _run(db_path, "connection", "add", "--api-key", key, *args)


@pytest.mark.both_backends
def test_add_prints_the_id_secret_and_urls_once(db_path: Path, key: str) -> None:
    result = _add(db_path, key, "--name", "Zaps", "--platform", "zapier", "--json")
    assert result.exit_code == 0, result.output
    added = json.loads(result.stdout)
    assert set(added) == {"id", "secret", "enrichUrl", "eventsUrl"}
    assert added["secret"].startswith("whsec_")
    assert added["enrichUrl"] == f"https://hooks.acme.example/hooks/{added['id']}/enrich"
    assert added["eventsUrl"] is None  # not a CRM: nothing to write back, so no events
    text = _add(db_path, key, "--name", "Zaps 2", "--platform", "zapier").output
    assert "events URL: none: not a CRM, so the platform calls the enrich URL" in text
    row = store.connection(store.connect(db_path), added["id"])
    assert row is not None and added["secret"] not in json.dumps(row) and key not in json.dumps(row)
    assert store.unseal(SECRET.encode(), row["secret_sealed"]) == added["secret"]
    listed = _run(db_path, "connection", "list", "--json")
    assert added["secret"] not in listed.output and key not in listed.output
    assert json.loads(listed.stdout)[0]["secret_hint"] == "…" + added["secret"][-4:]


def test_salesforce_urls_carry_the_secret(db_path: Path, key: str, monkeypatch: Any) -> None:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    result = _add(
        db_path, key, "--name", "SF", "--platform", "salesforce", "--json",
        "--crm-base-url", "http://127.0.0.1:9", "--crm-token", "tok",
        "--salesforce-org-id", "00D000000000062",
    )  # fmt: skip
    added = json.loads(result.stdout)
    assert added["eventsUrl"].endswith(f"/events?key={added['secret']}")
    shown = json.loads(_run(db_path, "connection", "show", added["id"]).stdout)
    assert shown["eventsUrl"].endswith("/events?key=<secret>")
    assert shown["allowed_organizations"] == "00D000000000062"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--platform", "hubspot", "--crm-base-url", "https://x.example", "--crm-token", "t"),
         "issues the secret it signs with: give --secret"),
        (("--platform", "hubspot", "--secret", "s"),
         "give --crm-base-url, and --crm-token or an OAuth client"),
        (("--platform", "hubspot", "--secret", "s", "--crm-base-url", "http://api.hubapi.com",
          "--crm-token", "t"), "must start with https://"),
        (("--platform", "zapier", "--crm-base-url", "https://x.example"), "not a CRM"),
        (("--platform", "salesforce", "--crm-base-url", "https://x.example", "--crm-token", "t"),
         "give the 15- or 18-character id"),
        (("--platform", "zapier", "--salesforce-org-id", "00D000000000062"),
         "for salesforce connections only"),
        (("--platform", "pipedream",), "Invalid value for '--platform'"),
        (("--platform", "zoho", "--crm-base-url", "https://crm.zoho.com", "--crm-token", "t"),
         "your Zoho data centre's API domain"),
        (("--platform", "zoho", "--secret", "s" * 51, "--crm-base-url",
          "https://www.zohoapis.eu", "--crm-token", "t"), "a token of 50 characters at most"),
        (("--platform", "pipedrive", "--crm-base-url", "https://acme.pipedrive.com",
          "--crm-client-id", "c", "--crm-client-secret", "s", "--crm-refresh-token", "r"),
         "pipedrive tokens do not expire: give --crm-token only"),
        (("--platform", "zoho", "--crm-base-url", "https://www.zohoapis.eu",
          "--crm-client-id", "c", "--crm-refresh-token", "r"),
         "needs both --crm-client-id and --crm-client-secret"),
        (("--platform", "zoho", "--crm-base-url", "https://www.zohoapis.eu",
          "--crm-client-id", "c", "--crm-client-secret", "s"),
         "give --crm-refresh-token (the refresh_token grant) or --crm-scope"),
        (("--platform", "dynamics", "--crm-base-url", "https://acme.crm.dynamics.com",
          "--crm-client-id", "c", "--crm-client-secret", "s"),
         "give your Entra ID tenant's token endpoint"),
        (("--platform", "dynamics", "--crm-base-url", "https://acme.crm.dynamics.com",
          "--crm-client-id", "c", "--crm-client-secret", "s",
          "--crm-token-url", "http://login.microsoftonline.com/t/oauth2/v2.0/token"),
         "crm-token-url: "),
        (("--platform", "make", "--crm-client-id", "c"), "not a CRM"),
    ],
)  # fmt: skip
@pytest.mark.usefixtures("public_dns")
def test_add_refuses_what_cannot_work(
    db_path: Path, key: str, args: tuple[str, ...], words: str
) -> None:
    result = _add(db_path, key, "--name", "x", *args)
    assert result.exit_code != 0 and words in result.output, result.output


@pytest.mark.parametrize(
    ("secret", "words"),
    [
        ("my-shared-token", "characters base64 does not use"),
        ("whsec_c2VjcmV0_a2V5", "characters base64 does not use"),  # base64url is not base64
        ("whsec_", "it is empty"),
        ("whsec_c2VjcmV0a", "whole number of bytes"),
        ("whsec_c2Vj=cmV0", "characters base64 does not use"),  # padding inside
    ],
)
def test_add_refuses_a_standard_webhooks_secret_it_could_not_use(
    db_path: Path, key: str, secret: str, words: str
) -> None:
    """A request carrying a webhook-signature answered 500 with such a secret."""
    result = _add(db_path, key, "--name", "x", "--platform", "zapier", "--secret", secret)
    assert result.exit_code != 0 and "secret: a Standard Webhooks secret" in result.output
    assert words in result.output, result.output
    assert json.loads(_run(db_path, "connection", "list", "--json").stdout) == []


@pytest.mark.parametrize(
    "secret",
    ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_c2VjcmV0IGtleQ", "c2VjcmV0IGtleQ=="],
)
def test_add_takes_a_standard_webhooks_secret_padded_or_not(
    db_path: Path, key: str, secret: str
) -> None:
    result = _add(db_path, key, "--name", "x", "--platform", "n8n", "--secret", secret, "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["secret"] == secret


def test_add_needs_a_valid_key_and_a_new_name(db_path: Path, key: str) -> None:
    bad = _run(
        db_path, "connection", "add", "--api-key", "cdk_nope", "--name", "a", "--platform", "make"
    )
    assert bad.exit_code == 1 and "Invalid API key" in bad.output
    assert _add(db_path, key, "--name", "a", "--platform", "make").exit_code == 0
    again = _add(db_path, key, "--name", "a", "--platform", "n8n")
    assert again.exit_code == 1 and "already exists" in again.output


@pytest.mark.both_backends
def test_remove(db_path: Path, key: str) -> None:
    added = json.loads(_add(db_path, key, "--name", "a", "--platform", "n8n", "--json").stdout)
    assert _run(db_path, "connection", "remove", added["id"]).exit_code == 0
    assert _run(db_path, "connection", "remove", added["id"]).exit_code == 1
    assert json.loads(_run(db_path, "connection", "list", "--json").stdout) == []


def test_register_webhooks_registers_where_the_crm_allows_and_else_prints_the_steps(
    db_path: Path, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    salesforce = json.loads(_add(
        db_path, key, "--name", "sf", "--platform", "salesforce", "--json",
        "--crm-base-url", "http://127.0.0.1:9", "--crm-token", "sf-token-value",
        "--salesforce-org-id", "00D5e000000abcD",
    ).stdout)  # fmt: skip
    steps = _run(db_path, "connection", "register-webhooks", salesforce["id"])
    assert steps.exit_code == 0 and "Outbound Message" in steps.output
    assert "https://hooks.acme.example/hooks/" in steps.output
    pipedrive = json.loads(_add(
        db_path, key, "--name", "pd", "--platform", "pipedrive", "--json",
        "--crm-base-url", "http://127.0.0.1:9", "--crm-token", "pd-token-value",
    ).stdout)  # fmt: skip
    refused = _run(db_path, "connection", "register-webhooks", pipedrive["id"])
    assert refused.exit_code == 1 and "Could not register the webhook" in refused.output
    assert pipedrive["secret"] not in refused.output
    # Removing it tries to delete what it registered (nothing here) and removes it all the same.
    assert _run(db_path, "connection", "remove", pipedrive["id"]).exit_code == 0
    assert store.connection(store.connect(db_path), pipedrive["id"]) is None


def test_mapping_check_names_file_line_and_field(tmp_path: Path) -> None:
    assert CliRunner().invoke(main, ["mapping", "check", "mappings/zapier.yaml"]).exit_code == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("platform: zapier\nrecord_id: [id]\ninput:\n  conEmail: [email]\noutput:\n"
                   "  - {field: conJobTitleEn, property: title, transforms: [lowr]}\n")  # fmt: skip
    result = CliRunner().invoke(main, ["mapping", "check", str(bad)])
    assert result.exit_code == 1
    assert f"{bad}, line 6" in result.output and "lowr" in result.output


def test_add_refuses_a_mapping_for_another_platform(db_path: Path, key: str) -> None:
    result = _add(
        db_path, key, "--name", "x", "--platform", "n8n", "--mapping", "mappings/make.yaml"
    )
    assert result.exit_code == 1 and "is for make, not n8n" in result.output


@pytest.mark.usefixtures("public_dns")
def test_an_oauth_client_is_sealed_with_the_crm_token_endpoint_it_renews_at(
    db_path: Path, key: str
) -> None:
    result = _add(
        db_path, key, "--name", "Zoho EU", "--platform", "zoho", "--json",
        "--crm-base-url", "https://www.zohoapis.eu", "--crm-client-id", "1000.CLIENT",
        "--crm-client-secret", "client-secret-value", "--crm-refresh-token", "1000.refresh.tok",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    row = store.connection(store.connect(db_path), json.loads(result.stdout)["id"])
    assert row is not None and row["crm_token_sealed"] == "" and row["crm_token_expires_at"] == ""
    stored = json.loads(store.unseal(SECRET.encode(), row["crm_oauth_sealed"]))
    assert stored == {
        "token_url": "https://accounts.zoho.eu/oauth/v2/token",
        "client_id": "1000.CLIENT",
        "client_secret": "client-secret-value",
        "refresh_token": "1000.refresh.tok",
        "scope": "",
    }
    listed = _run(db_path, "connection", "show", row["id"]).output
    assert "client-secret-value" not in listed and "crm_oauth_sealed" not in listed


@pytest.mark.usefixtures("public_dns")
def test_dynamics_client_credentials_ask_for_the_environment_scope(db_path: Path, key: str) -> None:
    result = _add(
        db_path, key, "--name", "D365", "--platform", "dynamics", "--json",
        "--crm-base-url", "https://acme.crm4.dynamics.com", "--crm-client-id", "app-id",
        "--crm-client-secret", "app-secret", "--crm-token-url",
        "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/token",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    row = store.connection(store.connect(db_path), json.loads(result.stdout)["id"])
    assert row is not None
    stored = json.loads(store.unseal(SECRET.encode(), row["crm_oauth_sealed"]))
    assert stored["scope"] == "https://acme.crm4.dynamics.com/.default"
    assert stored["refresh_token"] == ""  # the client_credentials grant


@pytest.mark.usefixtures("public_dns")
@pytest.mark.both_backends
def test_set_crm_connects_a_connection_again_with_a_renewing_grant(db_path: Path, key: str) -> None:
    added = _add(
        db_path, key, "--name", "Hub", "--platform", "hubspot", "--json",
        "--crm-base-url", "https://api.hubapi.com", "--crm-token", "pat-na1-old",
        "--secret", "app-secret",
    )  # fmt: skip
    connection_id = json.loads(added.stdout)["id"]
    database = store.connect(db_path)
    client = oauth.Credentials("https://api.hubapi.com/oauth/2026-03/token", "app", "s3cret", "r-1")
    expires = datetime(2026, 5, 1, 12, tzinfo=UTC)
    row = connections.set_crm(
        database, SECRET.encode(), connection_id, base_url="https://api.hubapi.com",
        token="access-token-1", credentials=client, expires_at=expires, account_id="4242",
    )  # fmt: skip
    assert row["crm_account_id"] == "4242" and row["crm_token_hint"] == "…en-1"
    assert row["crm_token_expires_at"] == "2026-05-01T12:00:00+00:00"
    assert store.unseal(SECRET.encode(), row["crm_oauth_sealed"]) == client.dumps()
    assert store.connection_of_account(database, "hubspot", "4242") == row
    assert store.connection_of_account(database, "hubspot", "") is None
    assert store.connection_of_account(database, "salesforce", "4242") is None
    with pytest.raises(connections.InvalidConnection, match="give the CRM's token"):
        connections.set_crm(database, SECRET.encode(), connection_id, base_url="https://x.test")
    with pytest.raises(connections.InvalidConnection, match="no connection nope"):
        connections.set_crm(database, SECRET.encode(), "nope", base_url="", token="t")


@pytest.mark.usefixtures("public_dns")
@pytest.mark.both_backends
def test_an_account_belongs_to_one_connection_even_when_two_connect_at_once(
    db_path: Path, key: str
) -> None:
    """The check in set_crm tells the admin; a unique index holds when two connects race past
    it (on PostgreSQL, neither sees the other's uncommitted grant)."""
    database = store.connect(db_path)
    first, second = (
        connections.add(database, SECRET.encode(), NOW, name=name, platform="hubspot",
                        api_key=key, crm_base_url="https://api.hubapi.com", crm_token="pat-1",
                        secret="app-secret")
        for name in ("Hub one", "Hub two")
    )  # fmt: skip
    store.save_crm_grant(database, first.row["id"], {"crm_account_id": "4242"})
    with pytest.raises((sqlite3.IntegrityError, psycopg.errors.UniqueViolation)):
        store.save_crm_grant(database, second.row["id"], {"crm_account_id": "4242"})
    store.save_crm_grant(database, second.row["id"], {"crm_account_id": ""})  # none: many


@pytest.mark.usefixtures("public_dns")
def test_connections_that_shared_an_account_before_leave_it_to_the_oldest(
    db_path: Path, key: str
) -> None:
    """m024 on a database where two connections came to share a HubSpot portal: the oldest
    keeps it, the other is told to connect again, and the index then holds."""
    database = store.connect(db_path)
    added = [
        connections.add(database, SECRET.encode(), NOW + timedelta(days=n), name=name,
                        platform="hubspot", api_key=key, crm_base_url="https://api.hubapi.com",
                        crm_token="pat-1", secret="app-secret")
        for n, name in enumerate(("Older", "Newer", "Other portal"))
    ]  # fmt: skip
    database.execute("DROP INDEX connections_account")  # as before m024
    database.execute("CREATE INDEX connections_account ON connections (platform, crm_account_id)")
    forget = "DELETE FROM _sqlite_migrations WHERE name = ?"
    database.execute(forget, ["m024_one_connection_per_account"])
    for link, account in zip(added, ("4242", "4242", "777"), strict=True):
        store.save_crm_grant(database, link.row["id"], {"crm_account_id": account})
    db.apply_migrations(database, schema.MIGRATIONS)
    rows = [store.connection(database, link.row["id"]) or {} for link in added]
    assert [row["crm_account_id"] for row in rows] == ["4242", "", "777"]
    assert [bool(row["crm_auth_error"]) for row in rows] == [False, True, False]
    assert "connected to an older connection" in rows[1]["crm_auth_error"]
    assert connections.token_state(rows[1], NOW) == "needs reconnect"
    with pytest.raises(sqlite3.IntegrityError):
        store.save_crm_grant(database, added[1].row["id"], {"crm_account_id": "4242"})


@pytest.mark.both_backends
def test_edit_pause_resume_rotate_secret_and_remove_from_the_cli(db_path: Path, key: str) -> None:
    added = _run(db_path, "connection", "add", "--name", "zap", "--platform", "zapier",
                 "--api-key", key, "--json")  # fmt: skip
    found = json.loads(added.stdout)
    link_id, old = found["id"], found["secret"]
    db = store.connect(db_path)
    assert (
        _run(
            db_path, "connection", "edit", link_id, "--name", "zap2", "--refresh-days", "5"
        ).exit_code
        == 0
    )
    row = store.connection(db, link_id)
    assert row is not None and (row["name"], row["refresh_days"]) == ("zap2", 5)
    assert _run(db_path, "connection", "edit", link_id, "--refresh-days", "0").exit_code != 0
    assert "paused" in _run(db_path, "connection", "pause", link_id).output
    assert connections.state(store.connection(db, link_id) or {}) == "paused"
    assert "resumed" in _run(db_path, "connection", "resume", link_id).output
    rotated = _run(db_path, "connection", "rotate-secret", link_id, "--grace-seconds", "600")
    new = rotated.stdout.split(": ")[1].split()[0]
    row = store.connection(db, link_id) or {}
    assert new.startswith("whsec_") and new != old
    assert store.unseal(SECRET.encode(), row["secret_sealed"]) == new
    assert store.unseal(SECRET.encode(), row["previous_secret_sealed"]) == old
    assert _run(db_path, "connection", "remove", link_id).exit_code == 0
    assert store.connection(db, link_id) is None
    assert _run(db_path, "connection", "pause", link_id).exit_code != 0


def test_rotate_secret_registers_the_pipedrive_webhooks_again_or_says_how_by_hand(
    db_path: Path, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")  # the loopback Pipedrive
    with running(FakeCrm()) as crm:
        added = _add(db_path, key, "--name", "pipe", "--platform", "pipedrive",
                     "--crm-base-url", crm.url, "--crm-token", "api-token", "--json")  # fmt: skip
        link_id = json.loads(added.stdout)["id"]
        assert _run(db_path, "connection", "register-webhooks", link_id).exit_code == 0
        webhooks = crm.mocked["pipedrive-webhooks"]

        rotated = _run(db_path, "connection", "rotate-secret", link_id)

        assert rotated.exit_code == 0, rotated.output
        new = rotated.stdout.split(": ")[1].split()[0]
        assert rotated.stdout.startswith(f"new inbound secret (shown once): {new}\n")
        assert "Registered again in Pipedrive with the new secret: webhooks" in rotated.stdout
        assert {hook["http_auth_password"] for hook in webhooks.held.values()} == {new}
        webhooks.failures.append(refusal(403, "You do not have the scope webhooks:full"))

        refused = _run(db_path, "connection", "rotate-secret", link_id)

    assert refused.exit_code == 0  # the rotation is saved all the same
    newer = refused.stdout.split(": ")[1].split()[0]
    row = store.connection(store.connect(db_path), link_id) or {}
    assert store.unseal(SECRET.encode(), row["secret_sealed"]) == newer
    assert "paste it into the platform now" in refused.stdout
    assert (
        "Could not register the webhook again in Pipedrive with the new secret: 403 Forbidden: "
        "You do not have the scope webhooks:full; it still sends the previous one, which works "
        f"until {row['previous_secret_expires_at']}. Do it by hand: "
    ) in refused.stderr
