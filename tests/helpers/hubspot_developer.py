"""A fake of HubSpot's developer-side API on loopback: an app's custom workflow action
definitions (list, create, update) and its webhook settings (read, set; 404 before they are
set) and subscriptions (list, create, activate), behind the developer API key (`hapikey`),
each call kept. A create or update body is loaded into hubspot-api-client's own model for it
(PublicActionDefinitionEgg, PublicActionDefinitionPatch; the webhooks API's
SettingsChangeRequest, SubscriptionCreateRequest, SubscriptionPatchRequest) with client-side
validation on: a body the SDK refuses (a required field missing, a value outside an
enumeration) is a 400, as HubSpot answers a body its specification refuses. Every call is
checked against HubSpot's actionsV4 and webhooks documents (tests/helpers/vendors.py), its
answers in those documents' shapes (SettingsResponse, SubscriptionListResponse,
SubscriptionResponse). `answer` also serves a loopback fake CRM on HubSpot's one API host."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, urlsplit

from hubspot import webhooks as sdk_webhooks
from hubspot.automation import actions as sdk_actions

from connector.platforms.hubspot import ACTIONS, WEBHOOKS
from tests.helpers import hubspot_shapes
from tests.helpers.vendors import Exchange, checked
from tests.servers import serving

Row = dict[str, Any]
MODELS = {"POST": "PublicActionDefinitionEgg", "PATCH": "PublicActionDefinitionPatch"}
# The webhooks API's request models, by method and what the path ends with.
WEBHOOK_MODELS = {("PUT", "settings"): "SettingsChangeRequest",
                  ("POST", "subscriptions"): "SubscriptionCreateRequest",
                  ("PATCH", "subscription"): "SubscriptionPatchRequest"}  # fmt: skip
CREATED_AT = "2026-11-23T12:00:00.000Z"
INVALID_KEY = hubspot_shapes.error(
    "INVALID_AUTHENTICATION",
    "The API key provided is invalid. View or manage your API key here: ...",
)


class FakeHubSpotDeveloper(ThreadingHTTPServer):
    """One app's action definitions by id; every call (method, path, key, body) in `calls`."""

    daemon_threads = True

    def __init__(self, app_id: str, key: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.app_id, self.key = app_id, key
        self.definitions: dict[str, Row] = {}
        self.settings: Row | None = None  # the app's webhook settings (SettingsResponse)
        self.subscriptions: dict[str, Row] = {}  # SubscriptionResponse by id
        self.calls: list[Row] = []
        self.lock = threading.Lock()

    @classmethod
    @contextmanager
    def running(cls, app_id: str, key: str) -> Iterator[FakeHubSpotDeveloper]:
        """The fake serving in a thread until the block ends."""
        with serving(cls(app_id, key)) as fake:
            yield fake

    def methods(self) -> list[str]:
        return [call["method"] for call in self.calls]

    def answer(self, method: str, target: str, body: Any) -> tuple[int, Any]:
        """Record a call and answer it as HubSpot does."""
        parts = urlsplit(target)
        key = parse_qs(parts.query).get("hapikey", [""])[0]
        with self.lock:
            self.calls.append({"method": method, "path": parts.path, "key": key, "body": body})
            if key != self.key:
                return 401, INVALID_KEY
            return self.route(method, parts.path, body)

    def route(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        if path.startswith(f"{WEBHOOKS}/{self.app_id}/"):
            return self.webhooks(method, path.removeprefix(f"{WEBHOOKS}/{self.app_id}/"), body)
        base = f"{ACTIONS}/{self.app_id}"
        refused = sdk_refusal(MODELS[method], body) if method in MODELS else None
        if refused:
            return 400, hubspot_shapes.error("VALIDATION_ERROR", refused)
        if path == base and method == "GET":
            return 200, {"results": list(self.definitions.values())}
        if path == base and method == "POST":  # 201 Created, the definition with its id
            found = {**body, "id": str(len(self.definitions) + 101), "revisionId": "1"}
            self.definitions[found["id"]] = found
            return 201, found
        definition_id = path.removeprefix(f"{base}/")
        if method == "PATCH" and definition_id in self.definitions:
            found = {**self.definitions[definition_id], **body, "revisionId": "2"}
            self.definitions[definition_id] = found
            return 200, found
        return 404, hubspot_shapes.error("OBJECT_NOT_FOUND", f"no route {method} {path}")

    def webhooks(self, method: str, rest: str, body: Any) -> tuple[int, Any]:
        """The app's webhook settings and subscriptions (`rest`: settings, subscriptions or
        subscriptions/{id})."""
        model = WEBHOOK_MODELS.get((method, rest if "/" not in rest else "subscription"))
        refused = sdk_refusal(model, body, sdk_webhooks) if model else ""
        if refused:
            return 400, hubspot_shapes.error("VALIDATION_ERROR", refused)
        if rest == "settings":
            return self._settings(method, body)
        if rest == "subscriptions" and method == "GET":
            return 200, {"results": list(self.subscriptions.values())}
        if rest == "subscriptions" and method == "POST":  # 201 Created
            found = {**body, "id": str(len(self.subscriptions) + 501), "createdAt": CREATED_AT}
            self.subscriptions[found["id"]] = found
            return 201, found
        subscription_id = rest.removeprefix("subscriptions/")
        if method == "PATCH" and subscription_id in self.subscriptions:
            self.subscriptions[subscription_id].update(body, updatedAt=CREATED_AT)
            return 200, self.subscriptions[subscription_id]
        return 404, hubspot_shapes.error("OBJECT_NOT_FOUND", f"no route {method} {rest}")

    def _settings(self, method: str, body: Any) -> tuple[int, Any]:
        if method == "PUT":
            self.settings = {**body, "createdAt": CREATED_AT, "updatedAt": CREATED_AT}
        if self.settings is None:
            return 404, hubspot_shapes.error("OBJECT_NOT_FOUND", "No settings for this app.")
        return 200, self.settings


def sdk_model(model: str, body: Any, package: Any = sdk_actions) -> Any:
    """`body` loaded into the SDK's `model` (of its automation actions, or the `package`
    named), validating as it loads: a required field missing or a value outside an
    enumeration raises ValueError."""
    configuration = package.Configuration()
    configuration.client_side_validation = True
    client = package.ApiClient(configuration)
    return client.deserialize(SimpleNamespace(data=json.dumps(body)), model)


def sdk_refusal(model: str, body: Any, package: Any = sdk_actions) -> str:
    """Why the SDK refuses `body` as a `model`, or "" when it takes it."""
    try:
        sdk_model(model, body, package)
    except ValueError as error:
        return str(error)
    return ""


class _Handler(BaseHTTPRequestHandler):
    server: FakeHubSpotDeveloper

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        status, body = self.server.answer(self.command, self.path, json.loads(raw or b"null"))
        content = json.dumps(body).encode()
        sent = Exchange(self.command, urlsplit(self.path).path,
                        self.headers.get("Content-Type", ""), raw, status, content)  # fmt: skip
        checked(sent)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    do_GET = do_POST = do_PATCH = do_PUT = _serve

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""
