"""`make demo`: a demo database, one organization per tier, and how to call them."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from psycopg.conninfo import conninfo_to_dict
from sqlite_utils import Database

from server import accounts, config
from server.clock import utcnow
from server.storage import db, store

DEMO_COMPANIES = 5_000
DEMO_CONTACTS = 100_000
DEMO_SEED = 1


def ensure_database(
    path: Path | str,
    companies: int = DEMO_COMPANIES,
    contacts: int = DEMO_CONTACTS,
    seed: int = DEMO_SEED,
) -> None:
    """Generate the demo dataset unless `path` already holds one (a SQLite file is built
    aside, then moved; a PostgreSQL database is filled in place, by one COPY transaction)."""
    if config.is_url(path):
        if store.counts(db.connect(path))["companies"] == 0:
            _generate(db.connect(path), path, companies, contacts, seed)
        return
    path = Path(path)
    if path.exists() and store.counts(db.connect(path))["companies"] > 0:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
        leftover.unlink(missing_ok=True)
    database = _generate(db.connect(partial), path, companies, contacts, seed)
    database.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    database.close()
    os.replace(partial, path)


def _generate(
    database: Database, shown: Path | str, companies: int, contacts: int, seed: int
) -> Database:
    from server import dataset

    print(f"building {shown}: {companies} companies, {contacts} contacts...", flush=True)
    dataset.generate(database, companies=companies, contacts=contacts, seed=seed)
    return database


def keys_file(path: Path | str) -> Path:
    """Where the demo organizations' admin keys are kept: `<db>.keys.json` beside a SQLite
    file; for a PostgreSQL database, `var/demo-<host>-<port>-<database>.keys.json`."""
    if not config.is_url(path):
        return Path(f"{path}.keys.json")
    where = conninfo_to_dict(str(path))
    name = "-".join(str(where.get(part) or "") for part in ("host", "port", "dbname"))
    return Path("var") / f"demo-{name}.keys.json"


def ensure_organizations(path: Path | str) -> list[dict[str, Any]]:
    """One demo organization per tier; their admin keys are kept in `keys_file` (0600)."""
    kept = keys_file(path)
    if kept.exists():
        return json.loads(kept.read_text())
    database = db.connect(path)
    secret = config.key_secret(config.load({"DB": str(path)}))
    created = []
    for tier in accounts.TIERS:
        org, key = accounts.create_organization(
            database,
            secret,
            utcnow(),
            name=f"Demo {tier.replace('_', ' ').title()}",
            website=f"https://{tier.replace('_', '-')}.demo.example.com",
            tier=tier,
        )
        created.append(
            {"tier": tier, "orgId": org["id"], "orgName": org["name"], "adminApiKey": key}
        )
    kept.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(kept, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(created, handle, indent=2)
    return created


def instructions(
    path: Path | str,
    orgs: list[dict[str, Any]],
    base: str,
    pages: Sequence[tuple[str, str]] = (),
) -> list[str]:
    """What to paste into a terminal to try each organization, with a real contact of `path`,
    for a server at `base`; and each of `pages` (a label, a path) to open in a browser."""
    sample = store.sample_employment(db.connect(path)) or {
        "email": "someone@example.com",
        "company_guid": "0000000000000000",
        "company_name": "Example Inc.",
    }
    lines = [f"Serving on {base}", f"  curl {base}/healthz"]
    lines += [f"  {label}: {base}{page}" for label, page in pages] + [""]
    for org in orgs:
        key = org["adminApiKey"]
        lines += [
            f"{org['orgName']} ({org['tier']}), org id {org['orgId']}",
            f"  admin key: {key}",
            _curl(base, "/signals/v1/key/view", {"Api-Key": key}, {}),
            _curl(
                base,
                "/v7/enrich",
                {"apikey": key},
                {"contactEmail": sample["email"], "companyName": sample["company_name"]},
            ),
            _curl(
                base,
                "/v1/discover",
                {"API_KEY": key},
                {"company_guid": sample["company_guid"], "mode": "Stats"},
            ),
            "",
        ]
    return lines


def _curl(base: str, path: str, headers: dict[str, str], body: dict[str, str]) -> str:
    header_args = " ".join(f"-H {shlex.quote(f'{k}: {v}')}" for k, v in headers.items())
    return (
        f"  curl -s {base}{path} -H 'Content-Type: application/json' {header_args} "
        f"-d {shlex.quote(json.dumps(body))}"
    )
