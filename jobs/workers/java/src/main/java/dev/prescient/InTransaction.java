package dev.prescient;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * What settling a check in its handler's own transaction needs (the worker's name, its clock) and what became
 * of each such settlement: written by the handler's thread while it runs, read by the worker's loop after it
 * returned (docs/workers.md, "Effects exactly once").
 */
final class InTransaction {
    /** A settlement made in an application's transaction, and that transaction's id (xid8, as text). */
    record Made(String xact, Settlement settlement) {
    }

    final String worker;
    final Supplier<Instant> now;
    /**
     * Set before the first settlement in a transaction: heartbeats leave the check alone from then on (an
     * extension would wait for the handler's transaction, and be refused once it commits).
     */
    volatile boolean settling;
    private final List<Made> made = new ArrayList<>(); // guarded by this; at most one of them commits

    InTransaction(String worker, Supplier<Instant> now) {
        this.worker = worker;
        this.now = now;
    }

    synchronized void add(Made m) {
        made.add(m);
    }

    synchronized List<Made> made() {
        return List.copyOf(made);
    }

    /** The lease_lost answer a settlement in a transaction got, if one did: the lease is gone for good. */
    synchronized Settlement lost() {
        return made.stream().map(Made::settlement).filter(Settlement::leaseLost).findFirst().orElse(null);
    }
}
