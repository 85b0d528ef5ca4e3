"""Schema of the service's SQLite database, as an ordered set of migrations.

Never edit an applied migration: add a new one below it.
"""

from __future__ import annotations

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

MIGRATIONS = Migrations("contactdata")


def _run(db: Database, statements: str) -> None:
    """Execute `;`-separated DDL inside the caller's transaction (executescript would commit)."""
    for statement in statements.split(";"):
        if statement.strip():
            db.execute(statement)


@MIGRATIONS()
def m001_accounts(db: Database) -> None:
    """Organizations, their users and API keys (only hashes of key values), transactions."""
    _run(
        db,
        """
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
        ) WITHOUT ROWID;
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


@MIGRATIONS()
def m002_contact_data(db: Database) -> None:
    """Companies, contacts and each contact's employments (current and former)."""
    _run(
        db,
        """
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
            latitude REAL,
            longitude REAL,
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
        ) WITHOUT ROWID;
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
            latitude REAL,
            longitude REAL,
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


@MIGRATIONS()
def m003_company_aliases_by_company(db: Database) -> None:
    """Index aliases by company: importing replaces a company's aliases by its GUID."""
    _run(db, "CREATE INDEX company_aliases_company ON company_aliases (company_guid)")


@MIGRATIONS()
def m004_access(db: Database) -> None:
    """Audit log and credit ledger."""
    _run(
        db,
        """
        CREATE TABLE audit_log (
            id INTEGER PRIMARY KEY,
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
            id INTEGER PRIMARY KEY,
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


@MIGRATIONS()
def m005_matching(db: Database) -> None:
    """What enrich matching looks people and companies up by.

    Employments carry their contact's name keys, so "this last name at this company" is one
    index seek even at a company of 50,000 people; the words of company names and aliases are
    a table, for correcting a misspelt name a word at a time (filled by
    `store.index_company_names`).
    """
    _run(
        db,
        """
        ALTER TABLE employments ADD COLUMN first_key TEXT NOT NULL DEFAULT '';
        ALTER TABLE employments ADD COLUMN last_key TEXT NOT NULL DEFAULT '';
        UPDATE employments SET first_key = c.first_key, last_key = c.last_key
            FROM contacts c WHERE c.guid = employments.contact_guid;
        CREATE INDEX employments_company_last ON employments (company_guid, last_key, first_key);
        CREATE INDEX employments_company_first ON employments (company_guid, first_key);
        CREATE TABLE company_name_words (word TEXT PRIMARY KEY, companies INTEGER NOT NULL)
            WITHOUT ROWID
        """,
    )


@MIGRATIONS()
def m006_company_keys_without_partnership_forms(db: Database) -> None:
    """Company keys drop the legal forms "SCP" and "(Partnerschaft) mbB" now: key again the
    companies and aliases whose keys change, then the name words."""
    from server.normalize import alias_keys, company_key
    from server.storage import (
        store,  # here, not at the top: normalize loads tldextract's suffix list
    )

    rows = db.execute("SELECT guid, name, name_key, aka FROM companies").fetchall()
    changed = [(guid, name, aka) for guid, name, key, aka in rows if company_key(name) != key]
    db.conn.executemany(
        "UPDATE companies SET name_key = ? WHERE guid = ?",
        [(company_key(name), guid) for guid, name, _ in changed],
    )
    aliased = [(guid, aka) for guid, _, _, aka in rows if aka]
    keys = {guid: alias_keys(aka) for guid, aka in aliased}
    store.replace_company_aliases(db, keys, [(guid, k) for guid, ks in keys.items() for k in ks])
    store.index_company_words(db)


@MIGRATIONS()
def m007_discover(db: Database) -> None:
    """What discover filters and sorts a company's people by (see server/facets.py), and one
    index of current employments that answers a discover query without reading the table.

    The index leads with employments_company_geo's columns, so it replaces that one.
    """
    from server import facets, places  # here, not at the top: places builds tables when used

    for name, arity, function in (
        ("level_rank", 1, facets.level_rank),
        ("level_bits", 1, facets.level_bits),
        ("function_bits", 1, facets.function_bits),
        ("title_key", 1, facets.title_key),
        ("place_key", 4, places.place_key),
        ("grade_rank", 1, facets.grade_rank),
    ):
        db.conn.create_function(name, arity, function, deterministic=True)
    _run(
        db,
        f"""
        ALTER TABLE employments ADD COLUMN level_rank INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE employments ADD COLUMN level_bits INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE employments ADD COLUMN function_bits INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE employments ADD COLUMN title_key TEXT NOT NULL DEFAULT '';
        ALTER TABLE employments ADD COLUMN place_key TEXT NOT NULL DEFAULT '';
        ALTER TABLE employments ADD COLUMN grade INTEGER NOT NULL DEFAULT 0;
        UPDATE employments SET
            level_rank = level_rank(levels),
            level_bits = level_bits(levels),
            function_bits = function_bits(functions),
            title_key = title_key(job_title),
            place_key = place_key(work_city, work_state, work_zipcode, work_country),
            grade = (SELECT grade_rank(c.accuracy) FROM contacts c WHERE c.guid = contact_guid);
        DROP INDEX employments_company_geo;
        {DISCOVER_INDEX}
        """,
    )


# Current employments of a company by grade, then by latitude for radius searches; the rest
# of the columns are what discover filters, sorts and pages by.
DISCOVER_INDEX = """
CREATE INDEX employments_discover ON employments (
    company_guid, grade, latitude, longitude, level_rank, last_key, first_key, contact_guid,
    level_bits, function_bits, title_key, place_key
) WHERE status = 'Active'
"""


@MIGRATIONS()
def m008_suppressions(db: Database) -> None:
    """The suppression list (server/privacy.py): people who opted out or were erased, each
    identifier kept only as a keyed hash."""
    _run(db, SUPPRESSIONS)


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


@MIGRATIONS()
def m009_company_name_forms(db: Database) -> None:
    """Company names as people write them: each name and alias in the forms its variants
    share (`normalize.stored_forms`), filled by `store.index_company_names`, which now also
    counts the words of names as written among the name words."""
    from server.storage import (
        store,  # here, not at the top: normalize loads tldextract's suffix list
    )

    _run(db, f"{COMPANY_NAME_FORMS} WITHOUT ROWID;\n{COMPANY_NAME_FORMS_INDEX}")
    store.index_company_names(db)


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


@MIGRATIONS()
def m010_idempotency_keys(db: Database) -> None:
    """Idempotency-Key (server/http/enrich_api.py): each key an organization sent to an
    endpoint, with the hash of the body it came with and, once answered, the answer (status
    0 while the first request is being answered), kept 24 hours."""
    _run(db, IDEMPOTENCY_KEYS)


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
