"""Benchmark: enrich match quality by grade and query kind, matcher latency, HTTP throughput.

    .venv/bin/python bench/enrich.py                            # full size, var/bench-full.db
    .venv/bin/python bench/enrich.py --db /work/bench-data/full.db
    .venv/bin/python bench/enrich.py --small                    # demo size, var/bench-demo.db
    .venv/bin/python bench/enrich.py --small --show-queries 3   # build queries, print samples

Data: the 100,000-company / 1,000,000-contact dataset (seed 7), built with `contactdata
demo-data` when `--db` does not exist; `--small` uses the demo size (5,000 / 100,000). The
database is only read (opened read-only, except by the matcher's own connection).

Queries (noise model: bench/enrich_queries.py): 9,000 contacts (employments, so a "No Longer"
contact is asked for at its former employer and must come back as that contact) and 8,000
companies sampled with `--seed`, one noisy query each; queries that fit another record as well
as theirs (two people of one name at one company, two companies of one name) are left out.
Plus 2,000 queries for records not in the database, each checked to be absent.

Scoring. A returned match is correct when every GUID it carries is the expected one: the
contact and company GUIDs for a contact query, the company GUID for a company query. A
company-only match to a contact query, or to a made-up person at an existing company, is
correct when its company is: it counts as "company only", not as recall. Precision = correct
/ returned; recall = queries answered with the expected record / queries; a false match on an
absent record is any returned contact, or a company other than the one the query named.

Speed: every query through `matching.find` in-process after a warm-up, each timed; then the
app under gunicorn (server/http/serve.py settings, bench/hello_app.py adds GET /hello) on a copy
of the database with one unlimited enterprise_plus organization, driven by wrk: hello, then
enrich (POSTs rotating over 500 known queries), then hello again, 2 connections per worker.

Suppression list (issue 24): the read side of an enrich call (`enrich.lookup`: find, the
tier's view, the suppression check) timed in-process on two copies of the database, rounds
alternating: without the check (as before issue 24), with it and an empty list, and with it and
a `--suppressions`-entry list (random hashes plus the e-mails of a few real people, who must
then come back without their contact). Target: p50 with the list within 5% of p50 without
the check.

Targets (issue 4), printed with pass/FAIL: A+ precision >= 99.5%; precision over all returned
>= 99%; recall >= 97% on queries with an e-mail or a name with a company name or website;
false matches on absent records <= 0.5%; latency p50 <= 1 ms and p99 <= 5 ms; enrich
throughput >= 50% of hello's; issue 25: recall >= 90% on company-name variants (all
`company: <variant>` kinds and `contact: company variant`, and each variant kind; issue 38
added boundary typo, spaced legal form, place tail, long-word typos and former name), >= 97%
on company typos (`company: typo`, `contact: company typo`). The "e-mail or name + company"
recall leaves `contact: company variant` out. Writes bench/results/enrich.txt (full size)
and every failure (wrong match, miss, company-only answer to a contact query) to
`--failures`.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import secrets
import sqlite3
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from enrich_queries import (
    VARIANT_CONTACT_KIND,
    VARIANT_KINDS,
    BenchQuery,
    Company,
    Contact,
    absent_queries,
    company_keys,
    known_queries,
    name_parts,
    query_keys,
    split_place_tail,
)
from rapidfuzz.distance import Levenshtein
from serving import (
    DEFAULT_DBS,
    SECRET,
    baseline_rps,
    between_baselines,
    copy_with_org,
    ensure_database,
    free_port,
    lua_script,
    machine,
    percentile,
    post,
    read_only,
    start_server,
    stop_server,
    wrk_line,
)

from server import enrich, matching, privacy, suppression
from server.clock import iso, utcnow
from server.enrich import Requester
from server.matching import Match, Query
from server.names import first_keys
from server.normalize import company_key, fold, person_key, registrable_domain
from server.records import JOIN
from server.storage import db as database
from server.storage import store

HERE = Path(__file__).parent
ROOT = HERE.parent
RESULTS = HERE / "results" / "enrich.txt"
CONTACT_QUERIES, COMPANY_QUERIES, ABSENT_QUERIES = 9_000, 8_000, 2_000
WARM_UP = 1_000
HTTP_BODIES = 500
SUPPRESSIONS, SUPPRESSION_ROUNDS, LISTED_PEOPLE = 100_000, 3, 50
GRADES = ("A+", "A", "A-", "B")

# --- data ------------------------------------------------------------------------------------


def _company(guid: str, name: str, aka: str, domain: str, country: str, city: str) -> Company:
    return Company(guid, name, tuple(a for a in aka.split(JOIN) if a), domain, country, city)


def _sample_rowids(conn: sqlite3.Connection, table: str, n: int, rng: random.Random) -> list[int]:
    (top,) = conn.execute(f"SELECT max(rowid) FROM {table}").fetchone()
    return sorted(rng.sample(range(1, top + 1), min(n, top)))


def _in_chunks(ids: Sequence[int], size: int = 500) -> Iterable[tuple[str, Sequence[int]]]:
    for start in range(0, len(ids), size):
        chunk = ids[start : start + size]
        yield ",".join("?" * len(chunk)), chunk


def sample_contacts(conn: sqlite3.Connection, n: int, rng: random.Random) -> list[Contact]:
    """`n` employments drawn at random, each as the contact at that company."""
    found = []
    for marks, chunk in _in_chunks(_sample_rowids(conn, "employments", n, rng)):
        rows = conn.execute(
            "SELECT c.guid, c.first_name, c.middle_name, c.last_name, e.email, e.status, "
            "e.job_title, co.guid, co.name, co.aka, co.domain, co.country, co.city "
            "FROM employments e JOIN contacts c ON c.guid = e.contact_guid "
            "JOIN companies co ON co.guid = e.company_guid "
            f"WHERE e.rowid IN ({marks}) ORDER BY e.rowid",
            chunk,
        )
        for guid, first, middle, last, email, status, title, *company in rows:
            found.append(
                Contact(guid, first, middle, last, email, status, _company(*company), title)
            )
    return found


def sample_companies(conn: sqlite3.Connection, n: int, rng: random.Random) -> list[Company]:
    """`n` companies drawn at random."""
    found = []
    for marks, chunk in _in_chunks(_sample_rowids(conn, "companies", n, rng)):
        rows = conn.execute(
            "SELECT guid, name, aka, domain, country, city FROM companies "
            f"WHERE rowid IN ({marks}) ORDER BY rowid",
            chunk,
        )
        found.extend(_company(*row) for row in rows)
    return found


class Ground:
    """What the database holds, to reject queries that are ambiguous or not really absent."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.by_first_word: dict[str, list[str]] = defaultdict(list)
        keys = conn.execute(
            "SELECT name_key FROM companies UNION SELECT alias_key FROM company_aliases"
        )
        for (key,) in keys:
            self.by_first_word[key.split(" ")[0] if key else ""].append(key)
        # The bench's own normal forms of every name and alias: key -> the companies with it
        # (enrich_queries.company_keys), and company keys by their words' initials (a typo
        # never touches a word's first letter nor its spaces).
        self.variant_owners: dict[str, str | tuple[str, ...]] = {}
        self.by_initials: dict[str, list[tuple[str, str]]] = defaultdict(list)
        # Keys run together, by their first and by their last three letters (a slip at a
        # word's edge keeps one end of a name).
        self.by_ends: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for guid, name, aka in conn.execute("SELECT guid, name, aka FROM companies"):
            for text in (name, *(a for a in aka.split(JOIN) if a)):
                for key in company_keys(text):
                    owners = self.variant_owners.get(key, ())
                    owners = (owners,) if isinstance(owners, str) else owners
                    if guid not in owners:
                        self.variant_owners[key] = (*owners, guid) if owners else guid
                key = company_key(text)
                self.by_initials[_initials(key)].append((key, guid))
                compact = key.replace(" ", "")
                for end in _ends(compact):
                    self.by_ends[end].append((compact, guid))

    def companies_named(self, name: str) -> set[str]:
        """GUIDs of companies whose name or alias has the key of `name`."""
        key = company_key(name)
        rows = self.conn.execute(
            "SELECT guid FROM companies WHERE name_key = ?1 "
            "UNION SELECT company_guid FROM company_aliases WHERE alias_key = ?1",
            (key,),
        )
        return {guid for (guid,) in rows}

    def near_company_name(self, name: str) -> bool:
        """Some company's name or alias key is within 2 edits of the key of `name` (among
        those with the same first word)."""
        key = company_key(name)
        bucket = self.by_first_word.get(key.split(" ")[0], ())
        return any(Levenshtein.distance(key, other, score_cutoff=2) <= 2 for other in bucket)

    def variant_of(self, name: str) -> set[str]:
        """GUIDs of companies `name` is a variant of: one of its `query_keys` is one of
        theirs."""
        found: set[str] = set()
        for key in query_keys(name):
            owners = self.variant_owners.get(key, ())
            found |= {owners} if isinstance(owners, str) else set(owners)
        return found

    def typo_rivals(self, name: str, guid: str) -> set[str]:
        """GUIDs of companies whose name or alias key is as near to the key of `name` as
        company `guid`'s nearest one (or nearer), among those of the same initials."""
        key = company_key(name)
        return _as_near(key, self.by_initials.get(_initials(key), []), guid)

    def edge_rivals(self, name: str, guid: str) -> set[str]:
        """GUIDs of companies whose name or alias key, run together, is as near to that of
        `name` as company `guid`'s nearest one (or nearer), among those that begin or end
        as it does."""
        compact = company_key(name).replace(" ", "")
        bucket = {pair for end in _ends(compact) for pair in self.by_ends.get(end, ())}
        return _as_near(compact, bucket, guid)

    def variant_companies(self, case: BenchQuery) -> set[str]:
        """The companies a company-name variant query fits (its own among them, mostly)."""
        name = case.query.company_name
        if case.variant in ("two typos", "long-word typos"):
            return self.typo_rivals(name, case.company_guid)
        if case.variant == "boundary typo":
            return self.edge_rivals(name, case.company_guid)
        if case.variant == "place tail":
            cut, place = split_place_tail(name)
            return self.variant_of(cut) | self.variant_of(f"{name_parts(cut).base} {place}")
        return self.variant_of(name)

    def companies_at(self, website: str) -> set[str]:
        """GUIDs of companies at the registrable domain of `website`."""
        domain = registrable_domain(website)
        rows = self.conn.execute("SELECT guid FROM companies WHERE domain = ?", (domain,))
        return {guid for (guid,) in rows}

    def email_known(self, email: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM employments WHERE email = ? AND email != ''", (email.casefold(),)
        )
        return row.fetchone() is not None

    def people(self, companies: set[str], keys: set[tuple[str, str]]) -> set[str]:
        """Contacts at `companies` with any of the (first key, last key) `keys`, nicknames
        counted as the same first name."""
        found = set()
        for first, last in keys:
            for first_key in first_keys(first) | {first}:
                rows = self.conn.execute(
                    "SELECT e.company_guid, c.guid FROM contacts c JOIN employments e "
                    "ON e.contact_guid = c.guid WHERE c.last_key = ? AND c.first_key = ?",
                    (last, first_key),
                )
                found |= {guid for company, guid in rows if company in companies}
        return found

    def contact_keys(self, guid: str) -> tuple[str, str]:
        row = self.conn.execute("SELECT first_key, last_key FROM contacts WHERE guid = ?", (guid,))
        return row.fetchone()

    def company_name(self, guid: str) -> str:
        row = self.conn.execute("SELECT name FROM companies WHERE guid = ?", (guid,)).fetchone()
        return row[0] if row else ""

    def rejected(self, case: BenchQuery) -> bool:
        """True when a known record's query fits another record as well, or an absent one's
        fits a record that exists."""
        q = case.query
        named = self.companies_named(q.company_name) if q.company_name else set()
        at = self.companies_at(q.company_website) if q.company_website else set()
        if case.absent:
            return self._exists(case, named, at)
        if case.variant:
            named |= self.variant_companies(case)
        if case.contact_guid:
            if q.email:
                return False
            names = query_name_keys(q) | {self.contact_keys(case.contact_guid)}
            names |= {(last, first) for first, last in names}
            return bool(self.people({case.company_guid} | named | at, names) - {case.contact_guid})
        original = self.companies_named(self.company_name(case.company_guid))
        return bool((named | at | original) - {case.company_guid})

    def _exists(self, case: BenchQuery, named: set[str], at: set[str]) -> bool:
        q = case.query
        if q.email and (
            self.email_known(q.email) or (not case.company_guid and self.companies_at(q.email))
        ):
            return True
        if not case.company_guid and (
            named
            or at
            or self.near_company_name(q.company_name)
            or (q.company_name and self.variant_of(q.company_name))
        ):
            return True
        names = query_name_keys(q)
        names |= {(last, first) for first, last in names}
        return bool(names and self.people({case.company_guid} | named | at, names))


def _as_near(key: str, bucket: Iterable[tuple[str, str]], guid: str) -> set[str]:
    """The owners of the keys of `bucket` (key, owner GUID) as near to `key` as the nearest
    key owned by `guid`, or nearer (within 4 edits when `guid` owns none of them)."""
    pairs = list(bucket)
    limit = min(
        (Levenshtein.distance(key, other) for other, owner in pairs if owner == guid), default=4
    )
    return {
        owner
        for other, owner in pairs
        if Levenshtein.distance(key, other, score_cutoff=limit) <= limit
    }


def _ends(compact: str) -> tuple[str, str]:
    return "<" + compact[:3], ">" + compact[-3:]


def _initials(key: str) -> str:
    return "".join(word[:1] for word in key.split(" "))


def query_name_keys(q: Query) -> set[tuple[str, str]]:
    """The (first key, last key) a query names, if any."""
    if q.first_name and q.last_name:
        return {(person_key(q.first_name), person_key(q.last_name))}
    words = fold(q.full_name).split()
    return {(words[0], words[-1])} if len(words) >= 2 else set()


def build_queries(conn: sqlite3.Connection, seed: int, absent: int) -> list[BenchQuery]:
    """The known and absent queries, in a seeded shuffled order."""
    rng = random.Random(seed)
    ground = Ground(conn)
    contacts = sample_contacts(conn, int(CONTACT_QUERIES * 1.1), rng)
    companies = sample_companies(conn, int(COMPANY_QUERIES * 1.1), rng)
    known = known_queries(rng, contacts, [], ground.rejected)[:CONTACT_QUERIES]
    known += known_queries(rng, [], companies, ground.rejected)[:COMPANY_QUERIES]
    made_up = absent_queries(rng, absent, contacts, companies, ground.rejected)
    cases = known + made_up
    rng.shuffle(cases)
    return cases


# --- in-process run and scoring ----------------------------------------------------------------


def run_matcher(path: Path, cases: Sequence[BenchQuery]) -> list[tuple[Match | None, int]]:
    """Each query through `matching.find` after a warm-up: (match, nanoseconds) per query."""
    db = database.connect(path, migrate=False)
    for case in cases[:WARM_UP]:
        matching.find(db, case.query)
    # The bench's own objects (queries, the ground truth's indexes) out of the collector's
    # reach, so that a full collection walks what matching makes, as in the server.
    gc.collect()
    gc.freeze()
    results = []
    for case in cases:
        started = time.perf_counter_ns()
        match = matching.find(db, case.query)
        results.append((match, time.perf_counter_ns() - started))
    return results


def outcome(case: BenchQuery, match: Match | None) -> str:
    """ "right", "company only" (the right company, no contact, where a contact was asked for
    or none exists), "wrong", or "none" (No Match)."""
    if match is None:
        return "none"
    if match.company_guid != case.company_guid:
        return "wrong"
    if match.contact_guid:
        return "right" if match.contact_guid == case.contact_guid else "wrong"
    return "company only" if case.contact_guid or case.absent else "right"


@dataclass
class Tally:
    """Outcomes of a group of queries."""

    counts: Counter[str] = field(default_factory=Counter)

    def add(self, result: str) -> None:
        self.counts[result] += 1

    @property
    def n(self) -> int:
        return sum(self.counts.values())

    @property
    def returned(self) -> int:
        return self.n - self.counts["none"]

    def precision(self) -> float | None:
        correct = self.counts["right"] + self.counts["company only"]
        return correct / self.returned if self.returned else None

    def share(self, result: str) -> float | None:
        return self.counts[result] / self.n if self.n else None


def identifying(q: Query) -> bool:
    """An e-mail, or a person's name with a company name or website."""
    name = (q.first_name and q.last_name) or len(q.full_name.split()) >= 2
    return bool(q.email or (name and (q.company_name or q.company_website)))


def pct(value: float | None, digits: int = 1) -> str:
    return "     -" if value is None else f"{value * 100:6.{digits}f}%"


def quality_report(
    cases: Sequence[BenchQuery], results: Sequence[tuple[Match | None, int]]
) -> tuple[list[str], dict[str, float | None]]:
    """The per-kind and per-grade tables, and the figures the targets are checked on."""
    kinds: dict[str, Tally] = defaultdict(Tally)
    grades: dict[str, Tally] = defaultdict(Tally)
    groups: dict[str, Tally] = defaultdict(Tally)
    for case, (match, _) in zip(cases, results, strict=True):
        result = outcome(case, match)
        kinds[case.kind].add(result)
        if match is not None:
            grades[match.grade].add(result)
            groups["returned"].add(result)
        groups["absent" if case.absent else "known"].add(result)
        if not case.absent and case.contact_guid and identifying(case.query) and not case.variant:
            groups["identifying"].add(result)
        if case.former:
            groups["former"].add(result)
    lines = [
        f"{'query kind':<38} {'n':>6} {'prec':>7} {'recall':>7} {'no match':>8} "
        f"{'co. only':>8} {'wrong':>7}"
    ]
    for kind in sorted(
        kinds, key=lambda k: (k.split(":")[0] != "contact", k.startswith("absent"), k)
    ):
        t = kinds[kind]
        recall = None if kind.startswith("absent") else t.share("right")
        lines.append(
            f"{kind:<38} {t.n:>6,} {pct(t.precision())} {pct(recall)} {pct(t.share('none')):>8} "
            f"{pct(t.share('company only')):>8} {pct(t.share('wrong'))}"
        )
    lines += ["", f"{'grade':<6} {'returned':>8} {'share':>7} {'precision':>9}"]
    returned = groups["returned"].n or 1
    for grade in GRADES:
        t = grades[grade]
        lines.append(f"{grade:<6} {t.n:>8,} {pct(t.n / returned)} {pct(t.precision(), 2):>9}")
    former = groups["former"]
    lines += [
        "",
        f'"No Longer" contacts at their former employer: {former.n:,} queries, precision '
        f"{pct(former.precision())}, recall {pct(former.share('right'))}",
    ]
    variants = [f"company: {kind}" for kind in VARIANT_KINDS]
    for kind in [*variants, f"contact: {VARIANT_CONTACT_KIND}"]:
        groups["variants"].counts += kinds[kind].counts
    for kind in ("company: typo", "contact: company typo"):
        groups["typos"].counts += kinds[kind].counts
    figures: dict[str, float | None] = {
        "a_plus": grades["A+"].precision(),
        "precision": groups["returned"].precision(),
        "recall": groups["identifying"].share("right"),
        "recall_n": groups["identifying"].n,
        "false": groups["absent"].share("wrong"),
        "absent_company_only": groups["absent"].share("company only"),
        "absent_n": groups["absent"].n,
        "variants": groups["variants"].share("right"),
        "variants_n": groups["variants"].n,
        "typos": groups["typos"].share("right"),
        "typos_n": groups["typos"].n,
    }
    for kind in variants:
        figures[kind] = kinds[kind].share("right")
        figures[f"{kind} n"] = kinds[kind].n
    return lines, figures


def latency(results: Sequence[tuple[Match | None, int]]) -> dict[str, float]:
    ns = sorted(elapsed for _, elapsed in results)
    return {
        "p50": percentile(ns, 50),
        "p99": percentile(ns, 99),
        "p99.9": percentile(ns, 99.9),
        "max": ns[-1] / 1e6,
        "mean": sum(ns) / len(ns) / 1e6,
    }


# --- failures ---------------------------------------------------------------------------------


def _describe_query(q: Query) -> str:
    return "  ".join(f"{name}={value!r}" for name, value in vars(q).items() if value)


def _describe(conn: sqlite3.Connection, company_guid: str, contact_guid: str) -> str:
    parts = []
    if contact_guid:
        row = conn.execute(
            "SELECT c.full_name, e.status, e.email FROM contacts c LEFT JOIN employments e "
            "ON e.contact_guid = c.guid AND e.company_guid = ? WHERE c.guid = ?",
            (company_guid, contact_guid),
        ).fetchone()
        name, status, email = row or ("?", "", "")
        parts.append(f"contact {contact_guid} {name!r} <{email or '-'}> {status or 'not there'}")
    if company_guid:
        row = conn.execute(
            "SELECT name, domain, aka FROM companies WHERE guid = ?", (company_guid,)
        ).fetchone()
        name, domain, aka = row or ("?", "", "")
        parts.append(f"at {company_guid} {name!r} {domain}" + (f" aka {aka!r}" if aka else ""))
    return " ".join(parts) or "nothing (absent record)"


def write_failures(
    path: Path,
    conn: sqlite3.Connection,
    cases: Sequence[BenchQuery],
    results: Sequence[tuple[Match | None, int]],
) -> int:
    """Every wrong match, miss and company-only answer to a contact query, grouped by kind."""
    failed = [
        (case, match, result)
        for case, (match, _) in zip(cases, results, strict=True)
        if (result := outcome(case, match)) == "wrong" or (not case.absent and result != "right")
    ]
    failed.sort(key=lambda item: (item[0].kind, item[2]))
    lines = [f"{len(failed):,} failures of {len(cases):,} queries", ""]
    for case, match, result in failed:
        got = "No Match"
        if match is not None:
            got = (
                f"{match.grade} score {match.score:.3f} on {','.join(match.matched_on)}: "
                + _describe(conn, match.company_guid, match.contact_guid)
            )
        lines += [
            f"[{case.kind}] {result}" + (" (No Longer)" if case.former else ""),
            f"  query:    {_describe_query(case.query)}",
            f"  expected: {_describe(conn, case.company_guid, case.contact_guid)}",
            f"  got:      {got}",
        ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return len(failed)


# --- the suppression list's cost ---------------------------------------------------------------


def listed_copy(path: Path, target: Path, entries: int, people: Sequence[str]) -> str:
    """A migrated copy of the database with an unlimited organization (its id returned) and
    a suppression list of `entries` hashes: the contacts `people` suppressed by their
    e-mails as `contactdata privacy suppress` does (their rows deleted), the rest random."""
    copy_with_org(path, target, "Suppression bench")
    db = database.connect(target)
    sql = "SELECT email FROM employments WHERE contact_guid = ? AND email != ''"
    emails = [row[0] for guid in people for row in db.execute(sql, [guid])]
    hash_of = privacy.hasher(SECRET.encode())
    suppressing = [suppression.person(email=email) for email in emails]
    listed = (
        suppression.act(db, hash_of, utcnow(), suppressing, "suppress")["listed"] if emails else 0
    )
    row = {"kind": "email", "action": "suppress", "reason": "", "actor": "bench"}
    rows = [{**row, "hash": secrets.token_hex(16), "created_at": iso(utcnow())}
            for _ in range(entries - listed)]  # fmt: skip
    with database.write(db):
        store.add_suppressions(db, rows)
    [org_id] = [org["id"] for org in db["organizations"].rows]
    db.conn.close()
    return org_id


def time_calls(
    db: database.Database, who: Requester, cases: Sequence[BenchQuery]
) -> tuple[list[Match | None], list[int], list[int]]:
    """Each query through `enrich.lookup` (match, view, suppression check) and then through
    a whole `enrich.enrich` call (charged and recorded): the matches and both timings."""
    matches, looked_up, enriched = [], [], []
    for case in cases:
        started = time.perf_counter_ns()
        match, _ = enrich.lookup(db, case.query, who)
        between = time.perf_counter_ns()
        enrich.enrich(db, who, case.body(), utcnow(), str(uuid.uuid4()))
        matches.append(match)
        looked_up.append(between - started)
        enriched.append(time.perf_counter_ns() - between)
    return matches, looked_up, enriched


def contacts_found(
    cases: Sequence[BenchQuery], matches: Sequence[Match | None], people: set[str]
) -> int:
    """How many queries for `people` came back with their contact."""
    pairs = zip(cases, matches, strict=True)
    return sum(
        1 for c, m in pairs if c.contact_guid in people and m and m.contact_guid == c.contact_guid
    )


def suppression_report(
    path: Path, cases: Sequence[BenchQuery], entries: int, rounds: int, work: Path
) -> tuple[list[str], float]:
    """p50 of `enrich.lookup` and of `enrich.enrich` without the check, with it and an empty
    list, and with it and an `entries`-hash list, in alternating rounds; the lines and the
    last's enrich p50 / the first's."""
    people = [case.contact_guid for case in cases if case.contact_guid][:LISTED_PEOPLE]
    plain, listed = work / "plain.db", work / "listed.db"
    plain_org, listed_org = (
        listed_copy(path, plain, 0, []),
        listed_copy(path, listed, entries, people),
    )
    plain_db, listed_db = database.connect(plain), database.connect(listed)
    secret = SECRET.encode()
    variants = {
        "no check (as before issue 24)": (plain_db, replace(
            enrich.requester_for(plain_db, plain_org, "bench", secret), hash_of=None)),
        "check, empty list": (plain_db, enrich.requester_for(plain_db, plain_org, "bench", secret)),
        f"check, {entries:,}-entry list": (
            listed_db, enrich.requester_for(listed_db, listed_org, "bench", secret)),
    }  # fmt: skip
    for db, requester in variants.values():
        time_calls(db, requester, cases[:WARM_UP])
    timings: dict[tuple[str, str], list[int]] = defaultdict(list)
    per_round: dict[tuple[str, str], list[float]] = defaultdict(list)
    matches: dict[str, list[Match | None]] = {}
    for _ in range(rounds):
        for name, (db, requester) in variants.items():
            matches[name], *both = time_calls(db, requester, cases)
            for part, ns in zip(("lookup", "enrich"), both, strict=True):
                timings[part, name] += ns
                per_round[part, name].append(percentile(sorted(ns), 50))
    p50 = {key: percentile(sorted(ns), 50) for key, ns in timings.items()}
    first, last = next(iter(variants)), list(variants)[-1]
    lines = [f"{'in-process, ms':<46} {'p50':>6} {'vs none':>8}  p50 per round"]
    for part, label in (("lookup", "enrich.lookup()"), ("enrich", "enrich.enrich()")):
        for name in variants:
            base, rounds_shown = (
                p50[part, first],
                " ".join(f"{v:.3f}" for v in per_round[part, name]),
            )
            lines.append(f"{label + ' ' + name:<46} {p50[part, name]:6.3f} "
                         f"{p50[part, name] / base - 1:+8.1%}  {rounds_shown}")  # fmt: skip
    listed_people = set(people)
    lines.append(
        f"queries for the {len(people)} listed people answered with their contact: "
        f"{contacts_found(cases, matches[first], listed_people)} without the list, "
        f"{contacts_found(cases, matches[last], listed_people)} with it"
    )
    plain_db.conn.close()
    listed_db.conn.close()
    return lines, p50["enrich", last] / p50["enrich", first]


# --- HTTP throughput --------------------------------------------------------------------------


def post_enrich(port: int, key: str, body: dict[str, str]) -> tuple[int, dict[str, object]]:
    return post(port, "/v7/enrich", {"apikey": key}, body)


def http_report(
    path: Path, cases: Sequence[BenchQuery], workers: int, seconds: int, work: Path
) -> tuple[list[str], float | None]:
    """Throughput of /hello and /v7/enrich on one server; the lines and enrich/hello."""
    copy = work / "http.db"
    started = time.perf_counter()
    key = copy_with_org(path, copy, "Enrich bench")
    lines = [f"database copied for the server in {time.perf_counter() - started:.0f} s"]
    known = [case for case in cases if not case.absent]
    bodies = [case.body() for case in random.Random(1).sample(known, HTTP_BODIES)]
    port = free_port()
    server = start_server(copy, port, workers, work / "server.log")
    try:
        status, _ = post_enrich(port, key, bodies[0])
        if status != 200:
            return [*lines, f"POST /v7/enrich answers HTTP {status}: enrich not measured"], None
        agree = sum(
            post_enrich(port, key, case.body())[1].get("conGUID", "") == case.contact_guid
            for case in [c for c in known if c.contact_guid][:50]
        )
        lines.append(f"HTTP answers with the expected conGUID: {agree}/50 contact queries")
        script, floor = work / "enrich.lua", work / "floor.lua"
        script.write_text(lua_script(bodies, {"apikey": key}, "/v7/enrich"))
        floor.write_text(lua_script(bodies, {"apikey": key}, "/floor"))
        runs = between_baselines(
            f"http://127.0.0.1:{port}",
            2 * workers,
            seconds,
            "/hello",
            [("enrich", "/v7/enrich", script), ("floor", "/floor", floor)],
        )
    finally:
        stop_server(server)
    lines += [wrk_line(name, run) for name, run in runs]
    hello = baseline_rps(runs)
    enrich_share, floor_share = runs[1][1]["rps"] / hello, runs[2][1]["rps"] / hello
    lines.append(
        f"enrich / hello {enrich_share:.0%}; floor / hello {floor_share:.0%} (floor: an enrich "
        "call without matching, see bench/hello_app.py)"
    )
    return lines, runs[1][1]["rps"] / hello


# --- main --------------------------------------------------------------------------------------


def target_lines(figures: dict[str, float | None], speed: dict[str, float]) -> list[str]:
    """Each target with its figure and pass/FAIL."""

    def check(label: str, value: float | None, shown: str, goal: str, ok: bool) -> str:
        mark = "-" if value is None else ("pass" if ok else "FAIL")
        return f"{label:<52} {shown:>9}  target {goal:<8} {mark}"

    def as_pct(key: str, digits: int = 2) -> str:
        value = figures.get(key)
        return "-" if value is None else f"{value * 100:.{digits}f}%"

    def at_least(label: str, key: str, goal: float) -> str:
        value = figures.get(key)
        label = f"{label} (n={figures.get(key + '_n') or figures.get(key + ' n') or 0:,.0f})"
        return check(label, value, as_pct(key, 1), f">= {goal:.0%}", (value or 0) >= goal)

    a_plus, precision, recall = figures["a_plus"], figures["precision"], figures["recall"]
    false, ratio, listed = figures["false"], figures.get("http"), figures.get("suppressed")
    return [
        check("A+ precision", a_plus, as_pct("a_plus"), ">= 99.5%", (a_plus or 0) >= 0.995),
        check("precision over all returned matches", precision, as_pct("precision"), ">= 99%",
              (precision or 0) >= 0.99),
        check(f"recall, e-mail or name + company/domain (n={figures['recall_n']:,.0f})", recall,
              as_pct("recall"), ">= 97%", (recall or 0) >= 0.97),
        check(f"false matches on absent records (n={figures['absent_n']:,.0f})", false,
              as_pct("false"), "<= 0.5%", (false if false is not None else 1) <= 0.005),
        check("in-process latency p50", speed["p50"], f"{speed['p50']:.3f} ms", "<= 1 ms",
              speed["p50"] <= 1),
        check("in-process latency p99", speed["p99"], f"{speed['p99']:.3f} ms", "<= 5 ms",
              speed["p99"] <= 5),
        check("HTTP enrich throughput / hello", ratio, as_pct("http", 0), ">= 50%",
              (ratio or 0) >= 0.5),
        check("enrich p50 with the suppression list / without", listed,
              "-" if listed is None else f"{listed - 1:+.1%}", "<= +5%", (listed or 9) <= 1.05),
        at_least("recall on company-name variants", "variants", 0.9),
        *(at_least(f"  recall, {kind}", f"company: {kind}", 0.9) for kind in VARIANT_KINDS),
        at_least("recall on company typos", "typos", 0.97),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, help="dataset (default var/bench-full.db, built)")
    parser.add_argument("--small", action="store_true", help="demo size: var/bench-demo.db")
    parser.add_argument("--seed", type=int, default=7, help="query sampling seed")
    parser.add_argument("--absent", type=int, default=ABSENT_QUERIES)
    parser.add_argument("--failures", type=Path, default=ROOT / "var" / "enrich-failures.txt")
    parser.add_argument("--show-queries", type=int, metavar="N", help="print N per kind, stop")
    parser.add_argument("--no-http", action="store_true", help="skip the HTTP throughput part")
    parser.add_argument("--seconds", type=int, default=10, help="length of each wrk run")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--suppressions",
        type=int,
        default=SUPPRESSIONS,
        help="entries of the suppression list timed (0: skip that part)",
    )
    parser.add_argument("--rounds", type=int, default=SUPPRESSION_ROUNDS,
                        help="alternating rounds of the suppression timing")  # fmt: skip
    options = parser.parse_args()
    size = "small" if options.small else "full"
    path = options.db or DEFAULT_DBS[size]
    ensure_database(path, size)
    conn = read_only(path)
    (companies,), (contacts,) = (
        conn.execute(f"SELECT count(*) FROM {t}").fetchone() for t in ("companies", "contacts")
    )
    lines = [
        f"bench/enrich.py on {machine()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"database {path}: {companies:,} companies, {contacts:,} contacts",
    ]
    print("\n".join(lines), flush=True)
    started = time.perf_counter()
    cases = build_queries(conn, options.seed, options.absent)
    kinds = Counter(case.kind.split(":")[0] for case in cases)
    lines.append(
        f"queries (seed {options.seed}): {kinds['contact']:,} contact, {kinds['company']:,} "
        f"company, {kinds['absent']:,} absent; built in {time.perf_counter() - started:.1f} s"
    )
    print(lines[-1], flush=True)
    if options.show_queries:
        show_queries(cases, options.show_queries)
        return
    results = run_matcher(path, cases)
    table, figures = quality_report(cases, results)
    speed = latency(results)
    lines += ["", *table, ""]
    lines.append(
        f"in-process find(): p50 {speed['p50']:.3f} ms  p99 {speed['p99']:.3f} ms  p99.9 "
        f"{speed['p99.9']:.3f} ms  max {speed['max']:.1f} ms  mean {speed['mean']:.3f} ms "
        f"({len(results):,} calls after {WARM_UP:,} warm-up)"
    )
    lines.append(
        f"absent records answered company-only (made-up person, right company): "
        f"{pct(figures['absent_company_only'])}"
    )
    n_failed = write_failures(options.failures, conn, cases, results)
    print("\n".join(lines[3:]), flush=True)
    if options.suppressions:
        with tempfile.TemporaryDirectory(prefix="bench-suppress-") as work:
            listed_lines, figures["suppressed"] = suppression_report(
                path, cases, options.suppressions, options.rounds, Path(work)
            )
        lines += ["", *listed_lines]
        print("\n".join(lines[-len(listed_lines) - 1 :]), flush=True)
    if not options.no_http:
        with tempfile.TemporaryDirectory(prefix="bench-enrich-") as work:
            http_lines, figures["http"] = http_report(
                path, cases, options.workers, options.seconds, Path(work)
            )
        heading = (
            f"HTTP: gunicorn, {options.workers} sync workers; wrk, {2 * options.workers} "
            f"connections, {options.seconds} s per run"
        )
        lines += ["", heading, *http_lines]
        print("\n".join(lines[-len(http_lines) - 1 :]), flush=True)
    targets = target_lines(figures, speed)
    lines += ["", *targets]
    print("\n".join(lines[-len(targets) - 1 :]))
    print(f"{n_failed:,} failures written to {options.failures}")
    if size == "full":
        RESULTS.parent.mkdir(exist_ok=True)
        RESULTS.write_text("\n".join(lines) + "\n")


def show_queries(cases: Sequence[BenchQuery], per_kind: int) -> None:
    """A few queries of each kind, for reading the noise model at work."""
    shown: Counter[str] = Counter()
    for case in sorted(cases, key=lambda c: c.kind):
        if shown[case.kind] < per_kind:
            shown[case.kind] += 1
            print(f"{case.kind:<36} {json.dumps(case.body(), ensure_ascii=False)}")
    print(Counter(case.kind for case in cases).most_common())


if __name__ == "__main__":
    main()
