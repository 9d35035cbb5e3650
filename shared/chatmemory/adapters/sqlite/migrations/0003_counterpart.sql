-- A persona's own promise or open loop says whom it is with ('u:<id>'); NULL otherwise.

ALTER TABLE memories ADD COLUMN counterpart TEXT;
