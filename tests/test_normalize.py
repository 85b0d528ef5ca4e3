import pytest

from server.normalize import company_key, email_key, fold, person_key, registrable_domain


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("Acme Inc.", "acme"),
        ("ACME, INC", "acme"),
        ("The Acme Company, Inc.", "acme"),
        ("Siemens Aktiengesellschaft", "siemens"),
        ("Müller GmbH & Co. KG", "muller"),
        ("Johnson & Johnson", "johnson and johnson"),
        ("Société Générale S.A.", "societe generale"),
        ("Acme Holdings LLC", "acme"),
        ("Toyota Motor Co., Ltd.", "toyota motor"),
        ("  Globex   Corporation ", "globex"),
    ],
)
def test_company_key(name: str, key: str) -> None:
    assert company_key(name) == key


@pytest.mark.parametrize(
    ("address", "domain"),
    [
        ("https://www.acme.com/about?x=1", "acme.com"),
        ("HTTP://Sub.Acme.CO.UK", "acme.co.uk"),
        ("acme.com", "acme.com"),
        ("www.acme.com.au/path", "acme.com.au"),
        ("jane.doe@mail.acme.de", "acme.de"),
        ("localhost", ""),
        ("", ""),
    ],
)
def test_registrable_domain_offline(address: str, domain: str) -> None:
    assert registrable_domain(address) == domain


def test_fold_and_person_key() -> None:
    assert fold("  Zoë  O'Brien-Straße ") == "zoe o brien strasse"
    assert person_key("O'Brien-Smith") == "obriensmith"
    assert person_key("José") == "jose"
    assert fold("Øberg Łukasz Æsir Tromsø") == "oberg lukasz aesir tromso"
    assert email_key("  Jane.Doe@Acme.COM ") == "jane.doe@acme.com"
