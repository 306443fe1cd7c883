package dev.prescient;

/** What scheduling does when a pending check already has the job key (docs/sql-api.md). */
public enum OnConflict {
    /** Refuse: {@link PrescientException.Conflict} naming the existing id. */
    ERROR,
    /** Update the pending check in place (its id and first check time stay). */
    REPLACE,
    /** Leave the pending check as it is and return it. */
    KEEP,
    /** Replace, but never later than the first enqueue plus the max wait. */
    DEBOUNCE,
    /**
     * A digest: one check whose payload is {@code {"collected": [...]}}, every enqueue's payload in arrival
     * order, moved as {@link #DEBOUNCE} moves it; the status is {@code collected}.
     */
    COLLECT;

    String sqlName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
