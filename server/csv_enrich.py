"""Enrich a CSV file, row by row, for an organization (`contactdata enrich`): resumable after
a crash or a stop, each row charged once however often the run is started again.
"""

from __future__ import annotations

import csv
import io
import json
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from server.enrich import OUTPUT_FIELDS, Requester, enrich
from server.errors import InsufficientCredits, ServiceError


@dataclass
class FileReport:
    """What `enrich_csv` did: rows found done in the output, rows it wrote, credits taken,
    and how many rows ended in each record status (or error code)."""

    resumed: int = 0
    written: int = 0
    credits: int = 0
    statuses: dict[str, int] = field(default_factory=dict)


class OutputMismatch(ValueError):
    """An existing output file whose header is not the one this input gives."""


def output_header(columns: Sequence[str]) -> list[str]:
    """The input columns, then every output field and `error`; an output field named like an
    input column is written `enriched_<name>`."""
    taken = set(columns)
    added = [
        name if name not in taken else f"enriched_{name}" for name in (*OUTPUT_FIELDS, "error")
    ]
    return [*columns, *added]


def enrich_csv(
    db: Database,
    who: Requester,
    source: Path,
    target: Path,
    clock: Callable[[], datetime],
    progress: Callable[[int], None] = lambda _rows: None,
    batch_size: int = 100,
) -> FileReport:
    """Enrich every row of the CSV `source` into the CSV `target`, streaming both.

    Resumable: when `target` holds N complete rows (an interrupted run), those input rows are
    skipped and the run continues at row N+1; a partly written last line is cut off. Output is
    flushed and fsynced every `batch_size` rows. Each row's transaction id is derived from the
    organization, the output file, the row number and the row's values, so a row charged but
    lost from the output before a crash is delivered again without a second charge.
    Stops with InsufficientCredits when credits run out (rows before it are written).
    """
    report = FileReport()
    with source.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        columns = [name.strip() for name in reader.fieldnames or []]
        reader.fieldnames = columns
        header = output_header(columns)
        report.resumed = _resume(target, header)
        rows = enumerate(reader, 1)
        _consume(islice(rows, report.resumed))
        progress(report.resumed)
        with target.open("a", newline="", encoding="utf-8") as out:
            writer = csv.writer(out, lineterminator="\n")
            if out.tell() == 0:
                writer.writerow(header)
            try:
                for number, row in rows:
                    writer.writerow(_enrich_row(db, who, target, number, row, clock(), report))
                    progress(1)
                    if number % batch_size == 0:
                        _sync(out)
            finally:
                _sync(out)
    return report


def _enrich_row(
    db: Database,
    who: Requester,
    target: Path,
    number: int,
    row: Mapping[str | None, Any],
    now: datetime,
    report: FileReport,
) -> list[str]:
    """One output line: the input values, the result fields and the error ("" if none)."""
    body = {name: value for name, value in row.items() if name is not None}
    transaction_id = _row_transaction_id(who.org_id, target, number, body)
    located = replace(who, request_id=f"row {number}")
    try:
        outcome = enrich(db, located, body, now, transaction_id)
        result, problem, status = outcome.result, "", outcome.result["recordStatus"]
        report.credits += outcome.credits
    except InsufficientCredits:
        raise
    except ServiceError as error:
        result = dict.fromkeys(OUTPUT_FIELDS, "")
        result["smarteTransactionId"] = transaction_id
        result["recordId"] = body.get("recordId") or ""
        # One line, so that a row cut off inside it can never look complete on resume.
        problem, status = f"{error.code}: {error.message}".replace("\n", " "), error.code
    report.written += 1
    report.statuses[status] = report.statuses.get(status, 0) + 1
    inputs = [value if isinstance(value, str) else "" for value in body.values()]
    return [*inputs, *(result[name] for name in OUTPUT_FIELDS), problem]


def _row_transaction_id(org_id: str, target: Path, number: int, body: Mapping[str, Any]) -> str:
    seed = json.dumps([org_id, str(target.resolve()), number, body], sort_keys=True)
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"contactdata:enrich-csv:{seed}"))


def _resume(target: Path, header: Sequence[str]) -> int:
    """How many data rows `target` holds complete, cutting a partial last row off; 0 (and an
    empty file) when it is missing or its header line was cut short."""
    if not target.exists():
        return 0
    expected = _header_line(header)
    with target.open("rb") as handle:
        start = handle.read(len(expected))
    if not expected.startswith(start):
        raise OutputMismatch(
            f"{target} has other columns than this input gives; remove it or choose another "
            "output file."
        )
    rows, end = _complete_rows(target, len(expected), len(header))
    with target.open("r+b") as handle:
        handle.truncate(end if len(start) == len(expected) else 0)
    return rows


def _header_line(header: Sequence[str]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(header)
    return buffer.getvalue().encode("utf-8")


def _complete_rows(path: Path, offset: int, width: int) -> tuple[int, int]:
    """How many complete rows (`width` values, ending in a newline) follow byte `offset`, and
    the byte offset after the last of them."""
    consumed, ended = offset, True

    def lines() -> Iterator[str]:
        nonlocal consumed, ended
        with path.open("rb") as handle:
            handle.seek(offset)
            for raw in handle:
                consumed, ended = consumed + len(raw), raw.endswith(b"\n")
                yield raw.decode("utf-8", errors="replace")

    count, end = 0, offset
    try:
        for record in csv.reader(lines(), strict=True):
            if not ended or len(record) != width:
                break
            count, end = count + 1, consumed
    except csv.Error:  # the file ends inside a quoted value
        pass
    return count, end


def _consume(rows: Iterable[Any]) -> None:
    for _ in rows:
        pass


def _sync(handle: Any) -> None:
    handle.flush()
    os.fsync(handle.fileno())
