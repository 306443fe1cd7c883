package dev.prescient;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.List;

/**
 * Creates or upgrades the prescient schema from Java, with no prescient binary (docs/workers.md, "The schema
 * without the binary"): the SQL bundle this jar carries ({@code dev/prescient/prescient-bundle.sql}, a copy of
 * the repository's {@code sql/prescient-bundle.sql} that a test keeps identical), applied in one transaction
 * as the schema's owner. It keeps the bookkeeping of {@code prescient migrate}, so either upgrades after the
 * other; a database newer than the bundle is refused ({@link PrescientException.Refused}) before anything is
 * written.
 */
public final class PrescientSchema {
    private PrescientSchema() {}

    /** One file the migration applied: {@code kind} is {@code migration} or {@code functions}. */
    public record Applied(String kind, String name) {}

    /**
     * Applies the bundle on {@code c} (its auto-commit is restored afterwards) and answers what it applied.
     * {@code slotSeconds}: the slot resolution of a new database (null: 60); on an existing one it must match,
     * or be null.
     */
    public static List<Applied> migrate(Connection c, Integer slotSeconds) throws SQLException {
        String bundle = bundle();
        boolean autoCommit = c.getAutoCommit();
        c.setAutoCommit(false);
        try {
            try (Statement st = c.createStatement()) {
                st.execute(bundle);
            }
            List<Applied> applied = new ArrayList<>();
            try (PreparedStatement st =
                     c.prepareStatement("SELECT kind, name FROM pg_temp.prescient_migrate(?::integer)")) {
                if (slotSeconds == null) {
                    st.setNull(1, Types.INTEGER);
                } else {
                    st.setInt(1, slotSeconds);
                }
                try (ResultSet rs = st.executeQuery()) {
                    while (rs.next()) {
                        applied.add(new Applied(rs.getString(1), rs.getString(2)));
                    }
                }
            }
            c.commit();
            return applied;
        } catch (SQLException e) {
            c.rollback();
            throw Sql.translate(e);
        } finally {
            c.setAutoCommit(autoCommit);
        }
    }

    /** The bundle's text, as this jar carries it. */
    public static String bundle() {
        try (InputStream in = PrescientSchema.class.getResourceAsStream("prescient-bundle.sql")) {
            if (in == null) {
                throw new IllegalStateException("dev/prescient/prescient-bundle.sql is missing from the jar");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read dev/prescient/prescient-bundle.sql: " + e, e);
        }
    }
}
