package dev.prescient;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
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
 * @param calendar the calendar whose open time the check is timed in (docs/business-time.md); or null
 * @param businessDelay with a calendar: open time after its time ({@code "4h"}, {@code "3bd"}); or null
 * @param window it may fire any time in this window after its time (a herd spreads over its slots); or null
 * @param dedupeOutcomes the outcomes {@code dedupeFor} looks for; null: done
 * @param allowUnknownClass accept a class the registry does not know yet (deployed later)
 * @param by who enqueued it (its {@code enqueued_by}); null: the database's current_user
 */
public record NewCheck(String job, String entityName, String entityKey, Instant at, Duration after, String jobKey,
                       String groupKey, String payload, OnConflict onConflict, Duration maxWait,
                       Duration dedupeFor, Integer priority, String traceparent, String tracestate,
                       String calendar, String businessDelay, Duration window, List<String> dedupeOutcomes,
                       boolean allowUnknownClass, String by) {

    public NewCheck {
        Objects.requireNonNull(job, "job");
        Objects.requireNonNull(entityName, "entityName");
        Objects.requireNonNull(entityKey, "entityKey");
        Objects.requireNonNull(payload, "payload");
        Objects.requireNonNull(onConflict, "onConflict");
        if (businessDelay != null && after != null && !after.isZero()) {
            throw new IllegalArgumentException(
                "a business delay counts from the time (at) or from now: give no delay (after) beside it");
        }
    }

    /** A check due now (at the next slot boundary) until {@link #at} or {@link #after} says otherwise. */
    public static NewCheck of(String job, String entityName, String entityKey) {
        return new NewCheck(job, entityName, entityKey, null, Duration.ZERO, null, null, "{}", OnConflict.ERROR,
                            null, null, null, null, null, null, null, null, null, false, null);
    }

    public NewCheck at(Instant when) {
        return edit(c -> {
            c.at = Objects.requireNonNull(when, "when");
            c.after = null;
        });
    }

    public NewCheck after(Duration delay) {
        return edit(c -> {
            c.at = null;
            c.after = Objects.requireNonNull(delay, "delay");
        });
    }

    public NewCheck jobKey(String key) {
        return edit(c -> c.jobKey = key);
    }

    public NewCheck groupKey(String key) {
        return edit(c -> c.groupKey = key);
    }

    /** The payload as JSON text: a JSON object. */
    public NewCheck payload(String json) {
        return edit(c -> c.payload = json);
    }

    /** The payload as a map, written as JSON by {@link Json#write}. */
    public NewCheck payload(Map<String, ?> fields) {
        return payload(Json.write(fields));
    }

    /**
     * The payload as a record: a JSON object of its components, by name (java.time values and UUIDs as ISO text,
     * enums by name); {@link Check#payloadAs(Class)} reads it back.
     */
    public NewCheck payload(Record fields) {
        return payload(Json.write(Objects.requireNonNull(fields, "fields")));
    }

    public NewCheck onConflict(OnConflict policy) {
        return edit(c -> c.onConflict = policy);
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
        return edit(c -> {
            c.onConflict = policy;
            c.maxWait = Objects.requireNonNull(max, "max");
        });
    }

    public NewCheck dedupeFor(Duration window) {
        return edit(c -> c.dedupeFor = window);
    }

    /**
     * Its place among the checks due at the same time: 0 (first) to 9 (last); 5 when not given. The database
     * refuses another number ({@link PrescientException.Refused}).
     */
    public NewCheck priority(int level) {
        return edit(c -> c.priority = level);
    }

    /**
     * The W3C trace context it is created in: the caller's span, as a {@code traceparent} header value (a
     * propagator's {@code inject} writes it). Each run's handler gets that trace with a span id of the run's
     * own ({@link Check#traceparent()}). The database refuses a malformed one ({@link PrescientException.Refused}).
     */
    public NewCheck traceparent(String header) {
        return edit(c -> c.traceparent = header);
    }

    /** The trace's vendor state, as a {@code tracestate} header value; it goes with a traceparent only. */
    public NewCheck tracestate(String header) {
        return edit(c -> c.tracestate = header);
    }

    /**
     * Timed in this calendar's open time (docs/business-time.md): a {@link #businessDelay} of open time after its
     * time, or without one its time if the calendar is open then, else the calendar's next opening. Its time is
     * {@link #at}, else now: the default. The database refuses an unknown calendar
     * ({@link PrescientException.Refused}).
     */
    public NewCheck calendar(String name) {
        return edit(c -> c.calendar = name);
    }

    /**
     * With a {@link #calendar}: this much of its open time after the check's time, {@code "4h"}, {@code "90m"},
     * {@code "1h30m"}, or business days, {@code "3bd"}. It counts from {@link #at} or from now, never beside a
     * delay ({@link #after}: an IllegalArgumentException). The database refuses a malformed one
     * ({@link PrescientException.Refused}).
     */
    public NewCheck businessDelay(String delay) {
        return edit(c -> c.businessDelay = delay);
    }

    /**
     * It may fire any time in this window after its time: a herd given one time spreads over the window's
     * slots (docs/flow-control.md).
     */
    public NewCheck window(Duration spread) {
        return edit(c -> c.window = Objects.requireNonNull(spread, "spread"));
    }

    /** The outcomes {@link #dedupeFor} looks for (done, when not given). */
    public NewCheck dedupeOutcomes(List<String> outcomes) {
        return edit(c -> c.dedupeOutcomes = List.copyOf(outcomes));
    }

    /** Whether a class the registry does not know yet is accepted (a class deployed after its checks). */
    public NewCheck allowUnknownClass(boolean allow) {
        return edit(c -> c.allowUnknownClass = allow);
    }

    /** Who enqueued it, recorded as its {@code enqueued_by} (the database's current_user when not given). */
    public NewCheck by(String who) {
        return edit(c -> c.by = who);
    }

    /** This check with one or more fields changed: the one place every field is copied. */
    private NewCheck edit(java.util.function.Consumer<Fields> change) {
        Fields c = new Fields(this);
        change.accept(c);
        return new NewCheck(job, entityName, entityKey, c.at, c.after, c.jobKey, c.groupKey, c.payload,
                            c.onConflict, c.maxWait, c.dedupeFor, c.priority, c.traceparent, c.tracestate,
                            c.calendar, c.businessDelay, c.window, c.dedupeOutcomes, c.allowUnknownClass, c.by);
    }

    /** The fields a method may change, copied from a check. */
    private static final class Fields {
        Instant at;
        Duration after;
        String jobKey;
        String groupKey;
        String payload;
        OnConflict onConflict;
        Duration maxWait;
        Duration dedupeFor;
        Integer priority;
        String traceparent;
        String tracestate;
        String calendar;
        String businessDelay;
        Duration window;
        List<String> dedupeOutcomes;
        boolean allowUnknownClass;
        String by;

        Fields(NewCheck c) {
            at = c.at;
            after = c.after;
            jobKey = c.jobKey;
            groupKey = c.groupKey;
            payload = c.payload;
            onConflict = c.onConflict;
            maxWait = c.maxWait;
            dedupeFor = c.dedupeFor;
            priority = c.priority;
            traceparent = c.traceparent;
            tracestate = c.tracestate;
            calendar = c.calendar;
            businessDelay = c.businessDelay;
            window = c.window;
            dedupeOutcomes = c.dedupeOutcomes;
            allowUnknownClass = c.allowUnknownClass;
            by = c.by;
        }
    }
}
