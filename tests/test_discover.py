"""Discover's filters, order, paging and Stats on a small imported company (tests/data/discover_*).

Lonestar (A1, Austin) has 17 current people in Texas, Denver, Köln and Toronto, and Rosa Ruiz,
who left it for Hill Country (B2). Distances from Austin: Round Rock 18 miles, Georgetown 26,
San Marcos 30, San Antonio 74, Houston 147, Dallas 183.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

from server import discover, importer, privacy
from server.clock import iso
from server.errors import InvalidParameter, MissingIdentifier, NotFound
from server.storage import db as database
from server.storage import store
from tests.helpers.constants import DATA
from tests.helpers.discover_data import EVERYONE, HILL_COUNTRY, LONESTAR, TEXAS
from tests.helpers.postgres import BACKENDS, PostgresServer


@pytest.fixture(scope="module", params=BACKENDS)
def db(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Database]:
    """The discover dataset, imported once per module on each backend."""
    if request.param == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres")
        connection = database.connect(server.create_database(server.migrated_template()))
    else:
        connection = database.connect(tmp_path_factory.mktemp("discover") / "d.db")
    report = importer.import_files(
        connection,
        companies=DATA / "discover_companies.csv",
        contacts=DATA / "discover_contacts.csv",
    )
    assert report.errors == [] and report.contacts == 20
    yield connection
    connection.close()


def _discover(db: Database, tier: str = "enterprise_standard", **body: Any) -> dict[str, Any]:
    body.setdefault("company_guid", LONESTAR)
    body.setdefault("accuracy", "B")
    return discover.discover(db, tier, discover.DiscoverRequest.model_validate(body))["data"]


def _names(db: Database, **body: Any) -> list[str]:
    return [c["contact_last_name"] for c in _discover(db, **body)["contacts"]]


def _found(db: Database, **body: Any) -> set[str]:
    names = _names(db, **body)
    assert len(names) == len(set(names))
    return set(names)


# --- order, grades ---------------------------------------------------------------------------


def test_lists_current_people_best_grade_then_most_senior_then_name(db: Database) -> None:
    data = _discover(db)
    assert [c["contact_last_name"] for c in data["contacts"]] == EVERYONE
    assert (data["total_count"], data["page_number"], data["total_pages"]) == (17, 1, 1)


def test_accuracy_is_a_minimum_grade_and_a_plus_by_default(db: Database) -> None:
    assert _names(db, accuracy="A+") == EVERYONE[:10]
    assert _names(db, accuracy="a") == EVERYONE[:13]
    assert _names(db, accuracy="A-") == EVERYONE[:15]
    body = {"company_guid": LONESTAR}
    data = discover.discover(db, "pro", discover.DiscoverRequest.model_validate(body))["data"]
    assert [c["contact_last_name"] for c in data["contacts"]] == EVERYONE[:10]


def test_people_who_left_are_listed_at_their_new_company_only(db: Database) -> None:
    assert "Ruiz" not in _found(db)
    assert _found(db, company_guid=HILL_COUNTRY) == {"Ruiz", "Stone"}


# --- titles ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("titles", "expected"),
    [
        (["VP Sales"], {"Adams", "Irwin"}),  # "Vice President of Sales", "SVP Sales"
        (["Vice-President, Sales"], {"Adams", "Irwin"}),
        (["CTO"], {"Fox", "King"}),  # "Chief Technology Officer", "CTO"
        (["chief technology officer"], {"Fox", "King"}),
        (["Software Engineer"], {"Cole", "Jones", "Reed"}),  # "Sr. Software Engineer" too
        (["Senior Software Engineer"], {"Cole"}),
        (["Sr Software Engineer"], {"Cole"}),
        (["VP"], {"Adams", "Brown", "Irwin", "Nash"}),  # a level: SVPs are VPs
        (["Director"], {"Diaz", "Moore"}),
        (["Marketing"], {"Brown", "Lopez", "Moore"}),  # a function
        (["Sales"], {"Adams", "Evans", "Irwin", "Moore", "Ortiz", "Park"}),  # Vertriebsleiter
        (["Director of Sales"], {"Moore"}),  # a level and a function
        (["HR"], {"Hill"}),
        (["Head of Procurement"], {"Gray"}),
        (["Procurement"], {"Gray"}),
        (["CTO", "VP Sales"], {"Adams", "Fox", "Irwin", "King"}),
        (["Chief Marketing Officer"], set()),
    ],
)
def test_title_filter(db: Database, titles: list[str], expected: set[str]) -> None:
    assert _found(db, jobTitle=titles) == expected


# --- places and radius -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("locations", "expected"),
    [
        (["Austin, TX"], {"Adams", "Brown", "Cole", "Diaz"}),
        (["austin texas"], {"Adams", "Brown", "Cole", "Diaz"}),
        (["78664"], {"Evans", "Fox"}),
        (["Round Rock, Texas"], {"Evans", "Fox"}),
        (["TX"], TEXAS),
        (["Texas"], TEXAS),
        (["Colorado"], {"Ortiz"}),
        (["Denver, CO", "Dallas"], {"Ortiz", "Moore", "Nash"}),
        (["Germany"], {"Park"}),
        (["Cologne"], {"Park"}),  # stored as "Köln"
        (["Toronto, Canada"], {"Reed"}),
        (["CA"], set()),  # California, not Canada
        (["Canada"], {"Reed"}),
        (["USA"], TEXAS | {"Ortiz"}),
    ],
)
def test_place_filter(db: Database, locations: list[str], expected: set[str]) -> None:
    assert _found(db, location=locations) == expected


@pytest.mark.parametrize(
    ("locations", "miles", "expected"),
    [
        (["Austin, TX"], 20, {"Adams", "Brown", "Cole", "Diaz", "Evans", "Fox"}),  # Round Rock
        (["Austin, TX"], 27, {"Adams", "Brown", "Cole", "Diaz", "Evans", "Fox", "Gray", "Hill"}),
        # 100 miles: San Antonio in, Houston (147) and Dallas (183) out
        (["Austin, TX"], 100, TEXAS - {"King", "Lopez", "Moore", "Nash"}),
        (["78701"], 20, {"Adams", "Brown", "Cole", "Diaz", "Evans", "Fox"}),
        (["Dallas, TX"], 10, {"Moore", "Nash"}),
        (["Round Rock, TX", "Houston"], 5, {"Evans", "Fox", "King", "Lopez"}),
        # a state is an area: everyone in it, and anyone within the radius of its point
        (["Colorado"], 10, {"Ortiz"}),
    ],
)
def test_radius_filter(db: Database, locations: list[str], miles: int, expected: set[str]) -> None:
    assert _found(db, location=locations, within_miles=miles) == expected


def test_radius_reports_each_distance_to_the_nearest_place(db: Database) -> None:
    contacts = _discover(db, location=["Austin, TX", "Dallas, TX"], within_miles=30)["contacts"]
    miles = {c["contact_last_name"]: c["distance_miles"] for c in contacts}
    assert miles["Adams"] < 1 and miles["Moore"] < 1
    assert 15 < miles["Evans"] < 20 and 25 < miles["Irwin"] <= 30
    assert "distance_miles" not in _discover(db, location=["Austin, TX"])["contacts"][0]


def test_filters_combine(db: Database) -> None:
    near_austin = {"location": ["Austin, TX"], "within_miles": 50}
    assert _found(db, jobTitle=["CTO"], **near_austin) == {"Fox"}
    assert _found(db, jobTitle=["CTO"], accuracy="A+", location=["TX"]) == {"Fox", "King"}
    assert _found(db, jobTitle=["Sales", "Engineer"], location=["Texas"], accuracy="A") == {
        "Adams",
        "Evans",
        "Irwin",
        "Jones",
        "Moore",
    }


# --- paging and Stats ------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 2, 5, 16, 17, 100])
def test_pages_concatenated_are_the_unpaged_list(db: Database, size: int) -> None:
    pages = [
        _discover(db, pagination_required=True, page_size=size, page_number=number)
        for number in range(1, math.ceil(17 / size) + 2)
    ]
    assert {page["total_pages"] for page in pages} == {math.ceil(17 / size)}
    assert {page["total_count"] for page in pages} == {17}
    assert all(len(page["contacts"]) == size for page in pages[:-2])
    assert pages[-1]["contacts"] == []  # past the last page: empty, not an error
    listed = [c["contact_last_name"] for page in pages for c in page["contacts"]]
    assert listed == EVERYONE


def test_max_contacts_caps_the_total_and_the_pages(db: Database) -> None:
    data = _discover(db, max_contacts=7, pagination_required=True, page_size=3, page_number=3)
    assert (data["total_count"], data["total_pages"]) == (7, 3)
    assert [c["contact_last_name"] for c in data["contacts"]] == EVERYONE[6:7]
    assert _names(db, max_contacts=4) == EVERYONE[:4]
    assert _names(db, max_contacts=4, pagination=True, page_size=2, page_number=2) == EVERYONE[2:4]


def test_without_paging_page_size_and_number_are_ignored(db: Database) -> None:
    data = _discover(db, page_size=2, page_number=3)
    assert (len(data["contacts"]), data["page_number"], data["page_size"]) == (17, 1, 10_000)


def test_stats_counts_what_discover_lists(db: Database) -> None:
    filters: list[dict[str, Any]] = [
        {},
        {"location": ["TX"]},
        {"jobTitle": ["VP", "Software Engineer"]},
        {"location": ["Austin, TX"], "within_miles": 30, "accuracy": "A"},
        {"max_contacts": 5},
    ]
    for body in filters:
        stats = _discover(db, mode="stats", **body)
        assert "contacts" not in stats
        assert stats["total_count"] == _discover(db, **body)["total_count"], body


def test_stats_counts_by_level_and_function(db: Database) -> None:
    stats = _discover(db, mode="Stats", location=["Houston, TX", "Dallas, TX"])
    assert stats["total_count"] == 4  # King (CTO), Lopez, Moore, Nash
    levels = {level: n for level, n in stats["by_level"].items() if n}
    assert levels == {"Founder/CXO": 1, "VP": 1, "Director": 1, "Manager": 1}
    functions = {function: n for function, n in stats["by_function"].items() if n}
    assert functions == {
        "Top Management": 1,
        "Sales": 1,
        "Marketing": 2,
        "Engineering and Development": 2,
    }
    assert len(stats["by_level"]) == 9 and len(stats["by_function"]) == 17


# --- the suppression list --------------------------------------------------------------------

ADAMS = "D15C00000000000000000000000000C1"  # Ava Adams, Austin, TX


def _suppress(db: Database, contact_guid: str, email: str) -> None:
    """What `privacy suppress --email` does: the person's rows deleted and the hash listed."""
    found = privacy.email(email)
    assert found is not None
    row = {"hash": privacy.hasher(b"secret")(found), "kind": found.kind, "action": "suppress"}
    row |= {"reason": "", "actor": "test", "created_at": iso(datetime(2025, 4, 10, tzinfo=UTC))}
    with database.write(db):
        db.execute("DELETE FROM employments WHERE contact_guid = ?", [contact_guid])
        db.execute("DELETE FROM contacts WHERE guid = ?", [contact_guid])
        store.add_suppressions(db, [row])


@pytest.mark.both_backends
def test_a_suppressed_person_is_neither_listed_nor_counted(db_path: Path) -> None:
    fresh = database.connect(db_path)
    importer.import_files(
        fresh, companies=DATA / "discover_companies.csv", contacts=DATA / "discover_contacts.csv"
    )
    before = _discover(fresh, mode="stats", location=["TX"])
    _suppress(fresh, ADAMS, "ava.adams@lonestar-discover.com")
    assert _found(fresh) == set(EVERYONE) - {"Adams"}
    assert _found(fresh, location=["TX"]) == TEXAS - {"Adams"}
    first_page = _discover(fresh, pagination=True, page_size=5, page_number=1)["contacts"]
    assert [c["contact_last_name"] for c in first_page] == ["Fox", "King", "Irwin", "Moore", "Park"]
    after = _discover(fresh, mode="stats", location=["TX"])
    assert (before["total_count"], after["total_count"]) == (len(TEXAS), len(TEXAS) - 1)
    assert after["by_level"]["VP"] == before["by_level"]["VP"] - 1  # Adams: VP of Sales
    assert _discover(fresh, mode="stats")["total_count"] == len(EVERYONE) - 1
    fresh.close()


# --- the contact, by tier --------------------------------------------------------------------


def test_a_contact_has_the_vendor_fields(db: Database) -> None:
    (ava,) = _discover(db, jobTitle=["Vice President of Sales"], location=["78701"])["contacts"]
    assert ava == {
        "contact_guid": "D15C00000000000000000000000000C1",
        "contact_full_name": "Ava Adams",
        "contact_first_name": "Ava",
        "contact_last_name": "Adams",
        "contact_job_title": "Vice President of Sales",
        "contact_level": ["VP"],
        "contact_function": ["Sales"],
        "contact_sub_function": ["Sales - Generic"],
        "contact_email": "ava.adams@lonestar-discover.com",
        "contact_accuracy": "A+",
        "contact_work_location_city": "Austin",
        "contact_work_location_state": "TX",
        "contact_work_location_country": "United States",
        "contact_work_location_zipcode": "78701",
        "contact_work_location_phone": "",
        "contact_direct_dial1": "",
        "contact_direct_dial2": "",
        "contact_profile_url": "",
    }


@pytest.mark.parametrize(
    ("tier", "dial"),
    [
        ("enterprise_standard", ""),
        ("enterprise_plus", "+1 512-555-XXXX"),
        ("pro", "+1 512-555-XXXX"),
    ],
)
def test_direct_dials_by_tier(db: Database, tier: str, dial: str) -> None:
    (ava,) = _discover(db, tier, jobTitle=["Vice President of Sales"], location=["78701"])[
        "contacts"
    ]
    assert ava["contact_direct_dial1"] == dial


# --- refused requests ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "error", "words"),
    [
        ({"company_guid": None}, MissingIdentifier, "company_guid is required"),
        ({"company_guid": "  "}, MissingIdentifier, "company_guid is required"),
        ({"company_guid": "XYZ"}, InvalidParameter, "16 hexadecimal"),
        ({"company_guid": "FFFFFFFFFFFFFFFF"}, NotFound, "FFFFFFFFFFFFFFFF"),
        ({"mode": "Everything"}, InvalidParameter, "mode must be Discover or Stats"),
        ({"accuracy": "C"}, InvalidParameter, "accuracy must be one of A+, A, A-, B"),
        ({"within_miles": 20}, InvalidParameter, "within_miles needs location"),
        ({"location": ["Xyzzyville, QQ", "Austin"]}, InvalidParameter, "'Xyzzyville, QQ'"),
        ({"jobTitle": ["CTO", "&&"]}, InvalidParameter, "jobTitle[1] has no words"),
    ],
)
def test_refuses(db: Database, body: dict[str, Any], error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words.replace("[", r"\[").replace("+", r"\+")):
        _discover(db, **body)


def test_the_lowercase_guid_of_a_company_is_its_guid(db: Database) -> None:
    assert _discover(db, company_guid=LONESTAR.lower())["company_guid"] == LONESTAR


def test_order_is_total_over_every_filter_combination(db: Database) -> None:
    """No two listed people compare equal: the order never depends on the plan SQLite picks."""
    for titles, places in itertools.product([[], ["Sales"], ["VP", "CTO"]], [[], ["TX"]]):
        names = _names(db, jobTitle=titles, location=places)
        assert names == [name for name in EVERYONE if name in set(names)]
