-- 0015: a schedule's pending check carries its whole definition (sql/functions/045_cron.sql,
-- cron_check_payload), so firing reads nothing but the check and its bookkeeping (the last occurrence)
-- is written by the settlement statement with the check's new payload. Schedules can be paused, and a
-- definition only the runner can judge wrong is marked invalid instead of failing again and again.
ALTER TABLE prescient.cron_schedule
  ADD COLUMN paused_at timestamptz,
  ADD COLUMN paused_by text,
  ADD COLUMN invalid_reason text;

-- The pending checks of existing schedules take the new payload. (The function files are applied after
-- the migrations, so the layout of cron_check_payload is spelled out here once, for this data move.)
UPDATE prescient.future_job f
   SET payload = jsonb_build_object(
         'schedule', s.id, 'version', s.version, 'spec', s.spec, 'time_zone', s.time_zone, 'job', s.job,
         'payload', s.payload, 'catch_up', s.catch_up, 'deadline_seconds', s.deadline_seconds,
         'anchor_us', (extract(epoch FROM s.anchor_at) * 1000000)::bigint,
         'last_us', (extract(epoch FROM s.last_occurrence_at) * 1000000)::bigint, 'from_us', NULL)
  FROM prescient.cron_schedule s
 WHERE f.job = 'cron' AND f.job_key = 'cron:' || s.id;

-- Listing a million schedules pages by id (the primary key); the filters by class are served by this.
CREATE INDEX cron_schedule_job ON prescient.cron_schedule (job, id);

-- The runner no longer writes the last occurrence into the table; it marks a definition it cannot use.
DELETE FROM prescient.role_grant
 WHERE statement = 'GRANT UPDATE (last_occurrence_at) ON prescient.cron_schedule TO prescient_runner';
DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'prescient_runner') THEN
    REVOKE UPDATE (last_occurrence_at) ON prescient.cron_schedule FROM prescient_runner;
  END IF;
END $$;
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT UPDATE (invalid_reason) ON prescient.cron_schedule TO prescient_runner', 15);
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT EXECUTE ON FUNCTION prescient.cron_add_arrays(text[], text[], text[], text[], text[], text[], bigint[],'
   ' timestamptz[], text, timestamptz), prescient.cron_add(text, text, text, text, jsonb, text, bigint, text,'
   ' timestamptz), prescient.cron_add_many(jsonb, text, timestamptz), prescient.cron_update(text, jsonb, integer,'
   ' timestamptz, timestamptz), prescient.cron_remove(text, text, timestamptz), prescient.cron_pause(text, text,'
   ' timestamptz), prescient.cron_resume(text, text, timestamptz) TO prescient_client, prescient_runner', 15);

-- `cron list --paused` and `--invalid` page through few rows among millions.
CREATE INDEX cron_schedule_paused ON prescient.cron_schedule (id) WHERE paused_at IS NOT NULL;
CREATE INDEX cron_schedule_invalid ON prescient.cron_schedule (id) WHERE invalid_reason IS NOT NULL;

-- Paused job classes: runners claim none of their checks, which stay pending (prescient jobs pause CLASS).
CREATE TABLE prescient.paused_job (
  job text PRIMARY KEY CHECK (job <> ''),
  paused_at timestamptz NOT NULL,
  paused_by text NOT NULL
);
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT SELECT ON prescient.paused_job TO prescient_client, prescient_runner', 15);
