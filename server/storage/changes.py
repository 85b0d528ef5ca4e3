"""SQL of the contact_changes table (server/changes.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from server.storage.dialect import result_names

_COLUMNS = "id, contact_guid, company_guid, kind, before, after, changed_on, recorded_at"


def insert(db: Any, rows: list[tuple[Any, ...]]) -> int:
    """Insert change rows (contact_guid, company_guid, kind, before, after, changed_on,
    recorded_at); how many."""
    if rows:
        db.conn.executemany(
            "INSERT INTO contact_changes (contact_guid, company_guid, kind, before, after, "
            "changed_on, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
    return len(rows)


def select(
    db: Any,
    after: int,
    limit: int,
    contacts: list[str],
    recorded_since: str,
    delivered_to: str = "",
) -> list[dict[str, Any]]:
    """Change rows numbered above `after`, in order, at most `limit`, optionally only of
    `contacts`, recorded at or after `recorded_since`, and of the contacts (for a company's
    change, the companies) the organization `delivered_to` was delivered."""
    where, params = ["id > ?"], [after]
    if contacts:
        where.append(f"contact_guid IN ({', '.join('?' for _ in contacts)})")
        params.extend(contacts)
    if recorded_since:
        where.append("recorded_at >= ?")
        params.append(recorded_since)
    if delivered_to:
        where.append(_DELIVERED)
        params.extend([delivered_to, delivered_to])
    cursor = db.execute(
        f"SELECT {_COLUMNS} FROM contact_changes WHERE {' AND '.join(where)} ORDER BY id LIMIT ?",
        [*params, limit],
    )
    names = result_names(cursor)
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


# A change of a contact the organization was delivered, or of a company one of its deliveries
# was at (transactions_org_contact answers the first; the second reads the org's rows).
_DELIVERED = (
    "CASE WHEN contact_guid != '' THEN EXISTS (SELECT 1 FROM transactions t "
    "WHERE t.org_id = ? AND t.contact_guid = contact_changes.contact_guid "
    "AND t.record_status IN ('Active', 'No Longer')) "
    "ELSE EXISTS (SELECT 1 FROM transactions t WHERE t.org_id = ? "
    "AND t.company_guid = contact_changes.company_guid "
    "AND t.record_status IN ('Active', 'No Longer')) END"
)


def latest_id(db: Any) -> int:
    """The highest change number, 0 when there is none."""
    return db.execute("SELECT coalesce(max(id), 0) FROM contact_changes").fetchone()[0]


def employments_of(
    db: Any, fields: Sequence[str], contacts: Sequence[str]
) -> list[tuple[Any, ...]]:
    """The `fields` of every employment of these contacts, as tuples: one statement for an
    import's batch."""
    return _rows_where(db, "employments", fields, "contact_guid", contacts)


def companies_of(db: Any, fields: Sequence[str], guids: Sequence[str]) -> list[tuple[Any, ...]]:
    """The `fields` of these companies, as tuples: one statement for an import's batch."""
    return _rows_where(db, "companies", fields, "guid", guids)


def company_names(db: Any, guids: Sequence[str]) -> dict[str, str]:
    """The names of these companies by GUID."""
    return {guid: name for guid, name in companies_of(db, ("guid", "name"), guids)}


def _rows_where(
    db: Any, table: str, fields: Sequence[str], key: str, values: Sequence[str]
) -> list[tuple[Any, ...]]:
    if not values:
        return []
    marks = ", ".join("?" * len(values))
    sql = f"SELECT {', '.join(fields)} FROM {table} WHERE {key} IN ({marks})"
    return list(map(tuple, db.execute(sql, list(values)).fetchall()))


def contact_guids(db: Any) -> list[str]:
    """Every contact's GUID, in order."""
    return [guid for (guid,) in db.execute("SELECT guid FROM contacts ORDER BY guid")]


def company_guids(db: Any) -> list[str]:
    """Every company's GUID, in order."""
    return [guid for (guid,) in db.execute("SELECT guid FROM companies ORDER BY guid")]


def latest_job_month(db: Any) -> str:
    """The latest month a job started or was updated in (YYYY-MM, '' with no employment)."""
    sql = "SELECT max(job_started_on), max(job_updated_on) FROM employments"
    return max((month or "" for month in db.execute(sql).fetchone()), default="")


def jobs_with_contacts(db: Any, contacts: Sequence[str]) -> list[dict[str, Any]]:
    """Every employment of these contacts joined with its contact, by contact then company."""
    return _dicts_where(
        db,
        "SELECT c.*, e.* FROM employments e JOIN contacts c ON c.guid = e.contact_guid "
        "WHERE e.contact_guid IN ({marks})",
        contacts,
        ("contact_guid", "company_guid"),
    )


def companies(db: Any, guids: Sequence[str]) -> list[dict[str, Any]]:
    """These companies' rows, by GUID."""
    return _dicts_where(db, "SELECT * FROM companies WHERE guid IN ({marks})", guids, ("guid",))


_CHUNK = 500


def _dicts_where(
    db: Any, sql: str, values: Sequence[str], order: tuple[str, ...]
) -> list[dict[str, Any]]:
    found = []
    for start in range(0, len(values), _CHUNK):
        chunk = list(values[start : start + _CHUNK])
        cursor = db.execute(sql.format(marks=", ".join("?" * len(chunk))), chunk)
        names = result_names(cursor)
        found.extend(dict(zip(names, row, strict=True)) for row in cursor.fetchall())
    return sorted(found, key=lambda row: tuple(row[name] for name in order))


def delete_of_contacts(db: Any, contacts: Sequence[str]) -> int:
    """Delete the change rows of these contacts; how many."""
    deleted = 0
    for start in range(0, len(contacts), _CHUNK):
        chunk = list(contacts[start : start + _CHUNK])
        sql = f"DELETE FROM contact_changes WHERE contact_guid IN ({', '.join('?' * len(chunk))})"
        deleted += db.execute(sql, chunk).rowcount
    return deleted
