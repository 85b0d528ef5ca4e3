"""Every operation of /openapi.json fuzzed in-process with schemathesis (issue 9).

Positive and negative cases go to an app holding people, two organizations and a HubSpot and
a Zapier connection, sent with the admin key, a standard key, a well-formed unknown key or
the fuzzer's own headers (/hooks: signed for real, or not). Some carry known values so they
get past "not found", and some are twisted in ways JSON allows but schemas cannot ask for
(lone surrogates, control characters, NaN, deep nesting). No answer may be a 5xx, every error
is exactly contract §2's shape, answers keep to the document, and none shows a key, a key
hash, a secret or the other organization. Then the defects it found, one plain test each.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from flask import Flask
from flask.testing import FlaskClient
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import (
    FailureGroup,
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from werkzeug.test import TestResponse

from connector import connections, mappings
from connector.app import create_app
from connector.platforms import hubspot
from connector.platforms.base import (
    WEBHOOK_ID,
    WEBHOOK_SIGNATURE,
    WEBHOOK_TIMESTAMP,
    sign_standard_webhooks,
)
from server import accounts, importer, keys
from server.config import MAX_BODY_BYTES
from server.http import access
from server.records import GRADES
from server.storage import db
from tests.helpers.constants import AVA, DATA, NOW, PLATFORMS, SECRET

LOCAL = "http://localhost"  # the test client's host: the public URL HubSpot signs requests for
HUBSPOT_SECRET = "hubspot-app-secret-0f3c"
CRM_TOKEN = "crm-token-5d1e"
LONESTAR = "D15C0000000000A1"  # a company of tests/data/discover_companies.csv
OTHER_ORG = "Umbrella Zeta Holdings"
EXAMPLES = 56  # per operation and generation mode: 11 POST operations x 2 modes x 56 = 1,232
FEW = 6  # for the operation without input (/healthz): its cases differ only in the key sent
MIN_CASES = 1000
ROLES = ("admin", "standard", "unknown", "fuzzed")
TARGETS = ("hubspot", "zapier", "fuzzed")  # whose connection a /hooks case addresses
# Most cases go as generated; a few are twisted after generation (see `_twisted`).
TWISTS = ("none",) * 8 + ("surrogate", "control", "nan", "deep", "media", "huge")

# Values a positive case may carry instead of the generated ones, per path, to reach past "not
# found" and "not one of": one of each field's options, by the case's `pick` (GENERATED: keep
# what was generated). The admin's and the standard user's e-mail addresses are left out, so
# both keys stay valid throughout.
GENERATED = object()
EMAILS = tuple(f"person{n}@fuzz-a.example" for n in range(4))  # keys without users
USERS = tuple(f"user{n}@fuzz-a.example" for n in range(3))
PLANTED: dict[str, dict[str, tuple[Any, ...]]] = {
    "/v1/discover": {
        "company_guid": (LONESTAR, "D15C0000000000B2", LONESTAR.lower(), "FFFF000000000000"),
        "accuracy": (*GRADES, "a+"),
        "mode": ("Discover", "Stats", "stats"),
        "location": (["Austin, TX"], ["78701"], ["Texas"], ["United States", "Austin"]),
        "jobTitle": (["VP Sales"], GENERATED, ["Marketing"], ["Chief Technology Officer"]),
    },
    "/v7/enrich": {
        "contactEmail": (AVA, AVA.upper(), "nobody@nowhere.example", GENERATED),
        "companyWebAddress": ("lonestar-discover.com", GENERATED, "hillcountry-analytics.com"),
    },
    "/signals/v1/key/createsignalapikey": {"email": EMAILS},
    "/signals/v1/user/createsignalapikey": {"email": USERS},
    "/signals/v1/key/view": {"email": (*EMAILS, *USERS, None)},
    "/signals/v1/key/update": {
        "email": (*EMAILS, *USERS),
        "action": ("suspend", "activate", "active", "rotate"),
        "graceSeconds": (None, 3600, 0, 604800, 60.0),
    },
    "/signals/v1/user/update": {"email": USERS, "action": ("suspend", "active", "delete")},
}
# What a platform sends to a /hooks route: the envelope a planted case starts from.
_ACTION = json.loads((PLATFORMS / "hubspot_custom_action_execution_request.json").read_text())
HOOK_SAMPLES: dict[tuple[str, str], dict[str, Any]] = {
    ("zapier", "enrich"): {"email": AVA, "first_name": "Ava"},
    ("hubspot", "enrich"): {**_ACTION, "object": {"objectId": 904, "properties": {"email": AVA}}},
    ("hubspot", "events"): json.loads((PLATFORMS / "hubspot_workflow_webhook.json").read_text()),
}
_HASH = re.compile(r"(?<![0-9a-f])[0-9a-f]{64}(?![0-9a-f])")
BUILT_IN_CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
# A twisted case is no longer the one generated: whether it was valid says nothing now.
AFTER_A_TWIST = [check for check in BUILT_IN_CHECKS if check is not negative_data_rejection]


@dataclass
class World:
    """The app under test, what the fuzzer calls it with, and what no answer may show."""

    app: Flask
    keys: dict[str, str]  # role -> key value
    links: dict[str, connections.Added]
    secrets: list[str]  # key values, their hashes, inbound secrets, the server secret
    foreign: list[str]  # the other organization's id, name, domain, e-mail, user and key ids


def _organization(database: Any, name: str, domain: str) -> tuple[dict[str, Any], str]:
    return accounts.create_organization(
        database, SECRET.encode(), NOW, name=name, website=f"https://{domain}", tier="pro",
        credits=1_000_000, qps=1_000_000, daily_limit=1_000_000, discover_per_minute=1_000_000,
    )  # fmt: skip


def _user(client: FlaskClient, admin_key: str, email: str) -> dict[str, Any]:
    response = client.post(
        "/signals/v1/user/createsignalapikey",
        json={"email": email},
        headers={"Admin-Api-Key": admin_key},
    )
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()["data"]


def _key_ids(client: FlaskClient, admin_key: str) -> list[str]:
    response = client.post("/signals/v1/key/view", json={}, headers={"Api-Key": admin_key})
    return [key["keyId"] for key in response.get_json()["data"]]


def _connections(database: Any, admin_key: str) -> dict[str, connections.Added]:
    crm = {"crm_base_url": "http://127.0.0.1:9", "crm_token": CRM_TOKEN}
    add = lambda name, platform, **more: connections.add(  # noqa: E731
        database, SECRET.encode(), NOW, name=name, platform=platform, api_key=admin_key, **more
    )
    return {
        "hubspot": add("hs", "hubspot", secret=HUBSPOT_SECRET, **crm),
        "zapier": add("zap", "zapier"),
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    path = tmp_path_factory.mktemp("fuzz") / "fuzz.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")  # the CRM is never called
        app = create_app(
            {"DB": str(path), "KEY_SECRET": SECRET, "CLOCK": lambda: NOW, "PUBLIC_URL": LOCAL}
        )
        database = db.connect(path)
        importer.import_files(
            database,
            companies=DATA / "discover_companies.csv",
            contacts=DATA / "discover_contacts.csv",
        )
        _, admin_key = _organization(database, "Acme Fuzz Corp", "acme-fuzz.example")
        other, other_key = _organization(database, OTHER_ORG, "umbrella-zeta.example")
        links = _connections(database, admin_key)
    client = app.test_client()
    standard = _user(client, admin_key, "standard@acme-fuzz.example")
    stranger = _user(client, other_key, "stranger@umbrella-zeta.example")
    values = {
        "admin": admin_key,
        "standard": standard["apiKey"][0],
        "unknown": keys.new_key(),  # well formed, checksum and all, but nobody's
    }
    every_key = [*values.values(), other_key, stranger["apiKey"][0]]
    hashes = [keys.key_hash(value, SECRET.encode()) for value in every_key]
    inbound = [HUBSPOT_SECRET, CRM_TOKEN, links["zapier"].secret]
    theirs = [other["id"], OTHER_ORG, "umbrella-zeta.example", stranger["email"]]
    return World(
        app=app,
        keys=values,
        links=links,
        secrets=[*every_key, *hashes, *inbound, SECRET],
        foreign=[*theirs, stranger["userId"], *_key_ids(client, other_key)],
    )


# --- sending a case --------------------------------------------------------------------------


@dataclass(frozen=True)
class Choice:
    """How a case is sent, drawn beside it: who calls and through which key header, which
    connection a /hooks case addresses and whether it is signed, whether (and which) known
    values replace generated ones, and how the body is twisted."""

    role: str
    header: str
    target: str
    signed: bool
    planted: bool
    pick: int
    twist: str


CHOICES = st.builds(
    Choice,
    role=st.sampled_from(ROLES),
    header=st.sampled_from(access.KEY_HEADERS),
    target=st.sampled_from(TARGETS),
    signed=st.booleans(),
    planted=st.booleans(),
    pick=st.integers(0, 59),  # every option count (3, 4, 5) divides 60
    twist=st.sampled_from(TWISTS),
)


def _place(document: dict[str, Any], path: str, value: Any) -> None:
    """Set a dotted path of a document, making the objects on the way."""
    *parents, last = path.split(".")
    for key in parents:
        child = document.get(key)
        document[key] = document = child if isinstance(child, dict) else {}
    document[last] = value


@functools.cache
def _input_paths(platform: str) -> tuple[tuple[str, ...], ...]:
    """Where the platform's mapping file reads each enrich input field."""
    mapping = mappings.load(connections.MAPPINGS / f"{platform}.yaml")
    return tuple(tuple(paths) for paths in mapping.input.values())


def _hook_body(platform: str, route: str, generated: Any, pick: int) -> dict[str, Any]:
    """A platform's sample; on odd picks, with the generated body's values put where the
    connection's mapping reads each input field (so they reach the enrichment)."""
    body = json.loads(json.dumps(HOOK_SAMPLES[(platform, route)]))
    values = list(generated.values()) if isinstance(generated, dict) else []
    if pick % 2 and values:
        for index, paths in enumerate(_input_paths(platform)):
            _place(body, paths[pick % len(paths)], values[index % len(values)])
    return body


def _plant(case: schemathesis.Case, choice: Choice, route: str) -> None:
    """Put known values in a positive case: a platform's sample as a /hooks body, or one
    option of each PLANTED field of the path."""
    if (choice.target, route) in HOOK_SAMPLES and case.media_type == "application/json":
        case.body = _hook_body(choice.target, route, case.body, choice.pick)
        return
    for name, options in PLANTED.get(case.path, {}).items():
        value = options[choice.pick % len(options)]
        if value is not GENERATED and isinstance(case.body, dict):
            case.body[name] = value


def _strings_twisted(value: Any, twist: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return twist(value)
    if isinstance(value, list):
        return [_strings_twisted(item, twist) for item in value]
    if isinstance(value, dict):
        return {key: _strings_twisted(item, twist) for key, item in value.items()}
    return value


def _twisted(kwargs: dict[str, Any], twist: str) -> bytes | None:
    """The body to send: as generated, or what a schema cannot rule out: JSON with lone
    surrogates (Python writes them as \\udc80 escapes), control characters, NaN, 5,000
    levels of nesting, or over the size limit."""
    if "json" not in kwargs:
        data = kwargs.get("data")
        return data.encode() if isinstance(data, str) else data
    document = kwargs["json"]
    if twist == "surrogate":
        document = _strings_twisted(document, lambda text: text + "\udc80")
    elif twist == "control":
        document = _strings_twisted(document, lambda text: f"\x00{text}\x1b")
    elif twist == "nan" and isinstance(document, dict):
        document = {**document, "fuzzed": float("nan")}
    elif twist == "deep":
        return b"[" * 5000 + json.dumps(document).encode() + b"]" * 5000
    elif twist == "huge":
        return json.dumps({"padding": " " * MAX_BODY_BYTES, "body": document}).encode()
    return json.dumps(document).encode()


def _with_key(headers: dict[str, str], value: str, header: str) -> dict[str, str]:
    """The headers with every key header replaced by `header: value`."""
    names = {name.casefold().replace("_", "-") for name in access.KEY_HEADERS}
    kept = {k: v for k, v in headers.items() if k.casefold().replace("_", "-") not in names}
    return {**kept, header: value}


def _signed(target: str, secret: str, url: str, body: bytes, headers: dict[str, str]) -> None:
    """Sign a /hooks request with a connection's inbound secret, as its platform does."""
    if target == "hubspot":
        stamp = int(NOW.timestamp() * 1000)
        signature = hubspot.sign_v3(secret, "POST", url, body, stamp)
        headers[hubspot.SIGNATURE_V3] = signature
        headers[hubspot.TIMESTAMP] = str(stamp)
        return
    stamp, message = int(NOW.timestamp()), f"msg_{hashlib.sha256(body).hexdigest()[:24]}"
    headers[WEBHOOK_ID] = message
    headers[WEBHOOK_TIMESTAMP] = str(stamp)
    headers[WEBHOOK_SIGNATURE] = sign_standard_webhooks(secret, message, stamp, body)


def send(world: World, case: schemathesis.Case, choice: Choice) -> TestResponse:
    """Send a case through the Flask test client, with the chosen key, signature and twist."""
    hook = "connection_id" in (case.path_parameters or {})
    known = hook and choice.target != "fuzzed"
    if known:
        case.path_parameters["connection_id"] = world.links[choice.target].row["id"]
    if choice.planted and case.meta is not None and not case.meta.generation.mode.is_negative:
        _plant(case, choice, case.path.rsplit("/", 1)[-1] if hook else "")
    kwargs = case.as_transport_kwargs()
    headers, body = dict(kwargs["headers"]), _twisted(kwargs, choice.twist)
    query = kwargs.get("query_string") or None
    url = f"{LOCAL}{kwargs['path']}"
    if choice.twist == "media":
        headers["Content-Type"] = "text/plain"
    if known and choice.signed:
        query = None  # a HubSpot signature covers the URL as sent: no generated parameters
        _signed(choice.target, world.links[choice.target].secret, url, body or b"", headers)
    elif not hook and choice.role != "fuzzed":
        headers = _with_key(headers, world.keys[choice.role], choice.header)
    client = world.app.test_client()
    return client.open(url, method=kwargs["method"], headers=headers, data=body, query_string=query)


# --- checks ----------------------------------------------------------------------------------


def error_shape(_: Any, response: Any, case: schemathesis.Case) -> None:
    """Contract §2: an error body is exactly {"error": {"code", "message", "status"}}."""
    if response.status_code < 400:
        return
    body = json.loads(response.content)
    assert isinstance(body, dict) and set(body) == {"error"}, body
    error = body["error"]
    assert isinstance(error, dict) and set(error) == {"code", "message", "status"}, body
    assert isinstance(error["code"], str) and re.fullmatch(r"[a-z][a-z_]*", error["code"]), body
    assert isinstance(error["message"], str) and error["message"].strip(), body
    assert type(error["status"]) is int and error["status"] == response.status_code, body


def no_leaks(world: World) -> Callable[[Any, Any, schemathesis.Case], None]:
    """No answer shows a key value, a key hash, a secret, or the other organization."""

    def check(_: Any, response: Any, case: schemathesis.Case) -> None:
        shown = response.content.decode("utf-8", "replace") + repr(dict(response.headers))
        for value in world.secrets:
            assert value not in shown, f"a secret ({value[:6]}…) in the answer"
        for value in world.foreign:
            assert value not in shown, f"the other organization's {value!r} in the answer"
        assert not _HASH.search(shown), "something shaped like a key hash in the answer"

    return check


# --- the run ---------------------------------------------------------------------------------


def _has_input(operation: schemathesis.APIOperation) -> bool:
    return bool(operation.body or operation.path_parameters)


def _modes(operation: schemathesis.APIOperation) -> tuple[GenerationMode, ...]:
    """Negative cases need something to make invalid: a body or a parameter."""
    if _has_input(operation):
        return (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    return (GenerationMode.POSITIVE,)


def fuzz(
    world: World,
    operation: schemathesis.APIOperation,
    mode: GenerationMode,
    failures: dict[str, str],
) -> int:
    """Run one operation's cases of one mode, recording each distinct failure; the count of
    cases sent."""
    checks = [error_shape, no_leaks(world)]
    sent = 0

    @given(case=operation.as_strategy(generation_mode=mode), choice=CHOICES)
    @settings(
        max_examples=EXAMPLES if _has_input(operation) else FEW,
        derandomize=True,  # the same cases on every run
        database=None,
        deadline=None,
        phases=[Phase.generate],  # failures are collected, not raised: nothing to shrink
        suppress_health_check=list(HealthCheck),
    )
    def run(case: schemathesis.Case, choice: Choice) -> None:
        nonlocal sent
        response = send(world, case, choice)
        sent += 1
        try:
            built_in = BUILT_IN_CHECKS if choice.twist == "none" else AFTER_A_TWIST
            case.validate_response(response, checks=built_in, additional_checks=checks)
        except (FailureGroup, AssertionError) as failed:
            found = failed.exceptions if isinstance(failed, FailureGroup) else (failed,)
            for failure in found:
                title = str(failure).splitlines()[0][:100]
                name = f"{operation.label} [{mode.value}, {choice.twist}]: {title}"
                shown = f"{name}\n{failure}"[:1500]
                failures.setdefault(name, f"{shown}\nsent as {choice}: {_shown(case)}")

    run()
    return sent


def _shown(case: schemathesis.Case) -> str:
    return f"{case.method} {case.formatted_path} body={case.body!r:.300}"


def test_fuzzing_finds_no_server_error_wrong_error_shape_or_leak(world: World) -> None:
    schema = schemathesis.openapi.from_wsgi("/openapi.json", world.app)
    started = time.monotonic()
    failures: dict[str, str] = {}
    cases = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode in _modes(operation):
            cases += fuzz(world, operation, mode, failures)
    print(f"\nfuzzed {cases} cases in {time.monotonic() - started:.1f} s")
    assert not failures, f"{len(failures)} distinct failures:\n\n" + "\n\n".join(failures.values())
    assert cases >= MIN_CASES, f"only {cases} cases ran"


# --- defects the fuzzer found, each as a plain test ------------------------------------------


@pytest.fixture
def fresh(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[FlaskClient, str, dict]:
    """A product app with one organization (its admin key) and its two connections."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    app = create_app(
        {"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": lambda: NOW, "PUBLIC_URL": LOCAL}
    )
    database = db.connect(db_path)
    _, admin_key = _organization(database, "Acme Fuzz Corp", "acme-fuzz.example")
    return app.test_client(), admin_key, _connections(database, admin_key)


DEEP = b'{"email": ' + b"[" * 5000 + b"]" * 5000 + b"}"  # was a RecursionError: 500
SURROGATE = b'{"email": "ava\\udc80@acme-fuzz.example", "companyGuid": "\\udc80"}'  # was 500


NAN = b'{"email": null, "x": NaN}'  # not JSON: was read, and answered 200


@pytest.mark.parametrize("body", [DEEP, SURROGATE, NAN], ids=["deep", "surrogate", "nan"])
@pytest.mark.parametrize(
    "path",
    ["/signals/v1/key/createsignalapikey", "/signals/v1/key/view", "/v7/enrich", "/v1/discover"],
)
def test_json_no_store_can_hold_is_invalid_json_not_a_server_error(
    fresh: tuple[FlaskClient, str, dict], path: str, body: bytes
) -> None:
    client, admin_key, _ = fresh
    headers = {"Api-Key": admin_key, "Content-Type": "application/json"}
    response = client.post(path, data=body, headers=headers)
    assert response.status_code == 400, response.get_data(as_text=True)
    assert response.get_json()["error"]["code"] == "invalid_json"


@pytest.mark.parametrize("body", [DEEP, SURROGATE], ids=["deep", "surrogate"])
def test_a_hook_body_no_store_can_hold_is_refused_not_a_server_error(
    fresh: tuple[FlaskClient, str, dict], body: bytes
) -> None:
    client, _, links = fresh
    zap = links["zapier"]
    bearer = {"Authorization": f"Bearer {zap.secret}"}
    enriched = client.post(f"/hooks/{zap.row['id']}/enrich", data=body, headers=bearer)
    headers: dict[str, str] = {}
    url = f"{LOCAL}/hooks/{links['hubspot'].row['id']}/events"
    _signed("hubspot", HUBSPOT_SECRET, url, body, headers)
    stored = client.post(url, data=body, headers=headers)
    for response in (enriched, stored):
        assert response.status_code == 400, response.get_data(as_text=True)
        assert response.get_json()["error"]["code"] == "invalid_payload"


def test_whole_numbers_written_with_a_fraction_are_whole_numbers(
    fresh: tuple[FlaskClient, str, dict], db_path: Path
) -> None:
    """JSON Schema (and the document) call 100.0 an integer; so does the service now."""
    client, admin_key, _ = fresh
    importer.import_files(
        db.connect(db_path),
        companies=DATA / "discover_companies.csv",
        contacts=DATA / "discover_contacts.csv",
    )
    body = {"company_guid": LONESTAR, "accuracy": "B", "pagination_required": True}
    paged = client.post(
        "/v1/discover", json={**body, "page_size": 2.0}, headers={"Api-Key": admin_key}
    )
    assert paged.status_code == 200, paged.get_json()
    assert paged.get_json()["data"]["page_size"] == 2
    client.post(
        "/signals/v1/key/createsignalapikey",
        json={"email": "k@acme-fuzz.example"},
        headers={"Api-Key": admin_key},
    )
    rotated = client.post(
        "/signals/v1/key/update",
        json={"email": "k@acme-fuzz.example", "action": "rotate", "graceSeconds": 3600.0},
        headers={"Api-Key": admin_key},
    )
    assert rotated.status_code == 200, rotated.get_json()
    for wrong in (2.5, "2", True):
        refused = client.post(
            "/v1/discover", json={**body, "page_size": wrong}, headers={"Api-Key": admin_key}
        )
        assert refused.get_json()["error"]["code"] == "invalid_parameter", wrong
