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

Names go as first + last name, or one time in four as a full name (with the middle name half
the time). Websites go as URL variants: scheme or none, `www.` or another subdomain, a path,
a query string, a trailing slash, upper case. Each known company gets one query of a kind:
`name`, `website`, `typo`, `legal suffix`, `case/accent` or `alias`, as above.

Absent records, round robin over their kinds: a made-up person (a first name and a last name
of two different sampled contacts) at an existing company, given with its name, its website,
or as an e-mail at its domain; a made-up company (two words of two different sampled company
names, a legal suffix half the time, a domain made of the words) by name or by website; a
made-up person at a made-up company; an e-mail at a made-up domain.
"""

from __future__ import annotations

import csv
import random
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

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
    """

    kind: str
    query: Query
    company_guid: str
    contact_guid: str
    absent: bool = False
    former: bool = False

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
    return BenchQuery(
        f"contact: {kind}", _query(fields), contact.company.guid, contact.guid, former=former
    )


def company_query(rng: random.Random, company: Company, kind: str) -> BenchQuery | None:
    """A query of `kind` (COMPANY_KINDS) for the company; None if it does not apply."""
    fields = COMPANY_KINDS[kind][1](rng, company)
    return fields and BenchQuery(f"company: {kind}", _query(fields), company.guid, "")


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


def made_up_person(rng: random.Random, contacts: Sequence[Contact]) -> tuple[str, str]:
    """(first, last): the first name of one sampled contact, the last name of another."""
    a, b = rng.sample(range(len(contacts)), 2)
    return contacts[a].first, contacts[b].last


def made_up_company(rng: random.Random, companies: Sequence[Company]) -> tuple[str, str]:
    """(name, domain): a word of one sampled company's name then one of another's, a legal
    suffix half the time, and a domain made of the two words."""
    words = []
    for index in rng.sample(range(len(companies)), 2):
        base, _ = split_suffix(companies[index].name)
        candidates = [w for w in base.split() if len(fold(w)) >= 3 and w[:1].isupper()]
        words.append(rng.choice(candidates or ["North", "Vale", "Summit"]))
    if fold(words[0]) == fold(words[1]):
        words[1] = rng.choice(("Partners", "Works", "Labs", "Systems"))
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
