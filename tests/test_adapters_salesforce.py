"""The Salesforce adapter against a fake Salesforce (httpx.MockTransport): the exact requests
it sends, and what it makes of answers shaped as Salesforce documents them (REST API and sObject
Collections, and the samples in tests/data/platforms/outbound/)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from connector.platforms.base import Permanent, Retriable, WriteResult
from tests.helpers.crm import (
    SALESFORCE,
    SF_DATA,
    FakeCRM,
    Reply,
    answer,
    assert_sent,
    salesforce,
    sample,
)

CONTACT_ID = "003xx000004TmiQAAS"


def test_salesforce_read_asks_for_the_fields() -> None:
    record = {
        "attributes": {
            "type": "Contact",
            "url": f"/services/data/v62.0/sobjects/Contact/{CONTACT_ID}",
        },
        "Id": CONTACT_ID,
        "Title": "Lead Engineer",
        "Department": None,
    }
    crm = FakeCRM(answer(200, record))
    values = salesforce(crm).read(CONTACT_ID, ["Title", "department"])
    assert values == {"Title": "Lead Engineer", "department": None}
    (request,) = crm.requests
    assert_sent(
        request, "GET", f"{SF_DATA}/sobjects/Contact/{CONTACT_ID}?fields=Title%2Cdepartment"
    )
    assert request.url.params["fields"] == "Title,department"


def test_salesforce_read_leaves_out_fields_the_org_does_not_have() -> None:
    unknown = [
        {
            "message": "No such column 'LinkedIn_URL__c' on entity 'Contact'. If you are "
            "attempting to use a custom field, be sure to append the '__c' after the custom "
            "field name.",
            "errorCode": "INVALID_FIELD",
        }
    ]
    record = {"attributes": {"type": "Contact", "url": f"/services/data/v62.0/sobjects/Contact/"
                             f"{CONTACT_ID}"}, "Id": CONTACT_ID, "Title": "CTO"}  # fmt: skip
    crm = FakeCRM(answer(400, unknown), answer(200, record))
    values = salesforce(crm).read(CONTACT_ID, ["Title", "LinkedIn_URL__c"])
    assert values == {"Title": "CTO", "LinkedIn_URL__c": None}
    assert [request.url.params["fields"] for request in crm.requests] == [
        "Title,LinkedIn_URL__c",
        "Title",
    ]


def test_salesforce_read_many_gets_a_collection_in_the_order_asked() -> None:
    """sObject Collections GET: null for an id that is invalid or not visible; a field the
    org does not have is left out and the collection asked again."""
    other = "003xx000004TmiRAAS"
    unknown = [{"message": "No such column 'LinkedIn_URL__c' on entity 'Contact'.",
                "errorCode": "INVALID_FIELD"}]  # fmt: skip
    record = {"attributes": {"type": "Contact"}, "Id": CONTACT_ID, "Title": "CTO"}
    crm = FakeCRM(answer(400, unknown), answer(200, [record, None]))
    values = salesforce(crm).read_many([CONTACT_ID, other], ["Title", "LinkedIn_URL__c"])
    assert values[CONTACT_ID] == {"Title": "CTO", "LinkedIn_URL__c": None}
    missing = values[other]
    assert isinstance(missing, Permanent) and missing.reason.startswith("no such Contact")
    first, second = crm.requests
    assert_sent(
        first,
        "GET",
        f"{SF_DATA}/composite/sobjects/Contact?ids={CONTACT_ID}%2C{other}"
        "&fields=Id%2CTitle%2CLinkedIn_URL__c",
    )
    assert second.url.params["fields"] == "Id,Title"


def test_salesforce_read_many_asks_200_contacts_a_call() -> None:
    ids = [f"003xx{n:013d}" for n in range(450)]
    crm = FakeCRM(*(lambda r: answer(200, [None] * len(r.url.params["ids"].split(","))),) * 3)
    values = salesforce(crm).read_many(ids, ["Title"])
    sizes = [len(request.url.params["ids"].split(",")) for request in crm.requests]
    assert sizes == [200, 200, 50] and len(values) == 450


def test_salesforce_read_of_a_missing_contact_is_permanent() -> None:
    body = [{"errorCode": "NOT_FOUND", "message": "The requested resource does not exist"}]
    crm = FakeCRM(answer(404, body))
    with pytest.raises(Permanent, match="NOT_FOUND"):
        salesforce(crm).read(CONTACT_ID, ["Title"])


def test_salesforce_write_sends_the_documented_body() -> None:
    fields = sample("salesforce_contact_patch_request.json")
    crm = FakeCRM(answer(204))
    result = salesforce(crm).write(CONTACT_ID, fields)
    assert result == WriteResult(written={"Title": "Lead Engineer"})
    (request,) = crm.requests
    assert_sent(request, "PATCH", f"{SF_DATA}/sobjects/Contact/{CONTACT_ID}")
    assert crm.bodies() == [fields]


def test_salesforce_api_version_is_a_constructor_argument() -> None:
    crm = FakeCRM(answer(204))
    salesforce(crm, api_version="v60.0").write(CONTACT_ID, {"Title": "CTO"})
    assert (
        str(crm.requests[0].url)
        == f"{SALESFORCE}/services/data/v60.0/sobjects/Contact/{CONTACT_ID}"
    )


def test_salesforce_drops_a_field_it_cannot_write_and_retries_the_rest() -> None:
    refusal = [
        {
            "message": "Unable to create/update fields: Title. Please check the security "
            "settings of this field.",
            "errorCode": "INVALID_FIELD_FOR_INSERT_UPDATE",
            "fields": ["Title"],
        }
    ]
    crm = FakeCRM(answer(400, refusal), answer(204))
    result = salesforce(crm).write(CONTACT_ID, {"Title": "CTO", "Department": "IT"})
    assert result.written == {"Department": "IT"}
    assert list(result.dropped) == ["Title"]
    assert result.dropped["Title"].startswith(
        "INVALID_FIELD_FOR_INSERT_UPDATE: Unable to create/update"
    )
    assert crm.bodies() == [{"Title": "CTO", "Department": "IT"}, {"Department": "IT"}]


def test_salesforce_drops_unknown_fields_named_one_answer_at_a_time() -> None:
    def no_such(name: str) -> httpx.Response:
        message = f"No such column '{name}' on sobject of type Contact"
        return answer(400, [{"message": message, "errorCode": "INVALID_FIELD"}])

    crm = FakeCRM(no_such("A__c"), no_such("B__c"), answer(204))
    result = salesforce(crm).write(CONTACT_ID, {"A__c": 1, "B__c": 2, "Title": "CTO"})
    assert result.written == {"Title": "CTO"}
    assert set(result.dropped) == {"A__c", "B__c"}
    assert crm.bodies() == [
        {"A__c": 1, "B__c": 2, "Title": "CTO"},
        {"B__c": 2, "Title": "CTO"},
        {"Title": "CTO"},
    ]


# Salesforce's refusals of a value, as they were answered in public reports (the field names
# are the Contact's where the report was about a Lead or a custom object).
COUNTRY_REFUSED = {  # verbb/formie#963 (a Lead's Country), with Contact's label and field
    "message": "There's a problem with this country, even though it may appear correct. Please "
    "select a country/territory from the list of valid countries.: Mailing Country",
    "errorCode": "FIELD_INTEGRITY_EXCEPTION",
    "fields": ["MailingCountry"],
}
RANGE_REFUSED = {  # the shape of SalesforceFoundation/NPSP#5409's "bad value" on our field
    "message": "Employee Range: bad value for restricted picklist field: 5001 to 10,000",
    "errorCode": "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST",
    "fields": ["ContactData_Employee_Range__c"],
}
EMAIL_REFUSED = {
    "message": "Email: invalid email address: x",
    "errorCode": "INVALID_EMAIL_ADDRESS",
    "fields": ["Email"],
}
STATE_REFUSED = {  # SalesforceFoundation/NPSP#2432 (Billing), for the Mailing address
    "message": "The existing country/territory doesn't recognize the state value for field: "
    "Mailing State/Province Code",
    "errorCode": "FIELD_INTEGRITY_EXCEPTION",
    "fields": ["MailingStateCode"],
}


@pytest.mark.parametrize(
    ("error", "refused"),
    [
        pytest.param(COUNTRY_REFUSED, "MailingCountry", id="country picklist"),
        pytest.param(RANGE_REFUSED, "ContactData_Employee_Range__c", id="restricted picklist"),
        pytest.param(EMAIL_REFUSED, "Email", id="invalid e-mail"),
    ],
)
def test_salesforce_drops_a_value_it_refuses_and_writes_the_rest(
    error: dict[str, Any], refused: str
) -> None:
    """A refused value costs that field alone: the rest of the Contact is written, and the
    reason, Salesforce's own, goes with the write (into the delivery's note)."""
    fields = {"Title": "CTO", "MailingCity": "Seoul", refused: "x"}
    crm = FakeCRM(answer(400, [error]), answer(204))
    result = salesforce(crm).write(CONTACT_ID, fields)
    rest = {"Title": "CTO", "MailingCity": "Seoul"}
    assert result == WriteResult(
        written=rest, dropped={refused: f"{error['errorCode']}: {error['message']}"}
    )
    assert crm.bodies() == [fields, rest]


def test_salesforce_a_state_refused_for_the_country_we_send_drops_that_country() -> None:
    """State and country are checked together: a refusal naming the state's code, which we did
    not send, is the country we sent (the Contact's state belongs to another country)."""
    crm = FakeCRM(answer(400, [STATE_REFUSED]), answer(204))
    result = salesforce(crm).write(CONTACT_ID, {"MailingCountry": "Canada", "Title": "CTO"})
    assert result.written == {"Title": "CTO"}
    assert result.dropped == {
        "MailingCountry": "FIELD_INTEGRITY_EXCEPTION (MailingStateCode): The existing "
        "country/territory doesn't recognize the state value for field: Mailing State/Province Code"
    }
    assert crm.bodies()[1] == {"Title": "CTO"}


def test_salesforce_a_refusal_naming_the_code_of_a_state_sent_as_text_drops_the_text() -> None:
    crm = FakeCRM(answer(400, [STATE_REFUSED]), answer(204))
    sent = {"MailingState": "ON", "MailingCountry": "Canada", "Title": "CTO"}
    result = salesforce(crm).write(CONTACT_ID, sent)
    assert result.written == {"MailingCountry": "Canada", "Title": "CTO"}
    assert list(result.dropped) == ["MailingState"]


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(
            {
                "message": "Required fields are missing: [LastName]",
                "errorCode": "REQUIRED_FIELD_MISSING",
                "fields": ["LastName"],
            },
            id="a field not sent",
        ),
        pytest.param(
            {
                "message": "Contacts need an account.",
                "errorCode": "FIELD_CUSTOM_VALIDATION_EXCEPTION",
                "fields": [],
            },
            id="no field",
        ),
    ],
)
def test_salesforce_a_refusal_naming_no_field_sent_is_permanent_with_the_message(
    error: dict[str, Any],
) -> None:
    crm = FakeCRM(answer(400, [error]))
    with pytest.raises(Permanent) as caught:
        salesforce(crm).write(CONTACT_ID, {"Title": "CTO"})
    assert caught.value.reason == f"400 Bad Request: {error['errorCode']}: {error['message']}"
    assert len(crm.requests) == 1


def test_salesforce_locked_row_is_retriable() -> None:
    body = [
        {
            "message": "unable to obtain exclusive access to this record",
            "errorCode": "UNABLE_TO_LOCK_ROW",
        }
    ]
    crm = FakeCRM(answer(400, body))
    with pytest.raises(Retriable, match="UNABLE_TO_LOCK_ROW"):
        salesforce(crm).write(CONTACT_ID, {"Title": "CTO"})


def test_salesforce_request_limit_waits_an_hour() -> None:
    crm = FakeCRM(answer(403, sample("salesforce_error_response.json")))
    with pytest.raises(Retriable) as caught:
        salesforce(crm).write(CONTACT_ID, {"Title": "CTO"})
    assert caught.value.retry_after == 3600.0
    assert "REQUEST_LIMIT_EXCEEDED" in caught.value.reason


LIMITED_CALLS = {
    "read": lambda adapter: adapter.read(CONTACT_ID, ["Title"]),
    "read_many": lambda adapter: adapter.read_many([CONTACT_ID], ["Title"]),
    "write": lambda adapter: adapter.write(CONTACT_ID, {"Title": "CTO"}),
    "write_many": lambda adapter: adapter.write_many({CONTACT_ID: {"Title": "CTO"}}),
    "list_page": lambda adapter: adapter.list_page(["Title"], None, None),
    "find": lambda adapter: adapter.find("ava@acme.example"),
    "fields": lambda adapter: adapter.fields(),
}


@pytest.mark.parametrize("call", LIMITED_CALLS.values(), ids=LIMITED_CALLS.keys())
def test_salesforce_request_limit_holds_the_connection_an_hour_on_every_call(call: Any) -> None:
    """The org's API limit is 403 REQUEST_LIMIT_EXCEEDED (no 429: errorcodes.htm): whatever
    the call, it is the connection's rate limit (throttled), asked once, waited an hour."""
    crm = FakeCRM(answer(403, sample("salesforce_error_response.json")))
    with pytest.raises(Retriable) as caught:
        call(salesforce(crm))
    assert caught.value.throttled and caught.value.retry_after == 3600.0
    assert "REQUEST_LIMIT_EXCEEDED" in caught.value.reason
    assert len(crm.requests) == 1


def test_salesforce_other_403_is_permanent() -> None:
    body = [
        {"message": "insufficient access rights on object id", "errorCode": "INSUFFICIENT_ACCESS"}
    ]
    crm = FakeCRM(answer(403, body))
    with pytest.raises(Permanent, match="INSUFFICIENT_ACCESS"):
        salesforce(crm).write(CONTACT_ID, {"Title": "CTO"})


def salesforce_batch_answer(request: httpx.Request) -> httpx.Response:
    records = json.loads(request.content)["records"]
    return answer(200, [{"id": record["id"], "success": True, "errors": []} for record in records])


def test_salesforce_batch_splits_450_contacts_into_200_200_50() -> None:
    changes = {f"003{n:015d}": {"Title": f"title {n}"} for n in range(450)}
    crm = FakeCRM(*[salesforce_batch_answer] * 3)
    outcomes = salesforce(crm).write_many(changes)
    assert [len(body["records"]) for body in crm.bodies()] == [200, 200, 50]
    for request in crm.requests:
        assert_sent(request, "PATCH", f"{SF_DATA}/composite/sobjects")
    assert all(body["allOrNone"] is False for body in crm.bodies())
    assert outcomes == {key: WriteResult(written=values) for key, values in changes.items()}


def test_salesforce_batch_records_have_the_documented_shape() -> None:
    documented = sample("salesforce_composite_sobjects_update_request.json")
    contact = documented["records"][1]
    crm = FakeCRM(salesforce_batch_answer)
    salesforce(crm).write_many({contact["id"]: {"Title": contact["Title"]}})
    (body,) = crm.bodies()
    assert body.keys() == documented.keys()
    assert body == {"allOrNone": documented["allOrNone"], "records": [contact]}


def test_salesforce_batch_partial_failure_drops_the_field_for_that_record() -> None:
    partly = sample("salesforce_composite_sobjects_update_response.json")
    account_id, contact_id = (result["id"] for result in partly)
    crm = FakeCRM(answer(200, partly), salesforce_batch_answer)
    changes = {
        account_id: {"Title": "VP"},
        contact_id: {"Title": "Lead Engineer", "Department": "R&D"},
    }
    outcomes = salesforce(crm).write_many(changes)
    assert outcomes[account_id] == WriteResult(written={"Title": "VP"})
    assert outcomes[contact_id].written == {"Department": "R&D"}
    assert list(outcomes[contact_id].dropped) == ["Title"]
    assert crm.bodies()[1]["records"] == [
        {"attributes": {"type": "Contact"}, "id": contact_id, "Department": "R&D"}
    ]


def test_salesforce_batch_record_refused_for_other_reasons_is_permanent() -> None:
    refused = {
        "id": CONTACT_ID,
        "success": False,
        "errors": [
            {"statusCode": "ENTITY_IS_DELETED", "message": "entity is deleted", "fields": []}
        ],
    }
    crm = FakeCRM(answer(200, [refused]))
    outcomes = salesforce(crm).write_many({CONTACT_ID: {"Title": "CTO"}})
    assert outcomes[CONTACT_ID].reason == "ENTITY_IS_DELETED: entity is deleted"


def refusing_per_record(error: dict[str, Any]) -> Reply:
    """sObject Collections' answer refusing, record by record, each record that sends a field
    `error` names (SaveResult errors carry `statusCode`), and saving the others."""
    named = error["fields"][0]

    def reply(request: httpx.Request) -> httpx.Response:
        results = []
        for record in json.loads(request.content)["records"]:
            refused = named in record
            saved = {"statusCode": error["errorCode"], "message": error["message"]}
            errors = [{**saved, "fields": error["fields"]}] if refused else []
            results.append({"id": record["id"], "success": not refused, "errors": errors})
        return answer(200, results)

    return reply


def test_salesforce_batch_drops_a_refused_value_and_writes_that_record_again() -> None:
    other = "003xx000004TmiRAAS"
    crm = FakeCRM(refusing_per_record(COUNTRY_REFUSED), refusing_per_record(COUNTRY_REFUSED))
    changes = {
        CONTACT_ID: {"Title": "CTO", "MailingCountry": "South Korea"},
        other: {"Title": "VP", "Department": "R&D"},
    }
    outcomes = salesforce(crm).write_many(changes)
    reason = f"FIELD_INTEGRITY_EXCEPTION: {COUNTRY_REFUSED['message']}"
    assert outcomes == {
        CONTACT_ID: WriteResult(written={"Title": "CTO"}, dropped={"MailingCountry": reason}),
        other: WriteResult(written={"Title": "VP", "Department": "R&D"}),
    }
    first, again = crm.bodies()
    assert [record["id"] for record in first["records"]] == [CONTACT_ID, other]
    assert again["records"] == [
        {"attributes": {"type": "Contact"}, "id": CONTACT_ID, "Title": "CTO"}
    ]


def test_salesforce_batch_bodies_hold_what_the_specification_requires() -> None:
    """ "Update Records Using sObject Collections": `allOrNone` (ours false, so one record's
    refusal is its own), and for each record `attributes.type` and `id`; at most 200 records.
    Held for every call, the sending again of refused records included."""
    changes = {f"003xx{n:013d}": {"Title": f"t{n}", "MailingCountry": "x"} for n in range(201)}
    crm = FakeCRM(*[refusing_per_record(COUNTRY_REFUSED)] * 4)
    outcomes = salesforce(crm).write_many(changes)
    assert all(outcome.dropped.keys() == {"MailingCountry"} for outcome in outcomes.values())
    bodies = crm.bodies()
    assert [len(body["records"]) for body in bodies] == [200, 200, 1, 1]
    for body in bodies:
        assert set(body) == {"allOrNone", "records"} and body["allOrNone"] is False
        for record in body["records"]:
            assert record["attributes"] == {"type": "Contact"}
            assert isinstance(record["id"], str) and record["id"] in changes
            assert set(record) - {"attributes", "id"} <= set(changes[record["id"]])


def test_salesforce_batch_locked_row_raises_for_the_whole_call() -> None:
    locked = {
        "id": CONTACT_ID,
        "success": False,
        "errors": [
            {"statusCode": "UNABLE_TO_LOCK_ROW", "message": "unable to obtain exclusive access"}
        ],
    }
    crm = FakeCRM(answer(200, [locked]))
    with pytest.raises(Retriable, match="UNABLE_TO_LOCK_ROW"):
        salesforce(crm).write_many({CONTACT_ID: {"Title": "CTO"}})


def test_salesforce_batch_request_limit_raises_for_the_whole_call() -> None:
    crm = FakeCRM(answer(403, sample("salesforce_error_response.json")))
    with pytest.raises(Retriable) as caught:
        salesforce(crm).write_many({CONTACT_ID: {"Title": "CTO"}})
    assert caught.value.retry_after == 3600.0
