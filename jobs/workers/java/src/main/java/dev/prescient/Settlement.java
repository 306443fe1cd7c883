package dev.prescient;

import java.time.Instant;

/**
 * What became of one answer (a row of worker_complete or worker_fail): {@code rescheduled}, {@code done},
 * {@code guard_past}, {@code guard_max_checks}, {@code guard_horizon}, {@code retried}, {@code failed} or
 * {@code lease_lost}. {@code nextCheckAt} is set when the check is pending again; {@code lastError} says why
 * for guards, failures and lost leases.
 */
public record Settlement(long id, String outcome, Instant nextCheckAt, String lastError) {

    public static final String LEASE_LOST = "lease_lost";

    public boolean leaseLost() {
        return LEASE_LOST.equals(outcome);
    }

    /** This settlement, or a {@link LeaseLostException} when the database refused it. */
    public Settlement requireSettled() throws LeaseLostException {
        if (leaseLost()) {
            throw new LeaseLostException(id, lastError);
        }
        return this;
    }
}
