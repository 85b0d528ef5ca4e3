"""The mapping editor, /settings/connections/<id>/mapping?kind=contacts: a connection's mapping
of one kind of record as rows (CRM field <- enrich field in words with an example, transform,
policy in words) over the CRM's own fields, read with the connection's token, and its minimum
match grade; saving validates (each row, the file's rules, then the CRM's fields), marks the
rows refused and makes a new version when something changed; versions shown with what each
changed, restorable; the recommended mapping as a start, custom fields created where the CRM
allows; YAML exported and imported. Use cases: connector/mapping_versions.py, mapping_words.py."""

from __future__ import annotations

from typing import Any

from flask import Response, abort, flash, g, redirect, request, url_for

import server
from connector import mapping_versions, mapping_words, mappings, outbound, store
from connector.platforms import PLATFORMS
from connector.platforms.base import CrmClient, CrmField, Permanent, Retriable
from connector.views import settings as page
from server import OUTPUT_FIELDS, ServiceError

Row = dict[str, Any]
BLANK_ROWS = 1  # empty rows under the mapping's, to add an output without script
MOST_ADDED = 20  # rows "Add rows" adds at once, at most
AUDITED_CHANGES = 5  # lines of what a save changed kept in the audit entry, then a count


@page.blueprint.get("/connections/<connection_id>/mapping")
def mapping_editor(connection_id: str) -> Response:
    """The editor of a connection's mapping of `kind` (contacts unless the query says)."""
    link, kind = _link_and_kind(connection_id)
    version, text = mapping_versions.current_text(page.db(), link, kind)
    mapping = mappings.parse(text, "mapping")
    rows = [_row(rule) for rule in mapping.output]
    return _editor(link, kind, rows, version, grade=mapping.minimum_grade)


@page.blueprint.post("/connections/<connection_id>/mapping")
def save_mapping(connection_id: str) -> Response:
    """Save the editor's rows as a new version, or show what refuses them (nothing saved);
    "Add rows" shows the rows posted with blank ones under them (nothing saved)."""
    link, kind = _link_and_kind(connection_id)
    rows, grade = _posted_rows(), request.form.get("minimum_grade", "")
    if request.form.get("action") == "add":
        added = page.integer("add", "number of rows to add")
        if not 1 <= added <= MOST_ADDED:
            return _back(link, kind, f"Add 1 to {MOST_ADDED} rows at a time.", "error")
        return _editor(link, kind, rows, None, grade=grade, blank=added)
    version, text = mapping_versions.current_text(page.db(), link, kind)
    changed = mapping_versions.with_outputs(text, rows, grade)
    if version and _same(changed, text):
        return _back(link, kind, f"Nothing changed: version {version} stays in use.", "success")
    return _save(link, kind, changed, rows, "mapping.save", grade)


@page.blueprint.post("/connections/<connection_id>/mapping/recommended")
def use_recommended(connection_id: str) -> Response:
    """The recommended mapping of the platform and kind as a new version, the custom fields it
    writes created first where the CRM lacks them and its API allows."""
    link, kind = _link_and_kind(connection_id)
    text = mapping_versions.recommended_text(link, kind)
    if _creates_fields(link):
        try:
            text = _with_fields_made(link, kind, text)
        except (Permanent, Retriable) as error:
            return _back(link, kind, f"The CRM refused to create the fields: {error}", "error")
    return _save(link, kind, text, None, "mapping.recommended")


@page.blueprint.post("/connections/<connection_id>/mapping/import")
def import_mapping(connection_id: str) -> Response:
    """An uploaded YAML file, validated, as a new version."""
    link, kind = _link_and_kind(connection_id)
    upload = request.files.get("file")
    try:
        text = upload.read().decode("utf-8") if upload else ""
    except UnicodeDecodeError:
        text = "\0"  # refused below as not YAML
    return _save(link, kind, text, None, "mapping.import")


@page.blueprint.post("/connections/<connection_id>/mapping/restore")
def restore_mapping(connection_id: str) -> Response:
    """An earlier version saved again, as the newest (checked against the CRM again)."""
    link, kind = _link_and_kind(connection_id)
    version = page.integer("version", "version")
    if not 1 <= version <= store.LARGEST_ID:  # no version is numbered past what SQLite holds
        return _back(link, kind, f"There is no version {version} of the {kind} mapping.", "error")
    try:
        text = mapping_versions.version_text(page.db(), link, kind, version)
    except mappings.MappingError as error:
        return _back(link, kind, "; ".join(error.problems), "error")
    return _save(link, kind, text, None, "mapping.restore")


@page.blueprint.get("/connections/<connection_id>/mapping/export")
def export_mapping(connection_id: str) -> Response:
    """The current mapping's YAML, as a file to download."""
    link, kind = _link_and_kind(connection_id)
    version, text = mapping_versions.current_text(page.db(), link, kind)
    name = f"{link['platform']}.{kind}.v{version}.yaml"
    response = Response(text, mimetype="application/yaml")
    response.headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@page.blueprint.post("/connections/<connection_id>/mapping/create-fields")
def create_missing_fields(connection_id: str) -> Response:
    """Create in the CRM the custom fields the current mapping writes and the CRM lacks."""
    link, kind = _link_and_kind(connection_id)
    mapping = mapping_versions.current(page.db(), link, kind)
    try:
        with outbound.client(timeout=10.0) as client:
            fields = _read_fields(link, kind, client)
            wanted = mapping_versions.missing_fields(mapping, fields)
            made = mapping_versions.create_fields(
                page.db(), page.server_secret(), link, kind, client, server.now, wanted
            )
    except (Permanent, Retriable) as error:
        return _back(link, kind, f"The CRM refused to create the fields: {error}", "error")
    names = ", ".join(field.name for field in made) or "none were missing"
    # the mapping writes each field under the name the CRM gave it (Pipedrive: a new key)
    renamed = {name: field.name for (name, _, _), field in zip(wanted, made, strict=True)
               if field.name != name}  # fmt: skip
    by = f"{g.caller.email} ({g.caller.key_id})"

    def apply(db: Any) -> int:
        mapping_versions.rename_properties(db, link, kind, renamed, server.now(), by)
        return len(made)

    page.change(apply, "mapping.create_fields", link["name"], {"fields": names})
    return _back(link, kind, f"Custom fields created: {names}.", "success")


# --- helpers ---------------------------------------------------------------------------------


def _link_and_kind(connection_id: str) -> tuple[Row, str]:
    """The signed-in organization's CRM connection and the kind asked for; 404 otherwise."""
    link = page.own_connection(connection_id)
    platform = PLATFORMS[link["platform"]]
    kind = request.args.get("kind") or "contacts"
    if not platform.crm or kind not in platform.objects:
        abort(404)
    return link, kind


def _save(
    link: Row, kind: str, text: str, rows: list[Row] | None, action: str, grade: str = ""
) -> Response:
    """Validate `text` (each row, then against the CRM's fields when they can be read) and
    save it as a new version; refused, the editor again with every refusal on its row and
    nothing saved."""
    fields, unread = _fields_or_why(link, kind)
    shown = rows if rows is not None else _rows_of(text)
    by_row, problems = mapping_versions.refused_rows(link, kind, text, shown, fields)
    if by_row or problems:
        return _editor(
            link, kind, shown, None, problems, fields, unread, code=400, by_row=by_row,
            grade=grade if rows is not None else _grade_of(text),
        )  # fmt: skip
    by = f"{g.caller.email} ({g.caller.key_id})"

    def apply(db: Any) -> int:
        return mapping_versions.save(db, link, kind, text, server.now(), by)

    lines = mapping_versions.changes_to(page.db(), link, kind, text)
    more = f"; and {len(lines) - AUDITED_CHANGES} more" if len(lines) > AUDITED_CHANGES else ""
    changes = "; ".join(lines[:AUDITED_CHANGES]) + more
    try:
        version = page.change(apply, action, link["name"], {"kind": kind, "changes": changes})
    except ServiceError as error:
        return _back(link, kind, error.message, "error")
    return _back(link, kind, f"Saved as version {version} of the {kind} mapping.", "success")


def _editor(
    link: Row, kind: str, rows: list[Row], version: int | None, problems: list[str] | None = None,
    fields: list[CrmField] | None = None, unread: str = "", code: int = 200,
    by_row: dict[int, list[str]] | None = None, grade: str = "", blank: int = BLANK_ROWS,
) -> Response:  # fmt: skip
    if fields is None and not unread:
        fields, unread = _fields_or_why(link, kind)
    db = page.db()
    if version is None:
        version = mapping_versions.current_text(db, link, kind)[0]
    platform = PLATFORMS[link["platform"]]
    return page.render(
        "mapping.html", code, link=link, kind=kind, kinds=platform.objects,
        rows=rows + [_BLANK] * blank, first_blank=len(rows), version=version,
        problems=problems or [], by_row=by_row or {}, fields=fields or [], unread=unread,
        enrich_fields=mapping_words.enrich_fields(_own_examples(link, kind, rows)),
        labels={
            name: mapping_words.label(name)
            for name in (*OUTPUT_FIELDS, *mappings.SIGNAL_FIELDS)
        },
        transforms=_transform_choices(rows), policies=mappings.POLICY_WORDS,
        grades=mappings.GRADES, grade=grade, creates=_creates_fields(link),
        most_added=MOST_ADDED, versions=mapping_versions.history(db, link, kind),
    )  # fmt: skip


_BLANK: Row = {"property": "", "field": "", "constant": "", "transforms": "",
               "policy": "fill_if_empty"}  # fmt: skip


def _own_examples(link: Row, kind: str, rows: list[Row]) -> dict[str, str]:
    """Example values from the connection's last enrichment of `kind` (none: the samples)."""
    shown, written = store.latest_enrichment(page.db(), link["id"], kind)
    rules = [mappings.Rule.model_construct(field=row["field"], property=row["property"])
             for row in rows]  # fmt: skip
    return mapping_words.own_examples(shown, written, rules)


def _with_fields_made(link: Row, kind: str, text: str) -> str:
    """`text` after creating in the CRM the custom fields it writes and the CRM lacks."""
    db, secret = page.db(), page.server_secret()
    with outbound.client(timeout=10.0) as client:
        return mapping_versions.with_fields_made(db, secret, link, kind, client, server.now, text)


def _same(text: str, other: str) -> bool:
    """Whether two mapping texts hold the same data (comments and layout aside)."""
    try:
        return mappings.parse(text, "a") == mappings.parse(other, "b")
    except mappings.MappingError:
        return False


def _rows_of(text: str) -> list[Row]:
    """The rows of a mapping text, or none when it cannot be read."""
    try:
        return [_row(rule) for rule in mappings.parse(text, "mapping").output]
    except mappings.MappingError:
        return []


def _grade_of(text: str) -> str:
    try:
        return mappings.parse(text, "mapping").minimum_grade
    except mappings.MappingError:
        return ""


def _fields_or_why(link: Row, kind: str) -> tuple[list[CrmField] | None, str]:
    """The CRM's fields, or None and why they could not be read."""
    try:
        with outbound.client(timeout=10.0) as client:
            return _read_fields(link, kind, client), ""
    except (Permanent, Retriable, ValueError) as error:
        why = (
            f"The CRM's field list could not be read ({error}). The editor checks the mapping "
            "against the mapping rules alone until it can."
        )
        return None, why


def _read_fields(link: Row, kind: str, client: Any) -> list[CrmField]:
    db, secret = page.db(), page.server_secret()
    fields = mapping_versions.crm_fields(db, secret, link, kind, client, server.now)
    return sorted(fields, key=lambda field: field.label.lower())


def _creates_fields(link: Row) -> bool:
    """Whether the platform's adapter creates fields (it overrides CrmClient's refusal)."""
    adapter = PLATFORMS[link["platform"]].adapter_class
    return getattr(adapter, "create_field", None) not in (None, CrmClient.create_field)


def _row(rule: mappings.Rule) -> Row:
    return {
        "property": rule.property,
        "field": rule.field,
        "constant": rule.constant,
        "transforms": " ".join(rule.transforms),
        "policy": rule.policy,
    }


def _posted_rows() -> list[Row]:
    """The editor's rows, less the removed ones and those left blank."""
    form = request.form
    properties = form.getlist("property")
    columns = zip(
        properties, form.getlist("field"), form.getlist("transforms"), form.getlist("policy"),
        [*form.getlist("constant"), *[""] * len(properties)], strict=False,
    )  # fmt: skip
    removed = set(form.getlist("remove"))
    rows = []
    for index, (name, field, transforms, policy, constant) in enumerate(columns):
        if str(index) in removed or not (name.strip() or field.strip() or constant.strip()):
            continue
        rows.append({"property": name.strip(), "field": field.strip(), "constant": constant.strip(),
                     "transforms": " ".join(transforms.split()), "policy": policy})  # fmt: skip
    return rows


def _transform_choices(rows: list[Row]) -> list[str]:
    """No transform, each transform alone, and the chains the rows already use."""
    chains = [row["transforms"] for row in rows]
    return list(dict.fromkeys(["", *mappings.TRANSFORMS, *chains]))


def _back(link: Row, kind: str, message: str, category: str) -> Response:
    flash(message, category)
    return redirect(url_for(".mapping_editor", connection_id=link["id"], kind=kind), 303)
