-- 0004: written leases (the slow path for long-running job classes) are rare; this partial index lets
-- the daemon find expired ones without scanning the pending table.
CREATE INDEX future_job_leased ON prescient.future_job (claimed_until) WHERE claimed_until IS NOT NULL;
