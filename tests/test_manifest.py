import json
import re
import tomllib
import typing
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_manifest_names_the_package_and_its_version() -> None:
    manifest = json.loads((ROOT / "manifest.json").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert manifest["name"] == project["name"]
    assert manifest["version"] == project["version"]


def _manifest() -> dict:
    return json.loads((ROOT / "manifest.json").read_text())


def test_platforms_adapters_and_mapping_files_are_the_same() -> None:
    from connector.platforms import PLATFORMS

    platforms = {p["id"]: p for p in _manifest()["platforms"]}
    assert platforms.keys() == PLATFORMS.keys()
    crms = {name for name, kind in PLATFORMS.items() if kind.crm}
    assert crms == {name for name, p in platforms.items() if p["crm"]}
    for name, declared in PLATFORMS.items():  # the kinds of record, each with its mapping
        objects = {kind: f"mappings/{declared.mapping_file_for(kind)}" for kind in declared.objects}
        assert {kind: o["mapping"] for kind, o in platforms[name]["objects"].items()} == objects
    mapping_files = {f"mappings/{path.name}" for path in (ROOT / "mappings").glob("*.yaml")}
    listed = {o["mapping"] for p in platforms.values() for o in p["objects"].values()}
    assert listed == mapping_files
    assert all("writeBack" in platforms[name] for name in crms)
    assert platforms.keys() == set(_manifest()["configuration"]["properties"]["platform"]["enum"])


def test_zoho_write_back_paths_name_the_module_of_each_kind() -> None:
    from connector.platforms import zoho

    (platform,) = [p for p in _manifest()["platforms"] if p["id"] == "zoho"]
    written = platform["writeBack"]
    assert written["modules"] == zoho.MODULES
    assert set(written["modules"]) == set(zoho.PLATFORM.objects)
    assert written["update"] == f"PUT {{crm_base_url}}{zoho.API}/{{module}}/{{id}}"
    assert written["maxBatch"] == zoho.BATCH_SIZE == written["maxBatchRead"] == zoho.IDS_PER_READ


def test_hubspot_write_back_paths_and_action_answers_are_the_codes() -> None:
    from connector.platforms import hubspot

    (platform,) = [p for p in _manifest()["platforms"] if p["id"] == "hubspot"]
    written = platform["writeBack"]
    assert written["batchRead"] == f"POST {{crm_base_url}}{hubspot.CONTACTS}/batch/read"
    assert written["update"] == f"PATCH {{crm_base_url}}{hubspot.CONTACTS}/{{id}}"
    assert written["batch"] == f"POST {{crm_base_url}}{hubspot.CONTACTS}/batch/update"
    assert written["maxBatch"] == hubspot.BATCH_SIZE
    assert written["completeAction"] == (
        f"POST {{crm_base_url}}{hubspot.CALLBACKS}/{{callbackId}}/complete"
    )
    assert written["blockExpiration"] == hubspot.ACTION_EXPIRES_AFTER


def test_actions_list_the_fields_of_the_code() -> None:
    from server import discover, enrich

    actions = {a["key"]: a for a in _manifest()["actions"]}
    assert actions["enrich"]["inputFields"] == sorted(enrich.INPUT_FIELDS)
    assert actions["enrich"]["outputFields"] == list(enrich.OUTPUT_FIELDS)
    assert actions["discover"]["inputFields"] == list(discover.DiscoverRequest.model_fields)


def test_policies_transforms_and_retries_are_those_of_the_code() -> None:
    from connector import mappings, worker

    manifest = _manifest()
    assert manifest["writeBackPolicies"]["transforms"] == sorted(mappings.TRANSFORMS)
    assert manifest["writeBackPolicies"]["policies"] == list(typing.get_args(mappings.Policy))
    retry = manifest["retry"]
    assert retry["maxAttempts"] == worker.MAX_ATTEMPTS
    assert retry["backoff"]["capSeconds"] == worker.BACKOFF_CAP_SECONDS
    secrets = {k for k, v in manifest["configuration"]["properties"].items() if v.get("x-secret")}
    assert secrets == {"apiKey", "crmToken", "secret"}


def test_schedules_are_those_of_the_code() -> None:
    from connector import jobs, scheduler

    assert _manifest()["schedules"] == [
        {"id": d.id, "runsIn": "worker", "trigger": {"type": d.trigger, **d.fields}, "does": d.does}
        for d in scheduler.DEFAULTS
    ]
    assert [d.id for d in scheduler.DEFAULTS] == list(jobs.JOBS)


def test_the_docs_platform_table_lists_every_platform_kind_and_record() -> None:
    from connector.platforms import PLATFORMS

    page = (ROOT / "docs" / "admins" / "platforms.md").read_text()
    table = page.split("# Platforms", 1)[1].split("\n\n", 2)[1]
    listed = {}
    for row in table.splitlines()[2:]:
        name, kind, records = row.split("|")[1:4]
        for platform in re.findall(r"`([a-z0-9]+)`", name):
            listed[platform] = (kind.strip() == "CRM", tuple(records.strip().split(", ")))
    assert listed == {name: (p.crm, p.objects) for name, p in PLATFORMS.items()}
