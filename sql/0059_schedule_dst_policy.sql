-- 0059: what a schedule does where the clocks change (docs/schedules.md, "Daylight saving time"):
-- dst_repeated, for a local time that occurs twice (auto, first, last, both, none), and dst_missing, for
-- one that does not occur (auto, shift, skip). auto is cron's rule, which the runner applies by the spec's
-- kind, as it did before these columns: existing schedules keep their firings.
ALTER TABLE prescient.cron_schedule
  ADD COLUMN dst_repeated text NOT NULL DEFAULT 'auto'
    CONSTRAINT cron_schedule_dst_repeated_check CHECK (dst_repeated IN ('auto', 'first', 'last', 'both', 'none')),
  ADD COLUMN dst_missing text NOT NULL DEFAULT 'auto'
    CONSTRAINT cron_schedule_dst_missing_check CHECK (dst_missing IN ('auto', 'shift', 'skip'));
