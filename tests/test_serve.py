"""Through the real production server: gunicorn with sync workers, as `contactdata serve`."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, process: subprocess.Popen[bytes]) -> None:
    for _ in range(100):
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {process.stdout.read().decode()[-2000:]}")  # type: ignore[union-attr]
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError("server did not start")


def start(command: list[str], port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    wait_for(f"http://127.0.0.1:{port}/healthz", process)
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=15)


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
    command = [
        str(Path(sys.executable).parent / "contactdata"),
        "serve",
        "--db",
        str(tmp_path / "s.db"),
        "--port",
        str(port),
        "--workers",
        "2",
    ]
    process = start(command, port)
    try:
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").json()["status"] == "ok"
    finally:
        stop(process)
