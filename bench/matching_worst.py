"""Benchmark: the costliest enrich inputs the API accepts, next to normal queries (issue 19).

    .venv/bin/python bench/matching_worst.py                 # full size, var/bench-full.db
    .venv/bin/python bench/matching_worst.py --small         # demo size, var/bench-demo.db
    .venv/bin/python bench/matching_worst.py --no-http

Data: the dataset of bench/enrich.py (built with `contactdata demo-data` when missing), only
read. Misspelt words are the dataset's own frequent company-name words with their third letter
dropped, kept when the matcher has CORRECTIONS known words for them; the names cycle
MISSPELT_WORDS of them (a name with more distinct misspelt words is not corrected, so costs
less). Company names of 1, 2, 4, ... such words, up to the most that fit the 1,000 characters an
input field may hold, go through `matching.find` in-process; the ladder stops after the first
name slower than LADDER_LIMIT s (before issue 19 each misspelt word tripled time and memory).
Next to them, in the same run: a normal query (a real company's name with one typo), its exact
name, and a person (Robert Smith) at it. Then every enrich input field alone, and beside that
person and name, with 1,000-character values of several shapes: the slowest are shown. Each
timing is the median of REPEATS calls with the company-key cache cleared before each (as the
first call of a new name).

HTTP: the same names POSTed to /v7/enrich under gunicorn (server/http/serve.py settings, 30 s
worker timeout) on a copy of the database; the longest name only when it finished in-process.

Target (issue 19), printed with pass/FAIL: the longest misspelt name in-process < 50 ms.
Writes bench/results/matching_worst.txt (full size) or `--results`.
"""

from __future__ import annotations

import argparse
import random
import resource
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from serving import (
    DEFAULT_DBS,
    copy_with_org,
    ensure_database,
    free_port,
    machine,
    post,
    start_server,
    stop_server,
)
from sqlite_utils import Database

from server import enrich, matching
from server.matching import Query
from server.normalize import company_key
from server.storage import db as database
from server.storage import store

RESULTS = Path(__file__).parent / "results" / "matching_worst.txt"
REPEATS = 7
LADDER_LIMIT = 2.0  # seconds: a slower name ends the ladder
TARGET_MS = 50
HTTP_REPEATS = 5
TYPOS = 40  # misspelt words looked for; the names cycle MISSPELT_WORDS of them
BESIDE = "Robert Smith"  # the person a field's value is also sent beside, at the exact name
SHAPES = {
    "two-letter words": "ab ",
    "one letter": "a",
    "commas and spaces": ", ",
    "dots": "a.",
    "spaces": " ",
    "legal suffixes": "holdings inc ",
    "at signs": "@",
    "accents": "é",
    "slashes": "a/",
    "hyphens": "a-",
    "'the'": "the ",
    "name particles": "van de la ",
}


# --- inputs ------------------------------------------------------------------------------------


def misspelt_words(db: Database, wanted: int) -> list[str]:
    """Frequent company-name words with their third letter dropped, each unknown to the
    dataset and with CORRECTIONS known words it may be a misspelling of."""
    rows = db.execute(
        "SELECT word FROM company_name_words WHERE length(word) BETWEEN 6 AND 10 "
        "ORDER BY companies DESC, word LIMIT 5000"
    )
    found: list[str] = []
    for (word,) in rows:
        typo = word[:2] + word[3:]
        if typo in found or store.known_company_words(db, [typo]):
            continue
        if len(matching._corrections(db, typo)) == matching.CORRECTIONS:
            found.append(typo)
        if len(found) == wanted:
            break
    return found


def name_of(words: Sequence[str], count: int) -> str:
    return " ".join(words[i % len(words)] for i in range(count))


def longest_count(words: Sequence[str]) -> int:
    """How many of `words` (cycled) fit in one input field."""
    count = 1
    while len(name_of(words, count + 1)) <= enrich.MAX_VALUE_CHARS:
        count += 1
    return count


def normal_queries(db: Database) -> tuple[Query, Query]:
    """A company's name with one typo that the matcher corrects, and its exact name."""
    rows = db.execute(
        "SELECT guid, name FROM companies WHERE name LIKE '% %' ORDER BY rowid LIMIT 500"
    )
    for guid, name in rows:
        words = name.split()
        long = [i for i, word in enumerate(words) if len(word) >= 7 and word.isalpha()]
        if not long:
            continue
        word = words[long[0]]
        typo = " ".join([*words[: long[0]], word[:3] + word[4:], *words[long[0] + 1 :]])
        found = matching.find(db, Query(company_name=typo))
        if found is not None and found.company_guid == guid:
            return Query(company_name=typo), Query(company_name=name)
    raise RuntimeError("no company name with a correctable typo in the first 500")


def field_values() -> dict[str, str]:
    """1,000-character values of each shape."""
    return {
        shape: (unit * enrich.MAX_VALUE_CHARS)[: enrich.MAX_VALUE_CHARS - 1] + "z"
        for shape, unit in SHAPES.items()
    }


# --- timing ------------------------------------------------------------------------------------


def timed(db: Database, query: Query, repeats: int = REPEATS) -> float:
    """Median ms of `matching.find(query)`, cold: the company-key cache cleared each time.
    A call slower than LADDER_LIMIT / 4 is not repeated."""
    spent = []
    for _ in range(repeats):
        company_key.cache_clear()
        started = time.perf_counter()
        matching.find(db, query)
        spent.append(time.perf_counter() - started)
        if spent[-1] > LADDER_LIMIT / 4:
            break
    return statistics.median(spent) * 1000


def ladder(db: Database, words: Sequence[str]) -> list[tuple[int, int, float]]:
    """(misspelt words, characters, ms) for names of more and more words, until one is
    slower than LADDER_LIMIT or the longest an input field holds is done."""
    longest = longest_count(words)
    counts = sorted({*[1, 2, 3, 4, 6, 8, 10, 11, 12, 13, 14, 16, 20, 40], longest})
    rows = []
    for count in (c for c in counts if c <= longest):
        name = name_of(words, count)
        ms = timed(db, Query(company_name=name))
        rows.append((count, len(name), ms))
        print(f"  {count:4} words {len(name):5} chars {ms:10.2f} ms", flush=True)
        if ms > LADDER_LIMIT * 1000:
            break
    return rows


def slowest_fields(db: Database, company: str) -> list[tuple[float, str, str, str]]:
    """(ms, field, shape, alone or beside a name) of every field and value, slowest first."""
    beside = {"full_name": BESIDE, "company_name": company}
    rows = []
    for attribute in matching.INPUT_NAMES:
        for shape, value in field_values().items():
            for extra, how in (({}, "alone"), (beside, "beside a name")):
                query = Query(**{**extra, attribute: value})
                rows.append((timed(db, query, 3), attribute, shape, how))
    return sorted(rows, reverse=True)


# --- HTTP --------------------------------------------------------------------------------------


def http_lines(path: Path, bodies: Sequence[tuple[str, dict[str, str]]], work: Path) -> list[str]:
    """Status and median time of HTTP_REPEATS POSTs of each body to /v7/enrich."""
    copy = work / "http.db"
    key = copy_with_org(path, copy, "Worst-case bench")
    port = free_port()
    server = start_server(copy, port, 2, work / "server.log")
    lines = []
    try:
        for label, body in bodies:
            statuses, spent = [], []
            for _ in range(HTTP_REPEATS):
                started = time.perf_counter()
                try:
                    status, _ = post(port, "/v7/enrich", {"apikey": key}, body)
                except OSError as error:
                    status = type(error).__name__
                spent.append(time.perf_counter() - started)
                statuses.append(str(status))
            lines.append(
                f"  {label:<44} {statistics.median(spent) * 1000:10.2f} ms  "
                f"HTTP {','.join(sorted(set(statuses)))}"
            )
            print(lines[-1], flush=True)
    finally:
        stop_server(server)
    return lines


# --- main --------------------------------------------------------------------------------------


def in_process_lines(
    db: Database, words: Sequence[str], normal: Sequence[tuple[str, Query]]
) -> tuple[list[str], list[tuple[int, int, float]]]:
    """The in-process figures, and the ladder's steps."""
    lines = ["in-process matching.find(), median of cold calls:"]
    for label, query in normal:
        lines.append(f"  {label:<24} {timed(db, query):10.2f} ms  ({query.company_name!r})")
    lines.append("  company names of misspelt words:")
    print("\n".join(lines), flush=True)
    steps = ladder(db, words)
    lines += [f"  {count:4} words {chars:5} chars {ms:10.2f} ms" for count, chars, ms in steps]
    if _worst(words, steps) == float("inf"):
        longest = longest_count(words)
        lines.append(f"  ladder stopped: {longest} words ({enrich.MAX_VALUE_CHARS} chars) not run")
    lines.append(f"  peak memory of this process: {_peak_mb():,.0f} MB")
    fields = slowest_fields(db, normal[1][1].company_name)  # the exact name
    lines.append(f"every input field, 1,000-character values ({len(fields)} queries), slowest:")
    lines += [f"  {ms:8.2f} ms  {name} = {shape}, {how}" for ms, name, shape, how in fields[:5]]
    print("\n".join(lines[-7:]), flush=True)
    return lines, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, help="dataset (default var/bench-full.db, built)")
    parser.add_argument("--small", action="store_true", help="demo size: var/bench-demo.db")
    parser.add_argument("--no-http", action="store_true", help="skip the HTTP part")
    parser.add_argument("--results", type=Path, help=f"default {RESULTS} (full size only)")
    options = parser.parse_args()
    size = "small" if options.small else "full"
    path = options.db or DEFAULT_DBS[size]
    ensure_database(path, size)
    db = database.connect(path, migrate=False)
    (companies,) = db.execute("SELECT count(*) FROM companies").fetchone()
    found = misspelt_words(db, TYPOS)
    random.Random(7).shuffle(found)
    # A name of more distinct misspelt words than MISSPELT_WORDS is not corrected at all: the
    # costly names repeat that many, each read for its corrections (once, however repeated).
    words = found[: matching.MISSPELT_WORDS]
    typo, exact = normal_queries(db)
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [
        f"bench/matching_worst.py on {machine()}, {stamp}",
        f"database {path}: {companies:,} companies",
        f"misspelt words (the matcher corrects {len(words)} a name, cycled): {' '.join(words)}",
        "",
    ]
    print("\n".join(lines), flush=True)
    person = Query(full_name=BESIDE, company_name=exact.company_name)
    normal = [("normal: one typo", typo), ("normal: exact name", exact), ("normal: person", person)]
    measured, steps = in_process_lines(db, words, normal)
    lines += measured
    db.conn.close()
    worst = _worst(words, steps)
    if not options.no_http:
        count = max(c for c, _, ms in steps if ms <= LADDER_LIMIT * 1000)
        bodies = [
            *((label, {"companyName": q.company_name}) for label, q in normal[:2]),
            (f"{count} misspelt words", {"companyName": name_of(words, count)}),
        ]
        heading = f"HTTP POST /v7/enrich, gunicorn 2 sync workers, median of {HTTP_REPEATS}:"
        print(heading, flush=True)
        with tempfile.TemporaryDirectory(prefix="bench-worst-") as work:
            lines += [heading, *http_lines(path, bodies, Path(work))]
    mark = "pass" if worst < TARGET_MS else "FAIL"
    target = f"target < {TARGET_MS} ms  {mark}"
    lines += ["", f"longest misspelt name in-process: {worst:.2f} ms  {target}"]
    print(lines[-1])
    results = options.results or (RESULTS if size == "full" else None)
    if results is not None:
        results.parent.mkdir(exist_ok=True)
        results.write_text("\n".join(lines) + "\n")


def _worst(words: Sequence[str], steps: Sequence[tuple[int, int, float]]) -> float:
    """The ms of the longest name an input field holds; inf when the ladder stopped before."""
    count, _, ms = steps[-1]
    return ms if count == longest_count(words) and ms <= LADDER_LIMIT * 1000 else float("inf")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


if __name__ == "__main__":
    main()
