-- Change events (the change feed): derived from the audit log, read in the order it was
-- written. The log gains an explicit sequence (an INTEGER PRIMARY KEY: VACUUM may renumber
-- an implicit rowid, never this) and, on each event, whose memory it was and what sort,
-- so a change is described without reading the memory row that holds its words.

CREATE TABLE memory_events_sequenced (
    seq        INTEGER PRIMARY KEY,
    user_id    TEXT NOT NULL,
    event_id   TEXT NOT NULL,
    memory_id  TEXT NOT NULL,
    op         TEXT NOT NULL,
    actor      TEXT NOT NULL,
    at         TEXT NOT NULL,
    related_id TEXT,
    persona    TEXT,
    kind       TEXT,
    UNIQUE (user_id, event_id)
);
INSERT INTO memory_events_sequenced
    (seq, user_id, event_id, memory_id, op, actor, at, related_id)
    SELECT rowid, user_id, event_id, memory_id, op, actor, at, related_id
    FROM memory_events ORDER BY rowid;
DROP TABLE memory_events;
ALTER TABLE memory_events_sequenced RENAME TO memory_events;
CREATE INDEX memory_events_by_memory ON memory_events (user_id, memory_id, at);

-- A tombstone keeps what sort of memory it stood for: the purge's change event tells it
-- after the row is gone.
ALTER TABLE tombstones ADD COLUMN kind TEXT;

-- Where each reader of the log stopped (the change feed's relay: "changes"). A feed
-- turned on starts from now: what was written before it is not replayed.
CREATE TABLE event_cursors (
    name     TEXT PRIMARY KEY,
    position INTEGER NOT NULL
);
INSERT INTO event_cursors (name, position)
    SELECT 'changes', COALESCE(MAX(seq), 0) FROM memory_events;
