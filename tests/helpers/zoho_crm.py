"""A Zoho CRM holding records of several modules (Contacts, Leads, Accounts), answering the
v7 records API over httpx.MockTransport as Zoho documents it (tests/vendor/zoho.json): get one
record or several by `ids` (the `fields` asked, 204 when none is found), update one or a batch
(a SUCCESS a record, in the order sent); a module's fields, created (201, each field's SUCCESS
and id; its API name made from its label, spaces as underscores, as Zoho makes it) and read
back one by id; and a notification channel confirming each module's events (201 Created when
enabled, 200 when its details are updated). Every request is kept; `refusals` answer first,
whatever the call."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import httpx

from tests.helpers.constants import OUTBOUND
from tests.helpers.crm_fields import zoho_field

Record = dict[str, Any]
INVALID_MODULE = {
    "code": "INVALID_MODULE",
    "details": {"resource_path_index": 2},
    "message": "the module name given seems to be invalid",
    "status": "error",
}
# Each module's id (a notification event's resource_id), as Zoho's samples number them.
MODULE_IDS = {"Contacts": "554023000000000131", "Leads": "554023000000000125",
              "Accounts": "554023000000000129"}  # fmt: skip
# What the enable and update-info pages answer a channel: POST, PATCH.
WATCHED = {
    "POST": (201, "Successfully subscribed for actions-watch of the given module"),
    "PATCH": (200, "Successfully updated the subscribe details"),
}


def _success(record_id: str) -> Record:
    """The documented per-record SUCCESS of an update (the outbound sample), for `record_id`."""
    sample = json.loads((OUTBOUND / "zoho_update_records_response.json").read_text())
    item = sample["data"][0]
    return {**item, "details": {**item["details"], "id": record_id}}


class FakeZohoRecords:
    """Zoho's records by module API name, then id (`records["Accounts"]["5725..."]`)."""

    def __init__(self, records: dict[str, dict[str, Record]]) -> None:
        self.records = records
        self.requests: list[httpx.Request] = []
        self.fields: dict[str, list[Record]] = {}  # the field meta API's fields, by module
        self.refusals: list[httpx.Response] = []  # answered first, to any call
        self.api_names: dict[str, str] = {}  # a new field's API name by label, if not the usual

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.refusals:
            return self.refusals.pop(0)
        _, _, _, module, *rest = request.url.path.split("/")  # /crm/v7/{module}[/{id}]
        if module == "actions":
            return self._watch(request)
        if module == "settings" and rest[:1] == ["fields"]:
            return self._field_meta(request, rest[1:])
        held = self.records.get(module)
        if held is None:
            return httpx.Response(400, json=INVALID_MODULE)
        if rest == ["search"]:
            return self._search(held, request.url.params["email"])
        if request.method == "PUT":
            return self._update(held, json.loads(request.content)["data"], rest)
        if request.method == "POST":
            return self._insert(module, held, json.loads(request.content)["data"])
        ids = rest or request.url.params["ids"].split(",")
        fields = [name for name in request.url.params.get("fields", "").split(",") if name]
        found = [self._view(held[key], fields) for key in ids if key in held]
        if not found:
            return httpx.Response(204)
        info = {"per_page": 200, "count": len(found), "page": 1, "more_records": False}
        return httpx.Response(200, json={"data": found, "info": info})

    def updates(self, module: str) -> list[tuple[str, list[Record]]]:
        """The updates sent to a module: each one's path and records, in order."""
        return [
            (request.url.path, json.loads(request.content)["data"])
            for request in self.requests
            if request.method == "PUT" and request.url.path.split("/")[3] == module
        ]

    def _field_meta(self, request: httpx.Request, field_id: list[str]) -> httpx.Response:
        """The field meta API of a module (module=): its fields listed, one by id, or new
        ones created (POST) as create-custom-field answers (zoho/crm-oas fields.json)."""
        module = request.url.params["module"]
        if module not in self.fields:
            return httpx.Response(400, json=INVALID_MODULE)
        if request.method == "POST":
            return self._create_fields(module, json.loads(request.content)["fields"])
        held = [f for f in self.fields[module] if not field_id or f["id"] == field_id[0]]
        return httpx.Response(200, json={"fields": held}) if held else httpx.Response(204)

    def _create_fields(self, module: str, asked: list[Record]) -> httpx.Response:
        """Each field asked for, made custom with a new id, its API name its label's (spaces
        as underscores)."""
        answers = []
        for item in asked:
            label = item["field_label"]
            api_name = self.api_names.get(label, "_".join(label.split()))
            field_id = str(3652397000000700000 + len(self.requests))
            self.fields[module].append(zoho_field(
                api_name, label, item["data_type"], id=field_id, custom_field=True,
                length=item.get("length", 255),
            ))  # fmt: skip
            answers.append({"code": "SUCCESS", "details": {"id": field_id},
                            "message": "field created", "status": "success"})  # fmt: skip
        return httpx.Response(201, json={"fields": answers})

    def _search(self, held: dict[str, Record], email: str) -> httpx.Response:
        """GET /crm/v7/{module}/search?email=: records whose Email is it (not case sensitive),
        204 No Content when none is (Zoho's search-records page)."""
        found = [dict(r) for r in held.values() if str(r.get("Email", "")).lower() == email.lower()]
        if not found:
            return httpx.Response(204)
        info = {"per_page": 200, "count": len(found), "page": 1, "more_records": False}
        return httpx.Response(200, json={"data": found, "info": info})

    def _view(self, record: Record, fields: list[str]) -> Record:
        shown = {name: record.get(name) for name in fields} if fields else dict(record)
        return {**shown, "id": record["id"]}

    def _update(
        self, held: dict[str, Record], data: list[Record], rest: list[str]
    ) -> httpx.Response:
        answers = []
        for item in data:
            key = rest[0] if rest else str(item["id"])
            held[key].update({name: value for name, value in item.items() if name != "id"})
            answers.append(_success(key))
        return httpx.Response(200, json={"data": answers})

    def _insert(self, module: str, held: dict[str, Record], data: list[Record]) -> httpx.Response:
        """Insert records (POST /crm/v7/{module}): 201, one SUCCESS with its new id each."""
        answers = []
        for item in data:
            key = f"{MODULE_IDS.get(module, '554023000000000999')[:12]}{len(held) + 1:07d}"
            held[key] = {**item, "id": key}
            answers.append(_success(key))
        return httpx.Response(201, json={"data": answers})

    def _watch(self, request: httpx.Request) -> httpx.Response:
        """The channel enabled (POST) or updated (PATCH): one event a module watched, its
        expiry confirmed; or disabled (DELETE ?channel_ids=), one SUCCESS a channel."""
        if request.method == "DELETE":
            unsubscribed = {"code": "SUCCESS", "status": "success",
                            "message": "Successfully un-subscribed from actions-watch"}  # fmt: skip
            ids = request.url.params["channel_ids"].split(",")
            return httpx.Response(200, json={"watch": [
                {**unsubscribed, "details": {"channel_id": i}} for i in ids]})  # fmt: skip
        status, message = WATCHED[request.method]
        (channel,) = json.loads(request.content)["watch"]
        modules = dict.fromkeys(event.split(".")[0] for event in channel["events"])
        events = [
            {
                "channel_expiry": channel["channel_expiry"],
                "resource_uri": f"https://www.zohoapis.com/crm/v7/{module}",
                "resource_id": MODULE_IDS.get(module, "554023000000000101"),
                "resource_name": module,
                "channel_id": channel["channel_id"],
            }
            for module in modules
        ]
        answer = {
            "code": "SUCCESS",
            "details": {"events": events},
            "message": message,
            "status": "success",
        }
        return httpx.Response(status, json={"watch": [answer]})


LISTING_LIMIT = 2_000  # records `page` reaches; past them, only page_token (documented)
PAGE_LIMIT = 200  # per_page at most
FIELDS_LIMIT = 50  # field names a GET takes


def _error(code: str, message: str, details: Record) -> httpx.Response:
    return httpx.Response(
        400, json={"code": code, "details": details, "message": message, "status": "error"}
    )


class ListedZohoRecords(FakeZohoRecords):
    """Zoho's records that can also be listed, as the get-records API pages a module (Zoho's
    OpenAPI description, getRecords): `fields` required (50 at most), `per_page` up to 200,
    `page` up to the first 2,000 records, `page_token` (from info.next_page_token) past them,
    bound to the call's parameters (TOKEN_BOUND_DATA_MISMATCH) and lapsing (EXPIRED_VALUE,
    `expire_tokens`); `If-Modified-Since` keeps the records whose Modified_Time is not older
    (304 when none is), 204 when the module holds none. `failures` answer first, in order."""

    def __init__(self, records: dict[str, dict[str, Record]]) -> None:
        super().__init__(records)
        self.failures: list[httpx.Response] = []
        self.tokens: dict[str, tuple[int, tuple[Any, ...]]] = {}  # token -> (next, binding)
        self.expired: set[str] = set()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.split("/")
        listing = len(path) == 4 and "ids" not in request.url.params
        if not (request.method == "GET" and listing and path[3] != "actions"):
            return super().__call__(request)
        self.requests.append(request)
        if self.failures:
            return self.failures.pop(0)
        return self._list(path[3], request)

    def listings(self) -> list[httpx.Request]:
        """The listing calls received, in order."""
        return [
            r
            for r in self.requests
            if r.method == "GET" and len(r.url.path.split("/")) == 4 and "ids" not in r.url.params
        ]

    def expire_tokens(self) -> None:
        self.expired.update(self.tokens)

    def _start(
        self, token: str | None, binding: tuple[Any, ...], per_page: int, page: int
    ) -> tuple[int, int] | httpx.Response:
        """Where a page starts and its number: after the token's page, or the `page`th."""
        if token is None:
            if page * per_page > LISTING_LIMIT:
                message = "You can only get the first 2000 records without using page_token param"
                return _error("DISCRETE_PAGINATION_LIMIT_EXCEEDED", message,
                              {"limit": LISTING_LIMIT})  # fmt: skip
            return (page - 1) * per_page, page
        if token in self.expired:
            where = {"api_name": "page_token", "json_path": "$.query.page_token"}
            return _error("EXPIRED_VALUE", "Page token expired", where)
        start, bound = self.tokens.get(token, (-1, ()))
        if bound != binding:
            message = (
                "The page_token given seems to be invalid or input param is added or altered "
                "or deleted"
            )
            return _error("TOKEN_BOUND_DATA_MISMATCH", message, {"param_name": "page_token"})
        return start, start // per_page + 1

    def _list(self, module: str, request: httpx.Request) -> httpx.Response:
        held = self.records.get(module)
        if held is None:
            return httpx.Response(400, json=INVALID_MODULE)
        params = request.url.params
        fields = [name for name in params.get("fields", "").split(",") if name]
        if not fields:
            return _error("REQUIRED_PARAM_MISSING", "required param is missing",
                          {"param_name": "fields"})  # fmt: skip
        if len(fields) > FIELDS_LIMIT:
            return _error("LIMIT_EXCEEDED", "limit exceeded",
                          {"limit": FIELDS_LIMIT, "param_name": "fields"})  # fmt: skip
        per_page = min(int(params.get("per_page", PAGE_LIMIT)), PAGE_LIMIT)
        since = request.headers.get("If-Modified-Since")
        binding = (module, tuple(fields), per_page, since)
        token = params.get("page_token")
        where = self._start(token, binding, per_page, int(params.get("page", 1)))
        if isinstance(where, httpx.Response):
            return where
        start, page = where
        matching = [record for record in held.values() if _modified_since(record, since)]
        if not matching:
            return httpx.Response(304 if since else 204)
        shown = [self._view(record, fields) for record in matching[start : start + per_page]]
        more = start + per_page < len(matching)
        following = None
        if more:
            following = f"tok{len(self.tokens) + 1:04d}"
            self.tokens[following] = (start + per_page, binding)
        info = {
            "per_page": per_page, "count": len(shown), "page": page, "sort_by": "id",
            "sort_order": "desc", "more_records": more, "next_page_token": following,
            "previous_page_token": token, "page_token_expiry": "2026-11-23T12:00:00+00:00",
        }  # fmt: skip
        return httpx.Response(200, json={"data": shown, "info": info})


def _modified_since(record: Record, since: str | None) -> bool:
    if since is None:
        return True
    modified = record.get("Modified_Time")
    moment = datetime.fromisoformat(since)
    return modified is None or datetime.fromisoformat(str(modified)) >= moment
