"""Backfills of Dynamics 365 / Dataverse (connector/backfill.py through `Dynamics.list_page`):
a table's rows listed page by page as "Page results using OData" shows it (Prefer
odata.maxpagesize, @odata.nextLink), modified since a date, counted by @odata.count, resumed
from the saved next link by another adapter (another process), and a backfill's dry run and
run against a fake Web API (httpx.MockTransport)."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlite_utils import Database

from connector import backfill, connections, store, worker
from connector.platforms import dynamics
from connector.platforms.base import Permanent, Retriable
from connector.platforms.dynamics import Dynamics
from server import importer
from tests.helpers.clock import Clock
from tests.helpers.constants import CRM, DATA, SECRET
from tests.helpers.dataverse import ListedDataverseTables, unauthorized
from tests.helpers.orgs import organization
from tests.helpers.vendors import VendorTransport

TOKEN = "entra-access-token"
EARLY, LATE = "2026-01-01T08:00:00Z", "2026-01-15T08:00:00Z"
COLUMNS = ["emailaddress1", "firstname"]


def guid(n: int) -> str:
    """The n-th row's id: GUIDs that sort as their numbers do."""
    return f"00000000-0000-4000-8000-{n:012x}"


def _contacts(count: int) -> dict[str, dict[str, Any]]:
    """`count` contacts, every other one modified late (after the 10th of January)."""
    return {
        guid(n): {"emailaddress1": f"person{n}@firm{n % 97}.example", "firstname": f"P{n}",
                  "modifiedon": LATE if n % 2 else EARLY}
        for n in range(count)
    }  # fmt: skip


def _adapter(crm: ListedDataverseTables, kind: str = "contacts") -> Dynamics:
    """An adapter over a client of its own, as a process of its own would build it."""
    return Dynamics(CRM, TOKEN, httpx.Client(transport=VendorTransport(crm)), kind=kind)


def test_rows_modified_since_are_listed_page_by_page_and_resumed_from_the_next_link() -> None:
    crm = ListedDataverseTables({"contacts": _contacts(2_400)})
    since = backfill.since_from("2026-01-10")

    first = _adapter(crm).list_page(COLUMNS, since, None)

    (asked,) = crm.listings("contacts")
    assert asked.url.path == "/api/data/v9.2/contacts"
    assert dict(asked.url.params) == {
        "$select": "contactid,emailaddress1,firstname",
        "$filter": "modifiedon ge 2026-01-10T00:00:00Z",
        "$orderby": "contactid asc",
        "$count": "true",
    }
    assert asked.headers["prefer"] == "odata.maxpagesize=500"
    assert asked.headers["authorization"] == f"Bearer {TOKEN}"
    assert (len(first.records), first.remaining) == (500, 1_200)  # @odata.count, from the first
    assert first.records[guid(1)] == {"emailaddress1": "person1@firm1.example", "firstname": "P1"}
    assert first.cursor is not None and first.cursor.startswith("/api/data/v9.2/contacts?")

    # the cursor alone, in another process: the next link, sent below the environment URL
    second = _adapter(crm).list_page(COLUMNS, since, first.cursor)
    assert second.cursor is not None and second.remaining is None
    third = _adapter(crm).list_page(COLUMNS, since, second.cursor)
    assert third.cursor is None and len(third.records) == 200

    listed = [*first.records, *second.records, *third.records]
    assert listed == [guid(n) for n in range(1, 2_400, 2)]  # those modified since, each once
    later = crm.listings("contacts")[1:]
    assert [r.url.params["$skiptoken"].count("pagenumber") for r in later] == [1, 1]
    assert all(r.headers["prefer"] == "odata.maxpagesize=500" for r in later)  # the same size
    assert all(str(r.url).startswith(f"{CRM}/api/data/v9.2/contacts?") for r in later)


def test_a_listing_without_since_lists_every_row_and_a_full_count_is_no_total() -> None:
    crm = ListedDataverseTables({"accounts": {guid(n): {"name": f"Firm {n}"}
                                              for n in range(5_200)}})  # fmt: skip
    page = _adapter(crm, "companies").list_page(["name"], None, None)
    (asked,) = crm.listings("accounts")
    assert "$filter" not in asked.url.params and asked.url.params["$orderby"] == "accountid asc"
    # @odata.count stops at 5,000: the total is not known
    assert (len(page.records), page.remaining) == (500, None)
    assert page.records[guid(0)] == {"name": "Firm 0"}


def test_a_throttled_page_waits_and_an_unknown_column_is_dropped_from_the_listing() -> None:
    crm = ListedDataverseTables({"contacts": _contacts(3)})
    crm.failures.append(httpx.Response(429, headers={"Retry-After": "30"}, json={"error": {
        "code": "0x80072322", "message": "Number of requests exceeded the limit of 6000 "
        "over time window of 300 seconds."}}))  # fmt: skip
    with pytest.raises(Retriable) as throttled:
        _adapter(crm).list_page(COLUMNS, None, None)
    assert throttled.value.retry_after == 30.0 and "0x80072322" in throttled.value.reason

    missing = (
        "Could not find a property named 'new_score' on type 'Microsoft.Dynamics.CRM.contact'."
    )
    crm.failures.append(httpx.Response(400, json={"error": {"code": "0x0", "message": missing}}))
    page = _adapter(crm).list_page([*COLUMNS, "new_score"], None, None)
    assert page.records[guid(2)] == {"emailaddress1": "person2@firm2.example",
                                     "firstname": "P2", "new_score": None}  # fmt: skip
    assert crm.listings("contacts")[-1].url.params["$select"] == "contactid,emailaddress1,firstname"


def test_a_cursor_that_is_not_a_next_link_of_the_tables_listing_is_refused_unsent() -> None:
    crm = ListedDataverseTables({})
    for cursor in ("/api/data/v9.2/leads?$skiptoken=x", "https://elsewhere.example/x", "//x"):
        with pytest.raises(Permanent, match="not a next link"):
            _adapter(crm).list_page(COLUMNS, None, cursor)
    assert crm.requests == []


# --- a backfill of a Dynamics connection ----------------------------------------------------

Setup = tuple[Database, worker.Worker, connections.Added, ListedDataverseTables]


@pytest.fixture
def setup(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    """Acme (pro, 10 credits) with a Dynamics connection, the discover dataset, and a worker
    over a fake Web API holding the discover dataset's 20 people as contacts and 5 more
    without an e-mail, listed 8 a page."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    monkeypatch.setattr(dynamics, "PAGE_SIZE", 8)
    db = store.connect(db_path)
    importer.import_files(
        db, companies=DATA / "discover_companies.csv", contacts=DATA / "discover_contacts.csv"
    )
    _, key = organization(db, credits=10)
    link = connections.add(
        db, SECRET.encode(), Clock().now, name="d365", platform="dynamics", api_key=key,
        crm_base_url=CRM, crm_token=TOKEN,
    )  # fmt: skip
    people = (DATA / "discover_contacts.csv").read_text().splitlines()[1:21]
    emails = [row.split(",")[4] for row in people]
    rows = {guid(n): {"emailaddress1": email, "jobtitle": None, "modifiedon": LATE}
            for n, email in enumerate(emails)}  # fmt: skip
    rows.update({guid(20 + n): {"firstname": f"Nameless {n}", "modifiedon": LATE}
                 for n in range(5)})  # fmt: skip
    crm = ListedDataverseTables({"contacts": rows})
    with httpx.Client(transport=VendorTransport(crm)) as client:
        yield db, worker.Worker(db, SECRET.encode(), Clock(), client, random.Random(7)), link, crm


def test_a_dry_run_lists_a_dynamics_connections_contacts_and_counts_the_credits(
    setup: Setup,
) -> None:
    db, work, link, crm = setup
    estimate = backfill.dry_run(work, link.row["id"], "contacts", "", lambda _: None)
    assert (estimate.listed, estimate.identified, estimate.to_enrich) == (25, 20, 20)
    assert estimate.credits == 20 and "a run queues at most 10 records (the balance)" in (
        estimate.summary()
    )
    assert len(crm.listings("contacts")) == 4  # 8 a page
    assert db.execute("SELECT count(*) FROM events").fetchone()[0] == 0


def test_a_backfill_interrupted_resumes_from_its_saved_next_link_and_is_worked_off(
    setup: Setup,
) -> None:
    db, work, link, crm = setup
    crm.page_failures[2] = unauthorized()  # the token expires after the first page
    lines: list[str] = []
    with pytest.raises(Permanent, match="token expired or revoked"):
        backfill.run(work, link.row["id"], "contacts", "", None, report=lines.append)
    ((state, queued, cursor),) = db.execute("SELECT state, queued, cursor FROM backfills")
    assert (state, queued) == ("running", 8) and cursor.startswith("/api/data/v9.2/contacts?")

    row = backfill.run(work, link.row["id"], "contacts", "", None, report=lines.append)

    assert "backfill 1 of contacts resumed after 8 records listed" in lines
    resumed = crm.listings("contacts")[2]  # the refused one, then the one resumed
    assert "$skiptoken" in resumed.url.params and str(resumed.url).endswith(cursor[-40:])
    assert (row["state"], row["queued"], row["note"]) == ("stopped", 10, "at the balance")
    while work.run_due():
        pass
    events = store.events_of(db, link.row["id"])
    assert [e["status"] for e in events] == ["done"] * 10
    assert all(e["event_key"].startswith("backfill:1:contacts:") for e in events)
    patched = Counter(row_id for row_id, _ in crm.patches("contacts"))
    assert sorted(patched) == sorted(e["record_id"] for e in events)
    assert set(patched.values()) == {1}
    assert all(crm.tables["contacts"][e["record_id"]]["jobtitle"] for e in events)


# --- a backfill of one Dataverse system view (savedqueries, then savedQuery=) ---------------

VIEW = "00000000-0000-4000-9000-00000000000a"


class ViewedDataverse(ListedDataverseTables):
    """ListedDataverseTables with public system views of contacts (`views`: by savedqueryid,
    a name and the rows it returns): savedqueries answered as SavedQueryCollection, and a
    table's `savedQuery=` as the view's rows, their primary key only (its own columns are
    not ours), in one page (dataverse.json, from "Retrieve and execute predefined queries")."""

    def __init__(self, tables: dict[str, dict[str, Any]], views: dict[str, tuple[str, set[str]]]):
        super().__init__(tables)
        self.views = views

    def __call__(self, request: httpx.Request) -> httpx.Response:
        context = f"{CRM}/api/data/v9.2/$metadata#"
        if request.url.path == "/api/data/v9.2/savedqueries":
            self.requests.append(request)
            assert "returnedtypecode eq 'contact'" in request.url.params["$filter"]
            value = [{"savedqueryid": key, "name": name} for key, (name, _) in self.views.items()]
            return httpx.Response(200, json={"@odata.context": f"{context}savedqueries",
                                             "value": value})  # fmt: skip
        view = request.url.params.get("savedQuery")
        if view is None:
            return super().__call__(request)
        self.requests.append(request)
        value = [{"@odata.etag": 'W/"4400496"', "contactid": key}
                 for key in sorted(self.views[view][1])]  # fmt: skip
        return httpx.Response(200, json={"@odata.context": f"{context}contacts", "value": value})


def test_a_dataverse_view_is_offered_and_its_rows_modified_since_are_backfilled(
    setup: Setup,
) -> None:
    db, _, link, listed = setup
    rows = listed.tables["contacts"]
    for key in (guid(0), guid(1)):
        rows[key]["modifiedon"] = EARLY
    crm = ViewedDataverse({"contacts": rows}, {VIEW: ("My Active Contacts", {
        guid(0), guid(1), guid(2), guid(3), guid(20)})})  # fmt: skip
    since = backfill.since_from("2026-01-10")
    with httpx.Client(transport=VendorTransport(crm)) as client:
        work = worker.Worker(db, SECRET.encode(), Clock(), client, random.Random(7))
        offered = backfill.views(work, link.row["id"], "contacts")
        estimate = backfill.dry_run(work, link.row["id"], "contacts", since, lambda _: None, VIEW)
        row = backfill.run(work, link.row["id"], "contacts", since, None, source=VIEW)

    assert [(v.id, v.name) for v in offered] == [(VIEW, "My Active Contacts")]
    assert (estimate.listed, estimate.identified, estimate.source_name) == (
        3, 2, "My Active Contacts",
    )  # guid(0) and guid(1) were modified before; guid(20) has no e-mail  # fmt: skip
    assert (row["state"], row["queued"], row["skipped_unidentified"]) == ("done", 2, 1)
    assert {e["record_id"] for e in store.events_of(db, link.row["id"])} == {guid(2), guid(3)}
    with pytest.raises(Permanent, match="is not a Dataverse view id"):
        _adapter(crm).list_view_page("../accounts", COLUMNS, None, None)
