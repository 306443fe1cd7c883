-- 0047: the outbox's seq loses its unique index. seq is an identity column (GENERATED ALWAYS), so it is
-- unique without one; readers go by (tx, seq) (event_cursor, 0006) or by source (event_source, 0022), and
-- retention deletes by ctid. The index cost every emitted event an insertion with a uniqueness check: the
-- `emit` drain was about 10 % faster without it (docs/performance.md, "The outbox's seq without an index").
ALTER TABLE prescient.event DROP CONSTRAINT IF EXISTS event_seq_key;
