"""HTTP routes of administration (`/signals/v1/...`), in the vendor's request and response shapes.

Handlers admit the caller, parse the body, call one use case of `admin` and shape the reply.
A response that shows a full key value is marked `Cache-Control: no-store`.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, current_app, g, jsonify
from pydantic import BaseModel, ConfigDict, StrictStr

from server import admin
from server.auth import Caller
from server.http.access import admit, get_db, key_from_headers, now
from server.http.body import parse
from server.wire import WholeNumber

blueprint = Blueprint("admin", __name__, url_prefix="/signals/v1")
KEY_HEADER = "Api-Key"  # the header the vendor's key endpoints document
USER_KEY_HEADER = "Admin-Api-Key"  # and its user endpoints (samples: Admin_Api_Key)

Row = dict[str, Any]


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")  # contract §1: unknown fields are ignored


class EmptyBody(_Body):
    """A body with nothing to read (`{}`): only that it is a JSON object is checked."""


class EmailBody(_Body):
    email: StrictStr


class OptionalEmailBody(_Body):
    email: StrictStr | None = None


class KeyUpdateBody(_Body):
    email: StrictStr
    action: StrictStr
    graceSeconds: WholeNumber | None = None  # the wire name


class UserUpdateBody(_Body):
    email: StrictStr
    action: StrictStr


def _context(header: str) -> admin.Context:
    caller: Caller = admit(key_from_headers(header), admin=True)
    return admin.Context(
        caller=caller,
        now=now(),
        request_id=g.get("request_id", ""),
        secret=current_app.config["KEY_SECRET_BYTES"],
    )


def _reply(message: str, data: Any, *, shows_key: bool = False) -> Response:
    response = jsonify({"message": message, "data": data})
    if shows_key:
        response.headers["Cache-Control"] = "no-store"
    return response


# --- keys (header Api-Key) -------------------------------------------------------------------


@blueprint.post("/key/createsignalapikey")
def create_key() -> Response:
    """Create a standard key for an e-mail address; the value is shown this once."""
    ctx = _context(KEY_HEADER)
    body = parse(EmailBody)
    key, value = admin.create_key(get_db(), ctx, body.email)
    return _reply("Key generated successfully", key_object(key, value), shows_key=True)


@blueprint.post("/key/view")
def view_keys() -> Response:
    """All keys of the organization (`{}`), or the key of one e-mail address."""
    ctx = _context(KEY_HEADER)
    body = parse(OptionalEmailBody)
    found = admin.view_keys(get_db(), ctx, body.email)
    data = [key_object(k) for k in found] if isinstance(found, list) else key_object(found)
    return _reply("Key details fetched successfully", data)


@blueprint.post("/key/update")
def update_key() -> Response:
    """Suspend, activate or rotate a key."""
    ctx = _context(KEY_HEADER)
    body = parse(KeyUpdateBody)
    key, value = admin.update_key(get_db(), ctx, body.email, body.action, body.graceSeconds)
    data = key_object(key, value)
    return _reply("Action performed successfully", data, shows_key=value is not None)


# --- users (header Admin-Api-Key) ------------------------------------------------------------


@blueprint.post("/user/createsignalapikey")
def create_user() -> Response:
    """Register a user with its own key; the value is shown this once."""
    ctx = _context(USER_KEY_HEADER)
    body = parse(EmailBody)
    org, user, value = admin.create_user(get_db(), ctx, body.email)
    data = user_object(user, org, [value])
    return _reply("New User registered successfully. Key Generated", data, shows_key=True)


@blueprint.post("/user/view")
def view_users() -> Response:
    """Every user of the organization (key values are never shown here)."""
    ctx = _context(USER_KEY_HEADER)
    parse(EmptyBody)
    org, users = admin.view_users(get_db(), ctx)
    data = [user_object(user, org) for user in users]
    return _reply("All User details fetched successfully", data)


@blueprint.post("/user/update")
def update_user() -> Response:
    """Suspend, reactivate or delete a user."""
    ctx = _context(USER_KEY_HEADER)
    body = parse(UserUpdateBody)
    org, user = admin.update_user(get_db(), ctx, body.email, body.action)
    return _reply("Action performed successfully", user_object(user, org))


# --- response shapes -------------------------------------------------------------------------


def key_object(key: Row, value: str | None = None) -> Row:
    """The vendor's Key object; `apiKey` is the full value only right after it was made."""
    shown = {
        "keyId": key["id"],
        "email": key["email"],
        "role": key["role"],
        "status": key["status"],
        "apiKey": value or key["masked"],
        "createdAt": key["created_at"],
        "lastUsedAt": key["last_used_at"],
    }
    if value and key.get("expires_at"):
        shown["previousKeyExpiresAt"] = key["expires_at"]
    return shown


def user_object(user: Row, org: Row, key_values: list[str] | None = None) -> Row:
    """The vendor's User object with its organization; `apiKey` only on creation."""
    return {
        "userId": user["id"],
        "organization": organization_object(org),
        "email": user["email"],
        "role": user["role"],
        "status": user["status"],
        "createdAt": user["created_at"],
        "updatedAt": user["updated_at"],
        "apiKey": key_values,
    }


def organization_object(org: Row) -> Row:
    """The vendor's Organization object; the admin key is never shown."""
    return {
        "orgId": org["id"],
        "orgName": org["name"],
        "website": org["website"],
        "cleanedWebsite": org["cleaned_website"],
        "status": org["status"],
        "dailyRateLimit": org["daily_rate_limit"],
        "qpsLimit": org["qps_limit"],
        "createdAt": org["created_at"],
        "updatedAt": org["updated_at"],
        "adminApiKey": None,
    }
