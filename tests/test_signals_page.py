"""The Signals page (connector/views/signals.py) through the Flask test client: this week's job
changes in words with what was written, its filters, paging and counts, the latest weekly
digest (connector/signals_digest.py); each connection's job-change settings; and `contactdata
signals`."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient
from sqlite_utils import Database

from connector import connections, jobs, signal_settings, signals_digest, store
from connector.app import create_app
from connector.cli import main
from connector.views.signals import change_in_words, field_words
from server import audit
from tests.helpers.clock import Clock
from tests.helpers.constants import SECRET
from tests.helpers.orgs import organization
from tests.helpers.settings_forms import sign_in, source, submit, text
from tests.helpers.signals import add_signal

WEDNESDAY = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)  # its week began Monday 2026-11-23
THIS_WEEK = "2026-11-24T09:15:00.000+00:00"
LAST_WEEK = "2026-11-20T16:40:00.000+00:00"
ROW = r'<th scope="row">([^<]+)</th>'
Row = dict[str, Any]


@pytest.fixture
def clock() -> Clock:
    return Clock(WEDNESDAY)


@pytest.fixture
def app(db_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> Flask:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    return create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": clock})


@pytest.fixture
def database(app: Flask, db_path: Path) -> Database:
    return store.connect(db_path)


@pytest.fixture
def acme(database: Database) -> Row:
    """Acme (its admin key under `key`) with HubSpot and Salesforce connections and a Zapier
    one, and Globex with a HubSpot connection of its own."""
    org, key = organization(database, "Acme", now=WEDNESDAY)
    _, other_key = organization(database, "Globex", now=WEDNESDAY)
    crm = {"crm_base_url": "http://127.0.0.1:9", "crm_token": "crm-token-1234"}

    def add(name: str, platform: str, api_key: str, **extra: Any) -> str:
        return str(
            connections.add(
                database, SECRET.encode(), WEDNESDAY, name=name, platform=platform,
                api_key=api_key, **extra,
            ).row["id"]
        )  # fmt: skip

    return {
        **org,
        "key": key,
        "hubspot": add("Acme HubSpot", "hubspot", key, secret="hubspot-app-secret", **crm),
        "salesforce": add(
            "Acme Salesforce", "salesforce", key, salesforce_org_ids=("00D5e0000012345",), **crm
        ),
        "zapier": add("Acme Zap", "zapier", key),
        "globex": add("Globex HubSpot", "hubspot", other_key, secret="other-secret", **crm),
    }


@pytest.fixture
def signed_in(client: FlaskClient, acme: Row) -> FlaskClient:
    response = sign_in(client, acme["key"])
    assert response.status_code == 303
    return client


def text_of(markup: str) -> str:
    """A page's markup as read (tags dropped, white space folded)."""
    return " ".join(re.sub(r"<[^>]*>", " ", markup).split())


def people(client: FlaskClient, query: str = "") -> list[str]:
    """The people of the table's rows, in order."""
    return re.findall(ROW, source(client.get(f"/settings/signals{query}")))


RAVI = {  # joined Globex, an account in Salesforce, from Initech: waiting to be written
    "signal": "joined", "person": "Ravi Shah", "old_company": "Initech",
    "new_title": "Head of Sales Ops", "state": "pending", "written": {}, "kind": "leads",
    "record_id": "00Q5e000001",
}  # fmt: skip
LENA = {  # left Initech for nobody known: the mark failed
    "person": "Lena Berg", "old_company": "Initech", "new_company": "", "new_title": "",
    "state": "failed", "written": {},
    "error": "HubSpot answered 400: Property contactdata_job_change_left_on does not exist",
}  # fmt: skip


def some_signals(database: Database, acme: Row) -> None:
    """This week: Maya left Acme (written, in HubSpot), Ravi joined Globex (waiting, in
    Salesforce), Lena left Initech (failed); last week: Omar left Acme; and one of Globex's."""
    hubspot = acme["hubspot"]
    add_signal(database, hubspot, LAST_WEEK, person="Omar Haddad")  # ids in the order seen
    add_signal(database, hubspot, THIS_WEEK)
    add_signal(database, acme["salesforce"], "2026-11-24T11:00:00.000+00:00", **RAVI)
    add_signal(database, hubspot, "2026-11-25T08:00:00.000+00:00", **LENA)
    add_signal(database, acme["globex"], THIS_WEEK, person="Someone Else")


# --- the page --------------------------------------------------------------------------------


def test_the_page_needs_a_signed_in_admin_and_is_in_the_nav(client: FlaskClient, acme: Row) -> None:
    assert client.get("/settings/signals").location == "/settings/sign-in"
    sign_in(client, acme["key"])
    page = source(client.get("/settings/keys"))
    assert '<a href="/settings/signals">Signals</a>' in page


def test_this_weeks_job_changes_in_words_with_what_was_written_and_counted(
    signed_in: FlaskClient, database: Database, acme: Row
) -> None:
    some_signals(database, acme)
    response = signed_in.get("/settings/signals")
    page, words = source(response), text(response)
    assert people(signed_in) == ["Lena Berg", "Ravi Shah", "Maya Patel"]  # newest first
    assert "left Acme for Globex as VP Sales changed on 2026-10-31" in words
    assert "joined Globex as Head of Sales Ops (from Initech)" in words
    assert "left Initech " in words
    assert "Marked on the record:" in words
    assert "<dt>Left on (contactdata_job_change_left_on)</dt><dd>2026-10-31</dd>" in page
    assert "<dt>New company (contactdata_job_change_new_company)</dt><dd>Globex</dd>" in page
    assert "Task for the owner (123): Maya Patel left Acme for Globex (VP Sales)" in words
    assert "New contact at the new company: 456" in words
    assert "HubSpot answered 400: Property contactdata_job_change_left_on" in words
    assert "Not written yet." in words  # Ravi's, waiting
    assert "<code>00Q5e000001</code>" in page and "Acme Salesforce" in page
    moment = '<time datetime="2026-11-24T09:15:00.000+00:00" title="2026-11-24 09:15:00 UTC">'
    assert moment + "2026-11-24 09:15 UTC</time>" in page  # settings.js: the reader's time
    assert 'id="from-filter" name="from" type="date" value="2026-11-23"' in page
    assert (
        "3 job changes seen from 2026-11-23 (UTC): 2 left, 1 joined; 1 written, 1 waiting, "
        "1 failed, 0 skipped." in words
    )
    assert "Omar" not in words and "Someone Else" not in words and "Globex HubSpot" not in words


@pytest.mark.both_backends
def test_filters_by_connection_signal_state_and_days(
    signed_in: FlaskClient, database: Database, acme: Row
) -> None:
    some_signals(database, acme)
    hubspot, salesforce = acme["hubspot"], acme["salesforce"]
    assert people(signed_in, f"?connection={hubspot}") == ["Lena Berg", "Maya Patel"]
    assert people(signed_in, f"?connection={salesforce}&signal=joined") == ["Ravi Shah"]
    assert people(signed_in, "?signal=left&state=failed") == ["Lena Berg"]
    assert people(signed_in, "?state=written") == ["Maya Patel"]
    everything = ["Lena Berg", "Ravi Shah", "Maya Patel", "Omar Haddad"]
    assert people(signed_in, "?from=&to=") == everything  # days cleared: every day
    assert people(signed_in, "?from=2026-11-16&to=2026-11-22") == ["Omar Haddad"]
    assert people(signed_in, "?to=2026-11-24") == ["Ravi Shah", "Maya Patel", "Omar Haddad"]
    assert "No job changes match these filters." in text(
        signed_in.get("/settings/signals?from=2026-12-01")
    )
    for query in (f"connection={acme['globex']}", "signal=moved", "state=lost",
                  "from=last-week", "before=x"):  # fmt: skip
        refused = signed_in.get(f"/settings/signals?{query}")
        assert refused.status_code == 303, query
        assert "message-error" in source(signed_in.get(refused.location)), query


@pytest.mark.both_backends
def test_pages_past_fifty_and_the_headline_counts_what_every_page_lists(
    signed_in: FlaskClient, database: Database, acme: Row
) -> None:
    for n in range(60):
        state = ("written", "failed", "skipped")[n % 3]
        add_signal(database, acme["hubspot"], THIS_WEEK, person=f"Person {n:02d}", state=state)
    first = source(signed_in.get("/settings/signals"))
    rows = re.findall(ROW, first)
    assert len(rows) == 50 and rows[0] == "Person 59"
    older = re.search(r'href="(/settings/signals\?before=\d+)">Older job changes', first)
    assert older
    add_signal(database, acme["hubspot"], THIS_WEEK, person="Late Arrival")  # meanwhile
    second = source(signed_in.get(older.group(1)))
    rows += re.findall(ROW, second)
    assert rows[50:] == [f"Person {n:02d}" for n in range(9, -1, -1)]
    assert "Older job changes" not in second and ">Newest</a>" in second
    counted = re.search(r"<strong>(\d+)</strong> job changes", first)
    assert counted and int(counted.group(1)) == len(rows) == 60
    assert "60 left, 0 joined; 20 written, 0 waiting, 20 failed, 20 skipped." in text_of(first)
    failed = text(signed_in.get("/settings/signals?state=failed"))
    assert "20 job changes seen from 2026-11-23 (UTC): 20 left" in failed


def test_a_change_in_words() -> None:
    left = {"signal": "left", "old_company": "Acme", "new_company": "", "new_title": ""}
    assert change_in_words(left) == "left Acme"
    assert change_in_words({**left, "new_company": "Globex"}) == "left Acme for Globex"
    joined = {"signal": "joined", "old_company": "", "new_company": "Globex", "new_title": "CFO"}
    assert change_in_words(joined) == "joined Globex as CFO"
    assert field_words("contactdata_job_change_new_title") == (
        "New title (contactdata_job_change_new_title)"
    )
    assert field_words("jobtitle") == "jobtitle"


# --- the weekly digest -----------------------------------------------------------------------


def test_the_weekly_digest_is_kept_once_a_week_and_heads_the_page(
    signed_in: FlaskClient, database: Database, acme: Row, db_path: Path, clock: Clock
) -> None:
    some_signals(database, acme)
    assert "Week of" not in text(signed_in.get("/settings/signals"))
    monday = datetime(2026, 11, 30, 7, 0, tzinfo=UTC)
    run = jobs.run("signals_digest", db_path, lambda: monday)
    assert run == jobs.Run(
        True, "job-change digests of 2026-11-23 to 2026-11-29 kept for 2 organizations"
    )
    again = signals_digest.keep_digests(database, monday)
    assert again.endswith("kept for 0 organizations")
    (entry,) = [e for e in audit.entries(database, acme["id"]) if e["action"] == "signals.digest"]
    assert entry["actor"] == signals_digest.DIGEST_ACTOR
    assert entry["target"] == "week of 2026-11-23"
    digest = json.loads(entry["detail"])
    assert {k: digest[k] for k in ("from", "to", "left", "joined", "written", "failed")} == {
        "from": "2026-11-23", "to": "2026-11-29", "left": 2, "joined": 1, "written": 1,
        "failed": 1,
    }  # fmt: skip
    assert [(c["name"], c["left"], c["joined"]) for c in digest["connections"]] == [
        ("Acme HubSpot", 2, 0), ("Acme Salesforce", 0, 1),
    ]  # fmt: skip

    clock.now = monday
    sign_in(signed_in, acme["key"])  # the session of Wednesday is over
    words = text(signed_in.get("/settings/signals"))
    assert (
        "Week of 2026-11-23 to 2026-11-29 2 left, 1 joined; 1 written to your CRMs, 1 failed"
        in words
    )
    assert "Acme HubSpot: 2 left, 0 joined, 1 written, 1 failed" in words
    audit_page = signed_in.get("/settings/audit?action=signals.")
    assert audit_page.status_code == 200 and "week of 2026-11-23" in text(audit_page)


@pytest.mark.both_backends
def test_the_digest_counts_only_its_week_and_its_organization(
    database: Database, acme: Row
) -> None:
    some_signals(database, acme)
    start = datetime(2026, 11, 16, tzinfo=UTC)
    digest = signals_digest.compose(database, acme["id"], start)
    assert (digest["from"], digest["to"], digest["total"], digest["left"]) == (
        "2026-11-16", "2026-11-22", 1, 1,
    )  # fmt: skip
    assert signals_digest.week_start(WEDNESDAY) == datetime(2026, 11, 23, tzinfo=UTC)


# --- each connection's settings --------------------------------------------------------------


def test_a_connection_page_chooses_what_a_job_change_does_in_words(
    signed_in: FlaskClient, database: Database, acme: Row
) -> None:
    path = f"/settings/connections/{acme['salesforce']}"
    page = source(signed_in.get(path))
    assert '<h2 id="signals-title">Job changes</h2>' in page
    for kind in ("contacts", "leads"):
        assert f"<legend>In {kind} records</legend>" in page
    assert "Mark the record" in page and "Create a task for the owner" in page
    assert "Add the person at their new company" in page
    mark = 'id="signal-contacts-mark" name="actions-contacts" type="checkbox" value="mark" checked'
    assert mark in page  # the default

    response = submit(signed_in, path, f"{path}/signals", **{
        "actions-contacts": ["mark", "task"], "actions-leads": ["new_contact"],
        "change_credit_cap": "250",
    })  # fmt: skip
    assert "Job-change settings of Acme Salesforce saved." in text(signed_in.get(response.location))
    row = store.connection(database, acme["salesforce"])
    assert row is not None
    assert signal_settings.actions_for(row, "contacts") == ("mark", "task")
    assert signal_settings.actions_for(row, "leads") == ("new_contact",)
    assert signal_settings.credit_cap(row) == 250
    entry = audit.entries(database, acme["id"])[-1]
    assert (entry["action"], entry["target"]) == ("connection.signals", "Acme Salesforce")
    assert json.loads(entry["detail"]) == {
        "actions": {"contacts": ["mark", "task"], "leads": ["new_contact"], "companies": []},
        "changeCreditCap": 250,
    }
    shown = source(signed_in.get(path))
    assert 'value="task" checked' in shown and 'value="250"' in shown

    submit(signed_in, path, f"{path}/signals", change_credit_cap="")  # nothing ticked
    row = store.connection(database, acme["salesforce"])
    assert row is not None and signal_settings.actions_for(row, "contacts") == ()
    assert signal_settings.credit_cap(row) == signal_settings.CHANGE_CREDIT_CAP


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"change_credit_cap": "-1"}, "The change credit cap must be 0 to 9223372036854775807."),
        ({"change_credit_cap": "lots"}, "The change credit cap must be a whole number."),
        ({"change_credit_cap": str(2**63)}, "The change credit cap must be 0 to"),
        ({"actions-contacts": ["mark", "call"]}, "Unknown job-change action 'call'."),
    ],
)
def test_a_refused_setting_says_why_and_changes_nothing(
    signed_in: FlaskClient, database: Database, acme: Row, form: Row, message: str
) -> None:
    path = f"/settings/connections/{acme['hubspot']}"
    before = store.connection(database, acme["hubspot"])
    response = submit(signed_in, path, f"{path}/signals", **form)
    assert message in text(signed_in.get(response.location))
    assert store.connection(database, acme["hubspot"]) == before
    assert not [
        e for e in audit.entries(database, acme["id"]) if e["action"] == "connection.signals"
    ]


def test_a_connection_that_writes_no_records_has_no_job_changes(
    signed_in: FlaskClient, database: Database, acme: Row
) -> None:
    path = f"/settings/connections/{acme['zapier']}"
    assert "Job changes" not in text(signed_in.get(path))
    response = submit(signed_in, path, f"{path}/signals", change_credit_cap="5")
    assert "writes no records" in text(signed_in.get(response.location))
    other = f"/settings/connections/{acme['globex']}/signals"
    assert submit(signed_in, path, other, change_credit_cap="5").status_code == 404


# --- the command line ------------------------------------------------------------------------


def cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def test_signals_settings_list_and_digest_on_the_command_line(
    database: Database, acme: Row, db_path: Path
) -> None:
    db = ["--db", str(db_path)]
    hubspot = acme["hubspot"]
    done = cli("signals", "settings", hubspot, "--actions", "mark,task", "--credit-cap", "40", *db)
    assert done.exit_code == 0, done.output
    assert (
        done.stdout
        == "Acme HubSpot contacts: a job change does mark, task; at most 40 credits a round\n"
    )
    row = store.connection(database, hubspot)
    assert row is not None and signal_settings.actions_for(row, "contacts") == ("mark", "task")
    entry = audit.entries(database, acme["id"])[-1]
    assert (entry["actor"], entry["action"]) == (audit.OPERATOR, "connection.signals")
    back = cli("signals", "settings", hubspot, "--default-cap", *db)
    assert back.stdout.endswith("at most 1000 credits a round\n")
    refused = cli("signals", "settings", hubspot, "--actions", "mark,call", *db)
    assert refused.exit_code == 1 and "unknown job-change action 'call'" in refused.output
    nothing = cli("signals", "settings", hubspot, "--object", "deals", *db)
    assert nothing.exit_code == 1 and "enriches no deals" in nothing.output

    some_signals(database, acme)
    listed = cli("signals", "list", "--org", acme["id"], "--state", "failed", *db)
    assert listed.exit_code == 0, listed.output
    assert "Lena Berg: left Initech" in listed.stdout and "HubSpot answered 400" in listed.stdout
    assert "Maya" not in listed.stdout
    as_json = json.loads(cli("signals", "list", "--org", acme["id"], "--json", *db).stdout)
    assert [row["person"] for row in as_json][:2] == ["Lena Berg", "Ravi Shah"]
    assert as_json[-1]["written"]["task"]["id"] == "123"

    printed = cli("signals", "digest", "--org", acme["id"], *db)
    assert printed.exit_code == 0, printed.output
    assert "(not kept yet)" in printed.stdout and "Job changes from " in printed.stdout
    signals_digest.keep_digests(database, datetime(2026, 11, 30, 7, 0, tzinfo=UTC))
    kept = cli("signals", "digest", "--org", acme["id"], *db).stdout
    assert "Job changes from 2026-11-23 to 2026-11-29 (UTC): 2 left, 1 joined" in kept
    assert "Acme HubSpot: 2 left, 0 joined, 1 written, 1 failed" in kept
