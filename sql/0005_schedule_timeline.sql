-- 0005: a schedule remembers the last occurrence it handled, so every next occurrence comes from the
-- spec and the previous one, never from when a runner happened to run (a late run cannot shift the
-- series). Written by the `cron` job class through the job context: it commits with the settlement.
ALTER TABLE prescient.schedule ADD COLUMN last_occurrence_at timestamptz;
ALTER TABLE prescient.schedule ADD COLUMN created_by text NOT NULL DEFAULT current_user;
