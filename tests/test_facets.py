"""What discover filters by, computed from an employment: literal rows in, literal keys out."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlite_utils import Database

from server import facets
from server.storage import db as storage
from server.storage.migrations import MIGRATIONS


def test_job_facets_of_a_row() -> None:
    assert facets.job_facets(
        "VP, Sales", "VP", "Sales | Marketing", "Austin", "Texas", "78701", "USA"
    ) == (2, 0b100, 0b110000, " vice president sales ", "|c:US|s:TX|t:austin|z:78701|")


@pytest.mark.parametrize(
    ("levels", "rank", "bits"),
    [
        ("Founder/CXO | Board Members/Trustee", 0, 0b11),
        ("Director", 4, 0b10000),
        ("Below Manager", 8, 1 << 8),
        ("", 9, 0),
        ("Wizard", 9, 0),  # not in the taxonomy
    ],
)
def test_levels_as_rank_and_bits(levels: str, rank: int, bits: int) -> None:
    assert (facets.level_rank(levels), facets.level_bits(levels)) == (rank, bits)


def test_bits_name_the_taxonomy_in_order() -> None:
    bits = facets.function_bits("Marketing | Top Management")
    assert facets.bit_names(bits, facets.FUNCTION_BITS) == ["Top Management", "Marketing"]


@pytest.mark.parametrize(
    ("title", "key"),
    [("Sr. Dir. of Eng.", " senior director engineer "), ("", ""), ("&", "")],
)
def test_title_key_is_padded_normalized_words(title: str, key: str) -> None:
    assert facets.title_key(title) == key


def test_grades_rank_best_first() -> None:
    assert [facets.grade_rank(g) for g in ("A+", "A", "A-", "B")] == [0, 1, 2, 3]


def test_m007_backfills_the_facets_of_existing_employments(db_path: Path) -> None:
    """m007 asks for the rebuild of the employments it finds; connecting runs it."""
    db = Database(db_path)
    with storage.write(db):
        MIGRATIONS.apply(db, stop_before="m007_discover")
    db["companies"].insert(
        {"guid": "A000000000000001", "name": "Acme", "name_key": "acme", "updated_at": "x"}
    )
    db["contacts"].insert({"guid": "0" * 32, "accuracy": "A-", "updated_at": "x"})
    job = {"contact_guid": "0" * 32, "company_guid": "A000000000000001", "job_title": "CTO"}
    db["employments"].insert({**job, "levels": "Founder/CXO", "functions": "Top Management"})
    db["employments"].update(
        ("0" * 32, "A000000000000001"), {"work_city": "Denver", "work_state": "CO"}
    )
    db = storage.connect(db_path)
    row = db.execute(
        "SELECT level_rank, level_bits, function_bits, title_key, place_key, grade FROM employments"
    ).fetchone()
    assert row == (0, 1, 1, " chief technology officer ", "|c:US|s:CO|t:denver|", 2)
    indexes = {index.name for index in db["employments"].indexes}
    assert "employments_discover" in indexes and "employments_company_geo" not in indexes
