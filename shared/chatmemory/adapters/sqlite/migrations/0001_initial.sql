-- chatmemory's embedded store. Every table is keyed by user_id first: every query filters on it.
-- Timestamps are fixed-width ISO-8601 UTC strings with microseconds, so text order is time order.

CREATE TABLE memories (
    user_id           TEXT    NOT NULL,
    memory_id         TEXT    NOT NULL,
    persona           TEXT    NOT NULL,
    subject           TEXT    NOT NULL,
    witnessed         TEXT    NOT NULL DEFAULT '[]',
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
    hidden            INTEGER NOT NULL DEFAULT 0,  -- set with the tombstone, in one transaction
    PRIMARY KEY (user_id, memory_id)
);
CREATE INDEX memories_by_status ON memories (user_id, status, created_at DESC, memory_id DESC);
CREATE INDEX memories_by_created ON memories (user_id, created_at DESC, memory_id DESC);
CREATE INDEX memories_by_key ON memories (user_id, persona, key) WHERE key IS NOT NULL;

CREATE TABLE tombstones (
    user_id            TEXT NOT NULL,
    memory_id          TEXT NOT NULL,
    deleted_at         TEXT NOT NULL,
    actor              TEXT NOT NULL,
    persona            TEXT NOT NULL,
    versions           TEXT NOT NULL,
    source_message_ids TEXT NOT NULL,
    conversation_ids   TEXT NOT NULL,
    purged_at          TEXT,
    purge_error        TEXT,
    PRIMARY KEY (user_id, memory_id)
);
CREATE INDEX tombstones_unpurged ON tombstones (user_id, deleted_at) WHERE purged_at IS NULL;

CREATE TABLE user_state (
    user_id          TEXT PRIMARY KEY,
    forgotten_before TEXT
);

CREATE TABLE conversations (
    user_id              TEXT    NOT NULL,
    conversation_id      TEXT    NOT NULL,
    persona              TEXT    NOT NULL,
    temporary            INTEGER NOT NULL,
    expires_at           TEXT,
    created_at           TEXT    NOT NULL,
    updated_at           TEXT    NOT NULL,
    last_seq             INTEGER NOT NULL DEFAULT 0,
    summary              TEXT    NOT NULL DEFAULT '',
    summary_upto_seq     INTEGER NOT NULL DEFAULT 0,
    fold_count           INTEGER NOT NULL DEFAULT 0,
    extracted_upto_seq   INTEGER NOT NULL DEFAULT 0,
    last_user_message_at TEXT,
    PRIMARY KEY (user_id, conversation_id)
);
CREATE INDEX conversations_by_updated ON conversations (user_id, updated_at DESC);

CREATE TABLE messages (
    user_id         TEXT    NOT NULL,
    conversation_id TEXT    NOT NULL,
    seq             INTEGER NOT NULL,
    role            TEXT    NOT NULL,
    content         TEXT    NOT NULL,
    tokens          INTEGER NOT NULL,
    created_at      TEXT    NOT NULL,
    expires_at      TEXT,
    memories_used   TEXT    NOT NULL DEFAULT '[]',
    PRIMARY KEY (user_id, conversation_id, seq)
);

CREATE TABLE profiles (
    user_id     TEXT    NOT NULL,
    persona     TEXT    NOT NULL,
    text        TEXT    NOT NULL,
    token_count INTEGER NOT NULL,
    built_from  TEXT    NOT NULL,
    rebuilt_at  TEXT    NOT NULL,
    PRIMARY KEY (user_id, persona)
);

CREATE TABLE settings (
    user_id        TEXT PRIMARY KEY,
    enabled        INTEGER NOT NULL,
    note           TEXT    NOT NULL,
    muted_personas TEXT    NOT NULL,
    updated_at     TEXT
);

CREATE TABLE memory_events (
    user_id    TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    memory_id  TEXT NOT NULL,
    op         TEXT NOT NULL,
    actor      TEXT NOT NULL,
    at         TEXT NOT NULL,
    related_id TEXT,
    PRIMARY KEY (user_id, event_id)
);
CREATE INDEX memory_events_by_memory ON memory_events (user_id, memory_id, at);

CREATE TABLE notices (
    user_id         TEXT NOT NULL,
    notice_id       TEXT NOT NULL,
    text            TEXT NOT NULL,
    memory_ids      TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    persona         TEXT NOT NULL,
    conversation_id TEXT,
    undone_at       TEXT,
    PRIMARY KEY (user_id, notice_id)
);
CREATE INDEX notices_by_created ON notices (user_id, created_at DESC, notice_id DESC);
