-- A persona's own rows that are no one user's (world facts, its notes with no
-- counterpart), one partition per persona: keyed by the persona, never by a user, so a
-- user id can never collide with a persona. `user_id` holds the persona's slug (the
-- memory row's columns, so one mapping serves both tables).

CREATE TABLE persona_memories (
    user_id           TEXT    NOT NULL,
    memory_id         TEXT    NOT NULL,
    persona           TEXT    NOT NULL,
    subject           TEXT    NOT NULL,
    witnessed         TEXT    NOT NULL DEFAULT '[]',  -- JSON list of user ids present
    counterpart       TEXT,
    room_id           TEXT,
    kind              TEXT    NOT NULL,
    category          TEXT    NOT NULL,
    key               TEXT,
    text              TEXT    NOT NULL,
    importance        INTEGER NOT NULL,
    stated_by         TEXT    NOT NULL,
    status            TEXT    NOT NULL,
    valid_from        TEXT,
    valid_to          TEXT,
    closed_by         TEXT,
    supersedes        TEXT,
    valid_until       TEXT,
    evidence          TEXT    NOT NULL DEFAULT '[]',
    source_message_id TEXT,
    created_at        TEXT    NOT NULL,
    updated_at        TEXT    NOT NULL,
    last_used_at      TEXT,
    recall_count      INTEGER NOT NULL DEFAULT 0,
    embedding         BLOB,
    meta              TEXT    NOT NULL DEFAULT '{}',
    PRIMARY KEY (persona, memory_id),
    CHECK (user_id = persona),
    CHECK (subject = 'world' OR (subject = 'self' AND counterpart IS NULL))
);
CREATE INDEX persona_memories_by_created
    ON persona_memories (persona, created_at DESC, memory_id DESC);

-- The daily sweep's listing of rooms gone quiet, oldest last message first.
CREATE INDEX rooms_by_last_message ON rooms (last_message_at) WHERE last_message_at IS NOT NULL;
