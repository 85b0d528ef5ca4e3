"""The admin settings page, /settings: an organization's admin signs in with the admin API key
and manages keys, users, connections, deliveries, usage, schedules, the audit log, the credit
history and the do-not-enrich list in a browser.

Server-rendered (templates/settings/) with one stylesheet and one script (static/) and nothing
inline, so the Content-Security-Policy allows no inline code at all. Every key and user action
calls the use case the admin API calls (server/admin.py, with a Context naming the admin's
key), and the connector's own actions are logged under the same actor, so all of them land in
one audit log. The session cookie holds a random session id; the server's row of that session
(connector/store.py) holds the key's id, its organization, a mark naming the value signed in
with (an HMAC of its hash, never the value) and when it began. Signing out ends the row, and a
session ends 8 hours after sign-in however recently it was used; every request checks the key
again, so a suspended key or a value rotated out ends the session too.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import ipaddress
import json
import secrets
import uuid
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from itertools import pairwise
from typing import Any, TypeVar

from flask import (
    Blueprint,
    Flask,
    Response,
    abort,
    current_app,
    flash,
    g,
    make_response,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_wtf.csrf import CSRFError, CSRFProtect
from sqlite_utils import Database
from werkzeug.exceptions import HTTPException, MethodNotAllowed

import server
from connector import backfill, mapping_versions, mappings, scheduler, store
from connector.platforms import PLATFORMS
from server import Caller, InvalidParameter, NotFound, ServiceError, admin, auth, limits, usage

blueprint = Blueprint(
    "settings",
    __name__,
    url_prefix="/settings",
    template_folder="../templates",
    static_folder="../static",
)
Row = dict[str, Any]
T = TypeVar("T")

SIGN_IN_ATTEMPTS = 5  # failed sign-ins a client address may make in SIGN_IN_WINDOW_SECONDS
SIGN_IN_WINDOW_SECONDS = 60
SESSION_LIFETIME = timedelta(hours=8)  # from sign-in, however recently the session was used
SESSION_EXPIRED = "Your session ended 8 hours after you signed in: sign in again."
EVENTS_SHOWN = 50
EVENT_STATUSES = {"pending": "waiting", "done": "done", "dead": "dead letters"}  # as the page says
ENTRIES_SHOWN = 50  # audit entries and credit changes a page
# The command line's options of a person (server/privacy.py's messages) and the form's fields.
FORM_LABELS = {
    "--email": "the work e-mail address",
    "--profile-url": "the profile URL",
    "--name": "the full name",
    "--company-domain": "the company website",
}
# The audit log's kinds of action, by prefix, and how the filter names them.
AUDIT_ACTIONS = {
    "key.": "keys",
    "user.": "users",
    "organization.": "the organization",
    "connection.": "connections",
    "mapping.": "mappings",
    "backfill.": "backfills",
    "delivery.": "deliveries",
    "schedule.": "schedules",
    "credits.": "credits",
    "privacy.": "do-not-enrich",
    "signals.": "job-change digests",
}
GRACE_CHOICES = (
    (0, "no time: it stops at once"),
    (3600, "1 hour"),
    (86_400, "1 day"),
    (604_800, "7 days"),
)
DEFAULT_GRACE = 86_400
REFRESH_DAYS = (1, 3650)
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
        "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
SIGN_IN_FAILED = (
    "Sign-in failed: that is not an active admin API key. Paste your organization's admin "
    "key (it starts with cdk_) and try again."
)
# What the test event carries, for each enrich input its mapping reads.
TEST_VALUES = {
    "conEmail": "test.contact@example.com",
    "conFirstName": "Test",
    "conLastName": "Contact",
    "conFullName": "Test Contact",
    "conJobTitle": "Test event from the settings page",
    "compName": "Example Inc",
    "compWebsite": "example.com",
}
# modules of connector/views/ adding routes to the blueprint
PAGES = ("connections", "webhooks", "preview", "install", "mappings", "backfill", "signals")
_DONE = {"suspend": "suspended", "activate": "reactivated", "active": "reactivated"}


# --- wiring ----------------------------------------------------------------------------------


def init_app(app: Flask) -> None:
    """Sessions, CSRF checks and the settings routes. Only the settings routes check CSRF
    tokens: the JSON API and /hooks (and any route added later) take keys and signatures,
    never cookies, and must answer exactly as before. Nothing here runs for them: every
    hook of the page is the blueprint's own, and the session cookie is Flask's own, Secure
    exactly when the public URL is https (what the browser reaches, however the proxy in
    front calls us; a client's X-Forwarded-Proto decides nothing)."""
    if app.config["TRUSTED_PROXIES"] < 0:
        raise ValueError("CONTACTDATA_TRUSTED_PROXIES counts proxies: 0 or more")
    app.config.update(
        SECRET_KEY=app.config.get("SECRET_KEY") or _session_secret(app),
        SESSION_COOKIE_NAME="contactdata_settings",
        SESSION_COOKIE_PATH=blueprint.url_prefix,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Strict",
        SESSION_COOKIE_SECURE=app.config["PUBLIC_URL"].lower().startswith("https://"),
        PERMANENT_SESSION_LIFETIME=SESSION_LIFETIME,  # also how old a cookie may be
        WTF_CSRF_TIME_LIMIT=None,  # a token lasts as long as its session
        # Referrer-Policy no-referrer leaves no Referer for flask-wtf's https check to compare
        # (and makes browsers send Origin: null); the SameSite=Strict session holding the
        # token already ties each form to this site.
        WTF_CSRF_SSL_STRICT=False,
        WTF_CSRF_CHECK_DEFAULT=False,  # checked in the settings blueprint alone
    )
    CSRFProtect(app)
    app.add_template_filter(platform_title)
    for page in PAGES:  # their routes join the blueprint before it is registered
        importlib.import_module(f"connector.views.{page}")
    app.register_blueprint(blueprint)


def platform_title(name: str) -> str:
    """A platform's name as the platform writes it ("HubSpot", "n8n"), for people to read."""
    platform = PLATFORMS.get(name)
    return platform.title if platform else name


@blueprint.before_request
def _check_csrf() -> None:
    """Every settings form carries its session's CSRF token (flask-wtf refuses it otherwise);
    a URL with no page behind it changes nothing and needs none."""
    if request.endpoint != "settings.unknown_page":
        current_app.extensions["csrf"].protect()


def _session_secret(app: Flask) -> str:
    """The key sessions are signed with: derived from the server secret, so every worker
    process and restart signs alike, and no other use of that secret meets it."""
    secret: bytes = app.config["KEY_SECRET_BYTES"]
    return hmac.new(secret, b"contactdata settings session", hashlib.sha256).hexdigest()


@blueprint.after_request
def _add_security_headers(response: Response) -> Response:
    """Every response under /settings (errors, static files and unknown URLs too) gets the
    headers; pages, which show keys or their hints, are never stored by the browser or a
    proxy."""
    response.headers.update(SECURITY_HEADERS)
    if targets := g.get("form_targets"):  # a form whose answer redirects to another site
        policy = SECURITY_HEADERS["Content-Security-Policy"]
        allowed = " ".join(["'self'", *targets])
        response.headers["Content-Security-Policy"] = policy.replace(
            "form-action 'self'", f"form-action {allowed}"
        )
    if request.endpoint != "settings.static":
        response.headers["Cache-Control"] = "no-store"
    return response


# --- who is signed in ------------------------------------------------------------------------

# The OAuth callback checks its session itself: a browser coming back from a CRM's consent
# page (another site) sends no SameSite=Strict cookie until the page asks again (install.py).
_OPEN_ENDPOINTS = {
    "settings.sign_in",
    "settings.static",
    "settings.unknown_page",
    "settings.oauth_callback",
}


@blueprint.before_request
def _admit() -> Response | None:
    """Every page but sign-in needs a signed-in admin whose key still admits them."""
    if request.endpoint in _OPEN_ENDPOINTS:
        return None
    caller = _session_caller()
    if caller is None:
        return redirect(url_for(".sign_in"), 303)
    g.caller = caller
    return None


def _session_caller() -> Caller | None:
    """The admin of this session, checked again now (a suspended key, user or a value rotated
    out ends the session), or None."""
    row = _live_session()
    if row is None:
        return None
    try:
        caller = auth.resume(db(), server_secret(), row["key_id"], row["mark"], server.now())
    except ServiceError as error:
        _end_session()
        flash(f"You were signed out: {error.message}", "error")
        return None
    if caller.org_id != row["org_id"]:
        _end_session()
        return None
    return caller


def signed_in() -> Caller | None:
    """For a page that admits without a session (`_OPEN_ENDPOINTS`): the admin of this
    session, checked as every page checks it (then `g.caller`), or None."""
    caller = _session_caller()
    if caller is not None:
        g.caller = caller
    return caller


def session_key() -> str:
    """The server's id of this browser's session (the digest of the cookie's random id): what
    a pending OAuth authorization is bound to. Call it on a page that admitted someone."""
    session_id = session.get("session_id")
    if not isinstance(session_id, str):
        raise RuntimeError("no settings session")  # _admit has let nobody in without one
    return _digest(session_id)


def _live_session() -> Row | None:
    """The server's row of this browser's session while it lasts: not ended (signed out, or
    replaced by a later sign-in) and begun less than SESSION_LIFETIME ago; else None, and the
    cookie forgets it."""
    session_id = session.get("session_id")
    if not isinstance(session_id, str):
        return None
    row = store.settings_session(db(), _digest(session_id))
    if row is None or row["ended_at"]:
        session.clear()
        return None
    if row["created_at"] <= server.iso(server.now() - SESSION_LIFETIME):
        _end_session()
        flash(SESSION_EXPIRED, "error")
        return None
    return row


def _start_session(caller: Caller, mark: str) -> None:
    """A new session for `caller` on the server (ending this browser's previous one and
    purging those that admit nobody any more); the cookie gets its random id, and a fresh
    CSRF token on the next form."""
    session_id, now = secrets.token_urlsafe(32), server.now()
    row = {
        "id": _digest(session_id),
        "key_id": caller.key_id,
        "org_id": caller.org_id,
        "mark": mark,
        "created_at": server.iso(now),
    }
    with server.write(db()) as database:
        _end_session()
        store.purge_settings_sessions(database, server.iso(now - SESSION_LIFETIME))
        store.start_settings_session(database, row)
    session["session_id"] = session_id


def _end_session() -> None:
    """End this browser's session on the server, so no copy of its cookie works any more,
    and empty the cookie."""
    session_id = session.get("session_id")
    if isinstance(session_id, str):
        with server.write(db()) as database:
            store.end_settings_session(database, _digest(session_id), server.iso(server.now()))
    session.clear()


def _digest(session_id: str) -> str:
    """What the server keeps of a session id: its SHA-256, so the table alone resumes nothing."""
    return hashlib.sha256(session_id.encode()).hexdigest()


@blueprint.route("/sign-in", methods=["GET", "POST"])
def sign_in() -> Response:
    """The sign-in form; a wrong key gets the form again with one message that says no more."""
    if request.method == "GET":
        if _session_caller() is not None:
            return redirect(url_for(".keys"), 303)
        return render("sign_in.html")
    # Only failed attempts count, per client address (behind trusted proxies, the client's):
    # guessing stays at SIGN_IN_ATTEMPTS a minute an address, and admins signing in never
    # lock each other out.
    limit = _sign_in_limit()
    if limiter().count(limit, server.now()) >= SIGN_IN_ATTEMPTS:
        wait = SIGN_IN_WINDOW_SECONDS
        message = f"Too many sign-in attempts from your address. Wait {wait} seconds and try again."
        response = render("sign_in.html", 429, error=message)
        response.headers["Retry-After"] = str(wait)
        return response
    value = request.form.get("api_key", "").strip()
    try:
        caller, mark = auth.sign_in(db(), server_secret(), value, server.now())
    except ServiceError:
        limiter().hit([limit], server.now())
        return render("sign_in.html", 401, error=SIGN_IN_FAILED)
    _start_session(caller, mark)
    flash(f"Signed in to {caller.org_name} as {caller.email}.", "success")
    return redirect(url_for(".keys"), 303)


@blueprint.post("/sign-out")
def sign_out() -> Response:
    """End the session, on the server too: a copy of the cookie stops working."""
    _end_session()
    flash("You are signed out.", "success")
    return redirect(url_for(".sign_in"), 303)


@blueprint.get("")
@blueprint.get("/")
def home() -> Response:
    return redirect(url_for(".keys"), 303)


def _sign_in_limit() -> limits.Limit:
    forwarded = request.headers.get("X-Forwarded-For", "")
    address = client_address(request.remote_addr, forwarded, current_app.config["TRUSTED_PROXIES"])
    return limits.Limit.per_window(
        f"settings-sign-in:{address}", "sign-in", SIGN_IN_ATTEMPTS, SIGN_IN_WINDOW_SECONDS
    )


def client_address(remote_addr: str | None, forwarded_for: str, trusted_proxies: int) -> str:
    """The client the sign-in throttle counts: the entry the first of `trusted_proxies`
    proxies appended to X-Forwarded-For, as werkzeug's ProxyFix(x_for=trusted_proxies) finds
    it (what the client wrote itself is further left, never read); with no trusted proxies,
    or fewer entries than proxies, the address of the connection. A port is left out, and an
    IPv6 address counts as its /64, which one client usually holds whole."""
    hops = [hop.strip() for hop in forwarded_for.split(",")] if forwarded_for else []
    if 0 < trusted_proxies <= len(hops) and hops[-trusted_proxies]:
        return _network(hops[-trusted_proxies])
    return _network(remote_addr or "unknown")


def _network(address: str) -> str:
    """`address` without a port ("1.2.3.4:5", "[::1]:5"); an IPv6 address as its /64."""
    host = address.strip()
    if host.startswith("["):
        host = host[1:].partition("]")[0]
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    try:
        parsed = ipaddress.ip_address(host)
    except ValueError:
        return host[:100]
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, 64), strict=False))
    return str(parsed)


# --- keys ------------------------------------------------------------------------------------


@blueprint.get("/keys")
def keys() -> Response:
    """The organization's keys: status, last characters, and what can be done to each."""
    return _keys_page()


@blueprint.post("/keys")
def create_key() -> Response:
    """A new standard key; its value is shown on this response only."""
    try:
        key, value = admin.create_key(db(), context(), field("email"))
    except ServiceError as error:
        return failed(error, ".keys")
    flash(f"Key created for {key['email']}. Copy it now: it is not shown again.", "success")
    return _keys_page(value, key["email"])


@blueprint.post("/keys/update")
def update_key() -> Response:
    """Suspend, reactivate or rotate a key (with the chosen grace period)."""
    action = field("action")
    try:
        grace = integer("grace_seconds", "grace period") if action == "rotate" else None
        key, value = admin.update_key(db(), context(), field("email"), action, grace)
    except ServiceError as error:
        return failed(error, ".keys")
    if value is None:
        flash(f"The key of {key['email']} is {_DONE.get(action.casefold(), 'changed')}.", "success")
        return redirect(url_for(".keys"), 303)
    flash(
        f"The key of {key['email']} was rotated; the previous value works until "
        f"{key['expires_at']}. Copy the new value now: it is not shown again.",
        "success",
    )
    return _keys_page(value, key["email"])


def _keys_page(new_value: str | None = None, new_for: str | None = None) -> Response:
    found = admin.view_keys(db(), context(), None)
    return render(
        "keys.html",
        keys=found,
        new_value=new_value,
        new_for=new_for,
        grace_choices=GRACE_CHOICES,
        default_grace=DEFAULT_GRACE,
    )


# --- users -----------------------------------------------------------------------------------


@blueprint.get("/users")
def users() -> Response:
    """The organization's users and what can be done to each."""
    return _users_page()


@blueprint.post("/users")
def create_user() -> Response:
    """A new user with its own key; the key's value is shown on this response only."""
    try:
        _, user, value = admin.create_user(db(), context(), field("email"))
    except ServiceError as error:
        return failed(error, ".users")
    flash(
        f"User {user['email']} created with a key. Copy it now: it is not shown again.", "success"
    )
    return _users_page(value, user["email"])


@blueprint.post("/users/update")
def update_user() -> Response:
    """Suspend or reactivate a user."""
    action = field("action")
    try:
        if action not in ("suspend", "active"):
            raise InvalidParameter("Choose suspend or reactivate.")
        _, user = admin.update_user(db(), context(), field("email"), action)
    except ServiceError as error:
        return failed(error, ".users")
    flash(f"The user {user['email']} is {_DONE[action]}.", "success")
    return redirect(url_for(".users"), 303)


@blueprint.get("/users/delete")
def confirm_delete_user() -> Response:
    """The confirmation step before a deletion, which cannot be undone."""
    email = request.args.get("email", "")
    _, found = admin.view_users(db(), context())
    user = next((u for u in found if u["email"] == email.strip().casefold()), None)
    if user is None:
        return failed(NotFound(f"No user {email} in this organization."), ".users")
    return render("confirm_delete.html", user=user)


@blueprint.post("/users/delete")
def delete_user() -> Response:
    """Delete a user (final; the user's key stops working)."""
    try:
        _, user = admin.update_user(db(), context(), field("email"), "delete")
    except ServiceError as error:
        return failed(error, ".users")
    flash(f"The user {user['email']} is deleted; their key no longer works.", "success")
    return redirect(url_for(".users"), 303)


def _users_page(new_value: str | None = None, new_for: str | None = None) -> Response:
    _, found = admin.view_users(db(), context())
    return render("users.html", users=found, new_value=new_value, new_for=new_for)


# --- connections -----------------------------------------------------------------------------


@blueprint.post("/connections/<connection_id>/test-event")
def send_test_event(connection_id: str) -> Response:
    """Store a synthetic event for a connection, as the receiver stores what platforms send:
    the worker takes it up like any other, and Deliveries shows what became of it."""
    try:
        link = own_connection(connection_id)
        if not PLATFORMS[link["platform"]].crm:
            raise InvalidParameter(
                f"{link['name']} is a {platform_title(link['platform'])} connection, which "
                "takes no events."
            )
        mapping = mapping_versions.current(db(), link, "contacts")
        row = synthetic_event(link, mapping, server.iso(server.now()))
        change(lambda db: store.add_events(db, [row]), "connection.test_event", link["name"])
    except (ServiceError, mappings.MappingError) as error:
        return failed(error, ".connections_page")
    flash(
        f"Test event stored for {link['name']} (record {row['record_id']}). The worker takes "
        "it up like a platform's event; no CRM has that record, so it ends as a dead letter "
        "showing the CRM's answer (or waits and retries while the CRM cannot be reached).",
        "success",
    )
    return redirect(url_for(".deliveries"), 303)


def synthetic_event(link: Row, mapping: mappings.Mapping, stamp: str) -> Row:
    """An events row for `link` whose payload the mapping reads as a test contact with a
    record id of its own, so it can never touch a real record."""
    record_id = f"settings-test-{uuid.uuid4().hex[:12]}"
    payload: Row = {"contactdataTest": True}
    _place(payload, _preferred(mapping.record_paths), record_id)
    for field, paths in mapping.input.items():
        if field in TEST_VALUES:
            _place(payload, _preferred(paths), TEST_VALUES[field])
    return {
        "connection_id": link["id"],
        "event_key": f"settings-test:{record_id}",
        "record_id": record_id,
        "payload": json.dumps(payload),
        "thin": 0,
        "received_at": stamp,
    }


def _preferred(paths: tuple[str, ...] | list[str]) -> str:
    """The simplest of a mapping's paths to a value: a top-level name where there is one."""
    return next((path for path in paths if "." not in path), paths[0])


def _place(payload: Row, path: str, value: str) -> None:
    """Put `value` at a dotted path, making the dicts and lists (numeric parts) on the way."""
    parts = path.split(".")
    node: Any = payload
    for part, following in pairwise(parts):
        node = _slot(node, part, [] if following.isdigit() else {})
    _slot(node, parts[-1], value)


def _slot(node: Row | list[Any], part: str, default: Any) -> Any:
    """The value under `part` of a dict or list, set to `default` where there is none."""
    if isinstance(node, dict):
        return node.setdefault(part, default)
    index = int(part)
    node.extend([None] * (index + 1 - len(node)))
    if node[index] is None:
        node[index] = default
    return node[index]


# --- deliveries ------------------------------------------------------------------------------


@blueprint.get("/deliveries")
def deliveries() -> Response:
    """The organization's events, newest first, filtered by connection, outcome and UTC days
    received, a page at a time: status, attempts, what was written or the last error."""
    links = own_connections()
    names = {link["id"]: link["name"] for link in links}
    sources = event_sources(links)
    try:
        shown: Row = {"connection_id": choice("connection", names), "status": choice("status")}
        shown.update(day_bounds(), **source_filter(choice("source", sources)))
        before = older_than()
    except ServiceError as error:
        return failed(error, ".deliveries")
    rows = store.events_page(db(), g.caller.org_id, shown, before, EVENTS_SHOWN + 1)
    events = [{**row, "values": written_values(row)} for row in rows[:EVENTS_SHOWN]]
    return render(
        "deliveries.html",
        events=events,
        names=names,
        sources=sources,
        shown=request.args,
        statuses=EVENT_STATUSES,
        older=events[-1]["id"] if len(rows) > EVENTS_SHOWN else None,
    )


def event_sources(links: list[Row]) -> dict[str, str]:
    """Where events came from, for the filter: the platforms' own, or one of the backfills
    of the organization's connections (newest first, with the list or view it read)."""
    sources = {"live": "sent by the platform"}
    for link in links:
        for run in store.backfills_of(db(), link["id"]):
            started = run["started_at"][:16].replace("T", " ")
            named = f" in {run['source_name']}" if run.get("source_name") else ""
            sources[f"backfill:{run['id']}"] = (
                f"backfill {run['id']} of {link['name']} {run['kind']}{named} "
                f"(started {started} UTC)"
            )
    return sources


def source_filter(source: str) -> Row:
    """The events filter of a source: live events, or a backfill's by their key's prefix."""
    if source == "live":
        return {"live": True}
    if source:
        return {"key_prefix": backfill.key_prefix(int(source.partition(":")[2]))}
    return {}


def written_values(event: Row) -> Row:
    """What a done event wrote to its record (field: value, as sent), as the worker kept it."""
    if event["status"] != "done" or not event.get("written"):
        return {}
    values = json.loads(event["written"])
    return values if isinstance(values, dict) else {}


@blueprint.post("/deliveries/<int:event_id>/retry")
def retry_delivery(event_id: int) -> Response:
    """Make a dead letter due again now (store.retry_event, as `deliveries retry` does)."""
    if event_id > store.LARGEST_ID:  # SQLite cannot even look for it
        abort(404)
    try:
        found = store.event(db(), event_id)
        if found is None or found["connection_id"] not in {c["id"] for c in own_connections()}:
            raise NotFound(f"No event {event_id} in this organization.")
        retry = lambda db: store.retry_event(db, event_id, server.iso(server.now()))  # noqa: E731
        if not change(retry, "delivery.retry", f"event {event_id}"):
            raise InvalidParameter(
                f"Event {event_id} is {found['status']}: only a dead letter can be retried."
            )
    except ServiceError as error:
        return failed(error, ".deliveries")
    flash(f"Event {event_id} is due again; the worker takes it up next.", "success")
    return redirect(url_for(".deliveries"), 303)


# --- usage -----------------------------------------------------------------------------------


@blueprint.get("/usage")
def usage_page() -> Response:
    """Credit balance, today's enrich calls (the chart's last bar), today's API requests
    against the daily limit, 30 days of calls, and who made them: each connection's events
    and previews, by kind of record, and the API."""
    found = usage.usage(db(), limiter(), g.caller, server.now())
    names = {link["id"]: link["name"] for link in own_connections()}
    since = server.iso(datetime.combine(date.fromisoformat(found.days[0].day), time.min, UTC))
    events = store.events_per_connection(db(), g.caller.org_id, since)
    return render(
        "usage.html",
        usage=found,
        chart=chart(found.days),
        sources=[(source_name(s.endpoint, names), s) for s in found.sources],
        kinds=events_by_kind(events, names),
    )


def source_name(endpoint: str, names: dict[str, str]) -> str:
    """Who made enrich calls through `endpoint`, for people: a connection's events or
    previews, or the API endpoint itself."""
    parts = endpoint.strip("/").split("/")
    if len(parts) == 3 and parts[0] == "hooks" and parts[2] == "events":
        return f"{names.get(parts[1], 'A removed connection')}: its records' events"
    if len(parts) == 4 and parts[:2] == ["settings", "connections"] and parts[3] == "preview":
        return f"{names.get(parts[2], 'A removed connection')}: previews"
    return f"The API: {endpoint}"


def events_by_kind(rows: list[Row], names: dict[str, str]) -> list[Row]:
    """Events per connection and kind of record, with how many ended done, dead or wait."""
    table: dict[tuple[str, str], Row] = {}
    for row in rows:
        key = (names.get(row["connection_id"], row["connection_id"]), row["kind"])
        entry = table.setdefault(key, {"name": key[0], "kind": key[1], "total": 0})
        entry[row["status"]] = entry.get(row["status"], 0) + row["events"]
        entry["total"] += row["events"]
    return list(table.values())


def chart(days: list[usage.Day], width: int = 600, height: int = 160) -> Row:
    """Bar geometry for the usage chart, drawn as inline SVG by the template (no script)."""
    peak = max((day.calls for day in days), default=0)
    step = width / max(len(days), 1)
    bars = []
    for index, day in enumerate(days):
        tall = round(height * day.calls / peak, 1) if peak else 0
        x, y = round(index * step + step * 0.15, 1), round(height - tall, 1)
        bars.append({"x": x, "y": y, "width": round(step * 0.7, 1), "height": tall, "day": day})
    return {"bars": bars, "peak": peak, "width": width, "height": height}


# --- schedules -------------------------------------------------------------------------------


@blueprint.get("/schedules")
def schedules() -> Response:
    """The scheduled jobs in words with their next and last runs (the daily ones editable by
    the admin of a deployment's only organization), and each connection's refresh."""
    crm = [link for link in own_connections() if PLATFORMS[link["platform"]].crm]
    return render(
        "schedules.html",
        jobs=scheduler.status(current_app.config["DB"]),
        connections=crm,
        refresh_days=REFRESH_DAYS,
        every_days=scheduler.EVERY_DAYS,
        may_reschedule=may_reschedule(),
    )


def may_reschedule() -> bool:
    """Whether the signed-in admin may change the jobs' schedule: they run for every
    organization of the deployment, so only where theirs is the only one (a self-hosted
    install, whose admin is its operator); elsewhere `contactdata jobs reschedule`."""
    return [org["id"] for org in server.organizations(db())] == [g.caller.org_id]


@blueprint.post("/schedules/jobs/<job_id>")
def reschedule_job(job_id: str) -> Response:
    """Run a daily job every N days at HH:MM (UTC) from its next such time on."""
    if job_id not in scheduler.DAILY_JOBS:
        abort(404)
    try:
        if not may_reschedule():
            raise InvalidParameter(
                "The jobs run for every organization of this deployment: its operator "
                "changes them (contactdata jobs reschedule)."
            )
        days, at = integer("every_days", "number of days"), clock_time("at")
        job = scheduler.run_every_days(current_app.config["DB"], job_id, days, at, server.now())
        next_run = f"{job['next_run'][:16].replace('T', ' ')} UTC"
        detail = {"job": job_id, "runs": job["runs"], "nextRun": next_run}
        change(lambda database: True, "schedule.change", job["name"], detail)
    except ServiceError as error:
        return failed(error, ".schedules")
    flash(f"{job['name']} now runs {job['runs']}; next at {next_run}.", "success")
    return redirect(url_for(".schedules"), 303)


def clock_time(name: str) -> time:
    """A form's time of day, HH:MM."""
    try:
        return time.fromisoformat(field(name)).replace(second=0, microsecond=0)
    except ValueError:
        raise InvalidParameter("Give the time of day as HH:MM, for example 02:00.") from None


@blueprint.post("/schedules/connections/<connection_id>")
def set_refresh_days(connection_id: str) -> Response:
    """Change how old a connection's enriched records may get before they are refreshed."""
    try:
        link = own_connection(connection_id)
        days = integer("refresh_days", "refresh interval")
        low, high = REFRESH_DAYS
        if not low <= days <= high:
            raise InvalidParameter(f"The refresh interval must be {low} to {high} days.")
        apply = lambda database: store.set_refresh_days(database, link["id"], days)  # noqa: E731
        change(apply, "connection.refresh_days", link["name"], {"refreshDays": days})
    except ServiceError as error:
        return failed(error, ".schedules")
    flash(f"{link['name']} now refreshes records enriched over {days} days ago.", "success")
    return redirect(url_for(".schedules"), 303)


# --- audit log -------------------------------------------------------------------------------


@blueprint.get("/audit")
def audit_log() -> Response:
    """The organization's audit log, newest first, by kind of action, actor and UTC days."""
    actors = server.audit.actors(db(), g.caller.org_id)
    try:
        shown = {"action": choice("action", AUDIT_ACTIONS), "actor": choice("actor", actors)}
        shown.update(day_bounds())
        before = older_than()
    except ServiceError as error:
        return failed(error, ".audit_log")
    rows = server.audit.page(db(), g.caller.org_id, shown, before, ENTRIES_SHOWN + 1)
    entries = [{**row, "details": details(row["detail"])} for row in rows[:ENTRIES_SHOWN]]
    return render(
        "audit.html",
        entries=entries,
        actors=actors,
        actions=AUDIT_ACTIONS,
        shown=request.args,
        older=entries[-1]["id"] if len(rows) > ENTRIES_SHOWN else None,
    )


def details(text: str) -> list[tuple[str, str]]:
    """An audit entry's detail (JSON) as name and value pairs to read."""
    found = json.loads(text) if text else {}
    if not isinstance(found, dict):
        return [("detail", str(found))]
    return [
        (name, json.dumps(value) if isinstance(value, dict | list) else str(value))
        for name, value in found.items()
    ]


# --- credits ---------------------------------------------------------------------------------


@blueprint.get("/credits")
def credits_page() -> Response:
    """The balance's history: each change, newest first, a page at a time."""
    try:
        before = older_than()
    except ServiceError as error:
        return failed(error, ".credits_page")
    rows = server.credits.history(db(), g.caller.org_id, before, ENTRIES_SHOWN + 1)
    balance = server.organization(db(), g.caller.org_id)["credits"]
    return render(
        "credits.html",
        lines=rows[:ENTRIES_SHOWN],
        balance=balance,
        older=rows[ENTRIES_SHOWN - 1]["id"] if len(rows) > ENTRIES_SHOWN else None,
    )


# --- do not enrich ---------------------------------------------------------------------------


@blueprint.get("/do-not-enrich")
def do_not_enrich() -> Response:
    """The form an admin puts a person on the suppression list with (see `suppress_person`)."""
    return render("do_not_enrich.html", max_reason=server.privacy.MAX_REASON)


@blueprint.post("/do-not-enrich")
def suppress_person() -> Response:
    """Put a person who asked not to be enriched on the service's suppression list: from then
    on no organization is delivered their data, and their contact and employments are deleted
    from the dataset (`contactdata privacy suppress`, audited under this organization and the
    admin's key). An admin may only add: erasing a person's history, taking anyone off the
    list or reading it stay with the operator, since they concern every organization."""
    try:
        auth.require_active_organization(g.caller)
        person = server.suppression.person(
            email=field("email"), profile_url=field("profile_url"), name=field("name"),
            company_domain=field("company_domain"), reason=field("reason"),
        )  # fmt: skip
        hash_of = server.privacy.hasher(server_secret())
        by = (g.caller.org_id, admin.actor(context()))
        server.suppression.act(db(), hash_of, server.now(), [person], "suppress", by=by)
    except ServiceError as error:
        return failed(InvalidParameter(in_form_words(error.message)), ".do_not_enrich")
    flash(
        "Done: that person is on the do-not-enrich list. No organization is sent their data "
        "from now on, and the service's dataset no longer holds them.",
        "success",
    )
    return redirect(url_for(".do_not_enrich"), 303)


def in_form_words(message: str) -> str:
    """A privacy message written for the command line, naming the form's fields instead."""
    for option, label in FORM_LABELS.items():
        message = message.replace(option, label)
    return message


# --- errors ----------------------------------------------------------------------------------


@blueprint.errorhandler(CSRFError)
def _csrf_refused(error: CSRFError) -> Response:
    message = (
        "The form was refused: its security token is missing or out of date. Go back, "
        "reload the page and try again."
    )
    return render("error.html", 400, message=message)


@blueprint.route("/<path:unknown>", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
def unknown_page(unknown: str) -> Response:
    """Any other URL under /settings: the page's own 404, or 405 where another of its routes
    takes the URL by other methods, so that it carries the page's headers too. It needs no
    sign-in (it shows nothing of anyone) and is the last route a URL can match."""
    adapter = current_app.url_map.bind_to_environ(request.environ)
    taken = [m for m in ("GET", "HEAD", "POST") if adapter.match(method=m)[0] != request.endpoint]
    if taken:
        raise MethodNotAllowed(taken)
    abort(404)


@blueprint.errorhandler(HTTPException)
def _http_error(error: HTTPException) -> Response:
    status = error.code or 500
    message = {404: "There is no such settings page.", 405: "That page does not take this."}
    response = render("error.html", status, message=message.get(status, error.description))
    if isinstance(error, MethodNotAllowed):
        response.headers["Allow"] = dict(error.get_headers())["Allow"]
    return response


# --- helpers ---------------------------------------------------------------------------------


def db() -> Database:
    return server.get_db()


def server_secret() -> bytes:
    secret: bytes = current_app.config["KEY_SECRET_BYTES"]
    return secret


def limiter() -> limits.Limiter:
    limiter: limits.Limiter = current_app.extensions["limiter"]
    return limiter


def context() -> admin.Context:
    """Who acts, as the admin API builds it: the audit log names the admin's key."""
    return admin.Context(
        caller=g.caller,
        now=server.now(),
        request_id=g.get("request_id", ""),
        secret=server_secret(),
    )


def change(
    apply: Callable[[Database], T], action: str, target: str, detail: Row | None = None
) -> T:
    """Make a connector change for the signed-in admin, logged with it in one transaction
    (refused, like every change, for an inactive organization); what `apply` returned. A
    change that reports nothing done (False, 0) is not logged."""
    ctx = context()
    auth.require_active_organization(ctx.caller)
    with server.write(db()) as database:
        result = apply(database)
        if result:
            admin.record_action(database, ctx, action, target, detail)
    return result


def own_connections() -> list[Row]:
    return [link for link in store.connections(db()) if link["org_id"] == g.caller.org_id]


def own_connection(connection_id: str) -> Row:
    """A connection of the signed-in organization; another's (or none) is the page's 404."""
    link = store.connection(db(), connection_id)
    if link is None or link["org_id"] != g.caller.org_id:
        abort(404)
    return link


def field(name: str) -> str:
    return request.form.get(name, "").strip()


def integer(name: str, label: str) -> int:
    try:
        return int(field(name))
    except ValueError:
        raise InvalidParameter(f"The {label} must be a whole number.") from None


def choice(name: str, allowed: Any = EVENT_STATUSES) -> str:
    """A filter's value from the query string: one of `allowed`, or "" for any."""
    value = request.args.get(name, "")
    if value and value not in allowed:
        raise InvalidParameter(f"There is no {name} {value!r} to show.")
    return value


def day_bounds() -> dict[str, str]:
    """The query string's `from` and `to` days (YYYY-MM-DD, UTC, both included) as ISO bounds
    `since` and `until` (the day after `to`); absent ones left out."""
    bounds = {}
    for name, key, shift in (("from", "since", 0), ("to", "until", 1)):
        if text := request.args.get(name, ""):
            try:
                day = date.fromisoformat(text)
            except ValueError:
                raise InvalidParameter(f"Give the {name} day as YYYY-MM-DD.") from None
            start = datetime.combine(day + timedelta(days=shift), time.min, UTC)
            bounds[key] = server.iso(start)
    return bounds


def older_than() -> int | None:
    """The query string's `before`: the id below which the next page starts (keyset paging)."""
    text = request.args.get("before", "")
    if not text:
        return None
    if not text.isdigit() or int(text) > store.LARGEST_ID:
        raise InvalidParameter("That page does not exist: start from the newest.")
    return int(text)


def failed(error: ServiceError | Exception, endpoint: str, **values: Any) -> Response:
    """Back to the page (`endpoint` with its URL `values`), telling what went wrong."""
    message = error.message if isinstance(error, ServiceError) else str(error)
    flash(message, "error")
    return redirect(url_for(endpoint, **values), 303)


def render(template: str, code: int = 200, /, **context: Any) -> Response:
    now_iso = server.iso(server.now())
    page = render_template(
        f"settings/{template}", caller=g.get("caller"), now_iso=now_iso, **context
    )
    return make_response(page, code)
