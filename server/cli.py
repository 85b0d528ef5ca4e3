"""The `contactdata` command line: serve, build and load data, manage organizations."""

from __future__ import annotations

import csv
import json
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import click
from click.core import ParameterSource

from server import accounts, config, demo
from server.clock import utcnow
from server.errors import InsufficientCredits, ServiceError
from server.storage import db

Command = TypeVar("Command", bound=Callable[..., Any])

# Where a command's --db value came from, as its messages say it; else the default.
_ORIGINS = {
    ParameterSource.COMMANDLINE: "given by --db",
    ParameterSource.ENVIRONMENT: f"from {config.ENVIRONMENT['DB']}",
}


class _DatabaseOption:
    """`--db PATH|URL`, else CONTACTDATA_DB, else the one default (config.DEFAULTS["DB"]).

    `@DB_OPTION` goes on a command that reads the database, `@DB_OPTION.changing` on one that
    changes it (it names the database on stderr), `@DB_OPTION.creating` on one whose purpose is
    to make data (it may create a missing file). The others refuse a missing SQLite file rather
    than create an empty one; a PostgreSQL URL is taken as it is.
    """

    def __call__(self, command: Command) -> Command:
        return _db_option(creates=False, names=False)(command)

    def changing(self, command: Command) -> Command:
        """The option of a command that changes the database."""
        return _db_option(creates=False, names=True)(command)

    def creating(self, command: Command) -> Command:
        """The option of a command that may create the database."""
        return _db_option(creates=True, names=True)(command)


def _db_option(*, creates: bool, names: bool) -> Callable[[Command], Command]:
    made = "created and migrated when missing" if creates else "which must exist"
    return click.option(
        "--db",
        "db_path",
        callback=partial(_database, creates=creates, names=names),
        envvar=config.ENVIRONMENT["DB"],
        default=config.DEFAULTS["DB"],
        show_default=True,
        show_envvar=True,
        help=f"SQLite database file ({made}), or a postgresql:// URL.",
    )


def _database(
    ctx: click.Context, _: click.Parameter, value: str, *, creates: bool, names: bool
) -> Path | str:
    """A SQLite file's path, or a `postgresql://` URL as it is. A missing file is refused
    unless the command `creates` data (its directory is made then)."""
    origin = _ORIGINS.get(ctx.get_parameter_source("db_path"), f"the default, {value}")
    database: Path | str = value if config.is_url(value) else Path(value)
    if isinstance(database, Path) and creates:
        database.parent.mkdir(parents=True, exist_ok=True)
    elif isinstance(database, Path) and not database.exists():
        raise click.ClickException(_missing(database, origin, ctx))
    if names:
        click.echo(f"database: {_shown(database)} ({origin})", err=True)
    return database


def _missing(path: Path, origin: str, ctx: click.Context) -> str:
    """Why a command stops on a missing file, how to name another and how to make this one."""
    given = ctx.get_parameter_source("db_path") == ParameterSource.COMMANDLINE
    init = "contactdata db init" + (f" --db {shlex.quote(str(path))}" if given else "")
    return (
        f"no database at {path.absolute()} ({origin}). Name another with --db PATH or "
        f"{config.ENVIRONMENT['DB']}=PATH, or make this one: `{init}` creates an empty "
        "database, `contactdata import` loads your data, `contactdata demo-data` generates some."
    )


def _shown(database: Path | str) -> str:
    """The database as a line may show it: a file's absolute path, a URL without password."""
    if isinstance(database, Path):
        return str(database.absolute())
    where = urlsplit(database)
    return database.replace(f":{where.password}@", "@", 1) if where.password else database


DB_OPTION = _DatabaseOption()


class _Commands(click.Group):
    """The command group; a setting a command needs and lacks is shown as its error."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except config.MissingKeySecret as missing:
            raise click.ClickException(str(missing)) from None


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="contact-data-connector")
def main() -> None:
    """Contact-data service and CRM connector."""


@contextmanager
def _progress(total: Callable[[], int], label: str) -> Iterator[Callable[[int], None]]:
    """A progress bar on a terminal (`total` is only counted then); silence otherwise."""
    if not sys.stderr.isatty():
        yield lambda _n: None
        return
    with click.progressbar(length=total(), label=label, file=sys.stderr) as bar:
        yield bar.update


def _fail(error: ServiceError) -> None:
    raise click.ClickException(error.message)


@main.command()
@DB_OPTION.changing
@click.option("--host", envvar="CONTACTDATA_HOST", default="127.0.0.1", show_default=True)
@click.option("--port", envvar="CONTACTDATA_PORT", type=int, default=8080, show_default=True)
@click.option("--workers", envvar="CONTACTDATA_WORKERS", type=int, default=2, show_default=True)
@click.option(
    "--threads", envvar="CONTACTDATA_THREADS", type=click.IntRange(1, 64), default=1,
    show_default=True,
    help="Requests each worker serves at once (above 1: gunicorn's gthread workers). On "
    "PostgreSQL, where requests wait on the network, e.g. --workers 2 --threads 6 per 2 cores.",
)  # fmt: skip
def serve(db_path: Path, host: str, port: int, workers: int, threads: int) -> None:
    """Serve the API with gunicorn (sync workers, or threaded with --threads)."""
    from server.http.serve import serve as run

    settings = _served_settings(db_path, host, port)
    config.key_secret(settings)  # missing: said here, not by each gunicorn worker failing
    db.connect(db_path).close()
    run(settings, host, port, workers, _app_factory(), threads)


def _served_settings(db_path: Path | str, host: str, port: int) -> dict[str, Any]:
    """The settings of `serve` and `demo` bound to `host`:`port`, which make their public URL
    unless CONTACTDATA_PUBLIC_URL is set; said when that names another address."""
    settings = config.load_served({"DB": str(db_path)}, host, port)
    address = config.local_url(host, port)
    if settings["PUBLIC_URL"].rstrip("/") != address:
        click.echo(
            f"{config.ENVIRONMENT['PUBLIC_URL']} is set: webhook URLs, installation steps and "
            f"OAuth redirects use {settings['PUBLIC_URL']}, not {address}",
            err=True,
        )
    return settings


def _dataset_options(command: Command) -> Command:
    """--companies, --contacts and --seed: the size and seed of a generated dataset."""
    for option in reversed(
        (
            click.option(
                "--companies",
                type=click.IntRange(1),
                default=demo.DEMO_COMPANIES,
                show_default=True,
            ),
            click.option(
                "--contacts",
                type=click.IntRange(0),
                default=demo.DEMO_CONTACTS,
                show_default=True,
            ),
            click.option("--seed", type=int, default=demo.DEMO_SEED, show_default=True),
        )
    ):
        command = option(command)
    return command


_CHANGES_FROM = click.option(
    "--changes-from",
    "changes_seed",
    type=int,
    help="A month of changes to the dataset in the database, generated from this seed.",
)


@main.command("demo-data")
@DB_OPTION.creating
@_dataset_options
@_CHANGES_FROM
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    help="With --changes-from: the directory to write companies.csv and contacts.csv to.",
)
def demo_data(
    db_path: Path, companies: int, contacts: int, seed: int, changes_seed: int | None,
    output: Path | None,
) -> None:  # fmt: skip
    """Generate a realistic demo dataset (deterministic for a seed); with --changes-from, a
    month of changes to it instead, as files for `contactdata import`."""
    from server import dataset

    if changes_seed is not None:
        return _write_changes(db_path, changes_seed, output)
    database = db.connect(db_path)
    with _progress(lambda: contacts, "contacts") as advance:
        written = dataset.generate(
            database, companies=companies, contacts=contacts, seed=seed, progress=advance
        )
    click.echo(" ".join(f"{table}={n}" for table, n in written.items()))


def _write_changes(db_path: Path, seed: int, output: Path | None) -> None:
    from server import changes_data
    from server.storage import store

    if output is None:
        raise click.UsageError("--changes-from writes its files to --output DIRECTORY")
    database = db.connect(db_path)
    if not store.counts(database)["contacts"]:
        raise click.ClickException(f"no dataset in {db_path}: run `contactdata demo-data` first")
    month = changes_data.generate(database, seed)
    companies, contacts = changes_data.write(month, output)
    click.echo(f"changes of {month.month}: {_counted(month.kinds)}")
    click.echo(f"load them: contactdata import --companies {companies} --contacts {contacts}")


def _counted(kinds: dict[str, int]) -> str:
    return " ".join(f"{kind}={count}" for kind, count in sorted(kinds.items()))


def _record_demo_changes(db_path: Path | str, seed: int) -> None:
    """Unless the database has changes recorded, import a month of changes generated from
    `seed`, so the demo shows them."""
    import tempfile

    from server import changes, changes_data, importer, suppression

    database = db.connect(db_path)
    if changes.latest_id(database):
        return
    month = changes_data.generate(database, seed)
    listed = suppression.screen(
        database, lambda: config.key_secret(config.load({"DB": str(db_path)}))
    )
    with tempfile.TemporaryDirectory() as work:
        companies, contacts = changes_data.write(month, Path(work))
        importer.import_files(database, companies=companies, contacts=contacts, screen=listed)
    click.echo(f"recorded a month of changes ({month.month}): {_counted(month.kinds)}")


@main.command("import")
@DB_OPTION.creating
@click.option("--companies", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--contacts", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def import_(db_path: Path, companies: Path | None, contacts: Path | None) -> None:
    """Import companies and contacts from CSV or JSONL files (upsert by GUID)."""
    from server import importer, suppression

    if not companies and not contacts:
        raise click.UsageError("give --companies, --contacts or both")
    files = [path for path in (companies, contacts) if path]
    database = db.connect(db_path)
    listed = suppression.screen(
        database, lambda: config.key_secret(config.load({"DB": str(db_path)}))
    )
    with _progress(lambda: sum(_line_count(path) for path in files), "rows") as advance:
        try:
            report = importer.import_files(
                database, companies=companies, contacts=contacts, progress=advance, screen=listed
            )
        except ValueError as error:  # unsupported file type, or a file that is not UTF-8
            raise click.ClickException(str(error)) from None
    for error in report.errors:
        click.echo(f"{error.file}:{error.line}: {error.reason}", err=True)
    click.echo(
        f"imported companies={report.companies} contacts={report.contacts} "
        f"rejected={len(report.errors)} suppressed={report.suppressed}"
    )


def _line_count(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


@main.command("enrich")
@DB_OPTION.changing
@click.option("--org", "org_id", required=True, help="The organization's id (orgId).")
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    "target",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="CSV to write; if it holds rows from an interrupted run, the run continues after them.",
)
def enrich_command(db_path: Path, org_id: str, source: Path, target: Path) -> None:
    """Enrich a CSV of enrich inputs for an organization (charged and recorded as the API)."""
    from server import csv_enrich, enrich

    database = db.connect(db_path)
    try:
        secret = config.key_secret(config.load({"DB": str(db_path)}))
        who = enrich.requester_for(database, org_id, "cli:enrich", secret)
        with _progress(lambda: max(_line_count(source) - 1, 0), "rows") as advance:
            report = csv_enrich.enrich_csv(database, who, source, target, utcnow, advance)
    except csv_enrich.OutputMismatch as error:
        raise click.ClickException(str(error)) from None
    except InsufficientCredits as error:
        raise click.ClickException(
            f"{error.message} The rows before it are in {target}; add credits and run the "
            "same command again to continue."
        ) from None
    except ServiceError as error:
        _fail(error)
    statuses = " ".join(f"{name}={n}" for name, n in sorted(report.statuses.items()))
    click.echo(
        f"enriched rows={report.written} resumed={report.resumed} credits={report.credits} "
        f"{statuses}".rstrip()
    )


@main.command("export")
@DB_OPTION
@click.option("--companies", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--contacts", type=click.Path(dir_okay=False, path_type=Path))
def export(db_path: Path, companies: Path | None, contacts: Path | None) -> None:
    """Export companies and contacts to CSV or JSONL (by file extension)."""
    from server import export as exporter

    if not companies and not contacts:
        raise click.UsageError("give --companies, --contacts or both")
    try:
        n_companies, n_contacts = exporter.export_files(
            db.connect(db_path), companies=companies, contacts=contacts
        )
    except ValueError as error:  # unsupported file type
        raise click.ClickException(str(error)) from None
    click.echo(f"exported companies={n_companies} contacts={n_contacts}")


@main.group()
def org() -> None:
    """Create and list organizations, and set their status."""


@org.command("create")
@DB_OPTION.changing
@click.option("--name", required=True)
@click.option("--website", required=True)
@click.option("--tier", required=True, type=click.Choice(accounts.TIERS))
@click.option(
    "--credits", type=click.IntRange(0), help="Credit balance (default: unlimited; pro 1000)."
)
@click.option(
    "--daily-limit", type=click.IntRange(1), default=accounts.DEFAULT_DAILY_LIMIT, show_default=True
)
@click.option("--qps", type=click.IntRange(1), default=accounts.DEFAULT_QPS, show_default=True)
@click.option(
    "--discover-per-minute",
    type=click.IntRange(1),
    default=accounts.DEFAULT_DISCOVER_PER_MINUTE,
    show_default=True,
)
@click.option("--admin-email", help="E-mail of the admin user (default: admin@<website's domain>).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def org_create(db_path: Path, as_json: bool, **options: Any) -> None:
    """Create an organization and print its admin key (shown only this once)."""
    settings = config.load({"DB": str(db_path)})
    try:
        created, key = accounts.create_organization(
            db.connect(db_path),
            config.key_secret(settings),
            utcnow(),
            name=options["name"],
            website=options["website"],
            tier=options["tier"],
            credits=options["credits"],
            daily_limit=options["daily_limit"],
            qps=options["qps"],
            discover_per_minute=options["discover_per_minute"],
            admin_email=options["admin_email"],
        )
    except ServiceError as error:
        _fail(error)
    summary = {
        "orgId": created["id"],
        "orgName": created["name"],
        "tier": created["tier"],
        "adminApiKey": key,
    }
    if as_json:
        click.echo(json.dumps(summary))
        return
    click.echo(f"organization {created['name']} ({created['tier']}) id {created['id']}")
    click.echo(f"admin key (shown once, store it now): {key}")


@org.command("list")
@DB_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def org_list(db_path: Path, as_json: bool) -> None:
    """List organizations with tier, status, credits and limits."""
    rows = accounts.list_organizations(db.connect(db_path))
    if as_json:
        click.echo(json.dumps(rows))
        return
    for row in rows:
        credits = "unlimited" if row["credits"] is None else row["credits"]
        click.echo(
            f"{row['id']}  {row['status']:<8}  {row['tier']:<19}  credits={credits}  "
            f"qps={row['qps_limit']}  daily={row['daily_rate_limit']}  {row['name']}"
        )


@org.command("set-status")
@DB_OPTION.changing
@click.argument("org_id")
@click.argument("status", type=click.Choice(accounts.ORG_STATUSES))
def org_set_status(db_path: Path, org_id: str, status: str) -> None:
    """Set an organization active or inactive."""
    try:
        row = accounts.set_status(db.connect(db_path), org_id, status, utcnow())
    except ServiceError as error:
        _fail(error)
    click.echo(f"{row['id']} {row['status']}")


@org.command("credits")
@DB_OPTION.changing
@click.argument("org_id")
@click.option("--add", "amount", type=click.IntRange(1), help="Credits to add to the balance.")
def org_credits(db_path: Path, org_id: str, amount: int | None) -> None:
    """Show an organization's credit balance and its changes, or top it up with --add."""
    from server import credits

    database = db.connect(db_path)
    try:
        if amount is not None:
            credits.top_up(database, org_id, amount, utcnow())
        row = accounts.organization(database, org_id)
    except ServiceError as error:
        _fail(error)
    balance = "unlimited" if row["credits"] is None else row["credits"]
    click.echo(f"{row['id']} credits={balance}  {row['name']}")
    for entry in credits.ledger(database, org_id):
        change = f"{entry['change']:+d}"
        click.echo(
            f"  {entry['created_at']}  {change:>8}  = {entry['balance']:<8} {entry['reason']}"
        )


@main.command("audit")
@DB_OPTION
@click.option("--org", "org_id", required=True, help="The organization's id (orgId).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def audit_command(db_path: Path, org_id: str, as_json: bool) -> None:
    """List an organization's administration actions, oldest first."""
    from server import audit

    database = db.connect(db_path)
    try:
        accounts.organization(database, org_id)
    except ServiceError as error:
        _fail(error)
    _print_audit(audit.entries(database, org_id), as_json)


def _print_audit(entries: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(entries))
        return
    for entry in entries:
        detail = f"  {entry['detail']}" if entry["detail"] else ""
        request_id = f"  request {entry['request_id']}" if entry["request_id"] else ""
        click.echo(
            f"{entry['created_at']}  {entry['action']:<20} {entry['target'] or '-':<32} "
            f"by {entry['actor']}{request_id}{detail}"
        )


@main.group()
def privacy() -> None:
    """The suppression list: suppress or erase people, import opt-outs, check, report."""


def _identity_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--email, --profile-url, --name and --company-domain: one person's identifiers."""
    for option in reversed(
        (
            click.option("--email", default="", help="The person's e-mail address."),
            click.option("--profile-url", default="", help="The person's profile URL."),
            click.option(
                "--name", default="", help="The person's full name (with --company-domain)."
            ),
            click.option("--company-domain", default="", help="Their company's website or domain."),
        )
    ):
        command = option(command)
    return command


def _privacy_context(db_path: Path | str) -> tuple[Any, Callable[..., str]]:
    """The database and the hash of identifiers under the server secret."""
    from server import privacy as pure

    settings = config.load({"DB": str(db_path)})
    return db.connect(db_path), pure.hasher(config.key_secret(settings))


def _act(db_path: Path | str, action: str, people: list[Any]) -> dict[str, int]:
    from server import suppression

    database, hash_of = _privacy_context(db_path)
    erasers = _entry_option("erasers", ()) if action == "erase" else ()
    if erasers:  # a database made by `import` alone has no connector tables to erase from yet
        _migrate_components(database)
    return suppression.act(database, hash_of, utcnow(), people, action, erasers)


def _migrate_components(database: Any) -> None:
    """Every component's tables (the entry point's `schemas`), made or migrated."""
    for schema in _entry_option("schemas", ()):
        db.apply_migrations(database, schema.migrations)


_PAST = {"suppress": "suppressed", "erase": "erased"}


def _summary(done: dict[str, int]) -> str:
    return " ".join(f"{name}={count}" for name, count in done.items())


@privacy.command("suppress")
@DB_OPTION.changing
@_identity_options
@click.option("--reason", default="", help="Why (kept on the list; no personal data).")
def privacy_suppress(db_path: Path, **named: str) -> None:
    """Put a person on the suppression list and delete their contact and employments."""
    _privacy_action(db_path, "suppress", named)


@privacy.command("erase")
@DB_OPTION.changing
@_identity_options
@click.option("--reason", default="", help="Why (kept on the list; no personal data).")
def privacy_erase(db_path: Path, **named: str) -> None:
    """Suppress a person and delete every stored copy of their data."""
    _privacy_action(db_path, "erase", named)


def _privacy_action(db_path: Path, action: str, named: dict[str, str]) -> None:
    from server import suppression

    try:
        done = _act(db_path, action, [suppression.person(**named)])
    except ServiceError as error:
        _fail(error)
    click.echo(f"{_PAST[action]} {_summary(done)}")
    _warn_of_copies_left(db_path, done)


@privacy.command("import")
@DB_OPTION.changing
@click.argument("source", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--reason", default="", help="The reason of rows without one.")
@click.option("--erase", is_flag=True, help="Erase the people (default: suppress them).")
def privacy_import(db_path: Path, source: Path, reason: str, erase: bool) -> None:
    """Import a CSV of opt-outs (columns email, profile_url, name, company_domain, reason)."""
    from server import privacy as pure
    from server import suppression

    try:
        people, bad = suppression.read_people(source, pure.reason_text(reason))
        done = _act(db_path, "erase" if erase else "suppress", people)
    except ServiceError as error:
        _fail(error)
    except (UnicodeDecodeError, csv.Error) as error:
        raise click.ClickException(f"{source}: {error}") from None
    for row in bad:
        click.echo(f"{source}:{row.line}: {row.reason}", err=True)
    click.echo(f"imported {_summary(done)} rejected={len(bad)}")
    _warn_of_copies_left(db_path, done)


def _warn_of_copies_left(db_path: Path | str, done: dict[str, int]) -> None:
    """Say on stderr which copies of erased data an erasure could not take off the disk."""
    from server import suppression

    if done.get(suppression.WAL_KEPT):
        click.echo(
            f"warning: {db_path}-wal still holds the erased data ({done[suppression.WAL_KEPT]} "
            "frames): another process was reading the database and the WAL could not be "
            "truncated. Run the same command again when it is done.",
            err=True,
        )
    if done.get(suppression.BUSY):
        click.echo(
            f"warning: {done[suppression.BUSY]} tables were not vacuumed (an autovacuum held "
            "them): their dead rows keep the erased data until a VACUUM. Run VACUUM on the "
            "database when the autovacuum is done.",
            err=True,
        )


@privacy.command("list")
@DB_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def privacy_list(db_path: Path, as_json: bool) -> None:
    """List the suppression list: hashes, kinds, actions, reasons and dates (no clear values)."""
    from server.storage import store

    rows = store.suppression_list(db.connect(db_path))
    if as_json:
        click.echo(json.dumps(rows))
        return
    for row in rows:
        click.echo(
            f"{row['created_at']}  {row['action']:<8}  {row['kind']:<11}  {row['hash']}  "
            f"{row['reason']}".rstrip()
        )


@privacy.command("audit")
@DB_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
def privacy_audit(db_path: Path, as_json: bool) -> None:
    """List the privacy actions taken, oldest first (kinds and counts, no clear values)."""
    from server import audit, suppression

    _print_audit(audit.entries(db.connect(db_path), suppression.ORG_ID), as_json)


@privacy.command("check")
@DB_OPTION
@_identity_options
def privacy_check(db_path: Path, **named: str) -> None:
    """Say whether each identifier is on the list; exit status 1 if any is, 0 if none is."""
    from server import suppression

    database, hash_of = _privacy_context(db_path)
    try:
        found = suppression.check(database, hash_of, suppression.person(**named).identifiers)
    except ServiceError as error:
        _fail(error)
    for identifier, row in found:
        state = f"{_PAST[row['action']]} {row['created_at']}" if row else "not listed"
        click.echo(f"{identifier.kind:<11}  {state}")
    sys.exit(1 if any(row for _, row in found) else 0)


@privacy.command("report")
@DB_OPTION.changing
@click.option("--email", required=True, help="The person's e-mail address.")
def privacy_report(db_path: Path, email: str) -> None:
    """Print as JSON what the service holds about a person (for an access request)."""
    from server import suppression

    database, hash_of = _privacy_context(db_path)
    try:
        address = suppression.person(email=email).identifiers[0]
        held = suppression.report(database, hash_of, utcnow(), address)
    except ServiceError as error:
        _fail(error)
    click.echo(json.dumps(held, indent=2))


@main.group("db")
def db_group() -> None:
    """Create an empty database; move the database from SQLite to PostgreSQL."""


@db_group.command("init")
@DB_OPTION.creating
def db_init(db_path: Path | str) -> None:
    """Create and migrate an empty database (every component's tables), for a deployment that
    starts from nothing; an existing one is migrated, its data kept."""
    existed = config.is_url(db_path) or Path(db_path).exists()
    database = db.connect(db_path)
    _migrate_components(database)
    database.close()
    click.echo(f"{'migrated' if existed else 'created'} {_shown(db_path)}")


@db_group.command("move")
@click.option(
    "--from",
    "source",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The SQLite database file (stop the server and workers using it first).",
)
@click.option("--to", "target", required=True, help="An empty PostgreSQL database's URL.")
def db_move(source: Path, target: str) -> None:
    """Copy every table of a SQLite database (and its job schedule) into an empty PostgreSQL
    database, migrated first, in one transaction; print and verify each table's rows."""
    from server.storage import move

    schemas = _entry_option("schemas", ())
    try:
        moved = move.move(source, target, schemas, lambda t, n: click.echo(f"{t:<24} {n:>12,}"))
    except move.MoveRefused as refused:
        raise click.ClickException(str(refused)) from None
    click.echo(f"moved and verified {len(moved)} tables, {sum(moved.values()):,} rows")
    for line in move.afterwards(source):
        click.echo(line)


@main.command("demo")
@DB_OPTION.creating
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8080, show_default=True)
@click.option("--workers", type=int, default=2, show_default=True)
@_dataset_options
@_CHANGES_FROM
def demo_command(
    db_path: Path | str, host: str, port: int, workers: int, companies: int, contacts: int,
    seed: int, changes_seed: int | None,
) -> None:  # fmt: skip
    """Build a demo dataset (--companies, --contacts, --seed) unless the database holds one,
    with --changes-from a month of changes recorded unless it has some, make one organization
    per tier, print keys, curl commands and pages to open, serve."""
    from server.http.serve import serve as run

    settings = _served_settings(db_path, host, port)
    config.key_secret(settings)  # before building: the organizations' keys need it
    demo.ensure_database(db_path, companies, contacts, seed)
    if changes_seed is not None:
        _record_demo_changes(db_path, changes_seed)
    orgs = demo.ensure_organizations(db_path)
    pages = _entry_option("demo_pages", ())
    for line in demo.instructions(db_path, orgs, config.local_url(host, port), pages):
        click.echo(line)
    alongside: Callable[[Path | str, str], AbstractContextManager[Any]] = _entry_option(
        "demo_alongside", lambda _db_path, _public_url: nullcontext()
    )
    with alongside(db_path, settings["PUBLIC_URL"]):
        run(settings, host, port, workers, _app_factory())


def _app_factory() -> str:
    """The app `serve` and `demo` run: the service's, unless the entry point named another
    (the connector's `contactdata` serves the connector's app, which includes the service)."""
    from server.http.serve import DEFAULT_FACTORY

    return str(_entry_option("app_factory", DEFAULT_FACTORY))


def _entry_option(name: str, default: Any) -> Any:
    """What the entry point gave `main` as `obj[name]` (the connector's `contactdata` gives
    `app_factory`; `demo_alongside`, what runs beside the demo server while it serves, given
    the database and the public URL; `demo_pages`, the pages the demo names, as (label, path);
    `schemas`, its tables, which `db init` and `db move` make; and `erasers`)."""
    options = click.get_current_context().find_root().obj or {}
    return options.get(name, default)
