-- Ironclad pipeline core: tenants, keys, cases, intake, sources, jobs, outbox, decisions, audit.
--
-- Migrations are forward-only: an applied migration is never edited; a change is a new file.
-- Statuses are TEXT with CHECK constraints spelled exactly as ironclad-core's `as_str`
-- (a store test proves the lists agree). Constraints live here, not only in Rust.

CREATE TABLE tenants (
    id          uuid PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
    id          uuid PRIMARY KEY,
    tenant_id   uuid NOT NULL REFERENCES tenants(id),
    -- sha256 of the raw key; the raw key is shown once and never stored.
    key_hash    text NOT NULL UNIQUE,
    prefix      text NOT NULL,
    role        text NOT NULL CHECK (role IN ('operator', 'reviewer', 'admin')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

CREATE TABLE cases (
    id                  uuid PRIMARY KEY,
    tenant_id           uuid NOT NULL REFERENCES tenants(id),
    external_reference  text,
    workflow            text,
    status              text NOT NULL
        CHECK (status IN ('INGESTED', 'PROCESSING', 'AWAITING_REVIEW', 'RESOLVED', 'FAILED')),
    status_reason       text,
    generation          integer NOT NULL DEFAULT 1 CHECK (generation >= 1),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    CHECK (status <> 'FAILED' OR status_reason IS NOT NULL)
);
-- Keyset pagination of a tenant's cases, newest first.
CREATE INDEX cases_tenant_listing ON cases (tenant_id, created_at DESC, id DESC);
CREATE INDEX cases_open_by_age ON cases (updated_at) WHERE status IN ('INGESTED', 'PROCESSING');

CREATE TABLE intake_submissions (
    id               uuid PRIMARY KEY,
    tenant_id        uuid NOT NULL REFERENCES tenants(id),
    idempotency_key  text,
    -- sha256 over the request's meaningful content (file digests, names, fields).
    fingerprint      text NOT NULL,
    case_id          uuid NOT NULL REFERENCES cases(id),
    response         jsonb NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (tenant_id, idempotency_key)
);

CREATE TABLE sources (
    id          uuid PRIMARY KEY,
    case_id     uuid NOT NULL REFERENCES cases(id),
    filename    text NOT NULL,
    sha256      text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    media_type  text NOT NULL CHECK (media_type IN ('application/pdf', 'image/png', 'image/jpeg', 'image/tiff')),
    size_bytes  bigint NOT NULL CHECK (size_bytes > 0),
    pages       integer NOT NULL CHECK (pages >= 1),
    blob_key    text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (case_id, sha256)
);
CREATE INDEX sources_blob_key ON sources (blob_key);

CREATE TABLE jobs (
    id                uuid PRIMARY KEY,
    case_id           uuid NOT NULL REFERENCES cases(id),
    source_id         uuid REFERENCES sources(id),
    kind              text NOT NULL CHECK (kind IN ('process_source', 'finalize_case')),
    status            text NOT NULL CHECK (status IN ('PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED')),
    generation        integer NOT NULL CHECK (generation >= 1),
    attempt           integer NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts      integer NOT NULL CHECK (max_attempts >= 1),
    next_attempt_at   timestamptz NOT NULL DEFAULT now(),
    lease_owner       text,
    lease_token       uuid,
    lease_expires_at  timestamptz,
    last_error        text,
    dead_lettered_at  timestamptz,
    result            jsonb,
    created_at        timestamptz NOT NULL DEFAULT now(),
    started_at        timestamptz,
    finished_at       timestamptz,
    updated_at        timestamptz NOT NULL DEFAULT now(),
    -- A running job always says who holds it and until when.
    CHECK (status <> 'RUNNING' OR (lease_owner IS NOT NULL AND lease_token IS NOT NULL AND lease_expires_at IS NOT NULL)),
    -- Terminal exactly when finished.
    CHECK ((status IN ('SUCCEEDED', 'FAILED', 'CANCELLED')) = (finished_at IS NOT NULL)),
    CHECK (status <> 'FAILED' OR last_error IS NOT NULL),
    CHECK ((kind = 'process_source') = (source_id IS NOT NULL))
);
CREATE INDEX jobs_by_case ON jobs (case_id, generation);
CREATE INDEX jobs_due ON jobs (next_attempt_at) WHERE status = 'PENDING';
CREATE INDEX jobs_leases ON jobs (lease_expires_at) WHERE status = 'RUNNING';
-- One finalize job per case generation, however many source jobs race to enqueue it.
CREATE UNIQUE INDEX jobs_one_finalize_per_generation ON jobs (case_id, generation) WHERE kind = 'finalize_case';

CREATE TABLE outbox (
    id               uuid PRIMARY KEY,
    idempotency_key  text NOT NULL UNIQUE,
    job_id           uuid REFERENCES jobs(id),
    payload          text NOT NULL,
    status           text NOT NULL CHECK (status IN ('PENDING', 'PUBLISHING', 'PUBLISHED', 'DEAD')),
    available_at     timestamptz NOT NULL DEFAULT now(),
    lock_token       uuid,
    locked_at        timestamptz,
    attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    published_at     timestamptz,
    CHECK (status <> 'PUBLISHING' OR (lock_token IS NOT NULL AND locked_at IS NOT NULL)),
    CHECK ((status = 'PUBLISHED') = (published_at IS NOT NULL))
);
CREATE INDEX outbox_due ON outbox (available_at) WHERE status = 'PENDING';
CREATE INDEX outbox_publishing ON outbox (locked_at) WHERE status = 'PUBLISHING';
CREATE INDEX outbox_published ON outbox (published_at) WHERE status = 'PUBLISHED';
CREATE INDEX outbox_dead ON outbox (created_at) WHERE status = 'DEAD';
CREATE INDEX outbox_by_job ON outbox (job_id);

CREATE TABLE decisions (
    id               uuid PRIMARY KEY,
    case_id          uuid NOT NULL REFERENCES cases(id),
    generation       integer NOT NULL,
    version          integer NOT NULL CHECK (version >= 1),
    status           text NOT NULL CHECK (status IN ('READY', 'BLOCKED', 'REVIEW_REQUIRED')),
    summary          text NOT NULL,
    ruleset_id       uuid,
    ruleset_version  integer,
    evidence         jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (case_id, version),
    -- The pipeline writes exactly one decision per generation.
    UNIQUE (case_id, generation)
);

CREATE TABLE audit_events (
    id          bigserial PRIMARY KEY,
    case_id     uuid REFERENCES cases(id),
    tenant_id   uuid REFERENCES tenants(id),
    actor       text NOT NULL,
    event_type  text NOT NULL,
    data        jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX audit_events_by_case ON audit_events (case_id, id);

-- The case history is append-only: the database itself refuses to rewrite it.
CREATE FUNCTION audit_events_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_events is append-only (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER audit_events_append_only
    BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_refuse_change();
CREATE TRIGGER audit_events_no_truncate
    BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_refuse_change();
