-- Per-user quotas (domain/quotas.py): one counter per user, quota and one-minute window.
-- A row holds a number, never text; windows that ended are deleted as the user's next
-- take passes by (the table holds a few rows per active user).

CREATE TABLE quota_windows (
    user_id      TEXT    NOT NULL,
    quota        TEXT    NOT NULL,
    window_start TEXT    NOT NULL,  -- the window's start to the minute (domain/quotas.window_key)
    taken        INTEGER NOT NULL,
    PRIMARY KEY (user_id, quota, window_start)
);
