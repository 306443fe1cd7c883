-- 0042: a schedule that pauses itself (docs/schedules.md, "Pause after failures"). With
-- pause_after_failures N, the checks its occurrences make are counted as they end: `failed` adds one to
-- failed_in_a_row (and keeps the error in last_failure), `done` sets it back to 0; at N the schedule is
-- paused, with the reason as its pause note, and an event says so. The counting is a trigger on the
-- history (prescient.cron_count_outcome, sql/functions/047_cron_occurrences.sql), which every writer of
-- an occurrence's end goes through: the runner's settlement and the workers'.
ALTER TABLE prescient.cron_schedule
  ADD COLUMN pause_after_failures integer
    CONSTRAINT cron_schedule_pause_after_failures_check CHECK (pause_after_failures BETWEEN 1 AND 1000),
  ADD COLUMN failed_in_a_row integer NOT NULL DEFAULT 0
    CONSTRAINT cron_schedule_failed_in_a_row_check CHECK (failed_in_a_row >= 0),
  ADD COLUMN last_failure text;
