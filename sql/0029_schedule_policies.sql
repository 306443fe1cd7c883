-- 0029: what a schedule does besides firing (docs/schedules.md): an overlap policy for the checks its
-- occurrences make, bounds (start_at, end_at, max_runs: a bounded schedule ends by itself and keeps its
-- row, ended), and a note on a pause. An occurrence skipped by the overlap policy is a history row of its
-- own (outcome overlap_skipped).
--
-- schedule_arrays takes debounce and dedupe per item (p_max_wait, p_dedupe_for, and p_dedupe_outcomes for
-- the call), as schedule() does one at a time.
--
-- cron_add_arrays and cron_add take one parameter more, p_options: a JSON object per schedule. It is the
-- last one: the next field of a schedule is a key of it, not another parameter (and another migration
-- that drops a signature and rewrites its grant). cron_pause takes a note. The old signatures go (IF
-- EXISTS: a new database never had them); their grants move to the new ones.
ALTER TABLE prescient.cron_schedule
  ADD COLUMN overlap text NOT NULL DEFAULT 'allow'
    CONSTRAINT cron_schedule_overlap_check CHECK (overlap IN ('allow', 'skip', 'buffer_one', 'cancel_previous')),
  ADD COLUMN start_at timestamptz,
  ADD COLUMN end_at timestamptz,
  ADD COLUMN max_runs integer CONSTRAINT cron_schedule_max_runs_check CHECK (max_runs >= 1),
  ADD COLUMN run_count integer NOT NULL DEFAULT 0 CONSTRAINT cron_schedule_run_count_check CHECK (run_count >= 0),
  ADD COLUMN ended_at timestamptz,
  ADD COLUMN ended_reason text,
  ADD COLUMN pause_note text,
  ADD CONSTRAINT cron_schedule_bounds_check CHECK (end_at > start_at);

ALTER TABLE prescient.job_history DROP CONSTRAINT job_history_outcome_check,
  ADD CONSTRAINT job_history_outcome_check
    CHECK (outcome IN ('done', 'cancelled', 'failed', 'guard_max_checks', 'guard_past', 'guard_horizon',
                       'deadline_missed', 'overlap_skipped'));

DROP FUNCTION IF EXISTS prescient.cron_add(text, text, text, text, jsonb, text, bigint, text, timestamptz, bigint,
                                           bigint);
DROP FUNCTION IF EXISTS prescient.cron_add_arrays(text[], text[], text[], text[], text[], text[], bigint[],
                                                  timestamptz[], text, timestamptz, bigint[], bigint[]);
DROP FUNCTION IF EXISTS prescient.cron_pause(text, text, timestamptz);
DROP FUNCTION IF EXISTS prescient.schedule_arrays(text[], text[], text[], timestamptz[], text[], text[], text[], text[],
                                                  text[], text, text, timestamptz, boolean, interval[]);
DROP FUNCTION IF EXISTS prescient.array_requests(text[], text[], text[], timestamptz[], text[], text[], text[], text[],
                                                 text[], text, text, interval[], timestamptz, bigint);
DROP FUNCTION IF EXISTS prescient.array_items(text[], text[], text[], timestamptz[], text[], text[], text[], text[], text[],
                                              text, text, interval[]);

UPDATE prescient.role_grant
   SET statement = replace(replace(replace(statement,
           'timestamptz[], text, timestamptz, bigint[], bigint[])',
           'timestamptz[], text, timestamptz, bigint[], bigint[], jsonb[])'),
         'prescient.cron_add(text, text, text, text, jsonb, text, bigint, text, timestamptz, bigint, bigint)',
         'prescient.cron_add(text, text, text, text, jsonb, text, bigint, text, timestamptz, bigint, bigint, jsonb)'),
         'prescient.cron_pause(text, text, timestamptz)', 'prescient.cron_pause(text, text, timestamptz, text)')
 WHERE statement LIKE '%prescient.cron_add_arrays(%';

UPDATE prescient.role_grant
   SET statement = replace(statement, 'text[], text, text, timestamptz, boolean, interval[])',
                           'text[], text, text, timestamptz, boolean, interval[], interval[], interval[], text[])')
 WHERE statement LIKE '%prescient.schedule_arrays(%text[], text, text, timestamptz, boolean, interval[])%';

-- The runner ends a bounded schedule when it has run out (with the settlement of its check).
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT UPDATE (ended_at, ended_reason, run_count, last_occurrence_at) ON prescient.cron_schedule'
   ' TO prescient_runner', 29),
  ('GRANT EXECUTE ON FUNCTION prescient.cron_backfill(text, timestamptz, timestamptz, text, timestamptz)'
   ' TO prescient_client', 29);
