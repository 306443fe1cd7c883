-- 0033: the check's life as an application lives it (docs/design.md, "The class registry and policies").
--
-- prescient.job_class is the one registry of job classes: migrate declares the built-in ones, every
-- runner declares the classes it loads, a class run by a worker in another language is a row of it, and
-- a class stays known until `prescient jobs forget CLASS`. Enqueue refuses a class that is not a row
-- (unless the caller says it knows better). Its policy columns are the class's policy as anyone may set
-- it (SQL, `prescient jobs set`, the dashboard): NULL means "not set here", and the runner falls back to
-- the class's C++ JobPolicy, the config file's default, then the database's settings.
--
-- future_job.asked_for_at is the time the check was last asked for, before rounding to the grid: by its
-- enqueue (or reschedule) or by its last answer. Backoff, a retry, a window or a deferral by a limit
-- never move it. An answer after it is honoured even when it is already past (the run was late: due at
-- the next boundary); an answer at or before it is a loop that does not advance (guard_past). NULL on a
-- row written before this migration: the runner reads it as next_check_at. The history keeps it, so that
-- a check revived by `prescient retry` keeps it too.
CREATE TABLE prescient.job_class (
  job text PRIMARY KEY CONSTRAINT job_class_job_check CHECK (job <> '' AND octet_length(job) <= 1024),
  -- Who runs it: the C++ runner (a built-in class or a plugin's), or workers in another language that
  -- pull its checks (docs/workers.md).
  runs_in text NOT NULL DEFAULT 'runner' CONSTRAINT job_class_runs_in_check CHECK (runs_in IN ('runner', 'worker')),
  origin text NOT NULL,            -- 'built-in', the plugin's file, 'worker', or 'declared' (ahead of its runner)
  declared_at timestamptz NOT NULL,
  declared_by text NOT NULL,
  seen_at timestamptz,             -- when a runner (or worker) last declared it
  -- The policy; NULL: not set here.
  max_checks integer CONSTRAINT job_class_max_checks_check CHECK (max_checks >= 0),  -- 0: no limit (the horizon guards)
  max_attempts integer CONSTRAINT job_class_max_attempts_check CHECK (max_attempts >= 1),
  backoff_seconds bigint CONSTRAINT job_class_backoff_check CHECK (backoff_seconds >= 1),  -- the first wait
  backoff_max_seconds bigint CONSTRAINT job_class_backoff_max_check CHECK (backoff_max_seconds >= 1),
  timeout_seconds bigint CONSTRAINT job_class_timeout_check CHECK (timeout_seconds >= 1),
  policy_updated_at timestamptz,
  policy_updated_by text,
  CONSTRAINT job_class_backoff_range_check CHECK (backoff_max_seconds >= backoff_seconds)
);

ALTER TABLE prescient.future_job ADD COLUMN asked_for_at timestamptz;
ALTER TABLE prescient.job_history ADD COLUMN asked_for_at timestamptz;

INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT SELECT ON prescient.job_class TO prescient_client, prescient_runner', 33);
