-- 0002: the enqueue API as SQL functions, so an application in any language, a trigger or psql
-- schedules, cancels and reschedules checks by the same rules as the C++ client and the CLI.
-- Errors carry prescient's own SQLSTATEs so callers can tell them apart:
--   PR400 bad input (nothing written), PR409 a pending check already has that job key.
-- Every function takes p_now (default now()): prescient's own callers pass their clock.
-- The per-row helpers are STABLE and not STRICT so that the planner inlines them: called as
-- functions they cost tens of microseconds a row, which bulk enqueue cannot afford.

-- For messages: a time as ISO-8601 UTC.
CREATE FUNCTION prescient.iso(t timestamptz) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
         || CASE WHEN extract(microseconds FROM t)::bigint % 1000000 = 0 THEN ''
                 ELSE to_char(t AT TIME ZONE 'UTC', '.US') END || 'Z';

-- Refusal of a time beyond the horizon (max_horizon after now), or NULL when it is within.
CREATE FUNCTION prescient.horizon_problem(p_at timestamptz, p_now timestamptz, p_max_horizon_seconds bigint)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE WHEN p_at > p_now + p_max_horizon_seconds * interval '1 second' THEN
    format('%s is beyond the horizon: at most %s after now (%s)', prescient.iso(p_at),
           CASE WHEN p_max_horizon_seconds % 86400 = 0 THEN (p_max_horizon_seconds / 86400) || 'd'
                WHEN p_max_horizon_seconds % 3600 = 0 THEN (p_max_horizon_seconds / 3600) || 'h'
                ELSE p_max_horizon_seconds || 's' END,
           prescient.iso(p_now))
  END;

-- The slot a requested time is stored at: rounded up to the grid, and never before the next
-- boundary after now (a time in the past is due at once; nothing fires early, nothing is lost).
-- Timestamps have microsecond precision, so rounding up is flooring (date_bin) t + R - 1us.
CREATE FUNCTION prescient.slot_for(requested timestamptz, now_ timestamptz, slot_seconds integer)
  RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE
  RETURN greatest(
    date_bin(slot_seconds * interval '1 second',
             requested + slot_seconds * interval '1 second' - interval '1 microsecond', 'epoch'::timestamptz),
    date_bin(slot_seconds * interval '1 second', now_, 'epoch'::timestamptz) + slot_seconds * interval '1 second');

-- What is wrong with a request, or NULL when nothing is.
CREATE FUNCTION prescient.request_problem(
    p_job text, p_entity_name text, p_entity_key text, p_at timestamptz, p_job_key text,
    p_group_key text, p_payload jsonb, p_by text, p_on_conflict text, p_now timestamptz,
    p_max_horizon_seconds bigint)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN coalesce(p_job, '') = '' THEN 'the job class is empty'
    WHEN coalesce(p_entity_name, '') = '' THEN 'the entity name is empty'
    WHEN coalesce(p_entity_key, '') = '' THEN 'the entity key is empty'
    WHEN p_job_key = '' THEN 'the job key is empty (leave it out for a check without a key)'
    WHEN p_group_key = '' THEN 'the group key is empty (leave it out for a check without a group)'
    WHEN coalesce(p_by, '') = '' THEN 'enqueued_by is empty'
    WHEN p_at IS NULL THEN 'no time given'
    WHEN p_now IS NULL THEN 'no current time given'
    WHEN p_payload IS NULL OR jsonb_typeof(p_payload) <> 'object' THEN 'the payload must be a JSON object'
    WHEN p_on_conflict IS NULL OR p_on_conflict NOT IN ('error', 'replace', 'keep')
      THEN format('on_conflict must be error, replace or keep, not %L', p_on_conflict)
    ELSE prescient.horizon_problem(p_at, p_now, p_max_horizon_seconds)
  END;

-- Schedules one check. On a pending check with the same job key: 'error' raises PR409 naming the
-- key and the existing id; 'replace' updates job, entity, group, payload and time of that row in
-- place (its id and first_check_at stay, check_count and attempts reset); 'keep' leaves it and
-- returns it. status is created, replaced or kept.
CREATE FUNCTION prescient.schedule(
    p_job text, p_entity_name text, p_entity_key text, p_at timestamptz,
    p_job_key text DEFAULT NULL, p_group_key text DEFAULT NULL, p_payload jsonb DEFAULT '{}',
    p_by text DEFAULT current_user, p_on_conflict text DEFAULT 'error', p_now timestamptz DEFAULT now())
  RETURNS TABLE (id bigint, job_key text, next_check_at timestamptz, first_check_at timestamptz, status text)
  LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_settings prescient.settings;
  v_problem text;
  v_slot timestamptz;
  v_existing bigint;
BEGIN
  SELECT * INTO STRICT v_settings FROM prescient.settings;
  v_problem := prescient.request_problem(p_job, p_entity_name, p_entity_key, p_at, p_job_key, p_group_key,
                                         p_payload, p_by, p_on_conflict, p_now, v_settings.max_horizon_seconds);
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  v_slot := prescient.slot_for(p_at, p_now, v_settings.slot_seconds);
  LOOP
    RETURN QUERY
      WITH ins AS (
        INSERT INTO prescient.future_job (job, entity_name, entity_key, job_key, group_key, payload,
                                          first_check_at, next_check_at, enqueued_on, enqueued_by)
        VALUES (p_job, p_entity_name, p_entity_key, p_job_key, p_group_key, p_payload,
                v_slot, v_slot, p_now, p_by)
        ON CONFLICT (job_key) DO NOTHING
        RETURNING id, job_key, next_check_at, first_check_at)
      SELECT ins.*, 'created'::text FROM ins;
    IF FOUND THEN RETURN; END IF;

    SELECT f.id INTO v_existing FROM prescient.future_job f WHERE f.job_key = p_job_key FOR UPDATE;
    -- The holder finished between our insert and this lookup: the key is free again.
    CONTINUE WHEN NOT FOUND;
    IF p_on_conflict = 'error' THEN
      RAISE EXCEPTION USING ERRCODE = 'PR409',
        MESSAGE = format('a pending check with key %L already exists (id %s)', p_job_key, v_existing),
        HINT = 'use on_conflict replace or keep, or cancel it first';
    ELSIF p_on_conflict = 'keep' THEN
      RETURN QUERY SELECT f.id, f.job_key, f.next_check_at, f.first_check_at, 'kept'::text
                   FROM prescient.future_job f WHERE f.id = v_existing;
    ELSE
      RETURN QUERY
        WITH upd AS (
          UPDATE prescient.future_job f
             SET job = p_job, entity_name = p_entity_name, entity_key = p_entity_key, group_key = p_group_key,
                 payload = p_payload, next_check_at = v_slot, check_count = 0, attempts = 0, last_error = NULL
           WHERE f.id = v_existing
          RETURNING f.id, f.job_key, f.next_check_at, f.first_check_at)
        SELECT upd.*, 'replaced'::text FROM upd;
    END IF;
    RETURN;
  END LOOP;
END $$;

-- The items of a schedule_many call as rows, numbered from 1 in their order.
CREATE FUNCTION prescient.schedule_items(p_items json)
  RETURNS TABLE (n bigint, job text, entity_name text, entity_key text, "at" timestamptz, job_key text,
                 group_key text, payload jsonb, enqueued_by text, on_conflict text)
  LANGUAGE sql IMMUTABLE
  BEGIN ATOMIC
    SELECT x.n, x.job, x.entity_name, x.entity_key, x."at", x.job_key, x.group_key, x.payload, x.enqueued_by,
           x.on_conflict
      FROM ROWS FROM (json_to_recordset(p_items)
             AS (job text, entity_name text, entity_key text, "at" timestamptz, job_key text, group_key text,
                 payload jsonb, enqueued_by text, on_conflict text))
           WITH ORDINALITY AS x(job, entity_name, entity_key, "at", job_key, group_key, payload, enqueued_by,
                                on_conflict, n);
  END;

-- Schedules many checks in one call from a JSON array of objects with the fields job, entity_name,
-- entity_key, at, and optionally job_key, group_key, payload, enqueued_by, on_conflict (defaults:
-- p_by, p_on_conflict). All or nothing: one bad item raises PR400 naming it (n counts from 1) and
-- nothing is written; so does a job key given twice. Items whose key is free are inserted in one
-- statement; the others follow their on_conflict like schedule() does, except that with
-- p_report_conflicts an 'error' conflict comes back as status 'conflict' (not written) instead of
-- raising. One result row per item, n being its position.
CREATE FUNCTION prescient.schedule_many(
    p_items json, p_by text DEFAULT current_user, p_on_conflict text DEFAULT 'error',
    p_now timestamptz DEFAULT now(), p_report_conflicts boolean DEFAULT false)
  RETURNS TABLE (n integer, id bigint, job_key text, next_check_at timestamptz, first_check_at timestamptz,
                 status text)
  LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_settings prescient.settings;
  v_bad record;
  v_pending bigint[];
  v_n bigint[];
  v_ids bigint[];
  v_keys text[];
  v_next timestamptz[];
  v_first timestamptz[];
  v_item record;
  v_existing bigint;
BEGIN
  SELECT * INTO STRICT v_settings FROM prescient.settings;
  IF p_items IS NULL OR json_typeof(p_items) <> 'array' THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'the items must be a JSON array of objects';
  END IF;

  SELECT x.n, x.problem INTO v_bad
    FROM (SELECT i.n, prescient.request_problem(i.job, i.entity_name, i.entity_key, i."at", i.job_key, i.group_key,
                                                 coalesce(i.payload, '{}'), coalesce(i.enqueued_by, p_by),
                                                 coalesce(i.on_conflict, p_on_conflict), p_now,
                                                 v_settings.max_horizon_seconds) AS problem
            FROM prescient.schedule_items(p_items) i) x
   WHERE x.problem IS NOT NULL ORDER BY x.n LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('item %s: %s', v_bad.n, v_bad.problem);
  END IF;

  SELECT i.job_key, min(i.n) AS first_n, max(i.n) AS last_n INTO v_bad
    FROM prescient.schedule_items(p_items) i
   WHERE i.job_key IS NOT NULL GROUP BY i.job_key HAVING count(*) > 1 ORDER BY min(i.n) LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('items %s and %s have the same job key %L', v_bad.first_n, v_bad.last_n, v_bad.job_key);
  END IF;

  -- Ids are drawn up front so each inserted row can be matched back to its item.
  WITH input AS MATERIALIZED (
         SELECT i.*, nextval(pg_get_serial_sequence('prescient.future_job', 'id')) AS new_id,
                prescient.slot_for(i."at", p_now, v_settings.slot_seconds) AS slot
           FROM prescient.schedule_items(p_items) i),
       ins AS (
         INSERT INTO prescient.future_job (id, job, entity_name, entity_key, job_key, group_key, payload,
                                           first_check_at, next_check_at, enqueued_on, enqueued_by)
         OVERRIDING SYSTEM VALUE
         SELECT new_id, job, entity_name, entity_key, job_key, group_key, coalesce(payload, '{}'),
                slot, slot, p_now, coalesce(enqueued_by, p_by)
           FROM input ORDER BY n
         ON CONFLICT (job_key) DO NOTHING
         RETURNING id, next_check_at, first_check_at)
  SELECT array_agg(input.n ORDER BY input.n) FILTER (WHERE ins.id IS NULL),
         array_agg(input.n ORDER BY input.n) FILTER (WHERE ins.id IS NOT NULL),
         array_agg(ins.id ORDER BY input.n) FILTER (WHERE ins.id IS NOT NULL),
         array_agg(input.job_key ORDER BY input.n) FILTER (WHERE ins.id IS NOT NULL),
         array_agg(ins.next_check_at ORDER BY input.n) FILTER (WHERE ins.id IS NOT NULL),
         array_agg(ins.first_check_at ORDER BY input.n) FILTER (WHERE ins.id IS NOT NULL)
    INTO v_pending, v_n, v_ids, v_keys, v_next, v_first
    FROM input LEFT JOIN ins ON ins.id = input.new_id;

  RETURN QUERY SELECT u.n::integer, u.id, u.job_key, u.next_check_at, u.first_check_at, 'created'::text
                 FROM unnest(v_n, v_ids, v_keys, v_next, v_first) AS u(n, id, job_key, next_check_at, first_check_at);
  IF v_pending IS NULL THEN RETURN; END IF;

  -- Items whose key was taken: the exception, handled one by one.
  FOR v_item IN SELECT i.* FROM prescient.schedule_items(p_items) i WHERE i.n = ANY (v_pending) ORDER BY i.n
  LOOP
    IF p_report_conflicts AND coalesce(v_item.on_conflict, p_on_conflict) = 'error' THEN
      SELECT f.id INTO v_existing FROM prescient.future_job f WHERE f.job_key = v_item.job_key;
      IF FOUND THEN
        RETURN QUERY SELECT v_item.n::integer, v_existing, v_item.job_key, NULL::timestamptz, NULL::timestamptz,
                            'conflict'::text;
        CONTINUE;
      END IF;
    END IF;
    RETURN QUERY
      SELECT v_item.n::integer, s.*
        FROM prescient.schedule(v_item.job, v_item.entity_name, v_item.entity_key, v_item."at", v_item.job_key,
                                v_item.group_key, coalesce(v_item.payload, '{}'),
                                coalesce(v_item.enqueued_by, p_by), coalesce(v_item.on_conflict, p_on_conflict),
                                p_now) s;
  END LOOP;
END $$;

-- Cancels a pending check by id or by job key (exactly one of them): the row moves to job_history
-- with outcome 'cancelled', who and when. Returns the check's id, or NULL when no pending check
-- matched (it may have finished already: its history says so). A check being run right now is
-- cancelled once its runner has settled it, if it is still pending then.
CREATE FUNCTION prescient.cancel(
    p_id bigint DEFAULT NULL, p_job_key text DEFAULT NULL, p_by text DEFAULT current_user,
    p_now timestamptz DEFAULT now())
  RETURNS bigint LANGUAGE plpgsql AS $$
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
    RETURNING f.*)
  INSERT INTO prescient.job_history (id, job, entity_name, entity_key, job_key, group_key, payload,
                                     first_check_at, last_check_at, check_count, attempts, last_error,
                                     enqueued_on, enqueued_by, finished_at, finished_by, outcome)
  SELECT g.id, g.job, g.entity_name, g.entity_key, g.job_key, g.group_key, g.payload,
         g.first_check_at, g.next_check_at, g.check_count, g.attempts, g.last_error,
         g.enqueued_on, g.enqueued_by, p_now, p_by, 'cancelled'
    FROM gone g
  RETURNING id INTO v_id;
  RETURN v_id;
END $$;

-- Moves a pending check (by id or by job key) to another time, by the same rounding and horizon
-- rules as schedule. Returns the row's id, job key and new time; no row when nothing matched.
CREATE FUNCTION prescient.reschedule(
    p_at timestamptz, p_id bigint DEFAULT NULL, p_job_key text DEFAULT NULL, p_now timestamptz DEFAULT now())
  RETURNS TABLE (id bigint, job_key text, next_check_at timestamptz)
  LANGUAGE plpgsql AS $$
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
       SET next_check_at = prescient.slot_for(p_at, p_now, v_settings.slot_seconds)
     WHERE (p_id IS NOT NULL AND f.id = p_id) OR (p_job_key IS NOT NULL AND f.job_key = p_job_key)
    RETURNING f.id, f.job_key, f.next_check_at;
END $$;
