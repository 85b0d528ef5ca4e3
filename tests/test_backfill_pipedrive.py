"""Backfills of a Pipedrive (connector/backfill.py over `Pipedrive.list_page`): persons and
organizations listed through API v2's list endpoints (`updated_since`, `limit`, an opaque
`cursor`), leads through v1's (`start`, `limit`) with the persons and organizations they
link; a dry run and a run of a Pipedrive connection's persons, against `HeldPipedrive`."""

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
from connector.platforms import PLATFORMS
from connector.platforms.base import Listed, Permanent, Retriable
from tests.helpers.constants import CRM, DATA, NOW, SECRET
from tests.helpers.crm import answer
from tests.helpers.orgs import connected
from tests.helpers.pipedrive import HeldPipedrive, lead, listing
from tests.helpers.vendors import VendorTransport

OLD, NEW = "2024-03-01T09:00:00Z", "2025-06-19T16:07:36Z"
SINCE = "2025-01-01T00:00:00.000+00:00"  # backfill.since_from("2025-01-01")
NEW_LEAD = "2025-06-19T16:07:36.754Z"  # v1's update_time, in milliseconds
LEAD_IDS = [f"adf21080-0e10-11eb-879b-{n:012x}" for n in range(150)]


def person(n: int, updated: str = NEW, email: str = "") -> dict[str, Any]:
    """A person as API v2 lists it (GET /api/v2/persons), with its organization's id."""
    emails = [{"value": email or f"p{n}@firm{n % 7}.example", "primary": True, "label": "work"}]
    return {"id": n, "name": f"P {n}", "org_id": 5000 + n % 3, "owner_id": 1,
            "add_time": OLD, "update_time": updated, "is_deleted": False, "visible_to": 3,
            "emails": emails, "phones": [], "label_ids": [], "custom_fields": {}}  # fmt: skip


def adapter(crm: HeldPipedrive, kind: str = "contacts") -> Any:
    """The platform's adapter for `kind` over a new client to `crm` (as a new process has)."""
    return PLATFORMS["pipedrive"].adapter(CRM, "token", crm.client(), kind=kind)


def every_page(crm: HeldPipedrive, kind: str, names: list[str], since: str | None) -> list[Listed]:
    pages, cursor = [], None
    while True:
        pages.append(adapter(crm, kind).list_page(names, since, cursor))
        if pages[-1].cursor is None:
            return pages
        cursor = pages[-1].cursor


def test_persons_are_listed_500_a_page_since_a_time_and_from_a_saved_cursor() -> None:
    held = {str(n): person(n, NEW if n % 2 else OLD) for n in range(1, 1_501)}
    crm = HeldPipedrive(persons=held)

    first = adapter(crm).list_page(["email", "name", "org_id"], SINCE, None)
    # the cursor, stored as text, resumes in another process: a new adapter and client
    rest = every_page_from(crm, first.cursor)

    pages = [first, *rest]
    assert [len(page.records) for page in pages] == [500, 250]
    listed = {key: values for page in pages for key, values in page.records.items()}
    assert list(listed) == [str(n) for n in range(1, 1_501, 2)]  # updated since, each once
    assert listed["7"] == {"email": "p7@firm0.example", "name": "P 7", "org_id": 5001}
    queries = crm.lists()
    assert [dict(q) for q in queries] == [
        {"limit": "500", "updated_since": "2025-01-01T00:00:00Z", "sort_by": "id",
         "sort_direction": "asc"},
        {"limit": "500", "updated_since": "2025-01-01T00:00:00Z", "sort_by": "id",
         "sort_direction": "asc", "cursor": first.cursor},
    ]  # fmt: skip
    assert all(page.remaining is None for page in pages)  # v2 lists say no total


def every_page_from(crm: HeldPipedrive, cursor: str | None) -> list[Listed]:
    pages = []
    while cursor is not None:
        pages.append(adapter(crm).list_page(["email", "name", "org_id"], SINCE, cursor))
        cursor = pages[-1].cursor
    return pages


def test_organizations_are_listed_with_their_address_parts() -> None:
    austin = {"value": "Austin, TX", "locality": "Austin", "country": "United States"}
    organizations = {
        "12": {"id": 12, "name": "Lonestar", "update_time": NEW, "address": austin},
        "13": {"id": 13, "name": "Gone", "update_time": NEW, "is_deleted": True},
    }
    crm = HeldPipedrive(organizations=organizations)
    (page,) = every_page(crm, "companies", ["name", "address_locality"], None)
    assert page.records == {"12": {"name": "Lonestar", "address_locality": "Austin"}}
    assert [r.url.path for r in crm.requests] == ["/api/v2/organizations"]
    assert "updated_since" not in crm.lists()[0]


def test_leads_are_listed_100_a_page_with_the_persons_and_organizations_they_link() -> None:
    leads = {key: lead(key, f"Lead {n}", person_id=n + 1,
                       organization_id=5000 + n % 3 if n % 2 else None,
                       update_time=NEW_LEAD if n % 3 else "2024-03-01T09:00:00.000Z")
             for n, key in enumerate(LEAD_IDS)}  # fmt: skip
    persons = {str(n + 1): person(n + 1) for n in range(150)}
    organizations = {str(k): {"id": k, "name": f"Org {k}", "update_time": NEW}
                     for k in (5000, 5001, 5002)}  # fmt: skip
    crm = HeldPipedrive(persons=persons, organizations=organizations, leads=leads)
    names = ["title", "person/email", "person/name", "organization/name"]

    first = adapter(crm, "leads").list_page(names, SINCE, None)
    second = adapter(crm, "leads").list_page(names, SINCE, first.cursor)  # resumed

    assert (first.cursor, second.cursor) == ("100", None)
    listed = {**first.records, **second.records}
    # leads of v1 take no `updated_since`: those updated before it are left out here
    assert list(listed) == [key for n, key in enumerate(LEAD_IDS) if n % 3]
    assert listed[LEAD_IDS[1]] == {
        "title": "Lead 1", "person/email": "p2@firm2.example", "person/name": "P 2",
        "organization/name": "Org 5001",
    }  # fmt: skip
    assert listed[LEAD_IDS[2]]["organization/name"] is None  # it links no organization
    assert [dict(q) for q in crm.lists()] == [
        {"start": "0", "limit": "100"}, {"start": "100", "limit": "100"},
    ]  # fmt: skip
    # each page's linked persons and organizations: one call each, by ids
    reads = [(r.url.path, len(r.url.params["ids"].split(","))) for r in crm.requests
             if "ids" in r.url.params]  # fmt: skip
    assert reads == [("/api/v2/persons", 66), ("/api/v2/organizations", 2),
                     ("/api/v2/persons", 34), ("/api/v2/organizations", 2)]  # fmt: skip


def test_a_lead_whose_person_is_gone_is_left_out_and_a_refused_read_fails_the_page() -> None:
    leads = {LEAD_IDS[0]: lead(LEAD_IDS[0], "Gone", person_id=404),
             LEAD_IDS[1]: lead(LEAD_IDS[1], "Here", person_id=1)}  # fmt: skip
    crm = HeldPipedrive(persons={"1": person(1)}, leads=leads)
    page = adapter(crm, "leads").list_page(["title", "person/email"], None, None)
    assert page.records == {LEAD_IDS[1]: {"title": "Here", "person/email": "p1@firm1.example"}}

    def refusing(request: httpx.Request) -> httpx.Response:  # a token without contacts:read
        if "ids" in request.url.params:
            return answer(403, {"success": False, "error": "Scope and URL mismatch"})
        return crm(request)

    client = httpx.Client(transport=VendorTransport(refusing))
    leads_adapter = PLATFORMS["pipedrive"].adapter(CRM, "token", client, kind="leads")
    with pytest.raises(Permanent, match="403 Forbidden: Scope and URL mismatch"):
        leads_adapter.list_page(["title", "person/email"], None, None)


def test_a_rate_limited_page_is_retriable_after_the_wait_pipedrive_asks_for() -> None:
    crm = HeldPipedrive(persons={"1": person(1)})
    crm.failures.append(answer(429, {"success": False, "error": "Request over limit"},
                               {"x-ratelimit-reset": "2"}))  # fmt: skip
    with pytest.raises(Retriable) as caught:
        adapter(crm).list_page(["email"], None, None)
    assert caught.value.retry_after == 2.0
    assert adapter(crm).list_page(["email"], None, None).records == {
        "1": {"email": "p1@firm1.example"}
    }


# --- `contactdata backfill` of a Pipedrive connection ----------------------------------------


Setup = tuple[Database, connections.Added]


@pytest.fixture
def setup(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    """The discover dataset, Acme (pro, 10 credits) with a Pipedrive connection."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    db, link, _ = connected(db_path, "pipedrive", "0123456789abcdef0123456789abcdef01234567")
    yield db, link


def discovered(count: int) -> dict[str, dict[str, Any]]:
    """`count` persons with the discover dataset's e-mails, no name and no organization, and
    one person without an e-mail (nothing to look for) before them."""
    rows = (DATA / "discover_contacts.csv").read_text().splitlines()[1 : count + 1]
    persons = {str(100 + n): {**person(100 + n, email=row.split(",")[4]), "name": "",
                              "org_id": None} for n, row in enumerate(rows)}  # fmt: skip
    return {"99": {**person(99), "emails": [], "name": "", "org_id": None}, **persons}


def test_a_dry_run_and_a_run_list_a_pipedrives_persons_and_write_each_once(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, link = setup
    monkeypatch.setattr("connector.platforms.pipedrive.LIST_PAGE", 8)  # three pages of 21
    crm = HeldPipedrive(persons=discovered(20))
    work = worker.Worker(db, SECRET.encode(), lambda: NOW, crm.client(), random.Random(7))

    estimate = backfill.dry_run(work, link.row["id"], "contacts", "", lambda _: None)

    assert (estimate.listed, estimate.identified, estimate.to_enrich) == (21, 20, 20)
    assert "a run queues at most 10 records (the balance)" in estimate.summary()
    assert len(crm.lists()) == 3 and crm.sent() == []
    assert store.events_of(db, link.row["id"]) == []

    lines: list[str] = []
    row = backfill.run(work, link.row["id"], "contacts", "", None, report=lines.append)

    assert (row["state"], row["queued"], row["note"]) == ("stopped", 10, "at the balance")
    # two pages of 8 listed: the second's 5 left out are not counted listed, nor skipped
    assert lines[-1].startswith("listed 11 of ?, queued 10, skipped 1 (1 without an identifier)")
    assert "5 left for later" in lines[-1]
    while work.run_due():
        pass
    events = store.events_of(db, link.row["id"])
    contacts = [e for e in events if e["kind"] == "contacts"]
    assert [e["status"] for e in contacts] == ["done"] * 10
    assert [e["record_id"] for e in contacts] == [str(n) for n in range(100, 110)]
    written = Counter(path for path, _ in crm.sent())
    assert written == Counter(f"/api/v2/persons/{n}" for n in range(100, 110))  # each once
    assert crm.held["persons"]["100"]["name"] == "Ava Adams"


def test_a_backfill_of_250_leads_lists_every_one_of_them(setup: Setup) -> None:
    """Issue 35: GetLeadsResponse's more_items_in_collection sits right under
    additional_data; read under a `pagination` object, the backfill stopped after 100."""
    db, link = setup
    keys = [f"adf21080-0e10-11eb-879b-{n:012x}" for n in range(250)]
    leads = {
        key: lead(key, f"Lead {n}", person_id=n + 1, update_time=NEW_LEAD)
        for n, key in enumerate(keys)
    }
    crm = HeldPipedrive(persons={str(n): person(n) for n in range(1, 251)}, leads=leads)
    work = worker.Worker(db, SECRET.encode(), lambda: NOW, crm.client(), random.Random(7))

    estimate = backfill.dry_run(work, link.row["id"], "leads", "", lambda _: None)

    assert estimate.listed == 250
    assert [dict(q) for q in crm.lists()] == [
        {"start": str(start), "limit": "100"} for start in (0, 100, 200)
    ]


# --- a backfill of one Pipedrive filter (GET /api/v1/filters, then lists by filter_id) --------


class FilteredPipedrive(HeldPipedrive):
    """HeldPipedrive with `filters` by id: each a name, a type (GET /api/v1/filters' `type`)
    and the ids of the records it selects, answered as GetFiltersResponse (pipedrive.json);
    a list call with `filter_id` lists only those records."""

    def __init__(self, filters: dict[int, tuple[str, str, set[str]]], **held: Any) -> None:
        super().__init__(**held)
        self.filters = filters

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/v1/filters":
            self.requests.append(request)
            wanted = request.url.params.get("type")
            data = [
                {"id": key, "name": name, "type": kind, "active_flag": True,
                 "is_editable": True, "user_id": 1, "add_time": "2025-01-02 10:00:00",
                 "visible_to": "3", "filter_code": None, "temporary_flag": None}
                for key, (name, kind, _) in self.filters.items() if kind == wanted
            ]  # fmt: skip
            return answer(200, {"success": True, "data": data})
        chosen = request.url.params.get("filter_id")
        if chosen is None or request.url.path.count("/") != 3:
            return super().__call__(request)
        members = self.filters[int(chosen)][2]
        self.requests.append(request)
        kind = request.url.path.rsplit("/", 1)[1]
        held = {key: value for key, value in self.held[kind].items() if key in members}
        return listing(kind, held, request.url.params)


def test_a_pipedrives_filters_are_offered_and_a_run_of_one_queues_what_it_selects(
    setup: Setup,
) -> None:
    db, link = setup
    persons = discovered(20)
    crm = FilteredPipedrive(
        {7: ("Hot prospects", "people", {"99", "100", "101", "102"}),
         8: ("Big organizations", "org", {"5000"})},
        persons=persons,
    )  # fmt: skip
    work = worker.Worker(db, SECRET.encode(), lambda: NOW, crm.client(), random.Random(7))

    offered = backfill.views(work, link.row["id"], "contacts")
    estimate = backfill.dry_run(work, link.row["id"], "contacts", "", lambda _: None, "7")
    row = backfill.run(work, link.row["id"], "contacts", "", None, source="7")

    assert [(view.id, view.name) for view in offered] == [("7", "Hot prospects")]
    assert (estimate.listed, estimate.to_enrich, estimate.source_name) == (4, 3, "Hot prospects")
    assert (row["state"], row["listed"], row["queued"], row["skipped_unidentified"]) == (
        "done", 4, 3, 1,
    )  # 99 has no e-mail  # fmt: skip
    queued = sorted(e["record_id"] for e in store.events_of(db, link.row["id"]))
    assert queued == ["100", "101", "102"]
    filtered = [q for q in crm.lists() if "filter_id" in q]
    assert filtered and all(q["filter_id"] == "7" for q in filtered)
    assert [r.url.params["type"] for r in crm.requests if r.url.path == "/api/v1/filters"] == [
        "people", "people", "people",
    ]  # offered, then checked by the dry run and named by the run  # fmt: skip
    assert row["source_name"] == "Hot prospects"
