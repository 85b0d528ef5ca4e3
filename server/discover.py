"""Discover: a company's current people, filtered by title, place, radius and grade, listed a
page at a time or only counted (contract §5).

Owns the request's rules and the response's shape; `titles` and `places` read the filters,
the store finds the people through one index of current employments.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr
from sqlite_utils import Database

from server import facets, places, titles
from server.enrich import DIAL_TIERS, mask_dial
from server.errors import InvalidParameter, MissingIdentifier, NotFound
from server.records import GRADES, JOIN
from server.storage import store
from server.wire import NUMBERS_ONLY

MAX_TITLES = 15  # [vendor]
MAX_LOCATIONS = 15
MAX_CONTACTS = 10_000  # [vendor: one page holds at most 10,000]
MAX_PAGE_SIZE = 1000
MAX_FILTER_CHARS = 200
MODES = {"discover": "Discover", "stats": "Stats"}
_GRADE_RANKS = {grade.casefold(): rank for rank, grade in enumerate(GRADES)}
_COMPANY_GUID = re.compile(r"[0-9A-F]{16}")

Filter = Annotated[StrictStr, Field(max_length=MAX_FILTER_CHARS)]


class DiscoverRequest(BaseModel):
    """The body of POST /v1/discover; bounds as contract §5, unknown fields ignored."""

    model_config = ConfigDict(extra="ignore")

    company_guid: StrictStr | None = None
    jobTitle: Annotated[list[Filter], Field(max_length=MAX_TITLES)] | None = None
    location: Annotated[list[Filter], Field(max_length=MAX_LOCATIONS)] | None = None
    within_miles: Annotated[int, Field(ge=1, le=100), NUMBERS_ONLY] | None = None
    accuracy: StrictStr = "A+"
    mode: StrictStr = "Discover"
    max_contacts: Annotated[int, Field(ge=1, le=MAX_CONTACTS), NUMBERS_ONLY] = MAX_CONTACTS
    pagination_required: StrictBool | None = None
    pagination: StrictBool | None = None  # the vendor documentation's name for it
    page_size: Annotated[int, Field(ge=1, le=MAX_PAGE_SIZE), NUMBERS_ONLY] = 100
    page_number: Annotated[int, Field(ge=1), NUMBERS_ONLY] = 1


@dataclass(frozen=True)
class Plan:
    """A request read: what to find, and how to answer."""

    wanted: store.PeopleFilter
    stats: bool
    paged: bool
    max_contacts: int
    page_size: int
    page_number: int


def discover(db: Database, tier: str, request: DiscoverRequest) -> dict[str, Any]:
    """The response body of a discover call by an organization of `tier`."""
    plan = plan_of(db, request)
    if plan.stats:
        return {"message": "Contacts counted successfully", "data": _stats(db, plan)}
    return {"message": "Contacts fetched successfully", "data": _page(db, plan, tier)}


# --- reading the request ---------------------------------------------------------------------


def plan_of(db: Database, request: DiscoverRequest) -> Plan:
    """What a request asks for, checked: raises the contract error of the first problem."""
    guid = _company_guid(request.company_guid)
    mode = MODES.get(request.mode.strip().casefold())
    if mode is None:
        raise InvalidParameter(f"mode must be Discover or Stats, not {request.mode!r}.")
    grade = _GRADE_RANKS.get(request.accuracy.strip().casefold())
    if grade is None:
        raise InvalidParameter(
            f"accuracy must be one of {', '.join(GRADES)}, not {request.accuracy!r}."
        )
    if request.within_miles is not None and not request.location:
        raise InvalidParameter("within_miles needs location: the places to measure it from.")
    wanted = store.PeopleFilter(
        company_guid=guid,
        max_grade=grade,
        titles=tuple(
            title_term(text, f"jobTitle[{i}]") for i, text in enumerate(request.jobTitle or ())
        ),
        places=_place_terms(request.location or ()),
        radius_miles=request.within_miles,
    )
    if store.company(db, guid) is None:
        raise NotFound(f"No company has company_guid {guid}.")
    paged = request.pagination_required
    paged = request.pagination if paged is None else paged
    return Plan(
        wanted=wanted,
        stats=mode == "Stats",
        paged=bool(paged),
        max_contacts=request.max_contacts,
        page_size=request.page_size,
        page_number=request.page_number,
    )


def _company_guid(value: str | None) -> str:
    if value is None or not value.strip():
        raise MissingIdentifier("company_guid is required: the GUID of the company to discover.")
    guid = value.strip().upper()
    if not _COMPANY_GUID.fullmatch(guid):
        raise InvalidParameter(f"company_guid must be 16 hexadecimal characters, not {value!r}.")
    return guid


def title_term(text: str, name: str) -> store.TitleTerm:
    """A jobTitle entry as a filter: its normalized words as a phrase, and the levels and
    functions it names when it names nothing else ("VP Sales", "Marketing")."""
    phrase = facets.title_key(text)
    if not phrase:
        raise InvalidParameter(f"{name} has no words to match titles by: {text!r}.")
    terms = titles.taxonomy_terms(text)
    if terms is None:
        return store.TitleTerm(phrase)
    levels = sum(facets.LEVEL_BITS[level] for level in terms.levels)
    functions = sum(facets.FUNCTION_BITS[function] for function in terms.functions)
    return store.TitleTerm(phrase, taxonomy=True, levels=levels, functions=functions)


def _place_terms(texts: list[str]) -> tuple[store.PlaceTerm, ...]:
    located = [(text, places.locate(text)) for text in texts]
    unknown = [text for text, location in located if location is None]
    if unknown:
        shown = ", ".join(repr(text) for text in unknown)
        raise InvalidParameter(
            f'location: cannot place {shown}; give a city, "City, ST", "City, Country", '
            "a state, a country or a US ZIP code."
        )
    return tuple(
        store.PlaceTerm(
            tokens=places.location_tokens(location),
            latitude=location.latitude,
            longitude=location.longitude,
            area=location.kind in ("state", "country"),
        )
        for _, location in located
        if location is not None
    )


# --- answering -------------------------------------------------------------------------------


def _stats(db: Database, plan: Plan) -> dict[str, Any]:
    combinations = store.people_by_levels_and_functions(db, plan.wanted)
    by_level = dict.fromkeys(facets.LEVEL_BITS, 0)
    by_function = dict.fromkeys(facets.FUNCTION_BITS, 0)
    for level_bits, function_bits, count in combinations:
        for level in facets.bit_names(level_bits, facets.LEVEL_BITS):
            by_level[level] += count
        for function in facets.bit_names(function_bits, facets.FUNCTION_BITS):
            by_function[function] += count
    matches = sum(count for _, _, count in combinations)
    return {
        "company_guid": plan.wanted.company_guid,
        "total_count": min(matches, plan.max_contacts),
        "by_level": by_level,
        "by_function": by_function,
    }


def _page(db: Database, plan: Plan, tier: str) -> dict[str, Any]:
    size = plan.page_size if plan.paged else plan.max_contacts
    number = plan.page_number if plan.paged else 1
    offset = (number - 1) * size
    limit = max(0, min(size, plan.max_contacts - offset))
    if limit:
        matches, found = store.people_page(db, plan.wanted, offset, limit)
    else:
        matches, found = store.count_people(db, plan.wanted), []
    total = min(matches, plan.max_contacts)
    return {
        "company_guid": plan.wanted.company_guid,
        "total_count": total,
        "page_number": number,
        "page_size": size,
        "total_pages": math.ceil(total / size),
        "contacts": _contacts(db, plan, found, dials=tier in DIAL_TIERS),
    }


def _contacts(
    db: Database, plan: Plan, found: list[tuple[str, float | None]], *, dials: bool
) -> list[dict[str, Any]]:
    if not found:
        return []
    rows = store.people_details(db, plan.wanted.company_guid, [guid for guid, _ in found])
    by_guid = {row["contact_guid"]: row for row in rows}
    return [contact_fields(by_guid[guid], dials=dials, miles=miles) for guid, miles in found]


def contact_fields(row: dict[str, Any], *, dials: bool, miles: float | None) -> dict[str, Any]:
    """One person of a discover answer: direct dials masked, and only when `dials`; the
    distance when there is one (a radius was given)."""
    shown = {
        "contact_guid": row["contact_guid"],
        "contact_full_name": row["full_name"],
        "contact_first_name": row["first_name"],
        "contact_last_name": row["last_name"],
        "contact_job_title": row["job_title"],
        "contact_level": _listed(row["levels"]),
        "contact_function": _listed(row["functions"]),
        "contact_sub_function": _listed(row["sub_functions"]),
        "contact_email": row["email"],
        "contact_accuracy": row["accuracy"],
        "contact_work_location_city": row["work_city"],
        "contact_work_location_state": row["work_state"],
        "contact_work_location_country": row["work_country"],
        "contact_work_location_zipcode": row["work_zipcode"],
        "contact_work_location_phone": row["work_phone"],
        "contact_direct_dial1": mask_dial(row["direct_dial1"]) if dials else "",
        "contact_direct_dial2": mask_dial(row["direct_dial2"]) if dials else "",
        "contact_profile_url": row["profile_url"],
    }
    if miles is not None:
        shown["distance_miles"] = round(miles, 1)
    return shown


def _listed(joined: str) -> list[str]:
    return joined.split(JOIN) if joined else []
