package dev.prescient;

import static dev.prescient.TestSupport.DB;
import static dev.prescient.TestSupport.java;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.LongPredicate;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** The kill test of issue 58: a worker killed mid-run, each effect exactly once. */
final class ExactlyOnceTest {
    /**
     * How long what a worker does may stand still before the test fails. A stall, not a speed: how long the run
     * takes depends on the machine and on what runs beside it (the suite runs the four languages' tests at once).
     */
    private static final Duration STALL = Duration.ofSeconds(15);

    @FunctionalInterface
    private interface Count {
        long now() throws Exception;
    }

    /**
     * Waits until {@code goal} holds of {@code count} while the worker makes progress: fails when it has ended
     * ({@code alive} false), or when the count stands still for {@link #STALL}, saying where it stood and what
     * {@code log} says of the worker.
     */
    private static void waitWhileMoving(Count count, LongPredicate goal, String what, BooleanSupplier alive,
                                        Supplier<String> log) throws Exception {
        long seen = count.now();
        long since = System.nanoTime();
        while (!goal.test(seen)) {
            Duration still = Duration.ofNanos(System.nanoTime() - since);
            if (!alive.getAsBoolean() || still.compareTo(STALL) > 0) {
                throw new AssertionError("waited for " + what + ": stood at " + seen + " for " + still.toSeconds()
                                         + " s; worker alive: " + alive.getAsBoolean() + "; " + log.get());
            }
            Thread.sleep(50);
            long now = count.now();
            if (now != seen) {
                seen = now;
                since = System.nanoTime();
            }
        }
    }

    private static String logOf(Path file) {
        try {
            return "its log:\n" + Files.readString(file);
        } catch (java.io.IOException e) {
            return "its log cannot be read: " + e.getMessage();
        }
    }
    /**
     * The kill test (issue 58, effects exactly once): a worker process whose handler writes a ledger row per
     * check and completes the check in the same transaction (LedgerWorker) is killed with SIGKILL mid-run; a
     * second worker finishes the rest. Every check has exactly one ledger row and one history row. With the
     * settlement apart from the writes (PRESCIENT_KILL_TEST_SETTLE=separate) the killed worker's unsettled runs
     * run again, and their rows are there twice: the test fails. 10 000 checks.
     */
    @Test
    void a_worker_killed_mid_run_has_each_effect_exactly_once() throws Exception {
        int checks = 10_000;
        String job = "kill_a";
        long began = System.nanoTime();
        DB.declareWorkerClasses(job);
        DB.execute("CREATE TABLE kill_ledger (check_id bigint NOT NULL, worker text NOT NULL)");
        DB.execute("SELECT prescient.schedule(?, 'thing', i::text, now()) FROM generate_series(1, ?) i", job, checks);
        Path log = File.createTempFile("prescient-java-killed", ".log").toPath();
        Process killed = java(LedgerWorker.class.getName(), job, "killed").redirectErrorStream(true)
                                                                          .redirectOutput(log.toFile()).start();
        long atKill;
        try {
            waitWhileMoving(() -> DB.count("SELECT count(*) FROM kill_ledger"), rows -> rows >= checks / 4,
                            "the first worker to run a quarter of the checks", killed::isAlive, () -> logOf(log));
            killed.destroyForcibly(); // SIGKILL
            assertTrue(killed.waitFor(10, TimeUnit.SECONDS), "the killed worker ended");
            atKill = DB.count("SELECT count(*) FROM kill_ledger");
        } finally {
            killed.destroyForcibly();
            Files.deleteIfExists(log);
        }
        List<Settlement> lost = new CopyOnWriteArrayList<>();
        Worker second = LedgerWorker.build(DB, job, "second", s -> {
            if (s.leaseLost()) {
                lost.add(s);
            }
        });
        second.start();
        try {
            waitWhileMoving(() -> DB.count("SELECT count(*) FROM prescient.job_history WHERE job = ?", job),
                            settled -> settled >= checks, "the second worker to settle the rest", () -> true,
                            () -> "it runs in the test's JVM: its log is the test's");
        } finally {
            second.stop(Duration.ofSeconds(5));
        }
        long rows = DB.count("SELECT count(*) FROM kill_ledger");
        long distinct = DB.count("SELECT count(DISTINCT check_id) FROM kill_ledger");
        long byKilled = DB.count("SELECT count(*) FROM prescient.job_history WHERE job = ? AND finished_by = 'killed'",
                                 job);
        long bySecond = DB.count("SELECT count(*) FROM prescient.job_history WHERE job = ? AND finished_by = 'second'",
                                 job);
        System.out.printf("      %d checks: killed after %d ledger rows; %d settled by the killed worker, %d by the "
                          + "second; ledger %d rows of %d checks; %d ms%n", checks, atKill, byKilled, bySecond, rows,
                          distinct, (System.nanoTime() - began) / 1_000_000);
        assertTrue(byKilled > 0 && bySecond > 0, "the kill was mid-run: " + byKilled + " settled by the killed worker, "
                                            + bySecond + " by the second");
        assertEquals(List.of((long) checks, (long) checks), List.of(rows, distinct),
                     "ledger rows and checks with a row (an effect twice, or not at all)");
        assertEquals(List.of((long) checks, (long) checks, (long) checks, 0L, 0L),
                     List.of(DB.count("SELECT count(*) FROM prescient.job_history WHERE job = ?", job),
                             DB.count("SELECT count(DISTINCT id) FROM prescient.job_history WHERE job = ?", job),
                             DB.count("SELECT count(*) FROM prescient.job_history WHERE job = ? AND outcome = 'done'",
                                      job),
                             DB.count("SELECT count(*) FROM prescient.future_job WHERE job = ?", job),
                             DB.count("""
                                 SELECT count(*) FROM kill_ledger l
                                   FULL JOIN (SELECT id FROM prescient.job_history WHERE job = ?) h ON h.id = l.check_id
                                  WHERE l.check_id IS NULL OR h.id IS NULL""", job)),
                     "history rows, checks, done, pending, ledger and history rows apart");
        assertEquals(List.of(), lost, "lost leases the second worker met");
    }
}
