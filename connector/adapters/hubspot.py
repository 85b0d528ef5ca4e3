"""HubSpot contacts over the CRM objects API: read and update one contact, and batch reads
and updates of up to 100 contacts a call; and the completion of BLOCKed custom workflow
actions. Values always go as strings ("" clears a property).

Paths are HubSpot's date-versioned ones, the version named once (API_VERSION): HubSpot ends
/crm/v3 in September 2027 and /automation/v4 on 30 March 2027, and the 2026-03 paths take the
same request and response shapes. From 2026-09 HubSpot also enforces each account's own
validation rules on writes.

Failures beyond `base.classify`: a 400 VALIDATION_ERROR naming properties (in `errors[]`'s
context.propertyName, or in the JSON list of its "Property values were not valid: [...]"
message) refuses those properties: PROPERTY_DOESNT_EXIST, and values HubSpot will not take
such as an enumeration option the property lacks (INVALID_OPTION). The contact is written
again without them, and each is reported with HubSpot's reason. A batch update refused as a
whole for an invalid value does not say whose it was: each contact of it is Permanent alike
(the worker then writes them one at a time). 401 is a token expired or revoked; 429 waits as
its policy says:

- TEN_SECONDLY_ROLLING (and any other burst policy): Retry-After in seconds when HubSpot
  sends it, else X-HubSpot-RateLimit-Interval-Milliseconds, else the 10 s window.
- DAILY: Retry-After when sent, else 24 hours. HubSpot resets the daily limit at midnight in
  the account's time zone, which we do not know: waiting for the next midnight UTC would come
  up to 12 h early for accounts west of UTC (the Americas) and up to 14 h late east of it, and
  an early retry is refused again, costing a call and one of the worker's attempts. We take
  the safe side: 24 h, by when every time zone has passed midnight. Never early, at most a
  day late.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import httpx

from connector.adapters.base import (
    MESSAGE_LIMIT,
    TOKEN_REFUSED,
    Outcome,
    Permanent,
    Refusal,
    Retriable,
    WriteResult,
    chunks,
    classify,
    dicts,
    error_message,
    garbled,
    id_chunks,
    json_body,
    retry_after,
    send,
    write_dropping,
    write_many_dropping,
)

BATCH_SIZE = 100
BURST_WAIT_SECONDS = 10.0  # TEN_SECONDLY_ROLLING's window, when no header says how long
DAILY_WAIT_SECONDS = 24 * 3600.0  # see the module docstring
API_VERSION = "2026-03"  # HubSpot's date-versioned APIs (see the module docstring)
CONTACTS = f"/crm/objects/{API_VERSION}/contacts"
CALLBACKS = f"/automation/actions/callbacks/{API_VERSION}"
UNKNOWN = "PROPERTY_DOESNT_EXIST"
LISTED = "Property values were not valid:"  # a 400's message, then its refusals as JSON


class HubSpot:
    """HubSpot contacts, over a client the caller builds; `token` is an OAuth access token or
    a private-app token."""

    platform = "hubspot"
    auth: httpx.Auth | None = None  # set by adapter_for: a renewing OAuth token

    def __init__(self, base_url: str, token: str, client: httpx.Client) -> None:
        self.base_url = base_url.rstrip("/")
        self.client = client
        self.headers = {"Authorization": f"Bearer {token}"}

    def read(self, record_id: str, properties: Sequence[str]) -> dict[str, Any]:
        """The contact's current values of `properties`, None where empty."""
        params = {"properties": ",".join(properties)} if properties else None
        response = self._send("GET", _contact(record_id), params=params)
        self._check(response)
        values = _properties(response, json_body(response), "a contact")
        return {name: values.get(name) for name in properties}

    def read_many(
        self, record_ids: Sequence[str], properties: Sequence[str]
    ) -> dict[str, dict[str, Any] | Permanent]:
        """Contacts' current values, 100 a call (`batch/read`); a contact the answer leaves
        out (HubSpot's 207 names ids it could not get) is Permanent."""
        found: dict[str, dict[str, Any] | Permanent] = {}
        for chunk in id_chunks(record_ids, BATCH_SIZE):
            body = {
                "properties": list(properties),
                "propertiesWithHistory": [],  # required by the specification
                "inputs": [{"id": key} for key in chunk],
            }
            response = self._send("POST", f"{CONTACTS}/batch/read", json=body)
            self._check(response)
            answer = json_body(response)
            for result in _results(response, answer, "a batch of contacts"):
                values = _properties(response, result, "a batch of contacts")
                found[str(result.get("id"))] = {name: values.get(name) for name in properties}
            missing = "; ".join(map(_describe, dicts(answer.get("errors"))))
            gone = Permanent(f"no such contact: {missing or 'left out of the batch read'}")
            found.update({key: gone for key in chunk if key not in found})
        return found

    def write(self, record_id: str, properties: dict[str, Any]) -> WriteResult:
        """Update one contact; properties HubSpot refuses (unknown, or a value it will not
        take) are dropped and reported."""
        return write_dropping(lambda sent: self._update(record_id, sent), properties)

    def write_many(self, changes: dict[str, dict[str, Any]]) -> dict[str, WriteResult | Permanent]:
        """Update contacts 100 a call; each contact's outcome."""
        outcomes: dict[str, WriteResult | Permanent] = {}
        for chunk in chunks(changes, BATCH_SIZE):
            outcomes.update(write_many_dropping(self._update_batch, chunk))
        return outcomes

    def complete_action(self, callback_id: str, answer: dict[str, Any]) -> None:
        """Complete a BLOCKed custom workflow action with `answer`'s `outputFields`, in the
        body the specification gives: output values as strings (none where a value is None),
        and `typedOutputs`, which it marks required, empty."""
        fields = answer.get("outputFields") or {}
        outputs = {name: _string(value) for name, value in fields.items() if value is not None}
        body = {"outputFields": outputs, "typedOutputs": {}}
        path = f"{CALLBACKS}/{quote(callback_id, safe='')}/complete"
        self._check(self._send("POST", path, json=body))

    def _update(self, record_id: str, properties: dict[str, Any]) -> Refusal:
        body = {"properties": _strings(properties)}
        response = self._send("PATCH", _contact(record_id), json=body)
        refused = _reasons(_refused_properties(response))
        if not refused:
            self._check(response)
            written = json_body(response)  # the contact: anything else may not have been written
            if not (isinstance(written, dict) and "id" in written):
                raise garbled(response, "the contact written")
        return refused

    def _update_batch(self, changes: dict[str, dict[str, Any]]) -> dict[str, Outcome]:
        inputs = [{"id": key, "properties": _strings(values)} for key, values in changes.items()]
        response = self._send("POST", f"{CONTACTS}/batch/update", json={"inputs": inputs})
        refused = _refused_properties(response)
        unknown = {name: said for name, said in refused.items() if said[0] == UNKNOWN}
        if unknown:  # unknown to every contact: each goes again without them
            return dict.fromkeys(changes, _reasons(unknown))
        if refused:  # someone's value, and HubSpot does not say whose
            return dict.fromkeys(changes, Permanent(f"refused: {_described(refused)}"))
        try:
            self._check(response)
        except Permanent as failure:  # the whole call refused: every record's outcome
            return dict.fromkeys(changes, failure)
        body = json_body(response)
        return _batch_outcomes(changes, body, _results(response, body, "a batch update's results"))

    def _send(self, method: str, path: str, **options: Any) -> httpx.Response:
        url = self.base_url + path
        return send(self.client, method, url, self.auth, headers=self.headers, **options)

    def _check(self, response: httpx.Response) -> None:
        """Raise for a failed answer: 401 and 429 HubSpot's way, the rest as `classify`."""
        if response.status_code == 401:
            raise Permanent(TOKEN_REFUSED)
        if response.status_code == 429:
            raise _rate_limited(response)
        classify(response)


def _contact(record_id: str) -> str:
    return f"{CONTACTS}/{quote(str(record_id), safe='')}"


def _strings(properties: dict[str, Any]) -> dict[str, str]:
    """Values as HubSpot takes them: strings, booleans "true"/"false", None "" (clears),
    lists joined with ";" (multiple checkboxes)."""
    return {name: _string(value) for name, value in properties.items()}


def _string(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ";".join(_string(item) for item in value)
    return str(value)


Said = tuple[str, str]  # HubSpot's code and message for a refused property


def _refused_properties(response: httpx.Response) -> dict[str, Said]:
    """The properties a 400 VALIDATION_ERROR refuses, with what HubSpot says of each."""
    body = json_body(response)
    if response.status_code != 400 or not isinstance(body, dict):
        return {}
    return _refused(body) if body.get("category") == "VALIDATION_ERROR" else {}


def _refused(error: dict[str, Any]) -> dict[str, Said]:
    """The properties an error object (a whole answer, or one of a batch's errors) names:
    in `errors[]` by context.propertyName, or by "name" in the JSON list of a "Property
    values were not valid: [...]" message."""
    named = _message_list(error.get("message"))
    for detail in dicts(error.get("errors")):
        said = (str(detail.get("code") or ""), str(detail.get("message") or ""))
        named.update(dict.fromkeys(_listed(_context(detail).get("propertyName")), said))
    return named


def _message_list(message: Any) -> dict[str, Said]:
    if not isinstance(message, str) or not message.startswith(LISTED):
        return {}
    try:
        items = json.loads(message.removeprefix(LISTED))
    except ValueError:
        return {}
    return {
        str(item["name"]): (str(item.get("error") or ""), str(item.get("message") or ""))
        for item in dicts(items)
        if item.get("name") and item.get("isValid") is not True
    }


def _reasons(refused: dict[str, Said]) -> Refusal:
    """Each refused property with HubSpot's words: its message, after the code unless the
    code is PROPERTY_DOESNT_EXIST (whose message says so), shortened."""
    return {name: _reason(*said) for name, said in refused.items()}


def _reason(code: str, message: str) -> str:
    text = message if code in (UNKNOWN, "") else f"{code}: {message}".rstrip(": ")
    return textwrap.shorten(text or "refused", MESSAGE_LIMIT, placeholder="…")


def _described(refused: dict[str, Said]) -> str:
    return "; ".join(f"{name}: {why}" for name, why in _reasons(refused).items())


def _batch_outcomes(
    changes: dict[str, dict[str, Any]], body: dict[str, Any], results: list[dict[str, Any]]
) -> dict[str, Outcome]:
    """Each record's outcome from a 200 or 207 answer: in `results`, written; named by an
    error's context (ids or objectWriteTraceId), that error; in neither, refused with the
    errors no record was named in."""
    found = {str(result.get("id")) for result in results}
    outcomes: dict[str, Outcome] = {
        key: WriteResult(written=dict(values)) for key, values in changes.items() if key in found
    }
    unnamed: list[str] = []
    for error in dicts(body.get("errors")):
        named = [key for key in _named(error) if key in changes]
        outcome = _reasons(_refused(error)) or Permanent(_describe(error))
        outcomes.update(dict.fromkeys(named, outcome))
        if not named:
            unnamed.append(_describe(error))
    why = "; ".join(unnamed) or "HubSpot's answer left this contact out (merged or deleted?)"
    return {key: outcomes.get(key, Permanent(why)) for key in changes}


def _results(response: httpx.Response, body: Any, expected: str) -> list[dict[str, Any]]:
    """A batch answer's `results`, each an object; `garbled` when the answer is not that."""
    results = body.get("results") if isinstance(body, dict) else None
    if not isinstance(results, list) or not all(isinstance(item, dict) for item in results):
        raise garbled(response, expected)
    return results


def _properties(response: httpx.Response, record: Any, expected: str) -> dict[str, Any]:
    """A contact's `properties` object; `garbled` when the answer holds none."""
    values = record.get("properties") if isinstance(record, dict) else None
    if not isinstance(values, dict):
        raise garbled(response, expected)
    return values


def _named(error: dict[str, Any]) -> list[str]:
    context = _context(error)
    return _listed(context.get("ids")) + _listed(context.get("objectWriteTraceId"))


def _context(error: dict[str, Any]) -> dict[str, Any]:
    """An error's context; in the documented samples it is sometimes a string."""
    context = error.get("context")
    return context if isinstance(context, dict) else {}


def _listed(value: Any) -> list[str]:
    """A context value as a list of strings (HubSpot gives lists; a lone string counts)."""
    if isinstance(value, str):
        return [value]
    return [str(item) for item in value] if isinstance(value, list) else []


def _describe(error: dict[str, Any]) -> str:
    return ": ".join(str(part) for part in (error.get("category"), error.get("message")) if part)


def _rate_limited(response: httpx.Response) -> Retriable:
    """A 429 as Retriable, waiting as its policy says (see the module docstring)."""
    body = json_body(response)
    policy = body.get("policyName") if isinstance(body, dict) else None
    reason = f"429 rate limited ({policy or 'no policy named'}): {error_message(response)}"
    wait = retry_after(response)
    if wait is None and policy == "DAILY":
        wait = DAILY_WAIT_SECONDS
    if wait is None:
        wait = _interval(response) or BURST_WAIT_SECONDS
    return Retriable(reason, wait)


def _interval(response: httpx.Response) -> float | None:
    try:
        return float(response.headers["x-hubspot-ratelimit-interval-milliseconds"]) / 1000
    except (KeyError, ValueError):
        return None
