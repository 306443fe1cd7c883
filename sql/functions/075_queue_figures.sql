-- Figures of the whole queue (the tables of migration 0017), counted by one session at a time for all
-- runners, at most once per p_max_age: `stats`, the metrics and the dashboard read them instead of
-- counting big tables per request. Returns false, counting nothing, when another session is counting
-- or the figures are younger than p_max_age.
--
-- Cost: the pending checks of the day ahead (an index range) every time, and the rest of the pending table
-- (a scan, with arithmetic only per row) one time in ten; the history of the last one or two hours (the
-- hours before are final and kept); the failed checks of 30 days (a partial index).
-- Whether a history row is a dead letter: a failed settlement not put back since (a retry marks the failure it
-- revives, migration 0020). Its one definition: the figures' count below, the Checks API's reads and its retry
-- (engine/src/db/checks.cpp) call it. A plain SQL expression, inlined where it is called, so the planner still
-- proves the predicate of the partial index job_history_dead_letter (outcome = 'failed' AND NOT retried).
CREATE OR REPLACE FUNCTION prescient.dead_letter(p_outcome text, p_retried boolean) RETURNS boolean
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN p_outcome = 'failed' AND NOT p_retried;

CREATE OR REPLACE FUNCTION prescient.refresh_queue_figures(p_now timestamptz DEFAULT now(),
                                                           p_max_age interval DEFAULT interval '60 seconds')
  RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_started timestamptz := clock_timestamp();
  v_step interval;
  v_slot timestamptz;
  v_last_slot timestamptz;
  v_previous_slot timestamptz; v_hour_end timestamptz; v_day_end timestamptz; v_week_end timestamptz;
  v_year_end timestamptz;
  v_far_counted_at timestamptz; v_far_from timestamptz;
  v_final_before timestamptz;
  v_recount_from timestamptz;
  v_day_ago timestamptz := date_trunc('hour', p_now - interval '1 day', 'UTC');
  v_overdue bigint; v_due bigint; v_next_hour bigint; v_next_day bigint; v_next_week bigint; v_pending bigint;
  v_dead bigint;
  v_last_hour jsonb;
  v_newest_check bigint;
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
  SELECT history_final_before, far_counted_at, far_from INTO v_final_before, v_far_counted_at, v_far_from
    FROM prescient.queue_figures;
  -- Before counting: a check committed while the count runs may or may not be counted; its id, above this
  -- one, makes stats count again (a check that takes its id earlier and commits after the count is missed
  -- until the next count, within a minute).
  SELECT coalesce(max(id), 0) INTO v_newest_check FROM prescient.future_job;

  SELECT make_interval(secs => slot_seconds) INTO STRICT v_step FROM prescient.settings;
  v_slot := date_bin(v_step, p_now, timestamptz 'epoch');
  v_last_slot := v_slot + 1000 * v_step;
  -- Bounds computed once: timestamptz + interval is calendar arithmetic, too dear to repeat per row.
  v_previous_slot := v_slot - v_step;
  v_hour_end := v_slot + interval '1 hour';
  v_day_end := v_slot + interval '1 day';
  v_week_end := v_slot + interval '7 days';
  v_year_end := v_slot + interval '366 days';

  -- A row off the grid (another tool wrote it) counts in the slot that will run it: the next boundary.
  -- Disjoint ranges of the slot index, with plain arithmetic per row (date_bin from the epoch is the UTC
  -- hour or day). Up to far_from (a day ahead): per slot for 1 000 slots, overdue ones included, then per
  -- hour; counted every time. After far_from (the bulk of a long horizon, and what changes least): per
  -- day and 'later', counted when ten periods old, or when the slots would reach far_from.
  IF v_far_counted_at IS NULL OR v_far_counted_at <= p_now - 10 * p_max_age OR v_far_counted_at > p_now
     OR v_far_from < v_last_slot THEN
    v_far_counted_at := p_now;
    v_far_from := greatest(v_last_slot, v_day_end);
    DELETE FROM prescient.pending_figure WHERE bucket IN ('day', 'later');
    INSERT INTO prescient.pending_figure (bucket, starts_at, job, checks)
    SELECT bucket, CASE WHEN bucket = 'day' THEN date_bin(interval '1 day', t, timestamptz 'epoch') END, job, count(*)
      FROM (SELECT job, next_check_at AS t, CASE WHEN next_check_at <= v_year_end THEN 'day' ELSE 'later' END AS bucket
              FROM prescient.future_job WHERE next_check_at > v_far_from) AS far
     GROUP BY 1, 2, 3;
  END IF;
  DELETE FROM prescient.pending_figure WHERE bucket IN ('overdue', 'due', 'slot', 'hour');
  INSERT INTO prescient.pending_figure (bucket, starts_at, job, checks)
  SELECT CASE WHEN slot < v_slot THEN 'overdue' WHEN slot = v_slot THEN 'due' WHEN slot <= v_last_slot THEN 'slot'
              ELSE 'hour' END,
         CASE WHEN slot < v_slot THEN NULL WHEN slot <= v_last_slot THEN slot
              ELSE date_bin(interval '1 hour', t, timestamptz 'epoch') END,
         job, count(*)
    FROM (SELECT job, next_check_at AS t,
                 date_bin(v_step, next_check_at + v_step - interval '1 microsecond', timestamptz 'epoch') AS slot
            FROM prescient.future_job WHERE next_check_at <= v_far_from) AS near
   GROUP BY 1, 2, 3;
  SELECT count(*) FILTER (WHERE next_check_at <= v_previous_slot),
         count(*) FILTER (WHERE next_check_at > v_previous_slot AND next_check_at <= v_slot),
         count(*) FILTER (WHERE next_check_at > v_slot AND next_check_at <= v_hour_end),
         count(*) FILTER (WHERE next_check_at > v_hour_end AND next_check_at <= v_day_end),
         count(*) FILTER (WHERE next_check_at > v_day_end)
    INTO v_overdue, v_due, v_next_hour, v_next_day, v_next_week
    FROM prescient.future_job WHERE next_check_at <= v_week_end;
  SELECT coalesce(sum(checks), 0) INTO v_pending FROM prescient.pending_figure;

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

  -- An index-only count over the partial index job_history_dead_letter.
  SELECT count(*) INTO v_dead FROM prescient.job_history h
   WHERE prescient.dead_letter(h.outcome, h.retried) AND h.finished_at >= p_now - interval '30 days' AND h.finished_at <= p_now;

  INSERT INTO prescient.queue_figures AS f
    (counted_at, current_slot, count_millis, pending, overdue, due, next_hour, next_day, next_week, dead_letters,
     finished_last_hour, history_final_before, far_counted_at, far_from, newest_check_id)
  VALUES (p_now, v_slot, (extract(epoch FROM clock_timestamp() - v_started) * 1000)::integer,
          v_pending, v_overdue, v_due, v_next_hour,
          v_next_day, v_next_week, v_dead, v_last_hour, date_trunc('hour', p_now, 'UTC') - interval '1 hour',
          v_far_counted_at, v_far_from, v_newest_check)
  ON CONFLICT (singleton) DO UPDATE SET
    counted_at = EXCLUDED.counted_at, current_slot = EXCLUDED.current_slot, count_millis = EXCLUDED.count_millis,
    pending = EXCLUDED.pending, overdue = EXCLUDED.overdue, due = EXCLUDED.due, next_hour = EXCLUDED.next_hour,
    next_day = EXCLUDED.next_day, next_week = EXCLUDED.next_week, dead_letters = EXCLUDED.dead_letters,
    finished_last_hour = EXCLUDED.finished_last_hour, history_final_before = EXCLUDED.history_final_before,
    far_counted_at = EXCLUDED.far_counted_at, far_from = EXCLUDED.far_from,
    newest_check_id = EXCLUDED.newest_check_id;
  RETURN true;
END $$;
REVOKE EXECUTE ON FUNCTION prescient.refresh_queue_figures(timestamptz, interval) FROM PUBLIC;
