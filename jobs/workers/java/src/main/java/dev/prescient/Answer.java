package dev.prescient;

import java.time.Instant;
import java.util.Objects;

/**
 * What a handler answers for a check: look again at a time, or after some of a calendar's open time, done
 * (optionally with a result kept in the history), or failed with an error text (retried after the class's
 * backoff, then a dead letter).
 * A handler may also return null (done) or throw (failed with the exception's text).
 */
public sealed interface Answer {

    /** Look again at {@code at} (rounded up to the slot grid by the database). */
    record Next(Instant at) implements Answer {
        public Next {
            Objects.requireNonNull(at, "at");
        }
    }

    /**
     * Look again after {@code delay} of calendar {@code calendar}'s open time (docs/business-time.md, "Answers
     * in business time"): {@code "4h"}, {@code "90m"}, {@code "1h30m"}, or business days, {@code "3bd"}. The
     * database counts it from the settlement's now (its clock, or the worker's pinned one) and turns it into a
     * time, rounded up to the slot grid as a {@link Next}'s is, so the handler needs no calendar of its own.
     * An unknown calendar or a delay that is not one ({@code "1d"}, {@code "0bd"}) is refused: the worker fails
     * that check alone with the database's reason ({@code answer refused: check 17: no calendar named ...}) and
     * settles the others; {@link Check#completeIn} throws it ({@link PrescientException.Refused}).
     */
    record NextInBusinessTime(String calendar, String delay) implements Answer {
        public NextInBusinessTime {
            Objects.requireNonNull(calendar, "calendar");
            Objects.requireNonNull(delay, "delay");
        }
    }

    /** Done: the check moves to the history, with {@code resultJson} (any JSON text, or null) kept there. */
    record Done(String resultJson) implements Answer {
    }

    /** Failed with {@code error}, stored as the check's last error. */
    record Fail(String error) implements Answer {
        public Fail {
            Objects.requireNonNull(error, "error");
        }
    }

    static Answer nextAt(Instant at) {
        return new Next(at);
    }

    /** Look again after {@code delay} of {@code calendar}'s open time from now: {@link NextInBusinessTime}. */
    static Answer nextInBusinessTime(String calendar, String delay) {
        return new NextInBusinessTime(calendar, delay);
    }

    static Answer done() {
        return new Done(null);
    }

    /** Done, keeping {@code resultJson} (JSON text, at most 64 KiB) in the history's result column. */
    static Answer doneWithResult(String resultJson) {
        return new Done(Objects.requireNonNull(resultJson, "resultJson"));
    }

    static Answer fail(String error) {
        return new Fail(error);
    }
}
