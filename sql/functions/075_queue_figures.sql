-- Figures of the whole queue (the tables of migration 0017), counted by one session at a time for all
-- runners, at most once per p_max_age: `stats`, the metrics and the dashboard read them instead of
-- counting big tables per request. Returns false, counting nothing, when another session is counting
-- or the figures are younger than p_max_age.
--
-- Cost: one pass over the pending table (one row per job class and bucket kept), the history of the
-- last one or two hours (the hours before are final and kept), and the failed checks of 30 days (a
-- partial index).
CREATE OR REPLACE FUNCTION prescient.refresh_queue_figures(p_now timestamptz DEFAULT now(),
                                                           p_max_age interval DEFAULT interval '60 seconds')
  RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_started timestamptz := clock_timestamp();
  v_step interval;
  v_slot timestamptz;
  v_last_slot timestamptz;
  v_final_before timestamptz;
  v_recount_from timestamptz;
  v_day_ago timestamptz := date_trunc('hour', p_now - interval '1 day', 'UTC');
  v_overdue bigint; v_due bigint; v_next_hour bigint; v_next_day bigint; v_next_week bigint; v_later bigint;
  v_dead bigint;
  v_last_hour jsonb;
BEGIN
  IF p_now IS NULL OR p_max_age IS NULL OR p_max_age < interval '0' THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'refresh_queue_figures needs a time and a maximum age >= 0';
  END IF;
  IF NOT EXISTS (SELECT FROM prescient.queue_figures) THEN
    PERFORM pg_advisory_xact_lock(7375828459127746562);  -- none yet: wait for the session counting them first
  ELSIF NOT pg_try_advisory_xact_lock(7375828459127746562) THEN
    RETURN false;  -- another session is counting: the figures it finds serve meanwhile
  END IF;
  PERFORM FROM prescient.queue_figures WHERE counted_at > p_now - p_max_age AND counted_at <= p_now;
  IF FOUND THEN
    RETURN false;
  END IF;
  SELECT history_final_before INTO v_final_before FROM prescient.queue_figures;

  SELECT make_interval(secs => slot_seconds) INTO STRICT v_step FROM prescient.settings;
  v_slot := date_bin(v_step, p_now, timestamptz 'epoch');
  v_last_slot := v_slot + 1000 * v_step;

  -- A row off the grid (another tool wrote it) counts in the slot that will run it: the next boundary.
  DELETE FROM prescient.pending_figure;
  WITH on_grid AS (
    SELECT job, next_check_at AS t,
           date_bin(v_step, next_check_at + v_step - interval '1 microsecond', timestamptz 'epoch') AS slot
      FROM prescient.future_job
  ), bucketed AS (
    SELECT job, t, slot,
           CASE WHEN slot < v_slot THEN 'overdue' WHEN slot = v_slot THEN 'due'
                WHEN slot <= v_last_slot THEN 'slot'
                WHEN t <= v_slot + interval '1 day' THEN 'hour'
                WHEN t <= v_slot + interval '366 days' THEN 'day' ELSE 'later' END AS bucket,
           CASE WHEN slot < v_slot THEN 'overdue' WHEN slot = v_slot THEN 'due'
                WHEN t <= v_slot + interval '1 hour' THEN 'next_hour'
                WHEN t <= v_slot + interval '1 day' THEN 'next_day'
                WHEN t <= v_slot + interval '7 days' THEN 'next_week' ELSE 'later' END AS horizon
      FROM on_grid
  ), classified AS (
    SELECT job, bucket, horizon,
           CASE bucket WHEN 'due' THEN slot WHEN 'slot' THEN slot WHEN 'hour' THEN date_trunc('hour', t, 'UTC')
                       WHEN 'day' THEN date_trunc('day', t, 'UTC') END AS starts_at
      FROM bucketed
  ), counted AS (
    -- One pass, two groupings: the buckets kept for charts, and the horizons of the metrics.
    SELECT bucket, starts_at, job, horizon, count(*) AS checks
      FROM classified GROUP BY GROUPING SETS ((bucket, starts_at, job), (horizon))
  ), kept AS (
    INSERT INTO prescient.pending_figure (bucket, starts_at, job, checks)
    SELECT bucket, starts_at, job, checks FROM counted WHERE horizon IS NULL
  )
  SELECT coalesce(sum(checks) FILTER (WHERE horizon = 'overdue'), 0),
         coalesce(sum(checks) FILTER (WHERE horizon = 'due'), 0),
         coalesce(sum(checks) FILTER (WHERE horizon = 'next_hour'), 0),
         coalesce(sum(checks) FILTER (WHERE horizon = 'next_day'), 0),
         coalesce(sum(checks) FILTER (WHERE horizon = 'next_week'), 0),
         coalesce(sum(checks) FILTER (WHERE horizon = 'later'), 0)
    INTO v_overdue, v_due, v_next_hour, v_next_day, v_next_week, v_later
    FROM counted WHERE horizon IS NOT NULL;

  -- The hours of history before v_final_before were counted once they were over, and are kept; the last
  -- hour is counted again too, for settlements committed after their hour ended.
  v_recount_from := greatest(v_day_ago, least(coalesce(v_final_before, v_day_ago),
                                              date_trunc('hour', p_now, 'UTC') - interval '1 hour'));
  DELETE FROM prescient.finished_figure WHERE hour >= v_recount_from OR hour < v_day_ago;
  INSERT INTO prescient.finished_figure (hour, outcome, checks, lateness_p50_seconds, lateness_p99_seconds)
  SELECT date_trunc('hour', finished_at, 'UTC'), outcome, count(*),
         -- Lateness is the time from the slot a check was due at to its settlement: not a thing a
         -- cancelled check has.
         CASE WHEN outcome <> 'cancelled' THEN
           percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - last_check_at)) END,
         CASE WHEN outcome <> 'cancelled' THEN
           percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM finished_at - last_check_at)) END
    FROM prescient.job_history
   WHERE finished_at >= v_recount_from AND finished_at <= p_now
   GROUP BY 1, 2;

  SELECT coalesce(jsonb_object_agg(outcome, checks), '{}') INTO v_last_hour
    FROM (SELECT outcome, count(*) AS checks FROM prescient.job_history
           WHERE finished_at >= p_now - interval '1 hour' AND finished_at <= p_now GROUP BY outcome) AS counted;

  SELECT count(DISTINCT h.id) INTO v_dead FROM prescient.job_history h
   WHERE h.outcome = 'failed' AND h.finished_at >= p_now - interval '30 days' AND h.finished_at <= p_now
     AND NOT EXISTS (SELECT FROM prescient.future_job f WHERE f.id = h.id);

  INSERT INTO prescient.queue_figures AS f
    (counted_at, current_slot, count_millis, pending, overdue, due, next_hour, next_day, next_week, dead_letters,
     finished_last_hour, history_final_before)
  VALUES (p_now, v_slot, (extract(epoch FROM clock_timestamp() - v_started) * 1000)::integer,
          v_overdue + v_due + v_next_hour + v_next_day + v_next_week + v_later, v_overdue, v_due, v_next_hour,
          v_next_day, v_next_week, v_dead, v_last_hour, date_trunc('hour', p_now, 'UTC') - interval '1 hour')
  ON CONFLICT (singleton) DO UPDATE SET
    counted_at = EXCLUDED.counted_at, current_slot = EXCLUDED.current_slot, count_millis = EXCLUDED.count_millis,
    pending = EXCLUDED.pending, overdue = EXCLUDED.overdue, due = EXCLUDED.due, next_hour = EXCLUDED.next_hour,
    next_day = EXCLUDED.next_day, next_week = EXCLUDED.next_week, dead_letters = EXCLUDED.dead_letters,
    finished_last_hour = EXCLUDED.finished_last_hour, history_final_before = EXCLUDED.history_final_before;
  RETURN true;
END $$;
REVOKE EXECUTE ON FUNCTION prescient.refresh_queue_figures(timestamptz, interval) FROM PUBLIC;
