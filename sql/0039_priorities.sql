-- 0039: priorities (docs/design.md, "Priorities"). A check carries a priority from 0 (first) to 9 (last),
-- default 5, kept by its history row (a retry puts it back with it) and by a schedule, whose check and
-- occurrences carry it. Checks due at the same time are claimed in priority order, then by id; times keep
-- their order (a slot's checks before those flow control deferred to a later time, and a sweep catches up
-- the oldest slot first), so a priority never starves an older check.
--  - The claim's indexes take the priority between the time and the id, so a claim reads checks in the
--    order it takes them, as before: future_job_due (runners), future_job_job (workers) and each fair-share
--    index (built again below; prescient.sync_fair_share_indexes makes new ones so).
--  - smallint: two bytes, which the row's alignment mostly absorbs.
ALTER TABLE prescient.future_job ADD COLUMN priority smallint NOT NULL DEFAULT 5
  CONSTRAINT future_job_priority_check CHECK (priority BETWEEN 0 AND 9);
ALTER TABLE prescient.job_history ADD COLUMN priority smallint NOT NULL DEFAULT 5;
ALTER TABLE prescient.cron_schedule ADD COLUMN priority smallint NOT NULL DEFAULT 5
  CONSTRAINT cron_schedule_priority_check CHECK (priority BETWEEN 0 AND 9);

DROP INDEX prescient.future_job_due;
CREATE INDEX future_job_due ON prescient.future_job (next_check_at, priority, id);
DROP INDEX prescient.future_job_job;
CREATE INDEX future_job_job ON prescient.future_job (job, next_check_at, priority, id);

DO $$
DECLARE
  v_field text;
BEGIN
  FOR v_field IN SELECT DISTINCT substr(key, 9) FROM prescient.flow_limit WHERE fair_share LOOP
    EXECUTE format('DROP INDEX IF EXISTS prescient.%I', 'future_job_fair_' || left(md5(v_field), 16));
    EXECUTE format('CREATE INDEX %I ON prescient.future_job'
                   ' (next_check_at, (coalesce(payload ->> %L, %L)), priority, id) WHERE group_key IS NULL',
                   'future_job_fair_' || left(md5(v_field), 16), v_field, '');
  END LOOP;
END $$;

-- The enqueue functions take p_priority: the old signatures go, and so do their grants' rows.
DROP FUNCTION IF EXISTS prescient.schedule(text, text, text, timestamptz, text, text, jsonb, text, text, timestamptz,
                                           interval, interval, interval, text[], boolean);
DROP FUNCTION IF EXISTS prescient.schedule_problems(text[], text[], text[], timestamptz[], text[], text[], text[],
                                                    text[], text[], text, text, timestamptz, interval[], interval[],
                                                    interval[], text[], boolean);
DROP FUNCTION IF EXISTS prescient.schedule_arrays(text[], text[], text[], timestamptz[], text[], text[], text[], text[],
                                                  text[], text, text, timestamptz, boolean, interval[], interval[],
                                                  interval[], text[], boolean);
DROP FUNCTION IF EXISTS prescient.array_requests(text[], text[], text[], timestamptz[], text[], text[], text[], text[],
                                                 text[], text, text, interval[], interval[], interval[], text[],
                                                 timestamptz, integer, bigint, text[]);
DROP FUNCTION IF EXISTS prescient.array_items(text[], text[], text[], timestamptz[], text[], text[], text[], text[],
                                              text[], text, text, interval[], interval[], interval[]);
UPDATE prescient.role_grant
   SET statement = replace(statement, 'interval, interval, interval, text[], boolean)',
                           'interval, interval, interval, text[], boolean, integer)')
 WHERE statement LIKE '%prescient.schedule(text, text, text, timestamptz, %interval, interval, interval, text[], boolean)%';
UPDATE prescient.role_grant
   SET statement = replace(statement, 'boolean, interval[], interval[], interval[], text[], boolean)',
                           'boolean, interval[], interval[], interval[], text[], boolean, integer[])')
 WHERE statement LIKE '%prescient.schedule_arrays(%boolean, interval[], interval[], interval[], text[], boolean)%';
