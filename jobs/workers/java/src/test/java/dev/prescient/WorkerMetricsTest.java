package dev.prescient;

import static dev.prescient.TestSupport.DB;
import static dev.prescient.TestSupport.T;
import static dev.prescient.TestSupport.waitFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** WorkerMetrics: what a worker reports for an application's metrics registry. */
final class WorkerMetricsTest {
    /** Records every event as a line, as a registry's counters and timers would count them. */
    private static final class Recorder implements WorkerMetrics {
        final List<String> events = new CopyOnWriteArrayList<>();
        volatile int asked;
        volatile int taken;

        @Override
        public void taken(int asked, int taken) {
            this.asked += asked;
            this.taken += taken;
        }

        /** A line per check handled: how a take's checks group into a batch handler's calls varies. */
        @Override
        public void handled(String job, int checks, Duration took, boolean failed) {
            for (int i = 0; i < checks; i++) {
                events.add("handled " + job + (failed ? " failed" : "") + (took.isNegative() ? " in negative time" : ""));
            }
        }

        @Override
        public void settled(String job, Settlement settlement) {
            events.add("settled " + job + " " + settlement.outcome());
        }

        @Override
        public void leaseLost(String job, long checkId) {
            events.add("lease lost " + job + " " + checkId);
        }
    }

    /** Takes, handler calls (a batch handler's too) and settlements, each counted; a throwing listener is survived. */
    @Test
    void a_worker_reports_takes_handler_calls_and_settlements() throws Exception {
        DB.declareWorkerClasses("met_a", "met_b");
        PrescientClient client = new PrescientClient(() -> T);
        try (Connection c = DB.connect()) {
            for (String kind : List.of("done", "next", "throw")) {
                client.schedule(c, NewCheck.of("met_a", "x", kind));
            }
            client.schedule(c, NewCheck.of("met_b", "x", "1"));
            client.schedule(c, NewCheck.of("met_b", "x", "2"));
        }
        Recorder recorder = new Recorder();
        Worker worker = Worker.builder(DB::connect).name("metrics").clock(() -> T.plusSeconds(1)).concurrency(1)
                              .metrics(recorder)
                              .handler("met_a", check -> switch (check.entityKey()) {
                                  case "next" -> Answer.nextAt(check.dueAt().plusSeconds(60));
                                  case "throw" -> throw new IllegalStateException("boom");
                                  default -> Answer.done();
                              })
                              .batchHandler("met_b", checks -> checks.stream().map(c -> Answer.done()).toList())
                              .build();
        try (worker) {
            assertEquals(5, worker.runUntilIdle(), "checks run");
        }
        assertEquals(5, recorder.taken, "checks taken");
        assertTrue(recorder.asked >= 5, "checks asked for: " + recorder.asked);
        Map<String, Integer> counts = new TreeMap<>();
        recorder.events.forEach(e -> counts.merge(e, 1, Integer::sum));
        assertEquals(Map.of("handled met_a", 2, "handled met_a failed", 1, "handled met_b", 2,
                            "settled met_a done", 1, "settled met_a rescheduled", 1, "settled met_a retried", 1,
                            "settled met_b done", 2), counts, "the events");

        try (Connection c = DB.connect()) {
            client.schedule(c, NewCheck.of("met_a", "x", "again"));
        }
        WorkerMetrics throwing = new WorkerMetrics() {
            @Override
            public void settled(String job, Settlement settlement) {
                throw new IllegalStateException("the registry is down");
            }
        };
        Worker survives = Worker.builder(DB::connect).name("metrics-2").clock(() -> T.plusSeconds(1)).metrics(throwing)
                                .handler("met_a", check -> Answer.done()).build();
        try (survives) {
            assertEquals(1, survives.runUntilIdle(), "checks run with a listener that throws");
        }
        assertEquals(1L, DB.count("SELECT count(*) FROM prescient.job_history WHERE job = 'met_a' "
                                  + "AND entity_key = 'again' AND outcome = 'done'"), "the check settled");
    }

    /** A check cancelled while its handler runs: the next heartbeat finds its lease lost, and says so. */
    @Test
    void a_lease_lost_at_a_heartbeat_is_reported() throws Exception {
        DB.declareWorkerClasses("met_lost");
        long id;
        try (Connection c = DB.connect()) {
            id = new PrescientClient().schedule(c, NewCheck.of("met_lost", "x", "1")).id();
        }
        Recorder recorder = new Recorder();
        List<Long> started = new CopyOnWriteArrayList<>();
        Worker worker = Worker.builder(DB::connect).name("metrics-lost").lease(Duration.ofMillis(600))
                              .metrics(recorder)
                              .handler("met_lost", check -> {
                                  started.add(check.id());
                                  Thread.sleep(1500);
                                  return Answer.done();
                              }).build().start();
        try (worker) {
            waitFor(() -> started.contains(id), Duration.ofSeconds(8), "the handler started");
            try (Connection c = DB.connect()) {
                new PrescientClient().cancel(c, id);
            }
            waitFor(() -> recorder.events.contains("lease lost met_lost " + id), Duration.ofSeconds(3),
                    "the lost lease reported: " + recorder.events);
        }
    }
}
