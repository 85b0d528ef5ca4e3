"""Enrich as a use case: input parsing, the result's fields and formats, tiers, credits (also
charged by several processes at once), records."""

from __future__ import annotations

import multiprocessing
import os
import uuid
from collections.abc import Iterator
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import pytest
from sqlite_utils import Database

from server import accounts, credits, enrich, privacy, suppression
from server.enrich import Failure, Outcome, Requester
from server.errors import (
    Forbidden,
    InsufficientCredits,
    InvalidParameter,
    MissingIdentifier,
    NotFound,
)
from server.matching import Query
from server.records import GRADES
from server.storage import db, store
from tests.helpers.enrich_data import (
    AVA,
    AVA_EMAIL,
    BEN,
    BEN_OLD_EMAIL,
    BLUEBONNET,
    CEDAR,
    LONESTAR,
    NOBODY,
    NOW,
    REQUESTER_SECRET,
    copy_dataset,
    make_requester,
    suppress,
)

pytestmark = pytest.mark.both_backends


@pytest.fixture
def loaded(enrich_dataset: Path, db_path: Path) -> Iterator[Database]:
    connection = copy_dataset(enrich_dataset, db_path)
    yield connection
    connection.close()


def run(database: Database, who: Requester, body: dict[str, Any]) -> Outcome:
    return enrich.enrich(database, who, body, NOW, str(uuid.uuid4()))


def balance(database: Database, who: Requester) -> int | None:
    org = store.organization(database, who.org_id)
    assert org is not None
    return org["credits"]


# --- input -----------------------------------------------------------------------------------


def test_older_and_newer_names_give_the_same_query() -> None:
    older = enrich.parse_input(
        {
            "companyName": " Acme ",
            "companyWebAddress": "acme.com",
            "companyLnUrl": "https://www.linkedin.com/company/acme",
            "companyGuid": "A1A1A1A1A1A1A1A1",
            "contactFullName": "Ava Stone",
            "contactFirstName": "Ava",
            "contactLastName": "Stone",
            "contactEmail": "ava@acme.com",
            "contactJobTitle": "CTO",
            "contactCountry": "US",
            "contactUrl": "https://www.linkedin.com/in/ava",
            "contactGuid": AVA,
        }
    )
    newer = enrich.parse_input(
        {
            "compName": "Acme",
            "compWebsite": "acme.com",
            "compLinkedinUrl": "https://www.linkedin.com/company/acme",
            "compGuid": "A1A1A1A1A1A1A1A1",
            "conFullName": "Ava Stone",
            "conFirstName": "Ava",
            "conLastName": "Stone",
            "conEmail": "ava@acme.com",
            "conJobTitle": "CTO",
            "country": "US",
            "conLinkedinUrl": "https://www.linkedin.com/in/ava",
            "conGuid": AVA,
        }
    )
    assert older.query == newer.query
    assert older.query.company_name == "Acme" and older.query.country == "US"
    assert older.spelled["email"] == "contactEmail" and newer.spelled["email"] == "conEmail"


def test_record_id_is_kept_middle_name_read_apikey_null_and_unknown_fields_ignored() -> None:
    given = enrich.parse_input(
        {
            "recordId": "crm-7",
            "contactEmail": "a@b.com",
            "contactMiddleName": "Q",
            "apikey": "cdk_whatever",
            "contactTitle": 5,
            "companyName": None,
        }
    )
    assert given.record_id == "crm-7"
    assert given.query == Query(email="a@b.com", middle_name="Q")


def test_the_older_name_wins_when_both_are_sent() -> None:
    given = enrich.parse_input({"contactEmail": "old@x.com", "conEmail": "new@x.com"})
    assert given.query.email == "old@x.com" and given.spelled["email"] == "contactEmail"


@pytest.mark.parametrize(
    "body",
    [
        {"companyName": "Acme"},
        {"companyWebAddress": "acme.com"},
        {"compLinkedinUrl": "https://www.linkedin.com/company/acme"},
        {"compGuid": LONESTAR},
        {"contactEmail": "a@b.com"},
        {"contactUrl": "https://www.linkedin.com/in/ava"},
        {"conGuid": AVA},
        {"contactFullName": "Ava Stone", "companyWebAddress": "acme.com"},
        {"conFirstName": "Ava", "conLastName": "Stone", "compName": "Acme"},
    ],
)
def test_each_identifier_of_contract_4_1_is_enough(body: dict[str, str]) -> None:
    assert enrich.has_identifier(enrich.parse_input(body).query)


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({}, "contactEmail"),
        ({"recordId": "1", "contactJobTitle": "CTO", "contactCountry": "US"}, "contactEmail"),
        ({"contactFullName": "Ava Stone"}, "together with companyName or companyWebAddress"),
        ({"contactFirstName": "Ava", "contactLastName": "Stone"}, "companyName"),
        ({"conFullName": "Ava Stone"}, "together with compName or compWebsite"),
        ({"companyName": "   ", "contactEmail": ""}, "companyGuid"),
    ],
)
def test_no_usable_identifier_says_what_is_needed(body: dict[str, str], named: str) -> None:
    with pytest.raises(MissingIdentifier) as refused:
        enrich.parse_input(body)
    assert named in refused.value.message and refused.value.message.endswith(".")


@pytest.mark.parametrize(
    ("value", "kind"),
    [(42, "a number"), (True, "a boolean"), (["a"], "an array"), ({"a": 1}, "an object")],
)
def test_non_string_values_are_invalid_parameters_naming_the_field(value: Any, kind: str) -> None:
    with pytest.raises(InvalidParameter) as refused:
        enrich.parse_input({"contactEmail": "a@b.com", "companyName": value})
    assert refused.value.message == f"companyName must be a string, not {kind}."
    with pytest.raises(InvalidParameter, match="recordId"):
        enrich.parse_input({"contactEmail": "a@b.com", "recordId": 12345})


def test_over_long_values_are_refused_naming_the_field() -> None:
    enrich.parse_input({"companyName": "x" * enrich.MAX_VALUE_CHARS})
    with pytest.raises(InvalidParameter, match="conFullName is longer than 1000 characters"):
        enrich.parse_input({"companyName": "Acme", "conFullName": "x" * 1001})


# --- the result ------------------------------------------------------------------------------


def assert_complete(result: dict[str, str]) -> None:
    assert list(result) == list(enrich.OUTPUT_FIELDS)
    assert all(isinstance(value, str) for value in result.values())


def test_every_spec_field_is_in_the_output() -> None:
    spec = (
        "accuracy recordId recordStatus smarteTransactionId compAddr compCity compCountry "
        "compEmpCount compEmpRange compParentGuid compGUID compGlobalHqParentGuid "
        "compGlobalRegions compIndustry compLegalStatus compNaicsCodes compNaicsDescription "
        "compName compNameAka compPhoneNo compPubProfileUrl compRevRange compSicCodes "
        "compSicDescription compState compWebsite compWorldwideParentName compZipcode conEmail "
        "conFirstName conFullName conFunctions conGUID conJobStartedOn conJobTitleEn "
        "conJobUpdatedOn conLastName conLevels conLoc conPubProfileUrl conSubFunctions "
        "conWorkLocAddr conWorkLocCity conWorkLocCountry conWorkLocPhoneNo conWorkLocState "
        "conWorkLocZipcode directDial1 directDial2"
    ).split()
    assert set(enrich.OUTPUT_FIELDS) == {*spec, "matchedOn"}
    assert len(enrich.OUTPUT_FIELDS) == len(spec) + 1


def test_an_active_contact_in_the_formats_of_contract_4_2(loaded: Database) -> None:
    who = make_requester(loaded, "pro")
    outcome = run(loaded, who, {**AVA_EMAIL, "recordId": "crm-1"})
    result = outcome.result
    assert_complete(result)
    assert result["smarteTransactionId"] == outcome.transaction_id
    uuid.UUID(outcome.transaction_id)
    assert (result["recordId"], result["recordStatus"]) == ("crm-1", "Active")
    assert result["accuracy"] in GRADES and result["matchedOn"] == "contactEmail"
    assert (result["compGUID"], result["compName"]) == (LONESTAR, "Lonestar Works Inc.")
    assert (result["compEmpCount"], result["compEmpRange"]) == ("1200", "1001 to 5000")
    assert result["compRevRange"] == "$10M - $25M"
    assert result["compNaicsCodes"] == "511210 | 541511"
    assert result["compNameAka"] == "Lonestar | LSW Holdings"
    assert (result["conGUID"], result["conFullName"]) == (AVA, "Ava Stone")
    assert result["conEmail"] == "ava.stone@lonestar-works.com"
    assert (result["conJobStartedOn"], result["conJobUpdatedOn"]) == ("Jan-2020", "Mar-2023")
    assert result["conLevels"] == "VP"
    assert result["conWorkLocPhoneNo"] == "+1 512-555-0100"  # an office line, not a direct dial
    assert result["directDial1"] == "+1 512-555-XXXX"
    assert result["directDial2"] == "+1 (512) 555-XXXX"


def test_matched_on_uses_the_callers_spelling(loaded: Database) -> None:
    who = make_requester(loaded, "enterprise_plus")
    result = run(loaded, who, {"conEmail": "AVA.STONE@lonestar-works.com"}).result
    assert result["matchedOn"] == "conEmail"


@pytest.mark.parametrize(
    ("number", "masked"),
    [
        ("+1 512-555-0142", "+1 512-555-XXXX"),
        ("+44 20 7946 0958", "+44 20 7946 XXXX"),
        ("+49 30 12345 678", "+49 30 1234X XXX"),
        ("5125550142", "512555XXXX"),
        ("12", "XX"),
        ("", ""),
    ],
)
def test_direct_dials_are_masked_over_the_last_four_digits(number: str, masked: str) -> None:
    assert enrich.mask_dial(number) == masked


def test_no_match_is_an_empty_result_and_free(loaded: Database) -> None:
    who = make_requester(loaded, "pro", credit_balance=3)
    outcome = run(loaded, who, {**NOBODY, "recordId": "r9"})
    assert_complete(outcome.result)
    assert outcome.credits == 0 and balance(loaded, who) == 3
    filled = {k: v for k, v in outcome.result.items() if v}
    assert filled == {
        "recordId": "r9",
        "recordStatus": "No Match",
        "smarteTransactionId": outcome.transaction_id,
    }


def test_a_company_only_match_fills_company_fields_and_costs_a_credit(loaded: Database) -> None:
    who = make_requester(loaded, "enterprise_plus", credit_balance=5)
    outcome = run(loaded, who, {"companyGuid": CEDAR})
    result = outcome.result
    assert_complete(result)
    assert (result["recordStatus"], result["compName"]) == ("Active", "Cedar Analytics")
    assert result["accuracy"] in GRADES and result["matchedOn"] == "companyGuid"
    assert result["compEmpRange"] == ""  # the employee count is unknown
    assert all(result[name] == "" for name in (*enrich.CONTACT_FIELDS, *enrich.DIAL_FIELDS))
    assert outcome.credits == 1 and run(loaded, who, {"companyGuid": CEDAR}).credits == 1
    assert balance(loaded, who) == 3


def test_a_company_name_written_another_way_is_found_on_either_backend(loaded: Database) -> None:
    who = make_requester(loaded, "enterprise_plus")
    result = run(loaded, who, {"companyName": "The CedarAnalytics International"}).result
    assert (result["recordStatus"], result["compGUID"]) == ("Active", CEDAR)
    assert result["matchedOn"] == "companyName" and result["accuracy"] in ("A", "A-")


# --- tiers -----------------------------------------------------------------------------------


def test_standard_gets_no_direct_dials(loaded: Database) -> None:
    who = make_requester(loaded, "enterprise_standard")
    result = run(loaded, who, AVA_EMAIL).result
    assert result["conGUID"] == AVA and result["conEmail"]
    assert (result["directDial1"], result["directDial2"]) == ("", "")


def test_standard_sees_a_no_longer_contact_at_its_former_employer(loaded: Database) -> None:
    who = make_requester(loaded, "enterprise_standard")
    result = run(loaded, who, BEN_OLD_EMAIL).result
    assert result["recordStatus"] == "No Longer"
    assert (result["compGUID"], result["conGUID"]) == (LONESTAR, BEN)
    assert result["conJobTitleEn"] == "Software Engineer"
    assert result["conEmail"] == "ben.ode@lonestar-works.com"
    assert result["conJobStartedOn"] == "May-2018"
    assert result["directDial1"] == ""


@pytest.mark.parametrize("tier", ["enterprise_plus", "pro"])
def test_plus_and_pro_see_a_no_longer_contacts_current_employment(
    loaded: Database, tier: str
) -> None:
    who = make_requester(loaded, tier)
    result = run(loaded, who, BEN_OLD_EMAIL).result
    assert result["recordStatus"] == "No Longer"
    assert (result["compGUID"], result["compName"]) == (BLUEBONNET, "Bluebonnet Labs LLC")
    assert (result["compEmpCount"], result["compEmpRange"]) == ("45", "11 to 50")
    assert result["conGUID"] == BEN and result["conJobTitleEn"] == "Head of Platform"
    assert result["conEmail"] == "ben@bluebonnet-labs.io"
    assert result["conJobStartedOn"] == "Feb-2022"
    assert result["directDial1"] == "+1 737-555-XXXX"


def test_the_shown_employment_is_the_former_one_without_a_current_one() -> None:
    former = {"company_guid": LONESTAR, "status": "No Longer"}
    current = {"company_guid": BLUEBONNET, "status": "Active"}
    assert enrich.matched_employment([current, former], LONESTAR) is former
    assert enrich.shown_employment([former], former, "pro") is former
    assert enrich.shown_employment([current, former], former, "pro") is current
    assert enrich.shown_employment([current, former], former, "enterprise_standard") is former


# --- credits ---------------------------------------------------------------------------------


@pytest.mark.through_pgbouncer
@pytest.mark.parametrize("tier", ["enterprise_standard", "pro"])
def test_standard_and_pro_charge_every_delivery_refreshes_included(
    loaded: Database, tier: str
) -> None:
    who = make_requester(loaded, tier, credit_balance=5)
    assert [run(loaded, who, AVA_EMAIL).credits for _ in range(3)] == [1, 1, 1]
    assert balance(loaded, who) == 2
    assert [entry["change"] for entry in credits.ledger(loaded, who.org_id)] == [5, -1, -1, -1]


def test_plus_refreshes_a_contact_it_already_enriched_for_nothing(loaded: Database) -> None:
    who = make_requester(loaded, "enterprise_plus", credit_balance=5)
    assert run(loaded, who, AVA_EMAIL).credits == 1
    assert run(loaded, who, {"contactGuid": AVA}).credits == 0
    assert run(loaded, who, BEN_OLD_EMAIL).credits == 1
    assert balance(loaded, who) == 3
    other = make_requester(loaded, "enterprise_plus", credit_balance=5)
    assert run(loaded, other, AVA_EMAIL).credits == 1  # another organization pays its own


@pytest.mark.through_pgbouncer
def test_at_zero_credits_a_delivery_is_refused_and_nothing_delivered(loaded: Database) -> None:
    who = make_requester(loaded, "pro", credit_balance=0)
    with pytest.raises(InsufficientCredits) as refused:
        run(loaded, who, AVA_EMAIL)
    assert refused.value.status == 402
    assert balance(loaded, who) == 0
    [row] = store.transactions_of(loaded, who.org_id)
    assert (row["record_status"], row["credits"], row["contact_guid"]) == (
        "insufficient_credits",
        0,
        "",
    )
    assert run(loaded, who, NOBODY).result["recordStatus"] == "No Match"  # costs nothing


def test_plus_at_zero_still_refreshes_for_nothing(loaded: Database) -> None:
    who = make_requester(loaded, "enterprise_plus", credit_balance=1)
    assert run(loaded, who, AVA_EMAIL).credits == 1
    assert run(loaded, who, AVA_EMAIL).result["conGUID"] == AVA
    with pytest.raises(InsufficientCredits):
        run(loaded, who, BEN_OLD_EMAIL)


def test_an_unlimited_balance_stays_unlimited_without_ledger_lines(loaded: Database) -> None:
    who = make_requester(loaded, "enterprise_standard")
    assert balance(loaded, who) is None
    assert [run(loaded, who, AVA_EMAIL).credits for _ in range(2)] == [1, 1]
    assert balance(loaded, who) is None and credits.ledger(loaded, who.org_id) == []


@pytest.mark.through_pgbouncer
def test_processes_enriching_at_once_spend_the_balance_exactly(
    loaded: Database, db_path: Path
) -> None:
    """Four processes, five calls each, on an organization with 7 credits: 7 delivered and
    charged, the rest refused; the ledger goes down one credit at a time, never below 0."""
    who = make_requester(loaded, "pro", credit_balance=7)
    calls = [[(who.org_id, AVA_EMAIL, new_id()) for _ in range(5)] for _ in range(4)]
    assert sorted(at_once(db_path, calls)) == [("402", 0)] * 13 + [("Active", 1)] * 7
    assert balance(loaded, who) == 0
    lines = [e for e in credits.ledger(loaded, who.org_id) if e["reason"] == "enrichment"]
    assert sorted(e["balance"] for e in lines) == list(range(7))
    rows = store.transactions_of(loaded, who.org_id)
    assert sum(row["credits"] for row in rows) == 7 and len(rows) == 20


@pytest.mark.through_pgbouncer
def test_first_deliveries_of_a_contact_at_once_are_charged_once(
    loaded: Database, db_path: Path
) -> None:
    """enterprise_plus refreshes a contact it had for nothing: six processes deliver each of
    three contacts for the first time at once, to each of three organizations; one call pays
    for each contact of each organization (the others wait for it, then find it)."""
    orgs = [make_requester(loaded, "enterprise_plus", credit_balance=10) for _ in range(3)]
    people = [AVA_EMAIL, {"contactEmail": BEN_EMAIL}, {"contactEmail": CY_EMAIL}]
    calls = [[(who.org_id, body, new_id()) for who in orgs for body in people] for _ in range(6)]
    assert sorted(at_once(db_path, calls)) == [("Active", 0)] * 45 + [("Active", 1)] * 9
    for who in orgs:
        assert [e["change"] for e in credits.ledger(loaded, who.org_id)] == [10, -1, -1, -1]
        assert balance(loaded, who) == 7


@pytest.mark.through_pgbouncer
def test_copies_of_one_transaction_at_once_are_charged_once(
    loaded: Database, db_path: Path
) -> None:
    """Four processes sending one transaction id at once (a retried call): recorded and
    charged once, delivered to each."""
    who = make_requester(loaded, "pro", credit_balance=5)
    answers = at_once(db_path, [[(who.org_id, AVA_EMAIL, "retried-call")]] * 4)
    assert sorted(answers) == [("Active", 0)] * 3 + [("Active", 1)]
    assert balance(loaded, who) == 4 and len(store.transactions_of(loaded, who.org_id)) == 1


BEN_EMAIL, CY_EMAIL = "ben@bluebonnet-labs.io", "cy.park@bluebonnet-labs.io"
Call = tuple[str, dict[str, Any], str]  # an organization, an input record, a transaction id


def new_id() -> str:
    return str(uuid.uuid4())


def at_once(db_path: Path | str, calls: list[list[Call]]) -> list[tuple[str, int]]:
    """Enrich from one process per list of `calls` (each with its own connection), the
    processes making their first calls together, then their second ones, and so on (the
    lists are as long): each call's (record status or "402", credits)."""
    context = multiprocessing.get_context("forkserver")  # a fresh process: no pooled sockets
    context.set_forkserver_preload(["server.enrich", "tests.helpers.enrich_data"])
    start, answers = context.Barrier(len(calls)), context.Queue()
    pooler = os.environ.get("CONTACTDATA_PG_POOLER", "")
    processes = [
        context.Process(target=_enrich_calls, args=(str(db_path), pooler, own, start, answers))
        for own in calls
    ]
    for process in processes:
        process.start()
    got = [answers.get(timeout=60) for own in calls for _ in own]
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    return got


def _enrich_calls(
    db_path: str, pooler: str, calls: list[Call], start: Barrier, answers: Queue
) -> None:
    """One of `at_once`'s processes: its own connection (through the test's pooler, if any:
    the forkserver has the environment of when it started), then its calls, each as its
    organization's admin key and once every process is ready for its call of that rank."""
    os.environ["CONTACTDATA_PG_POOLER"] = pooler
    connection = db.connect(db_path, migrate=False)
    orgs = {org_id for org_id, _, _ in calls}
    who = {
        org: enrich.requester_for(connection, org, "/v7/enrich", REQUESTER_SECRET) for org in orgs
    }
    for org_id, body, transaction_id in calls:
        start.wait()
        try:
            outcome = enrich.enrich(connection, who[org_id], body, NOW, transaction_id)
            answers.put((outcome.result["recordStatus"], outcome.credits))
        except InsufficientCredits:
            answers.put(("402", 0))
    connection.close()


def test_a_retried_transaction_id_is_delivered_again_without_a_charge(loaded: Database) -> None:
    who = make_requester(loaded, "pro", credit_balance=5)
    first = enrich.enrich(loaded, who, AVA_EMAIL, NOW, "4b1e7ad5-0e3a-5c59-9a57-2f4a0e0c0b01")
    again = enrich.enrich(loaded, who, AVA_EMAIL, NOW, "4b1e7ad5-0e3a-5c59-9a57-2f4a0e0c0b01")
    assert (first.credits, again.credits) == (1, 0) and first.result == again.result
    assert balance(loaded, who) == 4 and len(store.transactions_of(loaded, who.org_id)) == 1


def test_a_refused_transaction_retried_is_charged_and_a_delivered_one_keeps_its_row(
    loaded: Database,
) -> None:
    who = make_requester(loaded, "pro", credit_balance=0)
    with pytest.raises(InsufficientCredits):
        enrich.enrich(loaded, who, AVA_EMAIL, NOW, "retried-after-402")
    credits.top_up(loaded, who.org_id, 2, NOW)
    delivered = enrich.enrich(loaded, who, AVA_EMAIL, NOW, "retried-after-402")
    enrich.record_failure(loaded, who, "429", NOW, "retried-after-402")  # a later refusal
    (row,) = store.transactions_of(loaded, who.org_id)
    assert delivered.credits == 1 and balance(loaded, who) == 1
    assert (row["record_status"], row["credits"]) == ("Active", 1)


# --- the suppression list --------------------------------------------------------------------

AVA_PROFILE = "https://www.linkedin.com/in/ava-stone"
AVA_AT_LONESTAR = {"contactFullName": "Ava Stone", "companyWebAddress": "lonestar-works.com"}


def assert_company_only(outcome: Outcome, company_guid: str) -> None:
    result = outcome.result
    assert (result["recordStatus"], result["compGUID"]) == ("Active", company_guid)
    assert all(result[name] == "" for name in (*enrich.CONTACT_FIELDS, *enrich.DIAL_FIELDS))


def test_a_suppressed_e_mail_gives_the_company_alone_charged_as_company_only(
    loaded: Database,
) -> None:
    who = make_requester(loaded, "enterprise_plus", credit_balance=5)
    assert run(loaded, who, AVA_EMAIL).result["conGUID"] == AVA  # 1 credit
    suppress(loaded, privacy.email(AVA_EMAIL["contactEmail"]))
    outcome = run(loaded, who, AVA_EMAIL)
    assert_company_only(outcome, LONESTAR)
    assert outcome.result["matchedOn"] == "contactEmail"  # its domain named the company
    # No free refresh: a company-only match costs its credit, as any company-only match does.
    assert outcome.credits == 1 and balance(loaded, who) == 3
    row = store.transaction(loaded, outcome.transaction_id)
    assert row is not None and (row["company_guid"], row["contact_guid"]) == (LONESTAR, "")


def test_a_suppressed_profile_url_without_a_company_is_no_match(loaded: Database) -> None:
    who = make_requester(loaded, "pro", credit_balance=5)
    body = {"contactUrl": AVA_PROFILE}
    assert run(loaded, who, body).result["conGUID"] == AVA
    suppress(loaded, privacy.profile(AVA_PROFILE))
    outcome = run(loaded, who, body)
    assert outcome.result["recordStatus"] == "No Match" and outcome.result["compGUID"] == ""
    assert outcome.credits == 0 and balance(loaded, who) == 4


def test_a_suppressed_name_at_the_companys_domain_gives_the_company_alone(
    loaded: Database,
) -> None:
    who = make_requester(loaded, "pro")
    assert run(loaded, who, AVA_AT_LONESTAR).result["conGUID"] == AVA
    suppress(loaded, privacy.name_at("Ava Stone", "https://www.lonestar-works.com/"))
    assert_company_only(run(loaded, who, AVA_AT_LONESTAR), LONESTAR)


@pytest.mark.parametrize(
    "named",
    [
        {"profile_url": AVA_PROFILE},
        {"name": "Ava Stone", "company_domain": "lonestar-works.com"},
    ],
)
def test_a_person_suppressed_by_one_identifier_is_not_returned_for_another(
    loaded: Database, named: dict[str, str]
) -> None:
    """Suppressing deletes the contact the identifier names, so an input naming the person
    otherwise (here by e-mail) finds only their company."""
    who = make_requester(loaded, "pro")
    hash_of = privacy.hasher(REQUESTER_SECRET)
    suppression.act(loaded, hash_of, NOW, [suppression.person(**named)], "suppress")
    assert_company_only(run(loaded, who, AVA_EMAIL), LONESTAR)


def test_people_not_on_the_list_are_returned_as_before(loaded: Database) -> None:
    who = make_requester(loaded, "pro")
    suppress(loaded, privacy.email("someone.else@lonestar-works.com"))
    suppress(loaded, privacy.name_at("Ava Stone", "bluebonnet-labs.io"))
    assert run(loaded, who, AVA_EMAIL).result["conGUID"] == AVA
    assert run(loaded, who, AVA_AT_LONESTAR).result["conGUID"] == AVA
    assert run(loaded, who, BEN_OLD_EMAIL).result["conGUID"] == BEN


def test_bulk_honours_the_suppression_list(loaded: Database) -> None:
    who = make_requester(loaded, "pro")
    suppress(loaded, privacy.email(AVA_EMAIL["contactEmail"]))
    answers = enrich.enrich_bulk(loaded, who, {"records": [AVA_EMAIL, BEN_OLD_EMAIL]}, NOW, "b")
    assert all(isinstance(answer, Outcome) for answer in answers)
    ava, ben = (answer.result for answer in answers if isinstance(answer, Outcome))
    assert (ava["compGUID"], ava["conGUID"], ben["conGUID"]) == (LONESTAR, "", BEN)


# --- transactions ----------------------------------------------------------------------------


def test_every_call_is_recorded_as_a_transaction(loaded: Database) -> None:
    who = make_requester(loaded, "pro", credit_balance=5)
    who = enrich.Requester(who.org_id, who.tier, None, "/v7/enrich", "req-1")
    delivered = run(loaded, who, BEN_OLD_EMAIL)
    missed = run(loaded, who, NOBODY)
    with pytest.raises(MissingIdentifier):
        enrich.enrich(loaded, who, {"contactJobTitle": "CTO"}, NOW, "refused-1")
    rows = {row["id"]: row for row in store.transactions_of(loaded, who.org_id)}
    assert rows[delivered.transaction_id] == {
        "id": delivered.transaction_id,
        "org_id": who.org_id,
        "key_id": None,
        "endpoint": "/v7/enrich",
        "request_id": "req-1",
        "company_guid": LONESTAR,  # the company the contact was matched at
        "contact_guid": BEN,
        "record_status": "No Longer",
        "accuracy": delivered.result["accuracy"],
        "credits": 1,
        "created_at": "2025-04-10T18:49:51.123+00:00",
    }
    assert (
        rows[missed.transaction_id]["record_status"],
        rows[missed.transaction_id]["credits"],
    ) == (
        "No Match",
        0,
    )
    assert rows["refused-1"]["record_status"] == "missing_identifier"


# --- bulk ------------------------------------------------------------------------------------


def test_bulk_answers_each_record_and_stops_charging_when_credits_run_out(
    loaded: Database,
) -> None:
    who = make_requester(loaded, "pro", credit_balance=1)
    body = {"records": [AVA_EMAIL, {"contactEmail": 7}, "text", BEN_OLD_EMAIL, NOBODY, {}]}
    answers = enrich.enrich_bulk(loaded, who, body, NOW, "bulk-1")
    shown = [a.result["recordStatus"] if isinstance(a, Outcome) else a.error.code for a in answers]
    assert shown == [
        "Active",
        "invalid_parameter",
        "invalid_parameter",
        "insufficient_credits",
        "insufficient_credits",
        "missing_identifier",
    ]
    assert isinstance(answers[2], Failure) and "records[2]" in answers[2].error.message
    assert balance(loaded, who) == 0
    assert len(store.transactions_of(loaded, who.org_id)) == 6


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([{"contactEmail": "a@b.com"}] * 101, "at most 100"),
        ([], "1 to 100"),
        ({"contactEmail": "a@b.com"}, "must be an array"),
        (None, "must be an array"),
    ],
)
def test_bulk_takes_1_to_100_records(loaded: Database, records: Any, message: str) -> None:
    who = make_requester(loaded, "pro")
    with pytest.raises(InvalidParameter, match=message):
        enrich.enrich_bulk(loaded, who, {"records": records}, NOW, "bulk-2")
    [row] = store.transactions_of(loaded, who.org_id)
    assert (row["id"], row["record_status"]) == ("bulk-2", "invalid_parameter")


# --- requesters and files --------------------------------------------------------------------


def test_requester_for_refuses_unknown_and_inactive_organizations(database: Database) -> None:
    with pytest.raises(NotFound):
        enrich.requester_for(database, str(uuid.uuid4()), "cli:enrich", REQUESTER_SECRET)
    who = make_requester(database, "pro")
    accounts.set_status(database, who.org_id, "inactive", NOW)
    with pytest.raises(Forbidden) as refused:
        enrich.requester_for(database, who.org_id, "cli:enrich", REQUESTER_SECRET)
    assert refused.value.code == "organization_inactive"
