-- 0010: least-privilege roles. Grant them to the login roles of your applications and runners:
--   GRANT prescient_client TO app_login;      -- schedule, cancel, reschedule, read
--   GRANT prescient_runner TO runner_login;   -- claim, settle, emit, read
-- Everything else (migrate, purge, retry, cron add/update/remove, dropping anything) stays with the
-- owner of the schema, the role that runs `prescient migrate`.
--
-- The enqueue functions run with their owner's rights (SECURITY DEFINER, fixed search_path), so a
-- client writes future_job only through the rules they enforce; its direct rights are read-only. A
-- claim is SELECT ... FOR UPDATE, which needs UPDATE: a client cannot claim.
-- The grants are rows of prescient.role_grant (0012), granted by prescient.regrant_roles()
-- (sql/functions/090_roles.sql), which `prescient migrate` calls after every run.
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
EXCEPTION WHEN insufficient_privilege THEN
  RAISE WARNING 'prescient: roles prescient_client and prescient_runner were not created (%): have an '
                'administrator create them (NOLOGIN), then run SELECT prescient.grant_roles() as the schema owner',
                SQLERRM;
END $$;
