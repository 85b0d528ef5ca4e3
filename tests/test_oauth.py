"""Renewable CRM tokens (connector/oauth.py): every adapter whose CRM's tokens expire gets a
new access token when it has none, when it has expired and when the CRM refuses it, sends the
refused request once more, and the worker saves each token for the next round; what token
endpoints answer (Salesforce without expires_in, Zoho's errors as 200, rotated refresh
tokens, 5xx) is read as each documents it."""

from __future__ import annotations

import json
import random
import sqlite3
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

import server
from connector import connections, oauth, outbound, store, worker
from connector.platforms import PLATFORMS as DECLARED
from connector.platforms.base import TOKEN_REFUSED, Permanent, Retriable
from tests.helpers import hubspot_shapes
from tests.helpers.constants import NOW, SECRET
from tests.helpers.crm import CRMS, FakeHubSpot, answer
from tests.helpers.events import hubspot_event
from tests.helpers.orgs import organization
from tests.helpers.vendors import VendorTransport

TOKEN_URL = "https://login.example/oauth2/token"
CREDENTIALS = oauth.Credentials(TOKEN_URL, "client-id", "client-secret", "refresh-1")

REFRESHABLE = [name for name, p in DECLARED.items() if p.refreshable]


class TokenEndpoint:
    """An OAuth token endpoint handing out fresh-1, fresh-2, ... (or `replies` first), and a
    CRM (the platform's answers) that takes only the latest token handed out, or none."""

    def __init__(
        self, platform: str, replies: list[httpx.Response] | None = None, accepts: bool = True
    ) -> None:
        self.spec = CRMS[platform]
        self.replies = replies or []
        self.accepts = accepts
        self.issued: list[str] = []
        self.forms: list[dict[str, list[str]]] = []
        self.crm_requests: list[httpx.Request] = []
        self.tokens: list[str] = []  # each CRM request's Authorization, as it arrived

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if str(request.url) == TOKEN_URL:
            assert request.extensions["timeout"] == oauth.TOKEN_TIMEOUT.as_dict()
            self.forms.append(parse_qs(request.content.decode()))
            if self.replies:
                return self.replies.pop(0)
            self.issued.append(f"fresh-{len(self.issued) + 1}")
            return answer(200, {"access_token": self.issued[-1], "expires_in": 3600})
        self.crm_requests.append(request)
        given = request.headers.get("Authorization", "")
        self.tokens.append(given)
        if self.accepts and self.issued and given.endswith(f" {self.issued[-1]}"):
            return self.spec.answers(request)
        return answer(401, self.spec.expired, self.spec.expired_headers)


class Saved(list[oauth.Granted]):
    def __call__(self, got: oauth.Granted) -> None:
        self.append(got)


def renewing(
    platform: str,
    endpoint: TokenEndpoint,
    token: str = "stale",
    expires_at: datetime | None = None,
    now: datetime = NOW,
) -> tuple[Any, Saved]:
    saved = Saved()
    auth = oauth.Renewing(CREDENTIALS, token, expires_at, saved, lambda: now)
    client = httpx.Client(transport=VendorTransport(endpoint))
    return DECLARED[platform].adapter(CRMS[platform].base_url, token, client, auth), saved


@pytest.mark.parametrize("platform", REFRESHABLE)
def test_a_refused_token_is_renewed_and_the_request_sent_once_more(platform: str) -> None:
    spec = CRMS[platform]
    endpoint = TokenEndpoint(platform)
    adapter, saved = renewing(platform, endpoint)
    assert adapter.read(spec.ids[0], [spec.known])[spec.known] == "CTO"
    scheme = spec.auth[1].split(" ")[0]  # Bearer, or Zoho-oauthtoken
    assert endpoint.tokens == [f"{scheme} stale", f"{scheme} fresh-1"]
    assert endpoint.forms == [
        {
            "grant_type": ["refresh_token"],
            "client_id": ["client-id"],
            "client_secret": ["client-secret"],
            "refresh_token": ["refresh-1"],
        }
    ]
    (got,) = saved
    assert got.access_token == "fresh-1" and got.expires_at == NOW + timedelta(hours=1)


@pytest.mark.parametrize("platform", REFRESHABLE)
def test_a_token_still_refused_after_renewal_is_a_dead_letter_asked_once(platform: str) -> None:
    spec = CRMS[platform]
    endpoint = TokenEndpoint(platform, accepts=False)
    adapter, _ = renewing(platform, endpoint)
    with pytest.raises(Permanent, match=TOKEN_REFUSED):
        adapter.read(spec.ids[0], [spec.known])
    assert len(endpoint.crm_requests) == 2 and len(endpoint.forms) == 1  # no loop


@pytest.mark.parametrize("platform", REFRESHABLE)
def test_a_token_refused_right_after_it_was_given_is_not_renewed_for_each_record(
    platform: str,
) -> None:
    spec = CRMS[platform]
    endpoint = TokenEndpoint(platform, accepts=False)
    adapter, _ = renewing(platform, endpoint)
    for record_id in spec.ids:
        with pytest.raises(Permanent, match=TOKEN_REFUSED):
            adapter.read(record_id, [spec.known])
    assert len(endpoint.forms) == 1 and len(endpoint.crm_requests) == 3


def test_no_token_yet_is_asked_for_before_the_first_request() -> None:
    endpoint = TokenEndpoint("zoho")
    adapter, saved = renewing("zoho", endpoint, token="")
    adapter.read(CRMS["zoho"].ids[0], ["Title"])
    assert endpoint.tokens == ["Zoho-oauthtoken fresh-1"]
    assert len(saved) == 1


def test_an_expired_token_is_renewed_before_use_and_a_live_one_is_not() -> None:
    spec = CRMS["hubspot"]
    endpoint = TokenEndpoint("hubspot")
    endpoint.issued.append("live")
    live, _ = renewing("hubspot", endpoint, "live", NOW + timedelta(minutes=5))
    live.read(spec.ids[0], [spec.known])
    assert endpoint.forms == []  # five minutes left: used as it is
    soon, saved = renewing("hubspot", endpoint, "live", NOW + timedelta(seconds=30))
    soon.read(spec.ids[0], [spec.known])
    assert len(endpoint.forms) == 1 and saved[0].access_token == "fresh-2"
    assert endpoint.tokens[-1] == "Bearer fresh-2"


def token_answer(status: int, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, json=body, headers=headers)


def read_granted(response: httpx.Response, credentials: oauth.Credentials = CREDENTIALS) -> Any:
    return oauth.granted(response, credentials, NOW)


def test_salesforce_says_no_expiry_and_the_token_is_renewed_when_refused() -> None:
    body = {
        "access_token": "00D...!AQ4AQ", "signature": "sig", "scope": "refresh_token api",
        "instance_url": "https://acme.my.salesforce.com", "id": "https://login.salesforce.com/id/x",
        "token_type": "Bearer", "issued_at": "1795000000000",
    }  # fmt: skip
    got = read_granted(token_answer(200, body))
    assert got.access_token == "00D...!AQ4AQ" and got.expires_at is None
    assert got.credentials == CREDENTIALS  # no refresh token in the answer: kept


def test_a_rotated_refresh_token_replaces_the_old_one() -> None:
    body = {"access_token": "a2", "refresh_token": "refresh-2", "expires_in": "1800"}
    got = read_granted(token_answer(200, body))
    assert got.credentials.refresh_token == "refresh-2"
    assert got.expires_at == NOW + timedelta(minutes=30)


@pytest.mark.parametrize(
    ("response", "words"),
    [
        (token_answer(200, {"error": "invalid_code"}), "(200 invalid_code)"),  # Zoho
        (
            token_answer(
                400,
                {"error": "invalid_grant", "error_description": "expired access/refresh token"},
            ),
            "(400 invalid_grant expired access/refresh token)",
        ),
        (
            token_answer(
                401,
                {
                    "error": "invalid_client",
                    "error_description": "AADSTS7000215: Invalid client secret provided.",
                },
            ),
            "AADSTS7000215",
        ),
        (httpx.Response(200, text="<html>login</html>"), "<html>login</html>"),
        (token_answer(200, {"token_type": "Bearer"}), 'no access token in {"token_type":"Bearer"}'),
    ],
)
def test_a_refusal_of_the_token_endpoint_is_permanent_with_its_words(
    response: httpx.Response, words: str
) -> None:
    with pytest.raises(Permanent) as refused:
        read_granted(response)
    assert words in refused.value.reason
    assert refused.value.reason.startswith("the CRM would not renew the access token")
    assert refused.value.reason.endswith("give the connection new OAuth credentials")


@pytest.mark.parametrize("status", [429, 500, 503])
def test_a_busy_token_endpoint_is_retriable(status: int) -> None:
    with pytest.raises(Retriable) as busy:
        read_granted(token_answer(status, {}, {"Retry-After": "7"}))
    assert busy.value.retry_after == 7.0


# Zoho's answer once a refresh token has asked for 10 access tokens within 10 minutes
# (accounts/protocol/oauth/token-limits; "Access Denied" for the rest of the 10 minutes).
THROTTLED = {
    "error_description": (
        "You have made too many requests continuously. Please try again after some time."
    ),
    "error": "Access Denied",
    "status": "failure",
}


def test_zoho_throttling_token_requests_is_retriable_once_its_ten_minutes_are_over() -> None:
    with pytest.raises(Retriable) as throttled:
        read_granted(token_answer(200, THROTTLED))
    assert throttled.value.retry_after == 600.0
    assert "Access Denied" in throttled.value.reason
    assert "too many requests" in throttled.value.reason


@pytest.mark.parametrize(
    ("refusal", "failure"),
    [
        (token_answer(200, THROTTLED), Retriable),
        (token_answer(200, {"error": "invalid_code"}), Permanent),  # Zoho refuses in a 200
    ],
    ids=["throttled", "refused"],
)
def test_a_refused_renewal_is_not_asked_for_again_by_the_same_authentication(
    refusal: httpx.Response, failure: type[Exception]
) -> None:
    """One refusal a round: asking again for each record deepens Zoho's throttle."""
    spec = CRMS["zoho"]
    endpoint = TokenEndpoint("zoho", [refusal])
    adapter, saved = renewing("zoho", endpoint, token="")
    for record_id in spec.ids:
        with pytest.raises(failure):
            adapter.read(record_id, [spec.known])
    with pytest.raises(failure):
        adapter.write_many({record_id: {spec.known: "CTO"} for record_id in spec.ids})
    assert len(endpoint.forms) == 1 and endpoint.crm_requests == [] and saved == []


def test_a_renewal_refused_fails_the_adapters_call_with_the_reason() -> None:
    spec = CRMS["salesforce"]
    refusal = token_answer(400, {"error": "invalid_grant", "error_description": "revoked"})
    endpoint = TokenEndpoint("salesforce", [refusal])
    adapter, saved = renewing("salesforce", endpoint)
    with pytest.raises(Permanent, match="would not renew the access token"):
        adapter.read(spec.ids[0], [spec.known])
    assert saved == []


def test_client_credentials_ask_for_the_scope_without_a_refresh_token() -> None:
    credentials = oauth.Credentials(
        TOKEN_URL, "app", "secret", scope="https://x.crm.dynamics.com/.default"
    )
    assert credentials.form() == {
        "grant_type": "client_credentials",
        "client_id": "app",
        "client_secret": "secret",
        "scope": "https://x.crm.dynamics.com/.default",
    }
    assert oauth.Credentials.loads(credentials.dumps()) == credentials


@pytest.mark.parametrize(
    ("platform", "base_url", "token_url"),
    [
        ("salesforce", "https://acme.my.salesforce.com", "https://acme.my.salesforce.com/services/oauth2/token"),
        ("hubspot", "https://api.hubapi.com", "https://api.hubapi.com/oauth/2026-03/token"),
        ("zoho", "https://www.zohoapis.com.au", "https://accounts.zoho.com.au/oauth/v2/token"),
        ("zoho", "https://www.zohoapis.ca", "https://accounts.zohocloud.ca/oauth/v2/token"),
        ("dynamics", "https://acme.crm.dynamics.com", ""),
    ],
)  # fmt: skip
def test_default_token_endpoints(platform: str, base_url: str, token_url: str) -> None:
    assert DECLARED[platform].token_url(base_url) == token_url


# --- through the worker --------------------------------------------------------------------


class RenewingHubSpot(FakeHubSpot):
    """The worker tests' fake HubSpot, taking only the latest token its /oauth/2026-03/token
    handed out (renewed-1, ...) for the refresh token r1."""

    def __init__(self) -> None:
        super().__init__()
        self.issued: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/oauth/2026-03/token":
            form = parse_qs(request.content.decode())
            assert form["grant_type"] == ["refresh_token"] and form["refresh_token"] == ["r1"]
            self.issued.append(f"renewed-{len(self.issued) + 1}")
            token = hubspot_shapes.token(self.issued[-1], "r2", expires_in=1799)
            return httpx.Response(200, json=token)
        if not self.issued or request.headers["Authorization"] != f"Bearer {self.issued[-1]}":
            self.requests.append(request)
            message = "The OAuth token used to make this call expired 0 second(s) ago."
            body = hubspot_shapes.error("EXPIRED_AUTHENTICATION", message)
            return httpx.Response(401, json=body)
        return super().__call__(request)


@pytest.fixture
def crm() -> RenewingHubSpot:
    return RenewingHubSpot()


def test_the_worker_renews_an_expired_token_writes_back_and_saves_it_for_the_next_round(
    worker_setup: Any, crm: RenewingHubSpot
) -> None:
    db, work, link, clock = worker_setup
    secret = SECRET.encode()
    token_url = f"{link.row['crm_base_url']}/oauth/2026-03/token"
    credentials = oauth.Credentials(token_url, "cid", "csecret", "r1")
    with store.server.write(db):
        store.save_crm_grant(db, link.row["id"], {
            "crm_oauth_sealed": store.seal(secret, credentials.dumps()),
            "crm_token_sealed": store.seal(secret, "expired-token"),
        })  # fmt: skip
    hubspot_event(db, link, "e1")
    assert work.run_due() == {"done": 1}
    assert crm.issued == ["renewed-1"]
    (written,) = crm.patches()
    assert written["jobtitle"] == "Vice President of Sales"
    row = store.connection(db, link.row["id"])
    assert row is not None and store.unseal(secret, row["crm_token_sealed"]) == "renewed-1"
    assert row["crm_token_hint"] == "…ed-1" and "renewed-1" not in json.dumps(row)
    assert row["crm_token_expires_at"] == (clock() + timedelta(seconds=1799)).isoformat()
    rotated = oauth.Credentials.loads(store.unseal(secret, row["crm_oauth_sealed"]))
    assert rotated == oauth.Credentials(token_url, "cid", "csecret", "r2")

    # Another worker (another process) reads the record again with the saved token.
    again = worker.Worker(db, secret, clock, work.client, random.Random(1))
    hubspot_event(db, link, "e2", thin=True)
    assert again.run_due() == {"done": 1}
    assert crm.issued == ["renewed-1"]
    assert crm.requests[-1].headers["Authorization"] == "Bearer renewed-1"


def test_the_token_endpoint_is_checked_again_before_each_round(
    worker_setup: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, _, link, clock = worker_setup
    secret = SECRET.encode()
    credentials = oauth.Credentials("http://127.0.0.1:9/token", "cid", "csecret", "r1")
    with store.server.write(db):
        sealed = store.seal(secret, credentials.dumps())
        store.save_crm_grant(db, link.row["id"], {"crm_oauth_sealed": sealed})
    row = store.connection(db, link.row["id"])
    assert store.crm_auth(db, secret, row, clock) is not None  # private URLs allowed
    monkeypatch.delenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS")
    with pytest.raises(outbound.UnsafeUrl, match="must start with https://"):
        store.crm_auth(db, secret, row, clock)


def test_a_token_that_cannot_be_saved_is_retriable_and_not_used() -> None:
    spec = CRMS["hubspot"]

    def failing(got: oauth.Granted) -> None:
        raise sqlite3.OperationalError("database is locked")

    endpoint = TokenEndpoint("hubspot")
    auth = oauth.Renewing(CREDENTIALS, "stale", None, failing, lambda: NOW)
    client = httpx.Client(transport=VendorTransport(endpoint))
    adapter = DECLARED["hubspot"].adapter(spec.base_url, "stale", client, auth)
    with pytest.raises(Retriable, match="could not be saved: database is locked"):
        adapter.read(spec.ids[0], [spec.known])
    assert auth.token == "stale" and auth.credentials == CREDENTIALS


@pytest.mark.parametrize("expires_in", ["1e300", "inf", 10**12])
def test_an_absurd_expiry_is_read_as_a_year(expires_in: Any) -> None:
    got = read_granted(token_answer(200, {"access_token": "a", "expires_in": expires_in}))
    assert got.expires_at == NOW + timedelta(days=365)


def test_secrets_stay_out_of_reprs() -> None:
    shown = repr(read_granted(token_answer(200, {"access_token": "at-123", "expires_in": 60})))
    assert "at-123" not in shown and "client-secret" not in shown and "refresh-1" not in shown


class ThrottlingZoho:
    """Zoho's accounts server answering every token request as throttled, and Zoho CRM
    refusing a request without a token; keeps the requests."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if request.url.path == "/oauth/v2/token":
            return httpx.Response(200, json=THROTTLED)
        return httpx.Response(401, json=CRMS["zoho"].expired)

    def token_requests(self) -> list[httpx.Request]:
        return [request for request in self.requests if request.url.path == "/oauth/v2/token"]


def test_a_throttled_zoho_token_postpones_the_round_asking_once(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three events, two batches (one record's second event waits its turn): one token
    request for the round, and every event waits out Zoho's ten minutes."""
    monkeypatch.setenv("CONTACTDATA_ALLOW_PRIVATE_CRM_URLS", "1")
    db = store.connect(db_path)
    _, key = organization(db)
    zoho_api = "http://127.0.0.1:9"
    link = connections.add(
        db, SECRET.encode(), NOW, name="zoho", platform="zoho", api_key=key,
        crm_base_url=zoho_api, crm_client_id="1000.client", crm_client_secret="client-secret",
        crm_refresh_token="1000.refresh", crm_token_url=f"{zoho_api}/oauth/v2/token",
    )  # fmt: skip
    events = [("e1", "101"), ("e2", "102"), ("e3", "101")]
    with store.server.write(db):
        store.add_events(db, [
            {"connection_id": link.row["id"], "event_key": key, "record_id": record,
             "payload": json.dumps({"id": record, "module": "Contacts", "operation": "update"}),
             "thin": 1, "received_at": server.iso(NOW)}
            for key, record in events
        ])  # fmt: skip
    zoho = ThrottlingZoho()
    with httpx.Client(transport=VendorTransport(zoho)) as client:
        work = worker.Worker(db, SECRET.encode(), lambda: NOW, client, random.Random(1))
        assert work.run_due() == {"retry": 3}
    assert len(zoho.token_requests()) == 1 and len(zoho.requests) == 1
    for event in store.events_of(db, link.row["id"]):
        assert event["status"] == "pending" and "Access Denied" in event["last_error"]
        assert event["due_at"] >= server.iso(NOW + timedelta(minutes=10))


# --- installing: the authorization-code flow's pure parts -------------------------------------


def test_the_pkce_challenge_is_rfc_7636s_s256() -> None:
    verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"  # RFC 7636, appendix B
    assert oauth.challenge(verifier) == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    fresh, challenge = oauth.pkce_pair()
    assert 43 <= len(fresh) <= 128 and oauth.challenge(fresh) == challenge


def test_the_consent_url_keeps_the_apps_own_query_and_leaves_out_empty_parameters() -> None:
    url = oauth.consent_url(
        "https://login.example.com/authorize?prompt=login",
        {"client_id": "c", "state": "s t", "code_challenge": ""},
    )
    assert url == "https://login.example.com/authorize?prompt=login&client_id=c&state=s+t"


def test_a_basic_client_exchanges_its_code_without_its_secret_in_the_body() -> None:
    pipedrive = oauth.Credentials("https://oauth.example.com/token", "id", "secret", basic=True)
    request = oauth.code_request(pipedrive, "the-code", "https://us.example/cb", "")
    assert request.headers["Authorization"] == "Basic aWQ6c2VjcmV0"  # base64("id:secret")
    assert parse_qs(request.content.decode()) == {
        "grant_type": ["authorization_code"], "code": ["the-code"],
        "redirect_uri": ["https://us.example/cb"],
    }  # fmt: skip
    body = oauth.Credentials("https://oauth.example.com/token", "id", "secret")
    form = parse_qs(oauth.code_request(body, "c", "https://us.example/cb", "v").content.decode())
    assert form["client_secret"] == ["secret"] and form["code_verifier"] == ["v"]
    assert "Authorization" not in oauth.code_request(body, "c", "u", "").headers


def test_a_code_answer_without_a_refresh_token_is_refused_in_the_endpoints_words() -> None:
    no_refresh = httpx.Response(200, json={"access_token": "at-1", "expires_in": 60})
    with pytest.raises(Permanent, match="no refresh token") as refused:
        oauth.answered(no_refresh, NOW)
    assert "at-1" not in str(refused.value)
    complaint = httpx.Response(400, json={"error": "invalid_grant", "error_description": "bad"})
    with pytest.raises(Permanent, match=r"\(400: invalid_grant bad\)"):
        oauth.answered(complaint, NOW)
    with pytest.raises(Retriable):
        oauth.answered(httpx.Response(503), NOW)
    got = oauth.answered(httpx.Response(200, json={"access_token": "a", "refresh_token": "r"}), NOW)
    assert (got.access_token, got.refresh_token, got.expires_at) == ("a", "r", None)


def test_a_basic_clients_grant_renews_with_basic_auth_and_stays_readable() -> None:
    credentials = oauth.Credentials("https://t.example/token", "id", "s", "rt", basic=True)
    assert oauth.Credentials.loads(credentials.dumps()) == credentials
    assert credentials.form() == {"grant_type": "refresh_token", "refresh_token": "rt"}
    assert credentials.headers()["Authorization"] == "Basic aWQ6cw=="
