"""Administration through `contactdata serve` (gunicorn, 2 workers): the vendor's own curl
samples with our keys, suspension seen by every worker, and limits shared by the workers."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.servers import CONTACTDATA, free_port, serve, stop

pytestmark = pytest.mark.slow

# Request bodies exactly as the vendor's samples type them.
SUSPEND_USER = '{\n"email": "dev.udi@smarte.pro",\n"action": "suspend"\n}'
SUSPEND_KEY = '{\n"email":"dev.udi_user@smarte.pro",\n"action": "suspend"\n}'


def create_org(db: Path, name: str, qps: int) -> dict[str, str]:
    command = [CONTACTDATA, "org", "create", "--db", str(db), "--name", name, "--website",
               f"https://www.{name.lower()}.example.org/", "--tier", "pro", "--qps", str(qps),
               "--json"]  # fmt: skip
    return json.loads(subprocess.run(command, check=True, capture_output=True).stdout)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    db = tmp_path_factory.mktemp("admin") / "admin.db"
    subprocess.run([CONTACTDATA, "db", "init", "--db", str(db)], check=True, capture_output=True)
    port = free_port()
    process = serve(db, port)
    yield f"http://127.0.0.1:{port}", db
    stop(process)


def curl(*args: str) -> dict:
    """Run curl as the vendor's samples do and return the JSON it printed."""
    done = subprocess.run(["curl", "--silent", *args], check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def test_the_vendors_curl_samples_work_with_our_keys(server: tuple[str, Path]) -> None:
    base, db = server
    admin_key = create_org(db, "Smarte", qps=100)["adminApiKey"]
    json_header = "Content-Type: application/json"

    # §3.1 user creation, header spelled Admin_Api_Key as in the sample
    created = curl("--location", f"{base}/signals/v1/user/createsignalapikey",
                   "--header", f"Admin_Api_Key: {admin_key}", "--header", json_header,
                   "--data-raw", '{\n"email": "dev.udi@smarte.pro"\n}')  # fmt: skip
    assert created["message"] == "New User registered successfully. Key Generated"
    # §3.2 view users
    users = curl("--location", f"{base}/signals/v1/user/view",
                 "--header", f"Admin_Api_Key: {admin_key}", "--header", json_header,
                 "--data", "{}")  # fmt: skip
    assert [u["email"] for u in users["data"]] == ["admin@smarte.example.org", "dev.udi@smarte.pro"]
    # §3.3 suspend the user
    suspended = curl("--location", f"{base}/signals/v1/user/update",
                     "--header", f"Admin_Api_Key: {admin_key}", "--header", json_header,
                     "--data-raw", SUSPEND_USER)  # fmt: skip
    assert suspended["data"]["status"] == "suspend"
    # §3.4 key creation, header spelled Api-Key
    key = curl("--location", f"{base}/signals/v1/key/createsignalapikey",
               "--header", json_header, "--header", f"Api-Key: {admin_key}",
               "--data-raw", '{\n"email": "dev.udi_user@smarte.pro"\n}')  # fmt: skip
    assert key["message"] == "Key generated successfully"
    # §3.5 view all keys, then one
    listed = curl("--location", f"{base}/signals/v1/key/view", "--header", json_header,
                  "--header", f"Api-Key: {admin_key}", "--data", "{}")  # fmt: skip
    assert [k["role"] for k in listed["data"]] == ["admin", "standard", "standard"]
    one = curl("--location", f"{base}/signals/v1/key/view", "--header", json_header,
               "--header", f"Api-Key: {admin_key}",
               "--data-raw", '{\n"email": "dev.udi_user@smarte.pro"\n}')  # fmt: skip
    assert one["data"]["keyId"] == key["data"]["keyId"]
    # §3.6 suspend the key
    updated = curl("--location", f"{base}/signals/v1/key/update", "--header", json_header,
                   "--header", f"Api-Key: {admin_key}",
                   "--data-raw", SUSPEND_KEY)  # fmt: skip
    assert updated["message"] == "Action performed successfully"
    assert updated["data"]["status"] == "suspended"


def test_a_suspension_takes_effect_in_every_worker(server: tuple[str, Path]) -> None:
    base, db = server
    admin_key = create_org(db, "Workers", qps=1000)["adminApiKey"]
    with httpx.Client(base_url=base) as client:
        made = client.post("/signals/v1/key/createsignalapikey", json={"email": "w@x.org"},
                           headers={"Api-Key": admin_key}).json()  # fmt: skip
        client.post("/signals/v1/key/update", json={"email": "w@x.org", "action": "suspend"},
                    headers={"Api-Key": admin_key})  # fmt: skip
        # New connections land on either worker; every one of them must refuse the key.
        for _ in range(12):
            with httpx.Client(base_url=base) as fresh:
                r = fresh.post("/signals/v1/key/view", json={},
                               headers={"API_KEY": made["data"]["apiKey"]})  # fmt: skip
                assert r.json()["error"]["code"] == "key_suspended"


def test_qps_limit_holds_across_workers(server: tuple[str, Path]) -> None:
    base, db = server
    admin_key = create_org(db, "Limited", qps=5)["adminApiKey"]
    start = threading.Barrier(20)
    responses: list[httpx.Response] = []

    def call() -> None:
        with httpx.Client(base_url=base, timeout=10) as client:
            start.wait()
            r = client.post("/signals/v1/key/view", json={}, headers={"Api-Key": admin_key})
            responses.append(r)

    threads = [threading.Thread(target=call) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(r.status_code for r in responses) == [200] * 5 + [429] * 15
    for r in responses:
        assert "q=5;w=1" in r.headers["RateLimit-Policy"]
        if r.status_code == 429:
            assert r.json()["error"]["code"] == "rate_limit_exceeded"
            assert int(r.headers["Retry-After"]) >= 1
            assert r.headers["RateLimit"].startswith('"qps";r=0')
