package dev.prescient.examples;

import dev.prescient.Answer;
import dev.prescient.Check;
import dev.prescient.NewCheck;
import dev.prescient.PrescientClient;
import dev.prescient.Worker;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.function.Supplier;

/**
 * The seed scenario (README.md): an order still unshipped three hours after it was placed gets an email,
 * six hours after an escalation, and the checks stop as soon as it ships. The shop's tables are its own;
 * prescient holds only the check, enqueued in the transaction that places the order.
 */
public final class OrderUnshipped {
    public static final String JOB = "order_unshipped";
    static final Duration EMAIL_AFTER = Duration.ofHours(3);
    static final Duration ESCALATE_AFTER = Duration.ofHours(6);

    private final Supplier<Instant> clock;
    private final Worker.ConnectionSource db;
    private final PrescientClient prescient;

    /** {@code clock} is the shop's "now" (tests pin it); {@code db} gives the handler its connections. */
    public OrderUnshipped(Supplier<Instant> clock, Worker.ConnectionSource db) {
        this.clock = clock;
        this.db = db;
        this.prescient = new PrescientClient(clock);
    }

    public static void createTables(Connection c) throws SQLException {
        try (Statement st = c.createStatement()) {
            st.execute("""
                CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, customer text NOT NULL,
                                     placed_at timestamptz NOT NULL, shipped_at timestamptz);
                CREATE TABLE order_notices (order_id bigint NOT NULL REFERENCES orders, kind text NOT NULL,
                                            sent_at timestamptz NOT NULL, PRIMARY KEY (order_id, kind))""");
        }
    }

    /** Places an order and, in the same transaction (the caller's), the check that watches it. */
    public long placeOrder(Connection c, String customer) throws SQLException {
        long id;
        try (PreparedStatement st = c.prepareStatement(
                 "INSERT INTO orders (customer, placed_at) VALUES (?, ?) RETURNING id")) {
            st.setString(1, customer);
            st.setObject(2, OffsetDateTime.ofInstant(clock.get(), ZoneOffset.UTC));
            try (ResultSet rs = st.executeQuery()) {
                rs.next();
                id = rs.getLong(1);
            }
        }
        prescient.schedule(c, NewCheck.of(JOB, "orders", Long.toString(id))
                                      .after(EMAIL_AFTER)
                                      .jobKey(JOB + ":" + id));
        return id;
    }

    public void ship(Connection c, long orderId) throws SQLException {
        try (PreparedStatement st = c.prepareStatement("UPDATE orders SET shipped_at = ? WHERE id = ?")) {
            st.setObject(1, OffsetDateTime.ofInstant(clock.get(), ZoneOffset.UTC));
            st.setLong(2, orderId);
            st.executeUpdate();
        }
    }

    /**
     * The handler: runs at 3 h (email, look again at 6 h) and at 6 h (escalate, done); shipped: done. The
     * notice and the check's settlement commit in one transaction (completeIn): each notice is sent exactly
     * once, even if a worker dies mid-run. A lost lease throws LeaseLostException: the notice rolls back.
     */
    public Answer check(Check check) throws SQLException {
        long orderId = Long.parseLong(check.entityKey());
        try (Connection c = db.open()) {
            c.setAutoCommit(false);
            try {
                check.completeIn(c, notify(c, check, orderId));
                c.commit();
            } finally {
                if (!c.getAutoCommit()) {
                    c.rollback(); // after a commit, nothing; after a failure, the notice and the settlement
                }
            }
        }
        return null; // not read: the check was settled in the transaction
    }

    /** Sends what is due in the caller's transaction, and answers when to look again. */
    private Answer notify(Connection c, Check check, long orderId) throws SQLException {
        Instant placedAt;
        try (PreparedStatement st = c.prepareStatement(
                 "SELECT placed_at, shipped_at IS NOT NULL FROM orders WHERE id = ?")) {
            st.setLong(1, orderId);
            try (ResultSet rs = st.executeQuery()) {
                if (!rs.next() || rs.getBoolean(2)) {
                    return Answer.done(); // shipped (or gone): nothing to say, stop looking
                }
                placedAt = rs.getObject(1, OffsetDateTime.class).toInstant();
            }
        }
        Instant escalateAt = placedAt.plus(ESCALATE_AFTER);
        if (check.dueAt().isBefore(escalateAt)) {
            send(c, orderId, "email");
            return Answer.nextAt(escalateAt);
        }
        send(c, orderId, "escalation");
        return Answer.done();
    }

    private void send(Connection c, long orderId, String kind) throws SQLException {
        try (PreparedStatement st = c.prepareStatement(
                 "INSERT INTO order_notices (order_id, kind, sent_at) VALUES (?, ?, ?)")) {
            st.setLong(1, orderId);
            st.setString(2, kind);
            st.setObject(3, OffsetDateTime.ofInstant(clock.get(), ZoneOffset.UTC));
            st.executeUpdate();
        }
    }
}
