-- The schema the former PostgreSQL migrations (server/storage/pg_migrations.py p001-p007,
-- connector/pg_migrations.py c001-c006) made, and their records: pg_dump --schema-only, then
-- --data-only --inserts of _migrations, of a new database `connector.store.connect` migrated
-- at commit 096eb92 (psql's \restrict lines removed). tests/test_schema.py adopts it.

--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Name: rate_limit_hit(text[], text[], bigint[], text[], double precision); Type: FUNCTION; Schema: public; Owner: -
--

CREATE FUNCTION public.rate_limit_hit(buckets text[], kinds text[], quotas bigint[], periods text[], moment double precision, OUT counts bigint[], OUT oldests double precision[]) RETURNS record
    LANGUAGE plpgsql
    AS $$
DECLARE
    lock_key INTEGER;
    lefts BIGINT[] := '{}';
    found_count BIGINT;
    found_left BIGINT;
    found_oldest DOUBLE PRECISION;
    cut_off DOUBLE PRECISION;
    admitted BOOLEAN := true;
BEGIN
    counts := '{}';
    oldests := '{}';
    FOR lock_key IN SELECT DISTINCT hashtext(b) FROM unnest(buckets) AS b ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(1918989413, lock_key);
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
$$;


SET default_tablespace = '';

SET default_table_access_method = heap;

--
-- Name: _migrations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public._migrations (
    migration_set text NOT NULL,
    name text NOT NULL,
    applied_at timestamp with time zone DEFAULT now() NOT NULL
);


--
-- Name: api_key_hashes; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.api_key_hashes (
    hash text NOT NULL,
    key_id text NOT NULL,
    expires_at text,
    created_at text NOT NULL
);


--
-- Name: api_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.api_keys (
    id text NOT NULL,
    org_id text NOT NULL,
    user_id text,
    email text NOT NULL,
    role text NOT NULL,
    status text DEFAULT 'active'::text NOT NULL,
    masked text NOT NULL,
    last_used_at text,
    created_at text NOT NULL,
    updated_at text NOT NULL,
    CONSTRAINT api_keys_role_check CHECK ((role = ANY (ARRAY['admin'::text, 'standard'::text]))),
    CONSTRAINT api_keys_status_check CHECK ((status = ANY (ARRAY['active'::text, 'suspended'::text])))
);


--
-- Name: apscheduler_jobs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.apscheduler_jobs (
    id character varying(191) NOT NULL,
    next_run_time double precision,
    job_state bytea NOT NULL
);


--
-- Name: audit_log; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.audit_log (
    id bigint NOT NULL,
    org_id text NOT NULL,
    actor text NOT NULL,
    action text NOT NULL,
    target text DEFAULT ''::text NOT NULL,
    detail text DEFAULT ''::text NOT NULL,
    request_id text DEFAULT ''::text NOT NULL,
    created_at text NOT NULL
);


--
-- Name: audit_log_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.audit_log ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.audit_log_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: backfills; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.backfills (
    id bigint NOT NULL,
    connection_id text NOT NULL,
    kind text NOT NULL,
    since text DEFAULT ''::text NOT NULL,
    cursor text DEFAULT ''::text NOT NULL,
    listed bigint DEFAULT 0 NOT NULL,
    queued bigint DEFAULT 0 NOT NULL,
    skipped bigint DEFAULT 0 NOT NULL,
    total bigint,
    credit_cap bigint,
    state text DEFAULT 'running'::text NOT NULL,
    note text DEFAULT ''::text NOT NULL,
    started_at text NOT NULL,
    updated_at text NOT NULL,
    page_listed bigint DEFAULT 0 NOT NULL,
    page_skipped bigint DEFAULT 0 NOT NULL,
    CONSTRAINT backfills_state_check CHECK ((state = ANY (ARRAY['running'::text, 'done'::text, 'stopped'::text])))
);


--
-- Name: backfills_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.backfills ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.backfills_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: companies; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.companies (
    guid text NOT NULL,
    name text NOT NULL,
    name_key text NOT NULL,
    aka text DEFAULT ''::text NOT NULL,
    website text DEFAULT ''::text NOT NULL,
    domain text DEFAULT ''::text NOT NULL,
    address text DEFAULT ''::text NOT NULL,
    city text DEFAULT ''::text NOT NULL,
    state text DEFAULT ''::text NOT NULL,
    zipcode text DEFAULT ''::text NOT NULL,
    country text DEFAULT ''::text NOT NULL,
    latitude double precision,
    longitude double precision,
    phone text DEFAULT ''::text NOT NULL,
    employee_count integer,
    revenue_range text DEFAULT ''::text NOT NULL,
    industry text DEFAULT ''::text NOT NULL,
    naics_codes text DEFAULT ''::text NOT NULL,
    naics_descriptions text DEFAULT ''::text NOT NULL,
    sic_codes text DEFAULT ''::text NOT NULL,
    sic_descriptions text DEFAULT ''::text NOT NULL,
    legal_status text DEFAULT ''::text NOT NULL,
    parent_guid text DEFAULT ''::text NOT NULL,
    global_hq_guid text DEFAULT ''::text NOT NULL,
    worldwide_parent_name text DEFAULT ''::text NOT NULL,
    global_regions text DEFAULT ''::text NOT NULL,
    profile_url text DEFAULT ''::text NOT NULL,
    email_pattern text DEFAULT ''::text NOT NULL,
    updated_at text NOT NULL,
    CONSTRAINT companies_guid_check CHECK ((length(guid) = 16))
);


--
-- Name: company_aliases; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.company_aliases (
    alias_key text NOT NULL,
    company_guid text NOT NULL
);


--
-- Name: company_name_forms; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.company_name_forms (
    key text NOT NULL,
    form text NOT NULL,
    company_guid text NOT NULL,
    alias integer NOT NULL
);


--
-- Name: company_name_words; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.company_name_words (
    word text NOT NULL,
    companies integer NOT NULL
);


--
-- Name: connections; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.connections (
    id text NOT NULL,
    name text NOT NULL,
    platform text NOT NULL,
    org_id text NOT NULL,
    api_key_sealed text NOT NULL,
    api_key_hint text NOT NULL,
    mapping text NOT NULL,
    secret_sealed text NOT NULL,
    secret_hint text NOT NULL,
    crm_base_url text DEFAULT ''::text NOT NULL,
    crm_token_sealed text DEFAULT ''::text NOT NULL,
    crm_token_hint text DEFAULT ''::text NOT NULL,
    allowed_organizations text DEFAULT ''::text NOT NULL,
    created_at text NOT NULL,
    refresh_days integer DEFAULT 30 NOT NULL,
    crm_oauth_sealed text DEFAULT ''::text NOT NULL,
    crm_token_expires_at text DEFAULT ''::text NOT NULL,
    hubspot_v3_kinds text DEFAULT ''::text NOT NULL,
    zoho_channel_expires_at text DEFAULT ''::text NOT NULL,
    crm_account_id text DEFAULT ''::text NOT NULL,
    crm_auth_error text DEFAULT ''::text NOT NULL,
    paused_at text DEFAULT ''::text NOT NULL,
    previous_secret_sealed text DEFAULT ''::text NOT NULL,
    previous_secret_expires_at text DEFAULT ''::text NOT NULL,
    own_key_email text DEFAULT ''::text NOT NULL,
    crm_webhook_ids text DEFAULT ''::text NOT NULL,
    throttled_until text DEFAULT ''::text NOT NULL
);


--
-- Name: contacts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.contacts (
    guid text NOT NULL,
    first_name text DEFAULT ''::text NOT NULL,
    middle_name text DEFAULT ''::text NOT NULL,
    last_name text DEFAULT ''::text NOT NULL,
    full_name text DEFAULT ''::text NOT NULL,
    first_key text DEFAULT ''::text NOT NULL,
    last_key text DEFAULT ''::text NOT NULL,
    profile_url text DEFAULT ''::text NOT NULL,
    location text DEFAULT ''::text NOT NULL,
    accuracy text DEFAULT 'B'::text NOT NULL,
    updated_at text NOT NULL,
    CONSTRAINT contacts_accuracy_check CHECK ((accuracy = ANY (ARRAY['A+'::text, 'A'::text, 'A-'::text, 'B'::text]))),
    CONSTRAINT contacts_guid_check CHECK ((length(guid) = 32))
);


--
-- Name: credit_ledger; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.credit_ledger (
    id bigint NOT NULL,
    org_id text NOT NULL,
    change bigint NOT NULL,
    balance bigint,
    reason text NOT NULL,
    transaction_id text DEFAULT ''::text NOT NULL,
    created_at text NOT NULL
);


--
-- Name: credit_ledger_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.credit_ledger ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.credit_ledger_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: employments; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.employments (
    contact_guid text NOT NULL,
    company_guid text NOT NULL,
    status text DEFAULT 'Active'::text NOT NULL,
    email text DEFAULT ''::text NOT NULL,
    job_title text DEFAULT ''::text NOT NULL,
    levels text DEFAULT ''::text NOT NULL,
    functions text DEFAULT ''::text NOT NULL,
    sub_functions text DEFAULT ''::text NOT NULL,
    work_address text DEFAULT ''::text NOT NULL,
    work_city text DEFAULT ''::text NOT NULL,
    work_state text DEFAULT ''::text NOT NULL,
    work_zipcode text DEFAULT ''::text NOT NULL,
    work_country text DEFAULT ''::text NOT NULL,
    work_phone text DEFAULT ''::text NOT NULL,
    latitude double precision,
    longitude double precision,
    direct_dial1 text DEFAULT ''::text NOT NULL,
    direct_dial2 text DEFAULT ''::text NOT NULL,
    job_started_on text DEFAULT ''::text NOT NULL,
    job_updated_on text DEFAULT ''::text NOT NULL,
    first_key text DEFAULT ''::text NOT NULL,
    last_key text DEFAULT ''::text NOT NULL,
    level_rank integer DEFAULT 0 NOT NULL,
    level_bits integer DEFAULT 0 NOT NULL,
    function_bits integer DEFAULT 0 NOT NULL,
    title_key text DEFAULT ''::text NOT NULL,
    place_key text DEFAULT ''::text NOT NULL,
    grade integer DEFAULT 0 NOT NULL,
    CONSTRAINT employments_status_check CHECK ((status = ANY (ARRAY['Active'::text, 'No Longer'::text])))
);


--
-- Name: events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.events (
    id bigint NOT NULL,
    connection_id text NOT NULL,
    event_key text NOT NULL,
    record_id text DEFAULT ''::text NOT NULL,
    payload text NOT NULL,
    thin integer DEFAULT 0 NOT NULL,
    received_at text NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    due_at text NOT NULL,
    last_error text DEFAULT ''::text NOT NULL,
    kind text DEFAULT 'contacts'::text NOT NULL,
    priority integer DEFAULT 0 NOT NULL,
    claimed_by text DEFAULT ''::text NOT NULL,
    lease_until text DEFAULT ''::text NOT NULL,
    CONSTRAINT events_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'done'::text, 'dead'::text])))
);


--
-- Name: events_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.events ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.events_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: idempotency_keys; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.idempotency_keys (
    org_id text NOT NULL,
    endpoint text NOT NULL,
    idempotency_key text NOT NULL,
    fingerprint text NOT NULL,
    claimed_at text NOT NULL,
    status integer DEFAULT 0 NOT NULL,
    body text DEFAULT ''::text NOT NULL,
    transaction_id text DEFAULT ''::text NOT NULL
);


--
-- Name: job_runs; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.job_runs (
    id bigint NOT NULL,
    job_id text NOT NULL,
    started_at text NOT NULL,
    finished_at text NOT NULL,
    ok integer NOT NULL,
    result text DEFAULT ''::text NOT NULL,
    ran_by text DEFAULT ''::text NOT NULL
);


--
-- Name: job_runs_id_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.job_runs ALTER COLUMN id ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.job_runs_id_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: leases; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.leases (
    name text NOT NULL,
    holder text NOT NULL,
    until text NOT NULL
);


--
-- Name: mapping_versions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.mapping_versions (
    connection_id text NOT NULL,
    kind text NOT NULL,
    version bigint NOT NULL,
    yaml text NOT NULL,
    created_at text NOT NULL,
    created_by text DEFAULT ''::text NOT NULL
);


--
-- Name: oauth_apps; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.oauth_apps (
    platform text NOT NULL,
    client_id text NOT NULL,
    client_secret_sealed text NOT NULL,
    client_secret_hint text NOT NULL,
    scope text NOT NULL,
    authorize_url text NOT NULL,
    token_url text NOT NULL,
    updated_at text NOT NULL,
    hubspot_v3_kinds text DEFAULT ''::text NOT NULL
);


--
-- Name: oauth_states; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.oauth_states (
    state_hash text NOT NULL,
    session_id text NOT NULL,
    connection_id text NOT NULL,
    verifier_sealed text NOT NULL,
    base_url text DEFAULT ''::text NOT NULL,
    token_url text NOT NULL,
    created_at text NOT NULL
);


--
-- Name: organizations; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.organizations (
    id text NOT NULL,
    name text NOT NULL,
    website text DEFAULT ''::text NOT NULL,
    cleaned_website text DEFAULT ''::text NOT NULL,
    tier text NOT NULL,
    status text DEFAULT 'active'::text NOT NULL,
    credits bigint,
    daily_rate_limit bigint NOT NULL,
    qps_limit bigint NOT NULL,
    discover_per_minute bigint NOT NULL,
    created_at text NOT NULL,
    updated_at text NOT NULL,
    CONSTRAINT organizations_credits_check CHECK (((credits IS NULL) OR (credits >= 0))),
    CONSTRAINT organizations_daily_rate_limit_check CHECK ((daily_rate_limit > 0)),
    CONSTRAINT organizations_discover_per_minute_check CHECK ((discover_per_minute > 0)),
    CONSTRAINT organizations_qps_limit_check CHECK ((qps_limit > 0)),
    CONSTRAINT organizations_status_check CHECK ((status = ANY (ARRAY['active'::text, 'inactive'::text]))),
    CONSTRAINT organizations_tier_check CHECK ((tier = ANY (ARRAY['enterprise_standard'::text, 'enterprise_plus'::text, 'pro'::text])))
);


--
-- Name: previews; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.previews (
    id text NOT NULL,
    connection_id text NOT NULL,
    kind text NOT NULL,
    record_id text NOT NULL,
    rows text NOT NULL,
    planned text NOT NULL,
    saving text NOT NULL,
    credits bigint NOT NULL,
    created_by text NOT NULL,
    created_at text NOT NULL,
    applied_at text,
    outcome text DEFAULT ''::text NOT NULL
);


--
-- Name: rate_counts; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rate_counts (
    bucket text NOT NULL,
    period text NOT NULL,
    count bigint NOT NULL
);


--
-- Name: rate_events; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rate_events (
    bucket text NOT NULL,
    at double precision NOT NULL
);


--
-- Name: rate_windows; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.rate_windows (
    bucket text NOT NULL,
    count bigint NOT NULL
);


--
-- Name: records; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.records (
    connection_id text NOT NULL,
    kind text DEFAULT 'contacts'::text NOT NULL,
    record_id text NOT NULL,
    transaction_id text NOT NULL,
    contact_guid text DEFAULT ''::text NOT NULL,
    company_guid text DEFAULT ''::text NOT NULL,
    input_fingerprint text NOT NULL,
    written text DEFAULT '{}'::text NOT NULL,
    enriched_at text NOT NULL,
    pending text DEFAULT ''::text NOT NULL
);


--
-- Name: settings_sessions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.settings_sessions (
    id text NOT NULL,
    key_id text NOT NULL,
    org_id text NOT NULL,
    mark text NOT NULL,
    created_at text NOT NULL,
    ended_at text DEFAULT ''::text NOT NULL
);


--
-- Name: suppressions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.suppressions (
    hash text NOT NULL,
    kind text NOT NULL,
    action text NOT NULL,
    reason text DEFAULT ''::text NOT NULL,
    actor text NOT NULL,
    created_at text NOT NULL,
    CONSTRAINT suppressions_action_check CHECK ((action = ANY (ARRAY['suppress'::text, 'erase'::text]))),
    CONSTRAINT suppressions_kind_check CHECK ((kind = ANY (ARRAY['email'::text, 'profile_url'::text, 'name_domain'::text])))
);


--
-- Name: transactions; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.transactions (
    id text NOT NULL,
    org_id text NOT NULL,
    key_id text,
    endpoint text NOT NULL,
    request_id text DEFAULT ''::text NOT NULL,
    company_guid text DEFAULT ''::text NOT NULL,
    contact_guid text DEFAULT ''::text NOT NULL,
    record_status text DEFAULT ''::text NOT NULL,
    accuracy text DEFAULT ''::text NOT NULL,
    credits integer DEFAULT 0 NOT NULL,
    created_at text NOT NULL,
    rowid bigint NOT NULL
);


--
-- Name: transactions_rowid_seq; Type: SEQUENCE; Schema: public; Owner: -
--

ALTER TABLE public.transactions ALTER COLUMN rowid ADD GENERATED BY DEFAULT AS IDENTITY (
    SEQUENCE NAME public.transactions_rowid_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1
);


--
-- Name: users; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.users (
    id text NOT NULL,
    org_id text NOT NULL,
    email text NOT NULL,
    role text NOT NULL,
    status text DEFAULT 'active'::text NOT NULL,
    created_at text NOT NULL,
    updated_at text NOT NULL,
    CONSTRAINT users_role_check CHECK ((role = ANY (ARRAY['admin'::text, 'user'::text, 'demo'::text]))),
    CONSTRAINT users_status_check CHECK ((status = ANY (ARRAY['active'::text, 'suspend'::text, 'deleted'::text])))
);


--
-- Name: webhook_replays; Type: TABLE; Schema: public; Owner: -
--

CREATE TABLE public.webhook_replays (
    connection_id text NOT NULL,
    webhook_id text NOT NULL,
    received_at text NOT NULL,
    status integer DEFAULT 0 NOT NULL,
    body text DEFAULT ''::text NOT NULL,
    headers text DEFAULT '{}'::text NOT NULL,
    fingerprint text DEFAULT ''::text NOT NULL
);


--
-- Name: _migrations _migrations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public._migrations
    ADD CONSTRAINT _migrations_pkey PRIMARY KEY (migration_set, name);


--
-- Name: api_key_hashes api_key_hashes_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_key_hashes
    ADD CONSTRAINT api_key_hashes_pkey PRIMARY KEY (hash);


--
-- Name: api_keys api_keys_org_id_email_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_org_id_email_key UNIQUE (org_id, email);


--
-- Name: api_keys api_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);


--
-- Name: apscheduler_jobs apscheduler_jobs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.apscheduler_jobs
    ADD CONSTRAINT apscheduler_jobs_pkey PRIMARY KEY (id);


--
-- Name: audit_log audit_log_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.audit_log
    ADD CONSTRAINT audit_log_pkey PRIMARY KEY (id);


--
-- Name: backfills backfills_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.backfills
    ADD CONSTRAINT backfills_pkey PRIMARY KEY (id);


--
-- Name: companies companies_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.companies
    ADD CONSTRAINT companies_pkey PRIMARY KEY (guid);


--
-- Name: company_aliases company_aliases_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.company_aliases
    ADD CONSTRAINT company_aliases_pkey PRIMARY KEY (alias_key, company_guid);


--
-- Name: company_name_forms company_name_forms_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.company_name_forms
    ADD CONSTRAINT company_name_forms_pkey PRIMARY KEY (key, form, company_guid, alias);


--
-- Name: company_name_words company_name_words_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.company_name_words
    ADD CONSTRAINT company_name_words_pkey PRIMARY KEY (word);


--
-- Name: connections connections_name_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.connections
    ADD CONSTRAINT connections_name_key UNIQUE (name);


--
-- Name: connections connections_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.connections
    ADD CONSTRAINT connections_pkey PRIMARY KEY (id);


--
-- Name: contacts contacts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.contacts
    ADD CONSTRAINT contacts_pkey PRIMARY KEY (guid);


--
-- Name: credit_ledger credit_ledger_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.credit_ledger
    ADD CONSTRAINT credit_ledger_pkey PRIMARY KEY (id);


--
-- Name: employments employments_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.employments
    ADD CONSTRAINT employments_pkey PRIMARY KEY (contact_guid, company_guid);


--
-- Name: events events_connection_id_event_key_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_connection_id_event_key_key UNIQUE (connection_id, event_key);


--
-- Name: events events_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_pkey PRIMARY KEY (id);


--
-- Name: idempotency_keys idempotency_keys_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_pkey PRIMARY KEY (org_id, endpoint, idempotency_key);


--
-- Name: job_runs job_runs_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.job_runs
    ADD CONSTRAINT job_runs_pkey PRIMARY KEY (id);


--
-- Name: leases leases_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.leases
    ADD CONSTRAINT leases_pkey PRIMARY KEY (name);


--
-- Name: mapping_versions mapping_versions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mapping_versions
    ADD CONSTRAINT mapping_versions_pkey PRIMARY KEY (connection_id, kind, version);


--
-- Name: oauth_apps oauth_apps_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.oauth_apps
    ADD CONSTRAINT oauth_apps_pkey PRIMARY KEY (platform);


--
-- Name: oauth_states oauth_states_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.oauth_states
    ADD CONSTRAINT oauth_states_pkey PRIMARY KEY (state_hash);


--
-- Name: organizations organizations_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.organizations
    ADD CONSTRAINT organizations_pkey PRIMARY KEY (id);


--
-- Name: previews previews_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.previews
    ADD CONSTRAINT previews_pkey PRIMARY KEY (id);


--
-- Name: rate_counts rate_counts_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rate_counts
    ADD CONSTRAINT rate_counts_pkey PRIMARY KEY (bucket, period);


--
-- Name: rate_windows rate_windows_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.rate_windows
    ADD CONSTRAINT rate_windows_pkey PRIMARY KEY (bucket);


--
-- Name: records records_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.records
    ADD CONSTRAINT records_pkey PRIMARY KEY (connection_id, kind, record_id);


--
-- Name: settings_sessions settings_sessions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.settings_sessions
    ADD CONSTRAINT settings_sessions_pkey PRIMARY KEY (id);


--
-- Name: suppressions suppressions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.suppressions
    ADD CONSTRAINT suppressions_pkey PRIMARY KEY (hash);


--
-- Name: transactions transactions_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.transactions
    ADD CONSTRAINT transactions_pkey PRIMARY KEY (id);


--
-- Name: users users_org_id_email_key; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_org_id_email_key UNIQUE (org_id, email);


--
-- Name: users users_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_pkey PRIMARY KEY (id);


--
-- Name: webhook_replays webhook_replays_pkey; Type: CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_replays
    ADD CONSTRAINT webhook_replays_pkey PRIMARY KEY (connection_id, webhook_id);


--
-- Name: api_key_hashes_key; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX api_key_hashes_key ON public.api_key_hashes USING btree (key_id);


--
-- Name: api_keys_user; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX api_keys_user ON public.api_keys USING btree (user_id);


--
-- Name: audit_log_org; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX audit_log_org ON public.audit_log USING btree (org_id, id);


--
-- Name: backfills_connection; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX backfills_connection ON public.backfills USING btree (connection_id, kind, state);


--
-- Name: companies_domain; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX companies_domain ON public.companies USING btree (domain);


--
-- Name: companies_name_key; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX companies_name_key ON public.companies USING btree (name_key);


--
-- Name: companies_profile_url; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX companies_profile_url ON public.companies USING btree (profile_url);


--
-- Name: company_aliases_company; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX company_aliases_company ON public.company_aliases USING btree (company_guid);


--
-- Name: company_name_forms_company; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX company_name_forms_company ON public.company_name_forms USING btree (company_guid);


--
-- Name: connections_account; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX connections_account ON public.connections USING btree (platform, crm_account_id) WHERE (crm_account_id <> ''::text);


--
-- Name: contacts_last_first; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX contacts_last_first ON public.contacts USING btree (last_key, first_key);


--
-- Name: contacts_profile_url; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX contacts_profile_url ON public.contacts USING btree (profile_url);


--
-- Name: credit_ledger_org; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX credit_ledger_org ON public.credit_ledger USING btree (org_id, id);


--
-- Name: employments_company_first; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX employments_company_first ON public.employments USING btree (company_guid, first_key);


--
-- Name: employments_company_last; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX employments_company_last ON public.employments USING btree (company_guid, last_key, first_key);


--
-- Name: employments_discover; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX employments_discover ON public.employments USING btree (company_guid, grade, latitude, longitude, level_rank, last_key, first_key, contact_guid, level_bits, function_bits, title_key, place_key) WHERE (status = 'Active'::text);


--
-- Name: employments_email; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX employments_email ON public.employments USING btree (email) WHERE (email <> ''::text);


--
-- Name: events_due; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX events_due ON public.events USING btree (status, priority, due_at);


--
-- Name: events_health; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX events_health ON public.events USING btree (connection_id, status, due_at);


--
-- Name: idempotency_keys_claimed; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX idempotency_keys_claimed ON public.idempotency_keys USING btree (claimed_at);


--
-- Name: ix_apscheduler_jobs_next_run_time; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX ix_apscheduler_jobs_next_run_time ON public.apscheduler_jobs USING btree (next_run_time);


--
-- Name: job_runs_job; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX job_runs_job ON public.job_runs USING btree (job_id, id);


--
-- Name: organizations_name; Type: INDEX; Schema: public; Owner: -
--

CREATE UNIQUE INDEX organizations_name ON public.organizations USING btree (name);


--
-- Name: previews_connection; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX previews_connection ON public.previews USING btree (connection_id, created_at);


--
-- Name: rate_events_bucket; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX rate_events_bucket ON public.rate_events USING btree (bucket, at);


--
-- Name: transactions_org_contact; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX transactions_org_contact ON public.transactions USING btree (org_id, contact_guid);


--
-- Name: transactions_org_time; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX transactions_org_time ON public.transactions USING btree (org_id, created_at);


--
-- Name: webhook_replays_received; Type: INDEX; Schema: public; Owner: -
--

CREATE INDEX webhook_replays_received ON public.webhook_replays USING btree (received_at);


--
-- Name: api_key_hashes api_key_hashes_key_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_key_hashes
    ADD CONSTRAINT api_key_hashes_key_id_fkey FOREIGN KEY (key_id) REFERENCES public.api_keys(id) ON DELETE CASCADE;


--
-- Name: api_keys api_keys_org_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id);


--
-- Name: api_keys api_keys_user_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_user_id_fkey FOREIGN KEY (user_id) REFERENCES public.users(id);


--
-- Name: backfills backfills_connection_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.backfills
    ADD CONSTRAINT backfills_connection_id_fkey FOREIGN KEY (connection_id) REFERENCES public.connections(id) ON DELETE CASCADE;


--
-- Name: company_aliases company_aliases_company_guid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.company_aliases
    ADD CONSTRAINT company_aliases_company_guid_fkey FOREIGN KEY (company_guid) REFERENCES public.companies(guid) ON DELETE CASCADE;


--
-- Name: connections connections_org_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.connections
    ADD CONSTRAINT connections_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id);


--
-- Name: credit_ledger credit_ledger_org_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.credit_ledger
    ADD CONSTRAINT credit_ledger_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id);


--
-- Name: employments employments_company_guid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.employments
    ADD CONSTRAINT employments_company_guid_fkey FOREIGN KEY (company_guid) REFERENCES public.companies(guid);


--
-- Name: employments employments_contact_guid_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.employments
    ADD CONSTRAINT employments_contact_guid_fkey FOREIGN KEY (contact_guid) REFERENCES public.contacts(guid) ON DELETE CASCADE;


--
-- Name: events events_connection_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.events
    ADD CONSTRAINT events_connection_id_fkey FOREIGN KEY (connection_id) REFERENCES public.connections(id) ON DELETE CASCADE;


--
-- Name: idempotency_keys idempotency_keys_org_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.idempotency_keys
    ADD CONSTRAINT idempotency_keys_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id);


--
-- Name: mapping_versions mapping_versions_connection_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.mapping_versions
    ADD CONSTRAINT mapping_versions_connection_id_fkey FOREIGN KEY (connection_id) REFERENCES public.connections(id) ON DELETE CASCADE;


--
-- Name: previews previews_connection_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.previews
    ADD CONSTRAINT previews_connection_id_fkey FOREIGN KEY (connection_id) REFERENCES public.connections(id) ON DELETE CASCADE;


--
-- Name: records records_connection_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.records
    ADD CONSTRAINT records_connection_id_fkey FOREIGN KEY (connection_id) REFERENCES public.connections(id) ON DELETE CASCADE;


--
-- Name: transactions transactions_key_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.transactions
    ADD CONSTRAINT transactions_key_id_fkey FOREIGN KEY (key_id) REFERENCES public.api_keys(id);


--
-- Name: transactions transactions_org_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.transactions
    ADD CONSTRAINT transactions_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id);


--
-- Name: users users_org_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.users
    ADD CONSTRAINT users_org_id_fkey FOREIGN KEY (org_id) REFERENCES public.organizations(id);


--
-- Name: webhook_replays webhook_replays_connection_id_fkey; Type: FK CONSTRAINT; Schema: public; Owner: -
--

ALTER TABLE ONLY public.webhook_replays
    ADD CONSTRAINT webhook_replays_connection_id_fkey FOREIGN KEY (connection_id) REFERENCES public.connections(id) ON DELETE CASCADE;


--
-- PostgreSQL database dump complete
--

--
-- PostgreSQL database dump
--


-- Dumped from database version 15.18 (Debian 15.18-0+deb12u1)
-- Dumped by pg_dump version 15.18 (Debian 15.18-0+deb12u1)

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;

--
-- Data for Name: _migrations; Type: TABLE DATA; Schema: public; Owner: -
--

INSERT INTO public._migrations VALUES ('contactdata', 'p001_schema', '2026-11-28 21:38:57.224732+00');
INSERT INTO public._migrations VALUES ('contactdata', 'p002_transactions_in_insertion_order', '2026-11-28 21:38:57.224732+00');
INSERT INTO public._migrations VALUES ('contactdata', 'p003_rate_limits', '2026-11-28 21:38:57.224732+00');
INSERT INTO public._migrations VALUES ('contactdata', 'p004_suppressions', '2026-11-28 21:38:57.224732+00');
INSERT INTO public._migrations VALUES ('contactdata', 'p005_company_name_forms', '2026-11-28 21:38:57.224732+00');
INSERT INTO public._migrations VALUES ('contactdata', 'p006_idempotency_keys', '2026-11-28 21:38:57.224732+00');
INSERT INTO public._migrations VALUES ('contactdata', 'p007_bigint_credits_limits_and_counts', '2026-11-28 21:38:57.224732+00');
INSERT INTO public._migrations VALUES ('connector', 'c001_schema', '2026-11-28 21:38:57.306185+00');
INSERT INTO public._migrations VALUES ('connector', 'c002_idempotency_keys', '2026-11-28 21:38:57.306185+00');
INSERT INTO public._migrations VALUES ('connector', 'c003_hubspot_app_v3', '2026-11-28 21:38:57.306185+00');
INSERT INTO public._migrations VALUES ('connector', 'c004_bigint_counts_and_caps', '2026-11-28 21:38:57.306185+00');
INSERT INTO public._migrations VALUES ('connector', 'c005_throttled_connections', '2026-11-28 21:38:57.306185+00');
INSERT INTO public._migrations VALUES ('connector', 'c006_one_connection_per_account', '2026-11-28 21:38:57.306185+00');


--
-- PostgreSQL database dump complete
--
