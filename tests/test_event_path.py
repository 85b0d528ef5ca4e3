"""Following one HubSpot event from its arrival to the CRM write: the connector files whose
code runs on the way, at most six (issue 20). Traced with `sys.setprofile` over a workflow
webhook signed by HubSpot's own client, posted through the real app, and the worker round that
writes it back to the fake HubSpot. Module bodies (imports) are not counted, only calls; the
contact-data service (`server`) is the connector's one dependency and is not counted either."""

from __future__ import annotations

import sys
from pathlib import Path
from types import FrameType
from typing import Any

from flask import Flask
from hubspot.utils.signature import Signature

import connector
from tests.helpers.constants import AVA, NOW, PLATFORMS
from tests.helpers.crm import FakeHubSpot

CONNECTOR = Path(connector.__file__).parent
# Where the event goes: arrives, is verified and read by its platform, stored, worked off
# (mapped, enriched), and written back by its platform's adapter.
PATH = {
    "connector/receiver.py",
    "connector/platforms/hubspot.py",
    "connector/platforms/base.py",
    "connector/store.py",
    "connector/worker.py",
    "connector/mappings.py",
}


def test_one_hubspot_event_runs_code_in_six_connector_files(
    connector_app: Flask, worker_setup: Any, crm: FakeHubSpot
) -> None:
    _, work, link, _ = worker_setup
    crm.contacts["3234574"] = {"email": AVA, "jobtitle": ""}  # the sample's contact
    body = (PLATFORMS / "hubspot_workflow_webhook.json").read_bytes()
    url = f"http://localhost/hooks/{link.row['id']}/events"
    stamp = str(int(NOW.timestamp() * 1000))
    signature = Signature.get_signature(
        "hubspot-app-secret", body.decode(), "v3", http_uri=url, timestamp=stamp
    )
    headers = {
        "X-HubSpot-Signature-v3": signature,
        "X-HubSpot-Request-Timestamp": stamp,
        "Content-Type": "application/json",
    }
    client = connector_app.test_client()
    client.get("/healthz")  # the app's first request: its one-time setup is not the event's
    ran: dict[str, set[str]] = {}

    def profile(frame: FrameType, event: str, arg: object) -> None:
        code = frame.f_code
        if event == "call" and code.co_name != "<module>":
            path = Path(code.co_filename)
            if path.is_relative_to(CONNECTOR):
                name = str(path.relative_to(CONNECTOR.parent))
                ran.setdefault(name, set()).add(code.co_qualname)

    sys.setprofile(profile)
    try:
        answer = client.post(url, data=body, headers=headers)
        done = work.run_due()
    finally:
        sys.setprofile(None)

    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert done == {"done": 1}
    assert crm.patches()[0]["jobtitle"] == "Vice President of Sales"
    assert set(ran) == PATH, {name: sorted(ran[name]) for name in set(ran) ^ PATH}
