-- 0037: a check's own policy, set at enqueue (docs/guarantees.md, "Policies"). Four columns of future_job,
-- NULL unless set, named as the class registry's (0033): they override the class's row for this check alone.
-- prescient.set_check_policy (sql/functions/068_check_policy.sql) sets them, in the enqueuer's transaction;
-- the history keeps them, so that `prescient retry` puts a check back with its own policy. The run timeout
-- stays per class: a batch's checks of one class run under one deadline.
ALTER TABLE prescient.future_job
  ADD COLUMN max_checks integer CONSTRAINT future_job_max_checks_check CHECK (max_checks >= 0),
  ADD COLUMN max_attempts integer CONSTRAINT future_job_max_attempts_check CHECK (max_attempts >= 1),
  ADD COLUMN backoff_seconds bigint CONSTRAINT future_job_backoff_check CHECK (backoff_seconds >= 1),
  ADD COLUMN backoff_max_seconds bigint CONSTRAINT future_job_backoff_max_check CHECK (backoff_max_seconds >= 1);
ALTER TABLE prescient.job_history
  ADD COLUMN max_checks integer,
  ADD COLUMN max_attempts integer,
  ADD COLUMN backoff_seconds bigint,
  ADD COLUMN backoff_max_seconds bigint;

INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT EXECUTE ON FUNCTION prescient.set_check_policy(bigint, integer, integer, interval, interval)'
   ' TO prescient_client, prescient_runner', 37);
