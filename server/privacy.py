"""Privacy: the suppression list, of people who opted out (suppress) or asked to be erased.

A person is named by one or more identifiers: a work e-mail address, a profile URL, or a name
at a company's domain, each in the form matching looks it up by (an e-mail key, the stored
profile URL, the name keys and the registrable domain). The list keeps only a keyed hash of
each: BLAKE2b keyed with a key derived from the server secret (the one API keys are hashed
with), so that the list is not itself a contact list; without the secret a hash can neither
be reversed nor tested against a guess. Pure: the table is server/storage/store.py's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from sqlite_utils import Database

from server import names
from server.errors import InvalidParameter
from server.matching import profile_url
from server.normalize import email_key, person_key, registrable_domain

Kind = Literal["email", "profile_url", "name_domain"]
KINDS: tuple[Kind, ...] = ("email", "profile_url", "name_domain")
ACTIONS = ("suppress", "erase")
MAX_REASON = 200


@dataclass(frozen=True)
class Identifier:
    """One identifier of a person in its looked-up form (never stored: only its hash is)."""

    kind: Kind
    value: str


def email(text: str) -> Identifier | None:
    """A work e-mail address, trimmed and lower-cased; None when it is no address."""
    key = email_key(text)
    local, at, domain = key.rpartition("@")
    return Identifier("email", key) if at and local and "." in domain else None


def profile(text: str) -> Identifier | None:
    """A profile URL in its stored form; None when it is no profile URL."""
    url = profile_url(text)
    return Identifier("profile_url", url) if url else None


def name_at(name: str, domain: str) -> Identifier | None:
    """A full name at a company's domain (a website, host or e-mail address): the name's
    first and last keys and the registrable domain; None when either is missing."""
    person = names.parse(full=name)
    if person is not None:
        return name_keys_at(person.first, person.last, domain)
    words = name.split()  # a name nameparser misreads ("Yang Ma": "Ma" as a title)
    return name_keys_at(words[0], words[-1], domain) if len(words) > 1 else None


def name_keys_at(first: str, last: str, domain: str) -> Identifier | None:
    """`name_at` for a name already split in first and last."""
    return next(iter(names_at(first, last, [domain])), None)


def names_at(first: str, last: str, domains: Iterable[str]) -> list[Identifier]:
    """`name_keys_at` at each of `domains` that has a registrable domain (the name keyed once:
    enrich checks a person at several companies)."""
    registrable = [registrable_domain(domain) for domain in domains if domain]
    return named("", "", person_key(first), person_key(last), registrable)


def named(
    email_key: str, stored_url: str, first_key: str, last_key: str, domains: Iterable[str]
) -> list[Identifier]:
    """The identifiers of a person already in the looked-up forms: an e-mail key, a stored
    profile URL, and name keys at each of `domains` (registrable domains); "" for none."""
    found = [Identifier("email", email_key)] if email_key else []
    if stored_url:
        found.append(Identifier("profile_url", stored_url))
    if first_key and last_key:
        name = f"{first_key} {last_key}@"
        unique = dict.fromkeys(domain for domain in domains if domain)
        found += [Identifier("name_domain", name + domain) for domain in unique]
    return found


def identifiers(
    *, email_address: str = "", profile_address: str = "", name: str = "", company_domain: str = ""
) -> list[Identifier]:
    """The identifiers an operator named (each given one must be valid; a name needs a
    company domain and the other way round); at least one."""
    found: list[Identifier] = []
    if email_address:
        found.append(_valid(email(email_address), "--email is not an e-mail address"))
    if profile_address:
        found.append(_valid(profile(profile_address), "--profile-url is not a profile URL"))
    if name or company_domain:
        if not (name and company_domain):
            raise InvalidParameter("--name and --company-domain go together.")
        message = "--name with --company-domain names no person (a first and last name at a domain)"
        found.append(_valid(name_at(name, company_domain), message))
    if not found:
        raise InvalidParameter(
            "Name the person: --email, --profile-url, or --name with --company-domain."
        )
    return found


def _valid(identifier: Identifier | None, message: str) -> Identifier:
    if identifier is None:
        raise InvalidParameter(f"{message}.")
    return identifier


def reason_text(reason: str) -> str:
    """A suppression's reason, as kept: printable, at most MAX_REASON characters."""
    text = " ".join(reason.split())
    if len(text) > MAX_REASON or not text.isprintable():
        raise InvalidParameter(
            f"The reason must be printable text of at most {MAX_REASON} characters."
        )
    return text


Hasher = Callable[[Identifier], str]


@lru_cache(maxsize=8)  # made once per secret: callers ask for it per request or event
def hasher(secret: bytes) -> Hasher:
    """The keyed hash of identifiers under the server secret `secret`."""
    key = hashlib.sha256(b"contactdata suppression list\0" + secret).digest()

    def hash_of(identifier: Identifier) -> str:
        data = f"{identifier.kind}\0{identifier.value}".encode()
        return hashlib.blake2b(data, key=key, digest_size=16).hexdigest()

    return hash_of


def hashes(hash_of: Hasher, found: Iterable[Identifier | None]) -> list[str]:
    """The hashes of the identifiers in `found` (None left out), each once, in order."""
    return list(dict.fromkeys(hash_of(i) for i in found if i is not None))


@dataclass(frozen=True)
class Erasure:
    """What an erasure erases: the identifiers the operator named (clear, in memory only, never
    stored), their hashes, and the GUIDs of the contacts they named."""

    identifiers: tuple[Identifier, ...]
    hashes: tuple[str, ...]
    contact_guids: tuple[str, ...]


# A component's part of an erasure (the connector's: its stored webhook payloads, deliveries and
# transaction cache), run inside the erasure's write transaction; what it deleted, by name.
Eraser = Callable[[Database, Erasure], dict[str, int]]


@dataclass(frozen=True)
class Screen:
    """The suppression list as it stood, to check many people against at once (an import):
    the hashes listed and the hash that made them."""

    hash_of: Hasher
    listed: frozenset[str]

    def names(self, email_key: str, profile_address: str, first_key: str, last_key: str,
              domains: Iterable[str]) -> bool:  # fmt: skip
        """Whether a contact row names a listed person: its e-mail (an e-mail key), its profile
        URL, or its name keys at any of `domains` (registrable domains)."""
        stored_url = profile_url(profile_address) if profile_address else ""
        found = named(email_key, stored_url, first_key, last_key, domains)
        return any(self.hash_of(i) in self.listed for i in found)
