"""A month of changes to an existing dataset, as import files (`contactdata demo-data
--changes-from SEED`): people moving to another company of the dataset, promotions, new phone
numbers and e-mail addresses, companies growing or shrinking; deterministic for a seed.
Importing the files records the changes (server/changes.py)."""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server import export
from server.records import (
    COMPANY_COLUMNS,
    COMPANY_EXTRA_COLUMNS,
    CONTACT_COLUMNS,
    EMPLOYMENT_COLUMNS,
    REVENUE_RANGES,
    employee_range,
    month_to_vendor,
)
from server.storage import changes as changes_store

Row = dict[str, Any]
SHARE = 0.025  # of the contacts, changed in a month
# What happens to a changed contact, and how often.
PLANS = {"move": 40, "promotion": 30, "phone": 15, "email": 15}
# A promotion: the first of these a title starts with (or contains) is replaced; else "Senior ".
PROMOTIONS = (
    ("Junior ", ""),
    ("Associate ", "Senior "),
    ("Senior Vice President", "Executive Vice President"),
    ("Vice President", "Senior Vice President"),
    ("Senior Director", "Vice President"),
    ("Head of ", "Vice President of "),
    ("Director", "Senior Director"),
    ("Senior Manager", "Director"),
    ("Manager", "Senior Manager"),
    ("Senior ", "Lead "),
)
_CONTACT_SOURCES = {**CONTACT_COLUMNS, **EMPLOYMENT_COLUMNS, "conGUID": "contact_guid"}
_COMPANY_SOURCES = {**COMPANY_COLUMNS, **COMPANY_EXTRA_COLUMNS}
_DERIVED = ("levels", "functions", "sub_functions", "latitude", "longitude")


@dataclass
class MonthOfChanges:
    """The import rows of a month of changes (vendor field -> string), and the changes they
    make, counted by kind of server/changes.py."""

    month: str
    companies: list[dict[str, str]] = field(default_factory=list)
    contacts: list[dict[str, str]] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)


def generate(db: Any, seed: int, share: float = SHARE, month: str = "") -> MonthOfChanges:
    """A month of changes to `share` of the contacts (and half as many of the companies) of
    the dataset in `db`, in `month` (YYYY-MM; by default the one after the data's latest)."""
    rng = random.Random(f"changes {seed}")
    changes = MonthOfChanges(month or _next_month(changes_store.latest_job_month(db)))
    people, all_companies = changes_store.contact_guids(db), changes_store.company_guids(db)
    chosen = sorted(rng.sample(people, round(len(people) * share)))
    plans = _plans(rng, changes_store.jobs_with_contacts(db, chosen), all_companies)
    targets = {row["guid"]: row for row in changes_store.companies(db, _targets(plans))}
    for plan, job, target in plans:
        _apply(rng, changes, plan, job, targets.get(target, {}))
    firms = rng.sample(all_companies, round(len(all_companies) * share / 2))
    for company in changes_store.companies(db, sorted(firms)):
        _grow(rng, changes, company)
    return changes


def write(changes: MonthOfChanges, directory: Path) -> tuple[Path, Path]:
    """Write the rows as directory/companies.csv and directory/contacts.csv (the import
    format); the two paths."""
    directory.mkdir(parents=True, exist_ok=True)
    companies, contacts = directory / "companies.csv", directory / "contacts.csv"
    export.write_rows(companies, export.COMPANY_HEADER, changes.companies)
    export.write_rows(contacts, export.CONTACT_HEADER, changes.contacts)
    return companies, contacts


Plan = tuple[str, Row, str]  # what happens, the current job (with its contact), a target company


def _plans(rng: random.Random, jobs: list[Row], companies: list[str]) -> list[Plan]:
    """What happens to each contact with a current job (the first, by company)."""
    current: dict[str, Row] = {}
    held: dict[str, set[str]] = {}
    for job in jobs:
        held.setdefault(job["contact_guid"], set()).add(job["company_guid"])
        if job["status"] == "Active":
            current.setdefault(job["contact_guid"], job)
    kinds, weights = list(PLANS), list(PLANS.values())
    plans = []
    for guid, job in current.items():
        kind = rng.choices(kinds, weights)[0]
        target = _elsewhere(rng, companies, held[guid]) if kind == "move" else ""
        plans.append((kind if target or kind != "move" else "promotion", job, target))
    return plans


def _elsewhere(rng: random.Random, companies: list[str], held: set[str]) -> str:
    """A company the person never worked at ('' if a few draws find none)."""
    for _ in range(5):
        company = rng.choice(companies)
        if company not in held:
            return company
    return ""


def _targets(plans: Iterable[Plan]) -> list[str]:
    return sorted({target for _, _, target in plans if target})


def _apply(rng: random.Random, changes: MonthOfChanges, plan: str, job: Row, target: Row) -> None:
    """Add the rows of one contact's change."""
    row = {**job, "job_updated_on": changes.month}
    if plan == "move":
        changes.contacts.append(_item({**row, "status": "No Longer"}))
        changes.contacts.append(_item(_moved(rng, job, target, changes.month)))
        changes.kinds.update(["job_ended", "job_started"])
        return
    change = _CHANGES[plan](rng, row)
    if change is None:
        return
    kind, values = change
    changes.contacts.append(_item({**row, **values}))
    changes.kinds[kind] += 1


def _moved(rng: random.Random, job: Row, company: Row, month: str) -> Row:
    """The person's new job: at `company`'s head office, the same or a higher title."""
    title = job["job_title"] if rng.random() < 0.6 else _promoted(job["job_title"])
    local = _local_part(job["first_key"], job["last_key"])
    return {
        **job,
        **dict.fromkeys(_DERIVED, ""),
        **dict.fromkeys(("direct_dial1", "direct_dial2", "work_address", "work_zipcode"), ""),
        "company_guid": company["guid"],
        "status": "Active",
        "job_title": title,
        "email": f"{local}@{company['domain']}" if local and company["domain"] else "",
        "work_city": company["city"],
        "work_state": company["state"],
        "work_country": company["country"],
        "work_phone": company["phone"],
        "job_started_on": month,
        "job_updated_on": month,
    }


Change = tuple[str, Row] | None  # the kind of change (server/changes.py) and the new values


def _promotion(_rng: random.Random, row: Row) -> Change:
    return "title", {**dict.fromkeys(_DERIVED[:3], ""), "job_title": _promoted(row["job_title"])}


def _promoted(title: str) -> str:
    for old, new in PROMOTIONS:
        if old in title:
            return title.replace(old, new, 1)
    return f"Senior {title}" if title else "Manager"


def _phone(rng: random.Random, row: Row) -> Change:
    """A new number for the direct line, or else the office line (or a new address when the
    person has neither)."""
    name = "direct_dial1" if row["direct_dial1"] else "work_phone"
    number = row[name]
    if not re.search(r"\d{4}$", number):
        return _email(rng, row)
    fresh = number
    while fresh == number:
        fresh = number[:-4] + f"{rng.randrange(10_000):04d}"
    return "phone", {name: fresh}


def _email(rng: random.Random, row: Row) -> Change:
    """A new address at the same domain: initial and last name, or first and last."""
    domain = row["email"].rpartition("@")[2]
    first, last = _local_part(row["first_key"], ""), _local_part(row["last_key"], "")
    if not (domain and first and last):
        return None
    for local in (f"{first[0]}{last}", f"{first}{last}", f"{first}.{last}.{rng.randrange(10, 99)}"):
        if f"{local}@{domain}" != row["email"]:
            return "email", {"email": f"{local}@{domain}"}
    return None


_CHANGES: dict[str, Callable[[random.Random, Row], Change]] = {
    "promotion": _promotion,
    "phone": _phone,
    "email": _email,
}


def _local_part(first: str, last: str) -> str:
    """first.last of name keys, in the letters and digits an address takes."""
    parts = [re.sub(r"[^a-z0-9]", "", part.lower()) for part in (first, last)]
    return ".".join(part for part in parts if part)


def _grow(rng: random.Random, changes: MonthOfChanges, company: Row) -> None:
    """A company hired or let people go; now and then its revenue range moved a step."""
    count = company["employee_count"]
    if not count:
        return
    grown = max(1, round(count * rng.uniform(0.85, 1.25)))
    grown = grown if grown != count else count + 1
    changed = {"employee_count": grown}
    if company["revenue_range"] in REVENUE_RANGES and rng.random() < 0.3:
        step = REVENUE_RANGES.index(company["revenue_range"]) + (1 if grown > count else -1)
        changed["revenue_range"] = REVENUE_RANGES[min(max(step, 0), len(REVENUE_RANGES) - 1)]
    changes.companies.append(_company_item({**company, **changed}))
    changes.kinds["company"] += 1


def _item(row: Row) -> dict[str, str]:
    """An employment with its contact in the import format (as server/export.py writes it)."""
    item = {name: _text(row[_CONTACT_SOURCES[name]]) for name in export.CONTACT_HEADER}
    for name in ("conJobStartedOn", "conJobUpdatedOn"):
        item[name] = month_to_vendor(item[name])
    return item


def _company_item(row: Row) -> dict[str, str]:
    """A company in the import format (as server/export.py writes it)."""
    item = {name: _text(row[column]) for name, column in _COMPANY_SOURCES.items()}
    return {**item, "compEmpRange": employee_range(row["employee_count"])}


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else repr(value)


def _next_month(month: str) -> str:
    """The month after `month` (YYYY-MM); '' gives November 2026, after the demo data."""
    if not month:
        return "2026-11"
    year, number = map(int, month.split("-"))
    return f"{year + number // 12:04d}-{number % 12 + 1:02d}"
