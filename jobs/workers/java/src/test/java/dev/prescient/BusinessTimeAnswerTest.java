package dev.prescient;

import static dev.prescient.TestSupport.DB;
import static dev.prescient.TestSupport.attemptsAndError;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Answers in business time (docs/business-time.md, "Answers in business time"): a handler's "look again in 4h of
 * calendar desk", resolved by worker_complete. The desk is open 09:00 to 17:00 in Berlin on weekdays; the worker's
 * clock is pinned to a Friday at 15:00:01.5 there, so four hours of open time end on Monday, not at 19:00, and
 * the half second shows the rounding up to the slot grid.
 */
final class BusinessTimeAnswerTest {
    private static final Instant FRIDAY = Instant.parse("2026-11-27T14:00:00Z");
    private static final Instant NOW = FRIDAY.plusMillis(1500);

    @BeforeAll
    static void desk() throws Exception {
        DB.execute("SELECT prescient.calendar_set('desk', 'Europe/Berlin', ?::jsonb)",
                   "{\"hours\": {\"mon\": [\"09:00-17:00\"], \"tue\": [\"09:00-17:00\"], \"wed\": [\"09:00-17:00\"],"
                   + " \"thu\": [\"09:00-17:00\"], \"fri\": [\"09:00-17:00\"]}}");
    }

    /** Where the database puts a check answered {@code delay} of the desk's open time at NOW. */
    private static Instant deskAfter(String delay) throws Exception {
        return ((OffsetDateTime) DB.value("SELECT prescient.slot_for(prescient.business_after('desk', ?, ?), ?, "
                                          + "s.slot_seconds) FROM prescient.settings s", NOW, delay, NOW))
            .toInstant();
    }

    private static Instant nextCheckAt(long id) throws Exception {
        return ((OffsetDateTime) DB.value("SELECT next_check_at FROM prescient.future_job WHERE id = ?", id))
            .toInstant();
    }

    /** One check of {@code job} per key, due on Friday, by id. */
    private static Map<String, Long> schedule(String job, String... keys) throws Exception {
        DB.declareWorkerClasses(job);
        PrescientClient onFriday = new PrescientClient(() -> FRIDAY);
        Map<String, Long> ids = new LinkedHashMap<>();
        try (Connection c = DB.connect()) {
            for (String key : keys) {
                ids.put(key, onFriday.schedule(c, NewCheck.of(job, "tickets", key).at(FRIDAY)).id());
            }
        }
        return ids;
    }

    @Test
    void a_handler_answers_in_business_time() throws Exception {
        long id = schedule("bt_handler", "1").get("1");
        List<Settlement> settled = new CopyOnWriteArrayList<>();
        Worker worker = Worker.builder(DB::connect).name("bt-handler").clock(() -> NOW).onSettled(settled::add)
                              .handler("bt_handler", check -> Answer.nextInBusinessTime("desk", "4h")).build();
        try (worker) {
            assertEquals(1, worker.runUntilIdle(), "checks run");
        }
        Instant monday = deskAfter("4h");
        assertEquals(Instant.parse("2026-11-30T10:00:02Z"), monday,
                     "4h of open time from Friday 15:00:01.5 in Berlin: Monday 11:00:01.5 there, rounded up");
        assertEquals(List.of(new Settlement(id, "rescheduled", monday, null)), settled, "the settlement");
        assertEquals(monday, nextCheckAt(id), "the pending check's next time");
    }

    /**
     * A batch handler's answers: the unknown calendar and the malformed delay refuse the call that settles them
     * (the protocol's test below), and the worker settles one by one, so those two checks fail with the
     * database's reason and the others of the batch settle as answered.
     */
    @Test
    void a_bad_answer_in_business_time_fails_its_check_alone() throws Exception {
        Map<String, Long> ids = schedule("bt_batch", "desk", "nowhere", "a day", "done");
        Worker worker = Worker.builder(DB::connect).name("bt-batch").clock(() -> NOW)
                              .batchHandler("bt_batch", checks -> checks.stream().map(check ->
                                  switch (check.entityKey()) {
                                      case "desk" -> Answer.nextInBusinessTime("desk", "90m");
                                      case "nowhere" -> Answer.nextInBusinessTime("nowhere", "4h");
                                      case "a day" -> Answer.nextInBusinessTime("desk", "1d");
                                      default -> Answer.done();
                                  }).toList()).build();
        try (worker) {
            assertEquals(4, worker.runUntilIdle(), "checks run");
        }
        assertEquals(List.of("1 answer refused: check " + ids.get("nowhere")
                             + ": no calendar named 'nowhere' (prescient calendar list)"),
                     attemptsAndError(ids.get("nowhere")), "the unknown calendar's check: failed, naming it");
        Object aDay = attemptsAndError(ids.get("a day")).get(0);
        assertTrue(String.valueOf(aDay).startsWith("1 answer refused: check " + ids.get("a day")
                                                   + ": business delay '1d': write a length of open time"),
                   "the malformed delay's check: " + aDay);
        assertEquals(deskAfter("90m"), nextCheckAt(ids.get("desk")), "the good answer in business time");
        assertEquals(List.of("done"), DB.column("SELECT outcome FROM prescient.job_history WHERE id = ?",
                                                ids.get("done")), "the plain answer");
    }

    /** The protocol on its own: one bad answer in business time refuses the call, naming its check; nothing settles. */
    @Test
    void protocol_refuses_a_call_with_a_bad_answer_in_business_time() throws Exception {
        Map<String, Long> ids = schedule("bt_protocol", "good", "bad");
        try (Connection c = DB.connect()) {
            List<WorkerProtocol.Outcome> outcomes = WorkerProtocol.take(c, "bt-protocol", List.of("bt_protocol"), 10,
                                                                        Duration.ofMinutes(1), NOW)
                .stream().map(check -> new WorkerProtocol.Outcome(check, check.id() == ids.get("bad")
                    ? Answer.nextInBusinessTime("nowhere", "4h") : Answer.nextInBusinessTime("desk", "4h")))
                .toList();
            PrescientException.Refused refused = assertThrows(PrescientException.Refused.class,
                () -> WorkerProtocol.settle(c, "bt-protocol", outcomes, NOW));
            assertEquals("check " + ids.get("bad") + ": no calendar named 'nowhere' (prescient calendar list)",
                         refused.getMessage(), "the refusal");
            assertEquals(2L, DB.count("SELECT count(*) FROM prescient.future_job WHERE job = 'bt_protocol' "
                                      + "AND claimed_by = 'bt-protocol' AND check_count = 0"), "both still leased");
            WorkerProtocol.Outcome good = outcomes.stream().filter(o -> o.check().id() == ids.get("good"))
                                                  .findFirst().orElseThrow();
            assertEquals(List.of(new Settlement(ids.get("good"), "rescheduled", deskAfter("4h"), null)),
                         WorkerProtocol.settle(c, "bt-protocol", List.of(good), NOW), "the good one alone");
        }
    }

    /**
     * Settled in the handler's own transaction: the answer in business time commits with the handler's writes; a
     * refused one throws, and thrown on, fails its check with the database's reason.
     */
    @Test
    void settled_in_the_handlers_transaction_in_business_time() throws Exception {
        Map<String, Long> ids = schedule("bt_tx", "desk", "nowhere");
        Worker worker = Worker.builder(DB::connect).name("bt-tx").clock(() -> NOW)
                              .handler("bt_tx", check -> {
                                  try (Connection c = DB.connect()) {
                                      c.setAutoCommit(false);
                                      check.completeIn(c, Answer.nextInBusinessTime(check.entityKey(), "3bd"));
                                      c.commit();
                                  }
                                  return Answer.fail("not read: the check was settled in the transaction");
                              }).build();
        try (worker) {
            assertEquals(2, worker.runUntilIdle(), "checks run");
        }
        assertEquals(deskAfter("3bd"), nextCheckAt(ids.get("desk")), "three business days of the desk");
        assertEquals(List.of("1 dev.prescient.PrescientException$Refused: check " + ids.get("nowhere")
                             + ": no calendar named 'nowhere' (prescient calendar list)"),
                     attemptsAndError(ids.get("nowhere")), "the refused one: failed with the handler's exception");
    }
}
