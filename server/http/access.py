"""The gate every endpoint passes: find the key, authenticate it, check the role, rate-limit.

Header names are case-insensitive, and `API_KEY`/`Api-Key`/`api_key` are one name to the
WSGI server (it maps `-` and `_` alike), so the spellings of contract §1 all arrive.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime

from flask import Flask, Response, current_app, g, request
from sqlite_utils import Database

from server import auth, limits, metrics
from server.auth import Caller
from server.clock import utcnow
from server.errors import RateLimitExceeded, ServiceError
from server.storage import db

# Every header a key may come in; each endpoint names the one its documentation shows first.
KEY_HEADERS = ("Api-Key", "Admin-Api-Key", "apikey")


def init_app(app: Flask) -> None:
    """Give the app its clock and limiter, and add rate-limit headers to every response."""
    app.config.setdefault("CLOCK", utcnow)
    app.extensions["limiter"] = limits.limiter_for(app.config)
    app.before_request(_refuse_non_admin_keys_off_route)
    app.after_request(_add_rate_limit_headers)
    app.teardown_appcontext(_done_with_db)


def get_db() -> Database:
    """The database of the running app, for this thread."""
    return db.database(current_app.config["DB"])


def _done_with_db(_: BaseException | None) -> None:
    """At the end of a request (an app context), give a pooled connection back."""
    db.done(current_app.config["DB"])


def now() -> datetime:
    """The app's current time (tests inject a clock)."""
    clock: Callable[[], datetime] = current_app.config["CLOCK"]
    return clock()


def key_from_headers(preferred: str, extra: Iterable[str | None] = ()) -> str | None:
    """The key sent in the `preferred` header, any other key header, or `extra` (a body field)."""
    names = (preferred, *(name for name in KEY_HEADERS if name != preferred))
    for value in (*(request.headers.get(name) for name in names), *extra):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def admit(value: str | None, *, admin: bool = False, discover: bool = False) -> Caller:
    """The caller holding key `value`, within its limits; raises the contract's 401/403/429."""
    moment = now()
    caller = auth.authenticate(get_db(), current_app.config["KEY_SECRET_BYTES"], value, moment)
    if admin:
        auth.require_admin(caller)
    decision = current_app.extensions["limiter"].hit(_limits(caller, discover), moment)
    g.rate_limit_headers = limits.headers(decision)
    if not decision.allowed:
        metrics.rate_limited(min(decision.statuses, key=lambda s: s.remaining).limit.name)
        raise RateLimitExceeded("Too many requests. Please try again after some time.")
    return caller


def _refuse_non_admin_keys_off_route() -> None:
    """A valid non-admin key gets 403 under /signals/ even where no route matched (a wrong
    method or path spelling); matched routes check the role themselves in `admit`."""
    if request.routing_exception is None or not request.path.lower().startswith("/signals/"):
        return
    value = key_from_headers("Api-Key")
    if value is None:
        return
    try:
        caller = auth.authenticate(get_db(), current_app.config["KEY_SECRET_BYTES"], value, now())
    except ServiceError:
        return  # the route's own answer (404, 405) says enough to a caller without a valid key
    auth.require_admin(caller)


def _limits(caller: Caller, discover: bool) -> list[limits.Limit]:
    org = f"org:{caller.org_id}"
    checked = [
        limits.Limit.per_window(f"{org}:qps", "qps", caller.qps_limit, 1),
        limits.organization_daily(caller.org_id, caller.daily_limit),
    ]
    if discover:
        bucket = f"key:{caller.key_id}:discover"
        checked.append(limits.Limit.per_window(bucket, "discover", caller.discover_per_minute, 60))
    return checked


def _add_rate_limit_headers(response: Response) -> Response:
    response.headers.update(g.get("rate_limit_headers") or {})
    return response
