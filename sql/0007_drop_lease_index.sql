-- 0007: the daemon no longer looks expired leases up on their own: its sweep after every slot runs
-- everything due before the slot, expired leases included (claims accept claimed_until <= now). The
-- partial index 0004 made for that look-up has no reader left, and costs a write on every lease.
DROP INDEX prescient.future_job_leased;
