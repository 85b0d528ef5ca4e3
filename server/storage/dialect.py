"""The few real differences between SQLite's SQL and PostgreSQL's, as named functions.

The stores write each statement once, in SQL both backends understand (`INSERT … ON
CONFLICT`, `RETURNING`, CTEs, window functions: SQLite ≥ 3.35 and PostgreSQL alike), and ask
this module for the parts where the two differ. Nothing here rewrites a statement.
"""

from __future__ import annotations

from typing import Any

from server.storage import pg


def is_postgres(db: Any) -> bool:
    """Whether `db` is the PostgreSQL backend (server/storage/pg.py) rather than SQLite."""
    return isinstance(db, pg.PostgresDatabase)
