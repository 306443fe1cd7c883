package dev.prescient;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;

/**
 * A check a worker took: what its handler is given. Counts are the ones before this run.
 * <ul>
 * <li>{@code payload()}: the check's payload as JSON text (a JSON object); {@link #payloadMap()} parses it,
 *     {@link #payloadAs(Class)} reads it as a record
 * <li>{@code dueAt()}: the slot boundary (or the time flow control gave) at which the check fell due
 * <li>{@code askedForAt()}: the time the check was asked for, before rounding to the slot
 * <li>{@code lastError()}: the previous attempt's error, or null
 * <li>{@code traceparent()}: for a check scheduled with a trace context, its trace with a span id of this run's own
 *                    (each attempt is a span), the parent of the handler's work; null otherwise
 * <li>{@code tracestate()}: the trace's vendor state, or null
 * <li>{@code leaseToken()}: the fencing token of the take that leased it (settlements must carry it)
 * <li>{@code leaseUntil()}: when the lease ends unless a heartbeat extends it
 * </ul>
 * A handler that writes to the application's database settles its check in the same transaction with
 * {@link #completeIn} or {@link #failIn}: its writes and the settlement commit or roll back together.
 */
public final class Check {
    private final long id;
    private final String job;
    private final String entityName;
    private final String entityKey;
    private final String jobKey;
    private final String groupKey;
    private final String payload;
    private final Instant dueAt;
    private final Instant askedForAt;
    private final int checkCount;
    private final int attempts;
    private final String lastError;
    private final String traceparent;
    private final String tracestate;
    private final long leaseToken;
    private final Instant leaseUntil;
    /** Set by the worker that took it: what {@link #completeIn} and {@link #failIn} settle under. */
    private volatile InTransaction inTransaction;

    public Check(long id, String job, String entityName, String entityKey, String jobKey, String groupKey,
                 String payload, Instant dueAt, Instant askedForAt, int checkCount, int attempts, String lastError,
                 String traceparent, String tracestate, long leaseToken, Instant leaseUntil) {
        this.id = id;
        this.job = job;
        this.entityName = entityName;
        this.entityKey = entityKey;
        this.jobKey = jobKey;
        this.groupKey = groupKey;
        this.payload = payload;
        this.dueAt = dueAt;
        this.askedForAt = askedForAt;
        this.checkCount = checkCount;
        this.attempts = attempts;
        this.lastError = lastError;
        this.traceparent = traceparent;
        this.tracestate = tracestate;
        this.leaseToken = leaseToken;
        this.leaseUntil = leaseUntil;
    }

    public long id() {
        return id;
    }

    public String job() {
        return job;
    }

    public String entityName() {
        return entityName;
    }

    public String entityKey() {
        return entityKey;
    }

    public String jobKey() {
        return jobKey;
    }

    public String groupKey() {
        return groupKey;
    }

    public String payload() {
        return payload;
    }

    public Instant dueAt() {
        return dueAt;
    }

    public Instant askedForAt() {
        return askedForAt;
    }

    public int checkCount() {
        return checkCount;
    }

    public int attempts() {
        return attempts;
    }

    public String lastError() {
        return lastError;
    }

    public String traceparent() {
        return traceparent;
    }

    public String tracestate() {
        return tracestate;
    }

    public long leaseToken() {
        return leaseToken;
    }

    public Instant leaseUntil() {
        return leaseUntil;
    }

    /** The payload parsed: a map of JSON values (String, Double or Long, Boolean, List, Map, null). */
    @SuppressWarnings("unchecked")
    public Map<String, Object> payloadMap() {
        Object parsed = Json.parse(payload == null ? "{}" : payload);
        if (!(parsed instanceof Map)) {
            throw new IllegalStateException("check " + id + ": payload is not a JSON object: " + payload);
        }
        return (Map<String, Object>) parsed;
    }

    /**
     * The payload as a record of {@code type}: each component from the field of its name (or that name in
     * snake_case), typed as the component is; other fields are ignored ({@link NewCheck#payload(Record)} writes
     * one). A payload that does not fit is refused: {@link IllegalArgumentException} naming the check, the field
     * and the value (thrown from a handler, it fails the check with that text).
     * <pre>{@code
     * record OrderPayload(long orderId, Instant placedAt, List<String> items) {}
     * OrderPayload order = check.payloadAs(OrderPayload.class);
     * }</pre>
     */
    public <T extends Record> T payloadAs(Class<T> type) {
        try {
            return JsonRecords.read(payloadMap(), type);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("check " + id + ": " + e.getMessage(), e);
        }
    }

    /**
     * Settles this check with {@code answer} ({@link Answer#done()}, {@link Answer#nextAt},
     * {@link Answer#nextInBusinessTime}, a result, or a {@link Answer.Fail}) on {@code connection}, the
     * application's own connection, inside its transaction (autocommit off): the handler's writes and the
     * settlement commit together, or neither does (effects exactly once). Commit the transaction, then return
     * from the handler: the worker settles the check no more, and what the handler returns is not read. If the
     * lease was lost meanwhile (another worker took the check), nothing is settled and this throws
     * {@link LeaseLostException}: roll the transaction back, with its writes. An answer the database refuses (an
     * unknown calendar) throws {@link PrescientException.Refused} and, as any failed statement, aborts the
     * transaction: thrown on from the handler, it fails the check with its text. If the transaction rolls back
     * after a settlement that succeeded, the check is still leased: the worker fails it (with the handler's
     * exception, if it threw), and the class's retries apply.
     */
    public Settlement completeIn(Connection connection, Answer answer) throws SQLException {
        return settleIn(connection, Objects.requireNonNull(answer, "answer"));
    }

    /** Fails this check with {@code error} inside the application's transaction, as {@link #completeIn} does. */
    public Settlement failIn(Connection connection, String error) throws SQLException {
        return settleIn(connection, Answer.fail(error));
    }

    private Settlement settleIn(Connection connection, Answer answer) throws SQLException {
        InTransaction link = inTransaction;
        if (link == null) {
            throw new IllegalStateException("check " + id + " was not taken by a worker: there is no lease to settle "
                                            + "it under");
        }
        if (connection.getAutoCommit()) {
            throw new IllegalArgumentException("check " + id + ": settling in a transaction needs a connection with "
                                               + "autocommit off (in the handler's transaction)");
        }
        link.settling = true;
        InTransaction.Made made = WorkerProtocol.settleInTransaction(
            connection, link.worker, new WorkerProtocol.Outcome(this, answer), link.now.get());
        link.add(made);
        return made.settlement().requireSettled();
    }

    /** The worker that took this check hands it the lease it is held under. */
    void heldUnder(InTransaction link) {
        this.inTransaction = link;
    }

    InTransaction inTransaction() {
        return inTransaction;
    }


    @Override
    public String toString() {
        return "Check[id=" + id + ", job=" + job + ", entity=" + entityName + ":" + entityKey + ", dueAt=" + dueAt
               + ", checkCount=" + checkCount + ", attempts=" + attempts + "]";
    }
}
