"""The service's HTTP routes. Handlers parse, call one use case and return a dict."""

from __future__ import annotations

from flask import Blueprint, current_app
from sqlite_utils import Database

from server import db, store

blueprint = Blueprint("api", __name__)


def get_db() -> Database:
    """The database of the running app, for this thread."""
    return db.database(current_app.config["DB"])


@blueprint.get("/healthz")
def healthz() -> dict[str, object]:
    """Liveness and readiness: the database answers."""
    return {"status": "ok", "organizations": store.counts(get_db())["organizations"]}
