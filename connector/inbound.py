"""What platforms send, read into events: the platform's event id (to deduplicate on), the CRM
record's id when the payload names it, and the record's fields as the mapping reads them.
Pure: verified raw bytes in, events out; `Unparseable` when the bytes are not what the
platform sends.

- HubSpot workflow "Send a webhook" (a full contact, `vid` and `properties`): one event, keyed
  by portal, contact and a hash of the body (HubSpot gives no event id).
- HubSpot Webhooks API (a JSON array of thin events): one event each, keyed by subscription,
  event id, time and object (HubSpot says `eventId` alone is not unique); the record must be
  fetched before enriching.
- HubSpot custom workflow action execution requests: keyed by `callbackId`.
- Salesforce Outbound Messages (SOAP): one event per `Notification`, keyed by its `Id`; the
  organization id comes along, for the allow-list.
- Pipedrive webhooks v2 (`meta`, `data`, `previous`): one event per person created or
  changed, keyed by `meta.id`. A v1 body (`event`, `current`, `previous`) is read as v2's,
  keyed by webhook, person and time, `previous` cut down to the fields that changed (the
  worker recognizes our own writes by them).
- Zoho CRM Notification API callbacks (ids only): one thin event per Contact id, keyed by
  channel, server time and id.
- Dynamics 365 / Dataverse webhooks (a RemoteExecutionContext): one event per contact
  created or updated, keyed by OperationId and record, its columns flattened.

Zapier, Make, n8n and Marketo send no events: they call the enrich URL and use its answer.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException

from server.wire import UnreadableJson, decode_json

_SOAP = "{http://schemas.xmlsoap.org/soap/envelope/}"
_OUTBOUND = "{http://soap.sforce.com/2005/09/outbound}"
_NIL = "{http://www.w3.org/2001/XMLSchema-instance}nil"
SALESFORCE_ACK = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n'
    b'<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">'
    b'<soapenv:Body><notificationsResponse xmlns="http://soap.sforce.com/2005/09/outbound">'
    b"<Ack>true</Ack></notificationsResponse></soapenv:Body></soapenv:Envelope>"
)


# HubSpot custom workflow actions: the workflow waits for a BLOCKed action until we complete
# it through the callback API, or until this ISO-8601 duration has passed (HubSpot's default).
ACTION_EXPIRES_AFTER = "P7D"


def action_succeeded(fields: dict[str, Any]) -> dict[str, Any]:
    """A custom action's answer (or callback completion) carrying the enriched fields, those
    without a value left out: HubSpot types each output field (a number field refuses "",
    an enumeration refuses a value not among its options), and an output not given is empty."""
    given = {name: value for name, value in fields.items() if value not in ("", None, [])}
    return {"outputFields": {**given, "hs_execution_state": "SUCCESS"}}


def action_failed(message: str) -> dict[str, Any]:
    """A custom action's answer when nothing could be enriched: the workflow goes on, told why
    in the output field `contactdata_error`."""
    return {"outputFields": {"hs_execution_state": "FAIL_CONTINUE", "contactdata_error": message}}


def action_blocked() -> dict[str, Any]:
    """A custom action's answer when the enrichment will come later, through the callback."""
    state = {"hs_execution_state": "BLOCK", "hs_expiration_duration": ACTION_EXPIRES_AFTER}
    return {"outputFields": state}


def hubspot_kind(body: bytes) -> str:
    """What a HubSpot request is, by its body: "webhooks-api" (a subscription's batch, a JSON
    array), "custom-action" (a custom workflow action's execution request) or "workflow" (a
    workflow's "Send a webhook", anything else)."""
    try:
        document = decode_json(body)
    except UnreadableJson:
        return "workflow"
    if isinstance(document, list):
        return "webhooks-api"
    return "custom-action" if is_action(document) else "workflow"


def is_action(payload: Any) -> bool:
    """Whether an event is a HubSpot custom action's execution request."""
    return isinstance(payload, dict) and "callbackId" in payload


class Unparseable(ValueError):
    """A body that is not what the platform sends; the message says what was wrong."""


@dataclass(frozen=True)
class Event:
    """One change of one CRM record, as the platform reported it."""

    key: str
    record_id: str
    payload: dict[str, Any]
    thin: bool = False  # only ids: the record must be read from the CRM first
    source: dict[str, str] = field(default_factory=dict)  # e.g. Salesforce's OrganizationId


def events(platform: str, body: bytes) -> list[Event]:
    """The events in a verified request body from `platform` (a CRM)."""
    if platform == "salesforce":
        return salesforce_events(body)
    if platform == "hubspot":
        return hubspot_events(_json(body), body)
    readers = {"pipedrive": pipedrive_events, "zoho": zoho_events, "dynamics": dynamics_events}
    if platform not in readers:
        raise ValueError(f"{platform} sends no events")
    document = _json(body)
    if not isinstance(document, dict):
        raise Unparseable("the body must be a JSON object")
    return readers[platform](document)


def pipedrive_events(document: dict[str, Any]) -> list[Event]:
    """A webhook body, v2 or v1 (read as v2): one event, keyed by `meta.id`, for a person
    created or changed (deletions and other entities have nothing to enrich: none)."""
    if _pipedrive_v1(document):
        document = _pipedrive_as_v2(document)
    meta, data = document.get("meta"), document.get("data")
    if not isinstance(meta, dict) or not meta.get("id"):
        raise Unparseable("a Pipedrive webhook v2 body needs meta.id")
    if "entity" not in meta:
        raise Unparseable("a Pipedrive webhook body names its entity (v2 meta.entity)")
    if meta.get("entity") != "person" or meta.get("action") == "delete":
        return []
    if not isinstance(data, dict):
        raise Unparseable("a Pipedrive person event needs its data")
    record_id = str(data.get("id") or meta.get("entity_id") or "")
    return [Event(str(meta["id"]), record_id, document)]


# Webhooks v1 (`event: "updated.person"`, meta.object/action, `current` and the whole
# `previous`) still run in accounts made before v2 became the default (2025-03-17).
_PIPEDRIVE_V1_ACTIONS = {"added": "create", "updated": "change", "merged": "change",
                         "deleted": "delete"}  # fmt: skip
_PIPEDRIVE_CUSTOM_FIELD = re.compile(r"[0-9a-f]{40}")  # v1 puts them beside the others


def _pipedrive_v1(document: dict[str, Any]) -> bool:
    meta = document.get("meta")
    v1_meta = isinstance(meta, dict) and "object" in meta and "entity" not in meta
    return v1_meta or "current" in document or "event" in document


def _pipedrive_as_v2(document: dict[str, Any]) -> dict[str, Any]:
    """A v1 body as v2 sends it: the person as `data` (`emails`, `phones`, `custom_fields`)
    and `previous` only the fields that changed."""
    meta = document["meta"] if isinstance(document.get("meta"), dict) else {}
    action, _, entity = str(document.get("event", "")).partition(".")
    current, previous = (_pipedrive_person(document.get(k)) for k in ("current", "previous"))
    record_id = (current or previous or {}).get("id") or meta.get("id")
    if not record_id:
        raise Unparseable("a Pipedrive webhook v1 body needs meta.id or current.id")
    entity = str(meta.get("object") or entity)
    v2_meta = {
        **{name: meta[name] for name in ("change_source", "user_id", "webhook_id") if name in meta},
        "id": _pipedrive_v1_key(meta, entity, record_id, current), "entity": entity,
        "entity_id": str(record_id), "version": "1.0",
        "action": _PIPEDRIVE_V1_ACTIONS.get(str(meta.get("action") or action), action),
    }  # fmt: skip
    changed = _pipedrive_changes(current, previous) if current and previous else None
    return {"meta": v2_meta, "data": current, "previous": changed}


def _pipedrive_v1_key(meta: dict[str, Any], entity: str, record_id: Any, current: Any) -> str:
    """A v1 event's id (v1 has none): the webhook, the record and the change's time, which a
    retry keeps (or, without a time, the record's values)."""
    times = (meta.get(name) for name in ("timestamp_micro", "timestamp_milli", "timestamp"))
    stamp = next((t for t in times if t), None)
    if stamp is None:
        stamp = _digest(json.dumps(current, sort_keys=True).encode())
    return f"v1:{meta.get('webhook_id', '')}:{entity}:{record_id}:{stamp}"


def _pipedrive_person(person: Any) -> dict[str, Any] | None:
    """A v1 person in v2's shape: `email`/`phone` as `emails`/`phones`, custom fields (keyed
    by their 40-character hash) under `custom_fields`."""
    if not isinstance(person, dict):
        return None
    custom = {k: v for k, v in person.items() if _PIPEDRIVE_CUSTOM_FIELD.fullmatch(k)}
    renamed = {"email": "emails", "phone": "phones"}
    fields = {renamed.get(k, k): v for k, v in person.items() if k not in custom}
    return {**fields, "custom_fields": custom}


def _pipedrive_changes(current: dict[str, Any], previous: dict[str, Any]) -> dict[str, Any]:
    """The fields whose value changed, with the value before (v2's `previous`)."""
    changed = {k: previous.get(k) for k, v in current.items()
               if k != "custom_fields" and v != previous.get(k)}  # fmt: skip
    before = previous["custom_fields"]
    custom = {k: before.get(k) for k, v in current["custom_fields"].items() if v != before.get(k)}
    return {**changed, "custom_fields": custom} if custom else changed


def zoho_events(document: dict[str, Any]) -> list[Event]:
    """A Notification API callback: one thin event per id, keyed by channel, time and id;
    modules other than Contacts (a channel watching Leads too) and deletions give none."""
    ids = document.get("ids")
    if not isinstance(ids, list) or not all(isinstance(i, str | int) for i in ids):
        raise Unparseable("a Zoho notification needs its ids")
    if document.get("module") != "Contacts" or document.get("operation") == "delete":
        return []
    channel, sent = document.get("channel_id", ""), document.get("server_time", "")
    fields = {name: document.get(name) for name in ("module", "operation", "channel_id")}
    return [
        Event(f"{channel}:{sent}:{record_id}", str(record_id), {"id": str(record_id), **fields},
              thin=True)
        for record_id in ids
    ]  # fmt: skip


def dynamics_events(document: dict[str, Any]) -> list[Event]:
    """A Dataverse webhook's RemoteExecutionContext: one event for a contact created or
    updated, keyed by the operation and the record, its columns flattened from the images
    and the Target (which wins), by logical name."""
    record_id = str(document.get("PrimaryEntityId") or "")
    if not record_id or not document.get("OperationId"):
        raise Unparseable("a RemoteExecutionContext needs OperationId and PrimaryEntityId")
    if document.get("PrimaryEntityName") != "contact" or document.get("MessageName") == "Delete":
        return []
    columns: dict[str, Any] = {}
    for image in (*_values(document.get("PreEntityImages")),
                  *_values(document.get("PostEntityImages")),
                  *_values(document.get("InputParameters"), "Target")):  # fmt: skip
        if isinstance(image, dict):
            columns.update(_key_values(image.get("Attributes")))
    columns["contactid"] = record_id
    return [Event(f"{document['OperationId']}:{record_id}", record_id, columns)]


def _key_values(items: Any) -> dict[str, Any]:
    """DataContract JSON's [{"key": k, "value": v}, ...] as a dict."""
    pairs = items if isinstance(items, list) else []
    return {
        item["key"]: item.get("value") for item in pairs if isinstance(item, dict) and "key" in item
    }


def _values(items: Any, key: str | None = None) -> list[Any]:
    """The values of a [{"key", "value"}] list (only `key`'s, when given)."""
    pairs = _key_values(items)
    return list(pairs.values()) if key is None else [pairs[key]] if key in pairs else []


def hubspot_events(document: Any, body: bytes) -> list[Event]:
    """A Webhooks API batch, a workflow webhook's contact, or a custom action's request."""
    if isinstance(document, list):
        return [_hubspot_subscription_event(item) for item in document]
    if not isinstance(document, dict):
        raise Unparseable("the body must be a JSON object or array")
    if is_action(document):
        record = document.get("object") or {}
        return [Event(str(document["callbackId"]), str(record.get("objectId", "")), document)]
    if "vid" in document:
        key = f"{document.get('portal-id', '')}:{document['vid']}:{_digest(body)}"
        return [Event(key, str(document["vid"]), document)]
    return [Event(_digest(body), str(document.get("hs_object_id", "")), document)]


def _hubspot_subscription_event(item: Any) -> Event:
    if not isinstance(item, dict) or "objectId" not in item or "eventId" not in item:
        raise Unparseable("each event of a HubSpot batch needs eventId and objectId")
    parts = (item.get("subscriptionId"), item["eventId"], item.get("occurredAt"), item["objectId"])
    key = ":".join(str(part) for part in parts)
    return Event(key, str(item["objectId"]), item, thin=True)


def salesforce_events(body: bytes) -> list[Event]:
    """The notifications of an Outbound Message, each with its sObject's fields."""
    try:
        root = ElementTree.fromstring(body)
    except (ElementTree.ParseError, DefusedXmlException) as error:
        raise Unparseable(f"the body is not a SOAP message: {error}") from None
    notifications = root.find(f"{_SOAP}Body/{_OUTBOUND}notifications")
    if notifications is None:
        raise Unparseable("the SOAP body holds no Outbound Message notifications")
    organization = notifications.findtext(f"{_OUTBOUND}OrganizationId", "").strip()
    found = [
        _salesforce_event(item, organization)
        for item in notifications.findall(f"{_OUTBOUND}Notification")
    ]
    if not found:
        raise Unparseable("the Outbound Message holds no Notification")
    return found


def _salesforce_event(notification: Any, organization: str) -> Event:
    key = notification.findtext(f"{_OUTBOUND}Id", "").strip()
    record = notification.find(f"{_OUTBOUND}sObject")
    if not key or record is None:
        raise Unparseable("a Notification needs an Id and an sObject")
    fields: dict[str, Any] = {
        child.tag.rsplit("}", 1)[-1]: (child.text or "").strip()
        for child in record
        if child.get(_NIL) != "true"
    }
    sobject_type = record.get("{http://www.w3.org/2001/XMLSchema-instance}type", "")
    fields["attributes"] = {"type": sobject_type.rsplit(":", 1)[-1]}
    return Event(key, fields.get("Id", ""), fields, source={"OrganizationId": organization})


def _json(body: bytes) -> Any:
    try:
        return decode_json(body)
    except UnreadableJson as error:
        raise Unparseable(f"the body is not JSON: {error}") from None


def _digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()
