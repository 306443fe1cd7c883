-- 0014: the table of recurring schedules is prescient.cron_schedule. It was prescient.schedule, the
-- name of the function that schedules one check (prescient.schedule(...)): one name for two things.
-- Its constraints and index follow the new name; the roles' grants name it.
ALTER TABLE prescient.schedule RENAME TO cron_schedule;
ALTER INDEX prescient.schedule_pkey RENAME TO cron_schedule_pkey;
ALTER TABLE prescient.cron_schedule RENAME CONSTRAINT schedule_catch_up_check TO cron_schedule_catch_up_check;
ALTER TABLE prescient.cron_schedule
  RENAME CONSTRAINT schedule_deadline_seconds_check TO cron_schedule_deadline_seconds_check;
ALTER TABLE prescient.cron_schedule RENAME CONSTRAINT schedule_id_check TO cron_schedule_id_check;
ALTER TABLE prescient.cron_schedule RENAME CONSTRAINT schedule_spec_check TO cron_schedule_spec_check;
ALTER TABLE prescient.cron_schedule RENAME CONSTRAINT schedule_version_check TO cron_schedule_version_check;

-- A renamed table keeps its grants; the rows that grant them again (regrant_roles) name it anew.
UPDATE prescient.role_grant SET statement = replace(statement, 'prescient.schedule,', 'prescient.cron_schedule,')
 WHERE statement LIKE 'GRANT SELECT ON %prescient.schedule,%';
UPDATE prescient.role_grant
   SET statement = 'GRANT UPDATE (last_occurrence_at) ON prescient.cron_schedule TO prescient_runner'
 WHERE statement = 'GRANT UPDATE (last_occurrence_at) ON prescient.schedule TO prescient_runner';
