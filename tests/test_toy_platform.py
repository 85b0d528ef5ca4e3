"""A platform added in its own module (tests/toy_platform.py) and registered at test time runs
end to end: its request is verified and stored by the receiver, the worker enriches it and
writes back to its (fake) CRM, with no connector module changed."""

from __future__ import annotations

import json
import random
from pathlib import Path

import httpx
import pytest

from connector import connections, store, worker
from connector.app import create_app
from connector.platforms import PLATFORMS
from server import accounts, importer
from tests import toy_platform
from tests.helpers.constants import AVA, CRM, DATA, NOW, SECRET
from tests.helpers.vendors import VendorTransport


def test_a_platform_in_its_own_module_is_verified_stored_worked_and_written_back(
    db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(PLATFORMS, "toy", toy_platform.PLATFORM)
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    app = create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": lambda: NOW})
    db = store.connect(db_path)
    importer.import_files(
        db, companies=DATA / "discover_companies.csv", contacts=DATA / "discover_contacts.csv"
    )
    _, key = accounts.create_organization(
        db, SECRET.encode(), NOW, name="Acme", website="acme.example", tier="pro", credits=10
    )
    mapping = tmp_path / "toy.yaml"
    mapping.write_text(toy_platform.MAPPING)
    link = connections.add(
        db, SECRET.encode(), NOW, name="toy", platform="toy", api_key=key, mapping=mapping,
        crm_base_url=CRM, crm_token="toy-token",
    )  # fmt: skip
    body = json.dumps({"id": "7", "email": AVA}).encode()
    hooks = app.test_client()
    url = f"/hooks/{link.row['id']}/events"

    forged = hooks.post(url, data=body, headers={toy_platform.SIGNATURE: "0" * 64})
    assert forged.status_code == 401
    assert forged.get_json()["error"]["message"] == "The toy signature does not verify."
    signed = {toy_platform.SIGNATURE: toy_platform.sign(link.secret, body)}
    accepted = hooks.post(url, data=body, headers=signed)
    assert (accepted.status_code, accepted.get_json()) == (200, {"accepted": 1})
    assert hooks.post(url, data=body, headers=signed).get_json() == {"accepted": 1}  # a copy
    (event,) = store.events_of(db, link.row["id"])
    assert (event["record_id"], event["status"]) == ("7", "pending")

    crm = toy_platform.FakeToyCRM({"7": {"id": "7", "email": AVA, "title": "", "company": ""}})
    with httpx.Client(transport=VendorTransport(crm)) as client:
        work = worker.Worker(db, SECRET.encode(), lambda: NOW, client, random.Random(7))
        assert work.run_due() == {"done": 1}
    written = [json.loads(r.content) for r in crm.requests if r.method == "PATCH"]
    assert written == [
        {"title": "Vice President of Sales", "company": "Lonestar Discover Works Inc."}
    ]
    assert crm.requests[0].headers["Authorization"] == "Bearer toy-token"
    assert store.events_of(db, link.row["id"])[0]["status"] == "done"
