package dev.prescient;

import java.util.List;

/**
 * Runs many checks of one worker class in one call (at most the worker's batch size): for work that is
 * cheaper in bulk (one query for many entities). Answer each check: one {@link Answer} per check, in the order
 * given (null means done, {@link Answer#fail} fails that check alone). An exception, or a list of another
 * length, fails every check of the call with its text. A check may be settled in the handler's own transaction
 * ({@link Check#completeIn}); its answer in the list is then not read.
 */
@FunctionalInterface
public interface BatchHandler {
    List<Answer> handle(List<Check> checks) throws Exception;
}
