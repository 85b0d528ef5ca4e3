"""The Dynamics 365 / Dataverse adapter against a fake Web API (httpx.MockTransport): the exact
requests it sends, and what it makes of answers shaped as Microsoft documents them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from connector.platforms.base import Permanent, Retriable, WriteResult
from connector.platforms.dynamics import Dynamics
from tests.helpers.crm import FakeCRM, answer, raising

ORG = "https://contoso.crm.dynamics.com"
API = f"{ORG}/api/data/v9.2"
TOKEN = "entra-access-token"
# The contact of Microsoft's webhook sample (use-webhooks.md, RemoteExecutionContext).
JAMES = "6d81597f-0f9f-e711-8122-000d3aa2331c"
OTHER = "7e92608f-1fa0-f811-9233-111e4bb3442d"
# The body of the update in outbound/dynamics365_contact_patch_request.http (Microsoft's basic
# update example, "Update and delete table rows using the Web API", adapted to contacts).
PATCH_BODY = {"jobtitle": "Head of Marketing", "telephone1": "555-0100"}


class FakeDataverse(FakeCRM):
    """The shared fake CRM, building this platform's adapter over itself."""

    def adapter(self, base_url: str = ORG) -> Dynamics:
        return Dynamics(base_url, TOKEN, self.client())

    def urls(self) -> list[str]:
        return [str(request.url) for request in self.requests]


def odata_error(code: str, message: str) -> dict[str, Any]:
    """The Web API's error body ("Compose HTTP requests and handle errors")."""
    return {"error": {"code": code, "message": message}}


def no_such_column(name: str) -> httpx.Response:
    """A $select naming a column the table lacks (Microsoft's "Troubleshoot Dataverse Web API
    client errors": code 0x0, this message)."""
    message = f"Could not find a property named '{name}' on type 'Microsoft.Dynamics.CRM.contact'."
    return answer(400, odata_error("0x0", message))


def column_does_not_exist(name: str) -> httpx.Response:
    """A body naming a column the table lacks. The message is the Web API's (a $batch answer
    in Microsoft's sample); the code is left empty as there: which code Dataverse gives today
    was not verified, and the adapter does not rely on it."""
    message = (
        f"The property '{name}' does not exist on type 'Microsoft.Dynamics.CRM.contact'. "
        "Make sure to only use property names that are defined by the type."
    )
    return answer(400, odata_error("", message))


def contact(**columns: Any) -> dict[str, Any]:
    """One contact as GET contacts(<id>)?$select=... returns it."""
    return {
        "@odata.context": f"{API}/$metadata#contacts({','.join(columns)})/$entity",
        "@odata.etag": 'W/"4334726"',
        **columns,
        "contactid": JAMES,
    }


def contacts(*rows: dict[str, Any]) -> dict[str, Any]:
    """A query's answer: the rows under `value`, each with its etag and contactid."""
    return {
        "@odata.context": f"{API}/$metadata#contacts",
        "value": [{"@odata.etag": 'W/"501097"', **row} for row in rows],
    }


def assert_odata_headers(request: httpx.Request) -> None:
    assert request.headers["authorization"] == f"Bearer {TOKEN}"
    assert request.headers["accept"] == "application/json"
    assert request.headers["odata-maxversion"] == "4.0"
    assert request.headers["odata-version"] == "4.0"


def calls() -> list[Callable[[Dynamics], Any]]:
    """Each way the adapter is called, on one contact."""
    return [
        lambda adapter: adapter.read(JAMES, ["jobtitle"]),
        lambda adapter: adapter.read_many([JAMES], ["jobtitle"]),
        lambda adapter: adapter.write(JAMES, {"jobtitle": "CTO"}),
        lambda adapter: adapter.write_many({JAMES: {"jobtitle": "CTO"}}),
    ]


def outcome_of(call: Callable[[Dynamics], Any], adapter: Dynamics) -> Any:
    """What a call ended with: its answer or the failure it raised; for a batch call, the one
    contact's outcome."""
    try:
        result = call(adapter)
    except (Permanent, Retriable) as failure:
        return failure
    return next(iter(result.values())) if isinstance(result, dict) and JAMES in result else result


# --- read ------------------------------------------------------------------------------------


def test_read_selects_the_columns_by_logical_name() -> None:
    crm = FakeDataverse(
        answer(200, contact(firstname="James", jobtitle=None, address1_city="Oslo"))
    )
    values = crm.adapter().read(JAMES, ["firstname", "jobtitle", "address1_city"])
    assert values == {"firstname": "James", "jobtitle": None, "address1_city": "Oslo"}
    (request,) = crm.requests
    assert request.method == "GET"
    assert str(request.url) == f"{API}/contacts({JAMES})?$select=firstname,jobtitle,address1_city"
    assert request.url.params["$select"] == "firstname,jobtitle,address1_city"
    assert_odata_headers(request)
    assert "if-match" not in request.headers


def test_read_leaves_out_columns_the_environment_does_not_have() -> None:
    crm = FakeDataverse(
        no_such_column("new_contactdata_industry"),
        answer(200, contact(jobtitle="CTO")),
    )
    values = crm.adapter().read(JAMES, ["jobtitle", "new_contactdata_industry"])
    assert values == {"jobtitle": "CTO", "new_contactdata_industry": None}
    assert [request.url.params["$select"] for request in crm.requests] == [
        "jobtitle,new_contactdata_industry",
        "jobtitle",
    ]


def test_read_of_nothing_but_unknown_columns_asks_for_the_id_alone() -> None:
    crm = FakeDataverse(no_such_column("new_gone"), answer(200, contact()))
    assert crm.adapter().read(JAMES, ["new_gone"]) == {"new_gone": None}
    assert crm.urls()[1] == f"{API}/contacts({JAMES})?$select=contactid"


def test_read_of_a_missing_contact_is_permanent() -> None:
    missing = odata_error("", f"contact With Id = {JAMES} Does Not Exist")
    crm = FakeDataverse(answer(404, missing))
    with pytest.raises(Permanent) as caught:
        crm.adapter().read(JAMES, ["jobtitle"])
    assert caught.value.reason == (
        f"no such contact: 404 Not Found: contact With Id = {JAMES} Does Not Exist"
    )


def test_base_url_may_end_with_a_slash() -> None:
    crm = FakeDataverse(answer(200, contact(jobtitle="CTO")))
    crm.adapter(f"{ORG}/").read(JAMES, ["jobtitle"])
    assert crm.urls() == [f"{API}/contacts({JAMES})?$select=jobtitle"]


def test_upper_case_guid_is_a_contact_id_too() -> None:
    crm = FakeDataverse(answer(200, contact(jobtitle="CTO")))
    assert crm.adapter().read(JAMES.upper(), ["jobtitle"]) == {"jobtitle": "CTO"}
    assert crm.urls() == [f"{API}/contacts({JAMES.upper()})?$select=jobtitle"]


# --- record ids: GUIDs only, before any call -------------------------------------------------

NOT_GUIDS = [
    "",
    "003xx000004TmiQAAS",
    f"{JAMES})/parentcustomerid_account(",
    f"../accounts({JAMES})",
    f"{JAMES}?$select=fullname",
    f"{JAMES}\n",
    f"{{{JAMES}}}",
    JAMES[:-1] + "g",
]


@pytest.mark.parametrize("record_id", NOT_GUIDS)
def test_an_id_that_is_not_a_guid_is_permanent_before_any_call(record_id: str) -> None:
    crm = FakeDataverse()
    adapter = crm.adapter()
    with pytest.raises(Permanent, match="is not a Dataverse contact id"):
        adapter.read(record_id, ["jobtitle"])
    with pytest.raises(Permanent, match="is not a Dataverse contact id"):
        adapter.write(record_id, {"jobtitle": "CTO"})
    (outcome,) = adapter.write_many({record_id: {"jobtitle": "CTO"}}).values()
    assert isinstance(outcome, Permanent) and "is not a Dataverse contact id" in outcome.reason
    (outcome,) = adapter.read_many([record_id], ["jobtitle"]).values()
    assert isinstance(outcome, Permanent) and "is not a Dataverse contact id" in outcome.reason
    assert crm.requests == []


# --- read_many -------------------------------------------------------------------------------


def test_read_many_asks_once_with_the_in_function() -> None:
    crm = FakeDataverse(answer(200, contacts({"jobtitle": "CTO", "contactid": JAMES})))
    found = crm.adapter().read_many([JAMES, OTHER], ["jobtitle", "emailaddress1"])
    assert found[JAMES] == {"jobtitle": "CTO", "emailaddress1": None}
    assert isinstance(found[OTHER], Permanent)
    assert found[OTHER].reason == "no such contact (deleted, or not visible to this user)"
    (request,) = crm.requests
    assert request.method == "GET"
    assert str(request.url) == (
        f"{API}/contacts?$select=contactid,jobtitle,emailaddress1"
        "&$filter=Microsoft.Dynamics.CRM.In(PropertyName='contactid',"
        f"PropertyValues=['{JAMES}','{OTHER}'])"
    )
    assert request.url.params["$filter"] == (
        f"Microsoft.Dynamics.CRM.In(PropertyName='contactid',PropertyValues=['{JAMES}','{OTHER}'])"
    )
    assert_odata_headers(request)


def test_read_many_matches_ids_whatever_their_case() -> None:
    crm = FakeDataverse(answer(200, contacts({"firstname": "James", "contactid": JAMES})))
    found = crm.adapter().read_many([JAMES.upper()], ["firstname"])
    assert found == {JAMES.upper(): {"firstname": "James"}}


def test_read_many_keeps_ids_that_are_not_guids_out_of_the_query() -> None:
    crm = FakeDataverse(answer(200, contacts({"jobtitle": "CTO", "contactid": JAMES})))
    found = crm.adapter().read_many(["1') or true or ('", JAMES, JAMES], ["jobtitle"])
    assert found[JAMES] == {"jobtitle": "CTO"}
    assert isinstance(found["1') or true or ('"], Permanent)
    assert crm.requests[0].url.params["$filter"].endswith(f"PropertyValues=['{JAMES}'])")


def test_read_many_asks_fifty_contacts_a_query() -> None:
    ids = [f"00000000-0000-0000-0000-{n:012d}" for n in range(120)]

    def echo(request: httpx.Request) -> httpx.Response:
        asked = request.url.params["$filter"].split("PropertyValues=[")[1].rstrip("])")
        rows = [{"jobtitle": "CTO", "contactid": guid.strip("'")} for guid in asked.split(",")]
        return answer(200, contacts(*rows))

    crm = FakeDataverse(echo, echo, echo)
    found = crm.adapter().read_many(ids, ["jobtitle"])
    assert found == {key: {"jobtitle": "CTO"} for key in ids}
    assert [request.url.params["$filter"].count("'0000") for request in crm.requests] == [
        50,
        50,
        20,
    ]
    assert all(len(str(request.url)) < 2500 for request in crm.requests)


def test_read_many_leaves_out_columns_the_environment_does_not_have() -> None:
    crm = FakeDataverse(
        no_such_column("new_contactdata_linkedin_url"),
        answer(200, contacts({"jobtitle": "CTO", "contactid": JAMES})),
    )
    found = crm.adapter().read_many([JAMES], ["jobtitle", "new_contactdata_linkedin_url"])
    assert found == {JAMES: {"jobtitle": "CTO", "new_contactdata_linkedin_url": None}}
    assert [request.url.params["$select"] for request in crm.requests] == [
        "contactid,jobtitle,new_contactdata_linkedin_url",
        "contactid,jobtitle",
    ]


def test_read_many_of_nothing_asks_nothing() -> None:
    crm = FakeDataverse()
    assert crm.adapter().read_many([], ["jobtitle"]) == {}
    assert crm.requests == []


# --- write -----------------------------------------------------------------------------------


def test_write_patches_only_the_changed_columns_and_never_creates() -> None:
    crm = FakeDataverse(answer(204))
    result = crm.adapter().write(JAMES, PATCH_BODY)
    assert result == WriteResult(written=PATCH_BODY, dropped={})
    (request,) = crm.requests
    assert (request.method, str(request.url)) == ("PATCH", f"{API}/contacts({JAMES})")
    assert_odata_headers(request)
    assert request.headers["if-match"] == "*"
    assert request.headers["content-type"] == "application/json"
    assert crm.bodies() == [PATCH_BODY]


def test_write_sends_json_types_as_they_are() -> None:
    crm = FakeDataverse(answer(204))
    columns = {"new_contactdata_employee_count": 1200, "donotemail": False, "fax": None}
    crm.adapter().write(JAMES, {**columns, "new_contactdata_job_levels": ["C-Level", "VP"]})
    assert crm.bodies() == [{**columns, "new_contactdata_job_levels": "C-Level;VP"}]


def test_write_drops_a_column_that_does_not_exist_and_sends_the_rest_again() -> None:
    crm = FakeDataverse(column_does_not_exist("new_contactdata_industry"), answer(204))
    result = crm.adapter().write(JAMES, {"jobtitle": "CTO", "new_contactdata_industry": "Retail"})
    assert result.written == {"jobtitle": "CTO"}
    assert result.dropped == {
        "new_contactdata_industry": "The property 'new_contactdata_industry' does not exist on "
        "type 'Microsoft.Dynamics.CRM.contact'. Make sure to only use property names that are "
        "defined by the type."
    }
    assert crm.bodies() == [
        {"jobtitle": "CTO", "new_contactdata_industry": "Retail"},
        {"jobtitle": "CTO"},
    ]
    assert [request.headers["if-match"] for request in crm.requests] == ["*", "*"]


def test_write_drops_unknown_columns_named_one_answer_at_a_time() -> None:
    crm = FakeDataverse(column_does_not_exist("new_a"), column_does_not_exist("new_b"), answer(204))
    result = crm.adapter().write(JAMES, {"new_a": 1, "new_b": 2, "jobtitle": "CTO"})
    assert result.written == {"jobtitle": "CTO"}
    assert list(result.dropped) == ["new_a", "new_b"]
    assert crm.bodies() == [
        {"new_a": 1, "new_b": 2, "jobtitle": "CTO"},
        {"new_b": 2, "jobtitle": "CTO"},
        {"jobtitle": "CTO"},
    ]


def test_write_of_only_unknown_columns_sends_once() -> None:
    crm = FakeDataverse(column_does_not_exist("new_gone"))
    result = crm.adapter().write(JAMES, {"new_gone": "x"})
    assert result.written == {} and list(result.dropped) == ["new_gone"]
    assert len(crm.requests) == 1


def test_write_of_nothing_sends_nothing() -> None:
    crm = FakeDataverse()
    assert crm.adapter().write(JAMES, {}) == WriteResult(written={})
    assert crm.requests == []


def test_write_to_a_deleted_contact_is_permanent_and_creates_nothing() -> None:
    missing = odata_error("", f"contact With Id = {JAMES} Does Not Exist")
    crm = FakeDataverse(answer(404, missing))
    with pytest.raises(Permanent) as caught:
        crm.adapter().write(JAMES, {"jobtitle": "CTO"})
    assert caught.value.reason.startswith("no such contact: 404 Not Found: contact With Id")
    assert len(crm.requests) == 1
    assert crm.requests[0].headers["if-match"] == "*"


def test_other_client_errors_are_permanent_with_dataverses_code_and_message() -> None:
    # Illustrative privilege error; 403 lists this kind of error in "Identify status codes".
    refused = odata_error("0x80040220", "Principal user is missing prvWriteContact privilege.")
    crm = FakeDataverse(answer(403, refused))
    with pytest.raises(Permanent) as caught:
        crm.adapter().write(JAMES, {"jobtitle": "CTO"})
    assert caught.value.reason == (
        "403 Forbidden: 0x80040220: Principal user is missing prvWriteContact privilege."
    )
    assert len(crm.requests) == 1


def test_a_400_that_names_no_sent_column_is_permanent() -> None:
    crm = FakeDataverse(column_does_not_exist("something_else"))
    with pytest.raises(Permanent, match="does not exist on type"):
        crm.adapter().write(JAMES, {"jobtitle": "CTO"})
    assert len(crm.requests) == 1


def test_long_messages_are_shortened() -> None:
    crm = FakeDataverse(answer(400, odata_error("0x80040265", "Plug-in says: " + "no " * 500)))
    with pytest.raises(Permanent) as caught:
        crm.adapter().write(JAMES, {"jobtitle": "CTO"})
    assert caught.value.reason.startswith("400 Bad Request: 0x80040265: Plug-in says: no no")
    assert caught.value.reason.endswith("…") and len(caught.value.reason) < 340


# --- write_many ------------------------------------------------------------------------------


def test_write_many_patches_each_contact_and_reports_each_outcome() -> None:
    third = "8fa3719f-2fb1-0912-a344-222f5cc4553e"
    missing = odata_error("", f"contact With Id = {OTHER} Does Not Exist")
    crm = FakeDataverse(
        answer(204),
        answer(404, missing),
        column_does_not_exist("new_contactdata_industry"),
        answer(204),
    )
    outcomes = crm.adapter().write_many(
        {
            JAMES: PATCH_BODY,
            OTHER: {"jobtitle": "CEO"},
            third: {"jobtitle": "CFO", "new_contactdata_industry": "Retail"},
        }
    )
    assert outcomes[JAMES] == WriteResult(written=PATCH_BODY)
    assert isinstance(outcomes[OTHER], Permanent)
    assert outcomes[OTHER].reason.startswith("no such contact: 404 Not Found")
    assert outcomes[third].written == {"jobtitle": "CFO"}
    assert list(outcomes[third].dropped) == ["new_contactdata_industry"]
    assert [(request.method, str(request.url)) for request in crm.requests] == [
        ("PATCH", f"{API}/contacts({JAMES})"),
        ("PATCH", f"{API}/contacts({OTHER})"),
        ("PATCH", f"{API}/contacts({third})"),
        ("PATCH", f"{API}/contacts({third})"),
    ]
    assert all(request.headers["if-match"] == "*" for request in crm.requests)


def test_write_many_stops_at_a_retriable_failure() -> None:
    limited = odata_error(
        "0x80072322",
        "Number of requests exceeded the limit of 6000 over time window of 300 seconds.",
    )
    crm = FakeDataverse(answer(204), answer(429, limited, {"Retry-After": "12"}))
    with pytest.raises(Retriable) as caught:
        crm.adapter().write_many({JAMES: {"jobtitle": "CTO"}, OTHER: {"jobtitle": "CEO"}})
    assert caught.value.retry_after == 12.0
    assert len(crm.requests) == 2


# --- failures: every call alike --------------------------------------------------------------


@pytest.mark.parametrize("n", range(4))
def test_expired_token_is_permanent(n: int) -> None:
    crm = FakeDataverse(answer(401, headers={"WWW-Authenticate": "Bearer"}))
    outcome = outcome_of(calls()[n], crm.adapter())
    assert isinstance(outcome, Permanent) and outcome.reason == "token expired or revoked"


def test_expired_token_is_every_contacts_outcome_after_one_call() -> None:
    crm = FakeDataverse(answer(401))
    outcomes = crm.adapter().write_many(
        {JAMES: {"jobtitle": "CTO"}, OTHER: {"jobtitle": "CEO"}, "not-a-guid": {"jobtitle": "x"}}
    )
    assert list(outcomes) == [JAMES, OTHER, "not-a-guid"]
    assert {outcome.reason for outcome in outcomes.values()} == {"token expired or revoked"}
    assert len(crm.requests) == 1


SERVICE_PROTECTION = [  # api-limits.md: the three limits' hex codes and messages
    (
        "0x80072322",
        "Number of requests exceeded the limit of 6000 over time window of 300 seconds.",
    ),
    (
        "0x80072321",
        "Combined execution time of incoming requests exceeded limit of 1,200,000 milliseconds "
        "over time window of 300 seconds. Decrease number of concurrent requests or reduce the "
        "duration of requests and try again later.",
    ),
    ("0x80072326", "Number of concurrent requests exceeded the limit of 52."),
]


@pytest.mark.parametrize("n", range(4))
@pytest.mark.parametrize(("code", "message"), SERVICE_PROTECTION)
@pytest.mark.parametrize("wait", ["1", "37", "300"])
def test_service_protection_limits_wait_exactly_retry_after(
    n: int, code: str, message: str, wait: str
) -> None:
    headers = {
        "Retry-After": wait,
        "x-ms-ratelimit-burst-remaining-xrm-requests": "0",
        "x-ms-ratelimit-time-remaining-xrm-requests": "1,200.00",
    }
    crm = FakeDataverse(answer(429, odata_error(code, message), headers))
    outcome = outcome_of(calls()[n], crm.adapter())
    assert isinstance(outcome, Retriable)
    assert outcome.retry_after == float(wait)
    assert outcome.reason == f"429 Too Many Requests: {code}: {message}"
    assert len(crm.requests) == 1


def test_a_429_without_retry_after_leaves_the_wait_to_the_caller() -> None:
    crm = FakeDataverse(answer(429, odata_error("0x80072322", "Number of requests exceeded")))
    with pytest.raises(Retriable) as caught:
        crm.adapter().read(JAMES, ["jobtitle"])
    assert caught.value.retry_after is None


@pytest.mark.parametrize("n", range(4))
@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_server_errors_are_retriable(n: int, status: int) -> None:
    crm = FakeDataverse(answer(status, odata_error("0x80040216", "An unexpected error occurred.")))
    outcome = outcome_of(calls()[n], crm.adapter())
    assert isinstance(outcome, Retriable) and outcome.retry_after is None
    assert outcome.reason.endswith(": 0x80040216: An unexpected error occurred.")


def test_a_503_with_retry_after_waits_that_long() -> None:
    crm = FakeDataverse(answer(503, headers={"Retry-After": "30"}))
    with pytest.raises(Retriable) as caught:
        crm.adapter().write(JAMES, {"jobtitle": "CTO"})
    assert caught.value.retry_after == 30.0


def test_a_gateway_page_that_is_not_json_keeps_its_text() -> None:
    crm = FakeDataverse(httpx.Response(502, text="<html><body>Bad Gateway</body></html>"))
    with pytest.raises(Retriable) as caught:
        crm.adapter().read(JAMES, ["jobtitle"])
    assert caught.value.reason == "502 Bad Gateway: <html><body>Bad Gateway</body></html>"


@pytest.mark.parametrize("n", range(4))
@pytest.mark.parametrize("error", [httpx.ReadTimeout, httpx.ConnectTimeout, httpx.ConnectError])
def test_timeouts_and_connection_failures_are_retriable(
    n: int, error: type[httpx.TransportError]
) -> None:
    crm = FakeDataverse(raising(error))
    outcome = outcome_of(calls()[n], crm.adapter())
    assert isinstance(outcome, Retriable) and error.__name__ in outcome.reason


@pytest.mark.parametrize("n", range(4))
@pytest.mark.parametrize("status", [301, 302, 307])
def test_redirects_are_not_followed(n: int, status: int) -> None:
    crm = FakeDataverse(answer(status, headers={"Location": "https://attacker.example/steal"}))
    outcome = outcome_of(calls()[n], crm.adapter())
    assert isinstance(outcome, Permanent) and "not followed" in outcome.reason
    assert len(crm.requests) == 1
