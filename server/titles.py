"""Job-title classification: free-text title -> contact levels, functions and sub-functions.

Pure and table-driven: the phrase tables are data (data/title_phrases.json); every value
returned is a string of the vendor taxonomy.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Generic, TypeVar

LEVELS: tuple[str, ...] = (
    "Founder/CXO",
    "Board Members/Trustee",
    "VP",
    "MD",
    "Director",
    "Head",
    "Manager",
    "Staff/Principal",
    "Below Manager",
)
CXO, BOARD, VP, MD, DIRECTOR, HEAD, MANAGER, STAFF, BELOW = LEVELS

FUNCTIONS: dict[str, tuple[str, ...]] = {
    "Top Management": ("Founder & CEO", "GM / MD", "Board Member"),
    "Administration": ("Secretary", "Merger/Acquisition", "Administration - Generic"),
    "Legal /Regulatory & Compliance": ("Regulatory & Compliance", "Legal"),
    "Accounting and related": ("Accounting", "Audit", "Corporate Tax"),
    "Sales": (
        "Inside Sales/Sales Development",
        "Account Executive/Management",
        "Sales - Generic",
        "Client/Customer Relationship/Engagement",
        "Regional/Territory",
        "International/Global",
        "Business Development/Partnership",
    ),
    "Marketing": (
        "Digital Marketing",
        "Online Marketing",
        "Marketing - Generic",
        "Campaign",
        "Events /Tradeshow",
        "Strategic Marketing",
        "Product/Industry/Solutions Marketing",
        "Marketing Operations",
        "Advertising",
    ),
    "Information Technology": (
        "IT Security",
        "Network Management",
        "Infrastructure",
        "Information Systems",
        "Telecommunications",
        "Help Desk/IT Support",
        "IT Admin",
        "IT Systems /Desktop",
        "Information Technology - Generic",
        "IT Applications",
    ),
    "Engineering and Development": (
        "Software Architecture / Technologist",
        "DBA",
        "Engineering/Product Development",
        "UX / UI Design",
        "Technical",
        "Architecture, Design & Planning",
        "Research & Development",
        "Product Management",
        "E-Commerce & Mobile",
    ),
    "Miscellaneous": (
        "Design",
        "Business Intelligence",
        "International / Regional",
        "Risk/Fraud",
        "Associate",
        "Planning",
        "Quality Control/ Assurance",
        "Strategy",
    ),
    "Operations and related": (
        "Operations - Generic",
        "Loss Prevention/Protection",
        "Customer Service/Support",
        "Merchandise Management",
        "Health/Safety",
        "Production",
        "Maintenance",
        "Business Continuity",
        "Project / Program Management",
    ),
    "Supply Chain Management": (
        "Purchasing/Procurement",
        "Category/Commodity",
        "Supply chain - Generic",
        "Inventory",
        "Logistics",
        "Warehouse",
        "Import/Export",
    ),
    "Facility Operations": (
        "Facilities/Branch",
        "Real Estate/Property",
        "Plant",
        "Culinary",
        "Store",
    ),
    "Finance/Banking/Insurance": (
        "Trade and Portfolio",
        "Financial Planning & Investment",
        "Finance",
        "Controller",
        "Cash Management",
        "Risk & Fraud",
        "Banking",
        "Insurance",
    ),
    "Human Resources and related": ("Human Resources", "Training & Development"),
    "Communications/Public Relations": ("Communications", "Media & PR"),
    "Medical & Wellness": (
        "Wellness",
        "Specialist",
        "Pharmacist",
        "Patient Care",
        "Laboratory",
        "Medical - Generic",
        "Doctor",
    ),
    "Education / Teaching": ("Education / Teaching",),
}


@dataclass(frozen=True)
class TitleClass:
    """The taxonomy values derived from one job title, each tuple in taxonomy order."""

    levels: tuple[str, ...]
    functions: tuple[str, ...]
    sub_functions: tuple[str, ...]


def _tuples(table: Mapping[str, list[str]]) -> dict[str, tuple[str, ...]]:
    return {key: tuple(values) for key, values in table.items()}


# Which words and phrases name a level or a function: data, read once (data/title_phrases.json).
PHRASES_JSON = Path(__file__).parent / "data" / "title_phrases.json"
_PHRASES: dict[str, Any] = json.loads(PHRASES_JSON.read_text(encoding="utf-8"))

# --- normalization -------------------------------------------------------------------------

_STOPWORDS = frozenset(_PHRASES["stopwords"])
# Words written apart or as initials, joined after the abbreviations are spelled out.
_JOINS: dict[tuple[str, ...], tuple[str, ...]] = {
    tuple(words.split()): tuple(joined.split()) for words, joined in _PHRASES["joins"].items()
}
_ABBREVIATIONS: dict[str, str] = _PHRASES["abbreviations"]
_MAX_JOIN = max(len(key) for key in _JOINS)
_JOIN_STARTS = frozenset(key[0] for key in _JOINS)
_ELISION = re.compile(r"\b[dl]['’](?=\w)")
_INITIALS = re.compile(r"\b(\w)\.(?=\w\b)")
_NON_WORD = re.compile(r"[\W_]+")


def _fold(text: str) -> str:
    """Lowercase and strip accents; non-Latin letters are kept as they are."""
    if text.isascii():
        return text.lower()
    text = _strip_marks(unicodedata.normalize("NFKD", text)).casefold()
    return _strip_marks(unicodedata.normalize("NFKD", text))


def _strip_marks(text: str) -> str:
    return "".join(ch for ch in text if not unicodedata.combining(ch))


def _spelled(token: str) -> list[str]:
    expanded = _ABBREVIATIONS.get(token)
    return [token] if expanded is None else expanded.split()


def _join(tokens: list[str]) -> list[str]:
    """Rewrite the token pairs of `_JOINS`, left to right."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        if tokens[i] not in _JOIN_STARTS:
            out.append(tokens[i])
            i += 1
            continue
        for size in range(min(_MAX_JOIN, len(tokens) - i), 1, -1):
            joined = _JOINS.get(tuple(tokens[i : i + size]))
            if joined is not None:
                out.extend(joined)
                i += size
                break
        else:
            out.append(tokens[i])
            i += 1
    return out


def normalize_title(title: str) -> str:
    """Canonical form of a title: lowercase ASCII-folded words, abbreviations spelled out.

    Punctuation becomes spaces, connectives ("of", "the", "for", "and", "&") are dropped,
    so "VP of Sales & Marketing" and "vice president sales and marketing" are equal.
    Idempotent: normalizing a normalized title returns it unchanged.
    """
    text = _fold(title)
    if "'" in text or "’" in text:
        text = _ELISION.sub("", text).replace("'", "").replace("’", "")
    if "." in text:
        text = _INITIALS.sub(r"\1", text)
    text = text.replace("@", " at ")
    words = [w for t in _NON_WORD.split(text) if t and t not in _STOPWORDS for w in _spelled(t)]
    return " ".join(_join(words))


# --- rule tables ---------------------------------------------------------------------------
# Phrases are written naturally and normalized when the tables are built, so "IT support"
# is stored as "information technology support". The longest phrase wins, left to right.

_STRONG_LEVELS = _tuples(_PHRASES["strong_levels"])
# Senior partners and staff-grade words; under "Below Manager", phrases that only stop a word
# inside them from counting as a level ("product owner", "staff accountant").
_WEAK_LEVELS = _tuples(_PHRASES["weak_levels"])

# Words that are a level only when they open the title: "Partner, Audit" but not "Talent Partner".
_LEADING_LEVELS = _tuples(_PHRASES["leading_levels"])

# Modifiers resolved after matching: "@region"/"@global" refine Sales or stand alone,
# "@risk" lands in Finance when the title is a finance one, else in Miscellaneous.
_REGION, _GLOBAL, _RISK = "@region", "@global", "@risk"

_STRONG_FUNCTIONS = _tuples(_PHRASES["strong_functions"])
# Count only when nothing stronger names a function ("Network Engineer" is not Engineering).
_WEAK_FUNCTIONS = _tuples(_PHRASES["weak_functions"])
# Phrases that only keep a word inside them from matching ("vice president" is no president).
_NEUTRAL_FUNCTION_PHRASES = tuple(_PHRASES["neutral_function_phrases"])
# Levels that imply a Top Management sub-function of their own.
_LEVEL_LABELS = {CXO: "Top Management", BOARD: "Board Member", MD: "GM / MD"}


# --- matching ------------------------------------------------------------------------------

V = TypeVar("V")
_COMPOUND_SUFFIXES = tuple(_PHRASES["compound_suffixes"])
_COMPOUND = re.compile(rf"(\w{{3,}}?)(s?)({'|'.join(_COMPOUND_SUFFIXES)})")


@dataclass(frozen=True)
class _PhraseTable(Generic[V]):
    """Phrases (normalized, space-joined) to values, with the longest phrase per first word."""

    entries: Mapping[str, V]
    longest: Mapping[str, int]

    @classmethod
    def of(cls, entries: dict[str, V]) -> _PhraseTable[V]:
        longest: dict[str, int] = {}
        for phrase in entries:
            words = phrase.split()
            longest[words[0]] = max(longest.get(words[0], 0), len(words))
        return cls(entries, longest)

    def match(self, tokens: list[str]) -> list[tuple[int, V]]:
        """(position, value) of the phrases found, longest first, scanning left to right."""
        hits: list[tuple[int, V]] = []
        i = 0
        while i < len(tokens):
            size, hit = self._longest_at(tokens, i)
            if hit is None:
                hits.extend((i, part) for part in self._compound(tokens[i]))
                i += 1
            else:
                hits.append((i, hit))
                i += size
        return hits

    def _longest_at(self, tokens: list[str], i: int) -> tuple[int, V | None]:
        for size in range(min(self.longest.get(tokens[i], 0), len(tokens) - i), 0, -1):
            hit = self.entries.get(" ".join(tokens[i : i + size]))
            if hit is not None:
                return size, hit
        return 0, None

    def _compound(self, token: str) -> Iterable[V]:
        """German compounds: "vertriebsleiter" counts as "vertrieb" + "leiter"."""
        if len(token) < 8 or not token.endswith(_COMPOUND_SUFFIXES):
            return ()
        found = _COMPOUND.fullmatch(token)
        if found is None:
            return ()
        stem, link, suffix = found.groups()
        parts = (self.entries.get(stem + link) or self.entries.get(stem), self.entries.get(suffix))
        return [hit for hit in parts if hit is not None]


def _phrase_keys(phrases: Iterable[str]) -> Iterable[str]:
    for phrase in phrases:
        key = normalize_title(phrase)
        if not key:
            raise ValueError(f"title rule {phrase!r} normalizes to nothing")
        yield key


def _level_table() -> _PhraseTable[tuple[str, str]]:
    entries: dict[str, tuple[str, str]] = {}
    kinds = (("strong", _STRONG_LEVELS), ("weak", _WEAK_LEVELS), ("leading", _LEADING_LEVELS))
    for kind, groups in kinds:
        for level, phrases in groups.items():
            for key in _phrase_keys(phrases):
                if entries.setdefault(key, (level, kind)) != (level, kind):
                    raise ValueError(f"title rule {key!r} has two levels")
    return _PhraseTable.of(entries)


def _function_table() -> _PhraseTable[tuple[frozenset[str], bool]]:
    entries: dict[str, tuple[frozenset[str], bool]] = {}
    for weak, groups in ((False, _STRONG_FUNCTIONS), (True, _WEAK_FUNCTIONS)):
        for label, phrases in groups.items():
            if label not in _FUNCTION_OF and not label.startswith("@"):
                raise ValueError(f"{label!r} is not in the taxonomy")
            for key in _phrase_keys(phrases):
                labels, was_weak = entries.get(key, (frozenset(), weak))
                if was_weak != weak:
                    raise ValueError(f"title rule {key!r} is both weak and strong")
                entries[key] = (labels | {label}, weak)
    for key in _phrase_keys(_NEUTRAL_FUNCTION_PHRASES):
        entries.setdefault(key, (frozenset(), False))
    return _PhraseTable.of(entries)


_FUNCTION_OF: dict[str, str] = {fn: fn for fn in FUNCTIONS} | {
    sub: fn for fn, subs in FUNCTIONS.items() for sub in subs
}
_LEVEL_RANK = {level: rank for rank, level in enumerate(LEVELS)}
_FUNCTION_RANK = {fn: rank for rank, fn in enumerate(FUNCTIONS)}
_SUB_RANK = {sub: rank for rank, sub in enumerate(s for subs in FUNCTIONS.values() for s in subs)}
_LEVEL_TABLE = _level_table()
_FUNCTION_TABLE = _function_table()
_SERVING = frozenset({"assistant", "secretary", "advisor", "aide", "reporting", "assistente"})
_EMPTY = TitleClass((), (), ())


# --- classification ------------------------------------------------------------------------


def _title_tokens(normalized: str) -> list[str]:
    """Words that describe the role: drop "at <company>" and the boss in "assistant to X"."""
    tokens = normalized.split()
    for i, token in enumerate(tokens):
        if i and token == "at" and tokens[i + 1 : i + 2] != ["large"]:
            return tokens[:i]
        if i and token == "to" and tokens[i - 1] in _SERVING:
            return tokens[:i]
    return tokens


def _levels(tokens: list[str]) -> tuple[str, ...]:
    """One level, most senior strong one; Board Members/Trustee may come on top of it."""
    strong: set[str] = set()
    weak: set[str] = set()
    for start, (level, kind) in _LEVEL_TABLE.match(tokens):
        if kind != "leading" or start == 0:
            (strong if kind == "strong" else weak).add(level)
    if not strong:
        return (min(weak, key=_LEVEL_RANK.__getitem__),) if weak else (BELOW,)
    top = [min(strong - {BOARD}, key=_LEVEL_RANK.__getitem__)] if strong - {BOARD} else []
    board = [BOARD] if BOARD in strong else []
    return tuple(sorted(top + board, key=_LEVEL_RANK.__getitem__))


def _labels(tokens: list[str]) -> set[str]:
    """Sub-functions, function names and modifiers the title's words point at."""
    strong: set[str] = set()
    weak: set[str] = set()
    for _, (labels, is_weak) in _FUNCTION_TABLE.match(tokens):
        (weak if is_weak else strong).update(labels)
    if strong - {_REGION, _GLOBAL}:
        return strong
    return strong | weak


def _resolve_modifiers(labels: set[str]) -> set[str]:
    """Turn region and risk modifiers into sub-functions fitting the rest of the title."""
    found = {label for label in labels if not label.startswith("@")}
    functions = {_FUNCTION_OF[label] for label in found}
    if _RISK in labels:
        found.add("Risk & Fraud" if "Finance/Banking/Insurance" in functions else "Risk/Fraud")
    if "Sales" in functions:
        found |= {"Regional/Territory"} if _REGION in labels else set()
        found |= {"International/Global"} if _GLOBAL in labels else set()
    elif not functions and labels & {_REGION, _GLOBAL}:
        found.add("International / Regional")
    return found or {"Miscellaneous"}


def _functions(tokens: list[str], levels: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """Functions and sub-functions, each in taxonomy order."""
    labels = _labels(tokens) | {_LEVEL_LABELS[lvl] for lvl in levels if lvl in _LEVEL_LABELS}
    labels = _resolve_modifiers(labels)
    functions = sorted({_FUNCTION_OF[label] for label in labels}, key=_FUNCTION_RANK.get)
    subs = sorted((label for label in labels if label in _SUB_RANK), key=_SUB_RANK.get)
    return tuple(functions), tuple(subs)


@lru_cache(maxsize=65_536)
def classify(title: str) -> TitleClass:
    """Levels, functions and sub-functions of a free-text job title; never raises.

    A non-empty title always gets one level (two when a board seat comes with it) and at
    least one function; an empty or punctuation-only title gets empty tuples.
    """
    if not isinstance(title, str):
        return _EMPTY
    tokens = _title_tokens(normalize_title(title))
    if not tokens:
        return _EMPTY
    levels = _levels(tokens)
    functions, subs = _functions(tokens, levels)
    return TitleClass(levels, functions, subs)


# --- naming the taxonomy in a filter ---------------------------------------------------------

_LEVEL_NAMES = _tuples(_PHRASES["level_names"])
_FUNCTION_NAMES = _tuples(_PHRASES["function_names"])


@dataclass(frozen=True)
class TaxonomyTerms:
    """The levels and functions a filter names; an empty set leaves that side open."""

    levels: frozenset[str]
    functions: frozenset[str]


def _taxonomy_vocabulary() -> dict[str, tuple[str, str]]:
    """Normalized phrase -> ("level" or "function", taxonomy value); the value's own name too."""
    vocabulary: dict[str, tuple[str, str]] = {}
    for kind, named in (("level", _LEVEL_NAMES), ("function", _FUNCTION_NAMES)):
        for value, phrases in named.items():
            for key in _phrase_keys((value, *phrases)):
                vocabulary[key] = (kind, value)
    return vocabulary


_TAXONOMY_WORDS = _taxonomy_vocabulary()
_TAXONOMY_LONGEST = max(len(phrase.split()) for phrase in _TAXONOMY_WORDS)


@lru_cache(maxsize=1024)
def taxonomy_terms(text: str) -> TaxonomyTerms | None:
    """The levels and functions `text` names when it is nothing but their names ("VP",
    "Marketing", "Director of Sales", "VP Sales and Marketing"); None for any other text."""
    words = normalize_title(text).split()
    found: dict[str, set[str]] = {"level": set(), "function": set()}
    i = 0
    while i < len(words):
        for size in range(min(_TAXONOMY_LONGEST, len(words) - i), 0, -1):
            hit = _TAXONOMY_WORDS.get(" ".join(words[i : i + size]))
            if hit is not None:
                found[hit[0]].add(hit[1])
                i += size
                break
        else:
            return None
    if not words:
        return None
    return TaxonomyTerms(frozenset(found["level"]), frozenset(found["function"]))
