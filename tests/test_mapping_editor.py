"""The mapping editor: a HubSpot connection's mapping edited over its CRM's own properties
(the loopback fake HubSpot's properties API), saved as versions the worker uses, checked
against the properties, restored, exported and imported; tenancy and CSRF."""

from __future__ import annotations

import html
import io
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient
from sqlite_utils import Database
from werkzeug.test import TestResponse

from connector import connections, field_check, mapping_versions, mappings, store
from connector.app import create_app
from connector.cli import main
from connector.platforms.base import CrmField
from connector.platforms.hubspot import HubSpot
from tests.helpers.clock import Clock
from tests.helpers.constants import NOW, SECRET
from tests.helpers.crm import FakeHubSpot
from tests.helpers.crm_server import FakeCrm, hubspot_property, running
from tests.helpers.events import hubspot_event
from tests.helpers.orgs import organization
from tests.helpers.settings_forms import sign_in, source, text, token
from tests.helpers.yaml_bombs import ALIAS_BOMB, DEEP
from tests.servers import CONTACTDATA, free_port, serve, stop

US_STATES = ("AL", "AK", "AZ", "AR", "CA", "TX")
HUBSPOT_FILE = (mappings.DIRECTORY / "hubspot.yaml").read_text()
# What the bounded reader says of tests/helpers/yaml_bombs.py's texts (issue 34).
BOMB_REFUSED = (
    "line 1, a0: YAML anchors and aliases (&name, *name) are refused: a mapping file never "
    "needs them; write the value out"
)
DEEP_REFUSED = f"line 2, record_id{'[0]' * 19}: nested more than 20 levels deep"


@pytest.fixture
def fake() -> Iterator[FakeCrm]:
    with running(FakeCrm()) as server:
        yield server


@pytest.fixture
def app(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> Flask:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")  # the fake CRM on loopback
    return create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": Clock(NOW)})


@pytest.fixture
def database(app: Flask, db_path: Path) -> Database:
    return store.connect(db_path)


def _connect(database: Database, name: str, url: str) -> tuple[dict[str, Any], str]:
    """Organization `name` with a HubSpot connection to `url`: the connection and admin key."""
    _, key = organization(database, name=name)
    added = connections.add(
        database, SECRET.encode(), NOW, name=f"{name} HubSpot", platform="hubspot",
        api_key=key, crm_base_url=url, crm_token="pat-na1-token", secret="hubspot-app-secret",
    )  # fmt: skip
    return added.row, key


@pytest.fixture
def acme(database: Database, fake: FakeCrm) -> tuple[dict[str, Any], str]:
    return _connect(database, "Acme", fake.url)


@pytest.fixture
def signed_in(client: FlaskClient, acme: tuple[dict[str, Any], str]) -> FlaskClient:
    assert sign_in(client, acme[1]).status_code == 303
    return client


def _editor(link: dict[str, Any]) -> str:
    return f"/settings/connections/{link['id']}/mapping?kind=contacts"


def _rows(text: str) -> list[dict[str, str]]:
    """The editor's rows as a form posts them, from a mapping's YAML."""
    return [
        {"property": rule.property, "field": rule.field, "transforms": " ".join(rule.transforms),
         "policy": rule.policy}
        for rule in mappings.parse(text, "test").output
    ]  # fmt: skip


def _post_rows(
    client: FlaskClient, link: dict[str, Any], rows: list[dict[str, str]]
) -> TestResponse:
    form: dict[str, list[str]] = {"property": [], "field": [], "transforms": [], "policy": []}
    for row in rows:
        for column in form:
            form[column].append(row[column])
    csrf = token(client.get(_editor(link)))
    return client.post(_editor(link), data={**form, "csrf_token": csrf})


def _versions(database: Database, link: dict[str, Any]) -> list[int]:
    return [row["version"] for row in store.mapping_versions(database, link["id"], "contacts")]


# --- the page --------------------------------------------------------------------------------


def test_the_editor_shows_the_crms_properties_read_only_marked(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str], fake: FakeCrm
) -> None:
    page = signed_in.get(_editor(acme[0]))
    assert page.status_code == 200
    shown = source(page)
    assert "Jobtitle (jobtitle, text)" in shown
    assert "Hs Object Id (hs_object_id, number, read-only)" in shown
    (call,) = [c for c in fake.calls if c.path == "/crm/properties/2026-03/contacts"]
    assert call.headers["authorization"] == "Bearer pat-na1-token"
    assert "pat-na1-token" not in shown


def test_a_picklist_without_the_value_is_refused_naming_the_property(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str], fake: FakeCrm, database: Database
) -> None:
    fake.properties["contacts"] = [
        p if p["name"] != "state" else hubspot_property("state", "enumeration", US_STATES)
        for p in fake.properties["contacts"]
    ]
    answer = _post_rows(signed_in, acme[0], _rows(HUBSPOT_FILE))
    assert answer.status_code == 400
    assert 'state: picklist options AL, AK, AZ, AR, … do not include every value of ' \
        'conWorkLocState ("California")' in source(answer)  # fmt: skip
    assert _versions(database, acme[0]) == []


def test_a_read_only_property_is_refused(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str], database: Database
) -> None:
    rows = [*_rows(HUBSPOT_FILE), {"property": "hs_object_id", "field": "compEmpCount",
                                   "transforms": "integer", "policy": "always"}]  # fmt: skip
    answer = _post_rows(signed_in, acme[0], rows)
    assert answer.status_code == 400
    assert "hs_object_id: Hs Object Id is read-only in the CRM" in source(answer)
    assert _versions(database, acme[0]) == []


def test_save_makes_versions_and_restore_saves_the_old_one_again(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str], database: Database
) -> None:
    link = acme[0]
    first = _post_rows(signed_in, link, _rows(HUBSPOT_FILE))
    assert first.status_code == 303 and _versions(database, link) == [1]
    changed = [r for r in _rows(HUBSPOT_FILE) if r["property"] != "jobtitle"]
    assert _post_rows(signed_in, link, changed).status_code == 303
    assert _versions(database, link) == [2, 1]
    assert (
        "property: jobtitle\n" not in mapping_versions.current_text(database, link, "contacts")[1]
    )
    csrf = token(signed_in.get(_editor(link)))
    restore = f"/settings/connections/{link['id']}/mapping/restore?kind=contacts"
    assert signed_in.post(restore, data={"version": "1", "csrf_token": csrf}).status_code == 303
    assert _versions(database, link) == [3, 2, 1]
    one = store.mapping_version(database, link["id"], "contacts", 1)
    three = store.mapping_version(database, link["id"], "contacts", 3)
    assert one and three and three["yaml"] == one["yaml"]
    assert "Version 3 is in use" in source(signed_in.get(_editor(link)))
    tab = source(signed_in.get("/settings/connections"))
    assert "version 3: platform HubSpot" in tab  # the summary is of the version in use


def test_a_version_number_past_the_stores_range_is_not_found_not_a_500(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str], database: Database
) -> None:
    link = acme[0]
    csrf = token(signed_in.get(_editor(link)))
    restore = f"/settings/connections/{link['id']}/mapping/restore?kind=contacts"
    for version in (str(2**63), str(10**30), "-1", str(store.LARGEST_ID)):
        answer = signed_in.post(restore, data={"version": version, "csrf_token": csrf})
        assert answer.status_code == 303
        assert f"no version {version}" in source(signed_in.get(answer.location))
    assert _versions(database, link) == []


def test_export_then_import_round_trips_as_a_new_version(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str], database: Database
) -> None:
    link = acme[0]
    exported = signed_in.get(f"/settings/connections/{link['id']}/mapping/export?kind=contacts")
    assert exported.status_code == 200 and "attachment" in exported.headers["Content-Disposition"]
    assert exported.get_data(as_text=True) == HUBSPOT_FILE  # no version yet: the file
    data = yaml.safe_load(exported.get_data(as_text=True))
    data["output"] = data["output"][:3]
    upload = (io.BytesIO(yaml.safe_dump(data).encode()), "mine.yaml")
    csrf = token(signed_in.get(_editor(link)))
    path = f"/settings/connections/{link['id']}/mapping/import?kind=contacts"
    answer = signed_in.post(path, data={"file": upload, "csrf_token": csrf})
    assert answer.status_code == 303 and _versions(database, link) == [1]
    again = signed_in.get(f"/settings/connections/{link['id']}/mapping/export?kind=contacts")
    assert yaml.safe_load(again.get_data(as_text=True)) == data


@pytest.mark.parametrize(
    ("upload", "problem"), [(ALIAS_BOMB, BOMB_REFUSED), (DEEP, DEEP_REFUSED)], ids=["bomb", "deep"]
)
def test_an_alias_bomb_or_nesting_too_deep_is_refused_naming_the_line(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str], database: Database, upload: str,
    problem: str,
) -> None:  # fmt: skip
    link = acme[0]
    csrf = token(signed_in.get(_editor(link)))
    path = f"/settings/connections/{link['id']}/mapping/import?kind=contacts"
    data = {"file": (io.BytesIO(upload.encode()), "mine.yaml"), "csrf_token": csrf}
    answer = signed_in.post(path, data=data)
    assert answer.status_code == 400
    assert f"Acme HubSpot contacts mapping, {problem}" in source(answer)
    assert _versions(database, link) == []


def test_an_import_for_another_platform_is_refused(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str], database: Database
) -> None:
    link = acme[0]
    upload = (io.BytesIO((mappings.DIRECTORY / "zoho.yaml").read_bytes()), "zoho.yaml")
    csrf = token(signed_in.get(_editor(link)))
    path = f"/settings/connections/{link['id']}/mapping/import?kind=contacts"
    answer = signed_in.post(path, data={"file": upload, "csrf_token": csrf})
    assert answer.status_code == 400 and "the mapping is zoho's" in source(answer)
    assert _versions(database, link) == []


def test_a_refused_token_leaves_the_editor_usable_on_the_yaml_alone(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str], fake: FakeCrm, database: Database
) -> None:
    fake.properties_refused = True
    page = signed_in.get(_editor(acme[0]))
    assert page.status_code == 200
    assert "The CRM's field list could not be read (token expired or revoked)" in source(page)
    assert _post_rows(signed_in, acme[0], _rows(HUBSPOT_FILE)).status_code == 303
    assert _versions(database, acme[0]) == [1]


def test_missing_custom_properties_are_created(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str], fake: FakeCrm
) -> None:
    fake.properties["contacts"] = [
        p for p in fake.properties["contacts"] if p["name"] != "contactdata_employee_count"
    ]
    csrf = token(signed_in.get(_editor(acme[0])))
    path = f"/settings/connections/{acme[0]['id']}/mapping/create-fields?kind=contacts"
    assert signed_in.post(path, data={"csrf_token": csrf}).status_code == 303
    (created,) = [c.body for c in fake.calls if c.method == "POST"]
    assert created["name"] == "contactdata_employee_count" and created["type"] == "number"
    assert created["groupName"] == "contactinformation"


def test_another_organizations_mapping_is_a_404(
    signed_in: FlaskClient, database: Database, fake: FakeCrm
) -> None:
    other, _ = _connect(database, "Globex", fake.url)
    assert signed_in.get(_editor(other)).status_code == 404
    csrf = token(signed_in.get("/settings/connections"))
    assert signed_in.post(_editor(other), data={"csrf_token": csrf}).status_code == 404
    export = f"/settings/connections/{other['id']}/mapping/export?kind=contacts"
    assert signed_in.get(export).status_code == 404
    assert _versions(database, other) == []


def test_a_save_without_the_csrf_token_is_refused(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str], database: Database
) -> None:
    answer = signed_in.post(_editor(acme[0]), data={"property": "jobtitle"})
    assert answer.status_code == 400 and _versions(database, acme[0]) == []


# --- the worker and the pure check -----------------------------------------------------------


def test_the_worker_writes_with_the_current_version(worker_setup: Any, crm: FakeHubSpot) -> None:
    db, work, link, _ = worker_setup
    text = HUBSPOT_FILE.replace("property: jobtitle,", "property: contactdata_title,")
    mapping_versions.validated(link.row, "contacts", text)
    with store.server.write(db):
        mapping_versions.save(db, link.row, "contacts", text, NOW, "test")
    hubspot_event(db, link, "e1")
    assert work.run_due() == {"done": 1}
    (written,) = crm.patches()
    assert written["contactdata_title"] == "Vice President of Sales" and "jobtitle" not in written


def test_picklists_take_enumerable_fields_whose_values_they_offer() -> None:
    levels = CrmField("levels", "Levels", "multipicklist", ("VP", "Director"))
    text = HUBSPOT_FILE.replace(
        "{field: conLevels, property: contactdata_job_levels, policy: always}",
        "{field: conLevels, property: levels, transforms: [split], policy: always}",
    )
    mapping = mappings.parse(text, "test")
    fields = [CrmField(r.property, r.property, "text") for r in mapping.output]
    refused = field_check.refusals(mapping, [*fields, levels])
    assert refused == ['levels: picklist options VP, Director do not include "Founder/CXO", '
                       '"Board Members/Trustee", "MD", "Head", …']  # fmt: skip


def test_hubspot_reads_enumerations_by_their_widget(fake: FakeCrm) -> None:
    fake.properties["contacts"] = [
        {**hubspot_property("hs_buying_role", "enumeration", ("A", "B")), "fieldType": "checkbox"},
        hubspot_property("state", "enumeration", US_STATES),
    ]
    with httpx.Client() as client:
        got = HubSpot(fake.url, "pat-na1-token", client).fields()
    assert [(f.name, f.type, f.options[:2]) for f in got] == [
        ("hs_buying_role", "multipicklist", ("A", "B")), ("state", "picklist", ("AL", "AK"))
    ]  # fmt: skip


def test_the_cli_imports_exports_and_lists_versions(
    acme: tuple[dict[str, Any], str], fake: FakeCrm, db_path: Path, database: Database,
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:  # fmt: skip
    monkeypatch.setenv("CONTACTDATA_KEY_SECRET", SECRET)
    link, runner, db = acme[0]["id"], CliRunner(), ["--db", str(db_path)]
    exported = runner.invoke(main, ["mapping", "export", link, *db])
    assert exported.exit_code == 0 and exported.output == HUBSPOT_FILE
    mine = tmp_path / "mine.yaml"
    mine.write_text(HUBSPOT_FILE.replace("property: state,", "property: hs_object_id,"))
    refused = runner.invoke(main, ["mapping", "import", link, str(mine), *db])
    assert refused.exit_code == 1 and "hs_object_id: Hs Object Id is read-only" in refused.output
    mine.write_text(HUBSPOT_FILE.replace("policy: overwrite_if_ours}", "policy: always}"))
    saved = runner.invoke(main, ["mapping", "import", link, str(mine), *db])
    assert saved.exit_code == 0 and "version 1" in saved.output
    again = runner.invoke(main, ["mapping", "export", link, *db])
    assert again.output == mine.read_text()
    listed = runner.invoke(main, ["mapping", "versions", link, *db])
    assert listed.output.startswith("1  ") and "contactdata mapping import" in listed.output


def test_the_cli_refuses_an_alias_bomb_and_nesting_too_deep_naming_the_line(
    acme: tuple[dict[str, Any], str], db_path: Path, database: Database,
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:  # fmt: skip
    monkeypatch.setenv("CONTACTDATA_KEY_SECRET", SECRET)
    bomb, deep, runner = tmp_path / "bomb.yaml", tmp_path / "deep.yaml", CliRunner()
    db = ["--db", str(db_path)]
    bomb.write_text(ALIAS_BOMB)
    deep.write_text(DEEP)
    checked = runner.invoke(main, ["mapping", "check", str(bomb)])
    assert checked.exit_code == 1 and checked.output == f"{bomb}, {BOMB_REFUSED}\n"
    checked = runner.invoke(main, ["mapping", "check", str(deep)])
    assert checked.exit_code == 1 and checked.output.startswith(f"{deep}, {DEEP_REFUSED}")
    link = acme[0]
    imported = runner.invoke(main, ["mapping", "import", link["id"], str(bomb), *db])
    assert imported.exit_code == 1 and f"contacts mapping, {BOMB_REFUSED}" in imported.output
    assert _versions(database, link) == []


# --- through the production server -----------------------------------------------------------


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, str, str]]:
    """`contactdata serve` (gunicorn, its 30 s worker timeout) on a database `contactdata db
    init` made, with Acme's HubSpot connection (its CRM unreachable: the YAML alone is
    checked): the URL, the connection's id and Acme's admin key."""
    monkeypatch.setenv("CONTACTDATA_KEY_SECRET", SECRET)
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    db_path = tmp_path / "served.db"
    subprocess.run(
        [CONTACTDATA, "db", "init", "--db", str(db_path)], check=True, capture_output=True
    )
    database = store.connect(db_path)
    link, key = _connect(database, "Acme", "http://127.0.0.1:9")
    database.close()
    port = free_port()
    process = serve(db_path, port)
    try:
        yield f"http://127.0.0.1:{port}", link["id"], key
    finally:
        stop(process)


def _form_token(page: httpx.Response) -> str:
    """The CSRF token of a page's first form, as `token` reads it from the test client's."""
    found = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert found, page.text
    return found.group(1)


@pytest.mark.slow
def test_the_production_server_refuses_an_alias_bomb_well_within_its_worker_timeout(
    served: tuple[str, str, str],
) -> None:
    url, connection_id, key = served
    with httpx.Client(base_url=url, timeout=60) as client:  # a killed worker: a 502 or reset
        form = client.get("/settings/sign-in")
        signed = {"api_key": key, "csrf_token": _form_token(form)}
        assert client.post("/settings/sign-in", data=signed).status_code == 303
        editor = f"/settings/connections/{connection_id}/mapping?kind=contacts"
        csrf = _form_token(client.get(editor))
        path = f"/settings/connections/{connection_id}/mapping/import?kind=contacts"
        answer = client.post(
            path, data={"csrf_token": csrf}, files={"file": ("bomb.yaml", ALIAS_BOMB.encode())}
        )
    assert answer.status_code == 400
    assert "contacts mapping, line 1, a0: YAML anchors and aliases" in html.unescape(answer.text)
    assert answer.elapsed.total_seconds() < 5  # it was 30 s, and the worker killed


# --- the editor in words ---------------------------------------------------------------------


@pytest.mark.both_backends
def test_fields_and_policies_read_in_words_with_the_organizations_own_examples(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str], database: Database
) -> None:
    link = acme[0]
    held = {"connection_id": link["id"], "kind": "contacts", "record_id": "501",
            "transaction_id": "t1", "input_fingerprint": "f", "enriched_at": NOW.isoformat(),
            "written": '{"jobtitle": "Head of Widgets"}'}  # fmt: skip
    with store.server.write(database):
        store.save_records(database, [held])
    shown = source(signed_in.get(_editor(link)))
    assert (
        '<option value="conJobTitleEn" selected>Job title (English), e.g. Head of Widgets' in shown
    )
    assert '<option value="compIndustry">Industry, e.g. Software</option>' in shown  # the sample
    assert '<option value="always" selected>Always overwrite</option>' in shown
    assert "jobtitle</span> ← Job title (English) · Overwrite until a user edits" in shown
    assert "compEmpRange</option>" not in shown and ">overwrite_if_ours<" not in shown
    previewed = {"id": "p1", "connection_id": link["id"], "kind": "contacts", "record_id": "501",
                 "rows": '[{"field": "compIndustry", "value": "Aerospace"}]', "planned": "{}",
                 "saving": "{}", "credits": 1, "created_by": "test", "created_at": "t"}  # fmt: skip
    with store.server.write(database):
        store.save_preview(database, previewed)
    shown = source(signed_in.get(_editor(link)))
    assert '<option value="compIndustry">Industry, e.g. Aerospace</option>' in shown  # previewed


def test_existing_rows_are_one_tab_stop_each_their_controls_behind_a_disclosure(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str]
) -> None:
    shown = source(signed_in.get(_editor(acme[0])))
    rows = len(_rows(HUBSPOT_FILE))
    assert shown.count('<li class="map-row"') == rows + 1
    assert shown.count("<details>") == rows  # closed: only their summaries take the focus
    assert shown.count("<details open>") == 1  # the blank row, to fill at once


def test_a_refused_row_is_marked_with_its_reason_and_listed_at_the_top(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str], database: Database
) -> None:
    rows = [*_rows(HUBSPOT_FILE), {"property": "hs_object_id", "field": "compEmpCount",
                                   "transforms": "integer", "policy": "always"}]  # fmt: skip
    answer = _post_rows(signed_in, acme[0], rows)
    assert answer.status_code == 400
    shown = source(answer)
    last = len(rows) - 1
    assert 'id="refusals" role="alert"' in shown and "Not saved: 1 row refused" in shown
    assert f'<a href="#row-{last}">Row {len(rows)}</a>, hs_object_id: Hs Object Id is ' \
        "read-only in the CRM" in shown  # fmt: skip
    assert f'<li class="map-row map-row-refused" id="row-{last}">' in shown
    assert f'id="property-{last}" name="property" aria-invalid="true" ' \
        f'aria-describedby="problem-{last}"' in shown  # fmt: skip
    assert shown.count('aria-invalid="true"') == 1
    assert f'<p class="map-problem" id="problem-{last}">Hs Object Id is read-only' in shown
    assert _versions(database, acme[0]) == []


def test_a_duplicate_property_is_reported_by_the_row_not_the_files_line(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str], database: Database
) -> None:
    rows = _rows(HUBSPOT_FILE)
    rows.append({**rows[2], "field": "conFunctions"})  # jobtitle, the third row, again
    answer = _post_rows(signed_in, acme[0], rows)
    assert answer.status_code == 400
    shown = source(answer)
    assert f"Row {len(rows)}</a>, jobtitle: row 3 already writes jobtitle" in shown
    assert "output[" not in shown and not re.search(r"line \d", shown)
    assert _versions(database, acme[0]) == []


def test_several_rows_are_added_at_once_keeping_the_edits(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str], database: Database
) -> None:
    link = acme[0]
    rows = [r for r in _rows(HUBSPOT_FILE) if r["property"] != "phone"]
    form: dict[str, Any] = {column: [r[column] for r in rows] for column in rows[0]}
    csrf = token(signed_in.get(_editor(link)))
    answer = signed_in.post(
        _editor(link), data={**form, "action": "add", "add": "4", "csrf_token": csrf}
    )
    assert answer.status_code == 200
    shown = source(answer)
    assert shown.count('name="property"') == len(rows) + 4
    assert shown.count("<details open>") == 4 and ">phone</span>" not in shown
    assert _versions(database, link) == []  # nothing saved yet


def test_saving_what_is_in_use_makes_no_new_version(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str], database: Database
) -> None:
    link = acme[0]
    assert _post_rows(signed_in, link, _rows(HUBSPOT_FILE)).status_code == 303
    again = _post_rows(signed_in, link, _rows(HUBSPOT_FILE))
    assert "Nothing changed: version 1 stays in use." in text(signed_in.get(again.location))
    assert _versions(database, link) == [1]


def test_versions_show_what_each_changed_in_words(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str]
) -> None:
    link = acme[0]
    rows = [r for r in _rows(HUBSPOT_FILE) if r["property"] != "phone"]
    rows = [{**r, "policy": "always"} if r["property"] == "jobtitle" else r for r in rows]
    assert _post_rows(signed_in, link, rows).status_code == 303
    shown = text(signed_in.get(_editor(link)))
    assert "What version 1 changed" in shown
    assert "Removes phone ← Work phone (e164), Overwrite until a user edits" in shown
    assert "Changes jobtitle: policy Overwrite until a user edits → Always overwrite" in shown


def test_the_recommended_mapping_is_saved_its_missing_custom_fields_created_first(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str], fake: FakeCrm, database: Database
) -> None:
    link = acme[0]
    assert _post_rows(signed_in, link, _rows(HUBSPOT_FILE)[:3]).status_code == 303
    fake.properties["contacts"] = [
        p for p in fake.properties["contacts"] if p["name"] != "contactdata_revenue_range"
    ]
    csrf = token(signed_in.get(_editor(link)))
    path = f"/settings/connections/{link['id']}/mapping/recommended?kind=contacts"
    answer = signed_in.post(path, data={"csrf_token": csrf})
    assert answer.status_code == 303
    assert "Saved as version 2" in text(signed_in.get(answer.location))
    (created,) = [c.body for c in fake.calls if c.method == "POST"]
    assert created["name"] == "contactdata_revenue_range"
    _, saved = mapping_versions.current_text(database, link, "contacts")
    assert mappings.parse(saved, "v2") == mappings.parse(HUBSPOT_FILE, "file")


def test_a_static_value_is_saved_and_checked_against_a_picklists_options(
    signed_in: FlaskClient, acme: tuple[dict[str, Any], str], fake: FakeCrm, database: Database
) -> None:
    link = acme[0]
    fake.properties["contacts"].append(
        hubspot_property("hs_lead_status", "enumeration", ("NEW", "OPEN"))
    )
    rows = [{**r, "constant": ""} for r in _rows(HUBSPOT_FILE)]
    static = {"property": "hs_lead_status", "field": "", "constant": "Open", "transforms": "",
              "policy": "fill_if_empty"}  # fmt: skip
    form: dict[str, Any] = {column: [r[column] for r in [*rows, static]] for column in static}
    csrf = token(signed_in.get(_editor(link)))
    refused = signed_in.post(_editor(link), data={**form, "csrf_token": csrf})
    assert refused.status_code == 400
    assert "'Open' is not one of Hs Lead Status's options as the CRM writes them (NEW, OPEN)" \
        in source(refused)  # fmt: skip
    form["constant"][-1] = "OPEN"
    saved = signed_in.post(_editor(link), data={**form, "csrf_token": csrf})
    assert saved.status_code == 303
    text_saved = mapping_versions.current_text(database, link, "contacts")[1]
    assert mappings.parse(text_saved, "v1").output[-1] == mappings.Rule(
        constant="OPEN", property="hs_lead_status"
    )
    assert 'hs_lead_status</span> ← "OPEN" (static value) · Fill if empty' in source(
        signed_in.get(_editor(link))
    )
