package dev.prescient;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Clock;
import java.time.Instant;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Supplier;

/**
 * Puts checks into the future from the application's own transaction: every method takes the caller's
 * {@link Connection} and runs one statement on it, so the check commits or rolls back with the caller's
 * work. The client holds no connection and no state but its clock; it is safe to share.
 *
 * <p>Refusals raise {@link PrescientException.Refused} (PR400), {@link PrescientException.Conflict} (PR409)
 * or {@link PrescientException.NotFound} (PR404) with the database's message. Note that PostgreSQL aborts
 * the caller's transaction on any error, as for any failed statement.
 */
public final class PrescientClient {
    private final Supplier<Instant> clock;

    /** A client on the database's clock ({@code now()}, the transaction's start). */
    public PrescientClient() {
        this.clock = null;
    }

    /** A client whose "now" (delays, rounding of past times, the horizon) is {@code clock}: tests pin it. */
    public PrescientClient(Supplier<Instant> clock) {
        this.clock = clock;
    }

    public PrescientClient(Clock clock) {
        this(clock::instant);
    }

    private Instant now() {
        return clock == null ? null : clock.get();
    }

    /** {@code prescient.schedule}: one check, at its time rounded up to the slot grid. */
    public Scheduled schedule(Connection connection, NewCheck check) throws SQLException {
        // With no clock of ours, "now" is the server's: NULL falls back to now() in the statement.
        String sql = """
            SELECT id, job_key, next_check_at, first_check_at, status FROM prescient.schedule(
              p_job => ?, p_entity_name => ?, p_entity_key => ?,
              p_at => coalesce(?::timestamptz, coalesce(?::timestamptz, now()) + make_interval(secs => ?)),
              p_job_key => ?, p_group_key => ?, p_payload => ?::jsonb, p_on_conflict => ?,
              p_now => coalesce(?::timestamptz, now()),
              p_max_wait => make_interval(secs => ?), p_dedupe_for => make_interval(secs => ?),
              p_priority => ?::integer, p_traceparent => ?, p_tracestate => ?,
              p_window => make_interval(secs => ?), p_dedupe_outcomes => coalesce(?::text[], '{done}'),
              p_allow_unknown_class => ?, p_by => coalesce(?, current_user), p_calendar => ?,
              p_business_delay => ?)""";
        Instant now = now();
        try (PreparedStatement st = connection.prepareStatement(sql)) {
            st.setString(1, check.job());
            st.setString(2, check.entityName());
            st.setString(3, check.entityKey());
            Sql.setInstant(st, 4, check.at());
            Sql.setInstant(st, 5, now);
            Sql.setSeconds(st, 6, check.after());
            Sql.setText(st, 7, check.jobKey());
            Sql.setText(st, 8, check.groupKey());
            st.setString(9, check.payload());
            st.setString(10, check.onConflict().sqlName());
            Sql.setInstant(st, 11, now);
            Sql.setSeconds(st, 12, check.maxWait());
            Sql.setSeconds(st, 13, check.dedupeFor());
            st.setObject(14, check.priority(), Types.INTEGER);
            Sql.setText(st, 15, check.traceparent());
            Sql.setText(st, 16, check.tracestate());
            Sql.setSeconds(st, 17, check.window());
            if (check.dedupeOutcomes() == null) {
                st.setNull(18, Types.ARRAY);
            } else {
                st.setArray(18, Sql.texts(connection, check.dedupeOutcomes()));
            }
            st.setBoolean(19, check.allowUnknownClass());
            Sql.setText(st, 20, check.by());
            Sql.setText(st, 21, check.calendar());
            Sql.setText(st, 22, check.businessDelay());
            try (ResultSet rs = st.executeQuery()) {
                rs.next();
                return new Scheduled(rs.getLong("id"), rs.getString("job_key"), Sql.instant(rs, "next_check_at"),
                                     Sql.instant(rs, "first_check_at"), rs.getString("status"));
            }
        } catch (SQLException e) {
            throw Sql.translate(e);
        }
    }

    /** Cancels the pending check with this id: its id, or empty when none was pending. */
    public OptionalLong cancel(Connection connection, long id) throws SQLException {
        return cancel(connection, id, null);
    }

    /** Cancels the pending check with this job key: its id, or empty when none was pending. */
    public OptionalLong cancel(Connection connection, String jobKey) throws SQLException {
        return cancel(connection, null, jobKey);
    }

    private OptionalLong cancel(Connection connection, Long id, String jobKey) throws SQLException {
        String sql = "SELECT prescient.cancel(p_id => ?::bigint, p_job_key => ?, "
                     + "p_now => coalesce(?::timestamptz, now()))";
        try (PreparedStatement st = connection.prepareStatement(sql)) {
            st.setObject(1, id);
            Sql.setText(st, 2, jobKey);
            Sql.setInstant(st, 3, now());
            try (ResultSet rs = st.executeQuery()) {
                rs.next();
                long cancelled = rs.getLong(1);
                return rs.wasNull() ? OptionalLong.empty() : OptionalLong.of(cancelled);
            }
        } catch (SQLException e) {
            throw Sql.translate(e);
        }
    }

    /** Moves the pending check with this id to {@code at}; empty when none was pending. */
    public Optional<Rescheduled> reschedule(Connection connection, long id, Instant at) throws SQLException {
        return reschedule(connection, id, null, at);
    }

    /** Moves the pending check with this job key to {@code at}; empty when none was pending. */
    public Optional<Rescheduled> reschedule(Connection connection, String jobKey, Instant at) throws SQLException {
        return reschedule(connection, null, jobKey, at);
    }

    private Optional<Rescheduled> reschedule(Connection connection, Long id, String jobKey, Instant at)
        throws SQLException {
        String sql = "SELECT id, job_key, next_check_at FROM prescient.reschedule(p_at => ?::timestamptz, "
                     + "p_id => ?::bigint, p_job_key => ?, p_now => coalesce(?::timestamptz, now()))";
        try (PreparedStatement st = connection.prepareStatement(sql)) {
            Sql.setInstant(st, 1, at);
            st.setObject(2, id);
            Sql.setText(st, 3, jobKey);
            Sql.setInstant(st, 4, now());
            try (ResultSet rs = st.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                return Optional.of(new Rescheduled(rs.getLong("id"), rs.getString("job_key"),
                                                   Sql.instant(rs, "next_check_at")));
            }
        } catch (SQLException e) {
            throw Sql.translate(e);
        }
    }

    /**
     * {@code prescient.worker_retry}: puts the dead letter of a worker class's check (its latest {@code failed}
     * history row) back as pending, due now by the database's clock, its attempts counted afresh; answers when
     * it is due. Needs {@code prescient_worker}'s rights. Refused: {@link PrescientException.Conflict} when the
     * check is pending already or its job key is taken by another pending check, {@link
     * PrescientException.NotFound} when the history holds no failure of it, {@link PrescientException.Refused}
     * for a runner's class.
     */
    public Instant retry(Connection connection, long id) throws SQLException {
        try (PreparedStatement st = connection.prepareStatement("SELECT prescient.worker_retry(?) AS due_at")) {
            st.setLong(1, id);
            try (ResultSet rs = st.executeQuery()) {
                rs.next();
                return Sql.instant(rs, "due_at");
            }
        } catch (SQLException e) {
            throw Sql.translate(e);
        }
    }

    /**
     * {@code prescient.cron_add}: a recurring schedule whose occurrences are checks of {@code schedule.job()};
     * its version (1). {@code prescient_client} and {@code prescient_worker} may call it.
     */
    public int cronAdd(Connection connection, CronSchedule schedule) throws SQLException {
        String sql = """
            SELECT prescient.cron_add(p_id => ?, p_spec => ?, p_time_zone => ?, p_job => ?, p_payload => ?::jsonb,
              p_now => coalesce(?::timestamptz, now()), p_catch_up => ?, p_deadline_seconds => ceil(?::float8)::bigint,
              p_window_seconds => ceil(?::float8)::bigint, p_jitter_seconds => ceil(?::float8)::bigint,
              p_options => ?::jsonb, p_by => coalesce(?, current_user))""";
        try (PreparedStatement st = connection.prepareStatement(sql)) {
            st.setString(1, schedule.id());
            st.setString(2, schedule.spec());
            st.setString(3, schedule.timeZone());
            st.setString(4, schedule.job());
            st.setString(5, schedule.payload());
            Sql.setInstant(st, 6, now());
            st.setString(7, schedule.catchUp());
            Sql.setSeconds(st, 8, schedule.deadline());
            Sql.setSeconds(st, 9, schedule.window());
            Sql.setSeconds(st, 10, schedule.jitter());
            Sql.setText(st, 11, schedule.options());
            Sql.setText(st, 12, schedule.by());
            try (ResultSet rs = st.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        } catch (SQLException e) {
            throw Sql.translate(e);
        }
    }
}
