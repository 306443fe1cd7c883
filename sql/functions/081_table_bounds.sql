-- What keeps each of prescient's tables from growing for ever: the one list of them, compared with the
-- catalog by tests/db/retention_test.cpp, so a table added without a bound fails a test. A table that grows
-- with time names the setting of prescient.settings that bounds it (retention, applied by the schema
-- owner's daemon or `prescient purge --retention`: docs/operations.md, "Retention"); every other says what
-- bounds it. Partitions are their parent's (job_history_*, check_run_*).
CREATE OR REPLACE FUNCTION prescient.table_bounds()
  RETURNS TABLE (table_name text, retention_setting text, bounded_by text) LANGUAGE sql IMMUTABLE
  BEGIN ATOMIC
    VALUES
      ('job_history', 'history_retention_seconds',
       'retention: whole months dropped, the rest in batches; dead letters by dead_letter_retention_seconds'),
      ('check_run', 'history_retention_seconds', 'retention, with the history: its months dropped with the history''s'),
      ('flow_deferral', 'history_retention_seconds', 'retention, with the history, in batches'),
      ('event', 'event_retention_seconds', 'retention, in batches'),
      ('future_job', NULL, 'pending checks only: a settled check leaves for job_history'),
      ('cron_schedule', NULL, 'the schedules the application keeps; cron remove deletes one'),
      ('finished_figure', NULL, 'the last day only: each count deletes older hours'),
      ('pending_figure', NULL, 'counted again at each count: a fixed set of buckets'),
      ('queue_figures', NULL, 'one row'),
      ('runner_seen', NULL, 'one row per runner, forgotten after a week unseen'),
      ('flow_limit', NULL, 'the limits the operator sets'),
      ('flow_lease', NULL, 'the checks running under a concurrency limit: the next admission of the key value drops stale rows, retention the rest a day after their lease'),
      ('flow_state', NULL, 'one row per limit and key value admitted within a day: retention forgets a row that holds nothing; goes with the limit'),
      ('flow_figure', 'history_retention_seconds', 'retention, with the history: a key value last deferred before it; goes with the limit'),
      ('job_class', NULL, 'the classes declared; jobs forget deletes one'),
      ('paused_job', NULL, 'the classes paused'),
      ('role_grant', NULL, 'written by migrations only'),
      ('schema_migrations', NULL, 'one row per migration'),
      ('schema_functions', NULL, 'one row per function file'),
      ('settings', NULL, 'one row'),
      ('calendar', NULL, 'the calendars the operator sets'),
      ('calendar_version', NULL, 'one row each time a calendar is set'),
      ('calendar_span', NULL, 'a calendar''s open stretches over its fixed range (2000 to 2099), made again when it is set'),
      ('calendar_open_day', NULL, 'a calendar''s open days over its fixed range, made again when it is set'),
      ('zone_offset', NULL, 'a zone''s offset changes over the calendars'' range, once per zone used');
  END;

-- prescient's tables (partitions aside) that table_bounds() does not list: none, unless a table was added
-- without saying what bounds it.
CREATE OR REPLACE FUNCTION prescient.unbounded_tables() RETURNS SETOF text LANGUAGE sql STABLE
  BEGIN ATOMIC
    SELECT c.relname::text FROM pg_catalog.pg_class c
     WHERE c.relnamespace = 'prescient'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
       AND c.relname::text NOT IN (SELECT b.table_name FROM prescient.table_bounds() b)
     ORDER BY 1;
  END;
