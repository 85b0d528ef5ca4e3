import csv
import json
from pathlib import Path

import pytest
from sqlite_utils import Database

from server import dataset
from server.export import export_files
from server.importer import import_files
from server.storage import db

TABLES = {
    "companies": "guid",
    "company_aliases": "company_guid, alias_key",
    "contacts": "guid",
    "employments": "contact_guid, company_guid",
}


def snapshot(database: Database) -> dict[str, list[dict]]:
    """Every row of the contact-data tables, without the import time."""
    tables = {}
    for table, order in TABLES.items():
        found = database.query(f"SELECT * FROM {table} ORDER BY {order}")
        tables[table] = [{k: v for k, v in row.items() if k != "updated_at"} for row in found]
    return tables


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("generated") / "source.db"
    source = db.connect(path)
    dataset.generate(source, companies=50, contacts=600, seed=7)
    source.close()
    return path


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_export_then_import_reproduces_every_record(
    generated: Path, tmp_path: Path, suffix: str
) -> None:
    source = db.connect(generated, migrate=False)
    companies, contacts = tmp_path / f"companies{suffix}", tmp_path / f"contacts{suffix}"
    counts = export_files(source, companies=companies, contacts=contacts)
    target = db.connect(tmp_path / "copy.db")

    report = import_files(target, companies=companies, contacts=contacts)

    assert report.errors == []
    assert counts == (report.companies, report.contacts)
    assert counts == (50, source.table("employments").count)
    assert snapshot(target) == snapshot(source)


def test_export_writes_vendor_fields_and_one_row_per_employment(
    tmp_path: Path, database: Database
) -> None:
    (tmp_path / "c.csv").write_text(
        "compGUID,compName,compEmpCount\nA0A0A0A0A0A0A0A1,One,42\nA0A0A0A0A0A0A0A2,Two,\n"
    )
    (tmp_path / "p.csv").write_text(
        "conGUID,compGUID,conFirstName,conLastName,conJobStartedOn,recordStatus\n"
        f"{'A' * 32},A0A0A0A0A0A0A0A1,Max,Moss,2019-03,No Longer\n"
        f"{'A' * 32},A0A0A0A0A0A0A0A2,Max,Moss,Apr-2023,Active\n"
    )
    import_files(database, companies=tmp_path / "c.csv", contacts=tmp_path / "p.csv")

    counts = export_files(database, companies=tmp_path / "out.csv", contacts=tmp_path / "out.jsonl")

    assert counts == (2, 2)
    with (tmp_path / "out.csv").open(newline="") as handle:
        companies = list(csv.DictReader(handle))
    assert [(c["compName"], c["compEmpCount"], c["compEmpRange"]) for c in companies] == [
        ("One", "42", "11 to 50"),
        ("Two", "", ""),
    ]
    lines = (tmp_path / "out.jsonl").read_text().splitlines()
    jobs = [json.loads(line) for line in lines]
    assert [(j["compGUID"], j["recordStatus"], j["conJobStartedOn"]) for j in jobs] == [
        ("A0A0A0A0A0A0A0A1", "No Longer", "Mar-2019"),
        ("A0A0A0A0A0A0A0A2", "Active", "Apr-2023"),
    ]
    assert all(isinstance(value, str) for job in jobs for value in job.values())
    assert jobs[0]["conFullName"] == "Max Moss" and jobs[0]["accuracy"] == "B"
