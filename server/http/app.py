"""The application factory of the contact-data service."""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from flask import Flask, Response, g, request
from werkzeug.exceptions import RequestEntityTooLarge

from server import config, logs
from server.http import (
    access,
    admin_api,
    api,
    changes_api,
    discover_api,
    enrich_api,
    error_handlers,
    metrics_api,
    openapi,
)
from server.storage import db

_REQUEST_ID_MAX = 128


def create_app(test_config: Mapping[str, Any] | None = None) -> Flask:
    """Build the app: settings, migrated database, error rendering, routes, request ids."""
    app = Flask(__name__)
    settings = config.load(test_config)
    app.config.update(settings, MAX_CONTENT_LENGTH=config.MAX_BODY_BYTES)
    app.config["KEY_SECRET_BYTES"] = config.key_secret(settings)
    app.json.sort_keys = False  # type: ignore[attr-defined]
    logs.configure(settings["LOG_LEVEL"], settings["LOG_FORMAT"])
    db.connect(settings["DB"]).close()
    error_handlers.init_app(app)
    metrics_api.init_app(app)  # first of the hooks: the clock starts before any refusal
    app.before_request(_refuse_oversize_body)  # first: before a key is looked at
    access.init_app(app)
    app.before_request(_assign_request_id)
    app.after_request(_add_request_id)
    app.wsgi_app = _measure_streamed_bodies(app.wsgi_app)  # type: ignore[method-assign]
    app.register_blueprint(api.blueprint)
    app.register_blueprint(admin_api.blueprint)
    app.register_blueprint(enrich_api.blueprint)
    app.register_blueprint(discover_api.blueprint)
    app.register_blueprint(changes_api.blueprint)
    openapi.init_app(app)  # after the routes it documents
    return app


def _assign_request_id() -> None:
    sent = request.headers.get("X-Request-Id", "")
    g.request_id = sent if 0 < len(sent) <= _REQUEST_ID_MAX else str(uuid.uuid4())
    logs.REQUEST_ID.set(g.request_id)


def _refuse_oversize_body() -> None:
    """Any route, any method: a declared body over the limit is refused before routing."""
    if (request.content_length or 0) > config.MAX_BODY_BYTES:
        raise RequestEntityTooLarge()


def _measure_streamed_bodies(wsgi_app: Callable[..., Iterable[bytes]]) -> Callable[..., Any]:
    """A body sent chunked, without Content-Length, is read here up to one byte past the limit
    and handed on with its length, so the limit refuses it as it refuses a declared one
    (werkzeug would cut it at 1 MiB and the app would read what was left as the whole)."""

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
            stream = environ["wsgi.input"]
            body = stream.read(config.MAX_BODY_BYTES + 1)
            if len(body) > config.MAX_BODY_BYTES:
                error_handlers.drain(stream)
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))  # werkzeug reads no length while
            del environ["HTTP_TRANSFER_ENCODING"]  # the body is said to be chunked
        return wsgi_app(environ, start_response)

    return app


def _add_request_id(response: Response) -> Response:
    response.headers["X-Request-Id"] = g.get("request_id") or str(uuid.uuid4())
    return response
