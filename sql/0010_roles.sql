-- 0010: least-privilege roles. Grant them to the login roles of your applications and runners:
--   GRANT prescient_client TO app_login;      -- schedule, cancel, reschedule, read
--   GRANT prescient_runner TO runner_login;   -- claim, settle, emit, read
-- Everything else (migrate, purge, retry, cron add/update/remove, dropping anything) stays with the
-- owner of the schema, the role that runs `prescient migrate`.
--
-- The enqueue functions run with their owner's rights (SECURITY DEFINER, fixed search_path), so a
-- client writes future_job only through the rules they enforce; its direct rights are read-only. A
-- claim is SELECT ... FOR UPDATE, which needs UPDATE: a client cannot claim.
ALTER FUNCTION prescient.schedule(text, text, text, timestamptz, text, text, jsonb, text, text, timestamptz)
  SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION prescient.schedule_many(json, text, text, timestamptz, boolean)
  SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION prescient.cancel(bigint, text, text, timestamptz)
  SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
ALTER FUNCTION prescient.reschedule(timestamptz, bigint, text, timestamptz)
  SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
REVOKE EXECUTE ON FUNCTION
  prescient.schedule(text, text, text, timestamptz, text, text, jsonb, text, text, timestamptz),
  prescient.schedule_many(json, text, text, timestamptz, boolean),
  prescient.cancel(bigint, text, text, timestamptz),
  prescient.reschedule(timestamptz, bigint, text, timestamptz)
  FROM PUBLIC;

-- The grants, in one function a later migration can replace and call again (new tables), and an
-- administrator can call once the roles exist when the migrating role could not create them.
CREATE FUNCTION prescient.grant_roles() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  GRANT USAGE ON SCHEMA prescient TO prescient_client, prescient_runner;
  GRANT SELECT ON prescient.settings, prescient.schema_migrations, prescient.future_job, prescient.job_history,
                  prescient.schedule, prescient.event
    TO prescient_client, prescient_runner;
  GRANT EXECUTE ON FUNCTION
    prescient.schedule(text, text, text, timestamptz, text, text, jsonb, text, text, timestamptz),
    prescient.schedule_many(json, text, text, timestamptz, boolean),
    prescient.cancel(bigint, text, text, timestamptz),
    prescient.reschedule(timestamptz, bigint, text, timestamptz)
    TO prescient_client, prescient_runner;
  -- The runner: claim (FOR UPDATE), settle (delete, update, history, events), leases, the cron class's
  -- bookkeeping (last occurrence, missed-deadline rows).
  GRANT UPDATE, DELETE ON prescient.future_job TO prescient_runner;
  GRANT INSERT ON prescient.job_history, prescient.event TO prescient_runner;
  GRANT USAGE ON SEQUENCE prescient.job_history_history_id_seq, prescient.event_seq_seq TO prescient_runner;
  GRANT UPDATE (last_occurrence_at) ON prescient.schedule TO prescient_runner;
END $$;
REVOKE EXECUTE ON FUNCTION prescient.grant_roles() FROM PUBLIC;

DO $$
BEGIN
  BEGIN
    CREATE ROLE prescient_client NOLOGIN;
  EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;  -- another database of this cluster made it
  END;
  BEGIN
    CREATE ROLE prescient_runner NOLOGIN;
  EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
  END;
  PERFORM prescient.grant_roles();
EXCEPTION WHEN insufficient_privilege THEN
  RAISE WARNING 'prescient: roles prescient_client and prescient_runner were not created (%): have an '
                'administrator create them (NOLOGIN), then run SELECT prescient.grant_roles() as the schema owner',
                SQLERRM;
END $$;
