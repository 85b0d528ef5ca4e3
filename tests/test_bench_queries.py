"""The enrich benchmark's query generator: each noise kind does what it says, for a seed."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace

import pytest
from rapidfuzz.distance import OSA

from bench.enrich_queries import (
    ABSENT_KINDS,
    COMPANY_KINDS,
    CONTACT_KINDS,
    LEGAL_FORMS,
    NICKNAMES,
    VARIANT_KINDS,
    BenchQuery,
    Company,
    Contact,
    absent_queries,
    acronym_variant,
    boundary_typo_variant,
    brand,
    brand_variant,
    case_change,
    company_keys,
    company_query,
    conjunction_variant,
    contact_query,
    distinctive_words,
    former_name_variant,
    former_names,
    generic_variant,
    initials,
    known_queries,
    legal_form_variant,
    long_word_typos_variant,
    misspell,
    nickname,
    nickname_table,
    place_tail_variant,
    query_keys,
    spaced_legal_form_variant,
    spacing_variant,
    split_place_tail,
    split_suffix,
    strip_accents,
    suffix_variant,
    transliterate,
    transliteration_variant,
    two_typos_variant,
    typo,
    url_variant,
    word_order_variant,
)
from server import places
from server.normalize import fold, registrable_domain

ACME = Company("A" * 16, "Acme Widgets, Inc.", ("Acme", "AWI"), "acme-widgets.com", "United States")
MULLER = Company("B" * 16, "Müller Präzisionstechnik GmbH", (), "mueller-praezision.de", "Germany")
ROBERT = Contact("1" * 32, "Robert", "James", "Whitaker", "robert.whitaker@acme-widgets.com",
                 "Active", ACME, "Sales Manager")  # fmt: skip
JOSE = Contact("2" * 32, "José", "", "Núñez", "jnunez@mueller-praezision.de", "No Longer", MULLER)
CONTACTS = [ROBERT, JOSE]
COMPANIES = [ACME, MULLER]


def rngs(n: int = 200) -> list[random.Random]:
    return [random.Random(seed) for seed in range(n)]


@pytest.mark.parametrize("edit", ["substitution", "deletion", "insertion", "transposition"])
def test_an_edit_changes_one_place_and_never_the_first_letter(edit: str) -> None:
    lengths = {"substitution": 0, "deletion": -1, "insertion": 1, "transposition": 0}
    for rng in rngs():
        wrong = misspell(rng, "Whitaker", edit)
        assert wrong[0] == "W"
        assert len(wrong) == len("Whitaker") + lengths[edit]
        assert OSA.distance(wrong, "Whitaker") == 1


def test_a_typo_is_one_or_two_edits_in_a_long_enough_word() -> None:
    for rng in rngs():
        wrong = typo(rng, "Acme Widgets")
        assert wrong is not None and [w[0] for w in wrong.split()] == ["A", "W"]
        assert 1 <= OSA.distance(wrong, "Acme Widgets") <= 2
    assert typo(random.Random(1), "Li Bo") is None


def test_accents_are_stripped_and_case_changes_apply_to_every_text() -> None:
    assert strip_accents("José Núñez, Müller") == "Jose Nunez, Muller"
    seen = set()
    for rng in rngs(50):
        change, texts = case_change(rng, ["José", "Müller GmbH"])
        seen.add(change)
        expected = {"upper": ["JOSÉ", "MÜLLER GMBH"], "lower": ["josé", "müller gmbh"]}
        assert texts == expected.get(change, ["Jose", "Muller GmbH"])
    assert seen == {"upper", "lower", "strip accents"}
    assert {case_change(rng, ["Smith"])[0] for rng in rngs(50)} == {"upper", "lower"}


def test_nicknames_come_from_the_matchers_table() -> None:
    assert {"Bob", "Bobby", "Rob"} <= set(nickname_table()["robert"])
    assert "Bill" in nickname_table()["william"]
    assert {nickname(rng, "Robert", NICKNAMES) for rng in rngs(50)} == {"Bob", "Rob", "Bobby"}
    assert nickname(random.Random(1), "Wolfgang", NICKNAMES) is None


def test_legal_suffixes_are_dropped_changed_or_added() -> None:
    assert split_suffix("Acme Widgets, Inc.") == ("Acme Widgets", "Inc.")
    assert split_suffix("Matthews Facility Services Pty Ltd") == (
        "Matthews Facility Services",
        "Pty Ltd",
    )
    assert split_suffix("Acme") == ("Acme", "")
    variants = {suffix_variant(rng, "Acme Widgets, Inc.") for rng in rngs(50)}
    assert ("drop", "Acme Widgets") in variants
    assert {name for how, name in variants if how == "change"} <= {
        f"Acme Widgets {s}" for s in ("Incorporated", "Inc", "LLC", "Corp.")
    }
    how, name = suffix_variant(random.Random(1), "Brightport")
    assert how == "add" and split_suffix(name)[0] == "Brightport" and split_suffix(name)[1]


def test_url_variants_keep_the_registrable_domain() -> None:
    urls = {url_variant(rng, "acme-widgets.co.uk") for rng in rngs()}
    assert len(urls) > 30
    assert all(registrable_domain(url) == "acme-widgets.co.uk" for url in urls)
    assert any(url.startswith("http://") for url in urls)
    assert any(url.endswith("/") for url in urls)


def _names(case: BenchQuery) -> tuple[str, str]:
    q = case.query
    if q.full_name:
        words = q.full_name.split()
        return words[0], words[-1]
    return q.first_name, q.last_name


def test_each_contact_kind_makes_the_query_its_docstring_describes() -> None:
    for rng in rngs(50):
        email = contact_query(rng, ROBERT, "email")
        assert email and vars(email.query)["email"].lower() == ROBERT.email
        assert {k for k, v in vars(email.query).items() if v} == {"email"}
        full = contact_query(rng, ROBERT, "full record")
        assert full and full.query.email == ROBERT.email and full.query.company_name == ACME.name
        assert full.query.job_title == "Sales Manager" and full.query.country == "United States"
        assert registrable_domain(full.query.company_website) == ACME.domain
        named = contact_query(rng, ROBERT, "name + company")
        assert named and _names(named) == ("Robert", "Whitaker") and named.query.company_name
        domain = contact_query(rng, ROBERT, "name + domain")
        assert domain and registrable_domain(domain.query.company_website) == ACME.domain
        assert not domain.query.company_name
        dropped = contact_query(rng, ROBERT, "dropped fields")
        assert dropped and (dropped.query.email or dropped.query.company_name
                            or dropped.query.company_website)  # fmt: skip
        assert not (dropped.query.email and dropped.query.company_name
                    and dropped.query.company_website and dropped.query.last_name)  # fmt: skip
        typo_case = contact_query(rng, ROBERT, "name typo")
        assert typo_case and _names(typo_case) != ("Robert", "Whitaker")
        first, last = _names(typo_case)
        assert OSA.distance(first + " " + last, "Robert Whitaker") in (1, 2)
        company_typo = contact_query(rng, ROBERT, "company typo")
        assert company_typo and company_typo.query.company_name.endswith(", Inc.")
        assert 1 <= OSA.distance(company_typo.query.company_name, ACME.name) <= 2
        swapped = contact_query(rng, ROBERT, "swapped names")
        assert swapped and _names(swapped) == ("Whitaker", "Robert")
        nick = contact_query(rng, ROBERT, "nickname")
        assert nick and _names(nick)[1] == "Whitaker"
        assert _names(nick)[0] in nickname_table()["robert"]
        alias = contact_query(rng, ROBERT, "alias")
        assert alias and alias.query.company_name in ACME.aka
        suffix = contact_query(rng, ROBERT, "legal suffix")
        assert suffix and split_suffix(suffix.query.company_name)[0] == "Acme Widgets"
        assert suffix.query.company_name != ACME.name
    for case in (email, full, named, nick):
        assert (case.company_guid, case.contact_guid, case.absent) == (
            ACME.guid,
            ROBERT.guid,
            False,
        )


def test_case_and_accent_changes_reach_names_and_company() -> None:
    changed = [contact_query(rng, JOSE, "case/accent") for rng in rngs(50)]
    assert all(case and fold(" ".join(_names(case))) == "jose nunez" for case in changed)
    stripped = [case for case in changed if case and "Jose" in _names(case)]
    assert stripped and all(c.query.company_name.startswith("Muller Prazision") for c in stripped)


def test_a_no_longer_contact_is_expected_at_its_former_employer() -> None:
    case = contact_query(random.Random(1), JOSE, "name + company")
    assert case and case.former and case.company_guid == MULLER.guid
    assert case.contact_guid == JOSE.guid


def test_kinds_that_do_not_apply_say_so() -> None:
    assert contact_query(random.Random(1), replace(JOSE, first="Zorblat"), "nickname") is None
    assert contact_query(random.Random(1), JOSE, "alias") is None
    assert company_query(random.Random(1), MULLER, "alias") is None


def test_company_kinds_ask_for_the_company_alone() -> None:
    for rng in rngs(20):
        for kind in COMPANY_KINDS:
            case = company_query(rng, ACME, kind)
            if case is None and kind in VARIANT_KINDS:
                continue
            assert case and case.kind == f"company: {kind}"
            assert (case.company_guid, case.contact_guid) == (ACME.guid, "")
            assert set(case.body()) in ({"companyName"}, {"companyWebAddress"})


def test_queries_are_the_same_for_a_seed_and_rejected_ones_are_replaced() -> None:
    def build(seed: int) -> list[BenchQuery]:
        rng = random.Random(seed)
        return known_queries(rng, CONTACTS * 20, COMPANIES * 10) + absent_queries(
            rng, 20, CONTACTS, COMPANIES
        )

    assert build(7) == build(7)
    assert build(7) != build(8)
    assert {case.kind.removeprefix("contact: ") for case in build(7)} & set(CONTACT_KINDS)
    no_email = known_queries(random.Random(1), [ROBERT] * 30, [], lambda q: bool(q.query.email))
    assert len(no_email) == 30 and not any(case.query.email for case in no_email)


def test_absent_queries_cover_every_kind_and_expect_no_contact() -> None:
    found = absent_queries(random.Random(3), 14, CONTACTS, COMPANIES)
    assert [case.kind for case in found[:7]] == [f"absent: {kind}" for kind in ABSENT_KINDS]
    for case in found:
        assert case.absent and case.contact_guid == ""
        at_known = case.kind in {"absent: person + company name", "absent: person + website",
                                 "absent: e-mail at known domain"}  # fmt: skip
        assert (case.company_guid in {ACME.guid, MULLER.guid}) == at_known
        if case.kind == "absent: e-mail at known domain":
            assert case.query.email.split("@")[1] in {ACME.domain, MULLER.domain}


def test_the_body_uses_the_contract_names() -> None:
    case = contact_query(random.Random(2), ROBERT, "full record")
    assert case is not None
    body = case.body()
    assert {"companyName", "companyWebAddress", "contactEmail", "contactJobTitle"} <= set(body)
    assert all(isinstance(value, str) and value for value in body.values())


def _co(name: str, country: str = "United States") -> Company:
    return Company("C" * 16, name, (), "example.com", country)


def _variants(make: Callable[[random.Random, Company], str | None], co: Company) -> set[str]:
    return {v for rng in rngs(60) if (v := make(rng, co)) is not None}


def test_generic_words_are_dropped_or_added_but_never_the_last_distinctive_one() -> None:
    philips = _variants(generic_variant, _co("Koninklijke Philips N.V.", "The Netherlands"))
    assert philips == {"Philips N.V.", "Royal Philips N.V."}
    added = _variants(generic_variant, _co("Zentrix Analytics GmbH", "Germany"))
    assert added == {
        "The Zentrix Analytics GmbH",
        "Zentrix Analytics Group GmbH",
        "Zentrix Analytics Holding GmbH",
        "Zentrix Analytics International GmbH",
    }
    assert "Royal Volker B.V." in _variants(generic_variant, _co("Volker B.V.", "The Netherlands"))
    assert _variants(generic_variant, _co("The Group", "United Kingdom")) == set()


def test_acronyms_both_ways() -> None:
    ibm = _co("International Business Machines Corporation")
    assert _variants(acronym_variant, ibm) == {"IBM", "I.B.M."}
    assert _variants(acronym_variant, _co("ABC Logistics Inc.")) == {
        "A.B.C. Logistics Inc.",
        "A B C Logistics Inc.",
    }
    assert _variants(acronym_variant, _co("Bank of Zenith")) == set()
    assert initials("Des Moines Department of Public Works") == "DMDPW"


def test_legal_forms_are_written_in_full_abbreviated_or_moved() -> None:
    assert len({country for form in LEGAL_FORMS for country in form.countries}) >= 20
    telekom = _variants(legal_form_variant, _co("Deutsche Telekom AG", "Germany"))
    assert "Deutsche Telekom Aktiengesellschaft" in telekom
    volvo = _variants(legal_form_variant, _co("Volvo AB", "Sweden"))
    assert {"AB Volvo", "Volvo Aktiebolag", "Aktiebolag Volvo"} <= volvo
    assert "Sony K.K." in _variants(legal_form_variant, _co("Kabushiki Kaisha Sony", "Japan"))
    assert "Philips NV" in _variants(legal_form_variant, _co("Philips N.V.", "The Netherlands"))
    assert "Acme Incorporated" in _variants(legal_form_variant, _co("Acme, Inc."))
    assert _variants(legal_form_variant, _co("Zentrix Analytics")) == set()


def test_and_ampersand_plus_und_et() -> None:
    assert _variants(conjunction_variant, _co("Procter & Gamble Co.")) == {
        "Procter and Gamble Co.",
        "Procter + Gamble Co.",
    }
    german = _variants(conjunction_variant, _co("Müller und Söhne GmbH", "Germany"))
    assert german == {"Müller & Söhne GmbH", "Müller and Söhne GmbH", "Müller + Söhne GmbH"}
    assert "Potier et Gaillard SCP" in _variants(
        conjunction_variant, _co("Potier & Gaillard SCP", "France")
    )
    assert _variants(conjunction_variant, _co("Zentrix Analytics")) == set()


def test_transliteration_writes_letters_as_people_type_them() -> None:
    assert transliterate("Müller Präzisionstechnik GmbH") == "Mueller Praezisionstechnik GmbH"
    assert transliterate("Ørsted A/S") == "Oersted A/S"
    assert transliterate("Großhandel Åberg") == "Grosshandel Aaberg"
    assert transliterate("L'Oréal S.A.") == "L'Oreal S.A."
    assert _variants(transliteration_variant, MULLER) == {"Mueller Praezisionstechnik GmbH"}
    assert transliterate("Acme") is None


def test_word_order_of_institutions() -> None:
    assert _variants(word_order_variant, _co("Bank of Zenith")) == {"Zenith Bank"}
    assert _variants(word_order_variant, _co("Rock University")) == {"University of Rock"}
    assert _variants(word_order_variant, _co("Zenith Savings Bank LLC")) == {
        "Savings Bank of Zenith LLC"
    }
    assert _variants(word_order_variant, _co("Martinez Institute of Technology")) == set()


def test_spacing_and_punctuation() -> None:
    assert _variants(spacing_variant, _co("Coca-Cola Company")) == {
        "CocaCola Company",
        "Coca Cola Company",
    }
    assert _variants(spacing_variant, _co("Blue Point Analytics")) == {"BluePoint Analytics"}
    assert _variants(spacing_variant, _co("Bluepoint Inc.")) == {
        "Blue Point Inc.",
        "Blue-Point Inc.",
    }
    assert "L Oréal S.A." in _variants(spacing_variant, _co("L'Oréal S.A.", "France"))
    assert _variants(spacing_variant, _co("Zentrix Analytics")) == set()


def test_brand_alone() -> None:
    assert _variants(brand_variant, _co("Zentrix Analytics GmbH", "Germany")) == {"Zentrix"}
    assert brand("Zenith Savings Bank LLC") == ""
    assert brand("Blue Point IT Solutions Group Inc.") == "Blue Point"
    assert brand("Procter & Gamble") == brand("Deutsche Telekom AG") == ""


def test_two_typos_in_two_words() -> None:
    for rng in rngs(50):
        wrong = two_typos_variant(rng, _co("Zentrix Analytics GmbH"))
        assert wrong and wrong.endswith(" GmbH")
        words = wrong.split()
        assert words[0] != "Zentrix" and words[1] != "Analytics"
        assert words[0][0] == "Z" and words[1][0] == "A"
    assert two_typos_variant(random.Random(1), _co("Zentrix AG")) is None


def test_variant_kinds_are_company_kinds_and_one_contact_kind() -> None:
    co = _co("International Business Machines Corporation")
    for kind in VARIANT_KINDS:
        assert f"{kind}" in COMPANY_KINDS
    case = company_query(random.Random(1), co, "acronym")
    assert case and case.variant == "acronym" and case.query.company_name in {"IBM", "I.B.M."}
    contact = contact_query(random.Random(1), ROBERT, "company variant")
    assert contact and contact.variant in VARIANT_KINDS and contact.contact_guid == ROBERT.guid
    assert contact.query.company_name != ACME.name
    assert contact_query(random.Random(1), replace(ROBERT, company=_co("Acme")), "company variant")


def test_the_bench_normal_forms_meet_in_one_key() -> None:
    pairs = [
        ("Koninklijke Philips N.V.", "Philips"),
        ("International Business Machines Corporation", "I.B.M."),
        ("Procter & Gamble Co.", "The Procter and Gamble Company"),
        ("Müller Präzisionstechnik GmbH", "Mueller Praezisionstechnik"),
        ("Bank of Zenith", "Zenith Bank"),
        ("Coca-Cola Company", "Coca Cola"),
        ("Bluepoint Inc.", "Blue Point"),
        ("Zentrix Analytics GmbH", "Zentrix"),
        ("Volvo AB", "AB Volvo"),
        ("Deutsche Telekom AG", "Deutsche Telekom Aktiengesellschaft"),
    ]
    for name, variant in pairs:
        assert company_keys(name) & query_keys(variant), (name, variant)
    assert not company_keys("Zentrix Analytics GmbH") & query_keys("Zentrix Medical")


def test_made_up_companies_use_distinctive_words() -> None:
    assert distinctive_words("The Zentrix Analytics Group GmbH") == ["Zentrix"]
    assert distinctive_words("Fletcher & North LLP") == ["Fletcher", "North"]


def test_boundary_typos_slip_at_a_words_edge() -> None:
    kobe = _variants(boundary_typo_variant, _co("Kobe Steel Ltd", "Japan"))
    assert {"Kobensteel Ltd", "KobeeSteel Ltd", "obe Steel Ltd", "Kobe teel Ltd"} <= kobe
    assert {"Jobe Steel Ltd", "Kobe Dteel Ltd"} <= kobe
    for name in kobe:
        assert name.endswith(" Ltd") and name != "Kobe Steel Ltd"
        assert OSA.distance(name.lower(), "kobe steel ltd") == 1
    assert _variants(boundary_typo_variant, _co("AB Co")) == set()


def test_long_words_get_one_or_two_typos_inside() -> None:
    philips = _co("Koninklijke Philips Electronics N.V.", "The Netherlands")
    found = _variants(long_word_typos_variant, philips)
    assert {"Koniklijke Philips Electronics N.V.", "Koninklijke Philips Electonics N.V."} <= found
    twice = [n for n in found if OSA.distance(n, philips.name) == 2]
    assert twice and all(n.endswith(" N.V.") and n[0] == "K" for n in found)
    assert all(len({w for w in n.split() if w not in philips.name.split()}) == 1 for n in found)
    media = _variants(long_word_typos_variant, _co("Margraf Media AG", "Germany"))
    assert all(n.startswith("Margraf M") and n != "Margraf Media AG" for n in media)
    assert _variants(long_word_typos_variant, _co("Tucker and Conley LLC")) == set()


def test_legal_forms_spaced_punctuated_or_glued() -> None:
    philips = _variants(spaced_legal_form_variant, _co("Philips Electronics N.V."))
    assert philips == {
        "Philips Electronics N. V.",
        "Philips Electronics NV.",
        "Philips Electronics N.V",
        "Philips Electronics N.V.,",
        "Philips Electronics, N.V.",
        "Philips ElectronicsN.V.",
        "PHILIPS ELECTRONICSN.V.",
    }
    assert "Acme Widgets Inc.," in _variants(spaced_legal_form_variant, ACME)
    volker = _variants(spaced_legal_form_variant, _co("Volker AG", "Germany"))
    assert volker == {"Volker A.G.", "Volker A. G.", "Volker AG,", "Volker, AG"}
    assert _variants(spaced_legal_form_variant, _co("Zentrix Analytics")) == set()
    for variant in philips | volker:
        assert query_keys(variant) & company_keys(variant.replace("N.V.,", "N.V.")), variant
    assert query_keys("A B C Logistics Inc.") & company_keys("ABC Logistics Inc.")


def test_a_real_place_follows_the_name() -> None:
    philips = Company("C" * 16, "Philips N.V.", (), "philips.com", "The Netherlands", "Eindhoven")
    found = _variants(place_tail_variant, philips)
    assert found == {
        "Philips N.V., Eindhoven",
        "Philips N.V., Eindhoven, NL",
        "Philips N.V. (Eindhoven)",
        "Philips N.V. - Eindhoven office",
        "Philips N.V. - Eindhoven",
        "Philips N.V. te Eindhoven",
    }
    assert all(split_place_tail(name) == ("Philips N.V.", "Eindhoven") for name in found)
    no_city = _variants(place_tail_variant, _co("Acme Widgets, Inc."))
    cities = {split_place_tail(name)[1] for name in no_city}
    assert cities and cities <= {place.city for place in places.largest_cities("US", 3)}
    assert not any(" te " in name for name in no_city)
    assert split_place_tail("Acme, Inc., Chicago, US") == ("Acme, Inc.", "Chicago")
    assert split_place_tail("Yoshida Co., Ltd. - Kobe office") == ("Yoshida Co., Ltd.", "Kobe")
    assert split_place_tail("Zentrix") == ("Zentrix", "")
    assert _variants(place_tail_variant, _co("Zentrix", "")) == set()


def test_former_names_are_aliases_that_are_other_names() -> None:
    zentrix = Company("C" * 16, "Zentrix Analytics GmbH", (
        "Zentrix", "ZAG", "Zentrix Group", "Novabright Analytics", "Zentrix & Halden GmbH"
    ), "zentrix.de", "Germany")  # fmt: skip
    assert former_names(zentrix) == ["Novabright Analytics", "Zentrix & Halden GmbH"]
    assert _variants(former_name_variant, zentrix) == {
        "Novabright Analytics",
        "Zentrix & Halden GmbH",
    }
    assert former_name_variant(random.Random(1), ACME) is None
    case = company_query(random.Random(1), zentrix, "former name")
    assert case and case.kind == "company: former name" and case.variant == "former name"
