-- The enqueue API as SQL functions, so an application in any language, a trigger or psql schedules,
-- cancels and reschedules checks by the same rules as the C++ client and the CLI. Every function takes
-- p_now (default now()): prescient's own callers pass their clock. The entry points run with the schema
-- owner's rights (SECURITY DEFINER, fixed search_path), so a client writes future_job only through the
-- rules they enforce; prescient_client may execute them (grants: sql/functions/090_roles.sql).

-- Schedules one check. On a pending check with the same job key: 'error' raises PR409 naming the
-- key and the existing id; 'replace' updates job, entity, group, payload and time of that row in
-- place (its id and first_check_at stay, check_count and attempts reset); 'keep' leaves it and
-- returns it; 'debounce' replaces it as 'replace' does, but never to a time later than its first
-- enqueue (enqueued_on, which replacing keeps) plus p_max_wait, where it then fires: a debounce with a
-- ceiling. With p_window, the check may fire any time in the window after its time, and is stored at
-- one of the window's slots (spread_slot), so that a herd given the same time and window spreads.
-- With p_dedupe_for, a check whose job key settled with one of p_dedupe_outcomes at or after p_now minus
-- that window (a settlement stamped later by a clock ahead counts too) is not scheduled again: the answer
-- is that settled check's id, status 'deduplicated'.
-- A class that is not a row of prescient.job_class is refused (PR400, listing the known ones) unless
-- p_allow_unknown_class says the caller knows better (docs/design.md, "The class registry").
-- p_priority: 0 (first) to 9 (last) among the checks due at the same time; NULL is the default, 5. A replace
-- or debounce sets it as it sets the payload.
-- p_traceparent and p_tracestate: the W3C trace context the check was created in (docs/design.md, "Trace
-- context"), NULL for none; a replace or debounce sets it too, as the newest enqueue's.
-- 'collect' (a digest, docs/concepts.md "Digests"; needs p_max_wait) gathers payloads: a new check's payload is
-- {"collected": [p_payload]}, and an enqueue of a pending collecting check's key appends p_payload to that
-- list (prescient.collect_into: its bounds, the debounce rule for the time, the arrivals during a run) and
-- answers status 'collected'. A collecting check and one that does not collect never take each other's
-- enqueues (PR409): a replace would drop the payloads collected, a collect would turn a payload into a list.
-- p_calendar: the check is due in that calendar's open time: p_business_delay of open time after p_at ('4h',
-- '3bd'), or with no delay p_at or the calendar's next opening (038_business_delay.sql, docs/business-time.md);
-- a window is then counted in open time too. The check keeps the calendar, the version that computed its time and
-- the delay; a replace or debounce sets them as the newest enqueue's.
-- status is created, replaced, kept, debounced, collected or deduplicated.
CREATE OR REPLACE FUNCTION prescient.schedule(
    p_job text, p_entity_name text, p_entity_key text, p_at timestamptz,
    p_job_key text DEFAULT NULL, p_group_key text DEFAULT NULL, p_payload jsonb DEFAULT '{}',
    p_by text DEFAULT current_user, p_on_conflict text DEFAULT 'error', p_now timestamptz DEFAULT now(),
    p_window interval DEFAULT NULL, p_max_wait interval DEFAULT NULL, p_dedupe_for interval DEFAULT NULL,
    p_dedupe_outcomes text[] DEFAULT '{done}', p_allow_unknown_class boolean DEFAULT false,
    p_priority integer DEFAULT NULL, p_traceparent text DEFAULT NULL, p_tracestate text DEFAULT NULL,
    p_calendar text DEFAULT NULL, p_business_delay text DEFAULT NULL)
  RETURNS TABLE (id bigint, job_key text, next_check_at timestamptz, first_check_at timestamptz, status text)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
  v_settings prescient.settings;
  v_problem text;
  v_slot timestamptz;
  v_id bigint;
  v_next timestamptz;
  v_settled bigint;
  v_existing bigint;
  v_collects boolean;
  v_payload jsonb;
  v_at timestamptz := p_at;
  v_calendar_version integer;
BEGIN
  SELECT * INTO STRICT v_settings FROM prescient.settings;
  v_problem := coalesce(
    prescient.request_problem(p_job, p_entity_name, p_entity_key, p_at, p_job_key, p_group_key, p_payload, p_by,
                              p_on_conflict, p_now, v_settings.max_horizon_seconds),
    prescient.class_problem(p_job, p_allow_unknown_class),
    prescient.window_problem(p_at, p_window, p_now, v_settings.max_horizon_seconds),
    prescient.priority_problem(p_priority),
    prescient.payload_problem(p_payload, v_settings.max_payload_bytes));
  -- Judged only for a request it applies to (once_applies): the common enqueue skips it.
  IF v_problem IS NULL AND prescient.once_applies(p_on_conflict, p_max_wait, p_dedupe_for) THEN
    v_problem := prescient.once_problem(p_job_key, p_on_conflict, p_max_wait, p_dedupe_for, p_dedupe_outcomes,
                                        v_settings.slot_seconds, v_settings.max_horizon_seconds);
  END IF;
  -- Judged only when given: the common enqueue carries none.
  IF v_problem IS NULL AND (p_traceparent IS NOT NULL OR p_tracestate IS NOT NULL) THEN
    v_problem := prescient.trace_problem(p_traceparent, p_tracestate);
  END IF;
  v_payload := CASE WHEN p_on_conflict = 'collect' THEN jsonb_build_object('collected', jsonb_build_array(p_payload))
                    ELSE p_payload END;
  IF v_problem IS NULL AND p_on_conflict = 'collect' THEN
    v_problem := prescient.collect_bound_problem(p_job_key, 1, octet_length((v_payload -> 'collected')::text));
  END IF;
  -- Judged only when given: the common enqueue carries no calendar.
  IF v_problem IS NULL AND (p_calendar IS NOT NULL OR p_business_delay IS NOT NULL) THEN
    v_problem := prescient.business_problem(p_calendar, p_at, p_business_delay);
  END IF;
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  IF p_calendar IS NOT NULL THEN
    SELECT d.due_at, d.calendar_version INTO v_at, v_calendar_version
      FROM prescient.business_due(p_calendar, p_at, p_business_delay, p_now) d;
  END IF;
  v_slot := prescient.slot_for(v_at, p_now, v_settings.slot_seconds);
  LOOP
    -- The id is drawn first: a window's slot is chosen by it. A new check's first enqueue is now.
    v_id := nextval(pg_get_serial_sequence('prescient.future_job', 'id')::regclass);
    v_next := prescient.debounced_slot(
                prescient.spread_slot_in(p_calendar, v_slot, v_id, p_window, p_now, v_settings.slot_seconds),
                p_now, p_max_wait, p_now, v_settings.slot_seconds);
    INSERT INTO prescient.future_job (id, job, entity_name, entity_key, job_key, group_key, payload,
                                      first_check_at, next_check_at, enqueued_on, enqueued_by, asked_for_at, priority,
                                      traceparent, tracestate, collects, collect_since, calendar, calendar_version,
                                      business_delay)
    OVERRIDING SYSTEM VALUE
    VALUES (v_id, p_job, p_entity_name, p_entity_key, p_job_key, p_group_key, v_payload, v_next, v_next, p_now, p_by,
            v_at, coalesce(p_priority, 5), p_traceparent, p_tracestate, p_on_conflict = 'collect',
            CASE WHEN p_on_conflict = 'collect' THEN p_now END, p_calendar, v_calendar_version, p_business_delay)
    ON CONFLICT (job_key) WHERE job_key IS NOT NULL DO NOTHING;
    IF FOUND THEN
      -- Looked for after the insert, not before: a settlement of the same key that was under way held the
      -- key until it committed, so this statement sees it, and none can commit after (docs/design.md).
      IF p_dedupe_for IS NOT NULL THEN
        SELECT h.id INTO v_settled FROM prescient.job_history h
         WHERE h.job_key = p_job_key AND h.finished_at >= p_now - p_dedupe_for AND h.outcome = ANY (p_dedupe_outcomes)
         ORDER BY h.finished_at DESC, h.history_id DESC LIMIT 1;
        IF FOUND THEN
          DELETE FROM prescient.future_job f WHERE f.id = v_id;
          RETURN QUERY SELECT v_settled, p_job_key, NULL::timestamptz, NULL::timestamptz, 'deduplicated'::text;
          RETURN;
        END IF;
      END IF;
      RETURN QUERY SELECT v_id, p_job_key, v_next, v_next, 'created'::text;
      RETURN;
    END IF;

    -- Waits for a runner holding the row (a fast-path run) to settle it: then the row is gone (loop) or
    -- settled, and what follows sees it as the settlement left it.
    SELECT f.id, f.collects INTO v_existing, v_collects FROM prescient.future_job f WHERE f.job_key = p_job_key
       FOR UPDATE;
    -- The holder finished between our insert and this lookup: the key is free again.
    CONTINUE WHEN NOT FOUND;
    IF p_on_conflict = 'error' THEN
      RAISE EXCEPTION USING ERRCODE = 'PR409',
        MESSAGE = format('a pending check with key %L already exists (id %s)', p_job_key, v_existing),
        HINT = 'use on_conflict replace or keep, or cancel it first';
    ELSIF p_on_conflict = 'keep' THEN
      RETURN QUERY SELECT f.id, f.job_key, f.next_check_at, f.first_check_at, 'kept'::text
                   FROM prescient.future_job f WHERE f.id = v_existing;
    ELSIF v_collects <> (p_on_conflict = 'collect') THEN
      RAISE EXCEPTION USING ERRCODE = 'PR409',
        MESSAGE = format(CASE WHEN v_collects
                           THEN 'the pending check with key %L (id %s) collects payloads: on_conflict %s would drop them'
                           ELSE 'the pending check with key %L (id %s) does not collect payloads: on_conflict %s needs one that does' END,
                         p_job_key, v_existing, p_on_conflict),
        HINT = 'cancel it first, or use on_conflict keep';
    ELSIF p_on_conflict = 'collect' THEN
      RETURN QUERY SELECT * FROM prescient.collect_into(v_existing, p_payload, v_slot, p_window, p_max_wait, v_at,
                                                        p_now, v_settings.slot_seconds);
    ELSE
      RETURN QUERY
        WITH upd AS (
          UPDATE prescient.future_job f
             SET job = p_job, entity_name = p_entity_name, entity_key = p_entity_key, group_key = p_group_key,
                 payload = p_payload, priority = coalesce(p_priority, 5), traceparent = p_traceparent,
                 tracestate = p_tracestate, calendar = p_calendar, calendar_version = v_calendar_version,
                 business_delay = p_business_delay,
                 next_check_at = prescient.debounced_slot(
                                   prescient.spread_slot_in(p_calendar, v_slot, f.id, p_window, p_now,
                                                            v_settings.slot_seconds),
                                   f.enqueued_on, p_max_wait, p_now, v_settings.slot_seconds),
                 check_count = 0, attempts = 0, last_error = NULL, asked_for_at = v_at
           WHERE f.id = v_existing
          RETURNING f.id, f.job_key, f.next_check_at, f.first_check_at)
        SELECT upd.*, CASE WHEN p_on_conflict = 'debounce' THEN 'debounced' ELSE 'replaced' END FROM upd;
    END IF;
    RETURN;
  END LOOP;
END $$;
REVOKE EXECUTE ON FUNCTION
  prescient.schedule(text, text, text, timestamptz, text, text, jsonb, text, text, timestamptz, interval, interval,
                     interval, text[], boolean, integer, text, text, text, text)
  FROM PUBLIC;
