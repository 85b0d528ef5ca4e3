"""Where the connector may send requests: a CRM base URL must be https and every address its
host resolves to public, checked when a connection is saved and again before connecting.

`CONTACTDATA_ALLOW_PRIVATE_CRM_URLS=1` allows http and private or loopback addresses, for
tests and local fake CRMs; nothing else does.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

ALLOW_PRIVATE = "CONTACTDATA_ALLOW_PRIVATE_CRM_URLS"
Resolver = Callable[..., list[tuple[Any, ...]]]


class UnsafeUrl(ValueError):
    """A CRM URL the connector will not call; the message says why."""


def private_allowed() -> bool:
    """Whether this process may call http and private addresses (tests, local fakes)."""
    return os.environ.get(ALLOW_PRIVATE) == "1"


def check_crm_url(url: str, resolve: Resolver = socket.getaddrinfo) -> str:
    """`url` without a trailing slash, when it is safe to call; raises UnsafeUrl otherwise."""
    parts = urlsplit(url.strip())
    allowed = ("https", "http") if private_allowed() else ("https",)
    if parts.scheme not in allowed:
        raise UnsafeUrl(f"{url!r}: a CRM URL must start with https://")
    if not parts.hostname or parts.username or parts.password:
        raise UnsafeUrl(f"{url!r}: give a host name, without user name or password")
    if parts.query or parts.fragment:
        raise UnsafeUrl(f"{url!r}: give the base URL, without a query or fragment")
    for address in _addresses(parts.hostname, parts.port, resolve):
        if not (address.is_global or private_allowed()):
            raise UnsafeUrl(f"{url!r}: {parts.hostname} resolves to {address}, not public")
    return url.strip().rstrip("/")


def _addresses(
    host: str, port: int | None, resolve: Resolver
) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    try:
        found = resolve(host, port or 443, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as error:
        raise UnsafeUrl(f"{host}: cannot be resolved ({error})") from None
    addresses = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in found]
    if not addresses:
        raise UnsafeUrl(f"{host}: resolves to no address")
    return addresses
