-- Audit events are sealed into their tenant's chain just after they commit, instead of while
-- they are inserted. Forward-only (see 0001).
--
-- Why: the insert trigger of 0006 locked the tenant's chain head until the inserting
-- transaction ended, so every transaction that wrote an audit event (intake, finalize, review…)
-- committed one at a time per tenant, waiting on each other's commit. Measured on 2 cores with
-- one tenant: finalize 394 decisions/s with the audit INSERT waiting 19 ms on average for the
-- head, 551/s without the lock.
--
-- Now: an event is inserted unsealed (chain_seq, prev_hash and hash NULL: no lock, no waiting),
-- and `audit_seal(batch)` — called by the dispatcher role every fraction of a second, and by
-- `ironclad audit verify` before it walks — appends committed unsealed events to their
-- tenant's chain in id order, under the head's lock, in one short transaction of its own. The
-- chain is the same as before: one per tenant, each event carrying the hash of its tenant's
-- previous event (the canonical text and hash function of 0006 are unchanged), and a row once
-- sealed is protected exactly as before.
--
-- The trade: between its commit and its seal (normally under a second) an event is protected
-- by the append-only trigger alone; someone who can disable triggers could delete or rewrite it
-- in that window without the chain showing it. `ironclad audit verify` reports how many events
-- still await their seal.

DROP TRIGGER audit_events_chain ON audit_events;
DROP FUNCTION audit_events_chain();

ALTER TABLE audit_events
    ALTER COLUMN chain_seq DROP NOT NULL,
    ALTER COLUMN prev_hash DROP NOT NULL,
    ALTER COLUMN hash DROP NOT NULL,
    ADD CONSTRAINT audit_events_sealed_whole
        CHECK ((chain_seq IS NULL) = (hash IS NULL) AND (prev_hash IS NULL) = (hash IS NULL));

-- What the sealer looks for; stays small (rows leave it as they are sealed).
CREATE INDEX audit_events_unsealed ON audit_events (id) WHERE hash IS NULL;

-- An insert always arrives unsealed: a statement cannot place itself in a chain.
CREATE FUNCTION audit_events_arrive_unsealed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.chain_seq := NULL;
    NEW.prev_hash := NULL;
    NEW.hash := NULL;
    RETURN NEW;
END;
$$;
CREATE TRIGGER audit_events_arrive_unsealed
    BEFORE INSERT ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_arrive_unsealed();

-- Still append-only, with one exception: sealing, which fills the three chain columns of an
-- unsealed row and changes nothing else.
CREATE FUNCTION audit_events_refuse_change_but_sealing() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE'
       AND OLD.hash IS NULL AND NEW.hash IS NOT NULL
       AND (NEW.id, NEW.case_id, NEW.tenant_id, NEW.actor, NEW.event_type, NEW.data, NEW.created_at)
           IS NOT DISTINCT FROM
           (OLD.id, OLD.case_id, OLD.tenant_id, OLD.actor, OLD.event_type, OLD.data, OLD.created_at)
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit_events is append-only (% refused)', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;
DROP TRIGGER audit_events_append_only ON audit_events;
CREATE TRIGGER audit_events_append_only
    BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_refuse_change_but_sealing();

-- Seals up to `batch` committed unsealed events per chain, oldest id first, and returns how
-- many it sealed. Safe to run from several processes at once: each chain's head row lock
-- orders them, and the rows a sealer reads are read after it holds that lock, so a row is
-- never sealed twice. Runs in the caller's transaction; the head locks are held until it ends,
-- so call it in a transaction of its own.
CREATE FUNCTION audit_seal(batch integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    nil    constant uuid := '00000000-0000-0000-0000-000000000000';
    k      uuid;
    seq    bigint;
    prev   text;
    r      record;
    sealed integer := 0;
BEGIN
    FOR k IN
        SELECT DISTINCT coalesce(tenant_id, nil) FROM audit_events WHERE hash IS NULL ORDER BY 1
    LOOP
        INSERT INTO audit_chain_heads (tenant_key, last_seq, last_hash)
        VALUES (k, 0, repeat('0', 64))
        ON CONFLICT (tenant_key) DO NOTHING;
        SELECT last_seq, last_hash INTO seq, prev
        FROM audit_chain_heads WHERE tenant_key = k FOR UPDATE;
        FOR r IN
            SELECT id, case_id, actor, event_type, data, created_at
            FROM audit_events
            WHERE hash IS NULL AND coalesce(tenant_id, nil) = k
            ORDER BY id
            LIMIT batch
        LOOP
            seq := seq + 1;
            UPDATE audit_events
            SET chain_seq = seq, prev_hash = prev,
                hash = audit_event_hash(prev, seq, k, r.case_id, r.actor, r.event_type, r.data,
                                        r.created_at)
            WHERE id = r.id
            RETURNING hash INTO prev;
            sealed := sealed + 1;
        END LOOP;
        UPDATE audit_chain_heads SET last_seq = seq, last_hash = prev WHERE tenant_key = k;
    END LOOP;
    RETURN sealed;
END;
$$;
