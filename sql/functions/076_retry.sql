-- Retry: a failed check of the history put back as pending, its attempts counted afresh, with its asked-for
-- time, its own policy, its priority, its trace and whether it collects (a digest's list, read as one). The
-- rule's one home: `prescient retry`, the dashboard's dead letters (engine/src/db/checks.cpp) and the four
-- worker clients (through worker_retry) call these functions.

-- Puts the given history rows back as pending checks due at p_due_at and marks the failures they revive
-- (prescient.dead_letter, 075): a check has at most one failure not marked, each revival marks the one it
-- revives. ON CONFLICT without a target: the id (a concurrent retry) or the job key (another pending check)
-- skips the row. Answers the ids put back.
CREATE OR REPLACE FUNCTION prescient.revive_history_rows(p_rows prescient.job_history[], p_due_at timestamptz)
  RETURNS SETOF bigint LANGUAGE plpgsql AS $$
DECLARE
  v_revived bigint[];
BEGIN
  WITH revived AS (
    INSERT INTO prescient.future_job (id, job, entity_name, entity_key, job_key, group_key, payload,
        first_check_at, next_check_at, check_count, attempts, last_error, enqueued_on, enqueued_by, asked_for_at,
        max_checks, max_attempts, backoff_seconds, backoff_max_seconds, priority, traceparent, tracestate, collects)
      OVERRIDING SYSTEM VALUE
      SELECT h.id, h.job, h.entity_name, h.entity_key, h.job_key, h.group_key, h.payload, h.first_check_at, p_due_at,
             h.check_count, 0, h.last_error, h.enqueued_on, h.enqueued_by, h.asked_for_at,
             h.max_checks, h.max_attempts, h.backoff_seconds, h.backoff_max_seconds, h.priority, h.traceparent,
             h.tracestate, h.collects
        FROM unnest(p_rows) AS h
      ON CONFLICT DO NOTHING RETURNING id)
  SELECT coalesce(array_agg(id), '{}') INTO v_revived FROM revived;
  UPDATE prescient.job_history SET retried = true
   WHERE id = ANY(v_revived) AND prescient.dead_letter(outcome, retried);
  RETURN QUERY SELECT unnest(v_revived);
END $$;

-- Puts check p_id back from its latest failure, due at p_due_at; answers that time. Refused with the reason:
-- PR409 when the check is pending already or its job key is taken by another pending check, PR404 when the
-- history holds no failure of it.
CREATE OR REPLACE FUNCTION prescient.retry_failed_check(p_id bigint, p_due_at timestamptz)
  RETURNS timestamptz LANGUAGE plpgsql AS $$
DECLARE
  v_failure prescient.job_history;
BEGIN
  IF p_id IS NULL OR p_due_at IS NULL OR NOT isfinite(p_due_at) THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('a retry needs a check id and a finite due time, not %s and %s', p_id, p_due_at);
  END IF;
  -- No look at future_job before the insert: a concurrent retry of the same check could insert between the
  -- look and ours. The insert's conflict covers both; which one it was is read after.
  SELECT * INTO v_failure FROM prescient.job_history
   WHERE id = p_id AND outcome = 'failed' ORDER BY history_id DESC LIMIT 1;
  IF FOUND AND EXISTS (SELECT FROM prescient.revive_history_rows(ARRAY[v_failure], p_due_at)) THEN
    RETURN p_due_at;
  END IF;
  IF EXISTS (SELECT FROM prescient.future_job WHERE id = p_id) THEN
    RAISE EXCEPTION USING ERRCODE = 'PR409', MESSAGE = format('check %s is pending already', p_id);
  END IF;
  IF v_failure.id IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR404', MESSAGE = format('no failed check with id %s in the history', p_id);
  END IF;
  RAISE EXCEPTION USING ERRCODE = 'PR409', MESSAGE = format('the job key %L of check %s is taken by another '
    'pending check', v_failure.job_key, p_id);
END $$;

-- Puts back up to p_limit dead letters (failed, never retried) that finished since p_since, of class p_job
-- (NULL: every class), in id order after p_after_id, due at p_due_at: a page of a "retry all". Answers how
-- many were picked and put back, and the last id picked (the next page's p_after_id; NULL when none was).
CREATE OR REPLACE FUNCTION prescient.retry_dead_letters(p_job text, p_since timestamptz, p_after_id bigint,
                                                        p_limit integer, p_due_at timestamptz,
                                                        OUT picked bigint, OUT revived bigint, OUT last_id bigint)
  LANGUAGE plpgsql AS $$
DECLARE
  v_rows prescient.job_history[];
BEGIN
  IF p_since IS NULL OR p_limit IS NULL OR p_limit < 1 OR p_due_at IS NULL OR NOT isfinite(p_due_at) THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('retry_dead_letters needs a since time, a limit of '
      'at least 1 and a finite due time, not %s, %s and %s', p_since, p_limit, p_due_at);
  END IF;
  -- The walk in id order reads the dead-letter index alone; only the rows picked are read whole.
  SELECT array_agg(h ORDER BY h.id) INTO v_rows FROM prescient.job_history h
   WHERE (h.id, h.history_id, h.finished_at) IN (
     SELECT d.id, d.history_id, d.finished_at FROM prescient.job_history d
      WHERE prescient.dead_letter(d.outcome, d.retried) AND d.finished_at >= p_since
        AND (p_job IS NULL OR d.job = p_job) AND d.id > coalesce(p_after_id, 0)
      ORDER BY d.id LIMIT p_limit);
  picked := coalesce(cardinality(v_rows), 0);
  last_id := v_rows[picked].id;
  SELECT count(*) INTO revived FROM prescient.revive_history_rows(coalesce(v_rows, '{}'), p_due_at);
END $$;

-- A worker retries a dead letter of a worker class (docs/workers.md, "retry: put a dead letter back"), due now by the
-- server's clock: with prescient_worker's rights, never a runner's check. Answers the time it is due.
CREATE OR REPLACE FUNCTION prescient.worker_retry(p_id bigint)
  RETURNS timestamptz LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_job text;
BEGIN
  SELECT h.job INTO v_job FROM prescient.job_history h
   WHERE h.id = p_id AND h.outcome = 'failed' ORDER BY h.history_id DESC LIMIT 1;
  IF FOUND AND NOT EXISTS (SELECT FROM prescient.job_class c WHERE c.job = v_job AND c.runs_in = 'worker') THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('check %s is of job class %L, which the runner '
      'runs: a worker may retry only a worker class''s checks', p_id, v_job);
  END IF;
  RETURN prescient.retry_failed_check(p_id, now());
END $$;
REVOKE EXECUTE ON FUNCTION prescient.worker_retry(bigint) FROM PUBLIC;
