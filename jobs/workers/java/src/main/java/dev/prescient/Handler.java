package dev.prescient;

/**
 * Runs one check of a worker class. Return the {@link Answer} (null means done); an exception fails this
 * check alone, with the exception's text as its error. A handler that settles by returning runs at least once
 * per check: a worker that dies mid-run leaves the check to be taken again, so make external effects
 * idempotent (the check's id and check count make a good idempotency key). Effects that are writes to the
 * application's database happen exactly once when the handler settles the check in the same transaction
 * ({@link Check#completeIn}, {@link Check#failIn}); what it returns is then not read.
 */
@FunctionalInterface
public interface Handler {
    Answer handle(Check check) throws Exception;
}
