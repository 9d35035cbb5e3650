-- The write pipeline: its runs (candidates live here, not in workflow payloads), and
-- finding conversations whose new user messages have not been read by the pipeline yet.

CREATE TABLE extraction_runs (
    user_id         TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    conversation_id TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    body            TEXT NOT NULL,  -- the run as JSON
    PRIMARY KEY (user_id, run_id)
);
CREATE INDEX extraction_runs_by_conversation ON extraction_runs (user_id, conversation_id);

CREATE INDEX conversations_pending_extraction
    ON conversations (last_user_message_at)
    WHERE temporary = 0 AND extracted_upto_seq < last_seq;
