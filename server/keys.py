"""API key values: format, checksum, hashing and masking (contract §3). Pure, no storage.

A key is `cdk_` + 32 base62 characters of randomness (190 bits) + a 6-character base62
CRC32 of them, so a secret scanner can match it and a mistyped key is refused before lookup.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import string
import zlib

PREFIX = "cdk_"
_ALPHABET = string.digits + string.ascii_letters
_BODY_LEN = 32
_CHECK_LEN = 6
_SHAPE = re.compile(rf"^{PREFIX}[0-9A-Za-z]{{{_BODY_LEN + _CHECK_LEN}}}$")


def _base62(number: int, width: int) -> str:
    digits = []
    for _ in range(width):
        number, digit = divmod(number, 62)
        digits.append(_ALPHABET[digit])
    return "".join(reversed(digits))


def _checksum(body: str) -> str:
    return _base62(zlib.crc32(body.encode()), _CHECK_LEN)


def new_key() -> str:
    """A fresh random key value."""
    body = "".join(secrets.choice(_ALPHABET) for _ in range(_BODY_LEN))
    return f"{PREFIX}{body}{_checksum(body)}"


def is_well_formed(value: str) -> bool:
    """Whether `value` has the key's shape and a correct checksum (no lookup needed)."""
    if not _SHAPE.match(value):
        return False
    body, check = value[len(PREFIX) : -_CHECK_LEN], value[-_CHECK_LEN:]
    return hmac.compare_digest(_checksum(body), check)


def key_hash(value: str, secret: bytes) -> str:
    """The HMAC-SHA-256 of a key value under the server secret: the only form stored."""
    return hmac.new(secret, value.encode(), hashlib.sha256).hexdigest()


def mask(value: str) -> str:
    """The key as shown after creation: prefix, dots and its last four characters."""
    return f"{PREFIX}…{value[-4:]}"
