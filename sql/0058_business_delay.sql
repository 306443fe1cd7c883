-- 0058: a business delay at enqueue (docs/business-time.md, "Enqueue in business time"). A check may be timed
-- in a calendar's open time ("4 working hours after now", "at the next opening"): it then keeps the calendar,
-- the version of it that computed its time, and the delay asked for, and so does its history row, so that its
-- timeline can say what computed its time. NULL for a check timed in elapsed time, the common case: three
-- NULLs cost the row nothing past its null bitmap, which it has already (nullable columns are NULL in most
-- rows).
ALTER TABLE prescient.future_job
  ADD COLUMN calendar text,
  ADD COLUMN calendar_version integer,
  ADD COLUMN business_delay text,
  ADD CONSTRAINT future_job_calendar_check
    CHECK (calendar IS NOT NULL OR (calendar_version IS NULL AND business_delay IS NULL));
ALTER TABLE prescient.job_history
  ADD COLUMN calendar text,
  ADD COLUMN calendar_version integer,
  ADD COLUMN business_delay text;

-- The enqueue functions take p_calendar and p_business_delay: the old signatures go, and so do their grants'.
DROP FUNCTION IF EXISTS prescient.schedule(text, text, text, timestamptz, text, text, jsonb, text, text, timestamptz,
                                           interval, interval, interval, text[], boolean, integer, text, text);
DROP FUNCTION IF EXISTS prescient.schedule_problems(text[], text[], text[], timestamptz[], text[], text[], text[],
                                                    text[], text[], text, text, timestamptz, interval[], interval[],
                                                    interval[], text[], boolean, integer[], text[], text[]);
DROP FUNCTION IF EXISTS prescient.schedule_arrays(text[], text[], text[], timestamptz[], text[], text[], text[], text[],
                                                  text[], text, text, timestamptz, boolean, interval[], interval[],
                                                  interval[], text[], boolean, integer[], text[], text[]);
DROP FUNCTION IF EXISTS prescient.array_requests(text[], text[], text[], timestamptz[], text[], text[], text[], text[],
                                                 text[], text, text, interval[], interval[], interval[], text[],
                                                 timestamptz, integer, bigint, text[], integer[], text[], text[],
                                                 integer);
DROP FUNCTION IF EXISTS prescient.array_items(text[], text[], text[], timestamptz[], text[], text[], text[], text[],
                                              text[], text, text, interval[], interval[], interval[], integer[],
                                              text[], text[]);
UPDATE prescient.role_grant
   SET statement = replace(statement, 'interval, interval, interval, text[], boolean, integer, text, text)',
                           'interval, interval, interval, text[], boolean, integer, text, text, text, text)')
 WHERE statement LIKE '%prescient.schedule(text, text, text, timestamptz, %';
UPDATE prescient.role_grant
   SET statement = replace(statement, 'text[], boolean, integer[], text[], text[])',
                           'text[], boolean, integer[], text[], text[], text[], text[])')
 WHERE statement LIKE '%prescient.schedule_arrays(%';
