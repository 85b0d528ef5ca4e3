"""The server package's public face: every name of `server.__all__` is there and means what it
meant, and importing the package, or any module outside server/http/, loads no web framework."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import pytest

import server
import server.http.access
import server.http.app
import server.http.metrics_api
import server.http.openapi
from server import (
    accounts,
    admin,
    audit,
    auth,
    changes,
    cli,
    clock,
    config,
    credits,
    enrich,
    errors,
    limits,
    logs,
    metrics,
    normalize,
    privacy,
    records,
    suppression,
    usage,
    wire,
)
from server.storage import db, dialect, move, pg, schema, store

# Each exported name and the object it stands for, in the module that defines it.
MEANINGS = {
    "DB_OPTION": cli.DB_OPTION,
    "DB_ERRORS": db.DB_ERRORS,
    "Eraser": privacy.Eraser,
    "Erasure": privacy.Erasure,
    "apply_migrations": db.apply_migrations,
    "is_database_url": config.is_url,
    "through_pooler": pg.through_pooler,
    "is_postgres": db.is_postgres,
    "ERROR_DESCRIPTIONS": server.http.openapi.ERROR_DESCRIPTIONS,
    "add_operations": server.http.openapi.add_operations,
    "FREE_REFRESH_TIERS": enrich.FREE_REFRESH_TIERS,
    "JOIN": records.JOIN,
    "Migrations": schema.Migrations,
    "MoveSchema": move.Schema,
    "NEWER_NAMES": enrich.NEWER_NAMES,
    "OLDER_NAMES": enrich.OLDER_NAMES,
    "OUTPUT_FIELDS": enrich.OUTPUT_FIELDS,
    "OUTPUT_VALUES": enrich.OUTPUT_VALUES,
    "SETTING_DEFAULTS": config.DEFAULTS,
    "Caller": auth.Caller,
    "InvalidParameter": errors.InvalidParameter,
    "IdempotencyKeyReused": errors.IdempotencyKeyReused,
    "RequestInProgress": errors.RequestInProgress,
    "RateLimitExceeded": errors.RateLimitExceeded,
    "IDEMPOTENCY_ERRORS": server.http.openapi.IDEMPOTENCY_ERRORS,
    "IDEMPOTENCY_KEY_PARAMETER": server.http.openapi.IDEMPOTENCY_KEY,
    "idempotency_key": server.http.enrich_api.idempotency_key,
    "NotFound": errors.NotFound,
    "Operation": server.http.openapi.Operation,
    "Outcome": enrich.Outcome,
    "Schema": server.http.openapi.Schema,
    "ServiceError": errors.ServiceError,
    "UnreadableJson": wire.UnreadableJson,
    "admin": admin,
    "audit": audit,
    "changes": changes,
    "auth": auth,
    "authenticate": auth.authenticate,
    "cli_main": cli.main,
    "contact_names": store.contact_names,
    "connect": db.connect,
    "create_app": server.http.app.create_app,
    "credits": credits,
    "decode_json": wire.decode_json,
    "dialect": dialect,
    "enrich_with_key": enrich.enrich_with_key,
    "enrich_each_with_key": enrich.enrich_each_with_key,
    "EnrichFailure": enrich.Failure,
    "sample_employment": store.sample_employment,
    "named_in_input": enrich.named_in_input,
    "named_in_result": enrich.named_in_result,
    "forget_matched_contacts": store.forget_matched_contacts,
    "forget_idempotency_keys": store.forget_idempotency_keys,
    "privacy": privacy,
    "suppressed": store.suppressed,
    "suppression": suppression,
    "suppression_hashes": store.suppression_hashes,
    "parse_input": enrich.parse_input,
    "get_db": server.http.access.get_db,
    "iso": clock.iso,
    "key_secret": config.key_secret,
    "limits": limits,
    "metrics": metrics,
    "add_metrics_collector": server.http.metrics_api.add_collector,
    "configure_logging": logs.configure,
    "load_settings": config.load,
    "now": server.http.access.now,
    "organization": accounts.organization,
    "organizations": accounts.list_organizations,
    "registrable_domain": normalize.registrable_domain,
    "usage": usage,
    "utcnow": clock.utcnow,
    "write": db.write,
}
WEB = ("flask", "werkzeug", "gunicorn")


def _loaded_after(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after running `statement`."""
    probe = f"import sys\n{statement}\nprint(' '.join(sys.modules))"
    shown = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    return set(shown.stdout.split())


def _web(modules: set[str]) -> set[str]:
    return {name for name in modules if name.partition(".")[0] in WEB}


def test_every_exported_name_is_the_object_of_its_module() -> None:
    assert sorted(server.__all__) == sorted(MEANINGS)
    for name, meant in MEANINGS.items():
        assert getattr(server, name) is meant, name


def test_from_server_import_star_gives_every_exported_name() -> None:
    namespace: dict[str, object] = {}
    exec("from server import *", namespace)
    assert {name: namespace[name] for name in server.__all__} == MEANINGS


def test_dir_lists_every_exported_name() -> None:
    assert set(server.__all__) <= set(dir(server))


def test_a_name_the_package_does_not_export_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        server.no_such_name  # type: ignore[attr-defined]  # noqa: B018


def test_importing_the_package_loads_none_of_its_modules() -> None:
    loaded = _loaded_after("import server")
    assert not {name for name in loaded if name.startswith("server.")}
    assert not _web(loaded)


def test_the_connectors_pure_imports_load_no_web_framework() -> None:
    statement = "import server, server.wire, server.errors, server.matching, server.enrich"
    assert not _web(_loaded_after(statement))


def test_no_module_outside_server_http_loads_a_web_framework() -> None:
    found = pkgutil.walk_packages(server.__path__, "server.")
    pure = sorted(name for _, name, _ in found if not name.startswith("server.http"))
    assert "server.storage.store" in pure and "server.limits.sqlite" in pure
    assert not _web(_loaded_after(f"import {', '.join(pure)}"))
