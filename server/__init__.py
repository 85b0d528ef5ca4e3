"""The contact-data service: store, dataset, matching, enrich, discover and administration.

The names below are what the connector (connector/) uses of it, in-process.
"""

from server.access import get_db, now
from server.accounts import organization
from server.auth import Caller, authenticate
from server.clock import iso
from server.config import key_secret
from server.db import connect, write
from server.enrich import FREE_REFRESH_TIERS, Outcome, enrich_with_key
from server.errors import ServiceError

__all__ = [
    "FREE_REFRESH_TIERS",
    "Caller",
    "Outcome",
    "ServiceError",
    "authenticate",
    "connect",
    "enrich_with_key",
    "get_db",
    "iso",
    "key_secret",
    "now",
    "organization",
    "write",
]
