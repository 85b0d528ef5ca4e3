"""Starting and stopping real servers in tests: gunicorn through `contactdata serve`, and
small loopback ones (a TCP listener, an HTTPS server for a host name) for outbound HTTP."""

from __future__ import annotations

import http.server
import ipaddress
import os
import signal
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

CONTACTDATA = str(Path(sys.executable).parent / "contactdata")

S = TypeVar("S", bound=socketserver.BaseServer)


def free_port() -> int:
    """A TCP port on the loopback interface that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, process: subprocess.Popen[bytes]) -> None:
    """Return once `url` answers 200; raise with the server's output if it exits first."""
    for _ in range(150):
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {process.stdout.read().decode()[-2000:]}")  # type: ignore[union-attr]
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError("server did not start")


def start(command: list[str], port: int) -> subprocess.Popen[bytes]:
    """Run a server command in its own process group and wait until /healthz answers."""
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    wait_for(f"http://127.0.0.1:{port}/healthz", process)
    return process


def serve(db: Path | str, port: int, workers: int = 2, threads: int = 1) -> subprocess.Popen[bytes]:
    """`contactdata serve` on `db` (gunicorn: sync workers, or of `threads` threads), started."""
    command = [CONTACTDATA, "serve", "--db", str(db), "--port", str(port)]
    return start([*command, "--workers", str(workers), "--threads", str(threads)], port)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a server and every worker it forked."""
    os.killpg(process.pid, signal.SIGTERM)
    process.wait(timeout=15)


def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every socket refuse to connect anywhere but the loopback interface: a guard for
    tests that make a host name resolve to a public address."""
    connect = socket.socket.connect

    def guarded(sock: socket.socket, address: Any) -> None:
        if isinstance(address, tuple) and not ipaddress.ip_address(address[0]).is_loopback:
            raise ConnectionRefusedError(f"tests connect to loopback only, not {address[0]}")
        connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


class Listener:
    """A TCP listener on the loopback interface that counts the connections it accepts and
    closes each at once, answering nothing."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.socket.getsockname()[1]
        self.accepted = 0
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:  # closed
                return
            self.accepted += 1
            connection.close()

    def close(self) -> None:
        self.socket.shutdown(socket.SHUT_RDWR)  # wakes the accept
        self.socket.close()
        self._thread.join()


@contextmanager
def serving(server: S, poll_interval: float = 0.5) -> Iterator[S]:
    """`server` (a loopback fake) answering on its own thread until the block ends."""
    thread = threading.Thread(target=server.serve_forever, args=(poll_interval,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@contextmanager
def https_server(directory: Path, hostname: str) -> Iterator[tuple[int, str]]:
    """An HTTPS server on the loopback interface answering "ok" to every GET, with a
    self-signed certificate for `hostname`: its port and the certificate's file (to trust)."""
    certfile, keyfile = _self_signed(directory, hostname)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certfile, keyfile)
    server = http.server.HTTPServer(("127.0.0.1", 0), _Ok)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    with serving(server):
        yield server.server_address[1], str(certfile)


class _Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *_: Any) -> None:
        pass


def _self_signed(directory: Path, hostname: str) -> tuple[Path, Path]:
    """A certificate for `hostname`, signed by its own key, and the key, written as PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname)])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    certfile, keyfile = directory / f"{hostname}.pem", directory / f"{hostname}.key"
    certfile.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    keyfile.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return certfile, keyfile
