"""Offline geography: countries, states, cities, ZIP codes and text resolved to points."""

from __future__ import annotations

import dataclasses
import timeit

import pytest

from server.places import (
    Location,
    Place,
    coordinates,
    country_code,
    country_name,
    global_regions,
    haversine_miles,
    largest_cities,
    locate,
    location_tokens,
    place_key,
    us_state_code,
    us_state_name,
)


def miles_from(found: Location | tuple[float, float] | None, lat: float, lon: float) -> float:
    assert found is not None
    point = (found.latitude, found.longitude) if isinstance(found, Location) else found
    return haversine_miles(point[0], point[1], lat, lon)


def test_haversine_austin_to_dallas() -> None:
    assert haversine_miles(30.2672, -97.7431, 32.7767, -96.7970) == pytest.approx(182, abs=3)
    assert haversine_miles(30.0, -97.0, 30.0, -97.0) == 0.0
    assert haversine_miles(0.0, 0.0, 0.0, 180.0) == pytest.approx(12_436.8, abs=1)


def test_locate_city_and_state_code() -> None:
    found = locate("Austin, TX")
    assert found is not None
    assert (found.kind, found.city, found.state_code, found.country_code) == (
        "city",
        "Austin",
        "TX",
        "US",
    )
    assert miles_from(found, 30.27, -97.74) < 10
    assert locate("austin, texas") == found
    assert locate("Austin TX") == found
    assert locate("Austin, TX, USA") == found


@pytest.mark.parametrize("text", ["78701", "78701-1234", " 78701 "])
def test_locate_zip(text: str) -> None:
    found = locate(text)
    assert found is not None
    assert (found.kind, found.zipcode, found.city, found.state_code, found.country_code) == (
        "zip",
        "78701",
        "Austin",
        "TX",
        "US",
    )
    assert miles_from(found, 30.27, -97.74) < 2


def test_locate_unknown_or_military_zip_is_none() -> None:
    assert locate("00000") is None
    assert locate("09001") is None  # an APO code: zipcodes files it at 0, 0


def test_a_trailing_zip_wins_only_where_it_agrees() -> None:
    found = locate("Austin, TX 78701")
    assert found is not None and (found.kind, found.zipcode) == ("zip", "78701")
    paris = locate("Paris, 75001")  # a French postcode, also a Texas ZIP
    assert paris is not None and (paris.kind, paris.country_code) == ("city", "FR")


@pytest.mark.parametrize("text", ["Texas", "TX", "tx", " texas "])
def test_locate_us_state(text: str) -> None:
    found = locate(text)
    assert found is not None
    assert (found.kind, found.state_code, found.country_code, found.city) == (
        "state",
        "TX",
        "US",
        "",
    )
    assert 26 < found.latitude < 36.5 and -106.6 < found.longitude < -93.5


def test_a_bare_two_letter_code_is_a_us_state_first() -> None:
    found = locate("CA")
    assert found is not None and (found.kind, found.state_code) == ("state", "CA")
    assert country_code("CA") == "CA"  # while country_code reads it as Canada


@pytest.mark.parametrize(
    ("text", "code", "lat", "lon"),
    [
        ("UK", "GB", 51.51, -0.13),
        ("United Kingdom", "GB", 51.51, -0.13),
        ("Germany", "DE", 52.52, 13.41),
        ("DEU", "DE", 52.52, 13.41),
        ("United States", "US", 38.90, -77.04),
        ("Canada", "CA", 45.42, -75.70),
    ],
)
def test_locate_country_is_its_capital(text: str, code: str, lat: float, lon: float) -> None:
    found = locate(text)
    assert found is not None
    assert (found.kind, found.country_code, found.city, found.state_code) == (
        "country",
        code,
        "",
        "",
    )
    assert miles_from(found, lat, lon) < 10


@pytest.mark.parametrize("text", ["München, Germany", "Munich", "munchen", "MÜNCHEN", "Munich, DE"])
def test_locate_munich_by_any_name(text: str) -> None:
    found = locate(text)
    assert found is not None
    assert (found.kind, found.city, found.country_code) == ("city", "Munich", "DE")
    assert miles_from(found, 48.14, 11.58) < 5


@pytest.mark.parametrize(
    ("text", "city", "state_code", "country"),
    [
        ("London, UK", "London", "ENG", "GB"),
        ("London", "London", "ENG", "GB"),
        ("London, ON", "London", "ON", "CA"),
        ("London, Ontario, Canada", "London", "ON", "CA"),
        ("Paris, France", "Paris", "", "FR"),
        ("Paris, TX", "Paris", "TX", "US"),
        ("Paris", "Paris", "", "FR"),
        ("Cologne", "Köln", "", "DE"),
        ("Zurich", "Zürich", "", "CH"),
        ("sao paulo", "São Paulo", "", "BR"),
        ("New York, NY", "New York City", "NY", "US"),
        ("Washington, DC", "Washington", "DC", "US"),
        ("Washington, D.C.", "Washington", "DC", "US"),
        ("St. Louis, MO", "St. Louis", "MO", "US"),
        ("Saint Louis, Missouri", "St. Louis", "MO", "US"),
        ("Winston Salem, NC", "Winston-Salem", "NC", "US"),
        ("Atlanta, Georgia", "Atlanta", "GA", "US"),
        ("Tbilisi, Georgia", "Tbilisi", "", "GE"),
        ("Perth, WA", "Perth", "WA", "AU"),
        ("Vancouver, WA", "Vancouver", "WA", "US"),
        ("Vancouver", "Vancouver", "BC", "CA"),
        ("Toronto, ON", "Toronto", "ON", "CA"),
        ("Sydney, NSW", "Sydney", "NSW", "AU"),
        ("Edinburgh, Scotland", "Edinburgh", "SCT", "GB"),
        ("Munich, Bavaria", "Munich", "", "DE"),  # an unknown qualifier is ignored
        ("Lyon France", "Lyon", "", "FR"),
        ("Springfield", "Springfield", "MO", "US"),  # the most populous namesake
    ],
)
def test_locate_city(text: str, city: str, state_code: str, country: str) -> None:
    found = locate(text)
    assert found is not None
    assert (found.kind, found.city, found.state_code, found.country_code, found.zipcode) == (
        "city",
        city,
        state_code,
        country,
        "",
    )


@pytest.mark.parametrize(
    ("text", "state_code", "country"),
    [
        ("New York", "NY", "US"),
        ("Georgia", "GA", "US"),
        ("Washington", "WA", "US"),
        ("Puerto Rico", "PR", "US"),
        ("Ontario", "ON", "CA"),
        ("Victoria", "VIC", "AU"),
    ],
)
def test_locate_prefers_a_region_to_a_namesake_city(
    text: str, state_code: str, country: str
) -> None:
    found = locate(text)
    assert found is not None
    assert (found.kind, found.state_code, found.country_code) == ("state", state_code, country)


@pytest.mark.parametrize(
    "text", ["", "   ", ",", "asdfgh", "Smallville, TX", "Austin, France", "Narnia Land"]
)
def test_locate_unresolvable_is_none(text: str) -> None:
    assert locate(text) is None


def test_locate_is_fast_once_warm() -> None:
    queries = ["Austin, TX", "78701", "Texas", "UK", "München, Germany", "Springfield", "nowhere"]
    for text in queries:
        locate(text)
    best = min(timeit.repeat(lambda: [locate(t) for t in queries], number=200, repeat=5))
    assert best / (200 * len(queries)) < 20e-6


def test_coordinates_city_and_state() -> None:
    point = coordinates("Round Rock", "TX", "", "United States")
    assert miles_from(point, 30.51, -97.68) < 3
    assert coordinates("round rock", "Texas", "", "") == point


def test_coordinates_zip_first() -> None:
    by_zip = coordinates("Round Rock", "TX", "78701", "US")
    assert miles_from(by_zip, 30.27, -97.74) < 2
    assert miles_from(coordinates("", "", "2134", "USA"), 42.35, -71.13) < 3  # lost leading zero
    assert miles_from(coordinates("", "MA", "02134-1234", ""), 42.35, -71.13) < 3


def test_coordinates_ignores_a_zip_outside_the_us() -> None:
    berlin = coordinates("Berlin", "", "10115", "Germany")
    assert miles_from(berlin, 52.52, 13.41) < 5
    munich = coordinates("Munich", "Bavaria", "80331", "")
    assert miles_from(munich, 48.14, 11.58) < 5
    assert coordinates("", "", "2134", "") is None  # four digits, and nothing says US


def test_coordinates_city_country_then_city() -> None:
    assert miles_from(coordinates("Paris", "", "", "France"), 48.85, 2.35) < 5
    assert miles_from(coordinates("Paris", "TX", "", "US"), 33.66, -95.56) < 5
    assert miles_from(coordinates("Munich", "Bavaria", "", "Germany"), 48.14, 11.58) < 5
    assert miles_from(coordinates("Paris", "", "", ""), 48.85, 2.35) < 5


def test_coordinates_unknown() -> None:
    assert coordinates("", "", "", "") is None
    assert coordinates("Austin", "", "", "Germany") is None
    assert coordinates("Smallville", "KS", "", "US") is None


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("UK", "GB"),
        ("U.K.", "GB"),
        ("Great Britain", "GB"),
        ("England", "GB"),
        ("United Kingdom", "GB"),
        ("gbr", "GB"),
        ("USA", "US"),
        ("U.S.", "US"),
        ("U.S.A.", "US"),
        ("us", "US"),
        ("America", "US"),
        ("United States of America", "US"),
        ("South Korea", "KR"),
        ("Korea, Republic of", "KR"),
        ("Russia", "RU"),
        ("Russian Federation", "RU"),
        ("Vietnam", "VN"),
        ("Viet Nam", "VN"),
        ("Côte d'Ivoire", "CI"),
        ("Ivory Coast", "CI"),
        ("Czech Republic", "CZ"),
        ("Holland", "NL"),
        ("Germany", "DE"),
        ("DE", "DE"),
        ("Kosovo", "XK"),
    ],
)
def test_country_code(text: str, code: str) -> None:
    assert country_code(text) == code


@pytest.mark.parametrize("text", ["", "Narnia", "Texas", "ZZ"])
def test_country_code_unknown(text: str) -> None:
    assert country_code(text) is None


def test_country_name() -> None:
    assert country_name("US") == "United States"
    assert country_name("GB") == "United Kingdom"
    assert country_name("DE") == "Germany"
    assert country_name("KR") == "South Korea"
    assert country_name("XK") == "Kosovo"
    assert country_name("usa") == "United States"
    assert country_name("ZZ") == ""


def test_us_states() -> None:
    assert us_state_code("Texas") == us_state_code("tx") == us_state_code("TX") == "TX"
    assert us_state_code("District of Columbia") == us_state_code("D.C.") == "DC"
    assert us_state_code("Puerto Rico") == "PR"
    assert us_state_code("Ontario") is None
    assert us_state_code("Germany") is None
    assert us_state_name("TX") == "Texas"
    assert us_state_name("ny") == "New York"
    assert us_state_name("ZZ") == ""


@pytest.mark.parametrize(
    ("code", "region"),
    [
        ("US", "North America"),
        ("CA", "North America"),
        ("MX", "LATAM"),
        ("BR", "LATAM"),
        ("JM", "LATAM"),
        ("GB", "EMEA"),
        ("DE", "EMEA"),
        ("ZA", "EMEA"),
        ("AE", "EMEA"),
        ("IL", "EMEA"),
        ("RU", "EMEA"),
        ("IN", "APAC"),
        ("JP", "APAC"),
        ("SG", "APAC"),
        ("AU", "APAC"),
        ("nz", "APAC"),
    ],
)
def test_global_regions(code: str, region: str) -> None:
    assert global_regions(code) == (region,)


def test_global_regions_unknown() -> None:
    assert global_regions("ZZ") == ()
    assert global_regions("AQ") == ()


def test_largest_us_cities() -> None:
    top = largest_cities("US", 5)
    assert len(top) == 5
    assert top[0] == Place(
        city="New York City",
        state="New York",
        state_code="NY",
        country="United States",
        country_code="US",
        zipcode=top[0].zipcode,
        latitude=40.71427,
        longitude=-74.00597,
        population=8_804_190,
    )
    assert top[0].zipcode.startswith("10")
    assert {"New York City", "Los Angeles", "Chicago"} <= {place.city for place in top}
    assert largest_cities("us", 5) == top


def test_largest_cities_order_and_zip_codes() -> None:
    cities = largest_cities("US", 400)
    keys = [(-place.population, place.city) for place in cities]
    assert keys == sorted(keys)
    for place in cities:
        assert len(place.zipcode) == 5 and place.zipcode.isdigit(), place
        assert place.state == us_state_name(place.state_code), place
        found = locate(place.zipcode)
        assert found is not None and found.state_code == place.state_code, place
        assert miles_from(found, place.latitude, place.longitude) < 25, place


def test_largest_cities_elsewhere() -> None:
    london = largest_cities("GB", 1)[0]
    assert (london.city, london.state, london.state_code, london.country, london.zipcode) == (
        "London",
        "England",
        "ENG",
        "United Kingdom",
        "",
    )
    berlin = largest_cities("DE", 1)[0]
    assert (berlin.city, berlin.state, berlin.state_code, berlin.country) == (
        "Berlin",
        "",
        "",
        "Germany",
    )
    assert largest_cities("ZZ", 3) == []
    assert largest_cities("US", 0) == []


@pytest.mark.parametrize(
    ("city", "country", "code", "state"),
    [
        ("Calgary", "CA", "AB", "Alberta"),
        ("Vancouver", "CA", "BC", "British Columbia"),
        ("Winnipeg", "CA", "MB", "Manitoba"),
        ("Fredericton", "CA", "NB", "New Brunswick"),
        ("St. John's", "CA", "NL", "Newfoundland and Labrador"),
        ("Halifax", "CA", "NS", "Nova Scotia"),
        ("Toronto", "CA", "ON", "Ontario"),
        ("Charlottetown", "CA", "PE", "Prince Edward Island"),
        ("Montréal", "CA", "QC", "Quebec"),
        ("Regina", "CA", "SK", "Saskatchewan"),
        ("Whitehorse", "CA", "YT", "Yukon"),
        ("Yellowknife", "CA", "NT", "Northwest Territories"),
        ("Canberra", "AU", "ACT", "Australian Capital Territory"),
        ("Sydney", "AU", "NSW", "New South Wales"),
        ("Darwin", "AU", "NT", "Northern Territory"),
        ("Brisbane", "AU", "QLD", "Queensland"),
        ("Adelaide", "AU", "SA", "South Australia"),
        ("Hobart", "AU", "TAS", "Tasmania"),
        ("Melbourne", "AU", "VIC", "Victoria"),
        ("Perth", "AU", "WA", "Western Australia"),
        ("Cardiff", "GB", "WLS", "Wales"),
        ("Belfast", "GB", "NIR", "Northern Ireland"),
        ("Glasgow", "GB", "SCT", "Scotland"),
    ],
)
def test_province_codes_match_geonames(city: str, country: str, code: str, state: str) -> None:
    place = next(p for p in largest_cities(country, 10_000) if p.city == city)
    assert (place.state_code, place.state) == (code, state)


@pytest.mark.parametrize("country", ["CA", "AU", "GB"])
def test_every_city_of_a_mapped_country_has_a_province(country: str) -> None:
    assert all(place.state and place.state_code for place in largest_cities(country, 10_000))


def test_results_are_frozen() -> None:
    found = locate("Austin, TX")
    assert found is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.city = "Dallas"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("address", "key"),
    [
        (("Austin", "TX", "78701", "United States"), "|c:US|s:TX|t:austin|z:78701|"),
        (("round rock", "Texas", "", ""), "|c:US|s:TX|t:round rock|"),
        (("Cologne", "", "", "Deutschland"), "|c:DE|t:koln|"),  # GeoNames' name: Köln
        (("Toronto", "Ontario", "", "CA"), "|c:CA|s:ON|t:toronto|"),
        (("Smallville", "KS", "", ""), "|c:US|s:KS|t:smallville|"),  # unknown town: its name
        (("", "", "", ""), ""),
    ],
)
def test_place_key(address: tuple[str, str, str, str], key: str) -> None:
    assert place_key(*address) == key


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Austin, TX", ("|c:US|", "|s:TX|", "|t:austin|")),
        ("78701", ("|z:78701|",)),
        ("Texas", ("|c:US|", "|s:TX|")),
        ("Germany", ("|c:DE|",)),
        ("München", ("|c:DE|", "|t:munich|")),
    ],
)
def test_location_tokens_are_in_the_place_keys_of_addresses_there(
    text: str, tokens: tuple[str, ...]
) -> None:
    location = locate(text)
    assert location is not None and location_tokens(location) == tokens
