"""Find the company and contact an enrich input describes, and grade how sure the match is.

Candidates come from the store's indexes (e-mail, GUID, profile URL, domain, company name and
aliases, names written another way, near names, contact by company and last name); each is
scored with field weights and graded A+/A/A-/B, or dropped when two candidates are too close
to tell apart.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, TypeVar

from rapidfuzz import fuzz, process
from rapidfuzz.distance import DamerauLevenshtein
from sqlite_utils import Database

from server import names, places
from server.normalize import (
    alias_keys,
    company_key,
    email_key,
    fold,
    is_legal_form,
    name_forms,
    person_key,
    registrable_domain,
    split_aka,
    stored_forms,
)
from server.storage import store


@dataclass(frozen=True)
class Query:
    """An enrich input in the vendor's older field names; every field a stripped string."""

    company_name: str = ""  # companyName / compName
    company_website: str = ""  # companyWebAddress / compWebsite
    company_profile_url: str = ""  # companyLnUrl / compLinkedinUrl
    company_guid: str = ""  # companyGuid / compGuid
    full_name: str = ""  # contactFullName / conFullName
    first_name: str = ""  # contactFirstName / conFirstName
    middle_name: str = ""  # contactMiddleName
    last_name: str = ""  # contactLastName / conLastName
    email: str = ""  # contactEmail / conEmail
    job_title: str = ""  # contactJobTitle / conJobTitle
    country: str = ""  # contactCountry / country
    contact_profile_url: str = ""  # contactUrl / conLinkedinUrl
    contact_guid: str = ""  # contactGuid / conGuid


# Query attribute -> the vendor's older input name, for `Match.matched_on`.
INPUT_NAMES: dict[str, str] = {
    "company_name": "companyName",
    "company_website": "companyWebAddress",
    "company_profile_url": "companyLnUrl",
    "company_guid": "companyGuid",
    "full_name": "contactFullName",
    "first_name": "contactFirstName",
    "middle_name": "contactMiddleName",
    "last_name": "contactLastName",
    "email": "contactEmail",
    "job_title": "contactJobTitle",
    "country": "contactCountry",
    "contact_profile_url": "contactUrl",
    "contact_guid": "contactGuid",
}


@dataclass(frozen=True)
class Match:
    """The record an input matched: a company, and the contact when the input described one.

    `company_guid` is the company the contact was matched at (for a "No Longer" contact, the
    former employer the input named). `matched_on` lists Query attribute names.
    """

    company_guid: str
    contact_guid: str  # "" for a company-only match
    grade: str  # "A+", "A", "A-" or "B"
    score: float
    matched_on: tuple[str, ...]
    # A company-only match's company row as matching read it (enrich shows it from this).
    company: dict[str, Any] | None = field(default=None, compare=False, repr=False)


def find(db: Database, query: Query) -> Match | None:
    """The best match for `query`, or None (No Match) when nothing is sure enough."""
    return find_probed(db, Probe.of(query))


def find_probed(db: Database, probe: Probe) -> Match | None:
    """`find` for a query already in its looked-up forms."""
    if probe.wants_contact:
        found = _find_contact(db, probe)
        if found is not None:
            return found
    return _find_company(db, probe)


def find_company(db: Database, probe: Probe) -> Match | None:
    """The best company-only match for a query, its person left out, or None."""
    return _find_company(db, probe)


T = TypeVar("T")


# --- what the query says, normalized ----------------------------------------------------------

_PROFILE = re.compile(
    r"^(?:https?://)?(?:[a-z]{2,3}\.)?(?:www\.)?linkedin\.com/(in|company|pub)/([^/?#]+)", re.I
)
# Mailbox providers: an address there says nothing about the person's employer.
FREE_MAIL_DOMAINS = frozenset(
    "gmail.com googlemail.com yahoo.com ymail.com hotmail.com outlook.com live.com msn.com "
    "aol.com icloud.com me.com mac.com proton.me protonmail.com gmx.com gmx.de gmx.net web.de "
    "mail.com yandex.ru yandex.com mail.ru qq.com 163.com 126.com naver.com orange.fr free.fr "
    "laposte.net libero.it t-online.de zoho.com fastmail.com hey.com tutanota.com".split()
)


def profile_url(text: str) -> str:
    """A profile URL in the stored form (`https://www.linkedin.com/in/slug`), or ""."""
    found = _PROFILE.match(text.strip())
    if found is None:
        return ""
    kind = "in" if found[1].lower() == "pub" else found[1].lower()
    return f"https://www.linkedin.com/{kind}/{found[2].lower()}"


@dataclass(frozen=True)
class Probe:
    """A query in the forms the store is indexed by."""

    query: Query
    email: str = ""
    email_domain: str = ""
    domain: str = ""
    company_key: str = ""
    person: names.PersonName | None = None
    first_keys: frozenset[str] = frozenset()
    last_key: str = ""
    company_url: str = ""
    contact_url: str = ""
    country: str = ""

    @classmethod
    def of(cls, query: Query) -> Probe:
        email = email_key(query.email) if "@" in query.email else ""
        person = names.parse(query.full_name, query.first_name, query.middle_name, query.last_name)
        mail_domain = registrable_domain(email) if email else ""
        return cls(
            query=query,
            email=email,
            email_domain="" if mail_domain in FREE_MAIL_DOMAINS else mail_domain,
            domain=registrable_domain(query.company_website) if query.company_website else "",
            company_key=company_key(query.company_name) if query.company_name else "",
            person=person,
            first_keys=names.first_keys(person.first) if person else frozenset(),
            last_key=person_key(person.last) if person else "",
            company_url=profile_url(query.company_profile_url),
            contact_url=profile_url(query.contact_profile_url),
            country=places.country_code(query.country) or "" if query.country else "",
        )

    @property
    def wants_contact(self) -> bool:
        q = self.query
        return bool(self.email or q.contact_guid or self.contact_url or self.last_key)

    @property
    def names_company(self) -> bool:
        return bool(self.company_key or self.domain or self.email_domain or self.company_url)


# --- companies --------------------------------------------------------------------------------

# Scores of the evidence a company candidate can have; each further agreeing field adds BONUS.
GUID, PROFILE, DOMAIN, NAME, ALIAS, MAIL_DOMAIN = 1.0, 1.0, 0.97, 0.95, 0.92, 0.9
BONUS = 0.03
NEAR_NAME = 0.85  # least similarity of a name given beside another identifier, 0..1
NEAR_NAME_WEIGHT = 0.95  # a name with typos scores NEAR_NAME_WEIGHT * similarity
EXACT_NAME = 0.97  # the name as the company has it, legal suffix and all
CONFLICT = 0.12  # taken off when a given company name plainly is not the candidate's
# Misspelt company names: words of FUZZY_WORD letters may hold one typo, of LONG_WORD two (a
# typo may leave SHORTEST_TYPO); at most MISSPELT_WORDS words of a name are misspelt, MAX_EDITS
# edits in all, each costing TYPO_COST (a name of MAX_EDITS typos still grades B).
FUZZY_WORD, LONG_WORD, SHORTEST_TYPO, MAX_EDITS, TYPO_COST = 4, 6, 3, 4, 0.035
MISSPELT_WORDS = 2
CORRECTIONS = 10  # known words tried in place of a misspelt one
CORRECTED_KEYS = 60  # corrected names looked up (each one index seek)


@dataclass
class CompanyCandidate:
    """A company the query may mean: its row, best evidence score, and the fields behind it."""

    row: dict[str, Any]
    evidence: float = 0.0
    on: set[str] = field(default_factory=set)
    agreeing: int = 0
    penalty: float = 0.0

    @property
    def guid(self) -> str:
        return self.row["guid"]

    @property
    def score(self) -> float:
        return max(0.0, min(1.0, self.evidence + BONUS * self.agreeing) - self.penalty)

    def support(self, score: float, on: str) -> None:
        if on not in self.on:
            self.agreeing += 1 if self.on else 0
            self.on.add(on)
        self.evidence = max(self.evidence, score)


def company_candidates(db: Database, probe: Probe) -> list[CompanyCandidate]:
    """Every company the query's company fields point at, best first."""
    found: dict[str, CompanyCandidate] = {}

    def add(rows: Iterable[dict[str, Any]], score: float, on: str) -> None:
        for row in rows:
            found.setdefault(row["guid"], CompanyCandidate(row)).support(score, on)

    q = probe.query
    if q.company_guid:
        add(store.companies_by_guids(db, [q.company_guid.upper()]), GUID, "company_guid")
    if probe.company_url:
        add(store.companies_by_profile_url(db, probe.company_url), PROFILE, "company_profile_url")
    if probe.domain:
        add(store.companies_by_domain(db, probe.domain), DOMAIN, "company_website")
    if probe.email_domain:
        add(store.companies_by_domain(db, probe.email_domain), MAIL_DOMAIN, "email")
    if probe.company_key:
        for row, score in _by_name_or_without_place(db, q.company_name, probe.company_key):
            add([row], score, "company_name")
    for candidate in found.values():
        _check_name_and_country(candidate, probe)
    return sorted(found.values(), key=lambda c: (-c.score, c.guid))


def _by_name_or_without_place(
    db: Database, name: str, key: str
) -> list[tuple[dict[str, Any], float]]:
    """`_by_name`; when that finds nothing, `_by_name` of the name without a place after it
    (`without_place`), each score PLACE_COST less."""
    found = _by_name(db, name, key)
    placeless = "" if found else without_place(name)
    if not placeless or not company_key(placeless):
        return found
    return [
        (row, score - PLACE_COST) for row, score in _by_name(db, placeless, company_key(placeless))
    ]


def _by_name(db: Database, name: str, key: str) -> list[tuple[dict[str, Any], float]]:
    """The companies a company name finds, with a score for each way it finds them: its key
    as a name's (the name as the company has it: more) or an alias's; else the name written
    another way (`_written_alike`); else the name with misspelt words (`_near_names`)."""
    named = store.companies_by_name_keys(db, [key])
    if named:
        exact = _plain(name)
        found = [(row, ALIAS if row["alias"] else NAME) for row in named]
        return found + [(row, EXACT_NAME) for row in named if _plain(row["name"]) == exact]
    alike = _written_alike(db, name)
    if alike:
        return alike
    return [(row, NEAR_NAME_WEIGHT * similarity) for row, similarity in _near_names(db, key)]


def _check_name_and_country(candidate: CompanyCandidate, probe: Probe) -> None:
    """A name given beside another identifier must agree with it (or without a place after
    it); a country may disagree."""
    name = probe.query.company_name
    if probe.company_key and "company_name" not in candidate.on:
        score, similarity = _name_agreement(name, probe.company_key, candidate.row)
        placeless = "" if score else without_place(name)
        if placeless and company_key(placeless):
            score, alike = _name_agreement(placeless, company_key(placeless), candidate.row)
            similarity = max(similarity, alike)
        if score:
            candidate.support(score, "company_name")
        elif similarity < 0.5:
            candidate.penalty += CONFLICT
    if probe.country and _country(candidate.row["country"]) not in ("", probe.country):
        candidate.penalty += 0.01


def _name_agreement(name: str, key: str, row: dict[str, Any]) -> tuple[float, float]:
    """How a company name given beside another identifier agrees with the company's: the score
    it adds (0: none), and the similarity of the keys."""
    similarity = company_name_similarity(key, row)
    written = _form_score(_Written.of(name), row)
    if similarity >= NEAR_NAME or written:
        return max(NEAR_NAME_WEIGHT * similarity, written), similarity
    return 0.0, similarity


# A place after a company's name: in brackets ("Acme (Boston)"), after a dash ("Acme - London
# office"), after "te", "in" or "at" ("Acme B.V. te Utrecht"), or after commas ("Acme N.V.,
# Eindhoven, NL"); a word such as "office" may follow it. At most PLACE_CHARS characters.
_SITE_WORDS = frozenset("office offices branch site plant headquarters hq campus location".split())
_DASHES = (" - ", " – ", " — ")
_PLACE_WORDS = (" te ", " in ", " at ")
PLACE_CHARS = 60
PLACE_COST = 0.01  # taken off a company found by its name without the place


@lru_cache(maxsize=4096)
def without_place(name: str) -> str:
    """`name` without a known place (server.places) written after it ("Acme Ltd (London)" ->
    "Acme Ltd"), or "" when none is: the longest place that is one."""
    text = name.strip().rstrip(".,;")
    for cut, place in sorted(_place_cuts(text)):
        head = text[:cut].rstrip(" ,")
        if head and _is_place(place):
            return head
    return ""


def _place_cuts(text: str) -> list[tuple[int, str]]:
    """Where a place may begin after a name, each with the place as written (its marks cut):
    in the last PLACE_CHARS characters of `text`."""
    start = max(0, len(text) - PLACE_CHARS)
    tail = text[start:].casefold()
    cuts = []
    if tail.endswith(")") and "(" in tail:
        at = start + tail.rindex("(")
        cuts.append((at, text[at + 1 : -1]))
    for mark in (*_DASHES, *_PLACE_WORDS):
        if mark in tail:
            at = start + tail.rindex(mark)
            cuts.append((at, text[at + len(mark) :]))
    commas = [start + at for at, letter in enumerate(tail) if letter == ","][-3:]
    cuts += [(at, text[at + 1 :]) for at in commas]
    return cuts


def _is_place(text: str) -> bool:
    """Whether `text`, a site word ("office") after it aside, is a place: a city, state or
    country, with the state or country after commas; not a legal form ("Acme, NV")."""
    words = text.split()
    if words and fold(words[-1]) in _SITE_WORDS:
        text = text[: text.rindex(words[-1])]
    parts = text.split(",")
    if not all(fold(part) for part in parts) or is_legal_form(parts[0]):
        return False
    return places.locate(text) is not None


def _plain(name: str) -> str:
    """A company name without case, accents, punctuation or spaces: "Acme, Inc." = "ACME INC"."""
    return fold(name).replace(" ", "")


@lru_cache(maxsize=65_536)
def _country(name: str) -> str:
    return places.country_code(name) or "" if name else ""


def company_name_similarity(key: str, row: dict[str, Any]) -> float:
    """How alike a company key is to the company's name or one of its aliases, 0..1."""
    keys = [row["name_key"], *alias_keys(row["aka"])]
    return max(fuzz.ratio(key, other) for other in keys) / 100


# A name written another way (server.normalize.NameForms): the score of each pair of the
# query's form and a company's form with the same value; an alias's forms score ALIAS_COST less.
FORM_SCORES: dict[tuple[str, str], float] = {
    ("core", "core"): 0.93,  # generic words, legal forms, "&"/"und", spacing, transliteration
    ("unled", "core"): 0.92,  # a legal form leading the query ("AB Volvo")
    ("core", "unled"): 0.92,  # a legal form leading the company's name
    ("bag", "bag"): 0.91,  # the same words in another order ("Bank of X", "X Bank")
    ("core", "acronym"): 0.90,  # the company's initials ("IBM")
    ("core", "lead"): 0.89,  # the company's brand without its last word ("Zentrix")
    ("initials", "core"): 0.88,  # the query spells out the initials a company is named by
}
# Pairs that stand only for a query of no generic words ("Zentrix Group" is not "Zentrix
# Analytics"), and the pair that stands only for a company's own name of none.
_BARE_QUERY = {("core", "acronym"), ("core", "lead")}
_BARE_COMPANY = ("initials", "core")
ALIAS_COST = 0.02
FORMS_READ = 50  # rows of companies written alike read at most: more are rivals all the same


@dataclass(frozen=True)
class _Written:
    """A query's company name in its forms: each value with the forms it is the value of."""

    values: dict[str, set[str]]
    generic: frozenset[str]

    @classmethod
    def of(cls, name: str) -> _Written:
        forms = name_forms(name)
        values: dict[str, set[str]] = {}
        for form in ("core", "unled", "bag", "initials"):
            if value := getattr(forms, form):
                values.setdefault(value, set()).add(form)
        return cls(values, forms.generic)

    def score(self, name: str, alias: int) -> float:
        """The best score of a company's name (alias 0) or alias against these forms: its
        generic words dropped or added, never others in their place."""
        theirs = name_forms(name)
        apart = self.generic <= theirs.generic or theirs.generic <= self.generic
        best = 0.0
        for form, value in stored_forms(name):
            for mine in self.values.get(value, ()):
                pair = (mine, form)
                if pair in _BARE_QUERY and self.generic:
                    continue
                if pair == _BARE_COMPANY and (alias or theirs.generic):
                    continue
                if pair in _BARE_QUERY or pair == _BARE_COMPANY or apart:
                    best = max(best, FORM_SCORES.get(pair, 0.0))
        return best - ALIAS_COST * alias if best else 0.0


def _written_alike(db: Database, name: str) -> list[tuple[dict[str, Any], float]]:
    """Companies whose name or an alias is `name` written another way, with their score: one
    index read of at most FORMS_READ rows."""
    written = _Written.of(name)
    if not written.values:
        return []
    rows = store.companies_by_name_forms(db, sorted(written.values), FORMS_READ)
    unique = {row["guid"]: row for row in rows}
    scored = [(row, _form_score(written, row)) for row in unique.values()]
    return [(row, score) for row, score in scored if score]


def _form_score(written: _Written, row: dict[str, Any]) -> float:
    """The best score of a query's forms against a company's name and alias forms (0: none
    agrees)."""
    names = [(row["name"], 0), *((name, 1) for name in split_aka(row["aka"]))]
    return max(written.score(name, alias) for name, alias in names)


def _near_names(db: Database, key: str) -> list[tuple[dict[str, Any], float]]:
    """Companies whose name or an alias is `key` with its misspelt words corrected, with the
    similarity 1 - TYPO_COST per edit (as `typo_similarity`).

    A word of `key` that no company name has is misspelt; a key with more than MISSPELT_WORDS
    of them has no near name and is not searched. (A typo that makes a word some other company
    has, "Parma" for "Pharma", is not corrected: a made-up name of known words is as near to
    some company's.) Each misspelt word is replaced by its `_corrections`, each within its own
    `allowed_edits`, and the `cheapest_spellings` (keyed again when the last word is
    corrected: it may be one that keys drop, "Groul" for "Group") are looked up exactly, all
    of them up to the fewest edits of one left out (corrections beyond CORRECTIONS, lookups
    beyond CORRECTED_KEYS): as cheap a spelling unseen could be as good a rival. The work is
    bounded whatever the key's length: one statement for the known words, at most
    MISSPELT_WORDS for corrections and one for the lookups of at most CORRECTED_KEYS names,
    twice when the corrections of a word's own first letter find none as near as an edit a
    word (`_corrected_names`).
    """
    words = key.split()
    fuzzy = sorted({word for word in words if len(word) >= SHORTEST_TYPO})
    known = store.known_company_words(db, fuzzy) if fuzzy else {}
    misspelt = [word for word in fuzzy if word not in known]
    if not misspelt or len(misspelt) > MISSPELT_WORDS:
        return []
    found = _corrected_names(db, words, misspelt, respelt=False)
    fewest = min((round((1 - similarity) / TYPO_COST) for _, similarity in found), default=None)
    if fewest is not None and fewest <= len(misspelt):  # an edit a word: none can be nearer
        return found
    nearer = {row["guid"]: (row, similarity) for row, similarity in found}
    for row, similarity in _corrected_names(db, words, misspelt, respelt=True):
        if similarity > nearer.get(row["guid"], (row, 0.0))[1]:
            nearer[row["guid"]] = (row, similarity)
    return list(nearer.values())


def _corrected_names(
    db: Database, words: list[str], misspelt: list[str], respelt: bool
) -> list[tuple[dict[str, Any], float]]:
    """`_near_names` with the misspelt words' corrections of their own first letter, or with
    `respelt` also those of another first letter and of two words run together: tried only
    when the first find nothing as near as an edit a word, as they would crowd a short word's
    ("Bani": "Mani", "Dani" beside "Bank") past CORRECTIONS, where a name is not corrected."""
    corrected = {word: _corrections(db, word, CORRECTIONS + 1, respelt) for word in misspelt}
    options: list[list[tuple[str, int]]] = []
    dropped: list[tuple[int, int]] = []  # (word's place, edits of its first correction left out)
    for word in words:
        if word not in misspelt:
            options.append([(word, 0)])
            continue
        fixes = corrected[word][:CORRECTIONS]
        if len(corrected[word]) > CORRECTIONS:
            dropped.append((len(options), corrected[word][-1][1]))
        if not fixes:
            return []
        options.append(fixes)
    fewest = [min(edits for _, edits in choices) for choices in options]
    # The fewest edits of a spelling not looked up: one with a correction left out...
    unseen = min((sum(fewest) - fewest[i] + edits for i, edits in dropped), default=MAX_EDITS + 1)
    spellings = cheapest_spellings(options, limit=CORRECTED_KEYS + 1)
    if len(spellings) > CORRECTED_KEYS:  # ...or one past the lookups
        unseen = min(unseen, spellings.pop()[0])
    fewest_edits: dict[str, int] = {}  # spelling as keyed -> its edits
    for edits, spelling in spellings:
        if edits >= unseen:
            break  # a spelling as cheap was not looked up: it could be as good a rival
        # A corrected last word may be one that keys drop: "Grop" for "Group"; but not a
        # short one, a legal form's abbreviation ("West Saet" is no "West SAE").
        respelt = spelling if spelling.rsplit(" ", 1)[-1] == words[-1] else company_key(spelling)
        if len(respelt.split()) < len(words) and len(spelling.rsplit(" ", 1)[-1]) < FUZZY_WORD:
            continue
        fewest_edits.setdefault(respelt, edits)
    found: dict[str, tuple[dict[str, Any], float]] = {}
    rows = store.companies_by_name_keys(db, list(fewest_edits)) if fewest_edits else []
    for row in sorted(rows, key=lambda row: fewest_edits[row["matched_key"]]):
        found.setdefault(row["guid"], (row, 1 - TYPO_COST * fewest_edits[row["matched_key"]]))
    return list(found.values())


def cheapest_spellings(
    options: Sequence[Sequence[tuple[str, int]]],
    budget: int = MAX_EDITS,
    limit: int = CORRECTED_KEYS,
) -> list[tuple[int, str]]:
    """The `limit` cheapest spellings of a name whose words may each be any of their
    `options` (word, edits): (edits, name) with 1 to `budget` edits, fewest first, then
    alphabetical (the order of every combination sorted).

    A spelling over the budget is dropped as soon as it is: with words whose corrections all
    cost an edit, at most (options a word) ** budget spellings are ever built.
    """
    spellings = [(0, "")]
    for choices in options:
        spellings = [
            (edits + more, f"{name} {word}")
            for edits, name in spellings
            for word, more in choices
            if edits + more <= budget
        ]
    return heapq.nsmallest(limit, ((edits, name[1:]) for edits, name in spellings if edits))


def _corrections(
    db: Database, word: str, limit: int = CORRECTIONS, respelt: bool = True
) -> list[tuple[str, int]]:
    """Known company name words that `word` may be a misspelling of, with their edits
    (Damerau-Levenshtein: two typos may overlap, "Digail" for "Digital"): the closest first,
    then the most used (`limit` at most). One read, however long `word` is: the index
    range of the known words with its first letter, those within two letters of its length
    kept, and its `_respellings` (a misspelt first letter is the one edit in its word; two
    known words run together cost an edit; not without `respelt`)."""
    firsts, pairs = _respellings(word) if respelt else (set(), [])
    parts = {part for pair in pairs for part in pair}
    also = sorted(firsts | parts)
    choices = dict(store.company_words_like(db, word[0], len(word) - 2, len(word) + 2, also))
    choices.pop(word, None)
    close = process.extract(
        word, choices.keys(), scorer=DamerauLevenshtein.distance, score_cutoff=2, limit=None
    )
    fits = [
        (int(edits), -choices[choice], choice)
        for choice, edits, _ in close
        if edits <= allowed_edits(word, choice) and (choice[0] == word[0] or edits == 1)
    ]
    fits += [
        (1, -min(choices[left], choices[right]), f"{left} {right}")
        for left, right in pairs
        if left in choices and right in choices
    ]
    return [(choice, edits) for edits, _, choice in sorted(fits)[:limit]]


# A misspelt word's first letter may be another, lost or one too many; a word of SPLIT_SHORTEST
# to SPLIT_WORD letters may be two known words (of SHORTEST_PART letters or more) run together,
# the space between them lost or typed as another letter ("Kobexsteel"). A shorter word is not
# split: "part" as "p rt" or "pa t" would crowd out its real corrections ("parts", "park"),
# and a name whose misspelt word has more than CORRECTIONS of them is not corrected at all.
_LETTERS = "abcdefghijklmnopqrstuvwxyz0123456789"
SPLIT_SHORTEST, SPLIT_WORD, SHORTEST_PART = 6, 30, 1


def _respellings(word: str) -> tuple[set[str], list[tuple[str, str]]]:
    """The words `word` is with its first letter misspelt back, and the pairs of words it may
    be run together: at most 2 * len(_LETTERS) + 2 words and 2 * SPLIT_WORD pairs."""
    firsts = {letter + rest for letter in _LETTERS for rest in (word[1:], word)}
    firsts |= {word[1:], word[1:2] + word[:1] + word[2:]}
    pairs: list[tuple[str, str]] = []
    if SPLIT_SHORTEST <= len(word) <= SPLIT_WORD:
        for at in range(SHORTEST_PART, len(word) - SHORTEST_PART + 1):
            pairs.append((word[:at], word[at:]))
            if len(word) - at > SHORTEST_PART:
                pairs.append((word[:at], word[at + 1 :]))
    return {first for first in firsts if len(first) >= SHORTEST_TYPO} - {word}, pairs


def allowed_edits(word: str, other: str) -> int:
    """How many typos may tell two words apart: none when the longer has fewer than
    FUZZY_WORD letters, one when it has fewer than LONG_WORD, else two."""
    longer = max(len(word), len(other))
    return 0 if longer < FUZZY_WORD else 1 if longer < LONG_WORD else 2


def typo_similarity(key: str, other: str) -> float:
    """How alike two company keys are when one may be the other with typos, 0..1.

    1 when equal; 1 - TYPO_COST per edit when they have the same words but for misspellings
    that fit `allowed_edits` word by word (a word's first letter misspelt only as its one
    edit), touch at most MISSPELT_WORDS words and add up to MAX_EDITS; else 0.
    """
    if key == other:
        return 1.0
    words, others = key.split(), other.split()
    if len(words) != len(others):
        return 0.0
    total = misspelt = 0
    for word, stored in zip(words, others, strict=True):
        if word != stored:
            allowed = allowed_edits(word, stored)
            edits = DamerauLevenshtein.distance(word, stored, score_cutoff=allowed)
            if edits > allowed or (word[0] != stored[0] and edits > 1):
                return 0.0
            total += edits
            misspelt += 1
    return 1 - TYPO_COST * total if total <= MAX_EDITS and misspelt <= MISSPELT_WORDS else 0.0


def _typo_similarity_to(key: str, row: dict[str, Any]) -> float:
    """`typo_similarity` of a key to a company's name or closest alias."""
    return max(typo_similarity(key, other) for other in (row["name_key"], *alias_keys(row["aka"])))


def _find_company(db: Database, probe: Probe) -> Match | None:
    candidates = company_candidates(db, probe)
    if not candidates:
        return None
    chosen, found = _decide([(c, c.score) for c in candidates], _headquarters)
    if chosen is None:
        return None
    return Match(chosen.guid, "", found, chosen.score, _in_order(chosen.on), chosen.row)


def _headquarters(tied: Sequence[CompanyCandidate]) -> CompanyCandidate | None:
    """Of companies that share a name (a group's companies in several countries), the one
    that is the parent or global headquarters of all the others."""
    for candidate in tied:
        others = [c for c in tied if c is not candidate]
        if all(candidate.guid in (c.row["parent_guid"], c.row["global_hq_guid"]) for c in others):
            return candidate
    return None


# --- grades -----------------------------------------------------------------------------------

# The least score of each grade, calibrated on bench/enrich.py (docs/api/enrich.md, matching).
GRADES: tuple[tuple[str, float], ...] = (("A+", 0.97), ("A", 0.93), ("A-", 0.88), ("B", 0.80))
TIE = 0.02  # a runner-up this close cannot be told apart from the best: No Match
CLOSE = 0.05  # a runner-up this close: one grade lower


def grade(score: float, runner_up: float | None = None) -> str | None:
    """The grade of a match score (None: too low), lowered when a rival came close."""
    index = next((i for i, (_, least) in enumerate(GRADES) if score >= least), None)
    if index is None:
        return None
    if runner_up is not None and score - runner_up < CLOSE:
        index += 1
    return GRADES[index][0] if index < len(GRADES) else None


def _decide(
    scored: Sequence[tuple[T, float]], settle: Callable[[list[T]], T | None] | None = None
) -> tuple[T | None, str]:
    """The best-scored item and its grade; (None, "") when too low or tied with a rival.

    `settle(tied)` may pick one of several tied items (graded one lower) instead.
    """
    best, score = scored[0]
    rivals = [item for item, other in scored[1:] if score - other < TIE]
    runner_up = scored[1][1] if len(scored) > 1 else None
    if rivals:
        chosen = settle([best, *rivals]) if settle else None
        found = grade(score, score) if chosen is not None else None
        return (chosen, found) if found else (None, "")
    found = grade(score, runner_up)
    return (best, found) if found else (None, "")


def _in_order(on: Iterable[str]) -> tuple[str, ...]:
    given = set(on)
    return tuple(name for name in INPUT_NAMES if name in given)


# --- contacts ---------------------------------------------------------------------------------

FIRST_WEIGHT = 0.4  # of a person's name score; the last name carries the rest
FIRST_LEAST = names.INITIAL  # a first name less alike than an agreeing initial is another
LAST_LEAST = 0.8  # a last name less alike is another
PERSON_WEIGHT = 0.6  # of a name-and-company match; the company's score carries the rest
PERSON_LEAST = 0.8  # a person scoring lower is not a candidate
SWAP_COST = 0.03  # first and last name given the wrong way round
COMPANIES_SEARCHED = 4  # the best company candidates searched for the person
NAMESAKES = 200  # people with the query's name, at any company, looked at when the company
# the query names has nobody of that name


@dataclass(frozen=True)
class PersonCandidate:
    """An employment the query may mean, with its score and the fields behind it."""

    row: dict[str, Any]
    score: float
    on: frozenset[str]

    @property
    def contact_guid(self) -> str:
        return self.row["contact_guid"]


def _find_contact(db: Database, probe: Probe) -> Match | None:
    companies = company_candidates(db, probe) if probe.names_company else []
    identified = _identified(db, probe, companies)
    if identified is not None:
        return identified
    if probe.person is None or not probe.names_company:
        return None
    people = _people_at(db, probe, companies[:COMPANIES_SEARCHED])
    if not people or people[0].score < GRADES[-1][1]:
        people = sorted([*people, *_namesakes(db, probe)], key=_rank)
    if not people:
        return None
    rivals = [(p, p.score) for p in people if p.contact_guid != people[0].contact_guid]
    chosen, found = _decide([(people[0], people[0].score), *rivals[:1]])
    if chosen is None:
        return None
    return Match(
        chosen.row["company_guid"], chosen.contact_guid, found, chosen.score, _in_order(chosen.on)
    )


def _rank(person: PersonCandidate) -> tuple[float, str]:
    return -person.score, person.contact_guid


def _identified(db: Database, probe: Probe, companies: Sequence[CompanyCandidate]) -> Match | None:
    """A contact named by GUID, profile URL or e-mail address: graded by how well the name
    given (if any) agrees."""
    lookups = (
        ("contact_guid", probe.query.contact_guid.upper(), store.people_by_guid),
        ("contact_profile_url", probe.contact_url, store.people_by_profile_url),
        ("email", probe.email, store.people_by_email),
    )
    for on, value, fetch in lookups:
        rows = fetch(db, value) if value else []
        if rows:
            return _identified_match(db, rows, on, probe, companies)
    return None


# An identified contact whose name differs: still that contact, but less sure.
NAME_DIFFERS, NAME_UNLIKE = 0.9, 0.82


def _identified_match(
    db: Database,
    rows: list[dict[str, Any]],
    on: str,
    probe: Probe,
    companies: Sequence[CompanyCandidate],
) -> Match:
    by_company = {c.guid: c for c in companies}
    if by_company and not any(row["company_guid"] in by_company for row in rows):
        # An address from one employer, the company of another: look at all of them.
        rows = rows + store.people_by_guid(db, rows[0]["contact_guid"])
    row = max(rows, key=lambda r: (r["company_guid"] in by_company, r["status"] == "Active"))
    fields, score = {on}, 1.0
    if probe.person is not None:
        similarity = person_similarity(probe.person, row)
        if similarity >= PERSON_LEAST:
            fields |= _person_fields(probe.query)
        else:
            score = NAME_DIFFERS if similarity >= 0.5 else NAME_UNLIKE
    if row["company_guid"] in by_company:
        fields |= by_company[row["company_guid"]].on
    return Match(
        row["company_guid"], row["contact_guid"], grade(score) or "B", score, _in_order(fields)
    )


def _people_at(
    db: Database, probe: Probe, companies: Sequence[CompanyCandidate]
) -> list[PersonCandidate]:
    """People at these companies named like the query: same last name, same (or equivalent)
    first name, or the two swapped; each an index seek."""
    person = probe.person
    assert person is not None
    last_keys = sorted({probe.last_key, person_key(person.first)} - {""})
    first_keys = sorted((probe.first_keys | {probe.last_key}) - {""})
    if not companies:
        return []
    by_guid = {company.guid: company for company in companies}
    rows = store.people_at_companies(db, list(by_guid), last_keys, first_keys)
    people = [
        candidate
        for row in rows
        for company in [by_guid[row["company_guid"]]]
        for candidate in _candidate(probe, row, company.score, company.on)
    ]
    return sorted(people, key=_rank)


def _namesakes(db: Database, probe: Probe) -> list[PersonCandidate]:
    """People with the query's exact name at companies named like the query's: with typos,
    or written another way (a company the name did not find, or not among the first found:
    "Falcon" is one company's alias and another's brand)."""
    if not probe.company_key or not probe.first_keys:
        return []
    rows = store.people_named(db, probe.last_key, sorted(probe.first_keys), NAMESAKES)
    guids = sorted({row["company_guid"] for row in rows})
    companies = {c["guid"]: c for c in store.companies_by_guids(db, guids)} if guids else {}
    written = _Written.of(probe.query.company_name)
    keys = sorted(written.values)
    alike = store.companies_with_name_forms(db, keys, guids) if keys and guids else set()
    people = []
    for row in rows:
        company = companies[row["company_guid"]]
        typos = NEAR_NAME_WEIGHT * _typo_similarity_to(probe.company_key, company)
        score = max(typos, _form_score(written, company) if company["guid"] in alike else 0)
        if score:
            people.extend(_candidate(probe, row, score, {"company_name"}))
    return people


def _candidate(
    probe: Probe, row: dict[str, Any], company_score: float, company_on: Iterable[str]
) -> list[PersonCandidate]:
    assert probe.person is not None
    similarity = person_similarity(probe.person, row)
    if similarity < PERSON_LEAST:
        return []
    score = PERSON_WEIGHT * similarity + (1 - PERSON_WEIGHT) * company_score
    on = frozenset({*company_on, *_person_fields(probe.query)})
    return [PersonCandidate(row, score, on)]


def person_similarity(person: names.PersonName, row: dict[str, Any]) -> float:
    """How alike a parsed name is to a contact's (first, middle, last names), 0..1."""
    direct = _name_pair(person.first, person.last, row)
    swapped = _name_pair(person.last, person.first, row) - SWAP_COST
    score = max(direct, swapped)
    if person.middle and row["middle_name"]:
        agree = person_key(person.middle)[:1] == person_key(row["middle_name"])[:1]
        score += 0.02 if agree else -0.05
    return max(0.0, min(1.0, score))


def _name_pair(first: str, last: str, row: dict[str, Any]) -> float:
    """The weighted similarity of a first and last name to a contact's; 0 when either is
    plainly another name (below FIRST_LEAST or LAST_LEAST), however alike the other."""
    first_score = names.first_name_similarity(first, row["first_name"])
    last_score = names.last_name_similarity(last, row["last_name"])
    if first_score < FIRST_LEAST or last_score < LAST_LEAST:
        return 0.0
    return FIRST_WEIGHT * first_score + (1 - FIRST_WEIGHT) * last_score


def _person_fields(query: Query) -> set[str]:
    given = ("full_name", "first_name", "middle_name", "last_name")
    return {name for name in given if getattr(query, name)}
