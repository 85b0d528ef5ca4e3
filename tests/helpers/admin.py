"""The administration API's test helpers: an enterprise organization made in the database,
and calls to /signals/v1 with its admin key, its keys and its users."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from flask.testing import FlaskClient

from server import accounts
from server.storage import db
from tests.helpers.constants import SECRET

START = datetime(2025, 4, 10, 18, 49, 51, 123000, tzinfo=UTC)


@dataclass
class Org:
    id: str
    admin_key: str
    keys: dict[str, str] = field(default_factory=dict)  # email -> value


def make_org(db_path: Path, name: str, **limits: Any) -> Org:
    org, key = accounts.create_organization(
        db.connect(db_path),
        SECRET.encode(),
        START,
        name=name,
        website=f"https://www.{name.lower()}.example.org/",
        tier="enterprise_plus",
        qps=limits.get("qps", 1000),
        daily_limit=limits.get("daily", 100_000),
    )
    return Org(org["id"], key)


def post(client: FlaskClient, path: str, body: Any, key: str | None, header: str = "Api-Key"):
    headers = {header: key} if key else {}
    return client.post(f"/signals/v1/{path}", json=body, headers=headers)


def error_code(response: Any) -> str | None:
    body = response.get_json()
    return body["error"]["code"] if body and "error" in body else None


def new_key(client: FlaskClient, org: Org, email: str) -> str:
    r = post(client, "key/createsignalapikey", {"email": email}, org.admin_key)
    assert r.status_code == 200, r.get_json()
    org.keys[email] = r.get_json()["data"]["apiKey"]
    return org.keys[email]


def new_user(client: FlaskClient, org: Org, email: str) -> str:
    r = post(client, "user/createsignalapikey", {"email": email}, org.admin_key, "Admin-Api-Key")
    assert r.status_code == 200, r.get_json()
    org.keys[email] = r.get_json()["data"]["apiKey"][0]
    return org.keys[email]
