-- The floor's transaction (../shared/floor/lock_settle.sql) on prescient's own tables, with no engine:
-- claim 1 000 due rows in the runner's order (the index future_job_due) with their row locks as the lease,
-- then move them to the history in one statement, each as a done check after its first run. What it costs
-- against the bare floor is what prescient's schema costs (the wider rows, the history's partitions and
-- indexes), whatever the engine does; prescient's drain against it is what the engine costs
-- (docs/performance.md). The history row's columns are listed here, not made by prescient.history_row,
-- to keep the engine's SQL out of the figure.
BEGIN;
SELECT quote_literal(array_agg(id)::text) AS ids
  FROM (SELECT id FROM prescient.future_job WHERE next_check_at = '2026-01-01T00:00:00Z'
         ORDER BY next_check_at, priority, id LIMIT 1000 FOR UPDATE SKIP LOCKED) s \gset
WITH c AS (DELETE FROM prescient.future_job WHERE id = ANY (:ids::bigint[]) RETURNING *)
INSERT INTO prescient.job_history (id, job, entity_name, entity_key, job_key, group_key, payload, first_check_at,
                                   last_check_at, check_count, attempts, last_error, enqueued_on, enqueued_by,
                                   finished_at, finished_by, outcome, run_micros, asked_for_at, max_checks,
                                   max_attempts, backoff_seconds, backoff_max_seconds, priority, traceparent,
                                   tracestate, collects, collect_pending)
SELECT id, job, entity_name, entity_key, job_key, group_key, payload, first_check_at, next_check_at,
       check_count + 1, attempts, last_error, enqueued_on, enqueued_by, now(), 'floor', 'done', 1, asked_for_at,
       max_checks, max_attempts, backoff_seconds, backoff_max_seconds, priority, traceparent, tracestate,
       collects, collect_pending
  FROM c;
COMMIT;
