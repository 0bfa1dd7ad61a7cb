-- The five pilot measurements, one row per minute, for the operations page's charts over the
-- last hours. Whichever reconciler samples a minute first writes it (the key makes the others'
-- inserts no-ops); rows older than a day are pruned by the same statement.
CREATE TABLE pilot_samples (
    minute               timestamptz PRIMARY KEY,
    -- Age of the oldest due intent to publish (outbox row) not yet on the stream.
    outbox_age_seconds   double precision NOT NULL CHECK (outbox_age_seconds >= 0),
    -- Jobs waiting for a retry: PENDING after at least one attempt of their budget.
    retry_waiting        bigint NOT NULL CHECK (retry_waiting >= 0),
    -- Idle time of the oldest message a worker holds unacknowledged; NULL when Redis did not
    -- answer the sampler.
    pending_age_seconds  double precision CHECK (pending_age_seconds >= 0),
    -- Failed jobs, dead outbox rows and dead webhook deliveries.
    terminal_failures    bigint NOT NULL CHECK (terminal_failures >= 0),
    -- How long the oldest pending review has waited.
    review_wait_seconds  double precision NOT NULL CHECK (review_wait_seconds >= 0)
);
