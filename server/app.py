"""Moved to server/http/app.py. Kept only while connector/app.py imports it from here; delete it
once the connector takes `create_app` from `server` (issue 20)."""

from server.http.app import create_app

__all__ = ["create_app"]
