import json
import re
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlite_utils import Database

from server import changes, importer, privacy, titles
from server.importer import ImportReport, RowError, import_files
from server.records import GRADES, JOIN, RECORD_STATUSES
from tests.helpers.constants import DATA

ACCEPTANCE = Path(__file__).parent / "data"  # the acceptance check's radius files, copied
NOW = datetime(2025, 4, 10, 18, 49, 51, 123000, tzinfo=UTC)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def run(database: Database, **files: Path) -> ImportReport:
    return import_files(
        database, companies=files.get("companies"), contacts=files.get("contacts"), now=NOW
    )


def rows(database: Database, table: str, order: str) -> list[dict]:
    return list(database.query(f"SELECT * FROM {table} ORDER BY {order}"))


def company(database: Database, guid: str) -> dict:
    return database.execute_returning_dicts("SELECT * FROM companies WHERE guid = ?", [guid])[0]


def employment(database: Database, contact: str, company: str = "A0A0A0A0A0A0A0A1") -> dict:
    sql = "SELECT * FROM employments WHERE contact_guid = ? AND company_guid = ?"
    return database.execute_returning_dicts(sql, [contact, company])[0]


def contact(database: Database, guid: str) -> dict:
    return database.execute_returning_dicts("SELECT * FROM contacts WHERE guid = ?", [guid])[0]


@pytest.fixture
def csv_files() -> dict[str, Path]:
    return {"companies": DATA / "import_companies.csv", "contacts": DATA / "import_contacts.csv"}


@pytest.mark.both_backends
def test_csv_import_stores_companies_with_derived_keys(
    database: Database, csv_files: dict[str, Path]
) -> None:
    report = run(database, **csv_files)

    assert report == ImportReport(companies=2, contacts=2, errors=[])
    lonestar = company(database, "A0A0A0A0A0A0A0A1")
    assert lonestar["name"] == "Lonestar Works Inc."
    assert lonestar["name_key"] == "lonestar works"
    assert lonestar["domain"] == "lonestar-works.com"
    assert lonestar["employee_count"] == 1200
    assert lonestar["revenue_range"] == "$10M - $25M"
    assert lonestar["aka"] == "Lonestar | LSW Holdings"
    assert lonestar["updated_at"] == "2025-04-10T18:49:51.123+00:00"
    assert lonestar["latitude"] == pytest.approx(30.27, abs=0.05)
    acme = company(database, "B0B0B0B0B0B0B0B2")
    assert acme["employee_count"] is None and acme["domain"] == "acme.de"
    assert acme["latitude"] == pytest.approx(52.52, abs=0.1)  # Berlin, Germany
    aliases = rows(database, "company_aliases", "alias_key")
    assert [(a["company_guid"], a["alias_key"]) for a in aliases] == [
        ("A0A0A0A0A0A0A0A1", "lonestar"),
        ("A0A0A0A0A0A0A0A1", "lsw"),
    ]


@pytest.mark.both_backends
def test_csv_import_stores_contacts_and_employments(
    database: Database, csv_files: dict[str, Path]
) -> None:
    run(database, **csv_files)

    ava = contact(database, "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C001")
    assert (ava["first_name"], ava["last_name"], ava["full_name"]) == ("Ava", "Stone", "Ava Stone")
    assert (ava["first_key"], ava["last_key"], ava["accuracy"]) == ("ava", "stone", "A+")
    job = employment(database, ava["guid"])
    assert job["email"] == "ava.stone@lonestar-works.com"
    assert (job["first_key"], job["last_key"]) == ("ava", "stone")  # for matching at a company
    assert job["status"] == "Active" and job["job_started_on"] == "2020-01"
    ben = contact(database, "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C002")
    assert ben["accuracy"] == "B"  # contract §5: an imported contact without a grade
    ben_job = employment(database, ben["guid"])
    assert ben_job["job_title"] == 'Engineer, "Platform"'
    assert ben_job["status"] == "Active" and ben_job["job_started_on"] == "2021-07"


@pytest.mark.both_backends
def test_values_with_tabs_backslashes_and_line_breaks_are_stored_as_given(
    tmp_path: Path, database: Database
) -> None:
    odd = "Tab\there, back\\slash, \\N, line\nbreak\r\nand é"
    companies = [{"compGUID": "A0A0A0A0A0A0A0A1", "compName": "Lonestar", "compAddr": odd}]
    contacts = [
        {"conGUID": "D" * 32, "compGUID": "A0A0A0A0A0A0A0A1", "conFirstName": "Jane",
         "conLastName": "Public", "conJobTitleEn": odd, "conLoc": "\\N"},
    ]  # fmt: skip
    report = run(
        database,
        companies=write(tmp_path, "c.jsonl", "".join(json.dumps(c) + "\n" for c in companies)),
        contacts=write(tmp_path, "p.jsonl", "".join(json.dumps(c) + "\n" for c in contacts)),
    )

    assert report == ImportReport(companies=1, contacts=1, errors=[])
    assert company(database, "A0A0A0A0A0A0A0A1")["address"] == odd.strip()
    assert employment(database, "D" * 32)["job_title"] == odd.strip()
    assert contact(database, "D" * 32)["location"] == "\\N"


@pytest.mark.both_backends
def test_jsonl_import_accepts_numbers_and_nulls(tmp_path: Path, database: Database) -> None:
    companies = [
        {"compGUID": "A0A0A0A0A0A0A0A1", "compName": "Lonestar", "compEmpCount": 40,
         "compLatitude": 30.5, "compLongitude": -97.5, "compPhoneNo": None},
    ]  # fmt: skip
    contacts = [
        {"conGUID": "D" * 32, "compGUID": "A0A0A0A0A0A0A0A1", "conFullName": "Dr. Jane Q. Public",
         "conJobUpdatedOn": "Mar-2024", "recordStatus": "no longer", "extra": [1, 2]},
    ]  # fmt: skip
    report = run(
        database,
        companies=write(tmp_path, "c.jsonl", "".join(json.dumps(c) + "\n" for c in companies)),
        contacts=write(tmp_path, "p.ndjson", "\n".join(json.dumps(c) for c in contacts)),
    )

    assert report == ImportReport(companies=1, contacts=1, errors=[])
    lonestar = company(database, "A0A0A0A0A0A0A0A1")
    assert lonestar["employee_count"] == 40
    assert (lonestar["latitude"], lonestar["longitude"]) == (30.5, -97.5)
    jane = contact(database, "D" * 32)
    assert (jane["first_name"], jane["middle_name"], jane["last_name"]) == ("Jane", "Q.", "Public")
    assert jane["full_name"] == "Dr. Jane Q. Public" and jane["last_key"] == "public"
    job = employment(database, "D" * 32)
    assert job["status"] == "No Longer" and job["job_updated_on"] == "2024-03"


@pytest.mark.both_backends
def test_bad_contact_rows_are_reported_and_good_ones_imported(
    tmp_path: Path, database: Database
) -> None:
    companies = write(tmp_path, "companies.csv", "compGUID,compName\nA0A0A0A0A0A0A0A1,Lonestar\n")
    contacts = DATA / "import_bad_contacts.csv"

    report = run(database, companies=companies, contacts=contacts)

    assert (report.companies, report.contacts) == (1, 2)
    assert report.errors[0] == RowError(
        str(contacts), 3, "conGUID: 'XYZ' is not 32 hexadecimal characters"
    )
    assert [(e.file, e.line) for e in report.errors] == [
        (str(contacts), line) for line in (3, 4, 5, 6, 7, 9, 10, 13)
    ]
    fields = ["conGUID", "conFirstName", "compGUID", "conJobStartedOn", "conEmail",
              "recordStatus", "accuracy", "header"]  # fmt: skip
    for error, field in zip(report.errors, fields, strict=True):
        assert field in error.reason, error
    guids = [row["guid"][-3:] for row in rows(database, "contacts", "guid")]
    assert guids == ["001", "010"]


@pytest.mark.both_backends
def test_bad_company_rows_and_bad_json_lines_are_reported(
    tmp_path: Path, database: Database
) -> None:
    lines = [
        json.dumps({"compGUID": "A0A0A0A0A0A0A0A1", "compName": "Good"}),
        json.dumps({"compGUID": "A0A0A0A0A0A0A0A2"}),
        json.dumps({"compGUID": "A0A0A0A0A0A0A0A3", "compName": "Count", "compEmpCount": "many"}),
        '{"compGUID": "A0A0A0A0A0A0A0A4", "compName": ',
        json.dumps({"compGUID": "A0A0A0A0A0A0A0A5", "compName": "Lat", "compLatitude": 91,
                    "compLongitude": 0}),
        json.dumps(["not", "an", "object"]),
        json.dumps({"compGUID": "A0A0A0A0A0A0A0A7", "compName": {"nested": True}}),
        json.dumps({"compGUID": "A0A0A0A0A0A0A0A", "compName": "Short GUID"}),
        json.dumps({"compGUID": "A0A0A0A0A0A0A0A9", "compName": "Rev", "compRevRange": "lots"}),
        json.dumps({"compGUID": "A0A0A0A0A0A0A0B0", "compName": "Huge", "compEmpCount": 3e9}),
    ]  # fmt: skip
    path = write(tmp_path, "companies.jsonl", "\n".join(lines) + "\n")

    report = run(database, companies=path)

    assert report.companies == 1
    expected = [
        (2, "compName"), (3, "compEmpCount"), (4, "JSON"), (5, "compLatitude"),
        (6, "JSON object"), (7, "compName"), (8, "compGUID"), (9, "compRevRange"),
        (10, "more than 100,000,000 employees"),  # on PostgreSQL it failed the whole import
    ]  # fmt: skip
    assert [error.line for error in report.errors] == [line for line, _ in expected]
    for error, (_, field) in zip(report.errors, expected, strict=True):
        assert field in error.reason and error.file == str(path), error


@pytest.mark.both_backends
def test_reimport_is_idempotent_and_updates_values(
    tmp_path: Path, database: Database, csv_files: dict[str, Path]
) -> None:
    run(database, **csv_files)
    before = {t: rows(database, t, "1, 2") for t in ("companies", "contacts", "employments")}
    run(database, **csv_files)
    assert {t: rows(database, t, "1, 2") for t in before} == before

    changed = csv_files["contacts"].read_text().replace("Jan-2020", "Feb-2022")
    changed = changed.replace("Vice President of Sales", "Chief Executive Officer")
    report = run(database, contacts=write(tmp_path, "changed.csv", changed))

    assert report.contacts == 2 and not report.errors
    assert database.table("contacts").count == 2 and database.table("employments").count == 2
    job = employment(database, "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C001")
    assert job["job_title"] == "Chief Executive Officer" and job["job_started_on"] == "2022-02"
    assert job["levels"] == JOIN.join(titles.classify("Chief Executive Officer").levels)

    no_aliases = csv_files["companies"].read_text().replace("Lonestar | LSW Holdings", "")
    run(database, companies=write(tmp_path, "companies.csv", no_aliases))
    assert database.table("company_aliases").count == 0


def forms(database: Database) -> set[tuple[str, str, str, int]]:
    table = rows(database, "company_name_forms", "1, 2, 3, 4")
    return {(r["key"], r["form"], r["company_guid"], r["alias"]) for r in table}


@pytest.mark.both_backends
def test_an_import_writes_each_companys_name_forms_and_replaces_them(
    tmp_path: Path, database: Database, csv_files: dict[str, Path]
) -> None:
    run(database, **csv_files)  # into empty tables: one bulk load
    lonestar = "A0A0A0A0A0A0A0A1"
    assert {("lonestarwork", "core", lonestar, 0), ("lonestar", "lead", lonestar, 0)} <= forms(
        database
    )
    assert ("lsw", "core", lonestar, 1) in forms(database)  # an alias's forms
    renamed = csv_files["companies"].read_text().replace("Lonestar Works Inc.", "Texan Works")
    run(database, companies=write(tmp_path, "renamed.csv", renamed))  # into tables with rows
    assert {row for row in forms(database) if row[2] == lonestar and not row[3]} == {
        ("texanwork", "core", lonestar, 0),
        ("texan works", "bag", lonestar, 0),
        ("texan", "lead", lonestar, 0),
    }


@pytest.mark.both_backends
def test_levels_and_functions_come_from_the_title_unless_given(
    tmp_path: Path, database: Database, csv_files: dict[str, Path]
) -> None:
    run(database, **csv_files)
    derived = titles.classify("Vice President of Sales")
    job = employment(database, "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C001")

    assert derived.levels and job["levels"] == JOIN.join(derived.levels)
    assert job["functions"] == JOIN.join(derived.functions)
    assert job["sub_functions"] == JOIN.join(derived.sub_functions)

    given = "conGUID,compGUID,conFullName,conJobTitleEn,conLevels\n"
    given += f"{'F' * 32},A0A0A0A0A0A0A0A1,Kim Lee,Vice President of Sales,Owner\n"
    run(database, contacts=write(tmp_path, "given.csv", given))
    assert employment(database, "F" * 32)["levels"] == "Owner"


@pytest.mark.both_backends
def test_work_coordinates_come_from_city_state_and_zip(
    database: Database, csv_files: dict[str, Path]
) -> None:
    run(database, **csv_files)

    by_zip = employment(database, "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C001")  # Austin, TX 78701
    assert (by_zip["latitude"], by_zip["longitude"]) == pytest.approx((30.27, -97.74), abs=0.02)
    by_city = employment(database, "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C002")  # Austin, TX
    assert (by_city["latitude"], by_city["longitude"]) == pytest.approx((30.27, -97.74), abs=0.05)


@pytest.mark.both_backends
def test_a_contact_can_have_left_one_company_for_another(
    tmp_path: Path, database: Database, csv_files: dict[str, Path]
) -> None:
    moves = (
        "conGUID,compGUID,conFirstName,conLastName,conJobTitleEn,recordStatus\n"
        f"{'9' * 32},A0A0A0A0A0A0A0A1,Max,Moss,Account Executive,No Longer\n"
        f"{'9' * 32},B0B0B0B0B0B0B0B2,Max,Moss,Sales Director,Active\n"
    )
    run(database, companies=csv_files["companies"])
    report = run(database, contacts=write(tmp_path, "moves.csv", moves))

    assert report == ImportReport(companies=0, contacts=2, errors=[])
    assert database.table("contacts").count == 1
    jobs = rows(database, "employments", "company_guid")
    assert [(j["company_guid"], j["status"], j["job_title"]) for j in jobs] == [
        ("A0A0A0A0A0A0A0A1", "No Longer", "Account Executive"),
        ("B0B0B0B0B0B0B0B2", "Active", "Sales Director"),
    ]


@pytest.mark.both_backends
def test_batches_and_progress_cover_every_line(tmp_path: Path, database: Database) -> None:
    lines = ["compGUID,compName"] + [f"{i:016X},Company {i}" for i in range(1, 26)]
    path = write(tmp_path, "many.csv", "\n".join(lines) + "\n")
    seen: list[int] = []

    report = import_files(database, companies=path, contacts=None, progress=seen.append,
                          batch_size=10)  # fmt: skip

    assert report.companies == 25 and database.table("companies").count == 25
    assert sum(seen) == 26 and seen[:2] == [11, 10]


@pytest.mark.both_backends
def test_unsupported_file_type_is_refused(tmp_path: Path, database: Database) -> None:
    with pytest.raises(importer.UnsupportedFile, match="csv"):
        run(database, companies=write(tmp_path, "companies.xlsx", ""))


@pytest.mark.both_backends
def test_acceptance_fixture_imports_without_errors(database: Database) -> None:
    report = run(
        database,
        companies=ACCEPTANCE / "radius_companies.csv",
        contacts=ACCEPTANCE / "radius_contacts.csv",
    )

    assert report == ImportReport(companies=1, contacts=22, errors=[])
    jobs = rows(database, "employments", "contact_guid")
    assert all(job["latitude"] is not None and job["levels"] for job in jobs)


def indexes(database: Database) -> list[tuple[str, str]]:
    """Every index and constraint of the schema, with its definition."""
    if getattr(database, "dialect", "sqlite") == "postgresql":
        return database.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
            "UNION ALL SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE connamespace = current_schema()::regnamespace AND convalidated ORDER BY 1, 2"
        ).fetchall()
    sql = "SELECT name, sql FROM sqlite_master WHERE type = 'index' ORDER BY name"
    return database.execute(sql).fetchall()


@pytest.mark.both_backends
def test_loading_empty_tables_rebuilds_their_indexes(
    database: Database, csv_files: dict[str, Path], backend: str
) -> None:
    schema = indexes(database)

    run(database, **csv_files)

    assert indexes(database) == schema
    if backend == "postgresql":
        return
    plan = database.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM employments WHERE email = 'x@y.com' AND email != ''"
    ).fetchall()
    assert "employments_email" in str(plan)


@pytest.mark.both_backends
def test_a_failed_load_into_empty_tables_leaves_nothing_behind(
    tmp_path: Path, database: Database
) -> None:
    lines = ["compGUID,compName"] + [f"{i:016X},Company {i}" for i in range(1, 26)]
    path = write(tmp_path, "many.csv", "\n".join(lines) + "\n")
    schema = indexes(database)

    def interrupt(_lines: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        import_files(database, companies=path, contacts=None, progress=interrupt, batch_size=10)

    assert database.table("companies").count == 0
    assert indexes(database) == schema


@pytest.mark.both_backends
def test_several_converters_keep_file_order_and_report_every_bad_row(
    tmp_path: Path, database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importer, "CONVERTERS", 3)
    lines = ["compGUID,compName"]
    for i in range(1, 41):
        lines.append(f"{i:016X},Company {i}" if i % 7 else f"not-a-guid-{i},Broken {i}")
    path = write(tmp_path, "many.csv", "\n".join(lines) + "\n")
    seen: list[int] = []

    report = import_files(database, companies=path, contacts=None, progress=seen.append,
                          batch_size=4)  # fmt: skip

    assert report.companies == 35 and database.table("companies").count == 35
    assert [error.line for error in report.errors] == [8, 15, 22, 29, 36]
    assert sum(seen) == 41 and len(seen) == 10


@pytest.mark.both_backends
def test_a_file_that_is_not_utf8_is_refused_with_several_converters(
    tmp_path: Path, database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importer, "CONVERTERS", 2)
    path = tmp_path / "latin1.csv"
    path.write_bytes("compGUID,compName\nA0A0A0A0A0A0A0A1,Caf\xe9 M\xfcller\n".encode("latin-1"))

    with pytest.raises(ValueError, match="utf-8"):
        import_files(database, companies=path, contacts=None)
    assert database.table("companies").count == 0


@pytest.mark.both_backends
def test_converters_passing_over_rows_agree_on_quoted_line_breaks_and_stray_quotes(
    tmp_path: Path, database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = ["compGUID,compName,compNameAka"]
    for i in range(1, 31):
        name = [f"Company {i}", f'"Two\nlines {i}"', f'"Said ""{i}"""', f'Stray"{i}', ""][i % 5]
        lines.append(f"{i:016X},{name},")
    path = write(tmp_path, "quoted.csv", "\n".join(lines[:12]) + "\n\n" + "\n".join(lines[12:]))
    seen: list[int] = []

    report = import_files(database, companies=path, contacts=None, progress=seen.append,
                          batch_size=3)  # fmt: skip
    monkeypatch.setattr(importer, "CONVERTERS", 3)
    again = import_files(database, companies=path, contacts=None, progress=seen.append,
                         batch_size=3)  # fmt: skip

    assert report == again and report.companies == 24
    assert [(error.line, error.reason) for error in report.errors] == [
        (line, "compName: required") for line in (6, 12, 19, 25, 31, 37)
    ]
    assert company(database, f"{1:016X}")["name"] == "Two\nlines 1"
    assert company(database, f"{2:016X}")["name"] == 'Said "2"'
    assert company(database, f"{3:016X}")["name"] == 'Stray"3'
    assert seen[: len(seen) // 2] == seen[len(seen) // 2 :] and sum(seen) == 38 * 2


def check_constraints(database: Database, tables: list[str]) -> list[tuple[str, str]]:
    found = []
    for table in tables:
        sql = database.execute("SELECT sql FROM sqlite_master WHERE name = ?", [table]).fetchone()
        for start in (m.end() for m in re.finditer(r"CHECK \(", sql[0])):
            depth, end = 1, start
            while depth:
                depth += {"(": 1, ")": -1}.get(sql[0][end], 0)
                end += 1
            found.append((table, sql[0][start : end - 1]))
    return found


def foreign_keys(database: Database, tables: list[str]) -> list[tuple[str, str, str, str]]:
    """(table, column, referenced table, referenced column) of each foreign key."""
    sql = 'SELECT "from", "table", "to" FROM pragma_foreign_key_list(?)'
    return sorted(
        (table, *row) for table in tables for row in database.execute(sql, [table]).fetchall()
    )


def test_bulk_loads_skip_only_constraints_the_importer_enforces_and_restore_them(
    tmp_path: Path, database: Database, csv_files: dict[str, Path]
) -> None:
    # db.bulk_write evaluates neither CHECK constraints nor foreign keys: a new one on these
    # tables needs its rule in the importer's row validation, then its place here.
    tables = ["companies", "company_aliases", "contacts", "employments"]
    assert check_constraints(database, tables) == [
        ("companies", "length(guid) = 16"),
        ("contacts", "length(guid) = 32"),
        ("contacts", "accuracy IN ('A+', 'A', 'A-', 'B')"),
        ("employments", "status IN ('Active', 'No Longer')"),
    ]
    assert GRADES == ("A+", "A", "A-", "B") and RECORD_STATUSES == ("Active", "No Longer")
    assert foreign_keys(database, tables) == [
        ("company_aliases", "company_guid", "companies", "guid"),
        ("employments", "company_guid", "companies", "guid"),
        ("employments", "contact_guid", "contacts", "guid"),
    ]  # the importer refuses a contact of an unknown company, and writes contacts first

    report = run(database, **csv_files)

    assert report.companies and report.contacts
    assert database.execute("PRAGMA foreign_key_check").fetchall() == []
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        database.execute("UPDATE contacts SET accuracy = 'C'")
    with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"):
        database.execute("UPDATE employments SET company_guid = 'F00DF00DF00DF00D'")
    assert database.execute("PRAGMA temp_store").fetchone()[0] == 2  # MEMORY, as connect sets


def row_checked_foreign_keys(database: Database, table: str) -> list[str]:
    """The foreign keys of `table` that the database checks at each row written."""
    if getattr(database, "dialect", "sqlite") == "postgresql":
        sql = (
            "SELECT conname FROM pg_constraint WHERE contype = 'f' "
            "AND conrelid::regclass::text = ? ORDER BY conname"
        )
        return [name for (name,) in database.execute(sql, [table]).fetchall()]
    if not database.execute("PRAGMA foreign_keys").fetchone()[0]:
        return []
    return [f"{key[1]}.{key[2]}" for key in foreign_keys(database, [table])]


@pytest.mark.both_backends
def test_a_bulk_load_checks_references_once_at_the_end_not_at_each_row(
    database: Database, csv_files: dict[str, Path]
) -> None:
    # A check per row is a lookup in the referenced table per row (on PostgreSQL a trigger
    # running a query), most of a load's time in the database; the importer has checked
    # every reference itself, and at the end the keys are back (on PostgreSQL, validated).
    tables = {"companies": "company_aliases", "contacts": "employments"}
    enforced = {table: row_checked_foreign_keys(database, table) for table in tables.values()}
    for file, table in tables.items():
        during: list[list[str]] = []

        def check(_lines: int, table: str = table, during: list[list[str]] = during) -> None:
            during.append(row_checked_foreign_keys(database, table))

        import_files(database, **{"companies": None, "contacts": None, file: csv_files[file]},
                     progress=check)  # fmt: skip

        assert during and all(checked == [] for checked in during), file
        assert row_checked_foreign_keys(database, table) == enforced[table] != []
    assert database.table("employments").count == 2
    with pytest.raises(Exception, match=r"(?i)foreign key"):
        database.execute("UPDATE employments SET company_guid = 'F00DF00DF00DF00D'")


@pytest.mark.both_backends
def test_a_bulk_load_keeps_the_last_row_of_a_key_repeated_within_and_across_batches(
    tmp_path: Path, database: Database, csv_files: dict[str, Path]
) -> None:
    run(database, companies=csv_files["companies"])
    header = "conGUID,compGUID,conFirstName,conLastName,conJobTitleEn\n"
    rows_ = [("1", "Ada", "Clerk"), ("2", "Bo", "Clerk"), ("1", "Ada", "Analyst"),
             ("1", "Adele", "Director"), ("2", "Bo", "Engineer")]  # fmt: skip
    text = header + "".join(
        f"{digit * 32},A0A0A0A0A0A0A0A1,{first},Lee,{title}\n" for digit, first, title in rows_
    )
    path = write(tmp_path, "repeats.csv", text)

    report = import_files(database, companies=None, contacts=path, batch_size=2, now=NOW)

    assert report == ImportReport(companies=0, contacts=5, errors=[])
    people = [(row["guid"][0], row["first_name"]) for row in rows(database, "contacts", "guid")]
    assert people == [("1", "Adele"), ("2", "Bo")]
    jobs = [(job["contact_guid"][0], job["job_title"], job["first_key"])
            for job in rows(database, "employments", "contact_guid")]  # fmt: skip
    assert jobs == [("1", "Director", "adele"), ("2", "Engineer", "bo")]


SCREEN_SECRET = b"import-secret"


def screen_listing(*found: privacy.Identifier | None) -> privacy.Screen:
    hash_of = privacy.hasher(SCREEN_SECRET)
    return privacy.Screen(hash_of, frozenset(hash_of(i) for i in found if i is not None))


@pytest.mark.both_backends
@pytest.mark.parametrize(
    "listed",
    [
        privacy.email("ava.stone@lonestar-works.com"),
        privacy.name_at("Ava Stone", "lonestar-works.com"),  # her company's domain
        privacy.name_at("Ben Ode", "https://www.lonestar-works.com"),  # Ben has no e-mail
    ],
)
def test_people_on_the_suppression_list_are_left_out_and_counted(
    database: Database, csv_files: dict[str, Path], listed: privacy.Identifier
) -> None:
    run(database, companies=csv_files["companies"])  # imported before the contacts, as a file
    report = import_files(database, contacts=csv_files["contacts"], companies=None, now=NOW,
                          screen=screen_listing(listed))  # fmt: skip
    kept = [row["first_name"] for row in rows(database, "contacts", "guid")]
    assert (report.contacts, report.suppressed, report.errors) == (1, 1, [])
    assert kept == (["Ben"] if "ava" in listed.value else ["Ava"])


@pytest.mark.both_backends
def test_a_suppression_list_naming_no_one_in_the_file_changes_nothing(
    database: Database, csv_files: dict[str, Path]
) -> None:
    screen = screen_listing(
        privacy.email("someone@else.example"), privacy.profile("linkedin.com/in/x")
    )
    report = import_files(database, now=NOW, screen=screen, **csv_files)
    assert report == ImportReport(companies=2, contacts=2, errors=[], suppressed=0)


# --- changes found at import -----------------------------------------------------------------

AVA, BEN, CID = "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C001", "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C002", "C" * 32
LONESTAR, ACME = "A0A0A0A0A0A0A0A1", "B0B0B0B0B0B0B0B2"
MONTH_OF_CHANGES = (
    "conGUID,compGUID,conFirstName,conLastName,conEmail,conJobTitleEn,conWorkLocCity,"
    "conWorkLocState,conWorkLocCountry,conWorkLocPhoneNo,conJobStartedOn,conJobUpdatedOn,recordStatus\n"
    f"{AVA},{LONESTAR},Ava,Stone,ava.stone@lonestar-works.com,Vice President of Sales,Austin,TX,"
    "United States,,Jan-2020,Oct-2026,No Longer\n"
    f"{AVA},{ACME},Ava,Stone,ava@acme.de,Chief Revenue Officer,Berlin,,Germany,,Oct-2026,,Active\n"
    f'{BEN},{LONESTAR},Ben,Ode,,"Lead Engineer, ""Platform""",Dallas,TX,United States,'
    "+1 512 555 0100,2021-07,Nov-2026,\n"
    f"{CID},{ACME},Cid,New,,Engineer,Berlin,,Germany,,Nov-2026,,Active\n"
)


def recorded(database: Database) -> list[tuple[str, str, str, dict, dict, str, str]]:
    return [
        (c.kind, c.contact_guid, c.company_guid, c.before, c.after, c.changed_on, c.recorded_at)
        for c in changes.since(database)
    ]


@pytest.mark.both_backends
def test_an_import_of_updated_data_records_what_changed_per_contact_and_company(
    tmp_path: Path, database: Database, csv_files: dict[str, Path]
) -> None:
    run(database, **csv_files)
    assert changes.latest_id(database) == 0  # a first import changes nothing: all is new
    grown = csv_files["companies"].read_text().replace('"1,200"', "1500")
    run(database, companies=write(tmp_path, "companies.csv", grown),
        contacts=write(tmp_path, "contacts.csv", MONTH_OF_CHANGES))  # fmt: skip

    stamp = "2025-04-10T18:49:51.123+00:00"
    ended = {"company_guid": LONESTAR, "company": "Lonestar Works Inc.",
             "job_title": "Vice President of Sales"}  # fmt: skip
    started = {"company_guid": ACME, "company": "Acme GmbH",
               "job_title": "Chief Revenue Officer", "started_on": "2026-10-01"}  # fmt: skip
    city = {"work_city": "Austin", "work_state": "TX", "work_country": "United States"}
    assert recorded(database) == [
        ("company", "", LONESTAR, {"employee_count": 1200}, {"employee_count": 1500}, "", stamp),
        ("job_ended", AVA, LONESTAR, ended, {"left_on": "2026-10-01"}, "2026-10-01", stamp),
        ("job_started", AVA, ACME, {}, started, "2026-10-01", stamp),
        ("title", BEN, LONESTAR, {"job_title": 'Engineer, "Platform"'},
         {"job_title": 'Lead Engineer, "Platform"'}, "2026-11-01", stamp),
        ("phone", BEN, LONESTAR, {"work_phone": ""}, {"work_phone": "+1 512 555 0100"},
         "2026-11-01", stamp),
        ("location", BEN, LONESTAR, city, {**city, "work_city": "Dallas"}, "2026-11-01", stamp),
    ]  # fmt: skip


@pytest.mark.both_backends
def test_reimporting_the_same_rows_or_part_of_them_records_nothing(
    tmp_path: Path, database: Database, csv_files: dict[str, Path]
) -> None:
    run(database, **csv_files)
    run(database, **csv_files)
    ben_only = "\n".join(csv_files["contacts"].read_text().splitlines()[::2])  # header, Ben
    run(database, contacts=write(tmp_path, "ben.csv", ben_only))
    assert changes.latest_id(database) == 0


def test_changes_are_not_looked_for_when_told_not_to(
    tmp_path: Path, database: Database, csv_files: dict[str, Path]
) -> None:
    run(database, **csv_files)
    contacts = write(tmp_path, "contacts.csv", MONTH_OF_CHANGES)
    import_files(database, companies=None, contacts=contacts, now=NOW, detect_changes=False)
    assert (
        changes.latest_id(database) == 0 and employment(database, AVA, ACME)["status"] == "Active"
    )


def test_a_new_contact_whose_rows_span_batches_is_new_not_changed(
    tmp_path: Path, database: Database, csv_files: dict[str, Path]
) -> None:
    run(database, **csv_files)
    cid_moved = (
        "conGUID,compGUID,conFirstName,conLastName,conJobTitleEn,recordStatus\n"
        f"{CID},{LONESTAR},Cid,New,Engineer,No Longer\n"
        f"{CID},{ACME},Cid,New,Engineer,Active\n"
    )
    contacts = write(tmp_path, "cid.csv", cid_moved)
    import_files(database, companies=None, contacts=contacts, now=NOW, batch_size=1)
    assert (
        changes.latest_id(database) == 0 and employment(database, CID, ACME)["status"] == "Active"
    )
