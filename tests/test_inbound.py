"""Reading what Pipedrive, Zoho and Dynamics send into events (pure): keys to deduplicate on,
record ids, payloads, and what is deliberately not an event."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from connector.platforms import PLATFORMS as DECLARED
from connector.platforms import hubspot
from connector.platforms.base import Event, Unparseable
from tests.helpers.constants import PLATFORMS

PIPEDRIVE = json.loads((PLATFORMS / "pipedrive_v2_person_updated.json").read_text())
ZOHO = json.loads((PLATFORMS / "zoho_webhook.json").read_text())
DYNAMICS = json.loads((PLATFORMS / "dynamics365_webhook_remote_execution_context.json").read_text())
GLYNN = "6d81597f-0f9f-e711-8122-000d3aa2331c"  # the Dynamics sample's contact
# A webhook v1 body (reconstructed: its keys as in real v1 captures, the person the v2
# sample's in v1's form): `event`, meta.object/action/id, `current` and the whole `previous`.
PIPEDRIVE_V1 = json.loads((PLATFORMS.parent / "pipedrive_v1_person_updated.json").read_text())
CUSTOM = "d4de1c1518b4531717c676029a45911c340390a6"  # a custom field's key


def _events(platform: str, document: Any) -> list[Event]:
    return DECLARED[platform].events(json.dumps(document).encode())


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
    with pytest.raises(Unparseable, match=r"meta\.id"):
        _events("pipedrive", _with(PIPEDRIVE, meta__id=""))


def test_a_pipedrive_v1_person_change_is_read_like_a_v2_one() -> None:
    """Webhooks v1 still exist in accounts: the person comes as v2's `data` (emails, phones,
    custom_fields) and `previous` holds only what changed, as v2's does."""
    (event,) = _events("pipedrive", PIPEDRIVE_V1)
    assert (event.key, event.record_id, event.thin) == (
        "v1:1234567:person:12:1750349256754000",
        "12",
        False,
    )
    meta, data = event.payload["meta"], event.payload["data"]
    assert (meta["action"], meta["entity"], meta["entity_id"], meta["change_source"]) == (
        "change",
        "person",
        "12",
        "app",
    )
    assert data["emails"] == PIPEDRIVE["data"]["emails"] and data["custom_fields"] == {CUSTOM: None}
    assert "email" not in data and CUSTOM not in data
    assert event.payload["previous"] == {
        "emails": [{"value": "", "primary": True}],
        "update_time": "2025-06-19 16:00:00",
    }


def test_a_pipedrive_v1_key_is_the_same_for_a_retry_and_another_for_the_next_change() -> None:
    (first,) = _events("pipedrive", PIPEDRIVE_V1)
    (retried,) = _events("pipedrive", _with(PIPEDRIVE_V1, retry=1))
    (later,) = _events("pipedrive", _with(PIPEDRIVE_V1, meta__timestamp_micro=1750349300000000))
    assert first.key == retried.key != later.key


def test_a_pipedrive_v1_addition_has_no_previous_and_a_custom_field_change_is_listed() -> None:
    added = _with(PIPEDRIVE_V1, event="added.person", meta__action="added", previous=None)
    assert _events("pipedrive", added)[0].payload["meta"]["action"] == "create"
    assert _events("pipedrive", added)[0].payload["previous"] is None
    changed = _with(PIPEDRIVE_V1, **{f"current__{CUSTOM}": "Acme", "meta__change_source": "api"})
    (event,) = _events("pipedrive", changed)
    assert event.payload["previous"]["custom_fields"] == {CUSTOM: None}
    assert event.payload["data"]["custom_fields"] == {CUSTOM: "Acme"}


@pytest.mark.parametrize(
    "changes",
    [
        {"event": "deleted.person", "meta__action": "deleted", "current": None},
        {"event": "updated.deal", "meta__object": "deal"},
    ],
    ids=["a deletion", "another entity"],
)
def test_pipedrive_v1_events_with_nothing_to_enrich_are_none(changes: dict[str, Any]) -> None:
    assert _events("pipedrive", _with(PIPEDRIVE_V1, **changes)) == []


@pytest.mark.parametrize(
    "body",
    [{"meta": {"id": "x"}}, {"meta": {"v": 1, "object": "person", "action": "updated"}}],
    ids=["neither v1 nor v2", "v1 without the person's id"],
)
def test_a_pipedrive_body_of_no_known_version_is_unparseable(body: dict[str, Any]) -> None:
    """Not a silent 200 that does nothing: 400, which shows in Pipedrive's webhook log."""
    with pytest.raises(Unparseable):
        _events("pipedrive", body)


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
    (lead,) = _events("zoho", ZOHO)  # the sample is a Leads channel's
    assert (lead.kind, lead.record_id) == ("leads", "5725767000003000064")
    assert _events("zoho", _with(ZOHO, module="Deals")) == []
    deleted = _with(ZOHO, module="Contacts", operation="delete")
    assert _events("zoho", deleted) == []
    with pytest.raises(Unparseable, match="ids"):
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
    assert _events("dynamics", _with(DYNAMICS, PrimaryEntityName="opportunity")) == []
    assert _events("dynamics", _with(DYNAMICS, MessageName="Delete")) == []
    with pytest.raises(Unparseable, match="OperationId"):
        _events("dynamics", _with(DYNAMICS, OperationId=None))


def test_platforms_without_events_are_refused() -> None:
    with pytest.raises(ValueError, match="marketo sends no events"):
        DECLARED["marketo"].events(b"{}")


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
    assert hubspot.hubspot_kind(body) == kind


def test_a_custom_actions_output_fields_leave_out_fields_without_a_value() -> None:
    """HubSpot types each output field: a number field refuses "", so nothing is sent."""
    fields = {"jobtitle": "CTO", "phone": "", "contactdata_employee_count": None,
              "contactdata_job_levels": [], "contactdata_record_status": "No Match"}  # fmt: skip
    assert hubspot.action_succeeded(fields) == {
        "outputFields": {
            "jobtitle": "CTO",
            "contactdata_record_status": "No Match",
            "hs_execution_state": "SUCCESS",
        }
    }
