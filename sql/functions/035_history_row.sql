-- The history row: the one place that says what a row of prescient.job_history holds (docs/design.md,
-- "Every rule has one home"). Every writer of history inserts what this function makes, and nothing else:
-- the runner's settlement (kSettle, engine/src/db/runner_statements.hpp), cancel, the overlap policy's
-- cancel_previous and, through cron_occurrence_history (047), an occurrence skipped by the overlap policy
-- or fired after its deadline.
--
-- p_check is the pending check as it was (a row of future_job: RETURNING f of its DELETE gives it whole, or
-- ROW(d.*)::prescient.future_job of the columns RETURNING f.* gives, which the planner turns back into the
-- columns once it has inlined this function, as the runner's settlement does), the rest how it ended: by
-- whom and when, the outcome, its count of checks and attempts and last error as the settlement leaves them,
-- the run's time, a JSON object the settlement merges into the payload (NULL: the payload as it was), and the
-- result a worker kept (docs/workers.md). Its last check is the
-- time it was due (next_check_at); a check cancelled
-- before that time was never looked at then, so its last check is when it was cancelled. Its asked-for
-- time, its own policy, its priority and its trace context go with it, so that `prescient retry` puts it back
-- with the same; a digest's marker too, and the payloads that arrived during its last run (which a cancel
-- leaves there, and any other end hands to a new check: sql/functions/042_collect.sql); and the calendar, its
-- version and the business delay that computed its time, if one did.
--
-- Written as one ROW expression, in job_history's column order, so the planner inlines it into the
-- caller's statement (an SQL function, one SELECT without FROM, VOLATILE, neither SECURITY DEFINER nor
-- SET): `INSERT INTO prescient.job_history SELECT (prescient.history_row(...)).*` costs what the column
-- list it replaces did (docs/performance.md, "The history row through one function"). So it draws the
-- row's id itself, as the column's default would, and a new row is never retried.
CREATE OR REPLACE FUNCTION prescient.history_row(
    p_check prescient.future_job, p_outcome text, p_finished_at timestamptz, p_finished_by text,
    p_check_count integer, p_attempts integer, p_last_error text, p_run_micros bigint DEFAULT NULL,
    p_payload_update jsonb DEFAULT NULL, p_result jsonb DEFAULT NULL)
  RETURNS prescient.job_history LANGUAGE sql VOLATILE AS $$
  SELECT ROW(nextval('prescient.job_history_history_id_seq'),  -- history_id
             p_check.id,                                         -- id
             p_check.job,                                        -- job
             p_check.entity_name,                                -- entity_name
             p_check.entity_key,                                 -- entity_key
             p_check.job_key,                                    -- job_key
             p_check.group_key,                                  -- group_key
             coalesce(p_check.payload || p_payload_update, p_check.payload),  -- payload
             p_check.first_check_at,                             -- first_check_at
             CASE WHEN p_outcome = 'cancelled' THEN least(p_check.next_check_at, p_finished_at)
                  ELSE p_check.next_check_at END,                -- last_check_at
             p_check_count,                                      -- check_count
             p_attempts,                                         -- attempts
             p_last_error,                                       -- last_error
             p_check.enqueued_on,                                -- enqueued_on
             p_check.enqueued_by,                                -- enqueued_by
             p_finished_at,                                      -- finished_at
             p_finished_by,                                      -- finished_by
             p_outcome,                                          -- outcome
             p_run_micros,                                       -- run_micros
             false,                                              -- retried
             p_check.asked_for_at,                               -- asked_for_at
             p_check.max_checks,                                 -- max_checks (the check's own policy)
             p_check.max_attempts,                               -- max_attempts
             p_check.backoff_seconds,                            -- backoff_seconds
             p_check.backoff_max_seconds,                         -- backoff_max_seconds
             p_result,                                           -- result (a worker's, docs/workers.md)
             p_check.priority,                                   -- priority
             p_check.traceparent,                                -- traceparent
             p_check.tracestate,                                 -- tracestate
             p_check.collects,                                   -- collects (a digest, 042_collect.sql)
             p_check.collect_pending,                            -- collect_pending
             p_check.calendar,                                   -- calendar (business time, 038)
             p_check.calendar_version,                           -- calendar_version
             p_check.business_delay)::prescient.job_history      -- business_delay
$$;
REVOKE EXECUTE ON FUNCTION
  prescient.history_row(prescient.future_job, text, timestamptz, text, integer, integer, text, bigint, jsonb, jsonb)
  FROM PUBLIC;
