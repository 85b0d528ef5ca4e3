"""Secrets sealed at rest (connector/store.py) open only with the server secret they were
sealed under."""

from __future__ import annotations

import pytest

from connector import store


def test_a_sealed_value_opens_with_its_server_secret_only() -> None:
    sealed = store.seal(b"server-secret", "whsec_abc123")
    assert "whsec_abc123" not in sealed
    assert store.unseal(b"server-secret", sealed) == "whsec_abc123"
    with pytest.raises(store.UnsealError):
        store.unseal(b"another-secret", sealed)


def test_a_tampered_value_does_not_open() -> None:
    sealed = store.seal(b"s", "token")
    tampered = sealed[:-6] + ("A" if sealed[-6] != "A" else "B") + sealed[-5:]
    with pytest.raises(store.UnsealError):
        store.unseal(b"s", tampered)


@pytest.mark.parametrize(("value", "shown"), [("whsec_abcdefghij", "…ghij"), ("short", "…")])
def test_hints_show_four_characters_of_long_secrets_only(value: str, shown: str) -> None:
    assert store.hint(value) == shown


def test_a_value_sealed_by_an_earlier_release_still_opens() -> None:
    # Sealed once and written down: the key derivation may not change, or databases in use
    # would no longer open.
    sealed = (
        "gAAAAABrBueZZicCrxStmZBTQ5Zp_DYQxNCp7tKRa7aYLd3bkFWfpy9c2"
        "fLS5RF4Vpuw7QR37L0txz7W2MgMmGPks7tZEd4dgQ=="
    )
    assert store.unseal(b"server-secret", sealed) == "whsec_abc123"
