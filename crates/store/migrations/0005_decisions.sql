-- Decisions people can trust: versioned rulesets, rule results, a frozen snapshot per decision,
-- human review, reprocess and reevaluation, notifications and their webhook deliveries.
-- Forward-only (see 0001).

-- Rules managed per tenant and workflow. At most one ACTIVE per (tenant, workflow); activating
-- retires the previous one in the same transaction.
CREATE TABLE rulesets (
    id                  uuid PRIMARY KEY,
    tenant_id           uuid NOT NULL REFERENCES tenants(id),
    workflow            text NOT NULL CHECK (workflow ~ '^[A-Za-z0-9_.-]{1,100}$'),
    version             integer NOT NULL CHECK (version >= 1),
    status              text NOT NULL CHECK (status IN ('DRAFT', 'ACTIVE', 'RETIRED')),
    -- {rules: [...], policy: {...}} as written (validated by ironclad-core before activation).
    spec                jsonb NOT NULL,
    sha256              text NOT NULL,
    created_by          text NOT NULL,
    created_at          timestamptz NOT NULL DEFAULT now(),
    activated_by        text,
    activated_at        timestamptz,
    activation_comment  text,
    retired_at          timestamptz,
    UNIQUE (tenant_id, workflow, version),
    CHECK (status = 'DRAFT' OR (activated_at IS NOT NULL AND activated_by IS NOT NULL)),
    CHECK ((status = 'RETIRED') = (retired_at IS NOT NULL))
);
CREATE UNIQUE INDEX rulesets_one_active ON rulesets (tenant_id, workflow) WHERE status = 'ACTIVE';

-- A decision is written by finalize (exactly once per generation) or by a reevaluation (a new
-- version of the same generation, under the active rules, without re-reading documents).
ALTER TABLE decisions DROP CONSTRAINT decisions_case_id_generation_key;
ALTER TABLE decisions
    ADD COLUMN origin text NOT NULL DEFAULT 'finalize' CHECK (origin IN ('finalize', 'reevaluate')),
    ADD COLUMN decided_by text NOT NULL DEFAULT 'system:finalize',
    -- 'workflow' (rules written in the workflow file) or 'ruleset' (a managed ruleset).
    ADD COLUMN rules_source text NOT NULL DEFAULT 'workflow' CHECK (rules_source IN ('workflow', 'ruleset')),
    ADD COLUMN workflow_id uuid REFERENCES workflows(id);
CREATE UNIQUE INDEX decisions_one_finalize_per_generation
    ON decisions (case_id, generation) WHERE origin = 'finalize';
ALTER TABLE decisions ADD FOREIGN KEY (ruleset_id) REFERENCES rulesets(id);
-- `evidence` now holds the decision's frozen snapshot: the documents, facts and evidence the
-- rules saw, so a report of this version never mixes in later data.

CREATE TABLE rule_results (
    decision_id  uuid NOT NULL REFERENCES decisions(id),
    ordinal      integer NOT NULL CHECK (ordinal >= 0),
    rule_id      text NOT NULL,
    template     text NOT NULL CHECK (template IN ('REQUIRED_DOCUMENT', 'FIELD_REQUIRED', 'EXACT_MATCH',
                     'NUMERIC_TOLERANCE', 'DATE_WINDOW', 'AUTHORITY_PRECEDENCE', 'SAFEGUARD')),
    outcome      text NOT NULL CHECK (outcome IN ('PASS', 'FAIL', 'REVIEW_REQUIRED', 'NOT_APPLICABLE')),
    on_fail      text CHECK (on_fail IN ('BLOCKED', 'REVIEW_REQUIRED')),
    message      text NOT NULL,
    "values"     jsonb NOT NULL DEFAULT '[]'::jsonb,
    PRIMARY KEY (decision_id, ordinal),
    UNIQUE (decision_id, rule_id)
);

-- How a case was resolved (RESOLVED cases only).
ALTER TABLE cases
    ADD COLUMN resolution text CHECK (resolution IN ('APPROVED', 'REJECTED', 'OVERRIDDEN')),
    ADD COLUMN resolved_by text,
    ADD COLUMN resolved_at timestamptz,
    ADD CONSTRAINT cases_resolved_has_resolution
        CHECK ((status = 'RESOLVED') = (resolution IS NOT NULL AND resolved_at IS NOT NULL));

-- One review per decision awaiting a person; at most one PENDING per case.
CREATE TABLE reviews (
    id                uuid PRIMARY KEY,
    tenant_id         uuid NOT NULL REFERENCES tenants(id),
    case_id           uuid NOT NULL REFERENCES cases(id),
    decision_id       uuid NOT NULL REFERENCES decisions(id) UNIQUE,
    decision_version  integer NOT NULL,
    decision_status   text NOT NULL CHECK (decision_status IN ('READY', 'BLOCKED', 'REVIEW_REQUIRED')),
    status            text NOT NULL CHECK (status IN ('PENDING', 'RESOLVED', 'CANCELLED')),
    resolution        text CHECK (resolution IN ('APPROVED', 'REJECTED', 'OVERRIDDEN')),
    actor             text,
    actor_role        text,
    comment           text CHECK (length(comment) <= 4000),
    created_at        timestamptz NOT NULL DEFAULT now(),
    resolved_at       timestamptz,
    CHECK ((status = 'RESOLVED') = (resolution IS NOT NULL AND actor IS NOT NULL AND resolved_at IS NOT NULL)),
    CHECK (resolution IS DISTINCT FROM 'OVERRIDDEN' OR length(trim(comment)) > 0)
);
CREATE UNIQUE INDEX reviews_one_pending_per_case ON reviews (case_id) WHERE status = 'PENDING';
CREATE INDEX reviews_pending_by_age ON reviews (tenant_id, created_at) WHERE status = 'PENDING';
CREATE INDEX reviews_resolved_recent ON reviews (resolved_at) WHERE status = 'RESOLVED';

-- Replay protection for case actions (review, reprocess, reevaluate): the first answer is
-- stored with a fingerprint of the request; a replay gets it back, another payload gets 409.
CREATE TABLE action_requests (
    tenant_id        uuid NOT NULL REFERENCES tenants(id),
    action           text NOT NULL,
    idempotency_key  text NOT NULL CHECK (length(idempotency_key) BETWEEN 1 AND 255),
    fingerprint      text NOT NULL,
    http_status      integer NOT NULL,
    response         jsonb NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, action, idempotency_key)
);

-- The operator's inbox; one row per dedup key per tenant, however often the cause repeats.
CREATE TABLE notifications (
    id          uuid PRIMARY KEY,
    tenant_id   uuid NOT NULL REFERENCES tenants(id),
    case_id     uuid REFERENCES cases(id),
    type        text NOT NULL CHECK (type IN ('DOSSIER_READY', 'DOSSIER_REVIEW_REQUIRED', 'DOSSIER_BLOCKED',
                    'PROCESSING_FAILED', 'DOSSIER_RESOLVED', 'RULESET_ACTIVATED')),
    dedup_key   text NOT NULL,
    data        jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    read_at     timestamptz,
    UNIQUE (tenant_id, dedup_key)
);
CREATE INDEX notifications_by_tenant ON notifications (tenant_id, created_at DESC, id DESC);

CREATE TABLE webhook_endpoints (
    id           uuid PRIMARY KEY,
    tenant_id    uuid NOT NULL REFERENCES tenants(id),
    url          text NOT NULL CHECK (url ~ '^https?://' AND length(url) <= 2000),
    -- The signing secret; shown to the admin once at creation, never again.
    secret       text NOT NULL,
    created_by   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    disabled_at  timestamptz
);
CREATE INDEX webhook_endpoints_by_tenant ON webhook_endpoints (tenant_id) WHERE disabled_at IS NULL;

-- The delivery outbox: one row per (notification, endpoint), written in the notification's
-- transaction; its id is the stable Ironclad-Delivery-Id of every attempt.
CREATE TABLE webhook_deliveries (
    id               uuid PRIMARY KEY,
    tenant_id        uuid NOT NULL REFERENCES tenants(id),
    notification_id  uuid NOT NULL REFERENCES notifications(id),
    endpoint_id      uuid NOT NULL REFERENCES webhook_endpoints(id),
    status           text NOT NULL CHECK (status IN ('PENDING', 'DELIVERING', 'DELIVERED', 'DEAD')),
    attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    max_attempts     integer NOT NULL CHECK (max_attempts >= 1),
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    lock_token       uuid,
    locked_until     timestamptz,
    last_error       text,
    created_at       timestamptz NOT NULL DEFAULT now(),
    delivered_at     timestamptz,
    UNIQUE (notification_id, endpoint_id),
    CHECK (status <> 'DELIVERING' OR (lock_token IS NOT NULL AND locked_until IS NOT NULL)),
    CHECK ((status = 'DELIVERED') = (delivered_at IS NOT NULL))
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'PENDING';
CREATE INDEX webhook_deliveries_locked ON webhook_deliveries (locked_until) WHERE status = 'DELIVERING';

-- Every attempt, kept: what the receiver answered, or why nothing came back.
CREATE TABLE webhook_attempts (
    id           bigserial PRIMARY KEY,
    delivery_id  uuid NOT NULL REFERENCES webhook_deliveries(id),
    attempt      integer NOT NULL CHECK (attempt >= 1),
    started_at   timestamptz NOT NULL,
    finished_at  timestamptz NOT NULL,
    http_status  integer,
    error        text,
    UNIQUE (delivery_id, attempt)
);

-- A run whose job a reprocess cancelled ends CANCELLED (its late result is ignored).
ALTER TABLE job_runs DROP CONSTRAINT job_runs_outcome_check;
ALTER TABLE job_runs ADD CONSTRAINT job_runs_outcome_check
    CHECK (outcome IN ('SUCCEEDED', 'RETRY_SCHEDULED', 'FAILED', 'LOST', 'CANCELLED'));

-- Cases decided before reviews existed wait for a person too: each gets the PENDING review of
-- its latest decision, so it shows in the queue and can be resolved.
INSERT INTO reviews (id, tenant_id, case_id, decision_id, decision_version, decision_status, status)
SELECT gen_random_uuid(), c.tenant_id, c.id, d.id, d.version, d.status, 'PENDING'
FROM cases c
JOIN LATERAL (SELECT id, version, status FROM decisions
              WHERE case_id = c.id ORDER BY version DESC LIMIT 1) d ON true
WHERE c.status = 'AWAITING_REVIEW';
