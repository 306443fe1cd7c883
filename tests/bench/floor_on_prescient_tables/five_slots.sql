-- The floor of five back-to-back slots of :n recurring schedules on prescient's own tables (scripts/bench.sh,
-- issue 62): :n rows due at one slot, then each slot fired as the runner fires it, with nothing else: claim
-- 1 000 due rows in the runner's order under their row locks, move each to the next slot, commit; no event,
-- no timeline row, no judging. Each slot leaves :n dead row versions, as a slot of schedules does. Prints
-- each slot's seconds, one a line. What the fifth slot's rate is of the first's here is the schema's own
-- limit for the engine's (docs/performance.md, "Five back-to-back slots").
TRUNCATE prescient.future_job, prescient.job_history, prescient.check_run;
INSERT INTO prescient.future_job (id, job, entity_name, entity_key, payload, first_check_at, next_check_at,
                                  enqueued_on, enqueued_by, asked_for_at)
OVERRIDING SYSTEM VALUE
SELECT g, 'emit', 'schedule', g::text, jsonb_build_object('n', g), '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z',
       now(), 'bench', '2026-01-01T00:00:00Z'
  FROM generate_series(1, :n) g;
VACUUM ANALYZE prescient.future_job;
CHECKPOINT;
-- A procedure, so that each batch commits as the runner's does.
CREATE PROCEDURE pg_temp.fire_slot(p_slot timestamptz) LANGUAGE plpgsql AS $$
DECLARE
  v_ids bigint[];
BEGIN
  LOOP
    SELECT array_agg(id) INTO v_ids
      FROM (SELECT id FROM prescient.future_job WHERE next_check_at = p_slot
             ORDER BY next_check_at, priority, id LIMIT 1000 FOR UPDATE SKIP LOCKED) c;
    EXIT WHEN v_ids IS NULL;
    UPDATE prescient.future_job f SET next_check_at = p_slot + interval '1 minute', check_count = f.check_count + 1
      FROM unnest(v_ids) s(id) WHERE f.id = s.id;
    COMMIT;
  END LOOP;
END $$;
\set slot 0
\ir five_slots_one.sql
\ir five_slots_one.sql
\ir five_slots_one.sql
\ir five_slots_one.sql
\ir five_slots_one.sql
