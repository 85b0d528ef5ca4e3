"""Every failure, from routing to a crash, comes out in the contract §2 shape."""

from __future__ import annotations

from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from server.http.app import create_app
from server.http.body import json_body


@pytest.fixture
def probe_client(db_path: Path) -> FlaskClient:
    """The real app plus two routes that exercise body parsing and an unexpected crash."""
    app = create_app({"DB": str(db_path), "KEY_SECRET": "x"})
    app.add_url_rule("/probe/echo", "echo", lambda: {"got": json_body()}, methods=["POST"])
    app.add_url_rule("/probe/crash", "crash", lambda: 1 / 0, methods=["POST"])
    return app.test_client()


def assert_error(response: TestResponse, status: int, code: str) -> dict[str, object]:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    body = response.get_json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert body["error"]["status"] == status
    assert isinstance(body["error"]["message"], str) and body["error"]["message"].endswith(".")
    return body["error"]


def test_healthz(client: FlaskClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.get_json() == {"status": "ok", "organizations": 0}


def test_unknown_route_is_404_in_shape(client: FlaskClient) -> None:
    error = assert_error(client.post("/no/such/route", json={}), 404, "not_found")
    assert "/no/such/route" in error["message"]


def test_wrong_method_is_405_and_names_the_allowed_one(probe_client: FlaskClient) -> None:
    response = probe_client.get("/probe/echo")
    error = assert_error(response, 405, "method_not_allowed")
    assert "GET" in error["message"] and "POST" in error["message"]
    assert "POST" in response.headers["Allow"]


def test_json_body_is_parsed(probe_client: FlaskClient) -> None:
    response = probe_client.post("/probe/echo", json={"a": "b", "z": 1})
    assert response.get_json() == {"got": {"a": "b", "z": 1}}


@pytest.mark.parametrize(
    ("data", "content_type", "status", "code", "says"),
    [
        (b"{not json", "application/json", 400, "invalid_json", "line 1 column 2"),
        (b"[1, 2]", "application/json", 400, "invalid_json", "JSON object"),
        (b"", "application/json", 400, "invalid_json", "JSON object"),
        (b"\xff\xfe", "application/json", 400, "invalid_json", "UTF-8"),
        (b"{}", "text/plain", 415, "unsupported_media_type", "text/plain"),
        (b"{}", "", 415, "unsupported_media_type", "application/json"),
        (b"{" + b" " * (1 << 20) + b"}", "application/json", 413, "payload_too_large", "1 MiB"),
    ],
)
def test_bad_bodies(
    probe_client: FlaskClient, data: bytes, content_type: str, status: int, code: str, says: str
) -> None:
    response = probe_client.post("/probe/echo", data=data, content_type=content_type)
    assert says in assert_error(response, status, code)["message"]


def test_json_with_charset_parameter_is_accepted(probe_client: FlaskClient) -> None:
    response = probe_client.post(
        "/probe/echo", data=b'{"a": 1}', content_type="application/json; charset=utf-8"
    )
    assert response.get_json() == {"got": {"a": 1}}


def test_unexpected_errors_are_500_without_a_trace(probe_client: FlaskClient) -> None:
    response = probe_client.post("/probe/crash", json={})
    error = assert_error(response, 500, "internal_error")
    assert "ZeroDivision" not in response.get_data(as_text=True)
    assert "logged" in error["message"]


def test_request_id_is_echoed_or_made(client: FlaskClient) -> None:
    assert (
        client.get("/healthz", headers={"X-Request-Id": "abc-123"}).headers["X-Request-Id"]
        == "abc-123"
    )
    made = client.post("/nowhere").headers["X-Request-Id"]
    assert len(made) == 36


def test_json_keys_keep_their_order(app: Flask) -> None:
    assert app.json.sort_keys is False  # type: ignore[attr-defined]
