-- Rhythm (seed 003): when a user chats, sampled into counters and promoted to a belief
-- once it repeats. One row per user: the state as JSON (domain/rhythm.py `as_record`) and
-- its version, the compare-and-set token of the next write.

CREATE TABLE user_rhythm (
    user_id    TEXT PRIMARY KEY,
    version    INTEGER NOT NULL,
    state      TEXT    NOT NULL,
    updated_at TEXT    NOT NULL
);

-- The time zone a user's days and hours are read in (an IANA name).
ALTER TABLE settings ADD COLUMN timezone TEXT NOT NULL DEFAULT 'UTC';
