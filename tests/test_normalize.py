import random

import pytest
from cleanco import basename
from cleanco.clean import prepare_default_terms
from cleanco.clean import strip_tail as cleanco_strip_tail
from hypothesis import given
from hypothesis import strategies as st

from server.normalize import (
    company_key,
    email_key,
    fold,
    is_legal_form,
    name_forms,
    person_key,
    registrable_domain,
    spaced_legal_form,
    stored_forms,
    strip_legal_suffixes,
    strip_tail,
)


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


def test_strip_legal_suffixes_agrees_with_cleanco() -> None:
    # Names built from cleanco's own terms, stacked and repeated, are where order matters.
    terms = [" ".join(parts) for _, parts in prepare_default_terms()]
    words = ["Acme", "Nordic", "&", "Co", "Ltd.", "GmbH", "S.A.", "de", "C.V.", "Inc,", "the"]
    pick = random.Random(7).choice
    names = [
        " ".join(pick(words + terms) for _ in range(length)) for length in [1, 2, 3, 4, 5, 6] * 2000
    ]
    names += ["", "  ", "Ltd", "Ltd Ltd", "Acme Pte. Ltd.", "Müller GmbH & Co. KG", "X, Inc.,"]
    names += ["Acme" + ", " * 400 + "Ltd", "Acme !?" * 100, "A" + " " * 900 + "B", "Acme\n"]
    assert [strip_legal_suffixes(name) for name in names] == [basename(name) for name in names]


@given(st.text(alphabet="ab.,-_ !&é\n\t·\u00a0"))
def test_strip_tail_agrees_with_cleanco(name: str) -> None:
    # cleanco's own searches for its pattern from every symbol of a run: quadratic in the run.
    assert strip_tail(name) == cleanco_strip_tail(name)


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


def _forms(name: str) -> dict[str, object]:
    forms = name_forms(company_key(name))
    return {field: value for field, value in vars(forms).items() if value}


@pytest.mark.parametrize(
    ("names", "core"),
    [
        (["Koninklijke Philips N.V.", "Philips", "Royal Philips"], "philip"),
        (["Coca-Cola Company", "CocaCola", "Coca Cola"], "cocacola"),
        (["Müller und Söhne GmbH", "Mueller & Soehne", "Müller + Söhne"], "mullersohne"),
        (["Procter & Gamble", "Procter and Gamble Co.", "Procter et Gamble"], "proctergamble"),
        (["Montero Foods S.L.", "Montero Food"], "monterofood"),
        (["Deutsche Telekom AG", "Deutsche Telekom Aktiengesellschaft"], "deutschetelekom"),
        (["Noblefield LLC", "Noblefield Limited Liability Company"], "noblefield"),
        (["Coryx Bank GmbH & Co. KG", "Coryx Bank GmbH und Co. KG"], "coryxbank"),
        (["Volvo AB", "Aktiebolaget Volvo", "Kabushiki Kaisha Volvo"], "volvo"),
        (["L'Oréal S.A.", "L Oreal", "LOreal Société Anonyme"], "loreal"),
        (["Acme Holdings Group", "The Acme International Company"], "acme"),
        (["PE Networks Inc.", "P E Networks", "P.E. Networks"], "penetwork"),
        (["Silva e Filhos Ltda.", "Silva Filhos"], "silvafilho"),
        (["Red Children's Fund", "Red Childrens Fund"], "redchildrensfund"),
    ],
)
def test_variants_of_a_name_share_its_core(names: list[str], core: str) -> None:
    assert {name_forms(company_key(name)).core for name in names} == {core}


def test_the_forms_of_a_name() -> None:
    assert _forms("International Business Machines Corporation") == {
        "core": "businessmachine",
        "bag": "business machines",
        "acronyms": ("ibm",),
        "initials": "ibm",
        "leads": ("business",),
        "generic": frozenset({"international"}),
    }
    assert _forms("Bank of Ireland") == _forms("Bank of Ireland") | {"bag": "bank ireland"}
    assert _forms("Ireland Bank")["bag"] == "bank ireland"
    assert _forms("AB Volvo")["unled"] == "volvo"
    assert _forms("K.K. Ikeda Finance")["unled"] == "ikedafinance"
    assert _forms("Almeida IT Solutions S.A.")["leads"] == ("almeida", "almeidait")
    # Initials keep what would otherwise be a legal form or a conjunction, and stay short.
    assert _forms("G.S.C.") == {"core": "gsc"}
    assert _forms("Y.L.F.F.")["core"] == "ylff"
    assert _forms("SAA")["core"] == "saa"


def test_a_name_that_is_all_legal_form_or_generic_keeps_its_words() -> None:
    assert name_forms(company_key("Gesellschaft mit beschränkter Haftung")).core
    assert _forms("International Systems Group")["core"] == "internationalsystem"
    assert name_forms("") == name_forms("   ")


def test_stored_forms_name_each_form_once() -> None:
    assert stored_forms(company_key("International Business Machines Corporation")) == {
        ("core", "businessmachine"),
        ("bag", "business machines"),
        ("acronym", "ibm"),
        ("lead", "business"),
    }


@pytest.mark.parametrize(
    "written",
    [
        "Koninklijke Philips Electronics N. V.",
        "KONINKLIJKE PHILIPS ELECTRONICSN.V.",
        "Koninklijke Philips ElectronicsN.V",
        "Koninklijke Philips Electronics, N.V.",
        "Koninklijke Philips Electronics NV.",
        "Koninklijke Philips Electronics N. V.,",
        "Koninklijke Philips Electronics, N. V",
    ],
)
def test_a_legal_form_spaced_or_glued_to_the_last_word_keys_as_usually_written(
    written: str,
) -> None:
    usual = "Koninklijke Philips Electronics N.V."
    assert company_key(written) == company_key(usual) == "koninklijke philips electronics"
    assert name_forms(written) == name_forms(usual)


@pytest.mark.parametrize(
    ("name", "written"),
    [
        ("Philips B. V.", "Philips B.V."),
        ("Siemens A. G.", "Siemens A.G."),
        ("Fiat S. p. A.", "Fiat S.p.A."),
        ("ACMES.A.", "ACME S.A."),
        ("Mountainpath Design GroupInc.", "Mountainpath Design Group Inc."),
        ("ELMSIDE PROPERTY GROUPLTD.", "ELMSIDE PROPERTY GROUP LTD."),
        ("Acme Zinc.", "Acme Zinc."),  # a word that ends as "Inc." does
        ("Acme GroupInc", "Acme GroupInc"),  # no dot: no abbreviation
        ("A. B. C.", "A. B. C."),  # initials of no legal form: a name of initials
        ("Acme X. Y.", "Acme X. Y."),
        ("J. P. Morgan", "J. P. Morgan"),
        ("Amazon.com", "Amazon.com"),
    ],
)
def test_only_a_legal_form_is_written_together(name: str, written: str) -> None:
    assert spaced_legal_form(name) == written


def test_is_legal_form() -> None:
    assert is_legal_form("N. V.") and is_legal_form("GmbH") and is_legal_form("Limited")
    assert not is_legal_form("Boston") and not is_legal_form("")
