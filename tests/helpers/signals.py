"""Job-change signals as the change job records them (connector/schema.py m028 `signals`),
put straight into the table with plain SQL, for the pages and commands that read them."""

from __future__ import annotations

import json
from itertools import count
from typing import Any

from sqlite_utils import Database

import server

_CHANGE_IDS = count(1)
COLUMNS = (
    "connection_id", "kind", "record_id", "contact_guid", "change_id", "signal", "person",
    "old_company", "new_company", "new_company_guid", "new_title", "changed_on", "state",
    "written", "error", "created_at",
)  # fmt: skip
MARKED = {
    "contactdata_job_change_left_on": "2026-10-31",
    "contactdata_job_change_new_company": "Globex",
    "contactdata_job_change_new_title": "VP Sales",
}
WRITTEN = {
    "marked": MARKED,
    "task": {"id": "123", "subject": "Maya Patel left Acme for Globex (VP Sales)"},
    "contact": {"id": "456"},
}


def add_signal(db: Database, connection_id: str, created_at: str, **values: Any) -> int:
    """One signal of a connection seen at `created_at` (ISO): Maya Patel left Acme for Globex
    as VP Sales, written (marked, a task, a new contact) unless `values` say otherwise
    (`written` as a dict); its id."""
    row: dict[str, Any] = {
        "connection_id": connection_id, "kind": "contacts", "record_id": "501",
        "contact_guid": "c-maya-patel", "change_id": next(_CHANGE_IDS), "signal": "left",
        "person": "Maya Patel", "old_company": "Acme", "new_company": "Globex",
        "new_company_guid": "g-globex", "new_title": "VP Sales", "changed_on": "2026-10-31",
        "state": "written", "written": WRITTEN, "error": "", "created_at": created_at,
    }  # fmt: skip
    row.update(values)
    row["written"] = json.dumps(row["written"])
    marks = ", ".join("?" for _ in COLUMNS)
    with server.write(db):
        db.execute(
            f"INSERT INTO signals ({', '.join(COLUMNS)}) VALUES ({marks})",
            [row[column] for column in COLUMNS],
        )
    found = db.execute(
        "SELECT id FROM signals WHERE connection_id = ? AND change_id = ?",
        [connection_id, row["change_id"]],
    ).fetchone()
    return int(found[0])
