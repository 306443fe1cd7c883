-- 0012: bulk enqueue at a fraction of the server's cost (docs/performance.md, "bulk enqueue").
-- * The job-key index holds only the checks that have a key. Most checks have none, and every NULL
--   entry of a unique index was a B-tree insert on a long run of equal keys: about 30 % of a bulk
--   insert's server time. Conflict targets now name the predicate (ON CONFLICT (job_key) WHERE job_key
--   IS NOT NULL), which infers this index.
-- * schedule_arrays takes the items as parallel arrays, one per field; schedule_many turns its JSON into
--   arrays and calls it (sql/functions/050_bulk_enqueue.sql). schedule_items, its former reader of JSON
--   items, goes.
-- Rebuilding the index locks future_job for as long as the build lasts (seconds per million pending
-- checks): migrate before starting runners of the new version, as docs/operations.md says.

DROP INDEX prescient.future_job_job_key;
CREATE UNIQUE INDEX future_job_job_key ON prescient.future_job (job_key) WHERE job_key IS NOT NULL;

DROP FUNCTION IF EXISTS prescient.schedule_items(json);

-- The roles' grants, one statement a row, so that a later migration adds its own rows instead of
-- replacing grant_roles() with a longer copy of it. Written by migrations only (the schema's owner):
-- nobody else may read or write this table.
CREATE TABLE prescient.role_grant (
  statement text PRIMARY KEY,
  added_by integer NOT NULL  -- the migration that added it
);
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT USAGE ON SCHEMA prescient TO prescient_client, prescient_runner', 10),
  ('GRANT SELECT ON prescient.settings, prescient.schema_migrations, prescient.future_job, prescient.job_history,'
   ' prescient.schedule, prescient.event TO prescient_client, prescient_runner', 10),
  ('GRANT EXECUTE ON FUNCTION prescient.schedule(text, text, text, timestamptz, text, text, jsonb, text, text,'
   ' timestamptz), prescient.schedule_many(json, text, text, timestamptz, boolean), prescient.cancel(bigint, text,'
   ' text, timestamptz), prescient.reschedule(timestamptz, bigint, text, timestamptz)'
   ' TO prescient_client, prescient_runner', 10),
  -- The runner: claim (FOR UPDATE), settle (delete, update, history, events), leases, the cron class's
  -- bookkeeping (last occurrence, missed-deadline rows).
  ('GRANT UPDATE, DELETE ON prescient.future_job TO prescient_runner', 10),
  ('GRANT INSERT ON prescient.job_history, prescient.event TO prescient_runner', 10),
  ('GRANT USAGE ON SEQUENCE prescient.job_history_history_id_seq, prescient.event_seq_seq TO prescient_runner', 10),
  ('GRANT UPDATE (last_occurrence_at) ON prescient.schedule TO prescient_runner', 10),
  ('GRANT EXECUTE ON FUNCTION prescient.schedule_arrays(text[], text[], text[], timestamptz[], text[], text[], text[],'
   ' text[], text[], text, text, timestamptz, boolean) TO prescient_client, prescient_runner', 12);
