-- 0013: job_history is partitioned by month (of finished_at, in UTC), so that retention drops whole
-- months instead of deleting rows one by one (docs/operations.md, "Retention").
-- * One partition per month, named job_history_YYYY_MM, created ahead of time by
--   prescient.ensure_history_partitions() (sql/functions/080_history_partitions.sql): by `prescient
--   migrate` right after this file for the months the existing history covers and the next three,
--   then by the daemon (hourly) and run-slot/sweep.
-- * `prescient purge --history` drops the months wholly before its cut-off
--   (drop_history_partition) and deletes the older rows of the month it falls in
--   (purge_history_rows).
-- * job_history_default takes a row whose month has no partition yet (a runner never fails for want of
--   one); ensure_history_partitions() moves such rows into the month's partition when it creates it.
-- * A partitioned table can only have unique indexes that include finished_at, and nothing needs one:
--   history_id comes from a sequence, and (id, history_id) is an ordinary index for the trace of a check.
-- The existing rows are copied into the new table (into its default partition, from which migrate moves
-- them into their months): migrating a large history takes a while (about two minutes per 10 million
-- rows on the benchmark machine); purge what you do not keep before migrating.

ALTER TABLE prescient.job_history RENAME TO job_history_unpartitioned;

CREATE SEQUENCE prescient.job_history_seq;
SELECT setval('prescient.job_history_seq', coalesce(max(history_id), 0) + 1, false)
  FROM prescient.job_history_unpartitioned;

CREATE TABLE prescient.job_history (
  history_id bigint NOT NULL DEFAULT nextval('prescient.job_history_seq'),
  id bigint NOT NULL,
  job text NOT NULL,
  entity_name text NOT NULL,
  entity_key text NOT NULL,
  job_key text,
  group_key text,
  payload jsonb NOT NULL,
  first_check_at timestamptz NOT NULL,
  last_check_at timestamptz NOT NULL,
  check_count integer NOT NULL,
  attempts integer NOT NULL,
  last_error text,
  enqueued_on timestamptz NOT NULL,
  enqueued_by text NOT NULL,
  finished_at timestamptz NOT NULL,
  finished_by text NOT NULL,
  outcome text NOT NULL CONSTRAINT job_history_outcome_check
    CHECK (outcome IN ('done', 'cancelled', 'failed', 'guard_max_checks', 'guard_past', 'guard_horizon',
                       'deadline_missed')),
  run_micros bigint CONSTRAINT job_history_run_micros_check CHECK (run_micros >= 0)
) PARTITION BY RANGE (finished_at);
CREATE TABLE prescient.job_history_default PARTITION OF prescient.job_history DEFAULT;

INSERT INTO prescient.job_history (history_id, id, job, entity_name, entity_key, job_key, group_key, payload,
                                   first_check_at, last_check_at, check_count, attempts, last_error, enqueued_on,
                                   enqueued_by, finished_at, finished_by, outcome, run_micros)
  SELECT history_id, id, job, entity_name, entity_key, job_key, group_key, payload, first_check_at, last_check_at,
         check_count, attempts, last_error, enqueued_on, enqueued_by, finished_at, finished_by, outcome, run_micros
    FROM prescient.job_history_unpartitioned;
DROP TABLE prescient.job_history_unpartitioned;  -- and its identity sequence
ALTER SEQUENCE prescient.job_history_seq RENAME TO job_history_history_id_seq;
ALTER SEQUENCE prescient.job_history_history_id_seq OWNED BY prescient.job_history.history_id;

-- The indexes of 0008, built after the copy (each partition gets its own).
CREATE INDEX job_history_id ON prescient.job_history (id, history_id);
CREATE INDEX job_history_job_key ON prescient.job_history (job_key) WHERE job_key IS NOT NULL;
CREATE INDEX job_history_entity ON prescient.job_history (entity_name, entity_key);
CREATE INDEX job_history_finished_at ON prescient.job_history (finished_at);

-- Runners keep the partitions ahead; the new job_history gets the grants of the one it replaces (migrate
-- grants the rows of role_grant after every run).
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT EXECUTE ON FUNCTION prescient.ensure_history_partitions(timestamptz, timestamptz),'
   ' prescient.ensure_history_partitions(timestamptz) TO prescient_runner', 13);
