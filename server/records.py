"""Company and contact records: stored columns versus the vendor's field names, and formats.

The one place that knows `compName` is `companies.name` and how ranges and months are
written (contract §4.2). Importer, exporter and enrich all go through it.
"""

from __future__ import annotations

import re
from datetime import date

JOIN = " | "

# Vendor field name -> companies column. Derived fields (compEmpRange) are not stored.
COMPANY_COLUMNS: dict[str, str] = {
    "compGUID": "guid",
    "compName": "name",
    "compNameAka": "aka",
    "compWebsite": "website",
    "compAddr": "address",
    "compCity": "city",
    "compState": "state",
    "compZipcode": "zipcode",
    "compCountry": "country",
    "compPhoneNo": "phone",
    "compEmpCount": "employee_count",
    "compRevRange": "revenue_range",
    "compIndustry": "industry",
    "compNaicsCodes": "naics_codes",
    "compNaicsDescription": "naics_descriptions",
    "compSicCodes": "sic_codes",
    "compSicDescription": "sic_descriptions",
    "compLegalStatus": "legal_status",
    "compParentGuid": "parent_guid",
    "compGlobalHqParentGuid": "global_hq_guid",
    "compWorldwideParentName": "worldwide_parent_name",
    "compGlobalRegions": "global_regions",
    "compPubProfileUrl": "profile_url",
}
# Columns beyond the spec's output that import and export carry so nothing is lost.
COMPANY_EXTRA_COLUMNS: dict[str, str] = {
    "compLatitude": "latitude",
    "compLongitude": "longitude",
    "compEmailPattern": "email_pattern",
}

CONTACT_COLUMNS: dict[str, str] = {
    "conGUID": "guid",
    "conFirstName": "first_name",
    "conMiddleName": "middle_name",
    "conLastName": "last_name",
    "conFullName": "full_name",
    "conPubProfileUrl": "profile_url",
    "conLoc": "location",
    "accuracy": "accuracy",
}
EMPLOYMENT_COLUMNS: dict[str, str] = {
    "compGUID": "company_guid",
    "recordStatus": "status",
    "conEmail": "email",
    "conJobTitleEn": "job_title",
    "conLevels": "levels",
    "conFunctions": "functions",
    "conSubFunctions": "sub_functions",
    "conWorkLocAddr": "work_address",
    "conWorkLocCity": "work_city",
    "conWorkLocState": "work_state",
    "conWorkLocZipcode": "work_zipcode",
    "conWorkLocCountry": "work_country",
    "conWorkLocPhoneNo": "work_phone",
    "conWorkLocLatitude": "latitude",
    "conWorkLocLongitude": "longitude",
    "directDial1": "direct_dial1",
    "directDial2": "direct_dial2",
    "conJobStartedOn": "job_started_on",
    "conJobUpdatedOn": "job_updated_on",
}

EMPLOYEE_RANGES: tuple[tuple[int, str], ...] = (
    (10, "1 to 10"),
    (50, "11 to 50"),
    (200, "51 to 200"),
    (500, "201 to 500"),
    (1000, "501 to 1000"),
    (5000, "1001 to 5000"),
    (10_000, "5001 to 10,000"),
)
REVENUE_RANGES: tuple[str, ...] = (
    "$0 - $500K",
    "$500K - $1M",
    "$1M - $5M",
    "$5M - $10M",
    "$10M - $25M",
    "$25M - $50M",
    "$50M - $100M",
    "$100M - $250M",
    "$250M - $500M",
    "$500M - $1B",
    "$1B - $5B",
    "$5B - $10B",
    "$10B+",
)
GRADES: tuple[str, ...] = ("A+", "A", "A-", "B")
RECORD_STATUSES: tuple[str, ...] = ("Active", "No Longer")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MONTH_YEAR = re.compile(r"^([A-Za-z]{3})-(\d{4})$")
_YEAR_MONTH = re.compile(r"^(\d{4})-(\d{2})(?:-\d{2})?$")


def employee_range(count: int | None) -> str:
    """The contract's range string for an employee count ("" when unknown)."""
    if count is None or count < 1:
        return ""
    for upper, label in EMPLOYEE_RANGES:
        if count <= upper:
            return label
    return "10,001+"


def month_to_stored(text: str) -> str:
    """`Jan-2020`, `2020-01` or `2020-01-15` -> stored `2020-01`; ValueError otherwise."""
    text = text.strip()
    if match := _MONTH_YEAR.match(text):
        month = MONTHS.index(match[1].title()) + 1 if match[1].title() in MONTHS else 0
        year = int(match[2])
    elif match := _YEAR_MONTH.match(text):
        year, month = int(match[1]), int(match[2])
    else:
        raise ValueError(f"{text!r} is not a month like Jan-2020 or 2020-01")
    if not 1 <= month <= 12 or not 1900 <= year <= 2100:
        raise ValueError(f"{text!r} is not a real month")
    return f"{year:04d}-{month:02d}"


def month_to_vendor(stored: str) -> str:
    """Stored `2020-01` -> `Jan-2020` ("" stays "")."""
    if not stored:
        return ""
    year, month = stored.split("-")
    return f"{MONTHS[int(month) - 1]}-{year}"


def month_of(day: date) -> str:
    """The stored month form of a date."""
    return f"{day.year:04d}-{day.month:02d}"
