package dev.prescient.testing;

import dev.prescient.DatabaseUrl;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * The database of a test or of the conformance driver: {@code PRESCIENT_DATABASE_URL} (a libpq URI or
 * key=value string, as with-database.sh sets it) read by the client's {@link DatabaseUrl}, and a few query
 * helpers.
 */
public final class Database {
    private final DatabaseUrl url;

    private Database(DatabaseUrl url) {
        this.url = url;
    }

    public static Database fromEnvironment() {
        String url = System.getenv("PRESCIENT_DATABASE_URL");
        if (url == null || url.isEmpty()) {
            throw new IllegalStateException("PRESCIENT_DATABASE_URL is not set (run through with-database.sh)");
        }
        return new Database(DatabaseUrl.parse(url));
    }

    public Connection connect() throws SQLException {
        return url.connect();
    }

    /** Another database of the same server, as the same role. */
    public Database other(String database) {
        return new Database(url.withDatabase(database));
    }

    /** The same database as another login role (trust authentication on the test cluster). */
    public Database as(String user) {
        return new Database(url.asUser(user));
    }

    public void execute(String sql, Object... args) throws SQLException {
        try (Connection c = connect(); PreparedStatement st = c.prepareStatement(sql)) {
            bind(st, args);
            st.execute();
        }
    }

    /** A statement on the caller's connection (in its transaction). */
    public void execute(Connection c, String sql, Object... args) throws SQLException {
        try (PreparedStatement st = c.prepareStatement(sql)) {
            bind(st, args);
            st.execute();
        }
    }

    /** The first column of every row, as Java objects. */
    public List<Object> column(String sql, Object... args) throws SQLException {
        try (Connection c = connect(); PreparedStatement st = c.prepareStatement(sql)) {
            bind(st, args);
            List<Object> out = new ArrayList<>();
            try (ResultSet rs = st.executeQuery()) {
                while (rs.next()) {
                    Object v = rs.getObject(1);
                    // timestamptz comes back as java.sql.Timestamp: tests compare instants
                    out.add(v instanceof java.sql.Timestamp ts
                            ? java.time.OffsetDateTime.ofInstant(ts.toInstant(), java.time.ZoneOffset.UTC) : v);
                }
            }
            return out;
        }
    }

    /** The one value of a one-row, one-column query (null when no row). */
    public Object value(String sql, Object... args) throws SQLException {
        List<Object> values = column(sql, args);
        return values.isEmpty() ? null : values.get(0);
    }

    public long count(String sql, Object... args) throws SQLException {
        return ((Number) value(sql, args)).longValue();
    }

    public void declareWorkerClasses(String... classes) throws SQLException {
        try (Connection c = connect(); Statement st = c.createStatement()) {
            for (String job : classes) {
                st.execute("SELECT prescient.job_class_add('" + job.replace("'", "''") + "', p_worker => true)");
            }
        }
    }

    private static void bind(PreparedStatement st, Object[] args) throws SQLException {
        for (int i = 0; i < args.length; i++) {
            if (args[i] instanceof java.time.Instant t) {
                st.setObject(i + 1, java.time.OffsetDateTime.ofInstant(t, java.time.ZoneOffset.UTC));
            } else {
                st.setObject(i + 1, args[i]);
            }
        }
    }
}
