"""Import companies and contacts from CSV or JSON Lines files written in enrich's field names.

Each row is checked on its own: a bad row is reported (file, line, reason naming the field)
and skipped, good rows are upserted by GUID in batches, so importing a file twice changes
nothing. Files are streamed; only one batch is held in memory.
"""

from __future__ import annotations

import csv
import gc
import itertools
import json
import marshal
import math
import multiprocessing
import os
import pickle
import re
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache, partial
from itertools import chain, islice
from multiprocessing.connection import Connection
from operator import add, itemgetter
from pathlib import Path
from typing import Any, NamedTuple, TextIO

from nameparser import HumanName
from sqlite_utils import Database

from server import changes, facets, places, privacy, titles
from server.clock import iso, utcnow
from server.normalize import (
    alias_keys,
    company_forms,
    company_key,
    email_key,
    person_key,
    registrable_domain,
)
from server.records import (
    COMPANY_COLUMNS,
    COMPANY_EXTRA_COLUMNS,
    CONTACT_COLUMNS,
    EMPLOYMENT_COLUMNS,
    GRADES,
    JOIN,
    RECORD_STATUSES,
    REVENUE_RANGES,
    month_to_stored,
)
from server.storage import changes as changes_store
from server.storage import db as database
from server.storage import store
from server.storage.dialect import is_postgres

Values = list[str]


def _fields(columns: str, *maps: dict[str, str]) -> tuple[str, ...]:
    """The input field of each of `columns` (space-separated), by the field -> column `maps`."""
    field_of = {column: name for names in maps for name, column in names.items()}
    return tuple(field_of[column] for column in columns.split())


# The columns the converters take, in order, and the input fields they are read from.
_COMPANY_INPUT = (
    "guid name aka website address city state zipcode country phone employee_count "
    "revenue_range industry naics_codes naics_descriptions sic_codes sic_descriptions "
    "legal_status parent_guid global_hq_guid worldwide_parent_name global_regions profile_url "
    "latitude longitude email_pattern"
)
_CONTACT_INPUT = (
    "guid company_guid first_name middle_name last_name full_name profile_url location accuracy "
    "status email job_title levels functions sub_functions work_address work_city work_state "
    "work_zipcode work_country work_phone latitude longitude direct_dial1 direct_dial2 "
    "job_started_on job_updated_on"
)
COMPANY_FIELDS = _fields(_COMPANY_INPUT, COMPANY_COLUMNS, COMPANY_EXTRA_COLUMNS)
CONTACT_FIELDS = _fields(_CONTACT_INPUT, CONTACT_COLUMNS, EMPLOYMENT_COLUMNS)
SUFFIXES = (".csv", ".jsonl", ".ndjson")
CHUNKS_PER_TRANSACTION = 10

_HEX16 = re.compile(r"[0-9A-F]{16}")
_HEX32 = re.compile(r"[0-9A-F]{32}")
_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_EMAIL = re.compile(rf"{_ATOM}(?:\.{_ATOM})*@(?:{_LABEL}\.)+[A-Za-z]{{2,63}}")
_GRADES = {grade.casefold(): grade for grade in GRADES}
_STATUSES = {status.casefold(): status for status in RECORD_STATUSES}
_REVENUE_RANGES = frozenset(REVENUE_RANGES)


@dataclass
class RowError:
    """One rejected row: the file, its 1-based physical line (a CSV header is line 1), why."""

    file: str
    line: int
    reason: str


@dataclass
class ImportReport:
    """Rows imported from each file (a contacts row is one employment), and every rejected row."""

    companies: int = 0
    contacts: int = 0
    errors: list[RowError] = field(default_factory=list)
    suppressed: int = 0  # contact rows of people on the suppression list, left out


class InvalidRow(ValueError):
    """A row that cannot be imported; the message starts with the field at fault."""


class UnsupportedFile(ValueError):
    """A file whose extension is neither .csv, .jsonl nor .ndjson."""


def import_files(
    db: Database,
    *,
    companies: Path | None,
    contacts: Path | None,
    progress: Callable[[int], None] | None = None,
    batch_size: int = 5000,
    now: datetime | None = None,
    screen: privacy.Screen | None = None,
    detect_changes: bool = True,
) -> ImportReport:
    """Import a companies file, then a contacts file (one row per employment); either optional.

    A worker process reads and converts `batch_size` rows at a time while this one writes
    them, CHUNKS_PER_TRANSACTION batches per transaction. `progress` is called with the
    number of lines read since its previous call. With `screen` (the suppression list), the
    rows of the people on it are left out and counted.

    Into tables that had rows, what the import changed is recorded (server/changes.py) in the
    transactions that write it, stamped `now`; `detect_changes=False` (for bench/
    changes_import.py, which measures what detection costs) leaves that out.
    """
    for path in (companies, contacts):
        if path is not None and path.suffix.lower() not in SUFFIXES:
            raise UnsupportedFile(f"{path}: use a .csv, .jsonl or .ndjson file")
    report = ImportReport()
    stamp = iso(now or utcnow())
    advance = progress or (lambda _lines: None)
    known = _CompanyCheck(db)
    form = store.row_form(db)
    watch_companies = detect_changes and not store.is_empty(db, "companies")
    watch_jobs = detect_changes and not store.is_empty(db, "employments")
    # What change detection compares is read from a record's row as it is (SQLite), or, from
    # a row sent as COPY text (PostgreSQL), made by the converters and sent beside it.
    sent = is_postgres(db)
    files = [
        (companies, COMPANY_FIELDS,
         partial(_company_record, updated_at=stamp, form=form, watch=watch_companies and sent)),
        (contacts, CONTACT_FIELDS,
         partial(_contact_record, updated_at=stamp, form=form, screening=screen is not None,
                 watch=watch_jobs and sent)),
    ]  # fmt: skip
    company_changes = partial(_company_changes, compared=_sent if sent else _company_values)
    write_companies = _recording(_write_companies, company_changes, stamp, watch_companies)
    job_changes = _JobChanges(_sent_beside if sent else _job_values)
    write_contacts = _recording(_write_contacts, job_changes, stamp, watch_jobs)
    work = [file for file in files if file[0]]
    with _rare_collections(), _converted(work, batch_size) as converted:
        if companies is not None:
            accepted = _accepted(next(converted), known.add, companies, report.errors)
            report.companies = _load(db, accepted, write_companies, advance, _COMPANY_TABLES)
            with database.write(db):
                store.lock_dataset(db)
                store.index_company_words(db)
        if contacts is not None:
            accepted = _accepted(next(converted), known.require, contacts, report.errors)
            screened = _Screened(db, screen) if screen else None
            if screened:
                accepted = _accepted(accepted, screened.drop, contacts, report.errors)
            report.contacts = _load(db, accepted, write_contacts, advance, _CONTACT_TABLES)
            report.suppressed = screened.dropped if screened else 0
    return report


@contextmanager
def _rare_collections() -> Iterator[None]:
    """Inside the block (and in processes forked in it), collect cyclic garbage rarely: an
    import makes millions of tuples and no cycles, and each collection walks the batches in
    flight."""
    thresholds = gc.get_threshold()
    gc.set_threshold(50_000, 20, 20)
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


_COMPANY_TABLES = ("companies", "company_aliases", "company_name_forms")
_CONTACT_TABLES = ("contacts", "employments")
# The tables whose secondary indexes a load into empty tables drops and builds again at the
# end. company_aliases and company_name_forms keep theirs: replacing a company's aliases and
# forms deletes them by company.
_REBUILT = ("companies", "contacts", "employments")


class Batch(NamedTuple):
    """Converted rows of one stretch of a file: `records` start with their line number,
    `errors` are (line, reason) pairs, `lines` counts the lines since the previous batch."""

    lines: int
    records: list[tuple[Any, ...]]
    errors: list[tuple[int, str]]


def _load(
    db: Database,
    batches: Iterable[Batch],
    write: Callable[..., None],
    advance: Callable[[int], None],
    tables: Sequence[str],
) -> int:
    """Write every batch's records; return how many were written.

    Into empty tables, the whole file is one bulk transaction (see `db.bulk_write`) that drops
    their secondary indexes and builds them again at the end: sorting once is far faster than
    inserting a million random keys into B-trees larger than the cache, and a killed import
    leaves nothing behind. Foreign keys are checked once at the end, not per row (the rows'
    references were checked here: `_CompanyCheck`, contacts written before their
    employments). Into tables with rows, batches commit as they go, so readers keep
    their indexes.
    """
    if not all(store.is_empty(db, table) for table in tables):
        return _write_all(db, batches, write, advance)
    with database.bulk_write(db):
        store.lock_dataset(db)
        indexes = store.drop_secondary_indexes(db, [t for t in tables if t in _REBUILT])
        foreign_keys = store.drop_foreign_keys(db, tables)
        written = _write_all(db, batches, partial(write, new_keys=True), advance)
        with database.sorting_in_threads(db):
            store.restore(db, indexes)
        store.restore(db, foreign_keys)
    return written


def _write_all(
    db: Database,
    batches: Iterable[Batch],
    write: Callable[[Database, list[Any]], None],
    advance: Callable[[int], None],
) -> int:
    """Write every batch's records; return how many were written.

    Several batches share a transaction: each commit rewrites every index page it touched, so
    fewer, larger commits are much faster, while one batch at a time bounds memory. Each
    transaction holds the dataset lock (`store.lock_dataset`), as every writer of these
    tables does, and no other.
    """
    written = 0
    pending = iter(batches)
    for first in pending:
        with database.write(db):
            store.lock_dataset(db)
            for batch in chain([first], islice(pending, CHUNKS_PER_TRANSACTION - 1)):
                write(db, batch.records)
                written += len(batch.records)
                advance(batch.lines)
    return written


def _accepted(
    batches: Iterable[Batch],
    check: Callable[[list[Any]], tuple[list[Any], list[tuple[int, str]]]],
    path: Path,
    errors: list[RowError],
) -> Iterator[Batch]:
    """The batches with only the records `check` keeps; every rejected row goes to `errors`,
    in line order."""
    for batch in batches:
        records, refused = check(batch.records)
        rejected = sorted(batch.errors + refused) if refused else batch.errors
        errors.extend(RowError(str(path), line, reason) for line, reason in rejected)
        yield batch._replace(records=records)


# A record is (line, guid, ...): for companies (line, guid, row, alias keys, name forms as
# (key, form, alias)), for contacts
# (line, contact guid, company guid, contact row, employment row, what the employment takes
# from its contact), the rows in the form of store.row_form.
_GUID, _COMPANY, _ROW = itemgetter(1), itemgetter(2), itemgetter(3)
_JOB, _KEYS, _JOB_KEY, _SECOND = itemgetter(4), itemgetter(5), itemgetter(1, 2), itemgetter(1)
_ALIASES, _FORMS = itemgetter(3), itemgetter(4)
# With change detection, the values compared (changes.COMPANY_FIELDS, changes.JOB_FIELDS)
# follow: a company's last, a contact's after what its employment takes from it.
_COMPANY_WATCHED, _JOB_WATCHED = itemgetter(5), itemgetter(6)
_PAIR, _FIRST = itemgetter(0, 1), itemgetter(0)
Compared = Callable[[list[Any]], list[tuple[Any, ...]]]


def _company_values(records: list[Any]) -> list[tuple[Any, ...]]:
    """The compared values of company records, from their rows (SQLite's form)."""
    return list(map(_COMPANY_COMPARED, map(_COMPANY, records)))


def _job_values(records: list[Any]) -> list[tuple[Any, ...]]:
    """The compared values of contact records, from their employment rows (SQLite's form)."""
    return list(map(_JOB_COMPARED, map(_JOB, records)))


def _sent(records: list[Any]) -> list[tuple[Any, ...]]:
    """The compared values the converters sent after a company's record."""
    return list(map(_COMPANY_WATCHED, records))


def _sent_beside(records: list[Any]) -> list[tuple[Any, ...]]:
    """The compared values the converters sent after a contact's record."""
    return list(map(_JOB_WATCHED, records))


def _write_companies(
    db: Database, records: list[tuple[int, str, Any, list[str], Any]], new_keys: bool = False
) -> None:
    # The last row of a GUID wins.
    aliases = dict(zip(map(_GUID, records), map(_ALIASES, records), strict=True))
    forms = dict(zip(map(_GUID, records), map(_FORMS, records), strict=True))
    store.upsert_company_values(db, list(map(_COMPANY, records)), new_keys=new_keys)
    store.replace_company_aliases(
        db, aliases, [(guid, key) for guid, keys in aliases.items() for key in keys]
    )
    store.replace_company_forms(
        db,
        forms,
        [(key, form, guid, alias) for guid, rows in forms.items() for key, form, alias in rows],
    )


def _recording(
    write: Callable[..., None],
    find: Callable[[Database, list[Any]], list[changes.Change]],
    recorded_at: str,
    watch: bool,
) -> Callable[..., None]:
    """`write`, or with `watch` a writer that first records the changes `find` sees between
    the stored rows and a batch's records, in the same transaction."""
    if not watch:
        return write

    def write_and_record(db: Database, records: list[Any]) -> None:
        changes.record(db, find(db, records), recorded_at)
        write(db, records)

    return write_and_record


class _JobChanges:
    """The changes each batch of contact records makes: the stored employments of its contacts
    are read in one statement, and only the rows not among them exactly (a set difference,
    no Python per row) are looked at. Contacts new to the database stay new for the whole
    import: a later batch with more of their rows changes nothing."""

    def __init__(self, compared: Compared) -> None:
        self.compared = compared
        self.new: set[str] = set()

    def __call__(self, db: Database, records: list[Any]) -> list[changes.Change]:
        watched = self.compared(records)
        latest = dict(zip(map(_PAIR, watched), watched, strict=True))  # an employment's last
        contacts = set(map(_FIRST, watched))
        stored = changes_store.employments_of(db, changes.JOB_FIELDS, list(contacts))
        self.new |= contacts.difference(map(_FIRST, stored))
        fresh = set(latest.values()).difference(stored)
        if not fresh:
            return []
        names = changes_store.company_names(db, list({row[1] for row in fresh}))
        return changes.of_jobs(stored, sorted(fresh), names, self.new)


def _company_changes(db: Database, records: list[Any], compared: Compared) -> list[changes.Change]:
    """The firmographic changes a batch of company records makes (as `_JobChanges`)."""
    watched = compared(records)
    latest = dict(zip(map(_FIRST, watched), watched, strict=True))
    stored = changes_store.companies_of(db, changes.COMPANY_FIELDS, list(latest))
    fresh = set(latest.values()).difference(stored)
    return changes.of_companies(stored, sorted(fresh)) if fresh else []


def _write_contacts(
    db: Database, records: list[tuple[int, str, str, Any, Any, Any]], new_keys: bool = False
) -> None:
    # A contact that moved has a row per employment: write it once (the last row wins), and
    # its employments take their keys from that row. Built with map and itemgetter, not
    # per-row Python: this process is the one writer.
    guids = list(map(_GUID, records))
    contacts = dict(zip(guids, map(_ROW, records), strict=True))
    keys = dict(zip(guids, map(_KEYS, records), strict=True))
    # Key order walks each B-tree once per batch instead of jumping between its pages.
    store.upsert_contact_values(db, map(_SECOND, sorted(contacts.items())), new_keys=new_keys)
    jobs = sorted(records, key=_JOB_KEY)
    their_keys = map(keys.__getitem__, map(_GUID, jobs))
    store.upsert_employment_values(db, map(add, map(_JOB, jobs), their_keys), new_keys=new_keys)


class _CompanyCheck:
    """Whether a contact row's company exists: imported now, or looked up once per batch for
    the GUIDs not seen before."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.found: set[str] = set()
        self.missing: set[str] = set()

    def add(self, records: list[Any]) -> tuple[list[Any], list[tuple[int, str]]]:
        """Note the companies of this import, so their contacts need no lookup."""
        self.found.update(map(_GUID, records))
        return records, []

    def require(self, records: list[Any]) -> tuple[list[Any], list[tuple[int, str]]]:
        """The contact records whose company exists, and a reason for each of the others."""
        guids = set(map(_COMPANY, records))
        unknown = guids - self.found - self.missing
        if unknown:
            found = store.existing_company_guids(self.db, unknown)
            self.found |= found
            self.missing |= unknown - found
        if guids.isdisjoint(self.missing):
            return records, []
        kept, refused = [], []
        for record in records:
            guid = _COMPANY(record)
            if guid in self.missing:
                reason = f"compGUID: no company {guid} in the database or the import"
                refused.append((record[0], reason))
            else:
                kept.append(record)
        return kept, refused


class _Screened:
    """Leaves out the contact records of people on the suppression list (each screened record
    ends with its e-mail, profile URL and name keys: `_contact_record`), by those or by the
    name at the domain of its company or of its e-mail; counts them."""

    def __init__(self, db: Database, screen: privacy.Screen) -> None:
        self.db = db
        self.screen = screen
        self.domains: dict[str, str] = {}  # company GUID -> registrable domain
        self.dropped = 0

    def drop(self, records: list[Any]) -> tuple[list[Any], list[tuple[int, str]]]:
        """The records of people not on the list (the others are counted, not refused)."""
        unknown = set(map(_COMPANY, records)) - self.domains.keys()
        if unknown:  # the companies are in the database: a companies file is written first
            self.domains.update(store.company_domains(self.db, sorted(unknown)))
        kept = [record for record in records if not self._listed(record)]
        self.dropped += len(records) - len(kept)
        return kept, []

    def _listed(self, record: Any) -> bool:
        email, profile_url, first_key, last_key = record[-1]
        mail_domain = registrable_domain(email) if email else ""
        domains = (self.domains.get(_COMPANY(record), ""), mail_domain)
        return self.screen.names(email, profile_url, first_key, last_key, domains)


# --- the worker process ----------------------------------------------------------------------


_File = tuple[Path, Sequence[str], Callable[[Values], tuple[Any, ...]]]
# Processes converting rows beside the one writing them: the writer needs about half a core.
CONVERTERS = max(1, min(os.cpu_count() or 1, 4))


@contextmanager
def _converted(files: Sequence[_File], size: int) -> Iterator[Iterator[Iterator[Batch]]]:
    """Per file, its batches, read and converted by CONVERTERS worker processes while the
    caller writes.

    Worker k of n converts batches k, k + n, ... of each file (each reads the whole file:
    reading is cheap next to converting), and the caller takes them in turn, so batches come
    in file order. The files' batch iterators must be used in order. Each pipe holds about
    one batch, so a worker stays a batch or two ahead; workers stop when this block ends,
    also early, and at a broken pipe when this process dies.
    """
    context = multiprocessing.get_context("fork")  # the child starts with everything imported
    receivers, workers = [], []
    for share in range(CONVERTERS):
        receiver, sender = context.Pipe(duplex=False)
        worker = context.Process(
            target=_convert_in_worker,
            args=(receiver, sender, files, size, (share, CONVERTERS)),
            daemon=True,
        )
        worker.start()
        sender.close()
        receivers.append(receiver)
        workers.append(worker)
    try:
        yield (_received(receivers) for _ in files)
    finally:
        for receiver, worker in zip(receivers, workers, strict=True):
            receiver.close()
            worker.terminate()
            worker.join()


def _received(receivers: Sequence[Connection]) -> Iterator[Batch]:
    """One file's batches, from the workers in turn, up to the first end (the workers after
    it have no batch left either: their end is taken too); a worker's exception is raised."""
    for turn in itertools.count():
        batch = _unpack(receivers[turn % len(receivers)].recv_bytes())
        if batch is None:
            for later in range(turn + 1, turn + len(receivers)):
                _unpack(receivers[later % len(receivers)].recv_bytes())
            return
        yield batch


# Batches cross the pipe marshalled: about twice as fast as pickle for tuples of strings.
_BATCH, _END, _ERROR = b"B", b"E", b"X"


def _pack(item: Batch | BaseException | None) -> bytes:
    if item is None:
        return _END
    if isinstance(item, BaseException):
        return _ERROR + pickle.dumps(item)
    return _BATCH + marshal.dumps(tuple(item))


def _unpack(data: bytes) -> Batch | None:
    """The batch in `data`, or None at a file's end; a worker's exception is raised."""
    kind, payload = data[:1], data[1:]
    if kind == _BATCH:
        return Batch(*marshal.loads(payload))
    if kind == _ERROR:
        raise pickle.loads(payload)
    return None


def _convert_in_worker(
    receiver: Connection,
    sender: Connection,
    files: Sequence[_File],
    size: int,
    share: tuple[int, int],
) -> None:
    """A worker: its share of each file's batches then an end; or the exception that stopped
    it."""
    receiver.close()  # only the parent reads, so the parent's death breaks the pipe
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    gc.freeze()  # what it inherited is never garbage: collections need not walk it
    try:
        for path, names, convert in files:
            for batch in convert_batches(path, names, convert, size, share):
                sender.send_bytes(_pack(batch))
            sender.send_bytes(_pack(None))
    except BrokenPipeError:
        return
    except Exception as error:  # e.g. a file that is not UTF-8: raised again in the parent
        sender.send_bytes(_pack(error))


def convert_batches(
    path: Path,
    names: Sequence[str],
    convert: Callable[[Values], tuple[Any, ...]],
    size: int,
    share: tuple[int, int] = (0, 1),
) -> Iterator[Batch]:
    """Read `path` `size` rows at a time; per row, its line and `convert` of its values, or
    its line and why it was refused. With `share` (k, n), only batches k, k + n, ...: the
    other batches' rows are only passed over, not read into values."""
    source = _raw_rows(path, names)
    previous = 0
    for number in itertools.count():
        if number % share[1] != share[0]:
            last = source.skip(size)
            if last is None:
                return
            previous = last
            continue
        chunk = list(islice(source.rows, size))
        if not chunk:
            return
        lines, previous = chunk[-1][0] - previous, chunk[-1][0]
        records, errors = [], []
        for line, raw in chunk:
            try:
                if isinstance(raw, str):
                    raise InvalidRow(raw)
                records.append((line, *convert(source.values(raw))))
            except InvalidRow as error:
                errors.append((line, str(error)))
        yield Batch(lines, records, errors)
        if len(chunk) < size:  # the end of the file, which is closed now
            return


def _reorder(made: str, wanted: Sequence[str]) -> Callable[[tuple[Any, ...]], tuple[Any, ...]]:
    """The function taking a tuple of the columns `made` (space-separated) to `wanted`'s
    (`tuple`, which returns a tuple as it is, when the orders are the same)."""
    names = made.split()
    if names == list(wanted):
        return tuple
    return itemgetter(*[names.index(name) for name in wanted])


# The columns in the order the converters make them.
_COMPANY_ROW = _reorder(
    "guid name name_key aka website domain address city state zipcode country latitude "
    "longitude phone employee_count revenue_range industry naics_codes naics_descriptions "
    "sic_codes sic_descriptions legal_status parent_guid global_hq_guid worldwide_parent_name "
    "global_regions profile_url email_pattern updated_at",
    store.COMPANY_FIELDS,
)
_CONTACT_ROW = _reorder(
    "guid first_name middle_name last_name full_name first_key last_key profile_url location "
    "accuracy updated_at",
    store.CONTACT_FIELDS,
)
_JOB_ROW = _reorder(
    "contact_guid company_guid status email job_title levels functions sub_functions "
    "work_address work_city work_state work_zipcode work_country work_phone latitude longitude "
    "direct_dial1 direct_dial2 job_started_on job_updated_on " + " ".join(store.JOB_FACET_FIELDS),
    (*store.EMPLOYMENT_FIELDS, *store.JOB_FACET_FIELDS),
)
_CONTACT_KEYS = _reorder("first_key last_key grade", store.CONTACT_KEY_FIELDS)


# --- reading files ---------------------------------------------------------------------------


class _Raw(NamedTuple):
    """A file's rows, each its first line and a raw form (or why it is unreadable, a str);
    `values` reads a raw form's values (raising InvalidRow); `skip(n)` passes over n rows
    and returns the first line of the last (None when none was left). Each converter process
    passes over the rows of the others, which costs a fraction of reading them."""

    rows: Iterator[tuple[int, Any]]
    values: Callable[[Any], Values]
    skip: Callable[[int], int | None]


def _raw_rows(path: Path, names: Sequence[str]) -> _Raw:
    """The rows of a .csv, .jsonl or .ndjson file."""
    if path.suffix.lower() == ".csv":
        return _csv_rows(path, names)
    rows = _jsonl_lines(path)
    return _Raw(rows, partial(_jsonl_values, names=names), partial(_skip, rows))


def _skip(rows: Iterator[tuple[int, Any]], count: int) -> int | None:
    last = deque(islice(rows, count), maxlen=1)
    return last[0][0] if last else None


def _csv_rows(path: Path, names: Sequence[str]) -> _Raw:
    handle = path.open(newline="", encoding="utf-8-sig")
    reader = csv.reader(handle)
    try:
        header = [name.strip() for name in next(reader, [])]
    except BaseException:
        handle.close()
        raise
    width = len(header)
    # A field missing from the header reads the "" appended after the row's last value.
    pick = itemgetter(*[header.index(name) if name in header else width for name in names])

    def shape(values: list[str]) -> Values:
        values.append("")
        return list(map(str.strip, pick(values)))

    rows = _CsvRows(handle, reader, width)
    return _Raw(rows.read(), shape, rows.skip)


# A line that is a whole CSV row: every quote in it opens a value, closes it or is doubled
# inside it (possessive quantifiers: a line that does not match fails without backtracking).
_QUOTED = r'"[^"]*+(?:""[^"]*+)*+"'
_WHOLE_ROW = re.compile(rf"(?:[^\"]*+(?<![^,]){_QUOTED}(?=[,\r\n]|$))*+[^\"]*+")
_BLANK = frozenset({"\n", "\r\n", "\r"})


class _CsvRows:
    """A CSV file's rows, read with csv.reader, or passed over by lines where a line is a
    whole row (in a file csv.writer wrote, every line but those of values with line breaks)."""

    def __init__(self, handle: TextIO, reader: Any, width: int) -> None:
        self.handle, self.reader, self.width = handle, reader, width
        self.passed = 0  # lines read without self.reader

    def read(self) -> Iterator[tuple[int, list[str] | str]]:
        """Each row's first line and its values, or why it is unreadable."""
        reader, width = self.reader, self.width
        with self.handle:
            while True:
                start = reader.line_num + self.passed + 1
                try:
                    values = next(reader)
                except StopIteration:
                    return
                except csv.Error as error:
                    yield start, f"unreadable CSV: {error}"
                    continue
                if not values:
                    continue
                if len(values) != width:
                    yield start, f"the row has {len(values)} values, the header {width} columns"
                    continue
                yield start, values

    def skip(self, count: int) -> int | None:
        """Pass over `count` rows as `read` counts them (a blank line is none, an unreadable
        one is one); the first line of the last, None when none was left."""
        whole, start = _WHOLE_ROW.fullmatch, None
        while count:
            line = self.reader.line_num + self.passed + 1
            text = next(self.handle, None)
            if text is None:
                self.handle.close()
                return None
            if text in _BLANK:
                self.passed += 1
                continue
            if whole(text):
                self.passed += 1
            else:  # a value with a line break, or stray quotes: the reader's row
                reader = csv.reader(chain([text], self.handle))
                with suppress(csv.Error):
                    next(reader)
                self.passed += reader.line_num
            start, count = line, count - 1
        return start


def _jsonl_lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    with path.open(encoding="utf-8-sig") as handle:
        for line, text in enumerate(handle, 1):
            if text.strip():
                yield line, [text]  # in a list: a str would be an error


def _jsonl_values(raw: list[str], names: Sequence[str]) -> Values:
    try:
        item = json.loads(raw[0])
    except json.JSONDecodeError as error:
        raise InvalidRow(f"invalid JSON: {error.msg} at column {error.colno}") from None
    if not isinstance(item, dict):
        raise InvalidRow("the line is not a JSON object")
    try:
        return [item.get(name, "").strip() for name in names]
    except AttributeError:  # a number, null, list or object: the slower path
        return [_text(name, item.get(name)) for name in names]


def _text(name: str, value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    if value is None:
        return ""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise InvalidRow(f"{name}: expected a string or a number, got {type(value).__name__}")


# --- rows to records -------------------------------------------------------------------------


_COMPANY_GUID = itemgetter(store.COMPANY_FIELDS.index("guid"))
_COMPANY_NAME = itemgetter(store.COMPANY_FIELDS.index("name"))
_COMPANY_AKA = itemgetter(store.COMPANY_FIELDS.index("aka"))
_CONTACT_GUID = itemgetter(store.CONTACT_FIELDS.index("guid"))
_JOB_COMPANY = itemgetter(store.EMPLOYMENT_FIELDS.index("company_guid"))
_JOB_EMAIL = itemgetter(store.EMPLOYMENT_FIELDS.index("email"))
_COMPANY_COMPARED = itemgetter(*map(store.COMPANY_FIELDS.index, changes.COMPANY_FIELDS))
_JOB_COMPARED = itemgetter(*map(store.EMPLOYMENT_FIELDS.index, changes.JOB_FIELDS))
_CONTACT_SCREENED = itemgetter(
    *(store.CONTACT_FIELDS.index(name) for name in ("profile_url", "first_key", "last_key"))
)
RowForm = Callable[..., Any]


def _company_record(
    values: Values, updated_at: str, form: RowForm, watch: bool = False
) -> tuple[Any, ...]:
    """A company's record for the writer (after its line): its GUID, its row in `form`,
    its alias keys and its name forms (made here, in the converting processes); `watch`, then
    the values change detection compares."""
    row, aliases = company_records(values, updated_at)
    names = company_forms(_COMPANY_NAME(row), _COMPANY_AKA(row))
    record = (_COMPANY_GUID(row), form(row), aliases, names)
    return (*record, _COMPANY_COMPARED(row)) if watch else record


def _contact_record(
    values: Values, updated_at: str, form: RowForm, screening: bool = False, watch: bool = False
) -> tuple[Any, ...]:
    """A contact's record for the writer (after its line): its GUID, its company's, its
    contacts row, employments row and what the employment takes from the contact in `form`
    (the employment's two parts joined make its row); `watch`, then the values change
    detection compares; `screening`, then what the suppression list is checked by
    (`_Screened`)."""
    contact, job, keys = contact_records(values, updated_at)
    guid, company_guid = _CONTACT_GUID(contact), _JOB_COMPANY(job)
    record = (guid, company_guid, form(contact), form(job, "\t"), form(keys))
    if watch:
        record = (*record, _JOB_COMPARED(job))
    return (*record, (_JOB_EMAIL(job), *_CONTACT_SCREENED(contact))) if screening else record


def company_records(values: Values, updated_at: str) -> tuple[tuple[Any, ...], list[str]]:
    """A companies row (the values of store.COMPANY_FIELDS) and its alias keys, from the
    COMPANY_FIELDS values of one input row.

    Raises InvalidRow naming the field at fault.
    """
    (guid, name, aka, website, address, city, state, zipcode, country, phone, employee_count,
     revenue_range, industry, naics_codes, naics_descriptions, sic_codes, sic_descriptions,
     legal_status, parent_guid, global_hq_guid, worldwide_parent_name, global_regions,
     profile_url, latitude, longitude, email_pattern) = values  # fmt: skip
    guid = _guid(guid, "compGUID", _HEX16)
    if not name:
        raise InvalidRow("compName: required")
    if parent_guid:
        parent_guid = _guid(parent_guid, "compParentGuid", _HEX16)
    if global_hq_guid:
        global_hq_guid = _guid(global_hq_guid, "compGlobalHqParentGuid", _HEX16)
    if revenue_range and revenue_range not in _REVENUE_RANGES:
        raise InvalidRow(f"compRevRange: {revenue_range!r} is not a range of contract §4.2")
    count = _count(employee_count, "compEmpCount")
    point = _point(latitude, longitude, ("compLatitude", "compLongitude")) or _coordinates(
        city, state, zipcode, country
    )
    domain = registrable_domain(website) if website else ""
    row = (guid, name, company_key(name), aka, website, domain, address, city, state, zipcode,
           country, *point, phone, count, revenue_range, industry, naics_codes,
           naics_descriptions, sic_codes, sic_descriptions, legal_status, parent_guid,
           global_hq_guid, worldwide_parent_name, global_regions, profile_url, email_pattern,
           updated_at)  # fmt: skip
    return _COMPANY_ROW(row), list(alias_keys(aka))


def contact_records(
    values: Values, updated_at: str
) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]:
    """A contacts row, an employments row and what the employment takes from its contact
    (the values of store.CONTACT_FIELDS; of store.EMPLOYMENT_FIELDS then
    store.JOB_FACET_FIELDS; of store.CONTACT_KEY_FIELDS) from the CONTACT_FIELDS values of one
    input row.

    Raises InvalidRow naming the field at fault.
    """
    (guid, company_guid, first, middle, last, full, profile_url, location, accuracy, status,
     email, title, levels, functions, sub_functions, address, city, state, zipcode, country,
     phone, latitude, longitude, dial1, dial2, started, updated) = values  # fmt: skip
    guid = _guid(guid, "conGUID", _HEX32)
    first, middle, last, full = _full_name(first, middle, last, full)
    accuracy = _choice(accuracy or "B", _GRADES, "accuracy")
    company_guid = _guid(company_guid, "compGUID", _HEX16)
    status = _choice(status or "Active", _STATUSES, "recordStatus")
    if email:
        if not _EMAIL.fullmatch(email):
            raise InvalidRow(f"conEmail: {email!r} is not an e-mail address")
        email = email_key(email)
    if started:
        started = _month(started, "conJobStartedOn")
    if updated:
        updated = _month(updated, "conJobUpdatedOn")
    if not (levels and functions and sub_functions):
        derived = _classify(title)
        levels, functions = levels or derived[0], functions or derived[1]
        sub_functions = sub_functions or derived[2]
    point = _point(latitude, longitude, ("conWorkLocLatitude", "conWorkLocLongitude"))
    first_key, last_key = _person_key(first), _person_key(last)
    contact = (guid, first, middle, last, full, first_key, last_key, profile_url, location,
               accuracy, updated_at)  # fmt: skip
    job = (guid, company_guid, status, email, title, levels, functions, sub_functions, address,
           city, state, zipcode, country, phone,
           *(point or _coordinates(city, state, zipcode, country)),
           dial1, dial2, started, updated,
           *facets.job_facets(title, levels, functions, city, state, zipcode, country))  # fmt: skip
    keys = (first_key, last_key, facets.GRADE_RANKS[accuracy])
    return _CONTACT_ROW(contact), _JOB_ROW(job), _CONTACT_KEYS(keys)


def _full_name(first: str, middle: str, last: str, full: str) -> tuple[str, str, str, str]:
    """First, middle, last and full name: the parts from the full name, or the full name
    from the parts."""
    if first and last:
        return first, middle, last, full or " ".join(part for part in (first, middle, last) if part)
    if not full:
        raise InvalidRow("conFirstName/conLastName: give a first and last name or conFullName")
    parsed = HumanName(full)
    return first or parsed.first, middle or parsed.middle, last or parsed.last, full


def _guid(text: str, name: str, shape: re.Pattern[str]) -> str:
    guid = text.upper()
    if not shape.fullmatch(guid):
        size = 16 if shape is _HEX16 else 32
        raise InvalidRow(f"{name}: {text!r} is not {size} hexadecimal characters")
    return guid


def _choice(text: str, allowed: dict[str, str], name: str) -> str:
    try:
        return allowed[text.casefold()]
    except KeyError:
        raise InvalidRow(f"{name}: {text!r} is not one of {', '.join(allowed.values())}") from None


MAX_EMPLOYEES = 100_000_000


def _count(text: str, name: str) -> int | None:
    if not text:
        return None
    try:
        number = float(text.replace(",", ""))
    except ValueError:
        number = math.nan
    if not number.is_integer():  # also refuses NaN and infinities
        raise InvalidRow(f"{name}: {text!r} is not a whole number")
    if number < 0:
        raise InvalidRow(f"{name}: {text!r} is negative")
    if number > MAX_EMPLOYEES:  # past any company, and past PostgreSQL's INTEGER column
        raise InvalidRow(f"{name}: {text!r} is more than {MAX_EMPLOYEES:,} employees")
    return int(number)


def _point(latitude: str, longitude: str, names: tuple[str, str]) -> tuple[float, float] | None:
    """The given coordinates, None when both are empty (InvalidRow when one is bad)."""
    if not latitude and not longitude:
        return None
    return _degrees(latitude, names[0], 90.0), _degrees(longitude, names[1], 180.0)


def _degrees(text: str, name: str, limit: float) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InvalidRow(f"{name}: {text!r} is not a number") from None
    if not -limit <= value <= limit:  # also refuses NaN
        raise InvalidRow(f"{name}: {text!r} is outside -{limit:g} to {limit:g}")
    return value


@lru_cache(maxsize=4096)
def _stored_month(text: str) -> str:
    return month_to_stored(text)


def _month(text: str, name: str) -> str:
    try:
        return _stored_month(text)
    except ValueError:
        raise InvalidRow(f"{name}: {text!r} is not a month like Jan-2020 or 2020-01") from None


@lru_cache(maxsize=65_536)
def _person_key(name: str) -> str:
    return person_key(name)


@lru_cache(maxsize=65_536)
def _classify(title: str) -> tuple[str, str, str]:
    """Levels, functions and sub-functions of a job title, each `' | '`-joined."""
    if not title:
        return "", "", ""
    found = titles.classify(title)
    return JOIN.join(found.levels), JOIN.join(found.functions), JOIN.join(found.sub_functions)


@lru_cache(maxsize=65_536)
def _coordinates(
    city: str, state: str, zipcode: str, country: str
) -> tuple[float | None, float | None]:
    if not (city or zipcode):
        return None, None
    return places.coordinates(city, state, zipcode, country) or (None, None)
