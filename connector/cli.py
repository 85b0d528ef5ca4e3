"""The `contactdata` command line: the service's commands (server/cli.py) and the connector's
(connections, mapping checks)."""

from __future__ import annotations

import json
import logging
import math
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import click

import server
from connector import (
    backfill,
    connections,
    jobs,
    mapping_versions,
    mappings,
    oauth_apps,
    outbound,
    preview,
    scheduler,
    schema,
    signal_settings,
    signals_digest,
    store,
    suppression,
    webhook_setup,
    worker,
)
from connector.platforms import PLATFORMS, hubspot
from connector.platforms.base import Permanent, Retriable
from server import DB_OPTION, ServiceError, utcnow
from server import cli_main as main
from server import load_settings as load

__all__ = ["main", "run"]


def run() -> None:
    """The `contactdata` entry point: every command, serving the connector's app, the demo
    with the write-back worker beside it, `db move` moving the connector's tables too, and
    `privacy erase` deleting the connector's copies of the person's data too."""
    main(
        obj={
            "app_factory": "connector.app:create_app",
            "demo_alongside": worker_alongside,
            "demo_pages": [SETTINGS_PAGE],
            "schemas": [MOVED],
            "erasers": [suppression.erase],
        }
    )


# What `db move` moves of the connector: its tables, and the job schedule kept beside a
# SQLite database (connector/scheduler.py), which on PostgreSQL is the database's.
MOVED = server.MoveSchema(schema.MIGRATIONS, companions=(".jobs",))


# The longest `worker --idle` and `--lease`, in seconds: past it a lease is a typo, and far
# past it a time no clock holds (a traceback).
A_DAY = 86_400


# The page the demo names beside its curl lines: where an admin manages the connections.
SETTINGS_PAGE = ("settings page (sign in with an admin key)", "/settings")


@contextmanager
def worker_alongside(db_path: Path | str, public_url: str) -> Iterator[None]:
    """The write-back worker (and its scheduled jobs) running until the block ends, with the
    server's public URL (the base of the webhook URLs its jobs register)."""
    command = [sys.executable, "-m", "connector.cli", "worker", "--db", str(db_path)]
    worker_process = subprocess.Popen(
        command, env={**os.environ, "CONTACTDATA_PUBLIC_URL": public_url}
    )
    try:
        yield
    finally:
        worker_process.terminate()
        worker_process.wait(timeout=30)


@main.group()
def connection() -> None:
    """Bind a platform account to an organization key: add, list, show, edit, pause, resume,
    rotate-secret, remove."""


@connection.command("add")
@DB_OPTION.changing
@click.option("--name", required=True)
@click.option("--platform", required=True, type=click.Choice(list(PLATFORMS)))
@click.option("--api-key", required=True, help="An API key of the organization to enrich for.")
@click.option("--mapping", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--crm-base-url", default="", help="The CRM's API base URL (CRMs only).")
@click.option(
    "--crm-token",
    default="",
    help="The CRM API token (CRMs only); with an OAuth client, the current access token.",
)
@click.option("--crm-client-id", default="", help="OAuth client id, to renew expiring tokens.")
@click.option("--crm-client-secret", default="", help="OAuth client secret.")
@click.option(
    "--crm-refresh-token", default="", help="OAuth refresh token (the refresh_token grant)."
)
@click.option(
    "--crm-token-url",
    default="",
    help="OAuth token endpoint (default: the CRM's own; required for dynamics).",
)
@click.option(
    "--crm-scope",
    default="",
    help="Scope of a client_credentials grant (dynamics default: <crm-base-url>/.default).",
)
@click.option("--secret", default="", help="The secret the platform signs with, if it issues one.")
@click.option(
    "--salesforce-org-id",
    "salesforce_org_ids",
    multiple=True,
    help="A Salesforce organization allowed to send (repeat for several; salesforce only).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def connection_add(db_path: Path, as_json: bool, **options: Any) -> None:
    """Add a connection; print its id, inbound secret (shown only this once) and webhook URLs."""
    settings = load({"DB": str(db_path)})
    try:
        added = connections.add(
            store.connect(db_path), server.key_secret(settings), utcnow(), **options
        )
    except (connections.InvalidConnection, ServiceError) as error:
        raise click.ClickException(str(error)) from None
    urls = connections.urls(added.row, settings["PUBLIC_URL"], added.secret)
    summary = {"id": added.row["id"], "secret": added.secret, **urls}
    if as_json:
        click.echo(json.dumps(summary))
        return
    click.echo(f"connection {added.row['name']} ({added.row['platform']}) id {added.row['id']}")
    click.echo(f"inbound secret (shown once, paste it into the platform now): {added.secret}")
    click.echo(f"enrich URL: {urls['enrichUrl']}")
    events = urls["eventsUrl"] or "none: not a CRM, so the platform calls the enrich URL"
    click.echo(f"events URL: {events}")


@connection.command("list")
@DB_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def connection_list(db_path: Path, as_json: bool) -> None:
    """List connections (secrets by their last characters only)."""
    rows = [connections.shown(row) for row in store.connections(store.connect(db_path))]
    if as_json:
        click.echo(json.dumps(rows))
        return
    for row in rows:
        click.echo(f"{row['id']}  {row['platform']:<10}  org {row['org_id']}  {row['name']}")


@connection.command("show")
@DB_OPTION
@click.argument("connection_id")
def connection_show(db_path: Path, connection_id: str) -> None:
    """Show one connection and its webhook URLs, as JSON."""
    settings = load({"DB": str(db_path)})
    row = store.connection(store.connect(db_path), connection_id)
    if row is None:
        raise click.ClickException(f"no connection {connection_id}")
    click.echo(
        json.dumps(
            {**connections.shown(row), **connections.urls(row, settings["PUBLIC_URL"])}, indent=2
        )
    )


@connection.command("edit")
@DB_OPTION.changing
@click.argument("connection_id")
@click.option("--name", default=None, help="Its new name.")
@click.option("--refresh-days", type=int, default=None, help="Its new refresh interval.")
def connection_edit(
    db_path: Path, connection_id: str, name: str | None, refresh_days: int | None
) -> None:
    """Rename a connection or change its refresh interval."""
    db, row = _connection(db_path, connection_id)
    name = row["name"] if name is None else name
    days = row["refresh_days"] if refresh_days is None else refresh_days
    try:
        connections.edit(db, connection_id, name, days)
    except connections.InvalidConnection as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"connection {connection_id}: {name}, refreshed after {days} days")


@connection.command("pause")
@DB_OPTION.changing
@click.argument("connection_id")
def connection_pause(db_path: Path, connection_id: str) -> None:
    """Pause: its events are still verified, stored and acknowledged, but held (and its enrich
    URL refuses) until it is resumed."""
    db, _ = _connection(db_path, connection_id)
    done = connections.pause(db, connection_id, utcnow())
    click.echo(f"connection {connection_id} {'paused' if done else 'was paused already'}")


@connection.command("resume")
@DB_OPTION.changing
@click.argument("connection_id")
def connection_resume(db_path: Path, connection_id: str) -> None:
    """Resume a paused connection: the worker works off what it held."""
    db, _ = _connection(db_path, connection_id)
    done = connections.resume(db, connection_id)
    click.echo(f"connection {connection_id} {'resumed' if done else 'was not paused'}")


@connection.command("rotate-secret")
@DB_OPTION.changing
@click.argument("connection_id")
@click.option(
    "--grace-seconds",
    type=int,
    default=86_400,
    show_default=True,
    help="How long the previous secret still verifies.",
)
@click.option("--secret", default="", help="The new secret, for a platform that issues its own.")
def connection_rotate_secret(
    db_path: Path, connection_id: str, grace_seconds: int, secret: str
) -> None:
    """Give a connection a new inbound secret, printed this once; the webhooks the connector
    registered in its CRM are registered again with it (a refusal printed, the new secret
    kept)."""
    settings = load({"DB": str(db_path)})
    db, _ = _connection(db_path, connection_id)
    secret_key = server.key_secret(settings)
    try:
        new = connections.rotate_secret(
            db, secret_key, connection_id, utcnow(), grace_seconds, secret
        )
    except connections.InvalidConnection as error:
        raise click.ClickException(str(error)) from None
    _, row = _connection(db_path, connection_id)
    with outbound.client(timeout=10.0) as client:
        outcome = webhook_setup.set_up_again(
            db, secret_key, row, client, settings["PUBLIC_URL"], utcnow()
        )
    paste = "" if outcome.ok and outcome.message else ", paste it into the platform now"
    click.echo(f"new inbound secret (shown once{paste}): {new}")
    click.echo(f"the previous secret still verifies for {grace_seconds} seconds")
    if outcome.message:
        click.echo(outcome.message, err=not outcome.ok)


@connection.command("remove")
@DB_OPTION.changing
@click.argument("connection_id")
def connection_remove(db_path: Path, connection_id: str) -> None:
    """Remove a connection: the webhooks the connector registered in its CRM are deleted, its
    webhook URLs stop working at once, and a key made for it is suspended."""
    settings = load({"DB": str(db_path)})
    db, row = _connection(db_path, connection_id)
    secret_key = server.key_secret(settings)
    revoke = connections.revoker(secret_key, utcnow())
    with outbound.client(timeout=10.0) as client:
        outcome = webhook_setup.remove(
            db, secret_key, row, client, settings["PUBLIC_URL"], utcnow(), revoke
        )
    if outcome.message:
        click.echo(outcome.message, err=not outcome.ok)
    click.echo(f"removed connection {connection_id}")


@connection.command("register-webhooks")
@DB_OPTION.changing
@click.argument("connection_id")
def connection_register_webhooks(db_path: Path, connection_id: str) -> None:
    """Register the connection's events URL in its CRM where its API allows it (Pipedrive
    webhooks, Zoho notification channels), replacing those registered before; elsewhere,
    print the steps to do it by hand."""
    settings = load({"DB": str(db_path)})
    db, row = _connection(db_path, connection_id)
    with outbound.client(timeout=10.0) as client:
        outcome = webhook_setup.set_up(
            db, server.key_secret(settings), row, client, settings["PUBLIC_URL"], utcnow()
        )
    if not outcome.ok:
        raise click.ClickException(outcome.message)
    steps = webhook_setup.install(db, row, settings["PUBLIC_URL"])["steps"]
    click.echo(outcome.message or "\n".join(f"{n}. {step}" for n, step in enumerate(steps, 1)))


def _connection(db_path: Path, connection_id: str) -> tuple[Any, dict[str, Any]]:
    db = store.connect(db_path)
    row = store.connection(db, connection_id)
    if row is None:
        raise click.ClickException(f"no connection {connection_id}")
    return db, row


@main.group("oauth-app")
def oauth_app() -> None:
    """The OAuth app registered for each CRM platform, through which admins connect: set,
    list, remove."""


@oauth_app.command("set")
@DB_OPTION.changing
@click.argument("platform")
@click.option("--client-id", required=True, help="The app's client id.")
@click.option("--client-secret", required=True, help="The app's client secret (stored sealed).")
@click.option("--scope", default=None, help="The scope asked for (default: the platform's).")
@click.option("--authorize-url", default="", help="Consent URL (default: the platform's).")
@click.option("--token-url", default="", help="Token endpoint (default: the platform's).")
@click.option("--app-id", default="", help="HubSpot: the app's id, to set its subscriptions.")
@click.option(
    "--developer-key", default="",
    help="HubSpot: the developer account's API key (stored sealed), with --app-id.",
)  # fmt: skip
def oauth_app_set(db_path: Path, **options: Any) -> None:
    """Register (or replace) a CRM platform's OAuth app; its secrets are shown by a hint only.
    With HubSpot's --app-id and --developer-key, connecting also sets the app's webhook
    target URL and subscriptions."""
    settings = load({"DB": str(db_path)})
    try:
        row = oauth_apps.save(
            store.connect(db_path), server.key_secret(settings), utcnow(), **options
        )
    except oauth_apps.InvalidOAuthApp as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"oauth app for {row['platform']} saved: {_oauth_app_line(row)}")


def _oauth_app_line(row: dict[str, Any]) -> str:
    app = f" app {row['app_id']} developer key {row['developer_key_hint']}" if row["app_id"] else ""
    return (
        f"client {row['client_id']} secret {row['client_secret_hint']} "
        f"scope {row['scope'] or '-'} authorize {row['authorize_url']} token {row['token_url']}"
        f"{app}"
    )


@oauth_app.command("list")
@DB_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def oauth_app_list(db_path: Path, as_json: bool) -> None:
    """List the registered OAuth apps (client secrets by their last characters only)."""
    rows = oauth_apps.listed(store.connect(db_path))
    if as_json:
        click.echo(json.dumps(rows))
        return
    for row in rows:
        click.echo(f"{row['platform']:<10}  {_oauth_app_line(row)}")
    if not rows:
        click.echo("no oauth app: register one with `contactdata oauth-app set PLATFORM`")


@oauth_app.command("remove")
@DB_OPTION.changing
@click.argument("platform")
def oauth_app_remove(db_path: Path, platform: str) -> None:
    """Remove a platform's OAuth app: admins can no longer connect through it."""
    if not oauth_apps.remove(store.connect(db_path), platform):
        raise click.ClickException(f"no oauth app for {platform}")
    click.echo(f"removed the oauth app for {platform}")


@main.group("hubspot")
def hubspot_group() -> None:
    """HubSpot as a public app: its custom workflow action."""


@hubspot_group.command("register-action")
@click.option("--app-id", required=True, help="The HubSpot app's id.")
@click.option(
    "--developer-key",
    envvar="CONTACTDATA_HUBSPOT_DEVELOPER_KEY",
    required=True,
    help="The developer account's API key (or CONTACTDATA_HUBSPOT_DEVELOPER_KEY).",
)
@click.option(
    "--base-url", default="https://api.hubapi.com", show_default=True, help="HubSpot's API."
)
@click.option(
    "--object",
    "kind",
    type=click.Choice(hubspot.OBJECT_TYPES.keys()),
    default="contacts",
    show_default=True,
    help="The records the action enriches.",
)
@click.option(
    "--mapping",
    "mapping_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The mapping (default: mappings/ of the object).",
)
@click.option("--publish", is_flag=True, help="Publish it: every installed account sees it.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def hubspot_register_action(
    app_id: str, developer_key: str, base_url: str, kind: str, mapping_path: Path | None,
    publish: bool, as_json: bool,
) -> None:  # fmt: skip
    """Create or update (never duplicate) the app's custom workflow action, made from the
    mapping: its inputs, its typed outputs, and <PUBLIC_URL>/hooks/hubspot/action."""
    action_url = load()["PUBLIC_URL"].rstrip("/") + "/hooks/hubspot/action"
    mapping = _action_mapping(
        mapping_path or mappings.DIRECTORY / hubspot.PLATFORM.mapping_file_for(kind)
    )
    definition = hubspot.action_definition(mapping, action_url, publish)
    try:
        with outbound.client(timeout=30.0) as client:
            api = hubspot.HubSpotDeveloper(outbound.check_crm_url(base_url), developer_key, client)
            action_id, created = hubspot.register_action(api, app_id, definition)
    except (outbound.UnsafeUrl, Permanent, Retriable) as failure:
        raise click.ClickException(str(failure)) from None
    if as_json:
        click.echo(json.dumps({"id": action_id, "created": created, "published": publish}))
        return
    state = "published" if publish else "unpublished: only the developer account sees it"
    click.echo(f"action {action_id} {'created' if created else 'updated'} ({state}): {action_url}")


def _action_mapping(path: Path) -> mappings.Mapping:
    """The mapping a HubSpot action is made from: of HubSpot's contacts or companies."""
    try:
        mapping = mappings.load(path)
    except mappings.MappingError as error:
        raise click.ClickException(str(error)) from None
    if mapping.platform != "hubspot" or mapping.kind not in hubspot.OBJECT_TYPES:
        raise click.ClickException(f"{path}: not a mapping of HubSpot contacts or companies")
    return mapping


@main.group()
def mapping() -> None:
    """Check mapping files (mappings/*.yaml); export, import and list a connection's saved
    versions."""


@mapping.command("check")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def mapping_check(path: Path) -> None:
    """Validate a mapping file: every problem with its line, or "ok"; exit 1 on problems."""
    problems = mappings.check(path)
    for problem in problems:
        click.echo(problem)
    if problems:
        raise SystemExit(1)
    click.echo(f"{path}: ok")


KIND_OPTION = click.option(
    "--kind", type=click.Choice(["contacts", "leads", "companies"]), default="contacts",
    show_default=True, help="The kind of record the mapping is of.",
)  # fmt: skip


def _crm_link(db: Any, connection_id: str, kind: str) -> dict[str, Any]:
    link = store.connection(db, connection_id)
    if link is None:
        raise click.ClickException(f"no connection {connection_id}")
    if kind not in PLATFORMS[link["platform"]].objects:
        raise click.ClickException(f"{link['platform']} has no {kind} the connector enriches")
    return link


@mapping.command("export")
@DB_OPTION
@click.argument("connection_id")
@KIND_OPTION
def mapping_export(db_path: Path, connection_id: str, kind: str) -> None:
    """Print the YAML of a connection's mapping in use (its current version, or its file)."""
    db = store.connect(db_path)
    click.echo(
        mapping_versions.current_text(db, _crm_link(db, connection_id, kind), kind)[1], nl=False
    )


@mapping.command("import")
@DB_OPTION.changing
@click.argument("connection_id")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@KIND_OPTION
def mapping_import(db_path: Path, connection_id: str, path: Path, kind: str) -> None:
    """Save a YAML file as a connection's new mapping version, validated (against the CRM's
    fields too, when they can be read); exit 1 listing every refusal, nothing saved."""
    settings = load({"DB": str(db_path)})
    db = store.connect(db_path)
    link = _crm_link(db, connection_id, kind)
    secret = server.key_secret(settings)
    try:
        with outbound.client(timeout=10.0) as client:
            fields = mapping_versions.crm_fields(db, secret, link, kind, client, utcnow)
    except (Permanent, Retriable, ValueError) as error:
        fields = None
        click.echo(
            f"the CRM's fields could not be read ({error}): checked as a file only", err=True
        )
    try:
        text = mappings.read(path)
        mapping_versions.validated(link, kind, text, fields)
    except mappings.MappingError as error:
        click.echo("\n".join(error.problems))
        raise SystemExit(1) from None
    with server.write(db):
        version = mapping_versions.save(
            db, link, kind, text, utcnow(), "contactdata mapping import"
        )
    click.echo(f"saved as version {version} of {link['name']}'s {kind} mapping")


@mapping.command("versions")
@DB_OPTION
@click.argument("connection_id")
@KIND_OPTION
def mapping_versions_command(db_path: Path, connection_id: str, kind: str) -> None:
    """List a connection's saved mapping versions, newest (the one in use) first."""
    db = store.connect(db_path)
    link = _crm_link(db, connection_id, kind)
    for row in mapping_versions.versions(db, link, kind):
        click.echo(f"{row['version']}  {row['created_at']}  {row['created_by']}")


def _a_number(_ctx: click.Context, _param: click.Parameter, seconds: float) -> float:
    """`seconds`, unless it is nan (which passes every FloatRange: no comparison refuses it)."""
    if math.isnan(seconds):
        raise click.BadParameter("give a number of seconds, not nan")
    return seconds


@main.command("worker")
@DB_OPTION.changing
@click.option("--once", is_flag=True, help="Work off the events due now, then stop (no jobs).")
@click.option("--idle", type=click.FloatRange(0.05, A_DAY), default=1.0, show_default=True,
              callback=_a_number,
              help="Seconds to wait when no event is due.")  # fmt: skip
@click.option(
    "--lease",
    type=click.FloatRange(1, A_DAY),
    callback=_a_number,
    show_default=True,
    default=worker.LEASE.total_seconds(),
    help="Seconds this worker's claims on events, and its hold on the scheduled "
    "jobs, last unless renewed: after a crash, others take them over then.",
)
@click.option("--batch", type=click.IntRange(1, store.LARGEST_ID), default=worker.BATCH,
              show_default=True,
              help="Events a round claims (a round should end well within the lease).")  # fmt: skip
@click.option("--metrics-bind", envvar="CONTACTDATA_WORKER_METRICS_BIND", default="",
              help="host:port to serve this worker's GET /metrics on (default: off).")  # fmt: skip
def worker_command(
    db_path: Path, once: bool, idle: float, lease: float, batch: int, metrics_bind: str
) -> None:
    """Work off stored events: enrich each record and write it back to its CRM; run the
    scheduled jobs beside. Any number of workers may share one database: each claims the
    events it works, and one at a time runs the scheduled jobs."""
    settings = load({"DB": str(db_path)})
    server.configure_logging(settings["LOG_LEVEL"], settings["LOG_FORMAT"])
    if metrics_bind:  # its own figures, in memory: it is one process
        server.metrics.serve_exposition(metrics_bind, settings["METRICS_TOKEN"])
    held = timedelta(seconds=lease)
    with outbound.client(timeout=10.0) as client:
        work = worker.Worker(
            store.connect(db_path), server.key_secret(settings), utcnow, client,
            random.Random(), lease=held,
        )  # fmt: skip
        leader = None if once else scheduler.Leader(db_path, work.name, held).lead()
        try:
            _work_off(work, once, idle, batch)
        finally:
            if leader is not None:
                leader.shutdown()  # waits for a job that is running, then hands the jobs over


def _work_off(work: worker.Worker, once: bool, idle: float, batch: int) -> None:
    """Rounds of due events until SIGTERM (or, `once`, until none is due)."""
    stopping = _stop_on_sigterm()
    while not stopping:
        try:
            outcomes = work.run_due(batch)
        except server.DB_ERRORS as error:  # a deadlock, or a lock waited for too long
            # The round's transaction was rolled back; its claims lapse and are taken again.
            logging.getLogger("contactdata.worker").warning("round given up: %s", error)
            time.sleep(idle)
            continue
        if outcomes:
            click.echo(" ".join(f"{name}={n}" for name, n in sorted(outcomes.items())))
        elif once:
            return
        else:
            time.sleep(idle)


def _stop_on_sigterm() -> list[int]:
    """A list that becomes non-empty at SIGTERM, so the loop ends between events."""
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda number, _frame: stopping.append(number))
    return stopping


class _RunByDefault(click.Group):
    """A group whose first argument, unless it names a subcommand, is the `run` command's."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] != "--help":
            args = ["run", *args]
        return super().parse_args(ctx, args)


@main.group("backfill", cls=_RunByDefault)
def backfill_group() -> None:
    """Enrich a CRM's existing records: `backfill CONNECTION_ID [options]` queues them for
    the worker (resumably; see `backfill run --help`); `backfill status CONNECTION_ID`."""


@backfill_group.command("run")
@DB_OPTION.changing
@click.argument("connection_id")
@click.option("--object", "kind", type=click.Choice(["contacts", "leads", "companies"]),
              default="contacts", show_default=True)  # fmt: skip
@click.option("--since", default=None, help="Only records modified since (ISO 8601 date/time).")
@click.option("--max-credits", type=click.IntRange(0, store.LARGEST_ID), default=None,
              help="Queue at most this many records (one credit each, at most).")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="Count the records and the credits; queue none.")
@click.option(
    "--list", "source", default="", metavar="ID",
    help="Only the records of this CRM list or saved view (its id, from --lists).",
)  # fmt: skip
@click.option(
    "--lists", "show_lists", is_flag=True,
    help="Print the CRM's lists or saved views of the kind (id, name); queue none.",
)  # fmt: skip
def backfill_run(
    db_path: Path, connection_id: str, kind: str, since: str | None, max_credits: int | None,
    dry_run: bool, source: str, show_lists: bool,
) -> None:  # fmt: skip
    """List the CRM's existing records of a kind (or of one CRM list or saved view) and queue
    those to enrich as events for the worker (live events go first); a run killed resumes
    where it was when started again."""
    try:
        since_iso = backfill.since_from(since)
    except ValueError:
        raise click.BadParameter(f"not an ISO 8601 date: {since!r}", param_hint="--since") from None
    settings = load({"DB": str(db_path)})
    with outbound.client(timeout=30.0) as client:
        work = worker.Worker(
            store.connect(db_path), server.key_secret(settings), utcnow, client, random.Random()
        )
        try:
            if show_lists:
                _echo_views(work, db_path, connection_id, kind)
                return
            if dry_run:
                estimate = backfill.dry_run(
                    work, connection_id, kind, since_iso, time.sleep, source.strip()
                )
                click.echo("\n".join(["dry run: nothing queued", *estimate.summary()]))
                return
            row = backfill.run(
                work, connection_id, kind, since_iso, max_credits, time.sleep, click.echo,
                source.strip(),
            )  # fmt: skip
        except ServiceError as error:
            raise click.ClickException(error.message) from None
        except (Permanent, Retriable) as failure:
            again = "" if show_lists else " (run it again to resume)"
            raise click.ClickException(f"{failure.reason}{again}") from None
    click.echo(f"backfill {row['id']} {row['state']}: the worker enriches the queued records")


def _echo_views(work: worker.Worker, db_path: Path, connection_id: str, kind: str) -> None:
    """The CRM's lists or saved views of `kind`, a line each: id, name and size when known
    (what `backfill --list ID` takes)."""
    found = backfill.views(work, connection_id, kind)
    _, link = _connection(db_path, connection_id)
    noun = PLATFORMS[link["platform"]].view_noun
    for view in found:
        size = "" if view.size is None else f"  ({view.size:,} records)"
        click.echo(f"{view.id}\t{view.name}{size}")
    if not found:
        click.echo(f"no {noun} of {kind} in the CRM")


@main.command("preview")
@DB_OPTION.changing
@click.argument("connection_id")
@click.option("--record", "record_id", default="", help="The CRM record's id.")
@click.option("--email", default="", help="Or the record's e-mail (found through the CRM).")
@click.option("--object", "kind", type=click.Choice(["contacts", "leads", "companies"]),
              default="contacts", show_default=True)  # fmt: skip
@click.option("--apply", "then_apply", is_flag=True, help="Write what is shown, once.")
def preview_command(
    db_path: Path, connection_id: str, record_id: str, email: str, kind: str, then_apply: bool
) -> None:
    """Read a CRM record and enrich it (charged like any enrichment): each mapped property
    with the CRM's value, the enriched one and whether it would be written; with --apply,
    write exactly that."""
    settings = load({"DB": str(db_path)})
    with outbound.client(timeout=30.0) as client:
        work = worker.Worker(
            store.connect(db_path), server.key_secret(settings), utcnow, client, random.Random()
        )
        try:
            shown = preview.show(work, connection_id, kind, record_id, email, "cli")
            click.echo("\n".join(preview.lines(shown)))
            if not then_apply:
                click.echo(f"nothing written (preview {shown.id}); --apply writes it")
                return
            click.echo(preview.apply(work, connection_id, shown.id).outcome)
        except ServiceError as error:
            raise click.ClickException(error.message) from None


KIND_OPTION = click.option(
    "--object", "kind", type=click.Choice(["contacts", "leads", "companies"]),
    default="contacts", show_default=True,
)  # fmt: skip


@backfill_group.command("stop")
@DB_OPTION.changing
@click.argument("connection_id")
@KIND_OPTION
def backfill_stop(db_path: Path, connection_id: str, kind: str) -> None:
    """Stop the running backfill of a kind (what it queued is still worked off); `backfill
    resume` goes on from where it stopped."""
    try:
        row = backfill.stop(store.connect(db_path), connection_id, kind, utcnow())
    except ServiceError as error:
        raise click.ClickException(error.message) from None
    click.echo(f"backfill {row['id']} stopped: {backfill.progress_line(row)}")


@backfill_group.command("resume")
@DB_OPTION.changing
@click.argument("connection_id")
@KIND_OPTION
@click.option("--max-credits", type=click.IntRange(1, store.LARGEST_ID), default=None,
              help="Its cap over all it queued; none: the balance.")  # fmt: skip
def backfill_resume(db_path: Path, connection_id: str, kind: str, max_credits: int | None) -> None:
    """Mark the stopped backfill of a kind running again from its cursor (stopped on
    request, or at its cap or the balance): `contactdata worker` lists and queues the rest
    (its advance_backfills job), or `backfill run` does in the foreground."""
    try:
        row = backfill.resume(store.connect(db_path), connection_id, kind, max_credits, utcnow())
    except ServiceError as error:
        raise click.ClickException(error.message) from None
    click.echo(f"backfill {row['id']} running again from {row['listed']:,} records listed")


@backfill_group.command("status")
@DB_OPTION
@click.argument("connection_id")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def backfill_status(db_path: Path, connection_id: str, as_json: bool) -> None:
    """Each backfill of a connection: records listed, queued and worked off, credits spent,
    time left."""
    rows = backfill.status(store.connect(db_path), connection_id, utcnow())
    if as_json:
        click.echo(json.dumps(rows))
        return
    for row in rows:
        click.echo(backfill.status_line(row))
    if not rows:
        click.echo(f"no backfill of connection {connection_id}")


@main.group("jobs")
def jobs_group() -> None:
    """The scheduled jobs (run by `contactdata worker`): list them, or run one now."""


@jobs_group.command("list")
@DB_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def jobs_list(db_path: Path, as_json: bool) -> None:
    """Each job: its trigger, next run and last result."""
    rows = scheduler.status(db_path)
    if as_json:
        click.echo(json.dumps(rows))
        return
    for row in rows:
        last = row["last_run"]
        outcome = "never run" if last is None else (
            f"{'ok' if last['ok'] else 'FAILED'} at {last['started_at']}: {last['result']}"
        )  # fmt: skip
        click.echo(f"{row['id']:<20} next {row['next_run'] or 'paused'}  {row['runs']}")
        click.echo(f"{'':<20} last {outcome}")


@jobs_group.command("run")
@DB_OPTION.changing
@click.argument("job_id")
def jobs_run(db_path: Path, job_id: str) -> None:
    """Run a job now, in this process, recorded like a scheduled run; print its result
    (exit 1 if it failed)."""
    try:
        outcome = jobs.run(job_id, db_path)
    except jobs.UnknownJob as error:
        raise click.ClickException(str(error)) from None
    click.echo(outcome.result)
    if not outcome.ok:
        raise SystemExit(1)


@main.command("changes")
@DB_OPTION.changing
def changes_command(db_path: Path) -> None:
    """Push the changes in the contact data to the CRM records enriched from them now:
    queue their refreshes and write the job changes' marks, tasks and new contacts (the
    `changes` job, run in this process and recorded like a scheduled run)."""
    outcome = jobs.run("changes", db_path)
    click.echo(outcome.result)
    if not outcome.ok:
        raise SystemExit(1)


@jobs_group.command("reschedule")
@DB_OPTION.changing
@click.argument("job_id")
@click.option("--every", type=click.IntRange(1, 10_000), required=True,
              help="How many units apart.")  # fmt: skip
@click.option("--unit", type=click.Choice(["minutes", "hours", "days"]), default="hours",
              show_default=True)  # fmt: skip
def jobs_reschedule(db_path: Path, job_id: str, every: int, unit: str) -> None:
    """Run a job every N minutes, hours or days, for the whole deployment: kept across
    restarts, and a running worker picks it up within a minute."""
    try:
        job = scheduler.reschedule(db_path, job_id, trigger="interval", **{unit: every})
    except jobs.UnknownJob as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"{job['id']}: {job['runs']}, next run {job['next_run']}")


@main.group()
def deliveries() -> None:
    """Stored events and what became of them; retry dead letters."""


@deliveries.command("list")
@DB_OPTION
@click.option("--status", type=click.Choice(["pending", "done", "dead"]))
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def deliveries_list(db_path: Path, status: str | None, limit: int, as_json: bool) -> None:
    """The latest events, newest first: status, attempts and the last error."""
    rows = store.recent_events(store.connect(db_path), limit, status)
    shown = [{k: v for k, v in row.items() if k != "payload"} for row in rows]
    if as_json:
        click.echo(json.dumps(shown))
        return
    for row in shown:
        click.echo(
            f"{row['id']:>6}  {row['status']:<7}  attempts={row['attempts']}  "
            f"record={row['record_id'] or '-'}  {row['received_at']}  {row['last_error']}"
        )


@deliveries.command("retry")
@DB_OPTION.changing
@click.argument("event_id", type=click.IntRange(1, store.LARGEST_ID))
def deliveries_retry(db_path: Path, event_id: int) -> None:
    """Make a dead event due again now."""
    db = store.connect(db_path)
    with server.write(db):
        retried = store.retry_event(db, event_id, server.iso(utcnow()))
    if not retried:
        raise click.ClickException(f"no dead event {event_id}")
    click.echo(f"event {event_id} is due again")


@main.group("signals")
def signals_group() -> None:
    """Job changes seen in the CRMs' records: list them, choose what a connection does with
    them, print the weekly digest."""


@signals_group.command("list")
@DB_OPTION
@click.option("--org", "org_id", default=None, help="Only this organization's (orgId).")
@click.option("--connection", "connection_id", default=None, help="Only this connection's.")
@click.option("--signal", type=click.Choice(["left", "joined"]), default=None)
@click.option("--state", type=click.Choice(["written", "pending", "failed", "skipped"]))
@click.option("--since", default=None, help="Only those seen from this ISO 8601 time on.")
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def signals_list(
    db_path: Path, org_id: str | None, limit: int, as_json: bool, **shown: str | None
) -> None:
    """The latest job changes, newest first: who, what changed, the state and what was
    written or the error."""
    rows = store.signals_page(store.connect(db_path), org_id, shown, None, limit)
    if as_json:
        click.echo(json.dumps([{**row, "written": json.loads(row["written"])} for row in rows]))
        return
    for row in rows:
        click.echo(
            f"{row['id']:>6}  {row['created_at'][:16]}  {row['connection_name']}  "
            f"{row['kind']} {row['record_id']}  {row['person']}: {_signal_words(row)}  "
            f"{row['state']}  {row['error']}".rstrip()
        )


def _signal_words(row: dict[str, Any]) -> str:
    """ "left Acme for Globex (VP Sales)", "joined Globex (VP Sales)"."""
    title = f" ({row['new_title']})" if row["new_title"] else ""
    if row["signal"] == "left":
        return f"left {row['old_company']}" + (
            f" for {row['new_company']}{title}" if row["new_company"] else ""
        )
    return f"joined {row['new_company']}{title}"


@signals_group.command("settings")
@DB_OPTION.changing
@click.argument("connection_id")
@click.option("--object", "kind", default="contacts", show_default=True,
              help="The kind of record: contacts, leads or companies.")  # fmt: skip
@click.option("--actions", default=None,
              help="What a job change does, comma-separated: mark, task, new_contact ('' for "
              "nothing).")  # fmt: skip
@click.option("--credit-cap", type=click.IntRange(0, store.LARGEST_ID), default=None,
              help="Credits one round of change updates may spend.")  # fmt: skip
@click.option("--default-cap", is_flag=True, help="Back to the default credit cap.")
def signals_settings(
    db_path: Path, connection_id: str, kind: str, actions: str | None,
    credit_cap: int | None, default_cap: bool,
) -> None:  # fmt: skip
    """Choose what a job change does in a connection's records of one kind, and the credits
    a round of change updates may spend; print the settings (audited as the operator's)."""
    db, row = _connection(db_path, connection_id)
    if kind not in PLATFORMS[row["platform"]].objects:
        kinds = ", ".join(PLATFORMS[row["platform"]].objects)
        raise click.ClickException(f"{row['name']} enriches no {kind}; it enriches {kinds}")
    chosen = None if actions is None else [a.strip() for a in actions.split(",") if a.strip()]
    try:
        with server.write(db):
            _save_signal_settings(db, row, kind, chosen, None if default_cap else credit_cap,
                                  default_cap or credit_cap is not None)  # fmt: skip
    except signal_settings.InvalidSignalSettings as error:
        raise click.ClickException(str(error)) from None
    row = store.connection(db, connection_id) or row
    done = ", ".join(signal_settings.actions_for(row, kind)) or "nothing"
    click.echo(
        f"{row['name']} {kind}: a job change does {done}; at most "
        f"{signal_settings.credit_cap(row)} credits a round"
    )


def _save_signal_settings(
    db: Any, row: dict[str, Any], kind: str, actions: list[str] | None, cap: int | None,
    set_cap: bool,
) -> None:  # fmt: skip
    """Save what was asked, audited under the operator in the caller's transaction."""
    detail: dict[str, Any] = {}
    if actions is not None:
        signal_settings.set_actions(db, row["id"], kind, actions)
        detail["actions"] = {kind: actions}
    if set_cap:
        signal_settings.set_credit_cap(db, row["id"], cap)
        detail["changeCreditCap"] = cap
    if detail:
        server.audit.record(
            db, utcnow(), org_id=row["org_id"], actor=server.audit.OPERATOR,
            action="connection.signals", target=row["name"], detail=detail,
        )  # fmt: skip


@signals_group.command("digest")
@DB_OPTION
@click.option("--org", "org_id", default=None, help="Only this organization's (orgId).")
def signals_digest_command(db_path: Path, org_id: str | None) -> None:
    """Print each organization's latest weekly digest of job changes (the `signals_digest`
    job keeps one each Monday); before the first, last week's counts as they stand."""
    db = store.connect(db_path)
    orgs = [org_id] if org_id else signals_digest.organizations_with_crms(db)
    for org in orgs:
        digest = signals_digest.latest_digest(db, org)
        note = ""
        if digest is None:
            start = signals_digest.week_start(utcnow()) - signals_digest.WEEK
            digest, note = signals_digest.compose(db, org, start), " (not kept yet)"
        click.echo(f"organization {org}{note}")
        for line in signals_digest.in_words(digest):
            click.echo(f"  {line}")


if __name__ == "__main__":
    run()
