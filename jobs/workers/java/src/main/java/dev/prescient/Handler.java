package dev.prescient;

/**
 * Runs one check of a worker class. Return the {@link Answer} (null means done); an exception fails this
 * check alone, with the exception's text as its error. Handlers run at least once per check: a worker that
 * dies mid-run leaves the check to be taken again, so make external effects idempotent (the check's id and
 * check count make a good idempotency key).
 */
@FunctionalInterface
public interface Handler {
    Answer handle(Check check) throws Exception;
}
