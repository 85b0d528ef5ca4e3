"""`GET /metrics` (server/metrics.py, server/http/metrics_api.py) and JSON logs (server/logs.py):
the exposition after real requests through the app, its labels free of personal data, the
operator's token, the connector's and the worker's figures, and gunicorn summing its workers."""

from __future__ import annotations

import io
import json
import logging
import random
import socket
import string
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from flask import Flask
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from connector import oauth
from connector.platforms import PLATFORMS
from connector.platforms.base import Permanent, Retriable
from server import logs, metrics
from server.http.app import create_app
from server.storage import db
from tests import servers
from tests.helpers import hubspot_shapes
from tests.helpers.constants import SECRET
from tests.helpers.crm import CRMS, FakeHubSpot, answer
from tests.helpers.enrich_data import AVA_EMAIL, NOBODY, NOW, copy_dataset
from tests.helpers.events import hubspot_event
from tests.helpers.orgs import connected, organization
from tests.helpers.vendors import VendorTransport

TOKEN = "operator-scrape-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    """Every sample of an exposition: (name, labels) -> value."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found: Samples, name: str, **labels: str) -> float:
    """One sample's value, 0 when the exposition has none such."""
    return found.get((name, frozenset(labels.items())), 0.0)


def scrape(client: FlaskClient) -> Samples:
    response = client.get("/metrics", headers=BEARER)
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.content_type.startswith("text/plain; version=")
    return samples(response.get_data(as_text=True))


@pytest.fixture
def app(db_path: Path, enrich_dataset: Path) -> Flask:
    copy_dataset(enrich_dataset, db_path).close()
    settings = {"DB": str(db_path), "KEY_SECRET": SECRET, "CLOCK": lambda: NOW}
    return create_app({**settings, "METRICS_TOKEN": TOKEN})


@pytest.fixture
def org(db_path: Path) -> tuple[dict[str, Any], str]:
    return organization(db.connect(db_path), f"Metrico-{uuid.uuid4().hex[:6]}", "pro", NOW)


# --- who may scrape ---------------------------------------------------------------------------


def test_metrics_are_off_unless_the_operator_turns_them_on(db_path: Path) -> None:
    client = create_app({"DB": str(db_path), "KEY_SECRET": SECRET}).test_client()
    response = client.get("/metrics", headers=BEARER)
    assert response.status_code == 404
    assert response.get_json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}, {"apikey": TOKEN}],
)
def test_a_scrape_without_the_operators_token_is_refused(
    client: FlaskClient, headers: dict[str, str]
) -> None:
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 401
    assert response.get_json()["error"] == {
        "code": "unauthorized",
        "message": "The metrics need the operator's bearer token.",
        "status": 401,
    }
    assert response.headers["WWW-Authenticate"] == "Bearer"


# --- what is counted --------------------------------------------------------------------------


def test_requests_are_counted_by_route_and_status_never_by_raw_path(
    client: FlaskClient, org: tuple[dict[str, Any], str]
) -> None:
    before = scrape(client)
    _, key = org
    assert client.post("/v7/enrich", json=AVA_EMAIL, headers={"apikey": key}).status_code == 200
    assert client.post("/v7/enrich", json=AVA_EMAIL, headers={"apikey": "nope"}).status_code == 401
    assert client.get("/v7/ava.stone@lonestar-works.com").status_code == 404
    after = scrape(client)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    route = {"route": "/v7/enrich", "method": "POST"}
    assert grew("contactdata_http_requests_total", **route, status="200") == 1
    assert grew("contactdata_http_requests_total", **route, status="401") == 1
    unmatched = {"route": "unmatched", "method": "GET", "status": "404"}
    assert grew("contactdata_http_requests_total", **unmatched) == 1
    assert grew("contactdata_http_request_duration_seconds_count", **route) == 2
    assert grew("contactdata_http_request_duration_seconds_bucket", **route, le="+Inf") == 2


MADE_UP = 300  # requests with a made-up method or path, per batch


def made_up(rng: random.Random, count: int) -> Iterator[tuple[str, str]]:
    """(method, path) pairs a client could make up: made-up methods on real paths, and real
    or made-up methods on made-up paths (under the settings page's catch-all too)."""
    paths = ("/v7/enrich", "/openapi.json", "/settings/keys", "/hooks/x/events", "/")
    for n in range(count):
        word = "".join(rng.choices(string.ascii_uppercase, k=8))
        if n % 2:
            yield word, rng.choice(paths)
            continue
        path = f"/{word.lower()}/{n}" if n % 4 else f"/settings/{word}/%2e%2e/{n}"
        yield rng.choice(["GET", "POST", "DELETE", word]), path


def request_series(found: Samples) -> set[frozenset[tuple[str, str]]]:
    """The label sets of the request counter (the histogram's are their route and method)."""
    return {labels for name, labels in found if name == "contactdata_http_requests_total"}


def test_made_up_methods_and_paths_add_a_bounded_number_of_series(db_path: Path) -> None:
    settings = {"DB": str(db_path), "KEY_SECRET": SECRET, "METRICS_TOKEN": TOKEN}
    client = connector_app(settings).test_client()  # the settings page's routes too
    rng = random.Random(34)
    before = request_series(scrape(client))
    for method, path in made_up(rng, MADE_UP):
        assert client.open(path, method=method).status_code in (404, 405)
    first = request_series(scrape(client))
    for method, path in made_up(rng, MADE_UP):
        client.open(path, method=method)
    assert len(first - before) <= 20  # unmatched and the settings catch-all, by 3 methods and other
    assert request_series(scrape(client)) == first  # a second batch adds none
    labels = [dict(series) for series in first]
    assert {label["method"] for label in labels} <= metrics.METHODS | {metrics.OTHER}
    assert {label["status"] for label in labels} <= {str(s) for s in metrics.STATUSES}


def test_every_method_the_apps_route_is_counted_by_its_name(db_path: Path) -> None:
    settings = {"DB": str(db_path), "KEY_SECRET": SECRET, "METRICS_TOKEN": TOKEN}
    for app in (create_app(settings), connector_app(settings)):
        routed = {method for rule in app.url_map.iter_rules() for method in rule.methods or ()}
        assert routed <= metrics.METHODS


def test_statuses_are_counted_by_name_or_else_by_class() -> None:
    assert [metrics.status_label(s) for s in (200, 405, 418, 299, 599)] == [
        "200", "405", "418", "2xx", "5xx",
    ]  # fmt: skip


def test_no_label_carries_an_organization_a_key_or_an_email(
    client: FlaskClient, org: tuple[dict[str, Any], str]
) -> None:
    row, key = org
    client.post("/v7/enrich", json=AVA_EMAIL, headers={"apikey": key})
    client.post(f"/v7/enrich/{row['id']}", json=AVA_EMAIL, headers={"apikey": key})
    text = client.get("/metrics", headers=BEARER).get_data(as_text=True)
    assert "contactdata_http_requests_total" in text
    for secret in (row["id"], row["name"], key, key[-4:] + '"', "lonestar", "@", "X-Request-Id"):
        assert secret not in text


def test_enrich_results_are_counted_by_grade_and_credits_by_tier(
    client: FlaskClient, org: tuple[dict[str, Any], str]
) -> None:
    _, key = org
    before = scrape(client)
    found = client.post("/v7/enrich", json=AVA_EMAIL, headers={"apikey": key}).get_json()
    client.post("/v7/enrich", json=NOBODY, headers={"apikey": key})
    after = scrape(client)
    graded = {"grade": found["accuracy"], "record_status": found["recordStatus"]}
    name = "contactdata_enrich_results_total"
    assert value(after, name, **graded) - value(before, name, **graded) == 1
    no_match = {"grade": "none", "record_status": "No Match"}
    assert value(after, name, **no_match) - value(before, name, **no_match) == 1
    credits = "contactdata_credits_charged_total"
    assert value(after, credits, tier="pro") - value(before, credits, tier="pro") == 1


def test_rate_limit_refusals_are_counted_by_the_limit_that_refused(
    client: FlaskClient, db_path: Path
) -> None:
    _, key = organization(db.connect(db_path), f"Slow-{uuid.uuid4().hex[:6]}", "pro", NOW, qps=1)
    before = scrape(client)
    answers = [client.post("/v7/enrich", json=NOBODY, headers={"apikey": key}) for _ in range(2)]
    assert [a.status_code for a in answers] == [200, 429]
    name = "contactdata_rate_limit_refusals_total"
    assert value(scrape(client), name, limit="qps") - value(before, name, limit="qps") == 1


def test_the_queue_depth_by_status_is_read_from_the_events_at_scrape_time(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    database, link, _ = connected(db_path, "hubspot", "pat-na1-token", secret="hubspot-secret")
    for key in ("e1", "e2", "e3"):
        hubspot_event(database, link, key, record=key)
    database.execute("UPDATE events SET status = 'dead' WHERE event_key = 'e3'")
    database.conn.commit()
    settings = {"DB": str(db_path), "KEY_SECRET": SECRET, "METRICS_TOKEN": TOKEN}
    found = scrape(connector_app(settings).test_client())
    assert value(found, "contactdata_events", status="pending") == 2
    assert value(found, "contactdata_events", status="dead") == 1
    assert value(found, "contactdata_events", status="done") == 0


def connector_app(settings: dict[str, Any]) -> Flask:
    import connector.app

    return connector.app.create_app(settings)


def test_crm_calls_are_counted_by_platform_and_outcome(client: FlaskClient) -> None:
    replies = iter([answer(200, hubspot_shapes.record("1", {})), answer(503, {}), None])

    def crm(request: httpx.Request) -> httpx.Response:
        reply = next(replies)
        if reply is None:
            raise httpx.ConnectTimeout("no answer", request=request)
        return reply

    adapter = PLATFORMS["hubspot"].adapter(
        CRMS["hubspot"].base_url, "token", httpx.Client(transport=VendorTransport(crm))
    )
    before = scrape(client)
    adapter.read("1", ["email"])
    for _ in range(2):  # the 503 and the timeout
        with pytest.raises(Retriable):
            adapter.read("1", ["email"])
    after = scrape(client)
    name = "contactdata_crm_requests_total"
    for outcome in ("2xx", "5xx", "timeout"):
        labels = {"platform": "hubspot", "outcome": outcome}
        assert value(after, name, **labels) - value(before, name, **labels) == 1


def test_token_renewals_are_counted_by_outcome(client: FlaskClient) -> None:
    token_url = "https://login.example/oauth2/token"
    grants = iter([answer(200, {"access_token": "fresh", "expires_in": 3600}), answer(400, {})])

    def endpoints(request: httpx.Request) -> httpx.Response:
        return next(grants) if str(request.url) == token_url else answer(200, {})

    credentials = oauth.Credentials(token_url, "client-id", "client-secret", "refresh-1")
    http = httpx.Client(transport=VendorTransport(endpoints))
    before = scrape(client)
    auth = oauth.Renewing(credentials, "", None, lambda _got: None, lambda: NOW)
    assert http.get("https://crm.example/contacts", auth=auth).status_code == 200
    auth = oauth.Renewing(credentials, "", None, lambda _got: None, lambda: NOW)
    with pytest.raises(Permanent):
        http.get("https://crm.example/contacts", auth=auth)
    after = scrape(client)
    name = "contactdata_token_renewals_total"
    for outcome in ("renewed", "refused"):
        assert value(after, name, outcome=outcome) - value(before, name, outcome=outcome) == 1


def test_dead_letters_are_counted(client: FlaskClient, worker_setup: Any, crm: FakeHubSpot) -> None:
    database, work, link, _ = worker_setup
    hubspot_event(database, link, "e1")
    expired = hubspot_shapes.error("EXPIRED_AUTHENTICATION", "expired")
    crm.failures.append(httpx.Response(401, json=expired))
    before = scrape(client)
    assert work.run_due() == {"dead": 1}
    name = "contactdata_dead_letters_total"
    assert value(scrape(client), name) - value(before, name) == 1


def test_the_worker_serves_its_own_figures_on_its_bind_with_the_token() -> None:
    port = servers.free_port()
    server = metrics.serve_exposition(f"127.0.0.1:{port}", TOKEN)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        assert httpx.get(url).status_code == 401
        metrics.dead_letter()
        found = samples(httpx.get(url, headers=BEARER).text)
        assert value(found, "contactdata_dead_letters_total") >= 1
    finally:
        server.shutdown()
        server.server_close()


# --- JSON logs --------------------------------------------------------------------------------


@pytest.fixture
def log_lines() -> Iterator[io.StringIO]:
    """What the root logger writes, in the JSON format."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    logging.getLogger().addHandler(handler)
    yield stream
    logging.getLogger().removeHandler(handler)


def test_json_log_lines_parse_and_carry_the_request_id(app: Flask, log_lines: io.StringIO) -> None:
    @app.get("/test-logs")
    def speak() -> dict[str, str]:
        logging.getLogger("tests.speaker").warning("said %s", "hello")
        return {}

    app.test_client().get("/test-logs", headers={"X-Request-Id": "req-123"})
    lines = [json.loads(line) for line in log_lines.getvalue().splitlines()]
    spoken = [line for line in lines if line["logger"] == "tests.speaker"]
    assert spoken == [
        {
            "time": spoken[0]["time"],
            "level": "WARNING",
            "logger": "tests.speaker",
            "message": "said hello",
            "request_id": "req-123",
        }
    ]
    assert spoken[0]["time"].endswith("+00:00")


def test_log_format_json_is_a_setting(db_path: Path) -> None:
    app = create_app({"DB": str(db_path), "KEY_SECRET": SECRET, "LOG_FORMAT": "json"})
    handlers = logging.getLogger().handlers
    assert app.config["LOG_FORMAT"] == "json"
    assert any(isinstance(h.formatter, logs.JsonFormatter) for h in handlers)


# --- under gunicorn ---------------------------------------------------------------------------


def _hold_a_worker(port: int) -> socket.socket:
    """A connection that has sent half a request: the sync worker that took it waits on it."""
    held = socket.create_connection(("127.0.0.1", port))
    held.sendall(b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n")
    return held


@pytest.mark.slow
def test_under_gunicorn_the_workers_counts_are_summed_on_the_metrics_bind_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port, metrics_port = servers.free_port(), servers.free_port()
    monkeypatch.setenv("CONTACTDATA_METRICS_TOKEN", TOKEN)
    monkeypatch.setenv("CONTACTDATA_METRICS_BIND", f"127.0.0.1:{metrics_port}")
    monkeypatch.setenv("CONTACTDATA_LOG_FORMAT", "json")
    db.connect(tmp_path / "served.db").close()  # serve refuses a missing database
    process = servers.serve(tmp_path / "served.db", port, workers=2)
    try:
        held = _hold_a_worker(port)  # so that the requests below go to the other worker
        for n in range(5):
            headers = {"X-Request-Id": f"gunicorn-{n}"}
            answer = httpx.get(f"http://127.0.0.1:{port}/openapi.json", headers=headers)
            assert answer.status_code == 200
        held.sendall(b"\r\n")
        assert b" 200 OK" in held.recv(4096)
        held.close()
        assert httpx.get(f"http://127.0.0.1:{port}/metrics", headers=BEARER).status_code == 404
        scraped = f"http://127.0.0.1:{metrics_port}/metrics"
        assert httpx.get(scraped).status_code == 401
        found = samples(httpx.get(scraped, headers=BEARER).text)
        assert httpx.post(f"http://127.0.0.1:{metrics_port}/v7/enrich", json={}).status_code == 404
    finally:
        servers.stop(process)
    route = {"route": "/openapi.json", "method": "GET", "status": "200"}
    assert value(found, "contactdata_http_requests_total", **route) == 5 + 1  # + the held one
    output = process.stdout.read().decode()  # type: ignore[union-attr]
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    access = [line for line in lines if line["logger"] == "gunicorn.access"]
    assert {"gunicorn-0", "gunicorn-4"} <= {line["request_id"] for line in access}
    assert all({"time", "level", "message"} <= set(line) for line in lines)


@pytest.mark.slow
def test_under_gunicorn_made_up_methods_add_a_bounded_number_of_series(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = servers.free_port()
    monkeypatch.setenv("CONTACTDATA_METRICS_TOKEN", TOKEN)
    db.connect(tmp_path / "served.db").close()
    process = servers.serve(tmp_path / "served.db", port, workers=2)
    base, rng = f"http://127.0.0.1:{port}", random.Random(7)
    try:
        with httpx.Client(base_url=base) as http:
            before = request_series(samples(http.get("/metrics", headers=BEARER).text))
            for method, path in made_up(rng, 100):
                assert http.request(method, path).status_code in (404, 405)
            after = request_series(samples(http.get("/metrics", headers=BEARER).text))
    finally:
        servers.stop(process)
    assert len(after - before) <= 10  # unmatched, by 3 methods and other, 404 and 405
    assert {dict(series)["method"] for series in after} <= metrics.METHODS | {metrics.OTHER}
