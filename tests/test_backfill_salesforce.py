"""Backfills of one Salesforce list view (`Salesforce.views`, `Salesforce.list_view_page`):
the type's list views SOQL can run (List Views), a view's scope and condition read off its
describe's query (List View Describe) into the listing's own query, which pages by Id from a
saved cursor as every listing does; a backfill of a view through connector/backfill.py."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlite_utils import Database

from connector import backfill, connections, store, worker
from connector.platforms.base import Condition, Permanent
from connector.platforms.salesforce import PLATFORM as SALESFORCE
from connector.platforms.salesforce import Salesforce
from tests.helpers.clock import Clock
from tests.helpers.constants import SECRET
from tests.helpers.crm_fields import salesforce_field
from tests.helpers.orgs import connected
from tests.helpers.vendors import VendorTransport

INSTANCE = "https://acme.my.salesforce.com"
DATA = "/services/data/v62.0"
VIEW, MINE = "00BD0000005WcBeMAK", "00BD0000005WcCNMA0"
VIEW_QUERY = (
    "SELECT Name, Title, Account.Name, Id, CreatedDate, LastModifiedDate, SystemModstamp "
    "FROM Contact USING SCOPE mine WHERE MailingState = 'CA' AND Title != 'O\\'Neil ORDER BY' "
    "ORDER BY Name ASC NULLS FIRST, Id ASC NULLS FIRST"
)


def _id(n: int) -> str:
    return f"003D000000{n:08d}"


class ViewedSalesforce:
    """Contacts by Id, two list views (List Views' answer shape), a view's describe with its
    query (List View Describe's), and the query API answering every query with the contacts
    of ids in `selected` (what the view selects here), `page` a batch, by nextRecordsUrl."""

    def __init__(self, contacts: dict[str, dict[str, Any]], selected: set[str], page: int):
        self.contacts, self.selected, self.page = contacts, selected, page
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path
        if path == f"{DATA}/sobjects/Contact/listviews":
            views = [
                {"id": VIEW, "label": "My California contacts", "developerName": "MyCA",
                 "soqlCompatible": True, "url": f"{DATA}/sobjects/Contact/listviews/{VIEW}",
                 "describeUrl": f"{DATA}/sobjects/Contact/listviews/{VIEW}/describe",
                 "resultsUrl": f"{DATA}/sobjects/Contact/listviews/{VIEW}/results"},
                {"id": MINE, "label": "Recently viewed", "developerName": "RecentlyViewed",
                 "soqlCompatible": False, "url": f"{DATA}/sobjects/Contact/listviews/{MINE}"},
            ]  # fmt: skip
            return httpx.Response(200, json={"done": True, "listviews": views, "size": 2,
                                             "nextRecordsUrl": None})  # fmt: skip
        if path == f"{DATA}/sobjects/Contact/describe":
            fields = [salesforce_field("Title", "string"), salesforce_field("Email", "email"),
                      salesforce_field("NumberOfEmployees__c", "int"),
                      salesforce_field("Birthdate", "date")]  # fmt: skip
            return httpx.Response(200, json={"name": "Contact", "label": "Contact",
                                             "custom": False, "fields": fields})  # fmt: skip
        if path == f"{DATA}/sobjects/Contact/listviews/{VIEW}/describe":
            return httpx.Response(200, json={"id": VIEW, "query": VIEW_QUERY, "scope": "mine",
                                             "sobjectType": "Contact", "columns": [],
                                             "orderBy": [], "whereCondition": None})  # fmt: skip
        start = int(path.rsplit("-", 1)[1]) if path.startswith(f"{DATA}/query/") else 0
        keys = sorted(key for key in self.contacts if key in self.selected)
        batch = keys[start : start + self.page]
        records = [{"attributes": {"type": "Contact", "url": f"{DATA}/sobjects/Contact/{key}"},
                    "Id": key, **self.contacts[key]} for key in batch]  # fmt: skip
        answer: dict[str, Any] = {"totalSize": len(keys), "done": start + self.page >= len(keys),
                                  "records": records}  # fmt: skip
        if not answer["done"]:
            answer["nextRecordsUrl"] = f"{DATA}/query/01gD0000002HU6KIAW-{start + self.page}"
        return httpx.Response(200, json=answer)

    def queries(self) -> list[str]:
        return [r.url.params["q"] for r in self.requests if r.url.path == f"{DATA}/query"]


def _adapter(crm: ViewedSalesforce) -> Salesforce:
    client = httpx.Client(transport=VendorTransport(crm))
    return SALESFORCE.adapter(INSTANCE, "00Dxx!token", client, kind="contacts")


def _contacts(count: int) -> dict[str, dict[str, Any]]:
    return {_id(n): {"Email": f"p{n}@firm{n}.example", "Title": None} for n in range(count)}


def test_the_list_views_soql_can_run_are_offered_by_label() -> None:
    crm = ViewedSalesforce({}, set(), 2)
    assert [(v.id, v.name) for v in _adapter(crm).views()] == [(VIEW, "My California contacts")]


def test_a_views_scope_and_condition_join_the_listings_query_paged_from_a_saved_cursor() -> None:
    crm = ViewedSalesforce(_contacts(6), {_id(n) for n in (1, 2, 4, 5)}, page=3)
    since = backfill.since_from("2025-01-01")

    first = _adapter(crm).list_view_page(VIEW, ["Email"], since, None)
    rest = _adapter(crm).list_view_page(VIEW, ["Email"], since, first.cursor)  # another process

    assert list(first.records) == [_id(1), _id(2), _id(4)] and first.remaining == 4
    assert list(rest.records) == [_id(5)] and rest.cursor is None
    (query,) = crm.queries()  # the second page by its nextRecordsUrl
    assert query == (
        "SELECT Id, Email FROM Contact USING SCOPE mine WHERE (MailingState = 'CA' AND "
        "Title != 'O\\'Neil ORDER BY') AND LastModifiedDate >= 2025-01-01T00:00:00Z ORDER BY Id"
    )
    with pytest.raises(Permanent, match="is not a Salesforce list view id"):
        _adapter(crm).list_view_page("' OR Id != '", ["Email"], None, None)


Setup = tuple[Database, connections.Added]


@pytest.fixture
def setup(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    """Acme (pro, 10 credits) with a Salesforce connection."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    db, link, _ = connected(
        db_path, "salesforce", "00Dxx!token", salesforce_org_ids=("00D5e000000abcD",)
    )
    yield db, link


def test_a_backfill_of_a_list_view_queues_what_the_view_selects(setup: Setup) -> None:
    db, link = setup
    contacts = _contacts(6)
    contacts[_id(2)]["Email"] = None  # nothing to look for
    crm = ViewedSalesforce(contacts, {_id(n) for n in (1, 2, 4, 5)}, page=2)
    with httpx.Client(transport=VendorTransport(crm)) as client:
        work = worker.Worker(db, SECRET.encode(), Clock(), client, random.Random(7))
        estimate = backfill.dry_run(work, link.row["id"], "contacts", "", lambda _: None, VIEW)
        row = backfill.run(work, link.row["id"], "contacts", "", None, source=VIEW)

    assert (estimate.listed, estimate.to_enrich, estimate.source_name) == (
        4, 3, "My California contacts",
    )  # fmt: skip
    assert (row["state"], row["listed"], row["queued"], row["skipped_unidentified"]) == (
        "done", 4, 3, 1,
    )  # fmt: skip
    assert {e["record_id"] for e in store.events_of(db, link.row["id"])} == {
        _id(1), _id(4), _id(5),
    }  # fmt: skip
    assert all(re.search(r"USING SCOPE mine WHERE \(MailingState", q) for q in crm.queries())


@pytest.mark.parametrize(
    ("condition", "where"),
    [
        (Condition("title", "LIKE", "O'Neil 50%_"), "Title LIKE '%O\\'Neil 50\\%\\_%'"),
        (Condition("Email", "=", "a@b' OR Id != '"), "Email = 'a@b\\' OR Id != \\''"),
        (Condition("NumberOfEmployees__c", ">=", " 50 "), "NumberOfEmployees__c >= 50"),
        (Condition("Birthdate", "<", "1990-01-31"), "Birthdate < 1990-01-31"),
    ],
)  # fmt: skip
def test_a_picked_condition_is_written_as_soql_of_the_fields_type_never_as_typed(
    condition: Condition, where: str
) -> None:
    crm = ViewedSalesforce(_contacts(3), {_id(1)}, page=5)

    listed = _adapter(crm).list_view_page(condition.source, ["Email"], None, None)

    assert list(listed.records) == [_id(1)]
    (query,) = crm.queries()
    assert query == f"SELECT Id, Email FROM Contact WHERE ({where}) ORDER BY Id"


@pytest.mark.parametrize(
    ("condition", "refusal"),
    [
        (Condition("Name) OR (Id", "=", "x"), "Contact has no field 'Name) OR (Id'"),
        (Condition("Title", "; DELETE", "x"), "cannot be compared by '; DELETE'"),
        (Condition("NumberOfEmployees__c", "=", "50 OR Id != null"), "is not a value of"),
        (Condition("NumberOfEmployees__c", "LIKE", "5"), "cannot be compared by 'LIKE'"),
        (Condition("Birthdate", "=", "yesterday"), "is not a value of Birthdate (date)"),
    ],
)  # fmt: skip
def test_a_condition_of_no_field_operator_or_value_of_its_type_is_refused_unsent(
    condition: Condition, refusal: str
) -> None:
    crm = ViewedSalesforce(_contacts(3), {_id(1)}, page=5)
    with pytest.raises(Permanent, match=re.escape(refusal)):
        _adapter(crm).list_view_page(condition.source, ["Email"], None, None)
    assert crm.queries() == []
