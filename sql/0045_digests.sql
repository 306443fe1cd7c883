-- 0045: digests (docs/design.md, "Digests"): on_conflict 'collect' gathers the payloads of the enqueues of one
-- job key into the pending check's list, {"collected": [p1, p2, ...]}, which its job class reads whole.
--  - collects marks such a check, so that a user's payload with a key "collected" is never taken for a list;
--    the history keeps it, and `prescient retry` puts it back with it.
--  - collect_since: when the list's first payload arrived, the start of its ceiling (max_wait). A run that
--    consumed the list empties it, so the next list's ceiling counts from its own first payload.
--  - collect_pending, collect_pending_since, collect_pending_at: payloads that arrived while a run held the
--    check under a written lease (which does not lock the row), when the first of them arrived, and the time
--    they ask for (the debounce rule from that first arrival). The settlement hands them on (the triggers of
--    sql/functions/042_collect.sql); the history keeps what was pending when a check was cancelled.
-- Nullable columns without a default: adding them rewrites no row, and a check that does not collect stores
-- only the bits saying they are NULL. No CHECK constraint either: validating one would read every pending
-- check under the table's exclusive lock. The functions' signatures do not change (on_conflict is text).
ALTER TABLE prescient.future_job
  ADD COLUMN collects boolean NOT NULL DEFAULT false,
  ADD COLUMN collect_since timestamptz,
  ADD COLUMN collect_pending jsonb,
  ADD COLUMN collect_pending_since timestamptz,
  ADD COLUMN collect_pending_at timestamptz;
ALTER TABLE prescient.job_history
  ADD COLUMN collects boolean NOT NULL DEFAULT false,
  ADD COLUMN collect_pending jsonb;
