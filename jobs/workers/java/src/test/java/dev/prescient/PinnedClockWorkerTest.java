package dev.prescient;

import static dev.prescient.TestSupport.DB;
import static dev.prescient.TestSupport.T;
import static dev.prescient.TestSupport.TRACEPARENT;
import static dev.prescient.TestSupport.attemptsAndError;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The worker on a pinned clock (runUntilIdle), and the protocol's calls one by one. */
final class PinnedClockWorkerTest {
    /** A traced check failed once: each attempt's handler sees the caller's trace, under a span of its own. */
    @Test
    void each_attempt_is_a_span_of_the_callers_trace() throws Exception {
        DB.declareWorkerClasses("trace_w");
        PrescientClient client = new PrescientClient(() -> T);
        long traced;
        try (Connection c = DB.connect()) {
            traced = client.schedule(c, NewCheck.of("trace_w", "orders", "traced").traceparent(TRACEPARENT)
                                                .tracestate("vendor=abc")).id();
            client.schedule(c, NewCheck.of("trace_w", "orders", "plain"));
        }
        AtomicReference<Instant> now = new AtomicReference<>(T.plusSeconds(1));
        List<Check> seen = new CopyOnWriteArrayList<>();
        Worker worker = Worker.builder(DB::connect).name("traced").clock(now::get)
                              .handler("trace_w", check -> {
                                  seen.add(check);
                                  return check.id() == traced && check.attempts() == 0
                                         ? Answer.fail("first attempt") : Answer.done();
                              }).build();
        try (worker) {
            assertEquals(2, worker.runUntilIdle(), "first runs");
            now.set(T.plus(Duration.ofHours(1))); // past the retry's backoff
            assertEquals(1, worker.runUntilIdle(), "the retry");
        }
        String[] caller = TRACEPARENT.split("-");
        List<String> spans = new ArrayList<>();
        for (Check check : seen) {
            if (check.id() != traced) {
                assertEquals(null, check.traceparent(), "the untraced check's traceparent");
                continue;
            }
            String[] run = check.traceparent().split("-");
            assertEquals(List.of("00", caller[1], caller[3], "vendor=abc"),
                         List.of(run[0], run[1], run[3], check.tracestate()), "attempt " + check.attempts());
            spans.add(run[2]);
        }
        assertTrue(spans.size() == 2 && !spans.get(0).equals(spans.get(1)) && !spans.contains(caller[2]),
              "each attempt a span of its own, not the caller's: " + spans);
    }

    /** Every kind of answer, and a throwing handler, through runUntilIdle: what each became in the database. */
    @Test
    void handler_answers_become_outcomes() throws Exception {
        DB.declareWorkerClasses("ans_a");
        PrescientClient client = new PrescientClient(() -> T);
        Map<String, Long> ids = new LinkedHashMap<>();
        try (Connection c = DB.connect()) {
            for (String kind : List.of("next", "done", "null", "result", "fail", "throw")) {
                ids.put(kind, client.schedule(c, NewCheck.of("ans_a", "kinds", kind)
                                                        .payload(Map.of("kind", kind))).id());
            }
        }
        List<Settlement> settled = new CopyOnWriteArrayList<>();
        Worker worker = Worker.builder(DB::connect).name("answers").clock(() -> T.plusSeconds(1))
                              .onSettled(settled::add)
                              .handler("ans_a", check -> switch ((String) check.payloadMap().get("kind")) {
                                  case "next" -> Answer.nextAt(check.dueAt().plus(Duration.ofMinutes(10)));
                                  case "done" -> Answer.done();
                                  case "null" -> null;
                                  case "result" -> Answer.doneWithResult("{\"sent\": [1, 2]}");
                                  case "fail" -> Answer.fail("the CRM said 503");
                                  default -> throw new IllegalStateException("no such order");
                              }).build();
        try (worker) {
            assertEquals(6, worker.runUntilIdle(), "checks run");
        }
        Map<Long, String> outcome = new LinkedHashMap<>();
        settled.forEach(s -> outcome.put(s.id(), s.outcome()));
        assertEquals("rescheduled", outcome.get(ids.get("next")), "next");
        assertEquals(T.plusSeconds(1).plus(Duration.ofMinutes(10)),
                     ((OffsetDateTime) DB.value("SELECT next_check_at FROM prescient.future_job WHERE id = ?",
                                                ids.get("next"))).toInstant(), "next time");
        assertEquals("done", outcome.get(ids.get("done")), "done");
        assertEquals("done", outcome.get(ids.get("null")), "null is done");
        assertEquals("done", outcome.get(ids.get("result")), "done with a result");
        assertEquals(List.of("{\"sent\": [1, 2]}"),
                     DB.column("SELECT result::text FROM prescient.job_history WHERE id = ?", ids.get("result")),
                     "the result kept");
        assertEquals("retried", outcome.get(ids.get("fail")), "fail");
        assertEquals("retried", outcome.get(ids.get("throw")), "throw");
        assertEquals(List.of("1 the CRM said 503"),
                     attemptsAndError(ids.get("fail")), "a failure's attempt and error");
        assertEquals(List.of("1 java.lang.IllegalStateException: no such order"),
                     attemptsAndError(ids.get("throw")), "a throw's attempt and error");
    }

    /** A result over 64 KiB refuses a whole worker_complete call: that check fails, the others settle. */
    @Test
    void a_refused_answer_fails_its_check_alone() throws Exception {
        DB.declareWorkerClasses("big_a");
        PrescientClient client = new PrescientClient(() -> T);
        long big;
        try (Connection c = DB.connect()) {
            big = client.schedule(c, NewCheck.of("big_a", "x", "big")).id();
            for (int i = 0; i < 3; i++) {
                client.schedule(c, NewCheck.of("big_a", "x", "small" + i));
            }
        }
        String huge = "\"" + "x".repeat(70_000) + "\"";
        Worker worker = Worker.builder(DB::connect).name("big").clock(() -> T.plusSeconds(1)).concurrency(4)
                              .handler("big_a", check -> check.entityKey().equals("big")
                                                         ? Answer.doneWithResult(huge) : Answer.done()).build();
        try (worker) {
            assertEquals(4, worker.runUntilIdle(), "checks run");
        }
        assertEquals(3L, DB.count("SELECT count(*) FROM prescient.job_history WHERE job = 'big_a' AND outcome = 'done'"),
                     "small ones done");
        Object error = DB.value("SELECT last_error FROM prescient.future_job WHERE id = ?", big);
        assertTrue(String.valueOf(error).startsWith("answer refused: check " + big + ": its result is 70002 bytes"),
              "the big one's error: " + error);
    }

    /**
     * A batch handler gets many checks of its class in one call and answers each; an answer list of another
     * length fails every check of that call.
     */
    @Test
    void a_batch_handler_answers_each_check() throws Exception {
        DB.declareWorkerClasses("batch_a");
        PrescientClient client = new PrescientClient(() -> T);
        try (Connection c = DB.connect()) {
            for (int i = 0; i < 20; i++) {
                client.schedule(c, NewCheck.of("batch_a", "x", i == 7 ? "fails" : "k" + i));
            }
        }
        List<Integer> calls = new CopyOnWriteArrayList<>();
        List<Settlement> settled = new CopyOnWriteArrayList<>();
        Worker worker = Worker.builder(DB::connect).name("batch").clock(() -> T.plusSeconds(1)).concurrency(2)
                              .onSettled(settled::add)
                              .batchHandler("batch_a", checks -> {
                                  calls.add(checks.size());
                                  return checks.stream().map(ch -> ch.entityKey().equals("fails")
                                                                   ? Answer.fail("no such thing") : (Answer) null)
                                               .toList();
                              }).build();
        try (worker) {
            assertEquals(20, worker.runUntilIdle(), "checks run");
        }
        assertEquals(20, calls.stream().mapToInt(Integer::intValue).sum(), "checks given to the calls " + calls);
        assertTrue(calls.stream().anyMatch(n -> n > 1), "many checks in one call: " + calls);
        assertEquals(List.of(19L, 1L), List.of(settled.stream().filter(st -> st.outcome().equals("done")).count(),
                                               settled.stream().filter(st -> st.outcome().equals("retried")).count()),
                     "done and retried");
        assertEquals(List.of("no such thing"),
                     DB.column("SELECT last_error FROM prescient.future_job WHERE job = 'batch_a'"),
                     "the one pending again: the failed check's error");

        DB.declareWorkerClasses("batch_b");
        try (Connection c = DB.connect()) {
            for (int i = 0; i < 3; i++) {
                client.schedule(c, NewCheck.of("batch_b", "x", "k" + i));
            }
        }
        Worker wrong = Worker.builder(DB::connect).name("batch-wrong").clock(() -> T.plusSeconds(1))
                             .batchHandler("batch_b", checks -> List.of()).build();
        try (wrong) {
            assertEquals(3, wrong.runUntilIdle(), "checks run");
        }
        for (Object error : DB.column("SELECT last_error FROM prescient.future_job WHERE job = 'batch_b'")) {
            assertTrue(String.valueOf(error).matches("the batch handler answered 0 answers for [1-3] checks"),
                  "an answer list of another length fails the call's checks: " + error);
        }
        assertEquals(3L, DB.count("SELECT count(*) FROM prescient.future_job WHERE job = 'batch_b' AND attempts = 1"),
                     "each failed once");
    }

    /** Four free places, one group of three checks: they run one after another, oldest first, never two at once. */
    @Test
    void a_group_runs_one_at_a_time_in_order() throws Exception {
        DB.declareWorkerClasses("grp_a");
        PrescientClient client = new PrescientClient(() -> T);
        try (Connection c = DB.connect()) {
            for (int i = 1; i <= 3; i++) {
                client.schedule(c, NewCheck.of("grp_a", "x", Integer.toString(i)).groupKey("g")
                                           .at(T.plusSeconds(i)));
            }
        }
        List<String> runs = new CopyOnWriteArrayList<>();
        java.util.concurrent.atomic.AtomicInteger running = new java.util.concurrent.atomic.AtomicInteger();
        Worker worker = Worker.builder(DB::connect).name("group").clock(() -> T.plusSeconds(5)).concurrency(4)
                              .handler("grp_a", check -> {
                                  runs.add(check.entityKey() + (running.incrementAndGet() > 1 ? " overlapped" : ""));
                                  Thread.sleep(100);
                                  running.decrementAndGet();
                                  return Answer.done();
                              }).build();
        try (worker) {
            assertEquals(3, worker.runUntilIdle(), "checks run");
        }
        assertEquals(List.of("1", "2", "3"), runs, "the runs");
    }

    /** The protocol on its own: a settlement after the lease expired and another worker took the check. */
    @Test
    void protocol_lease_lost_is_typed() throws Exception {
        DB.declareWorkerClasses("lost_a");
        try (Connection c = DB.connect()) {
            long id = new PrescientClient(() -> T).schedule(c, NewCheck.of("lost_a", "x", "1")).id();
            Check a = WorkerProtocol.take(c, "a", List.of("lost_a"), 10, Duration.ofSeconds(1), T.plusSeconds(1))
                                    .get(0);
            assertEquals(id, a.id(), "taken by a");
            assertEquals(List.of(), WorkerProtocol.take(c, "b", List.of("lost_a"), 10, Duration.ofSeconds(1),
                                                        T.plusMillis(1500)), "taken by b under a's lease");
            Check b = WorkerProtocol.take(c, "b", List.of("lost_a"), 10, Duration.ofSeconds(5), T.plusSeconds(3))
                                    .get(0);
            assertTrue(b.leaseToken() != a.leaseToken(), "a new token");
            List<WorkerProtocol.Refusal> refusals = WorkerProtocol.extend(c, "a", Map.of(id, a.leaseToken()),
                                                                          Duration.ofSeconds(1), T.plusSeconds(3));
            assertTrue(refusals.size() == 1 && refusals.get(0).reason().contains("held under another lease"),
                  "a's heartbeat refused: " + refusals);
            Settlement s = WorkerProtocol.settle(c, "a", List.of(new WorkerProtocol.Outcome(a, Answer.done())),
                                                 T.plusSeconds(3)).get(0);
            LeaseLostException lost = assertThrows(LeaseLostException.class, s::requireSettled);
            assertEquals(id, lost.checkId(), "the lost check's id");
            assertTrue(lost.getMessage().startsWith("check " + id + ": lease lost: check " + id + " is held under another"
                                               + " lease (by b until"), lost.getMessage());
            assertEquals("done", WorkerProtocol.settle(c, "b", List.of(new WorkerProtocol.Outcome(b, Answer.done())),
                                                       T.plusSeconds(4)).get(0).requireSettled().outcome(), "b's");
            PrescientException.Refused refused = assertThrows(PrescientException.Refused.class,
                () -> WorkerProtocol.take(c, "a", List.of("noop"), 10, Duration.ofSeconds(1), null));
            assertTrue(refused.getMessage().contains("'noop' is run by the runner"), refused.getMessage());
        }
    }
}
