"""Schema of the service's database, on SQLite and PostgreSQL alike, as one ordered list of
steps (server/storage/schema.py): each step is written once, for both backends; a step a
backend needs nothing of (m011, m012: SQLite has a rowid and 64-bit INTEGERs) does nothing there.

Never edit an applied step: add a new one below it. A step never calls the store: data to
compute again is a rebuild it requests (`schema.request_rebuild`), run by the store afterwards.
"""

from __future__ import annotations

from typing import Any

from server.storage.dialect import identity_key, insertion_order, widened, without_rowid
from server.storage.schema import Migrations, request_rebuild, run

# The steps a PostgreSQL database migrated before the one list recorded (pg_migrations.py, now
# gone), each with the steps below that reach its schema. p003 and the rate-limit part of p007
# made the PostgreSQL limiter's tables, which it now migrates itself (server/limits/postgres.py).
FORMER_POSTGRES_STEPS = {
    "p001_schema": (
        "m001_accounts",
        "m002_contact_data",
        "m003_company_aliases_by_company",
        "m004_access",
        "m005_matching",
        "m006_company_keys_without_partnership_forms",
        "m007_discover",
    ),
    "p002_transactions_in_insertion_order": ("m011_transactions_in_insertion_order",),
    "p003_rate_limits": (),
    "p004_suppressions": ("m008_suppressions",),
    "p005_company_name_forms": ("m009_company_name_forms",),
    "p006_idempotency_keys": ("m010_idempotency_keys",),
    "p007_bigint_credits_limits_and_counts": ("m012_bigint_credits_and_limits",),
}
MIGRATIONS = Migrations("contactdata", former=FORMER_POSTGRES_STEPS)
# The data rebuilds steps request (server/storage/store.py `rebuild` runs them).
COMPANY_KEYS = "company_keys"
COMPANY_NAMES = "company_names"
EMPLOYMENT_FACETS = "employment_facets"


@MIGRATIONS.step
def m001_accounts(db: Any) -> None:
    """Organizations, their users and API keys (only hashes of key values), transactions."""
    run(
        db,
        f"""
        CREATE TABLE organizations (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            website TEXT NOT NULL DEFAULT '',
            cleaned_website TEXT NOT NULL DEFAULT '',
            tier TEXT NOT NULL
                CHECK (tier IN ('enterprise_standard', 'enterprise_plus', 'pro')),
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
            status TEXT NOT NULL DEFAULT 'active'
                CHECK (status IN ('active', 'suspend', 'deleted')),
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
        ){without_rowid(db)};
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
        """,
    )


@MIGRATIONS.step
def m002_contact_data(db: Any) -> None:
    """Companies, contacts and each contact's employments (current and former)."""
    run(
        db,
        f"""
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
        ){without_rowid(db)};
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
            PRIMARY KEY (contact_guid, company_guid)
        );
        CREATE INDEX employments_email ON employments (email) WHERE email != '';
        CREATE INDEX employments_company_geo ON employments (company_guid, latitude, longitude);
        CREATE INDEX contacts_last_first ON contacts (last_key, first_key)
        """,
    )


@MIGRATIONS.step
def m003_company_aliases_by_company(db: Any) -> None:
    """Index aliases by company: importing replaces a company's aliases by its GUID."""
    run(db, "CREATE INDEX company_aliases_company ON company_aliases (company_guid)")


@MIGRATIONS.step
def m004_access(db: Any) -> None:
    """Audit log and credit ledger."""
    run(
        db,
        f"""
        CREATE TABLE audit_log (
            id {identity_key(db)},
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
            id {identity_key(db)},
            org_id TEXT NOT NULL REFERENCES organizations (id),
            change INTEGER NOT NULL,
            balance INTEGER,
            reason TEXT NOT NULL,
            transaction_id TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL
        );
        CREATE INDEX credit_ledger_org ON credit_ledger (org_id, id)
        """,
    )


@MIGRATIONS.step
def m005_matching(db: Any) -> None:
    """What enrich matching looks people and companies up by.

    Employments carry their contact's name keys, so "this last name at this company" is one
    index seek even at a company of 50,000 people; the words of company names and aliases are
    a table, for correcting a misspelt name a word at a time (filled by the store's
    `index_company_names`).
    """
    run(
        db,
        f"""
        ALTER TABLE employments ADD COLUMN first_key TEXT NOT NULL DEFAULT '';
        ALTER TABLE employments ADD COLUMN last_key TEXT NOT NULL DEFAULT '';
        UPDATE employments SET first_key = c.first_key, last_key = c.last_key
            FROM contacts c WHERE c.guid = employments.contact_guid;
        CREATE INDEX employments_company_last ON employments (company_guid, last_key, first_key);
        CREATE INDEX employments_company_first ON employments (company_guid, first_key);
        CREATE TABLE company_name_words (word TEXT PRIMARY KEY, companies INTEGER NOT NULL)
            {without_rowid(db)}
        """,
    )


@MIGRATIONS.step
def m006_company_keys_without_partnership_forms(db: Any) -> None:
    """Company keys drop the legal forms "SCP" and "(Partnerschaft) mbB" now: the companies
    and aliases whose keys change are keyed again, then the name tables rebuilt."""
    request_rebuild(db, COMPANY_KEYS, unless_empty="companies")
    request_rebuild(db, COMPANY_NAMES, unless_empty="companies")


@MIGRATIONS.step
def m007_discover(db: Any) -> None:
    """What discover filters and sorts a company's people by (see server/facets.py), and one
    index of current employments that answers a discover query without reading the table.
    The columns of employments already there are computed by a rebuild.

    The index leads with employments_company_geo's columns, so it replaces that one.
    """
    run(
        db,
        f"""
        ALTER TABLE employments ADD COLUMN level_rank INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE employments ADD COLUMN level_bits INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE employments ADD COLUMN function_bits INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE employments ADD COLUMN title_key TEXT NOT NULL DEFAULT '';
        ALTER TABLE employments ADD COLUMN place_key TEXT NOT NULL DEFAULT '';
        ALTER TABLE employments ADD COLUMN grade INTEGER NOT NULL DEFAULT 0;
        DROP INDEX employments_company_geo;
        {DISCOVER_INDEX}
        """,
    )
    request_rebuild(db, EMPLOYMENT_FACETS, unless_empty="employments")


# Current employments of a company by grade, then by latitude for radius searches; the rest
# of the columns are what discover filters, sorts and pages by.
DISCOVER_INDEX = """
CREATE INDEX employments_discover ON employments (
    company_guid, grade, latitude, longitude, level_rank, last_key, first_key, contact_guid,
    level_bits, function_bits, title_key, place_key
) WHERE status = 'Active'
"""


@MIGRATIONS.step
def m008_suppressions(db: Any) -> None:
    """The suppression list (server/privacy.py): people who opted out or were erased, each
    identifier kept only as a keyed hash."""
    run(db, SUPPRESSIONS)


SUPPRESSIONS = """
CREATE TABLE suppressions (
    hash TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('email', 'profile_url', 'name_domain')),
    action TEXT NOT NULL CHECK (action IN ('suppress', 'erase')),
    reason TEXT NOT NULL DEFAULT '',
    actor TEXT NOT NULL,
    created_at TEXT NOT NULL
)
"""


@MIGRATIONS.step
def m009_company_name_forms(db: Any) -> None:
    """Company names as people write them: each name and alias in the forms its variants
    share (`normalize.stored_forms`), filled by the store's `index_company_names`, which now
    also counts the words of names as written among the name words (a rebuild)."""
    run(db, f"{COMPANY_NAME_FORMS}{without_rowid(db)};\n{COMPANY_NAME_FORMS_INDEX}")
    request_rebuild(db, COMPANY_NAMES, unless_empty="companies")


COMPANY_NAME_FORMS = """
CREATE TABLE company_name_forms (
    key TEXT NOT NULL,
    form TEXT NOT NULL,
    company_guid TEXT NOT NULL,
    alias INTEGER NOT NULL,
    PRIMARY KEY (key, form, company_guid, alias)
)
"""
# Importing replaces a company's forms by its GUID.
COMPANY_NAME_FORMS_INDEX = (
    "CREATE INDEX company_name_forms_company ON company_name_forms (company_guid)"
)


@MIGRATIONS.step
def m010_idempotency_keys(db: Any) -> None:
    """Idempotency-Key (server/http/enrich_api.py): each key an organization sent to an
    endpoint, with the hash of the body it came with and, once answered, the answer (status
    0 while the first request is being answered), kept 24 hours."""
    run(db, IDEMPOTENCY_KEYS)


IDEMPOTENCY_KEYS = """
CREATE TABLE idempotency_keys (
    org_id TEXT NOT NULL REFERENCES organizations (id),
    endpoint TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    claimed_at TEXT NOT NULL,
    status INTEGER NOT NULL DEFAULT 0,
    body TEXT NOT NULL DEFAULT '',
    transaction_id TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (org_id, endpoint, idempotency_key)
);
CREATE INDEX idempotency_keys_claimed ON idempotency_keys (claimed_at)
"""


@MIGRATIONS.step
def m011_transactions_in_insertion_order(db: Any) -> None:
    """A `rowid` for transactions on PostgreSQL, as SQLite's: the order transactions were
    recorded in, the tie-break of those recorded in the same instant."""
    run(db, insertion_order(db, "transactions"))


@MIGRATIONS.step
def m012_bigint_credits_and_limits(db: Any) -> None:
    """64-bit integers for the numbers that pass PostgreSQL's INTEGER: balances, credit changes
    and limits up to MAX_CREDITS (10**12, server/credits.py). Not a transaction's credits (0
    or 1): that table, the largest, is not rewritten."""
    limits = ("credits", "daily_rate_limit", "qps_limit", "discover_per_minute")
    run(db, widened(db, "organizations", *limits))
    run(db, widened(db, "credit_ledger", "change", "balance"))


@MIGRATIONS.step
def m013_contact_changes(db: Any) -> None:
    """What each import of updated data changed (server/changes.py): one row per change of a
    contact (a job ended or began; a title, e-mail, phone or location changed) or of a company
    (its firmographics; `contact_guid` ''), numbered in the order recorded, so that a reader
    (the connector, an API client) goes on from the last number it saw."""
    run(
        db,
        f"""
        CREATE TABLE contact_changes (
            id {identity_key(db)},
            contact_guid TEXT NOT NULL DEFAULT '',
            company_guid TEXT NOT NULL DEFAULT '',
            kind TEXT NOT NULL,
            before TEXT NOT NULL DEFAULT '{{}}',
            after TEXT NOT NULL DEFAULT '{{}}',
            changed_on TEXT NOT NULL DEFAULT '',
            recorded_at TEXT NOT NULL
        );
        CREATE INDEX contact_changes_contact ON contact_changes (contact_guid, id);
        CREATE INDEX contact_changes_company ON contact_changes (company_guid, id);
        CREATE INDEX contact_changes_recorded ON contact_changes (recorded_at)
        """,
    )


@MIGRATIONS.step
def m014_company_keys_of_spaced_legal_forms(db: Any) -> None:
    """Company keys drop a legal form written spaced ("N. V.") or glued to the last word
    ("ELECTRONICSN.V.", "GROUPLTD.") now: the companies and aliases whose keys change are
    keyed again, then the name tables rebuilt."""
    request_rebuild(db, COMPANY_KEYS, unless_empty="companies")
    request_rebuild(db, COMPANY_NAMES, unless_empty="companies")
