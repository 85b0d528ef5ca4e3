"""What discover filters and sorts an employment by, computed once when the employment is written.

Titles are kept normalized (abbreviations spelled out, padded with spaces so a phrase is found
at word boundaries), places as codes (places.place_key), levels and functions as bit sets in
taxonomy order, the most senior level and the contact's grade as ranks (0 is best).
"""

from __future__ import annotations

from functools import lru_cache

from server import places, titles
from server.records import GRADES, JOIN

LEVEL_BITS = {level: 1 << rank for rank, level in enumerate(titles.LEVELS)}
FUNCTION_BITS = {function: 1 << rank for rank, function in enumerate(titles.FUNCTIONS)}
NO_LEVEL_RANK = len(titles.LEVELS)
GRADE_RANKS = {grade: rank for rank, grade in enumerate(GRADES)}


def job_facets(
    job_title: str, levels: str, functions: str, city: str, state: str, zipcode: str, country: str
) -> tuple[int, int, int, str, str]:
    """level_rank, level_bits, function_bits, title_key and place_key of an employment."""
    return (
        level_rank(levels),
        level_bits(levels),
        function_bits(functions),
        title_key(job_title),
        places.place_key(city, state, zipcode, country),
    )


@lru_cache(maxsize=65_536)
def title_key(title: str) -> str:
    """The normalized title between spaces (" vice president sales "), or "" for none."""
    normalized = titles.normalize_title(title)
    return f" {normalized} " if normalized else ""


def grade_rank(accuracy: str) -> int:
    """0 for A+ up to 3 for B."""
    return GRADE_RANKS[accuracy]


def bit_names(bits: int, named: dict[str, int]) -> list[str]:
    """The names whose bits are set, in taxonomy order."""
    return [name for name, bit in named.items() if bits & bit]


@lru_cache(maxsize=4096)
def level_rank(levels: str) -> int:
    """The rank of the most senior of ' | '-joined levels (0 = Founder/CXO; 9 for none)."""
    bits = level_bits(levels)
    return next((rank for rank, bit in enumerate(LEVEL_BITS.values()) if bits & bit), NO_LEVEL_RANK)


@lru_cache(maxsize=4096)
def level_bits(levels: str) -> int:
    """' | '-joined levels as bits of LEVEL_BITS; names outside the taxonomy are left out."""
    return _bits(levels, LEVEL_BITS)


@lru_cache(maxsize=4096)
def function_bits(functions: str) -> int:
    """' | '-joined functions as bits of FUNCTION_BITS."""
    return _bits(functions, FUNCTION_BITS)


def _bits(joined: str, named: dict[str, int]) -> int:
    return sum({named[name] for name in joined.split(JOIN) if name in named})
