"""Schema of the connector's tables, in the service's database, on SQLite and PostgreSQL alike:
one ordered list of steps (set "connector", applied after the service's), each written once for
both backends, where their DDL differs with the service's `dialect` functions.

Never edit an applied step: add a new one below it.
"""

from __future__ import annotations

from typing import Any

from server import Migrations, dialect

# The steps a PostgreSQL database migrated before the one list recorded (connector/
# pg_migrations.py, now gone), each with the steps below that reach its schema.
FORMER_POSTGRES_STEPS = {
    "c001_schema": (
        "m001_connections",
        "m002_events",
        "m003_records",
        "m004_pending_writes",
        "m005_schedules",
        "m006_oauth",
        "m007_settings_sessions",
        "m008_webhook_replays",
        "m009_zoho_channel_expiry",
        "m010_record_kinds",
        "m011_backfills",
        "m012_oauth_apps",
        "m013_crm_accounts",
        "m014_oauth_installs",
        "m015_connection_states",
        "m016_crm_webhooks",
        "m017_mapping_versions",
        "m018_previews",
        "m019_backfill_pages_and_health",
        "m020_claims_and_leases",
        "m025_scheduler_job_store",
    ),
    "c002_idempotency_keys": ("m021_idempotency_keys",),
    "c003_hubspot_app_v3": ("m022_hubspot_app_v3",),
    "c004_bigint_counts_and_caps": ("m026_bigint_counts_and_caps",),
    "c005_throttled_connections": ("m023_throttled_connections",),
    "c006_one_connection_per_account": ("m024_one_connection_per_account",),
}
MIGRATIONS = Migrations("connector", former=FORMER_POSTGRES_STEPS)


@MIGRATIONS.step
def m001_connections(db: Any) -> None:
    """Connections: one platform account bound to an organization key, a mapping and an
    inbound secret. Secret values are sealed (connector/store.py `seal`), never stored plain."""
    db.execute(
        """
        CREATE TABLE connections (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            platform TEXT NOT NULL,
            org_id TEXT NOT NULL REFERENCES organizations (id),
            api_key_sealed TEXT NOT NULL,
            api_key_hint TEXT NOT NULL,
            mapping TEXT NOT NULL,
            secret_sealed TEXT NOT NULL,
            secret_hint TEXT NOT NULL,
            crm_base_url TEXT NOT NULL DEFAULT '',
            crm_token_sealed TEXT NOT NULL DEFAULT '',
            crm_token_hint TEXT NOT NULL DEFAULT '',
            allowed_organizations TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL
        )
        """
    )


@MIGRATIONS.step
def m002_events(db: Any) -> None:
    """Accepted events: stored before the sender is answered, one per platform event id and
    connection, and worked off from here (status, attempts, when next due, last error)."""
    for statement in (
        f"""
        CREATE TABLE events (
            id {dialect.identity_key(db)},
            connection_id TEXT NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
            event_key TEXT NOT NULL,
            record_id TEXT NOT NULL DEFAULT '',
            payload TEXT NOT NULL,
            thin INTEGER NOT NULL DEFAULT 0,
            received_at TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'pending'
                CHECK (status IN ('pending', 'done', 'dead')),
            attempts INTEGER NOT NULL DEFAULT 0,
            due_at TEXT NOT NULL,
            last_error TEXT NOT NULL DEFAULT '',
            UNIQUE (connection_id, event_key)
        )
        """,
        "CREATE INDEX events_due ON events (status, due_at)",
    ):
        db.execute(statement)


@MIGRATIONS.step
def m003_records(db: Any) -> None:
    """The transaction cache: per connection and CRM record, what was last enriched and
    written (the transaction, the matched GUIDs, a fingerprint of the input, the values
    written, for overwrite_if_ours) and when."""
    db.execute(
        f"""
        CREATE TABLE records (
            connection_id TEXT NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
            record_id TEXT NOT NULL,
            transaction_id TEXT NOT NULL,
            contact_guid TEXT NOT NULL DEFAULT '',
            company_guid TEXT NOT NULL DEFAULT '',
            input_fingerprint TEXT NOT NULL,
            written TEXT NOT NULL DEFAULT '{{}}',
            enriched_at TEXT NOT NULL,
            PRIMARY KEY (connection_id, record_id)
        ){dialect.without_rowid(db)}
        """
    )


@MIGRATIONS.step
def m004_pending_writes(db: Any) -> None:
    """A record's write-back intent (JSON), committed before the CRM is called and cleared
    once its answer is recorded: a worker killed in between finishes that write instead of
    matching again."""
    db.execute("ALTER TABLE records ADD COLUMN pending TEXT NOT NULL DEFAULT ''")


@MIGRATIONS.step
def m005_schedules(db: Any) -> None:
    """Scheduled work: each connection's refresh interval (records enriched longer ago are
    enriched again), and every run of a scheduled job with its outcome."""
    db.execute("ALTER TABLE connections ADD COLUMN refresh_days INTEGER NOT NULL DEFAULT 30")
    db.execute(
        f"""
        CREATE TABLE job_runs (
            id {dialect.identity_key(db)},
            job_id TEXT NOT NULL,
            started_at TEXT NOT NULL,
            finished_at TEXT NOT NULL,
            ok INTEGER NOT NULL,
            result TEXT NOT NULL DEFAULT ''
        )
        """
    )
    db.execute("CREATE INDEX job_runs_job ON job_runs (job_id, id)")


@MIGRATIONS.step
def m006_oauth(db: Any) -> None:
    """Renewable CRM tokens: the OAuth client and refresh token a connection was granted
    (sealed JSON, see connector/oauth.py) and when its current access token expires."""
    db.execute("ALTER TABLE connections ADD COLUMN crm_oauth_sealed TEXT NOT NULL DEFAULT ''")
    db.execute("ALTER TABLE connections ADD COLUMN crm_token_expires_at TEXT NOT NULL DEFAULT ''")


@MIGRATIONS.step
def m007_settings_sessions(db: Any) -> None:
    """Settings page sessions, so that signing out ends one on the server: the digest of the
    random id its cookie holds, the admin key and organization it signed in as, the mark of
    the value it signed in with (server/auth.py `resume`), and when it began and ended."""
    db.execute(
        f"""
        CREATE TABLE settings_sessions (
            id TEXT PRIMARY KEY,
            key_id TEXT NOT NULL,
            org_id TEXT NOT NULL,
            mark TEXT NOT NULL,
            created_at TEXT NOT NULL,
            ended_at TEXT NOT NULL DEFAULT ''
        ){dialect.without_rowid(db)}
        """
    )


@MIGRATIONS.step
def m008_webhook_replays(db: Any) -> None:
    """Replays. The answer given to each Standard Webhooks delivery (by connection and
    webhook-id), kept while a copy could still pass the timestamp check, so a copy is answered
    the same and charged nothing; status 0 while the first delivery is being answered. And
    the kinds of request on which a HubSpot connection has received a valid v3 signature:
    from then on it takes no other for them."""
    db.execute(
        f"""
        CREATE TABLE webhook_replays (
            connection_id TEXT NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
            webhook_id TEXT NOT NULL,
            received_at TEXT NOT NULL,
            status INTEGER NOT NULL DEFAULT 0,
            body TEXT NOT NULL DEFAULT '',
            headers TEXT NOT NULL DEFAULT '{{}}',
            PRIMARY KEY (connection_id, webhook_id)
        ){dialect.without_rowid(db)}
        """
    )
    db.execute("CREATE INDEX webhook_replays_received ON webhook_replays (received_at)")
    db.execute("ALTER TABLE connections ADD COLUMN hubspot_v3_kinds TEXT NOT NULL DEFAULT ''")


@MIGRATIONS.step
def m009_zoho_channel_expiry(db: Any) -> None:
    """When the Zoho notification channel of a connection expires, as Zoho confirmed it at
    its last enabling or renewal ('' before the first): renewed from it, with a margin."""
    db.execute(
        "ALTER TABLE connections ADD COLUMN zoho_channel_expires_at TEXT NOT NULL DEFAULT ''"
    )


@MIGRATIONS.step
def m010_record_kinds(db: Any) -> None:
    """Events and cached records name the kind of CRM record (contacts, leads, companies):
    a CRM numbers each kind on its own, so a contact and a company may share an id."""
    db.execute("ALTER TABLE events ADD COLUMN kind TEXT NOT NULL DEFAULT 'contacts'")
    # The records are set aside while the table is made anew (its primary key changes); a
    # table renamed instead would keep, on PostgreSQL, the names of its keys.
    db.execute("CREATE TEMP TABLE records_before_kinds AS SELECT * FROM records")
    db.execute("DROP TABLE records")
    db.execute(
        f"""
        CREATE TABLE records (
            connection_id TEXT NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
            kind TEXT NOT NULL DEFAULT 'contacts',
            record_id TEXT NOT NULL,
            transaction_id TEXT NOT NULL,
            contact_guid TEXT NOT NULL DEFAULT '',
            company_guid TEXT NOT NULL DEFAULT '',
            input_fingerprint TEXT NOT NULL,
            written TEXT NOT NULL DEFAULT '{{}}',
            enriched_at TEXT NOT NULL,
            pending TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (connection_id, kind, record_id)
        ){dialect.without_rowid(db)}
        """
    )
    columns = ("connection_id, record_id, transaction_id, contact_guid, company_guid, "
               "input_fingerprint, written, enriched_at, pending")  # fmt: skip
    db.execute(f"INSERT INTO records ({columns}) SELECT {columns} FROM records_before_kinds")
    db.execute("DROP TABLE records_before_kinds")


@MIGRATIONS.step
def m011_backfills(db: Any) -> None:
    """Backfills: a CRM's existing records of one kind, listed page by page and queued as
    thin events (connector/backfill.py). Each run keeps the CRM's paging cursor and its counts,
    so one killed goes on from where it was; events carry a priority (0 live, 1 backfill) by
    which the worker takes live events first."""
    db.execute(
        f"""
        CREATE TABLE backfills (
            id {dialect.identity_key(db)},
            connection_id TEXT NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            since TEXT NOT NULL DEFAULT '',
            cursor TEXT NOT NULL DEFAULT '',
            listed INTEGER NOT NULL DEFAULT 0,
            queued INTEGER NOT NULL DEFAULT 0,
            skipped INTEGER NOT NULL DEFAULT 0,
            total INTEGER,
            credit_cap INTEGER,
            state TEXT NOT NULL DEFAULT 'running'
                CHECK (state IN ('running', 'done', 'stopped')),
            note TEXT NOT NULL DEFAULT '',
            started_at TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )
        """
    )
    db.execute("CREATE INDEX backfills_connection ON backfills (connection_id, kind, state)")
    db.execute("ALTER TABLE events ADD COLUMN priority INTEGER NOT NULL DEFAULT 0")
    db.execute("DROP INDEX events_due")
    db.execute("CREATE INDEX events_due ON events (status, priority, due_at)")


@MIGRATIONS.step
def m012_oauth_apps(db: Any) -> None:
    """OAuth apps: the one the operator registered for each CRM platform (connector/
    oauth_apps.py), its client secret sealed, its endpoints and scope as they are used."""
    db.execute(
        """
        CREATE TABLE oauth_apps (
            platform TEXT PRIMARY KEY,
            client_id TEXT NOT NULL,
            client_secret_sealed TEXT NOT NULL,
            client_secret_hint TEXT NOT NULL,
            scope TEXT NOT NULL,
            authorize_url TEXT NOT NULL,
            token_url TEXT NOT NULL,
            updated_at TEXT NOT NULL
        )
        """
    )


@MIGRATIONS.step
def m013_crm_accounts(db: Any) -> None:
    """The CRM account a connection is connected to, as its OAuth answer names it (HubSpot's
    portal id): app-level webhooks (one URL for every account) find the connection by it."""
    db.execute("ALTER TABLE connections ADD COLUMN crm_account_id TEXT NOT NULL DEFAULT ''")
    db.execute("CREATE INDEX connections_account ON connections (platform, crm_account_id)")


@MIGRATIONS.step
def m014_oauth_installs(db: Any) -> None:
    """Admins connecting a CRM with OAuth (connector/install.py): each pending authorization
    by the SHA-256 of its `state`, bound to the settings session (its row id) and connection
    that asked, its PKCE verifier sealed, what the admin entered (Dynamics' environment and
    tenant) and when it began; and why a connection's refresh token stopped working."""
    db.execute(
        f"""
        CREATE TABLE oauth_states (
            state_hash TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            connection_id TEXT NOT NULL,
            verifier_sealed TEXT NOT NULL,
            base_url TEXT NOT NULL DEFAULT '',
            token_url TEXT NOT NULL,
            created_at TEXT NOT NULL
        ){dialect.without_rowid(db)}
        """
    )
    db.execute("ALTER TABLE connections ADD COLUMN crm_auth_error TEXT NOT NULL DEFAULT ''")


@MIGRATIONS.step
def m015_connection_states(db: Any) -> None:
    """Connections managed from the settings page: when one was paused ('' while it runs);
    the inbound secret a rotation replaced and until when it still verifies; and the e-mail
    of the key the page made for it ('' for a key given), revoked when it is removed."""
    for column in (
        "paused_at",
        "previous_secret_sealed",
        "previous_secret_expires_at",
        "own_key_email",
    ):
        db.execute(f"ALTER TABLE connections ADD COLUMN {column} TEXT NOT NULL DEFAULT ''")


@MIGRATIONS.step
def m016_crm_webhooks(db: Any) -> None:
    """The webhooks the connector registered in a connection's CRM itself (Pipedrive's
    webhook ids, Zoho's notification channel id), comma-separated: removing the connection
    deletes exactly these, never one the admin made by hand."""
    db.execute("ALTER TABLE connections ADD COLUMN crm_webhook_ids TEXT NOT NULL DEFAULT ''")


@MIGRATIONS.step
def m017_mapping_versions(db: Any) -> None:
    """Mappings edited on the settings page or imported: each save a new version of a
    connection's mapping of one kind of record, its YAML as saved and who saved it; the
    highest version is the one in use (connector/mapping_versions.py)."""
    db.execute(
        """
        CREATE TABLE mapping_versions (
            connection_id TEXT NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            version INTEGER NOT NULL,
            yaml TEXT NOT NULL,
            created_at TEXT NOT NULL,
            created_by TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (connection_id, kind, version)
        )
        """
    )


@MIGRATIONS.step
def m018_previews(db: Any) -> None:
    """Previews (connector/preview.py): a CRM record read and enriched, the rows shown and the
    exact write planned, kept so Apply sends that write once (applied_at set when claimed)."""
    db.execute(
        """
        CREATE TABLE previews (
            id TEXT PRIMARY KEY,
            connection_id TEXT NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            record_id TEXT NOT NULL,
            rows TEXT NOT NULL,
            planned TEXT NOT NULL,
            saving TEXT NOT NULL,
            credits INTEGER NOT NULL,
            created_by TEXT NOT NULL,
            created_at TEXT NOT NULL,
            applied_at TEXT,
            outcome TEXT NOT NULL DEFAULT ''
        )
        """
    )
    db.execute("CREATE INDEX previews_connection ON previews (connection_id, created_at)")


@MIGRATIONS.step
def m020_claims_and_leases(db: Any) -> None:
    """Many workers on one database: an event is claimed by one worker (claimed_by) until its
    lease ends (lease_until); named leases held by one process at a time (the scheduler's);
    and the process each job run ran in."""
    for statement in (
        "ALTER TABLE events ADD COLUMN claimed_by TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE events ADD COLUMN lease_until TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE job_runs ADD COLUMN ran_by TEXT NOT NULL DEFAULT ''",
        "CREATE TABLE leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, until TEXT NOT NULL)",
    ):
        db.execute(statement)


@MIGRATIONS.step
def m019_backfill_pages_and_health(db: Any) -> None:
    """What the page a backfill stopped in (at its cap or the balance) added to its listed and
    skipped counts, taken back when it resumes and lists that page again; and an index for
    each connection's health (its events done, retrying or dead by when they were last due)."""
    db.execute("ALTER TABLE backfills ADD COLUMN page_listed INTEGER NOT NULL DEFAULT 0")
    db.execute("ALTER TABLE backfills ADD COLUMN page_skipped INTEGER NOT NULL DEFAULT 0")
    db.execute("CREATE INDEX events_health ON events (connection_id, status, due_at)")


@MIGRATIONS.step
def m021_idempotency_keys(db: Any) -> None:
    """The digest of the body a delivery was claimed with: a request naming itself with an
    Idempotency-Key is answered again only for the same body."""
    db.execute("ALTER TABLE webhook_replays ADD COLUMN fingerprint TEXT NOT NULL DEFAULT ''")


@MIGRATIONS.step
def m022_hubspot_app_v3(db: Any) -> None:
    """The kinds of request on which the HubSpot app's URLs have received a valid v3
    signature: from then on they take no other for them, as a connection's URLs."""
    db.execute("ALTER TABLE oauth_apps ADD COLUMN hubspot_v3_kinds TEXT NOT NULL DEFAULT ''")


@MIGRATIONS.step
def m023_throttled_connections(db: Any) -> None:
    """Until when a connection's CRM refuses calls for its rate limit ('' when it does not):
    none of its events is claimed before then."""
    db.execute("ALTER TABLE connections ADD COLUMN throttled_until TEXT NOT NULL DEFAULT ''")


@MIGRATIONS.step
def m024_one_connection_per_account(db: Any) -> None:
    """A CRM account belongs to one connection at a time, held by a unique index (the check
    in connections.set_crm tells the admin why; the index holds when two connect at once).
    Connections that shared an account before keep it in the oldest only: the others lose
    it and are told to connect again."""
    for statement in ONE_CONNECTION_PER_ACCOUNT:
        db.execute(statement)


# m024: the later connections of a shared account (by creation, then id) lose it.
ONE_CONNECTION_PER_ACCOUNT = (
    "UPDATE connections SET crm_account_id = '', crm_auth_error = 'this CRM account is also "
    "connected to an older connection, which keeps it: connect this one to another account, "
    "or remove it' WHERE crm_account_id != '' AND EXISTS (SELECT 1 FROM connections AS older "
    "WHERE older.platform = connections.platform "
    "AND older.crm_account_id = connections.crm_account_id "
    "AND (older.created_at < connections.created_at OR (older.created_at = connections.created_at "
    "AND older.id < connections.id)))",
    "DROP INDEX connections_account",
    "CREATE UNIQUE INDEX connections_account ON connections (platform, crm_account_id) "
    "WHERE crm_account_id != ''",
)


@MIGRATIONS.step
def m025_scheduler_job_store(db: Any) -> None:
    """The scheduler's job store on PostgreSQL, APScheduler's SQLAlchemyJobStore table, made
    here under the migration lock rather than by whichever worker starts first. (On SQLite it
    is a file of its own, `<db>.jobs`, which APScheduler makes: connector/scheduler.py.)"""
    if not dialect.is_postgres(db):
        return
    db.execute(
        "CREATE TABLE apscheduler_jobs (id VARCHAR(191) PRIMARY KEY, "
        "next_run_time DOUBLE PRECISION, job_state BYTEA NOT NULL)"
    )
    db.execute("CREATE INDEX ix_apscheduler_jobs_next_run_time ON apscheduler_jobs (next_run_time)")


@MIGRATIONS.step
def m026_bigint_counts_and_caps(db: Any) -> None:
    """64-bit integers where a number may pass PostgreSQL's INTEGER: a credit cap the forms and
    the CLI take up to store.LARGEST_ID (2**63 - 1), the counts of a backfill, a preview's
    credits and a mapping's version number."""
    counts = ("listed", "queued", "skipped", "total", "credit_cap", "page_listed", "page_skipped")
    for statement in (
        dialect.widened(db, "mapping_versions", "version"),
        dialect.widened(db, "backfills", *counts),
        dialect.widened(db, "previews", "credits"),
    ):
        if statement:
            db.execute(statement)


@MIGRATIONS.step
def m027_backfill_filters_and_reasons(db: Any) -> None:
    """A backfill of one CRM list or saved view (`source`, its id, and `source_name`, as the CRM
    names it; '' for every record), and its skipped records by reason: enriched within the
    refresh interval, without an identifier; `capped`, the records of the page it stopped in
    that its cap or the balance left for later; `page_fresh`, what that page added to
    skipped_fresh (with page_listed and page_skipped: a resumed page is not counted twice)."""
    db.execute("ALTER TABLE backfills ADD COLUMN source TEXT NOT NULL DEFAULT ''")
    db.execute("ALTER TABLE backfills ADD COLUMN source_name TEXT NOT NULL DEFAULT ''")
    for name in ("skipped_fresh", "skipped_unidentified", "capped", "page_fresh"):
        db.execute(f"ALTER TABLE backfills ADD COLUMN {name} BIGINT NOT NULL DEFAULT 0")


@MIGRATIONS.step
def m028_change_signals(db: Any) -> None:
    """Changes in the contact data reaching CRM records (issue 39). Per connection: the last
    service change number acted on (`changes_seen`, server/changes.py), what a job change does
    per kind (`signal_actions`, JSON such as {"contacts": ["mark", "task", "new_contact"]}) and
    the credits one round of change updates may spend (`change_credit_cap`; NULL: the default).
    `signals`: each job change seen in a CRM record ('left': the person left the company the
    record names; 'joined': a person joined a company that is an account in the CRM), with what
    was written for it (`written`, JSON) and its state."""
    db.execute("ALTER TABLE connections ADD COLUMN changes_seen BIGINT NOT NULL DEFAULT 0")
    db.execute("ALTER TABLE connections ADD COLUMN signal_actions TEXT NOT NULL DEFAULT '{}'")
    db.execute("ALTER TABLE connections ADD COLUMN change_credit_cap BIGINT")
    db.execute(
        f"""
        CREATE TABLE signals (
            id {dialect.identity_key(db)},
            connection_id TEXT NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
            kind TEXT NOT NULL DEFAULT 'contacts',
            record_id TEXT NOT NULL,
            contact_guid TEXT NOT NULL,
            change_id BIGINT NOT NULL,
            signal TEXT NOT NULL CHECK (signal IN ('left', 'joined')),
            person TEXT NOT NULL DEFAULT '',
            old_company TEXT NOT NULL DEFAULT '',
            new_company TEXT NOT NULL DEFAULT '',
            new_company_guid TEXT NOT NULL DEFAULT '',
            new_title TEXT NOT NULL DEFAULT '',
            changed_on TEXT NOT NULL DEFAULT '',
            state TEXT NOT NULL DEFAULT 'pending'
                CHECK (state IN ('pending', 'written', 'skipped', 'failed')),
            written TEXT NOT NULL DEFAULT '{{}}',
            error TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            UNIQUE (connection_id, kind, record_id, change_id)
        )
        """
    )
    db.execute("CREATE INDEX signals_connection_time ON signals (connection_id, created_at)")


@MIGRATIONS.step
def m029_event_written(db: Any) -> None:
    """What each finished event wrote to its CRM record (`written`, JSON: property -> value,
    as sent), for Deliveries; '' for an event that wrote nothing or finished before this step
    (issue 37)."""
    db.execute("ALTER TABLE events ADD COLUMN written TEXT NOT NULL DEFAULT ''")


@MIGRATIONS.step
def m030_records_by_guid(db: Any) -> None:
    """The CRM records enriched from a contact or a company, found by its GUID: the change job
    (connector/changes.py) looks up each page of changes so."""
    db.execute("CREATE INDEX records_contact ON records (connection_id, contact_guid)")
    db.execute("CREATE INDEX records_company ON records (connection_id, company_guid)")


@MIGRATIONS.step
def m031_hubspot_app_developer(db: Any) -> None:
    """The HubSpot app's id and its developer account's API key (sealed, shown by its last
    characters), optional on an OAuth app (connector/oauth_apps.py), with which connecting
    sets the app's webhook target URL and subscriptions (issue 37)."""
    db.execute("ALTER TABLE oauth_apps ADD COLUMN app_id TEXT NOT NULL DEFAULT ''")
    db.execute("ALTER TABLE oauth_apps ADD COLUMN developer_key_sealed TEXT NOT NULL DEFAULT ''")
    db.execute("ALTER TABLE oauth_apps ADD COLUMN developer_key_hint TEXT NOT NULL DEFAULT ''")
