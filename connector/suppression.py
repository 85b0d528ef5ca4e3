"""The suppression list as the connector honours it: the identifiers of a CRM record's enrich
input and of an enriched result, checked against the list (nothing of a suppressed person is
written back or refreshed), and the connector's part of an erasure (`erase`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlite_utils import Database

import server
from connector import mappings, store

Identifier = server.privacy.Identifier
INPUT_NAMES: dict[str, str] = {**server.OLDER_NAMES, **server.NEWER_NAMES}  # field -> attribute
SUPPRESSED = "suppressed: nothing written back"  # a suppressed person's event's last_error
PROFILE_HOST = "https://www."  # the stored profile URL's start, left out when searching text


def of_input(given: Mapping[str, Any]) -> list[Identifier]:
    """The identifiers of a person in an enrich input (either naming scheme)."""
    named: dict[str, str] = {}
    for name, attribute in INPUT_NAMES.items():
        if isinstance(given.get(name), str) and given[name].strip():
            named.setdefault(attribute, given[name].strip())
    return _identifiers(
        named.get("email", ""),
        named.get("contact_profile_url", ""),
        (named.get("first_name", ""), named.get("last_name", ""), named.get("full_name", "")),
        named.get("company_website", ""),
    )


def of_result(result: Mapping[str, Any]) -> list[Identifier]:
    """The identifiers of the person an enrich result delivered (none when no contact)."""
    text = {key: str(result.get(key) or "") for key in _RESULT_FIELDS}
    names = (text["conFirstName"], text["conLastName"], text["conFullName"])
    return _identifiers(text["conEmail"], text["conPubProfileUrl"], names, text["compWebsite"])


_RESULT_FIELDS = ("conEmail", "conPubProfileUrl", "conFirstName", "conLastName", "conFullName",
                  "compWebsite")  # fmt: skip


def of_intent(mapping: mappings.Mapping, intent: Mapping[str, Any]) -> list[Identifier]:
    """The identifiers in a saved write intent (CRM property -> value), read back through the
    mapping's output rules as the result fields they came from."""
    return of_result({rule.field: intent[rule.property] for rule in mapping.output
                      if rule.property in intent})  # fmt: skip


def _identifiers(
    email: str, profile: str, names: tuple[str, str, str], website: str
) -> list[Identifier]:
    privacy = server.privacy
    first, last, full = names
    found = [privacy.email(email) if email else None, privacy.profile(profile) if profile else None]
    if website and first and last:
        found.append(privacy.name_keys_at(first, last, website))
    elif website and full:
        found.append(privacy.name_at(full, website))
    return [identifier for identifier in found if identifier is not None]


def hashes(secret: bytes, found: Iterable[Identifier]) -> list[str]:
    """The suppression list's hashes of identifiers, under the server secret `secret`."""
    return server.privacy.hashes(server.privacy.hasher(secret), found)


def any_suppressed(db: Database, secret: bytes, found: Sequence[Identifier]) -> bool:
    """Whether any of these identifiers is on the suppression list (one query)."""
    return bool(server.suppressed(db, hashes(secret, found)))


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
