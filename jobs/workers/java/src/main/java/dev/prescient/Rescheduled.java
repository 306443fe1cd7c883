package dev.prescient;

import java.time.Instant;

/** A pending check moved by {@code prescient.reschedule}: its new time on the slot grid. */
public record Rescheduled(long id, String jobKey, Instant nextCheckAt) {
}
