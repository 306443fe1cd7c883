package dev.prescient;

import static dev.prescient.TestSupport.DB;
import static dev.prescient.TestSupport.at;
import static dev.prescient.TestSupport.waitFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The conformance driver (jobs/workers/conformance), through its script. */
final class ConformanceDriverTest {
    /** Every answer of the contract, the ledger, and SIGTERM exits 0. */
    @Test
    void conformance_driver() throws Exception {
        DB.declareWorkerClasses("conf_a", "conf_b");
        DB.execute("CREATE TABLE IF NOT EXISTS conformance_ledger (check_id bigint, worker text, language text, "
                   + "due_at timestamptz, check_count integer, recorded_at timestamptz DEFAULT clock_timestamp())");
        Map<String, Long> ids = new LinkedHashMap<>();
        Instant later = Instant.now().plus(Duration.ofHours(2)).truncatedTo(ChronoUnit.SECONDS);
        try (Connection c = DB.connect()) {
            PrescientClient client = new PrescientClient();
            ids.put("done", client.schedule(c, NewCheck.of("conf_a", "x", "done")).id());
            ids.put("next", client.schedule(c, NewCheck.of("conf_b", "x", "next")
                                                        .payload("{\"answer\": \"next\", \"next_seconds\": 120}")).id());
            ids.put("at", client.schedule(c, NewCheck.of("conf_a", "x", "at")
                                                      .payload("{\"answer\": \"at\", \"at\": \"" + later + "\"}")).id());
            ids.put("error", client.schedule(c, NewCheck.of("conf_a", "x", "error")
                                                         .payload("{\"answer\": \"error\", \"error\": \"boom\"}")).id());
            ids.put("result", client.schedule(c, NewCheck.of("conf_b", "x", "result")
                                                          .payload("{\"answer\": \"result\", \"result\": {\"n\": 3}, "
                                                                   + "\"sleep_ms\": 200}")).id());
        }
        withDriver(List.of("--name", "jd1", "--classes", "conf_a,conf_b", "--concurrency", "3", "--lease-seconds", "5"),
                   p -> {
            waitFor(() -> DB.count("SELECT count(*) FROM prescient.check_run r JOIN prescient.future_job f USING (id) "
                                   + "WHERE f.job IN ('conf_a', 'conf_b')") >= 3
                          && DB.count("SELECT count(*) FROM prescient.job_history WHERE job IN ('conf_a', 'conf_b')")
                             >= 2,
                    Duration.ofSeconds(10), "the driver's checks settled");
            stopsCleanly(p);
            // The error's retry (1 s later) may run again before the SIGTERM: checks are counted, not runs.
            assertEquals(5L, DB.count("SELECT count(DISTINCT check_id) FROM conformance_ledger WHERE worker = 'jd1' "
                                      + "AND language = 'java' AND check_count = 0"), "checks in the ledger");
            assertEquals(List.of("done"), DB.column("SELECT outcome FROM prescient.job_history WHERE id = ?",
                                                    ids.get("done")), "done");
            assertEquals(List.of("{\"n\": 3}"), DB.column("SELECT result::text FROM prescient.job_history WHERE id = ?",
                                                          ids.get("result")), "result");
            assertEquals(List.of(120.0), DB.column("SELECT extract(epoch FROM f.next_check_at - l.due_at)::float8 "
                                                   + "FROM prescient.future_job f JOIN conformance_ledger l ON "
                                                   + "l.check_id = f.id WHERE f.id = ?", ids.get("next")), "next");
            assertEquals(List.of(at(later)), DB.column("SELECT next_check_at FROM prescient.future_job WHERE id = ?",
                                                       ids.get("at")), "at");
            assertEquals(List.of("boom"), DB.column("SELECT last_error FROM prescient.future_job WHERE id = ? AND "
                                                    + "attempts = (SELECT count(*) FROM conformance_ledger "
                                                    + "WHERE check_id = ?)", ids.get("error"), ids.get("error")),
                         "error: its text, an attempt per run");
        });
    }

    /**
     * Its sessions cut by the server (as in a failover), the driver's worker and its ledger connect again: a
     * check scheduled after the cut is recorded and done. (The ledger once kept its broken session, and every
     * run after a failover failed.)
     */
    @Test
    void conformance_driver_survives_cut_sessions() throws Exception {
        DB.declareWorkerClasses("conf_cut");
        DB.execute("CREATE TABLE IF NOT EXISTS conformance_ledger (check_id bigint, worker text, language text, "
                   + "due_at timestamptz, check_count integer, recorded_at timestamptz DEFAULT clock_timestamp())");
        withDriver(List.of("--name", "jd-cut", "--classes", "conf_cut"), p -> {
            long before;
            try (Connection c = DB.connect()) {
                before = new PrescientClient().schedule(c, NewCheck.of("conf_cut", "x", "before")).id();
            }
            waitFor(() -> DB.count("SELECT count(*) FROM prescient.job_history WHERE id = ? AND outcome = 'done'",
                                   before) == 1, Duration.ofSeconds(20), "the check before the cut done");
            long cut = DB.count("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                + "WHERE datname = current_database() AND pid <> pg_backend_pid()");
            assertTrue(cut >= 3, "sessions cut (the worker's two and the ledger's): " + cut);
            long after;
            try (Connection c = DB.connect()) {
                after = new PrescientClient().schedule(c, NewCheck.of("conf_cut", "x", "after")).id();
            }
            waitFor(() -> DB.count("SELECT count(*) FROM prescient.job_history WHERE id = ? AND outcome = 'done'",
                                   after) == 1, Duration.ofSeconds(10), "the check after the cut done");
            assertEquals(1L, DB.count("SELECT count(*) FROM conformance_ledger WHERE check_id = ?", after),
                         "its run in the ledger");
            stopsCleanly(p);
        });
    }

    @FunctionalInterface
    private interface DriverTest {
        void run(Process driver) throws Exception;
    }

    /** Runs {@code test} with {@code conformance-driver work ARGS} of this build started; its log shown on a failure. */
    private static void withDriver(List<String> args, DriverTest test) throws Exception {
        List<String> command = new ArrayList<>(List.of(System.getProperty("prescient.java.dir") + "/conformance-driver",
                                                       "work"));
        command.addAll(args);
        Path log = File.createTempFile("prescient-java-driver", ".log").toPath();
        ProcessBuilder driver = new ProcessBuilder(command).redirectError(log.toFile()).redirectOutput(log.toFile());
        driver.environment().put("PRESCIENT_JAVA_BUILD", System.getProperty("prescient.build.directory")); // this build
        Process p = driver.start();
        try {
            test.run(p);
        } catch (Throwable t) {
            System.out.println("driver's log:\n" + Files.readString(log));
            throw t;
        } finally {
            p.destroyForcibly();
            Files.deleteIfExists(log);
        }
    }

    /** SIGTERM: the driver stops gracefully and exits 0. */
    private static void stopsCleanly(Process p) throws InterruptedException {
        p.destroy();
        assertTrue(p.waitFor(10, TimeUnit.SECONDS), "the driver ended");
        assertEquals(0, p.exitValue(), "the driver's exit status after SIGTERM");
    }
}
