package dev.prescient;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;

/**
 * A check to schedule: its class, the entity it watches, and when to look (at a time, or after a delay).
 * Built with {@link #of} and the {@code with}-style methods, each returning a new value:
 * <pre>{@code
 * NewCheck.of("order_unshipped", "orders", "42").after(Duration.ofHours(3))
 *         .jobKey("order_unshipped:42").payload(Map.of("order_id", 42))
 * }</pre>
 *
 * @param at the time to look; or null with {@code after}
 * @param after the delay from now (the client's clock, else the database's); or null with {@code at}
 * @param payload a JSON object as text ({@code "{}"} by default)
 * @param maxWait with {@link OnConflict#DEBOUNCE} or {@link OnConflict#COLLECT}: the ceiling since the first enqueue
 * @param dedupeFor writes nothing when a check of this job key was done within it
 * @param priority 0 (first) to 9 (last) among the checks due at the same time; null is the default, 5
 * @param traceparent the W3C trace context the check is created in (the caller's span), or null
 * @param tracestate the trace's vendor state, with a traceparent only; or null
 */
public record NewCheck(String job, String entityName, String entityKey, Instant at, Duration after, String jobKey,
                       String groupKey, String payload, OnConflict onConflict, Duration maxWait,
                       Duration dedupeFor, Integer priority, String traceparent, String tracestate) {

    public NewCheck {
        Objects.requireNonNull(job, "job");
        Objects.requireNonNull(entityName, "entityName");
        Objects.requireNonNull(entityKey, "entityKey");
        Objects.requireNonNull(payload, "payload");
        Objects.requireNonNull(onConflict, "onConflict");
    }

    /** A check due now (at the next slot boundary) until {@link #at} or {@link #after} says otherwise. */
    public static NewCheck of(String job, String entityName, String entityKey) {
        return new NewCheck(job, entityName, entityKey, null, Duration.ZERO, null, null, "{}", OnConflict.ERROR,
                            null, null, null, null, null);
    }

    public NewCheck at(Instant when) {
        return new NewCheck(job, entityName, entityKey, Objects.requireNonNull(when, "when"), null, jobKey,
                            groupKey, payload, onConflict, maxWait, dedupeFor, priority, traceparent, tracestate);
    }

    public NewCheck after(Duration delay) {
        return new NewCheck(job, entityName, entityKey, null, Objects.requireNonNull(delay, "delay"), jobKey,
                            groupKey, payload, onConflict, maxWait, dedupeFor, priority, traceparent, tracestate);
    }

    public NewCheck jobKey(String key) {
        return new NewCheck(job, entityName, entityKey, at, after, key, groupKey, payload, onConflict, maxWait,
                            dedupeFor, priority, traceparent, tracestate);
    }

    public NewCheck groupKey(String key) {
        return new NewCheck(job, entityName, entityKey, at, after, jobKey, key, payload, onConflict, maxWait,
                            dedupeFor, priority, traceparent, tracestate);
    }

    /** The payload as JSON text: a JSON object. */
    public NewCheck payload(String json) {
        return new NewCheck(job, entityName, entityKey, at, after, jobKey, groupKey, json, onConflict, maxWait,
                            dedupeFor, priority, traceparent, tracestate);
    }

    /** The payload as a map, written as JSON by {@link Json#write}. */
    public NewCheck payload(Map<String, ?> fields) {
        return payload(Json.write(fields));
    }

    public NewCheck onConflict(OnConflict policy) {
        return new NewCheck(job, entityName, entityKey, at, after, jobKey, groupKey, payload, policy, maxWait,
                            dedupeFor, priority, traceparent, tracestate);
    }

    /** Debounce: each enqueue of the key moves the check, but never past the first enqueue plus {@code max}. */
    public NewCheck debounce(Duration max) {
        return withCeiling(OnConflict.DEBOUNCE, max);
    }

    /**
     * Collect (a digest): each enqueue of the key adds its payload to the check's {@code collected} list, in
     * arrival order, and moves the check as {@link #debounce} does, never past the list's first payload plus
     * {@code max}.
     */
    public NewCheck collect(Duration max) {
        return withCeiling(OnConflict.COLLECT, max);
    }

    private NewCheck withCeiling(OnConflict policy, Duration max) {
        return new NewCheck(job, entityName, entityKey, at, after, jobKey, groupKey, payload, policy,
                            Objects.requireNonNull(max, "max"), dedupeFor, priority, traceparent, tracestate);
    }

    public NewCheck dedupeFor(Duration window) {
        return new NewCheck(job, entityName, entityKey, at, after, jobKey, groupKey, payload, onConflict, maxWait,
                            window, priority, traceparent, tracestate);
    }

    /**
     * Its place among the checks due at the same time: 0 (first) to 9 (last); 5 when not given. The database
     * refuses another number ({@link PrescientException.Refused}).
     */
    public NewCheck priority(int level) {
        return new NewCheck(job, entityName, entityKey, at, after, jobKey, groupKey, payload, onConflict, maxWait,
                            dedupeFor, level, traceparent, tracestate);
    }

    /**
     * The W3C trace context it is created in: the caller's span, as a {@code traceparent} header value (a
     * propagator's {@code inject} writes it). Each run's handler gets that trace with a span id of the run's
     * own ({@link Check#traceparent()}). The database refuses a malformed one ({@link PrescientException.Refused}).
     */
    public NewCheck traceparent(String header) {
        return new NewCheck(job, entityName, entityKey, at, after, jobKey, groupKey, payload, onConflict, maxWait,
                            dedupeFor, priority, header, tracestate);
    }

    /** The trace's vendor state, as a {@code tracestate} header value; it goes with a traceparent only. */
    public NewCheck tracestate(String header) {
        return new NewCheck(job, entityName, entityKey, at, after, jobKey, groupKey, payload, onConflict, maxWait,
                            dedupeFor, priority, traceparent, header);
    }
}
