"""The enrich tests' dataset (tests/data/enrich_*.csv): three companies and their people,
imported at NOW; built once per session (conftest's `enrich_dataset`), copied per test."""

from __future__ import annotations

import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path

from sqlite_utils import Database

from server import accounts, enrich, importer, privacy
from server.clock import iso
from server.enrich import Requester
from server.privacy import Identifier
from server.storage import db, store
from tests.helpers.constants import DATA

NOW = datetime(2025, 4, 10, 18, 49, 51, 123000, tzinfo=UTC)
AVA = "AAAA0000AAAA0000AAAA0000AAAA0001"
BEN = "BBBB0000BBBB0000BBBB0000BBBB0002"
LONESTAR, BLUEBONNET, CEDAR = "A1A1A1A1A1A1A1A1", "B2B2B2B2B2B2B2B2", "C3C3C3C3C3C3C3C3"
AVA_EMAIL = {"contactEmail": "ava.stone@lonestar-works.com"}
BEN_OLD_EMAIL = {"contactEmail": "ben.ode@lonestar-works.com"}
NOBODY = {"contactEmail": "nobody@unknown-company.example"}
REQUESTER_SECRET = b"secret"  # the server secret of make_requester's keys and suppression hash


def load_dataset(database: Database) -> None:
    """Three companies; Ava (direct dials), Ben (No Longer at Lonestar, now at Bluebonnet), Cy."""
    report = importer.import_files(
        database,
        companies=DATA / "enrich_companies.csv",
        contacts=DATA / "enrich_contacts.csv",
        now=NOW,
    )
    assert report.errors == []


def build_dataset(directory: Path) -> Path:
    """A database file holding the dataset: imported once per module, copied per test."""
    path = directory / "dataset.db"
    connection = db.connect(path)
    load_dataset(connection)
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    return path


def copy_dataset(template: Path, db_path: Path | str) -> Database:
    """A fresh database at `db_path` holding the dataset (a PostgreSQL one imports it)."""
    if isinstance(db_path, str) and db_path.startswith("postgresql://"):
        connection = db.connect(db_path)
        load_dataset(connection)
        return connection
    shutil.copyfile(template, db_path)
    return db.connect(db_path)


def make_requester(database: Database, tier: str, credit_balance: int | None = None) -> Requester:
    org, _ = accounts.create_organization(
        database,
        REQUESTER_SECRET,
        NOW,
        name=f"{tier}-{uuid.uuid4().hex[:6]}",
        website="https://example.org",
        tier=tier,
        credits=credit_balance,
    )
    return enrich.requester_for(database, org["id"], "/v7/enrich", REQUESTER_SECRET)


def suppress(
    database: Database, *people: Identifier | None, secret: bytes = REQUESTER_SECRET
) -> None:
    """Put these identifiers on the suppression list, hashed under `secret` (the rows `privacy
    suppress` adds; the people's contact rows are left, as a duplicate record's would be)."""
    hash_of = privacy.hasher(secret)
    rows = [
        {
            "hash": hash_of(found),
            "kind": found.kind,
            "action": "suppress",
            "reason": "opted out",
            "actor": "test",
            "created_at": iso(NOW),
        }
        for found in people
        if found is not None
    ]
    assert rows, "suppress names no one"
    with db.write(database):
        store.add_suppressions(database, rows)
