"""Secrets at rest: values the connector must use again (an inbound HMAC secret, an
organization key, a CRM token) are sealed with Fernet (AES-128-CBC + HMAC-SHA-256) under a
key derived from the server secret, so a copy of the database alone reveals none of them."""

from __future__ import annotations

import base64
import hashlib
import hmac

from cryptography.fernet import Fernet, InvalidToken

_PURPOSE = b"contactdata connector secrets v1"


class UnsealError(ValueError):
    """A sealed value that this server secret cannot open (another secret, or tampered)."""


def _fernet(server_secret: bytes) -> Fernet:
    key = hmac.new(server_secret, _PURPOSE, hashlib.sha256).digest()
    return Fernet(base64.urlsafe_b64encode(key))


def seal(server_secret: bytes, value: str) -> str:
    """`value` encrypted and authenticated, as text for a database column."""
    return _fernet(server_secret).encrypt(value.encode()).decode()


def unseal(server_secret: bytes, sealed: str) -> str:
    """The value `seal` sealed; raises UnsealError when it cannot be opened."""
    try:
        return _fernet(server_secret).decrypt(sealed.encode()).decode()
    except InvalidToken:
        raise UnsealError("a sealed secret cannot be opened with this server secret") from None


def hint(value: str) -> str:
    """What may be shown of a secret: its last four characters."""
    return f"…{value[-4:]}" if len(value) > 8 else "…"
