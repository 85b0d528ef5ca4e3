"""The loopback HubSpot (crm_server.FakeCrm) with one list of contacts, answered as HubSpot's
Lists API does (tests/vendor/hubspot/lists.json): for the backfill page's tests."""

from __future__ import annotations

from typing import ClassVar

from tests.helpers.crm_server import Call, FakeCrm, Reply

LISTS = "/crm/lists/2026-03"
LIST_ID, LIST_NAME = "17", "Trade show leads"


class ListedCrm(FakeCrm):
    """FakeCrm with the list "Trade show leads" (id 17) of the contacts 1001 to 1012:
    found by the lists search (ListSearchResponse), its members by the memberships API
    (ApiCollectionResponseJoinTimeAndRecordId), all on one page."""

    members: ClassVar[list[str]] = [str(1001 + n) for n in range(12)]

    def route(self, call: Call) -> Reply:
        if call.path == f"{LISTS}/search":
            listed = {"listId": LIST_ID, "listVersion": 3, "name": LIST_NAME,
                      "objectTypeId": "0-1", "processingStatus": "COMPLETE",
                      "processingType": "MANUAL",
                      "additionalProperties": {"hs_list_size": str(len(self.members))}}  # fmt: skip
            return Reply(200, {"lists": [listed], "hasMore": False, "offset": 1, "total": 1})
        if call.path == f"{LISTS}/{LIST_ID}/memberships":
            joined = "2025-02-01T00:00:00Z"
            found = [{"recordId": key, "membershipTimestamp": joined} for key in self.members]
            return Reply(200, {"results": found, "total": len(found)})
        return super().route(call)
