"""What every CRM adapter offers, what a write did, and how outbound HTTP failures are
classified, once for all adapters: 429, 5xx, timeouts and resets are `Retriable`; redirects
and other 4xx are `Permanent`, with the CRM's own message. A 2xx answer whose body is not what
the CRM documents (not JSON, cut short, another shape) is `garbled`: Retriable too.

Adapters send through `send` (never following redirects), hand an answer they did not
recognize to `classify`, and report refused properties with `write_dropping`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

import httpx

MESSAGE_LIMIT = 300  # characters of a CRM's error text kept in a reason
TOKEN_REFUSED = "token expired or revoked"  # every adapter's reason for a 401
DELAY_SECONDS = re.compile(r"\d+(\.\d+)?")  # Retry-After in seconds (RFC 9110: digits)


@dataclass(frozen=True)
class WriteResult:
    """What one record's write did: the properties the CRM accepted, with the values sent,
    and those it refused (property -> why, e.g. it does not exist)."""

    written: dict[str, Any]
    dropped: dict[str, str] = field(default_factory=dict)


class Retriable(Exception):
    """A failure worth trying again, after `retry_after` seconds when the CRM said how long."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class Permanent(Exception):
    """A failure that trying again will not change: the reason says what to fix."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Adapter(Protocol):
    """One CRM's contacts, read and written over an injected `httpx.Client`; with `auth`
    (a renewing OAuth token, connector/oauth.py), every request is authenticated by it."""

    platform: str
    auth: httpx.Auth | None

    def read(self, record_id: str, properties: Sequence[str]) -> dict[str, Any]:
        """The current values of `properties` (None where empty); Permanent if no record."""
        ...

    def read_many(
        self, record_ids: Sequence[str], properties: Sequence[str]
    ) -> dict[str, dict[str, Any] | Permanent]:
        """Several records' current values in as few calls as the CRM allows: each record's
        values as `read` gives them, or Permanent where there is no such record. A failure
        of a whole call worth retrying raises Retriable."""
        ...

    def write(self, record_id: str, properties: dict[str, Any]) -> WriteResult:
        """Write `properties` to one record, dropping those the CRM refuses as unknown."""
        ...

    def write_many(self, changes: dict[str, dict[str, Any]]) -> dict[str, WriteResult | Permanent]:
        """Write several records in as few calls as the CRM allows: each record's outcome.
        A failure of a whole call worth retrying raises Retriable."""
        ...


def send(
    client: httpx.Client, method: str, url: str, auth: httpx.Auth | None = None, **options: Any
) -> httpx.Response:
    """`client.request` without following redirects, authenticated by `auth` when given;
    timeouts and connection failures become Retriable."""
    how = httpx.USE_CLIENT_DEFAULT if auth is None else auth
    try:
        return client.request(method, url, follow_redirects=False, auth=how, **options)
    except httpx.TimeoutException as error:
        raise Retriable(f"{method} {url} timed out ({type(error).__name__})") from error
    except httpx.TransportError as error:
        raise Retriable(f"{method} {url} failed: {type(error).__name__}: {error}") from error


class CrmClient:
    """What every adapter is built from and sends with: the CRM API's base URL, the injected
    HTTP client and the token, in the headers `token_headers` makes of it (a bearer token
    unless the CRM says otherwise); `auth`, set by adapter_for, renews an OAuth token."""

    auth: httpx.Auth | None = None

    def __init__(self, base_url: str, token: str, client: httpx.Client) -> None:
        self.base_url = base_url.rstrip("/")
        self.client = client
        self.headers = self.token_headers(token)

    def token_headers(self, token: str) -> dict[str, str]:
        """The headers every request carries: the token, and what else the CRM wants."""
        return {"Authorization": f"Bearer {token}"}

    def _send(
        self, method: str, path: str, headers: dict[str, str] | None = None, **options: Any
    ) -> httpx.Response:
        """A request to `path` below the base URL, with the token's headers (and `headers`)."""
        url = self.base_url + path
        merged = {**self.headers, **(headers or {})}
        return send(self.client, method, url, self.auth, headers=merged, **options)


def classify(response: httpx.Response, now: datetime | None = None) -> None:
    """Nothing for a 2xx answer; otherwise raise: 429 and 5xx Retriable (honoring
    Retry-After), redirects and other 4xx Permanent, with the CRM's message."""
    status = response.status_code
    if 200 <= status < 300:
        return
    reason = f"{status} {response.reason_phrase}: {error_message(response)}".rstrip(": ")
    if status == 429 or status >= 500:
        raise Retriable(reason, retry_after(response, now))
    if 300 <= status < 400:
        where = response.headers.get("location", "nowhere")
        raise Permanent(f"{status} redirect to {where} not followed: check the CRM base URL")
    raise Permanent(reason)


def retry_after(response: httpx.Response, now: datetime | None = None) -> float | None:
    """Seconds the Retry-After header asks for, given in seconds or as an HTTP-date (then
    counted from the answer's Date header, else `now`); None when absent or unreadable."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    if DELAY_SECONDS.fullmatch(value):
        return float(value)
    when, sent = _http_date(value), _http_date(response.headers.get("date", ""))
    if when is None:
        return None
    return max(0.0, (when - (sent or now or datetime.now(UTC))).total_seconds())


def _http_date(text: str) -> datetime | None:
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def error_message(response: httpx.Response) -> str:
    """The CRM's own words for an error: the `message` of a JSON object, the messages of a
    JSON array (Salesforce), or the start of the text."""
    body = json_body(response)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return _short(body["message"])
    if isinstance(body, list):
        messages = [_described(item) for item in body if isinstance(item, dict)]
        return _short("; ".join(message for message in messages if message))
    return _short(response.text)


def _described(error: dict[str, Any]) -> str:
    code, message = error.get("errorCode") or error.get("statusCode"), error.get("message")
    return ": ".join(str(part) for part in (code, message) if part)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "…"


def json_body(response: httpx.Response) -> Any:
    """The answer's JSON, or None when it has none."""
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def garbled(response: httpx.Response, expected: str) -> Retriable:
    """A successful answer whose body is not `expected` (a proxy's page, an answer cut short,
    JSON of another shape). It tells nothing of the records: reading it as empty or missing
    would write over a user's values or bury the event, and a write it answers may have been
    applied or not. Asking again tells (values the CRM holds are not sent again)."""
    start = _short(response.text[:80])
    return Retriable(f"{response.status_code} answer is not {expected}: {start!r}")


def dicts(items: Any) -> list[dict[str, Any]]:
    """The objects of a JSON array (a CRM's list of results or errors); [] for anything else."""
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def read_each(
    read: Callable[[str, Sequence[str]], dict[str, Any]],
    record_ids: Sequence[str],
    properties: Sequence[str],
) -> dict[str, dict[str, Any] | Permanent]:
    """`read_many` for a CRM without batch reads: one `read` a record, a missing record's
    Permanent kept as its outcome (Retriable goes up: the rest would fail alike)."""
    found: dict[str, dict[str, Any] | Permanent] = {}
    for record_id in dict.fromkeys(record_ids):
        try:
            found[record_id] = read(record_id, properties)
        except Permanent as failure:
            found[record_id] = failure
    return found


def write_each(
    write: Callable[[str, dict[str, Any]], WriteResult], changes: dict[str, dict[str, Any]]
) -> dict[str, WriteResult | Permanent]:
    """`write_many` for a CRM without batch updates: one `write` a record, each record's
    outcome. Retriable stops the call (the records written are written again later, which
    sends nothing the CRM holds); a refused token is every record's outcome at once."""
    outcomes: dict[str, WriteResult | Permanent] = {}
    for record_id, properties in changes.items():
        try:
            outcomes[record_id] = write(record_id, properties)
        except Permanent as failure:
            outcomes[record_id] = failure
            if failure.reason == TOKEN_REFUSED:
                return {key: outcomes.get(key, failure) for key in changes}
    return outcomes


def id_chunks(record_ids: Sequence[str], size: int) -> Iterator[list[str]]:
    """Distinct record ids, as strings, in consecutive slices of at most `size`."""
    distinct = list(dict.fromkeys(map(str, record_ids)))
    for start in range(0, len(distinct), size):
        yield distinct[start : start + size]


def chunks(changes: dict[str, dict[str, Any]], size: int) -> Iterator[dict[str, dict[str, Any]]]:
    """`changes` in consecutive slices of at most `size` records."""
    items = list(changes.items())
    for start in range(0, len(items), size):
        yield dict(items[start : start + size])


def matching(properties: dict[str, Any], refused: dict[str, str]) -> dict[str, str]:
    """The properties of `properties` named in `refused` (names compared case-insensitively,
    as Salesforce does), each with the CRM's reason."""
    reasons = {name.lower(): why for name, why in refused.items()}
    return {name: reasons[name.lower()] for name in properties if name.lower() in reasons}


def without(properties: dict[str, Any], dropped: dict[str, str]) -> dict[str, Any]:
    """`properties` less the dropped ones."""
    return {name: value for name, value in properties.items() if name not in dropped}


Refusal = dict[str, str]  # properties a CRM refused as unknown or not writable -> why
Outcome = WriteResult | Permanent | Refusal  # one record's answer to one batch call


def write_dropping(
    attempt: Callable[[dict[str, Any]], Refusal], properties: dict[str, Any]
) -> WriteResult:
    """Write with `attempt`, which sends properties and returns those the CRM refused as
    unknown or not writable (empty when it wrote them). Drops the refused ones and sends the
    rest again, as long as each refusal names properties still sent (HubSpot names all the
    unknown ones at once, Salesforce may name one an answer): a refusal naming none is
    Permanent."""
    sending, dropped = dict(properties), {}
    while sending:
        refused = attempt(sending)
        if not refused:
            break
        newly = matching(sending, refused)
        if not newly:
            raise Permanent(f"refused: {_listed(refused)}")
        dropped.update(newly)
        sending = without(sending, newly)
    return WriteResult(written=sending, dropped=dropped)


def write_many_dropping(
    attempt: Callable[[dict[str, dict[str, Any]]], dict[str, Outcome]],
    changes: dict[str, dict[str, Any]],
) -> dict[str, WriteResult | Permanent]:
    """`write_dropping` for batch calls: `attempt` sends records and answers each one's
    outcome. Refused records go again without the refused properties; one refused for
    properties it does not have (the whole call was refused) goes again as it is, as long as
    some record drops something each round."""
    outcomes: dict[str, WriteResult | Permanent] = {}
    dropped: dict[str, Refusal] = {key: {} for key in changes}
    pending = dict(changes)
    while pending:
        refusals = {}
        for key, outcome in attempt(pending).items():
            if isinstance(outcome, dict):
                refusals[key] = outcome
            elif isinstance(outcome, WriteResult):
                outcomes[key] = WriteResult(written=outcome.written, dropped=dropped[key])
            else:
                outcomes[key] = outcome
        newly = {key: matching(pending[key], refused) for key, refused in refusals.items()}
        if not any(newly.values()):
            outcomes.update(
                {key: Permanent(f"refused: {_listed(refusals[key])}") for key in refusals}
            )
            break
        for key in refusals:
            dropped[key].update(newly[key])
        pending = {key: without(pending[key], newly[key]) for key in refusals}
        outcomes.update({key: WriteResult({}, dropped[key]) for key in pending if not pending[key]})
        pending = {key: values for key, values in pending.items() if values}
    return outcomes


def _listed(refused: Refusal) -> str:
    return "; ".join(f"{name}: {why}" for name, why in refused.items())
