"""Reading what Pipedrive, Zoho and Dynamics send into events (pure): keys to deduplicate on,
record ids, payloads, and what is deliberately not an event."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from connector import inbound

PLATFORMS = Path(__file__).parent / "data" / "platforms"  # copied from the shared reference
PIPEDRIVE = json.loads((PLATFORMS / "pipedrive_v2_person_updated.json").read_text())
ZOHO = json.loads((PLATFORMS / "zoho_webhook.json").read_text())
DYNAMICS = json.loads((PLATFORMS / "dynamics365_webhook_remote_execution_context.json").read_text())
GLYNN = "6d81597f-0f9f-e711-8122-000d3aa2331c"  # the Dynamics sample's contact


def _events(platform: str, document: Any) -> list[inbound.Event]:
    return inbound.events(platform, json.dumps(document).encode())


def _with(document: dict[str, Any], **changes: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    for dotted, value in changes.items():
        *parents, name = dotted.split("__")
        target = changed
        for parent in parents:
            target = target[parent]
        target[name] = value
    return changed


def test_a_pipedrive_person_change_is_one_event_keyed_by_meta_id() -> None:
    (event,) = _events("pipedrive", PIPEDRIVE)
    assert (event.key, event.record_id, event.thin) == (
        "123456789-1234-1234-1234-123456789012",
        "12",
        False,
    )
    assert event.payload == PIPEDRIVE


@pytest.mark.parametrize(
    "changes",
    [{"meta__action": "delete", "data": None}, {"meta__entity": "deal"}],
    ids=["a deletion", "another entity"],
)
def test_pipedrive_events_with_nothing_to_enrich_are_none(changes: dict[str, Any]) -> None:
    assert _events("pipedrive", _with(PIPEDRIVE, **changes)) == []


def test_a_pipedrive_body_without_meta_id_is_unparseable() -> None:
    with pytest.raises(inbound.Unparseable, match=r"meta\.id"):
        _events("pipedrive", _with(PIPEDRIVE, meta__id=""))


def test_a_zoho_notification_is_a_thin_event_per_contact_id() -> None:
    contacts = _with(ZOHO, module="Contacts", ids=["5725767000003000064", "5725767000003000065"])
    first, second = _events("zoho", contacts)
    assert (first.key, first.record_id, first.thin) == (
        "1000000068001:1718117126473:5725767000003000064",
        "5725767000003000064",
        True,
    )
    assert first.payload == {
        "id": "5725767000003000064",
        "module": "Contacts",
        "operation": "insert",
        "channel_id": "1000000068001",
    }
    assert second.record_id == "5725767000003000065"


def test_zoho_notifications_of_other_modules_or_deletions_are_none() -> None:
    assert _events("zoho", ZOHO) == []  # the sample is a Leads channel's
    deleted = _with(ZOHO, module="Contacts", operation="delete")
    assert _events("zoho", deleted) == []
    with pytest.raises(inbound.Unparseable, match="ids"):
        _events("zoho", _with(ZOHO, ids="5725767000003000064"))


def test_a_dynamics_context_is_flattened_target_over_images() -> None:
    (event,) = _events("dynamics", DYNAMICS)
    assert (event.key, event.record_id) == (f"4af10637-4ea2-e711-8122-000d3aa2331c:{GLYNN}", GLYNN)
    assert event.payload["firstname"] == "James"
    assert event.payload["fullname"] == "James Glynn (sample)"
    assert event.payload["contactid"] == GLYNN
    assert event.payload["modifiedby"]["LogicalName"] == "systemuser"
    names = [{"key": "firstname", "value": "Jim"}, {"key": "lastname", "value": "Glynn"}]
    image = {"key": "pre", "value": {"Attributes": names}}
    (event,) = _events("dynamics", _with(DYNAMICS, PreEntityImages=[image]))
    assert (event.payload["firstname"], event.payload["lastname"]) == ("James", "Glynn")


def test_dynamics_events_of_other_entities_or_deletions_are_none() -> None:
    assert _events("dynamics", _with(DYNAMICS, PrimaryEntityName="account")) == []
    assert _events("dynamics", _with(DYNAMICS, MessageName="Delete")) == []
    with pytest.raises(inbound.Unparseable, match="OperationId"):
        _events("dynamics", _with(DYNAMICS, OperationId=None))


def test_platforms_without_events_are_refused() -> None:
    with pytest.raises(ValueError, match="marketo sends no events"):
        inbound.events("marketo", b"{}")


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (b'[{"eventId": 1, "subscriptionType": "contact.creation"}]', "webhooks-api"),
        (b'{"callbackId": "ap-1-2-3-0", "origin": {}, "object": {}}', "custom-action"),
        (b'{"vid": 501, "properties": {}}', "workflow"),
        (b"not json", "workflow"),
    ],
)
def test_a_hubspot_request_is_told_by_its_body(body: bytes, kind: str) -> None:
    assert inbound.hubspot_kind(body) == kind


def test_a_custom_actions_output_fields_leave_out_fields_without_a_value() -> None:
    """HubSpot types each output field: a number field refuses "", so nothing is sent."""
    fields = {"jobtitle": "CTO", "phone": "", "contactdata_employee_count": None,
              "contactdata_job_levels": [], "contactdata_record_status": "No Match"}  # fmt: skip
    assert inbound.action_succeeded(fields) == {
        "outputFields": {
            "jobtitle": "CTO",
            "contactdata_record_status": "No Match",
            "hs_execution_state": "SUCCESS",
        }
    }
