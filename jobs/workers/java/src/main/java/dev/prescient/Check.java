package dev.prescient;

import java.time.Instant;
import java.util.Map;

/**
 * A check a worker took: what its handler is given. Counts are the ones before this run.
 *
 * @param payload the check's payload as JSON text (a JSON object); {@link #payloadMap()} parses it
 * @param dueAt the slot boundary (or the time flow control gave) at which the check fell due
 * @param askedForAt the time the check was asked for, before rounding to the slot
 * @param lastError the previous attempt's error, or null
 * @param traceparent for a check scheduled with a trace context, its trace with a span id of this run's own
 *                    (each attempt is a span), the parent of the handler's work; null otherwise
 * @param tracestate the trace's vendor state, or null
 * @param leaseToken the fencing token of the take that leased it (settlements must carry it)
 * @param leaseUntil when the lease ends unless a heartbeat extends it
 */
public record Check(long id, String job, String entityName, String entityKey, String jobKey, String groupKey,
                    String payload, Instant dueAt, Instant askedForAt, int checkCount, int attempts,
                    String lastError, String traceparent, String tracestate, long leaseToken,
                    Instant leaseUntil) {

    /** The payload parsed: a map of JSON values (String, Double or Long, Boolean, List, Map, null). */
    @SuppressWarnings("unchecked")
    public Map<String, Object> payloadMap() {
        Object parsed = Json.parse(payload == null ? "{}" : payload);
        if (!(parsed instanceof Map)) {
            throw new IllegalStateException("check " + id + ": payload is not a JSON object: " + payload);
        }
        return (Map<String, Object>) parsed;
    }
}
