"""The contact-data service: store, dataset, matching, enrich, discover and administration.

The names below are what the connector (connector/) uses of it, in-process.
"""

from server.access import get_db, now
from server.auth import Caller, authenticate
from server.clock import iso
from server.config import key_secret
from server.db import connect, write
from server.errors import ServiceError

__all__ = [
    "Caller",
    "ServiceError",
    "authenticate",
    "connect",
    "get_db",
    "iso",
    "key_secret",
    "now",
    "write",
]
