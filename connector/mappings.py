"""Mapping files: which payload values feed enrich, and which result fields go to which CRM
property, transformed how and written under which overwrite policy. Pure: data in, data out.

One YAML file per platform and kind of record (mappings/*.yaml: `hubspot.yaml` for its
contacts, `hubspot.companies.yaml`), loaded into a strict model (unknown keys are errors)::

    platform: hubspot                      # lower-case name
    object: companies                      # optional: contacts (the default), leads, companies
    record_id: [object.objectId, vid]      # paths into the payload: the first present wins
    input:                                 # enrich input field (enrich's newer names) -> paths
      conEmail: [properties.email.value, inputFields.email, email]
    output:                                # enrich result field -> CRM property, in order
      - field: conJobTitleEn
        property: jobtitle
        transforms: [strip]                # optional: names from TRANSFORMS, applied in order
        policy: overwrite_if_ours          # optional: fill_if_empty (the default),
                                           # overwrite_if_ours, always or never (see may_write)
      - constant: Contact data             # a static value instead of a field: written, as
        property: lead_source              # the policy allows, to each record enrich matched
    minimum_grade: A                       # optional: below this match grade (A+, A, A-, B)
                                           # nothing is written

A path is dict keys and list indexes joined by dots (`identities.0.value`). A payload value
is present unless it is None, "", "[[unknown]]" or not a string, number or boolean. Every
problem of a file names the file, the line and the field (`output[2].policy`). Every text is
read by one bounded reader: no anchors or aliases, and limits no mapping comes near (MAX_BYTES).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

import phonenumbers
import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import ErrorDetails

from server import (
    JOIN,  # how enrich joins the values of a multi-valued field
    NEWER_NAMES,
    OLDER_NAMES,
    OUTPUT_FIELDS,
    OUTPUT_VALUES,
    registrable_domain,
)

DIRECTORY = Path(__file__).resolve().parent.parent / "mappings"  # the default mappings
UNKNOWN = "[[unknown]]"  # a placeholder other enrichment tools write; counts as empty
Policy = Literal["fill_if_empty", "overwrite_if_ours", "always", "never"]
# The policies in the words the settings page shows them in: the one place they are named.
POLICY_WORDS: dict[str, str] = {
    "fill_if_empty": "Fill if empty",
    "overwrite_if_ours": "Overwrite until a user edits",
    "always": "Always overwrite",
    "never": "Never",
}
GRADES: tuple[str, ...] = OUTPUT_VALUES["accuracy"]  # enrich's match grades, best first
Problem = tuple[tuple[Any, ...], str, int | None]  # where, what, and the line if known

_NEWER_BY_ATTRIBUTE = {attribute: name for name, attribute in NEWER_NAMES.items()}
# The enrich inputs that identify a record on their own (contract §4.1), in the order named.
IDENTIFIERS = ("conEmail", "compName", "compWebsite", "conLinkedinUrl", "compLinkedinUrl",
               "compGuid", "conGuid")  # fmt: skip
# Values of the examples shown when the database has no contact to show.
PLACEHOLDER = {"conEmail": "jane.doe@example.com", "conFirstName": "Jane",
               "conLastName": "Doe", "compName": "Example Inc"}  # fmt: skip
_MASKED = re.compile(r"[Xx*]{2,}")  # enrich masks the last digits of a direct dial
# How a CRM or enrich joins a list's items in text: ";" (HubSpot, Salesforce, Dataverse) or
# enrich's " | ". Never ",": names and titles hold commas.
LIST_SEPARATORS = re.compile(rf"[;{re.escape(JOIN.strip())}]")


class MappingError(Exception):
    """A mapping file that cannot be used; `problems` says "file, line N, field: what" each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


# --- values ----------------------------------------------------------------------------------


def is_empty(value: Any) -> bool:
    """Whether a value counts as empty: None, "", blanks, "[[unknown]]" or an empty list."""
    if isinstance(value, str):
        return value.strip() in ("", UNKNOWN)
    return value is None or (isinstance(value, list) and not value)


def value_at(payload: Any, path: str) -> Any:
    """The value at a dotted path of dict keys and list indexes; None where there is none."""
    return _value_at_steps(payload, _steps(path))


Steps = tuple[tuple[str, int | None], ...]  # a path's keys, each with its list index if any


@lru_cache(maxsize=1024)
def _steps(path: str) -> Steps:
    """A dotted path split once: each key, and the list index it stands for (None if none)."""
    return tuple((key, int(key) if key.isdecimal() else None) for key in path.split("."))


def _value_at_steps(payload: Any, steps: Steps) -> Any:
    value = payload
    for key, index in steps:
        if isinstance(value, dict):
            value = value.get(key)
        elif index is not None and isinstance(value, list) and index < len(value):
            value = value[index]
        else:
            return None
    return value


def _payload_text(value: Any) -> str:
    if isinstance(value, str):  # the usual case, first: a string is present unless blank
        text = value.strip()
        return "" if text == UNKNOWN else text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value).strip()
    return ""


def _present(payload: Any, paths: Iterable[str]) -> Iterator[str]:
    """The texts at `paths` of a payload, in order, absent and empty ones left out."""
    for path in paths:
        text = _payload_text(_value_at_steps(payload, _steps(path)))
        if text:
            yield text


def _first_present(payload: Any, paths: tuple[Steps, ...]) -> str:
    """The text at the first of `paths` (split already) present in a payload, or ""."""
    top = payload if isinstance(payload, dict) else None
    for steps in paths:
        if top is not None and steps[0][0] not in top:
            continue  # the usual miss (a flat payload, a path into a nested one): no walk
        text = _payload_text(_value_at_steps(payload, steps))
        if text:
            return text
    return ""


def same(ours: Any, theirs: Any) -> bool:
    """Whether a value we wrote is the one a CRM holds, whatever form the CRM holds a list in:
    a JSON array (Zoho, Pipedrive), text joined with ";" (HubSpot multiple checkboxes,
    Salesforce multi-select picklists, Dataverse), or enrich's " | ". A list is its items, in
    any order (CRMs keep their options' order, not ours); a number is its text."""
    return ours == theirs or _items(ours) == _items(theirs)


def _items(value: Any) -> frozenset[str]:
    """The items of a value, as text: those of a list, or of text split at LIST_SEPARATORS."""
    if isinstance(value, str):  # the usual case: straight to the cache, no _text
        return _string_items(value)
    if value is None:
        return _NO_ITEMS
    if isinstance(value, list | tuple):
        return frozenset().union(*map(_items, value))
    return _text_items(_text(value))


_NO_ITEMS: frozenset[str] = frozenset()


@lru_cache(maxsize=4096)
def _string_items(value: str) -> frozenset[str]:
    """The items of a string value (`_text` of a string is the string stripped, "" for a
    placeholder; the same few values recur in every round)."""
    text = value.strip()
    return _text_items("" if text == UNKNOWN else text)


@lru_cache(maxsize=4096)
def _text_items(text: str) -> frozenset[str]:
    """The items of a text (the same few values recur in every round)."""
    parts = LIST_SEPARATORS.split(text)
    return frozenset(part.strip() for part in parts if part.strip())


def _text(value: Any) -> str:
    """A single value as the text a CRM would hold."""
    if is_empty(value):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip()


# --- transforms ------------------------------------------------------------------------------


def _strings(function: Callable[[str], Any]) -> Callable[[Any], Any]:
    """`function` over a string, or over each item of a list; other values pass unchanged."""

    def apply(value: Any) -> Any:
        if isinstance(value, list):
            return [apply(item) for item in value]
        return function(value) if isinstance(value, str) else value

    return apply


def _integer(text: str) -> int | None:
    """`"1,200"` or `"1200"` -> 1200; "" and anything else but a whole number -> None (a
    number-typed field refuses "": JSON's null, or no value at all, is its "nothing")."""
    whole = re.fullmatch(r"([+-]?\d+)(?:\.0*)?", re.sub(r"[,\s]", "", text))
    return int(whole[1]) if whole else None


@lru_cache(maxsize=4096)
def _e164(text: str) -> str:
    """A phone number in E.164 (`+15125550100`); "" for a masked, local or invalid one."""
    if not text.strip() or _MASKED.search(text):
        return ""
    try:
        number = phonenumbers.parse(text, None)
    except phonenumbers.NumberParseException:
        return ""
    if not phonenumbers.is_valid_number(number):
        return ""
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


def _domain(text: str) -> str:
    return registrable_domain(text) if text.strip() else ""


def _split(value: Any) -> Any:
    """`"a | b"` -> `["a", "b"]` (split on "|", parts stripped), "" -> `[]`; a list stays."""
    if isinstance(value, str):
        return [part.strip() for part in value.split("|") if part.strip()]
    return value


def _first(value: Any) -> Any:
    """The first item of a list or of a `' | '`-joined string ("" when there is none)."""
    items = _split(value)
    if isinstance(items, list):
        return items[0] if items else ""
    return items


TRANSFORMS: dict[str, Callable[[Any], Any]] = {
    "strip": _strings(str.strip),
    "lower": _strings(str.lower),
    "upper": _strings(str.upper),
    "integer": _strings(_integer),
    "split": _split,
    "first": _first,
    "e164": _strings(_e164),
    "domain": _strings(_domain),
}


# --- policies --------------------------------------------------------------------------------


def may_write(policy: str, current: Any, ours: Any = None) -> bool:
    """Whether `policy` lets a new value replace the CRM's `current` one; `ours` is what we
    last wrote to that property (None when we never did).

    fill_if_empty: only into an empty field. overwrite_if_ours: into an empty field or one
    still holding what we wrote, so a user's edit wins. always: anything. never: nothing.
    """
    if policy in ("always", "never"):
        return policy == "always"
    if is_empty(current):
        return True
    return policy == "overwrite_if_ours" and not is_empty(ours) and same(current, ours)


NO_VALUE = "no enriched value"
STATIC = "(static value)"  # a decision's field when its rule writes a constant
SAME_VALUE = "the CRM already holds this value"
KEPT = {  # why a policy leaves the CRM's value as it is
    "fill_if_empty": 'the CRM has a value, and "Fill if empty" keeps it',
    "overwrite_if_ours": "the CRM's value is not ours (a user's), and \"Overwrite until a user "
    'edits" keeps it',
    "never": 'the policy is "Never"',
}


BELOW = "the match grade"  # how a decision below the minimum grade starts


def below_minimum(grade: str, minimum: str) -> str:
    """Why a match of `grade` is not written under the `minimum` grade ("" when it is, and
    when there is no minimum)."""
    if not minimum or (grade in GRADES and GRADES.index(grade) <= GRADES.index(minimum)):
        return ""
    return f"{BELOW} {grade or '(none)'} is below the minimum {minimum}"


def skip_reason(policy: str, value: Any, current: Any, ours: Any = None) -> str:
    """Why a rule's enriched `value` (transformed, not empty) is not written over the CRM's
    `current` one (None: the CRM leaves the field empty), `ours` being what we last wrote
    there; "" when it is written. The one decision the worker and the preview share."""
    if current is None:  # a field the CRM leaves empty (most, in a backfill): as may_write
        if policy == "never":
            return KEPT[policy]
        return "" if _items(value) else NO_VALUE  # has it, is_empty(value) or not
    if value == current:
        return SAME_VALUE
    if is_empty(value):
        return NO_VALUE
    if same(value, current):
        return SAME_VALUE
    return "" if may_write(policy, current, ours) else KEPT[policy]


@dataclass(frozen=True)
class Decision:
    """One output rule applied to a record: the CRM property, the enrich field, the CRM's
    current value, the enriched value (transformed; "" when there is none) and why it is not
    written ("" when it is)."""

    property: str
    field: str
    current: Any
    value: Any
    reason: str

    @property
    def write(self) -> bool:
        return not self.reason


# --- the model -------------------------------------------------------------------------------


def _unknown(kind: str, name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(sorted(known))}"
    return f"unknown {kind} {name!r}; {hint}"


def _input_name(name: str) -> str:
    if name in NEWER_NAMES:
        return name
    newer = _NEWER_BY_ATTRIBUTE.get(OLDER_NAMES.get(name, ""))
    if newer:
        raise ValueError(f"{name!r} is enrich's older name; write {newer!r}")
    raise ValueError(_unknown("enrich input field", name, NEWER_NAMES))


# A job change's fields (connector/changes.py): what a "mark" writes on the record it concerns.
SIGNAL_FIELDS = ("jobChangeLeftOn", "jobChangeNewCompany", "jobChangeNewTitle")


def _output_name(name: str) -> str:
    if name and name not in OUTPUT_FIELDS and name not in SIGNAL_FIELDS:
        raise ValueError(_unknown("enrich result field", name, OUTPUT_FIELDS))
    return name


def _transform_name(name: str) -> str:
    if name not in TRANSFORMS:
        raise ValueError(_unknown("transform", name, TRANSFORMS))
    return name


def _dotted_path(path: str) -> str:
    if not all(key and key == key.strip() for key in path.split(".")):
        raise ValueError(f"{path!r} is not a dotted path (keys and indexes joined by dots)")
    return path


def _property_name(name: str) -> str:
    if not name or re.search(r"\s", name):
        raise ValueError(f"{name!r} is not a property name (no spaces, not empty)")
    return name


def _grade_name(name: str) -> str:
    if name and name not in GRADES:
        raise ValueError(f"unknown grade {name!r}; use one of {', '.join(GRADES)}")
    return name


def _platform_name(name: str) -> str:
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise ValueError(f"{name!r} is not a platform name (lower-case letters, digits, _)")
    return name


MAX_CONSTANT = 255  # characters of a static value (a CRM's single-line text holds 255)
NO_SOURCE = "give field (an enrich field) or constant (a static value to write)"
TWO_SOURCES = "give field (an enrich field) or constant (a static value), not both"
_Paths = Annotated[tuple[Annotated[str, AfterValidator(_dotted_path)], ...], Field(min_length=1)]


class Rule(BaseModel):
    """One output: an enrich result field (or a static value, `constant`), its transforms, the
    CRM property and the policy."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    field: Annotated[str, AfterValidator(_output_name)] = ""
    constant: Annotated[str, Field(max_length=MAX_CONSTANT)] = ""
    property: Annotated[str, AfterValidator(_property_name)]
    transforms: tuple[Annotated[str, AfterValidator(_transform_name)], ...] = ()
    policy: Policy = "fill_if_empty"

    @model_validator(mode="after")
    def _field_or_constant(self) -> Rule:
        if not self.field and not self.constant.strip():
            raise ValueError(NO_SOURCE)
        if self.field and self.constant:
            raise ValueError(TWO_SOURCES)
        return self

    def value(self, result: dict[str, Any]) -> Any:
        """This rule's field of an enrich result (or its constant), transformed ("" when it is
        empty)."""
        value = self.constant or result.get(self.field)
        return self.transformed("" if is_empty(value) else value)

    def transformed(self, value: Any) -> Any:
        """`value` through this rule's transforms, in order."""
        for function in self.functions:
            value = function(value)
        return value

    @cached_property
    def functions(self) -> tuple[Callable[[Any], Any], ...]:
        """The transforms, looked up once."""
        return tuple(TRANSFORMS[name] for name in self.transforms)


class Mapping(BaseModel):
    """One platform's mapping file (see the module docstring for its shape)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    platform: Annotated[str, AfterValidator(_platform_name)]
    kind: Literal["contacts", "leads", "companies"] = Field("contacts", alias="object")
    record_paths: _Paths = Field(alias="record_id")
    input: dict[Annotated[str, AfterValidator(_input_name)], _Paths] = Field(min_length=1)
    output: tuple[Rule, ...] = Field(min_length=1)
    minimum_grade: Annotated[str, AfterValidator(_grade_name)] = ""

    @property
    def name(self) -> str:
        """What it maps, as its file is named: the platform, then the kind unless contacts."""
        return self.platform if self.kind == "contacts" else f"{self.platform}.{self.kind}"

    def record_id(self, payload: Any) -> str | None:
        """The CRM record id in a payload: the first present `record_id` path, as text."""
        return next(_present(payload, self.record_paths), None)

    def enrich_input(self, payload: Any) -> dict[str, str]:
        """The enrich body for a payload: each input field found, as text."""
        found = {name: _first_present(payload, paths) for name, paths in self._input_steps}
        return {name: text for name, text in found.items() if text}

    def with_vendor_names(self, payload: Any) -> dict[str, str]:
        """`enrich_input`, plus the enrich API's own input names the payload (or its `data`)
        sends for what the mapping found nothing for: a sender may write either vocabulary.
        The record id the mapping finds goes as the API's `recordId`, which answers echo."""
        found = self.enrich_input(payload)
        taken = {NEWER_NAMES[name] for name in found}
        for name, attribute, value in _vendor_named(payload):
            text = _payload_text(value)
            if text and attribute not in taken:
                found[name] = text
        record_id = self.record_id(payload)
        return {**found, "recordId": record_id} if record_id else found

    def sender_keys(self) -> dict[str, str]:
        """Each input field and the key a flat JSON body sends it under (its first path that
        is a plain key), as the steps and errors name them."""
        plain = {
            name: next((p for p in paths if "." not in p), "") for name, paths in self.input.items()
        }
        return {name: key for name, key in plain.items() if key}

    @property
    def record_key(self) -> str:
        """The plain key a flat JSON body names its record's id with ("" if none)."""
        return next((path for path in self.record_paths if "." not in path), "")

    def example(self, sample: dict[str, str]) -> dict[str, str]:
        """A flat body for the sender to paste: `sample`'s values (by enrich input name) under
        the mapping's keys, with a record id when the mapping reads one."""
        keys = self.sender_keys()
        body = {self.record_key: "1"} if self.record_key else {}
        return body | {keys[name]: value for name, value in sample.items() if name in keys}

    def missing_identifier(self, sample: dict[str, str]) -> str:
        """What a body without an identifier is told, in the sender's keys."""
        keys = self.sender_keys()
        named = [keys[name] for name in IDENTIFIERS if name in keys]
        person = [
            keys[name] for name in ("conFullName", "conFirstName", "conLastName") if name in keys
        ]
        company = [keys[name] for name in ("compName", "compWebsite") if name in keys]
        people = (
            f"; a person's name ({', '.join(person)}) counts only with {' or '.join(company)}"
            if person and company else ""
        )  # fmt: skip
        return (
            f"At least one identifier is needed: send {_either(named)}{people}. For example: "
            f"{json.dumps(self.example(sample))}. The enrich API's own names (contactEmail, "
            "companyName, ...) work too."
        )

    @cached_property
    def _input_steps(self) -> tuple[tuple[str, tuple[Steps, ...]], ...]:
        """Each input field with its paths, split once."""
        return tuple((name, tuple(map(_steps, paths))) for name, paths in self.input.items())

    def outputs(self, result: dict[str, Any]) -> dict[str, Any]:
        """Every mapped property with its transformed value (synchronous responses)."""
        return {rule.property: rule.value(result) for rule in self.output}

    def changes(
        self, result: dict[str, Any], current: dict[str, Any], ours: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The properties to write back, given the CRM's `current` values and `ours`, what we
        last wrote to each: what each rule's policy allows, leaving out empty values (we never
        clear a field) and values the CRM already holds."""
        ours = ours or {}
        written: dict[str, Any] = {}
        if below_minimum(str(result.get("accuracy") or ""), self.minimum_grade):
            return written
        matched = bool(result.get("accuracy"))
        for field, name, functions, policy, constant in self._rules:
            value = (constant if matched else None) if constant else result.get(field)
            if value is None or is_empty(value):  # no transform makes something of nothing
                continue
            for function in functions:
                value = function(value)
            if not skip_reason(policy, value, current.get(name), ours.get(name)):
                written[name] = value
        return written

    def decisions(
        self, result: dict[str, Any], current: dict[str, Any], ours: dict[str, Any] | None = None
    ) -> list[Decision]:
        """Each rule's decision, in order, as `changes` makes it (a preview shows them): the
        properties `changes` returns are exactly those decided to be written."""
        ours = ours or {}
        decided = []
        low = below_minimum(str(result.get("accuracy") or ""), self.minimum_grade)
        matched = bool(result.get("accuracy"))
        for field, name, functions, policy, constant in self._rules:
            value = (constant if matched else None) if constant else result.get(field)
            reason = NO_VALUE
            if value is not None and not is_empty(value):
                for function in functions:
                    value = function(value)
                reason = low or skip_reason(policy, value, current.get(name), ours.get(name))
            shown = "" if value is None or is_empty(value) else value
            source = field or STATIC
            decided.append(Decision(name, source, current.get(name), shown, reason))
        return decided

    @cached_property
    def _rules(self) -> tuple[tuple[str, str, tuple[Callable[[Any], Any], ...], str, str], ...]:
        """Each output rule as plain data: field, property, transforms, policy, constant."""
        return tuple((r.field, r.property, r.functions, r.policy, r.constant) for r in self.output)


def _vendor_named(payload: Any) -> Iterator[tuple[str, str, Any]]:
    """The values a payload, or its `data`, gives under the enrich API's input names: each
    name, the Query attribute it stands for, and the value."""
    for source in (payload, payload.get("data")) if isinstance(payload, dict) else ():
        for name, value in source.items() if isinstance(source, dict) else ():
            attribute = NEWER_NAMES.get(name) or OLDER_NAMES.get(name)
            if attribute:
                yield name, attribute, value


def _either(names: list[str]) -> str:
    """ "a, b or c"."""
    return " or ".join(filter(None, (", ".join(names[:-1]), names[-1]))) if names else ""


# --- loading ---------------------------------------------------------------------------------


def load(path: str | Path) -> Mapping:
    """The mapping in a YAML file; MappingError names the file, line and field of each problem."""
    return parse(read(Path(path)), str(path))


def parse(text: str, source: str) -> Mapping:
    """The mapping a YAML text holds (a saved version, an upload); MappingError names
    `source`, the line and the field of each problem, as `load` does a file's."""
    data, root = _parse(text, source)
    if root is None:
        needs = _top_keys(required=True)
        raise MappingError([f"{source}, line 1: the file is empty; a mapping needs {needs}"])
    problems = [*_duplicate_keys(root), *_duplicate_properties(data)]
    try:
        mapping = Mapping.model_validate(data)
    except ValidationError as error:
        problems += _schema_problems(error)
    if problems:
        raise MappingError(_described(source, root, problems))
    return mapping


def load_current(path: str | Path) -> Mapping:
    """`load`, kept until the file changes: for a file read on every request or event."""
    return _load_cached(str(path), Path(path).stat().st_mtime_ns)


def load_for(own: str | Path, default_file: str, kind: str) -> Mapping:
    """The mapping of a connection's `kind` of records: its own (`own`, the connection's
    chosen file) for contacts, else its platform's default for the kind (`default_file`,
    `Platform.mapping_file_for(kind)`, in DIRECTORY)."""
    return load_current(own if kind == "contacts" else DIRECTORY / default_file)


_SAVED: dict[tuple[str, str, int], Mapping] = {}  # parsed saved versions (see load_saved)
_SAVED_LIMIT = 256


def load_saved(key: tuple[str, str, int], read: Callable[[], str], source: str) -> Mapping:
    """A saved mapping version (`key`: connection id, kind, version), parsed from the text
    `read()` gives the first time only: a version never changes once saved."""
    if key not in _SAVED:
        if len(_SAVED) >= _SAVED_LIMIT:
            _SAVED.clear()
        _SAVED[key] = parse(read(), source)
    return _SAVED[key]


@lru_cache(maxsize=64)
def _load_cached(path: str, modified: int) -> Mapping:
    return load(path)


def load_all(directory: str | Path) -> dict[str, Mapping]:
    """The mappings of a directory's *.yaml files by name (`Mapping.name`: the platform, and
    the kind of record unless contacts); one MappingError lists the problems of every file."""
    directory = Path(directory)
    if not directory.is_dir():
        raise MappingError([f"{directory}: not a directory"])
    mappings: dict[str, Mapping] = {}
    files: dict[str, Path] = {}
    problems: list[str] = []
    for path in sorted(directory.glob("*.yaml")):
        try:
            mapping = load(path)
        except MappingError as error:
            problems += error.problems
            continue
        if mapping.name in mappings:
            what = f"platform {mapping.platform!r}" + (
                "" if mapping.kind == "contacts" else f"'s {mapping.kind}"
            )
            clash = f"{what} is already mapped by {files[mapping.name]}"
            root = _parse(read(path), str(path))[1]
            problems += _described(str(path), root, [(("platform",), clash, None)])
            continue
        mappings[mapping.name], files[mapping.name] = mapping, path
    if problems:
        raise MappingError(problems)
    return mappings


def check(path: str | Path) -> list[str]:
    """The problems of a mapping file, one line each naming file, line and field; [] if fine."""
    try:
        load(path)
    except MappingError as error:
        return error.problems
    return []


def read(path: Path) -> str:
    """A mapping file's text; MappingError when it cannot be read as UTF-8 or is over
    MAX_BYTES (refused before it is read)."""
    try:
        if path.stat().st_size > MAX_BYTES:
            raise MappingError([f"{path}, line 1: {_TOO_LONG}"])
        return path.read_text(encoding="utf-8")
    except OSError as error:
        raise MappingError([f"{path}: cannot be read ({error.strerror})"]) from None
    except UnicodeDecodeError:
        raise MappingError([f"{path}, line 1: not UTF-8 text"]) from None


# The reader's bounds: what a mapping file can need, many times over, and no more, so that
# any text is read, or refused, in well under a second (PyYAML's scanner takes about 2 µs a
# character): tests/test_mappings.py's "bounded reader" tests.
MAX_BYTES = 64 * 1024  # the text (the largest shipped file is under 5 KiB)
MAX_DEPTH = 20  # levels of lists and keys within one another (the shipped files use 4)
MAX_NODES = 5000  # keys, values and list items (the shipped files hold at most 245)
MAX_SCALAR = 1000  # characters of one key or value (the shipped files' longest is 42)
_TOO_LONG = f"the text is over {MAX_BYTES // 1024} KiB; a mapping file is a few KiB"
_ANCHOR = (
    "YAML anchors and aliases (&name, *name) are refused: a mapping file never needs them; "
    "write the value out"
)


class _Refused(Exception):
    """A node the bounded reader refuses: its 1-based line, its place and why."""

    def __init__(self, line: int, loc: tuple[Any, ...], what: str) -> None:
        super().__init__(what)
        self.line, self.loc, self.what = line, loc, what


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing each node before it is composed if it is an anchor or
    an alias, or is over the bounds: no alias is expanded, no tree is deeper or bigger than
    the bounds, and nothing recurses deeper than MAX_DEPTH."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.loc: tuple[Any, ...] = ()
        self.depth = self.nodes = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()
        step = index.value if isinstance(index, yaml.ScalarNode) else index  # key, item, None
        loc = self.loc if step is None else (*self.loc, step)
        self.nodes += 1
        depth = self.depth + isinstance(event, yaml.CollectionStartEvent)
        why = _refusal(event, depth, self.nodes)
        if why:
            raise _Refused(event.start_mark.line + 1, loc, why)
        outer = self.loc, self.depth
        self.loc, self.depth = loc, depth
        try:
            return super().compose_node(parent, index)
        finally:
            self.loc, self.depth = outer


def _refusal(event: yaml.NodeEvent, depth: int, nodes: int) -> str:
    """Why the bounded reader refuses the node `event` starts ("" when it does not)."""
    if event.anchor is not None:  # an alias's anchor is the name it refers to
        return _ANCHOR
    if depth > MAX_DEPTH:
        return f"nested more than {MAX_DEPTH} levels deep; a mapping file needs 4"
    if nodes > MAX_NODES:
        return f"more than {MAX_NODES} keys, values and list items; a mapping file needs hundreds"
    if isinstance(event, yaml.ScalarEvent) and len(event.value) > MAX_SCALAR:
        return f"a value of over {MAX_SCALAR} characters; names and paths are short"
    return ""


def _bounded_load(text: str, source: str) -> tuple[Any, yaml.Node | None]:
    """A YAML text as data and as nodes, through _BoundedLoader; MappingError when refused."""
    if len(text) > MAX_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise MappingError([f"{source}, line 1: {_TOO_LONG}"])
    loader = _BoundedLoader(text)
    try:
        root = loader.get_single_node()
        return (None if root is None else loader.construct_document(root)), root
    except _Refused as refused:
        where = _where(refused.loc)
        raise MappingError([f"{source}, line {refused.line}, {where}: {refused.what}"]) from None
    finally:
        loader.dispose()


def _parse(text: str, source: str) -> tuple[Any, yaml.Node | None]:
    """A YAML text as data and as nodes (which know their lines); None, None when empty.
    Read within the bounds above (MappingError when not)."""
    try:
        return _bounded_load(text, source)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        near = _key_before(text, line)
        where = f", near {near}" if near else ""
        reason = getattr(error, "problem", None) or str(error)
        raise MappingError([f"{source}, line {line}{where}: not valid YAML: {reason}"]) from None


def _key_before(text: str, line: int) -> str:
    """The last mapping key the YAML scanner read at or before `line` (1-based), or ""."""
    key, after_key = "", False
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if token.start_mark.line >= line:
                break
            if after_key and isinstance(token, yaml.ScalarToken):
                key = token.value
            after_key = isinstance(token, yaml.KeyToken)
    except yaml.YAMLError:
        pass
    return key


def _duplicate_keys(node: yaml.Node | None, loc: tuple[Any, ...] = ()) -> Iterator[Problem]:
    """Keys given twice in one YAML mapping (PyYAML would silently keep the last)."""
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            name = str(key.value)
            if name in seen:
                yield (*loc, name), "this key is given twice", key.start_mark.line + 1
            seen.add(name)
            yield from _duplicate_keys(value, (*loc, name))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _duplicate_keys(item, (*loc, index))


def _duplicate_properties(data: Any) -> Iterator[Problem]:
    """Outputs writing a property an earlier output already writes (read from the raw data,
    so that they show with the file's other problems)."""
    rules = data.get("output") if isinstance(data, dict) else None
    first: dict[str, int] = {}
    for index, rule in enumerate(rules if isinstance(rules, list) else []):
        name = rule.get("property") if isinstance(rule, dict) else None
        earlier = first.setdefault(name, index) if isinstance(name, str) else index
        if earlier != index:
            clash = f"property {name!r} is already written by output[{earlier}]"
            yield ("output", index, "property"), clash, None


def rule_problems(data: dict[str, Any]) -> dict[str, str]:
    """What refuses one output rule (an editor's row: field, property, transforms, policy),
    by the key at fault, in the file's terms; {} when the rule is fine."""
    try:
        Rule.model_validate(data)
    except ValidationError as error:
        return {str(d["loc"][0]) if d["loc"] else "": _message(d) for d in error.errors()}
    return {}


def _schema_problems(error: ValidationError) -> list[Problem]:
    """The model's errors, less a list's "too short" that only its items' own errors caused."""
    details = error.errors()
    above = {detail["loc"][:depth] for detail in details for depth in range(len(detail["loc"]))}
    return [
        (detail["loc"], _message(detail), None)
        for detail in details
        if not (detail["type"] == "too_short" and detail["loc"] in above)
    ]


_MESSAGES = {
    "missing": "this required key is missing",
    "too_short": "give at least one",
    "tuple_type": "expected a list, like [a, b]",
    "dict_type": "expected keys with values",
    "model_type": "expected keys with values",
    "string_type": "expected text",
}


def _message(detail: ErrorDetails) -> str:
    """A pydantic error in the mapping file's terms."""
    kind, loc = detail["type"], detail["loc"]
    if kind == "extra_forbidden":
        model = Rule if loc[0] == "output" else Mapping
        allowed = ", ".join(field.alias or name for name, field in model.model_fields.items())
        return f"unknown key; the keys here are {allowed}"
    if kind in _MESSAGES:
        return _MESSAGES[kind]
    if kind == "literal_error":
        return f"unknown value {detail['input']!r}; use {detail.get('ctx', {}).get('expected')}"
    return detail["msg"].removeprefix("Value error, ")


def _described(source: str, root: yaml.Node | None, problems: Iterable[Problem]) -> list[str]:
    """Problems as "file, line N, field: what", in the order of their lines."""
    keys: dict[int, dict[str, _Pair]] = {}  # shared by the problems: one walk of each mapping
    lines = ((line or _line(root, loc, keys), _where(loc), what) for loc, what, line in problems)
    return [f"{source}, line {line}, {where}: {what}" for line, where, what in sorted(lines)]


def _top_keys(required: bool = False) -> str:
    fields = Mapping.model_fields.items()
    return ", ".join(f.alias or n for n, f in fields if f.is_required() or not required)


def _where(loc: Iterable[Any]) -> str:
    """A location as a field name: `output[2].transforms[0]`, `input.conEmail`."""
    text = ""
    for part in loc:
        if part == "[key]":
            continue
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text or "top level"


_Pair = tuple[yaml.Node, yaml.Node]  # a key of a YAML mapping and its value


def _line(node: yaml.Node | None, loc: Iterable[Any], keys: dict[int, dict[str, _Pair]]) -> int:
    """The 1-based line of the deepest node of `loc` present in the file (a key's own line);
    `keys` holds the mappings already looked into."""
    line = node.start_mark.line if node else 0
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            pair = _keyed(node, keys).get(str(part))
            if pair is None:
                break
            key, node = pair
            line = key.start_mark.line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                break
            node = node.value[part]
            line = node.start_mark.line
        else:
            break
    return line + 1


def _keyed(node: yaml.MappingNode, keys: dict[int, dict[str, _Pair]]) -> dict[str, _Pair]:
    """A mapping's pairs by key (the first of a key given twice), made once for each mapping."""
    if id(node) not in keys:
        pairs: dict[str, _Pair] = {}
        for key, value in node.value:
            pairs.setdefault(str(key.value), (key, value))
        keys[id(node)] = pairs
    return keys[id(node)]
