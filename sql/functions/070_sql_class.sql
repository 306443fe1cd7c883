-- The `sql` job class calls an application's SQL function through this one, so the function's
-- name (from a check's payload) never becomes SQL text: it is resolved by to_regprocedure against a
-- fixed signature, and only PostgreSQL's own rendering of the resolved function reaches EXECUTE.
-- The function takes (entity_key text, payload jsonb, check_count integer) and returns the next
-- time to look again (timestamptz) or NULL when the check is done; or jsonb, an object {"next": a time or
-- null, "result": any JSON}, to keep a result with the run (docs/design.md, "Results"). NULL jsonb is done.
CREATE OR REPLACE FUNCTION prescient.call_check_function(
    p_function text, p_entity_key text, p_payload jsonb, p_check_count integer)
  RETURNS TABLE (next_check_at timestamptz, result jsonb) LANGUAGE plpgsql AS $$
DECLARE
  v_function regprocedure;
  v_returns regtype;
  v_next timestamptz;
  v_answer jsonb;
  v_key text;
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
  v_returns := (SELECT prorettype FROM pg_proc WHERE oid = v_function);
  IF v_returns = 'timestamptz'::regtype THEN
    EXECUTE format('SELECT %s($1, $2, $3)', v_function::regproc)
      INTO v_next USING p_entity_key, p_payload, p_check_count;
    RETURN QUERY SELECT v_next, NULL::jsonb;
    RETURN;
  ELSIF v_returns <> 'jsonb'::regtype THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('%s must return timestamptz or jsonb', v_function);
  END IF;
  EXECUTE format('SELECT %s($1, $2, $3)', v_function::regproc)
    INTO v_answer USING p_entity_key, p_payload, p_check_count;
  IF v_answer IS NULL THEN
    RETURN QUERY SELECT NULL::timestamptz, NULL::jsonb;
    RETURN;
  ELSIF jsonb_typeof(v_answer) <> 'object' THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('%s returned %s, not an object of next and result', v_function, left(v_answer::text, 100));
  END IF;
  SELECT k INTO v_key FROM jsonb_object_keys(v_answer) k WHERE k NOT IN ('next', 'result') ORDER BY k LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('%s returned an answer with the unknown key %L (next, result)', v_function, left(v_key, 100));
  END IF;
  IF jsonb_typeof(v_answer->'next') NOT IN ('string', 'null') OR prescient.time_text_problem(v_answer->>'next') IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('%s returned a next that is not a time: %s', v_function, left((v_answer->'next')::text, 100));
  END IF;
  RETURN QUERY SELECT (v_answer->>'next')::timestamptz, v_answer->'result';
END $$;
