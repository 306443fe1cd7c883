-- 0061: a recurring schedule bound to a calendar (docs/schedules.md, "Bound to a calendar"): its occurrences
-- in the calendar's closed time are skipped, or moved to its next opening (when_closed). The runner's cron
-- class decides, reading the calendar's spans; a calendar a schedule is bound to cannot be removed.
ALTER TABLE prescient.cron_schedule
  ADD COLUMN calendar text REFERENCES prescient.calendar (name),
  ADD COLUMN when_closed text NOT NULL DEFAULT 'skip'
    CONSTRAINT cron_schedule_when_closed_check CHECK (when_closed IN ('skip', 'move'));
CREATE INDEX cron_schedule_calendar ON prescient.cron_schedule (calendar) WHERE calendar IS NOT NULL;
