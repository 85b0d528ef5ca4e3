"""Export companies and contacts to CSV or JSON Lines in the field names the importer reads.

One contact row per employment, months as `Mon-YYYY`, every value a string ("" when empty),
so that importing the files into an empty database gives back the same records.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from server.records import (
    COMPANY_COLUMNS,
    COMPANY_EXTRA_COLUMNS,
    CONTACT_COLUMNS,
    EMPLOYMENT_COLUMNS,
    employee_range,
    month_to_vendor,
)
from server.storage import store

SUFFIXES = (".csv", ".jsonl", ".ndjson")
COMPANY_HEADER = [*COMPANY_COLUMNS, "compEmpRange", *COMPANY_EXTRA_COLUMNS]
CONTACT_HEADER = [
    "conGUID",
    "compGUID",
    *(name for name in CONTACT_COLUMNS if name != "conGUID"),
    *(name for name in EMPLOYMENT_COLUMNS if name != "compGUID"),
]
_CONTACT_SOURCES = {**CONTACT_COLUMNS, **EMPLOYMENT_COLUMNS}
_MONTHS = ("conJobStartedOn", "conJobUpdatedOn")


def export_files(db: Database, *, companies: Path | None, contacts: Path | None) -> tuple[int, int]:
    """Write every company and every employment (with its contact); return the two row counts."""
    for path in (companies, contacts):
        if path is not None and path.suffix.lower() not in SUFFIXES:
            raise ValueError(f"{path}: use a .csv, .jsonl or .ndjson file")
    written_companies = written_contacts = 0
    if companies is not None:
        written_companies = write_rows(companies, COMPANY_HEADER, company_items(db))
    if contacts is not None:
        written_contacts = write_rows(contacts, CONTACT_HEADER, contact_items(db))
    return written_companies, written_contacts


def company_items(db: Database) -> Iterator[dict[str, str]]:
    """Each company as vendor field -> string, in GUID order."""
    for row in store.iter_companies(db):
        item = {name: _text(row[COMPANY_COLUMNS[name]]) for name in COMPANY_COLUMNS}
        item["compEmpRange"] = employee_range(row["employee_count"])
        item.update((name, _text(row[col])) for name, col in COMPANY_EXTRA_COLUMNS.items())
        yield item


def contact_items(db: Database) -> Iterator[dict[str, str]]:
    """Each employment with its contact as vendor field -> string, in (contact, company) order."""
    for row in store.iter_contact_employments(db):
        item = {name: _text(row[_CONTACT_SOURCES[name]]) for name in CONTACT_HEADER}
        item["conGUID"] = row["contact_guid"]
        for name in _MONTHS:
            item[name] = month_to_vendor(item[name])
        yield item


def write_rows(path: Path, header: list[str], items: Iterable[dict[str, str]]) -> int:
    """Write items as CSV (with a header) or JSON Lines, by extension; return how many."""
    written = 0
    with path.open("w", newline="", encoding="utf-8") as handle:
        if path.suffix.lower() == ".csv":
            writer = csv.DictWriter(handle, fieldnames=header, lineterminator="\n")
            writer.writeheader()
            for item in items:
                writer.writerow(item)
                written += 1
        else:
            for item in items:
                handle.write(json.dumps(item, ensure_ascii=False) + "\n")
                written += 1
    return written


def _text(value: Any) -> str:
    """A stored value as the string the vendor format carries (floats exact, None as "")."""
    if value is None:
        return ""
    return value if isinstance(value, str) else repr(value)
