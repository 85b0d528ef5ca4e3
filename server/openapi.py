"""Moved to server/http/openapi.py. Kept only while connector/openapi.py imports it from here;
delete it once the connector takes these names from `server` (issue 20)."""

from server.http.openapi import ERROR_DESCRIPTIONS, Operation, Schema, add_operations

__all__ = ["ERROR_DESCRIPTIONS", "Operation", "Schema", "add_operations"]
