-- A desk several people work at (issue 25): corrections of what was read, four eyes on
-- chosen actions, claimed reviews and a review SLA. Forward-only (see 0001).

-- ── Facts are versioned, never edited ──────────────────────────────────────────────────────
-- A correction supersedes a field's current fact and writes the next version; the old one
-- stays, with its value and evidence, for the record. The current version of a field is the
-- one with superseded_at NULL (at most one per segment and field).
ALTER TABLE facts
    ADD COLUMN version integer NOT NULL DEFAULT 1 CHECK (version >= 1),
    ADD COLUMN superseded_at timestamptz,
    ADD COLUMN correction_id uuid;
ALTER TABLE facts DROP CONSTRAINT facts_segment_id_field_key;
CREATE UNIQUE INDEX facts_current ON facts (segment_id, field) WHERE superseded_at IS NULL;
ALTER TABLE facts ADD CONSTRAINT facts_version_key UNIQUE (segment_id, field, version);

-- The only change a fact row ever takes is being superseded, once.
CREATE FUNCTION facts_never_edited() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.superseded_at IS NOT NULL
       OR NEW.superseded_at IS NULL
       OR (NEW.id, NEW.segment_id, NEW.case_id, NEW.field, NEW.value, NEW.raw_text, NEW.page,
           NEW.bbox, NEW.confidence, NEW.conflict, NEW.missing, NEW.candidates, NEW.version,
           NEW.correction_id)
          IS DISTINCT FROM
          (OLD.id, OLD.segment_id, OLD.case_id, OLD.field, OLD.value, OLD.raw_text, OLD.page,
           OLD.bbox, OLD.confidence, OLD.conflict, OLD.missing, OLD.candidates, OLD.version,
           OLD.correction_id)
    THEN
        RAISE EXCEPTION 'a fact is never edited: a correction writes its next version'
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER facts_versioned BEFORE UPDATE ON facts
    FOR EACH ROW EXECUTE FUNCTION facts_never_edited();

-- ── Corrections ─────────────────────────────────────────────────────────────────────────────
-- One reviewer's fix of one field of one document: who, when, why, the old value with its
-- evidence and the new one with its box (or as typed). APPLIED when its fact version and
-- decision are written; under four eyes it first waits (AWAITING_SECOND) and is then applied
-- or DECLINED by another reviewer, or CANCELLED when a reprocess reads the case again first.
CREATE TABLE corrections (
    id                 uuid PRIMARY KEY,
    tenant_id          uuid NOT NULL REFERENCES tenants(id),
    case_id            uuid NOT NULL REFERENCES cases(id),
    generation         integer NOT NULL,
    segment_id         uuid NOT NULL REFERENCES segments(id),
    field              text NOT NULL,
    -- {value, raw_text, page, bbox, confidence, version} of the version replaced ({} when the
    -- document had no fact for the field), and of the one written ({value, raw_text, page,
    -- bbox} as typed or as the box read).
    old                jsonb NOT NULL,
    new                jsonb NOT NULL,
    method             text NOT NULL CHECK (method IN ('typed', 'box')),
    reason             text NOT NULL CHECK (length(btrim(reason)) BETWEEN 1 AND 4000),
    actor              text NOT NULL,
    actor_name         text NOT NULL,
    actor_role         text NOT NULL,
    -- The decision version the reviewer looked at.
    expected_decision_version integer NOT NULL,
    status             text NOT NULL CHECK (status IN ('APPLIED', 'AWAITING_SECOND', 'DECLINED', 'CANCELLED')),
    old_fact_id        uuid REFERENCES facts(id),
    new_fact_id        uuid REFERENCES facts(id),
    -- The decision the correction made (APPLIED).
    decision_version   integer,
    -- The second reviewer (four eyes).
    second_actor       text,
    second_actor_name  text,
    second_comment     text CHECK (length(second_comment) <= 4000),
    second_at          timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    CHECK ((status = 'APPLIED') = (new_fact_id IS NOT NULL AND decision_version IS NOT NULL)),
    CHECK ((second_actor IS NULL) = (second_at IS NULL))
);
CREATE INDEX corrections_by_case ON corrections (case_id, created_at);
-- Deferred: a correction and the fact version it writes name each other, written in one
-- transaction.
ALTER TABLE facts ADD CONSTRAINT facts_correction_fkey FOREIGN KEY (correction_id)
    REFERENCES corrections(id) DEFERRABLE INITIALLY DEFERRED;

-- A decision is also written by a correction: version N+1 of the same generation, under the
-- rules of version N.
ALTER TABLE decisions DROP CONSTRAINT decisions_origin_check;
ALTER TABLE decisions ADD CONSTRAINT decisions_origin_check
    CHECK (origin IN ('finalize', 'reevaluate', 'correction'));

-- ── Reviews: four eyes and the SLA ──────────────────────────────────────────────────────────
-- AWAITING_SECOND: an action the policy's four_eyes names (a resolution, or a correction)
-- waits for another reviewer. A case has at most one open (PENDING or AWAITING_SECOND) review.
ALTER TABLE reviews DROP CONSTRAINT reviews_status_check;
ALTER TABLE reviews ADD CONSTRAINT reviews_status_check
    CHECK (status IN ('PENDING', 'AWAITING_SECOND', 'RESOLVED', 'CANCELLED'));
DROP INDEX reviews_one_pending_per_case;
CREATE UNIQUE INDEX reviews_one_open_per_case ON reviews (case_id)
    WHERE status IN ('PENDING', 'AWAITING_SECOND');
DROP INDEX reviews_pending_by_age;
CREATE INDEX reviews_open_by_age ON reviews (tenant_id, created_at)
    WHERE status IN ('PENDING', 'AWAITING_SECOND');
ALTER TABLE reviews
    -- When the review is overdue: its opening plus the policy's review_sla (NULL: no SLA).
    ADD COLUMN due_at timestamptz,
    -- What waits for a second reviewer: a resolution (with its action and comment) or a
    -- correction, who proposed it and when.
    ADD COLUMN proposed_action text CHECK (proposed_action IN ('APPROVE', 'OVERRIDE', 'REJECT')),
    ADD COLUMN proposed_resolution text CHECK (proposed_resolution IN ('APPROVED', 'REJECTED', 'OVERRIDDEN')),
    ADD COLUMN proposed_comment text CHECK (length(proposed_comment) <= 4000),
    ADD COLUMN correction_id uuid REFERENCES corrections(id),
    ADD COLUMN proposed_by text,
    ADD COLUMN proposed_by_name text,
    ADD COLUMN proposed_role text,
    ADD COLUMN proposed_at timestamptz,
    -- Who confirmed a resolution someone else proposed.
    ADD COLUMN confirmed_by text,
    ADD COLUMN confirmed_at timestamptz,
    ADD CONSTRAINT reviews_second_waits_for_something CHECK (
        status <> 'AWAITING_SECOND'
        OR (proposed_by IS NOT NULL AND proposed_at IS NOT NULL
            AND (proposed_resolution IS NOT NULL) <> (correction_id IS NOT NULL))
    );
CREATE INDEX reviews_open_due ON reviews (due_at)
    WHERE status IN ('PENDING', 'AWAITING_SECOND') AND due_at IS NOT NULL;

-- ── Claims ──────────────────────────────────────────────────────────────────────────────────
-- Who is working on a case's review: theirs until expires_at (renewed while their page is
-- open); others read but do not act unless they take it over with a reason. An expired claim
-- is as good as none. Cleared when the case is resolved.
CREATE TABLE review_claims (
    case_id      uuid PRIMARY KEY REFERENCES cases(id),
    tenant_id    uuid NOT NULL REFERENCES tenants(id),
    holder       text NOT NULL,
    holder_name  text NOT NULL,
    claimed_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    CHECK (expires_at > claimed_at)
);
CREATE INDEX review_claims_by_holder ON review_claims (tenant_id, holder);
