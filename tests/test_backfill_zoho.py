"""Backfills of Zoho CRM (connector/backfill.py through `Zoho.list_page`): a module's records
listed by the get-records API, 200 a page, past the first 2,000 with `page_token`, modified
since `--since` by `If-Modified-Since`, resumed from a stored cursor by another adapter (another
process), listed again from the start when Zoho lets the token lapse; then counted by a dry
run and queued by a run that the worker works off, against a fake Zoho (httpx.MockTransport)."""

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
from connector.platforms.base import Listed, Retriable
from connector.platforms.zoho import PLATFORM as ZOHO
from connector.platforms.zoho import Zoho
from tests.helpers.clock import Clock
from tests.helpers.constants import DATA, SECRET
from tests.helpers.orgs import connected
from tests.helpers.vendors import VendorTransport
from tests.helpers.zoho_crm import ListedZohoRecords

FIRST_ID = 5725767000004000001
OLD, NEW = "2024-12-31T23:59:59+00:00", "2025-06-01T09:30:00+05:30"
SINCE = backfill.since_from("2025-01-01")  # 2025-01-01T00:00:00.000+00:00
Records = dict[str, dict[str, Any]]


def contacts(count: int, old: int = 0) -> Records:
    """`count` Contacts from FIRST_ID on, the first `old` of them last modified before SINCE;
    each with its account (a lookup, as Zoho gives it)."""
    return {
        str(FIRST_ID + n): {
            "id": str(FIRST_ID + n),
            "Email": f"person{n}@firm{n % 97}.example",
            "Last_Name": f"P{n}",
            "Account_Name": {"name": f"Firm {n % 97}", "id": str(4_000 + n % 97)},
            "Modified_Time": OLD if n < old else NEW,
        }
        for n in range(count)
    }


def adapter(zoho: ListedZohoRecords, kind: str = "contacts") -> Zoho:
    """An adapter of its own client, as a new process would build it."""
    client = httpx.Client(transport=VendorTransport(zoho))
    return ZOHO.adapter("https://www.zohoapis.eu", "1000.token", client, kind=kind)


def list_all(zoho: ListedZohoRecords, since: str | None, properties: list[str]) -> list[Listed]:
    """Every page, each asked by a new adapter from the cursor the last one gave."""
    pages = [adapter(zoho).list_page(properties, since, None)]
    while pages[-1].cursor is not None:
        pages.append(adapter(zoho).list_page(properties, since, pages[-1].cursor))
    return pages


# --- the listing ---------------------------------------------------------------------------


def test_contacts_are_listed_200_a_page_past_2000_by_page_token_and_resumed_elsewhere() -> None:
    zoho = ListedZohoRecords({"Contacts": contacts(2_450, old=50)})

    pages = list_all(zoho, SINCE, ["Email", "Account_Name"])

    listed = [key for page in pages for key in page.records]
    assert len(pages) == 12 and [len(page.records) for page in pages[:-1]] == [200] * 11
    assert listed == [str(FIRST_ID + n) for n in range(50, 2_450)]  # each once, none older
    first = pages[0].records[str(FIRST_ID + 50)]
    assert first == {"Email": "person50@firm50.example", "Account_Name": "Firm 50"}
    assert {page.remaining for page in pages} == {None}  # Zoho does not say how many
    calls = zoho.listings()
    assert {call.url.path for call in calls} == {"/crm/v7/Contacts"}
    assert {call.headers["If-Modified-Since"] for call in calls} == {"2025-01-01T00:00:00+00:00"}
    assert {call.url.params["per_page"] for call in calls} == {"200"}
    assert {call.url.params["fields"] for call in calls} == {"Email,Account_Name"}
    assert "page_token" not in calls[0].url.params and "page" not in calls[0].url.params
    assert [call.url.params["page_token"] for call in calls[1:]] == [
        page.cursor for page in pages[:-1]
    ]
    assert all("page" not in call.url.params for call in calls)  # never `page`: 2,000 at most


def test_without_since_every_record_is_listed_and_no_header_is_sent() -> None:
    zoho = ListedZohoRecords({"Leads": contacts(3, old=2)})
    page = adapter(zoho, "leads").list_page(["Email"], None, None)
    assert (list(page.records), page.cursor) == ([str(FIRST_ID + n) for n in range(3)], None)
    (call,) = zoho.listings()
    assert call.url.path == "/crm/v7/Leads" and "If-Modified-Since" not in call.headers


def test_a_lapsed_page_token_lists_again_from_the_first_page() -> None:
    """Zoho's page tokens lapse (page_token_expiry): a backfill resumed later starts over,
    and the records it queued before are not queued again (their event keys)."""
    zoho = ListedZohoRecords({"Contacts": contacts(450)})
    first = adapter(zoho).list_page(["Email"], None, None)
    zoho.expire_tokens()

    again = adapter(zoho).list_page(["Email"], None, first.cursor)

    assert list(again.records) == list(first.records)
    assert again.cursor is not None and again.cursor != first.cursor
    after = adapter(zoho).list_page(["Email"], None, again.cursor)
    assert list(after.records) == [str(FIRST_ID + n) for n in range(200, 400)]


def test_nothing_modified_since_is_a_last_empty_page() -> None:
    zoho = ListedZohoRecords({"Contacts": contacts(3, old=3), "Accounts": {}})
    assert adapter(zoho).list_page(["Email"], SINCE, None) == Listed({}, None, None)  # 304
    assert adapter(zoho, "companies").list_page(["Website"], None, None) == Listed({}, None)  # 204
    assert [call.url.path for call in zoho.listings()] == ["/crm/v7/Contacts", "/crm/v7/Accounts"]


def test_more_than_50_properties_are_listed_with_the_rest_read_by_ids() -> None:
    """A GET takes 50 field names: the page lists the first 50, the rest are read by id."""
    names = [f"Field_{n}" for n in range(55)]
    records = {
        str(FIRST_ID + n): {"id": str(FIRST_ID + n), **{name: f"{name}-{n}" for name in names}}
        for n in range(3)
    }
    zoho = ListedZohoRecords({"Contacts": records})

    page = adapter(zoho).list_page(names, None, None)

    assert page.records[str(FIRST_ID + 2)] == {name: f"{name}-2" for name in names}
    listing, read = zoho.requests
    assert len(listing.url.params["fields"].split(",")) == 50
    assert read.url.params["fields"] == "Field_50,Field_51,Field_52,Field_53,Field_54"
    assert read.url.params["ids"] == ",".join(str(FIRST_ID + n) for n in range(3))


# Zoho's answer once the API credits of the rolling 24 hours are spent, or too many calls run
# at once (api-limits page; the status-codes page's error shape). Zoho documents no wait.
TOO_MANY = {
    "code": "TOO_MANY_REQUESTS",
    "details": {},
    "message": "The number of concurrent requests has exceeded the limit",
    "status": "error",
}


@pytest.mark.parametrize(("headers", "wait"), [({}, None), ({"Retry-After": "30"}, 30.0)])
def test_a_rate_limited_page_is_retriable_after_the_time_zoho_asks(
    headers: dict[str, str], wait: float | None
) -> None:
    """No wait stated (as Zoho documents it): the caller's own; a Retry-After, if one comes."""
    zoho = ListedZohoRecords({"Contacts": contacts(3)})
    zoho.failures.append(httpx.Response(429, headers=headers, json=TOO_MANY))
    with pytest.raises(Retriable) as raised:
        adapter(zoho).list_page(["Email"], None, None)
    assert raised.value.retry_after == wait and raised.value.throttled
    assert raised.value.reason == (
        "429 Too Many Requests: The number of concurrent requests has exceeded the limit"
    )


# --- backfill, dry run and run ---------------------------------------------------------------

Setup = tuple[Database, worker.Worker, connections.Added, ListedZohoRecords]
DISCOVER = DATA / "discover_contacts.csv"


@pytest.fixture
def zoho_setup(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Setup]:
    """Acme (pro, 10 credits) with a Zoho connection, the discover dataset, and a worker
    talking to a fake Zoho holding no records yet: (db, worker, connection, fake)."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    db, link, _ = connected(db_path, "zoho", "1000.zoho-access-token")
    zoho = ListedZohoRecords({"Contacts": {}, "Accounts": {}, "Leads": {}})
    with httpx.Client(transport=VendorTransport(zoho)) as client:
        work = worker.Worker(db, SECRET.encode(), Clock(), client, random.Random(7))
        yield db, work, link, zoho


def known_contacts(count: int) -> Records:
    """`count` Contacts holding e-mails the discover dataset knows, Title empty."""
    emails = [row.split(",")[4] for row in DISCOVER.read_text().splitlines()[1 : count + 1]]
    return {
        str(FIRST_ID + n): {"id": str(FIRST_ID + n), "Email": email, "Last_Name": f"P{n}",
                            "Title": None, "Modified_Time": NEW}
        for n, email in enumerate(emails)
    }  # fmt: skip


def test_a_dry_run_lists_zohos_contacts_since_a_date_and_counts_the_credits(
    zoho_setup: Setup,
) -> None:
    db, work, link, zoho = zoho_setup
    zoho.records["Contacts"] = contacts(450, old=40)
    unknown = {"Email": None, "Account_Name": None}  # nothing to look for
    zoho.records["Contacts"][str(FIRST_ID + 449)].update(unknown)
    slept: list[float] = []
    zoho.failures.append(httpx.Response(429, headers={"Retry-After": "7"}, json=TOO_MANY))

    estimate = backfill.dry_run(work, link.row["id"], "contacts", SINCE, slept.append)

    assert (estimate.listed, estimate.identified, estimate.to_enrich) == (410, 409, 409)
    assert (estimate.credits, estimate.balance) == (409, 10)
    assert slept == [7.0]
    assert len(zoho.listings()) == 1 + 3  # the 429, then three pages
    assert db.execute("SELECT count(*) FROM events").fetchone()[0] == 0  # nothing queued


def test_a_run_queues_zohos_contacts_within_the_balance_and_the_worker_writes_them(
    zoho_setup: Setup,
) -> None:
    db, work, link, zoho = zoho_setup  # Acme has 10 credits
    zoho.records["Contacts"] = known_contacts(20)
    lines: list[str] = []

    row = backfill.run(work, link.row["id"], "contacts", "", None, report=lines.append)

    assert (row["state"], row["queued"], row["note"]) == ("stopped", 10, "at the balance")
    assert lines[-1].startswith("listed 10 of ?, queued 10, skipped 0, 10 left for later")
    while work.run_due():
        pass
    events = store.events_of(db, link.row["id"])
    assert [event["status"] for event in events] == ["done"] * 10
    written = Counter(record["id"] for _, batch in zoho.updates("Contacts") for record in batch)
    assert sorted(written) == sorted(event["record_id"] for event in events)
    assert set(written.values()) == {1}
    assert all(zoho.records["Contacts"][event["record_id"]]["Title"] for event in events)


# --- a backfill of one Zoho custom view (settings/custom_views, then records by cvid) -------


class ViewedZoho(ListedZohoRecords):
    """ListedZohoRecords with custom views of Contacts by id (`views`: a name and the ids it
    shows), answered as CustomViews (zoho.json, from crm-oas's custom_views.json); a listing
    with `cvid` pages only the records that view shows."""

    def __init__(self, records: dict[str, Records], views: dict[str, tuple[str, set[str]]]):
        super().__init__(records)
        self.views = views

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/crm/v7/settings/custom_views":
            self.requests.append(request)
            found = [{"id": key, "name": name.replace(" ", "_"), "display_value": name,
                      "system_name": None, "category": "created_by_me", "default": False,
                      "system_defined": False, "access_type": "only_to_me"}
                     for key, (name, _) in self.views.items()]  # fmt: skip
            info = {"per_page": 200, "count": len(found), "page": 1, "more_records": False}
            return httpx.Response(200, json={"custom_views": found, "info": info})
        view = request.url.params.get("cvid")
        if view is None:
            return super().__call__(request)
        module = request.url.path.rsplit("/", 1)[1]
        every = self.records[module]
        self.records[module] = {k: v for k, v in every.items() if k in self.views[view][1]}
        try:
            return super().__call__(request)
        finally:
            self.records[module] = every


def test_a_zoho_custom_view_is_offered_estimated_and_run_by_its_cvid(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    db, link, _ = connected(db_path, "zoho", "1000.zoho-access-token")
    held = known_contacts(8)
    shown = set(list(held)[:5])
    zoho = ViewedZoho({"Contacts": held, "Accounts": {}, "Leads": {}},
                      {"5725767000000087501": ("Webinar sign-ups", shown)})  # fmt: skip
    with httpx.Client(transport=VendorTransport(zoho)) as client:
        work = worker.Worker(db, SECRET.encode(), Clock(), client, random.Random(7))
        offered = backfill.views(work, link.row["id"], "contacts")
        estimate = backfill.dry_run(
            work, link.row["id"], "contacts", "", lambda _: None, "5725767000000087501"
        )
        row = backfill.run(work, link.row["id"], "contacts", "", None,
                           source="5725767000000087501")  # fmt: skip

    assert [(v.id, v.name) for v in offered] == [("5725767000000087501", "Webinar sign-ups")]
    assert (estimate.listed, estimate.to_enrich, estimate.source_name) == (5, 5, "Webinar sign-ups")
    assert (row["state"], row["listed"], row["queued"]) == ("done", 5, 5)
    assert {e["record_id"] for e in store.events_of(db, link.row["id"])} == shown
    assert all(r.url.params["cvid"] == "5725767000000087501" for r in zoho.listings())
    assert row["source_name"] == "Webinar sign-ups"  # the run names its view as Zoho does
    assert [r.url.params["module"] for r in zoho.requests
            if r.url.path.endswith("/custom_views")] == ["Contacts"] * 3  # fmt: skip
