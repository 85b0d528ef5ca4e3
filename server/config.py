"""Settings: defaults, then `CONTACTDATA_*` environment variables, then explicit overrides."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MAX_BODY_BYTES = 1 << 20  # contract §1: bodies over 1 MiB answer 413

DEFAULTS: dict[str, Any] = {
    # The one database of every command and `make demo`, unless --db or CONTACTDATA_DB says.
    "DB": "var/contactdata.db",
    "KEY_SECRET": "",
    "LOG_LEVEL": "INFO",
    # "json": one JSON object per log line (time, level, logger, message, request id).
    "LOG_FORMAT": "text",
    "HOST": "127.0.0.1",
    "PORT": 8080,
    "WORKERS": 2,
    "RATE_LIMITER": "sqlite",
    # Where platforms reach this server: the base of the webhook URLs connections print.
    "PUBLIC_URL": "http://127.0.0.1:8080",
    # Credits one run of the scheduled reenrich job may spend per organization.
    "REFRESH_CREDIT_CAP": 1000,
    # Days the connector keeps stored webhook payloads of finished events (docs/admins/privacy.md).
    "RETENTION_PAYLOAD_DAYS": 30,
    # Days transaction inputs are kept: the connector's transaction cache entries and the
    # matched contact of each transaction (docs/admins/privacy.md).
    "RETENTION_TRANSACTION_DAYS": 395,
    # Where tables built from installed packages are kept ("": ~/.cache/contactdata; "off").
    "CACHE_DIR": "",
    # Proxies in front of the server that append to X-Forwarded-For; 0 believes no such header.
    "TRUSTED_PROXIES": 0,
    # GET /metrics is off unless one is set: the bearer token a scrape must send, and/or a
    # separate address ("127.0.0.1:9100") that alone serves it (docs/operators/metrics.md).
    "METRICS_TOKEN": "",
    "METRICS_BIND": "",
    # "transaction": PostgreSQL is reached through a pooler in transaction mode (PgBouncer's
    # pool_mode = transaction), which keeps no session state between transactions
    # (server/storage/pg.py).
    "PG_POOLER": "",
}
# Each setting and the environment variable that sets it, for the docs and `--help`.
ENVIRONMENT = {name: f"CONTACTDATA_{name}" for name in DEFAULTS}
# Bind addresses that listen on every interface: this machine reaches them at the loopback.
ANY_ADDRESS = ("0.0.0.0", "::")
# How a `DB` setting that names a PostgreSQL database begins (anything else is a SQLite file).
POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_url(target: object) -> bool:
    """Whether a `DB` setting names a PostgreSQL database rather than a SQLite file."""
    return isinstance(target, str) and target.startswith(POSTGRES_SCHEMES)


def load(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The effective settings: defaults < environment < overrides, with types of the defaults."""
    settings = dict(DEFAULTS)
    for name, variable in ENVIRONMENT.items():
        if variable in os.environ:
            settings[name] = type(DEFAULTS[name])(os.environ[variable])
    settings.update(overrides or {})
    return settings


def local_url(host: str, port: int) -> str:
    """Where this machine reaches a server bound to `host`:`port`."""
    shown = "127.0.0.1" if host in ANY_ADDRESS else host
    return f"http://[{shown}]:{port}" if ":" in shown else f"http://{shown}:{port}"


def load_served(overrides: Mapping[str, Any], host: str, port: int) -> dict[str, Any]:
    """The settings of a server bound to `host`:`port`: its PUBLIC_URL (the base of webhook
    URLs, installation steps and OAuth redirects) is `local_url` unless CONTACTDATA_PUBLIC_URL
    is set."""
    if ENVIRONMENT["PUBLIC_URL"] in os.environ:
        return load(overrides)
    return load({**overrides, "PUBLIC_URL": local_url(host, port)})


class MissingKeySecret(ValueError):
    """A PostgreSQL database and no CONTACTDATA_KEY_SECRET: no file beside it to keep one in."""


def key_secret(settings: Mapping[str, Any]) -> bytes:
    """The server secret API keys are hashed with.

    `CONTACTDATA_KEY_SECRET` when set; otherwise, for a SQLite database, a random secret kept
    in a file beside it (`<db>.secret`, mode 0600), created on first use, so that every
    process and every restart hashes keys the same way. A PostgreSQL database needs the
    setting: its every machine must use the same secret.
    """
    if settings.get("KEY_SECRET"):
        return str(settings["KEY_SECRET"]).encode()
    if is_url(settings["DB"]):
        raise MissingKeySecret(
            "set CONTACTDATA_KEY_SECRET (the same on every machine) to use a PostgreSQL "
            "database: API keys are hashed and connector secrets sealed with it"
        )
    path = Path(f"{settings['DB']}.secret")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_bytes().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_hex(32))
    return path.read_bytes().strip()
