"""The mapping editor's words: each enrich field's label and example value, each row's refusals
said of the row the admin sees, and what changed between two versions. Pure: plain data in,
text out. The labels and documented samples are data (mappings/enrich_fields.csv)."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from connector import field_check, mappings
from connector.platforms.base import CrmField

FIELDS_FILE = mappings.DIRECTORY / "enrich_fields.csv"
SHOWN_OPTIONS = 6  # a picklist's options a refusal lists
Row = dict[str, Any]


@dataclass(frozen=True)
class EnrichField:
    """An enrich result field as the editor shows it: its name, label and an example."""

    name: str
    label: str
    example: str


@lru_cache(maxsize=1)
def _table() -> dict[str, tuple[str, str]]:
    """mappings/enrich_fields.csv: each result field's label and documented sample value."""
    with FIELDS_FILE.open(encoding="utf-8", newline="") as file:
        return {row["field"]: (row["label"], row["sample"]) for row in csv.DictReader(file)}


def label(name: str) -> str:
    """An enrich field's label in words (its name when the table has none)."""
    return _table().get(name, (name, ""))[0]


def enrich_fields(own: dict[str, str]) -> list[EnrichField]:
    """Every enrich result field, in the service's order, then the job-change fields a signal
    marks a record with, each with an example value: the organization's `own` (from its last
    enrichment) where it has one, else the sample."""
    return [
        EnrichField(name, label(name), own.get(name) or _table().get(name, ("", ""))[1])
        for name in (*mappings.OUTPUT_FIELDS, *mappings.SIGNAL_FIELDS)
    ]


def own_examples(
    rows: Iterable[Row], written: Row, rules: Iterable[mappings.Rule]
) -> dict[str, str]:
    """Example values from an organization's own last enrichment: a preview's `rows` (each an
    enrich field and its value), else what the last write held (`written`, by CRM property,
    read back to the enrich field through the mapping's `rules`)."""
    found = {rule.field: _shown(written.get(rule.property)) for rule in rules}
    found |= {row["field"]: _shown(row.get("value")) for row in rows}
    return {name: value for name, value in found.items() if value}


def _shown(value: Any) -> str:
    if isinstance(value, list):
        return "; ".join(map(str, value))
    return "" if mappings.is_empty(value) else str(value)


# --- rows ------------------------------------------------------------------------------------


def row_refusals(rows: list[Row]) -> dict[int, list[str]]:
    """What refuses each of the editor's `rows` on its own (by index), said of the row: the
    rule's own problems, and a CRM field an earlier row already writes. Rows absent are fine."""
    refused: dict[int, list[str]] = {}
    first: dict[str, int] = {}
    for index, row in enumerate(rows):
        problems = [f"{_KEYS[key]}: {what}" if key in _KEYS else what
                    for key, what in _rule_problems(row).items()]  # fmt: skip
        earlier = first.setdefault(row["property"], index)
        if earlier != index:
            problems.append(f"row {earlier + 1} already writes {row['property']}")
        if problems:
            refused[index] = problems
    return refused


def crm_refusals(
    rows: list[Row], mapping: mappings.Mapping, fields: list[CrmField]
) -> dict[int, list[str]]:
    """What the CRM's `fields` refuse of `mapping` (the `rows`, each a property once), by row."""
    index = {row["property"]: number for number, row in enumerate(rows)}
    by_name = {field.name: field for field in fields}
    static = {rule.property: rule for rule in mapping.output if rule.constant}
    refused: dict[int, list[str]] = {}
    for line in field_check.refusals(mapping, fields):
        name, _, why = line.partition(": ")
        if name not in static:  # field_check knows enrich fields; a constant is checked below
            refused.setdefault(index.get(name, -1), []).append(why)
    for name, rule in static.items():
        why = constant_refusal(rule.transformed(rule.constant), by_name.get(name))
        refused.setdefault(index.get(name, -1), []).extend([why] if why else [])
    return {number: reasons for number, reasons in refused.items() if reasons}


def constant_refusal(value: Any, field: CrmField | None) -> str:
    """Why the CRM `field` cannot take a static `value` ("" when it can)."""
    if field is None:
        return "no such field in the CRM (create it, or map another)"
    if field.read_only:
        return f"{field.label} is read-only in the CRM"
    if field.type == "number" and not isinstance(value, int):
        return f"{field.label} holds numbers: {value!r} is not one (add the integer transform)"
    if field.type in ("picklist", "multipicklist") and str(value) not in field.options:
        shown = ", ".join(field.options[:SHOWN_OPTIONS]) + (
            "…" if len(field.options) > SHOWN_OPTIONS else ""
        )
        return f"{value!r} is not one of {field.label}'s options as the CRM writes them ({shown})"
    return ""


_KEYS = {"field": "enrich field", "property": "CRM field", "transforms": "transform",
         "constant": "static value", "policy": "policy"}  # fmt: skip


def _rule_problems(row: Row) -> dict[str, str]:
    return mappings.rule_problems(_data(row))


def _data(row: Row) -> Row:
    constant = str(row.get("constant") or "")
    data = {"field": row["field"], "property": row["property"], "policy": row["policy"]}
    data |= {"constant": constant} if constant else {}
    return data | {"transforms": str(row.get("transforms") or "").split()}


# --- versions --------------------------------------------------------------------------------


def differences(old: mappings.Mapping | None, new: mappings.Mapping) -> list[str]:
    """What changed from mapping `old` to `new`, a line each, in words ("" lines never)."""
    before = {rule.property: rule for rule in old.output} if old else {}
    after = {rule.property: rule for rule in new.output}
    lines = [f"Adds {describe(rule)}" for name, rule in after.items() if name not in before]
    lines += [f"Removes {describe(rule)}" for name, rule in before.items() if name not in after]
    for name in after.keys() & before.keys():
        changed = _changed(before[name], after[name])
        lines += [f"Changes {name}: {changed}"] if changed else []
    old_grade = old.minimum_grade if old else ""
    if old_grade != new.minimum_grade:
        lines.append(f"Minimum match grade: {old_grade or 'any'} → {new.minimum_grade or 'any'}")
    return lines


def describe(rule: mappings.Rule) -> str:
    """A rule in words: "jobtitle ← Job title (English), Always overwrite"."""
    through = f" ({', '.join(rule.transforms)})" if rule.transforms else ""
    policy = mappings.POLICY_WORDS[rule.policy]
    return f"{rule.property} ← {_source(rule)}{through}, {policy}"


def _source(rule: mappings.Rule) -> str:
    """Where a rule's value comes from, in words."""
    return f'"{rule.constant}" (static value)' if rule.constant else label(rule.field)


def _changed(old: mappings.Rule, new: mappings.Rule) -> str:
    parts = []
    if (old.field, old.constant) != (new.field, new.constant):
        parts.append(f"value {_source(old)} → {_source(new)}")
    if old.transforms != new.transforms:
        parts.append(f"transforms {_chain(old)} → {_chain(new)}")
    if old.policy != new.policy:
        words = mappings.POLICY_WORDS
        parts.append(f"policy {words[old.policy]} → {words[new.policy]}")
    return "; ".join(parts)


def _chain(rule: mappings.Rule) -> str:
    return " ".join(rule.transforms) or "none"
