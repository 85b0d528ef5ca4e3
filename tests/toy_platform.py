"""A platform no connector module knows: "toy", a CRM whose webhooks sign the body with an
HMAC of the connection's secret (`X-Toy-Signature`) and whose API reads and writes people at
/people/<id>. Registered by tests at test time, to show a platform needs one module only."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from connector.platforms.base import (
    Adapter,
    Delivery,
    Event,
    Permanent,
    Platform,
    Refused,
    Row,
    Unparseable,
    Verified,
    WriteResult,
    classify,
    digest,
    json_document,
    read_each,
    send,
    write_dropping,
    write_each,
)

SIGNATURE = "X-Toy-Signature"


def sign(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


class ToyCRM:
    """The toy CRM's people over `client`: one GET and one PATCH a person."""

    platform = "toy"

    def __init__(
        self,
        base_url: str,
        token: str,
        client: httpx.Client,
        auth: httpx.Auth | None = None,
        kind: str = "contacts",
    ) -> None:
        self.base_url, self.client, self.auth, self.kind = base_url.rstrip("/"), client, auth, kind
        self.headers = {"Authorization": f"Bearer {token}"}

    def read(self, record_id: str, properties: Sequence[str]) -> dict[str, Any]:
        response = self._send("GET", record_id)
        if response.status_code == 404:
            raise Permanent("no such person")
        classify(response)
        person = response.json()
        return {name: person.get(name) for name in properties}

    def read_many(
        self, record_ids: Sequence[str], properties: Sequence[str]
    ) -> dict[str, dict[str, Any] | Permanent]:
        return read_each(self.read, record_ids, properties)

    def write(self, record_id: str, properties: dict[str, Any]) -> WriteResult:
        def attempt(sent: dict[str, Any]) -> dict[str, str]:
            classify(self._send("PATCH", record_id, json=sent))
            return {}

        return write_dropping(attempt, properties)

    def write_many(self, changes: dict[str, dict[str, Any]]) -> dict[str, WriteResult | Permanent]:
        return write_each(self.write, changes)

    def _send(self, method: str, record_id: str, **options: Any) -> httpx.Response:
        url = f"{self.base_url}/people/{record_id}"
        return send(self.client, method, url, self.auth, headers=self.headers, **options)


@dataclass(frozen=True, kw_only=True)
class Toy(Platform):
    name: str = "toy"
    title: str = "Toy CRM"
    signing: str = "toy-hmac"
    adapter_class: Callable[..., Adapter] | None = ToyCRM

    def verify(self, link: Row, secret: str, delivery: Delivery) -> Verified:
        sent = delivery.headers.get(SIGNATURE, "")
        if not hmac.compare_digest(sent.encode(), sign(secret, delivery.body).encode()):
            raise Refused("The toy signature does not verify.")
        return Verified()

    def events(self, body: bytes) -> list[Event]:
        person = json_document(body)
        if not isinstance(person, dict) or "id" not in person:
            raise Unparseable("a toy event is a person with its id")
        return [Event(f"toy:{person['id']}:{digest(body)}", str(person["id"]), person)]


PLATFORM = Toy()
MAPPING = """
platform: toy
record_id: [id]
input:
  conEmail: [email]
output:
  - {field: conJobTitleEn, property: title}
  - {field: compName, property: company}
"""


class FakeToyCRM:
    """The toy CRM's API: people by id, every request kept."""

    def __init__(self, people: dict[str, dict[str, Any]]) -> None:
        self.people, self.requests = people, []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        person = self.people.get(request.url.path.rsplit("/", 1)[-1])
        if person is None:
            return httpx.Response(404, json={"message": "no such person"})
        if request.method == "PATCH":
            person.update(json.loads(request.content))
        return httpx.Response(200, json=person)
