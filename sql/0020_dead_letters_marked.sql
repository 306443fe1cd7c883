-- A dead letter was derived on every read: a failed row with no later row of its check and no pending row,
-- two index probes per failure of the last 30 days (a page took 244 ms, the figures' count of every minute
-- 413 ms, at 10 M history rows: the probes land on a different page of a large index each). A retry is the
-- only way a settled check's id comes back (ids are an identity; only the retry overrides it), so the retry
-- now marks the failure it puts back, and a dead letter is a failed row not retried: one small partial
-- index, read in the pages' order. It carries the id and the class, so counts (all, or of a class) and
-- the retry's walk in id order read the index alone: a failure's heap row is on a page of its own.
ALTER TABLE prescient.job_history ADD COLUMN retried boolean NOT NULL DEFAULT false;

-- Failures put back before this migration: their check is pending again, or was settled again since.
UPDATE prescient.job_history h SET retried = true
 WHERE h.outcome = 'failed'
   AND (EXISTS (SELECT FROM prescient.future_job f WHERE f.id = h.id)
        OR EXISTS (SELECT FROM prescient.job_history later WHERE later.id = h.id AND later.history_id > h.history_id));

DROP INDEX prescient.job_history_failed;
CREATE INDEX job_history_dead_letter ON prescient.job_history (finished_at, history_id)
  INCLUDE (id, job) WHERE outcome = 'failed' AND NOT retried;
