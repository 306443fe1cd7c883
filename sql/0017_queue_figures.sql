-- Figures of the whole queue counted in the background (sql/functions/075_queue_figures.sql), so that
-- `prescient stats`, the daemons' metrics and the dashboard read a few small rows instead of counting the
-- pending table and a day of history on every request (docs/design.md, "Figures counted in the background").
CREATE TABLE prescient.queue_figures (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  counted_at timestamptz NOT NULL,     -- the time the figures describe (the refresh's p_now)
  current_slot timestamptz NOT NULL,   -- the slot of counted_at
  count_millis integer NOT NULL,       -- how long the count took on the server
  pending bigint NOT NULL,
  overdue bigint NOT NULL,             -- due at a slot before current_slot
  due bigint NOT NULL,                 -- due at current_slot
  next_hour bigint NOT NULL,           -- after current_slot, up to an hour after it
  next_day bigint NOT NULL,            -- then up to a day after it
  next_week bigint NOT NULL,           -- then up to a week after it
  dead_letters bigint NOT NULL,        -- failed in the 30 days before counted_at, not put back
  finished_last_hour jsonb NOT NULL,   -- {"done": n, ...}, settled in the hour before counted_at
  history_final_before timestamptz NOT NULL,  -- hours of finished_figure before this are not counted again
  far_counted_at timestamptz NOT NULL,  -- when the checks due after far_from were last counted
  far_from timestamptz NOT NULL         -- checks due after this are counted ten times less often
);

-- Pending checks by when they are due, by job class: per slot for the 1 000 slots after the current one,
-- then per hour up to a day ahead (queue_figures.far_from), per day up to a year ahead, and the rest in one
-- 'later' bucket.
CREATE TABLE prescient.pending_figure (
  bucket text NOT NULL CHECK (bucket IN ('overdue', 'due', 'slot', 'hour', 'day', 'later')),
  starts_at timestamptz,               -- the slot, hour or day (UTC); null for overdue and later
  job text NOT NULL,
  checks bigint NOT NULL
);

-- Checks settled per hour of the last day, by outcome, with how late they settled (finished_at minus the
-- slot they were due at).
CREATE TABLE prescient.finished_figure (
  hour timestamptz NOT NULL,
  outcome text NOT NULL,
  checks bigint NOT NULL,
  lateness_p50_seconds double precision,
  lateness_p99_seconds double precision,
  PRIMARY KEY (hour, outcome)
);

-- Dead letters (failed, in the last 30 days) are found without reading the other history rows.
CREATE INDEX job_history_failed ON prescient.job_history (finished_at, id) WHERE outcome = 'failed';

INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT SELECT ON prescient.queue_figures, prescient.pending_figure, prescient.finished_figure'
   ' TO prescient_client, prescient_runner', 17),
  ('GRANT EXECUTE ON FUNCTION prescient.refresh_queue_figures(timestamptz, interval) TO prescient_runner', 17);
