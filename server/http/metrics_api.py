"""`GET /metrics` for the operator, and the hooks that time and count every request.

Off unless the operator sets METRICS_TOKEN (a scrape must send it as a bearer token) and/or
METRICS_BIND (an address gunicorn also listens on: /metrics answers there only, and nothing
else does). Collectors that read counts at scrape time are added with `add_collector`.
"""

from __future__ import annotations

import time
from typing import Any

from flask import Blueprint, Flask, Response, current_app, g, request
from werkzeug.exceptions import NotFound

from server import logs, metrics
from server.errors import Unauthorized

blueprint = Blueprint("metrics", __name__)
_COLLECTORS = "metrics_collectors"


def init_app(app: Flask) -> None:
    """Time and count every request; serve /metrics when the operator turned it on. Call it
    first: the clock starts before any other hook can refuse the request."""
    app.extensions[_COLLECTORS] = []
    app.before_request(_start)
    app.after_request(_count)
    app.teardown_request(_forget_request_id)
    if app.config["METRICS_TOKEN"] or app.config["METRICS_BIND"]:
        app.before_request(_keep_to_its_bind)
        app.register_blueprint(blueprint)


def add_collector(app: Flask, collector: metrics.Collector) -> None:
    """Expose `collector`'s metrics too (e.g. the connector's queue depth)."""
    app.extensions[_COLLECTORS].append(collector)


@blueprint.get("/metrics")
def exposition() -> Response:
    """Every metric, in Prometheus's text format, to the operator."""
    token = current_app.config["METRICS_TOKEN"]
    if token and not metrics.bearer_ok(request.headers.get("Authorization"), token):
        message = "The metrics need the operator's bearer token."
        raise Unauthorized(message, headers={"WWW-Authenticate": "Bearer"})
    body, content_type = metrics.exposition(current_app.extensions[_COLLECTORS])
    return Response(body, content_type=content_type)


def _start() -> None:
    g.metrics_started = time.perf_counter()


def _count(response: Response) -> Response:
    rule = request.url_rule
    seconds = time.perf_counter() - g.get("metrics_started", time.perf_counter())
    route = rule.rule if rule is not None else metrics.UNMATCHED
    metrics.request_answered(route, request.method, response.status_code, seconds)
    return response


def _forget_request_id(_error: BaseException | None) -> None:
    logs.REQUEST_ID.set(None)


def _keep_to_its_bind() -> None:
    """With METRICS_BIND, /metrics answers on that address only, and only /metrics does."""
    bind = current_app.config["METRICS_BIND"]
    if not bind:
        return
    if (request.path == "/metrics") != _arrived_on(bind):
        raise NotFound()


def _arrived_on(bind: str) -> bool:
    """Whether this request's connection came in on `bind` (gunicorn tells the socket)."""
    connection: Any = request.environ.get("gunicorn.socket")
    if connection is None:
        return False
    host, port = metrics.split_bind(bind)
    local_host, local_port = connection.getsockname()[:2]
    return local_port == port and host in (local_host, "0.0.0.0", "::")
