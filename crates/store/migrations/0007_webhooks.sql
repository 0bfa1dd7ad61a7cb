-- Webhooks delivered: what the endpoint list, the deliverer and the delivery log need beyond
-- the tables of 0005. Forward-only (see 0001).

ALTER TABLE webhook_endpoints
    ADD COLUMN description text CHECK (length(description) <= 500),
    ADD COLUMN disabled_by text,
    ADD CONSTRAINT webhook_endpoints_secret_shape CHECK (secret ~ '^whsec_[0-9a-f]{64}$');

ALTER TABLE webhook_deliveries
    -- When the current holder claimed it: the start of an attempt whose deliverer died before
    -- it could log it (the lock-expiry release logs it for them).
    ADD COLUMN locked_at timestamptz,
    -- Attempts made before the current budget began: 0, or the count at the last requeue. The
    -- backoff restarts with each budget, and attempt numbers stay unique for the log.
    ADD COLUMN budget_start integer NOT NULL DEFAULT 0,
    ADD COLUMN requeued_by text,
    ADD COLUMN requeued_at timestamptz,
    ADD CONSTRAINT webhook_deliveries_budget CHECK (budget_start >= 0 AND budget_start <= attempts),
    ADD CONSTRAINT webhook_deliveries_delivering_since
        CHECK (status <> 'DELIVERING' OR locked_at IS NOT NULL),
    -- Only a held row carries a lock: a released one can never be written by a late holder.
    ADD CONSTRAINT webhook_deliveries_lock_only_when_delivering
        CHECK (status = 'DELIVERING' OR (lock_token IS NULL AND locked_until IS NULL));

-- The delivery log of one endpoint, newest first (keyset pages).
CREATE INDEX webhook_deliveries_by_endpoint
    ON webhook_deliveries (endpoint_id, created_at DESC, id DESC);

-- DEAD deliveries wait for an admin; the scrape counts them without reading DELIVERED history.
CREATE INDEX webhook_deliveries_dead ON webhook_deliveries (created_at) WHERE status = 'DEAD';

-- The receiver's answer, capped (4 KiB), kept as evidence of what it said.
ALTER TABLE webhook_attempts
    ADD COLUMN response_excerpt text CHECK (octet_length(response_excerpt) <= 4096),
    ADD CONSTRAINT webhook_attempts_timed CHECK (finished_at >= started_at);
