"""A mapping checked against the CRM's own fields (`CrmField`s, as an adapter's `fields()`
reads them): each output's property exists, can be written, and its type can hold the enrich
field's value after the rule's transforms; a picklist offers every value the field can then
take. Pure: a mapping and fields in, refusals out, each naming the property and why."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from connector.mappings import Mapping, Rule
from connector.platforms.base import CrmField
from server import OUTPUT_VALUES

# Result fields that hold several values joined with " | " (`split` makes them a list).
MULTI_VALUED = frozenset(
    "conLevels conFunctions conSubFunctions compNaicsCodes compSicCodes compGlobalRegions "
    "matchedOn".split()
)
NUMBERS = frozenset({"compEmpCount"})  # result fields that hold a whole number as text
# A value a free-text field may hold, for refusals to show what a picklist would not take.
EXAMPLES = {
    "compState": "California",
    "conWorkLocState": "California",
    "compCountry": "United States",
    "conWorkLocCountry": "United States",
}
TEXT_TYPES = frozenset({"text", "email", "url", "phone", "other"})
SHOWN_OPTIONS = 4  # options a refusal lists before "…"


@dataclass(frozen=True)
class Produced:
    """What a rule writes: text, a number or a list; the values it can take (None: any), and
    whether a text can join several of them with " | "."""

    kind: str
    values: tuple[str, ...] | None
    joined: bool


def refusals(mapping: Mapping, fields: Iterable[CrmField]) -> list[str]:
    """Each output the CRM's fields cannot take, as "property: why"; [] when all can."""
    by_name = {field.name: field for field in fields}
    found = ((rule, _refusal(rule, by_name.get(rule.property))) for rule in mapping.output)
    return [f"{rule.property}: {why}" for rule, why in found if why]


def _refusal(rule: Rule, field: CrmField | None) -> str:
    if field is None:
        return "no such field in the CRM (create it, or map another)"
    if field.read_only:
        return f"{field.label} is read-only in the CRM"
    produced = produced_by(rule)
    if field.type in TEXT_TYPES:
        return ""
    if field.type == "number":
        return "" if produced.kind == "number" else _not_a_number(rule)
    if field.type in ("picklist", "multipicklist"):
        return _choice_refusal(rule, field, produced)
    return f"a {field.type} field cannot hold {rule.field}'s text"


def produced_by(rule: Rule) -> Produced:
    """What `rule` writes: its enrich field's values, through its transforms."""
    field = rule.field
    kind = "number" if field in NUMBERS else "text"
    produced = Produced(kind, OUTPUT_VALUES.get(field), field in MULTI_VALUED)
    for name in rule.transforms:
        produced = _through(name, produced)
    return produced


def _through(transform: str, produced: Produced) -> Produced:
    """What `produced` becomes through one transform."""
    values = produced.values
    if transform in ("lower", "upper") and values is not None:
        return replace(produced, values=tuple(getattr(v, transform)() for v in values))
    if transform == "integer":
        return Produced("number", None, False)
    if transform == "split":
        return Produced("list", values, False)
    if transform == "first":
        return Produced("text", values, False)
    if transform in ("e164", "domain"):
        return Produced("text", None, False)
    return produced  # strip


def _not_a_number(rule: Rule) -> str:
    return f"a number field cannot hold {rule.field}'s text (the integer transform makes numbers)"


def _choice_refusal(rule: Rule, field: CrmField, produced: Produced) -> str:
    """Why a picklist (one option) or multi-select picklist cannot take what a rule writes."""
    several = field.type == "multipicklist"
    if produced.kind == "list" and not several:
        return "a picklist takes one option; the split transform makes a list (use first)"
    if produced.joined and produced.kind == "text":
        fix = "split" if several else "first"
        return f"{rule.field} can join several values with ' | ' (add the {fix} transform)"
    options = _shown(field.options)
    if produced.values is None:
        example = EXAMPLES.get(rule.field)
        sample = f'"{example}"' if example else "any text"
        return f"picklist options {options} do not include every value of {rule.field} ({sample})"
    missing = [value for value in produced.values if value not in field.options]
    if missing:
        listed = ", ".join(f'"{value}"' for value in missing[:SHOWN_OPTIONS])
        more = ", …" if len(missing) > SHOWN_OPTIONS else ""
        return f"picklist options {options} do not include {listed}{more}"
    return ""


def _shown(options: tuple[str, ...]) -> str:
    if not options:
        return "(none)"
    head = ", ".join(options[:SHOWN_OPTIONS])
    return head + (", …" if len(options) > SHOWN_OPTIONS else "")
