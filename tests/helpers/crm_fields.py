"""The field lists the fake CRMs answer, one builder a platform's field shape, shared by the
MockTransport fakes' tests (tests/test_fields_*.py) and the loopback FakeCrm: Salesforce's
DescribeFieldResult, Pipedrive's v2 field, Zoho's field meta, Dataverse's AttributeMetadata."""

from __future__ import annotations

import uuid
from typing import Any


def salesforce_field(name: str, type: str, label: str = "", **more: Any) -> dict[str, Any]:
    """A DescribeFieldResult (the REST API's describe of an sObject's field), trimmed to the
    properties the adapter reads and a few it does not."""
    return {"name": name, "label": label or name, "type": type, "length": 80,
            "updateable": True, "createable": True, "custom": name.endswith("__c"),
            "nillable": True, "calculated": False, "picklistValues": [], **more}  # fmt: skip


def salesforce_picklist(*values: str, inactive: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    return [{"active": value not in inactive, "defaultValue": False, "label": value.title(),
             "validFor": None, "value": value} for value in values]  # fmt: skip


def pipedrive_field(
    code: str, name: str, type: str, custom: bool = False, **more: Any
) -> dict[str, Any]:
    """A field as GET /api/v2/personFields lists it (GetPersonFields200ResponseDataInner)."""
    return {"field_code": code, "field_name": name, "field_type": type, "is_custom_field": custom,
            "is_optional_response_field": False, "options": None, "subfields": None,
            **more}  # fmt: skip


def zoho_field(api_name: str, label: str, data_type: str, **more: Any) -> dict[str, Any]:
    """A field as GET /crm/v7/settings/fields lists it (trimmed; tests/vendor/zoho.json)."""
    return {"api_name": api_name, "id": "3652397000000002589", "field_label": label,
            "display_label": label, "data_type": data_type, "json_type": "string",
            "custom_field": False, "read_only": False, "field_read_only": False, "length": 120,
            "operation_type": {"web_update": True, "api_create": True, "web_create": True,
                               "api_update": True},
            "pick_list_values": [], **more}  # fmt: skip


def zoho_value(actual: str, display: str) -> dict[str, Any]:
    return {"display_value": display, "actual_value": actual, "reference_value": display,
            "id": "3652397000000069001", "type": "used"}  # fmt: skip


def dataverse_label(text: str) -> dict[str, Any]:
    """A Label (LocalizedLabels and the user's UserLocalizedLabel)."""
    localized = {"Label": text, "LanguageCode": 1033, "IsManaged": True}
    return {"LocalizedLabels": [localized], "UserLocalizedLabel": localized}


def dataverse_attribute(
    name: str, type: str, display: str, metadata: str = "", **more: Any
) -> dict[str, Any]:
    """An AttributeMetadata as EntityDefinitions(...)/Attributes answers it (its MetadataId
    always, "Query table definitions using the Web API"; here one derived from its name)."""
    return {"@odata.type": f"#Microsoft.Dynamics.CRM.{metadata or type + 'AttributeMetadata'}",
            "MetadataId": str(uuid.uuid5(uuid.NAMESPACE_URL, f"dataverse:{name}")),
            "LogicalName": name, "SchemaName": name.title(), "AttributeType": type,
            "DisplayName": dataverse_label(display), "IsValidForCreate": True,
            "IsValidForUpdate": True, "IsCustomAttribute": False, **more}  # fmt: skip


def dataverse_options(*choices: tuple[int, str]) -> dict[str, Any]:
    return {
        "Options": [{"Value": value, "Label": dataverse_label(text)} for value, text in choices]
    }
