package dev.prescient;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The worker protocol's SQL functions (docs/workers.md), one method each, on a connection the caller owns
 * (autocommitted: each call is its own transaction). {@link Worker} is built on it; use it directly only
 * for a loop of your own. {@code now} is passed as {@code p_now}: null means the database's clock.
 */
public final class WorkerProtocol {
    private WorkerProtocol() {
    }

    /** An answer ready to be settled: the check and what its handler said. */
    public record Outcome(Check check, Answer answer) {
    }

    /** A lease a heartbeat could not extend, with the database's reason. */
    public record Refusal(long id, String reason) {
    }

    /** {@code worker_take}: leases up to {@code limit} due checks of {@code classes} to {@code worker}. */
    public static List<Check> take(Connection c, String worker, List<String> classes, int limit, Duration lease,
                                   Instant now) throws SQLException {
        String sql = """
            SELECT id, job, entity_name, entity_key, job_key, group_key, payload::text AS payload, due_at,
                   asked_for_at, check_count, attempts, last_error, traceparent, tracestate, lease_token,
                   lease_until
              FROM prescient.worker_take(?, ?::text[], ?, ?, ?::timestamptz)""";
        try (PreparedStatement st = c.prepareStatement(sql)) {
            st.setString(1, worker);
            st.setArray(2, Sql.texts(c, classes));
            st.setInt(3, limit);
            Sql.setSeconds(st, 4, lease);
            Sql.setInstant(st, 5, now);
            List<Check> checks = new ArrayList<>();
            try (ResultSet rs = st.executeQuery()) {
                while (rs.next()) {
                    checks.add(new Check(rs.getLong("id"), rs.getString("job"), rs.getString("entity_name"),
                                         rs.getString("entity_key"), rs.getString("job_key"),
                                         rs.getString("group_key"), rs.getString("payload"),
                                         Sql.instant(rs, "due_at"), Sql.instant(rs, "asked_for_at"),
                                         rs.getInt("check_count"), rs.getInt("attempts"),
                                         rs.getString("last_error"), rs.getString("traceparent"),
                                         rs.getString("tracestate"), rs.getLong("lease_token"),
                                         Sql.instant(rs, "lease_until")));
                }
            }
            return checks;
        } catch (SQLException e) {
            throw Sql.translate(e);
        }
    }

    /**
     * Settles answers: the {@link Answer.Next}, {@link Answer.NextInBusinessTime} and {@link Answer.Done} ones in
     * one {@code worker_complete} call, the {@link Answer.Fail} ones in one {@code worker_fail} call. One
     * settlement per outcome.
     */
    public static List<Settlement> settle(Connection c, String worker, List<Outcome> outcomes, Instant now)
        throws SQLException {
        List<Outcome> completed = new ArrayList<>();
        List<Outcome> failed = new ArrayList<>();
        for (Outcome o : outcomes) {
            (o.answer() instanceof Answer.Fail ? failed : completed).add(o);
        }
        List<Settlement> settled = new ArrayList<>(complete(c, worker, completed, now));
        settled.addAll(fail(c, worker, failed, now));
        return settled;
    }

    /**
     * {@code worker_complete} for outcomes that are {@link Answer.Next}, {@link Answer.NextInBusinessTime} or
     * {@link Answer.Done}, from {@code worker}, the holder of their leases. A bad answer in business time (an
     * unknown calendar) refuses the whole call ({@link PrescientException.Refused}, naming the check).
     */
    public static List<Settlement> complete(Connection c, String worker, List<Outcome> outcomes, Instant now)
        throws SQLException {
        return complete(c, worker, outcomes, now, SETTLEMENT, null);
    }

    private static List<Settlement> complete(Connection c, String worker, List<Outcome> outcomes, Instant now,
                                             String select, List<String> xact) throws SQLException {
        if (outcomes.isEmpty()) {
            return List.of();
        }
        List<Long> ids = new ArrayList<>();
        List<Long> tokens = new ArrayList<>();
        List<String> next = new ArrayList<>();
        List<String> results = new ArrayList<>();
        List<String> calendars = new ArrayList<>();
        List<String> businessDelays = new ArrayList<>();
        boolean anyResult = false;
        boolean anyBusinessTime = false;
        for (Outcome o : outcomes) {
            ids.add(o.check().id());
            tokens.add(o.check().leaseToken());
            String calendar = null;
            String businessDelay = null;
            if (o.answer() instanceof Answer.Next n) {
                next.add(n.at().toString());
                results.add(null);
            } else if (o.answer() instanceof Answer.NextInBusinessTime b) {
                next.add(null); // the server resolves it: a next time beside it is refused
                results.add(null);
                calendar = b.calendar();
                businessDelay = b.delay();
                anyBusinessTime = true;
            } else if (o.answer() instanceof Answer.Done d) {
                next.add(null);
                results.add(d.resultJson());
                anyResult |= d.resultJson() != null;
            } else {
                throw new IllegalArgumentException("check " + o.check().id() + ": not a completion: " + o.answer());
            }
            calendars.add(calendar);
            businessDelays.add(businessDelay);
        }
        // Times and results travel as text[] (ISO-8601, JSON), cast by the server: no driver type guessing.
        try (PreparedStatement st = c.prepareStatement(select + " " + """
              FROM prescient.worker_complete(?, ?::bigint[], ?::bigint[], ?::text[]::timestamptz[],
                                             ?::text[]::jsonb[], ?::timestamptz, ?::text[], ?::text[])""")) {
            st.setString(1, worker);
            st.setArray(2, Sql.bigints(c, ids));
            st.setArray(3, Sql.bigints(c, tokens));
            st.setArray(4, Sql.texts(c, next));
            setTextsOrNull(c, st, 5, anyResult, results);
            Sql.setInstant(st, 6, now);
            // Only a call that answers in business time sends the calendars: the server skips resolving otherwise.
            setTextsOrNull(c, st, 7, anyBusinessTime, calendars);
            setTextsOrNull(c, st, 8, anyBusinessTime, businessDelays);
            return settlements(st, xact);
        } catch (SQLException e) {
            throw Sql.translate(e);
        }
    }

    /** A text[] parameter when {@code send}, else NULL: an array of NULLs the function would read for nothing. */
    private static void setTextsOrNull(Connection c, PreparedStatement st, int index, boolean send,
                                       List<String> values) throws SQLException {
        if (send) {
            st.setArray(index, Sql.texts(c, values));
        } else {
            st.setNull(index, java.sql.Types.ARRAY);
        }
    }

    /** {@code worker_fail} for outcomes that are {@link Answer.Fail}, from {@code worker}, their leases' holder. */
    public static List<Settlement> fail(Connection c, String worker, List<Outcome> outcomes, Instant now)
        throws SQLException {
        return fail(c, worker, outcomes, now, SETTLEMENT, null);
    }

    private static List<Settlement> fail(Connection c, String worker, List<Outcome> outcomes, Instant now,
                                         String select, List<String> xact) throws SQLException {
        if (outcomes.isEmpty()) {
            return List.of();
        }
        List<Long> ids = new ArrayList<>();
        List<Long> tokens = new ArrayList<>();
        List<String> errors = new ArrayList<>();
        for (Outcome o : outcomes) {
            ids.add(o.check().id());
            tokens.add(o.check().leaseToken());
            errors.add(Sql.storable(((Answer.Fail) o.answer()).error()));
        }
        try (PreparedStatement st = c.prepareStatement(select + " " + """
              FROM prescient.worker_fail(?, ?::bigint[], ?::bigint[], ?::text[], ?::timestamptz)""")) {
            st.setString(1, worker);
            st.setArray(2, Sql.bigints(c, ids));
            st.setArray(3, Sql.bigints(c, tokens));
            st.setArray(4, Sql.texts(c, errors));
            Sql.setInstant(st, 5, now);
            return settlements(st, xact);
        } catch (SQLException e) {
            throw Sql.translate(e);
        }
    }

    /**
     * One answer settled on the application's connection, in its transaction (Check#completeIn): the
     * settlement, and the id of the transaction that wrote it, for the worker to ask whether it committed.
     */
    static InTransaction.Made settleInTransaction(Connection c, String worker, Outcome outcome, Instant now)
        throws SQLException {
        List<String> xact = new ArrayList<>();
        List<Settlement> settled = outcome.answer() instanceof Answer.Fail
                                   ? fail(c, worker, List.of(outcome), now, SETTLEMENT_IN_TRANSACTION, xact)
                                   : complete(c, worker, List.of(outcome), now, SETTLEMENT_IN_TRANSACTION, xact);
        return new InTransaction.Made(xact.get(0), settled.get(0));
    }

    /** What a settlement answers; in a transaction, with that transaction's id. */
    private static final String SETTLEMENT = "SELECT id, outcome, next_check_at, last_error";
    private static final String SETTLEMENT_IN_TRANSACTION = SETTLEMENT + ", pg_current_xact_id()::text AS xact";

    /** The settlements a call answered; {@code xact}, if not null, gets each row's transaction id. */
    private static List<Settlement> settlements(PreparedStatement st, List<String> xact) throws SQLException {
        List<Settlement> out = new ArrayList<>();
        try (ResultSet rs = st.executeQuery()) {
            while (rs.next()) {
                out.add(new Settlement(rs.getLong("id"), rs.getString("outcome"), Sql.instant(rs, "next_check_at"),
                                       rs.getString("last_error")));
                if (xact != null) {
                    xact.add(rs.getString("xact"));
                }
            }
        }
        return out;
    }

    /**
     * What became of settlements made in applications' transactions, without waiting for any: for each, the
     * transaction's status ({@code committed}, {@code aborted}, {@code in progress}, null when too old to
     * know) and whether the check is still leased to {@code worker} as it was taken (a settlement in a
     * savepoint rolled back leaves it so).
     */
    static List<Fate> fates(Connection c, String worker, List<Check> checks, List<String> xacts)
        throws SQLException {
        String sql = """
            SELECT pg_xact_status(x.xact::xid8),
                   EXISTS (SELECT FROM prescient.future_job f
                            WHERE f.id = x.id AND f.claimed_by = ? AND f.check_count = x.check_count
                              AND f.attempts = x.attempts)
              FROM unnest(?::text[], ?::bigint[], ?::int[], ?::int[]) WITH ORDINALITY
                   AS x(xact, id, check_count, attempts, n)
             ORDER BY x.n""";
        try (PreparedStatement st = c.prepareStatement(sql)) {
            st.setString(1, worker);
            st.setArray(2, Sql.texts(c, xacts));
            st.setArray(3, Sql.bigints(c, checks.stream().map(Check::id).toList()));
            st.setArray(4, c.createArrayOf("int4", checks.stream().map(Check::checkCount).toArray()));
            st.setArray(5, c.createArrayOf("int4", checks.stream().map(Check::attempts).toArray()));
            List<Fate> out = new ArrayList<>();
            try (ResultSet rs = st.executeQuery()) {
                while (rs.next()) {
                    out.add(new Fate(rs.getString(1), rs.getBoolean(2)));
                }
            }
            return out;
        } catch (SQLException e) {
            throw Sql.translate(e);
        }
    }

    /** What became of a settlement made in an application's transaction (fates). */
    record Fate(String status, boolean stillLeased) {
        boolean took() {
            return "committed".equals(status) && !stillLeased;
        }
    }

    /** {@code worker_extend}: a heartbeat for the leases {@code worker} holds; answers the ones that were lost. */
    public static List<Refusal> extend(Connection c, String worker, Map<Long, Long> tokensById, Duration lease,
                                       Instant now) throws SQLException {
        if (tokensById.isEmpty()) {
            return List.of();
        }
        List<Long> ids = new ArrayList<>(tokensById.keySet());
        List<Long> tokens = ids.stream().map(tokensById::get).toList();
        String sql = """
            SELECT id, lease_until, refusal
              FROM prescient.worker_extend(?, ?::bigint[], ?::bigint[], ?, ?::timestamptz)""";
        try (PreparedStatement st = c.prepareStatement(sql)) {
            st.setString(1, worker);
            st.setArray(2, Sql.bigints(c, ids));
            st.setArray(3, Sql.bigints(c, tokens));
            Sql.setSeconds(st, 4, lease);
            Sql.setInstant(st, 5, now);
            List<Refusal> lost = new ArrayList<>();
            try (ResultSet rs = st.executeQuery()) {
                while (rs.next()) {
                    if (rs.getObject("lease_until") == null) {
                        lost.add(new Refusal(rs.getLong("id"), rs.getString("refusal")));
                    }
                }
            }
            return lost;
        } catch (SQLException e) {
            throw Sql.translate(e);
        }
    }

    /**
     * {@code worker_release}: {@code worker} gives checks back untouched (due again at once); how many were
     * released.
     */
    public static int release(Connection c, String worker, Map<Long, Long> tokensById) throws SQLException {
        if (tokensById.isEmpty()) {
            return 0;
        }
        List<Long> ids = new ArrayList<>(tokensById.keySet());
        List<Long> tokens = ids.stream().map(tokensById::get).toList();
        try (PreparedStatement st =
                 c.prepareStatement("SELECT prescient.worker_release(?, ?::bigint[], ?::bigint[])")) {
            st.setString(1, worker);
            st.setArray(2, Sql.bigints(c, ids));
            st.setArray(3, Sql.bigints(c, tokens));
            try (ResultSet rs = st.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (SQLException e) {
            throw Sql.translate(e);
        }
    }

    /**
     * {@code worker_next_due}, as a wait: how long from {@code now} (or the database's clock) until a check
     * of these classes may be taken; null when they have no pending check. Measured against the same clock
     * as the due time, so a host clock that differs from the server's does not skew the sleep.
     */
    public static Duration untilNextDue(Connection c, List<String> classes, Instant now) throws SQLException {
        // p_now stays null without a pinned clock: the database refuses any p_now where workers may not pin it.
        String sql = """
            SELECT extract(epoch FROM prescient.worker_next_due(?::text[], ?::timestamptz)
                                      - coalesce(?::timestamptz, clock_timestamp()))""";
        try (PreparedStatement st = c.prepareStatement(sql)) {
            st.setArray(1, Sql.texts(c, classes));
            Sql.setInstant(st, 2, now);
            Sql.setInstant(st, 3, now);
            try (ResultSet rs = st.executeQuery()) {
                rs.next();
                double seconds = rs.getDouble(1);
                return rs.wasNull() ? null : Duration.ofNanos((long) (seconds * 1e9));
            }
        } catch (SQLException e) {
            throw Sql.translate(e);
        }
    }
}
