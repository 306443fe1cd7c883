package dev.prescient;

import static dev.prescient.TestSupport.DB;
import static dev.prescient.TestSupport.T;
import static dev.prescient.TestSupport.TRACEPARENT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** Enqueue in the caller's transaction: PrescientClient against the database. */
final class EnqueueTest {
    @Test
    void enqueue_joins_the_callers_transaction() throws Exception {
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
            assertTrue(ahead.compareTo(Duration.ofMinutes(59)) > 0 && ahead.compareTo(Duration.ofMinutes(61)) < 0,
                  "the server's clock: next check " + s.nextCheckAt() + " vs now " + server);
        }
    }

    @Test
    void enqueue_refusals_are_typed() throws Exception {
        DB.declareWorkerClasses("ref_a");
        PrescientClient client = new PrescientClient(() -> T);
        try (Connection c = DB.connect()) {
            PrescientException.Refused refused = assertThrows(PrescientException.Refused.class,
                () -> client.schedule(c, NewCheck.of("no_such_class", "orders", "1")));
            assertTrue(refused.getMessage().startsWith("unknown job class 'no_such_class'"), refused.getMessage());
            assertEquals("PR400", refused.getSQLState(), "SQLSTATE");

            Scheduled first = client.schedule(c, NewCheck.of("ref_a", "orders", "1").jobKey("ref:1"));
            PrescientException.Conflict conflict = assertThrows(PrescientException.Conflict.class,
                () -> client.schedule(c, NewCheck.of("ref_a", "orders", "1").jobKey("ref:1")));
            assertTrue(conflict.getMessage().contains("(id " + first.id() + ")"), conflict.getMessage());

            Scheduled kept = client.schedule(c, NewCheck.of("ref_a", "orders", "1").jobKey("ref:1")
                                                        .onConflict(OnConflict.KEEP).after(Duration.ofHours(2)));
            assertEquals(first.id() + " kept " + first.nextCheckAt(),
                         kept.id() + " " + kept.status() + " " + kept.nextCheckAt(), "keep");
            Scheduled replaced = client.schedule(c, NewCheck.of("ref_a", "orders", "1").jobKey("ref:1")
                                                            .onConflict(OnConflict.REPLACE).after(Duration.ofHours(2)));
            assertEquals(first.id() + " replaced " + T.plus(Duration.ofHours(2)),
                         replaced.id() + " " + replaced.status() + " " + replaced.nextCheckAt(), "replace");
            assertThrows(PrescientException.Refused.class,
                   () -> client.schedule(c, NewCheck.of("ref_a", "orders", "2").payload("[1, 2]")));
        }
    }

    @Test
    void enqueue_priority() throws Exception {
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
            PrescientException.Refused refused = assertThrows(PrescientException.Refused.class,
                () -> client.schedule(c, NewCheck.of("pri_a", "orders", "3").after(Duration.ofHours(1)).priority(12)));
            assertEquals("the priority 12 is not one of 0 (first) to 9 (last)", refused.getMessage(), "the refusal");
            assertEquals(List.of("1", "2"),
                         DB.column("SELECT entity_key FROM prescient.future_job WHERE job = 'pri_a' ORDER BY id"),
                         "checks written (none by the refused call)");
        }
    }

    @Test
    void enqueue_collect() throws Exception {
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

    @Test
    void enqueue_trace_context() throws Exception {
        DB.declareWorkerClasses("trace_a");
        PrescientClient client = new PrescientClient(() -> T);
        try (Connection c = DB.connect()) {
            Scheduled traced = client.schedule(c, NewCheck.of("trace_a", "orders", "1").after(Duration.ofHours(1))
                                                           .traceparent(TRACEPARENT).tracestate("vendor=abc"));
            assertEquals(List.of(TRACEPARENT + " vendor=abc"),
                         DB.column("SELECT traceparent || ' ' || tracestate FROM prescient.future_job WHERE id = ?",
                                   traced.id()), "the trace context stored");
            PrescientException.Refused refused = assertThrows(PrescientException.Refused.class,
                () -> client.schedule(c, NewCheck.of("trace_a", "orders", "2").traceparent("00-not-a-trace")));
            assertTrue(refused.getMessage().contains("is not a W3C traceparent"), "the refusal: " + refused.getMessage());
        }
    }

    /**
     * An office open 09:00 to 17:00 in Berlin on weekdays. Friday 14:00 UTC is 15:00 there: two of four hours of
     * open time are left that day, the other two are on Monday, which opens at 08:00 UTC.
     */
    @Test
    void enqueue_in_business_time() throws Exception {
        DB.declareWorkerClasses("biz_a");
        DB.execute("SELECT prescient.calendar_set('office', 'Europe/Berlin', ?::jsonb)",
                   "{\"hours\": {\"mon\": [\"09:00-17:00\"], \"tue\": [\"09:00-17:00\"], \"wed\": [\"09:00-17:00\"],"
                   + " \"thu\": [\"09:00-17:00\"], \"fri\": [\"09:00-17:00\"]}}");
        Instant friday = Instant.parse("2026-11-27T14:00:00Z");
        PrescientClient onFriday = new PrescientClient(() -> friday);
        PrescientClient onSaturday = new PrescientClient(() -> Instant.parse("2026-11-28T10:00:00Z"));
        String businessTime = "SELECT concat_ws(' ', next_check_at AT TIME ZONE 'UTC', calendar, calendar_version, "
                              + "business_delay) FROM prescient.future_job WHERE id = ?";
        try (Connection c = DB.connect()) {
            Scheduled escalate = onFriday.schedule(c, NewCheck.of("biz_a", "tickets", "1").at(friday)
                                                              .calendar("office").businessDelay("4h"));
            assertEquals("2026-11-30 10:00:00 office 1 4h", DB.value(businessTime, escalate.id()),
                         "4h of open time from Friday 15:00 in Berlin");
            Scheduled page = onSaturday.schedule(c, NewCheck.of("biz_a", "tickets", "2").calendar("office"));
            assertEquals("2026-11-30 08:00:00 office 1", DB.value(businessTime, page.id()),
                         "no time on a Saturday: now's next opening");
            PrescientException.Refused refused = assertThrows(PrescientException.Refused.class,
                () -> onFriday.schedule(c, NewCheck.of("biz_a", "tickets", "3").at(friday).calendar("nope")
                                                  .businessDelay("4h")));
            assertEquals("no calendar named 'nope' (prescient calendar list)", refused.getMessage(), "the refusal");
            assertEquals(2L, DB.count("SELECT count(*) FROM prescient.future_job WHERE job = 'biz_a'"),
                         "checks written (none by the refused call)");
        }
        assertThrows(IllegalArgumentException.class,
                     () -> NewCheck.of("biz_a", "tickets", "4").after(Duration.ofHours(1)).businessDelay("4h"));
    }

    @Test
    void cancel_reschedule_and_cron() throws Exception {
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
            assertThrows(PrescientException.Conflict.class,
                   () -> client.cronAdd(c, CronSchedule.of("cr-nightly", "0 3 * * *", "cr_a")));
        }
    }

    /**
     * Every option of prescient.schedule and prescient.cron_add is reachable from Java
     * (jobs/workers/conformance/enqueue-options.json): each shown by what the database stored or answered.
     */
    @Test
    void every_enqueue_option_is_reachable() throws Exception {
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
}
