"""The Pipedrive adapter against a fake Pipedrive (httpx.MockTransport): the exact requests it
sends, and what it makes of answers shaped as Pipedrive's API v2 documents them; plus the
shipped mapping over the webhook v2 sample in tests/data/platforms/."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from connector import mappings
from connector.platforms.base import Permanent, Retriable, WriteResult
from connector.platforms.pipedrive import PLATFORM, Pipedrive
from tests.helpers.constants import PLATFORMS
from tests.helpers.crm import FakeCRM, answer, raising
from tests.helpers.pipedrive import (
    NOT_FOUND,
    RATE_LIMITED,
    WEBHOOK_REQUIRED,
    PipedriveWebhooks,
    found,
)
from tests.helpers.vendors import take_problems

ROOT = Path(__file__).resolve().parent.parent
COMPANY = "https://acme.pipedrive.com"
PERSONS = f"{COMPANY}/api/v2/persons"
TOKEN = "0123456789abcdef0123456789abcdef01234567"
KEY = "d4de1c1518b4531717c676029a45911c340390a6"  # a custom field's key (the PATCH sample's)
WEBHOOK = json.loads((PLATFORMS / "pipedrive_v2_person_updated.json").read_text())
PATCH_SAMPLE = json.loads(
    (PLATFORMS / "outbound" / "pipedrive_person_patch_v2_request.json").read_text()
)
# The update body's fields as Pipedrive's v2 specification names them (see its .src.txt).
DOCUMENTED = json.loads(
    (PLATFORMS / "outbound" / "pipedrive_update_person_request_fields.json").read_text()
)
# The person of the webhook sample as GET /api/v2/persons/12 gives it, with one custom field.
PERSON = {**WEBHOOK["data"], "custom_fields": {KEY: "Enriched value"}}


class FakePipedrive(FakeCRM):
    """The shared fake CRM, building this platform's adapter over itself."""

    def adapter(self) -> Pipedrive:
        return Pipedrive(COMPANY + "/", TOKEN, self.client())


def updated(request: httpx.Request) -> httpx.Response:
    """PATCH's answer: the person, with what was sent."""
    return found({**PERSON, **json.loads(request.content)})


def refused(*names: str) -> httpx.Response:
    """v2's answer to unknown parameters (seen for a deal update, pipedrive/client-nodejs#651)."""
    parts = [f"{name}: Parameter '{name}' is not allowed for this request" for name in names]
    body = {
        "success": False,
        "error": "Validation failed: " + "; ".join(parts),
        "code": "ERR_SCHEMA_VALIDATION_FAILED",
    }
    return answer(400, body)


def assert_sent(request: httpx.Request, method: str, url: str) -> None:
    assert (request.method, str(request.url)) == (method, url)
    assert request.headers["x-api-token"] == TOKEN
    assert "authorization" not in request.headers
    if request.content:
        assert request.headers["content-type"] == "application/json"


# --- read ------------------------------------------------------------------------------------


def test_read_flattens_the_person_to_the_asked_properties() -> None:
    crm = FakePipedrive(found(PERSON))
    values = crm.adapter().read(
        "12", ["email", "phone", "first_name", "name", "org_id", KEY, "job_title"]
    )
    assert values == {
        "email": "person@example.com",
        "phone": None,  # the sample's only phone is ""
        "first_name": "Person",
        "name": "Person Name",
        "org_id": None,
        KEY: "Enriched value",
        "job_title": None,  # absent: the company has no contact sync
    }
    (request,) = crm.requests
    assert_sent(request, "GET", f"{PERSONS}/12")


def test_read_takes_the_primary_value_else_the_first_non_empty_one() -> None:
    person = {
        **PERSON,
        "emails": [
            {"value": "old@example.com", "primary": False, "label": "home"},
            {"value": "jane@acme.example", "primary": True, "label": "work"},
        ],
        "phones": [
            {"value": "", "primary": True, "label": "work"},
            {"value": "+15125550100", "primary": False, "label": "mobile"},
        ],
    }
    values = FakePipedrive(found(person)).adapter().read("12", ["email", "phone"])
    assert values == {"email": "jane@acme.example", "phone": "+15125550100"}


def test_read_gives_the_value_of_an_object_valued_field() -> None:
    address = {"value": "Rue des Vignes 1, Paris", "locality": "Paris", "country": "France"}
    person = {**PERSON, "postal_address": address, "custom_fields": {KEY: {"value": 1200}}}
    values = FakePipedrive(found(person)).adapter().read("12", ["postal_address", KEY])
    assert values == {"postal_address": "Rue des Vignes 1, Paris", KEY: 1200}


def test_read_of_a_missing_person_is_permanent() -> None:
    crm = FakePipedrive(answer(404, NOT_FOUND))
    with pytest.raises(Permanent) as caught:
        crm.adapter().read("999", ["email"])
    assert caught.value.reason == "no such person (Person not found)"


def test_read_of_a_deleted_person_is_permanent() -> None:
    crm = FakePipedrive(found({**PERSON, "is_deleted": True}))
    with pytest.raises(Permanent, match="no such person: 12 is deleted"):
        crm.adapter().read("12", ["email"])


def test_a_record_id_cannot_escape_its_path() -> None:
    crm = FakePipedrive(answer(404, NOT_FOUND))
    with pytest.raises(Permanent):
        crm.adapter().read("../../v1/users", ["email"])
    assert crm.requests[0].url.raw_path == b"/api/v2/persons/..%2F..%2Fv1%2Fusers"


# --- read_many -------------------------------------------------------------------------------


def listed(request: httpx.Request) -> httpx.Response:
    """GET /persons?ids=...: the persons asked for that exist, here the even ids."""
    ids = request.url.params["ids"].split(",")
    data = [{**PERSON, "id": int(key)} for key in ids if int(key) % 2 == 0]
    return answer(200, {"success": True, "data": data, "additional_data": {"next_cursor": None}})


def test_read_many_asks_for_the_ids_in_one_call_and_misses_are_permanent() -> None:
    crm = FakePipedrive(listed)
    outcomes = crm.adapter().read_many(["12", "13", "12"], ["email", KEY])
    assert outcomes["12"] == {"email": "person@example.com", KEY: "Enriched value"}
    assert isinstance(outcomes["13"], Permanent)
    assert outcomes["13"].reason.startswith("no such person: not in Pipedrive's answer")
    assert list(outcomes) == ["12", "13"]
    (request,) = crm.requests
    assert_sent(request, "GET", f"{PERSONS}?ids=12%2C13&limit=100")


def test_read_many_splits_250_ids_into_100_100_50() -> None:
    crm = FakePipedrive(*[listed] * 3)
    ids = [str(n) for n in range(1, 251)]
    outcomes = crm.adapter().read_many(ids, ["name"])
    sizes = [len(request.url.params["ids"].split(",")) for request in crm.requests]
    assert sizes == [100, 100, 50]
    assert outcomes["2"] == {"name": "Person Name"}
    assert sum(isinstance(outcome, Permanent) for outcome in outcomes.values()) == 125


def test_read_many_keeps_ids_that_are_not_numbers_out_of_the_call() -> None:
    crm = FakePipedrive(listed)
    outcomes = crm.adapter().read_many(["12", "12,14"], ["name"])
    assert outcomes["12"] == {"name": "Person Name"}
    assert outcomes["12,14"].reason == "'12,14' is not a Pipedrive person id"
    assert crm.requests[0].url.params["ids"] == "12"


def test_read_many_of_deleted_persons_is_permanent() -> None:
    deleted = {**PERSON, "is_deleted": True}
    crm = FakePipedrive(answer(200, {"success": True, "data": [deleted]}))
    assert isinstance(crm.adapter().read_many(["12"], ["name"])["12"], Permanent)


def test_read_many_refused_call_is_each_persons_outcome() -> None:
    crm = FakePipedrive(answer(401, {"success": False, "error": "unauthorized access"}))
    outcomes = crm.adapter().read_many(["12", "14"], ["name"])
    assert {key: outcome.reason for key, outcome in outcomes.items()} == {
        "12": "token expired or revoked",
        "14": "token expired or revoked",
    }


def test_read_many_rate_limit_raises_for_the_whole_call() -> None:
    crm = FakePipedrive(answer(429, RATE_LIMITED, {"Retry-After": "3"}))
    with pytest.raises(Retriable) as caught:
        crm.adapter().read_many(["12", "14"], ["name"])
    assert caught.value.retry_after == 3.0


# --- write -----------------------------------------------------------------------------------


def test_write_sends_the_documented_body() -> None:
    flat = {
        "name": "Jane Doe",
        "email": "jane.doe@newcompany.com",
        "org_id": 42,
        KEY: "Enriched value",
    }
    crm = FakePipedrive(updated)
    result = crm.adapter().write("12", flat)
    assert result == WriteResult(written=flat)
    (request,) = crm.requests
    assert_sent(request, "PATCH", f"{PERSONS}/12")
    assert crm.bodies() == [PATCH_SAMPLE]


def test_write_sends_a_phone_as_a_one_item_list() -> None:
    crm = FakePipedrive(updated)
    crm.adapter().write("12", {"phone": "+15125550100", "name": "Jane Doe"})
    assert crm.bodies() == [
        {
            "phones": [{"value": "+15125550100", "primary": True, "label": "work"}],
            "name": "Jane Doe",
        }
    ]


def test_write_never_sends_an_empty_email_or_phone() -> None:
    crm = FakePipedrive(updated)
    result = crm.adapter().write("12", {"email": "", "phone": None, "name": "Jane Doe"})
    assert result.written == {"name": "Jane Doe"}
    assert set(result.dropped) == {"email", "phone"}
    assert result.dropped["email"].startswith("not sent: an empty value would replace")
    assert crm.bodies() == [{"name": "Jane Doe"}]


def test_write_sends_only_fields_of_the_documented_update_body() -> None:
    """job_title, birthday and the other contact-sync fields, first_name and last_name are
    no fields of v2's update body: they are dropped unsent, saying so (the job title goes to a
    custom field, mappings/pipedrive.yaml)."""
    crm = FakePipedrive(updated)
    flat = {"name": "Jane Doe", "job_title": "CTO", "first_name": "Jane", "birthday": "1990-01-01"}
    result = crm.adapter().write("12", flat)
    assert result.written == {"name": "Jane Doe"}
    assert set(result.dropped) == {"job_title", "first_name", "birthday"}
    assert all(why.startswith("not sent: not a field of") for why in result.dropped.values())
    assert crm.bodies() == [{"name": "Jane Doe"}]


def test_every_documented_field_goes_into_the_body_as_documented() -> None:
    flat = {
        "name": "Jane Doe",
        "owner_id": 7,
        "org_id": 42,
        "add_time": "2026-01-02T03:04:05Z",
        "update_time": "2026-01-02T03:04:05Z",
        "email": "jane@acme.example",
        "phone": "+15125550100",
        "visible_to": 3,
        "label_ids": [1, 2],
        "marketing_status": "subscribed",
        KEY: "Chief Technology Officer",
    }
    crm = FakePipedrive(updated)
    assert crm.adapter().write("12", flat) == WriteResult(written=flat)
    (body,) = crm.bodies()
    assert list(body) == DOCUMENTED["body"]
    for name in ("emails", "phones"):
        assert [list(item) for item in body[name]] == [DOCUMENTED[f"{name}[]"]]
    assert body["custom_fields"] == {KEY: "Chief Technology Officer"}


def test_write_drops_a_field_v2_does_not_allow_and_sends_the_rest_again() -> None:
    # marketing_status is accepted only where the company uses Campaigns
    crm = FakePipedrive(refused("marketing_status"), updated)
    result = crm.adapter().write("12", {"marketing_status": "subscribed", "name": "Jane Doe"})
    why = "marketing_status: Parameter 'marketing_status' is not allowed for this request"
    assert result == WriteResult(written={"name": "Jane Doe"}, dropped={"marketing_status": why})
    assert crm.bodies() == [
        {"marketing_status": "subscribed", "name": "Jane Doe"},
        {"name": "Jane Doe"},
    ]


def test_write_drops_every_field_one_refusal_names() -> None:
    crm = FakePipedrive(refused("marketing_status", "visible_to"), updated)
    result = crm.adapter().write(
        "12", {"marketing_status": "subscribed", "visible_to": 3, "name": "J D"}
    )
    assert result.written == {"name": "J D"}
    assert set(result.dropped) == {"marketing_status", "visible_to"}
    assert len(crm.requests) == 2


def test_write_drops_a_custom_field_the_refusal_names_by_its_key() -> None:
    # How v2 words an unknown key inside custom_fields is unverified: a message naming the key.
    other = "0" * 40
    body = {
        "success": False,
        "error": f"Validation failed: custom_fields: Unknown custom field '{other}'",
        "code": "ERR_SCHEMA_VALIDATION_FAILED",
    }
    crm = FakePipedrive(answer(400, body), updated)
    result = crm.adapter().write("12", {KEY: "Acme", other: "x"})
    assert result.written == {KEY: "Acme"}
    assert result.dropped == {other: f"custom_fields: Unknown custom field '{other}'"}
    assert crm.bodies()[1] == {"custom_fields": {KEY: "Acme"}}


def test_write_drops_an_email_refused_as_invalid() -> None:
    body = {
        "success": False,
        "error": "Validation failed: emails.0.value: must be a valid email",
        "code": "ERR_SCHEMA_VALIDATION_FAILED",
    }
    crm = FakePipedrive(answer(400, body), updated)
    result = crm.adapter().write("12", {"email": "not-an-address", "name": "Jane Doe"})
    assert result.written == {"name": "Jane Doe"}
    assert result.dropped == {"email": "emails.0.value: must be a valid email"}


def test_a_400_naming_nothing_sent_is_permanent_with_pipedrives_words() -> None:
    body = {"success": False, "error": "Bad request", "code": "ERR_BAD_REQUEST"}
    crm = FakePipedrive(answer(400, body))
    with pytest.raises(Permanent) as caught:
        crm.adapter().write("12", {"name": "Jane Doe"})
    assert caught.value.reason == "400 Bad Request: ERR_BAD_REQUEST: Bad request"
    assert len(crm.requests) == 1


def test_a_403_is_permanent_and_asked_once() -> None:
    forbidden = answer(403, {"success": False, "error": "Forbidden"})
    crm = FakePipedrive(forbidden)
    with pytest.raises(Permanent) as caught:
        crm.adapter().write("12", {"name": "Jane Doe", KEY: "CTO"})
    assert caught.value.reason == "403 Forbidden: Forbidden"
    assert len(crm.requests) == 1


def test_write_to_a_missing_person_is_permanent() -> None:
    crm = FakePipedrive(answer(404, NOT_FOUND))
    with pytest.raises(Permanent, match="no such person"):
        crm.adapter().write("999", {"name": "Jane Doe"})


# --- write_many ------------------------------------------------------------------------------


def test_write_many_patches_each_person_and_keeps_each_outcome() -> None:
    crm = FakePipedrive(updated, answer(404, NOT_FOUND), refused("marketing_status"), updated)
    outcomes = crm.adapter().write_many(
        {
            "12": {"name": "Jane Doe"},
            "13": {"name": "Gone"},
            "14": {"marketing_status": "subscribed", "email": "j@acme.example"},
        }
    )
    assert outcomes["12"] == WriteResult(written={"name": "Jane Doe"})
    assert outcomes["13"].reason == "no such person (Person not found)"
    assert outcomes["14"].written == {"email": "j@acme.example"}
    assert list(outcomes["14"].dropped) == ["marketing_status"]
    paths = [(request.method, request.url.path) for request in crm.requests]
    assert paths == [
        ("PATCH", "/api/v2/persons/12"),
        ("PATCH", "/api/v2/persons/13"),
        ("PATCH", "/api/v2/persons/14"),
        ("PATCH", "/api/v2/persons/14"),
    ]


def test_write_many_retriable_failure_goes_up() -> None:
    crm = FakePipedrive(updated, answer(503, {"success": False, "error": "Service Unavailable"}))
    with pytest.raises(Retriable, match="503 Service Unavailable: Service Unavailable"):
        crm.adapter().write_many({"12": {"name": "A"}, "13": {"name": "B"}, "14": {"name": "C"}})
    assert len(crm.requests) == 2


def test_write_many_of_nothing_sends_nothing() -> None:
    crm = FakePipedrive()
    assert crm.adapter().write_many({}) == {}
    assert crm.requests == []


# --- failures, for every call ----------------------------------------------------------------

CALLS: list[Callable[[Pipedrive], Any]] = [
    lambda adapter: adapter.read("12", ["email"]),
    lambda adapter: adapter.write("12", {"name": "Jane Doe"}),
    lambda adapter: adapter.write_many({"12": {"name": "Jane Doe"}}),
    lambda adapter: adapter.read_many(["12"], ["email"]),
]


def outcome_of(call: Callable[[Pipedrive], Any], crm: FakePipedrive) -> Any:
    """The call's Permanent, raised or as the one record's outcome of a batch call."""
    try:
        outcome = call(crm.adapter())
    except Permanent as failure:
        return failure
    if isinstance(outcome, dict):
        (outcome,) = outcome.values()
    return outcome


@pytest.mark.parametrize("call", CALLS)
def test_expired_token_is_permanent(call: Callable[[Pipedrive], Any]) -> None:
    body = {"success": False, "error": "unauthorized access", "errorCode": 401}
    crm = FakePipedrive(answer(401, body))
    assert outcome_of(call, crm).reason == "token expired or revoked"


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("status", [301, 302])
def test_redirects_are_not_followed(call: Callable[[Pipedrive], Any], status: int) -> None:
    crm = FakePipedrive(answer(status, headers={"Location": "https://attacker.example/steal"}))
    failure = outcome_of(call, crm)
    assert isinstance(failure, Permanent) and "not followed" in failure.reason
    assert len(crm.requests) == 1


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("error", [httpx.ReadTimeout, httpx.ConnectTimeout, httpx.ConnectError])
def test_timeouts_and_resets_are_retriable(
    call: Callable[[Pipedrive], Any], error: type[httpx.TransportError]
) -> None:
    crm = FakePipedrive(raising(error))
    with pytest.raises(Retriable, match=error.__name__):
        call(crm.adapter())


@pytest.mark.parametrize("call", CALLS)
def test_server_errors_are_retriable_after_retry_after(call: Callable[[Pipedrive], Any]) -> None:
    crm = FakePipedrive(answer(502, headers={"Retry-After": "30"}))
    with pytest.raises(Retriable) as caught:
        call(crm.adapter())
    assert caught.value.retry_after == 30.0


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"Retry-After": "7", "x-ratelimit-reset": "1"}, 7.0),
        ({"x-ratelimit-limit": "40", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "1"}, 1.0),
        ({}, None),  # the worker's THROTTLED_WAIT_SECONDS, not a 2-second loop
        (
            {"x-daily-requests-left": "0", "Date": "Wed, 21 Oct 2026 22:30:00 GMT"},
            1.5 * 3600,
        ),
    ],
    ids=["retry-after", "window-reset", "no-headers", "daily-allowance"],
)
def test_rate_limit_waits_as_pipedrive_says(headers: dict[str, str], wait: float | None) -> None:
    crm = FakePipedrive(answer(429, RATE_LIMITED, headers))
    with pytest.raises(Retriable) as caught:
        crm.adapter().write("12", {"name": "Jane Doe"})
    assert caught.value.retry_after == wait and caught.value.throttled
    assert caught.value.reason == "429 Too Many Requests: Request over limit"


def test_write_many_rate_limit_goes_up() -> None:
    crm = FakePipedrive(answer(429, RATE_LIMITED, {"Retry-After": "2"}))
    with pytest.raises(Retriable):
        crm.adapter().write_many({"12": {"name": "A"}, "13": {"name": "B"}})
    assert len(crm.requests) == 1


def test_other_4xx_is_permanent_with_pipedrives_message() -> None:
    body = {"success": False, "error": "Scope and URL mismatch", "errorCode": 403}
    crm = FakePipedrive(answer(403, body))
    with pytest.raises(Permanent) as caught:
        crm.adapter().read("12", ["email"])
    assert caught.value.reason == "403 Forbidden: Scope and URL mismatch"


# --- the shipped mapping over a webhook v2 body ----------------------------------------------


@pytest.fixture(scope="module")
def mapping() -> mappings.Mapping:
    return mappings.load(ROOT / "mappings" / "pipedrive.yaml")


def test_mapping_reads_the_webhook_sample(mapping: mappings.Mapping) -> None:
    assert mapping.platform == "pipedrive"
    assert mapping.record_id(WEBHOOK) == "12"
    assert mapping.enrich_input(WEBHOOK) == {
        "conEmail": "person@example.com",
        "conFullName": "Person Name",
        "conFirstName": "Person",
        "conLastName": "Name",
    }


def test_mapping_takes_from_the_read_values_what_the_event_lacks(
    mapping: mappings.Mapping,
) -> None:
    thin = copy.deepcopy(WEBHOOK)
    thin["data"] = {"id": 12}
    current = {"email": "person@example.com", "name": "Person Name", "job_title": "Engineer"}
    assert mapping.record_id(thin) == "12"
    assert mapping.enrich_input({**current, **thin}) == {
        "conEmail": "person@example.com",
        "conFullName": "Person Name",
        "conJobTitle": "Engineer",
    }


def test_mapping_fills_an_empty_phone_and_keeps_the_email(mapping: mappings.Mapping) -> None:
    result = {
        "conFullName": "Person Name",
        "conEmail": "Other@Example.com",
        "conWorkLocPhoneNo": "+1 512-555-0100",
        "conJobTitleEn": "Chief Technology Officer",
    }
    current = {"name": "Person Name", "email": "person@example.com", "phone": None}
    assert mapping.changes(result, current) == {"phone": "+15125550100"}


def test_the_shipped_mapping_writes_only_fields_of_the_documented_update_body(
    mapping: mappings.Mapping,
) -> None:
    """Every rule of the shipped mapping, over an empty person, goes into the PATCH body as a
    field v2 documents: nothing is left to be refused (the job title was, as job_title)."""
    result = {
        "conFullName": "Person Name",
        "conEmail": "person@example.com",
        "conWorkLocPhoneNo": "+1 512-555-0100",
        "conJobTitleEn": "Chief Technology Officer",
    }
    changes = mapping.changes(result, {})
    assert set(changes) == {rule.property for rule in mapping.output}
    crm = FakePipedrive(updated)
    assert crm.adapter().write("12", changes) == WriteResult(written=changes)
    (body,) = crm.bodies()
    assert set(body) <= set(DOCUMENTED["body"])


# --- webhooks registered ---------------------------------------------------------------------


def test_each_webhook_registered_carries_every_field_pipedrive_requires() -> None:
    """Issue 35: AddWebhookRequest requires a `name` (client-nodejs 29.2.0+); without it
    Pipedrive answers 400 and no webhook is made."""
    pipedrive = PipedriveWebhooks()
    adapter = Pipedrive(COMPANY, TOKEN, pipedrive.client())
    events = "https://connector.example/hooks/c1/events"

    ids = PLATFORM.set_up_webhooks(adapter, events, "the-secret")

    assert ids == ["101", "102", "103"]
    posted = [json.loads(r.content) for r in pipedrive.requests]
    assert [body["event_object"] for body in posted] == ["person", "organization", "lead"]
    for body in posted:
        assert all(body.get(name) for name in WEBHOOK_REQUIRED), body
        assert body["name"] == f"contactdata {body['event_object']}"
        assert (body["subscription_url"], body["event_action"]) == (events, "*")


def test_a_webhook_body_lacking_a_required_field_is_refused() -> None:
    """By the fake, as Pipedrive refuses it (400), and by the check of AddWebhookRequest."""
    pipedrive = PipedriveWebhooks()
    body = {"subscription_url": "https://connector.example/e", "event_action": "*",
            "event_object": "person", "version": "2.0"}  # fmt: skip
    with pipedrive.client() as client:
        refused = client.post(f"{COMPANY}/api/v1/webhooks", json=body)
    assert refused.status_code == 400 and refused.json()["errors"].keys() == {"name"}
    assert pipedrive.held == {}
    assert take_problems() == [  # taken: this request is refused on purpose
        "pipedrive: POST /api/v1/webhooks (/api/v1/webhooks): request body at (root): "
        '"name" is a required property'
    ]
