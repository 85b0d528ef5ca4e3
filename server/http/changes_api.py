"""HTTP route of the change feed (`/v1/changes`): admit the caller as enrich does (its key,
its limits), read the body, answer with the use case's body. Free: no credits, no
transaction."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from server import auth, change_feed
from server.http.access import admit, get_db, key_from_headers
from server.http.body import parse

blueprint = Blueprint("changes", __name__, url_prefix="/v1")

KEY_HEADER = "apikey"  # enrich's: the key that enriched is the one that reads the changes


@blueprint.post("/changes")
def list_changes() -> dict[str, Any]:
    """The changes to the contacts and companies the caller's organization was delivered."""
    caller = admit(key_from_headers(KEY_HEADER))
    auth.require_active_organization(caller)
    request = parse(change_feed.ChangesRequest)
    return change_feed.listed(get_db(), caller.org_id, request)
