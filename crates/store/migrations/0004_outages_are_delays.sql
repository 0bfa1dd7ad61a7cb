-- Outages are delays, not losses: lease lapse that survives a PostgreSQL restart, a retry
-- budget per requeue, stable failure codes, the stream entry each published row became, and
-- one row per run of a job. Forward-only (see 0001).

-- How long the holder's lease lasts without renewal. With the server's start time it tells a
-- lapsed lease (its worker is gone) from one that only ran out while PostgreSQL itself was
-- down and nobody could renew anything.
ALTER TABLE jobs ADD COLUMN lease_duration interval;

-- Attempts made before the current retry budget began: 0 for a new job, the attempt count at
-- the time of an operator's requeue otherwise. The retry backoff restarts with each budget.
ALTER TABLE jobs ADD COLUMN budget_start integer NOT NULL DEFAULT 0 CHECK (budget_start >= 0);

-- Stable reason of a failure, spelled as ironclad-core's FailureCode (a store test proves the
-- lists agree). last_error keeps the operator's detail; tenants see only the code.
ALTER TABLE jobs ADD COLUMN error_code text CHECK (error_code IN (
    'document_unreadable', 'attempts_exhausted', 'worker_lost', 'dead_lettered',
    'result_rejected', 'processor_crashed', 'internal_error'));
ALTER TABLE cases ADD COLUMN failure_code text CHECK (failure_code IN (
    'document_unreadable', 'attempts_exhausted', 'worker_lost', 'dead_lettered',
    'result_rejected', 'processor_crashed', 'internal_error'));

-- The stream entry a published row became: the reconciler asks Redis whether that entry still
-- waits in the stream (or in a consumer's pending list) before announcing the job again.
ALTER TABLE outbox ADD COLUMN stream_id text;

-- A lease has lapsed — its holder is presumed gone — once it expired AND the server has been
-- up for a whole lease period: after a restart, a live worker gets one full lease to renew
-- before anyone takes its job. (An expiry that happened while the server was down says
-- nothing about the worker.) Every statement that takes or fails a RUNNING job asks this.
CREATE FUNCTION lease_lapsed(expires timestamptz, lease interval) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT expires < now()
       AND pg_postmaster_start_time() + coalesce(lease, interval '0') < now()
$$;

-- One row per run of a job: inserted by the claim, closed by the run's outcome (or marked LOST
-- when another run takes over). Answers "how often did this job run, and did any job succeed
-- twice?" for `ironclad verify` and for operators.
CREATE TABLE job_runs (
    lease_token  uuid PRIMARY KEY,
    job_id       uuid NOT NULL REFERENCES jobs(id),
    attempt      integer NOT NULL CHECK (attempt >= 1),
    owner        text NOT NULL,
    message_id   text,
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    outcome      text CHECK (outcome IN ('SUCCEEDED', 'RETRY_SCHEDULED', 'FAILED', 'LOST')),
    CHECK ((outcome IS NULL) = (finished_at IS NULL))
);
CREATE INDEX job_runs_by_job ON job_runs (job_id, started_at);
CREATE INDEX job_runs_open ON job_runs (job_id) WHERE outcome IS NULL;
