"""The backfill page (connector/views/backfill.py) through the Flask test client against the
loopback HubSpot: the dry run's estimate, start with a credit cap (nothing listed in the
request), progress as the worker's advance_backfills job runs, stop and resume from the saved
cursor with each record queued and written once; CLI stop and resume; tenancy and CSRF."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient
from sqlite_utils import Database

from connector import backfill, cli, connections, store, worker
from connector.app import create_app
from server import importer
from tests.helpers.clock import Clock
from tests.helpers.constants import DATA, SECRET
from tests.helpers.crm_server import Call, FakeCrm, Reply, running
from tests.helpers.hubspot_lists import LISTS, ListedCrm
from tests.helpers.orgs import organization
from tests.helpers.settings_forms import sign_in, source, submit, text

RECORDS = 150  # two pages of HubSpot's search (100 a page)
OLD, NEW = "2024-06-01T10:00:00.000Z", "2025-06-01T10:00:00.000Z"  # last modified
EMAILS = [
    row.split(",")[4] for row in (DATA / "discover_contacts.csv").read_text().splitlines()[1:]
]


@pytest.fixture
def hub() -> Iterator[FakeCrm]:
    """The loopback HubSpot: 150 contacts, the first and last ten people the dataset knows,
    the others nobody it knows (a No Match, free); 1001 to 1003 last modified in 2024."""
    with running(ListedCrm()) as fake:
        for n in range(RECORDS):
            known = n < 10 or n >= RECORDS - 10
            email = EMAILS[n % 10 + (10 if n >= 10 else 0)] if known else f"p{n}@nowhere.example"
            fake.contacts["hubspot"][str(1001 + n)] = {
                "email": email, "jobtitle": "", "lastmodifieddate": OLD if n < 3 else NEW,
            }  # fmt: skip
        yield fake


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def app(db_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> Flask:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")  # the loopback HubSpot
    return create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": clock})


@pytest.fixture
def setup(app: Flask, db_path: Path, hub: FakeCrm, clock: Clock) -> dict[str, Any]:
    """Acme (pro, 1,000 credits) and Globex, each with a HubSpot connection to the fake."""
    db = store.connect(db_path)
    importer.import_files(
        db, companies=DATA / "discover_companies.csv", contacts=DATA / "discover_contacts.csv"
    )
    found: dict[str, Any] = {"db": db}
    for name in ("Acme", "Globex"):
        _, key = organization(db, name, credits=1_000, now=clock.now)
        found[name] = {"key": key, "link": connections.add(
            db, SECRET.encode(), clock.now, name=f"{name} HubSpot", platform="hubspot",
            api_key=key, secret="hubspot-app-secret", crm_base_url=hub.url,
            crm_token="pat-na1-token",
        ).row}  # fmt: skip
    return found


@pytest.fixture
def signed_in(client: FlaskClient, setup: dict[str, Any]) -> FlaskClient:
    assert sign_in(client, setup["Acme"]["key"]).status_code == 303
    return client


@pytest.fixture
def work(setup: dict[str, Any], clock: Clock) -> Iterator[worker.Worker]:
    """The worker, as `contactdata worker` runs it, on the test clock."""
    with httpx.Client() as client:
        yield worker.Worker(setup["db"], SECRET.encode(), clock, client, random.Random(7))


def page_of(setup: dict[str, Any], org: str = "Acme") -> str:
    return f"/settings/connections/{setup[org]['link']['id']}/backfill"


def events(db: Database, link: dict[str, Any]) -> list[dict[str, Any]]:
    return store.events_of(db, link["id"])


def work_off(work: worker.Worker) -> None:
    while work.run_due():
        pass


def test_the_estimate_is_the_dry_runs_and_starting_lists_nothing_in_the_request(
    signed_in: FlaskClient, setup: dict[str, Any], hub: FakeCrm
) -> None:
    page = page_of(setup)
    shown = text(signed_in.get(page))
    assert "Backfill Acme HubSpot" in shown and "Contacts" in shown and "Companies" in shown

    estimate = submit(signed_in, page, f"{page}/estimate", kind="contacts")

    shown = text(estimate)
    assert estimate.status_code == 200
    assert "150 records listed; 150 carry an identifier" in shown
    assert "at most 150 credits at the pro tier" in shown
    cap = re.search(r'id="start-cap-contacts"[^>]*value="(\d+)"', estimate.get_data(as_text=True))
    assert cap and cap.group(1) == "150"  # the start form's cap: the estimate's credits
    assert events(setup["db"], setup["Acme"]["link"]) == []  # a dry run queues nothing
    calls = len(hub.calls)

    started = submit(signed_in, page, f"{page}/start", kind="contacts", credit_cap="120")

    assert started.status_code == 303 and started.location == page
    shown = text(signed_in.get(page))
    assert "Backfill 1 of contacts started" in shown and "running" in shown
    assert '<meta http-equiv="refresh" content="10">' in signed_in.get(page).get_data(as_text=True)
    assert len(hub.calls) == calls  # the request listed nothing: the worker's job will
    (row,) = store.backfills_of(setup["db"], setup["Acme"]["link"]["id"])
    assert (row["state"], row["credit_cap"], row["listed"]) == ("running", 120, 0)
    again = submit(signed_in, page, f"{page}/start", kind="contacts", credit_cap="5")
    assert "A backfill of contacts is running already" in text(signed_in.get(again.location))


def test_progress_advances_as_the_job_runs_and_resume_goes_on_from_the_cursor(
    signed_in: FlaskClient, setup: dict[str, Any], hub: FakeCrm, work: worker.Worker
) -> None:
    page, db, link = page_of(setup), setup["db"], setup["Acme"]["link"]
    submit(signed_in, page, f"{page}/start", kind="contacts", credit_cap="120")

    result = backfill.advance_all(work)  # the advance_backfills job

    assert "listed 120 of 150, queued 120 (cap 120), skipped 0, 30 left for later" in result
    shown = text(signed_in.get(page))
    assert "stopped" in shown and "queued 120 (cap 120)" in shown and "at the credit cap" in shown
    assert "http-equiv" not in signed_in.get(page).get_data(as_text=True)  # nothing runs
    work_off(work)
    assert "worked off 120 of 120 (0 dead)" in text(signed_in.get(page))
    assert len(hub.writes) == 120  # each queued record written (a No Match gets its status)
    calls = len(hub.calls)

    resumed = submit(signed_in, page, f"{page}/resume", kind="contacts", credit_cap="500")
    assert "resumes where it left off" in text(signed_in.get(resumed.location))
    assert "listed 150 of 150, queued 150 (cap 500)" in backfill.advance_all(work)
    (row,) = store.backfills_of(db, link["id"])

    assert (row["state"], row["listed"], row["queued"], row["skipped"]) == ("done", 150, 150, 0)
    first = next(call for call in hub.calls[calls:] if call.path.endswith("/search"))
    assert first.body.get("after") or first.body["filterGroups"]  # the saved cursor, page 2
    queued = [event["record_id"] for event in events(db, link)]
    assert len(queued) == RECORDS == len(set(queued))  # each record queued once
    work_off(work)
    assert len(hub.writes) == RECORDS and set(hub.writes.values()) == {1}  # each once
    assert "worked off 150 of 150" in text(signed_in.get(page))


def test_a_stop_drops_the_page_being_listed_and_resume_queues_the_rest_once(
    setup: dict[str, Any], work: worker.Worker, clock: Clock
) -> None:
    db, link = setup["db"], setup["Acme"]["link"]

    def stop_after_first_page(line: str) -> None:
        if line.startswith("listed 100 of 150") and "stopped" not in line:  # Stop, during page 2
            backfill.stop(db, link["id"], "contacts", clock.now)

    row = backfill.run(work, link["id"], "contacts", "", None, report=stop_after_first_page)

    assert (row["state"], row["note"], row["queued"], row["listed"]) == (
        "stopped",
        "on request",
        100,
        100,
    )
    assert len(events(db, link)) == 100
    with pytest.raises(backfill.BackfillRefused, match="No backfill of contacts is running"):
        backfill.stop(db, link["id"], "contacts", clock.now)
    backfill.resume(db, link["id"], "contacts", None, clock.now)
    backfill.advance_all(work)
    (row,) = store.backfills_of(db, link["id"])
    assert (row["state"], row["queued"], row["listed"]) == ("done", 150, 150)
    assert len({e["event_key"] for e in events(db, link)}) == 150 == len(events(db, link))
    with pytest.raises(backfill.BackfillRefused, match="latest: done"):
        backfill.resume(db, link["id"], "contacts", None, clock.now)


def test_the_cli_stops_and_resumes(setup: dict[str, Any], db_path: Path, clock: Clock) -> None:
    db, link = setup["db"], setup["Acme"]["link"]
    backfill.start(db, link["id"], "contacts", "", 10, clock.now)
    runner = CliRunner()

    stopped = runner.invoke(cli.main, ["backfill", "stop", link["id"], "--db", str(db_path)])
    assert stopped.exit_code == 0, stopped.output
    assert "backfill 1 stopped" in stopped.output
    low = ["backfill", "resume", link["id"], "--max-credits", "5", "--db", str(db_path)]
    assert runner.invoke(cli.main, low).exit_code == 0  # nothing queued yet: 5 is more
    assert store.backfill(db, 1)["state"] == "running"  # type: ignore[index]
    again = runner.invoke(cli.main, ["backfill", "resume", link["id"], "--db", str(db_path)])
    assert again.exit_code == 1 and "No stopped backfill of contacts" in again.output


def test_a_credit_cap_past_the_stores_range_is_refused_on_the_page_and_the_command_line(
    signed_in: FlaskClient, setup: dict[str, Any], db_path: Path, clock: Clock
) -> None:
    db, link, page = setup["db"], setup["Acme"]["link"], page_of(setup)
    refused = f"The credit cap must be 1 to {store.LARGEST_ID:,}."
    for cap in (str(2**63), str(10**30), "0"):
        started = submit(signed_in, page, f"{page}/start", kind="contacts", credit_cap=cap)
        assert started.status_code == 303 and refused in text(signed_in.get(started.location))
    assert store.backfills_of(db, link["id"]) == []
    backfill.start(db, link["id"], "contacts", "", 10, clock.now)
    backfill.stop(db, link["id"], "contacts", clock.now)
    resumed = submit(signed_in, page, f"{page}/resume", kind="contacts", credit_cap=str(2**63))
    assert refused in text(signed_in.get(resumed.location))
    runner, big = CliRunner(), str(2**63)
    for command in (["backfill", "run", link["id"], "--max-credits", big],
                    ["backfill", "resume", link["id"], "--max-credits", big]):  # fmt: skip
        answer = runner.invoke(cli.main, [*command, "--db", str(db_path)])
        assert answer.exit_code == 2, answer.output
        assert f"{big} is not in the range" in answer.output
    assert store.backfill(db, 1)["state"] == "stopped"  # type: ignore[index]


def test_another_organizations_backfill_page_is_not_found_and_forms_need_their_token(
    signed_in: FlaskClient, setup: dict[str, Any]
) -> None:
    theirs = page_of(setup, "Globex")
    assert signed_in.get(theirs).status_code == 404
    for action in ("estimate", "start", "stop", "resume"):
        response = submit(signed_in, page_of(setup), f"{theirs}/{action}", kind="contacts",
                          credit_cap="10")  # fmt: skip
        assert response.status_code == 404
    ours = page_of(setup)
    refused = signed_in.post(f"{ours}/start", data={"kind": "contacts", "credit_cap": "10"})
    assert refused.status_code == 400
    assert store.backfills_of(setup["db"], setup["Globex"]["link"]["id"]) == []
    assert store.backfills_of(setup["db"], setup["Acme"]["link"]["id"]) == []


def test_a_list_chosen_and_a_date_are_estimated_then_started_from_the_estimate(
    signed_in: FlaskClient, setup: dict[str, Any], hub: FakeCrm, work: worker.Worker
) -> None:
    page, db, link = page_of(setup), setup["db"], setup["Acme"]["link"]
    assert "Every record" in text(signed_in.get(page))  # no list asked of the CRM yet
    assert not [call for call in hub.calls if call.path.startswith(LISTS)]

    chooser = signed_in.get(f"{page}?lists=contacts")
    html = chooser.get_data(as_text=True)
    assert '<option value="17">Trade show leads (12)</option>' in html
    estimate = submit(signed_in, page, f"{page}/estimate", kind="contacts", source="17",
                      since="2025-01-01")  # fmt: skip

    shown = text(estimate)
    assert "9 records listed in the list Trade show leads modified since 2025-01-01" in shown
    assert "at most 9 credits" in shown
    form = source(estimate)
    assert 'name="source" value="17"' in form
    assert 'name="since" value="2025-01-01T00:00:00.000+00:00"' in form
    assert events(db, link) == []

    started = submit(signed_in, page, f"{page}/start", kind="contacts", source="17",
                     source_name="Trade show leads", since="2025-01-01T00:00:00.000+00:00",
                     credit_cap="9")  # fmt: skip
    assert started.status_code == 303
    backfill.advance_all(work)

    (row,) = store.backfills_of(db, link["id"])
    assert (row["source"], row["source_name"], row["since"]) == (
        "17", "Trade show leads", "2025-01-01T00:00:00.000+00:00",
    )  # fmt: skip
    assert (row["state"], row["listed"], row["queued"]) == ("done", 9, 9)
    assert sorted(e["record_id"] for e in events(db, link)) == [str(1004 + n) for n in range(9)]
    shown = text(signed_in.get(page))
    assert "Backfill 1 of the list Trade show leads, modified since 2025-01-01" in shown
    assert "Listed 9 of 9 Queued 9 Skipped: enriched recently 0 Skipped: no identifier 0" in shown


def test_a_date_that_is_not_one_and_a_list_the_crm_lacks_are_refused_with_a_message(
    signed_in: FlaskClient, setup: dict[str, Any]
) -> None:
    page = page_of(setup)
    bad_date = submit(signed_in, page, f"{page}/estimate", kind="contacts", since="last week")
    assert "'last week' is not a date" in text(signed_in.get(bad_date.location))
    no_list = submit(signed_in, page, f"{page}/estimate", kind="contacts", source="404")
    assert "The CRM has no list of contacts with the id '404'" in text(
        signed_in.get(no_list.location)
    )
    refused = submit(signed_in, page, f"{page}/start", kind="contacts", since="2025-13-01",
                     credit_cap="5")  # fmt: skip
    assert "is not a date" in text(signed_in.get(refused.location))
    assert store.backfills_of(setup["db"], setup["Acme"]["link"]["id"]) == []


class QueriedSalesforce(FakeCrm):
    """The loopback Salesforce answering its query API (QueryResult) with every contact it
    holds, all in one answer, and List Views with none; what it was asked is in `queries`
    (it does not run SOQL)."""

    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    def route(self, call: Call) -> Reply:
        if call.path == "/services/data/v62.0/sobjects/Contact/listviews":
            return Reply(200, {"done": True, "listviews": [], "size": 0, "nextRecordsUrl": None})
        if call.path != "/services/data/v62.0/query":
            return super().route(call)
        self.queries.append(call.query["q"])
        held = self.contacts["salesforce"]
        records = [self.salesforce_object(key, ["Email", "Title"]) for key in sorted(held)]
        return Reply(200, {"totalSize": len(records), "done": True, "records": records})


def test_a_salesforce_condition_is_picked_from_its_fields_estimated_and_started(
    signed_in: FlaskClient, setup: dict[str, Any], clock: Clock
) -> None:
    db, key = setup["db"], setup["Acme"]["key"]
    with running(QueriedSalesforce()) as sales:
        held = {f"003D00000000000{n}": {"Email": f"p{n}@x.example", "Title": "CTO"}
                for n in range(3)}  # fmt: skip
        sales.contacts["salesforce"] = held
        link = connections.add(
            db, SECRET.encode(), clock.now, name="Acme Salesforce", platform="salesforce",
            api_key=key, secret="sf-secret-0123456789abcdef", crm_base_url=sales.url,
            crm_token="00Dxx!token", salesforce_org_ids=("00D5e000000abcD",),
        ).row  # fmt: skip
        page = f"/settings/connections/{link['id']}/backfill"
        chooser = signed_in.get(f"{page}?lists=contacts")
        assert '<option value="Title">' in source(chooser)
        assert "Or the contacts where" in text(chooser)
        estimate = submit(signed_in, page, f"{page}/estimate", kind="contacts", field="Title",
                          operator="LIKE", value="CTO")  # fmt: skip

        assert "3 records listed where Title contains CTO" in text(estimate)
        assert " FROM Contact WHERE (Title LIKE '%CTO%') ORDER BY Id" in sales.queries[-1]
        refused = submit(signed_in, page, f"{page}/estimate", kind="contacts", field="Title",
                         operator="; DROP", value="x")  # fmt: skip
        assert "Choose one of the operators" in text(signed_in.get(refused.location))
        started = submit(signed_in, page, f"{page}/start", kind="contacts",
                         source='where:["Title","LIKE","CTO"]', source_name="Title contains CTO",
                         credit_cap="3")  # fmt: skip
        assert started.status_code == 303
        (row,) = store.backfills_of(db, link["id"])
        assert (row["source"], row["source_name"]) == (
            'where:["Title","LIKE","CTO"]', "Title contains CTO",
        )  # fmt: skip
        assert "Backfill 1 of the contacts where Title contains CTO" in text(signed_in.get(page))
