package dev.prescient;

/**
 * The database refused to settle a check (outcome {@code lease_lost}): its lease expired and another worker
 * took it, or it was cancelled or settled meanwhile. The check must not be treated as done.
 */
public final class LeaseLostException extends PrescientException {
    private static final long serialVersionUID = 1L;

    private final long checkId;
    private final String reason;

    public LeaseLostException(long checkId, String reason) {
        super("check " + checkId + ": lease lost: " + reason, null, null);
        this.checkId = checkId;
        this.reason = reason;
    }

    public long checkId() {
        return checkId;
    }

    /** The database's reason, as worker_complete / worker_fail / worker_extend gave it. */
    public String reason() {
        return reason;
    }
}
