package dev.prescient;

import java.time.Instant;
import java.util.Objects;

/**
 * What a handler answers for a check: look again at a time, done (optionally with a result kept in the
 * history), or failed with an error text (retried after the class's backoff, then a dead letter).
 * A handler may also return null (done) or throw (failed with the exception's text).
 */
public sealed interface Answer {

    /** Look again at {@code at} (rounded up to the slot grid by the database). */
    record Next(Instant at) implements Answer {
        public Next {
            Objects.requireNonNull(at, "at");
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
