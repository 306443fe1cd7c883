-- 0034: the class registry in use (docs/design.md, "The class registry"). The built-in classes are rows of
-- prescient.job_class from here on, and so is every class a check or a schedule of this database already
-- names (a plugin's, a worker's): an upgrade refuses nothing that was accepted before it. A runner declares
-- the classes it loads at its start (prescient.declare_job_classes), `prescient jobs add` declares one
-- ahead, `prescient jobs forget` removes one (sql/functions/067_job_classes.sql).
--
-- schedule, schedule_arrays and schedule_problems refuse a class that is not a row (PR400, listing the
-- known ones) unless given p_allow_unknown_class; that parameter is their last, so the old signatures go
-- (IF EXISTS: a new database never had them) and their grants move to the new ones. array_requests takes
-- the batch's unknown classes, judged once per call.
INSERT INTO prescient.job_class (job, runs_in, origin, declared_at, declared_by, seen_at)
SELECT b.job, 'runner', 'built-in', now(), 'migrate', NULL
  FROM unnest(ARRAY['command', 'cron', 'emit', 'http', 'noop', 'sql']) AS b(job)
ON CONFLICT (job) DO UPDATE SET origin = 'built-in', runs_in = 'runner';

INSERT INTO prescient.job_class (job, runs_in, origin, declared_at, declared_by)
SELECT u.job, 'runner', 'declared', now(), 'migrate'
  FROM (SELECT DISTINCT f.job FROM prescient.future_job f
        UNION SELECT DISTINCT s.job FROM prescient.cron_schedule s) u
 WHERE u.job <> ''
ON CONFLICT (job) DO NOTHING;

DROP FUNCTION IF EXISTS prescient.schedule(text, text, text, timestamptz, text, text, jsonb, text, text, timestamptz,
                                           interval, interval, interval, text[]);
DROP FUNCTION IF EXISTS prescient.schedule_problems(text[], text[], text[], timestamptz[], text[], text[], text[],
                                                    text[], text[], text, text, timestamptz, interval[], interval[],
                                                    interval[], text[]);
DROP FUNCTION IF EXISTS prescient.schedule_arrays(text[], text[], text[], timestamptz[], text[], text[], text[], text[],
                                                  text[], text, text, timestamptz, boolean, interval[], interval[],
                                                  interval[], text[]);
DROP FUNCTION IF EXISTS prescient.array_requests(text[], text[], text[], timestamptz[], text[], text[], text[], text[],
                                                 text[], text, text, interval[], interval[], interval[], text[],
                                                 timestamptz, integer, bigint);

UPDATE prescient.role_grant
   SET statement = replace(statement, 'interval, interval, interval, text[])', 'interval, interval, interval, text[], boolean)')
 WHERE statement LIKE '%prescient.schedule(text, text, text, timestamptz, %interval, interval, interval, text[])%';
UPDATE prescient.role_grant
   SET statement = replace(statement, 'boolean, interval[], interval[], interval[], text[])',
                           'boolean, interval[], interval[], interval[], text[], boolean)')
 WHERE statement LIKE '%prescient.schedule_arrays(%boolean, interval[], interval[], interval[], text[])%';

-- A runner declares the classes it loads; an operator (the runner's role, or the schema owner) declares one
-- ahead, forgets one and sets a class's policy. A client reads the registry (0033) and enqueues.
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT EXECUTE ON FUNCTION prescient.declare_job_classes(text[], text[], text, timestamptz, text),'
   ' prescient.job_class_add(text, boolean, text, timestamptz),'
   ' prescient.job_class_forget(text),'
   ' prescient.set_job_policy(text, integer, integer, interval, interval, interval, text, timestamptz, text[])'
   ' TO prescient_runner', 34);
