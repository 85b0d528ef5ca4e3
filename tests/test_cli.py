import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from connector import connections
from connector import store as connector_store
from connector.cli import main
from server import keys
from server.storage import store
from server.storage.db import connect
from tests.helpers.constants import DATA, NOW, SECRET
from tests.helpers.crm_server import running
from tests.helpers.hubspot_lists import LIST_ID, LIST_NAME, ListedCrm
from tests.helpers.orgs import organization
from tests.servers import CONTACTDATA, free_port

ROOT = Path(__file__).resolve().parents[1]


def documentation() -> str:
    """The README and every page of the docs site (docs/), which holds the reference."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    return "\n".join(page.read_text() for page in pages)


def run(*args: str) -> str:
    """What a command printed on stdout (where the database a change went to is not)."""
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture
def db_path(db_path: Path | str) -> Path | str:
    """The test's database, made as a deployment makes one: `contactdata db init`."""
    run("db", "init", "--db", str(db_path))
    return db_path


def create_org(db_path: Path, name: str, website: str, tier: str, *extra: str) -> dict:
    """`contactdata org create ... --json`, parsed."""
    args = ["--name", name, "--website", website, "--tier", tier, *extra, "--json"]
    return json.loads(run("org", "create", "--db", str(db_path), *args))


def test_org_create_json_prints_the_admin_key_once_and_stores_only_its_hash(
    db_path: Path,
) -> None:
    out = run(
        "org",
        "create",
        "--db",
        str(db_path),
        "--name",
        "Acme",
        "--website",
        "https://www.acme.co.uk/",
        "--tier",
        "pro",
        "--qps",
        "5",
        "--json",
    )
    summary = json.loads(out)
    assert set(summary) == {"orgId", "orgName", "tier", "adminApiKey"}
    assert summary["orgName"] == "Acme" and summary["tier"] == "pro"
    assert keys.is_well_formed(summary["adminApiKey"])
    database = connect(db_path)
    org = store.organization(database, summary["orgId"])
    assert org is not None
    assert (org["cleaned_website"], org["qps_limit"], org["credits"]) == ("acme.co.uk", 5, 1000)
    key_row = next(database.query("SELECT * FROM api_keys"))
    assert key_row["role"] == "admin" and key_row["masked"].endswith(summary["adminApiKey"][-4:])
    assert summary["adminApiKey"].encode() not in db_path.read_bytes()


def test_org_list_and_set_status(db_path: Path) -> None:
    created = create_org(db_path, "Beta", "beta.io", "enterprise_plus")
    listed = json.loads(run("org", "list", "--db", str(db_path), "--json"))
    assert [o["id"] for o in listed] == [created["orgId"]]
    assert listed[0]["credits"] is None and listed[0]["status"] == "active"
    assert "inactive" in run(
        "org", "set-status", "--db", str(db_path), created["orgId"], "inactive"
    )
    assert "inactive" in run("org", "list", "--db", str(db_path))


def test_org_errors_are_clear(db_path: Path) -> None:
    runner = CliRunner()
    args = [
        "org",
        "create",
        "--db",
        str(db_path),
        "--name",
        "Dup",
        "--website",
        "d.io",
        "--tier",
        "pro",
    ]
    assert runner.invoke(main, args).exit_code == 0
    again = runner.invoke(main, args)
    assert again.exit_code == 1 and "already exists" in again.output
    bad_tier = runner.invoke(main, [*args[:-1], "gold"])
    assert bad_tier.exit_code == 2 and "gold" in bad_tier.output
    missing = runner.invoke(main, ["org", "set-status", "--db", str(db_path), "nope", "active"])
    assert missing.exit_code == 1 and "No organization with id nope" in missing.output


def _commands(group: click.Group, prefix: str = "") -> list[str]:
    names = []
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            names += _commands(command, f"{prefix}{name} ")
        else:
            names.append(f"{prefix}{name}")
    return names


def test_every_cli_command_is_documented() -> None:
    docs = documentation()
    missing = [c for c in _commands(main) if f"contactdata {c}" not in docs]
    assert missing == []


def test_every_environment_variable_is_documented() -> None:
    from server.config import ENVIRONMENT

    docs = documentation()
    assert [v for v in ENVIRONMENT.values() if v not in docs] == []


def test_org_credits_shows_and_tops_up_the_ledger(db_path: Path) -> None:
    created = create_org(db_path, "Pro Co", "proco.com", "pro", "--credits", "10")
    org_id = created["orgId"]

    out = run("org", "credits", "--db", str(db_path), org_id, "--add", "25")

    assert f"{org_id} credits=35" in out
    assert "+10  = 10       opening balance" in out and "+25  = 35       top-up" in out
    audit = json.loads(run("audit", "--db", str(db_path), "--org", org_id, "--json"))
    assert [e["action"] for e in audit] == ["organization.create", "credits.add"]


def test_org_credits_refuses_unlimited_and_unknown_organizations(db_path: Path) -> None:
    created = create_org(db_path, "Big Co", "big.com", "enterprise_plus")
    assert "credits=unlimited" in run("org", "credits", "--db", str(db_path), created["orgId"])
    for org_id, message in ((created["orgId"], "unlimited credits"), ("nope", "No organization")):
        result = CliRunner().invoke(
            main, ["org", "credits", "--db", str(db_path), org_id, "--add", "5"]
        )
        assert result.exit_code == 1 and message in result.output


def test_numbers_past_what_a_balance_holds_are_refused_not_overflowed(db_path: Path) -> None:
    """SQLite turns an integer sum past 2**63 into a float, and refuses a larger literal."""
    created = create_org(db_path, "Pro Co", "proco.com", "pro", "--credits", "10")
    for amount in ("99999999999999999999", "9223372036854775000", "1000000000000"):
        result = CliRunner().invoke(
            main, ["org", "credits", "--db", str(db_path), created["orgId"], "--add", amount]
        )
        assert result.exit_code == 1 and "1,000,000,000,000" in result.output, result.output
    assert f"{created['orgId']} credits=10" in run(
        "org", "credits", "--db", str(db_path), created["orgId"]
    )
    result = CliRunner().invoke(
        main,
        ["org", "create", "--db", str(db_path), "--name", "Q", "--website", "q.example",
         "--tier", "pro", "--qps", "99999999999999999999"],
    )  # fmt: skip
    assert result.exit_code == 1 and "qps must be 1 to 1,000,000,000,000" in result.output


@pytest.mark.parametrize(
    ("option", "value"),
    [("--batch", str(2**63)), ("--lease", "1e300"), ("--lease", "nan"), ("--idle", "nan"),
     ("--idle", "1e300")],
)  # fmt: skip
def test_worker_numbers_past_what_the_store_or_the_clock_holds_are_refused(
    db_path: Path, option: str, value: str
) -> None:
    result = CliRunner().invoke(main, ["worker", "--db", str(db_path), "--once", option, value])
    assert result.exit_code == 2 and f"Invalid value for '{option}'" in result.output


def test_audit_lists_actions_without_secrets(db_path: Path) -> None:
    created = create_org(db_path, "Audit Co", "audit.example", "pro")
    run("org", "set-status", "--db", str(db_path), created["orgId"], "inactive")

    out = run("audit", "--db", str(db_path), "--org", created["orgId"])

    lines = out.splitlines()
    assert len(lines) == 2
    assert "organization.create" in lines[0] and "Audit Co" in lines[0]
    assert "organization.inactive" in lines[1] and "by operator (command line)" in lines[1]
    assert created["adminApiKey"] not in out


@pytest.mark.both_backends
def test_import_takes_a_sqlite_path_or_a_postgresql_url(db_path: Path | str) -> None:
    out = run("import", "--db", str(db_path), "--companies", str(DATA / "enrich_companies.csv"),
              "--contacts", str(DATA / "enrich_contacts.csv"))  # fmt: skip
    assert store.counts(connect(db_path))["companies"] == 3, out


@pytest.mark.both_backends
def test_the_main_commands_run_on_either_backend(
    db_path: Path | str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Build, export and import data, manage an organization, enrich a CSV, add a connection
    and look at its deliveries and jobs, with `CONTACTDATA_DB` a file or a postgresql:// URL."""
    monkeypatch.setenv("CONTACTDATA_DB", str(db_path))
    monkeypatch.setenv("CONTACTDATA_KEY_SECRET", "cli-secret")
    assert "contacts=20" in run("demo-data", "--companies", "5", "--contacts", "20")
    exported = [str(tmp_path / "companies.csv"), str(tmp_path / "contacts.jsonl")]
    assert "companies=5" in run("export", "--companies", exported[0], "--contacts", exported[1])
    assert "rejected=0" in run("import", "--companies", exported[0], "--contacts", exported[1])
    org = create_org(db_path, "Acme", "acme.example", "pro")
    assert "+5" in run("org", "credits", org["orgId"], "--add", "5")
    assert "credits=1005" in run("org", "list")
    source = tmp_path / "input.csv"
    email = next(connect(db_path).query("SELECT email FROM employments WHERE email != ''"))
    source.write_text(f"contactEmail\n{email['email']}\n")
    enriched = run("enrich", "--org", org["orgId"], str(source), "-o", str(tmp_path / "out.csv"))
    assert "enriched rows=1" in enriched and "credits=1" in enriched
    added = json.loads(run("connection", "add", "--api-key", org["adminApiKey"], "--name",
                           "zap", "--platform", "zapier", "--json"))  # fmt: skip
    assert added["id"] in run("connection", "list")
    assert run("deliveries", "list") == "" and "reenrich" in run("jobs", "list")
    assert "organization.create" in run("audit", "--org", org["orgId"])


def test_a_postgresql_database_without_a_key_secret_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CONTACTDATA_KEY_SECRET", raising=False)
    url = "postgresql://nobody@127.0.0.1:9/none"  # never reached: refused before connecting
    for command in (["demo", "--db", url], ["serve", "--db", url]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 1, result.output
        assert "set CONTACTDATA_KEY_SECRET (the same on every machine)" in result.output


@pytest.mark.parametrize(
    "command",
    [
        ["privacy", "suppress", "--email", "someone@example.com"],
        ["privacy", "erase", "--email", "someone@example.com"],
        ["privacy", "check", "--email", "someone@example.com"],
        ["org", "create", "--name", "Acme", "--website", "acme.example", "--tier", "pro"],
        ["org", "list"],
        ["connection", "list"],
        ["export", "--companies", "companies.csv"],
        ["worker", "--once"],
    ],
)
def test_a_command_refuses_a_missing_default_database_and_creates_nothing(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CONTACTDATA_DB", raising=False)

    result = CliRunner().invoke(main, command)

    assert result.exit_code == 1, result.output
    message = " ".join(result.output.split())
    assert f"no database at {tmp_path / 'var' / 'contactdata.db'} (the default" in message
    assert "--db PATH or CONTACTDATA_DB=PATH" in message and "`contactdata db init`" in message
    assert list(tmp_path.iterdir()) == []


def test_serve_refuses_a_missing_database_before_it_listens(tmp_path: Path) -> None:
    """In a process of its own: a server that did start would serve until stopped."""
    typo = tmp_path / "typo.db"
    command = [CONTACTDATA, "serve", "--db", str(typo), "--port", str(free_port())]
    refused = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1 and f"no database at {typo} (given by --db)" in refused.stderr
    assert list(tmp_path.iterdir()) == []


def test_contactdata_db_names_the_database_unless_db_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    chosen = tmp_path / "chosen.db"
    monkeypatch.setenv("CONTACTDATA_DB", str(chosen))
    missing = CliRunner().invoke(main, ["org", "list"])
    assert missing.exit_code == 1 and f"{chosen} (from CONTACTDATA_DB)" in missing.output

    assert run("db", "init") == f"created {chosen}\n"
    created = CliRunner().invoke(main, ["org", "create", "--name", "Acme", "--website",
                                        "acme.example", "--tier", "pro", "--json"])  # fmt: skip
    assert created.stderr == f"database: {chosen} (from CONTACTDATA_DB)\n"
    assert json.loads(created.stdout)["orgName"] == "Acme"  # stdout: the JSON alone
    assert "Acme" in run("org", "list") and not (tmp_path / "var").exists()

    other = CliRunner().invoke(main, ["org", "list", "--db", "other.db"])
    assert other.exit_code == 1 and f"{tmp_path / 'other.db'} (given by --db)" in other.output
    assert "`contactdata db init --db other.db`" in other.output


def test_the_commands_that_make_data_create_the_default_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CONTACTDATA_DB", raising=False)
    default = tmp_path / "var" / "contactdata.db"

    made = CliRunner().invoke(main, ["demo-data", "--companies", "3", "--contacts", "5"])

    assert made.exit_code == 0, made.output
    assert made.stderr == f"database: {default} (the default, var/contactdata.db)\n"
    assert "contacts=5" in made.stdout and default.is_file()
    assert run("db", "init") == f"migrated {default}\n"
    assert run("org", "list") == ""


def test_serve_says_when_contactdata_public_url_is_not_its_address(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Said before anything else can stop it: here the missing key secret of a PostgreSQL
    database, refused before connecting (so that no server starts)."""
    monkeypatch.setenv("CONTACTDATA_PUBLIC_URL", "https://hooks.acme.example")
    monkeypatch.delenv("CONTACTDATA_KEY_SECRET", raising=False)
    url = "postgresql://nobody:hunter2@127.0.0.1:9/none"

    result = CliRunner().invoke(main, ["serve", "--db", url, "--port", "9123"])

    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[:2] == [
        "database: postgresql://nobody@127.0.0.1:9/none (given by --db)",
        "CONTACTDATA_PUBLIC_URL is set: webhook URLs, installation steps and OAuth redirects use "
        "https://hooks.acme.example, not http://127.0.0.1:9123",
    ]


@pytest.fixture
def listed_hubspot(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Any]]:
    """A HubSpot connection of Acme (100 credits) to the loopback HubSpot holding contacts
    1001 to 1020, of which 1001 to 1012 are the list "Trade show leads" (id 17); its id and
    the fake."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")  # the loopback HubSpot
    monkeypatch.setenv("CONTACTDATA_KEY_SECRET", SECRET)  # the one the token is sealed with
    with running(ListedCrm()) as hub:
        for n in range(20):
            hub.contacts["hubspot"][str(1001 + n)] = {
                "email": f"p{n}@nowhere.example", "lastmodifieddate": "2025-06-01T10:00:00.000Z",
            }  # fmt: skip
        db = connector_store.connect(db_path)
        _, key = organization(db, "Acme", credits=100)
        link = connections.add(
            db, SECRET.encode(), NOW, name="Acme HubSpot", platform="hubspot", api_key=key,
            secret="app-secret", crm_base_url=hub.url, crm_token="pat-na1-token",
        ).row  # fmt: skip
        yield str(link["id"]), hub


def backfill_cli(db_path: Path, *args: str) -> Any:
    return CliRunner().invoke(main, ["backfill", *args, "--db", str(db_path)])


def test_backfill_lists_prints_the_crms_lists_by_id_and_name(
    db_path: Path, listed_hubspot: tuple[str, Any]
) -> None:
    link_id, _ = listed_hubspot

    listed = backfill_cli(db_path, "--lists", link_id)

    assert listed.exit_code == 0, listed.output
    assert listed.stdout == f"{LIST_ID}\t{LIST_NAME}  (12 records)\n"
    assert connector_store.backfills_of(connector_store.connect(db_path), link_id) == []


def test_backfill_of_one_list_estimates_and_queues_its_members_only(
    db_path: Path, listed_hubspot: tuple[str, Any]
) -> None:
    link_id, _ = listed_hubspot

    estimate = backfill_cli(db_path, link_id, "--list", LIST_ID, "--dry-run")
    assert estimate.exit_code == 0, estimate.output
    assert f"12 records listed in the list {LIST_NAME}; 12 carry" in estimate.stdout
    started = backfill_cli(db_path, link_id, "--list", LIST_ID)

    assert started.exit_code == 0, started.output
    assert f"of contacts (list {LIST_NAME}) started" in started.stdout
    db = connector_store.connect(db_path)
    (row,) = connector_store.backfills_of(db, link_id)
    assert (row["source"], row["source_name"], row["state"]) == (LIST_ID, LIST_NAME, "done")
    queued = {event["record_id"] for event in connector_store.events_of(db, link_id)}
    assert queued == set(ListedCrm.members)


def test_backfill_of_a_list_the_crm_lacks_is_refused_and_starts_nothing(
    db_path: Path, listed_hubspot: tuple[str, Any]
) -> None:
    link_id, _ = listed_hubspot

    for extra in ((), ("--dry-run",)):
        refused = backfill_cli(db_path, link_id, "--list", "404", *extra)
        assert refused.exit_code == 1
        assert "The CRM has no list of contacts with the id '404'." in refused.output
    assert connector_store.backfills_of(connector_store.connect(db_path), link_id) == []
