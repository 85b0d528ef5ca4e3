"""The `contactdata privacy` commands (server/suppression.py) on both backends: suppress and
erase a person, import a file of opt-outs, list and check the list, report on a person."""

from __future__ import annotations

import csv
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from sqlite_utils import Database

from connector.cli import main
from server import changes, discover, enrich, privacy
from server.clock import iso
from server.privacy import Erasure
from server.storage import db, store
from tests.helpers.enrich_data import (
    AVA,
    AVA_EMAIL,
    BEN,
    LONESTAR,
    NOW,
    copy_dataset,
    make_requester,
    suppress,
)

pytestmark = pytest.mark.both_backends

AVA_ADDRESS = AVA_EMAIL["contactEmail"]
CY = "CCCC0000CCCC0000CCCC0000CCCC0003"
SECRET = "privacy-secret"


@pytest.fixture
def loaded(
    enrich_dataset: Path, db_path: Path | str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Database]:
    """The enrich dataset at `db_path`, which the commands use (CONTACTDATA_DB)."""
    monkeypatch.setenv("CONTACTDATA_DB", str(db_path))
    monkeypatch.setenv("CONTACTDATA_KEY_SECRET", SECRET)
    connection = copy_dataset(enrich_dataset, db_path)
    yield connection
    connection.close()


def invoke(*args: str, obj: dict[str, Any] | None = None, status: int = 0) -> Result:
    result = CliRunner().invoke(main, ["privacy", *args], obj=obj)
    assert result.exit_code == status, result.output
    return result


def contact_guids(database: Database) -> set[str]:
    return {row["guid"] for row in database.query("SELECT guid FROM contacts")}


def discovered(database: Database) -> tuple[set[str], int]:
    """Discover's people at Lonestar of any grade, and its count of them."""
    request = discover.DiscoverRequest.model_validate({"company_guid": LONESTAR, "accuracy": "B"})
    data = discover.discover(database, "enterprise_standard", request)["data"]
    return {c["contact_guid"] for c in data["contacts"]}, data["total_count"]


def audit_rows(database: Database) -> list[dict[str, Any]]:
    return list(database.query("SELECT * FROM audit_log WHERE org_id = '' ORDER BY id"))


def test_suppress_removes_the_person_from_enrich_and_discover_at_once(loaded: Database) -> None:
    who = make_requester(loaded, "enterprise_standard")
    assert enrich.enrich(loaded, who, AVA_EMAIL, NOW, "before").result["conGUID"] == AVA
    assert AVA in discovered(loaded)[0]
    before = discovered(loaded)[1]
    with db.write(loaded):  # a job change of hers an import recorded: her new address in it
        titled = changes.Change("email", AVA, after={"email": "ava@new.example"})
        changes.record(loaded, [titled], iso(NOW))

    out = invoke("suppress", "--email", AVA_ADDRESS.upper(), "--reason", "opted out").stdout

    assert out == (
        "suppressed people=1 hashes=1 listed=1 contacts=1 employments=1 recorded changes=1\n"
    )
    assert changes.since(loaded, contacts=[AVA]) == []
    assert AVA not in contact_guids(loaded)
    answer = enrich.enrich(loaded, who, AVA_EMAIL, NOW, str(uuid.uuid4())).result
    assert answer.get("conGUID", "") == "" and AVA not in json.dumps(answer)
    assert AVA not in discovered(loaded)[0] and discovered(loaded)[1] == before - 1
    assert store.transaction(loaded, "before")["contact_guid"] == AVA  # history is kept


def test_a_name_at_a_company_domain_names_exactly_that_person(loaded: Database) -> None:
    invoke("suppress", "--name", "Cy Park", "--company-domain", "https://www.bluebonnet-labs.io/")
    assert contact_guids(loaded) == {AVA, BEN}


def test_erase_clears_transactions_and_runs_each_eraser_in_its_transaction(
    loaded: Database,
) -> None:
    who = make_requester(loaded, "enterprise_standard")
    enrich.enrich(loaded, who, AVA_EMAIL, NOW, "ava-delivered")
    kept = (who.org_id, "/v7/enrich", "retry-1")  # the answer kept for a copy of a request
    with db.write(loaded):
        store.claim_idempotency_key(loaded, kept, "digest", iso(NOW), "", "")
        store.answer_idempotency_key(loaded, kept, 200, json.dumps({"conGUID": AVA}), "t-1")
    seen: list[tuple[Erasure, bool]] = []

    def eraser(database: Database, erasure: Erasure) -> dict[str, int]:
        seen.append((erasure, database.conn.in_transaction))
        return {"payloads": 2}

    out = invoke("erase", "--email", AVA_ADDRESS, "--profile-url",
                 "linkedin.com/in/ava-stone", obj={"erasers": [eraser]}).stdout  # fmt: skip

    assert out.startswith("erased people=1 hashes=2 listed=2 contacts=1 employments=1 ")
    on_disk = "tables vacuumed=4" if db.is_postgres(loaded) else "WAL frames kept=0"
    assert out.endswith(f"transactions=1 kept enrich answers=1 payloads=2 {on_disk}\n")
    [(erasure, in_transaction)] = seen
    assert in_transaction and erasure.contact_guids == (AVA,)
    assert [i.kind for i in erasure.identifiers] == ["email", "profile_url"]
    assert len(erasure.hashes) == 2 and AVA_ADDRESS not in erasure.hashes
    assert store.transaction(loaded, "ava-delivered")["contact_guid"] == ""
    assert invoke("list", "--json").stdout.count('"erase"') == 2


def test_the_audit_log_and_the_list_hold_no_clear_values(loaded: Database) -> None:
    invoke("suppress", "--email", AVA_ADDRESS, "--reason", "GDPR art. 21")
    invoke("erase", "--name", "Ben Ode", "--company-domain", "bluebonnet-labs.io")
    invoke("report", "--email", AVA_ADDRESS)

    entries = audit_rows(loaded)
    listed = invoke("list").stdout + invoke("list", "--json").stdout
    listed += invoke("audit").stdout + invoke("audit", "--json").stdout
    assert json.loads(invoke("audit", "--json").stdout) == entries

    assert [e["action"] for e in entries] == ["privacy.suppress", "privacy.erase", "privacy.report"]
    assert json.loads(entries[1]["detail"])["kinds"] == {"name_domain": 1}
    assert all(e["actor"] == "operator (command line)" for e in entries)
    for clear in (AVA_ADDRESS, "ava", "stone", "ben", "bluebonnet"):
        assert clear not in json.dumps(entries).casefold() and clear not in listed.casefold()
    rows = json.loads(invoke("list", "--json").stdout)
    assert [(r["kind"], r["action"], r["reason"]) for r in rows] == [
        ("email", "suppress", "GDPR art. 21"),
        ("name_domain", "erase", ""),
    ]


def test_check_says_who_is_listed_by_its_exit_status(loaded: Database) -> None:
    ben = ("--name", "Ben Ode", "--company-domain", "bluebonnet-labs.io")
    assert invoke("check", "--email", AVA_ADDRESS, *ben).stdout == (
        "email        not listed\nname_domain  not listed\n"
    )
    invoke("suppress", *ben)
    out = invoke("check", "--email", AVA_ADDRESS, *ben, status=1).stdout
    assert out.startswith("email        not listed\nname_domain  suppressed 20")


def test_report_shows_what_is_held_and_who_received_it(loaded: Database) -> None:
    who = make_requester(loaded, "enterprise_standard")
    enrich.enrich(loaded, who, AVA_EMAIL, NOW, "ava-delivered")
    enrich.enrich(loaded, who, {"contactEmail": "nobody@lonestar-works.com"}, NOW, "no-match")

    held = json.loads(invoke("report", "--email", AVA_ADDRESS).stdout)

    assert held["suppressed"] is None
    [contact] = held["contacts"]
    assert contact["guid"] == AVA and contact["last_name"] == "Stone"
    assert [job["company_guid"] for job in contact["employments"]] == [LONESTAR]
    [delivery] = held["deliveries"]
    org = store.organization(loaded, who.org_id)
    assert delivery["org_id"] == who.org_id and delivery["org_name"] == org["name"]
    assert delivery["record_status"] == "Active" and delivery["endpoint"] == "/v7/enrich"
    invoke("suppress", "--email", AVA_ADDRESS)
    assert json.loads(invoke("report", "--email", AVA_ADDRESS).stdout)["suppressed"]["action"] == (
        "suppress"
    )


def test_import_lists_each_good_row_and_reports_the_bad_ones(
    loaded: Database, tmp_path: Path
) -> None:
    source = tmp_path / "optouts.csv"
    source.write_text(
        "email,name,company_domain,reason\n"
        f"{AVA_ADDRESS},,,feed\n"
        "not an address,,,\n"
        ",Cy Park,bluebonnet-labs.io,\n"
        ",Cy Park,,\n"
        ",,,\n"
    )

    result = invoke("import", str(source), "--reason", "suppression feed", "--erase")

    assert "imported people=2 hashes=2 listed=2 contacts=2 employments=2 " in result.stdout
    assert result.stdout.rstrip().endswith("rejected=3")
    database_line, *rejected = result.stderr.splitlines()
    assert database_line.startswith("database: ") and database_line.endswith(
        "(from CONTACTDATA_DB)"
    )
    assert rejected == [
        f"{source}:3: --email is not an e-mail address.",
        f"{source}:5: --name and --company-domain go together.",
        f"{source}:6: Name the person: --email, --profile-url, or --name with --company-domain.",
    ]
    assert contact_guids(loaded) == {BEN}
    rows = json.loads(invoke("list", "--json").stdout)
    assert sorted(r["reason"] for r in rows) == ["feed", "suppression feed"]


def test_import_refuses_unknown_columns_naming_them(loaded: Database, tmp_path: Path) -> None:
    source = tmp_path / "optouts.csv"
    source.write_text("email,phone,Name\nava@example.com,1,\n")
    out = invoke("import", str(source), status=1).output
    assert "Unknown columns 'phone', 'Name'" in out
    assert store.suppression_count(loaded) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "Name the person"),
        (("--name", "Ava Stone"), "--name and --company-domain go together"),
        (("--email", "ava"), "--email is not an e-mail address"),
        (("--profile-url", "https://example.com/ava"), "--profile-url is not a profile URL"),
        (("--email", AVA_ADDRESS, "--reason", "x" * 201), "at most 200 characters"),
    ],
)
def test_bad_input_is_a_clear_error_and_changes_nothing(
    loaded: Database, args: tuple[str, ...], message: str
) -> None:
    for command in ("suppress", "erase"):
        assert message in invoke(command, *args, status=1).output
    assert store.suppression_count(loaded) == 0 and len(contact_guids(loaded)) == 3


def test_the_enrich_command_checks_its_inputs_against_the_list(
    loaded: Database, tmp_path: Path
) -> None:
    who = make_requester(loaded, "pro")
    suppress(loaded, privacy.email(AVA_ADDRESS), secret=SECRET.encode())  # her rows stay
    source, target = tmp_path / "in.csv", tmp_path / "out.csv"
    source.write_text(f"contactEmail\n{AVA_ADDRESS}\n")
    result = CliRunner().invoke(
        main, ["enrich", "--org", who.org_id, str(source), "-o", str(target)]
    )
    assert result.exit_code == 0, result.output
    with target.open(newline="") as handle:
        (row,) = csv.DictReader(handle)
    assert (row["compGUID"], row["conGUID"], row["conEmail"]) == (LONESTAR, "", "")


def test_an_erased_person_stays_absent_when_the_same_file_is_imported_again(
    loaded: Database, tmp_path: Path
) -> None:
    files = [str(tmp_path / "companies.csv"), str(tmp_path / "contacts.csv")]
    runner = CliRunner()
    exported = runner.invoke(main, ["export", "--companies", files[0], "--contacts", files[1]])
    assert exported.exit_code == 0, exported.output
    invoke("erase", "--email", AVA_ADDRESS)
    assert AVA not in contact_guids(loaded)

    again = runner.invoke(main, ["import", "--companies", files[0], "--contacts", files[1]])

    assert again.exit_code == 0, again.output
    assert "rejected=0 suppressed=1" in again.output
    assert AVA not in contact_guids(loaded) and BEN in contact_guids(loaded)
    who = make_requester(loaded, "pro")
    assert enrich.enrich(loaded, who, AVA_EMAIL, NOW, "after").result["conGUID"] == ""


def test_erase_on_a_database_made_by_import_alone_makes_the_connectors_tables_first(
    loaded: Database,
) -> None:
    """As `contactdata` runs it: the connector's eraser on a database with none of its tables
    yet (it failed "no such table: records", and the whole erasure rolled back)."""
    from connector import suppression as connector_suppression
    from connector.cli import MOVED

    obj = {"erasers": [connector_suppression.erase], "schemas": [MOVED]}
    out = invoke("erase", "--email", AVA_ADDRESS, obj=obj).stdout
    assert out.startswith("erased people=1 hashes=1 listed=1 contacts=1 ")
    assert "webhook payloads=0" in out
