package dev.prescient.testing;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * The database of a test or of the conformance driver: {@code PRESCIENT_DATABASE_URL} (a libpq URI or
 * key=value string, as with-database.sh sets it) turned into a JDBC URL, and a few query helpers.
 */
public final class Database {
    private final String jdbcUrl;
    private final Properties properties;

    private Database(String jdbcUrl, Properties properties) {
        this.jdbcUrl = jdbcUrl;
        this.properties = properties;
    }

    public static Database fromEnvironment() {
        String url = System.getenv("PRESCIENT_DATABASE_URL");
        if (url == null || url.isEmpty()) {
            throw new IllegalStateException("PRESCIENT_DATABASE_URL is not set (run through with-database.sh)");
        }
        return fromLibpq(url);
    }

    /** {@code postgresql://user:pw@host:port/db?k=v} or {@code host=H port=P dbname=D user=U}. */
    public static Database fromLibpq(String url) {
        Properties props = new Properties();
        String host = "localhost";
        String port = "5432";
        String db = "";
        if (url.startsWith("postgres://") || url.startsWith("postgresql://")) {
            URI uri = URI.create(url);
            if (uri.getRawUserInfo() != null) {
                String[] userInfo = uri.getRawUserInfo().split(":", 2);
                props.setProperty("user", decode(userInfo[0]));
                if (userInfo.length == 2) {
                    props.setProperty("password", decode(userInfo[1]));
                }
            }
            host = uri.getHost() != null ? uri.getHost() : host;
            port = uri.getPort() > 0 ? String.valueOf(uri.getPort()) : port;
            db = uri.getPath() == null ? "" : uri.getPath().replaceFirst("^/", "");
            if (uri.getRawQuery() != null) {
                for (String kv : uri.getRawQuery().split("&")) {
                    String[] p = kv.split("=", 2);
                    libpqOption(props, decode(p[0]), p.length == 2 ? decode(p[1]) : "");
                }
            }
        } else {
            for (String kv : url.trim().split("\\s+")) {
                String[] p = kv.split("=", 2);
                String value = p.length == 2 ? p[1].replaceAll("^'|'$", "") : "";
                switch (p[0]) {
                    case "host" -> host = value;
                    case "port" -> port = value;
                    case "dbname" -> db = value;
                    default -> libpqOption(props, p[0], value);
                }
            }
        }
        if (props.getProperty("user") == null) {
            props.setProperty("user", System.getProperty("user.name"));
        }
        return new Database("jdbc:postgresql://" + host + ":" + port + "/" + db, props);
    }

    private static void libpqOption(Properties props, String key, String value) {
        switch (key) {
            case "user", "password", "sslmode" -> props.setProperty(key, value);
            case "application_name" -> props.setProperty("ApplicationName", value);
            case "connect_timeout" -> props.setProperty("connectTimeout", value);
            default -> { } // libpq-only options: not for JDBC
        }
    }

    private static String decode(String s) {
        return URLDecoder.decode(s, StandardCharsets.UTF_8);
    }

    public Connection connect() throws SQLException {
        return DriverManager.getConnection(jdbcUrl, properties);
    }

    /** Another database of the same server, as the same role. */
    public Database other(String database) {
        return new Database(jdbcUrl.replaceFirst("/[^/]*$", "/" + database), properties);
    }

    /** The same database as another login role (trust authentication on the test cluster). */
    public Database as(String user) {
        Properties props = new Properties();
        props.putAll(properties);
        props.setProperty("user", user);
        props.remove("password");
        return new Database(jdbcUrl, props);
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
