"""Acme behind the production server, as the settings page's browser tests use it: a pro
organization and its admin key, a HubSpot connection to a CRM at `crm_url`, whatever a test
module adds to the database, and `contactdata serve` (gunicorn) on a free port."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

import server
from connector import connections, store
from server import accounts, config
from server.clock import utcnow
from tests.servers import free_port, serve, stop

NOWHERE = "http://127.0.0.1:9"  # a CRM no test reaches


@dataclass(frozen=True)
class Acme:
    """What a module's setup gets: the database, Acme's row, its admin key, the connection,
    and the server secret (what connector secrets are sealed with)."""

    db: Database
    org: dict[str, Any]
    admin_key: str
    link: dict[str, Any]
    secret: bytes


@dataclass(frozen=True)
class Served:
    url: str
    db_path: Path
    acme: Acme


@contextmanager
def acme_served(
    db_path: Path,
    crm_url: str = NOWHERE,
    prepare: Callable[[Acme], None] = lambda _acme: None,
    **organization: Any,
) -> Iterator[Served]:
    """Acme (`organization` as create_organization takes it: credits, qps) with a HubSpot
    connection to `crm_url` (not connected yet when it is ""), `prepare` run on it, served by
    gunicorn until the block ends."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
        patch.delenv("CONTACTDATA_KEY_SECRET", raising=False)
        database = store.connect(db_path)
        secret = server.key_secret(config.load({"DB": str(db_path)}))
        org, admin_key = accounts.create_organization(
            database, secret, utcnow(), name="Acme", website="acme.example.org", tier="pro",
            **organization,
        )  # fmt: skip
        link = connections.add(
            database, secret, utcnow(), name="Acme HubSpot", platform="hubspot",
            api_key=admin_key, secret="hubspot-app-secret", crm_base_url=crm_url,
            crm_token="pat-na1-token" if crm_url else "", connected=bool(crm_url),
        ).row  # fmt: skip
        acme = Acme(database, org, admin_key, link, secret)
        prepare(acme)
        database.close()
        port = free_port()
        process = serve(db_path, port)
    try:
        yield Served(f"http://127.0.0.1:{port}", db_path, acme)
    finally:
        stop(process)
