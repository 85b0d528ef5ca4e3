"""The mapping editor, /settings/connections/<id>/mapping?kind=contacts: a connection's mapping
of one kind of record as rows (CRM field <- enrich field, transform, overwrite policy) over
the CRM's own fields, read with the connection's token; saving validates (the file's rules,
then the CRM's fields) and makes a new version; versions restorable; custom fields created
where the CRM allows; YAML exported and imported. Use cases: connector/mapping_versions.py."""

from __future__ import annotations

from typing import Any

from flask import Response, abort, flash, g, redirect, request, url_for

import server
from connector import mapping_versions, mappings, outbound, store
from connector.platforms import PLATFORMS
from connector.platforms.base import CrmClient, CrmField, Permanent, Retriable
from connector.views import settings as page
from server import OUTPUT_FIELDS, ServiceError

Row = dict[str, Any]
POLICIES = ("fill_if_empty", "overwrite_if_ours", "always", "never")
BLANK_ROWS = 1  # empty rows under the mapping's, to add an output without script


@page.blueprint.get("/connections/<connection_id>/mapping")
def mapping_editor(connection_id: str) -> Response:
    """The editor of a connection's mapping of `kind` (contacts unless the query says)."""
    link, kind = _link_and_kind(connection_id)
    version, text = mapping_versions.current_text(page.db(), link, kind)
    rows = [_row(rule) for rule in mappings.parse(text, "mapping").output]
    return _editor(link, kind, rows, version)


@page.blueprint.post("/connections/<connection_id>/mapping")
def save_mapping(connection_id: str) -> Response:
    """Save the editor's rows as a new version, or show what refuses them (nothing saved)."""
    link, kind = _link_and_kind(connection_id)
    rows = _posted_rows()
    _, text = mapping_versions.current_text(page.db(), link, kind)
    return _save(link, kind, mapping_versions.with_outputs(text, rows), rows, "mapping.save")


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


def _save(link: Row, kind: str, text: str, rows: list[Row] | None, action: str) -> Response:
    """Validate `text` (against the CRM's fields when they can be read) and save it as a new
    version; refused, the editor again with every refusal and nothing saved."""
    fields, unread = _fields_or_why(link, kind)
    try:
        mapping_versions.validated(link, kind, text, fields)
    except mappings.MappingError as error:
        shown = rows if rows is not None else []
        return _editor(link, kind, shown, None, error.problems, fields, unread, code=400)
    by = f"{g.caller.email} ({g.caller.key_id})"

    def apply(db: Any) -> int:
        return mapping_versions.save(db, link, kind, text, server.now(), by)

    try:
        version = page.change(apply, action, link["name"], {"kind": kind})
    except ServiceError as error:
        return _back(link, kind, error.message, "error")
    return _back(link, kind, f"Saved as version {version} of the {kind} mapping.", "success")


def _editor(
    link: Row, kind: str, rows: list[Row], version: int | None, problems: list[str] | None = None,
    fields: list[CrmField] | None = None, unread: str = "", code: int = 200,
) -> Response:  # fmt: skip
    if fields is None and not unread:
        fields, unread = _fields_or_why(link, kind)
    if version is None:
        version = mapping_versions.current_text(page.db(), link, kind)[0]
    platform = PLATFORMS[link["platform"]]
    return page.render(
        "mapping.html", code, link=link, kind=kind, kinds=platform.objects, rows=rows,
        blank=BLANK_ROWS, version=version, problems=problems or [], fields=fields or [],
        unread=unread, enrich_fields=OUTPUT_FIELDS, transforms=_transform_choices(rows),
        policies=POLICIES, creates=_creates_fields(link),
        versions=mapping_versions.versions(page.db(), link, kind),
    )  # fmt: skip


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
        "transforms": " ".join(rule.transforms),
        "policy": rule.policy,
    }


def _posted_rows() -> list[Row]:
    """The editor's rows, less the removed ones and those left blank."""
    form = request.form
    columns = zip(
        form.getlist("property"), form.getlist("field"), form.getlist("transforms"),
        form.getlist("policy"), strict=False,
    )  # fmt: skip
    removed = set(form.getlist("remove"))
    rows = []
    for index, (name, field, transforms, policy) in enumerate(columns):
        if str(index) in removed or not (name.strip() or field.strip()):
            continue
        rows.append({"property": name.strip(), "field": field.strip(),
                     "transforms": " ".join(transforms.split()), "policy": policy})  # fmt: skip
    return rows


def _transform_choices(rows: list[Row]) -> list[str]:
    """No transform, each transform alone, and the chains the rows already use."""
    chains = [row["transforms"] for row in rows]
    return list(dict.fromkeys(["", *mappings.TRANSFORMS, *chains]))


def _back(link: Row, kind: str, message: str, category: str) -> Response:
    flash(message, category)
    return redirect(url_for(".mapping_editor", connection_id=link["id"], kind=kind), 303)
