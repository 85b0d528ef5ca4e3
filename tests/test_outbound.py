"""CRM URLs the connector may call: https and public addresses only, unless allowed for tests;
and the client that connects only to an address it checked, verifying TLS by the host name.

No test here connects anywhere but the loopback interface: connects are recorded and refused.
"""

from __future__ import annotations

import ipaddress
import itertools
import re
import socket
import ssl
from pathlib import Path
from typing import Any

import httpcore
import httpx
import pytest

from connector import outbound
from tests import servers


def _resolving_to(*addresses: str) -> Any:
    def resolve(host: str, port: int, **_: Any) -> list[tuple[Any, ...]]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses]

    return resolve


def _switching(*addresses: str) -> Any:
    """A resolver answering each of `addresses` in turn, one per call: DNS rebinding."""
    answers = itertools.cycle(addresses)
    return lambda host, port, **options: _resolving_to(next(answers))(host, port, **options)


class Connects:
    """Stands in for the TCP connect: records each (address, port) asked for, and refuses."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, int]] = []

    def __call__(self, host: str, port: int, **_: Any) -> httpcore.NetworkStream:
        self.asked.append((host, port))
        raise httpcore.ConnectError("refused by the test")


@pytest.fixture(autouse=True)
def strict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(outbound.ALLOW_PRIVATE, raising=False)
    servers.loopback_only(monkeypatch)


def test_a_public_https_url_is_kept_without_its_trailing_slash() -> None:
    resolve = _resolving_to("104.18.0.1")
    assert outbound.check_crm_url("https://api.hubapi.com/", resolve) == "https://api.hubapi.com"


@pytest.mark.parametrize(
    ("url", "addresses", "words"),
    [
        ("http://api.hubapi.com", ("104.18.0.1",), "must start with https://"),
        ("ftp://api.hubapi.com", ("104.18.0.1",), "must start with https://"),
        ("https://crm.example", ("127.0.0.1",), "resolves to 127.0.0.1, not public"),
        ("https://crm.example", ("10.0.0.7",), "not public"),
        ("https://crm.example", ("169.254.169.254",), "not public"),  # cloud metadata
        ("https://crm.example", ("104.18.0.1", "192.168.1.1"), "not public"),  # any private one
        ("https://crm.example", ("::1",), "not public"),
        ("https://user:pw@crm.example", ("104.18.0.1",), "without user name or password"),
        ("https://crm.example/?next=x", ("104.18.0.1",), "without a query"),
        ("https://", ("104.18.0.1",), "give a host name"),
        ("https://api.hubapi.com:99999", ("104.18.0.1",), "not a URL .Port out of range"),
        ("https://api.hubapi.com:4x3", ("104.18.0.1",), "not a URL .Port could not be cast"),
        ("https://[::1", ("104.18.0.1",), r"not a URL .Invalid IPv6 URL"),
    ],
)
def test_unsafe_urls_are_refused(url: str, addresses: tuple[str, ...], words: str) -> None:
    with pytest.raises(outbound.UnsafeUrl, match=words):
        outbound.check_crm_url(url, _resolving_to(*addresses))


# IPv6 forms that carry an IPv4 address (which may be private or loopback), site-local
# addresses, and IPv4 addresses outside the public internet or not unicast.
NOT_PUBLIC = [
    "::127.0.0.1",  # IPv4-compatible
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:104.18.0.1",  # IPv4-mapped, even of a public address
    "::ffff:0:7f00:1",  # IPv4-translated (RFC 2765) of 127.0.0.1
    "::ffff:0:a9fe:a9fe",  # IPv4-translated of 169.254.169.254
    "3fff::1",  # documentation (RFC 9637)
    "5f00::1",  # segment routing (SRv6) SIDs
    "192.0.0.8",  # IETF protocol assignments
    "192.88.99.1",  # 6to4 relay anycast
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "64:ff9b:1::a9fe:a9fe",  # local-use NAT64
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo
    "fec0::1",  # site-local
    "fc00::1",  # unique local
    "fe80::1",  # link-local
    "ff02::1",  # multicast
    "100.64.0.1",  # carrier-grade NAT
    "0.0.0.0",
    "224.0.0.1",  # multicast
]


@pytest.mark.parametrize("address", NOT_PUBLIC)
def test_addresses_not_on_the_public_internet_are_refused(address: str) -> None:
    shown = re.escape(str(ipaddress.ip_address(address)))
    with pytest.raises(outbound.UnsafeUrl, match=f"resolves to {shown}, not public"):
        outbound.check_crm_url("https://crm.example", _resolving_to(address))


@pytest.mark.parametrize("address", NOT_PUBLIC)
def test_literal_addresses_are_refused_alike(address: str) -> None:
    host = f"[{address}]" if ":" in address else address
    with pytest.raises(outbound.UnsafeUrl, match="not public"):
        outbound.check_crm_url(f"https://{host}")  # a literal resolves without DNS


@pytest.mark.parametrize("address", ["104.18.0.1", "2606:4700::6812:1", "2a00:1450:4001::1"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert outbound.check_crm_url("https://crm.example", _resolving_to(address))


def test_a_host_that_does_not_resolve_is_refused() -> None:
    def fail(*_: Any, **__: Any) -> list[tuple[Any, ...]]:
        raise socket.gaierror("Name or service not known")

    with pytest.raises(outbound.UnsafeUrl, match="cannot be resolved"):
        outbound.check_crm_url("https://nowhere.example", fail)


def test_the_environment_variable_allows_http_and_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(outbound.ALLOW_PRIVATE, "1")
    url = "http://127.0.0.1:8999"
    assert outbound.check_crm_url(url, _resolving_to("127.0.0.1")) == url
    monkeypatch.setenv(outbound.ALLOW_PRIVATE, "true")  # only "1" allows
    with pytest.raises(outbound.UnsafeUrl):
        outbound.check_crm_url(url, _resolving_to("127.0.0.1"))


def test_the_client_connects_only_to_the_address_it_checked() -> None:
    """A name answering a public address, then loopback: the connect is asked for the
    public address only, and a refused address gets no connection, only the check's reason."""
    connects = Connects()
    backend = outbound.CheckedBackend(_switching("104.18.0.1", "127.0.0.1"), connects)
    reasons = []
    with outbound.client(backend=backend) as client:
        for _ in range(4):
            with pytest.raises(httpx.ConnectError) as raised:
                client.get("https://crm.example/crm/v3/objects/contacts/501")
            reasons.append(str(raised.value))
    assert connects.asked == [("104.18.0.1", 443)] * 2
    refused = "crm.example resolves to 127.0.0.1, not public"
    assert reasons == ["refused by the test", refused] * 2


def test_every_address_a_host_resolves_to_is_checked_before_any_connect() -> None:
    connects = Connects()
    backend = outbound.CheckedBackend(_resolving_to("104.18.0.1", "::ffff:10.0.0.7"), connects)
    refused = pytest.raises(httpx.ConnectError, match=r"resolves to ::ffff:a00:7, not public")
    with outbound.client(backend=backend) as client, refused:
        client.get("https://crm.example:8443/")
    assert connects.asked == []


def test_the_checked_addresses_are_tried_in_turn() -> None:
    connects = Connects()
    backend = outbound.CheckedBackend(_resolving_to("104.18.0.1", "2606:4700::6812:1"), connects)
    with pytest.raises(httpcore.ConnectError, match="refused by the test"):
        backend.connect_tcp("crm.example", 8443)
    assert connects.asked == [("104.18.0.1", 8443), ("2606:4700::6812:1", 8443)]


def test_proxies_from_the_environment_are_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    proxy = servers.Listener()
    try:
        for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
        connects = Connects()
        backend = outbound.CheckedBackend(_resolving_to("104.18.0.1"), connects)
        refused = pytest.raises(httpx.ConnectError, match="refused by the test")
        with outbound.client(backend=backend) as client, refused:
            client.get("https://crm.example/")
    finally:
        proxy.close()
    assert connects.asked == [("104.18.0.1", 443)]
    assert proxy.accepted == 0


def test_tls_is_verified_against_the_host_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection goes to the checked address; the certificate must be the name's."""
    monkeypatch.setenv(outbound.ALLOW_PRIVATE, "1")  # the server is on loopback
    with servers.https_server(tmp_path, "crm.example") as (port, certificate):
        backend = outbound.CheckedBackend(_resolving_to("127.0.0.1"))
        trusting = ssl.create_default_context(cafile=certificate)
        with outbound.client(backend=backend, ssl_context=trusting) as client:
            assert client.get(f"https://crm.example:{port}/contacts").text == "ok"
            with pytest.raises(httpx.ConnectError, match=r"not valid for 'other\.example'"):
                client.get(f"https://other.example:{port}/contacts")


def test_the_client_refuses_loopback_unless_private_urls_are_allowed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    listener = servers.Listener()
    try:
        backend = outbound.CheckedBackend(_resolving_to("127.0.0.1"))
        with outbound.client(backend=backend) as client:
            with pytest.raises(httpx.ConnectError, match="not public"):
                client.get(f"http://fake-crm.test:{listener.port}/")
            monkeypatch.setenv(outbound.ALLOW_PRIVATE, "1")
            with pytest.raises(httpx.TransportError):  # connected, and closed at once
                client.get(f"http://fake-crm.test:{listener.port}/")
    finally:
        listener.close()
    assert listener.accepted == 1
