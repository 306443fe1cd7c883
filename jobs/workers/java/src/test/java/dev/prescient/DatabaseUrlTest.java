package dev.prescient;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** DatabaseUrl: the libpq URLs an application is configured with, as the JDBC driver takes them. */
final class DatabaseUrlTest {
    @Test
    void a_libpq_uri_becomes_a_jdbc_url_and_properties() {
        DatabaseUrl url = DatabaseUrl.parse("postgresql://ada:s%40cret@db.example:6543/shop?sslmode=require"
                                            + "&application_name=billing&connect_timeout=5&options=-c%20search_path%3Dapp");
        assertEquals("jdbc:postgresql://db.example:6543/shop", url.jdbcUrl());
        assertEquals(Map.of("user", "ada", "password", "s@cret", "sslmode", "require", "ApplicationName", "billing",
                            "connectTimeout", "5", "options", "-c search_path=app"), map(url.properties()));
        assertFalse(url.toString().contains("s@cret"), url.toString());
    }

    @Test
    void libpq_defaults_several_hosts_and_key_values() {
        String me = System.getProperty("user.name");
        DatabaseUrl bare = DatabaseUrl.parse("postgres://");
        assertEquals("jdbc:postgresql://localhost:5432/" + me, bare.jdbcUrl(), "libpq's defaults");
        assertEquals(Map.of("user", me), map(bare.properties()));

        DatabaseUrl failover = DatabaseUrl.parse("postgresql://h1:5433,[::1]:5434/db?target_session_attrs=read-write");
        assertEquals("jdbc:postgresql://h1:5433,[::1]:5434/db", failover.jdbcUrl(), "hosts in order");
        assertEquals("primary", failover.properties().getProperty("targetServerType"));

        DatabaseUrl keyValues = DatabaseUrl.parse("host=db port=6543 dbname='my shop' user=ada password='a b\\'c'");
        assertEquals("jdbc:postgresql://db:6543/my%20shop", keyValues.jdbcUrl(), "key=value pairs");
        assertEquals(Map.of("user", "ada", "password", "a b'c"), map(keyValues.properties()));

        String jdbc = "jdbc:postgresql://db:5432/shop?user=ada";
        assertEquals(jdbc, DatabaseUrl.parse(jdbc).jdbcUrl(), "a JDBC URL as it is");
    }

    @Test
    void what_jdbc_cannot_do_is_refused_by_name() {
        Map<String, String> refusals = Map.of(
            "postgresql://db/shop?gssencmode=disable", "'gssencmode'",
            "postgresql://%2Fvar%2Frun%2Fpostgresql/shop", "'/var/run/postgresql' is a Unix socket",
            "postgresql://db:54x/shop", "port '54x'",
            "postgresql://db/shop?target_session_attrs=fastest", "'fastest'",
            "mysql://db/shop", "'mysql://db/shop'",
            " ", "no database URL");
        refusals.forEach((url, named) -> {
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class, () -> DatabaseUrl.parse(url));
            assertTrue(refused.getMessage().contains(named), url + ": " + refused.getMessage());
        });
    }

    /** The tests' own database, from the libpq URI with-database.sh gives, as another role and database. */
    @Test
    void the_tests_database_through_its_libpq_url() throws Exception {
        DatabaseUrl url = DatabaseUrl.parse(System.getenv("PRESCIENT_DATABASE_URL"));
        try (Connection c = url.withDatabase("postgres").asUser("prescient_worker_probe_absent").connect()) {
            throw new AssertionError("connected as a role that does not exist: " + c);
        } catch (java.sql.SQLException e) {
            assertEquals("28000", e.getSQLState(), "no such role: " + e.getMessage());
        }
        try (Connection c = url.withDatabase("postgres").connect(); Statement st = c.createStatement();
             ResultSet rs = st.executeQuery("SELECT current_database()")) {
            rs.next();
            assertEquals("postgres", rs.getString(1));
        }
    }

    private static Map<String, String> map(Properties properties) {
        Map<String, String> out = new TreeMap<>();
        properties.stringPropertyNames().forEach(k -> out.put(k, properties.getProperty(k)));
        return out;
    }
}
