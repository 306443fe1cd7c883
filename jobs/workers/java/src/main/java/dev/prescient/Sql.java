package dev.prescient;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.List;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

/** JDBC plumbing shared by the client and the worker: times, arrays, and prescient's SQLSTATEs. */
final class Sql {
    private Sql() {
    }

    static void setInstant(PreparedStatement st, int index, Instant value) throws SQLException {
        if (value == null) {
            st.setNull(index, Types.TIMESTAMP_WITH_TIMEZONE);
        } else {
            st.setObject(index, OffsetDateTime.ofInstant(value, ZoneOffset.UTC), Types.TIMESTAMP_WITH_TIMEZONE);
        }
    }

    static void setSeconds(PreparedStatement st, int index, Duration value) throws SQLException {
        if (value == null) {
            st.setNull(index, Types.DOUBLE);
        } else {
            st.setDouble(index, value.toNanos() / 1e9);
        }
    }

    static void setText(PreparedStatement st, int index, String value) throws SQLException {
        if (value == null) {
            st.setNull(index, Types.VARCHAR);
        } else {
            st.setString(index, value);
        }
    }

    static Instant instant(ResultSet rs, String column) throws SQLException {
        OffsetDateTime t = rs.getObject(column, OffsetDateTime.class);
        return t == null ? null : t.toInstant();
    }

    static java.sql.Array bigints(Connection c, List<Long> values) throws SQLException {
        return c.createArrayOf("int8", values.toArray(new Long[0]));
    }

    /** A text[] parameter; SQL casts it to timestamptz[] or jsonb[] where it needs those. */
    static java.sql.Array texts(Connection c, List<String> values) throws SQLException {
        return c.createArrayOf("text", values.toArray(new String[0]));
    }

    /** The refusals prescient raises as typed exceptions with the server's one-line message; others as they are. */
    static SQLException translate(SQLException e) {
        String state = e.getSQLState();
        if (state == null || !state.startsWith("PR")) {
            return e;
        }
        String message = e.getMessage();
        if (e instanceof PSQLException pe) {
            ServerErrorMessage server = pe.getServerErrorMessage();
            if (server != null && server.getMessage() != null) {
                message = server.getMessage();
            }
        }
        return switch (state) {
            case "PR400" -> new PrescientException.Refused(message, e);
            case "PR409" -> new PrescientException.Conflict(message, e);
            case "PR404" -> new PrescientException.NotFound(message, e);
            default -> new PrescientException(message, state, e);
        };
    }

    /** Text PostgreSQL accepts: it refuses a NUL in a text value, so one is written as the two characters \0. */
    static String storable(String text) {
        return text.indexOf('\0') < 0 ? text : text.replace("\0", "\\0");
    }
}
