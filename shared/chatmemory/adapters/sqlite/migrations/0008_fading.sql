-- Beliefs with a shelf life (seed 003). A memory's stability in days once evidence grew it
-- (NULL: its category's), its last supporting evidence (NULL: when it was written), and
-- when the per-user cap set it aside (NULL: in use unless it faded). Retention and
-- due_in are computed from these when a row is read; nothing scans for them.

ALTER TABLE memories ADD COLUMN stability_days REAL;
ALTER TABLE memories ADD COLUMN reinforced_at TEXT;
ALTER TABLE memories ADD COLUMN archived_at TEXT;
-- A persona's own rows share the row mapping (rows.py).
ALTER TABLE persona_memories ADD COLUMN stability_days REAL;
ALTER TABLE persona_memories ADD COLUMN reinforced_at TEXT;
ALTER TABLE persona_memories ADD COLUMN archived_at TEXT;
