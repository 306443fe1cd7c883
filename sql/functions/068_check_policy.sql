-- A check's own policy (sql/0037): what it overrides of its class's for this check alone. Called in the
-- transaction that enqueued the check (the C++ client and the CLI do so when a request carries a policy),
-- or later while it is pending. The values' rules are the class policy's (policy_problem, 067); a backoff_max
-- under the backoff is refused as it stands after the call. NULL arguments clear the check's own values: the
-- class's policy applies again. Returns false when no check with that id is pending.
CREATE OR REPLACE FUNCTION prescient.set_check_policy(
    p_id bigint, p_max_checks integer DEFAULT NULL, p_max_attempts integer DEFAULT NULL,
    p_backoff interval DEFAULT NULL, p_backoff_max interval DEFAULT NULL)
  RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_problem text := prescient.policy_problem(p_max_checks, p_max_attempts, p_backoff, p_backoff_max, NULL);
BEGIN
  IF v_problem IS NULL AND p_backoff_max < p_backoff THEN
    v_problem := format('backoff_max %s is under the backoff %s', prescient.duration_text(p_backoff_max),
                        prescient.duration_text(p_backoff));
  END IF;
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  UPDATE prescient.future_job
     SET max_checks = p_max_checks, max_attempts = p_max_attempts,
         backoff_seconds = extract(epoch FROM p_backoff)::bigint,
         backoff_max_seconds = extract(epoch FROM p_backoff_max)::bigint
   WHERE id = p_id;
  RETURN FOUND;
END $$;
REVOKE EXECUTE ON FUNCTION prescient.set_check_policy(bigint, integer, integer, interval, interval) FROM PUBLIC;
