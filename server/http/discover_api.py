"""HTTP route of discover (`/v1/discover`): admit the caller under its per-minute limit, read
the body, answer with the use case's body."""

from __future__ import annotations

from typing import Any

from flask import Blueprint

from server import auth, discover
from server.http.access import admit, get_db, key_from_headers
from server.http.body import parse

blueprint = Blueprint("discover", __name__, url_prefix="/v1")

KEY_HEADER = "Api-Key"  # the vendor's API_KEY: one name to the WSGI server (see access)


@blueprint.post("/discover")
def discover_people() -> dict[str, Any]:
    """A company's people matching the filters (mode Discover), or only their counts (Stats)."""
    caller = admit(key_from_headers(KEY_HEADER), discover=True)
    auth.require_active_organization(caller)
    request = parse(discover.DiscoverRequest)
    return discover.discover(get_db(), caller.tier, request)
