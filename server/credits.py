"""Credit balances and their ledger: every change of a balance is one ledger line (contract §4.3).

A balance is a number of credits or unlimited (None). Debits happen inside the data call's
own transaction, so a call that fails or is rolled back costs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlite_utils import Database

from server import audit
from server.clock import iso
from server.errors import InsufficientCredits, InvalidParameter, NotFound
from server.storage import store
from server.storage.db import write, write_at_once

# More than any organization buys, and far below SQLite's largest integer, past which a
# balance would silently turn into a floating-point number.
MAX_CREDITS = 10**12


def record(
    db: Database,
    now: datetime,
    *,
    org_id: str,
    change: int,
    balance: int | None,
    reason: str,
    transaction_id: str = "",
) -> None:
    """Write one ledger line (the balance itself was changed by the caller)."""
    store.insert_ledger_entry(
        db,
        {
            "org_id": org_id,
            "change": change,
            "balance": balance,
            "reason": reason,
            "transaction_id": transaction_id,
            "created_at": iso(now),
        },
    )


def debit(db: Database, org_id: str, amount: int, now: datetime, transaction_id: str) -> int | None:
    """Take `amount` credits for a delivered result; the balance after (None: unlimited).

    Raises InsufficientCredits when the balance is smaller than `amount`.
    """
    with write(db):
        applied, balance = store.change_credits(db, org_id, -amount)
        if not applied:
            raise InsufficientCredits("Insufficient credits to process the request.")
        if balance is not None:
            record(
                db, now, org_id=org_id, change=-amount, balance=balance, reason="enrichment",
                transaction_id=transaction_id,
            )  # fmt: skip
    return balance


def charge(db: Database, transaction: dict[str, Any], delivered: Sequence[str]) -> bool:
    """Record a delivery's transaction and take its `credits` (a ledger line), together:
    False for a replay of a transaction already delivered (nothing recorded or taken).

    Raises InsufficientCredits, nothing recorded, when the balance is smaller. On
    PostgreSQL one statement, in one round trip (store.record_charged_transaction).
    """
    with write_at_once(db):
        recorded = store.record_charged_transaction(db, transaction, delivered, "enrichment")
        if recorded is None:
            raise InsufficientCredits("Insufficient credits to process the request.")
    return recorded


def charge_refresh(
    db: Database, transaction: dict[str, Any], delivered: Sequence[str]
) -> tuple[bool, int]:
    """`charge` for a delivery of a contact that is free to refresh: 1 credit unless the
    organization was delivered the contact before; whether it was recorded, and its cost.
    On PostgreSQL in one round trip (store.record_refresh_transaction)."""
    with write(db):
        recorded, cost = store.record_refresh_transaction(db, transaction, delivered, "enrichment")
        if recorded is None:
            raise InsufficientCredits("Insufficient credits to process the request.")
    return recorded, cost


def top_up(db: Database, org_id: str, amount: int, now: datetime) -> int:
    """Add credits to a limited balance (operator); the balance after."""
    if not 1 <= amount <= MAX_CREDITS:
        raise InvalidParameter(f"The number of credits to add must be 1 to {MAX_CREDITS:,}.")
    with write(db):
        if store.organization(db, org_id) is None:
            raise NotFound(f"No organization with id {org_id}.")
        _, balance = store.change_credits(db, org_id, amount)
        if balance is None:
            raise InvalidParameter(f"The organization {org_id} has unlimited credits.")
        if balance > MAX_CREDITS:  # undone with the transaction
            raise InvalidParameter(f"A balance holds at most {MAX_CREDITS:,} credits.")
        record(db, now, org_id=org_id, change=amount, balance=balance, reason="top-up")
        audit.record(
            db, now, org_id=org_id, actor=audit.OPERATOR, action="credits.add",
            detail={"credits": amount, "balance": balance},
        )  # fmt: skip
    return balance


def ledger(db: Database, org_id: str) -> list[dict[str, Any]]:
    """The organization's balance changes, oldest first."""
    return store.ledger(db, org_id)


def history(db: Database, org_id: str, before: int | None, limit: int) -> list[dict[str, Any]]:
    """One page of the organization's balance changes, newest first, older than line `before`."""
    return store.ledger_page(db, org_id, before, limit)
