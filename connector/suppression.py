"""The suppression list as the connector honours it: the identifiers a saved write intent
holds (the worker checks them, and those of an enrich input and result, server.named_in_input
and server.named_in_result, before it enriches or writes), and the connector's part of an
erasure (`erase`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlite_utils import Database

import server
from connector import mappings, store

Identifier = server.privacy.Identifier
SUPPRESSED = "suppressed: nothing written back"  # a suppressed person's event's last_error
PROFILE_HOST = "https://www."  # the stored profile URL's start, left out when searching text


def of_intent(mapping: mappings.Mapping, intent: Mapping[str, Any]) -> list[Identifier]:
    """The identifiers in a saved write intent (CRM property -> value), read back through the
    mapping's output rules as the result fields they came from."""
    fields = {
        rule.field: intent[rule.property] for rule in mapping.output if rule.property in intent
    }
    return server.named_in_result(fields)


def erase(db: Database, erasure: server.Erasure) -> dict[str, int]:
    """The connector's part of `contactdata privacy erase`, in the command's write
    transaction: the stored webhook payloads naming the person (by e-mail or profile URL) or
    of the CRM records matched to their contacts, the answers kept for replayed deliveries,
    the previews and the transaction cache entries of those records. What it deleted."""
    return store.erase_person(db, needles(erasure.identifiers), list(erasure.contact_guids))


def needles(found: Iterable[Identifier]) -> list[str]:
    """The text that names a person in a stored payload: each e-mail address, and each
    profile URL without its scheme and host prefix (payloads spell those in many ways)."""
    texts = [i.value.removeprefix(PROFILE_HOST) for i in found if i.kind != "name_domain"]
    return [text.lower() for text in dict.fromkeys(texts)]
