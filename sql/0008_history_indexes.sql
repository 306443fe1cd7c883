-- 0008: fewer index writes per finished check. Every settled check inserts one history row, and each
-- index on job_history is a B-tree insert on the hot path (a quarter of the server's time in a slot
-- drain; see docs/performance.md).
-- * The check-id lookup and the primary key become one index: (id, history_id) serves the trace of a
--   check in order and keeps each history row unique.
-- * Job keys are optional and most checks have none: only rows with a key are indexed. A lookup by
--   key (job_key = $1) implies IS NOT NULL, so the planner uses the partial index.
ALTER TABLE prescient.job_history DROP CONSTRAINT job_history_pkey;
DROP INDEX prescient.job_history_id;
ALTER TABLE prescient.job_history ADD CONSTRAINT job_history_pkey PRIMARY KEY (id, history_id);
DROP INDEX prescient.job_history_job_key;
CREATE INDEX job_history_job_key ON prescient.job_history (job_key) WHERE job_key IS NOT NULL;
