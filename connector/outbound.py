"""Where the connector may send requests, and the one client it sends them with: a CRM base
URL must be https and every address its host resolves to public, checked when a connection is
saved and before connecting; `client` (for CRMs and token endpoints) resolves each host once
when it connects, checks every address by the same rule and connects only to a checked one,
verifying TLS against the host name. A name that answers a public address to the check and a
private one afterwards (DNS rebinding) so gets no connection, only the check's reason.

`CONTACTDATA_ALLOW_PRIVATE_CRM_URLS=1` allows http and private or loopback addresses, for
tests and local fake CRMs; nothing else does.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import ssl
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import SplitResult, urlsplit

import httpcore
import httpx

ALLOW_PRIVATE = "CONTACTDATA_ALLOW_PRIVATE_CRM_URLS"
Resolver = Callable[..., list[tuple[Any, ...]]]
Connect = Callable[..., httpcore.NetworkStream]
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
# Networks Python 3.11's ipaddress calls global that no CRM is in. IPv6 forms that carry an
# IPv4 address, which may be a private one: IPv4-mapped, -translated (RFC 2765),
# -compatible, 6to4, NAT64 (both), Teredo; then site-local, documentation (RFC 9637) and
# segment routing. IPv4: IETF protocol assignments and the 6to4 relay anycast.
NOT_PUBLIC = tuple(
    ipaddress.ip_network(network)
    for network in (
        "::ffff:0:0/96", "::ffff:0:0:0/96", "::/96", "2002::/16", "64:ff9b::/96",
        "64:ff9b:1::/48", "2001::/32", "fec0::/10", "3fff::/20", "5f00::/16",
        "192.0.0.0/24", "192.88.99.0/24",
    )
)  # fmt: skip


class UnsafeUrl(ValueError):
    """A CRM URL the connector will not call; the message says why."""


def private_allowed() -> bool:
    """Whether this process may call http and private addresses (tests, local fakes)."""
    return os.environ.get(ALLOW_PRIVATE) == "1"


def check_crm_url(url: str, resolve: Resolver | None = None) -> str:
    """`url` without a trailing slash, when it is safe to call; raises UnsafeUrl otherwise."""
    parts, port = _split(url)
    allowed = ("https", "http") if private_allowed() else ("https",)
    if parts.scheme not in allowed:
        raise UnsafeUrl(f"{url!r}: a CRM URL must start with https://")
    if not parts.hostname or parts.username or parts.password:
        raise UnsafeUrl(f"{url!r}: give a host name, without user name or password")
    if parts.query or parts.fragment:
        raise UnsafeUrl(f"{url!r}: give the base URL, without a query or fragment")
    try:
        checked_addresses(parts.hostname, port or 443, resolve)
    except UnsafeUrl as error:
        raise UnsafeUrl(f"{url!r}: {error}") from None
    return url.strip().rstrip("/")


def _split(url: str) -> tuple[SplitResult, int | None]:
    """`url`'s parts and port; UnsafeUrl when urllib cannot read them (a port past 65535 or
    not a number, an unclosed IPv6 bracket)."""
    try:
        parts = urlsplit(url.strip())
        return parts, parts.port
    except ValueError as error:
        raise UnsafeUrl(f"{url!r}: not a URL ({error})") from None


def is_public(address: Address) -> bool:
    """Whether the connector may connect to `address`: a global unicast address, in none of
    the NOT_PUBLIC networks (no IPv6 form that carries an IPv4 address, for one)."""
    if any(address in network for network in NOT_PUBLIC):
        return False
    return address.is_global and not address.is_multicast


def checked_addresses(host: str, port: int, resolve: Resolver | None = None) -> list[Address]:
    """Every address `host` resolves to now (by `resolve`, else the system's resolver), when
    each may be connected to; raises UnsafeUrl naming the first that may not."""
    addresses = _addresses(host, port, resolve or socket.getaddrinfo)
    for address in addresses:
        if not (is_public(address) or private_allowed()):
            raise UnsafeUrl(f"{host} resolves to {address}, not public")
    return list(dict.fromkeys(addresses))


def _addresses(host: str, port: int, resolve: Resolver) -> list[Address]:
    try:
        found = resolve(host, port, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as error:
        raise UnsafeUrl(f"{host} cannot be resolved ({error})") from None
    addresses = [ipaddress.ip_address(info[4][0]) for info in found]
    if not addresses:
        raise UnsafeUrl(f"{host} resolves to no address")
    return addresses


class CheckedBackend(httpcore.NetworkBackend):
    """httpcore's network backend for `client`: connects to a host by the addresses it
    resolves to at that moment, once, each checked (`checked_addresses`), trying them in turn
    with `connect` (httpcore's own TCP connect unless a test gives one). A refused host gets
    no connection attempt: a ConnectError with the check's reason."""

    def __init__(self, resolve: Resolver | None = None, connect: Connect | None = None) -> None:
        self.resolve = resolve
        self.connect = connect or httpcore.SyncBackend().connect_tcp

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            addresses = checked_addresses(host, port, self.resolve)
        except UnsafeUrl as error:
            raise httpcore.ConnectError(str(error)) from None
        options = {"timeout": timeout, "local_address": local_address,
                   "socket_options": socket_options}  # fmt: skip
        for address in addresses[:-1]:
            try:
                return self.connect(str(address), port, **options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout):
                continue  # the next address, as socket.create_connection does
        return self.connect(str(addresses[-1]), port, **options)


class _CheckedTransport(httpx.HTTPTransport):
    """httpx's own transport over a connection pool that connects through `backend`. httpx
    0.28 takes no network backend (encode/httpx#3749), so the pool it built is replaced; no
    proxy, whatever the environment says."""

    def __init__(self, backend: httpcore.NetworkBackend, ssl_context: ssl.SSLContext) -> None:
        super().__init__(verify=ssl_context, trust_env=False)
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            max_connections=100,  # httpx's default limits
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=backend,
        )


def client(
    timeout: float = 10.0,
    backend: httpcore.NetworkBackend | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> httpx.Client:
    """The HTTP client for CRMs and token endpoints: connects only to checked addresses
    (`CheckedBackend`), verifies TLS against the host name, never follows redirects, and
    takes nothing from the environment (proxies, .netrc)."""
    context = ssl_context or httpx.create_ssl_context()
    return httpx.Client(
        transport=_CheckedTransport(backend or CheckedBackend(), context),
        timeout=httpx.Timeout(timeout),
        follow_redirects=False,
        trust_env=False,
    )
