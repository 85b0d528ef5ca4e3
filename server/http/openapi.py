"""The service's OpenAPI 3.1 document and the `GET /openapi.json` route that serves it.

Request bodies come from the pydantic models the handlers validate with, or, where a handler
validates by hand (enrich), from the constants it checks against; paths and methods come from
the app's own URL map, so the document cannot name a route the app lacks. The connector adds
its /hooks routes through `add_operations`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from flask import Flask, Response, current_app, jsonify
from pydantic import BaseModel

from server import admin, change_feed, changes, discover, enrich, errors, wire
from server.config import MAX_BODY_BYTES
from server.http import access, admin_api, changes_api, discover_api, enrich_api

OPENAPI_VERSION = "3.1.0"
Schema = dict[str, Any]
_PLACEHOLDER = re.compile(r"<(?:(?P<converter>[^:<>]+):)?(?P<name>[^<>]+)>")
_CONVERTER_TYPES = {"int": "integer", "float": "number"}
_AUTOMATIC_METHODS = frozenset({"HEAD", "OPTIONS"})  # werkzeug adds them to every rule
ERROR_RESPONSE = "#/components/schemas/ErrorResponse"
RETRY_AFTER_STATUSES = frozenset({429, 503})  # answers that say when to try again


def ref(name: str) -> Schema:
    """A reference to a schema of the document's components."""
    return {"$ref": f"#/components/schemas/{name}"}


def json_content(schema: Schema, other_media: Mapping[str, Schema] | None = None) -> Schema:
    """A media-type map holding one JSON schema, and the schemas of any other media types."""
    media = {"application/json": schema, **(other_media or {})}
    return {name: {"schema": schema} for name, schema in media.items()}


@dataclass(frozen=True)
class Operation:
    """What the document says of one route: its request, its answers and how it is called.

    `key_header` is the header the endpoint's vendor documentation shows first (None: no
    key); `errors` the statuses of contract §2 the route can answer with, each rendered as
    the one ErrorResponse shape; `described` the route's own words for some of them, and
    `retry_after` those of them, besides RETRY_AFTER_STATUSES, that say when to try again.
    """

    summary: str
    tag: str
    ok: Schema
    errors: tuple[int, ...]
    body: Schema | None = None
    key_header: str | None = None
    description: str = ""
    ok_headers: tuple[str, ...] = ()
    error_headers: tuple[str, ...] = ()
    other_media: dict[str, Schema] = field(default_factory=dict)  # body and answer, e.g. XML
    security: list[Schema] | None = None  # instead of the key headers'
    parameters: tuple[Schema, ...] = ()  # header parameters
    described: dict[int, str] = field(default_factory=dict)
    retry_after: tuple[int, ...] = ()


# --- components ------------------------------------------------------------------------------


def model_schemas(models: Mapping[str, type[BaseModel]]) -> dict[str, Schema]:
    """Pydantic models' JSON schemas by name, with the models they nest beside them."""
    schemas: dict[str, Schema] = {}
    for name, model in models.items():
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[name] = schema
    return schemas


# Read only when no key header is sent, and only when a string: anything else counts as absent.
_BODY_KEY = {"description": "The API key, when no header carries one."}


def enrich_input_schema() -> Schema:
    """An enrich input record: every name `enrich.parse_input` reads, strings (null = absent)
    of at most MAX_VALUE_CHARS; which combinations identify a record is said in prose."""
    text = {"type": ["string", "null"], "maxLength": enrich.MAX_VALUE_CHARS}
    properties = {name: dict(text) for name in (*enrich.INPUT_FIELDS, "recordId")}
    properties["apikey"] = _BODY_KEY
    return {
        "type": "object",
        "description": (
            "At least one identifier: a company name, web address, profile URL or GUID, or a "
            "contact e-mail, profile URL or GUID (a contact's name counts only with a company "
            "name or web address). When both names of a field are sent, the older one is used."
        ),
        "properties": properties,
    }


def enrich_result_schema() -> Schema:
    """The flat result: every `enrich.OUTPUT_FIELDS` field, always present, always a string."""
    return {
        "type": "object",
        "properties": {name: {"type": "string"} for name in enrich.OUTPUT_FIELDS},
        "required": list(enrich.OUTPUT_FIELDS),
        "additionalProperties": False,
    }


def _message_and(data: Schema) -> Schema:
    return {
        "type": "object",
        "properties": {"message": {"type": "string"}, "data": data},
        "required": ["message", "data"],
    }


def _strings(*names: str) -> dict[str, Schema]:
    return {name: {"type": "string"} for name in names}


def _admin_schemas() -> dict[str, Schema]:
    """Key, User and Organization as `admin_api` shapes them."""
    stamp = {"type": "string", "format": "date-time"}
    return {
        "Key": {
            "type": "object",
            "properties": {
                **_strings("keyId", "email", "apiKey"),
                "role": {"enum": ["admin", "standard"]},
                "status": {"enum": ["active", "suspended"]},
                "createdAt": stamp,
                "lastUsedAt": {"type": ["string", "null"]},
                "previousKeyExpiresAt": stamp,
            },
            "required": ["keyId", "email", "role", "status", "apiKey", "createdAt"],
        },
        "Organization": {
            "type": "object",
            "properties": {
                **_strings("orgId", "orgName", "website", "cleanedWebsite"),
                "status": {"enum": ["active", "inactive"]},
                "dailyRateLimit": {"type": "integer"},
                "qpsLimit": {"type": "integer"},
                "createdAt": stamp,
                "updatedAt": stamp,
                "adminApiKey": {"type": "null"},
            },
            "required": ["orgId", "orgName", "status", "dailyRateLimit", "qpsLimit"],
        },
        "User": {
            "type": "object",
            "properties": {
                **_strings("userId", "email", "role"),
                "organization": ref("Organization"),
                "status": {"enum": ["active", "suspend", "deleted"]},
                "createdAt": stamp,
                "updatedAt": stamp,
                "apiKey": {"type": ["array", "null"], "items": {"type": "string"}},
            },
            "required": ["userId", "organization", "email", "role", "status", "apiKey"],
        },
    }


def _discover_schemas() -> dict[str, Schema]:
    """A page of people, and the Stats answer, as `discover` shapes them."""
    count = {"type": "integer", "minimum": 0}
    listed = {"type": "array", "items": {"type": "string"}}
    return {
        "DiscoverContact": {
            "type": "object",
            "properties": {
                **_strings(
                    *"contact_guid contact_full_name contact_first_name contact_last_name "
                    "contact_job_title contact_email contact_accuracy contact_profile_url".split()
                ),
                "contact_level": listed,
                "contact_function": listed,
                "contact_sub_function": listed,
                "distance_miles": {"type": "number"},
            },
            "required": ["contact_guid", "contact_full_name", "contact_accuracy"],
        },
        "DiscoverPage": {
            "type": "object",
            "properties": {
                "company_guid": {"type": "string"},
                "total_count": count,
                "page_number": {"type": "integer", "minimum": 1},
                "page_size": {"type": "integer", "minimum": 1},
                "total_pages": count,
                "contacts": {"type": "array", "items": ref("DiscoverContact")},
            },
            "required": ["company_guid", "total_count", "contacts"],
        },
        "DiscoverStats": {
            "type": "object",
            "properties": {
                "company_guid": {"type": "string"},
                "total_count": count,
                "by_level": {"type": "object", "additionalProperties": count},
                "by_function": {"type": "object", "additionalProperties": count},
            },
            "required": ["company_guid", "total_count", "by_level", "by_function"],
            "additionalProperties": False,  # no contacts: what tells it from a page
        },
    }


def _change_schemas() -> dict[str, Schema]:
    """A change and a page of them, as `change_feed` shapes them."""
    values = {
        "type": "object",
        "description": "The fields of the kind of change, in enrich's field names (compGUID, "
        "compName, conJobTitleEn, conEmail, conWorkLocPhoneNo, directDial1, directDial2, "
        "conWorkLocCity, conWorkLocState, conWorkLocCountry, compEmpCount, compRevRange, ...); "
        "leftOn and startedOn are dates (YYYY-MM-DD).",
        "additionalProperties": True,
    }
    return {
        "Change": {
            "type": "object",
            "properties": {
                "changeNumber": {"type": "integer", "minimum": 1},
                "kind": {"enum": list(changes.KINDS)},
                "conGUID": {"type": "string", "description": "'' for a company's change."},
                "compGUID": {"type": "string"},
                "before": values,
                "after": values,
                "changedOn": {
                    "type": "string",
                    "description": "When it happened as the data says (YYYY-MM-DD, the first "
                    "of the month the data gives), or ''.",
                },
                "recordedAt": {"type": "string", "description": "When the import found it."},
            },
            "required": [
                *"changeNumber kind conGUID compGUID before after changedOn recordedAt".split()
            ],
        },
        "ChangesPage": {
            "type": "object",
            "properties": {
                "changes": {"type": "array", "items": ref("Change")},
                "nextAfter": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "Send it as `after` for the next page.",
                },
                "hasMore": {"type": "boolean"},
            },
            "required": ["changes", "nextAfter", "hasMore"],
        },
    }


def _bulk_schemas() -> dict[str, Schema]:
    return {
        "EnrichBulkRequest": {
            "type": "object",
            "properties": {
                "records": {
                    "type": "array",
                    "description": "Each record is answered on its own: one that is not a valid "
                    "EnrichInput gets a 400 entry in results, and the call is still a 200.",
                    "items": {"anyOf": [ref("EnrichInput"), {}]},
                    "minItems": 1,
                    "maxItems": enrich.MAX_BULK_RECORDS,
                },
                "apikey": _BODY_KEY,
            },
            "required": ["records"],
        },
        "EnrichBulkEntry": {
            "type": "object",
            "properties": {
                "status": {"type": "integer"},
                "smarteTransactionId": {"type": "string"},
                "data": ref("EnrichResult"),
                "error": ref("ErrorDetail"),
            },
            "required": ["status", "smarteTransactionId"],
        },
    }


def error_schemas() -> dict[str, Schema]:
    """Contract §2: one shape for every error, nothing more in it."""
    return {
        "ErrorDetail": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "pattern": "^[a-z][a-z_]*$"},
                "message": {"type": "string", "minLength": 1},
                "status": {"type": "integer", "minimum": 400, "maximum": 599},
            },
            "required": ["code", "message", "status"],
            "additionalProperties": False,
        },
        "ErrorResponse": {
            "type": "object",
            "properties": {"error": ref("ErrorDetail")},
            "required": ["error"],
            "additionalProperties": False,
        },
    }


def request_schemas() -> dict[str, Schema]:
    """Every request body, under the names the operations use."""
    models: dict[str, type[BaseModel]] = {
        "EmailBody": admin_api.EmailBody,
        "OptionalEmailBody": admin_api.OptionalEmailBody,
        "KeyUpdateBody": admin_api.KeyUpdateBody,
        "UserUpdateBody": admin_api.UserUpdateBody,
        "EmptyBody": admin_api.EmptyBody,
        "DiscoverRequest": discover.DiscoverRequest,
        "ChangesRequest": change_feed.ChangesRequest,
    }
    schemas = model_schemas(models)
    schemas["KeyUpdateBody"]["properties"]["action"]["examples"] = list(admin.KEY_ACTIONS)
    schemas["UserUpdateBody"]["properties"]["action"]["examples"] = list(admin.USER_ACTIONS)
    schemas["EnrichInput"] = enrich_input_schema()
    return schemas


def components() -> dict[str, Any]:
    """Schemas, response headers and the key headers of contract §1 as security schemes."""
    return {
        "schemas": {
            **error_schemas(),
            **request_schemas(),
            "EnrichResult": enrich_result_schema(),
            **_bulk_schemas(),
            **_admin_schemas(),
            **_discover_schemas(),
            **_change_schemas(),
        },
        "headers": HEADERS,
        "securitySchemes": {
            name: {
                "type": "apiKey",
                "in": "header",
                "name": name,
                "description": "An API key. Header names are case-insensitive and '-' and '_' "
                "are one character to the server: API_KEY and Admin_Api_Key work too.",
            }
            for name in access.KEY_HEADERS
        },
    }


HEADERS: dict[str, Schema] = {
    "X-Request-Id": {
        "description": "The caller's X-Request-Id, echoed, or one made for the request.",
        "required": True,
        "schema": {"type": "string", "minLength": 1},
    },
    "smarteTransactionId": {
        "description": "The transaction of this enrich call, errors included.",
        "required": True,
        "schema": {"type": "string", "minLength": 1},
    },
    "credits-deducted": {
        "description": "Credits this call cost (0 on errors).",
        "required": True,
        "schema": {"type": "string", "pattern": "^[0-9]+$"},
    },
    "Retry-After": {
        "description": "Seconds to wait before trying again.",
        "required": True,
        "schema": {"type": "string", "pattern": "^[0-9]+$"},
    },
    enrich_api.REPLAYED_HEADER: {
        "description": f"On answers to a request with an {enrich_api.IDEMPOTENCY_HEADER}: true "
        "when this is the answer kept for an earlier copy (given again, charged nothing), else "
        "false.",
        "schema": {"enum": ["true", "false"]},
    },
}

IDEMPOTENCY_KEY: Schema = {
    "name": enrich_api.IDEMPOTENCY_HEADER,
    "in": "header",
    "required": False,
    "description": "Answer this request once (draft-ietf-httpapi-idempotency-key-header): a "
    "copy sent within 24 hours by the same organization to the same endpoint, with the same "
    "key and the same body (byte for byte), gets the first answer again, with its "
    "smarteTransactionId, credits-deducted 0 and Idempotent-Replayed true. Only 2xx answers "
    "are kept: a refused request's copy is tried afresh. A UUID will do.",
    "schema": {"type": "string", "pattern": f"^{enrich_api.IDEMPOTENCY_KEY_PATTERN}$"},
}
# What an enrich route with an Idempotency-Key adds to ERROR_DESCRIPTIONS.
IDEMPOTENCY_ERRORS = {
    409: "request_in_progress: a copy with this Idempotency-Key is still being answered; send "
    "it again after Retry-After.",
    422: "idempotency_key_reused: this Idempotency-Key came with another body in the last 24 "
    "hours.",
}


# --- operations ------------------------------------------------------------------------------

ERROR_DESCRIPTIONS = {
    400: "invalid_json (not a JSON object, or not I-JSON: NaN, a lone surrogate, nested over "
    f"{wire.MAX_NESTING} deep), invalid_parameter (names the field) or missing_identifier.",
    401: "unauthorized (no key) or invalid_api_key (unknown, malformed or rotated out).",
    402: "insufficient_credits.",
    403: f"One of {', '.join(errors.Forbidden.CODES)}.",
    404: "not_found: no such object in the caller's organization.",
    409: "not_eligible or already_exists.",
    413: f"payload_too_large: the body is over {MAX_BODY_BYTES} bytes.",
    415: "unsupported_media_type: Content-Type is not application/json.",
    429: "rate_limit_exceeded: over the qps, daily or per-minute limit.",
    500: "internal_error: logged with the request id.",
}
_WIRE = (413, 415, 429, 500)  # every keyed JSON endpoint: body size, media type, limits
_KEYED = (400, 401, 403, *_WIRE)


def _admin_operation(
    summary: str, body: str, ok: Schema, header: str, more: tuple[int, ...]
) -> Operation:
    return Operation(
        summary=summary,
        tag="administration",
        body=ref(body),
        ok=_message_and(ok),
        errors=tuple(sorted((*_KEYED, *more))),
        key_header=header,
    )


def _admin_operations() -> dict[str, Operation]:
    """The /signals/v1 routes: summary, body, `data` of the answer, key header, statuses."""
    key, user = admin_api.KEY_HEADER, admin_api.USER_KEY_HEADER
    keys_or_key = {"oneOf": [ref("Key"), {"type": "array", "items": ref("Key")}]}
    users = {"type": "array", "items": ref("User")}
    routes = {
        "admin.create_key": ("Create a standard key for an e-mail address (its value is "
                             "shown this once).", "EmailBody", ref("Key"), key, (409,)),
        "admin.view_keys": ("All keys of the organization ({}), or the key of one e-mail "
                            "address.", "OptionalEmailBody", keys_or_key, key, (404,)),
        "admin.update_key": ("Suspend, activate (or active) or rotate a key.",
                             "KeyUpdateBody", ref("Key"), key, (404, 409)),
        "admin.create_user": ("Register a user with its own key (its value is shown this "
                              "once).", "EmailBody", ref("User"), user, (409,)),
        "admin.view_users": ("Every user of the organization (key values never shown).",
                             "EmptyBody", users, user, ()),
        "admin.update_user": ("Suspend, reactivate (active or activate) or delete a user.",
                              "UserUpdateBody", ref("User"), user, (404, 409)),
    }  # fmt: skip
    return {endpoint: _admin_operation(*route) for endpoint, route in routes.items()}


def service_operations() -> dict[str, Operation]:
    """Every route of the service by its Flask endpoint name."""
    enrich_headers = ("smarteTransactionId", "credits-deducted")
    enrich_answers: dict[str, Any] = {
        "errors": tuple(sorted((*_KEYED, 402, *IDEMPOTENCY_ERRORS))),
        "key_header": enrich_api.KEY_HEADER,
        "ok_headers": (*enrich_headers, enrich_api.REPLAYED_HEADER),
        "error_headers": enrich_headers,
        "parameters": (IDEMPOTENCY_KEY,),
        "described": IDEMPOTENCY_ERRORS,
        "retry_after": (409,),
    }
    return {
        "api.healthz": Operation(
            summary="Liveness and readiness: the database answers.",
            tag="health",
            ok={
                "type": "object",
                "properties": {"status": {"const": "ok"}, "organizations": {"type": "integer"}},
                "required": ["status", "organizations"],
            },
            errors=(500,),
        ),
        **_admin_operations(),
        "enrich.enrich_record": Operation(
            summary="Enrich one input record: the flat result object, or No Match.",
            tag="data",
            body=ref("EnrichInput"),
            ok=ref("EnrichResult"),
            **enrich_answers,
        ),
        "enrich.enrich_bulk": Operation(
            summary=f"Enrich 1 to {enrich.MAX_BULK_RECORDS} records, each answered on its own.",
            tag="data",
            body=ref("EnrichBulkRequest"),
            ok={
                "type": "object",
                "properties": {"results": {"type": "array", "items": ref("EnrichBulkEntry")}},
                "required": ["results"],
            },
            **enrich_answers,
        ),
        "discover.discover_people": Operation(
            summary="A company's people matching the filters (Discover), or their counts (Stats).",
            tag="data",
            body=ref("DiscoverRequest"),
            ok=_message_and({"oneOf": [ref("DiscoverPage"), ref("DiscoverStats")]}),
            errors=tuple(sorted((*_KEYED, 404))),
            key_header=discover_api.KEY_HEADER,
        ),
        "changes.list_changes": Operation(
            summary="Changes to the contacts and companies the organization was delivered by "
            "enrich, a page at a time. Costs no credits.",
            tag="data",
            body=ref("ChangesRequest"),
            ok=_message_and(ref("ChangesPage")),
            errors=_KEYED,
            key_header=changes_api.KEY_HEADER,
            description="What each import of updated data changed (a job ended or began; a "
            "title, e-mail, phone or location changed; a company's firmographics changed), "
            "oldest first, numbered: page with `after` = the last page's `nextAfter`. Only "
            "changes of contacts the caller's organization was delivered (and of companies it "
            f"was delivered a contact at). At most {change_feed.MAX_GUIDS} conGUIDs and "
            f"{change_feed.MAX_PAGE_SIZE} changes a page; rate-limited as enrich; free.",
        ),
    }


def security(preferred: str, schemes: tuple[str, ...] = access.KEY_HEADERS) -> list[Schema]:
    """Any one key header, the endpoint's own first."""
    return [{name: []} for name in (preferred, *(s for s in schemes if s != preferred))]


def _header_refs(names: tuple[str, ...]) -> dict[str, Schema]:
    return {name: {"$ref": f"#/components/headers/{name}"} for name in ("X-Request-Id", *names)}


def error_response(status: int, description: str, headers: tuple[str, ...] = ()) -> Schema:
    """An error answer: always the one ErrorResponse shape (contract §2)."""
    if status in RETRY_AFTER_STATUSES:
        headers = (*headers, "Retry-After")
    return {
        "description": description,
        "headers": _header_refs(headers),
        "content": json_content({"$ref": ERROR_RESPONSE}),
    }


def render(
    operation: Operation, operation_id: str, descriptions: Mapping[int, str] = ERROR_DESCRIPTIONS
) -> Schema:
    """The OpenAPI operation object of one route."""
    descriptions = {**descriptions, **operation.described}
    rendered: Schema = {
        "operationId": operation_id,
        "summary": operation.summary,
        "tags": [operation.tag],
        "responses": {
            "200": {
                "description": "OK",
                "headers": _header_refs(operation.ok_headers),
                "content": json_content(operation.ok, operation.other_media),
            },
            **{
                str(status): error_response(
                    status, descriptions[status], _error_headers(operation, status)
                )
                for status in operation.errors
            },
        },
    }
    if operation.parameters:
        rendered["parameters"] = list(operation.parameters)
    if operation.description:
        rendered["description"] = operation.description
    if operation.body is not None:
        content = json_content(operation.body, operation.other_media)
        rendered["requestBody"] = {"required": True, "content": content}
    if operation.security is not None:
        rendered["security"] = operation.security
    else:
        rendered["security"] = security(operation.key_header) if operation.key_header else []
    return rendered


def _error_headers(operation: Operation, status: int) -> tuple[str, ...]:
    retry = ("Retry-After",) if status in operation.retry_after else ()
    return (*operation.error_headers, *retry)


def openapi_path(rule: str) -> tuple[str, list[Schema]]:
    """A werkzeug rule as an OpenAPI path template, and its path parameters."""
    parameters = [
        {
            "name": found["name"],
            "in": "path",
            "required": True,
            "schema": {"type": _CONVERTER_TYPES.get(found["converter"] or "", "string")},
        }
        for found in _PLACEHOLDER.finditer(rule)
    ]
    return _PLACEHOLDER.sub(lambda found: "{" + found["name"] + "}", rule), parameters


def add_operations(
    document: Schema,
    app: Flask,
    operations: Mapping[str, Operation],
    descriptions: Mapping[int, str] = ERROR_DESCRIPTIONS,
) -> None:
    """Add every rule of `app` whose endpoint `operations` describes, with its methods."""
    for rule in app.url_map.iter_rules():
        operation = operations.get(rule.endpoint)
        if operation is None:
            continue
        path, parameters = openapi_path(rule.rule)
        item = document["paths"].setdefault(path, {})
        if parameters:
            item["parameters"] = parameters
        for method in sorted((rule.methods or set()) - _AUTOMATIC_METHODS):
            operation_id = rule.endpoint.replace(".", "_")
            item[method.lower()] = render(operation, operation_id, descriptions)


def document(app: Flask) -> Schema:
    """The service's document: info, components and the paths of its routes in `app`."""
    built: Schema = {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Contact data service",
            "version": _version(),
            "description": (
                "Enrichment, discovery and key administration. Every endpoint but /healthz is "
                "POST with a JSON object body; any other method answers 405 "
                "method_not_allowed, and every error has the ErrorResponse shape."
            ),
        },
        "tags": [
            {"name": "data", "description": "Enrich, discover and changes."},
            {"name": "administration", "description": "Keys and users of an organization."},
            {"name": "health", "description": "For load balancers."},
        ],
        "paths": {},
        "components": components(),
    }
    add_operations(built, app, service_operations())
    return built


def _version() -> str:
    try:
        return metadata.version("contact-data-connector")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "0.0.0"


def serve() -> Response:
    """GET /openapi.json: the document built when the app was."""
    return jsonify(current_app.extensions["openapi"])


def init_app(app: Flask) -> None:
    """Build the document from the routes registered so far, and serve it."""
    app.extensions["openapi"] = document(app)
    app.add_url_rule("/openapi.json", "openapi", serve, methods=["GET"])
