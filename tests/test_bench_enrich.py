"""The enrich benchmark's ground truth: a company-name variant that fits another company as
well as its own is left out, one that fits only its own is kept."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))  # bench/ imports its siblings

from bench.enrich import Ground
from bench.enrich_queries import BenchQuery
from server.matching import Query
from server.normalize import company_key

KOBE, ZENTRIX, ACME = "K" * 16, "Z" * 16, "A" * 16
COMPANIES = {
    KOBE: ("Kobe Steel Ltd", ""),
    ZENTRIX: ("Zentrix Analytics GmbH", "Novabright Analytics"),
    ACME: ("Acme Electronics N.V.", ""),
}
# Another company each variant below fits as well as its own.
RIVALS = {
    "boundary typo": "Kober Steel Ltd",
    "long-word typos": "Zentrix Analyts GmbH",
    "spaced legal form": "Acme Electronics GmbH",
    "place tail": "Acme Electronics Eindhoven B.V.",
    "former name": "Novabright Analytics Inc.",
}
VARIANTS = {
    "boundary typo": (KOBE, "Kobensteel Ltd"),
    "long-word typos": (ZENTRIX, "Zentrix Analytcs GmbH"),
    "spaced legal form": (ACME, "ACME ELECTRONICSN.V."),
    "place tail": (ACME, "Acme Electronics N.V., Eindhoven, NL"),
    "former name": (ZENTRIX, "Novabright Analytics"),
}


def _database(rival: str = "") -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.executescript(
        "CREATE TABLE companies (guid, name, name_key, aka, domain);"
        "CREATE TABLE company_aliases (company_guid, alias_key);"
        "CREATE TABLE contacts (guid, first_key, last_key);"
        "CREATE TABLE employments (contact_guid, company_guid, email);"
    )
    rows = [(guid, name, aka) for guid, (name, aka) in COMPANIES.items()]
    rows += [("R" * 16, rival, "")] if rival else []
    for guid, name, aka in rows:
        conn.execute(
            "INSERT INTO companies VALUES (?, ?, ?, ?, ?)",
            (guid, name, company_key(name), aka, f"{guid.lower()}.com"),
        )
        if aka:
            conn.execute("INSERT INTO company_aliases VALUES (?, ?)", (guid, company_key(aka)))
    return conn


@pytest.fixture(scope="module")
def alone() -> Iterator[Ground]:
    conn = _database()
    yield Ground(conn)
    conn.close()


def _case(kind: str) -> BenchQuery:
    guid, name = VARIANTS[kind]
    return BenchQuery(f"company: {kind}", Query(company_name=name), guid, "", variant=kind)


@pytest.mark.parametrize("kind", sorted(VARIANTS))
def test_a_variant_that_fits_only_its_company_is_kept(alone: Ground, kind: str) -> None:
    assert not alone.rejected(_case(kind))


@pytest.mark.parametrize("kind", sorted(VARIANTS))
def test_a_variant_that_fits_another_company_as_well_is_left_out(kind: str) -> None:
    conn = _database(RIVALS[kind])
    assert Ground(conn).rejected(_case(kind))
    conn.close()
