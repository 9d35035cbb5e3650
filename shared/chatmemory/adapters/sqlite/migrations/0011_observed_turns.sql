-- Turns a client reported after they happened (POST /v1/observe), by the client's turn id:
-- written in the same transaction as their messages, so a retry stores nothing twice.
-- Ids, seqs and a fingerprint of the request only, never text; it expires with its
-- conversation.

CREATE TABLE observed_turns (
    user_id         TEXT    NOT NULL,
    turn_id         TEXT    NOT NULL,
    conversation_id TEXT    NOT NULL,
    first_seq       INTEGER NOT NULL,
    count           INTEGER NOT NULL,
    fingerprint     TEXT    NOT NULL,
    observed_at     TEXT    NOT NULL,
    expires_at      TEXT,
    PRIMARY KEY (user_id, turn_id)
);
