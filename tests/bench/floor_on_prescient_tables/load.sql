-- The floor on prescient's own tables (scripts/bench.sh): :n due checks at one slot, the rows the bench's
-- drain runs (tests/bench/bench_support.cpp: class noop, entity bench/<i>, payload {"n": i}), written
-- straight into prescient.future_job, with an empty history.
TRUNCATE prescient.future_job, prescient.job_history, prescient.check_run;
SELECT prescient.ensure_history_partitions(now());
INSERT INTO prescient.future_job (id, job, entity_name, entity_key, payload, first_check_at, next_check_at,
                                  enqueued_on, enqueued_by, asked_for_at)
OVERRIDING SYSTEM VALUE
SELECT g, 'noop', 'bench', g::text, jsonb_build_object('n', g), '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z', now(),
       'bench', '2026-01-01T00:00:00Z'
  FROM generate_series(1, :n) g;
VACUUM ANALYZE prescient.future_job;
CHECKPOINT;
