"""CRM URLs the connector may call: https and public addresses only, unless allowed for tests."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from connector import outbound


def _resolving_to(*addresses: str) -> Any:
    def resolve(host: str, port: int, **_: Any) -> list[tuple[Any, ...]]:
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port)) for a in addresses]

    return resolve


@pytest.fixture(autouse=True)
def strict(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(outbound.ALLOW_PRIVATE, raising=False)


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
    ],
)
def test_unsafe_urls_are_refused(url: str, addresses: tuple[str, ...], words: str) -> None:
    with pytest.raises(outbound.UnsafeUrl, match=words):
        outbound.check_crm_url(url, _resolving_to(*addresses))


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
