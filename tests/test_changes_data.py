"""server/changes_data.py and `contactdata demo-data --changes-from`: a month of changes to a
small dataset, imported, records exactly the kinds and counts generated."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlite_utils import Database

from server import changes, changes_data, dataset, importer
from server.cli import main
from server.storage import db


@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated dataset of 40 companies and 800 contacts, built once for the module."""
    path = tmp_path_factory.mktemp("dataset") / "small.db"
    built = db.connect(path)
    dataset.generate(built, companies=40, contacts=800, seed=4)
    built.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    built.close()
    return path


@pytest.fixture
def dataset_db(small_dataset: Path, tmp_path: Path) -> Path:
    """A copy of the small dataset for one test."""
    return Path(shutil.copy(small_dataset, tmp_path / "dataset.db"))


def test_a_month_of_changes_imported_records_the_kinds_and_counts_generated(
    dataset_db: Path, tmp_path: Path
) -> None:
    database = db.connect(dataset_db)
    month = changes_data.generate(database, seed=9, share=0.05)
    assert month.month == "2026-11" and set(month.kinds) == set(changes.KINDS) - {"location"}
    assert sum(month.kinds.values()) - month.kinds["company"] >= 0.05 * 800 * 0.9

    companies, contacts = changes_data.write(month, tmp_path / "month")
    report = importer.import_files(database, companies=companies, contacts=contacts)

    assert not report.errors and report.contacts == len(month.contacts)
    recorded = changes.since(database, limit=10_000)
    assert Counter(change.kind for change in recorded) == month.kinds
    started = [change for change in recorded if change.kind == "job_started"]
    assert {change.changed_on for change in started} == {"2026-11-01"}
    assert all(change.after["company"] and change.after["job_title"] for change in started)


def test_the_same_seed_makes_the_same_month_and_another_seed_another(dataset_db: Path) -> None:
    database = db.connect(dataset_db)
    assert changes_data.generate(database, 9) == changes_data.generate(database, 9)
    assert (
        changes_data.generate(database, 9).contacts != changes_data.generate(database, 10).contacts
    )


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_demo_data_writes_a_month_of_changes_that_import_records(
    dataset_db: Path, tmp_path: Path
) -> None:
    out = tmp_path / "changes"
    code, said = invoke("demo-data", "--db", str(dataset_db), "--changes-from", "3", "-o", str(out))
    assert code == 0 and "changes of 2026-11: " in said and "job_ended=" in said, said
    files = ["--companies", str(out / "companies.csv"), "--contacts", str(out / "contacts.csv")]
    code, said = invoke("import", "--db", str(dataset_db), *files)
    assert code == 0 and "rejected=0" in said, said
    assert changes.latest_id(Database(dataset_db)) > 0


def test_changes_need_an_output_directory_and_a_dataset(dataset_db: Path, tmp_path: Path) -> None:
    code, said = invoke("demo-data", "--db", str(dataset_db), "--changes-from", "3")
    assert code == 2 and "--output DIRECTORY" in said
    empty = tmp_path / "empty.db"
    code, said = invoke("demo-data", "--db", str(empty), "--changes-from", "3", "-o", str(tmp_path))
    assert code == 1 and "no dataset in" in said
