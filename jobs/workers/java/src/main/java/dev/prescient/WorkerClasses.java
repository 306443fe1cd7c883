package dev.prescient;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.util.Objects;

/**
 * Worker classes declared by the application itself, with their policy, with {@code prescient_worker}'s rights
 * only: no schema owner and no prescient binary (docs/workers.md, "Declaring a worker class").
 */
public final class WorkerClasses {
    private WorkerClasses() {
    }

    /**
     * {@code prescient.declare_worker_class}: makes {@code job} a worker class if no one declared it, and sets
     * the policy's fields that are not null. Answers {@code added} or {@code known}. A runner's class, a bad
     * policy or a bad name is refused ({@link PrescientException.Refused}), and nothing is written.
     */
    public static String declare(Connection connection, String job, Policy policy) throws SQLException {
        Objects.requireNonNull(job, "job");
        Objects.requireNonNull(policy, "policy");
        String sql = """
            SELECT prescient.declare_worker_class(?, p_max_checks => ?::integer, p_max_attempts => ?::integer,
              p_backoff => make_interval(secs => ?), p_backoff_max => make_interval(secs => ?),
              p_timeout => make_interval(secs => ?))""";
        try (PreparedStatement st = connection.prepareStatement(sql)) {
            st.setString(1, job);
            st.setObject(2, policy.maxChecks(), Types.INTEGER);
            st.setObject(3, policy.maxAttempts(), Types.INTEGER);
            Sql.setSeconds(st, 4, policy.backoff());
            Sql.setSeconds(st, 5, policy.backoffMax());
            Sql.setSeconds(st, 6, policy.timeout());
            try (ResultSet rs = st.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        } catch (SQLException e) {
            throw Sql.translate(e);
        }
    }
}
