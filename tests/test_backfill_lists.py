"""Backfills by filter (connector/backfill.py, `HubSpot.views` and `HubSpot.list_view_page`): a
HubSpot list chosen from the Lists API's search, its members paged through the memberships API
and read in batches, modified since a date or not; a dry run and a run of one list; and counts
that never go back, with skipped records counted by reason and those the cap left out apart."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any
from urllib.parse import unquote

import httpx
import pytest
from sqlite_utils import Database

import server
from connector import backfill, connections, store, worker
from connector.platforms import hubspot
from server import credits
from tests.helpers import hubspot_shapes
from tests.helpers.clock import Clock
from tests.helpers.crm import SearchableHubSpot
from tests.helpers.vendors import VendorTransport

LISTS = "/crm/lists/2026-03"
SINCE = "2025-01-01T00:00:00Z"
OLD, NEW = "2024-06-01T10:00:00.000Z", "2025-06-01T10:00:00.000Z"
Setup = tuple[Database, worker.Worker, connections.Added, Clock]


class ListedHubSpot(SearchableHubSpot):
    """SearchableHubSpot answering the Lists API too: `lists` by id, each a name and the ids
    of its members (contacts), shaped as lists.json (HubSpot's own document) describes."""

    def __init__(self) -> None:
        super().__init__()
        self.lists: dict[str, tuple[str, list[str]]] = {}

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if not path.startswith(LISTS):
            return super().__call__(request)
        self.requests.append(request)
        if path == f"{LISTS}/search":
            return httpx.Response(200, json=self._search(json.loads(request.content)))
        list_id = unquote(path.removeprefix(f"{LISTS}/").removesuffix("/memberships"))
        if list_id not in self.lists:
            return httpx.Response(404, json=hubspot_shapes.not_found())
        return httpx.Response(200, json=self._members(list_id, request.url.params))

    def _search(self, body: dict[str, Any]) -> dict[str, Any]:
        """POST /crm/lists/search: a page of `count` lists from `offset` (ListSearchResponse)."""
        offset, count = body.get("offset", 0), body.get("count", 20)
        found = [
            {"listId": key, "listVersion": 1, "name": name, "objectTypeId": "0-1",
             "processingStatus": "COMPLETE", "processingType": "MANUAL",
             "additionalProperties": {"hs_list_size": str(len(members))}}
            for key, (name, members) in self.lists.items()
        ]  # fmt: skip
        more = offset + count < len(found)
        return {"lists": found[offset : offset + count], "hasMore": more,
                "offset": offset + count, "total": len(found)}  # fmt: skip

    def _members(self, list_id: str, params: httpx.QueryParams) -> dict[str, Any]:
        """GET /crm/lists/{listId}/memberships: `limit` members after the offset `after`
        (ApiCollectionResponseJoinTimeAndRecordId)."""
        members = self.lists[list_id][1]
        start, limit = int(params.get("after", "0")), int(params.get("limit", "100"))
        results = [{"recordId": key, "membershipTimestamp": "2025-02-01T00:00:00Z"}
                   for key in members[start : start + limit]]  # fmt: skip
        answer: dict[str, Any] = {"results": results, "total": len(members)}
        if start + limit < len(members):
            answer["paging"] = {"next": {"after": str(start + limit)}}
        return answer

    def list_calls(self) -> list[httpx.Request]:
        return [r for r in self.requests if r.url.path.startswith(LISTS)]


@pytest.fixture
def crm() -> ListedHubSpot:
    """250 contacts, 1001 on, every fifth modified before SINCE; two lists of them."""
    fake = ListedHubSpot()
    fake.contacts = {
        str(1001 + n): {"email": f"p{n}@firm{n % 7}.example", "jobtitle": "",
                        "lastmodifieddate": OLD if n % 5 == 4 else NEW}
        for n in range(250)
    }  # fmt: skip
    fake.lists = {
        "17": ("Trade show leads", [str(1001 + n) for n in range(0, 250, 2)]),  # 125 members
        "9": ("accounts to review", ["1003", "1004", "99999"]),  # 99999 was deleted
    }
    return fake


def _adapter(client: httpx.Client) -> hubspot.HubSpot:
    return hubspot.PLATFORM.adapter("https://api.hubapi.com", "token", client, kind="contacts")


def test_the_lists_of_a_kind_are_found_by_the_lists_search_page_by_page(
    crm: ListedHubSpot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hubspot, "LIST_SEARCH_PAGE", 1)  # one list a page: two pages
    with httpx.Client(transport=VendorTransport(crm)) as client:
        views = _adapter(client).views()

    assert [(v.id, v.name, v.size) for v in views] == [
        ("9", "accounts to review", 3), ("17", "Trade show leads", 125),
    ]  # by name, as HubSpot writes it  # fmt: skip
    bodies = [json.loads(r.content) for r in crm.list_calls()]
    assert [(b["objectTypeId"], b["offset"], b["count"]) for b in bodies] == [
        ("0-1", 0, 1), ("0-1", 1, 1),
    ]  # fmt: skip


def test_a_lists_members_are_paged_and_read_those_modified_since_a_date_only(
    crm: ListedHubSpot,
) -> None:
    listed: dict[str, dict[str, Any]] = {}
    remaining: list[int | None] = []
    cursor: str | None = None
    with httpx.Client(transport=VendorTransport(crm)) as client:
        while True:  # each page from the cursor alone, as stored
            found = _adapter(client).list_view_page("17", ["email"], SINCE, cursor)
            listed.update(found.records)
            remaining.append(found.remaining)
            if found.cursor is None:
                break
            cursor = found.cursor
        whole = _adapter(client).list_view_page("9", ["email"], None, None)

    members = crm.lists["17"][1]
    expected = [key for key in members if crm.contacts[key]["lastmodifieddate"] == NEW]
    assert list(listed) == expected and len(expected) == 100  # in list order, old ones left
    assert all(set(values) == {"email"} for values in listed.values())
    assert remaining == [None, None]  # with a date, HubSpot's total is not what is listed
    assert list(whole.records) == ["1003", "1004"] and whole.remaining == 3  # 99999 is gone
    memberships = [r for r in crm.list_calls() if r.url.path.endswith("/memberships")]
    assert [r.url.params.get("after") for r in memberships] == [None, "100", None]


def test_a_dry_run_and_a_run_of_a_list_queue_its_members_only(
    worker_setup: Setup, crm: ListedHubSpot
) -> None:
    db, work, link, clock = worker_setup
    credits.top_up(db, link.row["org_id"], 1_000, clock.now)

    estimate = backfill.dry_run(work, link.row["id"], "contacts", SINCE, _no_sleep, "17")
    row = backfill.run(work, link.row["id"], "contacts", SINCE, None, source="17")

    assert (estimate.listed, estimate.to_enrich, estimate.source_name) == (
        100, 100, "Trade show leads",
    )  # fmt: skip
    assert (
        "100 records listed in the list Trade show leads modified since 2025-01-01"
        in (estimate.summary()[0])
    )
    assert (row["state"], row["listed"], row["queued"], row["source"]) == ("done", 100, 100, "17")
    queued = {event["record_id"] for event in store.events_of(db, link.row["id"])}
    assert queued == {k for k in crm.lists["17"][1] if crm.contacts[k]["lastmodifieddate"] == NEW}


def test_a_dry_run_of_a_list_the_crm_does_not_have_is_refused(
    worker_setup: Setup, crm: ListedHubSpot
) -> None:
    _, work, link, _ = worker_setup
    with pytest.raises(backfill.NoSuchView, match="no list of contacts with the id '404'"):
        backfill.dry_run(work, link.row["id"], "contacts", "", _no_sleep, "404")
    assert not [r for r in crm.list_calls() if r.url.path.endswith("/memberships")]


def test_counts_never_go_back_through_a_stop_at_the_cap_and_a_resume(
    worker_setup: Setup, crm: ListedHubSpot
) -> None:
    """Of the list's 125 members, 10 have no e-mail and 15 were enriched a day ago: skipped by
    reason. Capped at 40, the run stops in the list's first page; the rest of the page is left
    for later, not skipped; resumed, nothing counted is counted again, and no count falls."""
    db, work, link, clock = worker_setup
    credits.top_up(db, link.row["org_id"], 1_000, clock.now)
    members = crm.lists["17"][1]
    for key in members[:10]:
        crm.contacts[key]["email"] = ""
    _cache(db, link.row["id"], members[10:25], clock.now - timedelta(days=1))

    stopped = backfill.run(work, link.row["id"], "contacts", "", 40, source="17")
    while work.run_due():  # the worker enriches what was queued: now fresh, but counted queued
        pass
    resumed = backfill.resume(db, link.row["id"], "contacts", None, clock.now)
    done = backfill.advance(work, resumed, None, _no_sleep)

    assert (stopped["state"], stopped["note"]) == ("stopped", "at the credit cap")
    assert _counts(stopped) == (65, 40, 25, 15, 10, 35)  # page of 100: 40 queued, 35 left
    assert "skipped 25 (15 enriched recently, 10 without an identifier), 35 left for later" in (
        backfill.progress_line(stopped)
    )
    assert _counts(resumed) == _counts(stopped)  # resuming takes nothing back
    assert _counts(done)[:5] == (125, 100, 25, 15, 10) and done["state"] == "done"
    assert all(
        after >= before
        for before, after in zip(_counts(stopped)[:5], _counts(done)[:5], strict=True)
    )
    assert "left for later" not in backfill.progress_line(done)
    keys = [event["record_id"] for event in store.events_of(db, link.row["id"])]
    assert len(keys) == len(set(keys)) == 100  # each once


def _counts(row: dict[str, Any]) -> tuple[int, ...]:
    fields = ("listed", "queued", "skipped", "skipped_fresh", "skipped_unidentified", "capped")
    return tuple(row[name] for name in fields)


def _cache(db: Database, connection_id: str, record_ids: list[str], when: Any) -> None:
    """Transaction cache entries as if the worker had enriched these records at `when`."""
    with server.write(db):
        for key in record_ids:
            store.save_record(db, {
                "connection_id": connection_id, "kind": "contacts", "record_id": key,
                "transaction_id": f"t-{key}", "contact_guid": "", "company_guid": "",
                "input_fingerprint": "{}", "enriched_at": server.iso(when),
            })  # fmt: skip


def _no_sleep(seconds: float) -> None:
    raise AssertionError(f"asked to wait {seconds} seconds")
