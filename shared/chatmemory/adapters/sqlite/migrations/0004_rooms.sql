-- Rooms: where personas and humans meet. A room is no one user's, so nothing here is
-- keyed by user; everything of a room is keyed by its room_id.

CREATE TABLE rooms (
    room_id         TEXT    NOT NULL PRIMARY KEY,
    kind            TEXT    NOT NULL,
    incognito       INTEGER NOT NULL,
    fiction         INTEGER NOT NULL,
    personas        TEXT    NOT NULL,  -- JSON list, sorted
    members         TEXT    NOT NULL,  -- JSON list of user ids, sorted
    created_at      TEXT    NOT NULL,
    version         INTEGER NOT NULL DEFAULT 0,
    last_seq        INTEGER NOT NULL DEFAULT 0,
    last_message_at TEXT
);

CREATE TABLE room_messages (
    room_id    TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    speaker    TEXT    NOT NULL,  -- 'u:<user id>' or 'p:<persona>'
    text       TEXT    NOT NULL,
    created_at TEXT    NOT NULL,
    PRIMARY KEY (room_id, seq)
);

-- Each persona's block, as built for the room's members at `version`.
CREATE TABLE room_blocks (
    room_id       TEXT    NOT NULL,
    persona       TEXT    NOT NULL,
    version       INTEGER NOT NULL,
    text          TEXT    NOT NULL,
    memory_ids    TEXT    NOT NULL,  -- JSON list, in the block's order
    chars_current INTEGER NOT NULL,
    chars_limit   INTEGER NOT NULL,
    built_at      TEXT    NOT NULL,
    PRIMARY KEY (room_id, persona)
);

-- The last seq each persona's write pipeline has read in the room.
CREATE TABLE room_cursors (
    room_id  TEXT    NOT NULL,
    persona  TEXT    NOT NULL,
    upto_seq INTEGER NOT NULL,
    PRIMARY KEY (room_id, persona)
);
