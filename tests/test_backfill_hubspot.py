"""HubSpot's companies listed for a backfill: `HubSpot.list_page` of kind "companies" pages
the companies search API (hs_lastmodifieddate, not the contacts' lastmodifieddate) from a
cursor another process resumes, asking again past the search's reach; and a backfill of
companies through `connector.backfill`, counted by a dry run, then queued and written to the
companies endpoint by the worker."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from sqlite_utils import Database

from connector import backfill, connections, store, worker
from connector.platforms import hubspot
from connector.platforms.base import Retriable
from tests.helpers import hubspot_shapes
from tests.helpers.clock import Clock
from tests.helpers.crm import HS_COMPANIES, SearchableHubSpot
from tests.helpers.vendors import VendorTransport

REACH = 250  # results one search query reaches here (HubSpot's is 10,000)
SINCE = "2025-01-01T00:00:00Z"
SINCE_MS = "1735689600000"
OLD, NEW = "1700000000000", "1800000000000"  # hs_lastmodifieddate before and after SINCE
Setup = tuple[Database, worker.Worker, connections.Added, Clock]


@pytest.fixture
def crm(monkeypatch: pytest.MonkeyPatch) -> SearchableHubSpot:
    """A HubSpot whose search reaches 250 results a query (the adapter told so)."""
    monkeypatch.setattr(hubspot, "SEARCH_REACH", REACH)
    return SearchableHubSpot(reach=REACH)


def _companies(count: int) -> dict[str, dict[str, Any]]:
    """`count` companies from 1001 on, every third modified before SINCE."""
    return {
        str(1001 + n): {"name": f"Firm {n}", "domain": f"firm{n}.example",
                        "hs_lastmodifieddate": OLD if n % 3 == 2 else NEW}
        for n in range(count)
    }  # fmt: skip


def _adapter(crm: SearchableHubSpot, client: httpx.Client) -> hubspot.HubSpot:
    return hubspot.PLATFORM.adapter("https://api.hubapi.com", "token", client, kind="companies")


def test_companies_are_listed_by_the_companies_search_from_a_resumed_cursor(
    crm: SearchableHubSpot,
) -> None:
    crm.companies = _companies(600)
    crm.contacts = {key: {"email": "x@y.example", "lastmodifieddate": NEW} for key in crm.companies}
    expected = [
        key for key, values in crm.companies.items() if values["hs_lastmodifieddate"] == NEW
    ]
    listed: list[str] = []
    remaining: list[int | None] = []
    cursor: str | None = None
    with httpx.Client(transport=VendorTransport(crm)) as client:
        while True:  # each page by a new adapter, from the cursor alone (as stored in the DB)
            page = _adapter(crm, client).list_page(["name", "domain"], SINCE, cursor)
            listed += page.records
            remaining.append(page.remaining)
            assert all(set(values) == {"name", "domain"} for values in page.records.values())
            if page.cursor is None:
                break
            cursor = json.loads(json.dumps(page.cursor))
        limit = hubspot_shapes.rate_limited("TEN_SECONDLY_ROLLING")
        crm.failures.append(httpx.Response(429, headers={"Retry-After": "3"}, json=limit))
        with pytest.raises(Retriable) as limited:
            _adapter(crm, client).list_page(["name"], SINCE, None)

    assert listed == expected and len(expected) == 400  # each once, in id order
    assert remaining[0] == 400
    assert limited.value.retry_after == 3.0
    searches = crm.searches()[:-1]  # the last one was answered 429
    assert {r.url.path for r in crm.requests} == {f"{HS_COMPANIES}/search"}
    assert all(int(body.get("after", 0)) + body["limit"] <= REACH for body in searches)
    for body in searches:
        (group,) = body["filterGroups"]
        modified = [f for f in group["filters"] if f["propertyName"] != "hs_object_id"]
        assert modified == [
            {"propertyName": "hs_lastmodifieddate", "operator": "GTE", "value": SINCE_MS}
        ]
    # two pages of 100 a query (a third would pass the reach): then asked again from the
    # last id listed, 200 records on
    firsts = [body["filterGroups"][0]["filters"] for body in searches if "after" not in body]
    bounds = [[f["value"] for f in filters if f["propertyName"] == "hs_object_id"]
              for filters in firsts]  # fmt: skip
    assert bounds == [[], [expected[199]]]


def test_a_backfill_of_companies_is_counted_then_queued_and_written_to_companies(
    worker_setup: Setup, crm: SearchableHubSpot
) -> None:
    db, work, link, _ = worker_setup  # Acme has 10 credits
    crm.companies = {
        "501": {"name": "Lonestar Discover Works", "domain": "lonestar-discover.com"},
        "502": {"name": "Hill Country Analytics", "domain": "hillcountry-analytics.com"},
        "503": {"name": "", "domain": ""},  # nothing to look for
    }

    estimate = backfill.dry_run(work, link.row["id"], "companies", "", lambda _: None)

    assert (estimate.listed, estimate.identified, estimate.to_enrich) == (3, 2, 2)
    assert db.execute("SELECT count(*) FROM events").fetchone()[0] == 0
    row = backfill.run(work, link.row["id"], "companies", "", None)
    assert (row["state"], row["queued"], row["kind"]) == ("done", 2, "companies")
    assert work.run_due() == {"done": 2}
    (batch,) = crm.batches()
    assert {key: values["contactdata_company_guid"] for key, values in batch.items()} == {
        "501": "D15C0000000000A1", "502": "D15C0000000000B2",
    }  # fmt: skip
    assert "jobtitle" not in batch["501"]  # the companies mapping's properties
    assert crm.companies["501"]["city"] == "Austin"
    read = next(r for r in crm.requests if r.url.path == f"{HS_COMPANIES}/batch/read")
    assert json.loads(read.content)["inputs"] == [{"id": "501"}, {"id": "502"}]
    assert store.record(db, link.row["id"], "501", "companies") is not None
    credits = db.execute("SELECT credits FROM organizations WHERE name = 'Acme'").fetchone()[0]
    assert credits == 8
