"""Person names: the best reading of the name a caller sent, and how alike two names are.

Owns the given-name equivalence table (data/nicknames.csv, loaded once on first use); pure
otherwise. Keys are `server.normalize.person_key`, the form the store indexes.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path

from nameparser import HumanName
from nameparser.config import CONSTANTS
from rapidfuzz.distance import OSA, JaroWinkler

from server.normalize import person_key

NICKNAMES_CSV = Path(__file__).parent / "data" / "nicknames.csv"

SAME = 1.0
NICKNAME = 0.9  # equivalent through the nickname table
COMPOUND = 0.9  # one surname holds every part of the other: "Garcia Lopez" / "Garcia"
TYPO_CAP = 0.85  # a misspelt first name never outranks a known nickname
INITIAL = 0.6  # an initial that agrees with the name or one of its equivalents

MAX_FIELD = 200  # characters read from any one input: caps nameparser's work on junk
_LETTER = re.compile("[a-z]")  # in a key: a name holds at least one letter
_SPLIT_WORDS = re.compile(r"[\s,]+")
_SPLIT_PARTS = re.compile(r"[\s,\-‐‑–—]+")
_SUFFIXES = CONSTANTS.suffix_acronyms | CONSTANTS.suffix_not_acronyms  # "jr", "iii", "phd"
# Surname particles that do not tell two families apart ("de la Cruz" / "Cruz").
_PARTICLES = frozenset(
    "al bin da das de del della der di dos du el ibn la le ten ter van von vom zu".split()
)
_FEMININE_ENDINGS = ("a", "e", "ie", "le", "ne", "na", "ina", "ine", "tte", "ette")
_key = lru_cache(maxsize=131_072)(person_key)  # names repeat across candidates: fold once


@dataclass(frozen=True)
class PersonName:
    """A person's name in display form, with each part's index key alongside."""

    first: str
    middle: str
    last: str
    first_key: str = field(init=False, repr=False, compare=False)
    middle_key: str = field(init=False, repr=False, compare=False)
    last_key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "first_key", _key(self.first))
        object.__setattr__(self, "middle_key", _key(self.middle))
        object.__setattr__(self, "last_key", _key(self.last))


def parse(full: str = "", first: str = "", middle: str = "", last: str = "") -> PersonName | None:
    """The best reading of a name sent as parts and/or whole; None when it holds no surname.

    The parts win when they name a last name and either a first name or no full name; else
    the full name (or the first and middle fields joined) is read by nameparser.
    """
    full, first, middle, last = (str(t or "")[:MAX_FIELD] for t in (full, first, middle, last))
    if last.strip() and (first.strip() or not full.strip()):
        name = _from_parts(first, middle, last)
    else:
        name = _from_full(full if full.strip() else f"{first} {middle}")
    if name is None or not _LETTER.search(name.last_key):
        return None
    return name


def _from_parts(first: str, middle: str, last: str) -> PersonName:
    """Split "Robert James" in the first field; drop a leading title and trailing suffixes."""
    words = first.split()
    while len(words) > 1 and words[0] in CONSTANTS.titles:
        words.pop(0)
    surname = _SPLIT_WORDS.split(last.strip(" ,"))
    while len(surname) > 1 and surname[-1].replace(".", "") in _SUFFIXES:
        surname.pop()
    first = words[0] if words else ""
    return _person(first, " ".join([*words[1:], middle]), " ".join(surname))


@lru_cache(maxsize=4096)
def _from_full(text: str) -> PersonName | None:
    """nameparser's reading: "Last, First", titles, suffixes, particles, quoted nicknames."""
    try:
        parsed = HumanName(text)
    except Exception:  # odd input nameparser cannot read is no name, never an error
        return None
    if not parsed.last or parsed.last.replace(".", "") in _SUFFIXES:
        return None
    return _person(parsed.first, parsed.middle, parsed.last)


def _person(first: str, middle: str, last: str) -> PersonName:
    """A PersonName with spacing collapsed and parts that hold no letter at all dropped."""
    parts = (" ".join(part.split()) for part in (first, middle, last))
    return PersonName(*(part if _LETTER.search(_key(part)) else "" for part in parts))


def first_keys(first: str) -> frozenset[str]:
    """The key of a given name and of every name the nickname table makes equivalent to it.

    Test another name's key for membership; do not intersect two such sets ("Alex" links
    Alexander and Alexandra, which are not equivalent). An initial gives just itself.
    """
    key = _key(first)
    if not key:
        return frozenset()
    return _nickname_table().get(key) or frozenset((key,))


def same_first(a: str, b: str) -> bool:
    """True when two given names are the same name or nicknames of one another."""
    key = _key(b)
    return bool(key) and key in first_keys(a)


def first_name_similarity(a: str, b: str) -> float:
    """How alike two given names are, 0..1: same, nickname, agreeing initial, else a typo score.

    Two different names the table knows (Christopher, Christine) and a name with its feminine
    form (Daniel, Daniela) score 0: however close the spelling, they are not typos.
    """
    ka, kb = _key(a), _key(b)
    if not ka or not kb:
        return 0.0
    if ka == kb:
        return SAME
    if len(ka) == 1 or len(kb) == 1:
        return _initial_similarity(ka, kb)
    table = _nickname_table()
    if kb in table.get(ka, ()):
        return NICKNAME
    if (ka in table and kb in table) or _feminine_form(ka, kb):
        return 0.0
    return min(TYPO_CAP, _typo_similarity(ka, kb))


def _initial_similarity(ka: str, kb: str) -> float:
    """INITIAL when the initial starts the other name or one of its equivalents ("B", "Robert")."""
    initial, name = sorted((ka, kb), key=len)
    if len(name) == 1:
        return 0.0
    equivalents = _nickname_table().get(name, (name,))
    return INITIAL if any(other.startswith(initial) for other in equivalents) else 0.0


def _feminine_form(ka: str, kb: str) -> bool:
    """Daniel/Daniela, Paul/Pauline, Louis/Louise, Mario/Maria: one name's feminine form."""
    short, long = sorted((ka, kb), key=len)
    if long.startswith(short) and long[len(short) :] in _FEMININE_ENDINGS:
        return True
    return len(ka) == len(kb) and ka[:-1] == kb[:-1] and {ka[-1], kb[-1]} == {"a", "o"}


def last_name_similarity(a: str, b: str) -> float:
    """How alike two surnames are, 0..1: same key, one holding all parts of the other, or typos.

    One or two edits score about 0.85-0.95; unrelated names 0.5 or less.
    """
    ka, kb = _key(a), _key(b)
    if not ka or not kb:
        return 0.0
    if ka == kb:
        return SAME
    parts_a, parts_b = _surname_parts(a), _surname_parts(b)
    if parts_a and parts_b and (parts_a <= parts_b or parts_b <= parts_a):
        return COMPOUND
    return _typo_similarity(ka, kb)


@lru_cache(maxsize=65_536)
def _surname_parts(name: str) -> frozenset[str]:
    """The words of a surname, split at spaces and hyphens, without particles and initials."""
    keys = (_key(word) for word in _SPLIT_PARTS.split(name))
    return frozenset(key for key in keys if len(key) > 1 and key not in _PARTICLES)


def _typo_similarity(ka: str, kb: str) -> float:
    """Jaro-Winkler rewards a shared start; edit distance stops it favouring prefixes alone."""
    return (JaroWinkler.normalized_similarity(ka, kb) + OSA.normalized_similarity(ka, kb)) / 2


@cache
def _nickname_table() -> dict[str, frozenset[str]]:
    """Each name's key -> the keys of every name sharing a group with it (itself included)."""
    table: dict[str, set[str]] = {}
    with NICKNAMES_CSV.open(encoding="utf-8", newline="") as file:
        for row in csv.reader(line for line in file if not line.startswith("#")):
            group = {_key(name) for name in row} - {""}
            for key in group:
                table.setdefault(key, set()).update(group)
    return {key: frozenset(keys) for key, keys in table.items()}
