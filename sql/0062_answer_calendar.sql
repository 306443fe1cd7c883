-- 0062: a run that answered in business time keeps the calendar, the version that computed its next time and
-- the delay asked for, as an enqueue's check does (docs/business-time.md, "Answers in business time"): the
-- check's timeline then names them. Written after the settlement, for those runs only.
ALTER TABLE prescient.check_run
  ADD COLUMN calendar text,
  ADD COLUMN calendar_version integer,
  ADD COLUMN business_delay text;
-- The runner names them after its settlement (prescient.runs_timed_by); a worker's are named by worker_complete.
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT UPDATE (calendar, calendar_version, business_delay) ON prescient.check_run TO prescient_runner', 62);
