-- Reading documents: versioned workflows, pages as read, typed segments and extracted facts.
-- Forward-only (see 0001).

CREATE TABLE workflows (
    id           uuid PRIMARY KEY,
    name         text NOT NULL CHECK (name ~ '^[A-Za-z0-9_.-]{1,100}$'),
    version      integer NOT NULL CHECK (version >= 1),
    sha256       text NOT NULL,
    source_yaml  text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (name, version),
    -- Loading the same file twice does not mint a new version.
    UNIQUE (name, sha256)
);

-- The workflow version a case ran under (recorded when its first source is read).
ALTER TABLE cases ADD COLUMN workflow_id uuid REFERENCES workflows(id);

CREATE TABLE pages (
    id           uuid PRIMARY KEY,
    case_id      uuid NOT NULL REFERENCES cases(id),
    source_id    uuid NOT NULL REFERENCES sources(id),
    generation   integer NOT NULL,
    page_index   integer NOT NULL CHECK (page_index >= 0),
    method       text NOT NULL CHECK (method IN ('text_layer', 'ocr', 'provider')),
    confidence   real NOT NULL CHECK (confidence BETWEEN 0 AND 1),
    rotation     smallint NOT NULL DEFAULT 0,
    doc_type     text,
    class_confidence real,
    class_reason text,
    text         text NOT NULL,
    words        jsonb NOT NULL,
    UNIQUE (source_id, generation, page_index)
);

CREATE TABLE segments (
    id           uuid PRIMARY KEY,
    case_id      uuid NOT NULL REFERENCES cases(id),
    source_id    uuid NOT NULL REFERENCES sources(id),
    generation   integer NOT NULL,
    ordinal      integer NOT NULL,
    doc_type     text,
    confidence   real NOT NULL,
    first_page   integer NOT NULL,
    last_page    integer NOT NULL CHECK (last_page >= first_page),
    reason       text,
    active       boolean NOT NULL DEFAULT true,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (source_id, generation, ordinal)
);
CREATE INDEX segments_by_case ON segments (case_id, generation);

CREATE TABLE facts (
    id           uuid PRIMARY KEY,
    segment_id   uuid NOT NULL REFERENCES segments(id),
    case_id      uuid NOT NULL REFERENCES cases(id),
    field        text NOT NULL,
    value        jsonb,
    raw_text     text,
    page         integer,
    bbox         jsonb,
    confidence   real,
    conflict     boolean NOT NULL DEFAULT false,
    missing      boolean NOT NULL DEFAULT false,
    candidates   jsonb NOT NULL DEFAULT '[]'::jsonb,
    UNIQUE (segment_id, field)
);
CREATE INDEX facts_by_case ON facts (case_id);
