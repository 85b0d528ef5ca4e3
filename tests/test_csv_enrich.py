"""`contactdata enrich` (server/csv_enrich.py): a CSV in, every output field out, resumable without
a second charge."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlite_utils import Database

from server import credits, csv_enrich, enrich, privacy
from server.cli import main
from server.enrich import OUTPUT_FIELDS
from server.storage import store
from tests.helpers.enrich_data import (
    AVA,
    LONESTAR,
    NOW,
    copy_dataset,
    make_requester,
    suppress,
)

ROWS = [
    # recordId, contactEmail, conEmail, companyGuid, note
    ("r1", "ava.stone@lonestar-works.com", "", "", "older name"),
    ("r2", "", "ben.ode@lonestar-works.com", "", "newer name, No Longer"),
    ("r3", "", "", "C3C3C3C3C3C3C3C3", "company only"),
    ("r4", "nobody@unknown-company.example", "", "", "no match"),
    ("r5", "", "", "", "no identifier"),
    ("r6", "", "cy.park@bluebonnet-labs.io", "", 'quoted, "multi\nline" note'),
]
DELIVERED = 4  # r1, r2, r3, r6


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "input.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["recordId", "contactEmail", "conEmail", "companyGuid", "note"])
        writer.writerows(ROWS)
    return path


@pytest.fixture
def database(enrich_dataset: Path, db_path: Path) -> Iterator[Database]:
    connection = copy_dataset(enrich_dataset, db_path)
    yield connection
    connection.close()


def make_org(database: Database, credit_balance: int) -> str:
    return make_requester(database, "pro", credit_balance).org_id


def run(db_path: Path, org_id: str, source: Path, target: Path) -> Result:
    args = ["enrich", "--db", str(db_path), "--org", org_id, str(source), "-o", str(target)]
    return CliRunner().invoke(main, args, catch_exceptions=False)


def read(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def balance(database: Database, org_id: str) -> int | None:
    org = store.organization(database, org_id)
    assert org is not None
    return org["credits"]


def test_enrich_writes_input_columns_and_every_output_field(
    database: Database, db_path: Path, source: Path, tmp_path: Path
) -> None:
    org_id = make_org(database, 100)
    target = tmp_path / "out.csv"
    result = run(db_path, org_id, source, target)
    assert result.exit_code == 0, result.output
    assert "rows=6 resumed=0 credits=4" in result.output
    rows = read(target)
    assert list(rows[0])[:5] == ["recordId", "contactEmail", "conEmail", "companyGuid", "note"]
    assert {*OUTPUT_FIELDS} - {"recordId", "conEmail"} <= set(rows[0])
    assert {"enriched_recordId", "enriched_conEmail", "error"} <= set(rows[0])
    statuses = [row["recordStatus"] for row in rows]
    assert statuses == ["Active", "No Longer", "Active", "No Match", "", "Active"]
    assert rows[0]["conGUID"] == AVA and rows[0]["directDial1"] == "+1 512-555-XXXX"
    assert rows[1]["compName"] == "Bluebonnet Labs LLC"  # pro: the current employer
    assert rows[4]["error"].startswith("missing_identifier: ")
    assert rows[5]["note"] == 'quoted, "multi\nline" note'
    assert rows[5]["enriched_recordId"] == "r6"
    assert balance(database, org_id) == 100 - DELIVERED
    transactions = store.transactions_of(database, org_id)
    assert len(transactions) == 6 and {t["endpoint"] for t in transactions} == {"cli:enrich"}


def test_a_file_honours_the_suppression_list(
    database: Database, source: Path, tmp_path: Path
) -> None:
    who = make_requester(database, "pro", 100)
    suppress(database, privacy.email("ava.stone@lonestar-works.com"))
    target = tmp_path / "out.csv"
    report = csv_enrich.enrich_csv(database, who, source, target, lambda: NOW)
    ava = read(target)[0]
    assert (ava["recordStatus"], ava["compGUID"], ava["conGUID"]) == ("Active", LONESTAR, "")
    assert report.credits == DELIVERED  # Ava's row, company-only, still costs its credit


def test_an_interrupted_run_resumes_without_charging_twice(
    database: Database, db_path: Path, source: Path, tmp_path: Path
) -> None:
    org_id = make_org(database, 100)
    target = tmp_path / "out.csv"
    assert run(db_path, org_id, source, target).exit_code == 0
    complete = target.read_bytes()
    # As if killed while writing row 3: two complete rows and part of the third.
    lines = complete.split(b"\n")
    target.write_bytes(b"\n".join(lines[:3]) + b"\n" + lines[3][:25])

    result = run(db_path, org_id, source, target)
    assert result.exit_code == 0, result.output
    assert "rows=4 resumed=2 credits=0" in result.output
    assert target.read_bytes() == complete
    assert balance(database, org_id) == 100 - DELIVERED
    assert len(store.transactions_of(database, org_id)) == 6

    assert "rows=0 resumed=6" in run(db_path, org_id, source, target).output
    assert target.read_bytes() == complete


def test_a_cut_inside_a_quoted_multiline_value_resumes_before_that_row(
    database: Database, db_path: Path, source: Path, tmp_path: Path
) -> None:
    org_id = make_org(database, 100)
    target = tmp_path / "out.csv"
    run(db_path, org_id, source, target)
    complete = target.read_bytes()
    target.write_bytes(complete[: complete.index(b'"multi\n') + 7])
    assert "resumed=5" in run(db_path, org_id, source, target).output
    assert target.read_bytes() == complete
    assert balance(database, org_id) == 100 - DELIVERED


def test_running_out_of_credits_stops_and_a_rerun_after_a_top_up_finishes(
    database: Database, db_path: Path, source: Path, tmp_path: Path
) -> None:
    org_id = make_org(database, 2)
    target = tmp_path / "out.csv"
    result = run(db_path, org_id, source, target)
    assert result.exit_code == 1 and "add credits" in result.output
    assert [row["recordId"] for row in read(target)] == ["r1", "r2"]
    credits.top_up(database, org_id, 10, NOW)
    result = run(db_path, org_id, source, target)
    assert "rows=4 resumed=2 credits=2" in result.output
    assert [row["recordId"] for row in read(target)] == ["r1", "r2", "r3", "r4", "r5", "r6"]
    assert balance(database, org_id) == 12 - DELIVERED


def test_an_output_with_other_columns_is_left_alone(
    database: Database, db_path: Path, source: Path, tmp_path: Path
) -> None:
    org_id = make_org(database, 100)
    target = tmp_path / "out.csv"
    target.write_text("something,else\n1,2\n")
    result = run(db_path, org_id, source, target)
    assert result.exit_code == 1 and "other columns" in result.output
    assert target.read_text() == "something,else\n1,2\n"


@pytest.mark.usefixtures("database")
def test_an_unknown_organization_is_refused(db_path: Path, source: Path, tmp_path: Path) -> None:
    result = run(db_path, "nope", source, tmp_path / "o")
    assert result.exit_code == 1 and "No organization with id nope" in result.output


def test_output_header_keeps_input_columns_and_renames_clashing_output_fields() -> None:
    header = csv_enrich.output_header(["recordId", "compName", "conEmail", "note"])
    assert header[:4] == ["recordId", "compName", "conEmail", "note"]
    assert "enriched_compName" in header and "enriched_recordId" in header
    assert header[-1] == "error" and len(header) == 4 + len(enrich.OUTPUT_FIELDS) + 1
