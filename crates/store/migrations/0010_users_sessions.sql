-- People who use the operator's desk: a password (argon2, PHC string) and one role in one
-- tenant. Machines keep using API keys.
CREATE TABLE users (
    id            uuid PRIMARY KEY,
    tenant_id     uuid NOT NULL REFERENCES tenants(id),
    email         text NOT NULL,
    role          text NOT NULL CHECK (role IN ('operator', 'reviewer', 'admin')),
    password_hash text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    disabled_at   timestamptz
);
-- One account per address, whatever its case: sign-in names no tenant.
CREATE UNIQUE INDEX users_email_key ON users (lower(email));
CREATE INDEX users_tenant ON users (tenant_id, created_at);

-- A signed-in browser. The cookie holds a random token; only its sha256 is stored, so a
-- database read does not hand out sessions. `expires_at` moves with use (idle expiry) but
-- never past `created_at` plus the absolute lifetime, which the store enforces.
CREATE TABLE sessions (
    token_hash   text PRIMARY KEY,
    user_id      uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    -- The synchronizer token every form and unsafe API call from this browser must carry.
    csrf_token   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expiry ON sessions (expires_at);
