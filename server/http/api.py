"""The service's HTTP routes. Handlers parse, call one use case and return a dict."""

from __future__ import annotations

from flask import Blueprint

from server.http.access import get_db
from server.storage import store

blueprint = Blueprint("api", __name__)


@blueprint.get("/healthz")
def healthz() -> dict[str, object]:
    """Liveness and readiness: the database answers (one small count, not the contact tables:
    load balancers call this every few seconds)."""
    return {"status": "ok", "organizations": store.organization_count(get_db())}
