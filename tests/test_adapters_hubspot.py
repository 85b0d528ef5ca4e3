"""The HubSpot adapter against a fake HubSpot (httpx.MockTransport): the exact requests it
sends, checked against the SDK's generated models (hubspot-api-client) and HubSpot's 2026-03
documents (tests/vendor/hubspot/, with the departures HubSpot's own pages show), and what it
makes of answers shaped as HubSpot documents them (tests/helpers/hubspot_shapes.py, and the
samples in tests/data/platforms/outbound/)."""

from __future__ import annotations

import contextlib
import copy
import json
import re
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from hubspot.automation import actions as sdk_actions
from hubspot.crm import contacts as sdk_contacts

from connector.platforms import PLATFORMS
from connector.platforms.base import NewContact, Permanent, Retriable, Task, WriteResult
from connector.platforms.hubspot import HubSpot
from tests.helpers.crm import (
    HS_CONTACTS,
    HUBSPOT,
    FakeCRM,
    answer,
    assert_sent,
    hubspot,
    hubspot_answers,
    sample,
)
from tests.helpers.hubspot_shapes import (
    batch,
    batch_error,
    error,
    not_found,
    rate_limited,
    record,
    search_page,
)
from tests.helpers.vendors import Exchange, check


def test_hubspot_read_asks_for_the_properties() -> None:
    contact = record("512", {"jobtitle": "CTO", "company": None, "email": "a@b.c"})
    crm = FakeCRM(answer(200, contact))
    values = hubspot(crm).read("512", ["jobtitle", "company", "industry"])
    assert values == {"jobtitle": "CTO", "company": None, "industry": None}
    (request,) = crm.requests
    assert_sent(
        request,
        "GET",
        f"{HUBSPOT}{HS_CONTACTS}/512?properties=jobtitle%2Ccompany%2Cindustry",
    )
    assert request.url.params["properties"] == "jobtitle,company,industry"


def test_hubspot_read_of_a_missing_contact_is_permanent() -> None:
    crm = FakeCRM(answer(404, not_found()))
    with pytest.raises(Permanent, match="Object not found"):
        hubspot(crm).read("999", ["jobtitle"])


def test_hubspot_record_id_cannot_leave_the_contacts_path() -> None:
    crm = FakeCRM(answer(200, record("1", {})))
    hubspot(crm).read("../../owners/1", [])
    assert crm.requests[0].url.raw_path == f"{HS_CONTACTS}/..%2F..%2Fowners%2F1".encode()


def test_hubspot_read_many_asks_100_contacts_a_call_and_reports_the_missing() -> None:
    def found(request: httpx.Request) -> httpx.Response:
        asked = json.loads(request.content)
        results = [
            record(item["id"], {"jobtitle": f"T{item['id']}", "company": None})
            for item in asked["inputs"]
            if item["id"] != "150"
        ]
        if len(results) == len(asked["inputs"]):
            return answer(200, batch(results))
        missing = batch_error(
            "OBJECT_NOT_FOUND",
            "Could not get some CONTACT objects, they may be deleted or not exist.",
            {"ids": ["150"]},
        )
        return answer(207, batch(results, [missing]))

    crm = FakeCRM(found, found)
    ids = [str(n) for n in range(101, 221)] + ["101"]  # 120 contacts, one named twice
    values = hubspot(crm).read_many(ids, ["jobtitle", "company"])
    assert [request.url.path for request in crm.requests] == [f"{HS_CONTACTS}/batch/read"] * 2
    assert [len(body["inputs"]) for body in crm.bodies()] == [100, 20]
    assert crm.bodies()[0]["properties"] == ["jobtitle", "company"]
    assert crm.bodies()[0]["inputs"][0] == {"id": "101"}
    assert values["101"] == {"jobtitle": "T101", "company": None} and len(values) == 120
    missing = values["150"]
    assert isinstance(missing, Permanent)
    assert missing.reason == (
        "no such contact: OBJECT_NOT_FOUND: Could not get some CONTACT objects, they may be "
        "deleted or not exist."
    )


def test_hubspot_write_sends_the_documented_body() -> None:
    properties = sample("hubspot_contact_patch_request.json")["properties"]
    crm = FakeCRM(answer(200, record("512", properties)))
    result = hubspot(crm).write("512", properties)
    assert result == WriteResult(written=properties, dropped={})
    (request,) = crm.requests
    assert_sent(request, "PATCH", f"{HUBSPOT}{HS_CONTACTS}/512")
    assert request.headers["content-type"] == "application/json"
    assert crm.bodies() == [{"properties": properties}]


def test_hubspot_values_always_go_as_strings() -> None:
    crm = FakeCRM(answer(200, record("512", {})))
    values = {"numberofemployees": 17, "opted_in": True, "hobbies": ["chess", "go"], "fax": None}
    result = hubspot(crm).write("512", values)
    sent = crm.bodies()[0]["properties"]
    assert sent == {"numberofemployees": "17", "opted_in": "true", "hobbies": "chess;go", "fax": ""}
    assert result.written == values


def test_hubspot_drops_a_property_that_does_not_exist_and_retries_the_rest() -> None:
    refusal = sample("hubspot_error_400_property_doesnt_exist.json")
    crm = FakeCRM(answer(400, refusal), answer(200, record("512", {"jobtitle": "CTO"})))
    result = hubspot(crm).write("512", {"jobtitle": "CTO", "description": "Enriched"})
    assert result.written == {"jobtitle": "CTO"}
    assert result.dropped == {"description": 'Property "description" does not exist'}
    assert crm.bodies() == [
        {"properties": {"jobtitle": "CTO", "description": "Enriched"}},
        {"properties": {"jobtitle": "CTO"}},
    ]


def test_hubspot_write_of_only_unknown_properties_sends_once() -> None:
    crm = FakeCRM(answer(400, sample("hubspot_error_400_property_doesnt_exist.json")))
    result = hubspot(crm).write("512", {"description": "Enriched"})
    assert result == WriteResult(
        written={}, dropped={"description": 'Property "description" does not exist'}
    )
    assert len(crm.requests) == 1


def test_hubspot_validation_errors_naming_no_property_are_permanent() -> None:
    refusal = error(
        "VALIDATION_ERROR",
        'Property values were not valid: "industry" has no option "Widgets"',
        errors=[{"message": "no option Widgets", "code": "INVALID_OPTION"}],
    )
    crm = FakeCRM(answer(400, refusal))
    with pytest.raises(Permanent, match="has no option"):
        hubspot(crm).write("512", {"industry": "Widgets"})
    assert len(crm.requests) == 1


INVALID_INDUSTRY = (
    'INVALID_OPTION: Computer Software was not one of the allowed options: [label: "Computer '
    'Software (COMPUTER_SOFTWARE)" value: "COMPUTER_SOFTWARE" display_order: 0 hidden: false '
    'read_only: false , label: "Internet" value: "INTERNET" display_order: 1 hidden: false '
    "read_only: false ]"
)


def test_hubspot_drops_an_invalid_option_and_writes_the_rest() -> None:
    """An enumeration value the property has no option for (INVALID_OPTION, naming the
    property) refuses the whole update: the contact's other properties go again without it,
    and the reason is HubSpot's."""
    refusal = sample("hubspot_error_400_invalid_option.json")
    crm = FakeCRM(answer(400, refusal), answer(200, record("512", {"jobtitle": "CTO"})))
    result = hubspot(crm).write("512", {"jobtitle": "CTO", "industry": "Computer Software"})
    assert result == WriteResult(
        written={"jobtitle": "CTO"}, dropped={"industry": INVALID_INDUSTRY}
    )
    assert crm.bodies() == [
        {"properties": {"jobtitle": "CTO", "industry": "Computer Software"}},
        {"properties": {"jobtitle": "CTO"}},
    ]


def test_hubspot_reads_the_refused_properties_from_the_messages_list() -> None:
    """Answers without `errors` name the properties only in the message's JSON list (as the
    v3 APIs long did): every invalid one is dropped at once."""
    listed = [
        {"isValid": False, "message": "12 cats was not a valid number.", "error":
         "INVALID_INTEGER", "name": "numberofemployees"},
        {"isValid": False, "message": "Widgets was not one of the allowed options: [A, B]",
         "error": "INVALID_OPTION", "name": "industry"},
    ]  # fmt: skip
    refusal = {
        "status": "error",
        "message": f"Property values were not valid: {json.dumps(listed)}",
        "correlationId": "3f7e2a61-0d5c-4c41-9e4b-5b0f1d2c9a77",
        "category": "VALIDATION_ERROR",
    }
    crm = FakeCRM(answer(400, refusal), answer(200, record("512", {"jobtitle": "CTO"})))
    values = {"jobtitle": "CTO", "industry": "Widgets", "numberofemployees": "12 cats"}
    result = hubspot(crm).write("512", values)
    assert result == WriteResult(
        written={"jobtitle": "CTO"},
        dropped={
            "numberofemployees": "INVALID_INTEGER: 12 cats was not a valid number.",
            "industry": "INVALID_OPTION: Widgets was not one of the allowed options: [A, B]",
        },
    )
    assert len(crm.requests) == 2


def test_hubspot_batch_refused_for_one_contacts_invalid_option_is_each_contacts_outcome() -> None:
    """The refusal does not say whose value it was: dropping the property from every contact
    would lose valid values, so each contact is refused alike (the worker then writes them
    one at a time, where HubSpot names the contact)."""
    crm = FakeCRM(answer(400, sample("hubspot_error_400_invalid_option.json")))
    changes = {"1": {"industry": "INTERNET"}, "2": {"industry": "Computer Software"}}
    outcomes = hubspot(crm).write_many(changes)
    assert all(isinstance(outcome, Permanent) for outcome in outcomes.values())
    reasons = {getattr(outcome, "reason", None) for outcome in outcomes.values()}
    assert len(reasons) == 1 and "INVALID_OPTION" in str(reasons)
    assert len(crm.requests) == 1


def test_hubspot_batch_207_drops_an_invalid_option_named_for_one_contact() -> None:
    failed = batch_error(
        "VALIDATION_ERROR",
        "Property values were not valid",
        {"ids": ["513"]},
        errors=[
            {
                "message": "Widgets was not one of the allowed options: [A, B]",
                "code": "INVALID_OPTION",
                "context": {"propertyName": ["industry"]},
            }
        ],
    )
    multi = batch([record("512", {"industry": "A"})], [failed])
    crm = FakeCRM(answer(207, multi), hubspot_batch_answer)
    changes = {"512": {"industry": "A"}, "513": {"jobtitle": "CTO", "industry": "Widgets"}}
    outcomes = hubspot(crm).write_many(changes)
    assert outcomes == {
        "512": WriteResult(written={"industry": "A"}),
        "513": WriteResult(
            written={"jobtitle": "CTO"},
            dropped={
                "industry": "INVALID_OPTION: Widgets was not one of the allowed options: [A, B]"
            },
        ),
    }
    assert crm.bodies()[1] == {"inputs": [{"id": "513", "properties": {"jobtitle": "CTO"}}]}


def test_hubspot_ten_secondly_limit_waits_retry_after() -> None:
    crm = FakeCRM(answer(429, rate_limited("TEN_SECONDLY_ROLLING"), {"Retry-After": "3"}))
    with pytest.raises(Retriable) as caught:
        hubspot(crm).write("512", {"jobtitle": "CTO"})
    assert caught.value.retry_after == 3.0
    assert "TEN_SECONDLY_ROLLING" in caught.value.reason


def test_hubspot_ten_secondly_limit_without_retry_after_waits_the_interval() -> None:
    headers = {
        "X-HubSpot-RateLimit-Interval-Milliseconds": "10000",
        "X-HubSpot-RateLimit-Remaining": "0",
    }
    crm = FakeCRM(answer(429, rate_limited("TEN_SECONDLY_ROLLING"), headers))
    with pytest.raises(Retriable) as caught:
        hubspot(crm).write("512", {"jobtitle": "CTO"})
    assert caught.value.retry_after == 10.0


def test_hubspot_ten_secondly_limit_without_headers_waits_ten_seconds() -> None:
    crm = FakeCRM(answer(429, rate_limited("TEN_SECONDLY_ROLLING")))
    with pytest.raises(Retriable) as caught:
        hubspot(crm).read("512", ["jobtitle"])
    assert caught.value.retry_after == 10.0


def test_hubspot_daily_limit_waits_a_day() -> None:
    crm = FakeCRM(answer(429, sample("hubspot_error_429_daily.json")))
    with pytest.raises(Retriable) as caught:
        hubspot(crm).write("512", {"jobtitle": "CTO"})
    assert caught.value.retry_after == 24 * 3600.0
    assert "DAILY" in caught.value.reason and "daily limit" in caught.value.reason


def test_hubspot_daily_limit_with_retry_after_waits_exactly_that() -> None:
    crm = FakeCRM(answer(429, sample("hubspot_error_429_daily.json"), {"Retry-After": "3600"}))
    with pytest.raises(Retriable) as caught:
        hubspot(crm).write("512", {"jobtitle": "CTO"})
    assert caught.value.retry_after == 3600.0


def hubspot_batch_answer(request: httpx.Request) -> httpx.Response:
    inputs = json.loads(request.content)["inputs"]
    return answer(200, batch([record(item["id"], item["properties"]) for item in inputs]))


def test_hubspot_batch_splits_250_contacts_into_100_100_50() -> None:
    changes = {str(n): {"jobtitle": f"title {n}", "numberofemployees": n} for n in range(250)}
    crm = FakeCRM(*[hubspot_batch_answer] * 3)
    outcomes = hubspot(crm).write_many(changes)
    assert [len(body["inputs"]) for body in crm.bodies()] == [100, 100, 50]
    for request in crm.requests:
        assert_sent(request, "POST", f"{HUBSPOT}{HS_CONTACTS}/batch/update")
    sent = [item for body in crm.bodies() for item in body["inputs"]]
    assert [item["id"] for item in sent] == list(changes)
    assert sent[7] == {"id": "7", "properties": {"jobtitle": "title 7", "numberofemployees": "7"}}
    assert outcomes == {key: WriteResult(written=values) for key, values in changes.items()}


def test_hubspot_batch_input_has_the_documented_shape() -> None:
    documented = sample("hubspot_contacts_batch_update_request.json")["inputs"][0]
    crm = FakeCRM(hubspot_batch_answer)
    hubspot(crm).write_many({documented["id"]: documented["properties"]})
    assert crm.bodies() == [{"inputs": [documented]}]


def test_hubspot_batch_207_reports_each_contact() -> None:
    multi = copy.deepcopy(sample("hubspot_batch_update_response.json"))
    multi["status"] = "COMPLETE"
    multi["numErrors"] = 1
    multi["errors"] = [
        batch_error(
            "OBJECT_NOT_FOUND",
            "Could not get some CONTACT objects, they may be deleted or not exist.",
            {"ids": ["513"]},
        )
    ]
    crm = FakeCRM(answer(207, multi))
    outcomes = hubspot(crm).write_many(
        {"512": {"property_string": "value"}, "513": {"jobtitle": "CTO"}}
    )
    assert outcomes["512"] == WriteResult(written={"property_string": "value"})
    assert isinstance(outcomes["513"], Permanent)
    assert outcomes["513"].reason.startswith("OBJECT_NOT_FOUND: Could not get some CONTACT objects")


def test_hubspot_batch_errors_shaped_like_the_documented_sample_are_unnamed() -> None:
    """The documentation's generated sample: an error whose context names no record. (Its
    nested error's context is rendered as the string "{missingScopes=[scope1, scope2]}", the
    schema's example; the schema, and so HubSpot, gives an object.)"""
    documented = copy.deepcopy(sample("hubspot_batch_update_response.json"))
    documented["errors"][0]["errors"][0]["context"] = {"missingScopes": ["scope1", "scope2"]}
    crm = FakeCRM(answer(207, {**documented, "results": []}))
    outcomes = hubspot(crm).write_many({"512": {"property_string": "value"}})
    assert isinstance(outcomes["512"], Permanent)
    assert outcomes["512"].reason == "<string>: <string>"


def test_hubspot_batch_contact_left_out_of_the_answer_is_permanent() -> None:
    crm = FakeCRM(answer(200, batch([record("512", {"jobtitle": "CTO"})])))
    outcomes = hubspot(crm).write_many({"512": {"jobtitle": "CTO"}, "600": {"jobtitle": "CEO"}})
    assert (
        isinstance(outcomes["600"], Permanent) and "left this contact out" in outcomes["600"].reason
    )


def test_hubspot_batch_drops_unknown_properties_and_resends_the_batch() -> None:
    refusal = sample("hubspot_error_400_property_doesnt_exist.json")
    crm = FakeCRM(answer(400, refusal), hubspot_batch_answer)
    changes = {"1": {"jobtitle": "CTO", "description": "x"}, "2": {"jobtitle": "CEO"}}
    outcomes = hubspot(crm).write_many(changes)
    assert outcomes == {
        "1": WriteResult(
            written={"jobtitle": "CTO"},
            dropped={"description": 'Property "description" does not exist'},
        ),
        "2": WriteResult(written={"jobtitle": "CEO"}),
    }
    assert crm.bodies()[1] == {
        "inputs": [
            {"id": "1", "properties": {"jobtitle": "CTO"}},
            {"id": "2", "properties": {"jobtitle": "CEO"}},
        ]
    }


def test_hubspot_batch_rate_limit_raises_for_the_whole_call() -> None:
    crm = FakeCRM(answer(429, rate_limited("TEN_SECONDLY_ROLLING"), {"Retry-After": "2"}))
    with pytest.raises(Retriable) as caught:
        hubspot(crm).write_many({"512": {"jobtitle": "CTO"}})
    assert caught.value.retry_after == 2.0


def test_hubspot_batch_refused_call_is_each_contacts_outcome() -> None:
    crm = FakeCRM(answer(400, error("VALIDATION_ERROR", "Unable to perform update")))
    outcomes = hubspot(crm).write_many({"1": {"jobtitle": "CTO"}, "2": {"jobtitle": "CEO"}})
    assert {key: outcome.reason for key, outcome in outcomes.items()} == {
        "1": "400 Bad Request: Unable to perform update",
        "2": "400 Bad Request: Unable to perform update",
    }


def test_hubspot_calls_the_date_versioned_paths() -> None:
    """HubSpot ends /crm/v3 and /automation/v4 in 2027; its date-versioned paths replace them
    with the same request and response shapes."""
    crm = FakeCRM(*[hubspot_answers] * 4, answer(204))
    adapter = hubspot(crm)
    adapter.read("512", ["jobtitle"])
    adapter.read_many(["512", "513"], ["jobtitle"])
    adapter.write("512", {"jobtitle": "CTO"})
    adapter.write_many({"512": {"jobtitle": "CTO"}, "513": {"jobtitle": "CEO"}})
    adapter.complete_action("ap-102670506-56776413549-7-0", {"outputFields": {}})
    assert [(request.method, request.url.path) for request in crm.requests] == [
        ("GET", "/crm/objects/2026-03/contacts/512"),
        ("POST", "/crm/objects/2026-03/contacts/batch/read"),
        ("PATCH", "/crm/objects/2026-03/contacts/512"),
        ("POST", "/crm/objects/2026-03/contacts/batch/update"),
        ("POST", "/automation/actions/callbacks/2026-03/ap-102670506-56776413549-7-0/complete"),
    ]


# --- HubSpot's documents, with the departures its pages show ---------------------------------


def exchange(path: str, status: int, answered: Any, sent: Any = None) -> Exchange:
    body = b"" if sent is None else json.dumps(sent).encode()
    return Exchange("POST" if sent is not None else "GET", path,
                    "application/json" if sent is not None else "", body, status,
                    json.dumps(answered).encode())  # fmt: skip


def test_a_429_is_held_to_the_usage_pages_body_not_the_documents_error() -> None:
    """HubSpot's documents list no 429; its usage-details page gives the body (no category,
    errorType RATE_LIMIT, the policy): the departure holds every operation to it."""
    contact = f"{HS_CONTACTS}/512"
    for policy in ("TEN_SECONDLY_ROLLING", "DAILY"):
        assert check(exchange(contact, 429, rate_limited(policy))) == []
    assert check(exchange(contact, 429, sample("hubspot_error_429_daily.json"))) == []
    as_an_error = error("RATE_LIMITS", "You have reached your limit.")
    assert any(
        '"policyName" is a required' in p for p in check(exchange(contact, 429, as_an_error))
    )


def test_the_search_bodies_the_adapter_sends_are_the_guides() -> None:
    """Sorts as objects, and no `after` on a first page, as HubSpot's search guide sends
    them (the document's string sorts and required `after` are departures)."""
    crm = FakeCRM(answer(200, search_page([], 0)), answer(200, search_page([], 0)))
    hubspot(crm).list_page(["jobtitle"], "2026-03-01T00:00:00Z", None)
    hubspot(crm).find("ava@example.com")
    for request in crm.requests:
        body = json.loads(request.content)
        assert "after" not in body and body["sorts"][0]["direction"] == "ASCENDING"
        assert check(exchange(request.url.path, 200, search_page([], 0), body)) == []
    refused = check(exchange(f"{HS_CONTACTS}/search", 200, search_page([], 0), {"sorts": [1]}))
    assert refused and "sorts/0" in refused[0]


def sdk_model(api: Any, body: bytes, model: str) -> tuple[Any, Any]:
    """`body` loaded into the HubSpot SDK's generated `model` with client-side validation on
    (a field the specification marks required and the body lacks raises ValueError), and the
    SDK's client, which turns the model back into JSON."""
    configuration = api.Configuration()
    configuration.client_side_validation = True
    client = api.ApiClient(configuration)
    return client.deserialize(SimpleNamespace(data=body), model), client


def test_hubspot_batch_read_body_is_the_sdks_model_with_every_required_field() -> None:
    """The specification marks `propertiesWithHistory` required; the SDK refuses a body
    without it."""
    crm = FakeCRM(hubspot_answers)
    hubspot(crm).read_many(["512", "513"], ["jobtitle", "company"])
    (request,) = crm.requests
    model, client = sdk_model(sdk_contacts, request.content, "BatchReadInputSimplePublicObjectId")
    assert isinstance(model, sdk_contacts.BatchReadInputSimplePublicObjectId)
    assert model.properties_with_history == []
    assert client.sanitize_for_serialization(model) == json.loads(request.content)


def test_hubspot_update_bodies_are_the_sdks_models() -> None:
    crm = FakeCRM(hubspot_answers, hubspot_batch_answer)
    adapter = hubspot(crm)
    adapter.write("512", {"jobtitle": "CTO", "numberofemployees": 17})
    adapter.write_many({"512": {"jobtitle": "CTO"}, "513": {"hobbies": ["chess", "go"]}})
    single, batch = crm.requests
    model, client = sdk_model(sdk_contacts, single.content, "SimplePublicObjectInput")
    assert model.properties == {"jobtitle": "CTO", "numberofemployees": "17"}
    assert client.sanitize_for_serialization(model) == json.loads(single.content)
    model, client = sdk_model(sdk_contacts, batch.content, "BatchInputSimplePublicObjectBatchInput")
    assert [item.id for item in model.inputs] == ["512", "513"]
    assert client.sanitize_for_serialization(model) == json.loads(batch.content)


# CallbackCompletionRequest's required fields in HubSpot's date-versioned specification
# (PublicApiSpecs/Automation/Actions V4/Rollouts/148901/2026-03 and 2026-09/actionsV4.json).
CALLBACK_REQUIRED = {"outputFields", "typedOutputs"}


def test_hubspot_completes_an_action_as_the_specification_and_the_sdk_say() -> None:
    """Output fields as strings (the specification's and the SDK's `dict[str, str]`, and the
    documentation's examples), a value left out where there is none, and `typedOutputs`,
    which the date-versioned specification marks required, empty."""
    crm = FakeCRM(answer(204))
    fields = {"hs_execution_state": "SUCCESS", "contactdata_employee_count": 1200,
              "contactdata_verified": True, "contactdata_phone": None}  # fmt: skip
    hubspot(crm).complete_action("ap-1", {"outputFields": fields})
    (request,) = crm.requests
    body = json.loads(request.content)
    assert set(body) >= CALLBACK_REQUIRED and body["typedOutputs"] == {}
    model, _ = sdk_model(sdk_actions, request.content, "CallbackCompletionRequest")
    assert model.output_fields == {
        "hs_execution_state": "SUCCESS",
        "contactdata_employee_count": "1200",
        "contactdata_verified": "true",
    }


def test_the_sdk_check_catches_a_missing_required_field() -> None:
    """The check above is not vacuous: the SDK refuses a batch read without
    propertiesWithHistory, as the adapter sent it before."""
    without = json.dumps({"properties": ["jobtitle"], "inputs": [{"id": "512"}]}).encode()
    with pytest.raises(ValueError, match="properties_with_history"):
        sdk_model(sdk_contacts, without, "BatchReadInputSimplePublicObjectId")


# --- the OAuth scope the adapter's calls need ------------------------------------------------

# HubSpot's scope for each family of API paths the adapter calls, by access (read: GET, and
# the POSTs that only read: batch/read, search; write: the rest), as HubSpot's 2026-03
# specifications give them (HubSpot/HubSpot-public-api-spec-collection, PublicApiSpecs/CRM/
# Contacts|Companies/Rollouts/424/2026-03/*.json: crm.objects.{kind}.read|write;
# CRM/Properties/Rollouts/145899/2026-03/properties.json: POST needs crm.schemas.{kind}.write,
# and the properties guide names crm.schemas.{kind}.read for reading them; Automation/Actions
# V4/Rollouts/148901/2026-03/actionsV4.json: callbacks need automation). The developer-side
# APIs (action definitions, webhooks settings and subscriptions: developers-read|write) go
# with the developer key, not an installed account's token, so they are not asked of it.
# https://developers.hubspot.com/docs/api/scopes ,
# https://developers.hubspot.com/docs/apps/developer-platform/build-apps/authentication/scopes
SCOPE_OF_PATH = (
    (r"/crm/objects/2026-03/(contacts|companies)(/.*)?", "crm.objects.{0}.{access}"),
    (r"/crm/properties/2026-03/(contacts|companies)", "crm.schemas.{0}.{access}"),
    (r"/automation/actions/callbacks/2026-03/.+/complete", "automation"),
    (r"/crm/lists/2026-03/(search|[^/]+/memberships)", "crm.lists.read"),  # lists.json
    # CRM/Tasks|Notes/Rollouts/424/2026-03/*.json: creating one needs crm.objects.contacts.write
    (r"/crm/objects/2026-03/(?:tasks|notes)", "crm.objects.contacts.{access}"),
)
# A legacy app's scope HubSpot requires of every app (it cannot be removed from the required
# ones), and a required scope must be in the install URL's `scope`
# (https://developers.hubspot.com/docs/apps/legacy-apps/public-apps/overview).
ALWAYS = {"oauth"}
ADAPTER_CALLS = {
    "read": ("512", ["jobtitle"]),
    "read_many": (["512"], ["jobtitle"]),
    "write": ("512", {"jobtitle": "CTO"}),
    "write_many": ({"512": {"jobtitle": "CTO"}},),
    "list_page": (["jobtitle"], "2026-03-01T00:00:00Z", None),
    "views": (),
    "list_view_page": ("17", ["jobtitle"], None, None),
    "find": ("ava@example.com",),
    "complete_action": ("ap-1", {"outputFields": {}}),
    "fields": (),
    "create_field": ("contactdata_seniority", "Seniority", "text"),
    "create_task": ("512", Task("Ava left Acme", "Now at Globex.", "2026-12-01")),
    "create_contact": (
        NewContact("Ava", "Adams", "CRO", "Globex", "Was 512.", "2026-12-01"),
        "512",
    ),
}


def scope_of(request: httpx.Request) -> str:
    """The scope HubSpot documents for a request (SCOPE_OF_PATH); fails on a path not in it."""
    path = request.url.path
    reads = request.method == "GET" or path.endswith(("/batch/read", "/search"))
    for pattern, scope in SCOPE_OF_PATH:
        if found := re.fullmatch(pattern, path):
            return scope.format(*found.groups(), access="read" if reads else "write")
    raise AssertionError(f"no documented scope for {request.method} {path}")


def documented(request: httpx.Request) -> httpx.Response:
    """Each call of the adapter answered as HubSpot documents it: a record, a batch, an empty
    page of search results, no properties, the property created, a completed action."""
    path = request.url.path
    if path == "/crm/lists/2026-03/search":
        return answer(200, {"lists": [], "hasMore": False, "offset": 0, "total": 0})
    if path.endswith("/memberships"):
        return answer(200, {"results": [], "total": 0})
    if path.endswith("/search"):
        return answer(200, search_page([], 0))
    if path.startswith("/crm/properties/") and request.method == "GET":
        return answer(200, {"results": []})
    if path.startswith("/crm/properties/"):
        return answer(201, {**json.loads(request.content), "description": "", "options": []})
    if path.startswith("/automation/actions/callbacks/"):
        return answer(204)
    if request.method == "POST" and path.rsplit("/", 1)[-1] in ("tasks", "notes", "contacts"):
        return answer(201, record("9001", json.loads(request.content)["properties"]))
    return hubspot_answers(request)


def scopes_called(kind: str) -> set[str]:
    """The scopes of every request the adapter of `kind` sends, each of its calls made once."""
    crm = FakeCRM(*[documented] * 20)
    adapter = HubSpot(HUBSPOT, "token", crm.client(), kind=kind)
    for name, args in ADAPTER_CALLS.items():
        with contextlib.suppress(Permanent, Retriable):
            getattr(adapter, name)(*args)
    return {scope_of(request) for request in crm.requests}


def test_every_public_call_of_the_adapter_is_in_the_scope_check() -> None:
    public = {name for name, value in vars(HubSpot).items()
              if callable(value) and not name.startswith("_")}  # fmt: skip
    assert public == set(ADAPTER_CALLS)


def test_the_default_scope_is_what_the_calls_for_each_kind_need() -> None:
    """Derived from the requests sent, for each kind HubSpot's connections enrich: the
    install URL's scope covers them all (HubSpot refuses an install lacking a required
    scope, and a call outside the granted ones is a 403) and asks for nothing else."""
    kind = PLATFORMS["hubspot"]
    needed = ALWAYS.union(*(scopes_called(objects) for objects in kind.objects))
    assert {"crm.schemas.companies.read", "crm.schemas.companies.write"} <= needed
    assert set(kind.oauth_scope.split()) == needed
