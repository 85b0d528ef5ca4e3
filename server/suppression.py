"""The privacy use cases: suppress or erase people, import a list of opt-outs, check the list,
and report what the service holds about a person (server/privacy.py is their pure part). An
erasure also takes the deleted rows' old copies off the disk where it can."""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from server import audit, changes, privacy
from server.clock import iso
from server.enrich import DELIVERED
from server.errors import InvalidParameter
from server.privacy import Eraser, Erasure, Hasher, Identifier
from server.storage import db, pg, store

COLUMNS = ("email", "profile_url", "name", "company_domain", "reason")
ORG_ID = ""  # the audit log's organization of privacy actions: they concern no organization
# What an erasure did on disk, as `act` counts it: the frames the WAL still holds (0: it was
# truncated), the tables vacuumed and those an autovacuum kept busy (docs/admins/privacy.md).
WAL_KEPT, VACUUMED, BUSY = "WAL frames kept", "tables vacuumed", "tables busy"
# How long an erasure's checkpoint waits for other connections reading the WAL to finish.
CHECKPOINT_PATIENCE_MS = 2_000


@dataclass(frozen=True)
class Person:
    """One person to put on the list: their identifiers and the reason."""

    identifiers: tuple[Identifier, ...]
    reason: str = ""


@dataclass(frozen=True)
class BadRow:
    """A row of an opt-out file that names no one, and why."""

    line: int
    reason: str


def person(
    *, email: str = "", profile_url: str = "", name: str = "", company_domain: str = "",
    reason: str = "",
) -> Person:  # fmt: skip
    """The person an operator named (privacy.identifiers says what is valid)."""
    found = privacy.identifiers(
        email_address=email, profile_address=profile_url, name=name, company_domain=company_domain
    )
    return Person(tuple(found), privacy.reason_text(reason))


def screen(database: Database, secret: Callable[[], bytes]) -> privacy.Screen | None:
    """The suppression list for an import to check its rows against; None when it is empty
    (then the server secret, `secret()`, is not needed)."""
    listed = store.suppression_hashes(database)
    return privacy.Screen(privacy.hasher(secret()), frozenset(listed)) if listed else None


def act(
    database: Database,
    hash_of: Hasher,
    now: datetime,
    people: Sequence[Person],
    action: str,
    erasers: Iterable[Eraser] = (),
    *,
    by: tuple[str, str] = (ORG_ID, audit.OPERATOR),
) -> dict[str, int]:
    """Put these people on the list (action "suppress" or "erase") and delete their contacts,
    employments and recorded changes; an erasure also clears their transactions' contact and
    runs each eraser. One write transaction, audited under `by` (organization id and actor:
    the operator's unless an organization's admin asked); what was done, by name. After an
    erasure's commit, the old copies of the rows it changed are taken off the disk
    (`_off_disk`)."""
    rows = _list_rows(hash_of, now, people, action, by[1])
    changed: list[str] = []
    with db.write(database):
        store.lock_dataset(database)  # not beside an import's batch: one before is found whole
        guids = sorted(contact_guids(database, [i for p in people for i in p.identifiers]))
        done = {"people": len(people), "hashes": len(rows)}
        done["listed"] = store.add_suppressions(database, rows)
        done.update(store.delete_contacts(database, guids))
        done["recorded changes"] = changes.forget(database, guids)
        if action == "erase":
            done.update(_erase(database, people, rows, guids, erasers))
            changed = _changed_tables(database)
        kinds = Counter(row["kind"] for row in rows)
        audit.record(database, now, org_id=by[0], actor=by[1],
                     action=f"privacy.{action}", detail={"kinds": dict(kinds), **done})  # fmt: skip
    if action == "erase":
        done.update(_off_disk(database, changed))
    return done


def _off_disk(database: Database, changed: Sequence[str]) -> dict[str, int]:
    """After an erasure's commit, the old copies of the rows it deleted or changed taken off
    the disk. SQLite zeroes deleted rows in the pages it writes (secure_delete,
    server/storage/db.py), but the pages holding them still sit in the database file until the
    WAL is checkpointed, and in the WAL until it is truncated: both are done here. On
    PostgreSQL the old rows stay in the tables' files as dead tuples: the `changed` tables
    are vacuumed."""
    if db.is_postgres(database):
        busy = pg.vacuum(database, changed)  # type: ignore[arg-type]
        return {VACUUMED: len(changed) - len(busy), **({BUSY: len(busy)} if busy else {})}
    return {WAL_KEPT: _truncate_wal(database)}


def _changed_tables(database: Database) -> list[str]:
    """The tables the open transaction changed, which `_off_disk` vacuums (on PostgreSQL)."""
    if not db.is_postgres(database):
        return []
    return pg.changed_tables(database)  # type: ignore[arg-type]


def _truncate_wal(database: Database) -> int:
    """Checkpoint the WAL into the database file and truncate it, waiting for connections
    reading it (SQLite's busy handler tries again for CHECKPOINT_PATIENCE_MS); how many frames
    it still holds (0 once truncated; else a reader was too slow and it is left whole)."""
    with db.patience(database, CHECKPOINT_PATIENCE_MS):
        busy, frames, _ = database.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    return max(frames, 0) if busy else 0


def _list_rows(
    hash_of: Hasher, now: datetime, people: Sequence[Person], action: str, actor: str
) -> list[dict[str, str]]:
    """The suppression list's rows of these people, one per hash (the first reason given),
    naming who put them there."""
    rows: dict[str, dict[str, str]] = {}
    for one in people:
        for identifier in one.identifiers:
            rows.setdefault(
                hash_of(identifier),
                {"hash": hash_of(identifier), "kind": identifier.kind, "action": action,
                 "reason": one.reason, "actor": actor, "created_at": iso(now)},
            )  # fmt: skip
    return list(rows.values())


def _erase(
    database: Database,
    people: Sequence[Person],
    rows: Sequence[dict[str, str]],
    guids: Sequence[str],
    erasers: Iterable[Eraser],
) -> dict[str, int]:
    """Every other stored copy of these people's data deleted: what each eraser deleted."""
    done = {
        "transactions": store.clear_transaction_contacts(database, guids),
        "kept enrich answers": store.forget_answers_naming(database, guids),
    }
    identifiers = tuple(i for p in people for i in p.identifiers)
    erasure = Erasure(identifiers, tuple(row["hash"] for row in rows), tuple(guids))
    for eraser in erasers:
        for name, count in eraser(database, erasure).items():
            done[name] = done.get(name, 0) + count
    return done


def contact_guids(database: Database, identifiers: Sequence[Identifier]) -> set[str]:
    """The GUIDs of the contacts these identifiers name: by e-mail, by profile URL, and by
    first and last name at a company of the domain."""
    values: dict[str, list[str]] = {kind: [] for kind in privacy.KINDS}
    for identifier in identifiers:
        values[identifier.kind].append(identifier.value)
    found = store.contact_guids_by_emails(database, values["email"])
    found |= store.contact_guids_by_profile_urls(database, values["profile_url"])
    return found | _named_at_domains(database, values["name_domain"])


def _named_at_domains(database: Database, values: Sequence[str]) -> set[str]:
    """The contacts named "first last@domain" (privacy.name_keys_at's form)."""
    wanted = set()
    for value in values:
        keys, _, domain = value.rpartition("@")
        first, _, last = keys.partition(" ")
        wanted.add((domain, first, last))
    rows = store.names_at_domains(database, sorted({(d, last) for d, _, last in wanted}))
    return {
        row["contact_guid"]
        for row in rows
        if (row["domain"], row["first_key"], row["last_key"]) in wanted
    }


def read_people(path: Path, default_reason: str = "") -> tuple[list[Person], list[BadRow]]:
    """The people of an opt-out CSV (a header naming some of COLUMNS), and its bad rows with
    their line numbers; an unknown column is an error naming it."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        unknown = [c for c in reader.fieldnames or [] if c.strip() not in COLUMNS]
        if unknown or not reader.fieldnames:
            raise InvalidParameter(_columns_error(unknown))
        people, bad = [], []
        line = reader.line_num + 1
        for row in reader:
            try:
                people.append(_row_person(row, default_reason))
            except InvalidParameter as error:
                bad.append(BadRow(line, error.message))
            line = reader.line_num + 1
    return people, bad


def _columns_error(unknown: Sequence[str]) -> str:
    known = ", ".join(COLUMNS)
    if not unknown:
        return f"The file has no header: name some of the columns {known}."
    return f"Unknown columns {', '.join(repr(c) for c in unknown)}: the columns are {known}."


def _row_person(row: dict[str | Any, str | Any], default_reason: str) -> Person:
    values = {str(k).strip(): (v or "").strip() for k, v in row.items() if k is not None}
    if None in row:
        raise InvalidParameter("The row has more fields than the header.")
    values["reason"] = values.get("reason") or default_reason
    return person(**values)


def check(
    database: Database, hash_of: Hasher, identifiers: Sequence[Identifier]
) -> list[tuple[Identifier, dict[str, Any] | None]]:
    """Each identifier with its row of the suppression list (None when it is not listed)."""
    listed = {
        row["hash"]: row for row in store.suppressed(database, [hash_of(i) for i in identifiers])
    }
    return [(i, listed.get(hash_of(i))) for i in identifiers]


def report(database: Database, hash_of: Hasher, now: datetime, email: Identifier) -> dict[str, Any]:
    """Everything the service holds about the person at this e-mail address: their contacts
    with their employments, the organizations their data was delivered to and when, and their
    row of the suppression list (null when there is none). The access is audited."""
    with db.write(database):
        guids = sorted(contact_guids(database, [email]))
        contacts = [
            {**contact, "employments": store.employments_of(database, contact["guid"])}
            for contact in store.contacts_by_guids(database, guids)
        ]
        deliveries = store.deliveries_of(database, guids, DELIVERED)
        listed = next(iter(store.suppressed(database, [hash_of(email)])), None)
        detail = {"contacts": len(contacts), "deliveries": len(deliveries)}
        audit.record(database, now, org_id=ORG_ID, actor=audit.OPERATOR,
                     action="privacy.report", detail={"kinds": {"email": 1}, **detail})  # fmt: skip
    return {
        "email": email.value,
        "suppressed": listed,
        "contacts": contacts,
        "deliveries": deliveries,
    }
