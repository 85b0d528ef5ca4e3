"""The suppression list's identifiers and keyed hashes (server/privacy.py)."""

from __future__ import annotations

import pytest

from server import privacy
from server.errors import InvalidParameter
from server.privacy import Identifier

HASH = privacy.hasher(b"secret")


def test_identifiers_take_the_forms_matching_looks_people_up_by() -> None:
    assert privacy.email("  Ava.Stone@Example.COM ") == Identifier("email", "ava.stone@example.com")
    assert privacy.profile("http://linkedin.com/in/Ava-Stone/") == Identifier(
        "profile_url", "https://www.linkedin.com/in/ava-stone"
    )
    assert privacy.name_at("Dr. Ava  Stone", "https://www.example.co.uk/about") == Identifier(
        "name_domain", "ava stone@example.co.uk"
    )


def test_a_name_nameparser_misreads_is_read_as_first_and_last_word() -> None:
    assert privacy.name_at("Yang Ma", "example.com") == Identifier(
        "name_domain", "yang ma@example.com"
    )


def test_a_name_is_keyed_once_at_each_domain_that_has_a_registrable_one() -> None:
    domains = ["https://www.lonestar-works.com/", "", "localhost", "ava@b.co.uk"]
    assert privacy.names_at("Ava", "Stone", domains) == [
        Identifier("name_domain", "ava stone@lonestar-works.com"),
        Identifier("name_domain", "ava stone@b.co.uk"),
    ]
    assert privacy.names_at("", "Stone", domains) == []


def test_what_names_no_one_is_no_identifier() -> None:
    assert privacy.email("ava at example") is None
    assert privacy.profile("https://example.com/ava") is None
    assert privacy.name_at("Ava", "example.com") is None  # no last name
    assert privacy.name_at("Ava Stone", "localhost") is None  # no registrable domain


def test_an_operator_must_name_the_person_and_name_them_well() -> None:
    assert privacy.identifiers(
        email_address="a@b.com", name="Ava Stone", company_domain="b.com"
    ) == [
        Identifier("email", "a@b.com"),
        Identifier("name_domain", "ava stone@b.com"),
    ]
    for wrong in (
        {},
        {"name": "Ava Stone"},
        {"company_domain": "b.com"},
        {"email_address": "nope"},
    ):
        with pytest.raises(InvalidParameter):
            privacy.identifiers(**wrong)


def test_hashes_are_keyed_by_the_secret_and_say_nothing_of_the_value() -> None:
    ava = Identifier("email", "ava.stone@example.com")
    assert HASH(ava) == HASH(Identifier("email", "ava.stone@example.com"))
    assert HASH(ava) != privacy.hasher(b"another secret")(ava)
    assert HASH(ava) != HASH(Identifier("profile_url", ava.value))  # the kind is hashed too
    assert len(HASH(ava)) == 32 and "ava" not in HASH(ava)
    assert privacy.hashes(HASH, [ava, None, ava]) == [HASH(ava)]


def test_a_reason_is_short_printable_text() -> None:
    assert privacy.reason_text("  GDPR   art. 21 ") == "GDPR art. 21"
    with pytest.raises(InvalidParameter):
        privacy.reason_text("x" * 201)
