package dev.prescient;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * A database to connect to, from the URL an application is configured with: a libpq URI
 * ({@code postgresql://user:secret@host:5432/shop?sslmode=require}, the form {@code psql}, the prescient
 * binary and the other clients take), a libpq key/value string ({@code host=db port=5432 dbname=shop}), or a
 * JDBC URL, passed through. The libpq forms become the PostgreSQL JDBC driver's URL and properties:
 * <pre>{@code
 * DatabaseUrl db = DatabaseUrl.parse(System.getenv("DATABASE_URL"));
 * Worker.builder(db::connect).handler(...).build().start();
 * }</pre>
 * As with libpq, the user defaults to the operating system's, the database to the user's name, the host to
 * localhost and the port to 5432. libpq's parameters that JDBC has too are translated (the table below);
 * any other is refused ({@link IllegalArgumentException} naming it), as is a Unix socket's path for a host:
 * JDBC connects over TCP only.
 */
public final class DatabaseUrl {
    /** libpq's connection parameters and the JDBC driver's names for them; host, port and dbname aside. */
    private static final Map<String, String> PARAMETERS = Map.ofEntries(
        Map.entry("user", "user"), Map.entry("password", "password"), Map.entry("sslmode", "sslmode"),
        Map.entry("sslcert", "sslcert"), Map.entry("sslkey", "sslkey"), Map.entry("sslrootcert", "sslrootcert"),
        Map.entry("application_name", "ApplicationName"), Map.entry("connect_timeout", "connectTimeout"),
        Map.entry("options", "options"), Map.entry("target_session_attrs", "targetServerType"));
    /** libpq's target_session_attrs and the JDBC driver's targetServerType. */
    private static final Map<String, String> TARGETS = Map.of(
        "any", "any", "read-write", "primary", "primary", "primary", "read-only", "secondary", "standby", "secondary",
        "prefer-standby", "preferSecondary");

    private final String jdbcUrl;
    private final Properties properties;

    private DatabaseUrl(String jdbcUrl, Properties properties) {
        this.jdbcUrl = jdbcUrl;
        this.properties = properties;
    }

    /** The database of {@code url}: a libpq URI or key/value string, or a JDBC URL ({@code jdbc:postgresql:...}). */
    public static DatabaseUrl parse(String url) {
        if (url == null || url.isBlank()) {
            throw new IllegalArgumentException("no database URL given (postgresql://user@host:port/database)");
        }
        if (url.startsWith("jdbc:")) {
            return new DatabaseUrl(url, new Properties());
        }
        Libpq libpq = new Libpq();
        if (url.startsWith("postgresql://") || url.startsWith("postgres://")) {
            libpq.readUri(url);
        } else if (url.contains("=")) {
            libpq.readKeyValues(url);
        } else {
            throw new IllegalArgumentException("the database URL '" + url + "' is neither postgresql://..., "
                                               + "key=value pairs nor jdbc:postgresql:...");
        }
        return libpq.toJdbc();
    }

    /** The JDBC URL: host, port and database; the rest is in {@link #properties}. */
    public String jdbcUrl() {
        return jdbcUrl;
    }

    /** The driver's connection properties (the user, the password, TLS ...): a copy. */
    public Properties properties() {
        Properties copy = new Properties();
        copy.putAll(properties);
        return copy;
    }

    public Connection connect() throws SQLException {
        return DriverManager.getConnection(jdbcUrl, properties);
    }

    /** The same server and database as another login role, with no password (each role its own). */
    public DatabaseUrl asUser(String user) {
        Properties props = properties();
        props.setProperty("user", user);
        props.remove("password");
        return new DatabaseUrl(jdbcUrl, props);
    }

    /** Another database of the same server, as the same role. */
    public DatabaseUrl withDatabase(String database) {
        return new DatabaseUrl(jdbcUrl.replaceFirst("/[^/?]*(\\?|$)", "/" + database + "$1"), properties);
    }

    /** The JDBC URL, never the password. */
    @Override
    public String toString() {
        return jdbcUrl + " as " + properties.getProperty("user");
    }

    /** What a libpq URI or key/value string says, read piece by piece. */
    private static final class Libpq {
        private final List<String> hosts = new ArrayList<>();
        private final List<String> ports = new ArrayList<>();
        private String database;
        private final Properties properties = new Properties();

        void readUri(String url) {
            String rest = url.substring(url.indexOf("://") + 3);
            int query = rest.indexOf('?');
            if (query >= 0) {
                for (String pair : rest.substring(query + 1).split("&")) {
                    if (!pair.isEmpty()) {
                        int eq = pair.indexOf('=');
                        set(decode(eq < 0 ? pair : pair.substring(0, eq)), eq < 0 ? "" : decode(pair.substring(eq + 1)));
                    }
                }
                rest = rest.substring(0, query);
            }
            int slash = rest.indexOf('/');
            if (slash >= 0) {
                String db = decode(rest.substring(slash + 1));
                if (!db.isEmpty()) {
                    database = db;
                }
                rest = rest.substring(0, slash);
            }
            int at = rest.lastIndexOf('@');
            if (at >= 0) {
                String userInfo = rest.substring(0, at);
                int colon = userInfo.indexOf(':');
                set("user", decode(colon < 0 ? userInfo : userInfo.substring(0, colon)));
                if (colon >= 0) {
                    set("password", decode(userInfo.substring(colon + 1)));
                }
                rest = rest.substring(at + 1);
            }
            if (!rest.isEmpty()) {
                for (String hostPort : rest.split(",")) {
                    // [::1]:5432, host:5432, host
                    int portAt = hostPort.startsWith("[") ? hostPort.indexOf("]:") + 1 : hostPort.lastIndexOf(':');
                    hosts.add(decode(portAt > 0 ? hostPort.substring(0, portAt) : hostPort));
                    ports.add(portAt > 0 ? hostPort.substring(portAt + 1) : "");
                }
            }
        }

        void readKeyValues(String text) {
            int i = 0;
            while (i < text.length()) {
                if (Character.isWhitespace(text.charAt(i))) {
                    i++;
                    continue;
                }
                int eq = text.indexOf('=', i);
                if (eq < 0) {
                    throw new IllegalArgumentException("'" + text.substring(i) + "' in the database URL has no value "
                                                       + "(key=value)");
                }
                String key = text.substring(i, eq).trim();
                StringBuilder value = new StringBuilder();
                i = eq + 1;
                if (i < text.length() && text.charAt(i) == '\'') {
                    for (i++; i < text.length() && text.charAt(i) != '\''; i++) {
                        value.append(text.charAt(i) == '\\' && i + 1 < text.length() ? text.charAt(++i) : text.charAt(i));
                    }
                    i++; // the closing quote
                } else {
                    for (; i < text.length() && !Character.isWhitespace(text.charAt(i)); i++) {
                        value.append(text.charAt(i) == '\\' && i + 1 < text.length() ? text.charAt(++i) : text.charAt(i));
                    }
                }
                set(key, value.toString());
            }
        }

        private void set(String key, String value) {
            switch (key) {
                case "host", "hostaddr" -> {
                    hosts.clear();
                    hosts.addAll(List.of(value.split(",", -1)));
                }
                case "port" -> {
                    ports.clear();
                    ports.addAll(List.of(value.split(",", -1)));
                }
                case "dbname" -> database = value;
                case "target_session_attrs" -> {
                    String target = TARGETS.get(value);
                    if (target == null) {
                        throw new IllegalArgumentException("target_session_attrs '" + value + "' in the database URL "
                                                           + "is not one of " + TARGETS.keySet());
                    }
                    properties.setProperty(PARAMETERS.get(key), target);
                }
                default -> {
                    String jdbcName = PARAMETERS.get(key);
                    if (jdbcName == null) {
                        throw new IllegalArgumentException("the database URL's parameter '" + key + "' has no JDBC "
                                                           + "equivalent here (known: host, port, dbname, "
                                                           + String.join(", ", PARAMETERS.keySet().stream().sorted()
                                                                                         .toList()) + ")");
                    }
                    properties.setProperty(jdbcName, value);
                }
            }
        }

        DatabaseUrl toJdbc() {
            if (hosts.isEmpty()) {
                hosts.add("");
            }
            if (ports.size() > 1 && ports.size() != hosts.size()) {
                throw new IllegalArgumentException("the database URL names " + hosts.size() + " hosts and "
                                                   + ports.size() + " ports");
            }
            List<String> servers = new ArrayList<>();
            for (int i = 0; i < hosts.size(); i++) {
                String host = hosts.get(i).isEmpty() ? "localhost" : hosts.get(i);
                if (host.startsWith("/") || host.startsWith("@")) {
                    throw new IllegalArgumentException("the database URL's host '" + host + "' is a Unix socket: JDBC "
                                                       + "connects over TCP only (host=localhost)");
                }
                String port = ports.isEmpty() ? "" : ports.get(ports.size() == 1 ? 0 : i);
                if (!port.isEmpty() && !port.matches("[0-9]{1,5}")) {
                    throw new IllegalArgumentException("the database URL's port '" + port + "' is not a port number");
                }
                servers.add(host + ":" + (port.isEmpty() ? "5432" : port));
            }
            if (properties.getProperty("user") == null) {
                properties.setProperty("user", System.getProperty("user.name"));
            }
            String db = database != null ? database : properties.getProperty("user");
            String url = "jdbc:postgresql://" + String.join(",", servers) + "/"
                         + java.net.URLEncoder.encode(db, StandardCharsets.UTF_8).replace("+", "%20");
            return new DatabaseUrl(url, properties);
        }

        private static String decode(String s) {
            return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
        }
    }
}
