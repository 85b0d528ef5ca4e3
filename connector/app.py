"""The product's application: the contact-data service, the connector's webhook routes and the
admin settings page."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import Flask

from connector import connections, mappings, openapi, receiver, store
from connector.views import settings
from server import create_app as create_service_app


def create_app(test_config: Mapping[str, Any] | None = None) -> Flask:
    """The service's app (settings, database, errors, API) with the connector migrated, its
    routes under /hooks (in /openapi.json too) and the admin settings page under /settings."""
    app = create_service_app(test_config)
    app.extensions["mappings"] = mappings.load_all(connections.MAPPINGS)  # a bad file stops us
    store.connect(app.config["DB"]).close()
    app.register_blueprint(receiver.blueprint)
    openapi.add_hooks(app)
    settings.init_app(app)  # after the API and /hooks: it exempts them from CSRF
    return app
