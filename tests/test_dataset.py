"""The demo dataset generator: deterministic, realistic, and consistent with the other modules."""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import phonenumbers
import pytest
from sqlite_utils import Database

from server import dataset, industry, places, titles
from server.normalize import company_key, registrable_domain
from server.records import EMPLOYEE_RANGES, REVENUE_RANGES, employee_range
from server.storage import db, store

COMPANIES = 200
CONTACTS = 3_000
SEED = 7
TABLES = {
    "companies": "guid",
    "company_aliases": "company_guid, alias_key",
    "contacts": "guid",
    "employments": "contact_guid, company_guid",
}


def _build(path: Path, seed: int) -> tuple[Database, dict[str, int], list[int]]:
    database = db.connect(path)
    calls: list[int] = []
    counts = dataset.generate(
        database, companies=COMPANIES, contacts=CONTACTS, seed=seed, progress=calls.append
    )
    return database, counts, calls


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Database, dict[str, int], list[int]]:
    return _build(tmp_path_factory.mktemp("dataset") / "demo.db", SEED)


@pytest.fixture(scope="module")
def demo(built: tuple[Database, dict[str, int], list[int]]) -> Database:
    return built[0]


def _rows(database: Database, table: str) -> list[dict[str, Any]]:
    return list(database.table(table).rows_where(order_by=TABLES[table]))


@pytest.fixture(scope="module")
def companies(demo: Database) -> dict[str, dict[str, Any]]:
    return {row["guid"]: row for row in store.iter_companies(demo)}


@pytest.fixture(scope="module")
def jobs(demo: Database) -> list[dict[str, Any]]:
    return list(store.iter_contact_employments(demo))


def test_counts_match_the_request_and_progress(
    built: tuple[Database, dict[str, int], list[int]],
) -> None:
    database, counts, calls = built
    tables = store.counts(database)
    assert counts["companies"] == tables["companies"] == COMPANIES
    assert counts["contacts"] == tables["contacts"] == CONTACTS
    assert counts["employments"] == tables["employments"] > CONTACTS
    assert counts["company_aliases"] == len(_rows(database, "company_aliases")) > 0
    assert sum(calls) == CONTACTS and max(calls) <= dataset.CONTACT_BATCH


def test_same_seed_gives_identical_tables_and_another_seed_does_not(
    demo: Database, tmp_path: Path
) -> None:
    again, _, _ = _build(tmp_path / "again.db", SEED)
    other, _, _ = _build(tmp_path / "other.db", SEED + 1)
    for table in TABLES:
        assert _rows(again, table) == _rows(demo, table), table
        assert _rows(other, table) != _rows(demo, table), table


def test_guids_have_the_contract_formats(
    companies: dict[str, dict[str, Any]], jobs: list[dict[str, Any]]
) -> None:
    assert all(re.fullmatch(r"[0-9A-F]{16}", guid) for guid in companies)
    assert all(re.fullmatch(r"[0-9A-F]{32}", job["contact_guid"]) for job in jobs)


def test_domains_are_registrable_unique_and_behind_the_website(
    companies: dict[str, dict[str, Any]],
) -> None:
    domains = [row["domain"] for row in companies.values()]
    assert len(set(domains)) == len(domains)
    for row in companies.values():
        assert registrable_domain(row["domain"]) == row["domain"]
        assert row["website"] == f"https://www.{row['domain']}"
        assert row["profile_url"].startswith("https://www.linkedin.com/company/")
    profiles = [row["profile_url"] for row in companies.values()]
    assert len(set(profiles)) == len(profiles)


def _assert_valid_phone(text: str, country: str) -> None:
    number = phonenumbers.parse(text)
    assert phonenumbers.is_valid_number(number), text
    assert phonenumbers.region_code_for_number(number) == places.country_code(country), text
    assert text == phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.INTERNATIONAL)


def test_phone_numbers_are_valid_for_their_country(
    companies: dict[str, dict[str, Any]], jobs: list[dict[str, Any]]
) -> None:
    for row in companies.values():
        _assert_valid_phone(row["phone"], row["country"])
    dials = Counter()
    for job in jobs:
        _assert_valid_phone(job["work_phone"], job["work_country"])
        for field in ("direct_dial1", "direct_dial2"):
            if job[field]:
                dials[field] += 1
                _assert_valid_phone(job[field], job["work_country"])
        assert job["direct_dial1"] or not job["direct_dial2"]
    assert 0.6 < dials["direct_dial1"] / len(jobs) < 0.8
    assert 0.12 < dials["direct_dial2"] / len(jobs) < 0.28


def test_industry_codes_carry_their_real_descriptions(
    companies: dict[str, dict[str, Any]],
) -> None:
    labels = {i.name: i for i in industry.industries()}
    for row in companies.values():
        chosen = labels[row["industry"]]
        naics, sic = row["naics_codes"].split(" | "), row["sic_codes"].split(" | ")
        assert set(naics) <= set(chosen.naics) and set(sic) <= set(chosen.sic)
        assert row["naics_descriptions"].split(" | ") == [
            industry.naics_description(c) for c in naics
        ]
        assert row["sic_descriptions"].split(" | ") == [industry.sic_description(c) for c in sic]


def test_companies_and_jobs_have_a_city_and_coordinates(
    companies: dict[str, dict[str, Any]], jobs: list[dict[str, Any]]
) -> None:
    for row in companies.values():
        assert row["city"] and row["address"] and row["country"]
        assert row["latitude"] is not None and row["longitude"] is not None
        assert row["global_regions"] == " | ".join(
            places.global_regions(places.country_code(row["country"]) or "")
        )
    for job in jobs:
        assert job["work_city"] and job["work_address"] and job["work_country"]
        assert job["latitude"] is not None and job["longitude"] is not None
    us = [row for row in companies.values() if row["country"] == "United States"]
    assert us and all(re.fullmatch(r"\d{5}", row["zipcode"]) for row in us)
    assert all(re.fullmatch(r"[A-Z]{2}", row["state"]) for row in us)


def test_country_mix_is_mostly_us_then_many_others(
    companies: dict[str, dict[str, Any]],
) -> None:
    countries = Counter(row["country"] for row in companies.values())
    assert 0.45 < countries["United States"] / COMPANIES < 0.75
    assert len(countries) >= 8


def test_names_carry_the_legal_suffix_of_their_country(
    companies: dict[str, dict[str, Any]],
) -> None:
    words = json.loads((dataset.DATA / "dataset_words.json").read_text())
    for row in companies.values():
        if row["legal_status"] not in ("Private", "Public", "Subsidiary"):
            continue
        code = places.country_code(row["country"])
        legal = words["countries"][code]["legal"]
        suffixes = {suffix for pairs in legal.values() for suffix, _ in pairs}
        leading = {written for _, written, _ in words["leading_legal"].get(code, [])}
        assert any(row["name"].endswith(" " + suffix) for suffix in suffixes) or any(
            row["name"].startswith(form + " ") for form in leading
        ), row["name"]
        assert row["name_key"] == company_key(row["name"])


def test_names_are_unique_but_for_a_group_abroad(companies: dict[str, dict[str, Any]]) -> None:
    by_key: dict[str, list[dict[str, Any]]] = {}
    for row in companies.values():
        by_key.setdefault(row["name_key"], []).append(row)
    for rows in by_key.values():
        if len(rows) > 1:  # "Siemens AG" and its "Siemens Ltd": one group, other countries
            assert len({row["country"] for row in rows}) == len(rows)
            assert len({row["global_hq_guid"] or row["guid"] for row in rows}) == 1


def test_aliases_are_the_keys_of_the_aka_names(
    demo: Database, companies: dict[str, dict[str, Any]]
) -> None:
    expected = {
        (guid, company_key(alias))
        for guid, row in companies.items()
        for alias in row["aka"].split(" | ")
        if row["aka"]
    }
    found = {(row["company_guid"], row["alias_key"]) for row in _rows(demo, "company_aliases")}
    assert found == expected


def test_a_former_name_is_another_brand_or_the_name_before_a_merger() -> None:
    names = dataset._names("de_DE")
    found = {
        dataset._former_name(random.Random(seed), "Zentrix Analytics", "Zentrix Analytics GmbH",
                             names, share=1.0)
        for seed in range(40)
    }  # fmt: skip
    brands = {n for n in found if n and n.endswith(" Analytics GmbH")}
    mergers = {n for n in found if n and n.startswith("Zentrix & ") and n.endswith(" GmbH")}
    assert brands and mergers and brands | mergers == found
    assert "Zentrix Analytics GmbH" not in found
    royal = {
        dataset._former_name(random.Random(seed), "Royal Visser", "Royal Visser N.V.", names, 1.0)
        for seed in range(20)
    }  # the leading generic word kept with another brand, left out of a merger's name
    assert all(re.fullmatch(r"Royal [A-Z][a-z]+ N\.V\.|Visser & .+ N\.V\.", n or "") for n in royal)
    assert "Royal Visser N.V." not in royal
    assert dataset._former_name(random.Random(1), "Zentrix", "Zentrix AG", names, 0.0) is None


def test_some_companies_keep_a_former_name_among_their_aliases(
    companies: dict[str, dict[str, Any]],
) -> None:
    formers = [
        (row["name"], alias)
        for row in companies.values()
        for alias in row["aka"].split(" | ")
        if alias and alias.count(" ") and row["name"].endswith(" " + alias.split()[-1])
    ]
    assert 1 <= len(formers) <= 0.08 * len(companies)
    for name, alias in formers:
        assert company_key(alias) != company_key(name)
        assert set(alias.split()) - set(name.split())


def test_sizes_map_to_contract_ranges_and_revenue_grows_with_size(
    companies: dict[str, dict[str, Any]],
) -> None:
    labels = {label for _, label in EMPLOYEE_RANGES} | {"10,001+"}
    for row in companies.values():
        assert employee_range(row["employee_count"]) in labels
        assert row["revenue_range"] in REVENUE_RANGES
    small = [r for r in companies.values() if r["employee_count"] <= 10]
    large = [r for r in companies.values() if r["employee_count"] > 1000]
    assert len(small) > len(large) > 0
    rank = REVENUE_RANGES.index
    assert max(rank(r["revenue_range"]) for r in small) < min(
        rank(r["revenue_range"]) for r in large
    )


def test_hierarchy_points_at_existing_larger_companies(
    companies: dict[str, dict[str, Any]],
) -> None:
    subsidiaries = [row for row in companies.values() if row["parent_guid"]]
    assert 0.05 < len(subsidiaries) / COMPANIES < 0.11
    for row in subsidiaries:
        parent, top = companies[row["parent_guid"]], companies[row["global_hq_guid"]]
        assert row["legal_status"] == "Subsidiary"
        assert row["worldwide_parent_name"] == top["name"] and not top["parent_guid"]
        assert parent["employee_count"] > row["employee_count"]
    assert all(
        row["legal_status"] != "Subsidiary" or row["parent_guid"] for row in companies.values()
    )


def _local_part(pattern: str, first: str, last: str) -> str:
    return {
        "first.last": f"{first}.{last}",
        "flast": f"{first[:1]}{last}",
        "first": first,
        "firstl": f"{first}{last[:1]}",
        "first_last": f"{first}_{last}",
        "last.first": f"{last}.{first}",
    }[pattern]


def test_emails_follow_the_company_pattern_and_are_unique(
    companies: dict[str, dict[str, Any]], jobs: list[dict[str, Any]]
) -> None:
    for job in jobs:
        company = companies[job["company_guid"]]
        local = _local_part(company["email_pattern"], job["first_key"], job["last_key"])
        pattern = rf"{re.escape(local)}\d*@{re.escape(company['domain'])}"
        assert re.fullmatch(pattern, job["email"]), (job["email"], company["email_pattern"])
    emails = [job["email"] for job in jobs]
    assert len(set(emails)) == len(emails)


def test_titles_are_classified_into_the_taxonomy(jobs: list[dict[str, Any]]) -> None:
    sub_functions = {sub for subs in titles.FUNCTIONS.values() for sub in subs}
    for job in jobs:
        found = titles.classify(job["job_title"])
        assert job["levels"] == " | ".join(found.levels) and found.levels
        assert job["functions"] == " | ".join(found.functions) and found.functions
        assert job["sub_functions"] == " | ".join(found.sub_functions)
        assert set(found.levels) <= set(titles.LEVELS)
        assert set(found.functions) <= set(titles.FUNCTIONS)
        assert set(found.sub_functions) <= sub_functions
    levels = Counter(job["levels"] for job in jobs)
    assert levels["Below Manager"] > levels["Manager"] > levels["VP"]


def test_curated_titles_are_many_and_all_classify() -> None:
    curated = [t.title for t in dataset._titles()]
    assert len(curated) >= 300 and len(set(curated)) == len(curated)
    for title in curated:
        found = titles.classify(title)
        assert found.levels and found.functions, title


def test_at_most_one_ceo_per_company(jobs: list[dict[str, Any]]) -> None:
    ceo_titles = {t.title for t in dataset._titles() if t.tier == "ceo"}
    ceos = Counter(job["company_guid"] for job in jobs if job["job_title"] in ceo_titles)
    assert ceos and max(ceos.values()) == 1


def test_some_contacts_no_longer_work_there_and_work_elsewhere(
    jobs: list[dict[str, Any]],
) -> None:
    by_contact: dict[str, list[dict[str, Any]]] = {}
    for job in jobs:
        by_contact.setdefault(job["contact_guid"], []).append(job)
    movers = [js for js in by_contact.values() if len(js) > 1]
    assert 0.03 < len(movers) / CONTACTS < 0.07
    for pair in movers:
        statuses = {job["status"]: job for job in pair}
        former, current = statuses["No Longer"], statuses["Active"]
        assert len(pair) == 2 and former["company_guid"] != current["company_guid"]
        assert former["email"] != current["email"]
        assert former["job_updated_on"] <= current["job_started_on"]
    assert all(js[0]["status"] == "Active" for js in by_contact.values() if len(js) == 1)


def test_months_are_stored_in_order_and_not_after_october_2026(
    jobs: list[dict[str, Any]],
) -> None:
    for job in jobs:
        started, updated = job["job_started_on"], job["job_updated_on"]
        assert re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", started)
        assert started <= updated <= "2026-10"
        assert "2024-01-01" <= job["updated_at"][:10] <= "2026-10-31"


def test_contacts_look_like_people(
    companies: dict[str, dict[str, Any]], jobs: list[dict[str, Any]]
) -> None:
    names = [job["full_name"] for job in jobs]
    assert any(not name.isascii() for name in names)
    assert any(job["middle_name"] for job in jobs)
    assert Counter(job["accuracy"] for job in jobs).most_common(1)[0][0] in ("A+", "A")
    for job in jobs:
        parts = (job["first_name"], job["middle_name"], job["last_name"])
        assert job["full_name"] == " ".join(p for p in parts if p)
        assert job["profile_url"].startswith("https://www.linkedin.com/in/")
        if job["status"] == "Active":
            assert job["location"].startswith(job["work_city"] + ", ")
    profiles = {job["contact_guid"]: job["profile_url"] for job in jobs}
    assert len(set(profiles.values())) == len(profiles)


def test_most_contacts_work_at_headquarters(
    companies: dict[str, dict[str, Any]], jobs: list[dict[str, Any]]
) -> None:
    at_hq = sum(job["work_address"] == companies[job["company_guid"]]["address"] for job in jobs)
    assert 0.55 < at_hq / len(jobs) < 0.95


def test_every_company_has_a_contact_and_a_few_have_many(jobs: list[dict[str, Any]]) -> None:
    per_company = Counter(job["company_guid"] for job in jobs)
    assert len(per_company) == COMPANIES
    sizes = sorted(per_company.values())
    assert sizes[len(sizes) // 2] <= 5 and sizes[-1] >= 100


@pytest.mark.parametrize(
    ("companies", "contacts"),
    [(5_000, 100_000), (3, 100_000), (4, 100_000), (50, 20), (100_000, 100_000)],
)
def test_contacts_are_spread_with_three_big_companies_once_there_are_many(
    companies: int, contacts: int
) -> None:
    rng = random.Random(1)
    plans = [dataset._plan_company(rng) for _ in range(companies)]
    dataset._plan_hierarchy(rng, plans)
    dataset._allocate_contacts(rng, plans, contacts)
    counts = sorted((plan.contacts for plan in plans), reverse=True)
    assert sum(counts) == contacts
    assert min(counts) >= (1 if contacts >= companies else 0)
    if contacts >= 100_000 and contacts - companies >= 20_000:
        assert counts[2] >= 5_000


def test_refuses_contacts_without_companies(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        dataset.generate(db.connect(tmp_path / "x.db"), companies=0, contacts=5, seed=1)


# --- real-world name shapes ----------------------------------------------------------------------

REAL_SHAPES = re.compile(
    r"\b(Group|Groupe|Grupo|Gruppo|Grupa|Gruppe|Groep|Holdings?|International|Technologies"
    r"|Systems|Industries|Company)\b| (&|\+|and|und|et|y|e) |\w-\w|[a-z][A-Z]|'"
    r"|^(Bank|University|Universit\w+|Banco|Banca|Sparkasse|Caja|Cassa) |^(AB|N\.V\.) "
)


def _plan(country: str, industry_name: str) -> dataset._Plan:
    chosen = next(i for i in industry.industries() if i.name == industry_name)
    return dataset._Plan(country, chosen, 100, "Private")


def _people(country: str) -> dataset._Names:
    return dataset._names(dataset._country(country).name_locales.items[0])


@pytest.mark.parametrize(
    ("shape", "country", "industry_name", "seed", "expected"),
    [
        ("generic", "NL", "Wholesale", 2, "Koninklijke Next"),
        ("generic", "US", "Retail", 2, "The Next Company"),
        ("generic", "ES", "Retail", 4, "Grupo Gallego"),
        ("generic", "DE", "Chemicals", 9, "Dörschner Holding"),
        ("formal", "US", "Computer Hardware", 1, "National Business Machines"),
        ("formal", "JP", "Telecommunications", 7, "Dai Nippon Telegraph and Telephone"),
        ("formal", "DE", "Automotive", 5, "Thüringer Automobil Werke"),
        ("formal", "FR", "Insurance", 1, "Société Industrielle d'Assurances"),
        ("joint", "DE", "Wholesale", 5, "Schacht & Söhne"),
        ("joint", "DE", "Wholesale", 9, "Hübel und Dörschner"),
        ("joint", "FR", "Legal Services", 0, "Allain et Associés"),
        ("joint", "FR", "Legal Services", 7, "Lemaire et Fils"),
        ("joint", "MX", "Legal Services", 1, "Serrato y Asociados"),
        ("joint", "US", "Architecture and Engineering", 1, "Boone + Gallagher"),
        ("hyphen", "GB", "Automotive", 3, "Dunn-Charlton"),
        ("camel", "US", "Computer Software", 1, "CedarWater"),
        ("camel", "US", "Computer Software", 0, "SandHill Analytics"),
        ("apostrophe", "FR", "Consumer Goods", 7, "L'Artisan"),
        ("apostrophe", "US", "Retail", 0, "Richard's"),
    ],
)
def test_name_shapes_are_real_world_ones(
    shape: str, country: str, industry_name: str, seed: int, expected: str
) -> None:
    made = dataset._SHAPES[shape](
        random.Random(seed), _plan(country, industry_name), "Austin", _people(country), "Analytics"
    )
    assert made is not None and made[0] == expected


@pytest.mark.parametrize(
    ("country", "industry_name", "city", "seed", "expected"),
    [
        ("US", "Banking", "Austin", 4, "Bank of Austin"),
        ("US", "Banking", "Austin", 3, "Austin Savings Bank"),
        ("DE", "Banking", "Köln", 4, "Sparkasse Köln"),
        ("IT", "Banking", "Bologna", 3, "Cassa di Risparmio di Bologna"),
        ("ES", "Banking", "Sevilla", 1, "Caja de Ahorros de Sevilla"),
        ("FR", "Higher Education", "Orléans", 3, "Université d'Orléans"),
        ("GB", "Higher Education", "Leeds", 4, "University of Leeds"),
        ("GB", "Higher Education", "Leeds", 1, "Leeds University"),
    ],
)
def test_banks_and_universities_are_named_after_their_city(
    country: str, industry_name: str, city: str, seed: int, expected: str
) -> None:
    made = dataset._city_institution(random.Random(seed), _plan(country, industry_name), city)
    assert made == expected


def test_schools_get_no_formal_industrial_name() -> None:
    plan, people = _plan("US", "Primary and Secondary Education"), _people("US")
    made = {
        dataset._formal_shape(random.Random(seed), plan, "Austin", people, "Learning")
        for seed in range(50)
    }
    assert made == {None}


def test_an_apostrophe_does_not_add_an_s_to_a_name_ending_in_s() -> None:
    plan, people = _plan("US", "Retail"), _people("US")
    made = {
        dataset._apostrophe_shape(random.Random(seed), plan, "Austin", people, "Stores")
        for seed in range(300)
    }
    owners = [name.split()[0] for name, _ in filter(None, made)]
    assert any(owner.endswith("s'") for owner in owners)
    assert not any(owner.endswith("s's") for owner in owners)


def test_acronyms_leave_out_minor_words_and_read_through_elisions() -> None:
    assert dataset._acronym("International Business Machines") == "IBM"
    assert dataset._acronym("Nippon Telegraph and Telephone") == "NTT"
    assert dataset._acronym("Compagnie Générale d'Assurances") == "CGA"
    assert dataset._acronym("Rheinisch-Westfälische Werke") == "RWW"
    assert dataset._acronym("The Baxter Company") == "BC"
    assert dataset._acronym("Bank of Austin") == "BA"


def test_some_countries_write_the_legal_form_in_front() -> None:
    def written(base: str, suffix: str, country: str) -> set[str]:
        return {dataset._with_suffix(random.Random(n), base, suffix, country) for n in range(60)}

    assert written("Volvo", "AB", "SE") == {"AB Volvo", "Volvo AB"}
    assert written("Toshiba", "K.K.", "JP") == {"Kabushiki Kaisha Toshiba", "Toshiba K.K."}
    assert written("Philips", "N.V.", "NL") == {"N.V. Philips", "Philips N.V."}
    assert written("Siemens", "AG", "DE") == {"Siemens AG"}


def test_a_leading_legal_form_holds_the_name_in_both_places(tmp_path: Path) -> None:
    generator = dataset._Generator(db.connect(tmp_path / "x.db"), 1, random.Random(1))
    assert generator._claim("Volvo", "AB Volvo")
    assert not generator._claim("Volvo", "Volvo AB")
    assert generator._claim("Volvo Cars", "Volvo Cars AB")


def test_divisions_are_named_after_the_group_s_short_name() -> None:
    assert dataset._short_name("International Business Machines", "formal") == "IBM"
    assert dataset._short_name("Koninklijke Visser", "generic") == "Visser"
    assert dataset._short_name("The Baxter Company", "generic") == "Baxter"
    assert dataset._short_name("Construcciones Cordero", "surname") == "Cordero"
    assert dataset._short_name("NovaBridge Analytics", "brand") == "NovaBridge"
    assert dataset._short_name("Bank of Austin", "city") == "Bank of Austin"


def test_a_third_or_more_of_company_names_have_a_real_world_shape(
    companies: dict[str, dict[str, Any]],
) -> None:
    names = [
        row["name"]
        for row in companies.values()
        if row["legal_status"] in ("Private", "Public", "Subsidiary")
    ]
    shaped = [name for name in names if REAL_SHAPES.search(name)]
    assert 0.28 < len(shaped) / len(names) < 0.6
