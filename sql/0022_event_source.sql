-- A schedule's page shows its most recent events: by source, newest first. Without an index that read
-- the outbox back from its newest event until ten of the schedule's were found (166 ms with 1 M events,
-- growing with the outbox). One more index entry per event emitted; the emit drain measured the same
-- with and without it (docs/performance.md).
CREATE INDEX event_source ON prescient.event (source, occurred_at, seq);
