package dev.prescient;

import static dev.prescient.TestSupport.DB;
import static dev.prescient.TestSupport.T;
import static dev.prescient.TestSupport.attemptsAndError;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Effects exactly once: a check settled in its handler's own transaction. */
final class InTransactionTest {
    /**
     * Effects exactly once: a handler settles its check in its own transaction (completeIn, failIn). Committed,
     * the worker settles it no more (one settlement each); rolled back, or in a savepoint rolled back, the check
     * is still leased and fails: with the handler's exception if it threw, else saying the settlement did not
     * take effect. The effects of the rolled-back ones are gone with their settlements.
     */
    @Test
    void settled_in_the_handlers_transaction() throws Exception {
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
                                      assertThrows(IllegalArgumentException.class,
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
            assertTrue(String.valueOf(error).startsWith("the handler's settlement in its own transaction did not take "
                                                   + "effect"), kind + ": " + error);
        }
        assertThrows(IllegalStateException.class, () -> {
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
    @Test
    void a_lease_lost_rolls_the_handlers_transaction_back() throws Exception {
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
        assertTrue(thrown.size() == 1 && thrown.get(0) instanceof LeaseLostException, "the handler was told: " + thrown);
        assertEquals(List.of(id + " lease_lost"), settled.stream().map(st -> st.id() + " " + st.outcome()).toList(),
                     "the worker's settlements");
        assertEquals(0L, DB.count("SELECT count(*) FROM txlost_effects"), "the effect rolled back");
        assertEquals(List.of("b 0"), DB.column("SELECT claimed_by || ' ' || attempts FROM prescient.future_job "
                                               + "WHERE id = ?", id), "b's lease, untouched");
    }
}
