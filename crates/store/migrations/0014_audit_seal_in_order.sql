-- A row is sealed only as its chain's next link, and one chain that cannot be sealed no longer
-- stops the others. Forward-only (see 0001).
--
-- Why: the append-only trigger of 0008 let any statement seal an unsealed row (fill its three
-- chain columns) with whatever it wrote. One row sealed out of order — at a position the
-- sealer would take next — made `audit_seal` hit the unique chain position on every round, and
-- since a round seals every tenant in one transaction, no tenant's events were sealed again.
--
-- Now:
-- - the trigger accepts a seal only at the head's next position (`chain_seq = last_seq + 1`),
--   after the head's hash, with the hash recomputed; it then moves the head itself, so a row
--   sealed by any statement it accepts keeps the chain and its head in step;
-- - `audit_seal` seals each chain in a subtransaction of its own: a chain it cannot seal (a
--   row planted with the triggers disabled) keeps its events unsealed and raises a WARNING,
--   and the other chains are sealed. The sealer reports the oldest unsealed event's age
--   (`ironclad_audit_oldest_unsealed_age_seconds`) and warns when it grows;
-- - a role's sealer skips a chain another sealer is sealing (`SKIP LOCKED`), so every role
--   can run a sealer without the sealers queueing on each other's heads; `ironclad audit
--   verify` seals patiently (waits for the head), so it walks what was committed before it.

CREATE OR REPLACE FUNCTION audit_events_refuse_change_but_sealing() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    k    uuid;
    seq  bigint;
    prev text;
BEGIN
    IF TG_OP = 'UPDATE'
       AND OLD.hash IS NULL AND NEW.hash IS NOT NULL
       AND (NEW.id, NEW.case_id, NEW.tenant_id, NEW.actor, NEW.event_type, NEW.data, NEW.created_at)
           IS NOT DISTINCT FROM
           (OLD.id, OLD.case_id, OLD.tenant_id, OLD.actor, OLD.event_type, OLD.data, OLD.created_at)
    THEN
        k := coalesce(NEW.tenant_id, '00000000-0000-0000-0000-000000000000'::uuid);
        SELECT last_seq, last_hash INTO seq, prev
        FROM audit_chain_heads WHERE tenant_key = k FOR UPDATE;
        IF FOUND
           AND NEW.chain_seq = seq + 1
           AND NEW.prev_hash = prev
           AND NEW.hash = audit_event_hash(NEW.prev_hash, NEW.chain_seq, k, NEW.case_id,
                                           NEW.actor, NEW.event_type, NEW.data, NEW.created_at)
        THEN
            UPDATE audit_chain_heads SET last_seq = NEW.chain_seq, last_hash = NEW.hash
            WHERE tenant_key = k;
            RETURN NEW;
        END IF;
        RAISE EXCEPTION 'audit event % can only be sealed as its chain''s next link (position %, after the head''s hash, with its own hash)',
            NEW.id, coalesce(seq, 0) + 1
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RAISE EXCEPTION 'audit_events is append-only (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;

-- Seals up to `batch` committed unsealed events per chain, oldest id first, and returns how
-- many it sealed. Each chain is sealed under its head's row lock in a subtransaction: unless
-- `patient`, a chain locked by another sealer is skipped this round; a chain that fails is
-- left as it was (WARNING in the server log) while the others are sealed. Runs in the
-- caller's transaction; the head locks are held until it ends, so call it in a transaction of
-- its own.
DROP FUNCTION audit_seal(integer);
CREATE FUNCTION audit_seal(batch integer, patient boolean) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    nil    constant uuid := '00000000-0000-0000-0000-000000000000';
    k      uuid;
    seq    bigint;
    prev   text;
    r      record;
    chain  integer;
    sealed integer := 0;
BEGIN
    FOR k IN
        SELECT DISTINCT coalesce(tenant_id, nil) FROM audit_events WHERE hash IS NULL ORDER BY 1
    LOOP
        BEGIN
            INSERT INTO audit_chain_heads (tenant_key, last_seq, last_hash)
            VALUES (k, 0, repeat('0', 64))
            ON CONFLICT (tenant_key) DO NOTHING;
            IF patient THEN
                SELECT last_seq, last_hash INTO seq, prev
                FROM audit_chain_heads WHERE tenant_key = k FOR UPDATE;
            ELSE
                SELECT last_seq, last_hash INTO seq, prev
                FROM audit_chain_heads WHERE tenant_key = k FOR UPDATE SKIP LOCKED;
            END IF;
            IF FOUND THEN
                chain := 0;
                FOR r IN
                    SELECT id, case_id, actor, event_type, data, created_at
                    FROM audit_events
                    WHERE hash IS NULL AND coalesce(tenant_id, nil) = k
                    ORDER BY id
                    LIMIT batch
                LOOP
                    seq := seq + 1;
                    -- The trigger checks the position and the hash, and moves the head.
                    UPDATE audit_events
                    SET chain_seq = seq, prev_hash = prev,
                        hash = audit_event_hash(prev, seq, k, r.case_id, r.actor, r.event_type,
                                                r.data, r.created_at)
                    WHERE id = r.id
                    RETURNING hash INTO prev;
                    chain := chain + 1;
                END LOOP;
                sealed := sealed + chain;
            END IF;
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'audit chain % was not sealed this round: %', k, SQLERRM;
        END;
    END LOOP;
    RETURN sealed;
END;
$$;
