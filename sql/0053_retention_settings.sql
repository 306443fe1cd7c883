-- 0053: retention an operator sets once, applied by the daemon that holds the right to drop (the schema
-- owner's; docs/operations.md, "Retention"). NULL keeps everything, as before: this migration deletes
-- nothing, and a database that kept its history, dead letters and events keeps them until the owner
-- sets a retention (UPDATE prescient.settings SET history_retention_seconds = 90 * 86400).
-- * history_retention_seconds: history rows, the checks' timelines (check_run) and the flow limits'
--   deferrals older than this go: whole months dropped, the rest in batches. Dead letters (failed, never
--   retried) are not history here: they stay, unless dead_letter_retention_seconds is set.
-- * dead_letter_retention_seconds: dead letters older than this go, in batches.
-- * event_retention_seconds: events of the outbox emitted longer ago than this go, in batches.
ALTER TABLE prescient.settings
  ADD COLUMN history_retention_seconds bigint CHECK (history_retention_seconds > 0),
  ADD COLUMN dead_letter_retention_seconds bigint CHECK (dead_letter_retention_seconds > 0),
  ADD COLUMN event_retention_seconds bigint CHECK (event_retention_seconds > 0);

