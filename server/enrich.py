"""Enrich: an input record in, the vendor's flat result out, charged and recorded (contract §4).

Owns input parsing (both naming schemes), the tier's view of a matched record, the credit
rule and the transaction row of every call; `matching.find` decides what matched. A person on
the suppression list (server/privacy.py) is never shown: their company alone, when it matches.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlite_utils import Database

from server import auth, credits, matching, metrics, privacy, records, titles
from server.clock import iso
from server.errors import (
    Forbidden,
    InsufficientCredits,
    InvalidParameter,
    MissingIdentifier,
    NotFound,
    ServiceError,
)
from server.matching import Match, Query, profile_url
from server.normalize import email_key, person_key, registrable_domain
from server.storage import store
from server.storage.db import write_at_once

Row = dict[str, Any]
Result = dict[str, str]

MAX_VALUE_CHARS = 1000
MAX_BULK_RECORDS = 100
DIAL_TIERS = frozenset({"enterprise_plus", "pro"})  # direct dials, current employment
FREE_REFRESH_TIERS = frozenset({"enterprise_plus"})
DELIVERED = ("Active", "No Longer")
NO_MATCH = "No Match"

# Input field -> Query attribute: the older names (v7 reference), then the newer ones.
OLDER_NAMES: dict[str, str] = {v: k for k, v in matching.INPUT_NAMES.items()}
NEWER_NAMES: dict[str, str] = {
    "compName": "company_name",
    "compWebsite": "company_website",
    "compLinkedinUrl": "company_profile_url",
    "compGuid": "company_guid",
    "conFullName": "full_name",
    "conFirstName": "first_name",
    "conLastName": "last_name",
    "conEmail": "email",
    "conJobTitle": "job_title",
    "country": "country",
    "conLinkedinUrl": "contact_profile_url",
    "conGuid": "contact_guid",
}
INPUT_FIELDS: dict[str, str] = {**OLDER_NAMES, **NEWER_NAMES}

RECORD_FIELDS = ("recordId", "recordStatus", "accuracy", "smarteTransactionId", "matchedOn")
COMPANY_FIELDS = (
    "compGUID compName compNameAka compWebsite compPhoneNo compAddr compCity compState "
    "compZipcode compCountry compGlobalRegions compEmpCount compEmpRange compRevRange "
    "compIndustry compSicCodes compSicDescription compNaicsCodes compNaicsDescription "
    "compLegalStatus compParentGuid compGlobalHqParentGuid compWorldwideParentName "
    "compPubProfileUrl"
).split()
CONTACT_FIELDS = (
    "conGUID conFullName conFirstName conLastName conEmail conJobTitleEn conLevels "
    "conFunctions conSubFunctions conJobStartedOn conJobUpdatedOn conLoc conPubProfileUrl "
    "conWorkLocAddr conWorkLocCity conWorkLocState conWorkLocZipcode conWorkLocCountry "
    "conWorkLocPhoneNo"
).split()
DIAL_FIELDS = ("directDial1", "directDial2")
# Every field of a result, in the order a response shows them.
OUTPUT_FIELDS: tuple[str, ...] = (*RECORD_FIELDS, *COMPANY_FIELDS, *CONTACT_FIELDS, *DIAL_FIELDS)
# The fields whose every value is one of a closed set (each item, for a multi-valued field
# joined with records.JOIN): what a CRM's picklist must offer to take them.
OUTPUT_VALUES: dict[str, tuple[str, ...]] = {
    "recordStatus": (*DELIVERED, NO_MATCH),
    "accuracy": records.GRADES,
    "compEmpRange": (*(label for _, label in records.EMPLOYEE_RANGES), "10,001+"),
    "compRevRange": records.REVENUE_RANGES,
    "conLevels": titles.LEVELS,
    "conFunctions": tuple(titles.FUNCTIONS),
    "conSubFunctions": tuple(sub for subs in titles.FUNCTIONS.values() for sub in subs),
}

_CONTACT_COLUMNS = {
    name: column
    for name, column in {**records.CONTACT_COLUMNS, **records.EMPLOYMENT_COLUMNS}.items()
    if name in CONTACT_FIELDS or name in DIAL_FIELDS
}
_MONTH_FIELDS = frozenset({"conJobStartedOn", "conJobUpdatedOn"})


@dataclass(frozen=True)
class Input:
    """A parsed input record: the query, the caller's recordId, and for each Query attribute
    the field name the caller spelled it with (for `matchedOn`)."""

    query: Query
    record_id: str = ""
    spelled: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Requester:
    """Who enriches: the organization and its tier, the key (None from the CLI), and where;
    and `hash_of`, the suppression list's hash (privacy.hasher of the server secret): without
    it the list cannot be consulted, so every caller that holds the secret passes it."""

    org_id: str
    tier: str
    key_id: str | None
    endpoint: str
    request_id: str = ""
    hash_of: privacy.Hasher | None = None


@dataclass(frozen=True)
class Outcome:
    """A delivered (or No Match) result and the credits it cost."""

    transaction_id: str
    result: Result
    credits: int


@dataclass(frozen=True)
class Failure:
    """A refused record of a bulk call or a file: its transaction id and the error."""

    transaction_id: str
    error: ServiceError


@dataclass(frozen=True)
class _View:
    """What the caller's tier sees of a match: record status and the rows shown; and whether
    the input named a person on the suppression list."""

    status: str
    company: Row
    contact: Row
    job: Row
    dials: bool
    listed: bool = False


# --- input -----------------------------------------------------------------------------------


def parse_input(body: Mapping[str, Any]) -> Input:
    """The Query of an input record in either naming scheme (the older name wins a clash).

    Values must be strings of at most MAX_VALUE_CHARS; null counts as absent; `apikey` and
    unknown fields are ignored. Raises InvalidParameter or MissingIdentifier.
    """
    values: dict[str, str] = {}
    spelled: dict[str, str] = {}
    for name, attribute in INPUT_FIELDS.items():
        text = _text(body, name)
        if text and attribute not in values:
            values[attribute], spelled[attribute] = text, name
    query = Query(**values)
    if not has_identifier(query):
        raise MissingIdentifier(_missing_message(uses_newer_names(body)))
    return Input(query, _text(body, "recordId"), spelled)


def _text(body: Mapping[str, Any], name: str) -> str:
    value = body.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidParameter(f"{name} must be a string, not {_json_type(value)}.")
    if len(value) > MAX_VALUE_CHARS:
        raise InvalidParameter(f"{name} is longer than {MAX_VALUE_CHARS} characters.")
    return value.strip()


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "an array" if isinstance(value, list) else "an object"


def has_identifier(query: Query) -> bool:
    """Whether the query names a company or a contact well enough to look for (contract §4.1).

    A contact's name counts only with a company name or web address, which identify a
    company on their own, so the name never decides.
    """
    return any(
        (
            query.company_name,
            query.company_website,
            query.company_profile_url,
            query.company_guid,
            query.email,
            query.contact_profile_url,
            query.contact_guid,
        )
    )


def uses_newer_names(body: Mapping[str, Any]) -> bool:
    """Whether the caller wrote in the newer naming scheme (and none of the older names)."""
    newer = any(name in body for name in NEWER_NAMES if name not in OLDER_NAMES)
    return newer and not any(name in body for name in OLDER_NAMES)


def _missing_message(newer: bool) -> str:
    if newer:
        return (
            "At least one identifier is needed: compName, compWebsite, compLinkedinUrl or "
            "compGuid; or conEmail, conLinkedinUrl or conGuid; or conFullName (or conFirstName "
            "with conLastName) together with compName or compWebsite."
        )
    return (
        "At least one identifier is needed: companyName, companyWebAddress, companyLnUrl or "
        "companyGuid; or contactEmail, contactUrl or contactGuid; or contactFullName (or "
        "contactFirstName with contactLastName) together with companyName or companyWebAddress."
    )


# --- one record ------------------------------------------------------------------------------


def enrich(
    db: Database,
    who: Requester,
    body: Mapping[str, Any],
    now: datetime,
    transaction_id: str,
    *,
    refuse_charges: bool = False,
) -> Outcome:
    """Enrich one input record for `who`: match, show what the tier allows, charge, record.

    Every call leaves a transaction row with `transaction_id`, refusals included (their
    record status is the error code). `refuse_charges` answers 402 instead of charging (a
    bulk call whose credits ran out). A retried `transaction_id` that already delivered is
    delivered again for nothing (the CLI's resume).
    """
    try:
        given = parse_input(body)
        if refuse_charges:
            raise InsufficientCredits("Insufficient credits to process the request.")
        match, view = lookup(db, given.query, who)
        outcome = _deliver(db, who, given, match, view, now, transaction_id)
    except ServiceError as error:
        record_failure(db, who, error.code, now, transaction_id)
        raise
    result = outcome.result
    metrics.enriched(result["accuracy"], result["recordStatus"], who.tier, outcome.credits)
    return outcome


def record_failure(
    db: Database, who: Requester, code: str, now: datetime, transaction_id: str
) -> None:
    """Record a refused call (after authentication) under its error code; nothing is charged."""
    row = _transaction_row(transaction_id, who, None, code, 0, now)
    with write_at_once(db):
        store.record_transaction(db, row, DELIVERED)


def _deliver(
    db: Database,
    who: Requester,
    given: Input,
    match: Match | None,
    view: _View | None,
    now: datetime,
    transaction_id: str,
) -> Outcome:
    """Charge and record at once (credits.charge): the debit is conditional, so concurrent
    calls never overdraw, and a replayed transaction id is recorded (and charged) once, by
    its key. A refresh free for the tier costs 1 credit unless the contact was delivered
    to the organization before (credits.charge_refresh)."""
    status = view.status if view else NO_MATCH
    cost = 0 if match is None or view is None else 1
    row = _transaction_row(transaction_id, who, match, status, cost, now)
    if cost and who.tier in FREE_REFRESH_TIERS and match and match.contact_guid:
        recorded, cost = credits.charge_refresh(db, row, DELIVERED)
    else:
        recorded = credits.charge(db, row, DELIVERED)
    if not recorded:
        cost = 0  # a replay of a delivered transaction: delivered again for nothing
    result = build_result(given, match, view, transaction_id)
    return Outcome(transaction_id, result, cost)


def _transaction_row(
    transaction_id: str, who: Requester, match: Match | None, status: str, cost: int, now: datetime
) -> Row:
    return {
        "id": transaction_id,
        "org_id": who.org_id,
        "key_id": who.key_id,
        "endpoint": who.endpoint,
        "request_id": who.request_id,
        "company_guid": match.company_guid if match else "",
        "contact_guid": match.contact_guid if match else "",
        "record_status": status,
        "accuracy": match.grade if match else "",
        "credits": cost,
        "created_at": iso(now),
    }


# --- what a tier sees ------------------------------------------------------------------------


def lookup(db: Database, query: Query, who: Requester) -> tuple[Match | None, _View | None]:
    """What `query` matched and what `who` sees of it (None, None: No Match).

    When the input names a person on the suppression list (by its e-mail, profile URL or
    name at its company's domain), a matched contact gives way to the input's company-only
    match (None when it names no company): checked by the statement that reads the contact.
    The list's people have no rows to match (suppressing deletes them, imports skip them):
    the check keeps a look-alike of theirs from being shown for them."""
    probe = matching.Probe.of(query)
    match = matching.find_probed(db, probe)
    if match is None:
        return None, None
    named = input_identifiers(probe) if who.hash_of and match.contact_guid else []
    view = _view(db, match, who.tier, privacy.hashes(who.hash_of, named) if named else [])
    if view is None or not view.listed:
        return match, view
    company = matching.find_company(db, probe)
    return company, _view(db, company, who.tier) if company else None


def input_identifiers(probe: matching.Probe) -> list[privacy.Identifier]:
    """The identifiers of the person an input names, from the forms matching looked it up
    by: its e-mail, its profile URL, and its name at the company's website's domain and at
    its e-mail's (a free mail domain names no company)."""
    first = person_key(probe.person.first) if probe.person else ""
    domains = (probe.domain, probe.email_domain)
    return privacy.named(probe.email, probe.contact_url, first, probe.last_key, domains)


def named_in_input(body: Mapping[str, Any]) -> list[privacy.Identifier]:
    """The identifiers of the person an enrich input names, as enrich checks them against
    the suppression list (none when it is no valid input)."""
    try:
        query = parse_input(body).query
    except ServiceError:
        return []
    return input_identifiers(matching.Probe.of(query))


def named_in_result(result: Mapping[str, Any]) -> list[privacy.Identifier]:
    """The identifiers of the person an enrich result delivered: its e-mail, its profile URL
    and its name at its company's website's domain (none for a company-only result)."""
    text = {name: str(result.get(name) or "") for name in _NAMED_IN_RESULT}
    email = email_key(text["conEmail"]) if "@" in text["conEmail"] else ""
    domain = registrable_domain(text["compWebsite"]) if text["compWebsite"] else ""
    first, last = person_key(text["conFirstName"]), person_key(text["conLastName"])
    return privacy.named(email, profile_url(text["conPubProfileUrl"]), first, last, [domain])


_NAMED_IN_RESULT = ("conEmail", "conPubProfileUrl", "conFirstName", "conLastName", "compWebsite")


def _view(db: Database, match: Match, tier: str, hashes: Sequence[str] = ()) -> _View | None:
    """The rows shown for a match under `tier` (contract §4.3), and whether any of `hashes`
    is on the suppression list; None if the rows vanished."""
    if not match.contact_guid:
        company = match.company or store.company(db, match.company_guid)
        return _View("Active", company, {}, {}, dials=False) if company else None
    contact, jobs_and_companies, listed = store.contact_with_jobs(db, match.contact_guid, hashes)
    if contact is None:
        return None
    jobs = [job for job, _ in jobs_and_companies]
    companies = {job["company_guid"]: company for job, company in jobs_and_companies}
    matched = matched_employment(jobs, match.company_guid)
    job = shown_employment(jobs, matched, tier)
    company = companies[job["company_guid"]]
    return _View(matched["status"], company, contact, job, tier in DIAL_TIERS, listed)


def matched_employment(jobs: Sequence[Row], company_guid: str) -> Row:
    """The employment at the matched company (else the first: the current one)."""
    return next((job for job in jobs if job["company_guid"] == company_guid), jobs[0])


def shown_employment(jobs: Sequence[Row], matched: Row, tier: str) -> Row:
    """The employment a result describes: the matched one, except that tiers with current
    employment see a No Longer contact's Active employment when there is one."""
    if matched["status"] != "No Longer" or tier not in DIAL_TIERS:
        return matched
    return next((job for job in jobs if job["status"] == "Active"), matched)


def build_result(
    given: Input, match: Match | None, view: _View | None, transaction_id: str
) -> Result:
    """The flat result: every OUTPUT_FIELDS field, all strings, "" where there is no value."""
    result: Result = dict.fromkeys(OUTPUT_FIELDS, "")
    result["recordId"] = given.record_id
    result["smarteTransactionId"] = transaction_id
    result["recordStatus"] = view.status if view else NO_MATCH
    if match is None or view is None:
        return result
    result["accuracy"] = match.grade
    result["matchedOn"] = records.JOIN.join(
        given.spelled.get(name, matching.INPUT_NAMES.get(name, name)) for name in match.matched_on
    )
    result.update(company_fields(view.company))
    if view.contact:
        result.update(contact_fields(view.contact, view.job, dials=view.dials))
    return result


def company_fields(company: Row) -> Result:
    """The comp* fields of a companies row, formatted per contract §4.2."""
    shown = {name: _string(company.get(column)) for name, column in records.COMPANY_COLUMNS.items()}
    shown["compEmpRange"] = records.employee_range(company.get("employee_count"))
    return shown


def contact_fields(contact: Row, job: Row, *, dials: bool) -> Result:
    """The con* fields of a contact at one employment, and its direct dials (masked) when
    `dials`, else ""."""
    merged = {**contact, **job}
    shown = {name: _string(merged.get(column)) for name, column in _CONTACT_COLUMNS.items()}
    for name in _MONTH_FIELDS:
        shown[name] = records.month_to_vendor(shown[name])
    for name in DIAL_FIELDS:
        shown[name] = mask_dial(shown[name]) if dials else ""
    return shown


def _string(value: Any) -> str:
    return "" if value is None else str(value)


def mask_dial(number: str) -> str:
    """`+1 512-555-0142` -> `+1 512-555-XXXX`: the last four digits become X."""
    chars, hidden = list(number), 0
    for index in range(len(chars) - 1, -1, -1):
        if hidden == 4:
            break
        if chars[index].isdigit():
            chars[index], hidden = "X", hidden + 1
    return "".join(chars)


# --- bulk ------------------------------------------------------------------------------------


def bulk_records(body: Mapping[str, Any]) -> list[Any]:
    """The `records` array of a bulk body: 1 to MAX_BULK_RECORDS items, else InvalidParameter."""
    items = body.get("records")
    if not isinstance(items, list) or not items:
        raise InvalidParameter(
            f"records must be an array of 1 to {MAX_BULK_RECORDS} input records."
        )
    if len(items) > MAX_BULK_RECORDS:
        raise InvalidParameter(
            f"records holds {len(items)} records; a bulk call takes at most {MAX_BULK_RECORDS}."
        )
    return items


def enrich_bulk(
    db: Database, who: Requester, body: Mapping[str, Any], now: datetime, transaction_id: str
) -> list[Outcome | Failure]:
    """Enrich the records of a bulk body in order, each charged and recorded on its own.

    A record that fails does not fail the others; once credits run out, every later record
    is refused with 402 (charging stops). A body without a valid `records` array is recorded
    under `transaction_id` and raises.
    """
    try:
        items = bulk_records(body)
    except ServiceError as error:
        record_failure(db, who, error.code, now, transaction_id)
        raise
    return enrich_each(db, who, items, now)


def enrich_each(
    db: Database, who: Requester, items: Sequence[Any], now: datetime, where: str = "records"
) -> list[Outcome | Failure]:
    """Enrich records in order, each charged and recorded on its own: one that fails (not an
    object, as `where[index]`, or refused) does not fail the others, and once credits run
    out every later record is refused with 402 (charging stops)."""
    answers: list[Outcome | Failure] = []
    exhausted = False
    for index, item in enumerate(items):
        answer = _bulk_item(db, who, f"{where}[{index}]", item, now, exhausted)
        exhausted = exhausted or _is_out_of_credits(answer)
        answers.append(answer)
    return answers


def _bulk_item(
    db: Database, who: Requester, name: str, item: Any, now: datetime, exhausted: bool
) -> Outcome | Failure:
    transaction_id = str(uuid.uuid4())
    try:
        if not isinstance(item, dict):
            refusal = InvalidParameter(f"{name} must be a JSON object.")
            record_failure(db, who, refusal.code, now, transaction_id)
            raise refusal
        return enrich(db, who, item, now, transaction_id, refuse_charges=exhausted)
    except ServiceError as error:
        return Failure(transaction_id, error)


def _is_out_of_credits(answer: Outcome | Failure) -> bool:
    return isinstance(answer, Failure) and isinstance(answer.error, InsufficientCredits)


def enrich_with_key(
    db: Database,
    secret: bytes,
    api_key: str,
    body: Mapping[str, Any],
    now: datetime,
    transaction_id: str,
    endpoint: str,
) -> Outcome:
    """Enrich as the holder of `api_key` (the connector, for a connection's organization):
    authenticated, charged and recorded as an API call is; no rate limits, since the platform
    sending the events sets the pace."""
    return enrich(db, _holder(db, secret, api_key, now, endpoint), body, now, transaction_id)


def enrich_each_with_key(
    db: Database, secret: bytes, api_key: str, items: Sequence[Any], now: datetime, endpoint: str
) -> list[Outcome | Failure]:
    """`enrich_each` as the holder of `api_key` (a batch on a connection's enrich URL): the
    key checked once, each record its own transaction."""
    return enrich_each(db, _holder(db, secret, api_key, now, endpoint), items, now, "body")


def _holder(db: Database, secret: bytes, api_key: str, now: datetime, endpoint: str) -> Requester:
    """The requester holding `api_key`, authenticated, of an active organization."""
    caller = auth.authenticate(db, secret, api_key, now)
    auth.require_active_organization(caller)
    hash_of = privacy.hasher(secret)
    return Requester(caller.org_id, caller.tier, caller.key_id, endpoint, hash_of=hash_of)


def requester_for(db: Database, org_id: str, endpoint: str, secret: bytes) -> Requester:
    """The organization as a requester without a key (the operator's CLI); the server
    `secret` hashes what the suppression list is checked by."""
    org = store.organization(db, org_id)
    if org is None:
        raise NotFound(f"No organization with id {org_id}.")
    if org["status"] != "active":
        raise Forbidden("organization_inactive", f"The organization {org['name']} is inactive.")
    return Requester(org["id"], org["tier"], None, endpoint, hash_of=privacy.hasher(secret))
