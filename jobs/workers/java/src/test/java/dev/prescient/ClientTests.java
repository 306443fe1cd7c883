package dev.prescient;

import dev.prescient.examples.OrderUnshipped;
import dev.prescient.testing.Database;
import java.io.File;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The Java client's tests, against the real database with-database.sh made (PRESCIENT_DATABASE_URL). JUnit is
 * not packaged in Debian, so this is a plain main: each test is a method, a failure is an exception, and the
 * exit status is 1 when any test failed. Arguments: names of tests to run (default: all). Each test uses
 * worker classes of its own, so the tests share one database without seeing each other's checks.
 */
public final class ClientTests {
    private static final Database DB = Database.fromEnvironment();
    /** A pinned "now" on the slot grid: the hour that began, so T + 3 h is a slot boundary too. */
    private static final Instant T = Instant.now().truncatedTo(ChronoUnit.HOURS);
    /** The W3C Trace Context example: a caller's trace, its span as the parent id. */
    private static final String TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    @FunctionalInterface
    interface Test {
        void run() throws Exception;
    }

    public static void main(String[] args) throws Exception {
        Map<String, Test> tests = new LinkedHashMap<>();
        tests.put("seed_scenario", ClientTests::seedScenario);
        tests.put("enqueue_joins_the_callers_transaction", ClientTests::enqueueJoinsTransaction);
        tests.put("enqueue_refusals_are_typed", ClientTests::enqueueRefusals);
        tests.put("enqueue_priority", ClientTests::enqueuePriority);
        tests.put("enqueue_collect", ClientTests::enqueueCollect);
        tests.put("enqueue_trace_context", ClientTests::enqueueTraceContext);
        tests.put("each_attempt_is_a_span_of_the_callers_trace", ClientTests::eachAttemptIsASpan);
        tests.put("cancel_reschedule_and_cron", ClientTests::cancelRescheduleCron);
        tests.put("every_enqueue_option_is_reachable", ClientTests::everyEnqueueOption);
        tests.put("handler_answers_become_outcomes", ClientTests::handlerAnswers);
        tests.put("a_refused_answer_fails_its_check_alone", ClientTests::refusedAnswer);
        tests.put("settled_in_the_handlers_transaction", ClientTests::settledInTransaction);
        tests.put("a_lease_lost_rolls_the_handlers_transaction_back", ClientTests::leaseLostInTransaction);
        tests.put("a_batch_handler_answers_each_check", ClientTests::batchHandler);
        tests.put("a_group_runs_one_at_a_time_in_order", ClientTests::groupInOrder);
        tests.put("protocol_lease_lost_is_typed", ClientTests::protocolLeaseLost);
        tests.put("worker_role_is_enough", ClientTests::workerRoleIsEnough);
        tests.put("a_worker_declares_its_classes_with_their_policy", ClientTests::declaresClassesWithPolicy);
        tests.put("a_dead_letter_is_retried", ClientTests::deadLetterRetried);
        tests.put("live_loop_wakes_on_notify", ClientTests::liveLoopWakesOnNotify);
        tests.put("idle_waits_for_a_start_however_soon", ClientTests::idleWaitsForAStart);
        tests.put("survives_cut_sessions", ClientTests::survivesCutSessions);
        tests.put("heartbeats_keep_a_long_run", ClientTests::heartbeatsKeepLongRun);
        tests.put("stop_releases_what_outlives_the_grace", ClientTests::stopReleases);
        tests.put("a_take_holds_ahead_and_a_stop_gives_it_back_at_once", ClientTests::takeAheadGivenBack);
        tests.put("sigterm_stops_gracefully", ClientTests::sigtermStopsGracefully);
        tests.put("conformance_driver", ClientTests::conformanceDriver);
        tests.put("schema_from_the_bundle", ClientTests::schemaFromTheBundle);
        tests.put("a_worker_killed_mid_run_has_each_effect_exactly_once", ClientTests::killedMidRunExactlyOnce);
        List<String> chosen = args.length > 0 ? List.of(args) : new ArrayList<>(tests.keySet());
        int failed = 0;
        for (String name : chosen) {
            Test test = Objects.requireNonNull(tests.get(name), "no test " + name);
            long start = System.nanoTime();
            try {
                test.run();
                System.out.printf("ok    %s (%d ms)%n", name, (System.nanoTime() - start) / 1_000_000);
            } catch (Throwable t) {
                failed++;
                System.out.printf("FAIL  %s: %s%n", name, t);
                t.printStackTrace(System.out);
            }
        }
        System.out.printf("%d of %d tests passed%n", chosen.size() - failed, chosen.size());
        System.exit(failed == 0 ? 0 : 1);
    }

    // ---- the seed scenario (README.md) --------------------------------------------------------------------

    /**
     * Orders placed at T: one left alone gets an email at T+3h and an escalation at T+6h, then its check is done;
     * one shipped at T+1h gets nothing, and its check ends at T+3h. Each notice commits with its check's
     * settlement.
     */
    static void seedScenario() throws Exception {
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
                         DB.column("SELECT next_check_at FROM prescient.future_job WHERE entity_key = ?",
                                   Long.toString(late)), "the unshipped order's next check");
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
        check(settled.stream().allMatch(st -> st.endsWith(" rescheduled") || st.endsWith(" done")), "" + settled);
    }

    /** A pending check's "attempts last_error". */
    private static List<Object> attemptsAndError(long id) throws SQLException {
        return DB.column("SELECT attempts || ' ' || last_error FROM prescient.future_job WHERE id = ?", id);
    }

    private static List<Object> notices(long order) throws SQLException {
        return DB.column("SELECT kind FROM order_notices WHERE order_id = ? ORDER BY sent_at", order);
    }

    private static List<Object> outcomes(long order) throws SQLException {
        return DB.column("SELECT outcome FROM prescient.job_history WHERE job = ? AND entity_key = ? "
                         + "ORDER BY finished_at", OrderUnshipped.JOB, Long.toString(order));
    }

    // ---- enqueue -------------------------------------------------------------------------------------------

    static void enqueueJoinsTransaction() throws Exception {
        DB.declareWorkerClasses("tx_a");
        PrescientClient client = new PrescientClient(() -> T);
        NewCheck check = NewCheck.of("tx_a", "orders", "7").after(Duration.ofMinutes(90)).jobKey("tx:7")
                                 .groupKey("customer:3").payload(Map.of("order_id", 7, "note", "a \"quoted\" one"));
        try (Connection c = DB.connect()) {
            c.setAutoCommit(false);
            client.schedule(c, check);
            c.rollback();
            assertEquals(0L, DB.count("SELECT count(*) FROM prescient.future_job WHERE job = 'tx_a'"),
                         "checks after a rollback");
            Scheduled s = client.schedule(c, check);
            assertEquals(0L, DB.count("SELECT count(*) FROM prescient.future_job WHERE job = 'tx_a'"),
                         "checks seen from another session before the commit");
            c.commit();
            assertEquals("created", s.status(), "status");
            assertEquals(T.plus(Duration.ofMinutes(90)), s.nextCheckAt(), "next check (T + 90 min, on the grid)");
            assertEquals(List.of(s.id() + "|tx:7|customer:3|7|a \"quoted\" one"),
                         DB.column("SELECT concat_ws('|', id, job_key, group_key, payload->>'order_id', "
                                   + "payload->>'note') FROM prescient.future_job WHERE job = 'tx_a'"), "the row");
            Scheduled at = client.schedule(c, NewCheck.of("tx_a", "orders", "8").at(T.plusMillis(1500)));
            c.commit();
            assertEquals(T.plusSeconds(2), at.nextCheckAt(), "a time off the grid rounds up");
        }
        // Without a clock the database's decides: "after 1 h" is an hour after the transaction's now().
        try (Connection c = DB.connect()) {
            Scheduled s = new PrescientClient().schedule(c, NewCheck.of("tx_a", "orders", "9").after(Duration.ofHours(1)));
            Instant server = ((OffsetDateTime) DB.value("SELECT now()")).toInstant();
            Duration ahead = Duration.between(server, s.nextCheckAt());
            check(ahead.compareTo(Duration.ofMinutes(59)) > 0 && ahead.compareTo(Duration.ofMinutes(61)) < 0,
                  "the server's clock: next check " + s.nextCheckAt() + " vs now " + server);
        }
    }

    static void enqueueRefusals() throws Exception {
        DB.declareWorkerClasses("ref_a");
        PrescientClient client = new PrescientClient(() -> T);
        try (Connection c = DB.connect()) {
            PrescientException.Refused refused = expect(PrescientException.Refused.class,
                () -> client.schedule(c, NewCheck.of("no_such_class", "orders", "1")));
            check(refused.getMessage().startsWith("unknown job class 'no_such_class'"), refused.getMessage());
            assertEquals("PR400", refused.getSQLState(), "SQLSTATE");

            Scheduled first = client.schedule(c, NewCheck.of("ref_a", "orders", "1").jobKey("ref:1"));
            PrescientException.Conflict conflict = expect(PrescientException.Conflict.class,
                () -> client.schedule(c, NewCheck.of("ref_a", "orders", "1").jobKey("ref:1")));
            check(conflict.getMessage().contains("(id " + first.id() + ")"), conflict.getMessage());

            Scheduled kept = client.schedule(c, NewCheck.of("ref_a", "orders", "1").jobKey("ref:1")
                                                        .onConflict(OnConflict.KEEP).after(Duration.ofHours(2)));
            assertEquals(first.id() + " kept " + first.nextCheckAt(),
                         kept.id() + " " + kept.status() + " " + kept.nextCheckAt(), "keep");
            Scheduled replaced = client.schedule(c, NewCheck.of("ref_a", "orders", "1").jobKey("ref:1")
                                                            .onConflict(OnConflict.REPLACE).after(Duration.ofHours(2)));
            assertEquals(first.id() + " replaced " + T.plus(Duration.ofHours(2)),
                         replaced.id() + " " + replaced.status() + " " + replaced.nextCheckAt(), "replace");
            expect(PrescientException.Refused.class,
                   () -> client.schedule(c, NewCheck.of("ref_a", "orders", "2").payload("[1, 2]")));
        }
    }

    static void enqueuePriority() throws Exception {
        DB.declareWorkerClasses("pri_a");
        PrescientClient client = new PrescientClient(() -> T);
        try (Connection c = DB.connect()) {
            Scheduled first = client.schedule(c, NewCheck.of("pri_a", "orders", "1").after(Duration.ofHours(1))
                                                          .priority(2));
            Scheduled plain = client.schedule(c, NewCheck.of("pri_a", "orders", "2").after(Duration.ofHours(1)));
            assertEquals(2, DB.value("SELECT priority FROM prescient.future_job WHERE id = ?", first.id()),
                         "priority 2");
            assertEquals(5, DB.value("SELECT priority FROM prescient.future_job WHERE id = ?", plain.id()),
                         "the default priority");
            PrescientException.Refused refused = expect(PrescientException.Refused.class,
                () -> client.schedule(c, NewCheck.of("pri_a", "orders", "3").after(Duration.ofHours(1)).priority(12)));
            assertEquals("the priority 12 is not one of 0 (first) to 9 (last)", refused.getMessage(), "the refusal");
            assertEquals(List.of("1", "2"),
                         DB.column("SELECT entity_key FROM prescient.future_job WHERE job = 'pri_a' ORDER BY id"),
                         "checks written (none by the refused call)");
        }
    }

    static void enqueueTraceContext() throws Exception {
        DB.declareWorkerClasses("trace_a");
        PrescientClient client = new PrescientClient(() -> T);
        try (Connection c = DB.connect()) {
            Scheduled traced = client.schedule(c, NewCheck.of("trace_a", "orders", "1").after(Duration.ofHours(1))
                                                           .traceparent(TRACEPARENT).tracestate("vendor=abc"));
            assertEquals(List.of(TRACEPARENT + " vendor=abc"),
                         DB.column("SELECT traceparent || ' ' || tracestate FROM prescient.future_job WHERE id = ?",
                                   traced.id()), "the trace context stored");
            PrescientException.Refused refused = expect(PrescientException.Refused.class,
                () -> client.schedule(c, NewCheck.of("trace_a", "orders", "2").traceparent("00-not-a-trace")));
            check(refused.getMessage().contains("is not a W3C traceparent"), "the refusal: " + refused.getMessage());
        }
    }

    /** A traced check failed once: each attempt's handler sees the caller's trace, under a span of its own. */
    static void eachAttemptIsASpan() throws Exception {
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
        check(spans.size() == 2 && !spans.get(0).equals(spans.get(1)) && !spans.contains(caller[2]),
              "each attempt a span of its own, not the caller's: " + spans);
    }

    static void enqueueCollect() throws Exception {
        DB.declareWorkerClasses("col_a");
        PrescientClient client = new PrescientClient(() -> T);
        try (Connection c = DB.connect()) {
            List<String> statuses = new ArrayList<>();
            for (int n = 1; n <= 3; n++) {
                statuses.add(client.schedule(c, NewCheck.of("col_a", "user", "7").after(Duration.ofMinutes(5))
                                                    .jobKey("col_a:7").payload(Map.of("n", n))
                                                    .collect(Duration.ofMinutes(30))).status());
            }
            assertEquals(List.of("created", "collected", "collected"), statuses, "the statuses");
            assertEquals(List.of("{\"collected\": [{\"n\": 1}, {\"n\": 2}, {\"n\": 3}]}"),
                         DB.column("SELECT payload::text FROM prescient.future_job WHERE job = 'col_a'"),
                         "one pending check, collecting the three payloads in order");
        }
    }

    static void cancelRescheduleCron() throws Exception {
        DB.declareWorkerClasses("cr_a");
        PrescientClient client = new PrescientClient(() -> T);
        try (Connection c = DB.connect()) {
            Scheduled a = client.schedule(c, NewCheck.of("cr_a", "orders", "1").jobKey("cr:1").after(Duration.ofHours(1)));
            Scheduled b = client.schedule(c, NewCheck.of("cr_a", "orders", "2").after(Duration.ofHours(1)));
            Optional<Rescheduled> moved = client.reschedule(c, "cr:1", T.plus(Duration.ofHours(5)));
            assertEquals(Optional.of(new Rescheduled(a.id(), "cr:1", T.plus(Duration.ofHours(5)))), moved, "by key");
            assertEquals(T.plus(Duration.ofMinutes(30)),
                         client.reschedule(c, b.id(), T.plus(Duration.ofMinutes(30))).orElseThrow().nextCheckAt(),
                         "by id");
            assertEquals(Optional.empty(), client.reschedule(c, "cr:none", T), "an unknown key");
            assertEquals(OptionalLong.of(a.id()), client.cancel(c, "cr:1"), "cancel by key");
            assertEquals(OptionalLong.of(b.id()), client.cancel(c, b.id()), "cancel by id");
            assertEquals(OptionalLong.empty(), client.cancel(c, b.id()), "cancel again");
            assertEquals(List.of("cancelled", "cancelled"),
                         DB.column("SELECT outcome FROM prescient.job_history WHERE job = 'cr_a'"), "history");

            assertEquals(1, client.cronAdd(c, CronSchedule.of("cr-nightly", "0 3 * * *", "cr_a")
                                                          .timeZone("Europe/Berlin").payload("{\"kind\": \"nightly\"}")),
                         "the schedule's version");
            assertEquals(List.of("cr_a Europe/Berlin"),
                         DB.column("SELECT job || ' ' || time_zone FROM prescient.cron_schedule WHERE id = 'cr-nightly'"),
                         "the schedule");
            expect(PrescientException.Conflict.class,
                   () -> client.cronAdd(c, CronSchedule.of("cr-nightly", "0 3 * * *", "cr_a")));
        }
    }

    /**
     * Every option of prescient.schedule and prescient.cron_add is reachable from Java
     * (jobs/workers/conformance/enqueue-options.json): each shown by what the database stored or answered.
     */
    static void everyEnqueueOption() throws Exception {
        DB.declareWorkerClasses("opt_a");
        PrescientClient client = new PrescientClient(() -> T);
        try (Connection c = DB.connect()) {
            Scheduled first = client.schedule(c, NewCheck.of("opt_a", "orders", "1").after(Duration.ofHours(1))
                                                  .jobKey("opt:1").window(Duration.ofSeconds(10)).by("java-test"));
            assertEquals(List.of("java-test true"),
                         DB.column("SELECT enqueued_by || ' ' || (next_check_at BETWEEN ?::timestamptz AND "
                                   + "?::timestamptz + interval '10 seconds') FROM prescient.future_job WHERE id = ?",
                                   T.plus(Duration.ofHours(1)).toString(), T.plus(Duration.ofHours(1)).toString(),
                                   first.id()),
                         "by and window");
            client.cancel(c, first.id());
            Scheduled again = client.schedule(c, NewCheck.of("opt_a", "orders", "1").after(Duration.ofHours(1))
                                                  .jobKey("opt:1").dedupeFor(Duration.ofDays(1))
                                                  .dedupeOutcomes(List.of("cancelled")));
            assertEquals("deduplicated", again.status(), "dedupe of the outcomes named");
            client.schedule(c, NewCheck.of("opt_later", "orders", "2").after(Duration.ofHours(1)).allowUnknownClass(true));
            client.cronAdd(c, CronSchedule.of("opt-every", "*/5 * * * *", "opt_a").catchUp("none")
                                          .deadline(Duration.ofSeconds(90)).jitter(Duration.ofMinutes(2))
                                          .options(Map.of("priority", 2, "max_runs", 3)).by("java-test"));
            assertEquals(List.of("none 90 120 java-test 2 3"),
                         DB.column("SELECT concat_ws(' ', catch_up, deadline_seconds, jitter_seconds, created_by, "
                                   + "priority, max_runs) FROM prescient.cron_schedule WHERE id = 'opt-every'"),
                         "the schedule's options");
            client.cronAdd(c, CronSchedule.of("opt-spread", "@hourly", "opt_a").window(Duration.ofMinutes(10)));
        }
    }

    // ---- the worker, on a pinned clock ----------------------------------------------------------------------

    /** Every kind of answer, and a throwing handler, through runUntilIdle: what each became in the database. */
    static void handlerAnswers() throws Exception {
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

    /**
     * Effects exactly once: a handler settles its check in its own transaction (completeIn, failIn). Committed,
     * the worker settles it no more (one settlement each); rolled back, or in a savepoint rolled back, the check
     * is still leased and fails: with the handler's exception if it threw, else saying the settlement did not
     * take effect. The effects of the rolled-back ones are gone with their settlements.
     */
    static void settledInTransaction() throws Exception {
        DB.declareWorkerClasses("tx_a");
        DB.execute("CREATE TABLE tx_effects (check_id bigint NOT NULL)");
        PrescientClient client = new PrescientClient(() -> T);
        Map<String, Long> ids = new LinkedHashMap<>();
        try (Connection c = DB.connect()) {
            for (String kind : List.of("commit", "next", "fail_in", "rollback", "rollback_throw", "savepoint")) {
                ids.put(kind, client.schedule(c, NewCheck.of("tx_a", "kinds", kind).payload(Map.of("kind", kind)))
                                    .id());
            }
        }
        List<Settlement> settled = new CopyOnWriteArrayList<>();
        Worker worker = Worker.builder(DB::connect).name("tx").clock(() -> T.plusSeconds(1)).onSettled(settled::add)
                              .handler("tx_a", check -> {
                                  try (Connection c = DB.connect()) {
                                      expect(IllegalArgumentException.class,
                                             () -> check.completeIn(c, Answer.done())); // autocommit is on
                                      c.setAutoCommit(false);
                                      DB.execute(c, "INSERT INTO tx_effects VALUES (?)", check.id());
                                      switch ((String) check.payloadMap().get("kind")) {
                                          case "commit" -> check.completeIn(c, Answer.done());
                                          case "next" -> check.completeIn(c, Answer.nextAt(T.plus(Duration.ofHours(1))));
                                          case "fail_in" -> check.failIn(c, "the CRM said 503");
                                          case "rollback" -> {
                                              check.completeIn(c, Answer.done());
                                              c.rollback();
                                              return Answer.done();
                                          }
                                          case "rollback_throw" -> {
                                              check.completeIn(c, Answer.done());
                                              c.rollback();
                                              throw new IllegalStateException("the mail server is down");
                                          }
                                          default -> {
                                              java.sql.Savepoint sp = c.setSavepoint();
                                              check.completeIn(c, Answer.done());
                                              c.rollback(sp);
                                          }
                                      }
                                      c.commit();
                                  }
                                  return Answer.fail("not read: the check was settled in the transaction");
                              }).build();
        try (worker) {
            assertEquals(6, worker.runUntilIdle(), "checks run");
        }
        Map<Long, List<String>> outcomes = new LinkedHashMap<>();
        settled.forEach(st -> outcomes.computeIfAbsent(st.id(), id -> new ArrayList<>()).add(st.outcome()));
        assertEquals(List.of("done"), outcomes.get(ids.get("commit")), "commit");
        assertEquals(List.of("rescheduled"), outcomes.get(ids.get("next")), "next");
        assertEquals(List.of("retried"), outcomes.get(ids.get("fail_in")), "fail_in");
        for (String kind : List.of("rollback", "rollback_throw", "savepoint")) {
            assertEquals(List.of("retried"), outcomes.get(ids.get(kind)), kind + ": failed by the worker");
        }
        assertEquals(List.of(ids.get("commit"), ids.get("next"), ids.get("fail_in"), ids.get("savepoint")),
                     DB.column("SELECT check_id FROM tx_effects ORDER BY check_id"), "the effects committed");
        assertEquals(List.of("1 the CRM said 503"),
                     attemptsAndError(ids.get("fail_in")), "fail_in's attempt");
        assertEquals(List.of("1 java.lang.IllegalStateException: the mail server is down"),
                     attemptsAndError(ids.get("rollback_throw")), "a rollback and a throw: the handler's error");
        for (String kind : List.of("rollback", "savepoint")) {
            Object error = DB.value("SELECT last_error FROM prescient.future_job WHERE id = ?", ids.get(kind));
            check(String.valueOf(error).startsWith("the handler's settlement in its own transaction did not take "
                                                   + "effect"), kind + ": " + error);
        }
        expect(IllegalStateException.class, () -> {
            try (Connection c = DB.connect()) {
                c.setAutoCommit(false);
                new Check(1, "tx_a", "x", "1", null, null, "{}", T, T, 0, 0, null, null, null, 1, T)
                    .completeIn(c, Answer.done());
            }
        });
    }

    /**
     * A lease lost while the handler ran: completeIn throws LeaseLostException, the handler's transaction rolls
     * back with its writes, and the worker settles the check no more (the other worker's lease stands).
     */
    static void leaseLostInTransaction() throws Exception {
        DB.declareWorkerClasses("txlost_a");
        DB.execute("CREATE TABLE txlost_effects (check_id bigint NOT NULL)");
        long id;
        try (Connection c = DB.connect()) {
            id = new PrescientClient(() -> T).schedule(c, NewCheck.of("txlost_a", "x", "1")).id();
        }
        AtomicReference<Instant> now = new AtomicReference<>(T.plusSeconds(1));
        List<Settlement> settled = new CopyOnWriteArrayList<>();
        List<Throwable> thrown = new CopyOnWriteArrayList<>();
        Worker worker = Worker.builder(DB::connect).name("a").clock(now::get).lease(Duration.ofSeconds(1))
                              .heartbeat(false).onSettled(settled::add)
                              .handler("txlost_a", check -> {
                                  // a's lease ended at T+2: b takes the check at T+3, then a's clock moves
                                  // there (in that order: a's loop, taking ahead, would take it back first)
                                  try (Connection other = DB.connect()) {
                                      WorkerProtocol.take(other, "b", List.of("txlost_a"), 1, Duration.ofSeconds(60),
                                                          T.plusSeconds(3));
                                  }
                                  now.set(T.plusSeconds(3));
                                  try (Connection c = DB.connect()) {
                                      c.setAutoCommit(false);
                                      try {
                                          DB.execute(c, "INSERT INTO txlost_effects VALUES (?)", check.id());
                                          check.completeIn(c, Answer.done());
                                          c.commit();
                                      } catch (LeaseLostException e) {
                                          thrown.add(e);
                                          throw e;
                                      } finally {
                                          c.rollback(); // nothing after a commit
                                      }
                                  }
                                  return Answer.done();
                              }).build();
        try (worker) {
            assertEquals(1, worker.runUntilIdle(), "checks run");
        }
        check(thrown.size() == 1 && thrown.get(0) instanceof LeaseLostException, "the handler was told: " + thrown);
        assertEquals(List.of(id + " lease_lost"), settled.stream().map(st -> st.id() + " " + st.outcome()).toList(),
                     "the worker's settlements");
        assertEquals(0L, DB.count("SELECT count(*) FROM txlost_effects"), "the effect rolled back");
        assertEquals(List.of("b 0"), DB.column("SELECT claimed_by || ' ' || attempts FROM prescient.future_job "
                                               + "WHERE id = ?", id), "b's lease, untouched");
    }

    /**
     * A batch handler gets many checks of its class in one call and answers each; an answer list of another
     * length fails every check of that call.
     */
    static void batchHandler() throws Exception {
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
        check(calls.stream().anyMatch(n -> n > 1), "many checks in one call: " + calls);
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
            check(String.valueOf(error).matches("the batch handler answered 0 answers for [1-3] checks"),
                  "an answer list of another length fails the call's checks: " + error);
        }
        assertEquals(3L, DB.count("SELECT count(*) FROM prescient.future_job WHERE job = 'batch_b' AND attempts = 1"),
                     "each failed once");
    }

    /** A result over 64 KiB refuses a whole worker_complete call: that check fails, the others settle. */
    static void refusedAnswer() throws Exception {
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
        check(String.valueOf(error).startsWith("answer refused: check " + big + ": its result is 70002 bytes"),
              "the big one's error: " + error);
    }

    /** Four free places, one group of three checks: they run one after another, oldest first, never two at once. */
    static void groupInOrder() throws Exception {
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
    static void protocolLeaseLost() throws Exception {
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
            check(b.leaseToken() != a.leaseToken(), "a new token");
            List<WorkerProtocol.Refusal> refusals = WorkerProtocol.extend(c, "a", Map.of(id, a.leaseToken()),
                                                                          Duration.ofSeconds(1), T.plusSeconds(3));
            check(refusals.size() == 1 && refusals.get(0).reason().contains("held under another lease"),
                  "a's heartbeat refused: " + refusals);
            Settlement s = WorkerProtocol.settle(c, "a", List.of(new WorkerProtocol.Outcome(a, Answer.done())),
                                                 T.plusSeconds(3)).get(0);
            LeaseLostException lost = expect(LeaseLostException.class, s::requireSettled);
            assertEquals(id, lost.checkId(), "the lost check's id");
            check(lost.getMessage().startsWith("check " + id + ": lease lost: check " + id + " is held under another"
                                               + " lease (by b until"), lost.getMessage());
            assertEquals("done", WorkerProtocol.settle(c, "b", List.of(new WorkerProtocol.Outcome(b, Answer.done())),
                                                       T.plusSeconds(4)).get(0).requireSettled().outcome(), "b's");
            PrescientException.Refused refused = expect(PrescientException.Refused.class,
                () -> WorkerProtocol.take(c, "a", List.of("noop"), 10, Duration.ofSeconds(1), null));
            check(refused.getMessage().contains("'noop' is run by the runner"), refused.getMessage());
        }
    }

    /** A login role with prescient_worker alone can enqueue, add a schedule and run the whole worker loop. */
    static void workerRoleIsEnough() throws Exception {
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
                expect(SQLException.class, () -> c.createStatement().execute(
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
    static void declaresClassesWithPolicy() throws Exception {
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
                expect(PrescientException.Refused.class,
                       () -> WorkerClasses.declare(c, "noop", Policy.unchanged().maxChecks(1)));
                assertEquals(noop, DB.value(policyOf, "noop"), "the runner's class after the refusal");
                expect(PrescientException.Refused.class,
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
                expect(PrescientException.Refused.class, runners::runUntilIdle);
                expect(PrescientException.Refused.class, runners::start);
            }
        });
    }

    /**
     * PrescientClient.retry, with prescient_worker's rights: a dead letter (max_attempts 1) back as pending, due
     * by the server's clock, attempts afresh, and run again; refused while pending (PR409), for an id with no
     * failure (PR404), and for a runner's class (PR400), with nothing written.
     */
    static void deadLetterRetried() throws Exception {
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
                check(!due.isBefore(before) && due.isBefore(before.plusSeconds(60)),
                      "due by the server's clock: " + due + " after " + before);
                assertEquals(List.of("0 503"), attemptsAndError(dead), "the retried check's attempts and error");
                expect(PrescientException.Conflict.class, () -> client.retry(c, dead));
                expect(PrescientException.NotFound.class, () -> client.retry(c, Long.MAX_VALUE));
            }
            DB.execute("UPDATE prescient.job_class SET runs_in = 'runner' WHERE job = 'dead_r'");
            try (Connection c = asWorker.connect()) {
                expect(PrescientException.Refused.class, () -> client.retry(c, runners));
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
    private static void asWorkerRole(RoleAction action) throws Exception {
        String role = "prescient_java_test_" + ProcessHandle.current().pid();
        DB.execute("CREATE ROLE " + role + " LOGIN IN ROLE prescient_worker");
        try {
            action.run(DB.as(role), role);
        } finally {
            DB.execute("DROP ROLE " + role);
        }
    }

    @FunctionalInterface
    interface RoleAction {
        void run(Database asRole, String role) throws Exception;
    }

    // ---- the worker, live: real clock, LISTEN, heartbeats, stopping -----------------------------------------

    /**
     * The loop's wait after a take that left places free: a check due in 3 ms (a rate limit's next start) is
     * waited for exactly, the backoff starting over; only one due now yet not taken backs off, 50 ms doubling
     * to 1 s. It once backed off for any wait under 10 ms, and under a rate limit shared with other workers a
     * Java worker looked once a second and took no check in 13 s (the conformance suite's mixed rate_limit).
     */
    static void idleWaitsForAStart() {
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

    /** Asleep with nothing due (a 60 s sleep), the worker wakes on the NOTIFY of a new check and runs it. */
    static void liveLoopWakesOnNotify() throws Exception {
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

    /** Its sessions cut by the server (as in a failover), the worker opens new ones and LISTENs again. */
    static void survivesCutSessions() throws Exception {
        DB.declareWorkerClasses("cut_a");
        List<Settlement> settled = new CopyOnWriteArrayList<>();
        Worker worker = Worker.builder(DB::connect).name("cut").onSettled(settled::add)
                              .handler("cut_a", check -> Answer.done()).build().start();
        try (worker) {
            Thread.sleep(300); // both connections open, the loop asleep
            long cut = DB.count("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                + "WHERE datname = current_database() AND pid <> pg_backend_pid()");
            check(cut >= 2, "sessions cut: " + cut);
            try (Connection c = DB.connect()) {
                new PrescientClient().schedule(c, NewCheck.of("cut_a", "x", "1"));
            }
            waitFor(() -> settled.size() == 1, Duration.ofSeconds(8), "the check settled after the cut");
        }
    }

    /** Leases of 0.6 s, handlers of 1.5 s: heartbeats keep the check; without them the answer is refused. */
    static void heartbeatsKeepLongRun() throws Exception {
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

    /**
     * A take asks for what the worker can start soon: after a 10 ms run, one place takes the five other checks
     * at once (they wait in order). A stop gives the ones not started back at once, while the running one
     * finishes within the grace.
     */
    static void takeAheadGivenBack() throws Exception {
        DB.declareWorkerClasses("ahead_a");
        try (Connection c = DB.connect()) {
            for (int i = 0; i < 6; i++) {
                new PrescientClient().schedule(c, NewCheck.of("ahead_a", "x", "k" + i).priority(i == 0 ? 0 : 1));
            }
        }
        List<Long> started = new CopyOnWriteArrayList<>();
        Worker worker = Worker.builder(DB::connect).name("ahead").concurrency(1)
                              .handler("ahead_a", check -> {
                                  started.add(check.id());
                                  Thread.sleep(started.size() == 1 ? 10 : 2000);
                                  return Answer.done();
                              }).build().start();
        Thread stopper = new Thread(() -> worker.stop(Duration.ofSeconds(10)));
        try {
            waitFor(() -> DB.count("SELECT count(*) FROM prescient.future_job WHERE job = 'ahead_a' "
                                   + "AND claimed_by = 'ahead'") == 5, Duration.ofSeconds(5),
                    "the five left taken by one take, one place for them");
            check(started.size() == 2, "one runs, four wait: " + started);
            stopper.start();
            waitFor(() -> DB.count("SELECT count(*) FROM prescient.future_job WHERE job = 'ahead_a' "
                                   + "AND claimed_by IS NULL AND attempts = 0") == 4, Duration.ofMillis(1500),
                    "the four not started given back, untouched, while the fifth runs");
            check(stopper.isAlive(), "the stop waits for the running handler");
        } finally {
            stopper.join();
        }
        assertEquals(2L, DB.count("SELECT count(*) FROM prescient.job_history WHERE job = 'ahead_a'"), "checks run");
    }

    /** stop(grace): a handler that ends within it is settled; one that outlives it is released untouched. */
    static void stopReleases() throws Exception {
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
        check(ms >= 1400 && ms < 8000, "stopped after the grace: " + ms + " ms");
        assertEquals(List.of("done"), DB.column("SELECT outcome FROM prescient.job_history WHERE entity_key = 'quick'"),
                     "the quick one, settled within the grace");
        assertEquals(List.of("0 0 true"),
                     DB.column("SELECT attempts || ' ' || check_count || ' ' || (claimed_by IS NULL) "
                               + "FROM prescient.future_job WHERE entity_key = 'slow'"),
                     "the slow one: pending, untouched, not leased");
    }

    /** SIGTERM to a JVM running a worker with stopOnShutdown: the running check finishes and is settled. */
    static void sigtermStopsGracefully() throws Exception {
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
            check(p.waitFor(10, TimeUnit.SECONDS), "the probe ended");
            assertEquals(143, p.exitValue(), "a JVM ended by SIGTERM");
            assertEquals(List.of("done"), DB.column("SELECT outcome FROM prescient.job_history WHERE id = ?", id),
                         "the check that ran at the SIGTERM");
            String err = java.nio.file.Files.readString(log);
            check(err.contains("check " + id + " (term_a): done") && err.contains("worker probe: stopped"),
                  "the stop's lines survive java.util.logging's shutdown:\n" + err);
        } finally {
            p.destroyForcibly();
            java.nio.file.Files.deleteIfExists(log);
        }
    }

    /**
     * The kill test (issue 58, effects exactly once): a worker process whose handler writes a ledger row per
     * check and completes the check in the same transaction (LedgerWorker) is killed with SIGKILL mid-run; a
     * second worker finishes the rest. Every check has exactly one ledger row and one history row. With the
     * settlement apart from the writes (PRESCIENT_KILL_TEST_SETTLE=separate) the killed worker's unsettled runs
     * run again, and their rows are there twice: the test fails. 10 000 checks.
     */
    static void killedMidRunExactlyOnce() throws Exception {
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
            waitFor(() -> DB.count("SELECT count(*) FROM kill_ledger") >= checks / 4, Duration.ofSeconds(30),
                    "the first worker ran a quarter of the checks");
            killed.destroyForcibly(); // SIGKILL
            check(killed.waitFor(10, TimeUnit.SECONDS), "the killed worker ended");
            atKill = DB.count("SELECT count(*) FROM kill_ledger");
        } finally {
            killed.destroyForcibly();
            java.nio.file.Files.deleteIfExists(log);
        }
        List<Settlement> lost = new CopyOnWriteArrayList<>();
        Worker second = LedgerWorker.build(DB, job, "second", s -> {
            if (s.leaseLost()) {
                lost.add(s);
            }
        });
        second.start();
        try {
            waitFor(() -> DB.count("SELECT count(*) FROM prescient.job_history WHERE job = ?", job) >= checks,
                    Duration.ofSeconds(40), "the second worker settled the rest");
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
        check(byKilled > 0 && bySecond > 0, "the kill was mid-run: " + byKilled + " settled by the killed worker, "
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

    /** The conformance driver, through its script: every answer of the contract, the ledger, SIGTERM exits 0. */
    /**
     * The schema with no prescient binary: the jar's bundle is the repository's, it makes a new database at the
     * slot asked, applies nothing to the one the binary made, and refuses a newer database.
     */
    static void schemaFromTheBundle() throws Exception {
        String repository = java.nio.file.Files.readString(
            java.nio.file.Path.of(System.getProperty("prescient.java.dir"), "..", "..", "..", "sql", "prescient-bundle.sql"));
        check(repository.equals(PrescientSchema.bundle()),
              "src/main/resources/dev/prescient/prescient-bundle.sql differs: copy sql/prescient-bundle.sql");
        String name = "prescient_java_schema_" + ProcessHandle.current().pid();
        try (Connection admin = DB.connect(); Statement st = admin.createStatement()) {
            st.execute("DROP DATABASE IF EXISTS " + name);
            st.execute("CREATE DATABASE " + name);
        }
        try {
            try (Connection fresh = DB.other(name).connect()) {
                List<PrescientSchema.Applied> made = PrescientSchema.migrate(fresh, 30);
                check(made.contains(new PrescientSchema.Applied("functions", "072_worker_protocol.sql")),
                      "the function files applied: " + made);
                assertEquals(List.of(30), DB.other(name).column("SELECT slot_seconds FROM prescient.settings"),
                             "the slot");
                assertEquals(List.of(), PrescientSchema.migrate(fresh, null), "a second migrate");
                try (Statement st = fresh.createStatement()) {
                    st.execute("INSERT INTO prescient.schema_migrations (version, name, checksum)"
                               + " VALUES (9999, '9999_future.sql', 'x')");
                }
                PrescientException.Refused refused = expect(PrescientException.Refused.class,
                                                            () -> PrescientSchema.migrate(fresh, null));
                check(refused.getMessage().contains("newer than this bundle knows"), refused.getMessage());
            }
            try (Connection binarys = DB.connect()) {
                assertEquals(List.of(), PrescientSchema.migrate(binarys, null), "the binary's database");
            }
        } finally {
            try (Connection admin = DB.connect(); Statement st = admin.createStatement()) {
                st.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
            }
        }
    }

    static void conformanceDriver() throws Exception {
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
        String script = System.getProperty("prescient.java.dir") + "/conformance-driver";
        Path log = File.createTempFile("prescient-java-driver", ".log").toPath();
        Process p = new ProcessBuilder(script, "work", "--name", "jd1", "--classes", "conf_a,conf_b",
                                       "--concurrency", "3", "--lease-seconds", "5")
                        .redirectError(log.toFile()).redirectOutput(log.toFile()).start();
        try {
            waitFor(() -> DB.count("SELECT count(*) FROM prescient.check_run r JOIN prescient.future_job f USING (id) "
                                   + "WHERE f.job IN ('conf_a', 'conf_b')") >= 3
                          && DB.count("SELECT count(*) FROM prescient.job_history WHERE job IN ('conf_a', 'conf_b')")
                             >= 2,
                    Duration.ofSeconds(10), "the driver's checks settled");
            p.destroy(); // SIGTERM
            check(p.waitFor(10, TimeUnit.SECONDS), "the driver ended");
            assertEquals(0, p.exitValue(), "the driver's exit status after SIGTERM");
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
        } catch (Throwable t) {
            System.out.println("driver's log:\n" + java.nio.file.Files.readString(log));
            throw t;
        } finally {
            p.destroyForcibly();
            java.nio.file.Files.deleteIfExists(log);
        }
    }

    // ---- helpers -------------------------------------------------------------------------------------------

    private static ProcessBuilder java(String mainClass, String... args) {
        List<String> command = new ArrayList<>(List.of(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC", "-Djava.util.logging.SimpleFormatter.format=%4$s %5$s%6$s%n",
            "-cp", System.getProperty("java.class.path"), mainClass));
        command.addAll(List.of(args));
        return new ProcessBuilder(command);
    }

    private static OffsetDateTime at(Instant t) {
        return OffsetDateTime.ofInstant(t, java.time.ZoneOffset.UTC);
    }

    @FunctionalInterface
    interface Condition {
        boolean holds() throws Exception;
    }

    private static void waitFor(Condition condition, Duration limit, String what) throws Exception {
        long deadline = System.nanoTime() + limit.toNanos();
        while (!condition.holds()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + limit + ": " + what);
            }
            Thread.sleep(50);
        }
    }

    @FunctionalInterface
    interface Action {
        void run() throws Exception;
    }

    private static <E extends Throwable> E expect(Class<E> type, Action action) throws Exception {
        try {
            action.run();
        } catch (Throwable t) {
            if (type.isInstance(t)) {
                return type.cast(t);
            }
            throw new AssertionError("expected " + type.getSimpleName() + ", got " + t, t);
        }
        throw new AssertionError("expected " + type.getSimpleName() + ", nothing was thrown");
    }

    private static void check(boolean condition, String what) {
        if (!condition) {
            throw new AssertionError(what);
        }
    }

    private static void assertEquals(Object expected, Object actual, String what) {
        if (!equal(expected, actual)) {
            throw new AssertionError(what + ": expected <" + expected + "> but was <" + actual + ">");
        }
    }

    /** Equal, with OffsetDateTimes compared as instants (the driver answers in the session's zone). */
    private static boolean equal(Object a, Object b) {
        if (a instanceof List<?> la && b instanceof List<?> lb) {
            if (la.size() != lb.size()) {
                return false;
            }
            for (int i = 0; i < la.size(); i++) {
                if (!equal(la.get(i), lb.get(i))) {
                    return false;
                }
            }
            return true;
        }
        if (a instanceof OffsetDateTime x && b instanceof OffsetDateTime y) {
            return x.toInstant().equals(y.toInstant());
        }
        if (a instanceof Number x && b instanceof Number y && !(a instanceof Double) && !(b instanceof Double)) {
            return x.longValue() == y.longValue();
        }
        return Objects.equals(a, b);
    }
}
