package dev.prescient;

import java.time.Instant;

/**
 * What became of one answer (a row of worker_complete or worker_fail): {@code rescheduled}, {@code retried},
 * {@code lease_lost}, or the outcome it ended with in the history ({@code done}, {@code failed}, a guard's
 * {@code guard_*}: the list is prescient.outcomes(), docs/runner.md "How a check ends"). {@code nextCheckAt} is set when the check is pending again; {@code lastError} says why
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
