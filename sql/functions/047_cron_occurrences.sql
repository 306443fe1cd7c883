-- The checks a schedule's occurrences make, when it is not simply one check per occurrence: an overlap
-- policy, and a backfill (docs/schedules.md). The runner calls these with the settlement of a schedule's
-- check (jobs/cron_job.cpp), as the runner role: they run with its rights.

-- The history row of an occurrence of schedule p_schedule that never was a pending check of its own: one
-- the overlap policy skipped (p_check_id the schedule's check, p_job and p_key the occurrence's class and
-- key, never checked) or one fired after its deadline (the schedule's check itself: class cron, its key,
-- its first check and its count). Made by history_row (035) from the check it would have been: entity
-- schedule/p_schedule, no group, due at the occurrence, enqueued, finished and written by cron at p_now,
-- no attempt, p_reason as its last error, the schedule's priority.
CREATE OR REPLACE FUNCTION prescient.cron_occurrence_history(
    p_check_id bigint, p_job text, p_schedule text, p_key text, p_payload jsonb, p_first_check_at timestamptz,
    p_occurrence timestamptz, p_check_count integer, p_outcome text, p_reason text, p_now timestamptz)
  RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_check prescient.future_job;
BEGIN
  v_check.id := p_check_id;
  v_check.job := p_job;
  v_check.entity_name := 'schedule';
  v_check.entity_key := p_schedule;
  v_check.job_key := p_key;
  v_check.payload := p_payload;
  v_check.first_check_at := p_first_check_at;
  v_check.next_check_at := p_occurrence;
  v_check.enqueued_on := p_now;
  v_check.enqueued_by := 'cron';
  v_check.priority := prescient.cron_priority(p_schedule);
  v_check.collects := false;  -- an occurrence is never a digest (a record's field has no column default)
  INSERT INTO prescient.job_history
  SELECT (prescient.history_row(v_check, p_outcome, p_now, 'cron', p_check_count, 0, p_reason)).*;
END $$;
REVOKE EXECUTE ON FUNCTION
  prescient.cron_occurrence_history(bigint, text, text, text, jsonb, timestamptz, timestamptz, integer, text, text,
                                    timestamptz)
  FROM PUBLIC;

-- Fires one occurrence of schedule p_schedule as a check of class p_job (key p_key) under an overlap
-- policy other than allow. The earlier occurrences still pending or running are its checks of the
-- schedule not yet settled (found by entity, then by key prefix: the schedule's own cron check has no
-- ':' after the id):
--  - skip: with one of them, this one is not scheduled: a history row of the schedule's check
--    (p_check_id, as for a missed deadline) says so, outcome overlap_skipped, with the occurrence's key;
--  - buffer_one: with two (one running, one waiting), likewise; the checks share the group cron:<id>, so
--    the one waiting runs after the one running has settled (a group never runs on two runners at once);
--  - cancel_previous: those not running are cancelled (history: cancelled, by cron, with why), and this
--    one joins the group, so it waits for one still running. A running check is never interrupted:
--    prescient cannot stop a job mid-run; "running" is a row locked by a runner or a live lease.
CREATE OR REPLACE FUNCTION prescient.cron_occurrence_overlapping(
    p_check_id bigint, p_job text, p_schedule text, p_occurrence timestamptz, p_key text, p_payload jsonb,
    p_now timestamptz, p_overlap text)
  RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_prefix constant text := 'cron:' || p_schedule || ':';
  v_group constant text := CASE WHEN p_overlap IN ('buffer_one', 'cancel_previous') THEN 'cron:' || p_schedule END;
  v_earlier integer;
BEGIN
  IF p_overlap NOT IN ('skip', 'buffer_one', 'cancel_previous') THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('overlap: %L is not a policy', p_overlap);
  END IF;
  IF p_overlap = 'cancel_previous' THEN
    WITH gone AS (
      DELETE FROM prescient.future_job f
       WHERE f.id IN (SELECT e.id FROM prescient.future_job e
                       WHERE e.entity_name = 'schedule' AND e.entity_key = p_schedule
                         AND left(e.job_key, length(v_prefix)) = v_prefix AND e.job_key <> p_key
                         AND (e.claimed_until IS NULL OR e.claimed_until <= p_now)
                         FOR UPDATE SKIP LOCKED)
      RETURNING f AS pending, f.check_count, f.attempts)
    INSERT INTO prescient.job_history
    SELECT (prescient.history_row(
             g.pending, 'cancelled', p_now, 'cron', g.check_count, g.attempts,
             format('cancelled by the occurrence at %s (overlap: cancel_previous)', prescient.iso(p_occurrence)))).*
      FROM gone g;
  ELSE
    SELECT count(*) INTO v_earlier FROM prescient.future_job e
     WHERE e.entity_name = 'schedule' AND e.entity_key = p_schedule
       AND left(e.job_key, length(v_prefix)) = v_prefix AND e.job_key <> p_key;
    IF v_earlier >= (CASE p_overlap WHEN 'skip' THEN 1 ELSE 2 END) THEN
      PERFORM prescient.cron_occurrence_history(
        p_check_id, p_job, p_schedule, p_key, p_payload, p_occurrence, p_occurrence, 0, 'overlap_skipped',
        format('skipped: %s earlier occurrence(s) still pending or running (overlap: %s)', v_earlier, p_overlap),
        p_now);
      RETURN;
    END IF;
  END IF;
  -- The schedule's class was judged when it was added: an occurrence is never refused for it. It starts a
  -- trace of its own (docs/design.md, "Trace context").
  PERFORM prescient.schedule(p_job, 'schedule', p_schedule, p_occurrence, p_key, v_group, p_payload, 'cron', 'keep',
                             p_now, p_allow_unknown_class => true, p_priority => prescient.cron_priority(p_schedule),
                             p_traceparent => prescient.new_traceparent(),
                             p_tracestate => prescient.occurrence_tracestate(p_schedule, p_occurrence));
END $$;

-- Fires every occurrence of schedule p_id from p_from to p_to (both included) once, as the live
-- schedule would have (the same event ids, the same check keys), with its definition as it is now: the
-- runner does it at the next boundary, through a check of class cron (key cron-backfill:<id>:<from>:<to>,
-- in microseconds; the same backfill asked twice while it is pending is one). What ran already is not
-- fired again: an event whose id exists, a check whose key is pending or settled since its occurrence
-- (but for overlap_skipped). A backfill ignores the catch-up policy, the deadline, the window, the jitter,
-- the overlap policy and the bounds, and does not count towards max_runs; the schedule may be paused or
-- ended. The range is in the past (p_to not after p_now) and at most 366 days long. Returns the backfill
-- check's id; PR400 for a bad range, PR404 for an unknown schedule.
CREATE OR REPLACE FUNCTION prescient.cron_backfill(p_id text, p_from timestamptz, p_to timestamptz,
                                                   p_by text DEFAULT current_user, p_now timestamptz DEFAULT now())
  RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_schedule prescient.cron_schedule;
  v_problem text;
BEGIN
  v_problem := CASE
    WHEN p_from IS NULL OR p_to IS NULL THEN 'a backfill needs a range: from and to'
    WHEN p_to < p_from THEN format('to: %s is before from %s', prescient.iso(p_to), prescient.iso(p_from))
    WHEN p_to - p_from > interval '366 days'
      THEN format('the range %s to %s is over a year (at most 366 days)', prescient.iso(p_from), prescient.iso(p_to))
    WHEN p_to > p_now
      THEN format('to: %s is in the future (now %s): a backfill fires a past range', prescient.iso(p_to),
                  prescient.iso(p_now))
  END;
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  v_schedule := prescient.cron_locked(p_id);
  -- The cursor starts a microsecond before p_from: an occurrence at p_from fires.
  RETURN (SELECT s.id FROM prescient.schedule(
            'cron', 'schedule', p_id, p_now,
            format('cron-backfill:%s:%s:%s', p_id, prescient.us(p_from), prescient.us(p_to)), NULL,
            prescient.cron_check_payload(v_schedule, NULL, prescient.us(p_from) - 1)
              || jsonb_build_object('backfill_to_us', prescient.us(p_to)),
            p_by, 'keep', p_now, p_priority => v_schedule.priority) s);
END $$;

-- Fires one occurrence of schedule p_id now, out of its series (docs/schedules.md, "Trigger"): the runner
-- does it at the next boundary, through a check of class cron (key cron-trigger:<id>:<p_now in
-- microseconds>) that fires it once and finishes. The occurrence has an id of its own, made here and
-- carried by the check (trigger_id): for emit, the event's id <id>-trigger-<microseconds>; for a class,
-- the job key cron:<id>:trigger-<microseconds> of the check it makes (its overlap policy does not hold
-- it back, as for a backfill). The series does not move: the next regular occurrence fires on time. A
-- paused or ended schedule may be triggered. Returns the occurrence's id; PR404 for an unknown schedule,
-- PR409 for a second trigger in the same microsecond.
CREATE OR REPLACE FUNCTION prescient.cron_trigger(p_id text, p_by text DEFAULT current_user,
                                                  p_now timestamptz DEFAULT now())
  RETURNS text LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_schedule prescient.cron_schedule := prescient.cron_locked(p_id);
  v_us constant bigint := prescient.us(p_now);
  v_occurrence constant text := CASE WHEN v_schedule.job = 'emit' THEN format('%s-trigger-%s', p_id, v_us)
                                     ELSE format('cron:%s:trigger-%s', p_id, v_us) END;
BEGIN
  PERFORM prescient.schedule(
    'cron', 'schedule', p_id, p_now, format('cron-trigger:%s:%s', p_id, v_us), NULL,
    prescient.cron_check_payload(v_schedule, NULL, NULL)
      || jsonb_build_object('trigger_us', v_us, 'trigger_id', v_occurrence),
    p_by, 'error', p_now, p_priority => v_schedule.priority);
  RETURN v_occurrence;
END $$;

-- What a backfill's check writes with its settlement: the occurrences p_occurrences (microseconds) of
-- schedule p_schedule. The live schedule is moved past the last of them when it was behind (its check's
-- cursor, or where a pause or an end left it), under its check's row lock: a firing of it in flight has
-- committed first (and is seen below), or fires after and finds them handled. For a class other than
-- emit, each occurrence not already run is scheduled as a check (emit's events come with the settlement,
-- and an event id that exists is not written again).
CREATE OR REPLACE FUNCTION prescient.cron_backfill_fire(p_schedule text, p_job text, p_occurrences bigint[],
                                                        p_payload jsonb, p_now timestamptz)
  RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_last constant bigint := (SELECT max(o) FROM unnest(p_occurrences) o);
BEGIN
  IF v_last IS NULL THEN
    RETURN;
  END IF;
  PERFORM FROM prescient.future_job f WHERE f.job_key = 'cron:' || p_schedule FOR UPDATE;
  IF FOUND THEN
    UPDATE prescient.future_job f SET payload = f.payload || jsonb_build_object('from_us', v_last)
     WHERE f.job_key = 'cron:' || p_schedule
       AND greatest((f.payload->>'last_us')::bigint, (f.payload->>'from_us')::bigint,
                    (f.payload->>'anchor_us')::bigint) < v_last;
  ELSE
    UPDATE prescient.cron_schedule s SET last_occurrence_at = prescient.at_us(v_last)
     WHERE s.id = p_schedule AND (s.last_occurrence_at IS NULL OR s.last_occurrence_at < prescient.at_us(v_last));
  END IF;
  IF p_job <> 'emit' THEN
    PERFORM prescient.schedule(p_job, 'schedule', p_schedule, prescient.at_us(o.us), o.key, NULL, p_payload, 'cron',
                               'keep', p_now, p_allow_unknown_class => true,
                               p_priority => prescient.cron_priority(p_schedule),
                               p_traceparent => prescient.new_traceparent(),
                               p_tracestate => prescient.occurrence_tracestate(p_schedule, prescient.at_us(o.us)))
       FROM (SELECT u.us, format('cron:%s:%s', p_schedule, u.us / 1000000) AS key
               FROM unnest(p_occurrences) u(us)) o
      WHERE NOT EXISTS (SELECT FROM prescient.job_history h
                         WHERE h.job_key = o.key AND h.finished_at >= prescient.at_us(o.us)
                           AND h.outcome <> 'overlap_skipped');
  END IF;
END $$;

-- Counts the ends of a schedule's occurrences (docs/schedules.md, "Pause after failures"): a check its
-- occurrences made (entity schedule/<id>, enqueued by cron, key cron:<id>:...) that ends `failed` adds one
-- to the schedule's failed_in_a_row and keeps its error; one that ends `done` sets the count back to 0.
-- When the count reaches the schedule's pause_after_failures, the schedule is paused (cron_pause: its
-- pending check is cancelled, under that check's row lock; a firing of it in flight settles first) with
-- the reason as its note, and the event prescient.schedule_paused says so. Runs as the schema's owner,
-- in the transaction of the settlement, the runner's or a worker's. Other outcomes (guards, cancels, a
-- missed deadline, an overlap skip) leave the count as it is, and so does any end while the schedule is
-- paused (occurrence checks made before the pause still run); a resume starts the count again.
CREATE OR REPLACE FUNCTION prescient.cron_count_outcome() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_schedule prescient.cron_schedule;
  v_event text;
BEGIN
  IF left(NEW.job_key, length(NEW.entity_key) + 6) IS DISTINCT FROM 'cron:' || NEW.entity_key || ':' THEN
    RETURN NULL;  -- the schedule's own check, or a check that only looks like one of its occurrences'
  END IF;
  IF NEW.outcome = 'done' THEN
    UPDATE prescient.cron_schedule SET failed_in_a_row = 0
     WHERE id = NEW.entity_key AND failed_in_a_row > 0 AND paused_at IS NULL;
    RETURN NULL;
  END IF;
  UPDATE prescient.cron_schedule
     SET failed_in_a_row = failed_in_a_row + 1, last_failure = NEW.last_error
   WHERE id = NEW.entity_key AND pause_after_failures IS NOT NULL AND paused_at IS NULL
  RETURNING * INTO v_schedule;
  IF NOT FOUND OR v_schedule.failed_in_a_row < v_schedule.pause_after_failures THEN
    RETURN NULL;
  END IF;
  PERFORM prescient.cron_pause(
    v_schedule.id, 'prescient', NEW.finished_at,
    format('paused after %s failed occurrences in a row (pause_after_failures %s)', v_schedule.failed_in_a_row,
           v_schedule.pause_after_failures));
  v_event := format('%s-paused-%s', v_schedule.id, prescient.us(NEW.finished_at));
  INSERT INTO prescient.event (id, type, source, occurred_at, emitted_at, payload)
  VALUES (v_event, 'prescient.schedule_paused', v_schedule.id, NEW.finished_at, NEW.finished_at,
          jsonb_build_object('schedule', v_schedule.id, 'failed_in_a_row', v_schedule.failed_in_a_row,
                             'last_error', NEW.last_error, 'check', NEW.id))
  ON CONFLICT (id) DO NOTHING;
  IF FOUND THEN
    PERFORM pg_notify('prescient_event', v_event);
  END IF;
  RETURN NULL;
END $$;
-- Only rows that may be an occurrence's end call it: the test of the WHEN is all other rows pay.
CREATE OR REPLACE TRIGGER job_history_cron_outcome AFTER INSERT ON prescient.job_history
  FOR EACH ROW WHEN (NEW.enqueued_by = 'cron' AND NEW.entity_name = 'schedule' AND NEW.outcome IN ('done', 'failed'))
  EXECUTE FUNCTION prescient.cron_count_outcome();

REVOKE EXECUTE ON FUNCTION prescient.cron_backfill(text, timestamptz, timestamptz, text, timestamptz) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION prescient.cron_count_outcome() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION prescient.cron_trigger(text, text, timestamptz) FROM PUBLIC;
