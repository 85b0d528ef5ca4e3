import json
import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

import server
from connector import connections
from connector import store as connector_store
from server import demo, keys
from server.clock import utcnow
from server.storage import pg, store
from server.storage.db import connect
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

    pages = [("settings page", "/settings")]
    lines = demo.instructions(path, orgs, "http://127.0.0.1:8080", pages)
    text = "\n".join(lines)
    sample = store.sample_employment(connect(path))
    assert sample is not None
    assert sample["email"] in text and sample["company_guid"] in text
    assert lines[1:3] == [
        "  curl http://127.0.0.1:8080/healthz",
        "  settings page: http://127.0.0.1:8080/settings",
    ]
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
def test_contactdata_demo_serves_from_an_empty_directory_at_the_address_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make demo` on a fresh clone: no var/, no settings; the default database is built, the
    printed curl line answers a record, the settings page is named and shows webhook URLs on
    the demo's port, and the worker beside it has the same public URL and stops with it."""
    monkeypatch.chdir(tmp_path)
    for name in ("CONTACTDATA_DB", "CONTACTDATA_KEY_SECRET", "CONTACTDATA_PUBLIC_URL"):
        monkeypatch.delenv(name, raising=False)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    small = ["--companies", "20", "--contacts", "200", "--seed", "3"]
    process = start([CONTACTDATA, "demo", "--port", str(port), *small], port)
    try:
        printed = _printed_so_far(process)
        assert f"  settings page (sign in with an admin key): {base}/settings" in printed
        assert _first_enrich_line_answered(printed)["recordStatus"] in ("Active", "No Longer")
        assert f"{base}/hooks/" in _connections_page(base, Path("var/contactdata.db"))
        worker = _worker_beside(process)
        assert f"CONTACTDATA_PUBLIC_URL={base}" in _environment(worker)
    finally:
        stop(process)
    assert (tmp_path / "var" / "contactdata.db").is_file()
    assert not _running(worker)


def _printed_so_far(process: subprocess.Popen[bytes]) -> str:
    """What a server printed until now, read from its pipe without waiting for more."""
    assert process.stdout is not None
    os.set_blocking(process.stdout.fileno(), False)
    return os.read(process.stdout.fileno(), 1 << 20).decode()


def _first_enrich_line_answered(printed: str) -> dict[str, Any]:
    """Run the first printed `curl ... /v7/enrich` line as printed, in a shell."""
    line = next(line for line in printed.splitlines() if "/v7/enrich" in line)
    answered = subprocess.run(line, shell=True, capture_output=True, text=True, check=True)
    return json.loads(answered.stdout)


def _connections_page(base: str, path: Path) -> str:
    """The settings page's connections, signed in as the first demo organization's admin,
    with one Zapier connection added."""
    key = demo.ensure_organizations(path)[0]["adminApiKey"]
    secret = server.key_secret({"DB": str(path)})
    connections.add(connector_store.connect(path), secret, utcnow(), name="zap", platform="zapier",
                    api_key=key)  # fmt: skip
    with httpx.Client(base_url=base) as browser:
        form = browser.get("/settings/sign-in").text
        token = re.search(r'name="csrf_token" value="([^"]+)"', form)
        assert token is not None
        signed = browser.post("/settings/sign-in", data={"api_key": key, "csrf_token": token[1]})
        assert signed.status_code == 303, signed.text
        return browser.get("/settings/connections").text


def _worker_beside(process: subprocess.Popen[bytes]) -> int:
    """The pid of the write-back worker the demo started."""
    found = subprocess.run(["pgrep", "-P", str(process.pid), "-f", "connector.cli worker"],
                           capture_output=True, text=True)  # fmt: skip
    assert found.stdout.split(), "no worker process"
    return int(found.stdout.split()[0])


def _environment(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")


def _running(pid: int) -> bool:
    """Whether a process is alive (a zombie is not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False
