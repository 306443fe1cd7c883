package dev.prescient;

import dev.prescient.testing.Database;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.function.Consumer;

/**
 * The worker of the kill test (ExactlyOnceTest): its handler writes a ledger row per check and completes the
 * check in the same transaction, on a connection of the handler thread's own. With {@code PRESCIENT_KILL_TEST_SETTLE=separate} it commits the row, then answers
 * done (the settlement apart from the handler's writes, at least once): the test then fails.
 * As a process ({@code main}: class, worker name) it runs until it is killed.
 */
public final class LedgerWorker {
    private LedgerWorker() {
    }

    public static void main(String[] args) throws Exception {
        build(Database.fromEnvironment(), args[0], args[1], null).start().awaitTermination();
    }

    static Worker build(Database db, String job, String name, Consumer<Settlement> onSettled) {
        boolean separate = "separate".equals(System.getenv("PRESCIENT_KILL_TEST_SETTLE"));
        ThreadLocal<Connection> connections = new ThreadLocal<>();
        return Worker.builder(db::connect).name(name).concurrency(8).lease(Duration.ofSeconds(2))
                     .clock(() -> Instant.now().plusSeconds(60)) // checks made at now() are due (the tests pin)
                     .handler(job, check -> {
                         Connection c = connections.get();
                         if (c == null) {
                             c = db.connect();
                             connections.set(c);
                         }
                         return separate ? writeThenAnswer(c, check, name) : writeAndComplete(c, check, name);
                     })
                     .onSettled(onSettled)
                     .build();
    }

    private static Answer writeAndComplete(Connection c, Check check, String worker) throws SQLException {
        c.setAutoCommit(false);
        try {
            insert(c, check, worker);
            check.completeIn(c, Answer.done());
            c.commit();
        } finally {
            if (!c.getAutoCommit()) {
                c.rollback(); // nothing after a commit; the row and the settlement after a failure
                c.setAutoCommit(true);
            }
        }
        return Answer.done(); // not read: the check was settled in the transaction
    }

    private static Answer writeThenAnswer(Connection c, Check check, String worker) throws SQLException {
        insert(c, check, worker);
        return Answer.done();
    }

    private static void insert(Connection c, Check check, String worker) throws SQLException {
        try (PreparedStatement st = c.prepareStatement("INSERT INTO kill_ledger (check_id, worker) VALUES (?, ?)")) {
            st.setLong(1, check.id());
            st.setString(2, worker);
            st.executeUpdate();
        }
    }
}
