"""The contact-data service: store, dataset, matching, enrich, discover and administration.

The names below are what the connector (connector/) may use of it, in-process, and all it
may use: tests/test_exported_members.py holds the connector to this list. Each is imported
from its module when first used (PEP 562), so importing `server`, or a module of it outside
server/http/, loads neither Flask nor the rest of the service.
"""

from __future__ import annotations

import importlib
from typing import Any

# The exported names and where each lives: "module:attribute", or a module of the package itself.
_HOMES = {
    "DB_ERRORS": "server.storage.db:DB_ERRORS",
    "DB_OPTION": "server.cli:DB_OPTION",
    "Eraser": "server.privacy:Eraser",
    "Erasure": "server.privacy:Erasure",
    "ERROR_DESCRIPTIONS": "server.http.openapi:ERROR_DESCRIPTIONS",
    "add_operations": "server.http.openapi:add_operations",
    "FREE_REFRESH_TIERS": "server.enrich:FREE_REFRESH_TIERS",
    "JOIN": "server.records:JOIN",
    "Migrations": "server.storage.schema:Migrations",
    "MoveSchema": "server.storage.move:Schema",
    "NEWER_NAMES": "server.enrich:NEWER_NAMES",
    "OLDER_NAMES": "server.enrich:OLDER_NAMES",
    "OUTPUT_FIELDS": "server.enrich:OUTPUT_FIELDS",
    "OUTPUT_VALUES": "server.enrich:OUTPUT_VALUES",
    "SETTING_DEFAULTS": "server.config:DEFAULTS",
    "Caller": "server.auth:Caller",
    "InvalidParameter": "server.errors:InvalidParameter",
    "IdempotencyKeyReused": "server.errors:IdempotencyKeyReused",
    "RequestInProgress": "server.errors:RequestInProgress",
    "RateLimitExceeded": "server.errors:RateLimitExceeded",
    "IDEMPOTENCY_ERRORS": "server.http.openapi:IDEMPOTENCY_ERRORS",
    "IDEMPOTENCY_KEY_PARAMETER": "server.http.openapi:IDEMPOTENCY_KEY",
    "idempotency_key": "server.http.enrich_api:idempotency_key",
    "NotFound": "server.errors:NotFound",
    "Operation": "server.http.openapi:Operation",
    "Outcome": "server.enrich:Outcome",
    "Schema": "server.http.openapi:Schema",
    "ServiceError": "server.errors:ServiceError",
    "UnreadableJson": "server.wire:UnreadableJson",
    "admin": "server.admin",
    "apply_migrations": "server.storage.db:apply_migrations",
    "audit": "server.audit",
    "auth": "server.auth",
    "authenticate": "server.auth:authenticate",
    "changes": "server.changes",
    "cli_main": "server.cli:main",
    "connect": "server.storage.db:connect",
    "contact_names": "server.storage.store:contact_names",
    "create_app": "server.http.app:create_app",
    "credits": "server.credits",
    "decode_json": "server.wire:decode_json",
    "dialect": "server.storage.dialect",
    "enrich_with_key": "server.enrich:enrich_with_key",
    "enrich_each_with_key": "server.enrich:enrich_each_with_key",
    "EnrichFailure": "server.enrich:Failure",
    "forget_matched_contacts": "server.storage.store:forget_matched_contacts",
    "forget_idempotency_keys": "server.storage.store:forget_idempotency_keys",
    "get_db": "server.http.access:get_db",
    "iso": "server.clock:iso",
    "is_database_url": "server.config:is_url",
    "is_postgres": "server.storage.dialect:is_postgres",
    "key_secret": "server.config:key_secret",
    "limits": "server.limits",
    "metrics": "server.metrics",
    "add_metrics_collector": "server.http.metrics_api:add_collector",
    "configure_logging": "server.logs:configure",
    "load_settings": "server.config:load",
    "named_in_input": "server.enrich:named_in_input",
    "named_in_result": "server.enrich:named_in_result",
    "now": "server.http.access:now",
    "organization": "server.accounts:organization",
    "organizations": "server.accounts:list_organizations",
    "privacy": "server.privacy",
    "parse_input": "server.enrich:parse_input",
    "registrable_domain": "server.normalize:registrable_domain",
    "sample_employment": "server.storage.store:sample_employment",
    "suppressed": "server.storage.store:suppressed",
    "suppression": "server.suppression",
    "suppression_hashes": "server.storage.store:suppression_hashes",
    "usage": "server.usage",
    "utcnow": "server.clock:utcnow",
    "through_pooler": "server.storage.pg:through_pooler",
    "write": "server.storage.db:write",
}
__all__ = list(_HOMES)


def __getattr__(name: str) -> Any:
    """The exported `name`, imported from its home the first time it is asked for."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'server' has no attribute {name!r}")
    module_name, _, attribute = home.partition(":")
    module = importlib.import_module(module_name)
    value = getattr(module, attribute) if attribute else module
    globals()[name] = value  # asked for once: later lookups find it without this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
