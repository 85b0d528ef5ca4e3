"""Enrich benchmark queries: known records made into noisy enrich inputs, and made-up ones.

Pure functions: plain records and a seeded `random.Random` in, `BenchQuery`s out. The
benchmark (bench/enrich.py) reads the records from the database and says which queries to
reject (ambiguous, or not really absent); everything else is decided here.

Noise model. Each known contact (one of its employments: a "No Longer" contact is queried at
its former employer) gets one query, of a kind drawn by weight among the kinds that apply:

- `email`: the e-mail alone, upper-cased one time in five.
- `full record`: name, e-mail, company name, website, job title and country, all clean.
- `name + company`, `name + domain`: the name with the company name, or with its website.
- `dropped fields`: the full record with each of e-mail, name, company name and website
  dropped with probability 1/2, keeping an e-mail or a name with a company name or website.
- `name typo`: 1 edit in the first or last name (2 edits in a name of 7+ letters, one time
  in three); an edit is a substitution or insertion of a neighbouring QWERTY key, a deletion,
  or a transposition of two adjacent letters, never at a word's first letter, only in words
  of 4+ letters. With the company name (or one time in three its website).
- `company typo`: the name with 1-2 such edits in a 4+ letter word of the company name
  (not in its legal suffix).
- `swapped names`: first and last name exchanged (with the company name or website).
- `nickname`: another form of the first name (Robert -> Bob, Joseph -> Giuseppe) from the
  matcher's table (server/data/nicknames.csv, through `server.names`), or NICKNAMES below
  where there is none; only for first names that have one.
- `case/accent`: person and company names upper-cased, lower-cased or, when they have any,
  stripped of accents (Müller -> Muller).
- `legal suffix`: the company's legal suffix dropped, changed (Ltd -> Limited, Inc. -> LLC)
  or, where it has none, added.
- `alias`: one of the company's other names (its `aka`) instead of its name.

- `company variant`: the name with the company name as people type it: one of the company-name
  variants below, drawn by weight among those that apply.

Company-name variants (VARIANT_KINDS; each also a company kind, "company: <kind>"):

- `generic words`: a generic word dropped ("Koninklijke Philips N.V." -> "Philips N.V.", never
  the last distinctive word) or added ("The X", "X Group", "X Holding", "X International";
  "Royal X" in the Netherlands and Belgium); Koninklijke <-> Royal.
- `acronym`: the initials of 3+ significant words ("International Business Machines
  Corporation" -> "IBM", one time in three "I.B.M."); leading initials dotted or spaced
  ("ABC Logistics" -> "A.B.C. Logistics", "A B C Logistics").
- `legal form`: the legal form (LEGAL_FORMS, 30 countries) in full or abbreviated ("Deutsche
  Telekom AG" -> "Deutsche Telekom Aktiengesellschaft"), without dots ("Philips NV"), in
  another case, or moved where the country writes it leading ("Volvo AB" -> "AB Volvo").
- `and/&`: "&", "and", "+", "und", "et", "y" for one another ("Procter and Gamble Co.").
- `transliteration`: accented letters as people type them ("Müller" -> "Mueller").
- `word order`: "Bank of Zenith" <-> "Zenith Bank", "Rock University" -> "University of Rock".
- `spacing`: "Coca-Cola" -> "CocaCola", "Coca Cola"; "L'Oréal" -> "L Oréal"; "Blue Point
  Analytics" -> "BluePoint Analytics"; "Bluepoint" -> "Blue Point", "Blue-Point".
- `brand`: the brand alone ("Zentrix Analytics GmbH" -> "Zentrix").
- `two typos`: a typo (as `company typo`) in each of two words ("Zentirx Analytisc GmbH").
- `boundary typo`: a slip at a word's edge: a space typed as a letter beside the space bar or
  the letter before it again ("Kobe Steel" -> "Kobensteel", "KobeeSteel"), a word's first
  letter dropped ("obe Steel") or typed as a neighbouring key ("Kobe Dteel").
- `spaced legal form`: the trailing legal form spaced or punctuated otherwise ("N. V.", "NV.",
  "N.V", "A.G."), a comma before or after it ("Philips, N.V.", "Philips N.V.,"), or glued to
  the last word ("PHILIPS ELECTRONICSN.V.").
- `place tail`: a real place after the name, the company's own city: ", Eindhoven", ",
  Eindhoven, NL", " (Eindhoven)", " - Eindhoven office", " te Eindhoven" (Netherlands, Belgium).
- `long-word typos`: one or two typos inside one long (8+ letters) or generic word
  ("Koniklijke", "Electonics", "Koninkljike").
- `former name`: a former name the data keeps among the company's aliases (an earlier brand,
  the name before a merger: `former_names`; the generator gives 3% of companies one).

The benchmark rejects a variant that fits another company as well, by the normal forms
below (`query_keys`, `company_keys`: core words without legal forms, spaced, dotted or glued,
generic words and links; sorted; run together; initials; brand), independent of the
matcher's; a typo by edit distance to the names of the same initials (to those that begin or
end alike for a boundary typo), a place tail by the name before it and the name with the
place as a word of it.

Names go as first + last name, or one time in four as a full name (with the middle name half
the time). Websites go as URL variants: scheme or none, `www.` or another subdomain, a path,
a query string, a trailing slash, upper case. Each known company gets one query of a kind:
`name`, `website`, `typo`, `legal suffix`, `case/accent`, `alias`, as above, or one of the
company-name variants.

Absent records, round robin over their kinds: a made-up person (a first name and a last name
of two different sampled contacts) at an existing company, given with its name, its website,
or as an e-mail at its domain; a made-up company (two distinctive words of two different
sampled company names, a legal suffix half the time, a domain made of the words) by name or
by website; a made-up person at a made-up company; an e-mail at a made-up domain.
"""

from __future__ import annotations

import csv
import json
import random
import re
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from server import places
from server.matching import INPUT_NAMES, Query
from server.normalize import fold

Fields = dict[str, str]


@dataclass(frozen=True)
class Company:
    """A company as the benchmark needs it."""

    guid: str
    name: str
    aka: tuple[str, ...]
    domain: str
    country: str = ""
    city: str = ""


@dataclass(frozen=True)
class Contact:
    """A contact at one of its employers: its current one, or its former one ("No Longer")."""

    guid: str
    first: str
    middle: str
    last: str
    email: str
    status: str
    company: Company
    job_title: str = ""


@dataclass(frozen=True)
class BenchQuery:
    """One enrich input and the answer it should get.

    `contact_guid` is "" for a company query; both are "" for a made-up company. `absent`
    marks records that are not in the database (any contact returned for them is false).
    `variant` names the company-name variant kind its company name is, if any.
    """

    kind: str
    query: Query
    company_guid: str
    contact_guid: str
    absent: bool = False
    former: bool = False
    variant: str = ""  # the company-name variant kind (VARIANT_KINDS) the query uses, if any

    def body(self) -> dict[str, str]:
        """The query as a `/v7/enrich` JSON body (contract §4.1 names)."""
        return {INPUT_NAMES[name]: value for name, value in vars(self.query).items() if value}


# --- noise ---------------------------------------------------------------------------------

_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_NEAR = {
    letter: "".join(
        row[j]
        for k, row in enumerate(_ROWS)
        if abs(k - r) <= 1
        for j in range(max(i - 1, 0), min(i + 2, len(row)))
        if row[j] != letter
    )
    for r, keys in enumerate(_ROWS)
    for i, letter in enumerate(keys)
}
TYPO_EDITS = ("substitution", "deletion", "insertion", "transposition")


def _near_key(rng: random.Random, char: str) -> str:
    """A key next to `char` on a QWERTY keyboard, in its case."""
    near = rng.choice(_NEAR.get(char.lower(), "aeiou"))
    return near.upper() if char.isupper() else near


def misspell(rng: random.Random, word: str, edit: str) -> str:
    """`word` with one edit of kind `edit` (TYPO_EDITS), never touching its first letter."""
    letters = [i for i, c in enumerate(word) if c.isalpha() and i > 0]
    if edit == "transposition":
        pairs = [i for i in letters if i + 1 < len(word) and word[i + 1].isalpha()]
        pairs = [i for i in pairs if word[i].lower() != word[i + 1].lower()]
        if pairs:
            i = rng.choice(pairs)
            return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        edit = "substitution"
    i = rng.choice(letters)
    if edit == "substitution":
        return word[:i] + _near_key(rng, word[i]) + word[i + 1 :]
    if edit == "deletion":
        return word[:i] + word[i + 1 :]
    return word[:i] + _near_key(rng, word[i - 1]) + word[i:]


def typo(rng: random.Random, text: str, min_letters: int = 4) -> str | None:
    """`text` with 1 edit (2 in a word of 7+ letters, one time in three) in one of its words
    of `min_letters` or more letters; None when it has no such word."""
    words = text.split(" ")
    long_enough = [i for i, w in enumerate(words) if sum(c.isalpha() for c in w) >= min_letters]
    if not long_enough:
        return None
    for _ in range(20):
        i = rng.choice(long_enough)
        edits = 2 if len(words[i]) >= 7 and rng.random() < 1 / 3 else 1
        word = words[i]
        for _ in range(edits):
            word = misspell(rng, word, rng.choice(TYPO_EDITS))
        if fold(word).replace(" ", "") != fold(words[i]).replace(" ", ""):
            return " ".join([*words[:i], word, *words[i + 1 :]])
    return None  # pragma: no cover - 20 edits that all changed nothing


def strip_accents(text: str) -> str:
    """`text` without combining accents (Müller -> Muller); other letters kept."""
    decomposed = unicodedata.normalize("NFKD", text)
    return unicodedata.normalize(
        "NFC", "".join(c for c in decomposed if not unicodedata.combining(c))
    )


def case_change(rng: random.Random, texts: Sequence[str]) -> tuple[str, list[str]]:
    """One change applied to all `texts`: "upper", "lower" or, when any has accents,
    "strip accents"; returns its name and the changed texts."""
    changes = ["upper", "lower"]
    if any(strip_accents(t) != t for t in texts):
        changes.append("strip accents")
    change = rng.choice(changes)
    apply: Callable[[str], str] = {
        "upper": str.upper,
        "lower": str.lower,
        "strip accents": strip_accents,
    }[change]
    return change, [apply(t) for t in texts]


# Fallback nickname table (formal first name, folded -> short forms), used when server.names
# has none.
NICKNAMES: dict[str, tuple[str, ...]] = {
    "robert": ("Bob", "Rob", "Bobby"),
    "william": ("Bill", "Will", "Billy"),
    "elizabeth": ("Liz", "Beth", "Betty"),
    "richard": ("Rick", "Dick", "Rich"),
    "james": ("Jim", "Jimmy"),
    "john": ("Jack", "Johnny"),
    "michael": ("Mike",),
    "thomas": ("Tom", "Tommy"),
    "christopher": ("Chris",),
    "daniel": ("Dan", "Danny"),
    "matthew": ("Matt",),
    "anthony": ("Tony",),
    "joseph": ("Joe",),
    "david": ("Dave",),
    "charles": ("Charlie", "Chuck"),
    "edward": ("Ed", "Ted"),
    "margaret": ("Maggie", "Peggy"),
    "katherine": ("Kate", "Kathy"),
    "catherine": ("Cathy", "Kate"),
    "jennifer": ("Jen", "Jenny"),
    "patricia": ("Pat", "Patty"),
    "susan": ("Sue",),
    "deborah": ("Deb",),
    "rebecca": ("Becky",),
    "alexander": ("Alex",),
    "andrew": ("Andy", "Drew"),
    "benjamin": ("Ben",),
    "jonathan": ("Jon",),
    "nicholas": ("Nick",),
    "samuel": ("Sam",),
    "steven": ("Steve",),
    "stephen": ("Steve",),
    "timothy": ("Tim",),
    "gregory": ("Greg",),
    "jeffrey": ("Jeff",),
    "kenneth": ("Ken",),
    "ronald": ("Ron",),
    "donald": ("Don",),
    "raymond": ("Ray",),
    "lawrence": ("Larry",),
    "gerald": ("Jerry",),
    "peter": ("Pete",),
    "frederick": ("Fred",),
    "victoria": ("Vicky",),
    "jessica": ("Jess",),
    "samantha": ("Sam",),
    "alexandra": ("Alex",),
    "abigail": ("Abby",),
    "kimberly": ("Kim",),
    "pamela": ("Pam",),
    "cynthia": ("Cindy",),
    "barbara": ("Barb",),
    "theodore": ("Ted", "Theo"),
    "zachary": ("Zach",),
    "joshua": ("Josh",),
    "nathaniel": ("Nate",),
    "nathan": ("Nate",),
    "jacob": ("Jake",),
    "francisco": ("Paco",),
    "jose": ("Pepe",),
    "giuseppe": ("Beppe",),
    "johannes": ("Hans",),
    "alejandro": ("Alex",),
}


@cache
def nickname_table() -> dict[str, tuple[str, ...]]:
    """Formal first name (folded) -> other forms: from server.names' table (one group per
    line, the formal name first) when there is one, else NICKNAMES."""
    try:
        from server import names
    except ImportError:
        return NICKNAMES
    path = getattr(names, "NICKNAMES_CSV", None)
    if not isinstance(path, Path) or not path.exists():
        return NICKNAMES
    table: dict[str, tuple[str, ...]] = {}
    with path.open(encoding="utf-8", newline="") as file:
        for formal, *forms in csv.reader(line for line in file if not line.startswith("#")):
            table[fold(formal)] = table.get(fold(formal), ()) + tuple(f.title() for f in forms)
    return table


def nickname(rng: random.Random, first: str, table: dict[str, tuple[str, ...]]) -> str | None:
    """A short form of `first` from `table`, or None when it has none."""
    forms = [f for f in table.get(fold(first), ()) if fold(f) != fold(first)]
    return rng.choice(forms) if forms else None


# Legal suffixes of the dataset's countries, longest first so "Pty Ltd" wins over "Ltd".
LEGAL_SUFFIXES = tuple(
    sorted(
        (
            "A/S|AB|AG|AS|ASA|ApS|B.V.|Co.|Corp.|Corporation|G.K.|GmbH|Inc.|Incorporated|K.K.|KG|"
            "L.P.|LLC|LLP|Limited|Ltd|Ltd.|Ltda.|N.V.|PLC|SA|SARL|SAS|SCP|SE|S.A.|S.C.|S.L.|"
            "S.L.P.|S.p.A.|S.r.l.|plc|sp.k.|Co., Ltd.|GmbH & Co. KG|Partnerschaft mbB|"
            "Private Limited|Pte Ltd|Pte. Ltd.|Pty Ltd|Pty. Ltd.|Pvt. Ltd.|S. de R.L. de C.V.|"
            "S.A. de C.V.|sp. z o.o.|Advokatbyrå AB|Inc|Corp|L.L.C.|LTD|GMBH|Gmbh|BV|Pvt Ltd"
        ).split("|"),
        key=len,
        reverse=True,
    )
)
# What a suffix gets changed to: its long or short form, or a common other one.
SUFFIX_CHANGES = {
    "Inc.": ("Incorporated", "Inc", "LLC", "Corp."),
    "Ltd": ("Limited", "Ltd.", "LTD"),
    "Ltd.": ("Limited", "Ltd"),
    "Limited": ("Ltd", "Ltd."),
    "Corp.": ("Corporation", "Inc.", "Corp"),
    "Corporation": ("Corp.", "Inc."),
    "GmbH": ("AG", "GMBH", "Gmbh"),
    "AG": ("GmbH",),
    "LLC": ("L.L.C.", "Inc."),
    "PLC": ("plc", "Limited"),
    "S.A.": ("SA",),
    "SA": ("S.A.",),
    "B.V.": ("BV",),
    "Pty Ltd": ("Pty. Ltd.", "Ltd"),
    "Pvt. Ltd.": ("Private Limited", "Pvt Ltd"),
}
ADDED_SUFFIXES = ("Inc.", "LLC", "Ltd", "GmbH", "Corp.", "S.A.", "Limited")


def split_suffix(name: str) -> tuple[str, str]:
    """(base, legal suffix) of a company name; the suffix "" when it has none."""
    for suffix in LEGAL_SUFFIXES:
        for sep in (", ", " "):
            if name.endswith(sep + suffix) and len(name) > len(sep + suffix):
                return name[: -len(sep + suffix)], suffix
    return name, ""


def suffix_variant(rng: random.Random, name: str) -> tuple[str, str]:
    """("drop"/"change"/"add", the name with its legal suffix dropped, changed or added)."""
    base, suffix = split_suffix(name)
    if not suffix:
        return "add", f"{base} {rng.choice(ADDED_SUFFIXES)}"
    if rng.random() < 0.5:
        return "drop", base
    other = SUFFIX_CHANGES.get(suffix) or tuple(s for s in ADDED_SUFFIXES if s != suffix)
    return "change", f"{base} {rng.choice(other)}"


# --- company-name variants --------------------------------------------------------------------


@dataclass(frozen=True)
class LegalForm:
    """A legal form: its abbreviations and written-out forms (the usual one first), the
    countries that use it, and whether they also write it before the name (AB Volvo)."""

    short: tuple[str, ...]
    full: tuple[str, ...]
    countries: tuple[str, ...]
    leading: bool = False


_DE, _NL = ("Germany", "Austria", "Switzerland"), ("The Netherlands", "Netherlands", "Belgium")
LEGAL_FORMS: tuple[LegalForm, ...] = (
    LegalForm(("GmbH & Co. KG", "GmbH & Co KG"), (), _DE),
    LegalForm(("AG",), ("Aktiengesellschaft",), _DE),
    LegalForm(("GmbH",), ("Gesellschaft mit beschränkter Haftung",), _DE),
    LegalForm(("KG",), ("Kommanditgesellschaft",), _DE),
    LegalForm(("e.V.",), ("eingetragener Verein",), _DE),
    LegalForm(("SE",), ("Societas Europaea",), (*_DE, "France", "Luxembourg")),
    LegalForm(("S.A.", "SA"), ("Société Anonyme",), ("France", "Belgium", "Luxembourg")),
    LegalForm(("S.A.", "SA"), ("Sociedad Anónima",), ("Spain", "Argentina", "Chile", "Peru")),
    LegalForm(("S.A.", "SA"), ("Sociedade Anônima",), ("Brazil", "Portugal")),
    LegalForm(("S.A. de C.V.",), ("Sociedad Anónima de Capital Variable",), ("Mexico",)),
    LegalForm(("S. de R.L. de C.V.",),
              ("Sociedad de Responsabilidad Limitada de Capital Variable",), ("Mexico",)),
    LegalForm(("SAS",), ("Société par actions simplifiée",), ("France",)),
    LegalForm(("SARL",), ("Société à responsabilité limitée",), ("France", "Luxembourg")),
    LegalForm(("S.L.",), ("Sociedad Limitada",), ("Spain",)),
    LegalForm(("Ltda.",), ("Limitada",), ("Brazil", "Portugal", "Colombia")),
    LegalForm(("N.V.",), ("Naamloze Vennootschap",), _NL, leading=True),
    LegalForm(("B.V.",), ("Besloten Vennootschap",), _NL),
    LegalForm(("S.p.A.",), ("Società per Azioni",), ("Italy",)),
    LegalForm(("S.r.l.",), ("Società a responsabilità limitata",), ("Italy",)),
    LegalForm(("K.K.",), ("Kabushiki Kaisha",), ("Japan",), leading=True),
    LegalForm(("G.K.",), ("Godo Kaisha",), ("Japan",)),
    LegalForm(("Co., Ltd.",), ("Company Limited",), ("Japan", "China", "South Korea", "Thailand")),
    LegalForm(("AB",), ("Aktiebolag",), ("Sweden", "Finland"), leading=True),
    LegalForm(("Oyj",), ("Julkinen osakeyhtiö",), ("Finland",)),
    LegalForm(("Oy",), ("Osakeyhtiö",), ("Finland",)),
    LegalForm(("A/S",), ("Aktieselskab",), ("Denmark",)),
    LegalForm(("ApS",), ("Anpartsselskab",), ("Denmark",)),
    LegalForm(("AS",), ("Aksjeselskap",), ("Norway",)),
    LegalForm(("ASA",), ("Allmennaksjeselskap",), ("Norway",)),
    LegalForm(("Sp. z o.o.",), ("spółka z ograniczoną odpowiedzialnością",), ("Poland",)),
    LegalForm(("s.r.o.",), ("společnost s ručením omezeným",), ("Czech Republic",)),
    LegalForm(("Kft.",), ("Korlátolt felelősségű társaság",), ("Hungary",)),
    LegalForm(("A.Ş.",), ("Anonim Şirketi",), ("Turkey",)),
    LegalForm(("PT",), ("Perseroan Terbatas",), ("Indonesia",), leading=True),
    LegalForm(("Sdn. Bhd.",), ("Sendirian Berhad",), ("Malaysia",)),
    LegalForm(("Pty Ltd", "Pty. Ltd."), ("Proprietary Limited",), ("Australia", "South Africa")),
    LegalForm(("Pvt. Ltd.", "Pvt Ltd"), ("Private Limited",), ("India",)),
    LegalForm(("Pte. Ltd.", "Pte Ltd"), ("Private Limited",), ("Singapore",)),
    LegalForm(("plc", "PLC"), ("Public Limited Company",), ("United Kingdom", "Ireland")),
    LegalForm(("Ltd", "Ltd."), ("Limited",), ("United Kingdom", "Ireland", "Canada")),
    LegalForm(("LLP",), ("Limited Liability Partnership",), ("United Kingdom", "United States")),
    LegalForm(("L.P.",), ("Limited Partnership",), ("United States",)),
    LegalForm(("Inc.", "Inc"), ("Incorporated",), ("United States", "Canada")),
    LegalForm(("LLC", "L.L.C."), ("Limited Liability Company",), ("United States",)),
    LegalForm(("Corp.", "Corp"), ("Corporation",), ("United States", "Canada")),
    LegalForm(("Co.",), ("Company",), ("United States",)),
)  # fmt: skip
# Words that say little about which company is meant, dropped or added by "generic words".
GENERIC_WORDS = frozenset(
    "group holding holdings international corporation company technologies systems "
    "industries royal koninklijke the technology system industry groups groupe gruppe grupo "
    "gruppo intl corp co companies".split()
)
CONJUNCTIONS = ("&", "and", "+", "und", "et", "y")
# Words that are not part of an acronym or a name's core ("Bank of X", "X and Y").
_LINKS = frozenset("of and und et y the for de du des der die das la le el di da".split())
_ALWAYS_LINKS = frozenset(("of", "and", "the", "for"))
# "<Type> of X" <-> "X <Type>"
INSTITUTION_WORDS = frozenset("bank university college institute school academy museum".split())
# Letters as people write them without their accents (Müller -> Mueller, Ørsted -> Oersted).
TRANSLITERATIONS = {
    "ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss", "ø": "oe", "å": "aa", "æ": "ae", "œ": "oe",
    "é": "e", "è": "e", "ê": "e", "ë": "e", "á": "a", "à": "a", "â": "a", "ã": "a", "í": "i",
    "ì": "i", "î": "i", "ï": "i", "ó": "o", "ò": "o", "ô": "o", "õ": "o", "ő": "oe", "ú": "u",
    "ù": "u", "û": "u", "ű": "ue", "ç": "c", "ñ": "n", "ł": "l", "ś": "s", "ź": "z", "ż": "z",
    "ć": "c", "ń": "n", "ą": "a", "ę": "e", "č": "c", "š": "s", "ž": "z", "ř": "r", "ý": "y",
    "ş": "s", "ğ": "g", "ı": "i", "đ": "d",
}  # fmt: skip
_ROYAL_COUNTRIES = ("The Netherlands", "Netherlands", "Belgium")


@cache
def dataset_words() -> dict[str, object]:
    """The dataset generator's word lists (server/data/dataset_words.json)."""
    import server

    path = Path(server.__file__).parent / "data" / "dataset_words.json"
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def industry_nouns() -> frozenset[tuple[str, ...]]:
    """Folded word tuples of the generator's industry nouns ("Analytics", "Savings Bank")."""
    words = dataset_words()
    phrases: list[str] = [n for group in words["nouns"].values() for n in group]  # type: ignore[union-attr]
    for country in words["local_nouns"].values():  # type: ignore[union-attr]
        phrases += [n for group in country.values() for n in group]
    phrases += words["division_words"]  # type: ignore[operator]
    return frozenset(tuple(fold(p).split()) for p in phrases if fold(p))


@cache
def brand_parts() -> tuple[frozenset[str], frozenset[str]]:
    """Folded brand roots and the tails a compound brand may end with (roots too)."""
    words = dataset_words()
    roots = frozenset(fold(r) for r in words["brand_roots"])  # type: ignore[union-attr]
    tails = frozenset(fold(t) for t in words["brand_tails"]) | roots  # type: ignore[union-attr]
    return roots, tails


def _folded_forms() -> dict[str, list[LegalForm]]:
    forms: dict[str, list[LegalForm]] = defaultdict(list)
    for form in LEGAL_FORMS:
        for spelling in (*form.short, *form.full):
            # "A.G." (fold: "a g") for a trailing "AG"; not for leading forms: "A B C Logistics"
            short = spelling.isupper() and len(spelling) <= 3 and not form.leading
            dotted = ".".join(spelling) if short else ""
            for text in {
                spelling,
                spelling.replace(".", ""),
                transliterate(spelling) or "",
                dotted,
            }:
                if fold(text) and form not in forms[fold(text)]:
                    forms[fold(text)].append(form)
    for suffix in LEGAL_SUFFIXES:
        forms.setdefault(fold(suffix), [])
    return dict(forms)


@cache
def folded_legal_forms() -> dict[str, list[LegalForm]]:
    """Folded spelling (dots or none) -> the legal forms spelled so; LEGAL_SUFFIXES too."""
    return _folded_forms()


@dataclass(frozen=True)
class NameParts:
    """A company name as its leading legal form, its base and its trailing legal form."""

    lead: str
    base: str
    trail: str
    separator: str = " "  # before the trailing form (", " in "Acme, Inc.")

    def join(self, base: str | None = None) -> str:
        text = (base if base is not None else self.base).strip()
        if self.lead:
            text = f"{self.lead} {text}"
        return f"{text}{self.separator}{self.trail}" if self.trail else text


def name_parts(name: str) -> NameParts:
    """The longest trailing legal form, then a leading one of a form written leading."""
    forms = folded_legal_forms()
    words = name.split()
    lead = trail = ""
    separator = " "
    for size in range(min(6, len(words) - 1), 0, -1):
        if fold(" ".join(words[-size:])) in forms:
            trail = " ".join(words[-size:])
            words = words[:-size]
            if words[-1].endswith(","):
                words[-1], separator = words[-1][:-1], ", "
            break
    if not trail and words:
        words[-1], trail = _unglued(words[-1])
    for size in range(min(3, len(words) - 1), 0, -1):
        found = forms.get(fold(" ".join(words[:size])), [])
        if any(form.leading for form in found):
            lead, words = " ".join(words[:size]), words[size:]
            break
    return NameParts(lead, " ".join(words), trail, separator)


@cache
def _dotted_forms() -> tuple[str, ...]:
    """Legal forms written with dots and no space ("N.V.", "Inc."), longest first."""
    spellings = {*LEGAL_SUFFIXES, *(s for form in LEGAL_FORMS for s in form.short)}
    dotted = {s for s in spellings if "." in s and " " not in s and len(s) >= 3}
    return tuple(sorted(dotted | {s.upper() for s in dotted}, key=len, reverse=True))


def _unglued(word: str) -> tuple[str, str]:
    """(word, legal form) of a word with a dotted legal form glued to it ("ELECTRONICSN.V."
    -> ("ELECTRONICS", "N.V.")); (word, "") for any other word."""
    for form in _dotted_forms():
        cut = len(word) - len(form)
        if cut > 1 and word.endswith(form) and word[cut - 1].isalpha():
            return word[:cut], word[cut:]
    return word, ""


def _bare(word: str) -> str:
    return fold(word).replace(" ", "")


def _link(word: str) -> bool:
    """ "of", "and", "&"..., and "de", "der", "la"... written in lower case."""
    bare = _bare(word)
    return word in ("&", "+") or bare in _ALWAYS_LINKS or (bare in _LINKS and word.islower())


def _distinctive(word: str) -> bool:
    return bool(_bare(word)) and _bare(word) not in GENERIC_WORDS and not _link(word)


def generic_variant(rng: random.Random, co: Company) -> str | None:
    """A generic word dropped ("Koninklijke Philips N.V." -> "Philips N.V."; never the last
    distinctive one) or added ("The X", "X Group", "X Holding", "X International"; "Royal X"
    in the Netherlands, Belgium and the UK); Koninklijke <-> Royal."""
    parts = name_parts(co.name)
    words = parts.base.split()
    changes: list[str] = []
    for i, word in enumerate(words):
        bare = _bare(word)
        if bare in GENERIC_WORDS and (bare != "the" or i == 0):
            rest = words[:i] + words[i + 1 :]
            if any(_distinctive(w) for w in rest):
                changes.append(parts.join(" ".join(rest)))
        if bare in ("koninklijke", "royal"):
            other = "Royal" if bare == "koninklijke" else "Koninklijke"
            changes.append(parts.join(" ".join([*words[:i], other, *words[i + 1 :]])))
    if not any(_bare(w) in GENERIC_WORDS for w in words):
        if not parts.lead:
            changes.append(f"The {co.name}")
        changes += [parts.join(f"{parts.base} {w}") for w in ("Group", "Holding", "International")]
        if co.country in _ROYAL_COUNTRIES and "&" not in words:
            changes.append(parts.join(f"Royal {parts.base}"))
    return rng.choice(changes) if changes else None


def _significant(base: str) -> list[str]:
    return [w for w in base.split() if _bare(w) and not _link(w)]


def initials(base: str) -> str:
    """The upper-case initials of a name's significant words ("" for fewer than 3)."""
    words = _significant(base)
    return "".join(_bare(w)[0] for w in words).upper() if len(words) >= 3 else ""


def acronym_variant(rng: random.Random, co: Company) -> str | None:
    """The initials of the name's significant words when there are 3+ ("International
    Business Machines Corporation" -> "IBM", one time in three "I.B.M."); a name that starts
    with initials written dotted or spaced ("ABC Logistics" -> "A.B.C. Logistics",
    "A B C Logistics"), or undotted ("A.B.C. Logistics" -> "ABC Logistics")."""
    parts = name_parts(co.name)
    words = parts.base.split()
    head = words[0] if words else ""
    letters = head.replace(".", "")
    if len(words) >= 2 and 2 <= len(letters) <= 4 and letters.isalpha() and letters.isupper():
        forms = {letters, ".".join(letters) + ".", " ".join(letters)} - {head}
        return parts.join(" ".join([rng.choice(sorted(forms)), *words[1:]]))
    short = initials(parts.base)
    if not short:
        return None
    return ".".join(short) + "." if rng.random() < 1 / 3 else short


def _spellings(form: LegalForm, current: str) -> list[str]:
    options = {*form.short, *form.full}
    options |= {s.replace(".", "") for s in form.short} | {s.upper() for s in form.short}
    options |= {f.lower() for f in form.full}
    return sorted(o for o in options if o != current)


def legal_form_variant(rng: random.Random, co: Company) -> str | None:
    """The name's legal form (LEGAL_FORMS) written another way: abbreviated or in full
    ("Deutsche Telekom AG" -> "Deutsche Telekom Aktiengesellschaft", "Philips Naamloze
    Vennootschap" -> "Philips N.V."), without dots or upper-cased ("Philips NV"), or moved
    where the country writes it leading ("Volvo AB" -> "AB Volvo", "K.K. Sony" -> "Sony
    K.K."); None for a name without one."""
    parts = name_parts(co.name)
    current = parts.lead or parts.trail
    found = folded_legal_forms().get(fold(current), []) if current else []
    if not found:
        return None
    local = [f for f in found if co.country in f.countries]
    form = (local or found)[0]
    spelling = rng.choice(_spellings(form, current) + ([current] if form.leading else []))
    moved = form.leading and (rng.random() < 0.5 or spelling == current)
    if moved == bool(parts.lead):
        return f"{parts.base} {spelling}"
    return f"{spelling} {parts.base}"


_CONJUNCTION_BY_COUNTRY = {
    "Germany": "und", "Austria": "und", "Switzerland": "und", "France": "et", "Belgium": "et",
    "Luxembourg": "et", "Spain": "y", "Mexico": "y", "Argentina": "y", "Colombia": "y",
}  # fmt: skip


def conjunction_variant(rng: random.Random, co: Company) -> str | None:
    """ "&", "and", "+" and the country's own word ("und", "et", "y") for one another
    ("Procter & Gamble" -> "Procter and Gamble", "Müller und Söhne" -> "Müller & Söhne");
    None for a name without one between two words."""
    words = co.name.split(" ")
    found = [i for i in range(1, len(words) - 1) if words[i].casefold() in CONJUNCTIONS]
    if not found:
        return None
    i = found[0]
    if words[i].casefold() in ("y", "et") and not words[i + 1][:1].isupper():
        return None
    others = ["&", "and", "+", _CONJUNCTION_BY_COUNTRY.get(co.country, "and")]
    words[i] = rng.choice(sorted({o for o in others if o != words[i].casefold()}))
    return " ".join(words)


def transliterate(name: str) -> str | None:
    """`name` with its accented letters written as people type them without (Müller ->
    Mueller, Ørsted -> Oersted, Société -> Societe); None when it has none."""
    out = []
    for i, char in enumerate(name):
        plain = TRANSLITERATIONS.get(char.lower())
        if plain is None:
            out.append(char)
        elif char.islower():
            out.append(plain)
        else:
            upper_next = i + 1 < len(name) and name[i + 1].isupper()
            out.append(plain.upper() if upper_next else plain.capitalize())
    text = "".join(out)
    return text if text != name else None


def transliteration_variant(rng: random.Random, co: Company) -> str | None:
    """`transliterate` of the name ("Müller Präzisionstechnik GmbH" -> "Mueller
    Praezisionstechnik GmbH"); None for a name in plain ASCII."""
    return transliterate(co.name)


def _institution(words: list[str]) -> int:
    """Where the trailing institution noun of `words` starts ("Savings Bank" in "Zenith
    Savings Bank"), or -1."""
    if not words or _bare(words[-1]) not in INSTITUTION_WORDS:
        return -1
    nouns = industry_nouns()
    for size in range(min(3, len(words) - 1), 1, -1):
        if tuple(fold(" ".join(words[-size:])).split()) in nouns:
            return len(words) - size
    return len(words) - 1


def word_order_variant(rng: random.Random, co: Company) -> str | None:
    """ "Bank of X" <-> "X Bank", "University of X" <-> "X University" (and other
    institutions: INSTITUTION_WORDS; "Zenith Savings Bank" -> "Savings Bank of Zenith"),
    the legal form kept; None for names of another shape."""
    parts = name_parts(co.name)
    words = parts.base.split()
    if len(words) >= 3 and words[1] == "of" and _bare(words[0]) in INSTITUTION_WORDS:
        if "of" in words[2:]:
            return None
        return parts.join(" ".join([*words[2:], words[0]]))
    start = _institution(words)
    if start < 1 or "of" in words or not all(_distinctive(w) for w in words[:start]):
        return None
    return parts.join(" ".join([*words[start:], "of", *words[:start]]))


def _split_compound(word: str) -> tuple[str, str] | None:
    roots, tails = brand_parts()
    low = word.lower()
    for cut in range(2, len(word) - 2):
        if low[:cut] in roots and low[cut:] in tails and word.isalpha():
            return word[:cut], word[cut:]
    return None


def spacing_variant(rng: random.Random, co: Company) -> str | None:
    """Punctuation and spaces as people type them: a hyphen or apostrophe dropped or made a
    space ("Coca-Cola" -> "CocaCola", "Coca Cola"; "L'Oréal" -> "L Oréal"), two brand words
    joined ("Blue Point Analytics" -> "BluePoint Analytics"), a compound brand split ("Bluepoint"
    -> "Blue Point", "Blue-Point"); None for a name with none of these."""
    roots, tails = brand_parts()
    parts = name_parts(co.name)
    words = parts.base.split()
    changes: list[list[str]] = []
    for i, word in enumerate(words):
        for mark in ("-", "'", "’"):
            if mark in word.strip(mark):
                changes += [[*words[:i], word.replace(mark, join), *words[i + 1 :]]
                            for join in ("", " ")]  # fmt: skip
        split = _split_compound(word)
        if split:
            changes += [[*words[:i], f"{split[0]}{join}{split[1].capitalize()}",
                         *words[i + 1 :]] for join in (" ", "-")]  # fmt: skip
        if i + 1 < len(words) and word.lower() in roots and words[i + 1].lower() in tails:
            changes.append([*words[:i], word + words[i + 1], *words[i + 2 :]])
    return parts.join(" ".join(rng.choice(changes))) if changes else None


def _trailing_noun(words: list[str]) -> int:
    """How many words the industry noun that ends `words` has (0: none), the first kept."""
    nouns = industry_nouns()
    for size in range(min(3, len(words) - 1), 0, -1):
        if tuple(fold(" ".join(words[-size:])).split()) in nouns:
            return size
    return 0


def brand(name: str) -> str:
    """The name's distinctive leading word(s) without its trailing industry nouns, generic
    words and legal forms ("Zentrix" for "Zentrix Analytics GmbH"); "" when that leaves
    nothing or the whole name."""
    words = name_parts(name).base.split()
    end = len(words)
    while end > 1:
        size = _trailing_noun(words[:end])
        if not size and _bare(words[end - 1]) in GENERIC_WORDS:
            size = 1
        if not size:
            break
        end -= size
    head = words[:end]
    if (
        _institution(words) >= 0
        or end == len(words)
        or not all(_distinctive(w) for w in head)
        or "of" in words[:end]
    ):
        return ""
    return " ".join(head)


def brand_variant(rng: random.Random, co: Company) -> str | None:
    """The brand alone (`brand`: "Zentrix Analytics GmbH" -> "Zentrix"); None for names
    that are not a brand and an industry noun."""
    return brand(co.name) or None


def two_typos_variant(rng: random.Random, co: Company) -> str | None:
    """A typo (`typo`) in each of two different words of 4+ letters outside the legal form
    ("Zentrix Analytics GmbH" -> "Zentirx Analytisc GmbH"); None for fewer such words."""
    parts = name_parts(co.name)
    words = parts.base.split(" ")
    long_enough = [i for i, w in enumerate(words) if sum(c.isalpha() for c in w) >= 4]
    if len(long_enough) < 2:
        return None
    for i in rng.sample(long_enough, 2):
        wrong = typo(rng, words[i])
        if wrong is None:  # pragma: no cover - typo changes a 4+ letter word
            return None
        words[i] = wrong
    return parts.join(" ".join(words))


def _letters(word: str) -> int:
    return sum(c.isalpha() for c in word)


def _changed(name: str, other: str) -> bool:
    """The two names differ in their letters, not only in spaces and punctuation."""
    return fold(name).replace(" ", "") != fold(other).replace(" ", "")


# Keys a thumb hits instead of the space bar; the letter before the space typed twice also.
SPACE_BAR_KEYS = "cvbnm"


def _space_typos(rng: random.Random, words: list[str]) -> list[list[str]]:
    """Each space between two words typed as a letter ("Kobe Steel" -> "Kobensteel",
    "KobeeSteel"): a key beside the space bar or the letter before it again."""
    found = []
    for i in range(len(words) - 1):
        left, right = words[i], words[i + 1]
        if not (left[-1:].isalpha() and right[:1].isalpha()):
            continue
        stray = rng.choice(SPACE_BAR_KEYS + left[-1].lower())
        right = right if rng.random() < 0.5 else right[:1].lower() + right[1:]
        found.append([*words[:i], left + stray + right, *words[i + 2 :]])
    return found


def _first_letter_typos(rng: random.Random, words: list[str], drop: bool) -> list[list[str]]:
    """Each 4+ letter word with its first letter dropped (`drop`) or typed as a neighbouring
    key ("Kobe Steel" -> "obe Steel", "Kobe Dteel")."""
    found = []
    for i, word in enumerate(words):
        if _letters(word) < 4 or not word[:1].isalpha() or _link(word):
            continue
        wrong = word[1:] if drop else _near_key(rng, word[0]) + word[1:]
        found.append([*words[:i], wrong, *words[i + 1 :]])
    return found


def boundary_typo_variant(rng: random.Random, co: Company) -> str | None:
    """A slip at a word's edge, outside the legal form, one of three kinds drawn among those
    that apply: a space typed as a letter ("Kobe Steel" -> "Kobensteel", "KobeeSteel"), a
    word's first letter dropped ("obe Steel") or typed as a neighbouring key ("Kobe Dteel");
    None for a name with no such place."""
    parts = name_parts(co.name)
    words = parts.base.split(" ")
    kinds = [
        _space_typos(rng, words),
        _first_letter_typos(rng, words, drop=True),
        _first_letter_typos(rng, words, drop=False),
    ]
    kinds = [[c for c in kind if _changed(" ".join(c), parts.base)] for kind in kinds]
    kinds = [kind for kind in kinds if kind]
    return parts.join(" ".join(rng.choice(rng.choice(kinds)))) if kinds else None


def _dotted_spellings(trail: str) -> set[str]:
    """A legal form's dots spaced, kept only at the end or dropped at the end ("N.V." ->
    "N. V.", "NV.", "N.V"); an undotted 2-3 letter form dotted ("AG" -> "A.G.", "A. G.")."""
    letters = trail.replace(".", "")
    if " " in trail or not letters.isalpha():
        return set()
    if trail.count(".") >= 2 and trail.endswith("."):
        return {trail.replace(".", ". ").strip(), letters + ".", trail[:-1]}
    if "." not in trail and trail.isupper() and 2 <= len(trail) <= 3:
        return {".".join(trail) + ".", ". ".join(trail) + "."}
    return set()


def spaced_legal_form_variant(rng: random.Random, co: Company) -> str | None:
    """The trailing legal form spaced or punctuated otherwise (two times in five, where it has
    dots or is 2-3 capitals): "Philips N. V.", "Philips NV.", "Philips N.V", "Volker A. G.";
    a comma before or after it, or moved (two in five): "Philips, N.V.", "Philips N.V.,",
    "Acme, Inc." -> "Acme Inc.,"; or, where it has dots, glued to the last word (one in five):
    "PHILIPS ELECTRONICSN.V." (upper case one time in two). None for a name without one."""
    parts = name_parts(co.name)
    if not parts.trail:
        return None
    head = f"{parts.lead} {parts.base}".strip()
    trail, separator = parts.trail, parts.separator
    spelled = [f"{head}{separator}{s}" for s in sorted(_dotted_spellings(trail))]
    commas = [f"{head}{separator}{trail},"]
    commas.append(f"{head}, {trail}" if separator == " " else f"{head} {trail},")
    glued = []
    if "." in trail and " " not in trail and _letters(trail) >= 2:
        glued = [f"{head}{trail}", f"{head}{trail}".upper()]
    kinds = [(w, k) for w, k in ((2, spelled), (2, commas), (1, glued)) if k]
    found = rng.choices([k for _, k in kinds], weights=[w for w, _ in kinds])[0]
    return rng.choice(found)


# How a place follows a name in records: its city, city and country code, in brackets, an
# office; Dutch "te" (registered at) in the Netherlands and Belgium.
PLACE_TAILS = (", {city}", ", {city}, {code}", " ({city})", " - {city} office", " - {city}")
DUTCH_PLACE_TAIL = " te {city}"


def _office_cities(co: Company) -> list[str]:
    """The company's own city, else the largest cities of its country (real places both)."""
    if co.city:
        return [co.city]
    code = places.country_code(co.country) if co.country else None
    return [p.city for p in places.largest_cities(code, 3)] if code else []


def place_tail_variant(rng: random.Random, co: Company) -> str | None:
    """A real place after the name: the company's city (or one of its country's largest)
    as ", Eindhoven", ", Eindhoven, NL", " (Eindhoven)", " - Eindhoven office", " te
    Eindhoven" (the Netherlands, Belgium); None when its city and country are unknown."""
    cities = _office_cities(co)
    if not cities:
        return None
    code = places.country_code(co.country) or ""
    tails = [t for t in PLACE_TAILS if code or "{code}" not in t]
    if co.country in _ROYAL_COUNTRIES:
        tails.append(DUTCH_PLACE_TAIL)
    tail = rng.choice(tails).format(city=rng.choice(cities), code=code)
    return co.name + tail


# PLACE_TAILS as written, the most specific first: (the name, the place) as groups.
_PLACE_TAIL_FORMS = tuple(
    re.compile(pattern)
    for pattern in (
        r"^(.+), ([^,]+), [A-Z]{2}$",
        r"^(.+) \(([^()]+)\)$",
        r"^(.+) - (.+?)(?: office)?$",
        r"^(.+) te (.+)$",
        r"^(.+), ([^,]+)$",
    )
)


def split_place_tail(name: str) -> tuple[str, str]:
    """(the name, the place) of a name with a PLACE_TAILS tail ("Acme B.V., Eindhoven, NL"
    -> ("Acme B.V.", "Eindhoven")); (name, "") for a name without one."""
    for form in _PLACE_TAIL_FORMS:
        found = form.match(name)
        if found:
            return found.group(1), found.group(2)
    return name, ""


def _long_or_generic(word: str) -> bool:
    """A word of 8+ letters, or a generic word or industry noun of 5+ letters."""
    if _letters(word) >= 8:
        return True
    generic = _bare(word) in GENERIC_WORDS or (_bare(word),) in industry_nouns()
    return generic and _letters(word) >= 5


def long_word_typos_variant(rng: random.Random, co: Company) -> str | None:
    """One or two typos (`misspell`) inside one long or generic word outside the legal form
    ("Koninklijke" -> "Koniklijke", "Electronics" -> "Electonics"; two in a word of 8+
    letters one time in two: "Koninkljike"); None for a name without such a word."""
    parts = name_parts(co.name)
    words = parts.base.split(" ")
    found = [i for i, w in enumerate(words) if _long_or_generic(w) and w[:1].isalpha()]
    if not found:
        return None
    i = rng.choice(found)
    edits = 2 if _letters(words[i]) >= 8 and rng.random() < 0.5 else 1
    for _ in range(10):
        word = words[i]
        for _ in range(edits):
            word = misspell(rng, word, rng.choice(TYPO_EDITS))
        if _changed(word, words[i]):
            return parts.join(" ".join([*words[:i], word, *words[i + 1 :]]))
    return None  # pragma: no cover - ten edits that all changed nothing


def _acronym_like(alias: str) -> bool:
    return len(alias.split()) == 1 and alias.replace(".", "").isupper()


def former_names(co: Company) -> list[str]:
    """The company's aliases that are other names, not forms of its name: a distinctive word
    (`distinctive_words`) its name does not have, and not an acronym ("Novabright
    Analytics" or "Zentrix & Halden" for "Zentrix Analytics GmbH"; not "Zentrix", "Zentrix
    Group" nor "ZAG")."""
    own = set(fold(co.name).split())
    return [
        alias
        for alias in co.aka
        if not _acronym_like(alias)
        and not set(fold(" ".join(distinctive_words(alias))).split()) <= own
    ]


def former_name_variant(rng: random.Random, co: Company) -> str | None:
    """A former name of the company (`former_names`: an earlier brand, the name before a
    merger), as the data keeps it among the aliases; None for a company without one."""
    found = former_names(co)
    return rng.choice(found) if found else None


# kind -> (weight as a company kind, name maker); a maker returns None when it does not apply.
# Kinds of rare shapes ("&", accents, "Bank of X") weigh so much that nearly every company
# of that shape gets one: drawn first, they give way to the others where they do not apply.
VARIANT_KINDS: dict[str, tuple[int, Callable[[random.Random, Company], str | None]]] = {
    "generic words": (8, generic_variant),
    "acronym": (40, acronym_variant),
    "legal form": (8, legal_form_variant),
    "and/&": (400, conjunction_variant),
    "transliteration": (800, transliteration_variant),
    "word order": (150, word_order_variant),
    "spacing": (30, spacing_variant),
    "brand": (15, brand_variant),
    "two typos": (8, two_typos_variant),
    "boundary typo": (8, boundary_typo_variant),
    "spaced legal form": (8, spaced_legal_form_variant),
    "place tail": (8, place_tail_variant),
    "long-word typos": (8, long_word_typos_variant),
    "former name": (800, former_name_variant),
}


# --- the bench's normal forms of company names (ground truth for the variants) ------------------


def core_words(name: str) -> list[str]:
    """Folded words of a name without its legal forms, generic words, "of"/"and"-like links
    and punctuation ("The Procter & Gamble Company" -> ["procter", "gamble"]); the words
    left when that would leave none."""
    words = name_parts(name).base.split()
    kept = [w for w in words if _distinctive(w)]
    return fold(" ".join(kept or words)).split() or fold(name).split()


def query_keys(name: str) -> set[str]:
    """What a typed name is looked up by: its core words ("core"), sorted ("bag": word
    order), and run together ("compact": spacing)."""
    words = core_words(name)
    return {"c:" + " ".join(words), "c:" + " ".join(sorted(words)), "c:" + "".join(words)}


def company_keys(name: str) -> set[str]:
    """Every key a variant of `name` may have: `query_keys` of the name and of its
    transliteration, its initials, its brand."""
    keys = query_keys(name)
    plain = transliterate(name)
    if plain:
        keys |= query_keys(plain)
    short = initials(name_parts(name).base)
    if short:
        keys.add("c:" + short.lower())
    label = brand(name)
    if label:
        keys |= query_keys(label)
    return keys


SUBDOMAINS = ("careers", "shop", "blog", "eu", "investors")
PATHS = ("/", "/about", "/en-us/contact", "/index.html", "/?utm_source=crm")


def url_variant(rng: random.Random, domain: str) -> str:
    """The company's website as people type it: scheme or none, `www.` or another subdomain
    or none, a path or a trailing slash or none, upper case one time in ten."""
    scheme = rng.choice(("", "http://", "https://", "https://"))
    host = rng.choice(("", "www.", "www.", f"{rng.choice(SUBDOMAINS)}."))
    path = rng.choice(("", "", *PATHS))
    url = f"{scheme}{host}{domain}{path}"
    return url.upper() if rng.random() < 0.1 else url


# --- queries for known records ----------------------------------------------------------------


def _name_fields(rng: random.Random, first: str, last: str, middle: str = "") -> Fields:
    """first + last name fields, or one time in four a full name (with the middle name half
    the time)."""
    if rng.random() < 0.75:
        return {"first_name": first, "last_name": last}
    parts = (first, middle, last) if middle and rng.random() < 0.5 else (first, last)
    return {"full_name": " ".join(p for p in parts if p)}


def _company_ref(rng: random.Random, company: Company, website_share: float = 1 / 3) -> Fields:
    """The company by name, or by website (`website_share` of the time)."""
    if rng.random() < website_share:
        return {"company_website": url_variant(rng, company.domain)}
    return {"company_name": company.name}


def _email(rng: random.Random, c: Contact) -> Fields | None:
    if not c.email:
        return None
    return {"email": c.email.upper() if rng.random() < 0.2 else c.email}


def _full_record(rng: random.Random, c: Contact) -> Fields | None:
    fields = {**_name_fields(rng, c.first, c.last, c.middle), "email": c.email}
    fields |= {
        "company_name": c.company.name,
        "company_website": url_variant(rng, c.company.domain),
    }
    return fields | {"job_title": c.job_title, "country": c.company.country}


def _name_company(rng: random.Random, c: Contact) -> Fields | None:
    return {**_name_fields(rng, c.first, c.last, c.middle), "company_name": c.company.name}


def _name_domain(rng: random.Random, c: Contact) -> Fields | None:
    website = url_variant(rng, c.company.domain)
    return {**_name_fields(rng, c.first, c.last, c.middle), "company_website": website}


def _dropped(rng: random.Random, c: Contact) -> Fields | None:
    while True:
        kept = {part: rng.random() < 0.5 for part in ("email", "name", "company", "website")}
        named = kept["name"] and (kept["company"] or kept["website"])
        if ((kept["email"] and c.email) or named) and not all(kept.values()):
            break
    fields: Fields = {}
    if kept["email"] and c.email:
        fields["email"] = c.email
    if kept["name"]:
        fields |= _name_fields(rng, c.first, c.last, c.middle)
    if kept["company"]:
        fields["company_name"] = c.company.name
    if kept["website"]:
        fields["company_website"] = url_variant(rng, c.company.domain)
    return fields


def _name_typo(rng: random.Random, c: Contact) -> Fields | None:
    names = {"first": c.first, "last": c.last}
    for part in rng.sample(sorted(names), 2):
        wrong = typo(rng, names[part])
        if wrong:
            names[part] = wrong
            return {
                **_name_fields(rng, names["first"], names["last"]),
                **_company_ref(rng, c.company),
            }
    return None


def _company_typo(rng: random.Random, c: Contact) -> Fields | None:
    name = misspelled_company(rng, c.company.name)
    return name and {**_name_fields(rng, c.first, c.last), "company_name": name}


def misspelled_company(rng: random.Random, name: str) -> str | None:
    """The company name with a typo outside its legal suffix; None when no word is long
    enough."""
    base, _ = split_suffix(name)
    wrong = typo(rng, base)
    return None if wrong is None else wrong + name[len(base) :]


def _swapped(rng: random.Random, c: Contact) -> Fields | None:
    if fold(c.first) == fold(c.last):
        return None
    return {**_name_fields(rng, c.last, c.first), **_company_ref(rng, c.company)}


def _nickname(rng: random.Random, c: Contact) -> Fields | None:
    short = nickname(rng, c.first, nickname_table())
    return short and {**_name_fields(rng, short, c.last), **_company_ref(rng, c.company)}


def _case_accent(rng: random.Random, c: Contact) -> Fields | None:
    _, (first, last, company) = case_change(rng, (c.first, c.last, c.company.name))
    return {**_name_fields(rng, first, last), "company_name": company}


def _legal_suffix(rng: random.Random, c: Contact) -> Fields | None:
    _, name = suffix_variant(rng, c.company.name)
    return {**_name_fields(rng, c.first, c.last, c.middle), "company_name": name}


def _alias(rng: random.Random, c: Contact) -> Fields | None:
    if not c.company.aka:
        return None
    return {**_name_fields(rng, c.first, c.last), "company_name": rng.choice(c.company.aka)}


VARIANT_CONTACT_KIND = "company variant"


def company_variant(rng: random.Random, co: Company) -> tuple[str, str] | None:
    """(kind, name): a variant of the company's name of a kind drawn by weight among the
    VARIANT_KINDS that apply; None when none does."""
    kinds = dict(VARIANT_KINDS)
    while kinds:
        kind = rng.choices(list(kinds), weights=[w for w, _ in kinds.values()])[0]
        name = kinds.pop(kind)[1](rng, co)
        if name and name != co.name:
            return kind, name
    return None


def _company_variant(rng: random.Random, c: Contact) -> Fields | None:
    found = company_variant(rng, c.company)
    if not found:
        return None
    return {**_name_fields(rng, c.first, c.last), "company_name": found[1], "variant": found[0]}


# kind -> (weight, fields maker); a maker returns None when the kind does not apply.
CONTACT_KINDS: dict[str, tuple[int, Callable[[random.Random, Contact], Fields | None]]] = {
    "email": (10, _email),
    "full record": (8, _full_record),
    "name + company": (10, _name_company),
    "name + domain": (8, _name_domain),
    "dropped fields": (8, _dropped),
    "name typo": (8, _name_typo),
    "company typo": (6, _company_typo),
    "swapped names": (5, _swapped),
    "nickname": (6, _nickname),
    "case/accent": (6, _case_accent),
    "legal suffix": (6, _legal_suffix),
    "alias": (5, _alias),
    VARIANT_CONTACT_KIND: (6, _company_variant),
}


def _company_name(rng: random.Random, co: Company) -> Fields | None:
    return {"company_name": co.name}


def _company_website(rng: random.Random, co: Company) -> Fields | None:
    return {"company_website": url_variant(rng, co.domain)}


def _company_name_typo(rng: random.Random, co: Company) -> Fields | None:
    name = misspelled_company(rng, co.name)
    return name and {"company_name": name}


def _company_suffix(rng: random.Random, co: Company) -> Fields | None:
    return {"company_name": suffix_variant(rng, co.name)[1]}


def _company_case(rng: random.Random, co: Company) -> Fields | None:
    return {"company_name": case_change(rng, (co.name,))[1][0]}


def _company_alias(rng: random.Random, co: Company) -> Fields | None:
    return {"company_name": rng.choice(co.aka)} if co.aka else None


COMPANY_KINDS: dict[str, tuple[int, Callable[[random.Random, Company], Fields | None]]] = {
    "name": (8, _company_name),
    "website": (8, _company_website),
    "typo": (5, _company_name_typo),
    "legal suffix": (5, _company_suffix),
    "case/accent": (4, _company_case),
    "alias": (4, _company_alias),
}


def _variant_maker(kind: str) -> Callable[[random.Random, Company], Fields | None]:
    make = VARIANT_KINDS[kind][1]

    def fields(rng: random.Random, co: Company) -> Fields | None:
        name = make(rng, co)
        return {"company_name": name, "variant": kind} if name and name != co.name else None

    return fields


COMPANY_KINDS |= {
    kind: (weight, _variant_maker(kind)) for kind, (weight, _) in VARIANT_KINDS.items()
}


def _query(fields: Fields) -> Query:
    return Query(**{name: value.strip() for name, value in fields.items() if value.strip()})


def _pick_kind(rng: random.Random, kinds: dict[str, tuple[int, object]], tried: set[str]) -> str:
    names = [k for k in kinds if k not in tried]
    return rng.choices(names, weights=[kinds[k][0] for k in names])[0]


def contact_query(rng: random.Random, contact: Contact, kind: str) -> BenchQuery | None:
    """A query of `kind` (CONTACT_KINDS) for the contact at its company; None if it does not
    apply (no alias, no nickname, no word long enough for a typo)."""
    fields = CONTACT_KINDS[kind][1](rng, contact)
    if not fields:
        return None
    former = contact.status == "No Longer"
    variant = fields.pop("variant", "")
    return BenchQuery(
        f"contact: {kind}",
        _query(fields),
        contact.company.guid,
        contact.guid,
        former=former,
        variant=variant,
    )


def company_query(rng: random.Random, company: Company, kind: str) -> BenchQuery | None:
    """A query of `kind` (COMPANY_KINDS) for the company; None if it does not apply."""
    fields = COMPANY_KINDS[kind][1](rng, company)
    if not fields:
        return None
    variant = fields.pop("variant", "")
    return BenchQuery(f"company: {kind}", _query(fields), company.guid, "", variant=variant)


Rejected = Callable[[BenchQuery], bool]


def _one_of(
    rng: random.Random,
    kinds: dict[str, tuple[int, object]],
    make: Callable[[str], BenchQuery | None],
    rejected: Rejected,
) -> BenchQuery | None:
    """A query of a kind drawn by weight; another kind when it does not apply or is rejected."""
    tried: set[str] = set()
    while len(tried) < len(kinds):
        kind = _pick_kind(rng, kinds, tried)
        tried.add(kind)
        found = make(kind)
        if found is not None and not rejected(found):
            return found
    return None


def known_queries(
    rng: random.Random,
    contacts: Sequence[Contact],
    companies: Sequence[Company],
    rejected: Rejected = lambda _q: False,
) -> list[BenchQuery]:
    """One query per contact and per company (skipping records every kind of which is
    rejected: the benchmark rejects queries that fit another record equally well)."""
    found = [
        _one_of(rng, CONTACT_KINDS, lambda kind, c=c: contact_query(rng, c, kind), rejected)
        for c in contacts
    ]
    found += [
        _one_of(rng, COMPANY_KINDS, lambda kind, co=co: company_query(rng, co, kind), rejected)
        for co in companies
    ]
    return [q for q in found if q is not None]


# --- records that are not in the database --------------------------------------------------

TLDS = (".com", ".com", ".com", ".io", ".co", ".de", ".co.uk", ".net", ".fr", ".com.au")


def distinctive_words(name: str) -> list[str]:
    """The capitalised words of 3+ letters of a name that are neither legal forms, generic
    words, links nor industry nouns: what a made-up company name is made of, so that it is
    no variant of a real one."""
    nouns = industry_nouns()
    return [
        w
        for w in name_parts(name).base.split()
        if len(fold(w)) >= 3 and w[:1].isupper() and _distinctive(w)
        and tuple(fold(w).split()) not in nouns and fold(w) not in folded_legal_forms()
    ]  # fmt: skip


def made_up_person(rng: random.Random, contacts: Sequence[Contact]) -> tuple[str, str]:
    """(first, last): the first name of one sampled contact, the last name of another."""
    a, b = rng.sample(range(len(contacts)), 2)
    return contacts[a].first, contacts[b].last


def made_up_company(rng: random.Random, companies: Sequence[Company]) -> tuple[str, str]:
    """(name, domain): a distinctive word of one sampled company's name then one of
    another's (`distinctive_words`), a legal suffix half the time, and a domain made of the
    two words."""
    words = []
    for index in rng.sample(range(len(companies)), 2):
        candidates = distinctive_words(companies[index].name)
        words.append(rng.choice(candidates or ["North", "Vale", "Summit"]))
    if fold(words[0]) == fold(words[1]):
        words[1] = rng.choice(("Partners", "Works", "Labs", "Studio"))
    name = " ".join(words)
    if rng.random() < 0.5:
        name = f"{name} {rng.choice(ADDED_SUFFIXES)}"
    label = "".join(fold(" ".join(words)).split())
    return name, f"{label}{rng.choice(TLDS)}"


def _email_at(rng: random.Random, first: str, last: str, domain: str) -> str:
    f, lst = "".join(fold(first).split()), "".join(fold(last).split())
    local = rng.choice((f"{f}.{lst}", f"{f[:1]}{lst}", f"{f}_{lst}", f"{lst}.{f}"))
    return f"{local}@{domain}"


def _absent_at_company(
    rng: random.Random, how: str, contacts: Sequence[Contact], companies: Sequence[Company]
) -> BenchQuery:
    company = rng.choice(companies)
    first, last = made_up_person(rng, contacts)
    if how == "e-mail at known domain":
        fields: Fields = {"email": _email_at(rng, first, last, company.domain)}
    elif how == "person + company name":
        fields = {**_name_fields(rng, first, last), "company_name": company.name}
    else:
        fields = {
            **_name_fields(rng, first, last),
            "company_website": url_variant(rng, company.domain),
        }
    return BenchQuery(f"absent: {how}", _query(fields), company.guid, "", absent=True)


def _absent_company(
    rng: random.Random, how: str, contacts: Sequence[Contact], companies: Sequence[Company]
) -> BenchQuery:
    name, domain = made_up_company(rng, companies)
    first, last = made_up_person(rng, contacts)
    if how == "company name":
        fields: Fields = {"company_name": name}
    elif how == "company website":
        fields = {"company_website": url_variant(rng, domain)}
    elif how == "person + unknown company":
        fields = {**_name_fields(rng, first, last), "company_name": name}
    else:
        fields = {"email": _email_at(rng, first, last, domain)}
    return BenchQuery(f"absent: {how}", _query(fields), "", "", absent=True)


ABSENT_KINDS = {
    "person + company name": _absent_at_company,
    "person + website": _absent_at_company,
    "e-mail at known domain": _absent_at_company,
    "company name": _absent_company,
    "company website": _absent_company,
    "person + unknown company": _absent_company,
    "e-mail at unknown domain": _absent_company,
}


def absent_queries(
    rng: random.Random,
    n: int,
    contacts: Sequence[Contact],
    companies: Sequence[Company],
    rejected: Rejected = lambda _q: False,
) -> list[BenchQuery]:
    """`n` queries for records not in the database, round robin over ABSENT_KINDS; a query
    `rejected` (the benchmark rejects those that do exist) is drawn again."""
    kinds = list(ABSENT_KINDS)
    found = []
    for i in range(n):
        how = kinds[i % len(kinds)]
        for _ in range(100):
            query = ABSENT_KINDS[how](rng, how, contacts, companies)
            if not rejected(query):
                found.append(query)
                break
    return found
