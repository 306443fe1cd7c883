-- 0057: the history's outcome constraint reads the one list of outcomes, prescient.history_outcomes()
-- (sql/functions/030_enqueue_rules.sql), so a new outcome is a row in that list, not a migration. Migrations
-- run before the functions, so the list is made here as it stands; 030 replaces it (CREATE OR REPLACE keeps
-- the constraint's dependency). Widening the list needs no check of the rows already written; an outcome is
-- never taken out of it.
CREATE OR REPLACE FUNCTION prescient.history_outcomes() RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN ARRAY['done', 'cancelled', 'failed', 'guard_max_checks', 'guard_past', 'guard_horizon', 'deadline_missed',
               'overlap_skipped'];

ALTER TABLE prescient.job_history DROP CONSTRAINT job_history_outcome_check,
  ADD CONSTRAINT job_history_outcome_check CHECK (outcome = ANY (prescient.history_outcomes()));
