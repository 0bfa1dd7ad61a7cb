-- A hash chain over the audit trail (DESIGN §2: audit_events "append-only, hash-chained").
-- Forward-only (see 0001).
--
-- Rows reach audit_events from many statements (intake, jobs, reconcile, reviews, rulesets,
-- keys), so the chain is made here, by a trigger, never in Rust: no writer can forget it.
--
-- One chain per tenant (tenant-less events form their own chain under the nil uuid). Each row
-- carries its position (`chain_seq`, 1, 2, 3 … with no gap), the previous row's hash
-- (`prev_hash`, 64 zeros for the first) and its own `hash`:
--
--     hash = hex(sha256(utf8(audit_event_canonical(prev_hash, chain_seq, tenant key, case_id,
--                                                  actor, event_type, data, created_at))))
--
-- where the canonical text is a JSON array, so no field can spill into the next one:
--
--     ["<prev_hash>", <chain_seq>, "<tenant uuid>", "<case uuid>" or null, "<actor>",
--      "<event_type>", <data as jsonb text>, "<created_at UTC, YYYY-MM-DDTHH:MI:SS.ffffffZ>"]
--
-- `ironclad audit verify` recomputes every hash with the same SQL function, so there is one
-- definition of the canonical text. `audit_chain_heads` holds each chain's last position and
-- hash; it is what makes deleting the newest rows visible.
--
-- The cost: the trigger locks the tenant's head row until the inserting transaction ends, so
-- a tenant's audit writes (and the transactions around them) commit one at a time. Write the
-- event as the last statement of a transaction to keep that lock short.
--
-- What it does not cover: someone who may disable triggers can rewrite a whole chain from the
-- tampered row on, heads included. Only a head hash recorded outside the database (the JSON
-- of `ironclad audit verify` prints every head) catches that.

ALTER TABLE audit_events
    ADD COLUMN chain_seq bigint,
    ADD COLUMN prev_hash text,
    ADD COLUMN hash text;

CREATE TABLE audit_chain_heads (
    -- tenant_id, or the nil uuid for events without a tenant
    tenant_key  uuid PRIMARY KEY,
    last_seq    bigint NOT NULL CHECK (last_seq >= 0),
    last_hash   text NOT NULL CHECK (last_hash ~ '^[0-9a-f]{64}$')
);

-- The canonical text of one event. Independent of session settings: the timestamp is
-- formatted explicitly in UTC, and jsonb prints numbers as numeric (extra_float_digits does not
-- apply), keys sorted, one space after ':' and ','.
CREATE FUNCTION audit_event_canonical(
    prev_hash text, chain_seq bigint, tenant_key uuid, case_id uuid, actor text,
    event_type text, data jsonb, created_at timestamptz
) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT jsonb_build_array(
        prev_hash, chain_seq, tenant_key::text, case_id::text, actor, event_type, data,
        to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
    )::text
$$;

CREATE FUNCTION audit_event_hash(
    prev_hash text, chain_seq bigint, tenant_key uuid, case_id uuid, actor text,
    event_type text, data jsonb, created_at timestamptz
) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT encode(sha256(convert_to(audit_event_canonical(
        prev_hash, chain_seq, tenant_key, case_id, actor, event_type, data, created_at), 'UTF8')), 'hex')
$$;

-- Backfill: existing rows, in id order within each tenant's chain. The append-only trigger is
-- lifted for this one statement sequence, inside the migration's transaction.
ALTER TABLE audit_events DISABLE TRIGGER audit_events_append_only;
DO $$
DECLARE
    r         record;
    zeros     constant text := repeat('0', 64);
    cur_key   uuid;
    seq       bigint := 0;
    prev      text := zeros;
BEGIN
    FOR r IN
        SELECT id, coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid) AS k,
               case_id, actor, event_type, data, created_at
        FROM audit_events ORDER BY 2, id
    LOOP
        IF cur_key IS DISTINCT FROM r.k THEN
            IF cur_key IS NOT NULL THEN
                INSERT INTO audit_chain_heads VALUES (cur_key, seq, prev);
            END IF;
            cur_key := r.k;
            seq := 0;
            prev := zeros;
        END IF;
        seq := seq + 1;
        UPDATE audit_events
        SET chain_seq = seq, prev_hash = prev,
            hash = audit_event_hash(prev, seq, r.k, r.case_id, r.actor, r.event_type, r.data, r.created_at)
        WHERE id = r.id
        RETURNING hash INTO prev;
    END LOOP;
    IF cur_key IS NOT NULL THEN
        INSERT INTO audit_chain_heads VALUES (cur_key, seq, prev);
    END IF;
END
$$;
ALTER TABLE audit_events ENABLE TRIGGER audit_events_append_only;

ALTER TABLE audit_events
    ALTER COLUMN chain_seq SET NOT NULL,
    ALTER COLUMN prev_hash SET NOT NULL,
    ALTER COLUMN hash SET NOT NULL;
-- One row per position per chain; also the order `ironclad audit verify` walks a chain in.
CREATE UNIQUE INDEX audit_events_chain_position
    ON audit_events ((coalesce(tenant_id, '00000000-0000-0000-0000-000000000000'::uuid)), chain_seq);

-- Appends a row to its tenant's chain. Whatever the statement wrote into chain_seq, prev_hash
-- and hash is overwritten. It must stay the only BEFORE INSERT trigger that changes the row
-- (a later one would change fields after they were hashed).
CREATE FUNCTION audit_events_chain() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    k     uuid := coalesce(NEW.tenant_id, '00000000-0000-0000-0000-000000000000'::uuid);
    seq   bigint;
    prev  text;
BEGIN
    -- The head's row lock orders the tenant's appends; held until this transaction ends.
    SELECT last_seq, last_hash INTO seq, prev
    FROM audit_chain_heads WHERE tenant_key = k FOR UPDATE;
    IF NOT FOUND THEN
        -- First event of this chain. Two first events racing: one inserts, the other waits
        -- for it here, then finds and locks its row below.
        INSERT INTO audit_chain_heads (tenant_key, last_seq, last_hash)
        VALUES (k, 0, repeat('0', 64))
        ON CONFLICT (tenant_key) DO NOTHING;
        SELECT last_seq, last_hash INTO seq, prev
        FROM audit_chain_heads WHERE tenant_key = k FOR UPDATE;
    END IF;
    NEW.chain_seq := seq + 1;
    NEW.prev_hash := prev;
    NEW.hash := audit_event_hash(prev, NEW.chain_seq, k, NEW.case_id, NEW.actor,
                                 NEW.event_type, NEW.data, NEW.created_at);
    UPDATE audit_chain_heads SET last_seq = NEW.chain_seq, last_hash = NEW.hash
    WHERE tenant_key = k;
    RETURN NEW;
END;
$$;
CREATE TRIGGER audit_events_chain
    BEFORE INSERT ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_chain();
