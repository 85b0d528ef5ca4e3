"""Through the real production server: gunicorn with sync workers, as `contactdata serve`."""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from connector import connections, store
from connector.platforms import PLATFORMS, hubspot
from connector.platforms.base import sign_standard_webhooks
from server import accounts, config
from server.http.serve import masked_target
from tests.servers import free_port, serve, start, stop

PLATFORM_SAMPLES = Path(__file__).parent / "data" / "platforms"

pytestmark = pytest.mark.slow

# The real app with one extra route that reports which key headers reached it.
LAUNCHER = textwrap.dedent(
    """
    import sys
    from flask import request
    from server.http.serve import _Gunicorn, gunicorn_options
    import server.http.app

    real_create_app = server.http.app.create_app

    def create_app(settings):
        app = real_create_app(settings)
        names = ["apikey", "Api-Key", "API_KEY", "Admin-Api-Key", "Admin_Api_Key"]
        app.add_url_rule("/probe/keys", "keys", methods=["POST"],
                         view_func=lambda: {n: request.headers.get(n) for n in names})
        # what a worker timeout raises: it escapes the app, and gunicorn logs the request
        app.add_url_rule("/probe/exit", "exit", view_func=lambda: sys.exit(1))
        return app

    server.http.app.create_app = create_app
    db, port = sys.argv[1], int(sys.argv[2])
    _Gunicorn({"DB": db, "KEY_SECRET": "x", "LOG_LEVEL": "WARNING",
               "HOST": "127.0.0.1", "PORT": port, "WORKERS": 2},
              gunicorn_options("127.0.0.1", port, 2)).run()
    """
)


def _start_probe(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    launcher = folder / "launch.py"
    launcher.write_text(LAUNCHER)
    process = start([sys.executable, str(launcher), str(folder / "serve.db"), str(port)], port)
    return process, f"http://127.0.0.1:{port}"


@pytest.fixture(scope="module")
def probe_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    process, url = _start_probe(tmp_path_factory.mktemp("serve"))
    yield url
    stop(process)


def test_underscore_key_headers_reach_the_app_through_gunicorn(probe_server: str) -> None:
    for sent in ["API_KEY", "Admin_Api_Key", "apikey", "Api-Key"]:
        got = httpx.post(f"{probe_server}/probe/keys", json={}, headers={sent: "cdk_test"}).json()
        assert got[sent] == "cdk_test", (sent, got)


def test_errors_keep_their_shape_through_gunicorn(probe_server: str) -> None:
    oversize = b"{" + b" " * (2 << 20) + b"}"
    response = httpx.post(
        f"{probe_server}/probe/keys",
        content=oversize,
        headers={"Content-Type": "application/json"},
    )
    # The probe route does not read the body, so a 413 here comes from the size limit alone.
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    missing = httpx.get(f"{probe_server}/nope")
    assert missing.json() == {
        "error": {"code": "not_found", "message": "No such endpoint: /nope.", "status": 404}
    }
    assert missing.headers["X-Request-Id"]


def _chunks(body: bytes, size: int = 64 << 10) -> Iterator[bytes]:
    """`body` as an iterator, which httpx sends chunked, without Content-Length."""
    for offset in range(0, len(body), size):
        yield body[offset : offset + size]


def test_a_chunked_body_over_the_limit_is_refused_not_cut(probe_server: str) -> None:
    """Valid JSON padded with spaces past 1 MiB: cut at the limit it would still parse."""
    padded = b'{"email": "ava@example.com"}'.ljust((1 << 20) + 100, b" ")
    response = httpx.post(
        f"{probe_server}/v7/enrich",
        content=_chunks(padded),
        headers={"Content-Type": "application/json", "API_KEY": "cdk_unknown"},
    )
    assert response.request.headers["Transfer-Encoding"] == "chunked"
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


def test_a_chunked_body_within_the_limit_is_read_whole(probe_server: str) -> None:
    """Exactly 1 MiB whose last byte closes the JSON, the key in it: cut, it would be 400."""
    head = b'{"email": "ava@example.com", "apikey": "cdk_unknown", "pad": "'
    body = head + b"x" * ((1 << 20) - len(head) - 2) + b'"}'
    assert len(body) == 1 << 20
    response = httpx.post(
        f"{probe_server}/v7/enrich",
        content=_chunks(body),
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"


def test_contactdata_serve_answers_healthz(tmp_path: Path) -> None:
    port = free_port()
    store.connect(tmp_path / "s.db").close()  # serve refuses a missing database
    process = serve(tmp_path / "s.db", port)
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").json()["status"] == "ok"
    finally:
        stop(process)


def test_masked_target_keeps_paths_and_names_but_no_value() -> None:
    assert masked_target("/hooks/c1/events") == "/hooks/c1/events"
    assert masked_target("/hooks/c1/events?key=s3cret") == "/hooks/c1/events?key=***"
    assert masked_target("/x?code=a%3Db&flag&=v") == "/x?code=***&***&=***"


def _every_platform(db_path: Path) -> tuple[dict[str, connections.Added], list[str]]:
    """A connection of each platform, and every secret they and their organization hold."""
    db = store.connect(db_path)
    secret = config.key_secret({"DB": str(db_path)})
    now = datetime.now(UTC)
    _, key = accounts.create_organization(
        db, secret, now, name="Acme", website="acme.example", tier="pro", credits=10
    )
    crm = {"crm_base_url": "http://127.0.0.1:9", "crm_token": "crm-token-5eb1-0001"}
    links = {}
    for platform, kind in PLATFORMS.items():
        extra: dict[str, Any] = {**crm} if kind.crm else {}
        if platform == "hubspot":
            extra["secret"] = "hubspot-app-secret-5eb1"
        if platform == "salesforce":
            extra["salesforce_org_ids"] = ("00Do0000000xxxxxxx",)
        links[platform] = connections.add(
            db, secret, now, name=platform, platform=platform, api_key=key, **extra
        )
    db.close()
    return links, [key, crm["crm_token"], *(link.secret for link in links.values())]


def _send_every_platforms_requests(
    base: str, links: dict[str, connections.Added], key: str
) -> None:
    """Each platform's requests as it sends them, with its secret where it puts it (and once
    more with a wrong one), and the API's with the key in a header, the body and the query."""
    samples = PLATFORM_SAMPLES
    for platform, link in links.items():
        hooks = f"{base}/hooks/{link.row['id']}"
        kind = PLATFORMS[platform]
        for secret in (link.secret, "wrong-" + link.secret):
            for route in ("events", "enrich") if kind.crm else ("enrich",):
                url, headers, body = f"{hooks}/{route}", {}, b'{"email": "ava@example.com"}'
                if kind.signing == "url-secret":
                    url += f"?{kind.url_param}={secret}"
                    if platform == "salesforce":
                        body = (samples / "salesforce_outbound_message.xml").read_bytes()
                elif kind.signing == "basic":
                    basic = base64.b64encode(f"user:{secret}".encode()).decode()
                    headers["Authorization"] = f"Basic {basic}"
                elif kind.signing == "body-token":
                    document = json.loads((samples / "zoho_webhook.json").read_text())
                    body = json.dumps({**document, "token": secret}).encode()
                elif kind.signing == "hubspot":
                    stamp = str(int(time.time() * 1000))
                    signed = hubspot.sign_v3(secret, "POST", url, body, stamp)
                    headers["X-HubSpot-Signature-v3"] = signed
                    headers["X-HubSpot-Request-Timestamp"] = stamp
                elif kind.signing == "standard-webhooks" and secret == link.secret:
                    stamp = str(int(time.time()))
                    signed = sign_standard_webhooks(secret, "msg_1", stamp, body)
                    headers.update({"webhook-id": "msg_1", "webhook-timestamp": stamp,
                                    "webhook-signature": signed})  # fmt: skip
                else:
                    headers["Authorization"] = f"Bearer {secret}"
                httpx.post(url, content=body, headers=headers, timeout=10)
    enrich = f"{base}/v7/enrich"
    httpx.post(enrich, json={"email": "ava@example.com"}, headers={"API_KEY": key})
    httpx.post(enrich, json={"email": "ava@example.com", "apikey": key})
    httpx.post(f"{enrich}?apikey={key}", json={"email": "ava@example.com"})
    httpx.get(f"{base}/settings/sign-in?key={key}")


@pytest.mark.slow
def test_no_secret_reaches_the_servers_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every platform's requests through `contactdata serve`; then its whole output (access
    log, error log, app log) holds none of the secrets they carried."""
    db_path = tmp_path / "logged.db"
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")  # the fake CRM's address
    links, secrets = _every_platform(db_path)
    port = free_port()
    process = serve(db_path, port)
    try:
        _send_every_platforms_requests(f"http://127.0.0.1:{port}", links, secrets[0])
    finally:
        stop(process)
    output = process.stdout.read().decode()  # type: ignore[union-attr]
    assert output.count(" /hooks/") >= 2 * len(links), output[-3000:]
    for secret in secrets:
        assert secret not in output, f"a secret ending {secret[-4:]} is in the log"
    assert "?key=***" in output and "?code=***" in output


def test_the_error_log_masks_queries_too(tmp_path: Path) -> None:
    """gunicorn logs the URI of a request that escapes the app (a worker timeout) and an
    unreadable request line whole: their queries are masked like the access log's."""
    process, url = _start_probe(tmp_path)
    try:
        httpx.get(f"{url}/probe/exit?key=s3cret-exit-0001")
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            raw.sendall(b"GET /hooks/c1/events?code=s3cret-line-0002\r\n\r\n")
            raw.recv(4096)
    finally:
        stop(process)
    output = process.stdout.read().decode()  # type: ignore[union-attr]
    assert "Error handling request GET /probe/exit?key=***" in output, output[-2000:]
    assert "?code=***" in output
    assert "s3cret" not in output
