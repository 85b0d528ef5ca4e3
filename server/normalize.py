"""Normal forms of names, e-mail addresses and web addresses, used as index keys.

Pure functions: the store indexes these keys and the matcher compares them.
"""

from __future__ import annotations

import csv
import re
import unicodedata
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

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


# Initials that end a name spaced ("Philips N. V.") or glued to its last word ("ELECTRONICSN.V."),
# a comma or so after them: a legal form when, run together, they are one of its abbreviations.
_SPACED_INITIALS = re.compile(r"(?<!\S)((?:[^\W\d_]\.\s+)+[^\W\d_]\.?)[\s,;]*$")
_GLUED_INITIALS = re.compile(r"(?<=[^\W\d_]{2})((?:[^\W\d_]\.)+[^\W\d_]\.?)[\s,;]*$")
_INITIALS_TAIL = 24  # characters at the end of a name searched for them


def spaced_legal_form(name: str) -> str:
    """`name` with a legal form written spaced or glued to the last word written as usual:
    "Philips N. V." and "PHILIPSN.V" as "Philips N.V." and "PHILIPS N.V"; else `name`."""
    for pattern in (_SPACED_INITIALS, _GLUED_INITIALS):
        found = pattern.search(name, max(0, len(name) - _INITIALS_TAIL))
        if found is None:
            continue
        initials = "".join(found[1].split())
        if ("".join(fold(initials).split()),) in _legal_forms().short:
            return f"{name[: found.start()].rstrip()} {initials}"
    return _unglued_word_form(name)


def _unglued_word_form(name: str) -> str:
    """`name` with an abbreviation written with a dot after it ("Inc.", "Ltd.") glued to a last
    word of three letters or more ("GROUPLTD.") spaced from it; else `name`."""
    text = name.rstrip(" ,;")
    if not text.endswith("."):
        return name
    last = text[-_INITIALS_TAIL:].rsplit(None, 1)[-1].casefold()
    for form in _legal_forms().glued:
        head = last[: -len(form) - 1]
        if last.endswith(f"{form}.") and len(head) >= 3 and head[-3:].isalpha():
            cut = len(text) - len(form) - 1
            return f"{text[:cut]} {text[cut:]}"
    return name


@lru_cache(maxsize=16_384)
def _folded_base(name: str) -> str:
    """A name without the legal suffixes cleanco finds (written spaced or glued too), "&" as
    "and", folded: where its key and its forms (`name_forms`) start; kept a while, as a
    company's key and forms are made one after the other."""
    name = spaced_legal_form(name)
    return fold((strip_legal_suffixes(name) or name).replace("&", " and "))


@lru_cache(maxsize=131_072)
def company_key(name: str) -> str:
    """A company name without legal suffixes, a leading "The", case, accents and punctuation."""
    folded = _folded_base(name)
    folded = re.sub(r"^the\s+", "", folded)
    while True:
        shorter = _EXTRA_SUFFIXES.sub("", folded)
        if shorter == folded or not shorter:
            return folded
        folded = shorter


def split_aka(aka: str) -> list[str]:
    """The names in a `' | '`-joined list of other names."""
    return [name.strip() for name in aka.split("|") if name.strip()]


@lru_cache(maxsize=65_536)
def alias_keys(aka: str) -> tuple[str, ...]:
    """Distinct company keys of each name in a `' | '`-joined list of other names."""
    keys = (company_key(name) for name in split_aka(aka))
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


# --- name forms: a company name as people write it --------------------------------------------

# Words that add nothing to which company a name means; dropped from a name's core form.
GENERIC_WORDS = frozenset(
    "group groups groupe gruppe grupo gruppo holding holdings international intl corporation "
    "corp company companies co technologies technology systems industries royal koninklijke "
    "the".split()
)
# Generic words that are another's translation or short form, as that one.
_GENERIC_AS = {
    "koninklijke": "royal",
    "groupe": "group",
    "gruppe": "group",
    "grupo": "group",
    "gruppo": "group",
    "groups": "group",
    "holdings": "holding",
    "intl": "international",
    "corp": "corporation",
    "co": "company",
    "companies": "company",
    "technology": "technologies",
}
# Words that join others: "&" (folded to "and"), "+" and their translations.
CONJUNCTIONS = frozenset("and und et y e of".split())
_ELISIONS = frozenset("d l".split())  # "d'Orléans", "L'Écrin": written with their word
# Words that initials leave out ("Hospital Universitario de Zaragoza" is "HUZ").
PARTICLES = frozenset(
    "the for de du des del della di da do dos das la le les van von der den het".split()
)
# Two letters that transliterate one (Müller as Mueller, Åhléns as Aahlens), read as that one.
_TRANSLITERATED = re.compile(r"(?<=[a-z])([aou])e|(a)a")
SHORTEST_LEAD = 2  # letters of the least brand (a name's first words) that is a name form
SHORTEST_TRANSLITERATED = 4
SHORTEST_PLURAL = 5
# Countries whose full legal forms are English words ("Company", "Limited"): a name may begin
# with those ("Limited Editions"), so only the others are dropped where a name begins.
_ENGLISH = frozenset("US GB IE CA AU NZ IN SG HK PH ZA".split())
# An abbreviation that may be glued to the word before it: three letters or more and a dot.
_GLUED_WORD = re.compile(r"[^\W\d_]{3,}\.")
# Words `company_key` cuts from the end of a name, which may have ended a legal form.
_KEY_CUTS = frozenset("company limited co corporation incorporated".split())


@dataclass(frozen=True)
class _LegalForms:
    """server/data/legal_forms.csv as folded word tuples."""

    short: frozenset[tuple[str, ...]]  # abbreviations; with dots also run together ("s a", "sa")
    ending: frozenset[tuple[str, ...]]  # every form, for the end of a name
    leading: frozenset[tuple[str, ...]]  # full forms that may begin a name
    longest: int  # most words in a form
    glued: tuple[str, ...]  # abbreviations of three letters or more written with a dot after


@cache
def _legal_forms() -> _LegalForms:
    path = Path(__file__).parent / "data" / "legal_forms.csv"
    with path.open(encoding="utf-8", newline="") as file:
        rows = list(csv.DictReader(line for line in file if not line.startswith("#")))
    short: set[tuple[str, ...]] = set()
    full: set[tuple[str, ...]] = set()
    leading: set[tuple[str, ...]] = set()
    glued: set[str] = set()
    for row in rows:
        for text in row["abbreviations"].split("|"):
            words = tuple(fold(text).split())
            short |= {words, ("".join(words),)} if words else set()
            if _GLUED_WORD.fullmatch(text):
                glued.add(text[:-1].casefold())
        forms = {tuple(fold(text).split()) for text in row["full"].split("|")} - {()}
        full |= (
            forms
            | {
                form[:size]  # what company_key leaves of it ("limited liability company")
                for form in forms
                for size in range(1, len(form))
                if set(form[size:]) <= _KEY_CUTS
            }
        )
        leading |= {f for f in forms if len(f) > 1 or row["country"] not in _ENGLISH}
    ending = short | full
    return _LegalForms(
        frozenset(short),
        frozenset(ending),
        frozenset(leading),
        max(map(len, ending)),
        tuple(sorted(glued, key=len, reverse=True)),
    )


def is_legal_form(text: str) -> bool:
    """Whether `text` is a legal form, abbreviated or in full ("N. V.", "GmbH", "Limited")."""
    words = tuple(fold(text).split())
    return bool(words) and words in _legal_forms().ending


def _strip_legal(words: list[str], leading: bool) -> list[str]:
    """`words` without the legal forms that end them and the conjunctions between those
    ("GmbH und Co. KG"), or, when `leading`, the `forms` that begin them; as many as there
    are, never all of them, and never the end of a run of initials ("G.S.C." is no "S.C.")."""
    legal = _legal_forms()
    forms = legal.leading if leading else legal.ending
    while True:
        cut = next(
            (
                size
                for size in range(min(legal.longest, len(words) - 1), 0, -1)
                if tuple(words[:size] if leading else words[-size:]) in forms
                and (leading or len(words[-size - 1]) > 1)
            ),
            0,
        )
        if not leading and not cut and len(words) > 1 and len(words[-1]) > 1:
            cut = 1 if words[-1] in CONJUNCTIONS else 0
        if not cut:
            return words
        words = words[cut:] if leading else words[:-cut]


def _unled(words: list[str]) -> list[str]:
    """`words` without the legal abbreviations that begin them ("AB Volvo", "K.K. Ikeda")."""
    legal = _legal_forms()
    for size in range(min(legal.longest, len(words) - 1), 0, -1):
        if tuple(words[:size]) in legal.short:
            return words[size:]
    return []


@dataclass(frozen=True)
class NameForms:
    """A company name in the forms its variants share (each "" when it has none).

    - core: its words without legal forms, generic words or conjunctions, a possessive's "s"
      on its word, transliterated letters as one, a last word's plural singular, run
      together:
      "Koninklijke Philips N.V." and "Philips" are "philips"; "Coca-Cola", "CocaCola" and
      "Coca Cola" are "cocacola"; "Mueller & Söhne" and "Müller und Söhne" are "mullersohne".
    - unled: the core without leading legal abbreviations ("AB Volvo" -> "volvo").
    - bag: the core's words in alphabetical order, when it has two or more ("Bank of Ireland"
      and "Ireland Bank" -> "bank ireland").
    - initials: the first letters of its words but conjunctions, particles and legal forms,
      when it has three or more ("International Business Machines Corp." -> "ibm";
      "Reynolds Insurance Group" -> "rig").
    - acronyms: the initials, and those with particles ("van Duivenvoorde Crystal Design"
      -> "vdcd"), without a leading legal form, and of hyphenated words as one ("Tri-Cities
      Mutual Life" -> "tml").
    - leads: the core's first words, one to all but the last (its brand: "Almeida IT
      Solutions" -> "almeida", "almeidait").
    - generic: the generic words the core leaves out, each in one language and form
      ("Koninklijke" as "royal").
    """

    core: str = ""
    unled: str = ""
    bag: str = ""
    initials: str = ""
    acronyms: tuple[str, ...] = ()
    leads: tuple[str, ...] = ()
    generic: frozenset[str] = frozenset()


def _transliterated(word: str) -> str:
    """Two letters that stand for one as that one, in a word of SHORTEST_TRANSLITERATED
    letters or more ("mueller" -> "muller"; "saa" stays initials)."""
    if len(word) < SHORTEST_TRANSLITERATED:
        return word
    return _TRANSLITERATED.sub(lambda m: m[1] or m[2], word)


def _joining(words: list[str], at: int) -> bool:
    """Whether the word at `at` is a conjunction: one of a single letter only between two
    longer words ("Silva e Filhos", not the initials "P E Networks")."""
    word = words[at]
    if word not in CONJUNCTIONS:
        return False
    if len(word) > 1:
        return True
    inside = 0 < at < len(words) - 1
    return inside and len(words[at - 1]) > 1 and len(words[at + 1]) > 1


def _unjoined(words: list[str]) -> list[str]:
    return [word for at, word in enumerate(words) if not _joining(words, at)]


def _joined(words: list[str]) -> list[str]:
    """Words as written together: a possessive's "s" on its word ("children s" -> "childrens")
    and an elided article on the next ("d avocats" -> "davocats"), but no letter of a run of
    initials ("L.C.E.")."""
    joined: list[str] = []
    for word in words:
        possessive = word == "s" and joined and len(joined[-1]) > 1
        if possessive or (joined and joined[-1] in _ELISIONS and len(word) > 1 and _elided(joined)):
            joined[-1] += word
        else:
            joined.append(word)
    return joined


def _elided(joined: list[str]) -> bool:
    """Whether the last of `joined`, a single letter, is an article: not after another."""
    return len(joined) < 2 or len(joined[-2]) > 1


def _initials(named: list[str], particles: bool = False) -> str:
    """The first letters of words without conjunctions (and particles unless `particles`),
    when there are three or more ("Hospital Universitario de Zaragoza" -> "huz")."""
    kept = [word for word in named if particles or word not in PARTICLES]
    return "".join(word[0] for word in kept) if len(kept) >= 3 else ""


def _singular(words: list[str]) -> list[str]:
    """The last word without the "s" of a plural ("Montero Foods" as "Montero Food"; not a
    short word, a word of no vowel, "glass" or "sons")."""
    if not words:
        return words
    last = words[-1]
    plural = len(last) >= SHORTEST_PLURAL and last[-1] == "s" and last[-2] != "s"
    if plural and any(letter in "aeiouy" for letter in last[:-1]):
        return [*words[:-1], last[:-1]]
    return words


def _core_words(named: list[str]) -> list[str]:
    """Words without conjunctions, then without generic words (unless that leaves none),
    transliterated."""
    kept = [word for word in named if word not in GENERIC_WORDS] or named
    return [_transliterated(word) for word in kept]


def _words(name: str) -> list[str]:
    """The folded words of a name without its legal forms at either end (a name of initials
    keeps them all: "S.A.G." is no "S" A.G.)."""
    cut = _folded_base(name).split()
    if all(len(word) == 1 for word in cut):
        folded = fold(name.replace("&", " and ")).split()
        if all(len(word) == 1 for word in folded):
            return folded
    return _strip_legal(_strip_legal(_joined(cut), leading=False), leading=True)


# Forms are read from the index: the names made into forms at query time are the query's and
# those of the few candidates it finds, so a small cache does.
@lru_cache(maxsize=16_384)
def name_forms(name: str) -> NameForms:
    """The forms of a company name (as given, or a `company_key`)."""
    words = _words(name)
    if all(len(word) == 1 for word in words):  # initials, or nothing
        return NameForms(core="".join(words))
    named = _unjoined(words)
    unled = _unjoined(_unled(words))
    core = _core_words(named)
    leads = ("".join(_singular(core[:size])) for size in range(1, len(core)))
    acronyms = (
        _initials(named),
        _initials(named, particles=True),
        _initials(unled),
        _initials(_unjoined(_words(name.replace("-", "")))) if "-" in name else "",
    )
    return NameForms(
        core="".join(_singular(core)),
        unled="".join(_singular(_core_words(unled))),
        bag=" ".join(sorted(core)) if len(core) >= 2 else "",
        initials=acronyms[0],
        acronyms=tuple(dict.fromkeys(a for a in acronyms if a)),
        leads=tuple(lead for lead in leads if len(lead) >= SHORTEST_LEAD),
        generic=frozenset(_GENERIC_AS.get(word, word) for word in named if word in GENERIC_WORDS),
    )


def stored_forms(name: str) -> set[tuple[str, str]]:
    """The (form, value) pairs a company name is indexed by: its core, unled, bag, leads (as
    "lead") and initials (as "acronym")."""
    forms = name_forms(name)
    pairs = {
        ("core", forms.core),
        ("unled", forms.unled),
        ("bag", forms.bag),
        *(("acronym", acronym) for acronym in forms.acronyms),
        *(("lead", lead) for lead in forms.leads),
    }
    return {(form, value) for form, value in pairs if value}


def company_forms(name: str, aka: str) -> list[tuple[str, str, int]]:
    """(value, form, alias) of a company's name (alias 0) and each of its other names (1)."""
    names = [(0, name), *((1, other) for other in split_aka(aka))]
    found = {(value, form, alias) for alias, other in names for form, value in stored_forms(other)}
    return sorted(found)
