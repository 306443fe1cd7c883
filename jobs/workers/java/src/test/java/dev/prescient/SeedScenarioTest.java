package dev.prescient;

import static dev.prescient.TestSupport.DB;
import static dev.prescient.TestSupport.T;
import static dev.prescient.TestSupport.at;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.prescient.examples.OrderUnshipped;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The seed scenario of README.md (examples/OrderUnshipped), on a pinned clock. */
final class SeedScenarioTest {
    /**
     * Orders placed at T: one left alone gets an email at T+3h and an escalation at T+6h, then its check is done;
     * one shipped at T+1h gets nothing, and its check ends at T+3h. Each notice commits with its check's
     * settlement.
     */
    @Test
    void seed_scenario() throws Exception {
        DB.declareWorkerClasses(OrderUnshipped.JOB);
        try (Connection c = DB.connect()) {
            OrderUnshipped.createTables(c);
        }
        AtomicReference<Instant> now = new AtomicReference<>(T);
        OrderUnshipped shop = new OrderUnshipped(now::get, DB::connect);
        long late;
        long shipped;
        try (Connection c = DB.connect()) {
            c.setAutoCommit(false);
            late = shop.placeOrder(c, "ada");
            shipped = shop.placeOrder(c, "bob");
            c.commit();
        }
        assertEquals(List.of(at(T.plus(Duration.ofHours(3)))),
                     DB.column("SELECT next_check_at FROM prescient.future_job WHERE job_key = ?",
                               "order_unshipped:" + late), "the check of order " + late);
        now.set(T.plus(Duration.ofHours(1)));
        try (Connection c = DB.connect()) {
            shop.ship(c, shipped);
        }
        List<String> settled = new CopyOnWriteArrayList<>();
        Worker worker = Worker.builder(DB::connect).name("shop").clock(now::get)
                              .onSettled(st -> settled.add(st.id() + " " + st.outcome()))
                              .handler(OrderUnshipped.JOB, shop::check).build();
        try (worker) {
            now.set(T.plus(Duration.ofHours(3)).minusSeconds(1));
            assertEquals(0, worker.runUntilIdle(), "checks run a second before T+3h (never early)");

            now.set(T.plus(Duration.ofHours(3)));
            assertEquals(2, worker.runUntilIdle(), "checks run at T+3h");
            assertEquals(List.of("email"), notices(late), "notices of the unshipped order at T+3h");
            assertEquals(List.of(), notices(shipped), "notices of the shipped order");
            assertEquals(List.of(at(T.plus(Duration.ofHours(6)))),
                         DB.column("SELECT next_check_at FROM prescient.future_job WHERE job = ? AND entity_key = ?",
                                   OrderUnshipped.JOB, Long.toString(late)), "the unshipped order's next check");
            assertEquals(List.of("done"), outcomes(shipped), "the shipped order's check");

            now.set(T.plus(Duration.ofHours(6)));
            assertEquals(1, worker.runUntilIdle(), "checks run at T+6h");
            assertEquals(List.of("email", "escalation"), notices(late), "notices of the unshipped order at T+6h");
            assertEquals(List.of("done"), outcomes(late), "the unshipped order's check");
            assertEquals(0L, DB.count("SELECT count(*) FROM prescient.future_job WHERE job = ?", OrderUnshipped.JOB),
                         "checks left pending");
        }
        // Each run settled once, in the handler's transaction with its notice (completeIn): the worker made
        // no settlement of its own after it.
        assertEquals(3, settled.size(), "settlements " + settled);
        assertTrue(settled.stream().allMatch(st -> st.endsWith(" rescheduled") || st.endsWith(" done")), "" + settled);
    }

    private static List<Object> notices(long order) throws SQLException {
        return DB.column("SELECT kind FROM order_notices WHERE order_id = ? ORDER BY sent_at", order);
    }

    private static List<Object> outcomes(long order) throws SQLException {
        return DB.column("SELECT outcome FROM prescient.job_history WHERE job = ? AND entity_key = ? "
                         + "ORDER BY finished_at", OrderUnshipped.JOB, Long.toString(order));
    }
}
