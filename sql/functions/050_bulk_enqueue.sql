-- Bulk enqueue (docs/design.md, "Bulk enqueue sends one array per field"): schedule_arrays takes the
-- items as parallel arrays, one per field. Reading a JSON array of objects (json_to_recordset) cost 5 to
-- 13 microseconds an item, more than the insert itself; arrays of text cost well under one.

-- The items of a schedule_arrays call as rows numbered from 1, the call's defaults applied. A payload
-- arrives as JSON text: casting text to jsonb is several times cheaper than reading a jsonb[] literal.
CREATE OR REPLACE FUNCTION prescient.array_items(
    p_job text[], p_entity_name text[], p_entity_key text[], p_at timestamptz[], p_job_key text[],
    p_group_key text[], p_payload text[], p_enqueued_by text[], p_on_conflict text[], p_by text,
    p_default_on_conflict text, p_window interval[], p_max_wait interval[], p_dedupe_for interval[],
    p_priority integer[], p_traceparent text[], p_tracestate text[], p_calendar text[], p_business_delay text[])
  RETURNS TABLE (n bigint, job text, entity_name text, entity_key text, "at" timestamptz, job_key text,
                 group_key text, payload jsonb, enqueued_by text, on_conflict text, fire_window interval,
                 max_wait interval, dedupe_for interval, priority integer, traceparent text, tracestate text,
                 calendar text, business_delay text)
  LANGUAGE sql STABLE
  BEGIN ATOMIC
    SELECT u.n, u.job, u.entity_name, u.entity_key, u."at", u.job_key, u.group_key,
           coalesce(u.payload, '{}')::jsonb, coalesce(u.enqueued_by, p_by),
           coalesce(u.on_conflict, p_default_on_conflict), u.fire_window, u.max_wait, u.dedupe_for, u.priority,
           u.traceparent, u.tracestate, u.calendar, u.business_delay
      FROM unnest(p_job, p_entity_name, p_entity_key, p_at, p_job_key, p_group_key, p_payload, p_enqueued_by,
                  p_on_conflict, p_window, p_max_wait, p_dedupe_for, p_priority, p_traceparent, p_tracestate,
                  p_calendar, p_business_delay)
           WITH ORDINALITY AS u(job, entity_name, entity_key, "at", job_key, group_key, payload, enqueued_by,
                                on_conflict, fire_window, max_wait, dedupe_for, priority, traceparent, tracestate,
                                calendar, business_delay, n);
  END;

-- The items with what is wrong with each (NULL: nothing), by the rules of schedule(). p_unknown_classes
-- are the call's classes that are not rows of the registry (unknown_classes, judged once a call), or NULL.
CREATE OR REPLACE FUNCTION prescient.array_requests(
    p_job text[], p_entity_name text[], p_entity_key text[], p_at timestamptz[], p_job_key text[],
    p_group_key text[], p_payload text[], p_enqueued_by text[], p_on_conflict text[], p_by text,
    p_default_on_conflict text, p_window interval[], p_max_wait interval[], p_dedupe_for interval[],
    p_dedupe_outcomes text[], p_now timestamptz, p_slot_seconds integer, p_max_horizon_seconds bigint,
    p_unknown_classes text[], p_priority integer[], p_traceparent text[], p_tracestate text[],
    p_max_payload_bytes integer, p_calendar text[], p_business_delay text[])
  RETURNS TABLE (n bigint, job text, entity_name text, entity_key text, "at" timestamptz, job_key text,
                 group_key text, payload jsonb, enqueued_by text, on_conflict text, fire_window interval,
                 max_wait interval, dedupe_for interval, priority integer, traceparent text, tracestate text,
                 calendar text, business_delay text, problem text)
  LANGUAGE sql STABLE
  BEGIN ATOMIC
    SELECT i.n, i.job, i.entity_name, i.entity_key, i."at", i.job_key, i.group_key, i.payload, i.enqueued_by,
           i.on_conflict, i.fire_window, i.max_wait, i.dedupe_for, i.priority, i.traceparent, i.tracestate,
           i.calendar, i.business_delay,
           coalesce(prescient.request_problem(i.job, i.entity_name, i.entity_key, i."at", i.job_key, i.group_key,
                                              i.payload, i.enqueued_by, i.on_conflict, p_now, p_max_horizon_seconds),
                    CASE WHEN p_unknown_classes IS NOT NULL AND i.job = ANY (p_unknown_classes)
                      THEN prescient.unknown_class_message(i.job) END,
                    prescient.window_problem(i."at", i.fire_window, p_now, p_max_horizon_seconds),
                    prescient.priority_problem(i.priority),
                    prescient.payload_problem(i.payload, p_max_payload_bytes),
                    -- Judged only for the items that carry a trace context.
                    CASE WHEN i.traceparent IS NOT NULL OR i.tracestate IS NOT NULL
                      THEN prescient.trace_problem(i.traceparent, i.tracestate) END,
                    -- Judged only for the items timed in business time.
                    CASE WHEN i.calendar IS NOT NULL OR i.business_delay IS NOT NULL
                      THEN prescient.business_problem(i.calendar, i."at", i.business_delay) END,
                    -- Judged only for the items that debounce, collect or dedupe: the rest of a bulk load pays
                    -- nothing.
                    CASE WHEN prescient.once_applies(i.on_conflict, i.max_wait, i.dedupe_for)
                      THEN coalesce(prescient.once_problem(i.job_key, i.on_conflict, i.max_wait, i.dedupe_for,
                                                           p_dedupe_outcomes, p_slot_seconds, p_max_horizon_seconds),
                                    CASE WHEN i.on_conflict = 'collect' THEN prescient.collect_bound_problem(
                                      i.job_key, 1, octet_length(jsonb_build_array(i.payload)::text)) END) END)
      FROM prescient.array_items(p_job, p_entity_name, p_entity_key, p_at, p_job_key, p_group_key, p_payload,
                                 p_enqueued_by, p_on_conflict, p_by, p_default_on_conflict, p_window, p_max_wait,
                                 p_dedupe_for, p_priority, p_traceparent, p_tracestate, p_calendar,
                                 p_business_delay) i;
  END;

-- What schedule_arrays would refuse in each item, writing nothing: one row (n, problem) per bad item, in
-- item order; no row when every item is good. The arrays and defaults are schedule_arrays'. It is how a
-- caller that must name each bad item before sending any (the CLI's bulk file, by line; Client::problem_with)
-- asks the rules instead of restating them. A job key given twice is not judged here: it is a fault of the
-- call, not of an item. Read-only, and no stronger than SELECT on the settings: PUBLIC may execute it.
CREATE OR REPLACE FUNCTION prescient.schedule_problems(
    p_job text[], p_entity_name text[], p_entity_key text[], p_at timestamptz[],
    p_job_key text[] DEFAULT NULL, p_group_key text[] DEFAULT NULL, p_payload text[] DEFAULT NULL,
    p_enqueued_by text[] DEFAULT NULL, p_on_conflict text[] DEFAULT NULL,
    p_by text DEFAULT current_user, p_default_on_conflict text DEFAULT 'error',
    p_now timestamptz DEFAULT now(), p_window interval[] DEFAULT NULL, p_max_wait interval[] DEFAULT NULL,
    p_dedupe_for interval[] DEFAULT NULL, p_dedupe_outcomes text[] DEFAULT '{done}',
    p_allow_unknown_class boolean DEFAULT false, p_priority integer[] DEFAULT NULL,
    p_traceparent text[] DEFAULT NULL, p_tracestate text[] DEFAULT NULL, p_calendar text[] DEFAULT NULL,
    p_business_delay text[] DEFAULT NULL)
  RETURNS TABLE (n integer, problem text)
  LANGUAGE sql STABLE
  -- Not inlined into the caller's statement, and not compiled: inlined, a call of 10 000 items was planned
  -- with their number known, and JIT compiling it took 1.2 s of its 1.3 (docs/performance.md, "A bulk file
  -- through the CLI").
  SET jit = off
  BEGIN ATOMIC
    SELECT r.n::integer, r.problem
      FROM prescient.settings s,
           -- Judged once per call: the planner inlines array_requests and would otherwise put this call in
           -- every item's expression (OFFSET 0 keeps the sub-query, and so the call, apart).
           (SELECT prescient.unknown_classes(p_job, p_allow_unknown_class) AS classes OFFSET 0) u,
           prescient.array_requests(p_job, p_entity_name, p_entity_key, p_at, p_job_key, p_group_key, p_payload,
                                    p_enqueued_by, p_on_conflict, p_by, p_default_on_conflict, p_window, p_max_wait,
                                    p_dedupe_for, p_dedupe_outcomes, p_now, s.slot_seconds, s.max_horizon_seconds,
                                    u.classes, p_priority, p_traceparent, p_tracestate, s.max_payload_bytes,
                                    p_calendar, p_business_delay) r
     WHERE r.problem IS NOT NULL
     ORDER BY r.n;
  END;

-- Schedules many checks in one call, given as parallel arrays: item i is (p_job[i], p_entity_name[i],
-- p_entity_key[i], p_at[i], ...). The optional arrays may be NULL (no item has that field) or hold NULL
-- elements (that item has none); enqueued_by and on_conflict default to p_by and p_default_on_conflict,
-- the payload to {}; p_window[i] is the item's window, p_max_wait[i] its debounce ceiling, p_dedupe_for[i]
-- its dedupe window (against p_dedupe_outcomes, for the whole call), p_priority[i] its priority,
-- p_traceparent[i] and p_tracestate[i] its trace context, as schedule() takes them; an item with on_conflict
-- 'collect' starts or joins a digest as schedule() does. Every array
-- given has as many elements as p_job, else PR400. The rules are those of
-- schedule(), all or nothing: the first bad item raises PR400 naming its position (from 1), and so does
-- a job key given twice. Items whose key is free are inserted in one statement; the others follow their
-- on_conflict like schedule() does, except that with p_report_conflicts an 'error' conflict comes back
-- as status 'conflict' (with the pending check's id, nothing written) instead of raising. An item whose key
-- settled within its dedupe window is looked for after the insert, as schedule() does, and answers
-- 'deduplicated' with the settled check's id. A class that is not a row of prescient.job_class is refused
-- like any bad item (listing the known ones) unless p_allow_unknown_class. One result row per item, n being its position. A payload that is not JSON text fails the call with PostgreSQL's own
-- error (22P02); catching it here would cost a subtransaction per call.
CREATE OR REPLACE FUNCTION prescient.schedule_arrays(
    p_job text[], p_entity_name text[], p_entity_key text[], p_at timestamptz[],
    p_job_key text[] DEFAULT NULL, p_group_key text[] DEFAULT NULL, p_payload text[] DEFAULT NULL,
    p_enqueued_by text[] DEFAULT NULL, p_on_conflict text[] DEFAULT NULL,
    p_by text DEFAULT current_user, p_default_on_conflict text DEFAULT 'error',
    p_now timestamptz DEFAULT now(), p_report_conflicts boolean DEFAULT false, p_window interval[] DEFAULT NULL,
    p_max_wait interval[] DEFAULT NULL, p_dedupe_for interval[] DEFAULT NULL, p_dedupe_outcomes text[] DEFAULT '{done}',
    p_allow_unknown_class boolean DEFAULT false, p_priority integer[] DEFAULT NULL,
    p_traceparent text[] DEFAULT NULL, p_tracestate text[] DEFAULT NULL, p_calendar text[] DEFAULT NULL,
    p_business_delay text[] DEFAULT NULL)
  RETURNS TABLE (n integer, id bigint, job_key text, next_check_at timestamptz, first_check_at timestamptz,
                 status text)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
  -- Not compiled: the business-time look-ups (in a branch most items never reach) raised the statement's cost
  -- estimate past jit_above_cost, and compiling it cost a call of 100 000 items a second of its two (as for
  -- schedule_problems).
  SET jit = off AS $$
#variable_conflict use_column
DECLARE
  v_count constant integer := coalesce(cardinality(p_job), 0);
  v_shape_problem text;
  v_settings prescient.settings;
  v_ids_from constant regclass := pg_get_serial_sequence('prescient.future_job', 'id')::regclass;
  v_bad_n bigint;
  v_bad_problem text;
  v_dup_key text;
  v_dup_first bigint;
  v_dup_last bigint;
  v_pending bigint[];
  v_n bigint[];
  v_ids bigint[];
  v_keys text[];
  v_slots timestamptz[];
  v_item record;
  v_existing bigint;
  v_deduplicated bigint[];
  v_settled bigint[];
  v_unknown text[];
BEGIN
  -- A required array counts as empty when NULL; an optional one as "as long as p_job".
  SELECT string_agg(CASE WHEN a.dimensions > 1 THEN format('%s has %s dimensions', a.name, a.dimensions)
                         ELSE format('%s has %s', a.name, coalesce(a.length, a.absent_as)) END, ', ')
    INTO v_shape_problem
    FROM (VALUES ('p_job', cardinality(p_job), array_ndims(p_job), 0),
                 ('p_entity_name', cardinality(p_entity_name), array_ndims(p_entity_name), 0),
                 ('p_entity_key', cardinality(p_entity_key), array_ndims(p_entity_key), 0),
                 ('p_at', cardinality(p_at), array_ndims(p_at), 0),
                 ('p_job_key', cardinality(p_job_key), array_ndims(p_job_key), v_count),
                 ('p_group_key', cardinality(p_group_key), array_ndims(p_group_key), v_count),
                 ('p_payload', cardinality(p_payload), array_ndims(p_payload), v_count),
                 ('p_enqueued_by', cardinality(p_enqueued_by), array_ndims(p_enqueued_by), v_count),
                 ('p_on_conflict', cardinality(p_on_conflict), array_ndims(p_on_conflict), v_count),
                 ('p_window', cardinality(p_window), array_ndims(p_window), v_count),
                 ('p_max_wait', cardinality(p_max_wait), array_ndims(p_max_wait), v_count),
                 ('p_dedupe_for', cardinality(p_dedupe_for), array_ndims(p_dedupe_for), v_count),
                 ('p_priority', cardinality(p_priority), array_ndims(p_priority), v_count),
                 ('p_traceparent', cardinality(p_traceparent), array_ndims(p_traceparent), v_count),
                 ('p_tracestate', cardinality(p_tracestate), array_ndims(p_tracestate), v_count),
                 ('p_calendar', cardinality(p_calendar), array_ndims(p_calendar), v_count),
                 ('p_business_delay', cardinality(p_business_delay), array_ndims(p_business_delay), v_count))
         AS a(name, length, dimensions, absent_as)
   WHERE coalesce(a.length, a.absent_as) <> v_count OR a.dimensions > 1;
  IF v_shape_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('every item array must be one-dimensional and as long as p_job (%s): %s', v_count,
                       v_shape_problem);
  END IF;
  IF v_count = 0 THEN RETURN; END IF;
  SELECT * INTO STRICT v_settings FROM prescient.settings;
  -- The classes not in the registry, once for the call: a row then pays one test of a NULL.
  v_unknown := prescient.unknown_classes(p_job, p_allow_unknown_class);

  IF NOT EXISTS (SELECT FROM unnest(p_job_key) k WHERE k IS NOT NULL) THEN
    -- No item has a key, so none can conflict: a plain insert. With ON CONFLICT an insert is speculative
    -- row by row, keyless rows too, and the created rows must be matched back to their items: ≈ 1.5 ms
    -- per 1 000 items (docs/performance.md). Ids are drawn up front, in item order.
    WITH input AS MATERIALIZED (
           SELECT * FROM prescient.array_requests(p_job, p_entity_name, p_entity_key, p_at, p_job_key, p_group_key,
                                                  p_payload, p_enqueued_by, p_on_conflict, p_by,
                                                  p_default_on_conflict, p_window, p_max_wait, p_dedupe_for,
                                                  p_dedupe_outcomes, p_now, v_settings.slot_seconds,
                                                  v_settings.max_horizon_seconds, v_unknown, p_priority,
                                                  p_traceparent, p_tracestate, v_settings.max_payload_bytes,
                                                  p_calendar, p_business_delay)),
         bad AS (SELECT input.n, input.problem FROM input WHERE input.problem IS NOT NULL ORDER BY input.n LIMIT 1),
         todo AS (
           SELECT drawn.*,
                  prescient.spread_slot_in(drawn.calendar, drawn.base_slot, drawn.new_id, drawn.fire_window, p_now,
                                           v_settings.slot_seconds) AS slot
             -- Two levels kept whole: timed by its ORDER BY (pulled up, a look-up ran once per use), drawn by
             -- OFFSET 0 (pulled up, base_slot became an expression, and spread_slot, which names its slot twice,
             -- was then called rather than inlined in the generic plan: 10 000 items took 2.5× as long).
             FROM (SELECT timed.*, coalesce(timed.due_at, timed."at") AS asked_for_at,
                          prescient.slot_for(coalesce(timed.due_at, timed."at"), p_now, v_settings.slot_seconds)
                            AS base_slot
                     -- The time asked for: in business time for an item with a calendar (038), and the calendar's
                     -- version, looked up for those items only (a join would cost every item).
                     FROM (SELECT input.*, nextval(v_ids_from) AS new_id,
                                  CASE WHEN input.calendar IS NOT NULL THEN
                                    (SELECT d.due_at FROM prescient.business_due(input.calendar, input."at",
                                                                                 input.business_delay, p_now) d)
                                  END AS due_at,
                                  CASE WHEN input.calendar IS NOT NULL THEN
                                    (SELECT c.version FROM prescient.calendar c WHERE c.name = input.calendar)
                                  END AS calendar_version
                             FROM input
                            WHERE NOT EXISTS (SELECT FROM bad)
                            ORDER BY input.n) timed OFFSET 0) drawn),
         ins AS (
           INSERT INTO prescient.future_job (id, job, entity_name, entity_key, group_key, payload, first_check_at,
                                             next_check_at, enqueued_on, enqueued_by, asked_for_at, priority,
                                             traceparent, tracestate, calendar, calendar_version, business_delay)
           OVERRIDING SYSTEM VALUE
           SELECT new_id, job, entity_name, entity_key, group_key, payload, slot, slot, p_now, enqueued_by,
                  asked_for_at, coalesce(priority, 5), traceparent, tracestate, calendar, calendar_version,
                  business_delay
             FROM todo)
    -- todo is in item order (a materialized CTE is read back in the order it was written): one sort for
    -- the three arrays instead of one each.
    SELECT bad.n, bad.problem, created.n, created.ids, created.slots
      INTO v_bad_n, v_bad_problem, v_n, v_ids, v_slots
      FROM (SELECT array_agg(todo.n) AS n, array_agg(todo.new_id) AS ids, array_agg(todo.slot) AS slots
              FROM todo) created
      LEFT JOIN bad ON true;
  ELSE
    -- One statement: validate, look for a repeated key, and insert only when both found nothing. Rows
    -- are inserted in item order; ids are drawn up front so each row can be matched back to its item.
    WITH input AS MATERIALIZED (
           SELECT * FROM prescient.array_requests(p_job, p_entity_name, p_entity_key, p_at, p_job_key, p_group_key,
                                                  p_payload, p_enqueued_by, p_on_conflict, p_by, p_default_on_conflict,
                                                  p_window, p_max_wait, p_dedupe_for, p_dedupe_outcomes, p_now,
                                                  v_settings.slot_seconds, v_settings.max_horizon_seconds, v_unknown,
                                                  p_priority, p_traceparent, p_tracestate,
                                                  v_settings.max_payload_bytes, p_calendar, p_business_delay)),
         bad AS (SELECT input.n, input.problem FROM input WHERE input.problem IS NOT NULL ORDER BY input.n LIMIT 1),
         dup AS (SELECT input.job_key, min(input.n) AS first_n, max(input.n) AS last_n FROM input
                  WHERE input.job_key IS NOT NULL GROUP BY input.job_key HAVING count(*) > 1
                  ORDER BY min(input.n) LIMIT 1),
         -- A new check's first enqueue is now: a debounce's or a digest's ceiling counts from it.
         todo AS (
           SELECT drawn.*,
                  CASE WHEN drawn.max_wait IS NULL
                    THEN prescient.spread_slot_in(drawn.calendar, drawn.base_slot, drawn.new_id, drawn.fire_window,
                                                  p_now, v_settings.slot_seconds)
                    ELSE prescient.debounced_slot(
                           prescient.spread_slot_in(drawn.calendar, drawn.base_slot, drawn.new_id, drawn.fire_window,
                                                    p_now, v_settings.slot_seconds),
                           p_now, drawn.max_wait, p_now, v_settings.slot_seconds) END AS slot
             -- Two levels kept whole: timed by its ORDER BY (pulled up, a look-up ran once per use), drawn by
             -- OFFSET 0 (pulled up, base_slot became an expression, and spread_slot, which names its slot twice,
             -- was then called rather than inlined in the generic plan: 10 000 items took 2.5× as long).
             FROM (SELECT timed.*, coalesce(timed.due_at, timed."at") AS asked_for_at,
                          prescient.slot_for(coalesce(timed.due_at, timed."at"), p_now, v_settings.slot_seconds)
                            AS base_slot
                     -- The time asked for: in business time for an item with a calendar (038), and the calendar's
                     -- version, looked up for those items only (a join would cost every item).
                     FROM (SELECT input.*, nextval(v_ids_from) AS new_id,
                                  CASE WHEN input.calendar IS NOT NULL THEN
                                    (SELECT d.due_at FROM prescient.business_due(input.calendar, input."at",
                                                                                 input.business_delay, p_now) d)
                                  END AS due_at,
                                  CASE WHEN input.calendar IS NOT NULL THEN
                                    (SELECT c.version FROM prescient.calendar c WHERE c.name = input.calendar)
                                  END AS calendar_version
                             FROM input
                            WHERE NOT EXISTS (SELECT FROM bad) AND NOT EXISTS (SELECT FROM dup)
                            ORDER BY input.n) timed OFFSET 0) drawn),
         ins AS (
           -- A digest's first payload starts its list (schedule() makes the same row).
           INSERT INTO prescient.future_job (id, job, entity_name, entity_key, job_key, group_key, payload,
                                             first_check_at, next_check_at, enqueued_on, enqueued_by, asked_for_at,
                                             priority, traceparent, tracestate, collects, collect_since, calendar,
                                             calendar_version, business_delay)
           OVERRIDING SYSTEM VALUE
           SELECT new_id, job, entity_name, entity_key, job_key, group_key,
                  CASE WHEN on_conflict = 'collect' THEN jsonb_build_object('collected', jsonb_build_array(payload))
                       ELSE payload END,
                  slot, slot, p_now, enqueued_by, asked_for_at, coalesce(priority, 5), traceparent, tracestate,
                  on_conflict = 'collect', CASE WHEN on_conflict = 'collect' THEN p_now END, calendar,
                  calendar_version, business_delay
             FROM todo ORDER BY n
           ON CONFLICT (job_key) WHERE job_key IS NOT NULL DO NOTHING
           RETURNING id),
         -- A created check is stored at its slot (first and next check alike). All aggregates read the rows
         -- in one order, so the arrays line up; the results carry n, so that order matters to nobody else.
         outcome AS (
           SELECT array_agg(t.n) FILTER (WHERE NOT t.created) AS pending,
                  array_agg(t.n) FILTER (WHERE t.created) AS created_n,
                  array_agg(t.new_id) FILTER (WHERE t.created) AS ids,
                  array_agg(t.job_key) FILTER (WHERE t.created) AS keys,
                  array_agg(t.slot) FILTER (WHERE t.created) AS slots
             FROM (SELECT todo.n, todo.new_id, todo.job_key, todo.slot, todo.new_id IN (SELECT ins.id FROM ins) AS created
                     FROM todo ORDER BY todo.n) t)
    SELECT bad.n, bad.problem, dup.job_key, dup.first_n, dup.last_n,
           outcome.pending, outcome.created_n, outcome.ids, outcome.keys, outcome.slots
      INTO v_bad_n, v_bad_problem, v_dup_key, v_dup_first, v_dup_last, v_pending, v_n, v_ids, v_keys, v_slots
      FROM outcome LEFT JOIN bad ON true LEFT JOIN dup ON true;
  END IF;

  IF v_bad_n IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('item %s: %s', v_bad_n, v_bad_problem);
  END IF;
  IF v_dup_key IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('items %s and %s have the same job key %L', v_dup_first, v_dup_last, v_dup_key);
  END IF;

  -- Dedupe, looked for after the insert (as in schedule()): a settlement of one of these keys that was under
  -- way held the key until it committed, so this statement sees it.
  IF EXISTS (SELECT FROM unnest(p_dedupe_for) d WHERE d IS NOT NULL) THEN
    WITH hit AS (
           SELECT u.n, u.id, s.settled
             FROM unnest(v_n, v_ids, v_keys) AS u(n, id, job_key)
             JOIN LATERAL (SELECT p_dedupe_for[u.n] AS dedupe_for) d ON d.dedupe_for IS NOT NULL
             CROSS JOIN LATERAL (SELECT h.id AS settled FROM prescient.job_history h
                                  WHERE h.job_key = u.job_key AND h.finished_at >= p_now - d.dedupe_for
                                    AND h.outcome = ANY (p_dedupe_outcomes)
                                  ORDER BY h.finished_at DESC, h.history_id DESC LIMIT 1) s),
         gone AS (DELETE FROM prescient.future_job f USING hit WHERE f.id = hit.id RETURNING f.id)
    SELECT array_agg(hit.n ORDER BY hit.n), array_agg(hit.settled ORDER BY hit.n)
      INTO v_deduplicated, v_settled
      FROM hit;  -- gone runs whether read or not
    RETURN QUERY SELECT u.n::integer, u.settled, p_job_key[u.n], NULL::timestamptz, NULL::timestamptz,
                        'deduplicated'::text
                   FROM unnest(v_deduplicated, v_settled) AS u(n, settled);
  END IF;

  RETURN QUERY SELECT u.n::integer, u.id, u.job_key, u.slot, u.slot, 'created'::text
                 FROM unnest(v_n, v_ids, v_keys, v_slots) AS u(n, id, job_key, slot)
                WHERE v_deduplicated IS NULL OR u.n <> ALL (v_deduplicated);
  IF v_pending IS NULL THEN RETURN; END IF;

  -- Items whose key was taken: the exception, handled one by one.
  FOR v_item IN
    SELECT i.* FROM prescient.array_items(p_job, p_entity_name, p_entity_key, p_at, p_job_key, p_group_key, p_payload,
                                          p_enqueued_by, p_on_conflict, p_by, p_default_on_conflict, p_window,
                                          p_max_wait, p_dedupe_for, p_priority, p_traceparent, p_tracestate,
                                          p_calendar, p_business_delay) i
     WHERE i.n = ANY (v_pending) ORDER BY i.n
  LOOP
    IF p_report_conflicts AND v_item.on_conflict = 'error' THEN
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
                                v_item.group_key, v_item.payload, v_item.enqueued_by, v_item.on_conflict, p_now,
                                v_item.fire_window, v_item.max_wait, v_item.dedupe_for, p_dedupe_outcomes,
                                true, v_item.priority, v_item.traceparent, v_item.tracestate, v_item.calendar,
                                v_item.business_delay) s;  -- its class judged above
  END LOOP;
END $$;

-- Schedules many checks from a JSON array of objects with the fields job, entity_name, entity_key, at,
-- and optionally job_key, group_key, payload, enqueued_by, on_conflict (defaults: p_by, p_on_conflict),
-- window, max_wait and dedupe_for (intervals, such as "10m"; a dedupe counts settlements 'done') and
-- priority (0 to 9), traceparent and tracestate, calendar and business_delay ("4h", "3bd"):
-- the items become the arrays of schedule_arrays, which holds the rules. A payload is read as json and
-- passed on as text (reading it as jsonb from a record is the slow path).
CREATE OR REPLACE FUNCTION prescient.schedule_many(
    p_items json, p_by text DEFAULT current_user, p_on_conflict text DEFAULT 'error',
    p_now timestamptz DEFAULT now(), p_report_conflicts boolean DEFAULT false)
  RETURNS TABLE (n integer, id bigint, job_key text, next_check_at timestamptz, first_check_at timestamptz,
                 status text)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF p_items IS NULL OR json_typeof(p_items) <> 'array' THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'the items must be a JSON array of objects';
  END IF;
  RETURN QUERY
    SELECT s.*
      FROM (SELECT array_agg(x.job ORDER BY x.n) AS job, array_agg(x.entity_name ORDER BY x.n) AS entity_name,
                   array_agg(x.entity_key ORDER BY x.n) AS entity_key, array_agg(x."at" ORDER BY x.n) AS "at",
                   array_agg(x.job_key ORDER BY x.n) AS job_key, array_agg(x.group_key ORDER BY x.n) AS group_key,
                   array_agg(x.payload::text ORDER BY x.n) AS payload,
                   array_agg(x.enqueued_by ORDER BY x.n) AS enqueued_by,
                   array_agg(x.on_conflict ORDER BY x.n) AS on_conflict,
                   array_agg(x.fire_window ORDER BY x.n) AS fire_window,
                   array_agg(x.max_wait ORDER BY x.n) AS max_wait, array_agg(x.dedupe_for ORDER BY x.n) AS dedupe_for,
                   array_agg(x.priority ORDER BY x.n) AS priority,
                   array_agg(x.traceparent ORDER BY x.n) AS traceparent,
                   array_agg(x.tracestate ORDER BY x.n) AS tracestate,
                   array_agg(x.calendar ORDER BY x.n) AS calendar,
                   array_agg(x.business_delay ORDER BY x.n) AS business_delay
              FROM ROWS FROM (json_to_recordset(p_items)
                     AS (job text, entity_name text, entity_key text, "at" timestamptz, job_key text, group_key text,
                         payload json, enqueued_by text, on_conflict text, "window" interval, max_wait interval,
                         dedupe_for interval, priority integer, traceparent text, tracestate text,
                         calendar text, business_delay text))
                   WITH ORDINALITY AS x(job, entity_name, entity_key, "at", job_key, group_key, payload, enqueued_by,
                                        on_conflict, fire_window, max_wait, dedupe_for, priority, traceparent,
                                        tracestate, calendar, business_delay, n)) a
     CROSS JOIN LATERAL prescient.schedule_arrays(a.job, a.entity_name, a.entity_key, a."at", a.job_key, a.group_key,
                                                  a.payload, a.enqueued_by, a.on_conflict, p_by, p_on_conflict, p_now,
                                                  p_report_conflicts, a.fire_window, a.max_wait, a.dedupe_for,
                                                  p_priority => a.priority, p_traceparent => a.traceparent,
                                                  p_tracestate => a.tracestate, p_calendar => a.calendar,
                                                  p_business_delay => a.business_delay) s;
END $$;
REVOKE EXECUTE ON FUNCTION
  prescient.schedule_many(json, text, text, timestamptz, boolean),
  prescient.schedule_arrays(text[], text[], text[], timestamptz[], text[], text[], text[], text[], text[], text, text,
                            timestamptz, boolean, interval[], interval[], interval[], text[], boolean, integer[], text[],
                            text[], text[], text[])
  FROM PUBLIC;
