import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from server import demo, keys, pg, store
from server.db import connect
from tests.servers import CONTACTDATA, free_port, start, stop


def test_demo_builds_once_makes_one_org_per_tier_and_prints_how_to_call_them(
    tmp_path: Path,
) -> None:
    path = tmp_path / "var" / "demo.db"
    demo.ensure_database(path, companies=20, contacts=200, seed=3)
    built = path.stat().st_mtime_ns
    demo.ensure_database(path, companies=20, contacts=200, seed=3)
    assert path.stat().st_mtime_ns == built
    assert not (tmp_path / "var" / "demo.db.partial").exists()
    assert store.counts(connect(path))["companies"] == 20

    orgs = demo.ensure_organizations(path)
    assert [o["tier"] for o in orgs] == ["enterprise_standard", "enterprise_plus", "pro"]
    assert all(keys.is_well_formed(o["adminApiKey"]) for o in orgs)
    assert demo.ensure_organizations(path) == orgs
    keys_file = Path(f"{path}.keys.json")
    assert stat.S_IMODE(os.stat(keys_file).st_mode) == 0o600
    assert json.loads(keys_file.read_text()) == orgs

    text = "\n".join(demo.instructions(path, orgs, "127.0.0.1", 8080))
    sample = store.sample_employment(connect(path))
    assert sample is not None
    assert sample["email"] in text and sample["company_guid"] in text
    assert "curl http://127.0.0.1:8080/healthz" in text
    for org in orgs:
        assert f"'Api-Key: {org['adminApiKey']}'" in text
        assert f"'API_KEY: {org['adminApiKey']}'" in text


def test_demo_fills_a_postgresql_database_in_place_and_keeps_its_keys_under_var(
    postgres: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CONTACTDATA_KEY_SECRET", "demo-secret")
    url = postgres.create_database()
    try:
        demo.ensure_database(url, companies=20, contacts=200, seed=3)
        demo.ensure_database(url, companies=30, contacts=300, seed=3)  # built: left as it is
        assert store.counts(connect(url))["companies"] == 20
        orgs = demo.ensure_organizations(url)
        assert demo.ensure_organizations(url) == orgs and len(orgs) == 3
        (keys_file,) = (tmp_path / "var").glob("demo-127.0.0.1-*.keys.json")
        assert stat.S_IMODE(os.stat(keys_file).st_mode) == 0o600
        assert json.loads(keys_file.read_text()) == orgs
        assert store.organization(connect(url), orgs[0]["orgId"]) is not None
    finally:
        pg.release(url)


@pytest.mark.slow
def test_contactdata_demo_serves_the_connector_and_runs_the_worker(tmp_path: Path) -> None:
    path = tmp_path / "demo.db"
    demo.ensure_database(path, companies=20, contacts=200, seed=3)
    port = free_port()
    process = start([CONTACTDATA, "demo", "--db", str(path), "--port", str(port)], port)
    try:
        unknown = httpx.post(f"http://127.0.0.1:{port}/hooks/nope/events", content=b"{}")
        assert unknown.json()["error"]["code"] == "not_found"  # the connector's routes are served
        children = subprocess.run(
            ["pgrep", "-f", f"connector.cli worker --db {path}"], capture_output=True, text=True
        )
        assert children.stdout.split(), "no worker process"
    finally:
        stop(process)
    leftover = subprocess.run(["pgrep", "-f", f"worker --db {path}"], capture_output=True)
    assert leftover.returncode == 1  # the worker stopped with the server
