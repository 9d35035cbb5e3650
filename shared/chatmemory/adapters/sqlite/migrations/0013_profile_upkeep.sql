-- A profile says when it is due for a rebuild without any write: the first of its
-- memories to go out of use (review_at), and the version of the rules it was built by
-- (built_by: 1 for every profile built before sensitive memories left the profile, so
-- each is rebuilt before it is used again).

ALTER TABLE profiles ADD COLUMN review_at TEXT;
ALTER TABLE profiles ADD COLUMN built_by INTEGER NOT NULL DEFAULT 1;
