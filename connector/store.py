"""The connector's tables and the sealed secrets in them: every read and write of its tables, in
the service's database (their schema: connector/schema.py), and the sealing of the secret
values it keeps there. Rows go in and come out as plain dicts.

Secrets at rest: values the connector must use again (an inbound HMAC secret, an organization
key, a CRM token or OAuth client) are sealed with Fernet (AES-128-CBC + HMAC-SHA-256) under a
key derived from the server secret, so a copy of the database alone reveals none of them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from sqlite_utils import Database

import server
from connector import mappings, oauth, outbound
from connector.schema import MIGRATIONS

Row = dict[str, Any]
LARGEST_ID = 2**63 - 1  # SQLite's largest integer: no row has a larger id
_PURPOSE = b"contactdata connector secrets v1"  # the sealing key's derivation: never change


class UnsealError(ValueError):
    """A sealed value that this server secret cannot open (another secret, or tampered)."""


def _fernet(server_secret: bytes) -> Fernet:
    key = hmac.new(server_secret, _PURPOSE, hashlib.sha256).digest()
    return Fernet(base64.urlsafe_b64encode(key))


def seal(server_secret: bytes, value: str) -> str:
    """`value` encrypted and authenticated, as text for a database column."""
    return _fernet(server_secret).encrypt(value.encode()).decode()


@lru_cache(maxsize=256)
def unseal(server_secret: bytes, sealed: str) -> str:
    """The value `seal` sealed; raises UnsealError when it cannot be opened. Kept once opened:
    the worker opens a connection's key for every event, and a key derivation and an AES
    decryption each time cost more than the rest of its bookkeeping."""
    try:
        return _fernet(server_secret).decrypt(sealed.encode()).decode()
    except InvalidToken:
        raise UnsealError("a sealed secret cannot be opened with this server secret") from None


def hint(value: str) -> str:
    """What may be shown of a secret: its last four characters."""
    return f"…{value[-4:]}" if len(value) > 8 else "…"


def connect(path: str | Path) -> Database:
    """The database at `path` (a SQLite file or a PostgreSQL URL), with the service's
    migrations and then the connector's (connector/schema.py)."""
    db = server.connect(path)
    server.apply_migrations(db, MIGRATIONS)
    return db


def _upsert(table: str, row: Row, key: tuple[str, ...]) -> str:
    """An INSERT of `row`'s columns (as `:name` parameters) that updates the row of the same
    `key` instead, if there is one (its other columns are kept)."""
    columns, values = ", ".join(row), ", ".join(f":{name}" for name in row)
    changes = ", ".join(f"{name} = excluded.{name}" for name in row if name not in key)
    return (
        f"INSERT INTO {table} ({columns}) VALUES ({values}) "
        f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET {changes}"
    )


def _update(db: Database, table: str, row_id: object, values: Row) -> None:
    """Set `values` (column: value) on the row of `table` whose id is `row_id`."""
    changes = ", ".join(f"{name} = :{name}" for name in values)
    db.execute(f"UPDATE {table} SET {changes} WHERE id = :_id", {**values, "_id": row_id})


def add_oauth_state(db: Database, row: Row, before: str) -> None:
    """A pending authorization; those begun before `before` (expired) are deleted first."""
    db.execute("DELETE FROM oauth_states WHERE created_at < ?", [before])
    db.table("oauth_states").insert(row)


def take_oauth_state(db: Database, state_hash: str) -> Row | None:
    """The pending authorization with this state's hash, deleted as it is read (single use:
    a second callback with the same state finds nothing); None when there is none."""
    sql = "DELETE FROM oauth_states WHERE state_hash = ? RETURNING *"
    cursor = db.execute(sql, [state_hash])
    found = cursor.fetchone()
    columns = server.dialect.result_names(cursor)
    return dict(zip(columns, found, strict=True)) if found else None


def set_crm_auth_error(db: Database, connection_id: str, error: str) -> None:
    """Why renewing the connection's token was refused for good ("" once it works again)."""
    sql = "UPDATE connections SET crm_auth_error = ? WHERE id = ?"
    db.execute(sql, [error, connection_id])


def save_oauth_app(db: Database, row: Row) -> None:
    """A platform's OAuth app, replacing the one it had."""
    db.execute(_upsert("oauth_apps", row, ("platform",)), row)


def oauth_apps(db: Database) -> list[Row]:
    return list(db.query("SELECT * FROM oauth_apps ORDER BY platform"))


def oauth_app(db: Database, platform: str) -> Row | None:
    rows = list(db.query("SELECT * FROM oauth_apps WHERE platform = ?", [platform]))
    return rows[0] if rows else None


def delete_oauth_app(db: Database, platform: str) -> bool:
    """Delete a platform's OAuth app; whether it had one."""
    return db.execute("DELETE FROM oauth_apps WHERE platform = ?", [platform]).rowcount > 0


def start_settings_session(db: Database, row: Row) -> None:
    """A new settings session: id (a digest), key_id, org_id, mark, created_at."""
    db.table("settings_sessions").insert(row)


def settings_session(db: Database, session_id: str) -> Row | None:
    """The settings session with this id (digest), ended or not, or None."""
    rows = list(db.query("SELECT * FROM settings_sessions WHERE id = ?", [session_id]))
    return rows[0] if rows else None


def end_settings_session(db: Database, session_id: str, now: str) -> bool:
    """Mark a live settings session ended at `now`; whether there was one."""
    sql = "UPDATE settings_sessions SET ended_at = ? WHERE id = ? AND ended_at = ''"
    return db.execute(sql, [now, session_id]).rowcount == 1


def purge_settings_sessions(db: Database, before: str) -> int:
    """Delete settings sessions that ended or began at or before `before` (neither admits
    anyone any more: a cookie naming a missing session is refused too); how many."""
    sql = "DELETE FROM settings_sessions WHERE ended_at != '' OR created_at <= ?"
    return db.execute(sql, [before]).rowcount


# How long the answer to a delivery naming itself (a webhook-id, an Idempotency-Key) is kept
# for its copies; and how long a claim may go unanswered before a copy takes it over (its
# request died with its worker: twice gunicorn's 30 s timeout).
ANSWERS_KEPT = timedelta(hours=24)
CLAIM_LAPSES_AFTER = timedelta(seconds=60)


def claim_webhook(
    db: Database,
    connection_id: str,
    webhook_id: str,
    now: str,
    forget_before: str,
    fingerprint: str = "",
    lapsed: str = "",
) -> Row | None:
    """Claim a delivery for answering (with the digest of its body): None when it is new (the
    claim is made), else the row of the delivery seen before. Deliveries received before
    `forget_before` are deleted first, and this one's claim if still unanswered since before
    `lapsed`. Run it in a write transaction, so two copies cannot both claim."""
    forget_webhooks(db, forget_before)
    db.execute(
        "DELETE FROM webhook_replays WHERE connection_id = ? AND webhook_id = ? AND status = 0 "
        "AND received_at < ?",
        [connection_id, webhook_id, lapsed],
    )
    claimed = db.execute(
        "INSERT INTO webhook_replays (connection_id, webhook_id, received_at, fingerprint) "
        "VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        [connection_id, webhook_id, now, fingerprint],
    )
    if claimed.rowcount == 1:
        return None
    sql = "SELECT * FROM webhook_replays WHERE connection_id = ? AND webhook_id = ?"
    return next(iter(db.query(sql, [connection_id, webhook_id])))


# A HubSpot custom action's execution (`callbackId:…`, its Platform.delivery_id): HubSpot may
# sign it with a timeless v2 signature, so its id is remembered for good (its answer, personal
# data, blanked once ANSWERS_KEPT is over): a copy however late is never charged again.
REMEMBERED = "callbackId:%"


def forget_webhooks(db: Database, before: str) -> int:
    """Forget the answers kept for deliveries received before `before`: deleted, or for an
    execution remembered for good blanked; how many."""
    blanked = db.execute(
        "UPDATE webhook_replays SET body = '', headers = '{}' WHERE received_at < ? "
        "AND webhook_id LIKE ? AND status != 0 AND body != ''",
        [before, REMEMBERED],
    ).rowcount
    sql = (
        "DELETE FROM webhook_replays WHERE received_at < ? "
        "AND (webhook_id NOT LIKE ? OR status = 0)"
    )
    return blanked + db.execute(sql, [before, REMEMBERED]).rowcount


def answer_webhook(
    db: Database, connection_id: str, webhook_id: str, status: int, body: str, headers: str
) -> None:
    """Keep the answer to a claimed delivery (headers as JSON), for its copies."""
    db.execute(
        "UPDATE webhook_replays SET status = ?, body = ?, headers = ? "
        "WHERE connection_id = ? AND webhook_id = ?",
        [status, body, headers, connection_id, webhook_id],
    )


def release_webhook(db: Database, connection_id: str, webhook_id: str) -> None:
    """Drop a claim whose delivery was not answered for good, so a copy is tried afresh."""
    sql = "DELETE FROM webhook_replays WHERE connection_id = ? AND webhook_id = ?"
    db.execute(sql, [connection_id, webhook_id])


def note_app_v3(db: Database, platform: str, kind: str) -> None:
    """Note that a platform's OAuth app (HubSpot's) received a valid v3 signature on a `kind`
    of request to its app-level URLs (`hubspot_v3_kinds`, as a connection's)."""
    _add_v3_kind(db, "oauth_apps", "platform", platform, kind)


def note_hubspot_v3(db: Database, connection_id: str, kind: str) -> None:
    """Note that a HubSpot connection received a valid v3 signature on a `kind` of request
    (`hubspot_v3_kinds`, comma-separated: each kind once)."""
    _add_v3_kind(db, "connections", "id", connection_id, kind)


def _add_v3_kind(db: Database, table: str, key: str, value: str, kind: str) -> None:
    """Add `kind` once to the `hubspot_v3_kinds` of `table`'s row whose `key` is `value`."""
    listed = server.dialect.position(db, "',' || hubspot_v3_kinds || ','", "',' || :kind || ','")
    db.execute(
        f"UPDATE {table} SET hubspot_v3_kinds = ltrim(hubspot_v3_kinds || ',' || :kind, ',') "
        f"WHERE {key} = :value AND {listed} = 0",
        {"kind": kind, "value": value},
    )


def save_crm_grant(db: Database, connection_id: str, values: Row) -> None:
    """A renewed access token: crm_token_sealed, crm_token_hint, crm_token_expires_at and
    crm_oauth_sealed (the refresh token may have been rotated)."""
    _update(db, "connections", connection_id, values)


def crm_token(server_secret: bytes, row: Row) -> str:
    """A connection's current CRM token; "" when an OAuth client has not asked for one yet."""
    sealed = row["crm_token_sealed"]
    return unseal(server_secret, sealed) if sealed else ""


def crm_auth(
    db: Database, server_secret: bytes, row: Row, clock: Callable[[], datetime]
) -> oauth.Renewing | None:
    """The authentication that renews a connection's CRM token and saves each new one (and
    notes a grant the token endpoint refuses for good: `crm_auth_error`); None for a
    connection with a fixed token."""
    if not row["crm_oauth_sealed"]:
        return None
    credentials = oauth.Credentials.loads(unseal(server_secret, row["crm_oauth_sealed"]))
    outbound.check_crm_url(credentials.token_url)  # again, before connecting
    token = crm_token(server_secret, row)
    expires = row["crm_token_expires_at"]

    def save(got: oauth.Granted) -> None:
        values = {
            "crm_token_sealed": seal(server_secret, got.access_token),
            "crm_token_hint": hint(got.access_token),
            "crm_token_expires_at": got.expires_at.isoformat() if got.expires_at else "",
            "crm_auth_error": "",
        }
        if got.credentials != credentials:  # a rotated refresh token; else another process's
            values["crm_oauth_sealed"] = seal(server_secret, got.credentials.dumps())
        with server.write(db):
            save_crm_grant(db, row["id"], values)

    def refused(error: Exception) -> None:
        with server.write(db):
            set_crm_auth_error(db, row["id"], str(error))

    when = datetime.fromisoformat(expires) if expires else None
    return oauth.Renewing(credentials, token, when, save, clock, refused)


def save_channel_expiry(db: Database, connection_id: str, expires_at: str) -> None:
    """The expiry Zoho confirmed for a connection's notification channel (ISO 8601)."""
    sql = "UPDATE connections SET zoho_channel_expires_at = ? WHERE id = ?"
    db.execute(sql, [expires_at, connection_id])


def save_webhook_ids(db: Database, connection_id: str, ids: list[str]) -> None:
    """The webhooks the connector registered in the connection's CRM (none: [])."""
    sql = "UPDATE connections SET crm_webhook_ids = ? WHERE id = ?"
    db.execute(sql, [",".join(ids), connection_id])


def webhook_ids(row: Row) -> list[str]:
    """The webhooks the connector registered in a connection's CRM, as saved."""
    return [part for part in row.get("crm_webhook_ids", "").split(",") if part]


def set_refresh_days(db: Database, connection_id: str, days: int) -> bool:
    """Change a connection's refresh interval; whether there was such a connection."""
    sql = "UPDATE connections SET refresh_days = ? WHERE id = ?"
    return db.execute(sql, [days, connection_id]).rowcount == 1


def record_job_run(db: Database, row: Row) -> None:
    """Note one run of a scheduled job: job_id, started_at, finished_at, ok, result."""
    db.table("job_runs").insert(row)


def take_lease(db: Database, name: str, holder: str, now: str, until: str) -> bool:
    """Take the lease `name` for `holder` until `until`, or renew it, unless another holds it
    past `now`; whether `holder` holds it now. One statement (the same on PostgreSQL)."""
    sql = (
        "INSERT INTO leases (name, holder, until) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE "
        "SET holder = excluded.holder, until = excluded.until "
        "WHERE leases.holder = excluded.holder OR leases.until <= ? RETURNING holder"
    )
    return db.execute(sql, [name, holder, until, now]).fetchall() != []


def release_lease(db: Database, name: str, holder: str) -> None:
    """Give up the lease `name` if `holder` holds it, so another may take it at once."""
    db.execute("DELETE FROM leases WHERE name = ? AND holder = ?", [name, holder])


def lease_holder(db: Database, name: str) -> str | None:
    """Who holds (or last held) the lease `name`; None when nobody."""
    row = db.execute("SELECT holder FROM leases WHERE name = ?", [name]).fetchone()
    return row[0] if row else None


def last_job_runs(db: Database) -> dict[str, Row]:
    """Each scheduled job's latest run, by job id."""
    sql = "SELECT * FROM job_runs WHERE id IN (SELECT max(id) FROM job_runs GROUP BY job_id)"
    return {row["job_id"]: row for row in db.query(sql)}


def purge_job_runs(db: Database, before: str) -> int:
    """Delete job runs started before `before`; how many."""
    return db.execute("DELETE FROM job_runs WHERE started_at < ?", [before]).rowcount


def purge_done_events(db: Database, before: str) -> int:
    """Delete done events last due before `before` (dead letters stay for the operator); how
    many. An event's due time is when it was last tried, so a long-retried event is kept a
    while after it finally succeeded."""
    sql = "DELETE FROM events WHERE status = 'done' AND due_at < ?"
    return db.execute(sql, [before]).rowcount


def stale_records(db: Database, connection_id: str, before: str) -> list[Row]:
    """A connection's cached records (connection_id, kind, record_id, contact_guid,
    input_fingerprint, enriched_at) last enriched before `before`, oldest first; records with
    an event still pending are left out, since that event will enrich them anyway."""
    sql = (
        "SELECT connection_id, kind, record_id, contact_guid, input_fingerprint, enriched_at "
        "FROM records r "
        "WHERE connection_id = ? AND enriched_at < ? AND NOT EXISTS (SELECT 1 FROM events e "
        "WHERE e.status = 'pending' AND e.connection_id = r.connection_id "
        "AND e.kind = r.kind AND e.record_id = r.record_id) ORDER BY enriched_at, record_id"
    )
    return list(db.query(sql, [connection_id, before]))


def blank_payloads(db: Database, before: str) -> int:
    """Retention: blank the stored payload of finished (done or dead) events last tried before
    `before`, leaving the event thin (a dead letter retried reads its record from the CRM);
    how many were blanked."""
    sql = (
        "UPDATE events SET payload = '{}', thin = 1 "
        "WHERE status != 'pending' AND due_at < ? AND payload != '{}'"
    )
    return db.execute(sql, [before]).rowcount


def purge_records(db: Database, before: str) -> int:
    """Retention: delete transaction cache entries enriched before `before` (their input
    fingerprint and the values written), but for those with a write pending; how many."""
    sql = "DELETE FROM records WHERE enriched_at < ? AND pending = ''"
    return db.execute(sql, [before]).rowcount


def erase_person(db: Database, needles: list[str], contact_guids: list[str]) -> dict[str, int]:
    """Erasure: delete the events whose payload or written values hold one of `needles`
    (lower-case text, found case-insensitively) or whose record's cache entry matched one of
    `contact_guids`, the answers kept for replayed deliveries holding a needle, the previews of
    those records, those cache entries and the job changes seen of those contacts; how many of
    each."""
    keys = _records_of_contacts(db, contact_guids)
    patterns = [f"%{_like_escaped(needle)}%" for needle in needles]

    def holding(table: str, column: str) -> int:
        holds = " OR ".join([f"lower({column}) LIKE ? ESCAPE '\\'"] * len(patterns))
        return db.execute(f"DELETE FROM {table} WHERE {holds}", patterns).rowcount if holds else 0

    def of_records(table: str) -> int:
        sql = f"DELETE FROM {table} WHERE connection_id = ? AND kind = ? AND record_id = ?"
        return sum(db.execute(sql, key).rowcount for key in keys)

    return {
        "webhook payloads": holding("events", "payload")
        + holding("events", "written")
        + of_records("events"),
        "kept delivery answers": holding("webhook_replays", "body"),
        "previews": of_records("previews"),
        "cached records": of_records("records"),
        "job changes": _delete_of_contacts(db, "signals", contact_guids),
    }


def _delete_of_contacts(db: Database, table: str, contact_guids: list[str]) -> int:
    """Delete the rows of `table` about these contacts; how many."""
    if not contact_guids:
        return 0
    marks = ", ".join("?" * len(contact_guids))
    return db.execute(
        f"DELETE FROM {table} WHERE contact_guid IN ({marks})", contact_guids
    ).rowcount


def _records_of_contacts(db: Database, contact_guids: list[str]) -> list[tuple[str, str, str]]:
    """The (connection, kind, record) of the cache entries that matched these contacts."""
    if not contact_guids:
        return []
    marks = ", ".join("?" * len(contact_guids))
    sql = f"SELECT connection_id, kind, record_id FROM records WHERE contact_guid IN ({marks})"
    return [tuple(row) for row in db.execute(sql, contact_guids).fetchall()]


def _like_escaped(text: str) -> str:
    """`text` matched literally by LIKE ... ESCAPE '\\'."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def clear_pending(db: Database, connection_id: str, kind: str, record_ids: list[str]) -> None:
    """Cancel the pending write of these records (their person is suppressed)."""
    db.conn.executemany(
        "UPDATE records SET pending = '' WHERE connection_id = ? AND kind = ? AND record_id = ?",
        [(connection_id, kind, record_id) for record_id in record_ids],
    )


def insert_connection(db: Database, row: Row) -> None:
    db.table("connections").insert(row)


def connection(db: Database, connection_id: str) -> Row | None:
    """The connection with this id, or None."""
    rows = db.execute("SELECT * FROM connections WHERE id = ?", [connection_id])
    names = server.dialect.result_names(rows)
    found = rows.fetchone()
    return dict(zip(names, found, strict=True)) if found else None


def connection_named(db: Database, name: str) -> Row | None:
    """The connection with this name, or None."""
    row = db.execute("SELECT id FROM connections WHERE name = ?", [name]).fetchone()
    return connection(db, row[0]) if row else None


def connection_of_account(db: Database, platform: str, account_id: str) -> Row | None:
    """The connection of `platform` connected to the CRM account `account_id`, or None."""
    sql = "SELECT id FROM connections WHERE platform = ? AND crm_account_id = ? AND ? != ''"
    row = db.execute(sql, [platform, account_id, account_id]).fetchone()
    return connection(db, row[0]) if row else None


def connections(db: Database) -> list[Row]:
    """Every connection, oldest first."""
    return list(db.query("SELECT * FROM connections ORDER BY created_at, id"))


def lock_connection(db: Database, connection_id: str) -> None:
    """In a write transaction, hold the connection's row until it ends, so that what it reads
    next of the connection (its secrets, backfills, mapping versions) holds when it writes: on
    PostgreSQL another transaction locking the row waits (FOR NO KEY UPDATE: events and
    records of the connection are still inserted). On SQLite, nothing: its writers take turns."""
    if server.is_postgres(db):
        db.execute("SELECT 1 FROM connections WHERE id = ? FOR NO KEY UPDATE", [connection_id])


def add_events(db: Database, rows: list[Row]) -> int:
    """Store events not stored yet (by connection and event key); how many were new."""
    cursor = db.conn.executemany(
        "INSERT INTO events (connection_id, event_key, kind, record_id, payload, thin, "
        "received_at, due_at, priority) VALUES (:connection_id, :event_key, :kind, :record_id, "
        ":payload, :thin, :received_at, :received_at, :priority) ON CONFLICT DO NOTHING",
        [{"kind": "contacts", "priority": 0, **row} for row in rows],
    )
    return max(cursor.rowcount, 0)  # the sum over the rows: 1 for each inserted


def events_of(db: Database, connection_id: str) -> list[Row]:
    """A connection's events, oldest first."""
    sql = "SELECT * FROM events WHERE connection_id = ? ORDER BY id"
    return list(db.query(sql, [connection_id]))


# Connections whose events wait: paused ones, CRM connections not connected yet, and those
# whose CRM's rate limit holds them (throttled_until) at :now.
HELD = (
    "SELECT id FROM connections WHERE paused_at != '' OR crm_base_url = '' "
    "OR throttled_until > :now"
)


# Claiming in one statement, in a write transaction (on SQLite one claimer at a time). On
# PostgreSQL, where claimers run at once, the subquery ends "... LIMIT n FOR UPDATE SKIP
# LOCKED": each passes over the rows another is claiming instead of waiting for them, and a
# row another claimed and committed meanwhile is checked again (its lease) and left.
_CLAIM = (
    "UPDATE events SET claimed_by = :worker, lease_until = :until WHERE id IN ("
    "SELECT id FROM events WHERE status = 'pending' AND due_at <= :now AND lease_until <= :now "
    f"AND connection_id NOT IN ({HELD}) ORDER BY priority, due_at, id LIMIT :limit{{lock}}) "
    "RETURNING *"
)
_RELEASED = "claimed_by = '', lease_until = ''"


def claim_events(db: Database, worker: str, now: str, until: str, limit: int) -> list[Row]:
    """Claim up to `limit` pending events whose time has come and that no live claim holds
    (none, or its lease ended before `now`), but for held connections' (HELD), for `worker`
    until `until`: live ones (priority 0) before a backfill's (1), each oldest due first."""
    sql = _CLAIM.format(lock=server.dialect.row_lock(db, skip_locked=True))
    cursor = db.execute(sql, {"worker": worker, "now": now, "until": until, "limit": limit})
    names = server.dialect.result_names(cursor)
    rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    return sorted(rows, key=lambda row: (row["priority"], row["due_at"], row["id"]))


def extend_claims(db: Database, worker: str, until: str) -> set[int]:
    """Extend the lease of `worker`'s claims of pending events to `until`; the ids still its
    (another worker may have claimed one whose lease had ended)."""
    sql = (
        "UPDATE events SET lease_until = ? WHERE claimed_by = ? AND status = 'pending' RETURNING id"
    )
    return {row[0] for row in db.execute(sql, [until, worker]).fetchall()}


_FINISHED = (
    f"UPDATE events SET status = ?, attempts = attempts + 1, last_error = ?, written = ?, "
    f"{_RELEASED} WHERE id = ?"
)


def finish_event(
    db: Database, event_id: int, status: str, error: str = "", written: Row | None = None
) -> None:
    """Mark an event done, with what it wrote to its record (`written`: property -> value),
    or dead with the reason; its claim ends."""
    db.execute(_FINISHED, [status, error, _written(written), event_id])


def finish_events(
    db: Database, finished: list[tuple[int, str, str]], written: dict[int, Row] | None = None
) -> None:
    """`finish_event` for several events at once: (event id, status, error) each, and what
    each wrote by event id (`written`; none when it names no event)."""
    wrote = written or {}
    db.conn.executemany(
        _FINISHED,
        [
            (status, error, _written(wrote.get(event_id)), event_id)
            for event_id, status, error in finished
        ],
    )


def _written(values: Row | None) -> str:
    """What an event wrote, as the events table keeps it: JSON, or '' for nothing."""
    return json.dumps(values, sort_keys=True) if values else ""


def postpone_event(db: Database, event_id: int, due_at: str, error: str) -> None:
    """Count a failed attempt and make the event due again at `due_at`, for any worker."""
    db.execute(
        f"UPDATE events SET attempts = attempts + 1, due_at = ?, last_error = ?, {_RELEASED} "
        "WHERE id = ?",
        [due_at, error, event_id],
    )


def hold_events(db: Database, event_ids: list[int], due_at: str, error: str) -> None:
    """Make events due again at `due_at` without counting an attempt (their CRM's rate limit
    refused them, not the events); their claims end."""
    db.conn.executemany(
        f"UPDATE events SET due_at = ?, last_error = ?, {_RELEASED} WHERE id = ?",
        [(due_at, error, event_id) for event_id in event_ids],
    )


def throttle_connection(db: Database, connection_id: str, until: str) -> None:
    """Hold a connection's events until `until` (a later hold already set is kept)."""
    sql = "UPDATE connections SET throttled_until = ? WHERE id = ? AND throttled_until < ?"
    db.execute(sql, [until, connection_id, until])


def retry_event(db: Database, event_id: int, now: str) -> bool:
    """Make a dead event pending again, due now; whether there was one."""
    sql = (
        "UPDATE events SET status = 'pending', due_at = ?, last_error = '' "
        "WHERE id = ? AND status = 'dead'"
    )
    return db.execute(sql, [now, event_id]).rowcount == 1


def recent_events(
    db: Database, limit: int, status: str | None = None, org_id: str | None = None
) -> list[Row]:
    """The latest events of every connection, or of one organization's (its settings page),
    of one status or any; newest first."""
    where: list[str] = []
    params: list[Any] = []
    if status is not None:
        where.append("status = ?")
        params.append(status)
    if org_id is not None:
        where.append("connection_id IN (SELECT id FROM connections WHERE org_id = ?)")
        params.append(org_id)
    condition = f"WHERE {' AND '.join(where)} " if where else ""
    sql = f"SELECT * FROM events {condition}ORDER BY id DESC LIMIT ?"
    return list(db.query(sql, [*params, limit]))


def event(db: Database, event_id: int) -> Row | None:
    """The event with this id, or None."""
    rows = list(db.query("SELECT * FROM events WHERE id = ?", [event_id]))
    return rows[0] if rows else None


def record(
    db: Database, connection_id: str, record_id: str, kind: str = "contacts", *, lock: bool = False
) -> Row | None:
    """The transaction cache entry of a CRM record of `kind`, or None. With `lock`, in a write
    transaction, the entry is held until it ends (on PostgreSQL FOR UPDATE; SQLite's writers
    take turns), so that what is written back from it holds."""
    sql = "SELECT * FROM records WHERE connection_id = ? AND kind = ? AND record_id = ?"
    locking = server.dialect.row_lock(db) if lock else ""
    rows = list(db.query(sql + locking, [connection_id, kind, record_id]))
    return rows[0] if rows else None


def records(db: Database, connection_id: str, kind: str, record_ids: list[str]) -> dict[str, Row]:
    """The transaction cache entries of these CRM records of `kind`, by record id (those
    that have one)."""
    ids = server.dialect.json_array_values(db, "?")
    sql = (
        "SELECT * FROM records WHERE connection_id = ? AND kind = ? "
        f"AND record_id IN (SELECT value FROM {ids})"
    )
    rows = db.query(sql, [connection_id, kind, json.dumps(record_ids)])
    return {row["record_id"]: row for row in rows}


def save_record(db: Database, row: Row) -> None:
    """Replace the transaction cache entry of a CRM record."""
    save_records(db, [row])


def save_records(db: Database, rows: list[Row]) -> None:
    """Replace the transaction cache entries of CRM records (rows of the same columns; a
    column left out keeps an entry's value), in key order: two workers saving some of the
    same records lock them in the same order."""
    if not rows:
        return
    in_order = sorted(
        rows, key=lambda row: (row["connection_id"], row.get("kind", ""), row["record_id"])
    )
    key = ("connection_id", "kind", "record_id")
    db.conn.executemany(_upsert("records", rows[0], key), in_order)


def records_written(
    db: Database, connection_id: str, kind: str, written: list[tuple[str, Row]]
) -> None:
    """Add to what each record (record id, values) holds of ours and clear its pending write,
    in record order (as `save_records`)."""
    merged = server.dialect.json_merged(db, "written", "?")  # values are flat
    db.conn.executemany(
        f"UPDATE records SET written = {merged}, pending = '' "
        "WHERE connection_id = ? AND kind = ? AND record_id = ?",
        [
            (json.dumps(values), connection_id, kind, record_id)
            for record_id, values in sorted(written, key=lambda pair: pair[0])
        ],
    )


def edit_connection(db: Database, connection_id: str, name: str, refresh_days: int) -> bool:
    """Rename a connection and set its refresh interval; whether there was one."""
    sql = "UPDATE connections SET name = ?, refresh_days = ? WHERE id = ?"
    return db.execute(sql, [name, refresh_days, connection_id]).rowcount == 1


def set_paused(db: Database, connection_id: str, paused_at: str) -> bool:
    """Pause a connection (`paused_at`, an ISO time) or resume it (""); whether it changed."""
    sql = "UPDATE connections SET paused_at = ? WHERE id = ? AND (paused_at = '') != (? = '')"
    return db.execute(sql, [paused_at, connection_id, paused_at]).rowcount == 1


def rotate_secret(db: Database, connection_id: str, values: Row) -> None:
    """Save a connection's new inbound secret with the previous one and its expiry."""
    _update(db, "connections", connection_id, values)


def delete_connection(db: Database, connection_id: str) -> bool:
    """Remove a connection; whether there was one."""
    return db.execute("DELETE FROM connections WHERE id = ?", [connection_id]).rowcount == 1


def events_page(db: Database, org_id: str, shown: Row, before: int | None, limit: int) -> list[Row]:
    """One page of an organization's events, newest first, older than the event `before`
    (keyset paging: a page stays put while new events arrive), filtered by what `shown` names
    (connection_id, status, since and until: ISO bounds of received_at, live: only events
    the platform sent, key_prefix: only a backfill's). Each carries what it wrote (`written`,
    JSON, '' for nothing)."""
    where = ["c.org_id = ?"]
    params: list[Any] = [org_id]
    tests = {"connection_id": "e.connection_id = ?", "status": "e.status = ?",
             "since": "e.received_at >= ?", "until": "e.received_at < ?",
             "key_prefix": "e.event_key >= ? AND e.event_key < ?"}  # fmt: skip
    for name, test in tests.items():
        if shown.get(name):
            where.append(test)
            params.append(shown[name])
            if name == "key_prefix":
                params.append(shown[name] + chr(0x10FFFF))
    if shown.get("live"):
        where.append("e.priority = 0")
    if before is not None:
        where.append("e.id < ?")
        params.append(before)
    sql = (
        "SELECT e.* FROM events e JOIN connections c ON c.id = e.connection_id "
        f"WHERE {' AND '.join(where)} ORDER BY e.id DESC LIMIT ?"
    )
    return list(db.query(sql, [*params, limit]))


def events_per_connection(db: Database, org_id: str, since: str) -> list[Row]:
    """An organization's events received from `since` on, per connection, kind and status:
    connection_id, kind, status and `events`."""
    sql = (
        "SELECT e.connection_id, e.kind, e.status, count(*) AS events FROM events e "
        "JOIN connections c ON c.id = e.connection_id WHERE c.org_id = ? AND e.received_at >= ? "
        "GROUP BY e.connection_id, e.kind, e.status ORDER BY e.connection_id, e.kind, e.status"
    )
    return list(db.query(sql, [org_id, since]))


# --- backfills ---------------------------------------------------------------------------------


def start_backfill(db: Database, row: Row) -> Row:
    """A new backfill (connection_id, kind, since, credit_cap, started_at, updated_at)."""
    values = {**row, "state": "running"}
    columns, names = ", ".join(values), ", ".join(f":{name}" for name in values)
    sql = f"INSERT INTO backfills ({columns}) VALUES ({names}) RETURNING id"
    (new,) = db.execute(sql, values).fetchone()
    return backfill(db, int(new)) or {}


def backfill(db: Database, backfill_id: int) -> Row | None:
    """The backfill with this id, or None."""
    rows = list(db.query("SELECT * FROM backfills WHERE id = ?", [backfill_id]))
    return rows[0] if rows else None


def running_backfill(db: Database, connection_id: str, kind: str) -> Row | None:
    """A connection's backfill of `kind` still running (killed, or running now), or None."""
    sql = (
        "SELECT * FROM backfills WHERE connection_id = ? AND kind = ? AND state = 'running' "
        "ORDER BY id DESC LIMIT 1"
    )
    rows = list(db.query(sql, [connection_id, kind]))
    return rows[0] if rows else None


def running_backfills(db: Database) -> list[Row]:
    """Every running backfill, oldest first."""
    return list(db.query("SELECT * FROM backfills WHERE state = 'running' ORDER BY id"))


def queued_records(
    db: Database, connection_id: str, prefix: str, record_ids: list[str]
) -> set[str]:
    """Which of these records have an event whose key is `prefix` and the record id."""
    ids = server.dialect.json_array_values(db, "?")
    sql = (
        "SELECT record_id FROM events WHERE connection_id = ? "
        f"AND event_key IN (SELECT ? || value FROM {ids})"
    )
    rows = db.execute(sql, [connection_id, prefix, json.dumps(record_ids)])
    return {record_id for (record_id,) in rows}


def backfills_of(db: Database, connection_id: str) -> list[Row]:
    """A connection's backfills, newest first."""
    sql = "SELECT * FROM backfills WHERE connection_id = ? ORDER BY id DESC"
    return list(db.query(sql, [connection_id]))


def update_backfill(db: Database, backfill_id: int, values: Row) -> None:
    """Change a backfill's cursor, counts, state or note."""
    _update(db, "backfills", backfill_id, values)


def cached_records(db: Database, connection_id: str, kind: str, record_ids: list[str]) -> list[Row]:
    """The transaction cache entries (record_id, contact_guid, enriched_at) of these records."""
    ids = server.dialect.json_array_values(db, "?")
    sql = (
        "SELECT record_id, contact_guid, enriched_at FROM records WHERE connection_id = ? "
        f"AND kind = ? AND record_id IN (SELECT value FROM {ids})"
    )
    return list(db.query(sql, [connection_id, kind, json.dumps(record_ids)]))


def pending_events(db: Database, connection_id: str) -> int:
    """How many events of a connection are still pending (each may yet cost a credit)."""
    sql = "SELECT count(*) FROM events WHERE status = 'pending' AND connection_id = ?"
    return int(db.execute(sql, [connection_id]).fetchone()[0])


def backfill_progress(db: Database, connection_id: str, prefix: str) -> Row:
    """A backfill's events (their keys start with `prefix`) by status (pending, done, dead),
    and `matched`: those done whose record matched (each cost at most a credit)."""
    sql = (
        "SELECT count(*) FILTER (WHERE e.status = 'pending') AS pending, "
        "count(*) FILTER (WHERE e.status = 'done') AS done, "
        "count(*) FILTER (WHERE e.status = 'dead') AS dead, "
        "count(*) FILTER (WHERE e.status = 'done' AND (r.contact_guid != '' "
        "OR r.company_guid != '')) AS matched "
        "FROM events e LEFT JOIN records r ON r.connection_id = e.connection_id "
        "AND r.kind = e.kind AND r.record_id = e.record_id "
        "WHERE e.connection_id = :c AND e.event_key >= :p AND e.event_key < :end"
    )
    params = {"c": connection_id, "p": prefix, "end": prefix + chr(0x10FFFF)}
    return dict(next(iter(db.query(sql, params))))


# --- previews ----------------------------------------------------------------------------------


def save_preview(db: Database, row: Row) -> None:
    """A new preview."""
    db.table("previews").insert(row)


def preview(db: Database, preview_id: str) -> Row | None:
    """The preview with this id, or None."""
    rows = list(db.query("SELECT * FROM previews WHERE id = ?", [preview_id]))
    return rows[0] if rows else None


def claim_preview(db: Database, preview_id: str, now: str, not_before: str) -> bool:
    """Mark a preview applied at `now` unless it was already or was made before `not_before`;
    whether this call claimed it (exactly one of racing calls does)."""
    sql = (
        "UPDATE previews SET applied_at = ? WHERE id = ? AND applied_at IS NULL AND created_at >= ?"
    )
    return db.execute(sql, [now, preview_id, not_before]).rowcount == 1


def release_preview(db: Database, preview_id: str, outcome: str) -> None:
    """A claimed preview whose write failed: it may be applied again; `outcome` says why."""
    sql = "UPDATE previews SET applied_at = NULL, outcome = ? WHERE id = ?"
    db.execute(sql, [outcome, preview_id])


def preview_applied(db: Database, preview_id: str, outcome: str) -> None:
    """What a claimed preview's write did."""
    db.execute("UPDATE previews SET outcome = ? WHERE id = ?", [outcome, preview_id])


# --- mapping versions ------------------------------------------------------------------------


def add_mapping_version(
    db: Database, connection_id: str, kind: str, text: str, at: str, by: str
) -> int:
    """Save `text` as the next version of a connection's mapping of `kind`; its number. The
    connection's row is locked first: two saves at once number theirs one after the other."""
    lock_connection(db, connection_id)
    sql = (
        "INSERT INTO mapping_versions (connection_id, kind, version, yaml, created_at, "
        "created_by) SELECT ?, ?, coalesce(max(version), 0) + 1, ?, ?, ? "
        "FROM mapping_versions WHERE connection_id = ? AND kind = ? RETURNING version"
    )
    rows = db.execute(sql, [connection_id, kind, text, at, by, connection_id, kind]).fetchall()
    return int(rows[0][0])


def mapping_version_number(db: Database, connection_id: str, kind: str) -> int:
    """The current (highest) version of a connection's mapping of `kind`; 0 when none."""
    sql = "SELECT max(version) FROM mapping_versions WHERE connection_id = ? AND kind = ?"
    return int(db.execute(sql, [connection_id, kind]).fetchone()[0] or 0)


def mapping_in_use(db: Database, link: Row, default_file: str, kind: str) -> mappings.Mapping:
    """The mapping a connection uses for `kind`: its current saved version (parsed once per
    version), else its file (`mappings.load_for`, `default_file` its platform's for `kind`)."""
    version = mapping_version_number(db, link["id"], kind)
    if not version:
        return mappings.load_for(link["mapping"], default_file, kind)

    def read() -> str:
        row = mapping_version(db, link["id"], kind, version)
        return str(row["yaml"]) if row else ""

    source = f"{link['name']} {kind} mapping version {version}"
    return mappings.load_saved((link["id"], kind, version), read, source)


def mapping_version(db: Database, connection_id: str, kind: str, version: int) -> Row | None:
    sql = "SELECT * FROM mapping_versions WHERE connection_id = ? AND kind = ? AND version = ?"
    rows = list(db.query(sql, [connection_id, kind, version]))
    return rows[0] if rows else None


def mapping_versions(db: Database, connection_id: str, kind: str) -> list[Row]:
    """A connection's versions of its mapping of `kind`, newest first, without their YAML."""
    sql = (
        "SELECT version, created_at, created_by FROM mapping_versions "
        "WHERE connection_id = ? AND kind = ? ORDER BY version DESC"
    )
    return list(db.query(sql, [connection_id, kind]))


# --- health ------------------------------------------------------------------------------------

# Events that no platform sent: the worker's own, and backfills' and refreshes' queued ones.
_NOT_RECEIVED = ("backfill:", "refresh:", "company-of:")


def event_health(db: Database, connection_id: str, since: str) -> Row:
    """A connection's events: `done` and `dead` last due at `since` or later, `retrying` now
    (pending after a failed attempt), `dead_total` (every dead letter kept) and
    `last_received` (when the latest event a platform or the page sent came in; None)."""
    counts = (
        "SELECT (SELECT count(*) FROM events WHERE connection_id = :c AND status = 'done' "
        "AND due_at >= :s) AS done, (SELECT count(*) FROM events WHERE connection_id = :c "
        "AND status = 'pending' AND attempts > 0) AS retrying, (SELECT count(*) FROM events "
        "WHERE connection_id = :c AND status = 'dead' AND due_at >= :s) AS dead, "
        "(SELECT count(*) FROM events WHERE connection_id = :c AND status = 'dead') AS dead_total"
    )
    row = dict(next(iter(db.query(counts, {"c": connection_id, "s": since}))))
    colon = server.dialect.position(db, "event_key", "':'")
    skipped = server.dialect.json_array_values(db, "?")
    received = (
        f"SELECT received_at FROM events WHERE connection_id = ? AND substr(event_key, 1, "
        f"{colon}) NOT IN (SELECT value FROM {skipped}) ORDER BY id DESC LIMIT 1"
    )
    found = db.execute(received, [connection_id, json.dumps(_NOT_RECEIVED)]).fetchone()
    return {**row, "last_received": found[0] if found else None}


def last_write(db: Database, connection_id: str) -> str | None:
    """When the latest record of a connection holding values we wrote was enriched; None."""
    sql = "SELECT max(enriched_at) FROM records WHERE connection_id = ? AND written != '{}'"
    return db.execute(sql, [connection_id]).fetchone()[0]


def retry_dead_events(db: Database, connection_id: str, now: str) -> int:
    """Make every dead event of a connection pending again, due now; how many."""
    sql = (
        "UPDATE events SET status = 'pending', due_at = ?, last_error = '' "
        "WHERE connection_id = ? AND status = 'dead'"
    )
    return db.execute(sql, [now, connection_id]).rowcount


def event_counts(db: Database) -> dict[str, int]:
    """How many events there are of each status (pending, done, dead), all connections'."""
    counts = dict.fromkeys(("pending", "done", "dead"), 0)
    for status, count in db.execute("SELECT status, count(*) FROM events GROUP BY status"):
        counts[status] = count
    return counts


def latest_enrichment(db: Database, connection_id: str, kind: str) -> tuple[list[Row], Row]:
    """A connection's last enrichment of `kind`, for the mapping editor's examples: the rows of
    its newest preview ([] when none) and what its newest written record holds ({} when none)."""
    shown = db.execute(
        "SELECT rows FROM previews WHERE connection_id = ? AND kind = ? "
        "ORDER BY created_at DESC LIMIT 1",
        [connection_id, kind],
    ).fetchone()
    held = db.execute(
        "SELECT written FROM records WHERE connection_id = ? AND kind = ? AND written != '{}' "
        "ORDER BY enriched_at DESC LIMIT 1",
        [connection_id, kind],
    ).fetchone()
    return (json.loads(shown[0]) if shown else []), (json.loads(held[0]) if held else {})


def set_signal_settings(
    db: Database, connection_id: str, actions: str, change_credit_cap: int | None
) -> None:
    """Store a connection's job-change actions (JSON) and change credit cap."""
    db.execute(
        "UPDATE connections SET signal_actions = ?, change_credit_cap = ? WHERE id = ?",
        [actions, change_credit_cap, connection_id],
    )


# --- signals (settings page) -----------------------------------------------------------------

_SIGNAL_TESTS = {
    "connection_id": "s.connection_id = ?",
    "signal": "s.signal = ?",
    "state": "s.state = ?",
    "since": "s.created_at >= ?",
    "until": "s.created_at < ?",
    "before": "s.id < ?",
}


def _signals_where(org_id: str | None, shown: Row) -> tuple[str, list[Any]]:
    """The WHERE clause ("" for none) and its values picking an organization's signals (every
    one's with `org_id` None) that `shown` names: connection_id, signal, state, since and until
    (ISO bounds of when the signal was seen, created_at) and before (ids below it)."""
    where: list[str] = []
    params: list[Any] = []
    if org_id is not None:
        where.append("c.org_id = ?")
        params.append(org_id)
    for name, test in _SIGNAL_TESTS.items():
        if shown.get(name):
            where.append(test)
            params.append(shown[name])
    return (f"WHERE {' AND '.join(where)} " if where else ""), params


def signals_page(
    db: Database, org_id: str | None, shown: Row, before: int | None, limit: int
) -> list[Row]:
    """One page of an organization's job-change signals, newest first, older than the signal
    `before` (keyset paging), filtered as `_signals_where` reads `shown`; each row with its
    connection's name and platform (`connection_name`, `platform`)."""
    where, params = _signals_where(org_id, {**shown, "before": before})
    sql = (
        "SELECT s.*, c.name AS connection_name, c.platform AS platform, c.org_id AS org_id "
        f"FROM signals s JOIN connections c ON c.id = s.connection_id {where}"
        "ORDER BY s.id DESC LIMIT ?"
    )
    return list(db.query(sql, [*params, limit]))


def signal_counts(db: Database, org_id: str, shown: Row) -> list[Row]:
    """How many of an organization's signals `shown` picks (as `signals_page`, every page),
    per connection, signal and state: connection_id, signal, state and `signals`."""
    where, params = _signals_where(org_id, shown)
    sql = (
        "SELECT s.connection_id, s.signal, s.state, count(*) AS signals "
        f"FROM signals s JOIN connections c ON c.id = s.connection_id {where}"
        "GROUP BY s.connection_id, s.signal, s.state ORDER BY s.connection_id, s.signal, s.state"
    )
    return list(db.query(sql, params))


# --- changes and signals


def records_of(db: Database, connection_id: str, column: str, guids: list[str]) -> list[Row]:
    """The transaction cache entries of a connection whose `column` (contact_guid or
    company_guid) is one of `guids`, in kind and record order."""
    if column not in ("contact_guid", "company_guid"):
        raise ValueError(f"not a GUID column: {column}")
    ids = server.dialect.json_array_values(db, "?")
    sql = (
        f"SELECT * FROM records WHERE connection_id = ? AND {column} != '' "
        f"AND {column} IN (SELECT value FROM {ids}) ORDER BY kind, record_id"
    )
    return list(db.query(sql, [connection_id, json.dumps(sorted(set(guids)))]))


def set_changes_seen(db: Database, connection_id: str, change_id: int) -> None:
    """Note the last change a connection acted on (never moving back)."""
    db.execute(
        "UPDATE connections SET changes_seen = ? WHERE id = ? AND changes_seen < ?",
        [change_id, connection_id, change_id],
    )


SIGNAL_COLUMNS = (
    "connection_id, kind, record_id, contact_guid, change_id, signal, person, old_company, "
    "new_company, new_company_guid, new_title, changed_on, created_at"
)


def add_signals(db: Database, rows: list[Row]) -> int:
    """Store signals not stored yet (by connection, kind, record and change); how many."""
    names = [name.strip() for name in SIGNAL_COLUMNS.split(",")]
    cursor = db.conn.executemany(
        f"INSERT INTO signals ({SIGNAL_COLUMNS}) "
        f"VALUES ({', '.join(':' + name for name in names)}) ON CONFLICT DO NOTHING",
        [{name: row.get(name, "") for name in names} for row in rows],
    )
    return max(cursor.rowcount, 0)


def pending_signals(db: Database, connection_id: str, limit: int) -> list[Row]:
    """A connection's signals not acted on yet, oldest first."""
    sql = "SELECT * FROM signals WHERE connection_id = ? AND state = 'pending' ORDER BY id LIMIT ?"
    return list(db.query(sql, [connection_id, limit]))


def signals_of(db: Database, connection_id: str) -> list[Row]:
    """A connection's signals, oldest first."""
    return list(
        db.query("SELECT * FROM signals WHERE connection_id = ? ORDER BY id", [connection_id])
    )


def finish_signal(db: Database, signal_id: int, state: str, written: Row, error: str) -> None:
    """Record what was written for a signal (JSON `written`), its state and any error."""
    db.execute(
        "UPDATE signals SET state = ?, written = ?, error = ? WHERE id = ?",
        [state, json.dumps(written), error, signal_id],
    )
