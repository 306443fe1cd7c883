-- The `sql` job class calls an application's SQL function through this one, so the function's
-- name (from a check's payload) never becomes SQL text: it is resolved by to_regprocedure against a
-- fixed signature, and only PostgreSQL's own rendering of the resolved function reaches EXECUTE.
-- The function takes (entity_key text, payload jsonb, check_count integer) and returns the next
-- time to look again (timestamptz) or NULL when the check is done.
CREATE OR REPLACE FUNCTION prescient.call_check_function(
    p_function text, p_entity_key text, p_payload jsonb, p_check_count integer)
  RETURNS timestamptz LANGUAGE plpgsql AS $$
DECLARE
  v_function regprocedure;
  v_next timestamptz;
BEGIN
  IF p_function IS NULL OR p_function !~ '^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$' THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('the sql job needs payload.function as schema.name (letters, digits, _), not %L', p_function);
  END IF;
  v_function := to_regprocedure(p_function || '(text, jsonb, integer)');
  IF v_function IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('no function %s(text, jsonb, integer)', p_function);
  END IF;
  IF (SELECT prorettype FROM pg_proc WHERE oid = v_function) <> 'timestamptz'::regtype THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('%s must return timestamptz', v_function);
  END IF;
  EXECUTE format('SELECT %s($1, $2, $3)', v_function::regproc)
    INTO v_next USING p_entity_key, p_payload, p_check_count;
  RETURN v_next;
END $$;
