"""The matcher on a small literal dataset: each kind of noise a CRM sends, ties, No Match."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import product
from pathlib import Path

import pytest
from sqlite_utils import Database

from server import enrich, facets, matching
from server.matching import Query
from server.normalize import company_key, person_key, registrable_domain
from server.storage import db as database
from server.storage import store

STAMP = "2025-01-01T00:00:00.000+00:00"
ACME, ACME_UK, NORTHWIND, SIEMENS, SIEMENS_UK, RIVERCREST = (
    "A000000000000001",
    "A000000000000002",
    "B000000000000001",
    "C000000000000001",
    "C000000000000002",
    "D000000000000001",
)
ROBERT, JOSE, LIZ, WILLIAM, LEE1, LEE2, ANNA = (f"{n:032X}" for n in range(1, 8))


def _company(guid: str, name: str, website: str, **extra: str) -> tuple[dict, list[str]]:
    row: dict = {field: "" for field in store.COMPANY_FIELDS}
    row.update(latitude=None, longitude=None, employee_count=None, updated_at=STAMP)
    row.update(guid=guid, name=name, name_key=company_key(name), website=website)
    row.update(domain=registrable_domain(website), country="United States")
    row.update(extra)
    aliases = [company_key(a) for a in row["aka"].split(" | ") if a]
    return row, aliases


def _person(guid: str, first: str, last: str, jobs: list[tuple[str, str, str]], middle: str = ""):
    contact: dict = {field: "" for field in store.CONTACT_FIELDS}
    contact.update(guid=guid, first_name=first, middle_name=middle, last_name=last)
    contact.update(full_name=" ".join(p for p in (first, middle, last) if p), accuracy="A+")
    contact.update(first_key=person_key(first), last_key=person_key(last), updated_at=STAMP)
    contact["profile_url"] = f"https://www.linkedin.com/in/{person_key(first)}-{guid[-6:].lower()}"
    rows = []
    for company, status, email in jobs:
        job: dict = {field: "" for field in store.EMPLOYMENT_FIELDS}
        job.update(contact_guid=guid, company_guid=company, status=status, email=email)
        job.update(latitude=None, longitude=None, job_title="Engineer")
        facet_values = facets.job_facets("Engineer", *[""] * 6)
        job.update(zip(store.JOB_FACET_FIELDS, facet_values, strict=True))
        job.update(first_key=contact["first_key"], last_key=contact["last_key"], grade=0)
        rows.append(job)
    return contact, rows


COMPANIES = [
    _company(ACME, "Acme Robotics, Inc.", "https://www.acmerobotics.com", aka="Acme Bots"),
    _company(NORTHWIND, "Northwind Traders GmbH", "https://northwind.de", country="Germany"),
    _company(SIEMENS, "Siemens AG", "https://www.siemens.com", country="Germany"),
    _company(
        SIEMENS_UK,
        "Siemens Ltd",
        "https://www.siemens.co.uk",
        country="United Kingdom",
        parent_guid=SIEMENS,
        global_hq_guid=SIEMENS,
    ),
    _company(RIVERCREST, "Rivercrest Institute of Technology", "https://rivercrest.edu"),
]
PEOPLE = [
    _person(ROBERT, "Robert", "Smith", [(ACME, "Active", "robert.smith@acmerobotics.com")]),
    _person(JOSE, "José", "García López", [(ACME, "Active", "jose.garcia@acmerobotics.com")]),
    _person(LIZ, "Elizabeth", "Müller", [(NORTHWIND, "Active", "e.mueller@northwind.de")]),
    _person(
        WILLIAM,
        "William",
        "Chen",
        [
            (NORTHWIND, "No Longer", "w.chen@northwind.de"),
            (ACME, "Active", "william.chen@acmerobotics.com"),
        ],
    ),
    _person(LEE1, "John", "Lee", [(ACME, "Active", "john.lee@acmerobotics.com")]),
    _person(LEE2, "John", "Lee", [(ACME, "Active", "john.lee2@acmerobotics.com")]),
    _person(ANNA, "Anna", "Kowalski", [(RIVERCREST, "Active", "")], middle="Maria"),
]


def _database(path: Path, companies: list[tuple[dict, list[str]]], people: list) -> Database:
    connection = database.connect(path)
    with database.write(connection):
        store.upsert_companies(connection, [row for row, _ in companies])
        store.replace_company_aliases(
            connection,
            [row["guid"] for row, _ in companies],
            [(row["guid"], alias) for row, aliases in companies for alias in aliases],
        )
        store.upsert_contacts(connection, [contact for contact, _ in people])
        store.upsert_employments(connection, [job for _, jobs in people for job in jobs])
        store.index_company_names(connection)
    return connection


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    connection = _database(tmp_path_factory.mktemp("matching") / "m.db", COMPANIES, PEOPLE)
    yield connection
    connection.close()


def _found(db: Database, **fields: str) -> tuple[str, str, str] | None:
    match = matching.find(db, Query(**fields))
    return None if match is None else (match.company_guid, match.contact_guid, match.grade)


@pytest.mark.parametrize(
    ("kind", "fields", "company", "contact"),
    [
        ("e-mail only", {"email": "robert.smith@acmerobotics.com"}, ACME, ROBERT),
        ("e-mail in capitals", {"email": " Robert.Smith@ACMEROBOTICS.com "}, ACME, ROBERT),
        ("contact GUID", {"contact_guid": ROBERT.lower()}, ACME, ROBERT),
        (
            "profile URL without scheme",
            {"contact_profile_url": f"linkedin.com/in/robert-{ROBERT[-6:].lower()}/"},
            ACME,
            ROBERT,
        ),
        (
            "name + company",
            {"first_name": "Robert", "last_name": "Smith", "company_name": "Acme Robotics"},
            ACME,
            ROBERT,
        ),
        (
            "full name + domain",
            {"full_name": "Robert Smith", "company_website": "acmerobotics.com"},
            ACME,
            ROBERT,
        ),
        (
            "Last, First",
            {"full_name": "Smith, Robert", "company_name": "Acme Robotics"},
            ACME,
            ROBERT,
        ),
        (
            "nickname",
            {"first_name": "Bob", "last_name": "Smith", "company_name": "Acme Robotics Inc"},
            ACME,
            ROBERT,
        ),
        (
            "nickname Liz",
            {"full_name": "Liz Müller", "company_name": "Northwind Traders"},
            NORTHWIND,
            LIZ,
        ),
        (
            "typo in last name",
            {"first_name": "Robert", "last_name": "Smtih", "company_name": "Acme Robotics"},
            ACME,
            ROBERT,
        ),
        (
            "typo in first name",
            {"first_name": "Robret", "last_name": "Smith", "company_website": "acmerobotics.com"},
            ACME,
            ROBERT,
        ),
        (
            "typo in company name",
            {"first_name": "Robert", "last_name": "Smith", "company_name": "Acme Robotcs"},
            ACME,
            ROBERT,
        ),
        (
            "swapped first and last",
            {"first_name": "Smith", "last_name": "Robert", "company_name": "Acme Robotics"},
            ACME,
            ROBERT,
        ),
        (
            "no accents, capitals",
            {"full_name": "JOSE GARCIA LOPEZ", "company_name": "ACME ROBOTICS"},
            ACME,
            JOSE,
        ),
        (
            "umlaut spelled out",
            {"full_name": "Elizabeth Mueller", "company_website": "northwind.de"},
            NORTHWIND,
            LIZ,
        ),
        (
            "suffix variant",
            {"full_name": "Robert Smith", "company_name": "Acme Robotics LLC"},
            ACME,
            ROBERT,
        ),
        ("alias", {"full_name": "Robert Smith", "company_name": "Acme Bots"}, ACME, ROBERT),
        (
            "URL with path",
            {"full_name": "Robert Smith", "company_website": "http://www.acmerobotics.com/about/"},
            ACME,
            ROBERT,
        ),
        (
            "URL with subdomain",
            {"full_name": "Robert Smith", "company_website": "https://shop.acmerobotics.com"},
            ACME,
            ROBERT,
        ),
        (
            "middle name in first",
            {
                "first_name": "Anna Maria",
                "last_name": "Kowalski",
                "company_name": "Rivercrest Institute of Technology",
            },
            RIVERCREST,
            ANNA,
        ),
        (
            "no longer, at the former employer",
            {"full_name": "William Chen", "company_name": "Northwind Traders"},
            NORTHWIND,
            WILLIAM,
        ),
        ("no longer, by the old address", {"email": "w.chen@northwind.de"}, NORTHWIND, WILLIAM),
        ("company name only", {"company_name": "Northwind Traders GmbH"}, NORTHWIND, ""),
        (
            "company website only",
            {"company_website": "https://northwind.de/impressum"},
            NORTHWIND,
            "",
        ),
        (
            "company with a typo",
            {"company_name": "Rivercrest Institute of Tecnology"},
            RIVERCREST,
            "",
        ),
        ("company GUID", {"company_guid": ACME.lower()}, ACME, ""),
        (
            "unknown person at a known company",
            {"full_name": "Maria Schmidt", "company_name": "Acme Robotics"},
            ACME,
            "",
        ),
        ("unknown address at a known domain", {"email": "nobody@acmerobotics.com"}, ACME, ""),
    ],
)
def test_finds_the_record_despite_the_noise(
    db: Database, kind: str, fields: dict[str, str], company: str, contact: str
) -> None:
    found = _found(db, **fields)
    assert found is not None, kind
    assert found[:2] == (company, contact), kind


@pytest.mark.parametrize(
    ("kind", "fields"),
    [
        ("unknown company", {"company_name": "Globex Heavy Industries"}),
        ("unknown domain", {"company_website": "globex-heavy.com"}),
        ("unknown address", {"email": "someone@globex-heavy.com"}),
        ("free-mail address of nobody", {"email": "robert.smith1984@gmail.com"}),
        ("person at an unknown company", {"full_name": "Robert Smith", "company_name": "Globex"}),
    ],
)
def test_no_match_when_nothing_fits(db: Database, kind: str, fields: dict[str, str]) -> None:
    assert _found(db, **fields) is None, kind


def test_exact_identifiers_grade_a_plus(db: Database) -> None:
    assert _found(db, email="robert.smith@acmerobotics.com") == (ACME, ROBERT, "A+")
    exact = _found(db, first_name="Robert", last_name="Smith", company_website="acmerobotics.com")
    assert exact == (ACME, ROBERT, "A+")


def test_noise_lowers_the_grade(db: Database) -> None:
    exact = matching.find(db, Query(full_name="Robert Smith", company_name="Acme Robotics"))
    typo = matching.find(db, Query(full_name="Robert Smtih", company_name="Acme Robotics"))
    assert exact is not None and typo is not None
    assert typo.score < exact.score
    assert matching.GRADES[[g for g, _ in matching.GRADES].index(typo.grade)][1] <= typo.score


def test_an_address_whose_name_disagrees_is_graded_lower(db: Database) -> None:
    found = _found(db, email="robert.smith@acmerobotics.com", full_name="Karen Nakamura")
    assert found is not None and found[1] == ROBERT and found[2] not in ("A+", "A")


def test_two_people_of_one_name_give_only_the_company(db: Database) -> None:
    assert _found(db, full_name="John Lee", company_name="Acme Robotics")[:2] == (ACME, "")


def test_the_address_tells_namesakes_apart(db: Database) -> None:
    found = _found(db, full_name="John Lee", email="john.lee2@acmerobotics.com")
    assert found == (ACME, LEE2, "A+")


def test_a_shared_name_goes_to_the_headquarters_one_grade_lower(db: Database) -> None:
    found = matching.find(db, Query(company_name="Siemens"))
    assert found is not None and found.company_guid == SIEMENS
    assert found.grade != "A+"


def test_matched_on_names_the_fields_the_match_rests_on(db: Database) -> None:
    found = matching.find(
        db, Query(first_name="Bob", last_name="Smith", company_website="acmerobotics.com")
    )
    assert found is not None
    assert found.matched_on == ("company_website", "first_name", "last_name")
    by_mail = matching.find(db, Query(email="robert.smith@acmerobotics.com", country="US"))
    assert by_mail is not None and by_mail.matched_on == ("email",)


@pytest.mark.parametrize(
    ("text", "stored"),
    [
        ("https://www.linkedin.com/in/jane-doe-1a2b", "https://www.linkedin.com/in/jane-doe-1a2b"),
        ("linkedin.com/in/Jane-Doe-1a2b/?trk=x", "https://www.linkedin.com/in/jane-doe-1a2b"),
        ("http://uk.linkedin.com/pub/jane-doe-1a2b", "https://www.linkedin.com/in/jane-doe-1a2b"),
        ("https://linkedin.com/company/acme", "https://www.linkedin.com/company/acme"),
        ("https://example.com/in/jane", ""),
    ],
)
def test_profile_urls_are_read_in_every_usual_form(text: str, stored: str) -> None:
    assert matching.profile_url(text) == stored


@pytest.mark.parametrize(
    ("score", "runner_up", "grade"),
    [
        (1.0, None, "A+"),
        (0.95, None, "A"),
        (0.9, None, "A-"),
        (0.82, None, "B"),
        (0.7, None, None),
        (1.0, 0.96, "A"),
        (0.82, 0.8, None),
    ],
)
def test_grades_follow_the_thresholds(score: float, runner_up: float | None, grade: str) -> None:
    assert matching.grade(score, runner_up) == grade


@pytest.mark.parametrize(
    ("key", "other", "edits"),
    [
        ("acme robotics", "acme robotics", 0),
        ("acme robotcs", "acme robotics", 1),  # one deletion
        ("acme rbootics", "acme robotics", 1),  # one transposition
        ("acmee robotcs", "acme robotics", 2),  # one edit in each of two words
        ("acme rbtcs", "acme robotics", None),  # three edits in a word
        ("acmee rbotcs", "acme robotics", 3),  # two in a long word, one in another
        ("dekker fnanec", "dekker finance", 2),  # a deletion and a transposition...
        ("mosaiccrest digail", "mosaiccrest digital", 2),  # ...also when they overlap
        ("akme rbotcs dta", "acme robotics data", None),  # three misspelt words
        ("lng manufacturing", "lang manufacturing", 1),  # a typo may leave three letters
        ("senio technologies", "kinio technologies", None),  # another first letter
        ("kari shipping", "tri shipping", None),
        ("birchsight investments", "brightsight investments", None),
        ("reyes solutions", "reyes it solutions", None),  # a word more is another company
        ("trip shipping", "trim shipping", 1),  # four letters allow one edit...
        ("trip shipping", "trump shipping", None),
        ("omega", "omgea", 1),
        ("omega", "omqqa", None),  # ...and so do five
    ],
)
def test_typo_similarity_allows_few_edits_in_long_words(
    key: str, other: str, edits: int | None
) -> None:
    similarity = 0.0 if edits is None else 1 - matching.TYPO_COST * edits
    assert matching.typo_similarity(key, other) == pytest.approx(similarity)


def test_a_made_up_name_near_a_real_one_is_no_match(db: Database) -> None:
    assert _found(db, company_name="Rivercrest Institute of Tecnology")[0] == RIVERCREST
    assert _found(db, company_name="Rivercrest Institute of Teknolojy") is None  # 3 edits
    assert _found(db, company_name="Silvercrest Institute of Technology") is None
    assert _found(db, company_name="Northwind Trade Services") is None


def test_the_exact_legal_name_tells_same_named_companies_apart(db: Database) -> None:
    with_suffix = matching.find(db, Query(company_name="Siemens Ltd"))
    assert with_suffix is not None and with_suffix.company_guid == SIEMENS_UK
    assert with_suffix.grade == "A"  # one lower: Siemens AG shares the name


def test_a_different_first_name_is_not_the_person(db: Database) -> None:
    found = _found(db, first_name="Karen", last_name="Smith", company_name="Acme Robotics")
    assert found is not None and found[:2] == (ACME, "")
    assert _found(db, first_name="Vera", last_name="Chen", company_name="Acme Robotics")[1] == ""


# --- misspelt company names cost a bounded amount of work ---------------------------------------

# Company names whose words have several near neighbours: "Marow" may be Marlow, Marrow or
# Mallow, "Laboratores" Laboratories, Laboratorios or Laboratory.
CROWDED = [
    _company(f"E{number:015X}", name, "")
    for number, name in enumerate(
        [
            "Pharmaceutical Laboratories",
            "Pharmaceuticals International",
            "Telecommunication Services",
            "Telecommunications Partners",
            "Telecommunicator Group",
            "Marlow Engineering",
            "Marrow Engineering",
            "Mallow Engineering",
            "Laboratorios Unidos",
            "Laboratory Services",
            "Sterling Pharma Pvt. Ltd.",
            "Parma Foods",
            "Dekker Finance B.V.",
            "Amarillo Law Group Inc.",
            "Group Nine Media",
            "Mosaiccrest Digital Ltd",
        ]
    )
]
MISSPELT = ["Pharmacuetical", "Telecommunicatons", "Marow", "Laboratores", "Enginering"]


@pytest.fixture(scope="module")
def crowded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    connection = _database(tmp_path_factory.mktemp("crowded") / "c.db", CROWDED, [])
    yield connection
    connection.close()


@contextmanager
def statement_budget(db: Database, most: int) -> Iterator[list[str]]:
    """The SQL statements `db` runs inside the block; SQLite interrupts any beyond `most` (its
    progress handler), so a search that would run on fails here, by assertion."""
    statements: list[str] = []
    db.conn.set_trace_callback(statements.append)
    db.conn.set_progress_handler(lambda: len(statements) > most, 1)
    try:
        yield statements
    except sqlite3.OperationalError as error:
        shown = [statement[:70] for statement in statements]
        assert str(error) != "interrupted", f"more than {most} statements: {shown}"
        raise
    finally:
        db.conn.set_trace_callback(None)
        db.conn.set_progress_handler(None, 1)


def test_a_misspelt_name_is_found_among_near_namesakes(crowded: Database) -> None:
    found = matching.find(crowded, Query(company_name="Pharmaceutcal Laboratoires"))
    assert found is not None and found.company_guid == CROWDED[0][0]["guid"]
    assert found.score == pytest.approx(matching.NEAR_NAME_WEIGHT * (1 - 2 * matching.TYPO_COST))


def test_the_corrected_spellings_of_a_name_are_looked_up_in_one_statement(
    crowded: Database,
) -> None:
    # The name key, its forms, its known words, a correction read per misspelt word, then
    # every corrected spelling at once.
    with statement_budget(crowded, 6) as run:
        assert matching.find(crowded, Query(company_name="Pharmaceutcal Laboratoires"))
    assert (
        sum("companies WHERE name_key" in statement for statement in run) == 2
    )  # exact, corrected


@pytest.mark.parametrize(
    ("name", "meant"),
    [
        ("Dewkker Fnanec B.V.", "Dekker Finance B.V."),  # two misspelt words, three edits
        ("Amarillo Law Groul Inc.", "Amarillo Law Group Inc."),  # a word keys drop
        ("Mosaiccrest Digail", "Mosaiccrest Digital Ltd"),  # a deletion and a transposition
    ],
)
def test_a_misspelt_name_is_found_whatever_its_typos_make(
    crowded: Database, name: str, meant: str
) -> None:
    guid = next(company["guid"] for company, _ in CROWDED if company["name"] == meant)
    found = matching.find(crowded, Query(company_name=name))
    assert found is not None and found.company_guid == guid


def test_a_name_of_known_words_is_not_corrected(crowded: Database) -> None:
    # "Parma" may be a typo of "Pharma", or another company: made-up names look the same
    assert matching.find(crowded, Query(company_name="Sterling Parma Pvt. Ltd.")) is None


def test_a_long_name_of_misspelt_words_costs_a_bounded_number_of_statements(
    crowded: Database,
) -> None:
    # As many misspelt words as the API accepts, each with 1 to 3 corrections: 2**60 spellings
    name = " ".join(MISSPELT * 100)[: enrich.MAX_VALUE_CHARS].rsplit(" ", 1)[0]
    assert len(name.split()) > 70 and len(name) > 990
    most = 4 + matching.MISSPELT_WORDS  # key, forms, known words, corrections, one lookup
    with statement_budget(crowded, most) as run:
        assert matching.find(crowded, Query(company_name=name)) is None
    assert len(run) <= 3  # the name key, its forms, which of its words are known: no more


def test_a_misspelt_word_repeated_is_corrected_once(crowded: Database) -> None:
    name = " ".join(["Marow"] * 150)[: enrich.MAX_VALUE_CHARS]
    # the name key, its forms, which words are known; one correction read and one lookup of
    # the corrections of its own first letter, then again with the others (none found)
    most = 7
    with statement_budget(crowded, most) as run:
        assert matching.find(crowded, Query(company_name=name)) is None
    assert sum("company_name_words" in statement for statement in run) <= 3


def _old_cheapest_spellings(options: list[list[tuple[str, int]]]) -> list[tuple[int, str]]:
    """What the matcher looked up before: every combination built, sorted, the first kept."""
    keys = sorted(
        (sum(edits for _, edits in combination), " ".join(word for word, _ in combination))
        for combination in product(*options)
    )
    return [(e, k) for e, k in keys[: matching.CORRECTED_KEYS] if 0 < e <= matching.MAX_EDITS]


@pytest.mark.parametrize(
    "options",
    [
        [[("acme", 0)], [("robotics", 1), ("robotic", 2)]],
        [[("marlow", 1), ("marrow", 1), ("mallow", 2)], [("engineering", 1)]],
        [
            [("marlow", 1), ("marrow", 1), ("mallow", 2)],
            [("of", 0)],
            [("laboratories", 1), ("laboratorios", 2), ("laboratory", 2)],
        ],
        [[("bart", 1), ("bert", 1), ("bort", 1)], [("zed", 1), ("zag", 1), ("zig", 1)]],
        [[("acme", 0)], [("bots", 0)]],  # nothing misspelt: nothing to look up
        [[("able", 1)], [("baker", 1)], [("cable", 1)]],  # three typos: too many
        [[("alpha", 2), ("alpine", 2)], [("beta", 1)]],
        [[("one", 1), ("ones", 2)], [("two", 0)], [("three", 2), ("threw", 1)]],
    ],
)
def test_cheapest_spellings_come_in_the_order_of_every_combination_sorted(
    options: list[list[tuple[str, int]]],
) -> None:
    assert matching.cheapest_spellings(options) == _old_cheapest_spellings(options)


def test_cheapest_spellings_of_many_misspelt_words_are_none() -> None:
    options = [[("bart", 1), ("bert", 1), ("bort", 1)]] * 40
    assert matching.cheapest_spellings(options) == []
    assert matching.cheapest_spellings(options[:2])[:3] == [
        (2, "bart bart"),
        (2, "bart bert"),
        (2, "bart bort"),
    ]


# --- company names as people write them ---------------------------------------------------------

WRITTEN = [
    _company(f"F{number:015X}", name, "", aka=aka)
    for number, (name, aka) in enumerate(
        [
            ("International Business Machines Corporation", ""),
            ("Koninklijke Philips N.V.", ""),
            ("Zentrix Analytics GmbH", ""),
            ("Bank of Ireland", ""),
            ("Müller und Söhne GmbH", ""),
            ("Coca-Cola Company", ""),
            ("Volvo AB", ""),
            ("Mesa Systems Inc.", ""),
            ("Brightwave Systems Ltd", ""),
            ("Brightwave Technologies Ltd", ""),
            ("Falcon Technologies Corp.", "Falcon"),
            ("Falcon Semiconductor Corp.", ""),
            ("ABM Ltd", ""),
            ("Reynolds Insurance Group Pty Ltd", ""),
            ("Hospital Universitario de Zaragoza S.L.", ""),
            ("Telon Group Inc.", ""),
        ]
    )
]
FALCON_SEMI = WRITTEN[11][0]["guid"]
NADIA = f"{99:032X}"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    people = [_person(NADIA, "Nadia", "Okafor", [(FALCON_SEMI, "Active", "")])]
    connection = _database(tmp_path_factory.mktemp("written") / "w.db", WRITTEN, people)
    yield connection
    connection.close()


def _meant(name: str) -> str:
    return next(row["guid"] for row, _ in WRITTEN if row["name"] == name)


@pytest.mark.parametrize(
    ("typed", "name", "grade"),
    [
        ("IBM", "International Business Machines Corporation", "A-"),
        ("I.B.M.", "International Business Machines Corporation", "A-"),
        ("Philips", "Koninklijke Philips N.V.", "A"),
        ("Royal Philips Naamloze Vennootschap", "Koninklijke Philips N.V.", "A"),
        ("Zentrix", "Zentrix Analytics GmbH", "A-"),
        ("Ireland Bank", "Bank of Ireland", "A-"),
        ("Mueller & Soehne", "Müller und Söhne GmbH", "A"),
        ("CocaCola", "Coca-Cola Company", "A"),
        ("AB Volvo", "Volvo AB", "A-"),
        ("Aktiebolaget Volvo", "Volvo AB", "A"),
        ("Mesa Systems Group", "Mesa Systems Inc.", "A"),
        ("ABM Limited", "ABM Ltd", "A"),
        ("RIG", "Reynolds Insurance Group Pty Ltd", "A-"),  # a word keys cut is an initial
        ("H.U.Z.", "Hospital Universitario de Zaragoza S.L.", "A-"),
        ("Telon Gorup Inc.", "Telon Group Inc.", "A-"),  # a misspelt word keys cut
    ],
)
def test_a_name_written_another_way_is_found(
    written: Database, typed: str, name: str, grade: str
) -> None:
    found = matching.find(written, Query(company_name=typed))
    assert found is not None, typed
    assert (found.company_guid, found.grade) == (_meant(name), grade)
    assert found.matched_on == ("company_name",)


@pytest.mark.parametrize(
    "typed",
    [
        "Mesa Industries",  # a generic word put in another's place is another name
        "Brightwave",  # Brightwave Systems or Brightwave Technologies
        "Brightwave Group",
        "Falcon Analytics",  # one company's alias and another's brand, plus a word of neither
        "Zentrix International",  # a brand with a generic word is not the brand
    ],
)
def test_a_name_that_fits_two_ways_or_none_is_no_match(written: Database, typed: str) -> None:
    assert matching.find(written, Query(company_name=typed)) is None


def test_a_person_is_found_at_the_company_their_brand_names(written: Database) -> None:
    found = matching.find(
        written, Query(first_name="Nadia", last_name="Okafor", company_name="Falcon")
    )
    assert found is not None and (found.company_guid, found.contact_guid) == (FALCON_SEMI, NADIA)


def test_a_name_written_another_way_costs_two_statements(written: Database) -> None:
    with statement_budget(written, 2) as run:
        assert matching.find(written, Query(company_name="Royal Philips Holding")) is not None
    assert len(run) == 2


def test_a_known_website_with_the_name_written_another_way_agrees(written: Database) -> None:
    row = WRITTEN[0][0]
    candidate = matching.CompanyCandidate(row)
    probe = matching.Probe.of(Query(company_name="IBM"))
    matching._check_name_and_country(candidate, probe)
    assert candidate.on == {"company_name"} and candidate.penalty == 0


# --- company names as real records write them (issue 38) ---------------------------------------

RECORDS = [
    _company(f"G{number:015X}", name, "", country=country, aka=aka)
    for number, (name, country, aka) in enumerate(
        [
            ("Koninklijke Philips Electronics N.V.", "Netherlands", ""),
            ("Kobe Steel, Ltd.", "Japan", ""),
            ("Boston Scientific Corporation", "United States", ""),
            ("Fairview Ltd", "United Kingdom", ""),
            ("Fairview London Ltd", "United Kingdom", ""),
            ("Signify N.V.", "Netherlands", "Philips Lighting N.V. | Signify"),
            ("Acme N.V.", "Netherlands", ""),
            ("Royal Acme Electronics B.V.", "Netherlands", ""),
            ("Lumen Analytics Inc.", "United States", ""),
            ("Numen Analytics Inc.", "United States", ""),
            ("Zenvia Labs GmbH", "Germany", ""),
            ("Zenvia Health GmbH", "Germany", ""),
        ]
    )
]


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    connection = _database(tmp_path_factory.mktemp("records") / "r.db", RECORDS, [])
    yield connection
    connection.close()


def _record(name: str) -> str:
    return next(row["guid"] for row, _ in RECORDS if row["name"] == name)


def _found_in(db: Database, typed: str) -> str | None:
    found = matching.find(db, Query(company_name=typed))
    return None if found is None else found.company_guid


@pytest.mark.parametrize(
    ("kind", "typed", "name"),
    [
        ("legal form spaced", "Koninklijke Philips Electronics N. V.", "Koninklijke Philips"),
        ("legal form glued", "KONINKLIJKE PHILIPS ELECTRONICSN.V.", "Koninklijke Philips"),
        ("glued, no last dot", "Koninklijke Philips ElectronicsN.V", "Koninklijke Philips"),
        ("comma before", "Koninklijke Philips Electronics, N. V.", "Koninklijke Philips"),
        ("comma after", "Kobe Steel Ltd.,", "Kobe Steel"),
        ("place after commas", "Koninklijke Philips Electronics N.V., Eindhoven, NL", "Kon"),
        ("place after te", "Philips Electronics te Eindhoven", "Koninklijke Philips"),
        ("place in brackets", "Boston Scientific (Boston)", "Boston Scientific"),
        ("an office after a dash", "Fairview - Paris office", "Fairview Ltd"),
        ("a space typed as a letter", "Kobexsteel", "Kobe Steel"),
        ("a space lost, a legal form", "Kobesteel Ltd", "Kobe Steel"),
        ("a space one letter off", "Fairviewl Ondon Ltd", "Fairview London"),
        ("a legal form glued", "KOBE STEELLTD.", "Kobe Steel"),
        ("first letter dropped", "Obe Steel", "Kobe Steel"),
        ("first letter changed", "Hobe Steel", "Kobe Steel"),
        ("first letter doubled", "Kkobe Steel", "Kobe Steel"),
        ("typos in long, generic words", "Koniklijke Philips Electonics N.V.", "Koninklijke"),
        ("two errors in one name", "Hobe Stel", "Kobe Steel"),
        ("former name", "Philips Lighting", "Signify"),
        ("former name misspelt", "Philips Lightnig B.V.", "Signify"),
        ("former name, legal form spaced", "Philips Lighting N. V.", "Signify"),
    ],
)
def test_a_name_as_real_records_write_it_is_found(
    records: Database, kind: str, typed: str, name: str
) -> None:
    meant = next(row["guid"] for row, _ in RECORDS if row["name"].startswith(name))
    assert _found_in(records, typed) == meant, kind


@pytest.mark.parametrize(
    ("kind", "typed", "name"),
    [
        (
            "a place that starts a name is kept",
            "Boston Scientific",
            "Boston Scientific Corporation",
        ),
        ("a place that ends a name is kept", "Fairview London", "Fairview London Ltd"),
        ("also in brackets, when the name has it", "Fairview (London)", "Fairview London Ltd"),
        ("a place cut only when the rest is a name", "Fairview, Paris", "Fairview Ltd"),
        ("the exact name wins: the group", "Acme", "Acme N.V."),
        ("the group written another way", "Royal Acme", "Acme N.V."),
        ("the subsidiary by its own name", "Acme Electronics", "Royal Acme Electronics B.V."),
    ],
)
def test_which_company_a_name_finds_follows_the_rules(
    records: Database, kind: str, typed: str, name: str
) -> None:
    assert _found_in(records, typed) == _record(name), kind


@pytest.mark.parametrize(
    ("kind", "typed"),
    [
        ("a first letter that makes two names", "Xumen Analytics"),
        ("a brand of two companies, no company of that name", "Zenvia"),
        ("a place is not a name", "Eindhoven, NL"),
        ("a name of unknown words and a place", "Blorvex (Boston)"),
    ],
)
def test_a_name_that_fits_two_companies_or_none_is_still_no_match(
    records: Database, kind: str, typed: str
) -> None:
    assert _found_in(records, typed) is None, kind


def test_a_name_found_without_its_place_is_less_sure(records: Database) -> None:
    plain = matching.find(records, Query(company_name="Kobe Steel Ltd"))
    placed = matching.find(records, Query(company_name="Kobe Steel Ltd (Kobe)"))
    assert plain is not None and placed is not None and placed.company_guid == plain.company_guid
    assert placed.score == pytest.approx(plain.score - matching.PLACE_COST)


def test_a_name_with_a_place_agrees_with_the_website_given_beside_it(records: Database) -> None:
    row = RECORDS[0][0]
    candidate = matching.CompanyCandidate(row)
    probe = matching.Probe.of(Query(company_name="Philips Electronics N.V. (Eindhoven)"))
    matching._check_name_and_country(candidate, probe)
    assert candidate.on == {"company_name"} and candidate.penalty == 0


@pytest.mark.parametrize(
    ("name", "cut"),
    [
        ("Philips N.V., Eindhoven, NL", "Philips N.V."),
        ("Philips B.V. te Utrecht", "Philips B.V."),
        ("Acme (Boston)", "Acme"),
        ("Acme Ltd - London office", "Acme Ltd"),
        ("Acme, Inc., Boston, MA", "Acme, Inc."),
        ("Fredriksson Fastigheter AB, Gothenburg, SE", "Fredriksson Fastigheter AB"),
        ("Fredriksson Fastigheter, SE", ""),  # a country, but a legal form first
        ("Acme Ltd (UK)", "Acme Ltd"),
        ("Boston Scientific", ""),
        ("Acme, Inc.", ""),
        ("Acme, NV", ""),  # Nevada, but a legal form first
        ("Acme (Holdings)", ""),
        ("Acme - Widgets", ""),
        ("(Boston)", ""),
    ],
)
def test_without_place_cuts_only_a_known_place(name: str, cut: str) -> None:
    assert matching.without_place(name) == cut
