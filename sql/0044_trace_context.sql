-- 0044: trace context (docs/design.md, "Trace context"). A check may carry the W3C trace context it was
-- created in; it stays with the check through reschedules and retries, goes to its history row and back
-- with a revived dead letter. Events a run publishes keep the run's own traceparent (the trace, and the
-- run's span as parent).
ALTER TABLE prescient.future_job ADD COLUMN traceparent text, ADD COLUMN tracestate text;
ALTER TABLE prescient.job_history ADD COLUMN traceparent text, ADD COLUMN tracestate text;
ALTER TABLE prescient.event ADD COLUMN traceparent text;

-- The enqueue functions take p_traceparent and p_tracestate: the old signatures go, and so do their
-- grants' rows.
DROP FUNCTION IF EXISTS prescient.schedule(text, text, text, timestamptz, text, text, jsonb, text, text, timestamptz,
                                           interval, interval, interval, text[], boolean, integer);
DROP FUNCTION IF EXISTS prescient.schedule_problems(text[], text[], text[], timestamptz[], text[], text[], text[],
                                                    text[], text[], text, text, timestamptz, interval[], interval[],
                                                    interval[], text[], boolean, integer[]);
DROP FUNCTION IF EXISTS prescient.schedule_arrays(text[], text[], text[], timestamptz[], text[], text[], text[], text[],
                                                  text[], text, text, timestamptz, boolean, interval[], interval[],
                                                  interval[], text[], boolean, integer[]);
DROP FUNCTION IF EXISTS prescient.array_requests(text[], text[], text[], timestamptz[], text[], text[], text[], text[],
                                                 text[], text, text, interval[], interval[], interval[], text[],
                                                 timestamptz, integer, bigint, text[], integer[]);
DROP FUNCTION IF EXISTS prescient.array_items(text[], text[], text[], timestamptz[], text[], text[], text[], text[],
                                              text[], text, text, interval[], interval[], interval[], integer[]);
UPDATE prescient.role_grant
   SET statement = replace(statement, 'interval, interval, interval, text[], boolean, integer)',
                           'interval, interval, interval, text[], boolean, integer, text, text)')
 WHERE statement LIKE '%prescient.schedule(text, text, text, timestamptz, %interval, interval, interval, text[], boolean, integer)%';
UPDATE prescient.role_grant
   SET statement = replace(statement, 'boolean, interval[], interval[], interval[], text[], boolean, integer[])',
                           'boolean, interval[], interval[], interval[], text[], boolean, integer[], text[], text[])')
 WHERE statement LIKE '%prescient.schedule_arrays(%boolean, interval[], interval[], interval[], text[], boolean, integer[])%';
-- worker_take answers each check's trace context too: a new row type.
DROP FUNCTION IF EXISTS prescient.worker_take(text, text[], integer, double precision, timestamptz);
