package dev.prescient;

import static dev.prescient.TestSupport.DB;
import static dev.prescient.TestSupport.java;
import static dev.prescient.TestSupport.waitFor;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The worker live: the real clock, LISTEN, heartbeats, stopping, SIGTERM. */
final class LiveWorkerTest {
    /**
     * The loop's wait after a take that left places free: a check due in 3 ms (a rate limit's next start) is
     * waited for exactly, the backoff starting over; only one due now yet not taken backs off, 50 ms doubling
     * to 1 s. It once backed off for any wait under 10 ms, and under a rate limit shared with other workers a
     * Java worker looked once a second and took no check in 13 s (the conformance suite's mixed rate_limit).
     */
    @Test
    void idle_waits_for_a_start_however_soon() {
        Duration soon = Duration.ofMillis(3);
        assertEquals(new Worker.IdleWait(soon, Duration.ofMillis(50)), Worker.IdleWait.after(soon, Duration.ofSeconds(1)),
                     "a start 3 ms away, after backing off to 1 s");
        assertEquals(new Worker.IdleWait(Duration.ofMillis(200), Duration.ofMillis(400)),
                     Worker.IdleWait.after(Duration.ZERO, Duration.ofMillis(200)), "due now, not taken");
        assertEquals(new Worker.IdleWait(Duration.ofMillis(800), Duration.ofSeconds(1)),
                     Worker.IdleWait.after(Duration.ofMillis(-5), Duration.ofMillis(800)), "due 5 ms ago, not taken");
        assertEquals(new Worker.IdleWait(Duration.ofSeconds(60), Duration.ofMillis(50)),
                     Worker.IdleWait.after(null, Duration.ofSeconds(1)), "none pending: the longest sleep");
        assertEquals(new Worker.IdleWait(Duration.ofSeconds(60), Duration.ofMillis(50)),
                     Worker.IdleWait.after(Duration.ofHours(2), Duration.ofMillis(50)), "due in 2 h: the longest sleep");
    }

    /**
     * After a failed call the worker tries again at once, then after 250 ms doubling to 1 s: its first try after a
     * failover's election comes within 1 s of it. It once waited 1 s doubling to 30 s, and came back about 15 s
     * after a 10 s election.
     */
    @Test
    void retries_at_once_then_within_a_second() {
        List<Duration> waits = new ArrayList<>();
        Duration wait = Duration.ZERO;
        for (int i = 0; i < 7; i++) {
            waits.add(wait);
            wait = Worker.nextRetryWait(wait);
        }
        assertEquals(List.of(Duration.ZERO, Duration.ofMillis(250), Duration.ofMillis(500), Duration.ofSeconds(1),
                             Duration.ofSeconds(1), Duration.ofSeconds(1), Duration.ofSeconds(1)), waits);
    }

    /** Asleep with nothing due (a 60 s sleep), the worker wakes on the NOTIFY of a new check and runs it. */
    @Test
    void live_loop_wakes_on_notify() throws Exception {
        DB.declareWorkerClasses("live_a");
        List<Settlement> settled = new CopyOnWriteArrayList<>();
        Worker worker = Worker.builder(DB::connect).name("live").concurrency(2).onSettled(settled::add)
                              .handler("live_a", check -> Answer.done()).build().start();
        try (worker) {
            Thread.sleep(300); // the loop found nothing and sleeps its longest
            try (Connection c = DB.connect()) {
                for (int i = 0; i < 3; i++) {
                    new PrescientClient().schedule(c, NewCheck.of("live_a", "x", Integer.toString(i)));
                }
            }
            // Asleep for 60 s unless woken: done within a few seconds (a slot is 1 s) means the NOTIFY woke it.
            waitFor(() -> settled.size() == 3, Duration.ofSeconds(8), "3 checks settled: " + settled);
        }
        assertEquals(List.of("done", "done", "done"), settled.stream().map(Settlement::outcome).toList(), "outcomes");
    }

    /**
     * A stop ends the listener's wait for a notification at once, though it waits 10 s at a time (an idle
     * worker's wake-ups were most of its CPU at 250 ms): its LISTEN session is gone well within that.
     */
    @Test
    void a_stop_ends_the_listeners_wait_at_once() throws Exception {
        DB.declareWorkerClasses("listen_a");
        Worker worker = Worker.builder(DB::connect).name("listener").handler("listen_a", check -> Answer.done())
                              .build().start();
        String listening = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                           + " AND query = 'LISTEN prescient_worker' AND state = 'idle'";
        waitFor(() -> DB.count(listening) == 1, Duration.ofSeconds(8), "the worker listening");
        Thread.sleep(300); // into its wait
        worker.stop(Duration.ofSeconds(1));
        waitFor(() -> DB.count(listening) == 0, Duration.ofSeconds(3), "the LISTEN session closed after the stop");
    }

    /**
     * A worker on the server's clock runs where workers may not pin it (a production database): its wait for the
     * next due check once passed the server's clock_timestamp() as p_now, refused there, so start() failed.
     */
    @Test
    void runs_on_the_servers_clock_where_workers_may_not_pin_it() throws Exception {
        DB.declareWorkerClasses("unpinned_a");
        setWorkersMayPinClock(false);
        try {
            List<Settlement> settled = new CopyOnWriteArrayList<>();
            Worker worker = Worker.builder(DB::connect).name("unpinned").onSettled(settled::add)
                                  .handler("unpinned_a", check -> Answer.done()).build().start();
            try (worker) {
                try (Connection c = DB.connect()) {
                    new PrescientClient().schedule(c, NewCheck.of("unpinned_a", "x", "1"));
                }
                waitFor(() -> settled.size() == 1, Duration.ofSeconds(8), "the check settled");
            }
            assertEquals("done", settled.get(0).outcome());
        } finally {
            setWorkersMayPinClock(true);
        }
    }

    private static void setWorkersMayPinClock(boolean may) throws SQLException {
        try (Connection c = DB.connect();
             PreparedStatement st = c.prepareStatement("UPDATE prescient.settings SET workers_may_pin_clock = ?")) {
            st.setBoolean(1, may);
            st.executeUpdate();
        }
    }

    /**
     * start() refuses a class that is not a worker class, as the database words it, and the worker does not run:
     * a typo once started a loop that logged the refusal and tried again forever.
     */
    @Test
    void a_class_that_is_not_a_worker_class_is_refused_at_start() throws Exception {
        DB.declareWorkerClasses("known_a");
        for (String job : List.of("no_such_class", "noop")) {
            Worker worker = Worker.builder(DB::connect).name("refused")
                                  .handler("known_a", check -> Answer.done())
                                  .handler(job, check -> Answer.done()).build();
            try (worker) {
                PrescientException.Refused refused = assertThrows(PrescientException.Refused.class, worker::start);
                assertTrue(refused.getMessage().contains("'" + job + "'"), refused.getMessage());
                assertThrows(PrescientException.Refused.class, worker::runUntilIdle);
            }
        }
    }

    /** Its sessions cut by the server (as in a failover), the worker opens new ones and LISTENs again. */
    @Test
    void survives_cut_sessions() throws Exception {
        DB.declareWorkerClasses("cut_a");
        List<Settlement> settled = new CopyOnWriteArrayList<>();
        Worker worker = Worker.builder(DB::connect).name("cut").onSettled(settled::add)
                              .handler("cut_a", check -> Answer.done()).build().start();
        try (worker) {
            try (Connection c = DB.connect()) { // a settlement first: the settlements' connection is open too
                new PrescientClient().schedule(c, NewCheck.of("cut_a", "x", "1"));
            }
            waitFor(() -> settled.size() == 1, Duration.ofSeconds(8), "the check settled before the cut");
            Thread.sleep(300); // the loop asleep
            long cut = DB.count("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                + "WHERE datname = current_database() AND pid <> pg_backend_pid()");
            assertTrue(cut >= 3, "sessions cut: " + cut);
            try (Connection c = DB.connect()) {
                new PrescientClient().schedule(c, NewCheck.of("cut_a", "x", "2"));
            }
            waitFor(() -> settled.size() == 2, Duration.ofSeconds(8), "the check settled after the cut");
        }
    }

    /** Leases of 0.6 s, handlers of 1.5 s: heartbeats keep the check; without them the answer is refused. */
    @Test
    void heartbeats_keep_a_long_run() throws Exception {
        DB.declareWorkerClasses("hb_on", "hb_off");
        for (String job : List.of("hb_on", "hb_off")) {
            try (Connection c = DB.connect()) {
                new PrescientClient().schedule(c, NewCheck.of(job, "x", "1"));
            }
        }
        List<Settlement> settled = new CopyOnWriteArrayList<>();
        Worker on = Worker.builder(DB::connect).name("hb-on").lease(Duration.ofMillis(600)).onSettled(settled::add)
                          .handler("hb_on", check -> {
                              Thread.sleep(1500);
                              return Answer.done();
                          }).build().start();
        Worker off = Worker.builder(DB::connect).name("hb-off").lease(Duration.ofMillis(600)).heartbeat(false)
                           .onSettled(settled::add).handler("hb_off", check -> {
                               Thread.sleep(1500);
                               return Answer.done();
                           }).build().start();
        try (on; off) {
            waitFor(() -> settled.size() >= 2, Duration.ofSeconds(6), "two settlements: " + settled);
        }
        Map<String, String> byJob = new LinkedHashMap<>();
        for (Settlement s : settled.subList(0, 2)) {
            byJob.put((String) DB.value("SELECT job FROM prescient.future_job WHERE id = ? UNION ALL "
                                        + "SELECT job FROM prescient.job_history WHERE id = ?", s.id(), s.id()),
                      s.outcome());
        }
        assertEquals("done", byJob.get("hb_on"), "with heartbeats");
        assertEquals("lease_lost", byJob.get("hb_off"), "without heartbeats");
    }

    /** stop(grace): a handler that ends within it is settled; one that outlives it is released untouched. */
    @Test
    void stop_releases_what_outlives_the_grace() throws Exception {
        DB.declareWorkerClasses("stop_a");
        try (Connection c = DB.connect()) {
            new PrescientClient().schedule(c, NewCheck.of("stop_a", "x", "quick").payload(Map.of("ms", 600)));
            new PrescientClient().schedule(c, NewCheck.of("stop_a", "x", "slow").payload(Map.of("ms", 20_000)));
        }
        List<Long> started = new CopyOnWriteArrayList<>();
        Worker worker = Worker.builder(DB::connect).name("stopper").concurrency(2)
                              .handler("stop_a", check -> {
                                  started.add(check.id());
                                  Thread.sleep(((Number) check.payloadMap().get("ms")).longValue());
                                  return Answer.done();
                              }).build().start();
        waitFor(() -> started.size() == 2, Duration.ofSeconds(4), "both handlers started");
        long start = System.nanoTime();
        worker.stop(Duration.ofMillis(1500));
        long ms = (System.nanoTime() - start) / 1_000_000;
        assertTrue(ms >= 1400 && ms < 8000, "stopped after the grace: " + ms + " ms");
        assertEquals(List.of("done"), DB.column("SELECT outcome FROM prescient.job_history WHERE entity_key = 'quick'"),
                     "the quick one, settled within the grace");
        assertEquals(List.of("0 0 true"),
                     DB.column("SELECT attempts || ' ' || check_count || ' ' || (claimed_by IS NULL) "
                               + "FROM prescient.future_job WHERE entity_key = 'slow'"),
                     "the slow one: pending, untouched, not leased");
    }

    /**
     * A take asks for what the worker can start soon: after a 10 ms run, one place takes the five other checks
     * at once (they wait in order). A stop gives the ones not started back at once, while the running one
     * finishes within the grace.
     */
    @Test
    void a_take_holds_ahead_and_a_stop_gives_it_back_at_once() throws Exception {
        DB.declareWorkerClasses("ahead_a");
        try (Connection c = DB.connect()) {
            for (int i = 0; i < 6; i++) {
                new PrescientClient().schedule(c, NewCheck.of("ahead_a", "x", "k" + i).priority(i == 0 ? 0 : 1));
            }
        }
        List<Long> started = new CopyOnWriteArrayList<>();
        // A prefetch window of 10 s: the five fit it whatever the first run's measured time (with the default
        // 0.1 s, a first run slowed by a loaded machine makes the take ask for fewer than five).
        Worker worker = Worker.builder(DB::connect).name("ahead").concurrency(1).prefetch(Duration.ofSeconds(10))
                              .handler("ahead_a", check -> {
                                  started.add(check.id());
                                  Thread.sleep(started.size() == 1 ? 10 : 5000);
                                  return Answer.done();
                              }).build().start();
        Thread stopper = new Thread(() -> worker.stop(Duration.ofSeconds(10)));
        try {
            waitFor(() -> DB.count("SELECT count(*) FROM prescient.future_job WHERE job = 'ahead_a' "
                                   + "AND claimed_by = 'ahead'") == 5, Duration.ofSeconds(5),
                    "the five left taken by one take, one place for them");
            waitFor(() -> started.size() == 2, Duration.ofSeconds(2), "the second started: one runs, four wait");
            assertEquals(2, started.size(), "one runs, four wait: " + started);
            stopper.start();
            waitFor(() -> DB.count("SELECT count(*) FROM prescient.future_job WHERE job = 'ahead_a' "
                                   + "AND claimed_by IS NULL AND attempts = 0") == 4, Duration.ofMillis(3500),
                    "the four not started given back, untouched, while the fifth runs");
            assertTrue(stopper.isAlive(), "the stop waits for the running handler");
        } finally {
            if (stopper.getState() == Thread.State.NEW) {
                worker.stop(Duration.ZERO); // failed before the stop: the worker must not outlive the test
            } else {
                stopper.join();
            }
        }
        assertEquals(2L, DB.count("SELECT count(*) FROM prescient.job_history WHERE job = 'ahead_a'"), "checks run");
    }

    /** SIGTERM to a JVM running a worker with stopOnShutdown: the running check finishes and is settled. */
    @Test
    void sigterm_stops_gracefully() throws Exception {
        DB.declareWorkerClasses("term_a");
        long id;
        try (Connection c = DB.connect()) {
            id = new PrescientClient().schedule(c, NewCheck.of("term_a", "x", "1")).id();
        }
        Path log = File.createTempFile("prescient-java-term", ".log").toPath();
        Process p = java(ShutdownHookProbe.class.getName(), "term_a", "1500").redirectError(log.toFile()).start();
        try {
            // Started, not only taken: a check taken and not started yet is given back at a stop.
            waitFor(() -> java.nio.file.Files.readString(log).contains("probe: check " + id + " started"),
                    Duration.ofSeconds(8), "the probe started check " + id);
            p.destroy(); // SIGTERM
            assertTrue(p.waitFor(10, TimeUnit.SECONDS), "the probe ended");
            assertEquals(143, p.exitValue(), "a JVM ended by SIGTERM");
            assertEquals(List.of("done"), DB.column("SELECT outcome FROM prescient.job_history WHERE id = ?", id),
                         "the check that ran at the SIGTERM");
            // Through SLF4J (its simple binding here), one line per event, in the JVM's shutdown too.
            String err = java.nio.file.Files.readString(log);
            List<String> lines = err.lines().toList();
            assertTrue(lines.contains("INFO dev.prescient.Worker - worker probe: check " + id + " (term_a): done")
                       && lines.contains("INFO dev.prescient.Worker - worker probe: stopped"),
                       "the stop's lines logged:\n" + err);
        } finally {
            p.destroyForcibly();
            java.nio.file.Files.deleteIfExists(log);
        }
    }
}
