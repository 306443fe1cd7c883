-- The grants of the least-privilege roles (docs/guarantees.md, "Least privilege"): one statement a row of
-- prescient.role_grant, so that a migration adds its own rows instead of replacing grant_roles() with a
-- longer copy of it.
CREATE OR REPLACE FUNCTION prescient.grant_roles() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_statement text;
BEGIN
  FOR v_statement IN SELECT statement FROM prescient.role_grant ORDER BY added_by, statement LOOP
    EXECUTE v_statement;
  END LOOP;
END $$;
REVOKE EXECUTE ON FUNCTION prescient.grant_roles() FROM PUBLIC;

-- What prescient_client may read of future_job: every column but claim_token, the lease's fencing token, a
-- secret of the worker or runner that holds the lease (0048; docs/workers.md, "What a worker may do"). The
-- columns come from the catalog, so a column added later is readable with the rest. A table-wide SELECT
-- would override the column grants: it is taken back first (which takes the column grants back too).
CREATE OR REPLACE FUNCTION prescient.grant_check_columns_but_the_token() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE 'REVOKE SELECT ON prescient.future_job FROM prescient_client';
  EXECUTE (SELECT format('GRANT SELECT (%s) ON prescient.future_job TO prescient_client',
                         string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum))
             FROM pg_attribute a
            WHERE a.attrelid = 'prescient.future_job'::regclass AND a.attnum > 0 AND NOT a.attisdropped
              AND a.attname <> 'claim_token');
END $$;
REVOKE EXECUTE ON FUNCTION prescient.grant_check_columns_but_the_token() FROM PUBLIC;

-- Grants what grant_roles() grants, when the roles exist (migration 0010 creates them when it may; otherwise an
-- administrator does, then calls grant_roles() once). `prescient migrate` calls it after every run.
CREATE OR REPLACE FUNCTION prescient.regrant_roles() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'prescient_client')
     AND EXISTS (SELECT FROM pg_roles WHERE rolname = 'prescient_runner') THEN
    PERFORM prescient.grant_roles();
  END IF;
EXCEPTION WHEN insufficient_privilege THEN
  RAISE WARNING 'prescient: could not grant to prescient_client and prescient_runner (%): run SELECT '
                'prescient.grant_roles() as the schema owner', SQLERRM;
END $$;
REVOKE EXECUTE ON FUNCTION prescient.regrant_roles() FROM PUBLIC;
