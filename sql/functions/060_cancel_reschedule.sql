-- Cancels a pending check by id or by job key (exactly one of them): the row moves to job_history
-- with outcome 'cancelled', who and when. Returns the check's id, or NULL when no pending check
-- matched (it may have finished already: its history says so). A check being run right now is
-- cancelled once its runner has settled it, if it is still pending then.
CREATE OR REPLACE FUNCTION prescient.cancel(
    p_id bigint DEFAULT NULL, p_job_key text DEFAULT NULL, p_by text DEFAULT current_user,
    p_now timestamptz DEFAULT now())
  RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_id bigint;
BEGIN
  IF (p_id IS NULL) = (p_job_key IS NULL) THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'cancel needs exactly one of an id or a job key';
  END IF;
  IF coalesce(p_by, '') = '' THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'cancelled_by is empty';
  END IF;
  WITH gone AS (
    DELETE FROM prescient.future_job f
     WHERE (p_id IS NOT NULL AND f.id = p_id) OR (p_job_key IS NOT NULL AND f.job_key = p_job_key)
    RETURNING f AS pending, f.check_count, f.attempts, f.last_error)
  INSERT INTO prescient.job_history
  SELECT (prescient.history_row(g.pending, 'cancelled', p_now, p_by, g.check_count, g.attempts, g.last_error)).*
    FROM gone g
  RETURNING id INTO v_id;
  RETURN v_id;
END $$;

-- Moves a pending check (by id or by job key) to another time, by the same rounding and horizon
-- rules as schedule; a check timed in business time is then timed in elapsed time. Returns the row's id, job key and new time; no row when nothing matched.
CREATE OR REPLACE FUNCTION prescient.reschedule(
    p_at timestamptz, p_id bigint DEFAULT NULL, p_job_key text DEFAULT NULL, p_now timestamptz DEFAULT now())
  RETURNS TABLE (id bigint, job_key text, next_check_at timestamptz)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
  v_settings prescient.settings;
BEGIN
  IF (p_id IS NULL) = (p_job_key IS NULL) THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'reschedule needs exactly one of an id or a job key';
  END IF;
  SELECT * INTO STRICT v_settings FROM prescient.settings;
  IF p_at IS NULL OR p_now IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'no time given';
  END IF;
  IF prescient.horizon_problem(p_at, p_now, v_settings.max_horizon_seconds) IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = prescient.horizon_problem(p_at, p_now, v_settings.max_horizon_seconds);
  END IF;
  RETURN QUERY
    UPDATE prescient.future_job f
       SET next_check_at = prescient.slot_for(p_at, p_now, v_settings.slot_seconds), asked_for_at = p_at,
           -- A time given in elapsed time: no calendar computed it any more.
           calendar = NULL, calendar_version = NULL, business_delay = NULL
     WHERE (p_id IS NOT NULL AND f.id = p_id) OR (p_job_key IS NOT NULL AND f.job_key = p_job_key)
    RETURNING f.id, f.job_key, f.next_check_at;
END $$;
REVOKE EXECUTE ON FUNCTION
  prescient.cancel(bigint, text, text, timestamptz),
  prescient.reschedule(timestamptz, bigint, text, timestamptz)
  FROM PUBLIC;
