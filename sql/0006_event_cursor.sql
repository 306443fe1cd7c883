-- 0006: a position for event readers that no late commit can jump behind. seq alone is not enough: a
-- transaction that drew a lower seq may commit after a higher one was read. Readers take only events
-- of transactions older than their snapshot's xmin (all finished), in (tx, seq) order; a transaction
-- that commits later has a tx at or above that xmin, so it always lands after the cursor.
ALTER TABLE prescient.event ADD COLUMN tx xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX event_cursor ON prescient.event (tx, seq);
