-- 0038: workers in any language (docs/workers.md). A worker class's checks are taken and settled by workers
-- in the application's own service through the protocol functions (sql/functions/072_worker_protocol.sql),
-- which apply the rules the runner's settlement applies (prescient.judge, 069). This adds:
--  - the result a worker may keep with a finished check (at most 64 KiB of JSON), in the history;
--  - the role prescient_worker: what prescient_client may (enqueue, cancel, reschedule, read), and the
--    protocol's functions; it cannot write future_job directly;
--  - the index a worker's take probes: due checks of its classes, oldest first, is future_job_job
--    (job, next_check_at, id), which exists since 0001.
ALTER TABLE prescient.job_history ADD COLUMN result jsonb;
-- history_row (035) makes the row in the table's column order: it takes the result now.
DROP FUNCTION IF EXISTS prescient.history_row(prescient.future_job, text, timestamptz, text, integer, integer, text, bigint,
                                              jsonb);
UPDATE prescient.role_grant
   SET statement = replace(statement, 'text, bigint, jsonb), prescient.cron_occurrence_history',
                           'text, bigint, jsonb, jsonb), prescient.cron_occurrence_history')
 WHERE added_by = 31 AND statement LIKE 'GRANT EXECUTE ON FUNCTION prescient.history_row(%';

DO $$
BEGIN
  BEGIN
    CREATE ROLE prescient_worker NOLOGIN;
  EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;  -- another database of this cluster made it
  END;
EXCEPTION WHEN insufficient_privilege THEN
  RAISE WARNING 'prescient: role prescient_worker was not created (%): have an administrator create it '
                '(NOLOGIN), then run SELECT prescient.grant_roles() as the schema owner', SQLERRM;
END $$;

INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT prescient_client TO prescient_worker', 38),
  ('GRANT EXECUTE ON FUNCTION prescient.worker_take(text, text[], integer, double precision, timestamptz),'
   ' prescient.worker_complete(bigint[], bigint[], timestamptz[], jsonb[], timestamptz),'
   ' prescient.worker_fail(bigint[], bigint[], text[], timestamptz),'
   ' prescient.worker_extend(bigint[], bigint[], double precision, timestamptz),'
   ' prescient.worker_release(bigint[], bigint[]),'
   ' prescient.worker_next_due(text[], timestamptz) TO prescient_worker', 38);
