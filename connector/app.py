"""The product's application: the contact-data service, the connector's webhook routes and the
admin settings page."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Flask

import server
from connector import connections, mappings, openapi, receiver, store
from connector.views import settings
from server import create_app as create_service_app

QUEUE_DEPTH = "contactdata_events"


def create_app(test_config: Mapping[str, Any] | None = None) -> Flask:
    """The service's app (settings, database, errors, API) with the connector migrated, its
    routes under /hooks (in /openapi.json too), the admin settings page under /settings and
    the queue depth among the metrics."""
    app = create_service_app(test_config)
    app.extensions["mappings"] = mappings.load_all(connections.MAPPINGS)  # a bad file stops us
    store.connect(app.config["DB"]).close()
    app.register_blueprint(receiver.blueprint)
    openapi.add_hooks(app)
    settings.init_app(app)  # after the API and /hooks: it exempts them from CSRF
    queue = server.metrics.CountsCollector(
        QUEUE_DEPTH, "Webhook events by status, counted at scrape time.", "status", _event_counts
    )
    server.add_metrics_collector(app, queue)
    return app


def _event_counts() -> dict[str, int]:
    return store.event_counts(server.get_db())
