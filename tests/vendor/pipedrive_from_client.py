"""Writes tests/vendor/pipedrive.json from pipedrive/client-nodejs's generated TypeScript (models
and API classes) at one commit, read from a clone of it with `git show`:

    git clone https://github.com/pipedrive/client-nodejs /tmp/client-nodejs
    .venv/bin/python tests/vendor/pipedrive_from_client.py /tmp/client-nodejs \
        > tests/vendor/pipedrive.json
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

REPO = sys.argv[1] if len(sys.argv) > 1 else "client-nodejs"  # a clone of CLIENT
COMMIT = "97e5382fee5ffa825d0bae07a6bafb3af1d5bb77"
SHORT = COMMIT[:7]
# The last commit whose generated v2 models still had a person of its own (Build 318,
# 12945815, folded it into OrganizationItem): its parent.
PERSON_COMMIT = "1b9afdd6426184e0ff9bb53b17e19602365a23b6"
CLIENT = "pipedrive/client-nodejs"
DOCS = "https://developers.pipedrive.com/docs/api/v1"
RESPONSES_PAGE = "https://pipedrive.readme.io/docs/core-api-concepts-responses"
STATUS_PAGE = "https://pipedrive.readme.io/docs/core-api-concepts-http-status-codes"
RATE_PAGE = "https://pipedrive.readme.io/docs/core-api-concepts-rate-limiting"
PAGINATION_PAGE = "https://pipedrive.readme.io/docs/core-api-concepts-pagination"
OAUTH_PAGE = "https://pipedrive.readme.io/docs/marketplace-oauth-authorization"
OAUTH_STATUS_PAGE = "https://pipedrive.readme.io/docs/marketplace-oauth-and-api-proxy-status-codes"
UNINSTALL_PAGE = "https://pipedrive.readme.io/docs/app-uninstallation"


def show(path: str, commit: str = COMMIT) -> str:
    return subprocess.run(
        ["git", "-C", REPO, "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def source(path: str, commit: str = COMMIT) -> str:
    return f"{CLIENT}@{commit[:7]}:{path}"


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"^\s*//.*$", "", text, flags=re.M)


# --- models -------------------------------------------------------------------------------------


class Models:
    """TypeScript interfaces of the generated models as OpenAPI 3.0 schemas, by name."""

    def __init__(self) -> None:
        self.schemas: dict[str, dict] = {}
        self.files: dict[str, str] = {}  # schema name -> model file path

    def load(self, version: str, file: str, commit: str = COMMIT) -> str:
        """The schema name of model `file` (no .ts) of API `version`, loaded with all it uses."""
        path = f"src/versions/{version}/models/{file}.ts"
        text = show(path, commit)
        imports = dict(
            (name, target)
            for name, target in re.findall(r"import \{ (\w+) \} from '\./([\w-]+)';", text)
        )
        body = strip_comments(text)
        consts = {
            name: re.findall(r":\s*('(?:[^'\\]|\\.)*'|-?\d+(?:\.\d+)?)\s*,?\s*$", block, flags=re.M)
            for name, block in re.findall(
                r"export const (\w+) = \{(.*?)\} as const;", body, flags=re.S
            )
        }
        consts = {
            name: [
                json.loads(v.replace("'", '"'))
                if v.startswith("'")
                else (float(v) if "." in v else int(v))
                for v in values
            ]
            for name, values in consts.items()
        }
        match = re.search(r"export interface (\w+) \{(.*?)\n\}", body, flags=re.S)
        alias = re.search(r"export type (\w+) = ([\w\s&]+);", body)
        if match:
            name = match.group(1)
            schema = self._interface(version, match.group(2), imports, consts, commit)
        elif alias:
            name = alias.group(1)
            parts = [p.strip() for p in alias.group(2).split("&")]
            schema = {"allOf": [self._ref(version, part, imports, commit) for part in parts]}
        else:
            raise ValueError(f"no interface in {path}")
        name = self._named(name, version, path, schema)
        schema["x-source"] = source(path, commit)
        self.schemas[name] = schema
        self.files[name] = path
        return name

    def _named(self, name: str, version: str, path: str, schema: dict) -> str:
        if name in self.files and self.files[name] != path:
            known = dict(self.schemas[name])
            known.pop("x-source", None)
            if version == "v1":
                return "V1" + name
            raise ValueError(f"{name}: {path} and {self.files[name]}")
        return name

    def _ref(self, version: str, name: str, imports: dict, commit: str) -> dict:
        target = imports.get(name)
        if target is None:
            raise ValueError(f"{name} is not imported")
        return {"$ref": f"#/components/schemas/{self.load(version, target, commit)}"}

    def _interface(self, version, text, imports, consts, commit) -> dict:
        schema: dict = {"type": "object", "properties": {}}
        required = []
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            if line.startswith("[key: string]"):
                schema["additionalProperties"] = True
                continue
            m = re.fullmatch(r"'([^']+)'(\?)?: (.+);", line)
            if not m:
                raise ValueError(f"cannot read {line!r}")
            field, optional, kind = m.groups()
            schema["properties"][field] = self._type(version, kind, imports, consts, commit)
            if not optional:
                required.append(field)
        if required:
            schema["required"] = required
        return schema

    def _type(self, version, kind, imports, consts, commit) -> dict:
        kind = kind.strip()
        if kind.startswith("{ [key: string]:"):
            return {"type": "object", "additionalProperties": True}
        alternatives = [a.strip() for a in _split(kind, "|")]
        nullable = "null" in alternatives
        alternatives = [a for a in alternatives if a not in ("null", "undefined")]
        if len(alternatives) != 1:
            raise ValueError(f"cannot read type {kind!r}")
        (one,) = alternatives
        simple = {
            "string": {"type": "string"},
            "number": {"type": "number"},
            "boolean": {"type": "boolean"},
            "object": {"type": "object"},
            "any": {},
        }
        if one in simple:
            schema = dict(simple[one])
        elif one.startswith("Array<") and one.endswith(">"):
            schema = {
                "type": "array",
                "items": self._type(version, one[6:-1], imports, consts, commit),
            }
        elif one in consts:
            values = consts[one]
            kind_of = "string" if all(isinstance(v, str) for v in values) else "number"
            schema = {"type": kind_of, "enum": values}
        else:
            schema = self._ref(version, one, imports, commit)
        if nullable:
            if "$ref" in schema:
                return {"anyOf": [schema], "nullable": True}
            if not schema:
                return schema
            schema["nullable"] = True
        return schema


def _split(text: str, sep: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char in "<{("
        depth -= char in ">})"
        if char == sep and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


# --- operations ---------------------------------------------------------------------------------


def api_method(version: str, api: str, method: str) -> dict:
    """What the generated API class says of one method: path, HTTP method, path and query
    parameters (with their JSDoc), scopes, summary, request body model, answer model."""
    path = f"src/versions/{version}/api/{api}.ts"
    text = show(path)
    start = text.index(f"        {method}: async (")
    doc_start = text.rindex("/**", 0, start)
    doc = text[doc_start:start]
    end = text.index("\n        },\n", start)
    body = text[start:end]
    signature = re.match(rf"\s*{method}: async \((.*?)\): Promise<RequestArgs>", body).group(1)
    http = re.search(r"method: '(\w+)'", body).group(1)
    local = re.search(r"const localVarPath = `([^`]+)`", body).group(1)
    query = re.findall(r"localVarQueryParameter\['(\w+)'\]", body)
    scopes = re.search(r'setOAuthToObject\([^,]+, "oauth2", \[([^\]]*)\]', body)
    scopes = json.loads(f"[{scopes.group(1)}]") if scopes else []
    summary = re.search(r"@summary (.+)", doc).group(1).strip()
    params = {}
    for name, optional, kind in re.findall(
        r"(\w+)(\?)?: ((?:'[^']*'(?: \| )?)+|[\w<>]+), ", signature + ", "
    ):
        params[name] = (bool(optional), kind)
    docs = {}
    for _kind, name, text_ in re.findall(r"@param \{(.*?)\} \[?(\w+)\]? ?(.*)", doc):
        docs[name] = text_.strip()
    answer = re.search(
        rf"async {method}\(.*?Promise<\(axios\?: AxiosInstance, basePath\?: string\) => "
        rf"Promise<(\w+)>>",
        text,
    ).group(1)
    return {
        "file": path,
        "http": http.lower(),
        "path": local,
        "query": query,
        "scopes": scopes,
        "summary": summary,
        "params": params,
        "docs": docs,
        "answer": answer,
    }


def parameter(name: str, where: str, optional: bool, kind: str, doc: str) -> dict:
    if kind.startswith("'"):
        schema = {"type": "string", "enum": re.findall(r"'([^']*)'", kind)}
    else:
        schema = {
            "number": {"type": "number"},
            "string": {"type": "string"},
            "boolean": {"type": "boolean"},
        }[kind]
    found = {
        "name": name,
        "in": where,
        "required": where == "path" or not optional,
        "schema": schema,
    }
    return found


# --- the document -------------------------------------------------------------------------------

MODEL_FILES = {}  # answer/request model name -> (version, file)


def kebab(name: str) -> str:
    name = re.sub(r"(\d+)", r"\1", name)
    out = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "-", name).lower()
    return re.sub(r"(?<=[a-z])(?=\d)", "", out)


def build():
    models = Models()
    ops = [
        # path, version, api file, method, tag, request model file (or None)
        ("/api/v2/persons/{id}", "v2", "persons-api", "getPerson", "Persons", None),
        (
            "/api/v2/persons/{id}",
            "v2",
            "persons-api",
            "updatePerson",
            "Persons",
            "add-person-request",
        ),
        ("/api/v2/persons", "v2", "persons-api", "getPersons", "Persons", None),
        ("/api/v2/persons", "v2", "persons-api", "addPerson", "Persons", "add-person-request"),
        (
            "/api/v2/activities",
            "v2",
            "activities-api",
            "addActivity",
            "Activities",
            "add-activity-request",
        ),
        ("/api/v1/notes", "v1", "notes-api", "addNote", "Notes", "add-note-request"),
        ("/api/v2/persons/search", "v2", "persons-api", "searchPersons", "Persons", None),
        (
            "/api/v2/organizations/{id}",
            "v2",
            "organizations-api",
            "getOrganization",
            "Organizations",
            None,
        ),
        (
            "/api/v2/organizations/{id}",
            "v2",
            "organizations-api",
            "updateOrganization",
            "Organizations",
            "update-organization-request",
        ),
        (
            "/api/v2/organizations",
            "v2",
            "organizations-api",
            "getOrganizations",
            "Organizations",
            None,
        ),
        (
            "/api/v2/personFields",
            "v2",
            "person-fields-api",
            "getPersonFields",
            "PersonFields",
            None,
        ),
        (
            "/api/v2/personFields",
            "v2",
            "person-fields-api",
            "addPersonField",
            "PersonFields",
            "add-person-field-request",
        ),
        (
            "/api/v2/organizationFields",
            "v2",
            "organization-fields-api",
            "getOrganizationFields",
            "OrganizationFields",
            None,
        ),
        (
            "/api/v2/organizationFields",
            "v2",
            "organization-fields-api",
            "addOrganizationField",
            "OrganizationFields",
            "add-organization-field-request",
        ),
        ("/api/v2/dealFields", "v2", "deal-fields-api", "getDealFields", "DealFields", None),
        (
            "/api/v2/dealFields",
            "v2",
            "deal-fields-api",
            "addDealField",
            "DealFields",
            "add-deal-field-request",
        ),
        ("/api/v1/leads", "v1", "leads-api", "getLeads", "Leads", None),
        ("/api/v1/leads/{id}", "v1", "leads-api", "getLead", "Leads", None),
        ("/api/v1/leads/{id}", "v1", "leads-api", "updateLead", "Leads", "update-lead-request"),
        ("/api/v1/webhooks", "v1", "webhooks-api", "addWebhook", "Webhooks", "add-webhook-request"),
        ("/api/v1/webhooks/{id}", "v1", "webhooks-api", "deleteWebhook", "Webhooks", None),
        ("/api/v1/filters", "v1", "filters-api", "getFilters", "Filters", None),
    ]
    paths: dict[str, dict] = {}
    for template, version, api, method, tag, request in ops:
        found = api_method(version, api, method)
        assert f"/api/{version}{found['path']}" == template, (template, found["path"])
        answer = models.load(version, kebab(found["answer"]))
        parameters = []
        for name in re.findall(r"\{(\w+)\}", template):
            optional, kind = found["params"][name]
            parameters.append(parameter(name, "path", optional, kind, ""))
        for name in found["query"]:
            optional, kind = found["params"][name]
            parameters.append(parameter(name, "query", optional, kind, ""))
        operation = {
            "operationId": method,
            "summary": found["summary"],
            "tags": [tag],
            "externalDocs": {"url": f"{DOCS}/{tag}#{method}"},
            "x-source": source(found["file"]),
            "security": [{"api_key": []}, {"oauth2": found["scopes"]}],
        }
        if parameters:
            operation["parameters"] = parameters
        if request:
            name = models.load(version, request)
            operation["requestBody"] = {
                "required": not found["params"][name][0] if name in found["params"] else False,
                "content": {
                    "application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}
                },
            }
        success = "201" if method in ("addWebhook",) else "200"
        responses = {
            success: {
                "description": "Success",
                "content": {
                    "application/json": {"schema": {"$ref": f"#/components/schemas/{answer}"}}
                },
            },
            **{
                status: {"$ref": f"#/components/responses/Error{status}"}
                for status in ERROR_STATUSES
            },
        }
        for status, model in SPECIFIC_ERRORS.get(method, {}).items():
            name = models.load(version, model)
            responses[status] = {
                "description": f"{status} as the client's {name} model describes it",
                "content": {
                    "application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}
                },
            }
        operation["responses"] = dict(sorted(responses.items()))
        paths.setdefault(template, {})[found["http"]] = operation
    return paths, models


ERROR_STATUSES = ("400", "401", "403", "404", "429", "500")
# Errors an operation's own model describes (pipedrive/client-php's generated API classes list
# the statuses per operation: addWebhook 400, deleteWebhook 403 and 404, getLead/updateLead 404).
SPECIFIC_ERRORS = {
    "addWebhook": {"400": "webhooks-bad-request-response"},
    "deleteWebhook": {"403": "delete-webhook403-response", "404": "webhooks-bad-request-response"},
    "getLead": {"404": "lead-not-found-response"},
    "updateLead": {"404": "lead-not-found-response"},
}


def person_item(models: Models) -> None:
    """The person v2 answers: Build 318 (12945815, 32.0.0) of the client folded the generated
    person into OrganizationItem; its last own model is transcribed, with the nullable fields
    32.0.0's CHANGELOG names."""
    path = "src/versions/v2/models/get-persons-response-all-of-data-inner.ts"
    name = models.load("v2", "get-persons-response-all-of-data-inner", PERSON_COMMIT)
    schema = models.schemas.pop(name)
    for field in ("org_id", "picture_id", "last_name"):
        schema["properties"][field]["nullable"] = True
    schema["description"] = (
        "A person as API v2 answers it. At 97e5382 the generated client types the person "
        "answers (UpsertPersonResponseData.data, GetPersonsResponseAllOf.data) as "
        "OrganizationItem: Build 318 (commit 12945815, 32.0.0) folded the generated person "
        "model into it. This is the client's last person model ("
        + source(path, PERSON_COMMIT)
        + "; client-php's v2 PersonItem has the same fields), with org_id, picture_id and "
        "last_name nullable as " + source("CHANGELOG.md") + " says under [32.0.0] Fixed."
    )
    models.schemas["PersonItem"] = schema
    ref = {"$ref": "#/components/schemas/PersonItem"}
    models.schemas["UpsertPersonResponseData"]["properties"]["data"] = ref
    models.schemas["GetPersonsResponseAllOf"]["properties"]["data"]["items"] = ref


def cursor_nullable(models: Models) -> None:
    """v2's list answers end with next_cursor null (the pagination page); the models of the
    person list and search answers type it as a string only."""
    for name in (
        "GetActivitiesResponseAllOfAdditionalData",
        "GetDealsProductsResponseAdditionalData",
    ):
        models.schemas[name]["properties"]["next_cursor"]["nullable"] = True
        models.schemas[name]["description"] = (
            "next_cursor is null on the last page: " + PAGINATION_PAGE + ' ("The value of '
            'the next_cursor field will be null if you have reached the end of the dataset"); '
            "the model types it as a string only."
        )


def error_components() -> tuple[dict, dict]:
    schemas = {
        "ErrorResponse": {
            "type": "object",
            "description": (
                "Pipedrive's error answer (" + RESPONSES_PAGE + ": success false, error, "
                "error_info, data null, additional_data null; a 403 of a capped feature adds "
                "`code`). Required as the client's FailResponse has them."
            ),
            "required": ["success", "error"],
            "properties": {
                "success": {"type": "boolean"},
                "error": {"type": "string"},
                "error_info": {"type": "string"},
                "data": {"type": "object", "nullable": True},
                "additional_data": {"type": "object", "nullable": True},
                "code": {"type": "string"},
            },
            "x-source": source("src/versions/v1/models/fail-response.ts")
            + " (required), "
            + source("src/versions/v1/models/lead-not-found-response.ts")
            + " (the other fields)",
        },
    }
    names = {
        "400": "Bad Request",
        "401": "Unauthorized",
        "403": "Forbidden",
        "404": "Not Found",
        "429": "Too Many Requests",
        "500": "Internal Server Error",
    }
    responses = {}
    for status in ERROR_STATUSES:
        responses[f"Error{status}"] = {
            "description": f"{names[status]} ({STATUS_PAGE}), the body as {RESPONSES_PAGE}",
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}
            },
        }
    limit = {"schema": {"type": "integer"}}
    responses["Error429"]["description"] = (
        "Rate limit exceeded: the 2-second burst window or the daily token budget ("
        + RATE_PAGE
        + "), the body as "
        + RESPONSES_PAGE
    )
    responses["Error429"]["headers"] = {
        "x-ratelimit-limit": {
            **limit,
            "description": "requests the token may make a 2-second window",
        },
        "x-ratelimit-remaining": {**limit, "description": "requests left in the window"},
        "x-ratelimit-reset": {**limit, "description": "the window left before the limit resets"},
        "x-daily-requests-left": {
            **limit,
            "description": "POST/PUT requests left today (UTC), api_token requests only",
        },
    }
    return schemas, responses


def oauth_paths() -> tuple[dict, dict]:
    configuration = source("src/versions/v2/configuration.ts")
    schemas = {
        "TokenRequest": {
            "type": "object",
            "description": "The token request's form, the client authenticated with HTTP Basic "
            "(" + OAUTH_PAGE + ", steps 3 and 7; OAuth2Configuration.authorize "
            "and tokenRefresh).",
            "required": ["grant_type"],
            "properties": {
                "grant_type": {
                    "type": "string",
                    "enum": ["authorization_code", "refresh_token", "exchange_api_token"],
                },
                "code": {"type": "string"},
                "redirect_uri": {"type": "string"},
                "refresh_token": {"type": "string"},
            },
            "x-source": configuration,
        },
        "TokenResponse": {
            "type": "object",
            "description": "The token endpoint's answer to both grants (" + OAUTH_PAGE + ").",
            "required": [
                "access_token",
                "refresh_token",
                "token_type",
                "expires_in",
                "scope",
                "api_domain",
            ],
            "properties": {
                "access_token": {"type": "string"},
                "refresh_token": {"type": "string"},
                "token_type": {"type": "string"},
                "expires_in": {"type": "number"},
                "scope": {"type": "string"},
                "api_domain": {"type": "string"},
            },
            "x-source": configuration + " (TokenResponse)",
        },
        "OAuthError": {
            "type": "object",
            "description": "A refused token request: the statuses and messages of "
            + OAUTH_STATUS_PAGE
            + ' ("Invalid grant: refresh_token is invalid", '
            '"Invalid client: client is invalid", ...) in RFC 6749 section 5.2\'s '
            "error body.",
            "required": ["error"],
            "properties": {"error": {"type": "string"}, "error_description": {"type": "string"}},
        },
        "RevokeRequest": {
            "type": "object",
            "description": "RFC 7009's revocation request, the client authenticated with HTTP "
            "Basic (" + UNINSTALL_PAGE + ", Token revocation; "
            "OAuth2Configuration.revokeToken).",
            "required": ["token"],
            "properties": {
                "token": {"type": "string"},
                "token_type_hint": {"type": "string", "enum": ["access_token", "refresh_token"]},
            },
            "x-source": configuration,
        },
    }
    error = {
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/OAuthError"}}}
    }
    form = "application/x-www-form-urlencoded"
    paths = {
        "/oauth/token": {
            "post": {
                "operationId": "getTokens",
                "summary": "Exchange an authorization code, or a refresh token, for tokens",
                "tags": ["Oauth"],
                "servers": [{"url": "https://oauth.pipedrive.com"}],
                "externalDocs": {"url": OAUTH_PAGE},
                "x-source": configuration,
                "requestBody": {
                    "required": True,
                    "content": {form: {"schema": {"$ref": "#/components/schemas/TokenRequest"}}},
                },
                "responses": {
                    "200": {
                        "description": "The tokens",
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/TokenResponse"}
                            }
                        },
                    },
                    "400": {
                        "description": "Missing parameter, unsupported grant type, invalid "
                        "grant or request (" + OAUTH_STATUS_PAGE + ")",
                        **error,
                    },
                    "401": {"description": "Invalid client (" + OAUTH_STATUS_PAGE + ")", **error},
                },
            }
        },
        "/oauth/revoke": {
            "post": {
                "operationId": "revokeToken",
                "summary": "Revoke a refresh or access token (RFC 7009)",
                "tags": ["Oauth"],
                "servers": [{"url": "https://oauth.pipedrive.com"}],
                "externalDocs": {"url": UNINSTALL_PAGE},
                "x-source": configuration,
                "requestBody": {
                    "required": True,
                    "content": {form: {"schema": {"$ref": "#/components/schemas/RevokeRequest"}}},
                },
                "responses": {
                    "200": {
                        "description": "Revoked, or not known (RFC 7009 section 2.2: the "
                        "client ignores the body, which neither page describes)",
                        "content": {"*/*": {"schema": {}}},
                    },
                },
            }
        },
    }
    return paths, schemas


PHP_CHANGELOG = "pipedrive/client-php@4d63174:CHANGELOG.md"


def later_fixes(models: Models) -> None:
    """Fixes of the same OpenAPI document released after 97e5382, as Pipedrive's PHP client
    (generated from it) records them: a deal field's description is not always there, and a
    built-in field's option ids are strings."""
    deal = models.schemas["GetDealFields200ResponseDataInner"]
    deal["required"].remove("description")
    deal["description"] = (
        "`description` is not required: " + PHP_CHANGELOG + ' [17.3.1] Fixed, "Removed '
        'description from the required fields list in DealField".'
    )
    option = models.schemas["GetActivityFields200ResponseDataInnerOptionsInner"]
    option["properties"]["id"] = {"oneOf": [{"type": "number"}, {"type": "string"}]}
    option["description"] = (
        "`id` is a number or a string: " + PHP_CHANGELOG + ' [17.3.1] Fixed, "changed from '
        'integer to integer | string to reflect that built-in fields use string IDs".'
    )


def main() -> None:
    paths, models = build()
    person_item(models)
    cursor_nullable(models)
    later_fixes(models)
    error_schemas, responses = error_components()
    token_paths, token_schemas = oauth_paths()
    scopes = sorted(
        {
            scope
            for item in paths.values()
            for op in item.values()
            for requirement in op["security"]
            for scope in requirement.get("oauth2", [])
        }
    )
    document = {
        "openapi": "3.0.3",
        "info": {
            "title": "Pipedrive API v1 and v2: the operations the connector calls",
            "version": f"{CLIENT}@{COMMIT} (32.2.1, 2026-04-20)",
            "description": (
                "Transcribed from Pipedrive's official Node.js client, which Pipedrive generates "
                "from its OpenAPI document: " + CLIENT + " at commit " + COMMIT + " (2026-04-20). "
                "Each operation's path, method, parameters, OAuth scopes and answer model are its "
                "API class's (x-source), each schema its model file's (x-source): TypeScript "
                "`?` fields are not required, `| null` fields are nullable. Error answers are "
                "Pipedrive's documented error body ("
                + RESPONSES_PAGE
                + ") for the statuses of "
                + STATUS_PAGE
                + "; rate limits: "
                + RATE_PAGE
                + ". The OAuth endpoints "
                "(oauth.pipedrive.com) are written from "
                + OAUTH_PAGE
                + " and "
                + UNINSTALL_PAGE
                + ". Where the document departs from a model, the schema's "
                "description says why (the person answer; next_cursor; a deal field's description "
                "and option ids, fixed in the same document after this commit, as "
                + PHP_CHANGELOG
                + " records)."
            ),
        },
        "servers": [
            {
                "url": "https://{companydomain}.pipedrive.com",
                "variables": {"companydomain": {"default": "api"}},
            }
        ],
        "paths": {**paths, **token_paths},
        "components": {
            "securitySchemes": {
                "api_key": {"type": "apiKey", "in": "header", "name": "x-api-token"},
                "oauth2": {
                    "type": "oauth2",
                    "flows": {
                        "authorizationCode": {
                            "authorizationUrl": "https://oauth.pipedrive.com/oauth/authorize",
                            "tokenUrl": "https://oauth.pipedrive.com/oauth/token",
                            "refreshUrl": "https://oauth.pipedrive.com/oauth/token",
                            "scopes": {scope: scope for scope in scopes},
                        }
                    },
                },
            },
            "responses": responses,
            "schemas": dict(sorted({**models.schemas, **error_schemas, **token_schemas}.items())),
        },
    }
    json.dump(document, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
