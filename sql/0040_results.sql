-- 0040: results (docs/design.md, "Results"). A run may return a result besides its answer: any JSON of at
-- most 64 KiB as PostgreSQL prints it, the same bound for the runner's classes and for workers. The
-- history has kept a worker's since 0038 (job_history.result) and keeps a runner class's now; a run that
-- leaves its check pending keeps its result in its timeline row (check_run.result already says what became
-- of the run: rescheduled or retried, so the column is run_result).
ALTER TABLE prescient.check_run ADD COLUMN run_result jsonb;
