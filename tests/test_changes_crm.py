"""Issue 39's "Done when", on a real database and the vendors' fakes: a month of changes
imported (Ava leaves Lonestar for Hill Country, Ben's title changes) reaches fake HubSpot,
Salesforce and Pipedrive: each record the change job queues is refreshed through the worker
under the mapping's policies, and each job change writes exactly the marks, task and new
contact the preview showed, once (the job runs twice); free on the Plus tier, charged and
capped on Pro; Ben's title, edited by hand since our write, is left alone."""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlite_utils import Database

import connector.app
import server
from connector import changes, connections, mappings, preview, signal_settings, store, worker
from connector.platforms.base import Task
from server import importer
from tests.helpers import hubspot_shapes
from tests.helpers.clock import Clock
from tests.helpers.constants import AVA, CRM, DATA, NOW, SECRET
from tests.helpers.crm import FakeHubSpot, FakeSalesforce
from tests.helpers.dataverse import FakeDataverseTables
from tests.helpers.orgs import organization
from tests.helpers.pipedrive import HeldPipedrive
from tests.helpers.settings_forms import signed_in, text
from tests.helpers.vendors import VendorTransport
from tests.helpers.zoho_crm import FakeZohoRecords

Row = dict[str, Any]
AVA_GUID, BEN_GUID = "D15C00000000000000000000000000C1", "D15C00000000000000000000000000C2"
LONESTAR, HILL = "D15C0000000000A1", "D15C0000000000B2"  # tests/data/discover_companies.csv
BEN = "ben.brown@lonestar-discover.com"
MONTH_LATER = NOW + timedelta(days=30)
ALL_ACTIONS = ["mark", "task", "new_contact"]


@dataclass
class Crm:
    """One vendor's fake and how the test reads it: the records of Ava, Ben and the Hill
    Country account, what a record holds, the tasks and the new contacts it was sent."""

    platform: str
    token: str
    fake: Any
    ava: str
    ben: str
    account: str
    holds: Callable[[str], Row]  # record id -> its values as the CRM holds them
    tasks: Callable[[], list[Row]]
    contacts: Callable[[], list[Row]]  # contacts created (their bodies)
    title: str  # the job title property
    marks: tuple[str, str, str]  # left on, new company, new title properties
    options: Row


def _posted(
    fake: Any, suffix: str, unwrap: Callable[[Any], Any] = lambda body: body
) -> Callable[[], list[Any]]:
    """What the POSTs to a path ending in `suffix` sent `fake`: each body's JSON, `unwrap`ped."""
    return lambda: [
        unwrap(json.loads(r.content)) for r in fake.requests
        if r.method == "POST" and r.url.path.endswith(suffix)
    ]  # fmt: skip


def _hubspot() -> Crm:
    fake = FakeHubSpot()
    fake.contacts = {
        "501": {"email": AVA, "firstname": "Ava", "lastname": "Adams", "hubspot_owner_id": "77"},
        "502": {"email": BEN, "firstname": "Ben", "lastname": "Brown"},
    }
    fake.companies = {"801": {"name": "Hill Country Analytics LLC"}}
    created = _posted(fake, "/contacts", lambda body: body["properties"])
    return Crm(
        "hubspot", "pat-na1-token", fake, "501", "502", "801",
        lambda key: fake.contacts[key], lambda: fake.created["tasks"], created,
        "jobtitle", ("contactdata_job_change_left_on", "contactdata_job_change_new_company",
                     "contactdata_job_change_new_title"), {"secret": "hubspot-app-secret"},
    )  # fmt: skip


SF_CUSTOM = {f"ContactData_{name}__c" for name in (
    "Company_Name", "Company_Domain", "Industry", "Employees", "Employee_Range", "Revenue_Range",
    "Job_Levels", "Job_Functions", "Record_Status", "Contact_GUID", "Job_Change_Left_On",
    "Job_Change_New_Company", "Job_Change_New_Title")}  # fmt: skip
SF_FIELDS = {
    "Contact": {"AccountId", "FirstName", "LastName", "Email", "Title", "Department", "Phone",
                "MailingStreet", "MailingCity", "MailingState", "MailingPostalCode",
                "MailingCountry", "OwnerId", "Description", *SF_CUSTOM},
    "Lead": {"FirstName", "LastName", "Email", "Title", "Company", *SF_CUSTOM},
    "Account": {"Name", "Website", "OwnerId", *SF_CUSTOM},
    "Task": {"Subject", "Description", "ActivityDate", "Status", "Priority", "WhoId", "WhatId",
             "OwnerId"},
}  # fmt: skip
SF_AVA, SF_BEN, SF_ACCOUNT = "0035e00000AvaAAAAA", "0035e00000BenAAAAA", "0015e00000HillAAAA"


def _salesforce() -> Crm:
    fake = FakeSalesforce(SF_FIELDS)
    fake.records["Contact"] = {
        SF_AVA: {"FirstName": "Ava", "LastName": "Adams", "Email": AVA, "OwnerId": "005OWNER"},
        SF_BEN: {"FirstName": "Ben", "LastName": "Brown", "Email": BEN},
    }
    fake.records["Account"] = {SF_ACCOUNT: {"Name": "Hill Country Analytics LLC"}}
    created = _posted(fake, "/sobjects/Contact")
    return Crm(
        "salesforce", "00Dxx!sf-token", fake, SF_AVA, SF_BEN, SF_ACCOUNT,
        lambda key: fake.records["Contact"][key], lambda: list(fake.records["Task"].values()),
        created, "Title", ("ContactData_Job_Change_Left_On__c",
                           "ContactData_Job_Change_New_Company__c",
                           "ContactData_Job_Change_New_Title__c"),
        {"salesforce_org_ids": ("00Do0000000xxxxxxx",)},
    )  # fmt: skip


def _person(key: int, name: str, email: str, **more: Any) -> Row:
    """A person as GET /api/v2/persons/{id} gives it (PersonItem)."""
    return {"id": key, "name": name, "emails": [{"value": email, "primary": True,
            "label": "work"}], "owner_id": 12345678, "is_deleted": False,
            "add_time": "2025-06-19T16:00:00Z", "update_time": "2025-06-19T16:07:36Z",
            "visible_to": 3, "label_ids": [], "custom_fields": {}, **more}  # fmt: skip


def _pipedrive() -> Crm:
    fake = HeldPipedrive(
        persons={"7": _person(7, "Ava Adams", AVA), "8": _person(8, "Ben Brown", BEN)},
        organizations={"12": {"id": 12, "name": "Hill Country Analytics LLC", "owner_id": 1,
                              "is_deleted": False, "custom_fields": {}}},
    )  # fmt: skip
    created = lambda: [body for path, body in fake.sent("POST") if path == "/api/v2/persons"]  # noqa: E731
    return Crm(
        "pipedrive", "0123456789abcdef0123456789abcdef01234567", fake, "7", "8", "12",
        lambda key: fake.held["persons"][key], lambda: fake.created.get("activities", []),
        created, "", ("", "", ""), {},
    )  # fmt: skip


ZOHO_AVA, ZOHO_BEN, ZOHO_HILL = "554023000000100001", "554023000000100002", "554023000000200001"


def _zoho() -> Crm:
    owner = {"name": "Pat Owner", "id": "554023000000000235"}
    fake = FakeZohoRecords({
        "Contacts": {
            ZOHO_AVA: {"id": ZOHO_AVA, "First_Name": "Ava", "Last_Name": "Adams", "Email": AVA,
                       "Owner": owner},
            ZOHO_BEN: {"id": ZOHO_BEN, "First_Name": "Ben", "Last_Name": "Brown", "Email": BEN,
                       "Owner": owner},
        },
        "Accounts": {ZOHO_HILL: {"id": ZOHO_HILL, "Account_Name": "Hill Country Analytics LLC",
                                "Owner": owner}},
        "Leads": {}, "Tasks": {},
    })  # fmt: skip
    created = _posted(fake, "/Contacts", lambda body: body["data"][0])
    return Crm(
        "zoho", "1000.zoho-access-token", fake, ZOHO_AVA, ZOHO_BEN, ZOHO_HILL,
        lambda key: fake.records["Contacts"][key], lambda: list(fake.records["Tasks"].values()),
        created, "Title", ("ContactData_Job_Change_Left_On", "ContactData_Job_Change_New_Company",
                           "ContactData_Job_Change_New_Title"), {},
    )  # fmt: skip


DV_AVA, DV_BEN, DV_HILL = (f"00000000-0000-0000-0000-00000000000{n}" for n in (1, 2, 3))
DV_OWNER = "00000000-0000-0000-0000-0000000000aa"


def _dynamics() -> Crm:
    fake = FakeDataverseTables({
        "contacts": {
            DV_AVA: {"contactid": DV_AVA, "firstname": "Ava", "lastname": "Adams",
                     "emailaddress1": AVA, "_ownerid_value": DV_OWNER},
            DV_BEN: {"contactid": DV_BEN, "firstname": "Ben", "lastname": "Brown",
                     "emailaddress1": BEN},
        },
        "accounts": {DV_HILL: {"accountid": DV_HILL, "name": "Hill Country Analytics LLC"}},
    })  # fmt: skip
    created = _posted(fake, "/contacts")
    return Crm(
        "dynamics", "dataverse-access-token", fake, DV_AVA, DV_BEN, DV_HILL,
        lambda key: fake.tables["contacts"][key], lambda: fake.created, created, "jobtitle",
        ("new_contactdata_job_change_left_on", "new_contactdata_job_change_new_company",
         "new_contactdata_job_change_new_title"), {},
    )  # fmt: skip


CRMS = {"hubspot": _hubspot, "salesforce": _salesforce, "pipedrive": _pipedrive, "zoho": _zoho,
        "dynamics": _dynamics}  # fmt: skip


@dataclass
class World:
    db: Database
    link: connections.Added
    crm: Crm
    work: worker.Worker
    clock: Clock
    key: str  # the organization's admin key

    def credits(self) -> int | None:
        return server.organization(self.db, self.link.row["org_id"])["credits"]

    def run_job(self) -> str:
        """The change job, then the worker's rounds until nothing is due."""
        said = changes.act_on_changes(self.db, self.clock())
        while self.work.run_due():
            pass
        return f"{said}; {changes.write_signals(self.work)}"


def _world(db_path: Path, platform: str, tier: str, credits: int | None) -> Iterator[World]:
    db = store.connect(db_path)
    importer.import_files(
        db, companies=DATA / "discover_companies.csv", contacts=DATA / "discover_contacts.csv"
    )
    extra = {} if credits is None else {"credits": credits}
    _, key = organization(db, tier=tier, **extra)
    crm = CRMS[platform]()
    link = connections.add(
        db, SECRET.encode(), NOW, name=platform, platform=platform, api_key=key,
        crm_base_url=CRM, crm_token=crm.token, **crm.options,
    )  # fmt: skip
    clock = Clock()
    with httpx.Client(transport=VendorTransport(crm.fake)) as client:
        work = worker.Worker(db, SECRET.encode(), clock, client, random.Random(7))
        yield World(db, link, crm, work, clock, key)
    db.close()


def _enriched_once(world: World) -> None:
    """Ava and Ben enriched from their CRM records (their write-back as usual), the Hill
    Country account held as a company record of the connection, and every change so far
    acted on."""
    rows = [{"connection_id": world.link.row["id"], "event_key": f"created:{key}",
             "record_id": key, "payload": "{}", "thin": 1, "received_at": server.iso(NOW)}
            for key in (world.crm.ava, world.crm.ben)]  # fmt: skip
    with server.write(world.db):
        store.add_events(world.db, rows)
        store.save_record(world.db, {
            "connection_id": world.link.row["id"], "kind": "companies",
            "record_id": world.crm.account, "transaction_id": "t-hill", "company_guid": HILL,
            "input_fingerprint": "{}", "enriched_at": server.iso(NOW)})  # fmt: skip
        store.set_changes_seen(world.db, world.link.row["id"], server.changes.latest_id(world.db))
    assert world.work.run_due() == {"done": 2}


def _a_month_of_changes(world: World, tmp_path: Path) -> None:
    """The next month's import: Ava left Lonestar for Hill Country as its CRO; Ben's title
    changed. The import records the changes (server.changes)."""
    path = tmp_path / "month.csv"
    header = ["conGUID", "compGUID", "conFirstName", "conLastName", "conEmail", "conJobTitleEn",
              "conWorkLocCity", "conWorkLocState", "conWorkLocZipcode", "conWorkLocCountry",
              "recordStatus", "accuracy", "conJobStartedOn", "conJobUpdatedOn"]  # fmt: skip
    rows = [
        [AVA_GUID, LONESTAR, "Ava", "Adams", AVA, "Vice President of Sales", "Austin", "TX",
         "78701", "United States", "No Longer", "A+", "", "2026-12"],
        [AVA_GUID, HILL, "Ava", "Adams", "ava.adams@hillcountry-analytics.com",
         "Chief Revenue Officer", "Austin", "TX", "78701", "United States", "Active", "A+",
         "2026-12", "2026-12"],
        [BEN_GUID, LONESTAR, "Ben", "Brown", BEN, "VP, Growth Marketing", "Austin", "TX",
         "78701", "United States", "Active", "A", "", "2026-12"],
    ]  # fmt: skip
    with path.open("w", newline="") as file:
        csv.writer(file).writerows([header, *rows])
    importer.import_files(world.db, companies=None, contacts=path, now=MONTH_LATER)
    world.clock.now = MONTH_LATER + timedelta(hours=1)


@pytest.fixture(params=["hubspot", "salesforce", "pipedrive", "zoho", "dynamics"])
def plus(
    request: pytest.FixtureRequest, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[World]:
    """A connection of an Enterprise Plus organization (free refreshes) to each CRM."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    yield from _world(db_path, request.param, "enterprise_plus", None)


def _signals(world: World) -> list[Row]:
    return store.signals_of(world.db, world.link.row["id"])


def test_a_month_of_changes_reaches_the_crm_free_on_plus_as_the_preview_showed(
    plus: World, tmp_path: Path
) -> None:
    world, crm = plus, plus.crm
    signal_settings.set_actions(world.db, world.link.row["id"], "contacts", ALL_ACTIONS)
    signal_settings.set_actions(world.db, world.link.row["id"], "companies", ["task"])
    _enriched_once(world)
    if crm.title:  # Ben's title edited by hand since our write
        crm.holds(crm.ben)[crm.title] = "Head of Growth"
    _a_month_of_changes(world, tmp_path)
    link = store.connection(world.db, world.link.row["id"])
    assert link is not None

    said = changes.act_on_changes(world.db, world.clock())
    assert said == "2 records queued for refresh from changes, 2 job changes"
    shown = {
        (s["signal"], s["record_id"]): w for s, w in preview.job_changes(world.work, link["id"])
    }
    assert set(shown) == {("left", crm.ava), ("joined", crm.account)}
    while world.work.run_due():
        pass
    assert changes.write_signals(world.work) == "2 signals written"
    assert world.credits() is None  # unlimited, and the refreshes were free

    left, joined = shown[("left", crm.ava)], shown[("joined", crm.account)]
    if crm.marks[0]:
        held = ["2026-12-01", "Hill Country Analytics LLC", "Chief Revenue Officer"]
        assert left["marks"] == dict(zip(crm.marks, held, strict=True))
        assert {k: crm.holds(crm.ava)[k] for k in crm.marks} == left["marks"]
    assert left["task"]["subject"] == "Ava Adams left Lonestar Discover Works Inc."
    assert joined["task"]["subject"] == "New contact at Hill Country Analytics LLC"
    assert [_task(crm.platform, t) for t in crm.tasks()] == [left["task"], joined["task"]]
    assert _owner(crm.platform, crm.tasks()[0]) == OWNERS[crm.platform]  # Ava's record's
    (contact,) = crm.contacts()
    assert _contact(crm.platform, contact) == left["contact"]["last_name"] == "Adams"
    if crm.title:
        assert crm.holds(crm.ava)[crm.title] == "Chief Revenue Officer"  # ours: refreshed
        assert crm.holds(crm.ben)[crm.title] == "Head of Growth"  # a hand edit: left alone
    states = [(s["signal"], s["person"], s["state"], s["error"]) for s in _signals(world)]
    assert states == [("left", "Ava Adams", "written", ""), ("joined", "Ava Adams", "written", "")]

    before = len(crm.fake.requests)
    assert world.run_job().startswith("0 records queued for refresh from changes, 0 job changes")
    assert len(crm.tasks()) == 2 and len(crm.contacts()) == 1
    assert len(crm.fake.requests) == before  # nothing read or written again


def _task(platform: str, sent: Row) -> Row:
    """A task as the CRM was sent it, in the preview's terms (subject, body, due_on)."""
    if platform == "hubspot":
        values = sent["properties"]
        return {"subject": values["hs_task_subject"], "body": values["hs_task_body"],
                "due_on": values["hs_timestamp"][:10]}  # fmt: skip
    if platform == "salesforce":
        return {"subject": sent["Subject"], "body": sent["Description"],
                "due_on": sent["ActivityDate"]}  # fmt: skip
    if platform == "zoho":
        return {"subject": sent["Subject"], "body": sent["Description"],
                "due_on": sent["Due_Date"]}  # fmt: skip
    if platform == "dynamics":
        return {"subject": sent["subject"], "body": sent["description"],
                "due_on": sent["scheduledend"][:10]}  # fmt: skip
    return {"subject": sent["subject"], "body": sent["note"], "due_on": sent["due_date"]}


# The owner of Ava's record in each fake, as a task for that owner names them.
OWNERS = {"hubspot": "77", "salesforce": "005OWNER", "pipedrive": 12345678,
          "zoho": "554023000000000235", "dynamics": f"/systemusers({DV_OWNER})"}  # fmt: skip


def _owner(platform: str, sent: Row) -> Any:
    """The owner a task the CRM was sent is for."""
    return {"hubspot": lambda: sent["properties"]["hubspot_owner_id"],
            "salesforce": lambda: sent["OwnerId"], "pipedrive": lambda: sent["owner_id"],
            "zoho": lambda: sent["Owner"]["id"],
            "dynamics": lambda: sent["ownerid@odata.bind"]}[platform]()  # fmt: skip


def _contact(platform: str, sent: Row) -> str:
    """The last name of a contact the CRM was sent."""
    return str({"hubspot": lambda: sent["lastname"], "salesforce": lambda: sent["LastName"],
                "zoho": lambda: sent["Last_Name"], "dynamics": lambda: sent["lastname"],
                "pipedrive": lambda: sent["name"].rpartition(" ")[2]}[platform]())  # fmt: skip


@pytest.fixture
def pro(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[World]:
    """A HubSpot connection of a Pro organization with 10 credits."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    yield from _world(db_path, "hubspot", "pro", 10)


@pytest.mark.both_backends
def test_on_pro_changes_are_charged_and_capped_the_rest_waiting_for_the_next_run(
    pro: World, tmp_path: Path
) -> None:
    world, crm = pro, pro.crm
    _enriched_once(world)
    assert world.credits() == 8  # Ava and Ben enriched
    _a_month_of_changes(world, tmp_path)
    signal_settings.set_credit_cap(world.db, world.link.row["id"], 1)

    assert world.run_job() == (
        "1 records queued for refresh from changes, 2 job changes, 1 held back by the credit "
        "cap or balance; 1 signals written, 1 signals skipped"
    )
    assert world.credits() == 7  # Ava's refresh; Ben's change waits
    assert crm.holds(crm.ava)["jobtitle"] == "Chief Revenue Officer"
    assert crm.holds(crm.ben)["jobtitle"] == "VP, Marketing"
    assert crm.tasks() == [] and crm.contacts() == []  # "mark" only, the default
    assert [(s["signal"], s["state"]) for s in _signals(world)] == [
        ("left", "written"),
        ("joined", "skipped"),  # marking is all it would do, and it has no person to mark
    ]
    assert crm.holds(crm.ava)["contactdata_job_change_new_company"] == "Hill Country Analytics LLC"

    world.clock.now += timedelta(minutes=15)
    assert world.run_job() == "1 records queued for refresh from changes, 0 job changes; no signals"
    assert world.credits() == 6 and crm.holds(crm.ben)["jobtitle"] == "VP, Growth Marketing"
    assert world.run_job() == "0 records queued for refresh from changes, 0 job changes; no signals"
    assert world.credits() == 6


# --- the parts, on literal data ---------------------------------------------------------------

LEFT = {"signal": "left", "record_id": "501", "old_company": "Lonestar Discover Works Inc.",
        "new_company": "Globex", "new_title": "CRO", "changed_on": "2026-12-01",
        "created_at": "2026-12-02T09:00:00Z"}  # fmt: skip
MARKS = ("contactdata_job_change_left_on", "contactdata_job_change_new_company",
         "contactdata_job_change_new_title")  # fmt: skip


def _mapping(policy: str) -> mappings.Mapping:
    """HubSpot's recommended mapping, its new-company mark rule under `policy`."""
    text = (mappings.DIRECTORY / "hubspot.yaml").read_text()
    return mappings.parse(text.replace("property: contactdata_job_change_new_company, policy: "
                                       "always", "property: contactdata_job_change_new_company, "
                                       f"policy: {policy}"), "hubspot.yaml")  # fmt: skip


def test_a_mark_edited_by_hand_is_kept_unless_its_policy_is_always() -> None:
    current = {"firstname": "Ava", "lastname": "Adams", MARKS[1]: "Initech (typed)"}
    ours = {MARKS[1]: "Hooli"}  # what we wrote last: the CRM's value is a hand edit
    kept = changes.signal_writes(LEFT, ["mark"], _mapping("overwrite_if_ours"), current, ours)
    assert kept.marks == {MARKS[0]: "2026-12-01", MARKS[2]: "CRO"}
    written = changes.signal_writes(LEFT, ["mark"], _mapping("always"), current, ours)
    assert written.marks == dict(zip(MARKS, ["2026-12-01", "Globex", "CRO"], strict=True))


def test_what_a_signal_writes_follows_the_actions_chosen() -> None:
    current = {"firstname": "Ava", "lastname": "Adams"}
    writes = changes.signal_writes(LEFT, ["task", "new_contact"], _mapping("always"), current, {})
    assert writes.marks == {} and writes.skipped == {}
    assert writes.task == Task(
        "Ava Adams left Lonestar Discover Works Inc.",
        "Ava Adams left Lonestar Discover Works Inc. on 2026-12-01; now CRO at Globex. Reach "
        "them at their new company; find who takes over.",
        "2026-12-02",
    )
    assert writes.contact is not None and (writes.contact.last_name, writes.contact.company) == (
        "Adams",
        "Globex",
    )
    nameless = changes.signal_writes(LEFT, ["new_contact"], _mapping("always"), {}, {})
    assert nameless.contact is None and "name" in nameless.skipped["new_contact"]


@pytest.mark.both_backends
def test_changes_seen_stops_before_what_waits_and_records_enriched_since_are_left_out(
    pro: World, tmp_path: Path
) -> None:
    world = pro
    _enriched_once(world)
    first = server.changes.latest_id(world.db)
    _a_month_of_changes(world, tmp_path)
    ended, started, title = range(first + 1, first + 4)
    signal_settings.set_credit_cap(world.db, world.link.row["id"], 0)

    changes.act_on_changes(world.db, world.clock())  # Ava's first change cannot be paid for
    assert _seen(world) == first and store.events_of(world.db, world.link.row["id"])[-1][
        "event_key"
    ].startswith("created:")
    signal_settings.set_credit_cap(world.db, world.link.row["id"], None)
    # Ben's record enriched again after his change: it holds the change already
    world.db.execute(
        "UPDATE records SET enriched_at = ? WHERE record_id = ?",
        [server.iso(world.clock()), world.crm.ben],
    )
    assert changes.act_on_changes(world.db, world.clock()).startswith(
        "1 records queued for refresh from changes, 2 job changes"
    )
    assert _seen(world) == title > started > ended
    keys = [e["event_key"] for e in store.events_of(world.db, world.link.row["id"])]
    assert keys[-1] == f"change:{started}:{world.crm.ava}"  # Ava's last change of the page


def _seen(world: World) -> int:
    link = store.connection(world.db, world.link.row["id"])
    assert link is not None
    return int(link["changes_seen"])


@pytest.mark.both_backends
def test_the_crms_rate_limit_leaves_signals_pending_and_holds_the_connection(
    pro: World, tmp_path: Path
) -> None:
    world, crm = pro, pro.crm
    signal_settings.set_actions(world.db, world.link.row["id"], "companies", ["task"])
    _enriched_once(world)
    _a_month_of_changes(world, tmp_path)
    changes.act_on_changes(world.db, world.clock())
    crm.fake.failures.append(httpx.Response(429, json=hubspot_shapes.rate_limited()))

    assert changes.write_signals(world.work) == "1 signals pending"
    (left, joined) = _signals(world)
    assert left["state"] == joined["state"] == "pending" and "429" in left["error"]
    assert changes.write_signals(world.work) == "no signals"  # held: HubSpot said 10 s
    world.clock.now += timedelta(seconds=11)
    assert changes.write_signals(world.work) == "2 signals written"
    assert [s["state"] for s in _signals(world)] == ["written", "written"]
    assert len(crm.tasks()) == 1  # the joined signal's; the left one marks (the default)


def test_the_signals_page_and_the_change_feed_show_the_same_job_changes(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the admin reads on the Signals page and what an API client reads from
    POST /v1/changes are the same job changes: Ava left Lonestar, and joined Hill Country."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    worlds = _world(db_path, "hubspot", "enterprise_plus", None)
    world = next(worlds)
    _enriched_once(world)
    _a_month_of_changes(world, tmp_path)
    world.run_job()
    settings = {"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": world.clock}
    app = connector.app.create_app({**settings, "PUBLIC_URL": "http://localhost"})

    page = text(signed_in(app, world.key).get("/settings/signals", query_string={"from": ""}))
    feed = app.test_client().post("/v1/changes", json={}, headers={"apikey": world.key})
    assert feed.status_code == 200, feed.get_data(as_text=True)
    jobs = [c for c in feed.get_json()["data"]["changes"] if c["kind"].startswith("job_")]

    said = {"job_ended": "left {before[compName]}", "job_started": "joined {after[compName]}"}
    assert sorted(said[c["kind"]].format(**c) for c in jobs) == [
        "joined Hill Country Analytics LLC",
        "left Lonestar Discover Works Inc.",
    ]
    for change in jobs:
        assert change["conGUID"] == AVA_GUID
        assert f"Ava Adams {said[change['kind']].format(**change)}" in page
    assert page.count("Ava Adams ") == len(jobs)  # no other job change on the page
    next(worlds, None)
