"""Credit balances: atomic debits, the 402 at zero, unlimited balances, and the ledger."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlite_utils import Database

from server import accounts, credits
from server.errors import InsufficientCredits
from server.storage import db

pytestmark = pytest.mark.both_backends

NOW = datetime(2025, 4, 10, tzinfo=UTC)


def org(database: Database, tier: str = "pro", balance: int | None = None) -> str:
    created, _ = accounts.create_organization(
        database, b"s", NOW, name=f"Org {tier} {balance}", website="x.org", tier=tier,
        credits=balance,
    )  # fmt: skip
    return created["id"]


def test_a_debit_takes_credits_and_writes_the_ledger(database: Database) -> None:
    org_id = org(database, balance=2)

    assert credits.debit(database, org_id, 1, NOW, "tx-1") == 1
    assert credits.debit(database, org_id, 1, NOW, "tx-2") == 0
    with pytest.raises(InsufficientCredits):
        credits.debit(database, org_id, 1, NOW, "tx-3")

    lines = [
        (e["change"], e["balance"], e["transaction_id"]) for e in credits.ledger(database, org_id)
    ]
    assert lines == [(2, 2, ""), (-1, 1, "tx-1"), (-1, 0, "tx-2")]


def test_unlimited_balances_are_never_debited(database: Database) -> None:
    org_id = org(database, tier="enterprise_plus")

    assert credits.debit(database, org_id, 1, NOW, "tx-1") is None
    assert credits.ledger(database, org_id) == []


def test_concurrent_debits_never_overdraw(db_path: Path, database: Database) -> None:
    org_id = org(database, balance=50)
    outcomes: list[str] = []

    def spend() -> None:
        connection = db.connect(db_path, migrate=False)
        for _ in range(20):
            try:
                credits.debit(connection, org_id, 1, NOW, "tx")
                outcomes.append("ok")
            except InsufficientCredits:
                outcomes.append("refused")

    threads = [threading.Thread(target=spend) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert outcomes.count("ok") == 50 and outcomes.count("refused") == 30
    assert accounts.organization(database, org_id)["credits"] == 0
