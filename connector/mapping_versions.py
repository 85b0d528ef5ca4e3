"""A connection's mappings in the database: each save (the settings page's editor, an import,
a restore) a new version of its mapping of one kind of record; the highest is the one the
worker and receiver use. A connection with no saved version uses its file, as before.

Parsed versions are kept by (connection, kind, version): a version never changes, so the
worker asks the database for the current number and parses a version's YAML once
(`store.mapping_in_use`, which the worker and receiver call themselves)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import yaml
from sqlite_utils import Database

import server
from connector import field_check, mapping_words, mappings, store
from connector.platforms import PLATFORMS
from connector.platforms.base import CrmField

Row = dict[str, Any]


def current(db: Database, link: Row, kind: str) -> mappings.Mapping:
    """The mapping in use for a connection's `kind` of records: its current saved version,
    else its file (the connection's own for contacts, the platform's default otherwise)."""
    return store.mapping_in_use(db, link, _default_file(link, kind), kind)


def current_text(db: Database, link: Row, kind: str) -> tuple[int, str]:
    """The current version's number and YAML; 0 and the file's text when none is saved."""
    version = store.mapping_version_number(db, link["id"], kind)
    if version:
        row = store.mapping_version(db, link["id"], kind, version)
        return version, row["yaml"] if row else ""
    return 0, _file_text(link, kind)


def validated(
    link: Row, kind: str, text: str, fields: list[CrmField] | None = None
) -> mappings.Mapping:
    """The mapping `text` holds, for this connection's platform and `kind`, and (when the CRM's
    `fields` are known) one the CRM can take; MappingError lists every refusal."""
    mapping = mappings.parse(text, f"{link['name']} {kind} mapping")
    wrong = []
    if mapping.platform != link["platform"]:
        wrong.append(f"platform: the mapping is {mapping.platform}'s, the connection is "
                     f"{link['platform']}'s")  # fmt: skip
    if mapping.kind != kind:
        wrong.append(f"object: the mapping is of {mapping.kind}, not {kind}")
    if wrong:
        raise mappings.MappingError(wrong)
    refused = field_check.refusals(mapping, fields) if fields is not None else []
    if refused:
        raise mappings.MappingError(refused)
    return mapping


def save(db: Database, link: Row, kind: str, text: str, now: datetime, by: str) -> int:
    """Save `text` (validated already) as the next version; its number. Call it in a write."""
    return store.add_mapping_version(db, link["id"], kind, text, server.iso(now), by)


def version_text(db: Database, link: Row, kind: str, version: int) -> str:
    """A saved version's YAML; MappingError when there is no such version."""
    row = store.mapping_version(db, link["id"], kind, version)
    if row is None:
        raise mappings.MappingError([f"no version {version} of {link['name']}'s {kind} mapping"])
    return str(row["yaml"])


def versions(db: Database, link: Row, kind: str) -> list[Row]:
    """The saved versions of a connection's mapping of `kind`, newest first (no YAML)."""
    return store.mapping_versions(db, link["id"], kind)


def with_outputs(text: str, outputs: list[Row], minimum_grade: str | None = None) -> str:
    """The YAML of mapping `text` with its `output` list replaced by `outputs` (the editor's
    rows: field, property, transforms as names joined by spaces, policy) and, when given, its
    minimum grade ("" for none); its other keys kept."""
    data = yaml.safe_load(text) or {}
    data["output"] = [_output(row) for row in outputs]
    if minimum_grade is not None:
        data.pop("minimum_grade", None)
        data |= {"minimum_grade": minimum_grade} if minimum_grade else {}
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def refused_rows(
    link: Row, kind: str, text: str, rows: list[Row], fields: list[CrmField] | None
) -> tuple[dict[int, list[str]], list[str]]:
    """What refuses the editor's `rows` (saved into mapping `text`): the refusals of each row
    by its index, and those of the mapping as a whole; both empty when it may be saved."""
    by_row = mapping_words.row_refusals(rows)
    if by_row:
        return by_row, []
    try:
        mapping = validated(link, kind, text)
    except mappings.MappingError as error:
        return {}, error.problems
    found = mapping_words.crm_refusals(rows, mapping, fields) if fields is not None else {}
    return found, []


def recommended_text(link: Row, kind: str) -> str:
    """The recommended mapping of the connection's platform and `kind`: the shipped file."""
    return (mappings.DIRECTORY / _default_file(link, kind)).read_text(encoding="utf-8")


def history(db: Database, link: Row, kind: str) -> list[Row]:
    """The saved versions, newest first, each with what it changed from the one before it
    (the first, from the file in use before) in words (`changes`)."""
    saved = versions(db, link, kind)
    parsed = {
        row["version"]: _parsed(version_text(db, link, kind, row["version"])) for row in saved
    }
    start = _parsed(_file_text(link, kind))
    shown = []
    for row in saved:
        before = max((v for v in parsed if v < row["version"]), default=0)
        old, new = parsed.get(before, start), parsed[row["version"]]
        changes = mapping_words.differences(old, new) if new else ["(cannot be read)"]
        shown.append({**row, "changes": changes})
    return shown


def changes_to(db: Database, link: Row, kind: str, text: str) -> list[str]:
    """What saving `text` would change from the mapping in use, in words (as `history`)."""
    new = _parsed(text)
    if new is None:
        return ["(cannot be read)"]
    return mapping_words.differences(_parsed(current_text(db, link, kind)[1]), new)


def _parsed(text: str) -> mappings.Mapping | None:
    try:
        return mappings.parse(text, "version")
    except mappings.MappingError:
        return None


def with_properties(text: str, renamed: dict[str, str]) -> str:
    """The YAML of mapping `text` with each rule's property renamed as `renamed` says (a field
    created under the name the CRM gave it), its other keys kept."""
    data = yaml.safe_load(text) or {}
    for rule in data.get("output") or []:
        if isinstance(rule, dict) and rule.get("property") in renamed:
            rule["property"] = renamed[rule["property"]]
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def rename_properties(
    db: Database, link: Row, kind: str, renamed: dict[str, str], now: datetime, by: str
) -> int:
    """Save the current mapping with its properties renamed (`with_properties`) as the next
    version: its number, 0 when nothing is renamed. Call it in a write: the connection is
    locked before the current version is read, so no save comes between."""
    if not renamed:
        return 0
    store.lock_connection(db, link["id"])
    _, text = current_text(db, link, kind)
    return save(db, link, kind, with_properties(text, renamed), now, by)


def _output(row: Row) -> Row:
    constant = str(row.get("constant") or "").strip()
    source = {"constant": constant} if constant and not row["field"] else {"field": row["field"]}
    rule: Row = {**source, "property": row["property"]}
    if str(row.get("transforms") or "").split():
        rule["transforms"] = str(row["transforms"]).split()
    return {**rule, "policy": row.get("policy") or "fill_if_empty"}


def crm_fields(
    db: Database,
    secret: bytes,
    link: Row,
    kind: str,
    client: httpx.Client,
    clock: Callable[[], datetime],
) -> list[CrmField]:
    """The CRM's fields of `kind`, read with the connection's token (Permanent or Retriable
    when the CRM refuses or cannot be reached)."""
    return _adapter(db, secret, link, kind, client, clock).fields()


def create_fields(
    db: Database, secret: bytes, link: Row, kind: str, client: httpx.Client,
    clock: Callable[[], datetime], wanted: list[tuple[str, str, str]],
) -> list[CrmField]:  # fmt: skip
    """Create each custom field (name, label, type) in the CRM; the fields created, in that
    order, each under the name the CRM gave it (which may not be the one asked for)."""
    adapter = _adapter(db, secret, link, kind, client, clock)
    return [adapter.create_field(name, label, type) for name, label, type in wanted]


def with_fields_made(
    db: Database, secret: bytes, link: Row, kind: str, client: httpx.Client,
    clock: Callable[[], datetime], text: str,
) -> str:  # fmt: skip
    """Mapping `text` after creating in the CRM the custom fields it writes and the CRM lacks,
    each then written under the name the CRM gave it (Permanent or Retriable when refused)."""
    mapping = validated(link, kind, text)
    wanted = missing_fields(mapping, crm_fields(db, secret, link, kind, client, clock))
    made = create_fields(db, secret, link, kind, client, clock, wanted)
    renamed = {name: field.name for (name, _, _), field in zip(wanted, made, strict=True)}
    return with_properties(text, renamed)


def missing_fields(mapping: mappings.Mapping, fields: list[CrmField]) -> list[tuple[str, str, str]]:
    """The mapped properties the CRM lacks, as custom fields to create: name, label, type
    (a number where the rule writes one, else text)."""
    have = {field.name for field in fields}
    wanted = []
    for rule in mapping.output:
        if rule.property not in have:
            kind = "number" if field_check.produced_by(rule).kind == "number" else "text"
            label = rule.property.replace("_", " ").strip().capitalize()
            wanted.append((rule.property, label, kind))
    return wanted


def _adapter(
    db: Database,
    secret: bytes,
    link: Row,
    kind: str,
    client: httpx.Client,
    clock: Callable[[], datetime],
) -> Any:
    platform = PLATFORMS[link["platform"]]
    token = store.crm_token(secret, link)
    auth = store.crm_auth(db, secret, link, clock)
    return platform.adapter(link["crm_base_url"], token, client, auth, kind)


def _file_text(link: Row, kind: str) -> str:
    """The text of the file a connection uses for `kind` while no version is saved."""
    own = link["mapping"] if kind == "contacts" else mappings.DIRECTORY / _default_file(link, kind)
    return Path(own).read_text(encoding="utf-8")


def _default_file(link: Row, kind: str) -> str:
    return PLATFORMS[link["platform"]].mapping_file_for(kind)
