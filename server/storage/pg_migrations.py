"""Schema of the service's PostgreSQL database, as an ordered list of migrations.

p001 is the schema SQLite reaches with m001–m007 (server/storage/migrations.py), in PostgreSQL's
types: DOUBLE PRECISION for REAL, identity columns for INTEGER PRIMARY KEY, no WITHOUT ROWID.
Never edit an applied migration: add a new one below it, beside its SQLite twin.
"""

from __future__ import annotations

from collections.abc import Callable

from server.storage.migrations import (
    COMPANY_NAME_FORMS,
    COMPANY_NAME_FORMS_INDEX,
    DISCOVER_INDEX,
    IDEMPOTENCY_KEYS,
    SUPPRESSIONS,
)
from server.storage.pg import PostgresDatabase

MIGRATION_SET = "contactdata"
# Held while migrating, so that two processes starting at once apply each migration once.
MIGRATION_LOCK = 0x6D696772  # "migr"
# The first key of the two-key advisory locks a rate-limit bucket is held under (its second is
# the bucket's hashtext): apart from the one-key DATASET_LOCK and MIGRATION_LOCK.
RATE_LOCK = 0x72617465  # "rate"

Migration = Callable[[PostgresDatabase], None]
MIGRATIONS: list[tuple[str, Migration]] = []


def migration(function: Migration) -> Migration:
    """Register `function` as the next migration, named after it."""
    MIGRATIONS.append((function.__name__, function))
    return function


def _run(db: PostgresDatabase, statements: str) -> None:
    for statement in statements.split(";"):
        if statement.strip():
            db.execute(statement)


@migration
def p001_schema(db: PostgresDatabase) -> None:
    """Organizations, users, keys, transactions, contact data, audit log and credit ledger."""
    _run(db, _ACCOUNTS)
    _run(db, _CONTACT_DATA)
    _run(db, _ACCESS)
    db.execute(DISCOVER_INDEX)


_ACCOUNTS = """
CREATE TABLE organizations (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    website TEXT NOT NULL DEFAULT '',
    cleaned_website TEXT NOT NULL DEFAULT '',
    tier TEXT NOT NULL CHECK (tier IN ('enterprise_standard', 'enterprise_plus', 'pro')),
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive')),
    credits INTEGER CHECK (credits IS NULL OR credits >= 0),
    daily_rate_limit INTEGER NOT NULL CHECK (daily_rate_limit > 0),
    qps_limit INTEGER NOT NULL CHECK (qps_limit > 0),
    discover_per_minute INTEGER NOT NULL CHECK (discover_per_minute > 0),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE UNIQUE INDEX organizations_name ON organizations (name);
CREATE TABLE users (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations (id),
    email TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('admin', 'user', 'demo')),
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspend', 'deleted')),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (org_id, email)
);
CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations (id),
    user_id TEXT REFERENCES users (id),
    email TEXT NOT NULL,
    role TEXT NOT NULL CHECK (role IN ('admin', 'standard')),
    status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
    masked TEXT NOT NULL,
    last_used_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    UNIQUE (org_id, email)
);
CREATE INDEX api_keys_user ON api_keys (user_id);
CREATE TABLE api_key_hashes (
    hash TEXT PRIMARY KEY,
    key_id TEXT NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    expires_at TEXT,
    created_at TEXT NOT NULL
);
CREATE INDEX api_key_hashes_key ON api_key_hashes (key_id);
CREATE TABLE transactions (
    id TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations (id),
    key_id TEXT REFERENCES api_keys (id),
    endpoint TEXT NOT NULL,
    request_id TEXT NOT NULL DEFAULT '',
    company_guid TEXT NOT NULL DEFAULT '',
    contact_guid TEXT NOT NULL DEFAULT '',
    record_status TEXT NOT NULL DEFAULT '',
    accuracy TEXT NOT NULL DEFAULT '',
    credits INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE INDEX transactions_org_time ON transactions (org_id, created_at);
CREATE INDEX transactions_org_contact ON transactions (org_id, contact_guid)
"""

_CONTACT_DATA = """
CREATE TABLE companies (
    guid TEXT PRIMARY KEY CHECK (length(guid) = 16),
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    aka TEXT NOT NULL DEFAULT '',
    website TEXT NOT NULL DEFAULT '',
    domain TEXT NOT NULL DEFAULT '',
    address TEXT NOT NULL DEFAULT '',
    city TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL DEFAULT '',
    zipcode TEXT NOT NULL DEFAULT '',
    country TEXT NOT NULL DEFAULT '',
    latitude DOUBLE PRECISION,
    longitude DOUBLE PRECISION,
    phone TEXT NOT NULL DEFAULT '',
    employee_count INTEGER,
    revenue_range TEXT NOT NULL DEFAULT '',
    industry TEXT NOT NULL DEFAULT '',
    naics_codes TEXT NOT NULL DEFAULT '',
    naics_descriptions TEXT NOT NULL DEFAULT '',
    sic_codes TEXT NOT NULL DEFAULT '',
    sic_descriptions TEXT NOT NULL DEFAULT '',
    legal_status TEXT NOT NULL DEFAULT '',
    parent_guid TEXT NOT NULL DEFAULT '',
    global_hq_guid TEXT NOT NULL DEFAULT '',
    worldwide_parent_name TEXT NOT NULL DEFAULT '',
    global_regions TEXT NOT NULL DEFAULT '',
    profile_url TEXT NOT NULL DEFAULT '',
    email_pattern TEXT NOT NULL DEFAULT '',
    updated_at TEXT NOT NULL
);
CREATE INDEX companies_domain ON companies (domain);
CREATE INDEX companies_name_key ON companies (name_key);
CREATE INDEX companies_profile_url ON companies (profile_url);
CREATE TABLE company_aliases (
    alias_key TEXT NOT NULL,
    company_guid TEXT NOT NULL REFERENCES companies (guid) ON DELETE CASCADE,
    PRIMARY KEY (alias_key, company_guid)
);
CREATE INDEX company_aliases_company ON company_aliases (company_guid);
CREATE TABLE contacts (
    guid TEXT PRIMARY KEY CHECK (length(guid) = 32),
    first_name TEXT NOT NULL DEFAULT '',
    middle_name TEXT NOT NULL DEFAULT '',
    last_name TEXT NOT NULL DEFAULT '',
    full_name TEXT NOT NULL DEFAULT '',
    first_key TEXT NOT NULL DEFAULT '',
    last_key TEXT NOT NULL DEFAULT '',
    profile_url TEXT NOT NULL DEFAULT '',
    location TEXT NOT NULL DEFAULT '',
    accuracy TEXT NOT NULL DEFAULT 'B' CHECK (accuracy IN ('A+', 'A', 'A-', 'B')),
    updated_at TEXT NOT NULL
);
CREATE INDEX contacts_profile_url ON contacts (profile_url);
CREATE INDEX contacts_last_first ON contacts (last_key, first_key);
CREATE TABLE employments (
    contact_guid TEXT NOT NULL REFERENCES contacts (guid) ON DELETE CASCADE,
    company_guid TEXT NOT NULL REFERENCES companies (guid),
    status TEXT NOT NULL DEFAULT 'Active' CHECK (status IN ('Active', 'No Longer')),
    email TEXT NOT NULL DEFAULT '',
    job_title TEXT NOT NULL DEFAULT '',
    levels TEXT NOT NULL DEFAULT '',
    functions TEXT NOT NULL DEFAULT '',
    sub_functions TEXT NOT NULL DEFAULT '',
    work_address TEXT NOT NULL DEFAULT '',
    work_city TEXT NOT NULL DEFAULT '',
    work_state TEXT NOT NULL DEFAULT '',
    work_zipcode TEXT NOT NULL DEFAULT '',
    work_country TEXT NOT NULL DEFAULT '',
    work_phone TEXT NOT NULL DEFAULT '',
    latitude DOUBLE PRECISION,
    longitude DOUBLE PRECISION,
    direct_dial1 TEXT NOT NULL DEFAULT '',
    direct_dial2 TEXT NOT NULL DEFAULT '',
    job_started_on TEXT NOT NULL DEFAULT '',
    job_updated_on TEXT NOT NULL DEFAULT '',
    first_key TEXT NOT NULL DEFAULT '',
    last_key TEXT NOT NULL DEFAULT '',
    level_rank INTEGER NOT NULL DEFAULT 0,
    level_bits INTEGER NOT NULL DEFAULT 0,
    function_bits INTEGER NOT NULL DEFAULT 0,
    title_key TEXT NOT NULL DEFAULT '',
    place_key TEXT NOT NULL DEFAULT '',
    grade INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (contact_guid, company_guid)
);
CREATE INDEX employments_email ON employments (email) WHERE email != '';
CREATE INDEX employments_company_last ON employments (company_guid, last_key, first_key);
CREATE INDEX employments_company_first ON employments (company_guid, first_key);
CREATE TABLE company_name_words (word TEXT PRIMARY KEY, companies INTEGER NOT NULL)
"""

_ACCESS = """
CREATE TABLE audit_log (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    org_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL DEFAULT '',
    detail TEXT NOT NULL DEFAULT '',
    request_id TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
CREATE INDEX audit_log_org ON audit_log (org_id, id);
CREATE TABLE credit_ledger (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES organizations (id),
    change INTEGER NOT NULL,
    balance INTEGER,
    reason TEXT NOT NULL,
    transaction_id TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
CREATE INDEX credit_ledger_org ON credit_ledger (org_id, id)
"""


@migration
def p002_transactions_in_insertion_order(db: PostgresDatabase) -> None:
    """A `rowid` column, as SQLite's: the order transactions were recorded in, the tie-break
    of those recorded in the same instant (a row's ctid moves when the row is updated, and a
    new row may fill space freed before it). Existing rows are numbered in their ctid order."""
    db.execute("ALTER TABLE transactions ADD COLUMN rowid BIGINT GENERATED BY DEFAULT AS IDENTITY")


@migration
def p003_rate_limits(db: PostgresDatabase) -> None:
    """Rate-limit counts (server/limits/postgres.py): the tables the SQLite limiter made here
    on first use, kept if it did, and `rate_limit_hit`, which checks and counts a request in
    one statement."""
    _run(db, _RATE_LIMITS)
    db.conn.raw.execute(_rate_limit_hit("INTEGER"))


# As server/limits/sqlite.py's: a row per counted request of a sliding limit, how many rows
# its bucket keeps, and a count per bucket and UTC date of a daily limit.
_RATE_LIMITS = """
CREATE TABLE IF NOT EXISTS rate_events (bucket TEXT NOT NULL, at DOUBLE PRECISION NOT NULL);
CREATE INDEX IF NOT EXISTS rate_events_bucket ON rate_events (bucket, at);
CREATE TABLE IF NOT EXISTS rate_counts (
    bucket TEXT NOT NULL,
    period TEXT NOT NULL,
    count INTEGER NOT NULL,
    PRIMARY KEY (bucket, period)
);
CREATE TABLE IF NOT EXISTS rate_windows (bucket TEXT PRIMARY KEY, count INTEGER NOT NULL);
INSERT INTO rate_windows (bucket, count) SELECT bucket, count(*) FROM rate_events
GROUP BY bucket ON CONFLICT (bucket) DO NOTHING
"""


# One limit per array position: its bucket, kind ('sliding' or 'utc_day'), quota and period
# (a sliding window's cut-off, a POSIX time as text: requests at or before it have left; or
# the UTC date). Each bucket is locked (RATE_LOCK, hashtext) in the order of the lock keys, so
# hits on the same buckets queue and none deadlock; no other lock is taken.
# Returns each limit's count before the request and, for a sliding one, the time of the
# request whose leaving admits one more; counts the request at `moment` only if all admit it.
def _rate_limit_hit(quota_type: str) -> str:
    """The statement that creates `rate_limit_hit`, its quotas of `quota_type` (p003's
    INTEGER, p007's BIGINT)."""
    return f"""
CREATE FUNCTION rate_limit_hit(
    buckets TEXT[], kinds TEXT[], quotas {quota_type}[], periods TEXT[], moment DOUBLE PRECISION,
    OUT counts BIGINT[], OUT oldests DOUBLE PRECISION[]
) LANGUAGE plpgsql AS $$
DECLARE
    lock_key INTEGER;
    lefts BIGINT[] := '{{}}';
    found_count BIGINT;
    found_left BIGINT;
    found_oldest DOUBLE PRECISION;
    cut_off DOUBLE PRECISION;
    admitted BOOLEAN := true;
BEGIN
    counts := '{{}}';
    oldests := '{{}}';
    FOR lock_key IN SELECT DISTINCT hashtext(b) FROM unnest(buckets) AS b ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock({RATE_LOCK}, lock_key);
    END LOOP;
    FOR i IN 1 .. cardinality(buckets) LOOP
        found_left := 0;
        found_oldest := NULL;
        IF kinds[i] = 'utc_day' THEN
            SELECT c.count INTO found_count FROM rate_counts AS c
            WHERE c.bucket = buckets[i] AND c.period = periods[i];
            found_count := coalesce(found_count, 0);
        ELSE
            cut_off := periods[i]::DOUBLE PRECISION;
            SELECT coalesce((SELECT w.count FROM rate_windows AS w WHERE w.bucket = buckets[i]), 0),
                   (SELECT count(*) FROM rate_events AS e
                    WHERE e.bucket = buckets[i] AND e.at <= cut_off)
            INTO found_count, found_left;
            found_count := found_count - found_left;
            -- Over a lowered quota, more than the oldest must leave.
            SELECT e.at INTO found_oldest FROM rate_events AS e
            WHERE e.bucket = buckets[i] AND e.at > cut_off
            ORDER BY e.at OFFSET greatest(found_count - quotas[i], 0) LIMIT 1;
        END IF;
        counts[i] := found_count;
        oldests[i] := found_oldest;
        lefts[i] := found_left;
        admitted := admitted AND found_count < quotas[i];
    END LOOP;
    IF NOT admitted THEN
        RETURN;
    END IF;
    FOR i IN 1 .. cardinality(buckets) LOOP
        IF kinds[i] = 'utc_day' THEN
            IF counts[i] = 0 THEN  -- the bucket's first request of the day: forget earlier days
                DELETE FROM rate_counts WHERE bucket = buckets[i] AND period < periods[i];
            END IF;
            INSERT INTO rate_counts (bucket, period, count) VALUES (buckets[i], periods[i], 1)
            ON CONFLICT (bucket, period) DO UPDATE SET count = rate_counts.count + 1;
        ELSE
            IF lefts[i] > 0 THEN
                DELETE FROM rate_events
                WHERE bucket = buckets[i] AND at <= periods[i]::DOUBLE PRECISION;
            END IF;
            INSERT INTO rate_events (bucket, at) VALUES (buckets[i], moment);
            INSERT INTO rate_windows (bucket, count) VALUES (buckets[i], 1)
            ON CONFLICT (bucket) DO UPDATE SET count = rate_windows.count + 1 - lefts[i];
        END IF;
    END LOOP;
END
$$
"""


@migration
def p004_suppressions(db: PostgresDatabase) -> None:
    """The suppression list, as m008_suppressions."""
    _run(db, SUPPRESSIONS)


@migration
def p005_company_name_forms(db: PostgresDatabase) -> None:
    """Company names as people write them, as m009_company_name_forms."""
    from server.storage import (
        store,  # here, not at the top: normalize loads tldextract's suffix list
    )

    _run(db, f"{COMPANY_NAME_FORMS};\n{COMPANY_NAME_FORMS_INDEX}")
    store.index_company_names(db)


@migration
def p006_idempotency_keys(db: PostgresDatabase) -> None:
    """The requests answered once by their Idempotency-Key, as m010_idempotency_keys."""
    _run(db, IDEMPOTENCY_KEYS)


@migration
def p007_bigint_credits_limits_and_counts(db: PostgresDatabase) -> None:
    """BIGINT, as SQLite's INTEGER, for the numbers that pass PostgreSQL's INTEGER (2**31 - 1):
    balances, credit changes and limits up to MAX_CREDITS (10**12, server/credits.py) and the
    counts of those limits, with `rate_limit_hit` taking BIGINT quotas. Not a transaction's
    credits (0 or 1): that table, the largest, is not rewritten. No SQLite twin."""
    _run(db, _BIGINT)
    db.execute("DROP FUNCTION rate_limit_hit(TEXT[], TEXT[], INTEGER[], TEXT[], DOUBLE PRECISION)")
    db.conn.raw.execute(_rate_limit_hit("BIGINT"))


_BIGINT = """
ALTER TABLE organizations ALTER COLUMN credits TYPE BIGINT,
    ALTER COLUMN daily_rate_limit TYPE BIGINT, ALTER COLUMN qps_limit TYPE BIGINT,
    ALTER COLUMN discover_per_minute TYPE BIGINT;
ALTER TABLE credit_ledger ALTER COLUMN change TYPE BIGINT, ALTER COLUMN balance TYPE BIGINT;
ALTER TABLE rate_counts ALTER COLUMN count TYPE BIGINT;
ALTER TABLE rate_windows ALTER COLUMN count TYPE BIGINT
"""


def apply(
    db: PostgresDatabase,
    migrations: list[tuple[str, Migration]] = MIGRATIONS,
    migration_set: str = MIGRATION_SET,
) -> list[str]:
    """Apply the `migrations` of `migration_set` (the service's unless given: the connector
    keeps its own) that `db` lacks, in one transaction under MIGRATION_LOCK; their names."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS _migrations (migration_set TEXT NOT NULL, "
        "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now(), "
        "PRIMARY KEY (migration_set, name))"
    )
    db.conn.raw.execute("SELECT pg_advisory_xact_lock(%s)", [MIGRATION_LOCK])
    done = set(applied(db, migration_set))
    added = []
    for name, function in migrations:
        if name not in done:
            function(db)
            db.execute(
                "INSERT INTO _migrations (migration_set, name) VALUES (?, ?)", [migration_set, name]
            )
            added.append(name)
    return added


def applied(db: PostgresDatabase, migration_set: str = MIGRATION_SET) -> list[str]:
    """Names of the migrations of `migration_set` applied to `db`, oldest first."""
    rows = db.execute(
        "SELECT name FROM _migrations WHERE migration_set = ? ORDER BY applied_at, name",
        [migration_set],
    )
    return [name for (name,) in rows]
