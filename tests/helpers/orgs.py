"""Organizations the tests set up straight in the database (not through the admin API)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlite_utils import Database

from server import accounts
from tests.helpers.constants import NOW, SECRET


def organization(
    database: Database, name: str = "Acme", tier: str = "pro", now: datetime = NOW, **options: Any
) -> tuple[dict[str, Any], str]:
    """A new organization under the tests' SECRET (its website `<name>.example`, the limits
    and credits `options` give): its row and its admin key."""
    website = f"{name.lower()}.example"
    return accounts.create_organization(
        database, SECRET.encode(), now, name=name, website=website, tier=tier, **options
    )
