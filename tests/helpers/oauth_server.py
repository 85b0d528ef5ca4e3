"""A fake OAuth 2.0 authorization server on loopback, for the five CRMs an admin connects with
the operator's app: an authorize endpoint that redirects back with a code and the state (or
error=access_denied when `deny`), and a token endpoint that checks what a real one checks
(the code, single use; the redirect URI the code was issued for; the PKCE verifier; the
client authenticated the platform's way: HTTP Basic for Pipedrive, the form body for the
others) and answers as each platform's real token endpoint does (crm-install.md §1).
Refresh-token grants are answered too, refused once `revoked`; a POST to a path ending in
/revoke (each platform's revocation endpoint, RFC 7009) revokes the token it names."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from tests.helpers import hubspot_shapes
from tests.helpers.dataverse import entra_error
from tests.helpers.vendors import OAUTH_ENDPOINTS, Exchange, checked
from tests.servers import serving

Row = dict[str, Any]
CLIENT_ID = "contactdata-app"
CLIENT_SECRET = "app-secret-never-shown"
HUB_ID = 62515
SALESFORCE_ORG = "00D5e000000abcDEAA"


@dataclass
class Issued:
    """A code the authorize endpoint gave, and what it was given for."""

    redirect_uri: str
    challenge: str
    client_id: str
    used: bool = False


@dataclass
class Seen:
    """What the fake saw: each authorize request's query, each token request's form and
    headers (names in lower case)."""

    authorized: list[dict[str, str]] = field(default_factory=list)
    token_requests: list[tuple[dict[str, str], dict[str, str]]] = field(default_factory=list)
    revocations: list[dict[str, str]] = field(default_factory=list)  # form and query, merged


class FakeAuthServer(ThreadingHTTPServer):
    """One platform's authorization server at `url`: /authorize and /token (Dynamics:
    /<tenant>/oauth2/v2.0/authorize and /token, as Entra ID names them). Its API base (the
    instance_url or api_domain it answers) is `url` too, unless a test names a fake CRM's
    (`api_base`)."""

    daemon_threads = True

    def __init__(self, platform: str) -> None:
        super().__init__(("127.0.0.1", 0), AuthHandler)
        self.platform = platform
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.api_base = self.url
        self.lock = threading.Lock()
        self.codes: dict[str, Issued] = {}
        self.refresh_tokens: set[str] = set()
        self.seen = Seen()
        self.deny = False  # the admin refuses consent
        self.revoked = False  # every refresh token stops working (the app was uninstalled)
        self.complaint: Row | None = None  # what the token endpoint answers instead (400)

    @property
    def authorize_url(self) -> str:
        if self.platform == "dynamics":
            return f"{self.url}/organizations/oauth2/v2.0/authorize"
        return f"{self.url}/authorize"

    @property
    def token_url(self) -> str:
        if self.platform == "dynamics":
            return f"{self.url}/organizations/oauth2/v2.0/token"
        return f"{self.url}/token"

    def authorize(self, query: dict[str, str]) -> str:
        """Where the authorize endpoint sends the browser back."""
        with self.lock:
            self.seen.authorized.append(query)
            back: Row = {"state": query.get("state", "")}
            if self.deny:
                back.update(error="access_denied", error_description="The user denied access")
            else:
                code = secrets.token_urlsafe(16)
                challenge = query.get("code_challenge", "")
                self.codes[code] = Issued(query["redirect_uri"], challenge, query["client_id"])
                back["code"] = code
                if self.platform == "zoho":
                    back.update({"location": "us", "accounts-server": self.url})
        return f"{query['redirect_uri']}?{urlencode(back)}"

    def token(self, form: dict[str, str], headers: dict[str, str]) -> tuple[int, Row]:
        """The token endpoint's status and answer."""
        with self.lock:
            self.seen.token_requests.append((form, headers))
            if not self._client_ok(form, headers):
                return 401, {"error": "invalid_client", "error_description": "bad client"}
            if self.complaint is not None:
                return 400, self.complaint
            if form.get("grant_type") == "refresh_token":
                return self._refresh(form)
            return self._exchange(form)

    def revoke(self, form: dict[str, str]) -> tuple[int, Row | None]:
        """The revocation endpoint: the token named stops working (200, as RFC 7009 answers
        for a token it knows or not)."""
        with self.lock:
            self.seen.revocations.append(form)
            self.refresh_tokens.discard(form.get("token", ""))
        if self.platform == "salesforce":  # a bare 200 (remoteaccess_revoke_token.htm)
            return 200, None
        if self.platform == "zoho":  # Zoho Accounts' revoke-refresh-token page
            return 200, {"status": "success"}
        if self.platform == "hubspot":  # its document gives a revocation no answer body
            return 200, None
        return 200, {}

    def _client_ok(self, form: dict[str, str], headers: dict[str, str]) -> bool:
        if self.platform == "pipedrive":
            pair = f"{CLIENT_ID}:{CLIENT_SECRET}".encode()
            basic = f"Basic {base64.b64encode(pair).decode()}"
            return headers.get("authorization") == basic and "client_secret" not in form
        return form.get("client_id") == CLIENT_ID and form.get("client_secret") == CLIENT_SECRET

    def _exchange(self, form: dict[str, str]) -> tuple[int, Row]:
        issued = self.codes.get(form.get("code", ""))
        if form.get("grant_type") != "authorization_code" or issued is None or issued.used:
            return 400, {"error": "invalid_grant", "error_description": "unknown or used code"}
        issued.used = True
        if form.get("redirect_uri") != issued.redirect_uri:
            return 400, {"error": "invalid_grant", "error_description": "redirect_uri mismatch"}
        if issued.challenge and s256(form.get("code_verifier", "")) != issued.challenge:
            return 400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}
        return 200, self.answer()

    def _refresh(self, form: dict[str, str]) -> tuple[int, Row]:
        if self.revoked or form.get("refresh_token") not in self.refresh_tokens:
            return 400, {"error": "invalid_grant", "error_description": "token revoked"}
        renewed: Row = {"access_token": f"renewed-{secrets.token_hex(8)}", "expires_in": 3600}
        if self.platform == "salesforce":  # the grant's answer, no expiry, no new refresh token
            grant = self.answer()
            self.refresh_tokens.discard(grant.pop("refresh_token"))
            renewed = {**grant, "access_token": renewed["access_token"]}
        if self.platform == "zoho":  # Zoho Accounts' refresh answer: no new refresh token
            renewed.update(api_domain=self.api_base, token_type="Bearer")
        if self.platform == "hubspot":  # its AccessTokenResponse, the refresh token given again
            renewed = hubspot_shapes.token(renewed["access_token"], form["refresh_token"])
        if self.platform == "pipedrive":  # the grant's answer (marketplace-oauth-authorization)
            renewed = {**self.answer(), "access_token": renewed["access_token"]}
        if self.platform == "dynamics":  # Entra ID's, as for a code (v2-oauth2-auth-code-flow)
            renewed = {**self.answer(), "access_token": renewed["access_token"]}
        return 200, renewed

    def answer(self) -> Row:
        """A fresh grant, shaped as the platform's own token answer."""
        access, refresh = f"at-{secrets.token_hex(12)}", f"rt-{secrets.token_hex(12)}"
        self.refresh_tokens.add(refresh)
        tokens = {"access_token": access, "refresh_token": refresh}
        shapes: dict[str, Row] = {
            "hubspot": {"token_type": "bearer", "expires_in": 1800, "hub_id": HUB_ID,
                        "user_id": 123, "scopes": ["crm.objects.contacts.read"],
                        "token_use": "access_token"},
            "salesforce": {"instance_url": self.api_base, "token_type": "Bearer",
                           "id": f"https://login.salesforce.com/id/{SALESFORCE_ORG}/0055e000001",
                           "issued_at": "1764000000000", "signature": "c2lnbmF0dXJl",
                           "scope": "api refresh_token"},
            "pipedrive": {"token_type": "Bearer", "expires_in": 3599, "api_domain": self.api_base,
                          "scope": "base,contacts:full"},
            "zoho": {"api_domain": self.api_base, "token_type": "Bearer", "expires_in": 3600},
            "dynamics": {"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599,
                         "scope": "https://contoso.crm.dynamics.com/user_impersonation"},
        }  # fmt: skip
        return {**tokens, **shapes[self.platform]}


def s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


class AuthHandler(BaseHTTPRequestHandler):
    server: FakeAuthServer

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if not parts.path.endswith("/authorize"):
            self._send(404, {"error": "not_found"})
            return
        self.send_response(302)
        self.send_header("Location", self.server.authorize(dict(parse_qsl(parts.query))))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        form = dict(parse_qsl(raw.decode()))
        headers = {name.lower(): value for name, value in self.headers.items()}
        path = urlsplit(self.path).path
        if path.endswith("/revoke"):
            query = dict(parse_qsl(urlsplit(self.path).query))
            status, body = self.server.revoke({**form, **query})
        elif path.endswith("/token"):
            status, body = self.server.token(form, headers)
            if self.server.platform == "dynamics" and status >= 400:
                status, body = entra_error(body)  # Entra ID's 400, whatever the error
        else:
            self._send(404, {"error": "not_found"})
            return
        # checked as the platform's own token or revocation endpoint
        vendor, token_path, revoke_path = OAUTH_ENDPOINTS[self.server.platform]
        named = revoke_path if path.endswith("/revoke") else token_path
        kind = headers.get("content-type", "")
        content = b"" if body is None else json.dumps(body).encode()
        checked(Exchange("POST", named, kind, raw, status, content), vendor)
        self._send(status, body)

    def _send(self, status: int, body: Row | None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        if data:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@contextmanager
def running(platform: str) -> Iterator[FakeAuthServer]:
    """A fake authorization server for `platform`, serving until the block ends."""
    with serving(FakeAuthServer(platform)) as fake:
        yield fake
