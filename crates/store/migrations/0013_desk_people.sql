-- The desk's people and forms (issue 25): names instead of ids, a password an admin set must be
-- changed by its user, and a form that creates something is applied once per rendered form.

-- How a person is named on timelines and lists (their email address when unset).
ALTER TABLE users ADD COLUMN display_name text
    CHECK (display_name IS NULL OR length(display_name) BETWEEN 1 AND 200);
-- Set when an admin chose or generated the password: every desk page sends the user to change
-- it until they do, so nobody else knows a password in use.
ALTER TABLE users ADD COLUMN must_change_password boolean NOT NULL DEFAULT false;
ALTER TABLE users ADD COLUMN password_changed_at timestamptz;

-- What a key is for ("ERP connector"), so people read a name rather than a prefix.
ALTER TABLE api_keys ADD COLUMN label text
    CHECK (label IS NULL OR length(label) BETWEEN 1 AND 200);

-- A desk form that creates something (an API key, a user, a webhook endpoint) carries a random
-- token rendered with the page. The first POST of a token creates and records what it made in
-- the same transaction; a replay of the token (a double click, a re-POST after a refresh)
-- finds this row and shows the first result instead of creating again.
CREATE TABLE desk_forms (
    user_id       uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    token         text NOT NULL CHECK (length(token) BETWEEN 16 AND 128),
    tenant_id     uuid NOT NULL REFERENCES tenants(id),
    -- Which form: 'api_key', 'user', 'webhook'.
    action        text NOT NULL,
    -- sha256 of what the form asked, so a token sent with other fields is told apart.
    fingerprint   text NOT NULL,
    -- What the result page says (ids, names; never a secret).
    outcome       jsonb NOT NULL,
    -- A secret to show once (key, password, signing secret), sealed with a key derived from
    -- the session cookie's token, which the database never holds; NULL once shown, and
    -- cleared by the session sweep when never shown.
    sealed_secret bytea,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, token)
);
CREATE INDEX desk_forms_age ON desk_forms (created_at);
