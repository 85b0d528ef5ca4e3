"""The contact-data service: store, dataset, matching, enrich, discover and administration.

The names below are what the connector (connector/) may use of it, in-process, and all it
may use: tests/test_exported_members.py holds the connector to this list.
"""

from server import admin, auth, limits, usage
from server.access import get_db, now
from server.accounts import organization
from server.app import create_app
from server.auth import Caller, authenticate
from server.cli import DB_OPTION
from server.cli import main as cli_main
from server.clock import iso, utcnow
from server.config import DEFAULTS as SETTING_DEFAULTS
from server.config import key_secret
from server.config import load as load_settings
from server.db import connect, write
from server.enrich import (
    FREE_REFRESH_TIERS,
    NEWER_NAMES,
    OLDER_NAMES,
    OUTPUT_FIELDS,
    Outcome,
    enrich_with_key,
)
from server.errors import InvalidParameter, NotFound, ServiceError
from server.normalize import registrable_domain
from server.openapi import ERROR_DESCRIPTIONS, Operation, Schema, add_operations
from server.records import JOIN
from server.wire import UnreadableJson, decode_json

__all__ = [
    "DB_OPTION",
    "ERROR_DESCRIPTIONS",
    "FREE_REFRESH_TIERS",
    "JOIN",
    "NEWER_NAMES",
    "OLDER_NAMES",
    "OUTPUT_FIELDS",
    "SETTING_DEFAULTS",
    "Caller",
    "InvalidParameter",
    "NotFound",
    "Operation",
    "Outcome",
    "Schema",
    "ServiceError",
    "UnreadableJson",
    "add_operations",
    "admin",
    "auth",
    "authenticate",
    "cli_main",
    "connect",
    "create_app",
    "decode_json",
    "enrich_with_key",
    "get_db",
    "iso",
    "key_secret",
    "limits",
    "load_settings",
    "now",
    "organization",
    "registrable_domain",
    "usage",
    "utcnow",
    "write",
]
