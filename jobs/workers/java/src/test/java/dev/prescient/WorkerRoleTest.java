package dev.prescient;

import static dev.prescient.TestSupport.DB;
import static dev.prescient.TestSupport.T;
import static dev.prescient.TestSupport.attemptsAndError;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.prescient.testing.Database;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** What a login role with prescient_worker alone may do: enqueue, run, declare classes, retry. */
final class WorkerRoleTest {
    /** A login role with prescient_worker alone can enqueue, add a schedule and run the whole worker loop. */
    @Test
    void worker_role_is_enough() throws Exception {
        DB.declareWorkerClasses("role_a");
        asWorkerRole((asWorker, role) -> {
            try (Connection c = asWorker.connect()) {
                new PrescientClient(() -> T).schedule(c, NewCheck.of("role_a", "x", "1"));
            }
            Worker worker = Worker.builder(asWorker::connect).name("role").clock(() -> T.plusSeconds(1))
                                  .handler("role_a", check -> Answer.nextAt(check.dueAt().plusSeconds(60))).build();
            try (worker) {
                assertEquals(1, worker.runUntilIdle(), "checks run as " + role);
            }
            try (Connection c = asWorker.connect()) {
                assertThrows(SQLException.class, () -> c.createStatement().execute(
                    "UPDATE prescient.future_job SET attempts = 0"));
                assertEquals(1, new PrescientClient().cronAdd(c, CronSchedule.of("role-hourly", "@hourly", "role_a")),
                             "cron_add as " + role);
            }
        });
    }

    /**
     * With prescient_worker's rights alone: WorkerClasses.declare adds a class with its policy, then changes only
     * the fields given; a runner's class and a bad policy are refused with nothing written. A handler declared
     * with a policy declares its class when the worker runs, and the policy applies (max_checks 2: the second
     * "look again" ends the check); a handler's policy for a runner's class stops the worker from running.
     */
    @Test
    void a_worker_declares_its_classes_with_their_policy() throws Exception {
        String policyOf = "SELECT concat_ws(' ', runs_in, max_checks, max_attempts, backoff_seconds, "
                          + "backoff_max_seconds, timeout_seconds) FROM prescient.job_class WHERE job = ?";
        asWorkerRole((asWorker, role) -> {
            try (Connection c = asWorker.connect()) {
                Policy policy = Policy.unchanged().maxChecks(60).maxAttempts(3).backoff(Duration.ofMinutes(1))
                                      .backoffMax(Duration.ofMinutes(10)).timeout(Duration.ofMinutes(5));
                assertEquals("added", WorkerClasses.declare(c, "pol_a", policy), "the first declaration");
                assertEquals("worker 60 3 60 600 300", DB.value(policyOf, "pol_a"), "the policy declared");
                assertEquals("known", WorkerClasses.declare(c, "pol_a", Policy.unchanged().timeout(Duration.ofMinutes(2))),
                             "the second declaration");
                assertEquals("worker 60 3 60 600 120", DB.value(policyOf, "pol_a"), "only the timeout changed");

                Object noop = DB.value(policyOf, "noop");
                assertThrows(PrescientException.Refused.class,
                       () -> WorkerClasses.declare(c, "noop", Policy.unchanged().maxChecks(1)));
                assertEquals(noop, DB.value(policyOf, "noop"), "the runner's class after the refusal");
                assertThrows(PrescientException.Refused.class,
                       () -> WorkerClasses.declare(c, "pol_bad", Policy.unchanged().maxChecks(-1)));
                assertEquals(null, DB.value(policyOf, "pol_bad"), "a class refused for its policy");
            }

            List<Settlement> settled = new CopyOnWriteArrayList<>();
            AtomicReference<Instant> now = new AtomicReference<>(T.plusSeconds(1));
            Worker worker = Worker.builder(asWorker::connect).name("policy").clock(now::get).onSettled(settled::add)
                                  .handler("pol_w", Policy.unchanged().maxChecks(2),
                                           check -> Answer.nextAt(check.dueAt().plusSeconds(60)))
                                  .batchHandler("pol_wb", Policy.unchanged().maxAttempts(1), checks -> List.of())
                                  .build();
            try (worker) {
                assertEquals(0, worker.runUntilIdle(), "checks run before any was scheduled");
                assertEquals("worker 2", DB.value(policyOf, "pol_w"), "the handler's class, declared");
                assertEquals("worker 1", DB.value(policyOf, "pol_wb"), "the batch handler's class, declared");
                try (Connection c = asWorker.connect()) {
                    new PrescientClient(() -> T).schedule(c, NewCheck.of("pol_w", "x", "1"));
                }
                for (int run = 0; run < 3; run++, now.set(now.get().plusSeconds(60))) {
                    worker.runUntilIdle();
                }
            }
            assertEquals(List.of("rescheduled", "guard_max_checks"),
                         settled.stream().map(Settlement::outcome).toList(), "the runs under max_checks 2");

            Worker runners = Worker.builder(asWorker::connect).name("runners")
                                   .handler("noop", Policy.unchanged(), check -> Answer.done()).build();
            try (runners) {
                assertThrows(PrescientException.Refused.class, runners::runUntilIdle);
                assertThrows(PrescientException.Refused.class, runners::start);
            }
        });
    }

    /**
     * PrescientClient.retry, with prescient_worker's rights: a dead letter (max_attempts 1) back as pending, due
     * by the server's clock, attempts afresh, and run again; refused while pending (PR409), for an id with no
     * failure (PR404), and for a runner's class (PR400), with nothing written.
     */
    @Test
    void a_dead_letter_is_retried() throws Exception {
        asWorkerRole((asWorker, role) -> {
            PrescientClient client = new PrescientClient(() -> T);
            List<Settlement> settled = new CopyOnWriteArrayList<>();
            Worker failing = Worker.builder(asWorker::connect).name("dead").clock(() -> T.plusSeconds(1))
                                   .onSettled(settled::add)
                                   .handler("dead_a", Policy.unchanged().maxAttempts(1), check -> Answer.fail("503"))
                                   .handler("dead_r", Policy.unchanged().maxAttempts(1), check -> Answer.fail("no"))
                                   .build();
            long dead;
            long runners;
            try (failing) {
                assertEquals(0, failing.runUntilIdle(), "checks run before any was scheduled");
                try (Connection c = asWorker.connect()) {
                    dead = client.schedule(c, NewCheck.of("dead_a", "x", "1")).id();
                    runners = client.schedule(c, NewCheck.of("dead_r", "x", "1")).id();
                }
                assertEquals(2, failing.runUntilIdle(), "checks run");
            }
            assertEquals(List.of("failed", "failed"), settled.stream().map(Settlement::outcome).toList(),
                         "dead letters after one attempt");
            try (Connection c = asWorker.connect()) {
                Instant before = ((OffsetDateTime) DB.value("SELECT now()")).toInstant();
                Instant due = client.retry(c, dead);
                assertTrue(!due.isBefore(before) && due.isBefore(before.plusSeconds(60)),
                      "due by the server's clock: " + due + " after " + before);
                assertEquals(List.of("0 503"), attemptsAndError(dead), "the retried check's attempts and error");
                assertThrows(PrescientException.Conflict.class, () -> client.retry(c, dead));
                assertThrows(PrescientException.NotFound.class, () -> client.retry(c, Long.MAX_VALUE));
            }
            DB.execute("UPDATE prescient.job_class SET runs_in = 'runner' WHERE job = 'dead_r'");
            try (Connection c = asWorker.connect()) {
                assertThrows(PrescientException.Refused.class, () -> client.retry(c, runners));
            }
            assertEquals(0L, DB.count("SELECT count(*) FROM prescient.future_job WHERE id = ?", runners),
                         "the runner's check pending after the refusal");
            settled.clear();
            Worker succeeding = Worker.builder(asWorker::connect).name("dead-again").onSettled(settled::add)
                                      .handler("dead_a", check -> Answer.done()).build();
            try (succeeding) {
                assertEquals(1, succeeding.runUntilIdle(), "the retried check run");
            }
            assertEquals(List.of("done"), settled.stream().map(Settlement::outcome).toList(), "its outcome");
        });
    }

    /** Runs {@code action} as a login role of its own that has prescient_worker's rights alone. */
    @FunctionalInterface
    interface RoleAction {
        void run(Database asRole, String role) throws Exception;
    }

    private static void asWorkerRole(RoleAction action) throws Exception {
        String role = "prescient_java_test_" + ProcessHandle.current().pid();
        DB.execute("CREATE ROLE " + role + " LOGIN IN ROLE prescient_worker");
        try {
            action.run(DB.as(role), role);
        } finally {
            DB.execute("DROP ROLE " + role);
        }
    }
}
