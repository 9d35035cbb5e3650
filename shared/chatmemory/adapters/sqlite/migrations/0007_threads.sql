-- Threads (seed 004). A live thread row carries the day the nightly review would put it
-- to sleep (NULL on every other row), so the review reads only the threads it has to;
-- the read path finds a user's threads without reading their other rows. A room keeps
-- one stamp of the last day a persona raised someone's thread there (law 8).

ALTER TABLE memories ADD COLUMN thread_review_on TEXT;
-- A persona's own rows share the row mapping (rows.py), so they carry the column too;
-- nothing reads it there: the review lists users' threads only.
ALTER TABLE persona_memories ADD COLUMN thread_review_on TEXT;
CREATE INDEX memories_threads ON memories (user_id, persona) WHERE kind = 'thread';
CREATE INDEX memories_thread_review ON memories (thread_review_on)
    WHERE thread_review_on IS NOT NULL;

ALTER TABLE rooms ADD COLUMN threads_asked_on TEXT;
