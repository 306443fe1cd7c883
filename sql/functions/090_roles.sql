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
