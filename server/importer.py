"""Import companies and contacts from CSV or JSON Lines files written in enrich's field names.

Each row is checked on its own: a bad row is reported (file, line, reason naming the field)
and skipped, good rows are upserted by GUID in batches, so importing a file twice changes
nothing. Files are streamed; only one batch is held in memory.
"""

from __future__ import annotations

import csv
import itertools
import json
import marshal
import math
import multiprocessing
import os
import pickle
import re
import signal
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache, partial
from itertools import chain, islice
from multiprocessing.connection import Connection
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

from nameparser import HumanName
from sqlite_utils import Database

from server import db as database
from server import facets, places, store, titles
from server.clock import iso, utcnow
from server.normalize import alias_keys, company_key, email_key, person_key, registrable_domain
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

Row = dict[str, Any]
Values = list[str]

# Input fields in the order the converters take their values.
COMPANY_FIELDS = (*COMPANY_COLUMNS, *COMPANY_EXTRA_COLUMNS)
_COMPANY_TARGETS = tuple({**COMPANY_COLUMNS, **COMPANY_EXTRA_COLUMNS}.values())
_CONTACT_INPUT = {name: col for name, col in CONTACT_COLUMNS.items() if name != "conGUID"}
_JOB_INPUT = {name: col for name, col in EMPLOYMENT_COLUMNS.items() if name != "compGUID"}
CONTACT_FIELDS = ("conGUID", "compGUID", *_CONTACT_INPUT, *_JOB_INPUT)
_CONTACT_TARGETS = tuple(_CONTACT_INPUT.values())
_JOB_TARGETS = tuple(_JOB_INPUT.values())
_JOB_START = 2 + len(_CONTACT_TARGETS)
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
) -> ImportReport:
    """Import a companies file, then a contacts file (one row per employment); either optional.

    A worker process reads and converts `batch_size` rows at a time while this one writes
    them, CHUNKS_PER_TRANSACTION batches per transaction. `progress` is called with the
    number of lines read since its previous call.
    """
    for path in (companies, contacts):
        if path is not None and path.suffix.lower() not in SUFFIXES:
            raise UnsupportedFile(f"{path}: use a .csv, .jsonl or .ndjson file")
    report = ImportReport()
    stamp = iso(now or utcnow())
    advance = progress or (lambda _lines: None)
    known = _CompanyCheck(db)
    files = [
        (companies, COMPANY_FIELDS, partial(_company_values, updated_at=stamp)),
        (contacts, CONTACT_FIELDS, partial(_contact_values, updated_at=stamp)),
    ]
    with _converted([file for file in files if file[0]], batch_size) as converted:
        if companies is not None:
            accepted = _accepted(next(converted), known.add, companies, report.errors)
            report.companies = _load(db, accepted, _write_companies, advance, _COMPANY_TABLES)
            with database.write(db):
                store.index_company_names(db)
        if contacts is not None:
            accepted = _accepted(next(converted), known.require, contacts, report.errors)
            report.contacts = _load(db, accepted, _write_contacts, advance, _CONTACT_TABLES)
    return report


_COMPANY_TABLES = ("companies", "company_aliases")
_CONTACT_TABLES = ("contacts", "employments")
# The tables whose secondary indexes a load into empty tables drops and builds again at the
# end. company_aliases keeps its index: replacing a company's aliases deletes them by company.
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
    write: Callable[[Database, list[Any]], None],
    advance: Callable[[int], None],
    tables: Sequence[str],
) -> int:
    """Write every batch's records; return how many were written.

    Into empty tables, the whole file is one bulk transaction (see `db.bulk_write`) that drops
    their secondary indexes and builds them again at the end: sorting once is far faster than
    inserting a million random keys into B-trees larger than the cache, and a killed import
    leaves nothing behind. Into tables with rows, batches commit as they go, so readers keep
    their indexes.
    """
    if not all(store.is_empty(db, table) for table in tables):
        return _write_all(db, batches, write, advance)
    with database.bulk_write(db):
        indexes = store.drop_secondary_indexes(db, [t for t in tables if t in _REBUILT])
        written = _write_all(db, batches, write, advance)
        store.create_indexes(db, indexes)
    return written


def _write_all(
    db: Database,
    batches: Iterable[Batch],
    write: Callable[[Database, list[Any]], None],
    advance: Callable[[int], None],
) -> int:
    """Write every batch's records; return how many were written.

    Several batches share a transaction: each commit rewrites every index page it touched, so
    fewer, larger commits are much faster, while one batch at a time bounds memory.
    """
    written = 0
    pending = iter(batches)
    for first in pending:
        with database.write(db):
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


_GUID = store.CONTACT_FIELDS.index("guid")
_NAME_KEYS = itemgetter(
    store.CONTACT_FIELDS.index("first_key"), store.CONTACT_FIELDS.index("last_key")
)
_ACCURACY = store.CONTACT_FIELDS.index("accuracy")
_JOB_COMPANY = store.EMPLOYMENT_FIELDS.index("company_guid")
_JOB_CONTACT = store.EMPLOYMENT_FIELDS.index("contact_guid")
_JOB_KEY = itemgetter(_JOB_CONTACT, _JOB_COMPANY)


def _write_companies(db: Database, records: list[tuple[int, tuple[Any, ...], list[str]]]) -> None:
    aliases = {row[0]: keys for _, row, keys in records}  # the last row of a GUID wins
    store.upsert_company_values(db, [row for _, row, _ in records])
    store.replace_company_aliases(
        db, aliases, [(guid, key) for guid, keys in aliases.items() for key in keys]
    )


def _write_contacts(
    db: Database, records: list[tuple[int, tuple[Any, ...], tuple[Any, ...]]]
) -> None:
    # A contact that moved has a row per employment: write it once (the last row wins).
    contacts = {contact[_GUID]: contact for _, contact, _ in records}
    # Key order walks each B-tree once per batch instead of jumping between its pages.
    store.upsert_contact_values(db, [contacts[guid] for guid in sorted(contacts)])
    jobs = sorted((job for _, _, job in records), key=_JOB_KEY)
    keyed = [job + _contact_keys(contacts[job[_JOB_CONTACT]]) for job in jobs]
    store.upsert_employment_values(db, keyed)


def _contact_keys(contact: tuple[Any, ...]) -> tuple[Any, ...]:
    """The values of store.CONTACT_KEY_FIELDS an employment takes from its contact row."""
    return (*_NAME_KEYS(contact), facets.GRADE_RANKS[contact[_ACCURACY]])


class _CompanyCheck:
    """Whether a contact row's company exists: imported now, or one lookup per other GUID."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.exists: dict[str, bool] = {}

    def add(self, records: list[Any]) -> tuple[list[Any], list[tuple[int, str]]]:
        """Note the companies of this import, so their contacts need no lookup."""
        self.exists.update((row[0], True) for _, row, _ in records)
        return records, []

    def require(self, records: list[Any]) -> tuple[list[Any], list[tuple[int, str]]]:
        """The contact records whose company exists, and a reason for each of the others."""
        kept, refused = [], []
        for record in records:
            guid = record[2][_JOB_COMPANY]
            found = self.exists.get(guid)
            if found is None:
                found = self.exists[guid] = bool(store.existing_company_guids(self.db, [guid]))
            if found:
                kept.append(record)
            else:
                reason = f"compGUID: no company {guid} in the database or the import"
                refused.append((record[0], reason))
        return kept, refused


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
    other batches' rows are only split from the file, not read into values."""
    rows, shape = _raw_rows(path, names)
    previous = 0
    for number in itertools.count():
        chunk = list(islice(rows, size))
        if not chunk:
            return
        lines, previous = chunk[-1][0] - previous, chunk[-1][0]
        if number % share[1] != share[0]:
            continue
        records, errors = [], []
        for line, raw in chunk:
            try:
                if isinstance(raw, str):
                    raise InvalidRow(raw)
                records.append((line, *convert(shape(raw))))
            except InvalidRow as error:
                errors.append((line, str(error)))
        yield Batch(lines, records, errors)


_COMPANY_ROW = itemgetter(*store.COMPANY_FIELDS)
_CONTACT_ROW = itemgetter(*store.CONTACT_FIELDS)
_JOB_ROW = itemgetter(*store.EMPLOYMENT_FIELDS, *store.JOB_FACET_FIELDS)


def _company_values(values: Values, updated_at: str) -> tuple[tuple[Any, ...], list[str]]:
    """company_records as the values of store.COMPANY_FIELDS, and the alias keys."""
    row, aliases = company_records(values, updated_at)
    return _COMPANY_ROW(row), aliases


def _contact_values(values: Values, updated_at: str) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """contact_records as the values of store.CONTACT_FIELDS, and of store.EMPLOYMENT_FIELDS
    then store.JOB_FACET_FIELDS."""
    contact, job = contact_records(values, updated_at)
    return _CONTACT_ROW(contact), _JOB_ROW(job)


# --- reading files ---------------------------------------------------------------------------


_Raw = tuple[Iterator[tuple[int, Any]], Callable[[Any], Values]]


def _raw_rows(path: Path, names: Sequence[str]) -> _Raw:
    """The file's rows, each its first line and a raw form (or why it is unreadable, a str),
    and the function that reads a raw form's values (raising InvalidRow). Splitting rows is
    the cheap part: converter processes split every row but read only their own."""
    if path.suffix.lower() == ".csv":
        return _csv_rows(path, names)
    return _jsonl_lines(path), partial(_jsonl_values, names=names)


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

    return _csv_records(handle, reader, width), shape


def _csv_records(handle: Any, reader: Any, width: int) -> Iterator[tuple[int, list[str] | str]]:
    with handle:
        line = reader.line_num + 1
        while True:
            try:
                values = next(reader)
            except StopIteration:
                return
            except csv.Error as error:
                yield line, f"unreadable CSV: {error}"
                line = reader.line_num + 1
                continue
            start, line = line, reader.line_num + 1
            if not values:
                continue
            if len(values) != width:
                yield start, f"the row has {len(values)} values, the header {width} columns"
                continue
            yield start, values


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


def company_records(values: Values, updated_at: str) -> tuple[Row, list[str]]:
    """A companies row and its alias keys from the COMPANY_FIELDS values of one input row.

    Raises InvalidRow naming the field at fault.
    """
    row: Row = dict(zip(_COMPANY_TARGETS, values, strict=True))
    row["guid"] = _guid(row["guid"], "compGUID", _HEX16)
    if not row["name"]:
        raise InvalidRow("compName: required")
    if row["parent_guid"]:
        row["parent_guid"] = _guid(row["parent_guid"], "compParentGuid", _HEX16)
    if row["global_hq_guid"]:
        row["global_hq_guid"] = _guid(row["global_hq_guid"], "compGlobalHqParentGuid", _HEX16)
    if row["revenue_range"] and row["revenue_range"] not in _REVENUE_RANGES:
        raise InvalidRow(f"compRevRange: {row['revenue_range']!r} is not a range of contract §4.2")
    row["employee_count"] = _count(row["employee_count"], "compEmpCount")
    row["latitude"], row["longitude"] = _point(
        row["latitude"], row["longitude"], ("compLatitude", "compLongitude")
    ) or _coordinates(row["city"], row["state"], row["zipcode"], row["country"])
    row["name_key"] = company_key(row["name"])
    row["domain"] = registrable_domain(row["website"]) if row["website"] else ""
    row["updated_at"] = updated_at
    return row, list(alias_keys(row["aka"]))


def contact_records(values: Values, updated_at: str) -> tuple[Row, Row]:
    """A contacts row and an employments row from the CONTACT_FIELDS values of one input row.

    Raises InvalidRow naming the field at fault.
    """
    guid = _guid(values[0], "conGUID", _HEX32)
    contact: Row = dict(zip(_CONTACT_TARGETS, values[2:_JOB_START], strict=True))
    contact["guid"] = guid
    _complete_name(contact)
    contact["first_key"] = _person_key(contact["first_name"])
    contact["last_key"] = _person_key(contact["last_name"])
    contact["accuracy"] = _choice(contact["accuracy"] or "B", _GRADES, "accuracy")
    contact["updated_at"] = updated_at

    job: Row = dict(zip(_JOB_TARGETS, values[_JOB_START:], strict=True))
    job["contact_guid"] = guid
    job["company_guid"] = _guid(values[1], "compGUID", _HEX16)
    job["status"] = _choice(job["status"] or "Active", _STATUSES, "recordStatus")
    if job["email"]:
        if not _EMAIL.fullmatch(job["email"]):
            raise InvalidRow(f"conEmail: {job['email']!r} is not an e-mail address")
        job["email"] = email_key(job["email"])
    if job["job_started_on"]:
        job["job_started_on"] = _month(job["job_started_on"], "conJobStartedOn")
    if job["job_updated_on"]:
        job["job_updated_on"] = _month(job["job_updated_on"], "conJobUpdatedOn")
    if not (job["levels"] and job["functions"] and job["sub_functions"]):
        levels, functions, sub_functions = _classify(job["job_title"])
        job["levels"] = job["levels"] or levels
        job["functions"] = job["functions"] or functions
        job["sub_functions"] = job["sub_functions"] or sub_functions
    where = (job["work_city"], job["work_state"], job["work_zipcode"], job["work_country"])
    job["latitude"], job["longitude"] = _point(
        job["latitude"], job["longitude"], ("conWorkLocLatitude", "conWorkLocLongitude")
    ) or _coordinates(*where)
    facet_values = facets.job_facets(job["job_title"], job["levels"], job["functions"], *where)
    job.update(zip(store.JOB_FACET_FIELDS, facet_values, strict=True))
    return contact, job


def _complete_name(contact: Row) -> None:
    """Fill first/middle/last from the full name, or the full name from the parts."""
    first, last, full = contact["first_name"], contact["last_name"], contact["full_name"]
    if not full and not (first and last):
        raise InvalidRow("conFirstName/conLastName: give a first and last name or conFullName")
    if full and not (first and last):
        parsed = HumanName(full)
        contact["first_name"] = first or parsed.first
        contact["middle_name"] = contact["middle_name"] or parsed.middle
        contact["last_name"] = last or parsed.last
    if not full:
        parts = (first, contact["middle_name"], last)
        contact["full_name"] = " ".join(part for part in parts if part)


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
