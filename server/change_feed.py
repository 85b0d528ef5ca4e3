"""What `POST /v1/changes` answers: the changes recorded (server/changes.py) to the contacts and
companies an organization was delivered by enrich, a page at a time from a change number, in
the vendor's field names. Reading them costs no credits."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictStr
from sqlite_utils import Database

from server import changes
from server.clock import iso
from server.errors import InvalidParameter
from server.records import COMPANY_COLUMNS, CONTACT_COLUMNS, EMPLOYMENT_COLUMNS
from server.wire import NUMBERS_ONLY

MAX_GUIDS = 1000
MAX_PAGE_SIZE = 1000
PAGE_SIZE = 100
_CONTACT_GUID = re.compile(r"[0-9A-Fa-f]{32}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

# Stored names in a change's before/after -> the vendor's (enrich's) field names; the dates
# the data has no vendor field for in camelCase.
FIELD_NAMES = {
    **{column: name for name, column in COMPANY_COLUMNS.items()},
    **{column: name for name, column in EMPLOYMENT_COLUMNS.items()},
    **{column: name for name, column in CONTACT_COLUMNS.items()},
    "company_guid": "compGUID",
    "company": "compName",
    "domain": "compDomain",
    "left_on": "leftOn",
    "started_on": "startedOn",
}


class ChangesRequest(BaseModel):
    """The body of POST /v1/changes: which changes, from which number, how many."""

    model_config = ConfigDict(extra="forbid")

    conGUIDs: Annotated[list[StrictStr], Field(max_length=MAX_GUIDS)] | None = Field(
        None, description=f"Only changes of these contacts (at most {MAX_GUIDS})."
    )
    since: StrictStr | None = Field(
        None,
        description="Only changes recorded at or after this time (ISO 8601: a date, or a time "
        "with its offset; UTC when it has none).",
        examples=["2026-11-01T00:00:00Z"],
    )
    after: Annotated[int, Field(ge=0), NUMBERS_ONLY] = Field(
        0, description="Only changes numbered above this one: the nextAfter of the last page."
    )
    pageSize: Annotated[int, Field(ge=1, le=MAX_PAGE_SIZE), NUMBERS_ONLY] = PAGE_SIZE


def recorded_since(text: str) -> str:
    """An ISO 8601 date or time as the stored form of `recordedAt` (compared as text);
    InvalidParameter when it is neither."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidParameter(
            f"since must be an ISO 8601 date or time like 2026-11-01T00:00:00Z, not {text!r}."
        ) from None
    if _DATE.fullmatch(text) or moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return iso(moment)


def contact_guids(guids: list[str]) -> list[str]:
    """The GUIDs in the stored (upper) case; InvalidParameter naming the first that is not
    one."""
    for place, guid in enumerate(guids):
        if not _CONTACT_GUID.fullmatch(guid):
            raise InvalidParameter(
                f"conGUIDs[{place}] must be 32 hexadecimal characters, not {guid!r}."
            )
    return [guid.upper() for guid in guids]


def listed(db: Database, org_id: str, request: ChangesRequest) -> dict[str, Any]:
    """The response body: a page of the organization's changes and where the next begins."""
    found = changes.since(
        db,
        request.after,
        request.pageSize + 1,
        contacts=contact_guids(request.conGUIDs or []),
        recorded_since=recorded_since(request.since) if request.since else "",
        delivered_to=org_id,
    )
    page = found[: request.pageSize]
    return {
        "message": "Changes fetched successfully",
        "data": {
            "changes": [entry(change) for change in page],
            "nextAfter": page[-1].id if page else request.after,
            "hasMore": len(found) > request.pageSize,
        },
    }


def entry(change: changes.Change) -> dict[str, Any]:
    """One change as the API shows it."""
    return {
        "changeNumber": change.id,
        "kind": change.kind,
        "conGUID": change.contact_guid,
        "compGUID": change.company_guid,
        "before": _vendor_names(change.before),
        "after": _vendor_names(change.after),
        "changedOn": change.changed_on,
        "recordedAt": change.recorded_at,
    }


def _vendor_names(values: dict[str, Any]) -> dict[str, Any]:
    return {FIELD_NAMES.get(name, name): value for name, value in values.items()}
