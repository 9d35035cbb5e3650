-- "Forget everything" replaces every room line a user said, in every room: found by the
-- speaker, not by a scan of every transcript.
CREATE INDEX room_messages_by_speaker ON room_messages (speaker);
