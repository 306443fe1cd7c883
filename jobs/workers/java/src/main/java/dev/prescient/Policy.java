package dev.prescient;

import java.time.Duration;

/**
 * A worker class's policy (docs/workers.md, "Declaring a worker class"), declared with the class by
 * {@link WorkerClasses#declare} or on a handler's declaration ({@link Worker.Builder#handler(String, Policy,
 * Handler)}). A null field is left as the class has it; {@link #unchanged()} has none set:
 * <pre>{@code
 * Policy.unchanged().maxChecks(60).maxAttempts(3).backoff(Duration.ofMinutes(1)).timeout(Duration.ofMinutes(5))
 * }</pre>
 * The database checks the values (a refusal names the one it refused, {@code PR400}).
 *
 * @param maxChecks how many times a check may ask to be looked at again before it ends
 *                  {@code guard_max_checks}: 5 by default ({@code prescient.settings.max_checks}); 0: no limit
 * @param maxAttempts failed attempts before a check becomes a dead letter ({@code failed})
 * @param backoff the wait before the first retry of a failed attempt, doubling with each
 * @param backoffMax the longest of those waits
 * @param timeout how long one run may take
 */
public record Policy(Integer maxChecks, Integer maxAttempts, Duration backoff, Duration backoffMax,
                     Duration timeout) {

    /** No field set: a declaration with it makes the class a worker class and changes no policy. */
    public static Policy unchanged() {
        return new Policy(null, null, null, null, null);
    }

    public Policy maxChecks(int n) {
        return new Policy(n, maxAttempts, backoff, backoffMax, timeout);
    }

    public Policy maxAttempts(int n) {
        return new Policy(maxChecks, n, backoff, backoffMax, timeout);
    }

    public Policy backoff(Duration wait) {
        return new Policy(maxChecks, maxAttempts, wait, backoffMax, timeout);
    }

    public Policy backoffMax(Duration wait) {
        return new Policy(maxChecks, maxAttempts, backoff, wait, timeout);
    }

    public Policy timeout(Duration limit) {
        return new Policy(maxChecks, maxAttempts, backoff, backoffMax, limit);
    }
}
