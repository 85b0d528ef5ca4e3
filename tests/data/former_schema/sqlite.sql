-- The SQLite database the former code made (its migrations m001-m010 and the connector's
-- m001-m024): sqlite3's iterdump of a new file `connector.store.connect` migrated at commit
-- 096eb92. tests/test_schema.py adopts it.
BEGIN TRANSACTION;
CREATE TABLE "_sqlite_migrations" (
   "id" INTEGER PRIMARY KEY,
   "migration_set" TEXT,
   "name" TEXT,
   "applied_at" TEXT
);
INSERT INTO "_sqlite_migrations" VALUES(1,'contactdata','m001_accounts','2026-11-28 21:38:58.050288+00:00');
INSERT INTO "_sqlite_migrations" VALUES(2,'contactdata','m002_contact_data','2026-11-28 21:38:58.051045+00:00');
INSERT INTO "_sqlite_migrations" VALUES(3,'contactdata','m003_company_aliases_by_company','2026-11-28 21:38:58.051227+00:00');
INSERT INTO "_sqlite_migrations" VALUES(4,'contactdata','m004_access','2026-11-28 21:38:58.051462+00:00');
INSERT INTO "_sqlite_migrations" VALUES(5,'contactdata','m005_matching','2026-11-28 21:38:58.052227+00:00');
INSERT INTO "_sqlite_migrations" VALUES(6,'contactdata','m006_company_keys_without_partnership_forms','2026-11-28 21:38:58.052623+00:00');
INSERT INTO "_sqlite_migrations" VALUES(7,'contactdata','m007_discover','2026-11-28 21:38:58.058356+00:00');
INSERT INTO "_sqlite_migrations" VALUES(8,'contactdata','m008_suppressions','2026-11-28 21:38:58.058601+00:00');
INSERT INTO "_sqlite_migrations" VALUES(9,'contactdata','m009_company_name_forms','2026-11-28 21:38:58.058873+00:00');
INSERT INTO "_sqlite_migrations" VALUES(10,'contactdata','m010_idempotency_keys','2026-11-28 21:38:58.059081+00:00');
INSERT INTO "_sqlite_migrations" VALUES(11,'connector','m001_connections','2026-11-28 21:38:58.061913+00:00');
INSERT INTO "_sqlite_migrations" VALUES(12,'connector','m002_events','2026-11-28 21:38:58.062169+00:00');
INSERT INTO "_sqlite_migrations" VALUES(13,'connector','m003_records','2026-11-28 21:38:58.062313+00:00');
INSERT INTO "_sqlite_migrations" VALUES(14,'connector','m004_pending_writes','2026-11-28 21:38:58.062800+00:00');
INSERT INTO "_sqlite_migrations" VALUES(15,'connector','m005_schedules','2026-11-28 21:38:58.063264+00:00');
INSERT INTO "_sqlite_migrations" VALUES(16,'connector','m006_oauth','2026-11-28 21:38:58.063978+00:00');
INSERT INTO "_sqlite_migrations" VALUES(17,'connector','m007_settings_sessions','2026-11-28 21:38:58.064158+00:00');
INSERT INTO "_sqlite_migrations" VALUES(18,'connector','m008_webhook_replays','2026-11-28 21:38:58.068948+00:00');
INSERT INTO "_sqlite_migrations" VALUES(19,'connector','m009_zoho_channel_expiry','2026-11-28 21:38:58.069623+00:00');
INSERT INTO "_sqlite_migrations" VALUES(20,'connector','m010_record_kinds','2026-11-28 21:38:58.071458+00:00');
INSERT INTO "_sqlite_migrations" VALUES(21,'connector','m011_backfills','2026-11-28 21:38:58.072074+00:00');
INSERT INTO "_sqlite_migrations" VALUES(22,'connector','m012_oauth_apps','2026-11-28 21:38:58.072264+00:00');
INSERT INTO "_sqlite_migrations" VALUES(23,'connector','m013_crm_accounts','2026-11-28 21:38:58.074472+00:00');
INSERT INTO "_sqlite_migrations" VALUES(24,'connector','m014_oauth_installs','2026-11-28 21:38:58.075047+00:00');
INSERT INTO "_sqlite_migrations" VALUES(25,'connector','m015_connection_states','2026-11-28 21:38:58.076537+00:00');
INSERT INTO "_sqlite_migrations" VALUES(26,'connector','m016_crm_webhooks','2026-11-28 21:38:58.077400+00:00');
INSERT INTO "_sqlite_migrations" VALUES(27,'connector','m017_mapping_versions','2026-11-28 21:38:58.077611+00:00');
INSERT INTO "_sqlite_migrations" VALUES(28,'connector','m018_previews','2026-11-28 21:38:58.077836+00:00');
INSERT INTO "_sqlite_migrations" VALUES(29,'connector','m020_claims_and_leases','2026-11-28 21:38:58.079053+00:00');
INSERT INTO "_sqlite_migrations" VALUES(30,'connector','m019_backfill_pages_and_health','2026-11-28 21:38:58.079927+00:00');
INSERT INTO "_sqlite_migrations" VALUES(31,'connector','m021_idempotency_keys','2026-11-28 21:38:58.080381+00:00');
INSERT INTO "_sqlite_migrations" VALUES(32,'connector','m022_hubspot_app_v3','2026-11-28 21:38:58.080924+00:00');
INSERT INTO "_sqlite_migrations" VALUES(33,'connector','m023_throttled_connections','2026-11-28 21:38:58.081425+00:00');
INSERT INTO "_sqlite_migrations" VALUES(34,'connector','m024_one_connection_per_account','2026-11-28 21:38:58.081648+00:00');
CREATE TABLE api_key_hashes (
            hash TEXT PRIMARY KEY,
            key_id TEXT NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
            expires_at TEXT,
            created_at TEXT NOT NULL
        ) WITHOUT ROWID;
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
CREATE TABLE backfills (
            id INTEGER PRIMARY KEY,
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
        , page_listed INTEGER NOT NULL DEFAULT 0, page_skipped INTEGER NOT NULL DEFAULT 0);
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
CREATE TABLE company_aliases (
            alias_key TEXT NOT NULL,
            company_guid TEXT NOT NULL REFERENCES companies (guid) ON DELETE CASCADE,
            PRIMARY KEY (alias_key, company_guid)
        ) WITHOUT ROWID;
CREATE TABLE company_name_forms (
    key TEXT NOT NULL,
    form TEXT NOT NULL,
    company_guid TEXT NOT NULL,
    alias INTEGER NOT NULL,
    PRIMARY KEY (key, form, company_guid, alias)
)
 WITHOUT ROWID;
CREATE TABLE company_name_words (word TEXT PRIMARY KEY, companies INTEGER NOT NULL)
            WITHOUT ROWID
        ;
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
        , refresh_days INTEGER NOT NULL DEFAULT 30, crm_oauth_sealed TEXT NOT NULL DEFAULT '', crm_token_expires_at TEXT NOT NULL DEFAULT '', hubspot_v3_kinds TEXT NOT NULL DEFAULT '', zoho_channel_expires_at TEXT NOT NULL DEFAULT '', crm_account_id TEXT NOT NULL DEFAULT '', crm_auth_error TEXT NOT NULL DEFAULT '', paused_at TEXT NOT NULL DEFAULT '', previous_secret_sealed TEXT NOT NULL DEFAULT '', previous_secret_expires_at TEXT NOT NULL DEFAULT '', own_key_email TEXT NOT NULL DEFAULT '', crm_webhook_ids TEXT NOT NULL DEFAULT '', throttled_until TEXT NOT NULL DEFAULT '');
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
CREATE TABLE credit_ledger (
            id INTEGER PRIMARY KEY,
            org_id TEXT NOT NULL REFERENCES organizations (id),
            change INTEGER NOT NULL,
            balance INTEGER,
            reason TEXT NOT NULL,
            transaction_id TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL
        );
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
            job_updated_on TEXT NOT NULL DEFAULT '', first_key TEXT NOT NULL DEFAULT '', last_key TEXT NOT NULL DEFAULT '', level_rank INTEGER NOT NULL DEFAULT 0, level_bits INTEGER NOT NULL DEFAULT 0, function_bits INTEGER NOT NULL DEFAULT 0, title_key TEXT NOT NULL DEFAULT '', place_key TEXT NOT NULL DEFAULT '', grade INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (contact_guid, company_guid)
        );
CREATE TABLE events (
            id INTEGER PRIMARY KEY,
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
            last_error TEXT NOT NULL DEFAULT '', kind TEXT NOT NULL DEFAULT 'contacts', priority INTEGER NOT NULL DEFAULT 0, claimed_by TEXT NOT NULL DEFAULT '', lease_until TEXT NOT NULL DEFAULT '',
            UNIQUE (connection_id, event_key)
        );
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
CREATE TABLE job_runs (
            id INTEGER PRIMARY KEY,
            job_id TEXT NOT NULL,
            started_at TEXT NOT NULL,
            finished_at TEXT NOT NULL,
            ok INTEGER NOT NULL,
            result TEXT NOT NULL DEFAULT ''
        , ran_by TEXT NOT NULL DEFAULT '');
CREATE TABLE leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, until TEXT NOT NULL);
CREATE TABLE mapping_versions (
            connection_id TEXT NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            version INTEGER NOT NULL,
            yaml TEXT NOT NULL,
            created_at TEXT NOT NULL,
            created_by TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (connection_id, kind, version)
        );
CREATE TABLE oauth_apps (
            platform TEXT PRIMARY KEY,
            client_id TEXT NOT NULL,
            client_secret_sealed TEXT NOT NULL,
            client_secret_hint TEXT NOT NULL,
            scope TEXT NOT NULL,
            authorize_url TEXT NOT NULL,
            token_url TEXT NOT NULL,
            updated_at TEXT NOT NULL
        , hubspot_v3_kinds TEXT NOT NULL DEFAULT '');
CREATE TABLE oauth_states (
            state_hash TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            connection_id TEXT NOT NULL,
            verifier_sealed TEXT NOT NULL,
            base_url TEXT NOT NULL DEFAULT '',
            token_url TEXT NOT NULL,
            created_at TEXT NOT NULL
        ) WITHOUT ROWID
        ;
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
        );
CREATE TABLE records (
            connection_id TEXT NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
            kind TEXT NOT NULL DEFAULT 'contacts',
            record_id TEXT NOT NULL,
            transaction_id TEXT NOT NULL,
            contact_guid TEXT NOT NULL DEFAULT '',
            company_guid TEXT NOT NULL DEFAULT '',
            input_fingerprint TEXT NOT NULL,
            written TEXT NOT NULL DEFAULT '{}',
            enriched_at TEXT NOT NULL,
            pending TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (connection_id, kind, record_id)
        ) WITHOUT ROWID
        ;
CREATE TABLE settings_sessions (
            id TEXT PRIMARY KEY,
            key_id TEXT NOT NULL,
            org_id TEXT NOT NULL,
            mark TEXT NOT NULL,
            created_at TEXT NOT NULL,
            ended_at TEXT NOT NULL DEFAULT ''
        ) WITHOUT ROWID
        ;
CREATE TABLE suppressions (
    hash TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('email', 'profile_url', 'name_domain')),
    action TEXT NOT NULL CHECK (action IN ('suppress', 'erase')),
    reason TEXT NOT NULL DEFAULT '',
    actor TEXT NOT NULL,
    created_at TEXT NOT NULL
);
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
CREATE TABLE webhook_replays (
            connection_id TEXT NOT NULL REFERENCES connections (id) ON DELETE CASCADE,
            webhook_id TEXT NOT NULL,
            received_at TEXT NOT NULL,
            status INTEGER NOT NULL DEFAULT 0,
            body TEXT NOT NULL DEFAULT '',
            headers TEXT NOT NULL DEFAULT '{}', fingerprint TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (connection_id, webhook_id)
        ) WITHOUT ROWID
        ;
CREATE UNIQUE INDEX "idx__sqlite_migrations_migration_set_name"
    ON "_sqlite_migrations" ("migration_set", "name");
CREATE UNIQUE INDEX organizations_name ON organizations (name);
CREATE INDEX api_keys_user ON api_keys (user_id);
CREATE INDEX api_key_hashes_key ON api_key_hashes (key_id);
CREATE INDEX transactions_org_time ON transactions (org_id, created_at);
CREATE INDEX transactions_org_contact ON transactions (org_id, contact_guid)
        ;
CREATE INDEX companies_domain ON companies (domain);
CREATE INDEX companies_name_key ON companies (name_key);
CREATE INDEX companies_profile_url ON companies (profile_url);
CREATE INDEX contacts_profile_url ON contacts (profile_url);
CREATE INDEX employments_email ON employments (email) WHERE email != '';
CREATE INDEX contacts_last_first ON contacts (last_key, first_key)
        ;
CREATE INDEX company_aliases_company ON company_aliases (company_guid);
CREATE INDEX audit_log_org ON audit_log (org_id, id);
CREATE INDEX credit_ledger_org ON credit_ledger (org_id, id)
        ;
CREATE INDEX employments_company_last ON employments (company_guid, last_key, first_key);
CREATE INDEX employments_company_first ON employments (company_guid, first_key);
CREATE INDEX employments_discover ON employments (
    company_guid, grade, latitude, longitude, level_rank, last_key, first_key, contact_guid,
    level_bits, function_bits, title_key, place_key
) WHERE status = 'Active'

        ;
CREATE INDEX company_name_forms_company ON company_name_forms (company_guid);
CREATE INDEX idempotency_keys_claimed ON idempotency_keys (claimed_at)
;
CREATE INDEX job_runs_job ON job_runs (job_id, id);
CREATE INDEX webhook_replays_received ON webhook_replays (received_at);
CREATE INDEX backfills_connection ON backfills (connection_id, kind, state);
CREATE INDEX events_due ON events (status, priority, due_at);
CREATE INDEX previews_connection ON previews (connection_id, created_at);
CREATE INDEX events_health ON events (connection_id, status, due_at);
CREATE UNIQUE INDEX connections_account ON connections (platform, crm_account_id) WHERE crm_account_id != '';
COMMIT;
