-- One row the health check writes (`adapters/sqlite/probe.py`): the time of the last check.
-- It holds nothing of anyone's, so no deletion path needs to know about it.
CREATE TABLE store_probe (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    checked_at TEXT NOT NULL
);
