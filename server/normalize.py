"""Normal forms of names, e-mail addresses and web addresses, used as index keys.

Pure functions: the store indexes these keys and the matcher compares them.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache, lru_cache

import tldextract
from cleanco.clean import normalized, prepare_default_terms, strip_punct

_NON_ALNUM = re.compile(r"[^0-9a-z]+")
_SYMBOLS = re.compile(r"[^.\w]*")  # cleanco's tail: anything but dots and word characters
# Letters that Unicode does not decompose into a base letter plus accents.
_UNDECOMPOSABLE = str.maketrans(
    {"ø": "o", "æ": "ae", "œ": "oe", "ß": "ss", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ı": "i"}
)
# Long forms cleanco leaves in place, and words that add nothing to a company's identity.
_EXTRA_SUFFIXES = re.compile(
    r"\s+(aktiengesellschaft|gesellschaft mit beschrankter haftung|incorporated|corporation"
    r"|company|limited|holdings?|group|co|partg mbb|partnerschaft mbb|mbb|scp)$"
)


def fold(text: str) -> str:
    """Lower-case ASCII words: accents dropped, punctuation to single spaces."""
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _NON_ALNUM.sub(" ", stripped.casefold().translate(_UNDECOMPOSABLE)).strip()


def strip_tail(name: str) -> str:
    """cleanco's `strip_tail`, the trailing symbols but dots cut, in linear time (cleanco's
    search for symbols up to the end starts over at each symbol of a run: quadratic in it)."""
    return name[: len(name) - _SYMBOLS.match(name[::-1]).end()]


def _term_positions() -> dict[tuple[str, ...], list[int]]:
    positions: dict[tuple[str, ...], list[int]] = {}
    for position, (_size, parts) in enumerate(_TERMS):
        positions.setdefault(tuple(parts), []).append(position)
    return positions


_TERMS = prepare_default_terms()
_TERM_POSITIONS = _term_positions()
_LONGEST_TERM = max(size for size, _ in _TERMS)


def strip_legal_suffixes(name: str) -> str:
    """cleanco's `basename(name)`, found by lookup instead of trying each of its 300 terms.

    cleanco walks its terms in order and cuts each one that ends the name as cut so far; here
    the next term to cut is the earliest one, after the last cut, among the name's own endings.
    """
    name = strip_tail(name)
    parts = name.split()
    words = [strip_punct(word) for word in normalized(name).split()]
    after = 0
    while True:
        found = [
            position
            for size in range(1, min(_LONGEST_TERM, len(words)) + 1)
            for position in _TERM_POSITIONS.get(tuple(words[-size:]), ())
            if position >= after
        ]
        if not found:
            return strip_tail(" ".join(parts))
        after = min(found)
        size = _TERMS[after][0]
        del words[-size:], parts[-size:]
        after += 1


@lru_cache(maxsize=131_072)
def company_key(name: str) -> str:
    """A company name without legal suffixes, a leading "The", case, accents and punctuation."""
    folded = fold((strip_legal_suffixes(name) or name).replace("&", " and "))
    folded = re.sub(r"^the\s+", "", folded)
    while True:
        shorter = _EXTRA_SUFFIXES.sub("", folded)
        if shorter == folded or not shorter:
            return folded
        folded = shorter


@lru_cache(maxsize=65_536)
def alias_keys(aka: str) -> tuple[str, ...]:
    """Distinct company keys of each name in a `' | '`-joined list of other names."""
    keys = (company_key(name.strip()) for name in aka.split("|") if name.strip())
    return tuple(dict.fromkeys(key for key in keys if key))


def person_key(name: str) -> str:
    """A person's name part folded to ASCII letters with spaces, hyphens and quotes removed."""
    return fold(name).replace(" ", "")


@cache
def _extractor() -> tldextract.TLDExtract:
    # The bundled public-suffix snapshot: never fetch the list, never write a cache.
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


@lru_cache(maxsize=131_072)
def registrable_domain(address: str) -> str:
    """The registrable domain of a URL, host or e-mail address ("" when there is none)."""
    text = address.strip().casefold()
    if "@" in text and "/" not in text:
        text = text.rsplit("@", 1)[1]
    parts = _extractor()(text)
    if not parts.suffix or not parts.domain:
        return ""
    return f"{parts.domain}.{parts.suffix}"


def email_key(email: str) -> str:
    """An e-mail address trimmed and lower-cased (the form stored and looked up)."""
    return email.strip().casefold()
