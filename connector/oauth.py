"""OAuth 2.0 access tokens that renew themselves, for CRMs whose tokens expire.

Salesforce sessions, HubSpot app tokens (30 minutes), Zoho (an hour) and Entra ID tokens for
Dynamics 365 (about an hour) expire, so a connection holding only an access token stops
working within hours. A connection may hold instead the OAuth client it was granted to (token
endpoint, client id and secret) and a refresh token; its access token is then asked for at
the token endpoint when there is none, when it has expired (by the `expires_in` the endpoint
gave, a minute early) and when the CRM refuses it (401), and the refused request is sent once
more. Each new token is saved, sealed, for the next round and the other processes; a refresh
token the endpoint rotates (Salesforce may) replaces the old one.

Grants (RFC 6749): `refresh_token` when a refresh token was given (Salesforce, HubSpot, Zoho),
else `client_credentials` with a scope (Dynamics 365: `<environment URL>/.default`). Each
platform declares whether its tokens expire, its token endpoint and its default scope
(`Platform.refreshable`, `token_url`, `scope`, connector/platforms/). The client
authenticates with its id and secret in the form body (§2.3.1), as all four accept.

Token endpoints limit how often they are asked: Zoho gives a refresh token 10 access tokens in
10 minutes, then answers 200 {"error": "Access Denied"} for the rest of those minutes (its
OAuth token-limits page). That is Retriable after THROTTLED_WAIT, and a `Renewing` asks at most
once for a token it cannot get: the worker builds one per connection and round, so a refused
renewal fails the round's events together instead of being asked again for each record.

Installing (connector/install.py): the pure parts of the authorization-code flow (RFC 6749
§4.1) an admin starts on the settings page: the consent URL with `state` and, where the
platform takes it, a PKCE S256 challenge (RFC 7636), the code exchange's request, and the
token endpoint's answer read, its refusal in the endpoint's words, never a token's.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from collections.abc import Callable, Generator
from contextlib import suppress
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx

from connector.platforms.base import Permanent, Retriable, error_message, retry_after
from server import metrics

EARLY = timedelta(seconds=60)  # a token this close to its expiry is renewed before use
# httpx sends an auth flow's own requests as built: the token request needs its own timeout.
TOKEN_TIMEOUT = httpx.Timeout(10.0)
LONGEST = timedelta(days=365)  # an `expires_in` beyond this is read as this
THROTTLED = "Access Denied"  # Zoho's `error` for too many token requests in 10 minutes
THROTTLED_WAIT = timedelta(minutes=10)  # the rest of Zoho's window is at most this


@dataclass(frozen=True)
class Credentials:
    """What the token endpoint needs: with a refresh token, the refresh_token grant; without,
    client_credentials."""

    token_url: str
    client_id: str
    client_secret: str = field(repr=False)
    refresh_token: str = field(default="", repr=False)
    scope: str = ""
    basic: bool = False  # the client authenticates with HTTP Basic (Pipedrive), not the body

    @property
    def grant(self) -> str:
        return "refresh_token" if self.refresh_token else "client_credentials"

    def form(self) -> dict[str, str]:
        form = {"grant_type": self.grant, **self.client_form()}
        if self.refresh_token:
            form["refresh_token"] = self.refresh_token
        if self.scope:
            form["scope"] = self.scope
        return form

    def client_form(self) -> dict[str, str]:
        """The client's id and secret in the form body (RFC 6749 §2.3.1), unless Basic."""
        if self.basic:
            return {}
        return {"client_id": self.client_id, "client_secret": self.client_secret}

    def headers(self) -> dict[str, str]:
        """A token request's headers: JSON asked for, and Basic client auth when used."""
        headers = {"Accept": "application/json"}
        if self.basic:
            pair = f"{self.client_id}:{self.client_secret}".encode()
            headers["Authorization"] = f"Basic {base64.b64encode(pair).decode()}"
        return headers

    def dumps(self) -> str:
        """As sealed at rest; `basic` only when set, so grants saved before it read alike."""
        fields = asdict(self)
        if not self.basic:
            del fields["basic"]
        return json.dumps(fields, sort_keys=True)

    @classmethod
    def loads(cls, text: str) -> Credentials:
        return cls(**json.loads(text))


@dataclass(frozen=True)
class Granted:
    """A token endpoint's answer: the access token, when it expires (None: not said), and the
    refresh token to use from now on."""

    access_token: str = field(repr=False)
    expires_at: datetime | None
    credentials: Credentials


def granted(response: httpx.Response, credentials: Credentials, now: datetime) -> Granted:
    """Read a token endpoint's answer: 429 and 5xx Retriable, and Zoho's throttle (200 with
    {"error": "Access Denied"}) Retriable after THROTTLED_WAIT; an answer without an access
    token Permanent, with the endpoint's words (Zoho answers 200 with {"error": ...})."""
    status = response.status_code
    if status == 429 or status >= 500:
        reason = f"the token endpoint answered {status} {response.reason_phrase}"
        raise Retriable(reason, retry_after(response, now))
    try:
        body: Any = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = {}
    body = body if isinstance(body, dict) else {}
    if body.get("error") == THROTTLED:
        said = f"{status} {THROTTLED} {body.get('error_description') or ''}".strip()
        reason = f"the token endpoint refused more access tokens for now ({said[:300]})"
        raise Retriable(reason, THROTTLED_WAIT.total_seconds())
    token = body.get("access_token")
    if 200 <= status < 300 and isinstance(token, str) and token and "error" not in body:
        refreshed = body.get("refresh_token")
        if isinstance(refreshed, str) and refreshed and credentials.refresh_token:
            credentials = replace(credentials, refresh_token=refreshed)
        return Granted(token, _expiry(body.get("expires_in"), now), credentials)
    said = " ".join(str(body[k]) for k in ("error", "error_description") if body.get(k))
    said = said or f"no access token in {error_message(response) or 'an empty answer'}"
    raise Permanent(
        f"the CRM would not renew the access token ({status} {said[:300]}): give the "
        "connection new OAuth credentials"
    )


def _expiry(expires_in: Any, now: datetime) -> datetime | None:
    try:
        seconds = float(expires_in)
    except (TypeError, ValueError):
        return None  # Salesforce does not say: the token is renewed when refused
    if not seconds > 0:  # also NaN
        return None
    return now + min(timedelta(seconds=min(seconds, LONGEST.total_seconds())), LONGEST)


class Renewing(httpx.Auth):
    """httpx authentication with a renewable access token: each request gets the current
    token under the scheme the adapter wrote (`Bearer`, `Zoho-oauthtoken`); a missing or
    expired token is renewed first, and a request the CRM answers 401 is sent once more with
    a renewed token. `save` is called with every grant.

    Made for one round of requests (a worker round, a job run): a renewal that failed
    (refused, throttled, unanswered, unsaved) fails every later request with the same
    reason, without asking the token endpoint again, and a 401 for a token it was just given
    is final (renewing again would be refused alike). `refused`, when given, is told of a
    renewal refused for good (the connection then needs connecting again)."""

    requires_response_body = True  # the token endpoint's answer is read in the flow

    def __init__(
        self,
        credentials: Credentials,
        token: str,
        expires_at: datetime | None,
        save: Callable[[Granted], None],
        clock: Callable[[], datetime],
        refused: Callable[[Permanent], None] | None = None,
    ) -> None:
        self.credentials, self.token, self.expires_at = credentials, token, expires_at
        self.save, self.clock = save, clock
        self.refused = refused  # told when the token endpoint refuses the grant for good
        self.failed: Permanent | Retriable | None = None  # the renewal that failed, if one did
        self.given = ""  # the token the endpoint last gave this authentication

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        if not self.token or (self.expires_at and self.clock() >= self.expires_at - EARLY):
            yield from self._renew()
        self._sign(request)
        response = yield request
        if response.status_code == 401 and self.token != self.given:
            yield from self._renew()
            self._sign(request)
            yield request

    def _renew(self) -> Generator[httpx.Request, httpx.Response, None]:
        if self.failed is not None:
            raise self.failed
        asking = httpx.Request(
            "POST",
            self.credentials.token_url,
            data=self.credentials.form(),
            headers=self.credentials.headers(),
            extensions={"timeout": TOKEN_TIMEOUT.as_dict()},
        )
        # Until an answer is read: a request that times out never comes back to this flow.
        self.failed = Retriable("the token endpoint did not answer")
        try:
            got = granted((yield asking), self.credentials, self.clock())
        except (Permanent, Retriable) as refused:
            metrics.token_renewed("refused" if isinstance(refused, Permanent) else "failed")
            self.failed = refused
            if isinstance(refused, Permanent) and self.refused is not None:
                with suppress(Exception):  # unnoted, it is refused again next round
                    self.refused(refused)
            raise
        try:
            self.save(got)
        except Exception as error:  # e.g. the database locked: asked for again next round
            metrics.token_renewed("unsaved")
            self.failed = Retriable(f"a renewed access token could not be saved: {error}")
            raise self.failed from None
        metrics.token_renewed("renewed")
        self.failed, self.given = None, got.access_token
        self.credentials, self.token, self.expires_at = (
            got.credentials,
            got.access_token,
            got.expires_at,
        )

    def _sign(self, request: httpx.Request) -> None:
        scheme = request.headers.get("Authorization", "").split(" ", 1)[0] or "Bearer"
        request.headers["Authorization"] = f"{scheme} {self.token}"


# Installing: the authorization-code flow ---------------------------------------------------


def pkce_pair() -> tuple[str, str]:
    """A PKCE code verifier (64 unreserved characters) and its S256 challenge (RFC 7636)."""
    verifier = secrets.token_urlsafe(48)
    return verifier, challenge(verifier)


def challenge(verifier: str) -> str:
    """The S256 code challenge: base64url of the verifier's SHA-256, without padding."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def consent_url(authorize_url: str, params: dict[str, str]) -> str:
    """`authorize_url` with `params` added to the query it may already have (empty ones left
    out), for the browser to be sent to."""
    parts = urlsplit(authorize_url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    query += [(name, value) for name, value in params.items() if value]
    return urlunsplit(parts._replace(query=urlencode(query)))


def code_request(
    credentials: Credentials, code: str, redirect_uri: str, verifier: str
) -> httpx.Request:
    """The token request exchanging an authorization code (with the PKCE verifier, if one
    was sent), the client authenticating as the platform takes it."""
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri}
    form.update(credentials.client_form())
    if verifier:
        form["code_verifier"] = verifier
    return httpx.Request(
        "POST",
        credentials.token_url,
        data=form,
        headers=credentials.headers(),
        extensions={"timeout": TOKEN_TIMEOUT.as_dict()},
    )


@dataclass(frozen=True)
class Consented:
    """A token endpoint's answer to an authorization code: the access and refresh tokens,
    when the access token expires (None: not said), and the whole answer (for the platform
    to read its API base and account from)."""

    access_token: str = field(repr=False)
    refresh_token: str = field(repr=False)
    expires_at: datetime | None
    fields: dict[str, Any] = field(repr=False)


def answered(response: httpx.Response, now: datetime) -> Consented:
    """Read the answer to a code exchange: 429 and 5xx Retriable; a refusal, or an answer
    without both tokens, Permanent with the endpoint's `error` and `error_description`."""
    status = response.status_code
    if status == 429 or status >= 500:
        raise Retriable(f"the token endpoint answered {status} {response.reason_phrase}")
    try:
        body: Any = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = {}
    body = body if isinstance(body, dict) else {}
    access, refresh = body.get("access_token"), body.get("refresh_token")
    if 200 <= status < 300 and "error" not in body and _texts(access, refresh):
        return Consented(access, refresh, _expiry(body.get("expires_in"), now), body)
    said = " ".join(str(body[k]) for k in ("error", "error_description") if body.get(k))
    if not said:
        said = "no refresh token" if access else "no access token"
    raise Permanent(f"the token endpoint refused the authorization ({status}: {said[:300]})")


def _texts(*values: Any) -> bool:
    return all(isinstance(value, str) and value for value in values)
