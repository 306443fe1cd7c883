package dev.prescient;

import static dev.prescient.TestSupport.DB;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.Statement;
import java.util.List;
import org.junit.jupiter.api.Test;

/** PrescientSchema: the schema from the jar's bundle. */
final class SchemaTest {
    /**
     * The schema with no prescient binary: the jar's bundle is the repository's, it makes a new database at the
     * slot asked, applies nothing to the one the binary made, and refuses a newer database.
     */
    @Test
    void schema_from_the_bundle() throws Exception {
        String repository = java.nio.file.Files.readString(
            java.nio.file.Path.of(System.getProperty("prescient.java.dir"), "..", "..", "..", "sql", "prescient-bundle.sql"));
        assertTrue(repository.equals(PrescientSchema.bundle()),
              "src/main/resources/dev/prescient/prescient-bundle.sql differs: copy sql/prescient-bundle.sql");
        String name = "prescient_java_schema_" + ProcessHandle.current().pid();
        try (Connection admin = DB.connect(); Statement st = admin.createStatement()) {
            st.execute("DROP DATABASE IF EXISTS " + name);
            st.execute("CREATE DATABASE " + name);
        }
        try {
            try (Connection fresh = DB.other(name).connect()) {
                List<PrescientSchema.Applied> made = PrescientSchema.migrate(fresh, 30);
                assertTrue(made.contains(new PrescientSchema.Applied("functions", "072_worker_protocol.sql")),
                      "the function files applied: " + made);
                assertEquals(List.of(30), DB.other(name).column("SELECT slot_seconds FROM prescient.settings"),
                             "the slot");
                assertEquals(List.of(), PrescientSchema.migrate(fresh, null), "a second migrate");
                try (Statement st = fresh.createStatement()) {
                    st.execute("INSERT INTO prescient.schema_migrations (version, name, checksum)"
                               + " VALUES (9999, '9999_future.sql', 'x')");
                }
                PrescientException.Refused refused = assertThrows(PrescientException.Refused.class,
                                                            () -> PrescientSchema.migrate(fresh, null));
                assertTrue(refused.getMessage().contains("newer than this bundle knows"), refused.getMessage());
            }
            try (Connection binarys = DB.connect()) {
                assertEquals(List.of(), PrescientSchema.migrate(binarys, null), "the binary's database");
            }
        } finally {
            try (Connection admin = DB.connect(); Statement st = admin.createStatement()) {
                st.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
            }
        }
    }
}
