"""Through the real production server: gunicorn with sync workers, as `contactdata serve`."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.servers import free_port, serve, start, stop

pytestmark = pytest.mark.slow

# The real app with one extra route that reports which key headers reached it.
LAUNCHER = textwrap.dedent(
    """
    import sys
    from flask import request
    from server.serve import _Gunicorn, gunicorn_options
    import server.app

    real_create_app = server.app.create_app

    def create_app(settings):
        app = real_create_app(settings)
        names = ["apikey", "Api-Key", "API_KEY", "Admin-Api-Key", "Admin_Api_Key"]
        app.add_url_rule("/probe/keys", "keys", methods=["POST"],
                         view_func=lambda: {n: request.headers.get(n) for n in names})
        return app

    server.app.create_app = create_app
    db, port = sys.argv[1], int(sys.argv[2])
    _Gunicorn({"DB": db, "KEY_SECRET": "x", "LOG_LEVEL": "WARNING",
               "HOST": "127.0.0.1", "PORT": port, "WORKERS": 2},
              gunicorn_options("127.0.0.1", port, 2)).run()
    """
)


@pytest.fixture(scope="module")
def probe_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("serve") / "serve.db"
    port = free_port()
    launcher = db.parent / "launch.py"
    launcher.write_text(LAUNCHER)
    process = start([sys.executable, str(launcher), str(db), str(port)], port)
    yield f"http://127.0.0.1:{port}"
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


def test_contactdata_serve_answers_healthz(tmp_path: Path) -> None:
    port = free_port()
    process = serve(tmp_path / "s.db", port)
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").json()["status"] == "ok"
    finally:
        stop(process)
