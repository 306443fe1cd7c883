package dev.prescient;

import java.time.Instant;

/**
 * What {@code prescient.schedule} answered: the check's id and its time on the slot grid. {@code status} is
 * {@code created}, {@code replaced}, {@code kept}, {@code debounced}, {@code collected} or {@code deduplicated}
 * (then the id is the settled check's, and the times are null).
 */
public record Scheduled(long id, String jobKey, Instant nextCheckAt, Instant firstCheckAt, String status) {
}
