"""The Zoho CRM adapter against a fake Zoho (httpx.MockTransport): the exact requests it
sends, and what it makes of answers shaped as Zoho documents them (v7 get-records,
update-records and notification pages, Zoho's OpenAPI description of the records endpoints,
and the samples in tests/data/platforms/outbound/)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest

from connector import mappings
from connector.platforms.base import Permanent, Retriable, WriteResult
from connector.platforms.zoho import PLATFORM, ZOHO_ACCOUNTS, ZOHO_API_DOMAINS, Zoho
from tests.helpers.constants import OUTBOUND
from tests.helpers.crm import FakeCRM, answer, raising
from tests.helpers.vendors import VendorTransport, broken

ROOT = Path(__file__).parent.parent
ZOHO = "https://www.zohoapis.eu"
CONTACTS = f"{ZOHO}/crm/v7/Contacts"
WATCH = f"{ZOHO}/crm/v7/actions/watch"
TOKEN = "1000.8cb99dxxxxxxxxxxxxx9be93.9b8xxxxxxxxxxxxxxxf"
CONTACT = "554023000000527002"

# Zoho's own words, as its docs and captures show them.
INVALID_TOKEN = {
    "code": "INVALID_TOKEN",
    "details": {},
    "message": "invalid oauth token",
    "status": "error",
}
INVALID_ID = {
    "code": "INVALID_DATA",
    "details": {"api_name": "id", "json_path": "$.data[0].id"},
    "message": "the id given seems to be invalid",
    "status": "error",
}
MANDATORY = {
    "code": "MANDATORY_NOT_FOUND",
    "details": {"api_name": "Last_Name", "json_path": "$.data[0].Last_Name"},
    "message": "required field not found",
    "status": "error",
}
TOO_MANY = {
    "code": "TOO_MANY_REQUESTS",
    "details": {},
    "message": "The number of concurrent requests has exceeded the limit",
    "status": "error",
}


def invalid(field: str, index: int = 0) -> dict[str, Any]:
    """INVALID_DATA naming a field, as the update-records answers carry it."""
    return {
        "code": "INVALID_DATA",
        "details": {
            "expected_data_type": "text",
            "api_name": field,
            "json_path": f"$.data[{index}].{field}",
        },
        "message": "invalid data",
        "status": "error",
    }


def sample(name: str) -> Any:
    return json.loads((OUTBOUND / name).read_text())


def success(record_id: str) -> dict[str, Any]:
    """The documented per-record SUCCESS answer (outbound sample), for `record_id`."""
    item = sample("zoho_update_records_response.json")["data"][0]
    return {**item, "details": {**item["details"], "id": record_id}}


class FakeZoho(FakeCRM):
    """The shared fake CRM, building this platform's adapter over itself."""

    def adapter(self) -> Zoho:
        return Zoho(ZOHO, TOKEN, self.client())

    def fields(self) -> list[str]:
        return [request.url.params.get("fields", "") for request in self.requests]


def assert_sent(request: httpx.Request, method: str, url: str) -> None:
    assert (request.method, str(request.url)) == (method, url)
    assert request.headers["authorization"] == f"Zoho-oauthtoken {TOKEN}"
    if request.content:
        assert request.headers["content-type"] == "application/json"


def updated(request: httpx.Request) -> httpx.Response:
    """A 200 answering SUCCESS for each record sent to the batch update."""
    records = json.loads(request.content)["data"]
    return answer(200, {"data": [success(record["id"]) for record in records]})


def contact(**fields: Any) -> dict[str, Any]:
    """A Contact as a get-records answer shows it (lookups as {"name", "id"})."""
    return {
        "Owner": {
            "name": "Patricia Boyle",
            "id": "554023000000235011",
            "email": "p.boyle@zylker.com",
        },
        "Email": "j.smith@zylker.com",
        "First_Name": "Jason",
        "Last_Name": "Smith",
        "Title": None,
        "Account_Name": {"name": "Zylker", "id": "554023000000238121"},
        "id": CONTACT,
        **fields,
    }


# --- data centres --------------------------------------------------------------------------


def test_api_domains_are_the_documented_data_centres() -> None:
    assert ZOHO_API_DOMAINS == {
        "us": "https://www.zohoapis.com",
        "eu": "https://www.zohoapis.eu",
        "in": "https://www.zohoapis.in",
        "au": "https://www.zohoapis.com.au",
        "jp": "https://www.zohoapis.jp",
        "ca": "https://www.zohoapis.ca",
        "sa": "https://www.zohoapis.sa",
        "cn": "https://www.zohoapis.com.cn",
        "uk": "https://www.zohoapis.uk",
    }


@pytest.mark.parametrize("location", sorted(ZOHO_API_DOMAINS))
def test_each_data_centre_exchanges_and_renews_at_its_own_accounts_server(location: str) -> None:
    api = ZOHO_API_DOMAINS[location]
    accounts = ZOHO_ACCOUNTS[api]
    args = {"code": "1000.86a0", "location": location, "accounts-server": accounts}

    assert PLATFORM.callback_token_url(PLATFORM.oauth_token_url, args) == (
        f"{accounts}/oauth/v2/token"
    )
    PLATFORM.check_base_url(api, local=False)
    assert PLATFORM.token_url(api) == f"{accounts}/oauth/v2/token"


# A UK account's consent and token answer, shaped as Zoho's "Using Multi DC in server and
# client-based apps" shows them (https://www.zoho.com/accounts/protocol/oauth/multi-dc/
# client-authorization.html): the redirect's code, location and accounts-server; the answer's
# access_token, refresh_token, api_domain, token_type and expires_in.
UK_CALLBACK = {"code": "1000.86a03ca5dbfccb7445b1889b8215efb0.cad9e1ae4989a1196fe05aa729fcb4e1",
               "location": "uk", "accounts-server": "https://accounts.zoho.uk"}  # fmt: skip
UK_TOKEN_ANSWER = {
    "access_token": TOKEN,
    "refresh_token": "1000.6a3f1e0c1d2b4a5f8e7d6c5b4a3f2e1d.0f1e2d3c4b5a69788796a5b4c3d2e1f0",
    "api_domain": "https://www.zohoapis.uk",
    "token_type": "Bearer",
    "expires_in": 3600,
}


def test_a_uk_account_installs_and_connects() -> None:
    """The steps of an install (connector/install.py) for a UK account: its code exchanged at
    accounts.zoho.uk, its API domain taken from the token answer and checked as a pasted one
    is, its token renewed at accounts.zoho.uk, and its records read at www.zohoapis.uk."""
    token_url = PLATFORM.callback_token_url(PLATFORM.oauth_token_url, UK_CALLBACK)
    base_url = PLATFORM.installed_base_url(UK_TOKEN_ANSWER, token_url, "")
    PLATFORM.check_base_url(base_url, local=False)
    crm = FakeZoho(answer(200, {"data": [contact()]}))

    values = Zoho(base_url, TOKEN, crm.client()).read(CONTACT, ["Email"])

    assert token_url == "https://accounts.zoho.uk/oauth/v2/token"
    assert PLATFORM.token_url(base_url) == token_url
    assert values == {"Email": "j.smith@zylker.com"}
    assert_sent(
        crm.requests[0], "GET", f"https://www.zohoapis.uk/crm/v7/Contacts/{CONTACT}?fields=Email"
    )


def test_base_url_trailing_slash_is_ignored() -> None:
    crm = FakeZoho(answer(200, {"data": [contact()]}))
    Zoho(f"{ZOHO}/", TOKEN, httpx.Client(transport=VendorTransport(crm))).read(CONTACT, [])
    assert str(crm.requests[0].url) == f"{CONTACTS}/{CONTACT}"


# --- read ----------------------------------------------------------------------------------


def test_read_asks_for_the_fields_and_reads_lookups_as_names() -> None:
    crm = FakeZoho(answer(200, {"data": [contact()]}))
    asked = ["Email", "First_Name", "Title", "Account_Name", "Owner", "Mailing_City"]
    values = crm.adapter().read(CONTACT, asked)
    assert values == {
        "Email": "j.smith@zylker.com",
        "First_Name": "Jason",
        "Title": None,
        "Account_Name": "Zylker",
        "Owner": "Patricia Boyle",
        "Mailing_City": None,
    }
    (request,) = crm.requests
    fields = "Email%2CFirst_Name%2CTitle%2CAccount_Name%2COwner%2CMailing_City"
    assert_sent(request, "GET", f"{CONTACTS}/{CONTACT}?fields={fields}")
    assert request.url.params["fields"] == "Email,First_Name,Title,Account_Name,Owner,Mailing_City"


def test_read_keeps_multi_select_values_as_lists() -> None:
    crm = FakeZoho(answer(200, {"data": [contact(Languages=["English", "Tamil"])]}))
    assert crm.adapter().read(CONTACT, ["Languages"]) == {"Languages": ["English", "Tamil"]}


def test_read_record_id_cannot_leave_the_contacts_path() -> None:
    crm = FakeZoho(answer(200, {"data": [contact()]}))
    crm.adapter().read("../../settings/fields", ["Email"])
    assert crm.requests[0].url.raw_path.startswith(b"/crm/v7/Contacts/..%2F..%2Fsettings%2Ffields?")


def test_read_of_a_deleted_contact_is_permanent() -> None:
    crm = FakeZoho(answer(204))
    with pytest.raises(Permanent, match="204 No Content"):
        crm.adapter().read(CONTACT, ["Email"])
    assert len(crm.requests) == 1


def test_read_of_an_invalid_id_is_permanent_with_zohos_words() -> None:
    crm = FakeZoho(answer(400, INVALID_ID))
    with pytest.raises(Permanent) as caught:
        crm.adapter().read("not-a-zoho-id", ["Email"])
    assert caught.value.reason == (
        "400 Bad Request: INVALID_DATA: the id given seems to be invalid (id)"
    )
    assert len(crm.requests) == 1


def test_read_drops_a_field_zoho_names_as_invalid_and_asks_again() -> None:
    refusal = {
        "code": "INVALID_DATA",
        "details": {"api_name": "ContactData_Industry"},
        "message": "invalid data",
        "status": "error",
    }
    crm = FakeZoho(answer(400, refusal), answer(200, {"data": [contact(Title="CTO")]}))
    values = crm.adapter().read(CONTACT, ["Title", "ContactData_Industry"])
    assert values == {"Title": "CTO", "ContactData_Industry": None}
    assert crm.fields() == ["Title,ContactData_Industry", "Title"]


def test_read_asks_for_the_whole_record_when_zoho_does_not_say_which_field() -> None:
    refusal = {
        "code": "INVALID_DATA",
        "details": {"param_name": "fields"},
        "message": "invalid data",
        "status": "error",
    }
    crm = FakeZoho(answer(400, refusal), answer(200, {"data": [contact(Title="CTO")]}))
    values = crm.adapter().read(CONTACT, ["Title", "ContactData_Industry"])
    assert values == {"Title": "CTO", "ContactData_Industry": None}
    assert [str(request.url) for request in crm.requests] == [
        f"{CONTACTS}/{CONTACT}?fields=Title%2CContactData_Industry",
        f"{CONTACTS}/{CONTACT}",
    ]


def test_read_asks_50_fields_a_call() -> None:
    names = [f"Field_{n}" for n in range(60)]
    first = contact(**{name: name.lower() for name in names[:50]})
    second = contact(**{name: name.lower() for name in names[50:]})
    crm = FakeZoho(answer(200, {"data": [first]}), answer(200, {"data": [second]}))
    values = crm.adapter().read(CONTACT, names)
    assert values == {name: name.lower() for name in names}
    assert [len(fields.split(",")) for fields in crm.fields()] == [50, 10]


def test_read_limit_waits_retry_after() -> None:
    crm = FakeZoho(answer(429, TOO_MANY, {"Retry-After": "20"}))
    with pytest.raises(Retriable) as caught:
        crm.adapter().read(CONTACT, ["Email"])
    assert caught.value.retry_after == 20.0
    assert caught.value.reason == (
        "429 Too Many Requests: The number of concurrent requests has exceeded the limit"
    )


# --- read_many -----------------------------------------------------------------------------


def listed(request: httpx.Request) -> httpx.Response:
    """A get-records answer holding every asked id but those ending in 9 (deleted)."""
    ids = request.url.params["ids"].split(",")
    records = [{"Email": f"{key}@zylker.com", "id": key} for key in ids if not key.endswith("9")]
    info = {"per_page": 200, "count": len(records), "page": 1, "more_records": False}
    return answer(200, {"data": records, "info": info})


def test_read_many_asks_for_the_ids_in_one_call() -> None:
    crm = FakeZoho(listed)
    found = crm.adapter().read_many(["101", "102", "109", "101"], ["Email", "Title"])
    assert found["101"] == {"Email": "101@zylker.com", "Title": None}
    assert found["102"] == {"Email": "102@zylker.com", "Title": None}
    assert isinstance(found["109"], Permanent) and "left it out" in found["109"].reason
    (request,) = crm.requests
    assert_sent(request, "GET", f"{CONTACTS}?ids=101%2C102%2C109&fields=Email%2CTitle")


def test_read_many_asks_100_ids_a_call() -> None:
    ids = [str(1000 + n) for n in range(250)]
    crm = FakeZoho(listed, listed, listed)
    found = crm.adapter().read_many(ids, ["Email"])
    assert [len(request.url.params["ids"].split(",")) for request in crm.requests] == [100, 100, 50]
    assert list(found) == ids
    assert found["1000"] == {"Email": "1000@zylker.com"}


def test_read_many_of_only_deleted_contacts_is_each_permanent() -> None:
    crm = FakeZoho(answer(204))
    found = crm.adapter().read_many(["101", "102"], ["Email"])
    assert all(isinstance(outcome, Permanent) for outcome in found.values())
    assert len(crm.requests) == 1


def test_read_many_refused_reads_record_by_record() -> None:
    crm = FakeZoho(
        answer(400, INVALID_ID),
        answer(200, {"data": [contact(id="101")]}),
        answer(400, INVALID_ID),
    )
    found = crm.adapter().read_many(["101", "bad"], ["Email"])
    assert found["101"] == {"Email": "j.smith@zylker.com"}
    assert isinstance(found["bad"], Permanent)
    assert "the id given seems to be invalid" in found["bad"].reason
    assert [request.url.path for request in crm.requests] == [
        "/crm/v7/Contacts",
        "/crm/v7/Contacts/101",
        "/crm/v7/Contacts/bad",
    ]


def test_read_many_rate_limit_raises_for_the_whole_call() -> None:
    crm = FakeZoho(answer(429, TOO_MANY, {"Retry-After": "5"}))
    with pytest.raises(Retriable) as caught:
        crm.adapter().read_many(["101", "102"], ["Email"])
    assert caught.value.retry_after == 5.0


def test_read_many_forbidden_is_permanent_without_reading_each() -> None:
    forbidden = {
        "code": "NO_PERMISSION",
        "details": {"permissions": ["Crm_Implied_View_Contacts"]},
        "message": "permission denied",
        "status": "error",
    }
    crm = FakeZoho(answer(403, forbidden))
    with pytest.raises(Permanent, match="403 Forbidden: NO_PERMISSION: permission denied"):
        crm.adapter().read_many(["101", "102"], ["Email"])
    assert len(crm.requests) == 1


# --- write ---------------------------------------------------------------------------------


def test_write_sends_the_documented_body_with_no_trigger() -> None:
    documented = sample("zoho_update_records_request.json")["data"][0]
    fields = {name: value for name, value in documented.items() if name != "id"}
    crm = FakeZoho(answer(200, sample("zoho_update_records_response.json")))
    result = crm.adapter().write(documented["id"], fields)
    assert result == WriteResult(written={"Title": "Head of Marketing", "Company": "Zylker Corp"})
    (request,) = crm.requests
    assert_sent(request, "PUT", f"{CONTACTS}/{documented['id']}")
    assert crm.bodies() == [{"data": [fields], "trigger": []}]


def test_write_sends_values_as_json() -> None:
    crm = FakeZoho(answer(200, {"data": [success(CONTACT)]}))
    values = {"ContactData_Employees": 1200, "Languages": ("English", "Tamil"), "Fax": None}
    crm.adapter().write(CONTACT, values)
    assert crm.bodies()[0]["data"] == [
        {"ContactData_Employees": 1200, "Languages": ["English", "Tamil"], "Fax": None}
    ]


def test_write_drops_a_field_zoho_refuses_and_sends_the_rest() -> None:
    crm = FakeZoho(
        answer(400, {"data": [invalid("ContactData_Employees")]}),
        answer(200, {"data": [success(CONTACT)]}),
    )
    result = crm.adapter().write(CONTACT, {"Title": "CTO", "ContactData_Employees": "many"})
    assert result == WriteResult(
        written={"Title": "CTO"},
        dropped={"ContactData_Employees": "INVALID_DATA: invalid data"},
    )
    assert [body["data"] for body in crm.bodies()] == [
        [{"Title": "CTO", "ContactData_Employees": "many"}],
        [{"Title": "CTO"}],
    ]


def test_write_drops_every_field_a_multiple_errors_answer_names() -> None:
    multiple = {
        "code": "MULTIPLE_OR_MULTI_ERRORS",
        "details": {"errors": [invalid("Phone"), invalid("Mailing_Zip")]},
        "message": "multiple errors",
        "status": "error",
    }
    crm = FakeZoho(answer(400, {"data": [multiple]}), answer(200, {"data": [success(CONTACT)]}))
    result = crm.adapter().write(CONTACT, {"Phone": "x", "Mailing_Zip": "y", "Title": "CTO"})
    assert result.written == {"Title": "CTO"}
    assert set(result.dropped) == {"Phone", "Mailing_Zip"}
    assert crm.bodies()[1]["data"] == [{"Title": "CTO"}]


def test_write_drops_a_field_a_top_level_error_names() -> None:
    crm = FakeZoho(answer(400, invalid("Title")), answer(200, {"data": [success(CONTACT)]}))
    result = crm.adapter().write(CONTACT, {"Title": "x" * 300, "Department": "R&D"})
    assert result == WriteResult(
        written={"Department": "R&D"}, dropped={"Title": "INVALID_DATA: invalid data"}
    )


def test_write_of_only_refused_fields_sends_once() -> None:
    crm = FakeZoho(answer(400, {"data": [invalid("Title")]}))
    result = crm.adapter().write(CONTACT, {"Title": "x" * 300})
    assert result == WriteResult(written={}, dropped={"Title": "INVALID_DATA: invalid data"})
    assert len(crm.requests) == 1


def test_write_missing_a_mandatory_field_is_permanent() -> None:
    crm = FakeZoho(answer(400, {"data": [MANDATORY]}))
    with pytest.raises(Permanent) as caught:
        crm.adapter().write(CONTACT, {"Title": "CTO"})
    assert caught.value.reason == "MANDATORY_NOT_FOUND: required field not found (Last_Name)"
    assert len(crm.requests) == 1


def test_write_to_an_invalid_id_is_permanent() -> None:
    crm = FakeZoho(answer(400, {"data": [INVALID_ID]}))
    with pytest.raises(Permanent, match="the id given seems to be invalid"):
        crm.adapter().write("999", {"Title": "CTO"})
    assert len(crm.requests) == 1


def test_write_record_id_cannot_leave_the_contacts_path() -> None:
    crm = FakeZoho(answer(200, {"data": [success(CONTACT)]}))
    crm.adapter().write("../actions/watch", {"Title": "CTO"})
    assert crm.requests[0].url.raw_path == b"/crm/v7/Contacts/..%2Factions%2Fwatch"


# --- write_many ----------------------------------------------------------------------------


def test_write_many_splits_250_contacts_into_100_100_50() -> None:
    changes = {f"5540230000{n:09d}": {"Title": f"title {n}"} for n in range(250)}
    crm = FakeZoho(updated, updated, updated)
    outcomes = crm.adapter().write_many(changes)
    assert [len(body["data"]) for body in crm.bodies()] == [100, 100, 50]
    for request in crm.requests:
        assert_sent(request, "PUT", CONTACTS)
    assert all(body["trigger"] == [] for body in crm.bodies())
    assert [item["id"] for body in crm.bodies() for item in body["data"]] == list(changes)
    assert outcomes == {key: WriteResult(written=values) for key, values in changes.items()}


def test_write_many_records_have_the_documented_shape() -> None:
    documented = sample("zoho_update_records_request.json")["data"][0]
    fields = {name: value for name, value in documented.items() if name != "id"}
    crm = FakeZoho(updated)
    crm.adapter().write_many({documented["id"]: fields})
    assert crm.bodies() == [{"data": [documented], "trigger": []}]


def test_write_many_207_is_read_record_by_record_in_the_order_sent() -> None:
    mixed = {"data": [success("101"), invalid("Phone", 1), MANDATORY]}
    crm = FakeZoho(answer(207, mixed), updated)
    changes = {
        "101": {"Title": "CTO"},
        "102": {"Title": "CEO", "Phone": "not a phone"},
        "103": {"Title": "CFO"},
    }
    outcomes = crm.adapter().write_many(changes)
    assert outcomes["101"] == WriteResult(written={"Title": "CTO"})
    assert outcomes["102"] == WriteResult(
        written={"Title": "CEO"}, dropped={"Phone": "INVALID_DATA: invalid data"}
    )
    assert isinstance(outcomes["103"], Permanent)
    assert outcomes["103"].reason == "MANDATORY_NOT_FOUND: required field not found (Last_Name)"
    assert crm.bodies()[1]["data"] == [{"id": "102", "Title": "CEO"}]


def test_write_many_400_with_every_record_refused_is_read_record_by_record() -> None:
    crm = FakeZoho(answer(400, {"data": [INVALID_ID, MANDATORY]}))
    outcomes = crm.adapter().write_many({"1": {"Title": "CTO"}, "2": {"Title": "CEO"}})
    assert {key: outcome.reason for key, outcome in outcomes.items()} == {
        "1": "INVALID_DATA: the id given seems to be invalid (id)",
        "2": "MANDATORY_NOT_FOUND: required field not found (Last_Name)",
    }
    assert len(crm.requests) == 1


def test_write_many_contact_left_out_of_the_answer_is_permanent() -> None:
    crm = FakeZoho(answer(200, {"data": [success("1")]}))
    outcomes = crm.adapter().write_many({"1": {"Title": "CTO"}, "2": {"Title": "CEO"}})
    assert outcomes["1"] == WriteResult(written={"Title": "CTO"})
    assert isinstance(outcomes["2"], Permanent) and "left this contact out" in outcomes["2"].reason


def test_write_many_top_level_error_drops_the_field_and_resends_everyone() -> None:
    crm = FakeZoho(answer(400, invalid("Phone", 1)), updated)
    changes = {"1": {"Title": "CTO"}, "2": {"Title": "CEO", "Phone": "x"}}
    outcomes = crm.adapter().write_many(changes)
    assert outcomes == {
        "1": WriteResult(written={"Title": "CTO"}),
        "2": WriteResult(written={"Title": "CEO"}, dropped={"Phone": "INVALID_DATA: invalid data"}),
    }
    assert crm.bodies()[1]["data"] == [{"id": "1", "Title": "CTO"}, {"id": "2", "Title": "CEO"}]


def test_write_many_refused_call_is_each_contacts_outcome() -> None:
    forbidden = {
        "code": "NO_PERMISSION",
        "details": {"permissions": ["Crm_Implied_Edit_Contacts"]},
        "message": "permission denied",
        "status": "error",
    }
    crm = FakeZoho(answer(403, forbidden))
    outcomes = crm.adapter().write_many({"1": {"Title": "CTO"}, "2": {"Title": "CEO"}})
    assert {key: outcome.reason for key, outcome in outcomes.items()} == {
        "1": "403 Forbidden: NO_PERMISSION: permission denied",
        "2": "403 Forbidden: NO_PERMISSION: permission denied",
    }


CHANGES = {"1": {"Title": "CTO"}, "2": {"Title": "CEO"}, "3": {"Title": "CFO"}}


@pytest.mark.parametrize(
    "refusal",
    [
        {"code": "INVALID_DATA", "details": {}, "message": "invalid data", "status": "error"},
        {
            "code": "INVALID_DATA",
            "details": {"expected_data_type": "jsonobject", "json_path": "$.data[1]"},
            "message": "invalid data",
            "status": "error",
        },
        {
            "code": "INVALID_DATA",
            "details": {"api_name": "data", "expected_data_type": "jsonarray"},
            "message": "invalid data",
            "status": "error",
        },
    ],
    ids=["no details", "a record's path", "a field no contact was sent"],
)
def test_write_many_400_naming_no_field_sent_writes_each_contact_alone(
    refusal: dict[str, Any],
) -> None:
    """One bad record can make Zoho refuse the whole call without naming a field: each
    contact then goes alone, so the others are written."""
    crm = FakeZoho(
        answer(400, refusal),
        answer(200, {"data": [success("1")]}),
        answer(400, {"data": [INVALID_ID]}),
        answer(200, {"data": [success("3")]}),
    )
    outcomes = crm.adapter().write_many(CHANGES)
    assert outcomes["1"] == WriteResult(written={"Title": "CTO"})
    assert isinstance(outcomes["2"], Permanent)
    assert outcomes["2"].reason == "INVALID_DATA: the id given seems to be invalid (id)"
    assert outcomes["3"] == WriteResult(written={"Title": "CFO"})
    assert [(request.method, request.url.path) for request in crm.requests] == [
        ("PUT", "/crm/v7/Contacts"),
        ("PUT", "/crm/v7/Contacts/1"),
        ("PUT", "/crm/v7/Contacts/2"),
        ("PUT", "/crm/v7/Contacts/3"),
    ]
    assert [body["data"] for body in crm.bodies()[1:]] == [[values] for values in CHANGES.values()]


def test_write_many_400_after_a_partial_answer_writes_the_rest_alone() -> None:
    unnamed = {"code": "INVALID_DATA", "details": {}, "message": "invalid data", "status": "error"}
    crm = FakeZoho(
        answer(207, {"data": [success("1"), invalid("Phone", 1), invalid("Phone", 2)]}),
        answer(400, unnamed),
        answer(200, {"data": [success("2")]}),
        answer(400, {"data": [MANDATORY]}),
    )
    changes = {key: {**values, "Phone": "x"} for key, values in CHANGES.items()}
    outcomes = crm.adapter().write_many(changes)
    assert outcomes["1"] == WriteResult(written={"Title": "CTO", "Phone": "x"})
    assert outcomes["2"] == WriteResult(
        written={"Title": "CEO"}, dropped={"Phone": "INVALID_DATA: invalid data"}
    )
    assert isinstance(outcomes["3"], Permanent) and "MANDATORY_NOT_FOUND" in outcomes["3"].reason
    assert [request.url.path for request in crm.requests][2:] == [
        "/crm/v7/Contacts/2",
        "/crm/v7/Contacts/3",
    ]


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("AUTHORIZATION_FAILED", "User does not have sufficient privilege to update records"),
        ("INVALID_MODULE", "the module name given seems to be invalid"),
        ("LICENSE_LIMIT_EXCEEDED", "license limit exceeded"),
    ],
)
def test_write_many_400_refusing_the_call_itself_is_each_contacts_outcome_at_once(
    code: str, message: str
) -> None:
    """Codes about the call, not a record in it: sending each contact alone would only be
    refused again, contact by contact."""
    refusal = {"code": code, "details": {}, "message": message, "status": "error"}
    crm = FakeZoho(answer(400, refusal))
    outcomes = crm.adapter().write_many(CHANGES)
    assert {key: outcome.reason for key, outcome in outcomes.items()} == dict.fromkeys(
        CHANGES, f"400 Bad Request: {code}: {message}"
    )
    assert len(crm.requests) == 1


def test_write_many_rate_limit_raises_for_the_whole_call() -> None:
    crm = FakeZoho(answer(429, TOO_MANY, {"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}))
    crm.answers[0].headers["Date"] = "Wed, 21 Oct 2026 07:27:00 GMT"
    with pytest.raises(Retriable) as caught:
        crm.adapter().write_many({"1": {"Title": "CTO"}})
    assert caught.value.retry_after == 60.0


# --- failures every call shares ------------------------------------------------------------


CALLS: list[Callable[[Zoho], Any]] = [
    lambda adapter: adapter.read(CONTACT, ["Title"]),
    lambda adapter: adapter.read_many([CONTACT, "101"], ["Title"]),
    lambda adapter: adapter.write(CONTACT, {"Title": "CTO"}),
    lambda adapter: adapter.write_many({CONTACT: {"Title": "CTO"}}),
]


def outcome_of(call: Callable[[Zoho], Any], crm: FakeZoho) -> Any:
    """What a call ended with: its failure raised, or a batch write's only outcome."""
    try:
        result = call(crm.adapter())
    except (Permanent, Retriable) as failure:
        return failure
    return next(iter(result.values())) if isinstance(result, dict) else result


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("status", [400, 401])
def test_invalid_token_is_permanent(call: Callable[[Zoho], Any], status: int) -> None:
    crm = FakeZoho(answer(status, INVALID_TOKEN))
    failure = outcome_of(call, crm)
    assert isinstance(failure, Permanent) and failure.reason == "token expired or revoked"
    assert len(crm.requests) == 1


@pytest.mark.parametrize("call", CALLS)
def test_401_without_a_zoho_body_is_an_expired_token(call: Callable[[Zoho], Any]) -> None:
    """Not Zoho's own answer (its 401 carries INVALID_TOKEN): a proxy's in front of it, say."""
    failure = outcome_of(call, FakeZoho(lambda request: broken(answer(401))))
    assert isinstance(failure, Permanent) and failure.reason == "token expired or revoked"


@pytest.mark.parametrize("call", CALLS)
def test_a_token_without_the_scope_says_so(call: Callable[[Zoho], Any]) -> None:
    mismatch = {
        "code": "OAUTH_SCOPE_MISMATCH",
        "details": {},
        "message": "invalid oauth scope to access this URL",
        "status": "error",
    }
    failure = outcome_of(call, FakeZoho(answer(401, mismatch)))
    assert isinstance(failure, Permanent)
    assert failure.reason == "401 OAUTH_SCOPE_MISMATCH: the token lacks a scope for this call"


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_server_errors_are_retriable(call: Callable[[Zoho], Any], status: int) -> None:
    internal = {
        "code": "INTERNAL_ERROR",
        "details": {},
        "message": "Internal Server Error",
        "status": "error",
    }
    failure = outcome_of(call, FakeZoho(answer(status, internal, {"Retry-After": "30"})))
    assert isinstance(failure, Retriable) and failure.retry_after == 30.0
    assert "Internal Server Error" in failure.reason


@pytest.mark.parametrize("call", CALLS)
def test_rate_limit_without_retry_after_leaves_the_wait_to_the_worker(
    call: Callable[[Zoho], Any],
) -> None:
    failure = outcome_of(call, FakeZoho(answer(429, TOO_MANY)))
    assert isinstance(failure, Retriable) and failure.retry_after is None


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("error", [httpx.ReadTimeout, httpx.ConnectTimeout, httpx.ConnectError])
def test_timeouts_and_resets_are_retriable(
    call: Callable[[Zoho], Any], error: type[httpx.TransportError]
) -> None:
    failure = outcome_of(call, FakeZoho(raising(error)))
    assert isinstance(failure, Retriable) and failure.retry_after is None


@pytest.mark.parametrize("call", CALLS)
def test_redirects_are_not_followed(call: Callable[[Zoho], Any]) -> None:
    crm = FakeZoho(answer(302, headers={"Location": "https://attacker.example/steal"}))
    failure = outcome_of(call, crm)
    assert isinstance(failure, Permanent) and "not followed" in failure.reason
    assert len(crm.requests) == 1


# --- notification channel ------------------------------------------------------------------

IST = timezone(timedelta(hours=5, minutes=30))
EXPIRES = datetime(2026, 3, 9, 10, 30, tzinfo=IST)


def subscribed(expiry: str, message: str) -> dict[str, Any]:
    """The documented answer to enabling or updating a channel."""
    event = {
        "channel_expiry": expiry,
        "resource_uri": "https://www.zohoapis.eu/crm/v7/Contacts",
        "resource_id": "554023000000000131",
        "resource_name": "Contacts",
        "channel_id": "1000000068001",
    }
    detail = {"code": "SUCCESS", "details": {"events": [event]}, "message": message}
    return {"watch": [{**detail, "status": "success"}]}


RENEWED = subscribed("2026-03-09T10:30:00+05:30", "Successfully updated the subscribe details")
ENABLED = subscribed(
    "2026-03-09T10:30:00+05:30", "Successfully subscribed for actions-watch of the given module"
)
# A refusal of the whole call (400, one error: zoho/crm-oas notifications.json's
# ErrorResponse), and of one channel among those sent (202, its error under watch:
# WrappedErrorResponse, NOT_SUBSCRIBED for a channel Zoho does not have).
NO_CHANNEL = {
    "code": "INVALID_DATA",
    "details": {"api_name": "channel_id", "json_path": "$.watch[0].channel_id"},
    "message": "invalid data",
    "status": "error",
}


def watch(crm: FakeZoho, expires: datetime = EXPIRES, lapsed: bool = False) -> datetime:
    return crm.adapter().watch(
        "1000000068001",
        "https://connector.example/hooks/7/events",
        "secret-42",
        expires,
        lapsed=lapsed,
    )


def test_watch_renews_the_channel_and_returns_the_confirmed_expiry() -> None:
    crm = FakeZoho(answer(200, RENEWED))
    assert watch(crm) == EXPIRES
    (request,) = crm.requests
    assert_sent(request, "PATCH", WATCH)
    assert crm.bodies() == [
        {
            "watch": [
                {
                    "channel_id": "1000000068001",
                    "events": ["Contacts.create", "Contacts.edit"],
                    "channel_expiry": "2026-03-09T10:30:00+05:30",
                    "token": "secret-42",
                    "notify_url": "https://connector.example/hooks/7/events",
                    "notify_on_related_action": False,
                }
            ]
        }
    ]


NOT_SUBSCRIBED = {
    "watch": [
        {
            "code": "NOT_SUBSCRIBED",
            "details": {"channel_id": "1000000068001"},
            "message": "not subscribed for actions-watch of the given channel",
            "status": "error",
        }
    ]
}


@pytest.mark.parametrize(
    "refusal", [answer(400, NO_CHANNEL), answer(202, NOT_SUBSCRIBED)], ids=["invalid id", "unknown"]
)
def test_watch_enables_a_channel_zoho_does_not_know(refusal: httpx.Response) -> None:
    crm = FakeZoho(refusal, answer(201, ENABLED))
    assert watch(crm) == EXPIRES
    assert [request.method for request in crm.requests] == ["PATCH", "POST"]
    assert crm.bodies()[0] == crm.bodies()[1]
    assert_sent(crm.requests[1], "POST", WATCH)


def test_watch_enables_a_lapsed_channel_without_updating_it_first() -> None:
    """Zoho's own advice: re-subscribe with the Enable Notification API (Kaizen #170)."""
    crm = FakeZoho(answer(201, ENABLED))
    assert watch(crm, lapsed=True) == EXPIRES
    (request,) = crm.requests
    assert_sent(request, "POST", WATCH)
    assert crm.bodies()[0]["watch"][0]["channel_id"] == "1000000068001"


def test_watch_updates_a_channel_that_is_still_enabled_when_enabling_is_refused() -> None:
    crm = FakeZoho(answer(400, NO_CHANNEL), answer(200, RENEWED))
    assert watch(crm, lapsed=True) == EXPIRES
    assert [request.method for request in crm.requests] == ["POST", "PATCH"]


def test_watch_returns_the_expiry_zoho_chose() -> None:
    an_hour = subscribed("2026-03-02T11:30:00+05:30", "Successfully updated the subscribe details")
    crm = FakeZoho(answer(200, an_hour))
    confirmed = watch(crm, datetime(2026, 4, 1, tzinfo=UTC))
    assert confirmed == datetime(2026, 3, 2, 6, 0, tzinfo=UTC)
    assert crm.bodies()[0]["watch"][0]["channel_expiry"] == "2026-04-01T00:00:00+00:00"


def test_watch_enables_when_the_renewal_confirms_nothing() -> None:
    crm = FakeZoho(answer(200, {"watch": []}), answer(201, ENABLED))
    assert watch(crm) == EXPIRES
    assert [request.method for request in crm.requests] == ["PATCH", "POST"]


def test_watch_refused_twice_is_permanent_with_zohos_words() -> None:
    too_long = {
        "code": "INVALID_DATA",
        "details": {"api_name": "token", "json_path": "$.watch[0].token"},
        "message": "the length of the token exceeds the limit",
        "status": "error",
    }
    crm = FakeZoho(answer(400, too_long), answer(400, too_long))
    with pytest.raises(Permanent) as caught:
        watch(crm)
    assert caught.value.reason == (
        "400 Bad Request: INVALID_DATA: the length of the token exceeds the limit (token)"
    )


def test_watch_with_an_expired_token_does_not_try_to_enable() -> None:
    crm = FakeZoho(answer(401, INVALID_TOKEN))
    with pytest.raises(Permanent, match="token expired or revoked"):
        watch(crm)
    assert len(crm.requests) == 1


def test_watch_rate_limited_is_retriable() -> None:
    crm = FakeZoho(answer(429, TOO_MANY, {"Retry-After": "12"}))
    with pytest.raises(Retriable) as caught:
        watch(crm)
    assert caught.value.retry_after == 12.0


def test_watch_needs_an_expiry_with_a_time_zone() -> None:
    crm = FakeZoho()
    with pytest.raises(ValueError, match="time zone"):
        watch(crm, datetime(2026, 3, 9, 10, 30))
    assert crm.requests == []


# --- the mapping reads what `read` returns ---------------------------------------------------


def test_mapping_takes_its_input_from_the_read_record() -> None:
    mapping = mappings.load(ROOT / "mappings" / "zoho.yaml")
    event = {"id": CONTACT, "module": "Contacts", "operation": "update", "channel_id": "1"}
    crm = FakeZoho(answer(200, {"data": [contact(Title="Head of Marketing")]}))
    current = crm.adapter().read(
        CONTACT, ["Email", "First_Name", "Last_Name", "Title", "Account_Name"]
    )
    assert mapping.platform == "zoho"
    assert mapping.record_id(event) == CONTACT
    assert mapping.enrich_input({**current, **event}) == {
        "conEmail": "j.smith@zylker.com",
        "conFirstName": "Jason",
        "conLastName": "Smith",
        "conJobTitle": "Head of Marketing",
        "compName": "Zylker",
    }
    assert "Account_Name" not in {rule.property for rule in mapping.output}
