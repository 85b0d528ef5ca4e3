"""Organizations the tests set up straight in the database (not through the admin API)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from connector import connections, store
from server import accounts, importer
from tests.helpers.constants import CRM, DATA, NOW, SECRET


def organization(
    database: Database, name: str = "Acme", tier: str = "pro", now: datetime = NOW, **options: Any
) -> tuple[dict[str, Any], str]:
    """A new organization under the tests' SECRET (its website `<name>.example`, the limits
    and credits `options` give): its row and its admin key."""
    website = f"{name.lower()}.example"
    return accounts.create_organization(
        database, SECRET.encode(), now, name=name, website=website, tier=tier, **options
    )


def connected(
    db_path: Path,
    platform: str,
    crm_token: str,
    *,
    credits: int = 10,
    crm_base_url: str = CRM,
    now: datetime = NOW,
    **options: Any,
) -> tuple[Database, connections.Added, dict[str, Any]]:
    """The discover dataset (tests/data/discover_*.csv) and Acme (pro, 10 credits unless
    `credits`) with a connection to `platform`'s CRM at `crm_base_url` (named after it;
    `options` as `connections.add` takes them): (db, connection, organization)."""
    db = store.connect(db_path)
    importer.import_files(
        db, companies=DATA / "discover_companies.csv", contacts=DATA / "discover_contacts.csv"
    )
    org, key = organization(db, now=now, credits=credits)
    link = connections.add(
        db, SECRET.encode(), now, name=platform, platform=platform, api_key=key,
        crm_base_url=crm_base_url, crm_token=crm_token, **options,
    )  # fmt: skip
    return db, link, org
