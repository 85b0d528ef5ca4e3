"""All SQL of the service. Every read and write of the database goes through these functions.

Rows go in and come out as plain dicts keyed by column name. A PostgreSQL backend would
implement the same functions.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from psycopg.errors import CheckViolation, UniqueViolation
from sqlite_utils import Database

from server import facets
from server.normalize import alias_keys, company_forms, company_key, fold, split_aka
from server.storage import pg
from server.storage.dialect import (
    execute_planned_per_call,
    indexed_by,
    is_postgres,
    one_of,
    position,
    result_names,
    smallest,
)
from server.storage.migrations import COMPANY_KEYS, COMPANY_NAMES, EMPLOYMENT_FACETS
from server.storage.schema import REBUILDS

Row = dict[str, Any]

COMPANY_FIELDS = (
    "guid name name_key aka website domain address city state zipcode country latitude "
    "longitude phone employee_count revenue_range industry naics_codes naics_descriptions "
    "sic_codes sic_descriptions legal_status parent_guid global_hq_guid worldwide_parent_name "
    "global_regions profile_url email_pattern updated_at"
).split()
CONTACT_FIELDS = (
    "guid first_name middle_name last_name full_name first_key last_key profile_url location "
    "accuracy updated_at"
).split()
EMPLOYMENT_FIELDS = (
    "contact_guid company_guid status email job_title levels functions sub_functions "
    "work_address work_city work_state work_zipcode work_country work_phone latitude longitude "
    "direct_dial1 direct_dial2 job_started_on job_updated_on"
).split()


def _upsert_sql(table: str, fields: Sequence[str], key: Sequence[str]) -> str:
    """An INSERT of `fields` (as `:name` parameters) that updates the row of the same `key`
    instead, if there is one (its other columns are kept)."""
    columns = ", ".join(fields)
    params = ", ".join(f":{f}" for f in fields)
    updates = ", ".join(f"{f} = excluded.{f}" for f in fields if f not in key)
    return (
        f"INSERT INTO {table} ({columns}) VALUES ({params}) "
        f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {updates}"
    )


def _rows(db: Database, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[Row]:
    """The rows of a query as dicts (leaner than sqlite-utils' `query`, on hot paths)."""
    cursor = db.conn.execute(sql, params)
    names = result_names(cursor)
    return [dict(zip(names, row, strict=True)) for row in cursor]


def _execute_with_next(db: Database, sql: str, params: Sequence[Any] = ()) -> None:
    """Run a statement whose answer no one reads: on PostgreSQL it is sent with the next
    statement, in one round trip (server/storage/pg.py `send_with_next`)."""
    if is_postgres(db):
        db.conn.send_with_next(sql, params)
    else:
        db.execute(sql, params)


def _first(db: Database, sql: str, params: Sequence[Any] = ()) -> Row | None:
    """The first row of a query as a dict, or None."""
    rows = _rows(db, sql, params)
    return rows[0] if rows else None


_UPSERT_COMPANY = _upsert_sql("companies", COMPANY_FIELDS, ["guid"])
_UPSERT_CONTACT = _upsert_sql("contacts", CONTACT_FIELDS, ["guid"])
# What discover filters an employment by, computed from the row (facets.job_facets, in order).
JOB_FACET_FIELDS = ("level_rank", "level_bits", "function_bits", "title_key", "place_key")
# What an employment row carries of its contact: name keys for matching people at a company,
# the grade (facets.grade_rank of the contact's accuracy) for discover.
CONTACT_KEY_FIELDS = ("first_key", "last_key", "grade")
KEYED_EMPLOYMENT_FIELDS = (*EMPLOYMENT_FIELDS, *JOB_FACET_FIELDS, *CONTACT_KEY_FIELDS)
_UPSERT_EMPLOYMENT = _upsert_sql(
    "employments", KEYED_EMPLOYMENT_FIELDS, ["contact_guid", "company_guid"]
)


# --- organizations, users, keys -------------------------------------------------------------


def insert_organization(db: Database, org: Row) -> bool:
    """Add an organization (columns of the organizations table); False, adding nothing, when
    one has its name (the name's unique index decides, also between writers at once)."""
    columns, values = ", ".join(org), ", ".join(f":{name}" for name in org)
    sql = f"INSERT INTO organizations ({columns}) VALUES ({values}) ON CONFLICT (name) DO NOTHING"
    return db.execute(sql, org).rowcount == 1


def insert_user(db: Database, user: Row) -> None:
    """Add a user of an organization."""
    db.table("users").insert(user)


def insert_api_key(db: Database, key: Row, key_hash: str, now: str) -> None:
    """Add an API key and the hash of its value."""
    db.table("api_keys").insert(key)
    db.table("api_key_hashes").insert(
        {"hash": key_hash, "key_id": key["id"], "expires_at": None, "created_at": now}
    )


def organization(db: Database, org_id: str) -> Row | None:
    """The organization with this id, or None."""
    rows = _rows(db, "SELECT * FROM organizations WHERE id = ?", [org_id])
    return next(iter(rows), None)


def organizations(db: Database) -> list[Row]:
    """Every organization, oldest first."""
    return _rows(db, "SELECT * FROM organizations ORDER BY created_at, name")


def lock_organization(db: Database, org_id: str) -> None:
    """In a write transaction, hold the organization's row until it ends, so that what the
    transaction reads next about the organization (its keys, what it was delivered) holds
    when it writes: on PostgreSQL another transaction locking the row waits, as does a change
    of its credits (FOR NO KEY UPDATE: rows referring to it are still inserted). On SQLite,
    nothing: its writers take turns."""
    if is_postgres(db):  # sent with the transaction's next statement, in one round trip
        locking = "SELECT 1 FROM organizations WHERE id = ? FOR NO KEY UPDATE"
        db.conn.send_with_next(locking, [org_id])


def set_organization_status(db: Database, org_id: str, status: str, now: str) -> bool:
    """Set an organization's status; False when there is no such organization."""
    cursor = db.execute(
        "UPDATE organizations SET status = ?, updated_at = ? WHERE id = ?", [status, now, org_id]
    )
    return cursor.rowcount == 1


def key_by_hash(db: Database, key_hash: str, now: str) -> Row | None:
    """The key whose value hashes to `key_hash` (unexpired), with its user's and org's state.

    Columns: the api_keys row, `user_status` (None for a key without a user) and the
    organization's columns prefixed `org_`.
    """
    sql = f"{_KEY_WITH_STATES} WHERE h.hash = ? AND (h.expires_at IS NULL OR h.expires_at > ?)"
    return _first(db, sql, [key_hash, now])


def live_key_hashes(db: Database, key_id: str, now: str) -> list[str]:
    """The hashes of a key's values still accepted at `now` (one, or two during a rotation's
    grace period)."""
    sql = (
        "SELECT hash FROM api_key_hashes WHERE key_id = ? "
        "AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at"
    )
    return [row[0] for row in db.execute(sql, [key_id, now]).fetchall()]


_KEY_WITH_STATES = """
    SELECT k.*, u.status AS user_status, o.name AS org_name, o.status AS org_status,
           o.tier AS org_tier, o.qps_limit AS org_qps_limit,
           o.daily_rate_limit AS org_daily_rate_limit,
           o.discover_per_minute AS org_discover_per_minute
    FROM api_key_hashes h
    JOIN api_keys k ON k.id = h.key_id
    JOIN organizations o ON o.id = k.org_id
    LEFT JOIN users u ON u.id = k.user_id
"""


def touch_key(db: Database, key_id: str, now: str) -> None:
    """Record that a key was used at `now`; on PostgreSQL not while another transaction
    holds the key's row (SKIP LOCKED: a hint is not worth waiting for)."""
    if is_postgres(db):
        free = "SELECT id FROM api_keys WHERE id = ? FOR NO KEY UPDATE SKIP LOCKED"
        db.execute(f"UPDATE api_keys SET last_used_at = ? WHERE id = ({free})", [now, key_id])
        return
    db.execute("UPDATE api_keys SET last_used_at = ? WHERE id = ?", [now, key_id])


def keys_of(db: Database, org_id: str) -> list[Row]:
    """An organization's keys, oldest first, each with `user_status` and its newest expiry."""
    return _rows(db, f"{_KEYS} WHERE k.org_id = ? ORDER BY k.created_at, k.email", [org_id])


def key_by_email(db: Database, org_id: str, email: str) -> Row | None:
    """The organization's key for this e-mail address, or None."""
    rows = _rows(db, f"{_KEYS} WHERE k.org_id = ? AND k.email = ?", [org_id, email])
    return next(iter(rows), None)


_KEYS = """
    SELECT k.*, u.status AS user_status,
           (SELECT max(expires_at) FROM api_key_hashes h WHERE h.key_id = k.id) AS expires_at
    FROM api_keys k LEFT JOIN users u ON u.id = k.user_id
"""


def set_key_status(db: Database, key_id: str, status: str, now: str) -> None:
    """Suspend or reactivate a key."""
    db.execute("UPDATE api_keys SET status = ?, updated_at = ? WHERE id = ?", [status, now, key_id])


def rotate_key(
    db: Database, key_id: str, new_hash: str, masked: str, old_expires_at: str, now: str
) -> None:
    """Give a key a new value; its current values stop working at `old_expires_at` (or sooner
    if they were already due to)."""
    db.execute(
        "UPDATE api_key_hashes SET expires_at = ? "
        "WHERE key_id = ? AND (expires_at IS NULL OR expires_at > ?)",
        [old_expires_at, key_id, old_expires_at],
    )
    db.table("api_key_hashes").insert(
        {"hash": new_hash, "key_id": key_id, "expires_at": None, "created_at": now}
    )
    db.execute("UPDATE api_keys SET masked = ?, updated_at = ? WHERE id = ?", [masked, now, key_id])


def active_admin_keys(db: Database, org_id: str) -> int:
    """How many admin keys of the organization would be accepted now."""
    sql = """
        SELECT count(*) FROM api_keys k LEFT JOIN users u ON u.id = k.user_id
        WHERE k.org_id = ? AND k.role = 'admin' AND k.status = 'active'
          AND coalesce(u.status, 'active') = 'active'
    """
    return db.execute(sql, [org_id]).fetchone()[0]


def users_of(db: Database, org_id: str) -> list[Row]:
    """An organization's users, oldest first."""
    sql = "SELECT * FROM users WHERE org_id = ? ORDER BY created_at, email"
    return _rows(db, sql, [org_id])


def user_by_email(db: Database, org_id: str, email: str) -> Row | None:
    """The organization's user with this e-mail address, or None."""
    rows = _rows(db, "SELECT * FROM users WHERE org_id = ? AND email = ?", [org_id, email])
    return next(iter(rows), None)


def set_user_status(db: Database, user_id: str, status: str, now: str) -> None:
    """Suspend, reactivate or delete a user."""
    db.execute("UPDATE users SET status = ?, updated_at = ? WHERE id = ?", [status, now, user_id])


def insert_audit_entry(db: Database, entry: Row) -> None:
    """Append one administration action to the audit log."""
    db.table("audit_log").insert(entry)


def audit_entries(db: Database, org_id: str) -> list[Row]:
    """An organization's audit log, oldest first."""
    return _rows(db, "SELECT * FROM audit_log WHERE org_id = ? ORDER BY id", [org_id])


def audit_page(db: Database, org_id: str, shown: Row, before: int | None, limit: int) -> list[Row]:
    """One page of an organization's audit log, newest first, older than the entry `before`,
    filtered by what `shown` names: an action's prefix (`action`), an actor, and ISO bounds of
    created_at (`since`, `until`)."""
    where, params = ["org_id = ?"], [org_id]
    tests = {"action": "action LIKE ?", "actor": "actor = ?",
             "since": "created_at >= ?", "until": "created_at < ?"}  # fmt: skip
    for name, test in tests.items():
        if shown.get(name):
            where.append(test)
            params.append(f"{shown[name]}%" if name == "action" else shown[name])
    if before is not None:
        where.append("id < ?")
        params.append(before)
    sql = f"SELECT * FROM audit_log WHERE {' AND '.join(where)} ORDER BY id DESC LIMIT ?"
    return _rows(db, sql, [*params, limit])


def audit_actors(db: Database, org_id: str) -> list[str]:
    """Who appears in an organization's audit log, alphabetically (a filter's choices)."""
    sql = "SELECT DISTINCT actor FROM audit_log WHERE org_id = ? ORDER BY actor"
    return [row["actor"] for row in _rows(db, sql, [org_id])]


def change_credits(db: Database, org_id: str, change: int) -> tuple[bool, int | None]:
    """Add `change` (negative to debit) to a limited balance unless it would go below zero.

    Returns (applied, balance after); an unlimited balance (NULL) is left as it is and
    reported as (True, None).
    """
    if is_postgres(db):  # one round trip: the update and the balance it found
        changed, unlimited = db.execute(
            _CHANGE_CREDITS, [org_id, change, org_id, change]
        ).fetchone()
        return (changed is not None or unlimited is True), changed
    row = db.execute(
        "UPDATE organizations SET credits = credits + ? "
        "WHERE id = ? AND credits IS NOT NULL AND credits + ? >= 0 RETURNING credits",
        [change, org_id, change],
    ).fetchone()
    if row is not None:
        return True, row[0]
    current = db.execute("SELECT credits FROM organizations WHERE id = ?", [org_id]).fetchone()
    return (current is not None and current[0] is None), None


# PostgreSQL: the balance after the change (NULL if not applied) and whether the balance the
# statement found is unlimited (NULL: no such organization).
_CHANGE_CREDITS = """
    WITH found AS (SELECT credits FROM organizations WHERE id = ?),
    changed AS (
        UPDATE organizations SET credits = credits + ?
        WHERE id = ? AND credits IS NOT NULL AND credits + ? >= 0 RETURNING credits
    )
    SELECT (SELECT credits FROM changed), (SELECT credits IS NULL FROM found)
"""


def insert_ledger_entry(db: Database, entry: Row) -> None:
    """Record one change of an organization's credit balance."""
    db.table("credit_ledger").insert(entry)


def ledger(db: Database, org_id: str) -> list[Row]:
    """An organization's credit changes, oldest first."""
    return _rows(db, "SELECT * FROM credit_ledger WHERE org_id = ? ORDER BY id", [org_id])


def ledger_page(db: Database, org_id: str, before: int | None, limit: int) -> list[Row]:
    """One page of an organization's credit changes, newest first, older than line `before`."""
    older = "AND id < ? " if before is not None else ""
    params = [org_id, *([before] if before is not None else []), limit]
    sql = f"SELECT * FROM credit_ledger WHERE org_id = ? {older}ORDER BY id DESC LIMIT ?"
    return _rows(db, sql, params)


# --- matching --------------------------------------------------------------------------------

_PERSON = (
    "SELECT e.contact_guid, e.company_guid, e.status, e.email, e.job_title, e.work_country, "
    "c.first_name, c.middle_name, c.last_name, c.first_key, c.last_key "
    "FROM employments e JOIN contacts c ON c.guid = e.contact_guid"
)
# Whole rows: a company-only match is shown from the row that matched it, with no second read.
_COMPANY = "SELECT * FROM companies"


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))


# Values bound per statement when acting on many rows (well under either backend's limit).
_CHUNK = 500


def _chunks(values: Sequence[Any]) -> Iterator[Sequence[Any]]:
    return (values[i : i + _CHUNK] for i in range(0, len(values), _CHUNK))


def people_by_guid(db: Database, guid: str) -> list[Row]:
    """Every employment of the contact with this GUID, with the contact's names."""
    return _rows(db, f"{_PERSON} WHERE e.contact_guid = ?", [guid])


def people_by_profile_url(db: Database, url: str) -> list[Row]:
    """Every employment of the contacts with this profile URL."""
    sql = f"{_PERSON} WHERE e.contact_guid IN (SELECT guid FROM contacts WHERE profile_url = ?)"
    return _rows(db, sql, [url])


def people_by_email(db: Database, email: str) -> list[Row]:
    """The employments whose e-mail address is `email` (an email_key)."""
    return _rows(db, f"{_PERSON} WHERE e.email = ? AND e.email != ''", [email])


def people_at_companies(
    db: Database, company_guids: Sequence[str], last_keys: Sequence[str], first_keys: Sequence[str]
) -> list[Row]:
    """The employments at these companies whose last key is one of `last_keys` or first key
    one of `first_keys` (index seeks, one query)."""
    (at, guids), (last, lasts), (first, firsts) = (
        one_of(db, "e.company_guid", company_guids),
        one_of(db, "e.last_key", last_keys),
        one_of(db, "e.first_key", first_keys),
    )
    sql = f"{_PERSON} WHERE {at} AND {last} UNION {_PERSON} WHERE {at} AND {first}"
    return _rows(db, sql, [*guids, *lasts, *guids, *firsts])


def people_named(db: Database, last_key: str, first_keys: Sequence[str], limit: int) -> list[Row]:
    """Employments, at any company, of contacts with this last key and one of these first
    keys; at most `limit` rows."""
    sql = f"{_PERSON} WHERE c.last_key = ? AND c.first_key IN ({_marks(first_keys)}) LIMIT ?"
    return _rows(db, sql, [last_key, *first_keys, limit])


def companies_by_guids(db: Database, guids: Sequence[str]) -> list[Row]:
    """The companies with these GUIDs."""
    return _rows(db, f"{_COMPANY} WHERE guid IN ({_marks(guids)})", list(guids))


def companies_by_profile_url(db: Database, url: str) -> list[Row]:
    """The companies with this profile URL."""
    return _rows(db, f"{_COMPANY} WHERE profile_url = ?", [url])


def company_domains(db: Database, guids: Sequence[str]) -> dict[str, str]:
    """The registrable domain of each of these companies that exists, by GUID."""
    found: dict[str, str] = {}
    for chunk in _chunks(guids):
        sql = f"SELECT guid, domain FROM companies WHERE guid IN ({_marks(chunk)})"
        found.update((guid, domain) for guid, domain in db.execute(sql, chunk))
    return found


def companies_by_domain(db: Database, domain: str) -> list[Row]:
    """The companies whose registrable domain is `domain`."""
    return _rows(db, f"{_COMPANY} WHERE domain = ?", [domain])


def companies_by_name_keys(db: Database, keys: Sequence[str]) -> list[Row]:
    """The companies whose name key is one of `keys`, then those with one of them as an alias
    key (one statement); each row has `alias` 0 or 1 and the `matched_key`."""
    (named, values), (aliased, _) = one_of(db, "name_key", keys), one_of(db, "a.alias_key", keys)
    sql = (
        f"SELECT *, 0 AS alias, name_key AS matched_key FROM ({_COMPANY} WHERE {named}) AS named "
        "UNION ALL SELECT c.*, 1 AS alias, a.alias_key AS matched_key FROM company_aliases a "
        f"JOIN ({_COMPANY}) AS c ON c.guid = a.company_guid WHERE {aliased}"
    )
    return _rows(db, sql, [*values, *values])


def known_company_words(db: Database, words: Sequence[str]) -> dict[str, int]:
    """Those of `words` that are a word of some company's name or alias key, with how many
    names and aliases hold each."""
    known, values = one_of(db, "word", words)
    sql = f"SELECT word, companies FROM company_name_words WHERE {known}"
    return dict(db.execute(sql, values).fetchall())


def company_words_like(
    db: Database, first: str, shortest: int, longest: int, also: Sequence[str] = ()
) -> list[tuple[str, int]]:
    """The words of company name and alias keys that begin with the letter `first` and have
    `shortest` to `longest` letters, and those of `also`, with how many names and aliases hold
    each (one statement)."""
    sql = (
        "SELECT word, companies FROM company_name_words WHERE word >= ? AND word < ? "
        "AND length(word) BETWEEN ? AND ?"
    )
    if also:
        sql += (
            f" UNION SELECT word, companies FROM company_name_words WHERE word IN ({_marks(also)})"
        )
    following = chr(ord(first) + 1)
    return db.execute(sql, [first, following, shortest, longest, *also]).fetchall()


def companies_by_name_forms(db: Database, keys: Sequence[str], limit: int) -> list[Row]:
    """The companies with a name or alias form (`normalize.stored_forms`) whose value is one of
    `keys`: each row with the `form_key`, `form` and `alias` (0 or 1) it was found by; at most
    `limit` rows."""
    found, values = one_of(db, "f.key", keys)
    sql = (
        "SELECT f.key AS form_key, f.form, f.alias, c.* FROM company_name_forms f "
        f"JOIN ({_COMPANY}) AS c ON c.guid = f.company_guid WHERE {found} LIMIT ?"
    )
    return _rows(db, sql, [*values, limit])


def companies_with_name_forms(db: Database, keys: Sequence[str], guids: Sequence[str]) -> set[str]:
    """Those of the companies `guids` with a name or alias form whose value is one of `keys`."""
    sql = (
        "SELECT DISTINCT company_guid FROM company_name_forms "
        f"WHERE key IN ({_marks(keys)}) AND company_guid IN ({_marks(guids)})"
    )
    return {guid for (guid,) in db.execute(sql, [*keys, *guids])}


def index_company_names(db: Database) -> None:
    """Rebuild the tables of company name words and name forms (after companies changed)."""
    index_company_words(db)
    index_company_forms(db)


def index_company_words(db: Database) -> None:
    """Rebuild the table of company name words: those of the names and aliases as written
    (folded) and of their keys, so that a misspelt word a key leaves out ("Gorup") is
    corrected too."""
    rows = db.execute("SELECT name, name_key, aka FROM companies")
    words = Counter(
        word
        for name, key, aka in rows
        for word in {
            *key.split(),
            *fold(name).split(),
            *(word for other in split_aka(aka) for word in fold(other).split()),
            *(word for other in alias_keys(aka) for word in other.split()),
        }
    )
    db.execute("DELETE FROM company_name_words")
    db.conn.executemany(
        "INSERT INTO company_name_words (word, companies) VALUES (?, ?)", sorted(words.items())
    )


_FORM_COLUMNS = ("key", "form", "company_guid", "alias")


def index_company_forms(db: Database) -> None:
    """Rebuild the table of company name forms (on PostgreSQL with one COPY: a full dataset
    has a third of a million)."""
    rows = db.execute("SELECT guid, name, aka FROM companies").fetchall()
    forms = sorted(
        (value, form, guid, alias)
        for guid, name, aka in rows
        for value, form, alias in company_forms(name, aka)
    )
    db.execute("DELETE FROM company_name_forms")
    if is_postgres(db):
        copy_rows(db, "company_name_forms", _FORM_COLUMNS, forms)
    else:
        names = ", ".join(_FORM_COLUMNS)
        sql = f"INSERT INTO company_name_forms ({names}) VALUES ({_marks(_FORM_COLUMNS)})"
        db.conn.executemany(sql, forms)


def replace_company_forms(
    db: Database, guids: Iterable[str], forms: Iterable[tuple[str, str, str, int]]
) -> None:
    """Set the name forms of these companies to the (key, form, company_guid, alias) rows
    given (`normalize.company_forms`); every company in `guids` loses its old ones."""
    _replace_by_company(db, "company_name_forms", _FORM_COLUMNS, "text text text int", guids, forms)


def _replace_by_company(
    db: Database,
    table: str,
    columns: Sequence[str],
    types: str,
    guids: Iterable[str],
    rows: Iterable[Sequence[Any]],
) -> None:
    """Delete the rows of `table` of these companies (by its company_guid) and insert `rows`
    (tuples of `columns`, whose PostgreSQL `types` are space-separated), skipping duplicates.

    On PostgreSQL two statements over arrays, not one per company and row."""
    names = ", ".join(columns)
    if is_postgres(db):
        rows = list(rows)
        arrays = [list(column) for column in zip(*rows, strict=True)] or [[] for _ in columns]
        unnest = ", ".join(f"%s::{kind}[]" for kind in types.split())
        raw = db.conn.raw  # type: ignore[attr-defined]
        raw.execute(f"DELETE FROM {table} WHERE company_guid = ANY(%s)", [list(guids)])
        raw.execute(
            f"INSERT INTO {table} ({names}) SELECT * FROM unnest({unnest}) ON CONFLICT DO NOTHING",
            arrays,
        )
        return
    db.conn.executemany(f"DELETE FROM {table} WHERE company_guid = ?", [(g,) for g in set(guids)])
    db.conn.executemany(
        f"INSERT INTO {table} ({names}) VALUES ({_marks(columns)}) ON CONFLICT DO NOTHING", rows
    )


# --- rebuilds the migrations request ---------------------------------------------------------


def rebuilds_requested(db: Database) -> list[str]:
    """The rebuilds migrating asked for (schema.py `request_rebuild`) and not run yet."""
    return [name for (name,) in db.execute(f"SELECT name FROM {REBUILDS} ORDER BY name")]


def rebuild(db: Database) -> list[str]:
    """In a write transaction: run the rebuilds requested, each once, keys before the name
    tables made from them, and forget the requests; their names. Another process that ran
    them first leaves none (on PostgreSQL it held the dataset lock meanwhile)."""
    lock_dataset(db)
    requested = set(rebuilds_requested(db))
    unknown = requested - _REBUILDS.keys()
    if unknown:
        raise ValueError(f"no such rebuild: {', '.join(sorted(unknown))}")
    done = [name for name in _REBUILDS if name in requested]
    for name in done:
        _REBUILDS[name](db)
        db.execute(f"DELETE FROM {REBUILDS} WHERE name = ?", [name])
    return done


def rekey_companies(db: Database) -> None:
    """Key again the companies and aliases whose keys `normalize` now makes otherwise."""
    rows = db.execute("SELECT guid, name, name_key, aka FROM companies").fetchall()
    changed = [(company_key(name), guid) for guid, name, key, _ in rows if company_key(name) != key]
    db.conn.executemany("UPDATE companies SET name_key = ? WHERE guid = ?", changed)
    keys = {guid: alias_keys(aka) for guid, _, _, aka in rows if aka}
    replace_company_aliases(db, keys, [(guid, k) for guid, ks in keys.items() for k in ks])


def compute_employment_facets(db: Database) -> None:
    """Compute again what discover filters each employment by (facets.job_facets) and its
    contact's grade."""
    rows = db.execute(
        "SELECT e.job_title, e.levels, e.functions, e.work_city, e.work_state, e.work_zipcode, "
        "e.work_country, c.accuracy, e.contact_guid, e.company_guid FROM employments e "
        "JOIN contacts c ON c.guid = e.contact_guid"
    ).fetchall()
    changes = ", ".join(f"{name} = ?" for name in (*JOB_FACET_FIELDS, "grade"))
    db.conn.executemany(
        f"UPDATE employments SET {changes} WHERE contact_guid = ? AND company_guid = ?",
        [(*facets.job_facets(*row[:7]), facets.grade_rank(row[7]), *row[8:]) for row in rows],
    )


# Each rebuild by name, in the order they run.
_REBUILDS: dict[str, Callable[[Database], None]] = {
    COMPANY_KEYS: rekey_companies,
    COMPANY_NAMES: index_company_names,
    EMPLOYMENT_FACETS: compute_employment_facets,
}


# --- companies and contacts ------------------------------------------------------------------


def lock_dataset(db: Database) -> None:
    """In a write transaction that writes the contact data (an import's, the demo generator's,
    a suppression's), wait for the others that do, until it ends: two never interleave their
    deletes and inserts of one company's rows, nor rebuild the name tables at once. On
    PostgreSQL an advisory lock no other write takes (enrich, administration and the connector
    never wait for it); on SQLite nothing: its writers take turns."""
    if is_postgres(db):
        db.execute("SELECT pg_advisory_xact_lock(?)", [pg.DATASET_LOCK])


def upsert_companies(db: Database, rows: Iterable[Row]) -> None:
    """Insert or replace companies by GUID (rows carry every COMPANY_FIELDS column)."""
    db.conn.executemany(_UPSERT_COMPANY, rows)


def replace_company_aliases(
    db: Database, guids: Iterable[str], aliases: Iterable[tuple[str, str]]
) -> None:
    """Set the alias keys of these companies to the (company_guid, alias_key) pairs given.

    Every company in `guids` loses its old aliases, also one that has no pair any more.
    """
    columns = ("company_guid", "alias_key")
    _replace_by_company(db, "company_aliases", columns, "text text", guids, aliases)


def upsert_contacts(db: Database, rows: Iterable[Row]) -> None:
    """Insert or replace contacts by GUID (rows carry every CONTACT_FIELDS column)."""
    db.conn.executemany(_UPSERT_CONTACT, rows)


def upsert_employments(db: Database, rows: Iterable[Row]) -> None:
    """Insert or replace employments by (contact, company); rows have KEYED_EMPLOYMENT_FIELDS."""
    db.conn.executemany(_UPSERT_EMPLOYMENT, rows)


def _by_position(sql: str, fields: Sequence[str]) -> str:
    """`sql` with each `:name` parameter as `?N`, N the name's place in `fields` (from 1)."""
    return re.sub(r":(\w+)", lambda name: f"?{fields.index(name[1]) + 1}", sql)


# Values bound by position: about twice as fast as by name from a dict, for bulk imports.
_UPSERT_COMPANY_VALUES = _by_position(_UPSERT_COMPANY, COMPANY_FIELDS)
_UPSERT_CONTACT_VALUES = _by_position(_UPSERT_CONTACT, CONTACT_FIELDS)
_UPSERT_EMPLOYMENT_VALUES = _by_position(_UPSERT_EMPLOYMENT, KEYED_EMPLOYMENT_FIELDS)


def upsert_company_values(
    db: Database, rows: Iterable[Sequence[Any]] | Iterable[bytes], *, new_keys: bool = False
) -> None:
    """upsert_companies for rows given in `row_form(db)` of the values of COMPANY_FIELDS
    (`new_keys`: see _copy_upsert)."""
    if is_postgres(db):
        return _copy_upsert(db, "companies", COMPANY_FIELDS, ["guid"], rows, new_keys)
    db.conn.executemany(_UPSERT_COMPANY_VALUES, rows)


def upsert_contact_values(
    db: Database, rows: Iterable[Sequence[Any]] | Iterable[bytes], *, new_keys: bool = False
) -> None:
    """upsert_contacts for rows given in `row_form(db)` of the values of CONTACT_FIELDS
    (`new_keys`: see _copy_upsert)."""
    if is_postgres(db):
        return _copy_upsert(db, "contacts", CONTACT_FIELDS, ["guid"], rows, new_keys)
    db.conn.executemany(_UPSERT_CONTACT_VALUES, rows)


def upsert_employment_values(
    db: Database, rows: Iterable[Sequence[Any]] | Iterable[bytes], *, new_keys: bool = False
) -> None:
    """upsert_employments for rows given in `row_form(db)` of the values of
    KEYED_EMPLOYMENT_FIELDS (`new_keys`: see _copy_upsert)."""
    if is_postgres(db):
        key = ["contact_guid", "company_guid"]
        return _copy_upsert(db, "employments", KEYED_EMPLOYMENT_FIELDS, key, rows, new_keys)
    db.conn.executemany(_UPSERT_EMPLOYMENT_VALUES, rows)


def _as_is(values: Sequence[Any], end: str = "") -> Sequence[Any]:
    return values


def row_form(db: Database) -> Callable[[Sequence[Any], str], Any]:
    """How the upsert_*_values functions take a row here: its values as they are (SQLite),
    or a line of COPY text (PostgreSQL, `pg.copy_line`; a row made of two parts is the first
    ended by a tab, then the second). Rows can be put in this form in other processes."""
    return pg.copy_line if is_postgres(db) else _as_is


def _copy_upsert(
    db: Database,
    table: str,
    fields: Sequence[str],
    key: Sequence[str],
    lines: Iterable[Any],
    new_keys: bool = False,
) -> None:
    """PostgreSQL: COPY the rows (lines of COPY text) into a temporary table, then upsert
    them from there in one statement, the last row of each key winning (as consecutive
    upserts would). Inside the caller's transaction.

    With `new_keys` (the caller expects none of the keys in the table or twice in `rows`,
    as in a load into empty tables), COPY straight into the table: a third of the work. At
    a key already there, that COPY is undone and the rows take the way above.
    """
    raw = db.conn.raw  # type: ignore[attr-defined]
    text = b"".join(lines)
    if new_keys:
        raw.execute("SAVEPOINT new_keys")
        try:
            _copy(raw, table, fields, text)
        except UniqueViolation:
            raw.execute("ROLLBACK TO SAVEPOINT new_keys")
        else:
            raw.execute("RELEASE SAVEPOINT new_keys")
            return
    columns, keys = ", ".join(fields), ", ".join(key)
    stage = f"stage_{table}"
    # Dropped at the transaction's end: behind a transaction pooler the session is another
    # client's next, and a table kept from before a migration would lack its new columns.
    raw.execute(
        f"CREATE TEMP TABLE IF NOT EXISTS {stage} (LIKE {table} INCLUDING DEFAULTS, "
        "stage_order BIGINT GENERATED ALWAYS AS IDENTITY) ON COMMIT DROP"
    )
    _copy(raw, stage, fields, text)
    updates = ", ".join(f"{f} = excluded.{f}" for f in fields if f not in key)
    raw.execute(
        f"INSERT INTO {table} ({columns}) SELECT DISTINCT ON ({keys}) {columns} FROM {stage} "
        f"ORDER BY {keys}, stage_order DESC ON CONFLICT ({keys}) DO UPDATE SET {updates}"
    )
    raw.execute(f"TRUNCATE {stage}")


def _copy(raw: Any, table: str, fields: Sequence[str], text: bytes) -> None:
    with raw.cursor().copy(f"COPY {table} ({', '.join(fields)}) FROM STDIN") as copy:
        copy.write(text)


def existing_company_guids(db: Database, guids: Iterable[str]) -> set[str]:
    """Which of these company GUIDs are in the database."""
    wanted = list(set(guids))
    found: set[str] = set()
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        rows = db.execute(f"SELECT guid FROM companies WHERE guid IN ({marks})", chunk)
        found.update(guid for (guid,) in rows)
    return found


def iter_companies(db: Database) -> Iterator[Row]:
    """Every company in GUID order."""
    yield from db.query("SELECT * FROM companies ORDER BY guid")


def iter_contact_employments(db: Database) -> Iterator[Row]:
    """Every employment joined with its contact, in (contact, company) order."""
    sql = (
        "SELECT c.*, e.* FROM employments e JOIN contacts c ON c.guid = e.contact_guid "
        "ORDER BY e.contact_guid, e.company_guid"
    )
    yield from db.query(sql)


def sample_employment(db: Database) -> Row | None:
    """One current employment with the person's name and the company's, for examples (first
    by contact GUID)."""
    sql = (
        "SELECT e.email, e.company_guid, c.name AS company_name, p.first_name, p.last_name "
        "FROM employments e JOIN companies c ON c.guid = e.company_guid "
        "JOIN contacts p ON p.guid = e.contact_guid "
        "WHERE e.status = 'Active' AND e.email != '' ORDER BY e.contact_guid LIMIT 1"
    )
    return _first(db, sql)


def contact_names(db: Database, guids: Sequence[str]) -> dict[str, str]:
    """The full names of these contacts (those the data still holds), by GUID."""
    if not guids:
        return {}
    sql = "SELECT guid, full_name, first_name, last_name FROM contacts WHERE guid IN "
    sql += f"({_marks(guids)})"
    return {
        guid: full or f"{first} {last}".strip()
        for guid, full, first, last in db.execute(sql, list(guids)).fetchall()
    }


def is_empty(db: Database, table: str) -> bool:
    """Whether `table` has no rows."""
    return db.execute(f"SELECT NOT EXISTS (SELECT 1 FROM {table})").fetchone()[0] == 1


def drop_secondary_indexes(db: Database, tables: Sequence[str]) -> list[str]:
    """Drop the indexes made by CREATE INDEX on `tables`; return their SQL to make them again.

    Primary keys and UNIQUE constraints stay: they have no SQL of their own in sqlite_master.
    """
    marks = ", ".join("?" * len(tables))
    catalog = _PG_INDEXES if is_postgres(db) else _SQLITE_INDEXES
    rows = db.execute(catalog.format(marks=marks), list(tables)).fetchall()
    for name, _ in rows:
        db.execute(f'DROP INDEX "{name}"')
    return [sql for _, sql in rows]


_SQLITE_INDEXES = (
    "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
    "AND tbl_name IN ({marks}) ORDER BY name"
)
_PG_INDEXES = (
    "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
    "AND tablename IN ({marks}) AND indexname NOT IN (SELECT conname FROM pg_constraint) "
    "ORDER BY indexname"
)


def restore(db: Database, statements: Iterable[str]) -> None:
    """Put back what drop_secondary_indexes or drop_foreign_keys dropped: run the statements
    they returned (a foreign key added back checks its every row in one pass)."""
    for sql in statements:
        db.execute(sql)


def drop_foreign_keys(db: Database, tables: Sequence[str]) -> list[str]:
    """PostgreSQL: drop the foreign keys of `tables`; return the SQL that adds them again.

    PostgreSQL checks a foreign key with a query per row written; adding it back checks
    every row in one join. (SQLite: none dropped, `db.bulk_write` turns the checks off.)
    """
    if not is_postgres(db):
        return []
    marks = ", ".join("?" * len(tables))
    rows = db.execute(_PG_FOREIGN_KEYS.format(marks=marks), list(tables)).fetchall()
    for table, name, _ in rows:
        db.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
    return [f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {sql}' for table, name, sql in rows]


_PG_FOREIGN_KEYS = (
    "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint "
    "WHERE contype = 'f' AND connamespace = current_schema()::regnamespace "
    "AND conrelid::regclass::text IN ({marks}) ORDER BY 1, 2"
)


# --- moving a SQLite database into PostgreSQL (server/storage/move.py) -----------------------

# Where each backend records its applied migrations: the target's are its own, never copied.
MIGRATION_TABLES = ("_sqlite_migrations", "_migrations")


def table_names(db: Database) -> list[str]:
    """The tables of `db` that hold data, by name (not SQLite's own, nor the migrations')."""
    if is_postgres(db):
        sql = (
            "SELECT table_name FROM information_schema.tables WHERE table_schema = "
            "current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name"
        )
    else:
        sql = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
    names = [name for (name,) in db.execute(sql)]
    return [n for n in names if n not in MIGRATION_TABLES and not n.startswith("sqlite_")]


def column_names(db: Database, table: str) -> list[str]:
    """The columns of `table`, in their order."""
    if is_postgres(db):
        sql = (
            "SELECT column_name FROM information_schema.columns WHERE table_schema = "
            "current_schema() AND table_name = ? ORDER BY ordinal_position"
        )
        return [name for (name,) in db.execute(sql, [table])]
    return [row[1] for row in db.execute(f'PRAGMA table_info("{table}")')]


def row_count(db: Database, table: str) -> int:
    """How many rows `table` has."""
    return db.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]


def table_rows(db: Database, table: str, columns: Sequence[str]) -> Iterator[tuple[Any, ...]]:
    """Every row of `table` as a tuple of `columns`, streamed."""
    names = ", ".join(f'"{name}"' for name in columns)
    yield from db.conn.execute(f'SELECT {names} FROM "{table}"')


def copy_rows(
    db: Database, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> None:
    """PostgreSQL: add `rows` (tuples of `columns`, adapted by psycopg) to `table` with one
    COPY."""
    names = ", ".join(f'"{name}"' for name in columns)
    with db.conn.raw.cursor().copy(f'COPY "{table}" ({names}) FROM STDIN') as copy:  # type: ignore[attr-defined]
        for row in rows:
            copy.write_row(row)


def reset_identities(db: Database) -> None:
    """PostgreSQL: start each identity column's sequence after its table's largest id, so the
    next row added gets an id no copied row has."""
    columns = db.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND is_identity = 'YES'"
    ).fetchall()
    for table, column in columns:
        db.conn.raw.execute(  # type: ignore[attr-defined]
            f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
            f"coalesce(max({column}), 0) + 1, false) FROM {table}"
        )


def organization_count(db: Database) -> int:
    """How many organizations there are (the table is small: a cheap readiness probe)."""
    return db.execute("SELECT count(*) FROM organizations").fetchone()[0]


def counts(db: Database) -> dict[str, int]:
    """Row counts of the contact-data tables and organizations."""
    tables = ("companies", "contacts", "employments", "organizations")
    return {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}


# --- enrich ----------------------------------------------------------------------------------


def company(db: Database, guid: str) -> Row | None:
    """The company with this GUID, or None."""
    return _first(db, "SELECT * FROM companies WHERE guid = ?", [guid])


# Marks where one table's columns end in a joined row (`contact_with_jobs`).
_SEAM = "NULL AS _seam_"
# How many hashes `contact_with_jobs` checks (the input's e-mail, profile URL and name at two
# domains), always that many: one statement text, which PostgreSQL can prepare.
LISTED_HASHES = 4
_CONTACT_JOBS = (
    f"SELECT c.*, {_SEAM}, e.*, {_SEAM}, co.*, {_SEAM}, EXISTS (SELECT 1 FROM suppressions "
    f"WHERE {' OR '.join(['hash = ?'] * LISTED_HASHES)}) AS listed FROM contacts c "
    "JOIN employments e ON e.contact_guid = c.guid "
    "LEFT JOIN companies co ON co.guid = e.company_guid WHERE c.guid = ? "
    "ORDER BY e.status != 'Active', e.job_started_on DESC, e.company_guid"
)  # the order of employments_of


def contact_with_jobs(
    db: Database, guid: str, hashes: Sequence[str] = ()
) -> tuple[Row | None, list[tuple[Row, Row]], bool]:
    """The contact with this GUID and its employments as `employments_of` orders them, each
    with its company ({} if it is gone), and whether any of `hashes` (at most LISTED_HASHES)
    is on the suppression list, in one statement; (None, [], False) without employments."""
    padded = [*hashes, *[""] * (LISTED_HASHES - len(hashes))]  # no hash is ""
    cursor = db.conn.execute(_CONTACT_JOBS, [*padded, guid])
    names = result_names(cursor)
    seams = [i for i, name in enumerate(names) if name == "_seam_"]
    spans = [(0, seams[0]), (seams[0] + 1, seams[1]), (seams[1] + 1, seams[2])]
    contact, jobs, listed = None, [], False
    for values in cursor:
        person, job, company = (dict(zip(names[a:b], values[a:b], strict=True)) for a, b in spans)
        contact, listed = contact or person, bool(values[-1])
        jobs.append((job, company if company["guid"] is not None else {}))
    return contact, jobs, listed


def employments_of(db: Database, contact_guid: str) -> list[Row]:
    """A contact's employments: Active first, then the most recently started."""
    sql = (
        "SELECT * FROM employments WHERE contact_guid = ? "
        "ORDER BY status != 'Active', job_started_on DESC, company_guid"
    )
    return _rows(db, sql, [contact_guid])


def has_delivered(db: Database, org_id: str, contact_guid: str) -> bool:
    """Whether the organization was already delivered this contact (Active or No Longer)."""
    sql = f"SELECT EXISTS ({_DELIVERED_BEFORE})"
    return db.execute(sql, {"org_id": org_id, "contact_guid": contact_guid}).fetchone()[0] == 1


_DELIVERED_BEFORE = (
    "SELECT 1 FROM transactions WHERE org_id = :org_id AND contact_guid = :contact_guid "
    "AND record_status IN ('Active', 'No Longer')"
)

# A transaction's columns (on PostgreSQL the table also has `rowid`, as SQLite's is implicit).
_TRANSACTION = (
    "SELECT id, org_id, key_id, endpoint, request_id, company_guid, contact_guid, "
    "record_status, accuracy, credits, created_at FROM transactions"
)


def transaction(db: Database, transaction_id: str) -> Row | None:
    """The transaction with this id, or None."""
    rows = _rows(db, f"{_TRANSACTION} WHERE id = ?", [transaction_id])
    return next(iter(rows), None)


def record_transaction(db: Database, row: Row, delivered: Sequence[str]) -> bool:
    """Insert a transaction, or replace the one with its id unless that one's record status
    is in `delivered`, in one statement; False when it was left as it was (a replay)."""
    return db.execute(_recording(row, delivered), row).fetchone() is not None


def _recording(row: Row, delivered: Sequence[str], credits: str = ":credits") -> str:
    """`record_transaction`'s statement: the id and credits of the row inserted or replaced,
    if any; its credits are the SQL expression `credits`."""
    columns = ", ".join(row)
    values = ", ".join(credits if name == "credits" else f":{name}" for name in row)
    updates = ", ".join(f"{name} = excluded.{name}" for name in row if name != "id")
    statuses = ", ".join(f"'{status}'" for status in delivered)
    return (
        f"INSERT INTO transactions ({columns}) VALUES ({values}) ON CONFLICT (id) DO UPDATE "
        f"SET {updates} WHERE transactions.record_status NOT IN ({statuses}) "
        "RETURNING id, credits"
    )


def record_charged_transaction(
    db: Database, row: Row, delivered: Sequence[str], reason: str
) -> bool | None:
    """`record_transaction`, and when it records the row, its `credits` taken from the
    organization's limited balance with a ledger line giving `reason`: whether it recorded
    the row (False: a replay, nothing taken), or None when the balance is smaller.

    On PostgreSQL one statement, which a too small balance fails as a whole (the balance's
    CHECK): nothing is written, and it needs no transaction around it. On SQLite three, in
    the caller's write transaction, which is to roll back the row recorded on None.
    """
    if is_postgres(db):
        sql = _CHARGED.format(cost="", recording=_recording(row, delivered))
        answer = _charged(db, sql, {**row, "reason": reason}, commit=False)
        return None if answer is None else answer[0]
    if not record_transaction(db, row, delivered):
        return False
    if not row["credits"]:
        return True
    applied, balance = change_credits(db, row["org_id"], -row["credits"])
    if applied and balance is not None:
        line = {"org_id": row["org_id"], "change": -row["credits"], "balance": balance}
        line |= {"reason": reason, "transaction_id": row["id"], "created_at": row["created_at"]}
        insert_ledger_entry(db, line)
    return True if applied else None


def record_refresh_transaction(
    db: Database, row: Row, delivered: Sequence[str], reason: str
) -> tuple[bool | None, int]:
    """`record_charged_transaction` for the delivery of a contact that is free when the
    organization was delivered it before (a refresh), and costs 1 credit if not: whether it
    recorded the row, and the credits it cost.

    In the caller's write transaction, ended here on PostgreSQL. The organization's row is
    locked before what it was delivered is read, so that of two first deliveries of a
    contact at once the second waits for the first, finds it, and is free. On PostgreSQL
    all of it goes in one round trip: BEGIN, the lock, one statement, which reads what was
    delivered after the lock is had (each statement sees what was committed before it
    began), and COMMIT. On SQLite, whose writers take turns, two statements and the charge.
    """
    if not is_postgres(db):
        cost = 0 if has_delivered(db, row["org_id"], row["contact_guid"]) else 1
        return record_charged_transaction(db, {**row, "credits": cost}, delivered, reason), cost
    lock_organization(db, row["org_id"])
    cost = f"cost AS (SELECT CASE WHEN EXISTS ({_DELIVERED_BEFORE}) THEN 0 ELSE 1 END AS n),"
    recording = _recording(row, delivered, credits="(SELECT n FROM cost)")
    sql = _CHARGED.format(cost=cost, recording=recording) + ", (SELECT n FROM cost)"
    answer = _charged(db, sql, {**row, "reason": reason}, commit=True)
    return (None, 1) if answer is None else (answer[0], answer[1])


def _charged(db: Database, sql: str, params: Row, *, commit: bool) -> tuple[Any, ...] | None:
    """The answer of a charging statement (_CHARGED) on PostgreSQL, sent with the write
    transaction's COMMIT if `commit`; None when the balance is smaller than the charge."""
    try:
        cursor = db.conn.execute_committing(sql, params) if commit else db.execute(sql, params)
    except CheckViolation as error:
        if error.diag.constraint_name != "organizations_credits_check":
            raise
        return None
    return cursor.fetchone()


# PostgreSQL: the transaction recorded, its credits taken from a limited balance (an
# unlimited one, NULL, is left as it is) when it was, and the balance after in the ledger.
_CHARGED = """
    WITH {cost} recorded AS ({recording}),
    debited AS (
        UPDATE organizations SET credits = organizations.credits - recorded.credits
        FROM recorded
        WHERE organizations.id = :org_id AND organizations.credits IS NOT NULL
            AND recorded.credits > 0
        RETURNING organizations.credits
    ),
    noted AS (
        INSERT INTO credit_ledger (org_id, change, balance, reason, transaction_id, created_at)
        SELECT :org_id, -recorded.credits, debited.credits, :reason, :id, :created_at
        FROM debited, recorded
    )
    SELECT EXISTS (SELECT 1 FROM recorded)"""


def save_transaction(db: Database, row: Row) -> None:
    """Record a transaction (one with the same id is updated, keeping its place in the order
    recorded: a retried CLI row)."""
    db.execute(_upsert_sql("transactions", list(row), ["id"]), row)


def transactions_of(db: Database, org_id: str) -> list[Row]:
    """An organization's transactions, oldest first."""
    sql = f"{_TRANSACTION} WHERE org_id = ? ORDER BY created_at, rowid"
    return _rows(db, sql, [org_id])


def transactions_per_day(db: Database, org_id: str, since: str) -> list[Row]:
    """An organization's transactions per UTC day from `since` (an ISO timestamp) on: `day`
    (YYYY-MM-DD), `calls` and `credits`, oldest day first; days without any are left out."""
    sql = (
        "SELECT substr(created_at, 1, 10) AS day, count(*) AS calls, sum(credits) AS credits "
        "FROM transactions WHERE org_id = ? AND created_at >= ? GROUP BY day ORDER BY day"
    )
    return _rows(db, sql, [org_id, since])


def transactions_per_endpoint(db: Database, org_id: str, since: str) -> list[Row]:
    """An organization's transactions from `since` on per endpoint (a connection's events
    are its own endpoint): `endpoint`, `calls` and `credits`, busiest first."""
    sql = (
        "SELECT endpoint, count(*) AS calls, coalesce(sum(credits), 0) AS credits "
        "FROM transactions WHERE org_id = ? AND created_at >= ? "
        "GROUP BY endpoint ORDER BY calls DESC, endpoint"
    )
    return _rows(db, sql, [org_id, since])


def forget_answers_naming(db: Database, contact_guids: Sequence[str]) -> int:
    """Erasure: delete the answers kept for Idempotency-Key copies that name one of these
    contacts (a result holds its conGUID); how many."""
    sql = "DELETE FROM idempotency_keys WHERE body LIKE ?"
    return sum(db.execute(sql, [f"%{guid}%"]).rowcount for guid in contact_guids)


def forget_matched_contacts(db: Database, before: str) -> int:
    """Clear the matched contact of transactions made before `before` (retention: what a
    transaction kept of a person; its credits, endpoint and company stay for billing); how
    many were cleared."""
    sql = "UPDATE transactions SET contact_guid = '' WHERE contact_guid != '' AND created_at < ?"
    return db.execute(sql, [before]).rowcount


# --- discover --------------------------------------------------------------------------------

EARTH_RADIUS_MILES = 3958.7613
_MILES_PER_DEGREE = EARTH_RADIUS_MILES * math.pi / 180


@dataclass(frozen=True)
class TitleTerm:
    """A title filter: the normalized phrase between spaces, found anywhere in a title; or,
    where `taxonomy` is set, levels and functions (bits, 0 for either) it names instead."""

    phrase: str
    taxonomy: bool = False
    levels: int = 0
    functions: int = 0


@dataclass(frozen=True)
class PlaceTerm:
    """A place filter: place-key tokens an address must all carry, and the place's point.

    With a radius, a point place (city, ZIP) matches by distance only; an area (state,
    country) by its tokens or by distance from its point.
    """

    tokens: tuple[str, ...]
    latitude: float
    longitude: float
    area: bool = False


@dataclass(frozen=True)
class PeopleFilter:
    """Current employees of one company: grade at most `max_grade` (0 = A+), and any title
    term and any place term when there are some."""

    company_guid: str
    max_grade: int
    titles: tuple[TitleTerm, ...] = ()
    places: tuple[PlaceTerm, ...] = ()
    radius_miles: float | None = None


_DISCOVER_ORDER = "grade, level_rank, last_key, first_key, contact_guid"
# The index discover's queries hold SQLite's planner to (PostgreSQL's chooses per call).
_DISCOVER_INDEX = "employments_discover"


def people_page(
    db: Database, wanted: PeopleFilter, offset: int, limit: int
) -> tuple[int, list[tuple[str, float | None]]]:
    """How many people match, and the (contact GUID, distance in miles or None) of `limit`
    of them from `offset`, in discover's order (best grade, most senior, name, GUID)."""
    where, params = _people_where(db, wanted)
    distance, distance_params = _nearest_distance(db, wanted)
    sql = (
        f"SELECT contact_guid, {distance}, count(*) OVER () FROM employments "
        f"{indexed_by(db, _DISCOVER_INDEX)} WHERE {where} "
        f"ORDER BY {_DISCOVER_ORDER} LIMIT ? OFFSET ?"
    )
    params = [*distance_params, *params, limit, offset]
    rows = execute_planned_per_call(db, sql, params).fetchall()
    if rows:
        return rows[0][2], [(guid, miles) for guid, miles, _ in rows]
    return count_people(db, wanted), []


def count_people(db: Database, wanted: PeopleFilter) -> int:
    """How many people match."""
    where, params = _people_where(db, wanted)
    sql = f"SELECT count(*) FROM employments {indexed_by(db, _DISCOVER_INDEX)} WHERE {where}"
    return execute_planned_per_call(db, sql, params).fetchone()[0]


def people_by_levels_and_functions(
    db: Database, wanted: PeopleFilter
) -> list[tuple[int, int, int]]:
    """(level bits, function bits, how many) of the matching people, per combination."""
    where, params = _people_where(db, wanted)
    sql = (
        f"SELECT level_bits, function_bits, count(*) FROM employments "
        f"{indexed_by(db, _DISCOVER_INDEX)} WHERE {where} GROUP BY level_bits, function_bits"
    )
    return execute_planned_per_call(db, sql, params).fetchall()


def people_details(db: Database, company_guid: str, contact_guids: Sequence[str]) -> list[Row]:
    """Each of these contacts with their employment at the company (order not kept)."""
    sql = (
        "SELECT e.contact_guid, e.job_title, e.levels, e.functions, e.sub_functions, e.email, "
        "e.work_city, e.work_state, e.work_country, e.work_zipcode, e.work_phone, "
        "e.direct_dial1, e.direct_dial2, c.first_name, c.last_name, c.full_name, "
        "c.profile_url, c.accuracy FROM employments e JOIN contacts c ON c.guid = e.contact_guid "
        f"WHERE e.company_guid = ? AND e.contact_guid IN ({_marks(contact_guids)})"
    )
    return _rows(db, sql, [company_guid, *contact_guids])


def _people_where(db: Database, wanted: PeopleFilter) -> tuple[str, list[Any]]:
    grades = list(range(wanted.max_grade + 1))
    clauses = [f"company_guid = ? AND status = 'Active' AND grade IN ({_marks(grades)})"]
    params: list[Any] = [wanted.company_guid, *grades]
    if wanted.titles:
        clauses.append(" OR ".join(_title_condition(db, term, params) for term in wanted.titles))
    if wanted.places:
        radius = wanted.radius_miles
        conditions = [_place_condition(db, term, radius, params) for term in wanted.places]
        clauses.append(" OR ".join(conditions))
    return " AND ".join(f"({clause})" for clause in clauses), params


def _title_condition(db: Database, term: TitleTerm, params: list[Any]) -> str:
    params.append(term.phrase)
    found = f"{position(db, 'title_key', '?')} > 0"
    if not term.taxonomy:
        return found
    named = []
    for bits, column in ((term.levels, "level_bits"), (term.functions, "function_bits")):
        if bits:
            named.append(f"({column} & ?) != 0")
            params.append(bits)
    return f"({found} OR ({' AND '.join(named)}))"


def _place_condition(db: Database, term: PlaceTerm, radius: float | None, params: list[Any]) -> str:
    token = f"{position(db, 'place_key', '?')} > 0"
    inside = " AND ".join(token for _ in term.tokens)
    if radius is None:
        params.extend(term.tokens)
        return f"({inside})"
    near = f"({_box(term, radius, params)} AND {_distance(term, params)} <= ?)"
    params.append(radius)
    if not term.area:
        return near
    params.extend(term.tokens)
    return f"({near} OR ({inside}))"


def _box(term: PlaceTerm, radius: float, params: list[Any]) -> str:
    """Latitude and longitude bounds around the point that hold every point within `radius`."""
    degrees = radius / _MILES_PER_DEGREE
    params.extend((term.latitude - degrees, term.latitude + degrees))
    widest = abs(term.latitude) + degrees  # the latitude where a degree of longitude is least
    if widest >= 89.0:
        return "latitude BETWEEN ? AND ?"
    spread = degrees / math.cos(math.radians(widest))
    if term.longitude - spread < -180 or term.longitude + spread > 180:
        return "latitude BETWEEN ? AND ?"
    params.extend((term.longitude - spread, term.longitude + spread))
    return "latitude BETWEEN ? AND ? AND longitude BETWEEN ? AND ?"


def _distance(term: PlaceTerm, params: list[Any]) -> str:
    """Haversine distance in miles from the term's point to the row's (SQL and its params)."""
    lat, lon = math.radians(term.latitude), math.radians(term.longitude)
    params.extend((lat, math.cos(lat), lon))
    return (
        f"{2 * EARTH_RADIUS_MILES} * asin(sqrt(pow(sin((radians(latitude) - ?) / 2), 2) "
        "+ ? * cos(radians(latitude)) * pow(sin((radians(longitude) - ?) / 2), 2)))"
    )


def _nearest_distance(db: Database, wanted: PeopleFilter) -> tuple[str, list[Any]]:
    """SQL for the distance to the nearest place term's point when a radius is given, else NULL."""
    if wanted.radius_miles is None or not wanted.places:
        return "NULL", []
    params: list[Any] = []
    distances = [_distance(term, params) for term in wanted.places]
    return smallest(db, distances), params


# --- privacy ---------------------------------------------------------------------------------


def add_suppressions(db: Database, rows: Sequence[Row]) -> int:
    """Put hashes on the suppression list (each row: hash, kind, action, reason, actor,
    created_at); a hash already listed keeps its row, except that an erasure marks it erased.
    How many were not listed before."""
    before = suppression_count(db)
    sql = (
        "INSERT INTO suppressions (hash, kind, action, reason, actor, created_at) "
        "VALUES (:hash, :kind, :action, :reason, :actor, :created_at) "
        "ON CONFLICT (hash) DO UPDATE SET action = 'erase' WHERE excluded.action = 'erase'"
    )
    db.conn.executemany(sql, rows)
    return suppression_count(db) - before


def suppression_count(db: Database) -> int:
    """How many hashes the suppression list holds."""
    return db.execute("SELECT count(*) FROM suppressions").fetchone()[0]


def suppressed(db: Database, hashes: Sequence[str]) -> list[Row]:
    """The suppression list's rows of these hashes."""
    if not hashes:
        return []
    return _rows(db, f"SELECT * FROM suppressions WHERE hash IN ({_marks(hashes)})", hashes)


def suppression_hashes(db: Database) -> set[str]:
    """Every hash on the suppression list (for checking many people at once: an import)."""
    return {row[0] for row in db.execute("SELECT hash FROM suppressions")}


def suppression_list(db: Database) -> list[Row]:
    """The suppression list, oldest first."""
    return _rows(db, "SELECT * FROM suppressions ORDER BY created_at, hash")


# An index seek on transactions (org_id, contact_guid) for a contact of any organization: the
# organizations are few, so naming them all lets both backends seek instead of scanning.
_ANY_ORG = "org_id IN (SELECT id FROM organizations)"


def contact_guids_by_emails(db: Database, emails: Sequence[str]) -> set[str]:
    """The GUIDs of the contacts with an employment at one of these e-mail addresses."""
    sql = "SELECT DISTINCT contact_guid FROM employments WHERE email != '' AND email IN ({})"
    return _guids(db, sql, emails)


def contact_guids_by_profile_urls(db: Database, urls: Sequence[str]) -> set[str]:
    """The GUIDs of the contacts with one of these profile URLs."""
    return _guids(db, "SELECT guid FROM contacts WHERE profile_url IN ({})", urls)


def _guids(db: Database, sql: str, values: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for chunk in _chunks(values):
        found.update(row[0] for row in db.execute(sql.format(_marks(chunk)), list(chunk)))
    return found


def names_at_domains(db: Database, wanted: Sequence[tuple[str, str]]) -> list[Row]:
    """The employments (contact_guid, first_key, last_key, and the company's domain) of people
    with a wanted (domain, last key) at a company of that domain, and perhaps some more: the
    caller keeps those it wants."""
    sql = (
        "SELECT e.contact_guid, e.first_key, e.last_key, co.domain FROM companies co "
        "JOIN employments e ON e.company_guid = co.guid WHERE co.domain IN ({}) "
        "AND e.last_key IN ({})"
    )
    rows: list[Row] = []
    for chunk in _chunks(wanted):
        domains, last_keys = sorted({d for d, _ in chunk}), sorted({k for _, k in chunk})
        rows += _rows(db, sql.format(_marks(domains), _marks(last_keys)), [*domains, *last_keys])
    return rows


def delete_contacts(db: Database, guids: Sequence[str]) -> dict[str, int]:
    """Delete these contacts and their employments; how many of each were deleted."""
    deleted = {"contacts": 0, "employments": 0}
    for chunk in _chunks(guids):
        marks = _marks(chunk)
        sql = f"DELETE FROM employments WHERE contact_guid IN ({marks})"
        deleted["employments"] += db.execute(sql, list(chunk)).rowcount
        sql = f"DELETE FROM contacts WHERE guid IN ({marks})"
        deleted["contacts"] += db.execute(sql, list(chunk)).rowcount
    return deleted


def clear_transaction_contacts(db: Database, guids: Sequence[str]) -> int:
    """Clear the contact GUID of the transactions of these contacts; how many were cleared."""
    cleared = 0
    for chunk in _chunks(guids):
        sql = (
            f"UPDATE transactions SET contact_guid = '' WHERE {_ANY_ORG} "
            f"AND contact_guid IN ({_marks(chunk)})"
        )
        cleared += db.execute(sql, list(chunk)).rowcount
    return cleared


def contacts_by_guids(db: Database, guids: Sequence[str]) -> list[Row]:
    """The contacts with these GUIDs, in GUID order."""
    sql = f"SELECT * FROM contacts WHERE guid IN ({_marks(guids)}) ORDER BY guid"
    return _rows(db, sql, list(guids)) if guids else []


def deliveries_of(db: Database, guids: Sequence[str], delivered: Sequence[str]) -> list[Row]:
    """The transactions that delivered these contacts (a record status in `delivered`), with
    the receiving organization's name, oldest first."""
    if not guids:
        return []
    sql = (
        "SELECT t.contact_guid, t.org_id, o.name AS org_name, t.endpoint, t.record_status, "
        "t.created_at FROM transactions t JOIN organizations o ON o.id = t.org_id "
        f"WHERE {_ANY_ORG} AND t.contact_guid IN ({_marks(guids)}) "
        f"AND t.record_status IN ({_marks(delivered)}) ORDER BY t.created_at, t.id"
    )
    return _rows(db, sql, [*guids, *delivered])


# --- idempotency keys (server/http/enrich_api.py) --------------------------------------------

# Which request a key names: (organization id, endpoint, the Idempotency-Key as sent).
KeyScope = tuple[str, str, str]
_KEY_IS = "org_id = ? AND endpoint = ? AND idempotency_key = ?"


def claim_idempotency_key(
    db: Database, scope: KeyScope, fingerprint: str, now: str, forget_before: str, lapsed: str
) -> Row | None:
    """Claim a key for answering: None when it is new (the claim is made), else the row of
    the request seen before with it. Keys claimed before `forget_before` are deleted first,
    and this key's claim if still unanswered since before `lapsed` (its request died). Run it
    in a write (`write_at_once` will do: on PostgreSQL the deletes go with the claim, in one
    round trip), so two copies cannot both claim."""
    _execute_with_next(db, _FORGET_KEYS, [forget_before])
    _execute_with_next(
        db,
        f"DELETE FROM idempotency_keys WHERE {_KEY_IS} AND status = 0 AND claimed_at < ?",
        [*scope, lapsed],
    )
    claimed = db.execute(
        "INSERT INTO idempotency_keys (org_id, endpoint, idempotency_key, fingerprint, "
        "claimed_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
        [*scope, fingerprint, now],
    )
    if claimed.rowcount == 1:
        return None
    return _first(db, f"SELECT * FROM idempotency_keys WHERE {_KEY_IS}", scope)


def forget_idempotency_keys(db: Database, before: str) -> int:
    """Delete the keys (and answers kept) claimed before `before`; how many."""
    return db.execute(_FORGET_KEYS, [before]).rowcount


_FORGET_KEYS = "DELETE FROM idempotency_keys WHERE claimed_at < ?"


def answer_idempotency_key(
    db: Database, scope: KeyScope, status: int, body: str, transaction_id: str
) -> None:
    """Keep the answer to a claimed key's request, for its copies."""
    db.execute(
        "UPDATE idempotency_keys SET status = ?, body = ?, transaction_id = ? "
        f"WHERE {_KEY_IS} AND status = 0",
        [status, body, transaction_id, *scope],
    )


def release_idempotency_key(db: Database, scope: KeyScope) -> None:
    """Drop a claim whose request was not answered for good, so a copy is tried afresh."""
    db.execute(f"DELETE FROM idempotency_keys WHERE {_KEY_IS} AND status = 0", scope)
