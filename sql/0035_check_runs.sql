-- 0035: a timeline of every run (docs/design.md, "A check's timeline"). Each run of a check that leaves it
-- pending (a next time, a retry) is one row of check_run, written by the settlement that ends the run
-- (kSettle, engine/src/db/runner_statements.hpp); the run that ends the check is its history row, and a
-- deferral by a flow limit is a row of flow_deferral. `prescient show` and the dashboard's check page read
-- the three, oldest first. Partitioned by month of finished_at like job_history, and made, dropped and
-- purged with its months (sql/functions/080_history_partitions.sql).
CREATE TABLE prescient.check_run (
  id bigint NOT NULL,
  due_at timestamptz NOT NULL,
  finished_at timestamptz NOT NULL,
  run_micros bigint CONSTRAINT check_run_run_micros_check CHECK (run_micros >= 0),
  runner text NOT NULL,
  result text NOT NULL CONSTRAINT check_run_result_check CHECK (result IN ('rescheduled', 'retried')),
  next_check_at timestamptz NOT NULL,
  answered_at timestamptz,
  check_count integer NOT NULL,
  attempts integer NOT NULL,
  error text
) PARTITION BY RANGE (finished_at);
CREATE TABLE prescient.check_run_default PARTITION OF prescient.check_run DEFAULT;
CREATE INDEX check_run_id ON prescient.check_run (id, finished_at);

INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT SELECT ON prescient.check_run TO prescient_client, prescient_runner', 35),
  ('GRANT INSERT ON prescient.check_run TO prescient_runner', 35);
