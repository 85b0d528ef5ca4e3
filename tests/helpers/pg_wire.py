"""A tap on the wire between the service and PostgreSQL: a loopback relay that reads the
frontend protocol the client sends and counts its round trips, with the statements of each.

A round trip is a message the client then waits on for the server's answer: a Sync (after
a statement, or closing a pipeline of several), a simple Query, a Flush of statements sent
since the last (a pipeline's results fetched before its end; psycopg also sends one, empty,
after a pipeline's last Sync, still waiting on that), or a new connection's start-up.
Counted from messages, not packets, so a count does not depend on how TCP cuts the bytes.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

# Untyped messages before a connection's start-up: asking for TLS or GSS encryption.
_ENCRYPTION_REQUESTS = (80877103, 80877104)
_WAITED_ON = {b"S": "sync", b"Q": "query", b"H": "flush"}


PREPARING = "(prepare) "


@dataclass
class RoundTrips:
    """What crossed the wire since `clear`: each round trip as the statements it carried.

    A round trip that only prepares a statement (psycopg's, at its fifth run on a
    connection) is listed but not counted: a connection pays it once, not each call.
    """

    trips: list[list[str]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def clear(self) -> None:
        with self._lock:
            self.trips.clear()

    def add(self, statements: list[str]) -> None:
        with self._lock:
            self.trips.append(statements)

    def __len__(self) -> int:
        return sum(not _only_preparing(trip) for trip in self.trips)

    def breakdown(self) -> str:
        """One line per round trip: its statements, each cut to its first 100 characters."""
        lines, number = [], 0
        for trip in self.trips:
            shown = " | ".join(" ".join(s.split())[:100] or "(an empty statement)" for s in trip)
            if _only_preparing(trip):
                lines.append(f"-. {shown} (once per connection: not counted)")
                continue
            number += 1
            lines.append(f"{number}. {shown}")
        return "\n".join(lines)


def _only_preparing(trip: list[str]) -> bool:
    return bool(trip) and all(statement.startswith(PREPARING) for statement in trip)


@contextmanager
def tapped(url: str) -> Iterator[tuple[str, RoundTrips]]:
    """A relay to the PostgreSQL server of `url` on a free loopback port: the URL reaching
    the same database through it (without TLS, which would hide the messages), and the
    round trips counted on it until the block ends."""
    parts = urlsplit(url)
    target = (parts.hostname or "127.0.0.1", parts.port or 5432)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    counted = RoundTrips()
    threading.Thread(target=_accept, args=(listener, target, counted), daemon=True).start()
    netloc = f"{parts.username}@127.0.0.1:{port}" if parts.username else f"127.0.0.1:{port}"
    query = "&".join(filter(None, [parts.query, "sslmode=disable", "gssencmode=disable"]))
    try:
        yield urlunsplit((parts.scheme, netloc, parts.path, query, "")), counted
    finally:
        listener.close()


def _accept(listener: socket.socket, target: tuple[str, int], counted: RoundTrips) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:  # the tap is closed
            return
        reader = _ClientMessages(counted)
        threading.Thread(target=_connection, args=(client, target, reader), daemon=True).start()


def _connection(client: socket.socket, target: tuple[str, int], reader: _ClientMessages) -> None:
    """Relay one client's connection both ways until either side closes it."""
    with client, socket.create_connection(target) as server:
        for sock in (client, server):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        answers = threading.Thread(target=_relay, args=(server, client), daemon=True)
        answers.start()
        _relay(client, server, reader)
        answers.join()


def _relay(
    source: socket.socket, sink: socket.socket, reader: _ClientMessages | None = None
) -> None:
    """Copy bytes from `source` to `sink` until either closes, `reader` reading them first."""
    with suppress(OSError):
        while data := source.recv(65536):
            if reader is not None:
                reader.feed(data)
            sink.sendall(data)
    for sock in (source, sink):
        with suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class _ClientMessages:
    """The frontend messages of one connection, read as they pass: a round trip at each one
    the client waits on, carrying the statements parsed or bound since the last."""

    def __init__(self, counted: RoundTrips) -> None:
        self.counted = counted
        self.buffer = b""
        self.started = False
        self.prepared: dict[str, str] = {}  # statement name -> its SQL, as Parse named it
        self.pending: list[str] = []

    def feed(self, data: bytes) -> None:
        self.buffer += data
        while message := self._next():
            self._read(*message)

    def _next(self) -> tuple[bytes, bytes] | None:
        """The next whole message (type, body), if the buffer holds it."""
        typed = self.started
        head = 5 if typed else 4
        if len(self.buffer) < head:
            return None
        length = struct.unpack("!I", self.buffer[head - 4 : head])[0]
        end = head - 4 + length
        if len(self.buffer) < end:
            return None
        kind, body = (self.buffer[:1], self.buffer[5:end]) if typed else (b"", self.buffer[4:end])
        self.buffer = self.buffer[end:]
        return kind, body

    def _read(self, kind: bytes, body: bytes) -> None:
        if not self.started:
            code = struct.unpack("!I", body[:4])[0]
            if code not in _ENCRYPTION_REQUESTS:
                self.started = True
                self.counted.add(["(connect)"])
            return
        if kind == b"P":
            name, sql = body.split(b"\0")[:2]
            self.prepared[name.decode()] = sql.decode()
            if name:  # preparing a named statement: its Bind, if any, comes later
                self.pending.append(f"{PREPARING}{sql.decode()}")
        elif kind == b"B":
            statement = body.split(b"\0")[1].decode()
            self.pending.append(self.prepared.get(statement, f"(statement {statement})"))
        elif kind == b"Q":
            self.pending.append(body.rstrip(b"\0").decode())
        if kind in _WAITED_ON and (kind != b"H" or self.pending):
            self.counted.add(self.pending)
            self.pending = []
