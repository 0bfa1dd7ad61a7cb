-- invoice2data template sets, versioned like workflows: loading a changed directory mints the
-- next version, loading the same files again returns the existing one. A case is pinned to the
-- set its first source was read with, so every source of a case sees the same templates.
-- Forward-only (see 0001).

CREATE TABLE template_sets (
    id              uuid PRIMARY KEY,
    version         integer NOT NULL UNIQUE CHECK (version >= 1),
    -- sha256 over the files' names and contents, in name order.
    sha256          text NOT NULL UNIQUE,
    -- [{"name": "<path under the loaded directory>", "yaml": "<file text>"}], in name order.
    files           jsonb NOT NULL CHECK (jsonb_typeof(files) = 'array'),
    template_count  integer NOT NULL CHECK (template_count >= 0),
    created_at      timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE cases ADD COLUMN template_set_id uuid REFERENCES template_sets(id);
