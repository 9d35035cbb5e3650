-- Data migrations that need the package's own Python (a rule, not SQL), run once per file:
-- how far each got (`cursor`, the last key done) and when it was done. The first is
-- `mask_messages`: secrets in messages stored before they were masked on write
-- (`SqliteConversationErasure.mask_stored_messages`). Holds no one's data.
CREATE TABLE data_migrations (
    name    TEXT PRIMARY KEY,
    cursor  TEXT,
    done_at TEXT
);
