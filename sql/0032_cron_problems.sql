-- 0032: a schedule's rules have one home, SQL (docs/design.md, "Every rule has one home"). cron_add_arrays
-- judges the options (overlap, start_at, end_at, max_runs) with the other fields, before it inserts,
-- through cron_array_problems, which the new cron_problems shares (PUBLIC may execute it: it reads only
-- the settings and the schedules). cron_apply_options only applies them now, and takes no time: the old
-- signature goes (IF EXISTS: a new database never had it).
DROP FUNCTION IF EXISTS prescient.cron_apply_options(text[], jsonb[], timestamptz);
