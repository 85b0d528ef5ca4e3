"""The demo dataset: realistic companies, offices, contacts and job histories, fixed by a seed.

Names and street words come from Faker's locale providers and `data/dataset_words.json`, job
titles from `data/dataset_titles.csv`; cities, industry codes and title classes from the
places, industry and titles modules. Rows go through store.py, a few thousand per transaction.
"""

from __future__ import annotations

import csv
import importlib
import json
import math
import random
import re
from bisect import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from itertools import accumulate, chain
from pathlib import Path
from typing import Any

import phonenumbers
import zipcodes
from phonenumbers import PhoneNumber, PhoneNumberFormat, PhoneNumberType
from sqlite_utils import Database

from server import facets, industry, places, titles
from server.clock import iso
from server.normalize import company_key, fold, person_key, registrable_domain
from server.records import JOIN, REVENUE_RANGES
from server.storage import db as database
from server.storage import store

DATA = Path(__file__).parent / "data"
Row = dict[str, Any]

COMPANY_BATCH = 2_000
CONTACT_BATCH = 2_500
SUBSIDIARY_SHARE = 0.08
MOVER_SHARE = 0.05
MOVER_SAME_COUNTRY = 0.85
HQ_SHARE = 0.6
DIRECT_DIAL1_SHARE = 0.7
DIRECT_DIAL2_SHARE = 0.2
BIG_COMPANY_CONTACTS = 5_000  # at least three companies this big once there are 100,000 contacts
# Months are counted as year * 12 + month - 1; jobs are seen up to October 2026.
LAST_MONTH = 2026 * 12 + 9
FIRST_MONTH = 1985 * 12
UPDATED_FROM = datetime(2024, 1, 1, tzinfo=UTC)
UPDATED_UNTIL = datetime(2026, 10, 31, 23, 59, 59, tzinfo=UTC)

EMAIL_PATTERNS = (
    ("first.last", 46),
    ("flast", 20),
    ("first", 8),
    ("firstl", 6),
    ("first_last", 8),
    ("last.first", 12),
)
GRADE_WEIGHTS = (("A+", 55), ("A", 30), ("A-", 10), ("B", 5))
# (smallest, largest, share of companies): many small companies, a long tail of giants.
SIZE_BUCKETS = (
    (1, 10, 30.0),
    (11, 50, 27.0),
    (51, 200, 20.0),
    (201, 500, 9.0),
    (501, 1000, 5.5),
    (1001, 5000, 5.5),
    (5001, 10_000, 1.5),
    (10_001, 400_000, 1.5),
)
# The org pyramid: shares of contacts per title tier (the CEO is placed separately).
TIER_SHARES = {
    "ic": 58.0,
    "senior": 14.0,
    "manager": 16.0,
    "head": 2.5,
    "director": 6.0,
    "vp": 2.4,
    "cxo": 0.8,
    "board": 0.3,
}
SMALL_TIER_SHARES = {**TIER_SHARES, "manager": 12.0, "director": 4.0, "vp": 1.5, "cxo": 3.0}
SMALL_COMPANY = 50
NEIGHBOURHOOD_MILES = 6.0  # a "city" this close to a larger one is one of its districts
_NOT_CITIES = ("City of ", "Circoiscrizione", "Circoscrizione", "Zürich (")
SCOPE_BOOST = 5.0  # industry-specific titles (nurses in hospitals) outweigh generic ones
GOVERNMENT_TLDS = {
    "US": ".gov",
    "GB": ".gov.uk",
    "AU": ".gov.au",
    "IN": ".gov.in",
    "SG": ".gov.sg",
    "CA": ".ca",
    "IE": ".ie",
}
EDUCATION_TLDS = {"US": ".edu", "GB": ".ac.uk", "AU": ".edu.au", "IN": ".ac.in", "JP": ".ac.jp"}
NONPROFIT_TLDS = {"GB": ".org.uk", "AU": ".org.au"}
ENGLISH_NAMED = frozenset({"US", "GB", "CA", "AU", "IE", "IN", "SG"})
# Their names follow English forms ("City of Austin", "Austin Community Foundation").
ENGLISH_ONLY_INDUSTRIES = frozenset({"Government Administration", "Nonprofit Organizations"})
ROMANCE = frozenset({"fr", "es", "br", "it", "mx"})
FRENCH_NAMED = frozenset({"FR"})
NON_PROFIT_SHARE = {
    "Nonprofit Organizations": 1.0,
    "Higher Education": 0.6,
    "Hospitals and Health Care": 0.35,
    "Primary and Secondary Education": 0.3,
}
INSTITUTION_INDUSTRIES = frozenset(
    {"Higher Education", "Primary and Secondary Education", "Hospitals and Health Care"}
)
GOVERNMENT_KEPT = 0.3  # a city has only so many agencies: fewer than the industry weight says
PARTNERSHIP_INDUSTRIES = frozenset({"Legal Services", "Accounting", "Management Consulting"})
# Companies named in a real-world shape ("X Holding", "Bank of X", "X & Söhne") besides
# the plain "Surname Noun" and brand names.
REAL_SHAPE_SHARE = 0.33
FORMER_NAME_SHARE = 0.03  # companies that keep an earlier name among their aliases


# --- sampling helpers ------------------------------------------------------------------------


class _Weighted:
    """A fixed weighted choice, drawn with one call to the caller's Random."""

    __slots__ = ("cum", "items", "total")

    def __init__(self, pairs: Iterable[tuple[Any, float]]) -> None:
        pairs = [(item, weight) for item, weight in pairs if weight > 0]
        self.items = [item for item, _ in pairs]
        self.cum = list(accumulate(weight for _, weight in pairs))
        self.total = self.cum[-1]

    def pick(self, rng: random.Random) -> Any:
        return self.items[bisect(self.cum, rng.random() * self.total)]


def _weighted(pairs: Sequence[Sequence[Any]]) -> _Weighted:
    """A _Weighted from JSON-style [item, weight] lists."""
    return _Weighted((item, float(weight)) for item, weight in pairs)


_PATTERNS = _Weighted(EMAIL_PATTERNS)
_GRADES = _Weighted(GRADE_WEIGHTS)
_SIZES = _Weighted((bucket[:2], bucket[2]) for bucket in SIZE_BUCKETS)


def _hex(rng: random.Random, digits: int) -> str:
    return f"{rng.getrandbits(digits * 4):0{digits}X}"


def _timestamp(rng: random.Random, earliest: datetime = UPDATED_FROM) -> str:
    """A moment between `earliest` and the end of October 2026, as the service writes it."""
    span = int((UPDATED_UNTIL - earliest).total_seconds())
    return iso(earliest + timedelta(seconds=rng.randrange(max(span, 1))))


@cache
def _month_text(month: int) -> str:
    return f"{month // 12:04d}-{month % 12 + 1:02d}"


def _month_start(month: int) -> datetime:
    return datetime(month // 12, month % 12 + 1, 1, tzinfo=UTC)


# --- word lists ------------------------------------------------------------------------------


@cache
def _words() -> dict[str, Any]:
    return json.loads((DATA / "dataset_words.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class _Title:
    title: str
    tier: str
    weight: float
    scope: str


@cache
def _titles() -> tuple[_Title, ...]:
    with (DATA / "dataset_titles.csv").open(newline="", encoding="utf-8") as handle:
        rows = csv.DictReader(handle)
        return tuple(_Title(r["title"], r["tier"], float(r["weight"]), r["scope"]) for r in rows)


@dataclass(frozen=True)
class _Names:
    """First names by gender and last names of one Faker locale, with Faker's frequencies."""

    male: _Weighted
    female: _Weighted
    last: _Weighted


def _name_pairs(names: Any) -> list[tuple[str, float]]:
    weights = names.values() if isinstance(names, dict) else [1.0] * len(names)
    pairs = zip(names, weights, strict=True)
    return [(n, float(w)) for n, w in pairs if person_key(n) and not any(c.isdigit() for c in n)]


@cache
def _names(locale: str) -> _Names:
    """Name lists of a Faker locale; Japanese and Chinese in their romanized (Latin) forms."""
    provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
    if locale == "ja_JP":
        male, female = provider.first_romanized_names_male, provider.first_romanized_names_female
        last = provider.last_romanized_names
    elif locale == "zh_CN":
        male = female = provider.first_romanized_names
        last = provider.last_romanized_names
    else:
        male, female = provider.first_names_male, provider.first_names_female
        last = getattr(provider, "unisex_last_names", None) or provider.last_names
    return _Names(
        _Weighted(_name_pairs(male)), _Weighted(_name_pairs(female)), _Weighted(_name_pairs(last))
    )


@cache
def _faker_address_words(locale: str, attribute: str) -> tuple[str, ...]:
    provider = importlib.import_module(f"faker.providers.address.{locale}").Provider
    return tuple(getattr(provider, attribute))


# --- countries: cities, streets, phones ------------------------------------------------------


@dataclass(frozen=True)
class _Country:
    code: str
    name: str
    spec: dict[str, Any]
    cities: tuple[places.Place, ...]
    hq_cities: _Weighted  # index into cities, weighted toward large cities
    name_locales: _Weighted
    legal: dict[str, _Weighted]
    tlds: _Weighted


@cache
def _country(code: str) -> _Country:
    spec = _words()["countries"][code]
    cities = _business_cities(code, spec["cities"])
    hq = _Weighted((i, max(city.population, 1) ** 0.7) for i, city in enumerate(cities))
    legal = {kind: _weighted(pairs) for kind, pairs in spec["legal"].items()}
    return _Country(
        code, places.country_name(code), spec, cities, hq, _weighted(spec["names"]), legal,
        _weighted(spec["tlds"]),
    )  # fmt: skip


def _business_cities(code: str, wanted: int) -> tuple[places.Place, ...]:
    """The largest cities of a country, leaving out districts of a larger city close by."""
    kept: list[places.Place] = []
    for place in places.largest_cities(code, wanted * 3):
        if any(c.isdigit() for c in place.city) or place.city.startswith(_NOT_CITIES):
            continue
        near = (
            places.haversine_miles(p.latitude, p.longitude, place.latitude, place.longitude)
            for p in kept
        )
        if any(miles < NEIGHBOURHOOD_MILES for miles in near):
            continue
        kept.append(place)
        if len(kept) == wanted:
            break
    return tuple(kept)


@cache
def _countries() -> _Weighted:
    return _Weighted((code, spec["weight"]) for code, spec in _words()["countries"].items())


def _display_state(place: places.Place) -> str:
    """The state column: USPS, Canadian and Australian codes; a name elsewhere ("England")."""
    if place.country_code in ("US", "CA", "AU"):
        return place.state_code
    return place.state


def _location(place: places.Place) -> str:
    """ "City, State, Country" as a profile shows it (no state where the country has none)."""
    return ", ".join(part for part in (place.city, place.state, place.country) if part)


@dataclass(frozen=True)
class _StreetStyle:
    """How one country (or Quebec) writes street addresses, from dataset_words.json."""

    formats: _Weighted
    words: tuple[str, ...]
    numbers: tuple[int, int]
    suffixes: _Weighted | None
    titles: tuple[str, ...]
    prefixes: _Weighted | None
    streets: tuple[str, ...]
    secondary: _Weighted


@cache
def _street_style(name: str) -> _StreetStyle:
    spec = _words()["streets"][name]
    prefixes = spec.get("prefixes")
    if "faker_prefixes" in spec:
        prefixes = [(p, 1) for p in _faker_address_words(spec["faker_prefixes"], "street_prefixes")]
    streets = (
        _faker_address_words(spec["faker_streets"], "street_names")
        if "faker_streets" in spec
        else ()
    )
    return _StreetStyle(
        _weighted(spec["formats"]),
        tuple(spec.get("words") or [""]),
        tuple(spec["number"]),
        _weighted(spec["suffixes"]) if "suffixes" in spec else None,
        tuple(spec.get("titles") or ["Straße"]),
        _weighted(prefixes) if prefixes else None,
        streets,
        _weighted(spec.get("secondary") or [["", 1]]),
    )


def _style_name(place: places.Place) -> str:
    if place.country_code == "CA" and place.state_code == "QC":
        return "qc"
    return _words()["countries"][place.country_code]["street"]


_ORDINALS = ("1st", "2nd", "3rd", "4th", "5th", "6th", "7th", "8th", "9th", "10th", "11th", "12th")


def _street(rng: random.Random, place: places.Place, names: _Names) -> str:
    """A street address in the country's own form ("1200 Congress Avenue, Suite 400")."""
    style = _street_style(_style_name(place))
    tokens = {
        "num": rng.randint(*style.numbers),
        "word": rng.choice(style.words),
        "surname": names.last.pick(rng),
        "first": names.male.pick(rng),
        "ordinal": rng.choice(_ORDINALS),
        "n": rng.randint(1, 9),
        "n2": rng.randint(1, 40),
        "n3": rng.randint(1, 30),
        "room": rng.randint(101, 1999),
        "letter": rng.choice("ABCDEF"),
        "suffix": style.suffixes.pick(rng) if style.suffixes else "",
        "suffix_title": rng.choice(style.titles),
        "prefix": style.prefixes.pick(rng) if style.prefixes else "",
        "faker_street": rng.choice(style.streets) if style.streets else "",
    }
    street = style.formats.pick(rng).format(**tokens)
    extra = style.secondary.pick(rng).format(**tokens)
    return f"{street}, {extra}" if extra else street


@dataclass(frozen=True)
class _Zip:
    code: str
    latitude: float
    longitude: float
    area_codes: tuple[str, ...]


@cache
def _us_zips() -> dict[tuple[str, str], tuple[_Zip, ...]]:
    """Active standard US ZIP codes by (folded city, state), with their points and area codes."""
    found: dict[tuple[str, str], list[_Zip]] = {}
    for raw in zipcodes.list_all():
        if not raw["active"] or raw["zip_code_type"] != "STANDARD" or raw["lat"] in ("", "0"):
            continue
        item = _Zip(
            raw["zip_code"], float(raw["lat"]), float(raw["long"]), tuple(raw["area_codes"] or ())
        )
        found.setdefault((fold(raw["city"]), raw["state"]), []).append(item)
    return {key: tuple(items) for key, items in found.items()}


def _zip_in(rng: random.Random, place: places.Place) -> _Zip | None:
    """A random ZIP code of a US city (its own point), or None outside the US or when unknown."""
    if place.country_code != "US":
        return None
    city = fold(place.city)
    options = _us_zips().get((city, place.state_code)) or _us_zips().get(
        (city.removesuffix(" city"), place.state_code)
    )
    return rng.choice(options) if options else None


@cache
def _geodata() -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """libphonenumber's place names of dialling prefixes, by calling code of our countries."""
    from phonenumbers.geodata import GEOCODE_DATA  # 0.5 s to load: only when first needed

    codes = {str(phonenumbers.country_code_for_region(c)) for c in _words()["countries"]}
    found: dict[str, list[tuple[str, tuple[str, ...]]]] = {code: [] for code in codes}
    for prefix, descriptions in GEOCODE_DATA.items():
        for size in (1, 2, 3):
            if prefix[:size] in codes:
                found[prefix[:size]].append((prefix[size:], tuple(descriptions.values())))
                break
    return found


@cache
def _area_prefixes(region: str) -> dict[str, tuple[str, ...]]:
    """Folded place name (in any language libphonenumber knows) -> national dialling prefixes."""
    code = str(phonenumbers.country_code_for_region(region))
    fold_cached = cache(fold)
    found: dict[str, list[str]] = {}
    for prefix, descriptions in _geodata().get(code, []):
        for description in descriptions:
            for key in {fold_cached(description), fold_cached(description.split(",")[0])}:
                found.setdefault(key, []).append(prefix)
    return {key: tuple(dict.fromkeys(prefixes)) for key, prefixes in found.items()}


class _Phones:
    """Valid phone numbers of one country: office lines in a city's area, direct lines, mobiles.

    Each number is drawn by changing the last digits of an already valid number, and checked
    again with phonenumbers.
    """

    ATTEMPTS = 400
    FIXED_TYPES = (PhoneNumberType.FIXED_LINE, PhoneNumberType.FIXED_LINE_OR_MOBILE)
    MOBILE_TYPES = (PhoneNumberType.MOBILE, PhoneNumberType.FIXED_LINE_OR_MOBILE)

    def __init__(self, region: str, seed: int) -> None:
        self.region = region
        self.calling_code = phonenumbers.country_code_for_region(region)
        rng = random.Random(f"phones {region} {seed}")
        example = phonenumbers.example_number_for_type(region, PhoneNumberType.FIXED_LINE)
        self.fixed = self._pool(rng, PhoneNumberType.FIXED_LINE, self.FIXED_TYPES) or [example]
        self.mobile = self._pool(rng, PhoneNumberType.MOBILE, self.MOBILE_TYPES) or self.fixed
        self.length = len(phonenumbers.national_significant_number(example))
        # In North America a mobile number looks like any other: use the office's area code.
        self.local_mobiles = self.calling_code == 1

    def _number(self, digits: str, accepted: tuple[int, ...]) -> PhoneNumber | None:
        number = phonenumbers.parse(f"+{self.calling_code}{digits}")
        valid = phonenumbers.is_valid_number_for_region(number, self.region)
        return number if valid and phonenumbers.number_type(number) in accepted else None

    def _pool(self, rng: random.Random, kind: int, accepted: tuple[int, ...]) -> list[PhoneNumber]:
        example = phonenumbers.example_number_for_type(self.region, kind)
        if example is None:
            return []
        digits = phonenumbers.national_significant_number(example)
        pool: list[PhoneNumber] = []
        for _ in range(self.ATTEMPTS):
            keep = rng.choice((0, 1, 1, 2))
            tail = "".join(rng.choice("0123456789") for _ in range(len(digits) - keep))
            if number := self._number(digits[:keep] + tail, accepted):
                pool.append(number)
        return pool

    def office_prototype(
        self, rng: random.Random, place: places.Place, zip_code: _Zip | None
    ) -> PhoneNumber:
        """A valid fixed-line number of the city's area (its ZIP's area code in the US)."""
        prefixes: Sequence[str] = zip_code.area_codes if zip_code else ()
        if not prefixes:
            by_place = _area_prefixes(self.region)
            prefixes = by_place.get(fold(place.city)) or by_place.get(fold(place.state)) or ()
        for _ in range(40 if prefixes else 0):
            prefix = rng.choice(prefixes)
            length = self.length + rng.choice((0, 0, 1, -1))
            tail = "".join(rng.choice("0123456789") for _ in range(length - len(prefix)))
            if number := self._number(prefix + tail, self.FIXED_TYPES):
                return number
        return rng.choice(self.fixed)

    def near(self, rng: random.Random, prototype: PhoneNumber, digits: int = 4) -> str:
        """A valid number sharing all but the last `digits` digits, in international format."""
        scale = 10**digits
        national = prototype.national_number - prototype.national_number % scale
        for _ in range(50):
            number = PhoneNumber(
                country_code=prototype.country_code,
                national_number=national + rng.randrange(scale),
                italian_leading_zero=prototype.italian_leading_zero,
                number_of_leading_zeros=prototype.number_of_leading_zeros,
            )
            if phonenumbers.is_valid_number_for_region(number, self.region):
                return phonenumbers.format_number(number, PhoneNumberFormat.INTERNATIONAL)
        return phonenumbers.format_number(prototype, PhoneNumberFormat.INTERNATIONAL)

    def mobile_number(self, rng: random.Random, office: PhoneNumber) -> str:
        """A mobile number: in the office's area code in North America, else nationwide."""
        if self.local_mobiles:
            return self.near(rng, office, 7)
        return self.near(rng, rng.choice(self.mobile), 6)


# --- companies ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Office:
    address: str
    place: places.Place
    state: str
    zipcode: str
    latitude: float
    longitude: float
    phone: str
    prototype: PhoneNumber
    location: str


@dataclass(slots=True)
class _Plan:
    """What pass one decides about a company before any name is drawn."""

    country: str
    industry: industry.Industry
    size: int
    status: str
    parent: int = -1
    root: int = -1
    brand: bool = False
    contacts: int = 0


@dataclass(slots=True)
class _Company:
    """What contacts need of a company once its row is written."""

    guid: str
    name: str
    key: str
    base: str
    domain: str
    pattern: str
    country: str
    offices: list[_Office]
    scopes: tuple[str, ...]
    small: bool
    contacts: int
    kind: str
    emails: set[str] = field(default_factory=set)


def _employee_count(rng: random.Random) -> int:
    low, high = _SIZES.pick(rng)
    count = round(math.exp(rng.uniform(math.log(low), math.log(high + 1))))
    return min(max(count, low), high)


def _money(text: str) -> float:
    """ "$500K" -> 500000.0."""
    text = text.strip().lstrip("$").rstrip("+")
    scale = {"K": 1e3, "M": 1e6, "B": 1e9}.get(text[-1:], 1.0)
    return float(text.rstrip("KMB")) * scale


@cache
def _revenue_bounds() -> tuple[float, ...]:
    """Upper bound of each of records.REVENUE_RANGES (the last is open)."""
    return tuple(_money(r.split(" - ")[1]) if " - " in r else math.inf for r in REVENUE_RANGES)


def _revenue_range(rng: random.Random, employees: int) -> str:
    """A revenue range consistent with the head count: $60K to $450K per employee."""
    revenue = employees * math.exp(rng.uniform(math.log(60_000), math.log(450_000)))
    bounds = _revenue_bounds()
    return REVENUE_RANGES[min(bisect(bounds, revenue), len(bounds) - 1)]


@cache
def _industries() -> _Weighted:
    return _Weighted((i, i.weight) for i in industry.industries())


def _status(rng: random.Random, chosen: industry.Industry, size: int) -> str:
    if chosen.name == "Government Administration":
        return "Government"
    if rng.random() < NON_PROFIT_SHARE.get(chosen.name, 0.0):
        return "Non-Profit"
    public = 0.55 if size > 5000 else 0.25 if size > 1000 else 0.06 if size > 200 else 0.005
    return "Public" if rng.random() < public else "Private"


def _plan_company(rng: random.Random) -> _Plan:
    code = _countries().pick(rng)
    chosen = _industries().pick(rng)
    while (chosen.name in ENGLISH_ONLY_INDUSTRIES and code not in ENGLISH_NAMED) or (
        chosen.name == "Government Administration" and rng.random() >= GOVERNMENT_KEPT
    ):
        chosen = _industries().pick(rng)
    size = _employee_count(rng)
    return _Plan(code, chosen, size, _status(rng, chosen, size))


def _plan_hierarchy(rng: random.Random, plans: list[_Plan]) -> list[int]:
    """Make ~8% of companies subsidiaries of larger ones; the order to generate them in."""
    count = len(plans)
    wanted = round(count * SUBSIDIARY_SHARE) if count >= 10 else 0
    by_size = sorted(range(count), key=lambda i: (-plans[i].size, i))
    largest = max(3, count // 20)
    pool = [i for i in by_size[:largest] if plans[i].status in ("Private", "Public")]
    candidates = [i for i in by_size[largest:] if plans[i].status in ("Private", "Public")]
    if not pool or not candidates:
        return list(range(count))
    parents = _Weighted((i, plans[i].size ** 0.5) for i in pool)
    subsidiaries = sorted(rng.sample(candidates, min(wanted, len(candidates))))
    assigned: list[int] = []
    for sub in sorted(subsidiaries, key=lambda i: (-plans[i].size, i)):
        plan = plans[sub]
        middle = rng.choice(assigned) if assigned and rng.random() < 0.2 else -1
        if middle >= 0 and plans[middle].size > 2 * plan.size:
            plan.parent, plan.root = middle, plans[middle].root
        else:
            plan.parent = plan.root = parents.pick(rng)
        parent = plans[plan.parent]
        plan.size = min(plan.size, max(1, parent.size // 3))
        plan.status = "Subsidiary"
        plan.brand = rng.random() < 0.4
        if rng.random() < 0.6:
            plan.industry = parent.industry
        assigned.append(sub)
    taken = set(assigned)
    return [i for i in range(count) if i not in taken] + assigned


def _allocate_contacts(rng: random.Random, plans: list[_Plan], contacts: int) -> None:
    """Spread contacts by head count: a few companies with thousands, most with a handful.

    Every company gets one when there are enough; from 100,000 contacts on, the three largest
    get at least BIG_COMPANY_CONTACTS each (more than their share when needed).
    """
    count = len(plans)
    base = 1 if contacts >= count else 0
    weights = [plan.size**1.05 for plan in plans]
    floors: dict[int, int] = {}
    if contacts >= 100_000 and count >= 3:
        top = sorted(range(count), key=lambda i: (-plans[i].size, i))[:3]
        floors = {i: BIG_COMPANY_CONTACTS + contacts // 300 * (3 - r) for r, i in enumerate(top)}
        if sum(floors.values()) + base * count > contacts:
            floors = {}
    fixed: dict[int, int] = {}
    while True:
        free = [i for i in range(count) if i not in fixed]
        rest = contacts - sum(fixed.values()) - base * len(free)
        total = sum(weights[i] for i in free)
        short = {
            i: floor
            for i, floor in floors.items()
            if i not in fixed and base + rest * weights[i] / total < floor
        }
        if not short or len(short) == len(free):
            break
        fixed.update(short)
    shares = {i: rest * weights[i] / total for i in free}
    counts = {i: base + int(share) for i, share in shares.items()} | fixed
    leftover = rest - sum(int(share) for share in shares.values())
    for i in sorted(free, key=lambda i: (-(shares[i] % 1), i))[:leftover]:
        counts[i] += 1
    for i, plan in enumerate(plans):
        plan.contacts = counts[i]
        plan.size = max(plan.size, plan.contacts * (8 if i in floors else 1))


@dataclass
class _Registry:
    """Names, domains, profile slugs and GUIDs already given out."""

    keys: set[str] = field(default_factory=set)  # of names and aliases
    brands: set[tuple[str, str]] = field(default_factory=set)  # (name key, country)
    domains: set[str] = field(default_factory=set)
    slugs: set[str] = field(default_factory=set)
    guids: set[str] = field(default_factory=set)

    def guid(self, rng: random.Random) -> str:
        while (guid := _hex(rng, 16)) in self.guids:
            pass
        self.guids.add(guid)
        return guid


def _nouns(country: str, industry_name: str) -> tuple[list[str], list[str]]:
    """English and local-language nouns for a company in this industry and country."""
    words = _words()
    local = words["local_nouns"].get(country.lower(), {}).get(industry_name, [])
    return words["nouns"].get(industry_name, ["Group"]), local


def _brand(rng: random.Random) -> str:
    words = _words()
    if rng.random() < 0.7:
        root, tail = rng.choice(words["brand_roots"]), rng.choice(words["brand_tails"])
        return root + tail if root.lower() != tail else root
    return rng.choice(words["coined_heads"]) + rng.choice(words["coined_tails"])


def _base_name(rng: random.Random, plan: _Plan, city: str, names: _Names) -> tuple[str, str]:
    """A company name without its legal suffix, and the kind of name it is."""
    words = _words()
    if plan.status == "Government":
        return rng.choice(words["government_formats"]).format(city=city), "institution"
    if plan.status == "Non-Profit" and plan.industry.name not in INSTITUTION_INDUSTRIES:
        text = rng.choice(words["nonprofit_formats"])
        root = rng.choice(words["brand_roots"])
        return text.format(city=city, surname=names.last.pick(rng), root=root), "institution"
    if named := _city_institution(rng, plan, city):
        return named, "institution" if plan.status == "Non-Profit" else "city"
    english, local = _nouns(plan.country, plan.industry.name)
    noun = rng.choice(local) if local and rng.random() < 0.5 else rng.choice(english)
    surname = names.last.pick(rng)
    if plan.status == "Non-Profit":  # a hospital, college or school
        first = rng.choice((surname, city, rng.choice(words["brand_roots"]), _brand(rng)))
        return f"{first} {rng.choice(english)}", "institution"
    if plan.industry.name in PARTNERSHIP_INDUSTRIES and rng.random() < 0.5:
        return _joint(rng, plan, names), "partners"
    if rng.random() < REAL_SHAPE_SHARE:
        shape = _SHAPES[_shape_weights().pick(rng)]
        if shaped := shape(rng, plan, city, names, noun):
            return shaped
    return _plain_name(rng, plan, city, surname, noun, local)


def _plain_name(
    rng: random.Random, plan: _Plan, city: str, surname: str, noun: str, local: list[str]
) -> tuple[str, str]:
    """A surname, brand, coined, city or initials name with an industry noun ("Acme Analytics")."""
    words = _words()
    roll = rng.random()
    if roll < 0.3:
        if noun in local and plan.country.lower() in ROMANCE:
            return f"{noun} {surname}", "surname"
        return f"{surname} {noun}", "surname"
    if roll < 0.6:
        return f"{_brand(rng)} {noun}", "brand"
    if roll < 0.7:
        return f"{rng.choice(words['brand_roots'])} {noun}", "brand"
    if roll < 0.8:
        return _brand(rng), "coined"
    if roll < 0.88:
        return f"{city} {noun}", "city"
    if roll < 0.94:
        initials = "".join(rng.choice("ABCDEFGHIJKLMNOPRSTVW") for _ in range(rng.choice((2, 3))))
        return f"{initials} {noun}", "initials"
    return f"{surname} {rng.choice(words['brand_roots'])} {noun}", "surname"


# --- real-world name shapes ("X Holding AG", "Bank of X", "L'X", "X & Söhne") ---------------


@cache
def _by_country(section: str, country: str) -> _Weighted:
    """The [format, weight] table of a dataset_words section for a country, else its default."""
    table = _words()[section]
    return _weighted(table.get(country) or table["default"])


@cache
def _city_formats(industry_name: str, country: str) -> tuple[float, _Weighted] | None:
    spec = _words()["city_formats"].get(industry_name)
    if spec is None:
        return None
    return spec["share"], _weighted(spec.get(country) or spec["default"])


@cache
def _shape_weights() -> _Weighted:
    return _weighted(_words()["shape_weights"])


def _city_institution(rng: random.Random, plan: _Plan, city: str) -> str | None:
    """ "Bank of Austin", "Universität Köln", "Stadtwerke Bonn": named after its city."""
    found = _city_formats(plan.industry.name, plan.country)
    if found is None or rng.random() >= found[0]:
        return None
    name = found[1].pick(rng).format(city=city)
    return _elide(name) if plan.country in FRENCH_NAMED else name


def _elide(text: str) -> str:
    """French "de" before a vowel: "Université d'Orléans", "Banque d'Amiens"."""
    return re.sub(r"\bde (?=[AEIOUYÉÈÊÂÎÔ])", "d'", text)


def _core(rng: random.Random, names: _Names) -> str:
    """A distinctive first word: a surname, a brand or a coined word."""
    roll = rng.random()
    if roll < 0.5:
        return names.last.pick(rng)
    return _brand(rng) if roll < 0.85 else rng.choice(_words()["brand_roots"])


def _generic_shape(
    rng: random.Random, plan: _Plan, city: str, names: _Names, noun: str
) -> tuple[str, str]:
    """ "Meyer Holding", "Grupo Ortega", "The Baxter Company", "Koninklijke Visser"."""
    text = _by_country("generic_formats", plan.country).pick(rng)
    return text.format(core=_core(rng, names)), "generic"


def _formal_shape(
    rng: random.Random, plan: _Plan, city: str, names: _Names, noun: str
) -> tuple[str, str] | None:
    """A long formal name people abbreviate: "Nippon Telegraph and Telephone", "Bayerische
    Maschinenbau Werke", "Compagnie Générale d'Assurances"; none for an industry without
    such words (schools, clinics)."""
    formal = _words()["formal"]
    spec = formal.get(plan.country, formal["en"])
    _, local = _nouns(plan.country, plan.industry.name)
    text = _weighted(spec["formats"]).pick(rng)
    if "noun" in text and not local:
        spec, text = formal["en"], "{adj} {phrase}"
    phrases = _words()["formal_phrases"].get(plan.industry.name)
    if "phrase" in text and not phrases:
        return None
    local_noun = rng.choice(local) if local else ""
    name = text.format(
        adj=rng.choice(spec["adjectives"]),
        head=rng.choice(spec.get("heads") or [""]),
        phrase=rng.choice(phrases or [""]),
        noun=local_noun,
        noun2=rng.choice(local) if local else "",
        de_noun=_french_de(local_noun),
        city=city,
    )
    return " ".join(name.split()), "formal"


def _french_de(noun: str) -> str:
    """ "de Transports", "d'Assurances": "de" elided before a vowel."""
    return _elide(f"de {noun}")


def _joint(rng: random.Random, plan: _Plan, names: _Names) -> str:
    """ "Weber & Söhne", "Dupont et Associés", "Ortega y Asociados", "Holt + Lund"."""
    words = _words()
    if plan.industry.name in words["design_industries"] and rng.random() < words["design_share"]:
        text = "{s1} + {s2}"
    else:
        text = _by_country("joint_formats", plan.country).pick(rng)
    first, second = names.last.pick(rng), names.last.pick(rng)
    roots = words["brand_roots"]
    return text.format(s1=first, s2=second, r1=rng.choice(roots), r2=rng.choice(roots))


def _joint_shape(
    rng: random.Random, plan: _Plan, city: str, names: _Names, noun: str
) -> tuple[str, str]:
    return _joint(rng, plan, names), "joint"


def _hyphen_shape(
    rng: random.Random, plan: _Plan, city: str, names: _Names, noun: str
) -> tuple[str, str]:
    """ "Rolls-Royce", "Coca-Cola": two surnames or two roots joined by a hyphen."""
    if rng.random() < 0.6:
        joined = f"{names.last.pick(rng)}-{names.last.pick(rng)}"
    else:
        joined = f"{rng.choice(_words()['brand_roots'])}-{rng.choice(_words()['brand_roots'])}"
    return (f"{joined} {noun}" if rng.random() < 0.4 else joined), "brand"


def _camel_shape(
    rng: random.Random, plan: _Plan, city: str, names: _Names, noun: str
) -> tuple[str, str]:
    """ "BluePoint", "NovaBridge Analytics": a brand written in camel case."""
    words = _words()
    root, tail = rng.choice(words["brand_roots"]), rng.choice(words["brand_tails"])
    if root.lower() == tail:
        tail = rng.choice(words["coined_tails"])
    camel = root + tail[:1].upper() + tail[1:]
    return (f"{camel} {noun}" if rng.random() < 0.5 else camel), "brand"


def _apostrophe_shape(
    rng: random.Random, plan: _Plan, city: str, names: _Names, noun: str
) -> tuple[str, str] | None:
    """ "L'Atelier Conseil" in French, "Baxter's" for shops and food in English; else none."""
    words = _words()
    if plan.country in ("FR", "CH") or (plan.country == "CA" and rng.random() < 0.3):
        article = f"L'{rng.choice(words['article_words'])}"
        return (f"{article} {noun}" if rng.random() < 0.5 else article), "brand"
    usual = plan.industry.name in words["possessive_industries"]
    if plan.country in ENGLISH_NAMED and (usual or rng.random() < 0.3):
        surname = names.last.pick(rng)
        owner = f"{surname}'" if surname.endswith("s") else f"{surname}'s"
        return (f"{owner} {noun}" if rng.random() < 0.3 else owner), "possessive"
    return None


_Shape = Callable[[random.Random, _Plan, str, _Names, str], tuple[str, str] | None]
_SHAPES: dict[str, _Shape] = {
    "generic": _generic_shape,
    "formal": _formal_shape,
    "joint": _joint_shape,
    "hyphen": _hyphen_shape,
    "camel": _camel_shape,
    "apostrophe": _apostrophe_shape,
}


def _legal_suffix(rng: random.Random, plan: _Plan, kind: str) -> str:
    legal = _country(plan.country).legal
    if plan.status == "Government":
        return ""
    if kind == "institution":
        return "Inc." if plan.country == "US" and rng.random() < 0.2 else ""
    if plan.status == "Non-Profit":
        return ""
    if kind == "partners":
        return legal["partnership"].pick(rng)
    return legal["public" if plan.status == "Public" else "private"].pick(rng)


@cache
def _leading_legal(country: str) -> dict[str, tuple[str, float]]:
    """Legal forms a country also writes in front ("AB Volvo"): form -> (as written, share)."""
    pairs = _words()["leading_legal"].get(country, [])
    return {form: (written, float(share)) for form, written, share in pairs}


def _with_suffix(rng: random.Random, base: str, suffix: str, country: str) -> str:
    """The full name: the legal form after the base ("Acme Inc.", "Acme, Inc."), or before it
    where the country writes it so ("AB Volvo", "Kabushiki Kaisha Toshiba")."""
    if not suffix:
        return base
    if suffix == "Inc." and rng.random() < 0.2:
        return f"{base}, Inc."
    leading = _leading_legal(country).get(suffix)
    if leading and rng.random() < leading[1]:
        return f"{leading[0]} {base}"
    return f"{base} {suffix}"


_MINOR_WORDS = frozenset(
    {"&", "+", "of", "and", "und", "et", "y", "e", "i", "en", "de", "des", "del", "di", "do"}
)


def _acronym(base: str) -> str:
    """ "International Business Machines" -> "IBM", "Compagnie Générale d'Assurances" -> "CGA",
    "Rheinisch-Westfälische Werke" -> "RWW"; minor words and "The" left out."""
    letters = []
    for word in base.replace("-", " ").split():
        word = word.split("'")[-1] if word[:2].lower() in ("d'", "l'") else word
        if word[:1].isupper() and word not in _MINOR_WORDS and word != "The":
            letters.append(word[0])
    return "".join(letters)


def _aliases(rng: random.Random, base: str, kind: str, taken: set[str]) -> list[str]:
    """Other names a company goes by (its short brand, an acronym, a former name), each with a
    key no other company's name or alias has; their keys are added to `taken`."""
    found: list[str] = []
    parts = base.split()
    if kind == "brand" and len(parts) > 1 and rng.random() < 0.4:
        found.append(parts[0])
    acronym = _acronym(base)
    if len(acronym) >= 3 and rng.random() < 0.5:
        found.append(acronym)
    if kind == "brand" and rng.random() < 0.05:
        found.append(f"{_brand(rng)} {parts[-1]}")
    if kind == "surname" and rng.random() < 0.08:
        found.append(f"{parts[0]} Group")
    unique = {company_key(alias): alias for alias in found}
    fresh = {key: alias for key, alias in unique.items() if key and key not in taken}
    taken.update(fresh)
    return list(fresh.values())


_LEADING_GENERIC = frozenset({"The", "Royal", "Koninklijke", "Grupo", "Gruppo", "Grupa", "Groupe"})
# Kinds of names a company may have been known by another of (not agencies, schools, divisions).
_RENAMED_KINDS = frozenset(
    {"surname", "brand", "coined", "city", "initials", "generic", "joint", "partners", "possessive"}
)


def _former_name(
    rng: random.Random, base: str, name: str, names: _Names, share: float = FORMER_NAME_SHARE
) -> str | None:
    """An earlier name, for `share` of the companies asked: the first distinctive word of the
    base another brand ("Zentrix Analytics GmbH" was "Novabright Analytics GmbH") or the name
    before a merger ("Zentrix & Halden GmbH"), the legal form kept; None for the others."""
    if rng.random() >= share:
        return None
    words = base.split()
    first = next((i for i, w in enumerate(words) if w not in _LEADING_GENERIC), 0)
    if rng.random() < 0.6:
        earlier = " ".join([*words[:first], _brand(rng), *words[first + 1 :]])
    else:
        earlier = f"{words[first]} & {names.last.pick(rng)}"
    return name.replace(base, earlier, 1)


def _short_name(base: str, kind: str) -> str:
    """What a group's divisions are named after: "IBM" of "International Business Machines",
    "Siemens" of "Siemens Holding", "NovaBridge" of "NovaBridge Analytics"; else the base."""
    if kind == "formal":
        acronym = _acronym(base)
        return acronym if len(acronym) >= 3 else base
    words = [w for w in base.split() if w not in _LEADING_GENERIC]
    if kind == "surname" and len(words) > 1 and words[0] in _local_noun_words():
        return words[-1]  # "Construcciones Cordero"
    if kind in ("surname", "generic", "coined", "possessive") or (
        kind == "brand" and words and words[0] not in _words()["brand_roots"]
    ):
        return words[0] if words else base
    return base


@cache
def _local_noun_words() -> frozenset[str]:
    nouns = _words()["local_nouns"].values()
    return frozenset(word for by_industry in nouns for ws in by_industry.values() for word in ws)


def _division(rng: random.Random, parent: _Company, plan: _Plan) -> str:
    """A division at home: "Siemens Healthcare", "IBM Services", "Weber & Söhne Logistics"."""
    english, _ = _nouns(plan.country, plan.industry.name)
    words = english if rng.random() < 0.5 else _words()["division_words"]
    return f"{_short_name(parent.base, parent.kind)} {rng.choice(words)}"


def _tld(rng: random.Random, plan: _Plan) -> str:
    if plan.status == "Government":
        return GOVERNMENT_TLDS.get(plan.country, ".gov")
    if plan.industry.name == "Higher Education" and plan.country in EDUCATION_TLDS:
        return EDUCATION_TLDS[plan.country]
    if plan.status == "Non-Profit":
        return NONPROFIT_TLDS.get(plan.country, ".org")
    return _country(plan.country).tlds.pick(rng)


def _domain(rng: random.Random, base: str, tld: str, country: str, used: set[str]) -> str:
    """A unique registrable domain made from the name ("acme-analytics.com", "acme.de")."""
    words = [w for w in fold(base).split() if w != "and"] or ["company"]
    joined, hyphened = "".join(words)[:40], "-".join(words)[:40].strip("-")
    first = [joined, hyphened] if rng.random() < 0.55 else [hyphened, joined]
    extra = [f"{joined}group", f"{joined}hq", f"{hyphened}-{country.lower()}", f"get{joined}"]
    numbered = (f"{joined}{n}" for n in range(2, 10_000))
    for label in chain(first, extra, numbered):
        domain = f"{label}{tld}"
        if domain not in used and registrable_domain(domain) == domain:
            used.add(domain)
            return domain
    raise RuntimeError("no free domain")  # pragma: no cover - 10,000 numbered labels


def _profile_slug(base: str, country: str, used: set[str]) -> str:
    slug = "-".join(fold(base).split())[:60] or "company"
    numbered = (f"{slug}-{n}" for n in range(2, 10_000))
    for candidate in chain((slug, f"{slug}-{country.lower()}"), numbered):
        if candidate not in used:
            used.add(candidate)
            return candidate
    raise RuntimeError("no free profile slug")  # pragma: no cover


def _codes(
    rng: random.Random, codes: tuple[str, ...], describe: Callable[[str], str | None]
) -> tuple[str, str]:
    """A company's share of its industry's codes, primary first, and their descriptions."""
    chosen = [c for i, c in enumerate(codes) if i == 0 or rng.random() < 0.4]
    described = [(c, describe(c)) for c in chosen]
    described = [(c, d) for c, d in described if d]
    return JOIN.join(c for c, _ in described), JOIN.join(d for _, d in described)


def _office_count(rng: random.Random, size: int) -> int:
    if size <= 50:
        return 1
    if size <= 200:
        return 1 + (rng.random() < 0.2)
    if size <= 1000:
        return rng.randint(1, 3)
    if size <= 10_000:
        return rng.randint(2, 6)
    return rng.randint(4, 12)


def _office(rng: random.Random, place: places.Place, phones: _Phones, names: _Names) -> _Office:
    zip_code = _zip_in(rng, place)
    prototype = phones.office_prototype(rng, place, zip_code)
    latitude, longitude = (
        (zip_code.latitude, zip_code.longitude) if zip_code else (place.latitude, place.longitude)
    )
    return _Office(
        _street(rng, place, names), place, _display_state(place),
        zip_code.code if zip_code else place.zipcode, latitude, longitude,
        phones.near(rng, prototype), prototype, _location(place),
    )  # fmt: skip


def _offices(
    rng: random.Random, country: _Country, plan: _Plan, phones: _Phones, names: _Names
) -> list[_Office]:
    """The HQ first (any city for an agency, a large one more likely for others), then
    offices in other large cities of the country."""
    if plan.status == "Government":
        hq = rng.randrange(len(country.cities))
    else:
        hq = country.hq_cities.pick(rng)
    others = [i for i in range(len(country.cities)) if i != hq]
    count = min(_office_count(rng, plan.size) - 1, len(others))
    chosen = [hq, *rng.sample(others, count)]
    return [_office(rng, country.cities[i], phones, names) for i in chosen]


@dataclass
class _Generator:
    """State of one generate() run: the seeded Random and what has been given out."""

    db: Database
    seed: int
    rng: random.Random
    registry: _Registry = field(default_factory=_Registry)
    phones: dict[str, _Phones] = field(default_factory=dict)
    companies: list[_Company] = field(default_factory=list)

    def phone_book(self, country: str) -> _Phones:
        if country not in self.phones:
            self.phones[country] = _Phones(country, self.seed)
        return self.phones[country]

    def person_names(self, country: str) -> _Names:
        return _names(_country(country).name_locales.pick(self.rng))

    def company(self, plan: _Plan, parents: dict[int, _Company]) -> tuple[Row, list[str]]:
        """One companies row and its alias keys; remembers what contacts need."""
        rng, registry, country = self.rng, self.registry, _country(plan.country)
        names = _names(country.name_locales.items[0])
        phones = self.phone_book(plan.country)
        offices = _offices(rng, country, plan, phones, names)
        hq = offices[0]
        base, kind, name = self._name(plan, hq.place.city, names, parents)
        name_key = company_key(name)
        aliases = _aliases(rng, base, kind, registry.keys)
        aliases += self._former(plan, base, kind, name, names)
        domain = _domain(rng, base, _tld(rng, plan), plan.country, registry.domains)
        naics_codes, naics_text = _codes(rng, plan.industry.naics, industry.naics_description)
        sic_codes, sic_text = _codes(rng, plan.industry.sic, industry.sic_description)
        parent = parents.get(plan.parent)
        root = parents.get(plan.root)
        pattern = _PATTERNS.pick(rng)
        row = {
            "guid": registry.guid(rng),
            "name": name,
            "name_key": name_key,
            "aka": JOIN.join(aliases),
            "website": f"https://www.{domain}",
            "domain": domain,
            "address": hq.address,
            "city": hq.place.city,
            "state": hq.state,
            "zipcode": hq.zipcode,
            "country": country.name,
            "latitude": hq.latitude,
            "longitude": hq.longitude,
            "phone": hq.phone,
            "employee_count": plan.size,
            "revenue_range": _revenue_range(rng, plan.size),
            "industry": plan.industry.name,
            "naics_codes": naics_codes,
            "naics_descriptions": naics_text,
            "sic_codes": sic_codes,
            "sic_descriptions": sic_text,
            "legal_status": plan.status,
            "parent_guid": parent.guid if parent else "",
            "global_hq_guid": root.guid if root else "",
            "worldwide_parent_name": root.name if root else "",
            "global_regions": JOIN.join(places.global_regions(plan.country)),
            "profile_url": "https://www.linkedin.com/company/"
            + _profile_slug(base, plan.country, registry.slugs),
            "email_pattern": pattern,
            "updated_at": _timestamp(rng),
        }
        scopes = tuple(_words()["title_scopes"].get(plan.industry.name, ()))
        small = plan.size <= SMALL_COMPANY
        company = _Company(
            row["guid"], name, name_key, base, domain, pattern, plan.country, offices, scopes,
            small, plan.contacts, kind,
        )  # fmt: skip
        self.companies.append(company)
        return row, [company_key(alias) for alias in aliases]

    def _former(self, plan: _Plan, base: str, kind: str, name: str, names: _Names) -> list[str]:
        """The company's former name (`_former_name`) if it has one no other name has: drawn
        from a Random of its own, so that the rest of the dataset stays as it was."""
        if kind not in _RENAMED_KINDS:
            return []
        rng = random.Random(f"{self.seed} former {plan.country} {name}")
        former = _former_name(rng, base, name, names)
        key = company_key(former) if former else ""
        if not former or not key or key in self.registry.keys:
            return []
        self.registry.keys.add(key)
        return [former]

    def _name(
        self, plan: _Plan, city: str, names: _Names, parents: dict[int, _Company]
    ) -> tuple[str, str, str]:
        """(base, kind, full name) with a name key no other company has (brands excepted)."""
        rng, brands = self.rng, self.registry.brands
        parent = parents.get(plan.parent)
        if plan.brand and parent is not None:
            # The group's name in another country ("Siemens Ltd"), or a division at home.
            base, kind = parent.base, parent.kind
            if plan.country == parent.country:
                base, kind = _division(rng, parent, plan), "division"
            name = _with_suffix(rng, base, _legal_suffix(rng, plan, "brand"), plan.country)
            key = company_key(name)
            own = {parent.key, company_key(parent.base)}
            if (key, plan.country) not in brands and self._claim(base, name, own):
                brands.add((key, plan.country))
                return base, kind, name
        for attempt in range(200):
            base, kind = _base_name(rng, plan, city, names)
            if attempt >= 100:
                base = f"{base} {_brand(rng)}"
            name = _with_suffix(rng, base, _legal_suffix(rng, plan, kind), plan.country)
            if self._claim(base, name):
                brands.add((company_key(name), plan.country))
                return base, kind, name
        raise RuntimeError("no free company name")  # pragma: no cover

    def _claim(self, base: str, name: str, shared: Iterable[str] = ()) -> bool:
        """Take the keys of a name and of its base (so "AB Volvo" also holds "Volvo AB") unless
        another company has one of them; `shared` are keys a brand may share with its group."""
        keys, allowed = self.registry.keys, set(shared)
        wanted = {key for key in (company_key(name), company_key(base)) if key}
        if not company_key(name) or any(key in keys and key not in allowed for key in wanted):
            return False
        keys.update(wanted)
        return True


# --- contacts ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _TitleTables:
    regular: _Weighted
    common: _Weighted  # without one-per-company titles: for people joining from elsewhere
    ceo: _Weighted


@cache
def _title_tables(scopes: tuple[str, ...], small: bool) -> _TitleTables:
    """Weighted title choices for a kind of company: the pyramid, boosted industry titles."""
    shares = SMALL_TIER_SHARES if small else TIER_SHARES
    eligible = [
        (t, t.weight * (SCOPE_BOOST if t.scope in scopes else 1.0))
        for t in _titles()
        if t.scope == "any" or t.scope in scopes or (t.scope == "small" and small)
    ]
    tier_totals: dict[str, float] = {}
    for t, weight in eligible:
        tier_totals[t.tier] = tier_totals.get(t.tier, 0.0) + weight
    pairs = [
        (t.title, shares[t.tier] * weight / tier_totals[t.tier])
        for t, weight in eligible
        if t.tier in shares
    ]
    unique = _unique_titles()
    return _TitleTables(
        _Weighted(pairs),
        _Weighted((title, w) for title, w in pairs if title not in unique),
        _Weighted((t.title, w) for t, w in eligible if t.tier == "ceo"),
    )


@cache
def _unique_titles() -> frozenset[str]:
    """Titles a company has at most one of."""
    unique = {t.title for t in _titles() if t.tier in ("ceo", "cxo")}
    return frozenset(unique | {"Chairman of the Board"})


@cache
def _title_class(title: str) -> tuple[str, str, str]:
    """Levels, functions and sub-functions of a title, each `' | '`-joined."""
    found = titles.classify(title)
    return JOIN.join(found.levels), JOIN.join(found.functions), JOIN.join(found.sub_functions)


@cache
def _name_key(name: str) -> str:
    return person_key(name)


@cache
def _name_words(name: str) -> tuple[str, ...]:
    return tuple(fold(name).split())


def _email_local(pattern: str, first: str, last: str) -> str:
    if pattern == "first.last":
        return f"{first}.{last}"
    if pattern == "flast":
        return f"{first[0]}{last}"
    if pattern == "first":
        return first
    if pattern == "firstl":
        return f"{first}{last[0]}"
    if pattern == "first_last":
        return f"{first}_{last}"
    return f"{last}.{first}"


def _email(company: _Company, first_key: str, last_key: str) -> str:
    """The company's pattern at its domain; a clash gets the first free digit suffix."""
    local = _email_local(company.pattern, first_key, last_key)
    candidate, n = local, 1
    while candidate in company.emails:
        n += 1
        candidate = f"{local}{n}"
    company.emails.add(candidate)
    return f"{candidate}@{company.domain}"


@dataclass(slots=True)
class _Job:
    row: Row
    updated: int
    office: _Office


@dataclass(slots=True)
class _Person:
    guid: str
    first: str
    middle: str
    last: str
    first_key: str
    last_key: str


class _ContactWriter:
    """Draws contacts company by company and writes them in batches."""

    def __init__(self, generator: _Generator, progress: Callable[[int], None] | None) -> None:
        self.gen = generator
        self.rng = generator.rng
        self.progress = progress
        self.contacts: list[Row] = []
        self.employments: list[Row] = []
        self.written = {"contacts": 0, "employments": 0}
        companies = generator.companies
        self.anywhere = _Weighted((i, max(c.contacts, 1) ** 0.8) for i, c in enumerate(companies))
        by_country: dict[str, list[tuple[int, float]]] = {}
        for i, company in enumerate(companies):
            by_country.setdefault(company.country, []).append((i, max(company.contacts, 1) ** 0.8))
        self.in_country = {code: _Weighted(pairs) for code, pairs in by_country.items()}

    def run(self) -> dict[str, int]:
        for index, company in enumerate(self.gen.companies):
            taken: set[str] = set()
            tables = _title_tables(company.scopes, company.small)
            ceo_rate = 0.75 if company.small else 0.55
            for n in range(company.contacts):
                if n == 0 and self.rng.random() < ceo_rate:
                    title = tables.ceo.pick(self.rng)
                else:
                    title = self._title(tables, taken)
                self._contact(index, company, title)
        self._flush()
        return self.written

    def _title(self, tables: _TitleTables, taken: set[str]) -> str:
        for _ in range(5):
            title = tables.regular.pick(self.rng)
            if title not in _unique_titles():
                return title
            if title not in taken:
                taken.add(title)
                return title
        return tables.common.pick(self.rng)

    def _person(self, country: str) -> _Person:
        rng = self.rng
        names = self.gen.person_names(country)
        pool = names.male if rng.random() < 0.5 else names.female
        first = pool.pick(rng)
        middle = ""
        if rng.random() < _country(country).spec["middle"]:
            middle = pool.pick(rng)
            middle = "" if middle == first else middle
        last = names.last.pick(rng)
        return _Person(_hex(rng, 32), first, middle, last, _name_key(first), _name_key(last))

    def _contact(self, index: int, company: _Company, title: str) -> None:
        rng = self.rng
        person = self._person(company.country)
        end = LAST_MONTH
        if len(self.gen.companies) > 1 and rng.random() < MOVER_SHARE:
            new_index = self._new_employer(index, company.country)
            new_company = self.gen.companies[new_index]
            started = end - min(int(rng.expovariate(1 / 18)), 120)
            left = started - rng.randint(0, 4)
            former_start = max(left - 3 - min(int(rng.expovariate(1 / 36)), 240), FIRST_MONTH)
            former = self._employment(person, company, title, "No Longer", former_start, left)
            new_title = _title_tables(new_company.scopes, new_company.small).common.pick(rng)
            current = self._employment(person, new_company, new_title, "Active", started, None)
            jobs = [former, current]
        else:
            started = max(end - min(int(rng.expovariate(1 / 40)), 300), FIRST_MONTH)
            current = self._employment(person, company, title, "Active", started, None)
            jobs = [current]
        contact = self._contact_row(person, current)
        self.contacts.append(contact)
        keys = {
            "first_key": person.first_key,
            "last_key": person.last_key,
            "grade": facets.grade_rank(contact["accuracy"]),
        }
        self.employments.extend({**job.row, **keys} for job in jobs)
        if len(self.contacts) >= CONTACT_BATCH:
            self._flush()

    def _new_employer(self, index: int, country: str) -> int:
        rng = self.rng
        same_country = self.in_country[country]
        for _ in range(20):
            table = same_country if rng.random() < MOVER_SAME_COUNTRY else self.anywhere
            chosen = table.pick(rng)
            if chosen != index:
                return chosen
        return (index + 1) % len(self.gen.companies)

    def _employment(
        self,
        person: _Person,
        company: _Company,
        title: str,
        status: str,
        started: int,
        left: int | None,
    ) -> _Job:
        """An employments row, the month it was last updated and its office."""
        rng = self.rng
        offices = company.offices
        office = offices[0]
        if len(offices) > 1 and rng.random() >= HQ_SHARE:
            office = rng.choice(offices[1:])
        last = left if left is not None else LAST_MONTH
        updated = started + int((last - started) * rng.random() ** 0.5)
        if left is not None:
            updated = left
        phones = self.gen.phone_book(company.country)
        dial1 = dial2 = ""
        if rng.random() < DIRECT_DIAL1_SHARE:
            dial1 = phones.mobile_number(rng, office.prototype)
            if rng.random() < DIRECT_DIAL2_SHARE / DIRECT_DIAL1_SHARE:
                dial2 = phones.near(rng, office.prototype)
        levels, functions, sub_functions = _title_class(title)
        row = {
            "contact_guid": person.guid,
            "company_guid": company.guid,
            "status": status,
            "email": _email(company, person.first_key, person.last_key),
            "job_title": title,
            "levels": levels,
            "functions": functions,
            "sub_functions": sub_functions,
            "work_address": office.address,
            "work_city": office.place.city,
            "work_state": office.state,
            "work_zipcode": office.zipcode,
            "work_country": office.place.country,
            "work_phone": office.phone,
            "latitude": office.latitude,
            "longitude": office.longitude,
            "direct_dial1": dial1,
            "direct_dial2": dial2,
            "job_started_on": _month_text(started),
            "job_updated_on": _month_text(updated),
        }
        facet_values = facets.job_facets(
            title,
            levels,
            functions,
            office.place.city,
            office.state,
            office.zipcode,
            office.place.country,
        )
        row.update(zip(store.JOB_FACET_FIELDS, facet_values, strict=True))
        return _Job(row, updated, office)

    def _contact_row(self, person: _Person, current: _Job) -> Row:
        rng = self.rng
        updated, office = current.updated, current.office
        slug = "-".join(_name_words(person.first) + _name_words(person.last))
        full = " ".join(part for part in (person.first, person.middle, person.last) if part)
        return {
            "guid": person.guid,
            "first_name": person.first,
            "middle_name": person.middle,
            "last_name": person.last,
            "full_name": full,
            "first_key": person.first_key,
            "last_key": person.last_key,
            "profile_url": f"https://www.linkedin.com/in/{slug}-{person.guid[-9:].lower()}",
            "location": office.location,
            "accuracy": _GRADES.pick(rng),
            "updated_at": _timestamp(rng, max(UPDATED_FROM, _month_start(updated))),
        }

    def _flush(self) -> None:
        if not self.contacts:
            return
        with database.write(self.gen.db):
            store.lock_dataset(self.gen.db)
            store.upsert_contacts(self.gen.db, self.contacts)
            store.upsert_employments(self.gen.db, self.employments)
        self.written["contacts"] += len(self.contacts)
        self.written["employments"] += len(self.employments)
        if self.progress:
            self.progress(len(self.contacts))
        self.contacts, self.employments = [], []


# --- the run -------------------------------------------------------------------------------------


def generate(
    db: Database,
    *,
    companies: int,
    contacts: int,
    seed: int,
    progress: Callable[[int], None] | None = None,
) -> dict[str, int]:
    """Write a demo dataset of `companies` companies and `contacts` contacts, fixed by `seed`.

    `progress(n)` is called as each batch of n contacts is written. Returns the counts written
    per table (companies, company_aliases, contacts, employments).
    """
    if companies < 0 or contacts < 0:
        raise ValueError("companies and contacts must not be negative")
    if contacts and not companies:
        raise ValueError("contacts need at least one company")
    rng = random.Random(seed)
    plans = [_plan_company(rng) for _ in range(companies)]
    order = _plan_hierarchy(rng, plans)
    _allocate_contacts(rng, plans, contacts)
    generator = _Generator(db, seed, rng)
    counts = {"companies": 0, "company_aliases": 0}
    counts.update(_write_companies(generator, plans, order))
    with database.write(db):
        store.lock_dataset(db)
        store.index_company_names(db)
    counts.update(_ContactWriter(generator, progress).run())
    return counts


def _write_companies(generator: _Generator, plans: list[_Plan], order: list[int]) -> dict[str, int]:
    written: dict[int, _Company] = {}
    rows: list[Row] = []
    aliases: list[tuple[str, str]] = []
    counts = {"companies": 0, "company_aliases": 0}

    def flush() -> None:
        with database.write(generator.db):
            store.lock_dataset(generator.db)
            store.upsert_companies(generator.db, rows)
            store.replace_company_aliases(generator.db, [r["guid"] for r in rows], aliases)
        counts["companies"] += len(rows)
        counts["company_aliases"] += len(aliases)
        rows.clear()
        aliases.clear()

    for i in order:
        row, keys = generator.company(plans[i], written)
        written[i] = generator.companies[-1]
        rows.append(row)
        aliases.extend(dict.fromkeys((row["guid"], key) for key in keys))
        if len(rows) >= COMPANY_BATCH:
            flush()
    if rows:
        flush()
    return counts
