"""Everything about Microsoft Dynamics 365 / Dataverse, in one place (`PLATFORM`, registered
in connector/platforms/): its webhooks carry the connection's secret as the URL's `code`
(Dataverse's WebhookKey), a RemoteExecutionContext read into one event per contact created or
updated (`dynamics_events`), and likewise one per lead and per account (our leads and
companies); OAuth tokens from the Entra ID tenant's endpoint (given), by client credentials
for `<environment URL>/.default`; and its adapter.

The adapter: one table's rows over the Web API (OData 4.0), the table its kind's (`TABLES`:
contacts, leads, accounts for our companies): read and update one row, read up to 50 rows
a query (`$filter` with the In query function), and list the table for a backfill (`list_page`:
500 rows a page by @odata.nextLink, modified since a time), or the rows of one of its public
system views (`views`: savedqueries; `list_view_page`: savedQuery=, then the rows read by id).
Writes go one PATCH a row: `$batch` would save requests, not service-protection execution time,
and its multipart answers are a format of their own to parse. A lookup column read
(`_parentcustomerid_value`) comes with the table it names (the lookuplogicalname annotation,
asked by Prefer): a contact's company, parentcustomerid, names an account or a contact, and only
an account is its company record (`DynamicsPlatform.linked_company`).

Failures beyond `base.classify`: errors come as OData {"error": {"code", "message"}}, and the
reason carries that code and message. A 400 naming an unknown column ("Could not find a
property named 'x'" on reads, "The property 'x' does not exist on type" on writes) drops it and
asks again, so a custom column missing from the environment does not block the others. A
record id that is not a GUID is Permanent before any call: nothing else can reach the path.
A PATCH carries `If-Match: *`, so a deleted row answers 404 (Permanent, no such row)
instead of being created again. 401 is a token expired or revoked (Entra ID access tokens are
short-lived: refreshing it is the caller's business). 429, the service protection limits,
waits exactly the Retry-After the answer gives (seconds): waiting less is refused again, and
Microsoft asks clients to let that value set the pace. It is `throttled`: the worker holds
the whole connection until then, counting no attempt
(https://learn.microsoft.com/power-apps/developer/data-platform/api-limits).

Fields (the mapping editor's): the table's attribute definitions (GET EntityDefinitions(
LogicalName='<table>')/Attributes, one answer: metadata is not paged), each AttributeType
translated by `FIELD_TYPES`, read-only unless IsValidForUpdate. Choice columns' options come
from two more queries, the attributes cast to PicklistAttributeMetadata and to
MultiSelectPicklistAttributeMetadata with their OptionSet (or GlobalOptionSet) expanded: a
choice is written as its integer Value, so `options` are those integers as text and `labels`
their user-localized labels (a mapping writes the number, the editor shows the label). A
multi-select column's value is its option values comma-separated ("1,9"): a list of them is
written so, and read back as a list, for the columns the table's definitions name multi-select
(asked once an adapter, when a list of whole numbers is written or a value read looks like
one). Creating
a column takes a publisher's prefix and customizer rights (crm-install.md §3): the admin adds it
in the maker portal. A row is found by e-mail with $filter=emailaddress1 eq '<address>' (quotes
doubled, as OData string literals escape them); Dataverse compares text without regard to
case. Contacts, leads and accounts all have emailaddress1. A job change's task is a task row
(POST /tasks) regarding the row, for its owner (_ownerid_value); its new contact a contact row;
each answered 204 with the new row's URL in OData-EntityId.
"""

from __future__ import annotations

import logging
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx

from connector.platforms.base import (
    MESSAGE_LIMIT,
    TOKEN_REFUSED,
    Adapter,
    CrmClient,
    CrmField,
    Event,
    Listed,
    NewContact,
    Permanent,
    Refusal,
    Retriable,
    Row,
    Task,
    Unparseable,
    UrlSecret,
    View,
    WriteResult,
    classify,
    dicts,
    error_message,
    garbled,
    id_chunks,
    json_body,
    json_object,
    matching,
    retry_after,
    write_dropping,
    write_each,
)

API = "/api/data/v9.2"
READ_BATCH = 50  # ids a query: about 2 KB of URL, far below a page of results (5000 rows)
GUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
UNKNOWN_ON_READ = re.compile(r"Could not find a property named '([^']+)' on type")
# Microsoft documents "Invalid property 'x' was found in entity ..."; answers also say "The
# property 'x' does not exist on type ..." (both in one message, seen with 0x80048d19)
UNKNOWN_ON_WRITE = re.compile(
    r"(?:Invalid property|The property) '([^']+)' (?:was found in entity|does not exist on type)"
)
QUERY_SAFE = ",'()=[]"  # left as they are, as the Web API documentation writes its queries
PAGE_SIZE = 500  # rows a listed page (Prefer odata.maxpagesize: Dataverse takes up to 5,000)
COUNT_LIMIT = 5_000  # $count=true counts matching rows up to this many ("Count rows")
# The annotation naming the table a lookup column's value is a row of, asked by Prefer.
LOOKUP_NAME = "Microsoft.Dynamics.CRM.lookuplogicalname"
LOOKUP = re.compile(r"_\w+_value")  # a lookup column's Web API property (_parentcustomerid_value)
# A multi-select choice column's value in the Web API: its options' integer values in text,
# comma-separated ("Use choices columns to store multiple options": written "1, 9", read
# "1,9"; https://learn.microsoft.com/power-apps/developer/data-platform/multi-select-picklist).
OPTION_VALUES = re.compile(r"\s*\d+(?:\s*,\s*\d+)+\s*")
MULTI_SELECT = "MultiSelectPicklistAttributeMetadata"
OWNER = "_ownerid_value"  # a row's owner (a systemuser or team), as the Web API reads it
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Table:
    """A Dataverse table: its Web API entity set, primary key and logical name."""

    entity_set: str
    key: str
    name: str


# Our kinds of record and their tables ("Web API EntityType reference": contact, lead,
# account; EntitySetName and PrimaryIdAttribute of each).
TABLES = {
    "contacts": Table("contacts", "contactid", "contact"),
    "leads": Table("leads", "leadid", "lead"),
    "companies": Table("accounts", "accountid", "account"),
}
KINDS = {table.name: kind for kind, table in TABLES.items()}  # PrimaryEntityName -> our kind
ATTRIBUTES = ("LogicalName", "AttributeType", "DisplayName", "IsValidForUpdate",
              "IsCustomAttribute")  # fmt: skip
CHOICES = {"PicklistAttributeMetadata": "picklist", MULTI_SELECT: "multipicklist"}
# Dataverse's AttributeType -> ours (base.FIELD_TYPES); others (Virtual, State, Status,
# Uniqueidentifier, EntityName, ...) are "other", but for the choices CHOICES finds.
FIELD_TYPES = {
    "String": "text", "Memo": "text", "Integer": "number", "BigInt": "number",
    "Decimal": "number", "Double": "number", "Money": "number", "Boolean": "boolean",
    "DateTime": "datetime", "Picklist": "picklist", "Lookup": "reference",
    "Customer": "reference", "Owner": "reference",
}  # fmt: skip


class Dynamics(CrmClient):
    """Dataverse rows of one table (its `kind`'s: `TABLES`), over a client the caller builds;
    `base_url` is the environment URL (https://contoso.crm.dynamics.com) and `token` an Entra
    ID access token for it."""

    platform = "dynamics"
    _multi: frozenset[str] | None = None  # its multi-select columns, once asked

    @property
    def table(self) -> Table:
        return TABLES[self.kind]

    def token_headers(self, token: str) -> dict[str, str]:
        return {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
            "OData-MaxVersion": "4.0",
            "OData-Version": "4.0",
        }

    def read(self, record_id: str, properties: Sequence[str]) -> dict[str, Any]:
        """The row's current values of `properties` (column logical names), None where
        empty or where the environment has no such column."""
        record = self._record(self._guid(record_id), list(properties))
        return self._as_written(_columns_of(record, properties))

    def read_many(
        self, record_ids: Sequence[str], properties: Sequence[str]
    ) -> dict[str, dict[str, Any] | Permanent]:
        """Rows' current values, 50 a query; a row the answer leaves out (deleted, or not
        visible to this user) and an id that is not a GUID are Permanent."""
        columns = list(properties)
        ids = list(dict.fromkeys(map(str, record_ids)))
        found: dict[str, dict[str, Any] | Permanent] = {
            key: Permanent(self._not_a_guid(key)) for key in ids if not GUID.fullmatch(key)
        }
        for chunk in id_chunks([key for key in ids if key not in found], READ_BATCH):
            listed = self._records(chunk, columns)
            rows = {str(row.get(self.table.key)).lower(): row for row in listed}
            for key in chunk:
                row = rows.get(key.lower())
                found[key] = self._as_written(_columns_of(row, columns)) if row else self._gone()
        return found

    def list_page(self, properties: Sequence[str], since: str | None, cursor: str | None) -> Listed:
        """A page of 500 of the table's rows by ascending primary key (modified at or after
        `since` when given), as "Page results using OData" pages them: Prefer
        odata.maxpagesize, then the answer's @odata.nextLink, sent as it is with the same
        Prefer. The cursor is that link's path and query (its $skiptoken's paging cookie
        names the last row listed, so it holds in another process) and is sent below the
        environment URL only. The first page asks $count=true: its @odata.count is the total
        when under the 5,000 it counts up to."""
        columns = list(properties)
        path = self._next_page(cursor) if cursor else self._first_page(columns, since)
        response = self._send("GET", path, headers=_prefer(columns, PAGE_SIZE))
        unknown = _unknown(response, UNKNOWN_ON_READ, columns) if not cursor else {}
        if unknown:
            kept = [name for name in columns if name not in unknown]
            listed = self.list_page(kept, since, cursor)
            records = {key: _columns_of(row, columns) for key, row in listed.records.items()}
            return listed._replace(records=records)
        rows, body = self._rows(response)
        key = self.table.key
        if not all(isinstance(row.get(key), str) for row in rows):
            raise garbled(response, f"{self.table.entity_set} with their {key}")
        records = {row[key]: self._as_written(_columns_of(row, columns)) for row in rows}
        count = body.get("@odata.count")
        known = not cursor and isinstance(count, int) and count < COUNT_LIMIT
        return Listed(records, self._cursor(response, body), count if known else None)

    def views(self) -> list[View]:
        """The table's public system views (savedqueries of its returnedtypecode, querytype
        0), by name."""
        where = f"returnedtypecode eq '{self.table.name}' and querytype eq 0"
        query = _query(["savedqueryid", "name"], where)
        response = self._send("GET", f"{API}/savedqueries?{query}&$orderby=name%20asc")
        rows, _ = self._rows(response)
        return [View(str(row["savedqueryid"]), str(row.get("name") or ""))
                for row in rows if isinstance(row.get("savedqueryid"), str)]  # fmt: skip

    def list_view_page(
        self, view: str, properties: Sequence[str], since: str | None, cursor: str | None
    ) -> Listed:
        """A page of 500 of the rows of the system view `view` (savedQuery=<its id>, paged
        as `list_page` pages), their `properties` read by id (a view answers its own
        columns); with `since`, only those modified at or after it."""
        first = f"{API}/{self.table.entity_set}?savedQuery={self._view_id(view)}"
        path = self._next_page(cursor) if cursor else first
        response = self._send("GET", path, headers=_prefer([], PAGE_SIZE))
        rows, body = self._rows(response)
        ids = [row[self.table.key] for row in rows if isinstance(row.get(self.table.key), str)]
        read = self.read_many(ids, [*properties, "modifiedon"]) if ids else {}
        records = {
            key: {name: values.get(name) for name in properties}
            for key, values in read.items()
            if isinstance(values, dict) and _modified_since(values.get("modifiedon"), since)
        }
        return Listed(records, self._cursor(response, body))

    def _view_id(self, view: str) -> str:
        """A view's id, when it is a GUID (so it cannot reach outside its parameter)."""
        if not GUID.fullmatch(view):
            raise Permanent(f"{view[:60]!r} is not a Dataverse view id (a GUID)")
        return view

    def write(self, record_id: str, properties: dict[str, Any]) -> WriteResult:
        """Update one row; columns the environment does not have are dropped."""
        guid = self._guid(record_id)
        return write_dropping(lambda sent: self._update(guid, sent), properties)

    def write_many(self, changes: dict[str, dict[str, Any]]) -> dict[str, WriteResult | Permanent]:
        """Update rows one PATCH each; each row's outcome."""
        return write_each(self.write, changes)

    def fields(self) -> list[CrmField]:
        """The table's columns (see the module docstring)."""
        choices = {name: kind_options for cast, kind in CHOICES.items()
                   for name, kind_options in self._choices(cast, kind).items()}  # fmt: skip
        rows, response = self._attributes("", f"$select={','.join(ATTRIBUTES)}")
        if not all(isinstance(row.get("LogicalName"), str) for row in rows):
            raise garbled(response, f"the attributes of {self.table.name}")
        return [_field(row, choices.get(row["LogicalName"])) for row in rows]

    def create_field(self, name: str, label: str, type: str) -> CrmField:
        """Permanent: see the module docstring."""
        raise Permanent(
            f"Dataverse columns are created in the maker portal (Tables > {self.table.name} > "
            "Columns), in a solution with its publisher's prefix"
        )

    def find(self, email: str) -> str | None:
        """The id of a row whose emailaddress1 is `email`; None when there is none."""
        key, literal = self.table.key, email.replace("'", "''")
        query = _query([key], f"emailaddress1 eq '{literal}'")
        rows, response = self._rows(
            self._send("GET", f"{API}/{self.table.entity_set}?{query}&$top=1")
        )
        if rows and not isinstance(rows[0].get(key), str):
            raise garbled(response, f"{self.table.entity_set} with their {key}")
        return rows[0][key] if rows else None

    def _attributes(self, cast: str, query: str) -> tuple[list[dict[str, Any]], httpx.Response]:
        """The table's attribute definitions (cast to a type of metadata when given)."""
        path = f"{API}/EntityDefinitions(LogicalName='{self.table.name}')/Attributes"
        response = self._send("GET", f"{path}{cast and '/Microsoft.Dynamics.CRM.' + cast}?{query}")
        rows, _ = self._rows(response)
        return rows, response

    def _choices(
        self, cast: str, kind: str
    ) -> dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]]:
        """Choice columns of one metadata type: name -> (our type, values, labels)."""
        expand = "$expand=OptionSet($select=Options),GlobalOptionSet($select=Options)"
        rows, _ = self._attributes(cast, f"$select=LogicalName&{expand}")
        found = {}
        for row in rows:
            options = [o for o in _option_set(row) if isinstance(o.get("Value"), int)]
            values = tuple(str(option["Value"]) for option in options)
            found[str(row.get("LogicalName"))] = (
                kind,
                values,
                tuple(_label(option.get("Label")) for option in options),
            )
        return found

    def _as_written(self, values: dict[str, Any]) -> dict[str, Any]:
        """Values as we write them: a multi-select choice column's "1,9" as ["1", "9"], so a
        list we wrote reads back as ours. Only the table's multi-select columns, asked of its
        definitions the first time a value looks like one: "1,200" in a text column is text."""
        looks = {name for name, value in values.items()
                 if isinstance(value, str) and OPTION_VALUES.fullmatch(value)}  # fmt: skip
        multi = looks & self._multi_selects() if looks else set()
        return {name: _option_values(value) if name in multi else value
                for name, value in values.items()}  # fmt: skip

    def _payload(self, columns: dict[str, Any]) -> dict[str, Any]:
        """Values as Dataverse takes them: JSON types as they are; a list (the `split`
        transform's) as text, its items joined with ";" (names hold commas), but with "," for
        a multi-select choice column (OPTION_VALUES), asked of the table's definitions when
        every item is a whole number: only option values can be such a column's."""
        texts = {name: list(map(str, value)) for name, value in columns.items()
                 if isinstance(value, list | tuple)}  # fmt: skip
        numbered = {name for name, items in texts.items() if items and all(map(str.isdigit, items))}
        multi = numbered & self._multi_selects() if numbered else set()
        return {name: (",".join if name in multi else ";".join)(texts[name])
                if name in texts else value for name, value in columns.items()}  # fmt: skip

    def _multi_selects(self) -> frozenset[str]:
        """The logical names of the table's multi-select choice columns, asked once (none
        when its definitions cannot be read: values then read as Dataverse gives them)."""
        if self._multi is None:
            try:
                rows, _ = self._attributes(MULTI_SELECT, "$select=LogicalName")
            except Permanent as refused:
                log.warning("the %s table's definitions: %s", self.table.name, refused)
                rows = []
            self._multi = frozenset(str(row.get("LogicalName")) for row in rows)
        return self._multi

    def _record(self, guid: str, columns: list[str]) -> dict[str, Any]:
        table = self.table
        path = f"{API}/{table.entity_set}({guid})?{_query(columns or [table.key])}"
        response = self._send("GET", path, headers=_prefer(columns))
        unknown = _unknown(response, UNKNOWN_ON_READ, columns)
        if unknown:
            return self._record(guid, [name for name in columns if name not in unknown])
        self._check(response)
        body = json_body(response)
        if not isinstance(body, dict) or table.key not in body:
            raise garbled(response, f"a {table.name}")
        return body

    def _records(self, guids: list[str], columns: list[str]) -> list[dict[str, Any]]:
        table = self.table
        listed = ",".join(f"'{guid}'" for guid in guids)
        where = f"Microsoft.Dynamics.CRM.In(PropertyName='{table.key}',PropertyValues=[{listed}])"
        selected = list(dict.fromkeys([table.key, *columns]))
        path = f"{API}/{table.entity_set}?{_query(selected, where)}"
        response = self._send("GET", path, headers=_prefer(columns))
        unknown = _unknown(response, UNKNOWN_ON_READ, columns)
        if unknown:
            return self._records(guids, [name for name in columns if name not in unknown])
        return self._rows(response)[0]

    def _rows(self, response: httpx.Response) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """A collection's rows (`value`), and the answer they came in."""
        self._check(response)
        body = json_body(response)
        rows = body.get("value") if isinstance(body, dict) else None
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            raise garbled(response, f"a collection of {self.table.entity_set}")
        return rows, body

    def _first_page(self, columns: list[str], since: str | None) -> str:
        """The listing's first request: the columns, rows modified since `since`, by key."""
        table = self.table
        where = f"modifiedon ge {_odata_time(since)}" if since else ""
        query = _query(list(dict.fromkeys([table.key, *columns])), where)
        return f"{API}/{table.entity_set}?{query}&$orderby={table.key}%20asc&$count=true"

    def _next_page(self, cursor: str) -> str:
        """A saved cursor, when it is a next link of this table's listing: sent below the
        environment URL, it can reach nothing else."""
        if not cursor.startswith(f"{API}/{self.table.entity_set}?"):
            raise Permanent(f"{cursor[:60]!r} is not a next link of {self.table.entity_set}")
        return cursor

    def _cursor(self, response: httpx.Response, body: dict[str, Any]) -> str | None:
        """The next page's cursor: @odata.nextLink's path and query; None after the last."""
        link = body.get("@odata.nextLink")
        if link is None:
            return None
        url = httpx.URL(link) if isinstance(link, str) else None
        if url is None or url.path != f"{API}/{self.table.entity_set}":
            raise garbled(response, f"a next link of {self.table.entity_set}")
        return url.raw_path.decode("ascii")

    def create_task(self, record_id: str, task: Task) -> str:
        """A task (POST /tasks) regarding the row, for its owner (_ownerid_value, read
        first); its id."""
        guid, table = self._guid(record_id), self.table
        owner = self.read(guid, [OWNER]).get(OWNER)
        body = {"subject": task.subject, "description": task.body,
                "scheduledend": f"{task.due_on}T09:00:00Z",
                f"regardingobjectid_{table.name}_task@odata.bind": f"/{table.entity_set}({guid})",
                **({"ownerid@odata.bind": f"/systemusers({owner})"} if owner else {})}  # fmt: skip
        return self._create("tasks", body)

    def create_contact(self, contact: NewContact, linked_to: str) -> str:
        """A contact row (POST /contacts) whose description is the note naming the row
        `linked_to`; its id."""
        body = {"firstname": contact.first_name, "lastname": contact.last_name,
                "jobtitle": contact.title, "description": contact.note}  # fmt: skip
        return self._create("contacts", {k: v for k, v in body.items() if v})

    def _create(self, entity_set: str, body: dict[str, Any]) -> str:
        """Create a row; its id, from the OData-EntityId header of the 204 answer."""
        response = self._send("POST", f"{API}/{entity_set}", json=body)
        self._check(response)
        named = GUID.search(response.headers.get("OData-EntityId", "").rpartition("(")[2])
        if named is None:
            raise garbled(response, f"an OData-EntityId naming the {entity_set} row created")
        return named.group(0)

    def _update(self, guid: str, columns: dict[str, Any]) -> Refusal:
        response = self._send(
            "PATCH",
            f"{API}/{self.table.entity_set}({guid})",
            json=self._payload(columns),
            headers={"If-Match": "*"},
        )
        refused = _unknown(response, UNKNOWN_ON_WRITE, list(columns))
        if not refused:
            self._check(response)
        return refused

    def _check(self, response: httpx.Response) -> None:
        """Raise for a failed answer, with Dataverse's code and message; redirects and the
        rest as `classify`."""
        status = response.status_code
        if status == 401:
            raise Permanent(TOKEN_REFUSED)
        if status == 404:
            raise Permanent(f"no such {self.table.name}: {_reason(response)}")
        if status == 429:
            raise Retriable(_reason(response), retry_after(response), throttled=True)
        if status >= 500:
            raise Retriable(_reason(response), retry_after(response))
        if 400 <= status < 500:
            raise Permanent(_reason(response))
        classify(response)

    def _gone(self) -> Permanent:
        return Permanent(f"no such {self.table.name} (deleted, or not visible to this user)")

    def _guid(self, record_id: str) -> str:
        """The record id, when it is a GUID (so it cannot reach outside its path)."""
        if not GUID.fullmatch(str(record_id)):
            raise Permanent(self._not_a_guid(record_id))
        return str(record_id)

    def _not_a_guid(self, record_id: str) -> str:
        return f"{str(record_id)[:60]!r} is not a Dataverse {self.table.name} id (a GUID)"


def _field(
    row: dict[str, Any], choice: tuple[str, tuple[str, ...], tuple[str, ...]] | None
) -> CrmField:
    """An attribute definition as ours, a choice with its options."""
    name = row["LogicalName"]
    kind, options, labels = choice or (
        FIELD_TYPES.get(str(row.get("AttributeType")), "other"),
        (),
        (),
    )
    return CrmField(
        name=name,
        label=_label(row.get("DisplayName")) or name,
        type=kind,
        options=options,
        read_only=row.get("IsValidForUpdate") is not True,
        custom=row.get("IsCustomAttribute") is True,
        labels=labels,
    )


def _option_set(row: dict[str, Any]) -> list[dict[str, Any]]:
    """A choice column's options: its own OptionSet's, else its GlobalOptionSet's."""
    for name in ("OptionSet", "GlobalOptionSet"):
        found = row.get(name)
        if isinstance(found, dict) and isinstance(found.get("Options"), list):
            return dicts(found["Options"])
    return []


def _label(label: Any) -> str:
    """A Label's user-localized text (a DisplayName, an option's Label); "" when it has none."""
    localized = label.get("UserLocalizedLabel") if isinstance(label, dict) else None
    text = localized.get("Label") if isinstance(localized, dict) else None
    return text if isinstance(text, str) else ""


def _query(select: list[str], where: str = "") -> str:
    """`$select` (and `$filter`) as the Web API documentation writes them: `$` and the
    function syntax left as they are, anything else URL-encoded."""
    query = f"$select={quote(','.join(select), safe=QUERY_SAFE)}"
    return f"{query}&$filter={quote(where, safe=QUERY_SAFE)}" if where else query


def _odata_time(since: str) -> str:
    """An ISO 8601 time as an OData DateTimeOffset literal in UTC (`2026-01-10T00:00:00Z`)."""
    when = datetime.fromisoformat(since)
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _modified_since(value: Any, since: str | None) -> bool:
    """Whether a row's modifiedon (an OData DateTimeOffset) is at or after `since`; True
    without `since`, False without a value."""
    if not since:
        return True
    if not isinstance(value, str) or not value:
        return False
    return _odata_time(value) >= _odata_time(since)  # both UTC, to the second


def _prefer(columns: Sequence[str], page_size: int | None = None) -> dict[str, str]:
    """The Prefer header: the page size, and lookup columns' tables when any is asked."""
    wanted = [f"odata.maxpagesize={page_size}"] if page_size else []
    if any(LOOKUP.fullmatch(name) for name in columns):
        wanted.append(f'odata.include-annotations="{LOOKUP_NAME}"')
    return {"Prefer": ",".join(wanted)} if wanted else {}


def _columns_of(row: dict[str, Any], columns: Sequence[str]) -> dict[str, Any]:
    """A row's values of `columns` (None where it has none), and with a lookup's value the
    logical name of the table it names (`<column>@Microsoft.Dynamics.CRM.lookuplogicalname`),
    when the answer gives it: a customer lookup names an account or a contact."""
    values = {name: row.get(name) for name in columns}
    for name in columns:
        annotation = f"{name}@{LOOKUP_NAME}"
        if annotation in row:
            values[annotation] = row[annotation]
    return values


def _option_values(text: str) -> list[str]:
    """A multi-select choice column's value ("1,9") as its options' values (["1", "9"])."""
    return [part.strip() for part in text.split(",")]


def _unknown(response: httpx.Response, pattern: re.Pattern[str], columns: list[str]) -> Refusal:
    """The asked columns a 400 says the table does not have, with Dataverse's words."""
    if response.status_code != 400:
        return {}
    message = _error(response).get("message")
    if not isinstance(message, str):
        return {}
    return matching(dict.fromkeys(columns), dict.fromkeys(pattern.findall(message), message))


def _error(response: httpx.Response) -> dict[str, Any]:
    """The OData error object of an answer ({} when it has none)."""
    body = json_body(response)
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def _reason(response: httpx.Response) -> str:
    """Status, then Dataverse's code (when it gives one) and message; else the answer's text."""
    error = _error(response)
    parts = [error.get("code"), error.get("message")]
    said = ": ".join(str(part) for part in parts if part and part != "0x0")
    said = textwrap.shorten(said, MESSAGE_LIMIT, placeholder="…") if said else ""
    reason = f"{response.status_code} {response.reason_phrase}"
    return f"{reason}: {said or error_message(response)}".rstrip(": ")


def dynamics_events(document: dict[str, Any]) -> list[Event]:
    """A Dataverse webhook's RemoteExecutionContext: one event for a contact, lead or account
    created or updated (its PrimaryEntityName: our contacts, leads, companies), keyed by the
    operation and the record (and the table, but for contacts' keys as they always were),
    its columns flattened from the images and the Target (which wins), by logical name, with
    the table's primary key set to PrimaryEntityId."""
    record_id = str(document.get("PrimaryEntityId") or "")
    if not record_id or not document.get("OperationId"):
        raise Unparseable("a RemoteExecutionContext needs OperationId and PrimaryEntityId")
    kind = KINDS.get(str(document.get("PrimaryEntityName")))
    if kind is None or document.get("MessageName") == "Delete":
        return []
    columns: dict[str, Any] = {}
    for image in (*_image_values(document.get("PreEntityImages")),
                  *_image_values(document.get("PostEntityImages")),
                  *_image_values(document.get("InputParameters"), "Target")):  # fmt: skip
        if isinstance(image, dict):
            columns.update(_key_values(image.get("Attributes")))
    table = TABLES[kind]
    columns[table.key] = record_id
    operation = str(document["OperationId"])
    key = (
        f"{operation}:{record_id}"
        if kind == "contacts"
        else f"{operation}:{table.name}:{record_id}"
    )
    return [Event(key, record_id, columns, kind=kind)]


def _key_values(items: Any) -> dict[str, Any]:
    """DataContract JSON's [{"key": k, "value": v}, ...] as a dict."""
    pairs = items if isinstance(items, list) else []
    return {
        item["key"]: item.get("value") for item in pairs if isinstance(item, dict) and "key" in item
    }


def _image_values(items: Any, key: str | None = None) -> list[Any]:
    """The values of a [{"key", "value"}] list (only `key`'s, when given)."""
    pairs = _key_values(items)
    return list(pairs.values()) if key is None else [pairs[key]] if key in pairs else []


@dataclass(frozen=True, kw_only=True)
class DynamicsPlatform(UrlSecret):
    """Dynamics 365: Dataverse webhooks with the secret as the WebhookKey (`code`); its
    contacts, leads and accounts (our companies)."""

    name: str = "dynamics"
    title: str = "Microsoft Dynamics 365"
    adapter_class: Callable[..., Adapter] | None = Dynamics
    url_param: str = "code"
    refreshable: bool = True
    objects: tuple[str, ...] = tuple(TABLES)
    view_noun: str = "view"
    # A contact's company: parentcustomerid, a customer lookup (an account, or a contact).
    company_link: str = "_parentcustomerid_value"
    # Entra ID, multi-tenant (`organizations`); the scope names the Dataverse environment,
    # asked of the admin at connect time (`consent_scope`).
    oauth_authorize_url: str = (
        "https://login.microsoftonline.com/organizations/oauth2/v2.0/authorize"
    )
    oauth_token_url: str = "https://login.microsoftonline.com/organizations/oauth2/v2.0/token"
    oauth_scope: str = "offline_access"
    oauth_pkce: bool = True  # Entra ID recommends it for every client
    oauth_environment: bool = True  # the admin names the environment URL and tenant
    install: tuple[str, ...] = (
        "In the Plug-in Registration Tool, choose Register > Register New Web Hook: Endpoint "
        "URL {events_base}, Authentication WebhookKey, Value the connection's secret (ending "
        "in {hint}). Dataverse sends it as ?code=, which the connector checks.",
        "Register New Step on that web hook: Message Create, Primary Entity contact, Event "
        "Pipeline Stage PostOperation, Execution Mode Asynchronous; then one with Message "
        "Update, filtering attributes emailaddress1, firstname, lastname, jobtitle.",
        "The same two steps on lead (filtering attributes emailaddress1, firstname, lastname, "
        "companyname, websiteurl) and on account (name, websiteurl).",
        "Create the new_contactdata_* columns the mapping writes.",
    )

    def events(self, body: bytes) -> list[Event]:
        return dynamics_events(json_object(body))

    def linked_company(self, contact: dict[str, Any]) -> str:
        """The account a contact's parentcustomerid names, read with the table it names
        (its lookuplogicalname annotation); "" when that is a contact, or unknown."""
        table = contact.get(f"{self.company_link}@{LOOKUP_NAME}")
        return super().linked_company(contact) if table == TABLES["companies"].name else ""

    def scope(self, base_url: str, refresh_token: str) -> str:
        """Client credentials ask for Dataverse's `<environment>/.default`."""
        return "" if refresh_token else f"{base_url.strip().rstrip('/')}/.default"

    def consent_endpoints(self, authorize_url: str, token_url: str, tenant: str) -> tuple[str, str]:
        """The tenant's endpoints in place of the multi-tenant `organizations`."""
        segment = f"/{tenant}/"
        return (
            authorize_url.replace("/organizations/", segment, 1),
            token_url.replace("/organizations/", segment, 1),
        )

    def installed_base_url(self, answer: Row, token_url: str, environment: str) -> str:
        """The environment URL the admin gave: Entra ID's answer does not name it."""
        return environment

    def consent_scope(self, scope: str, base_url: str) -> str:
        """The app's scope and the environment's `user_impersonation` (delegated access)."""
        return f"{scope} {base_url.strip().rstrip('/')}/user_impersonation".strip()


PLATFORM = DynamicsPlatform()
