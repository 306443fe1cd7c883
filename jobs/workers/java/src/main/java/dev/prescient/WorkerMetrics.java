package dev.prescient;

import java.time.Duration;

/**
 * What a worker reports for metrics, for the application to record in its own registry (Micrometer,
 * Prometheus' client, Dropwizard Metrics; README.md, "Metrics"): each method has a no-op default, so an
 * implementation overrides what it records. They are called on the worker's threads (the loop, the handler
 * pool, the heartbeat): keep them quick and thread-safe. An exception one throws is logged and dropped; the
 * worker goes on.
 */
public interface WorkerMetrics {
    /** A take asked for {@code asked} checks of the worker's classes and leased {@code taken} of them. */
    default void taken(int asked, int taken) {
    }

    /**
     * A handler call ended: {@code checks} checks of {@code job} (1, or a batch handler's), in {@code took};
     * {@code failed} when it threw (or a batch handler answered a list of another length), failing them all.
     */
    default void handled(String job, int checks, Duration took, boolean failed) {
    }

    /** A check of {@code job} was settled: its outcome, done, rescheduled, retried, failed, lease_lost or a guard. */
    default void settled(String job, Settlement settlement) {
    }

    /** A heartbeat found the lease of a check of {@code job} lost (it expired, or the check was cancelled). */
    default void leaseLost(String job, long checkId) {
    }
}
