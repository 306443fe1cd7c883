-- 0009: schedule_many reads its JSON once. The first version parsed the items three times (to
-- validate them, to look for a job key given twice, to insert them) and looked the id sequence up
-- once per row; that was over half of a bulk enqueue's server time (docs/performance.md). The
-- rules and the results are unchanged: all or nothing, the first bad item (by position) named, a
-- job key given twice refused, conflicts handled after the insert as before.
CREATE OR REPLACE FUNCTION prescient.schedule_many(
    p_items json, p_by text DEFAULT current_user, p_on_conflict text DEFAULT 'error',
    p_now timestamptz DEFAULT now(), p_report_conflicts boolean DEFAULT false)
  RETURNS TABLE (n integer, id bigint, job_key text, next_check_at timestamptz, first_check_at timestamptz,
                 status text)
  LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_settings prescient.settings;
  v_ids_from regclass := pg_get_serial_sequence('prescient.future_job', 'id')::regclass;
  v_bad_n bigint;
  v_bad_problem text;
  v_dup_key text;
  v_dup_first bigint;
  v_dup_last bigint;
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

  -- One statement: validate, look for a repeated key, and insert only when both found nothing. Rows
  -- are inserted in item order; ids are drawn up front so each row can be matched back to its item.
  WITH input AS MATERIALIZED (
         SELECT i.*, prescient.request_problem(i.job, i.entity_name, i.entity_key, i."at", i.job_key, i.group_key,
                                               coalesce(i.payload, '{}'), coalesce(i.enqueued_by, p_by),
                                               coalesce(i.on_conflict, p_on_conflict), p_now,
                                               v_settings.max_horizon_seconds) AS problem
           FROM prescient.schedule_items(p_items) i),
       bad AS (SELECT input.n, input.problem FROM input WHERE input.problem IS NOT NULL ORDER BY input.n LIMIT 1),
       dup AS (SELECT input.job_key, min(input.n) AS first_n, max(input.n) AS last_n FROM input
                WHERE input.job_key IS NOT NULL GROUP BY input.job_key HAVING count(*) > 1
                ORDER BY min(input.n) LIMIT 1),
       todo AS (
         SELECT input.*, nextval(v_ids_from) AS new_id,
                prescient.slot_for(input."at", p_now, v_settings.slot_seconds) AS slot
           FROM input
          WHERE NOT EXISTS (SELECT FROM bad) AND NOT EXISTS (SELECT FROM dup)
          ORDER BY input.n),
       ins AS (
         INSERT INTO prescient.future_job (id, job, entity_name, entity_key, job_key, group_key, payload,
                                           first_check_at, next_check_at, enqueued_on, enqueued_by)
         OVERRIDING SYSTEM VALUE
         SELECT new_id, job, entity_name, entity_key, job_key, group_key, coalesce(payload, '{}'),
                slot, slot, p_now, coalesce(enqueued_by, p_by)
           FROM todo ORDER BY n
         ON CONFLICT (job_key) DO NOTHING
         RETURNING id, next_check_at, first_check_at),
       outcome AS (
         SELECT array_agg(todo.n ORDER BY todo.n) FILTER (WHERE ins.id IS NULL) AS pending,
                array_agg(todo.n ORDER BY todo.n) FILTER (WHERE ins.id IS NOT NULL) AS created_n,
                array_agg(ins.id ORDER BY todo.n) FILTER (WHERE ins.id IS NOT NULL) AS ids,
                array_agg(todo.job_key ORDER BY todo.n) FILTER (WHERE ins.id IS NOT NULL) AS keys,
                array_agg(ins.next_check_at ORDER BY todo.n) FILTER (WHERE ins.id IS NOT NULL) AS nexts,
                array_agg(ins.first_check_at ORDER BY todo.n) FILTER (WHERE ins.id IS NOT NULL) AS firsts
           FROM todo LEFT JOIN ins ON ins.id = todo.new_id)
  SELECT bad.n, bad.problem, dup.job_key, dup.first_n, dup.last_n,
         outcome.pending, outcome.created_n, outcome.ids, outcome.keys, outcome.nexts, outcome.firsts
    INTO v_bad_n, v_bad_problem, v_dup_key, v_dup_first, v_dup_last,
         v_pending, v_n, v_ids, v_keys, v_next, v_first
    FROM outcome LEFT JOIN bad ON true LEFT JOIN dup ON true;

  IF v_bad_n IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('item %s: %s', v_bad_n, v_bad_problem);
  END IF;
  IF v_dup_key IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('items %s and %s have the same job key %L', v_dup_first, v_dup_last, v_dup_key);
  END IF;

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
