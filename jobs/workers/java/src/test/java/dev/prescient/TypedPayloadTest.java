package dev.prescient;

import static dev.prescient.TestSupport.DB;
import static dev.prescient.TestSupport.T;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** Typed payloads: a record written by NewCheck.payload(Record) and read by Check.payloadAs(Class). */
final class TypedPayloadTest {
    enum Channel { EMAIL, SMS }

    record Line(String sku, int quantity) {
    }

    record OrderPayload(long orderId, Instant placedAt, Channel channel, BigDecimal total, List<Line> lines,
                        Map<String, String> tags, Set<Integer> codes, UUID reference, Duration grace, LocalDate due,
                        String note) {
    }

    record Sparse(long orderId, Integer retries) {
    }

    private static final OrderPayload ORDER = new OrderPayload(
        42, Instant.parse("2026-11-27T09:30:00Z"), Channel.SMS, new BigDecimal("12.5"),
        List.of(new Line("A-1", 2), new Line("B \"7\"", 1)), Map.of("source", "web"), Set.of(3, 1),
        UUID.fromString("3f2c1a9e-8b7d-4e6f-9a0b-1c2d3e4f5a6b"), Duration.ofMinutes(90), LocalDate.of(2026, 12, 1),
        null);

    /** Through the database: the record in, the same record out in the handler; a mismatch fails its check. */
    @Test
    void a_record_payload_round_trips_and_a_mismatch_fails_its_check() throws Exception {
        DB.declareWorkerClasses("typed_a");
        PrescientClient client = new PrescientClient(() -> T);
        long typed;
        long mismatched;
        try (Connection c = DB.connect()) {
            typed = client.schedule(c, NewCheck.of("typed_a", "orders", "42").payload(ORDER)).id();
            mismatched = client.schedule(c, NewCheck.of("typed_a", "orders", "43")
                                                    .payload(Map.of("orderId", "forty-three"))).id();
        }
        assertEquals(List.of("2026-11-27T09:30:00Z SMS 2 PT1H30M"),
                     DB.column("SELECT concat_ws(' ', payload->>'placedAt', payload->>'channel', "
                               + "payload->'lines'->0->'quantity', payload->>'grace') FROM prescient.future_job "
                               + "WHERE id = ?", typed), "the payload as JSON");
        List<OrderPayload> read = new CopyOnWriteArrayList<>();
        Worker worker = Worker.builder(DB::connect).name("typed").clock(() -> T.plusSeconds(1))
                              .handler("typed_a", check -> {
                                  read.add(check.payloadAs(OrderPayload.class));
                                  return Answer.done();
                              }).build();
        try (worker) {
            assertEquals(2, worker.runUntilIdle(), "checks run");
        }
        assertEquals(List.of(ORDER), read, "the record the handler read");
        Object error = DB.value("SELECT last_error FROM prescient.future_job WHERE id = ?", mismatched);
        assertTrue(String.valueOf(error).contains("check " + mismatched + ": payload field 'OrderPayload.orderId': "
                                                  + "\"forty-three\" is not a long"), String.valueOf(error));
    }

    /** Fields as the other clients write them (snake_case, any offset), extra fields ignored; what cannot fit. */
    @Test
    void snake_case_fields_are_read_and_what_does_not_fit_is_refused_by_name() {
        Check other = check("{\"order_id\": 7, \"retries\": null, \"extra\": [1]}");
        assertEquals(new Sparse(7, null), other.payloadAs(Sparse.class));
        assertEquals(Instant.parse("2026-11-27T08:30:00Z"),
                     check("{\"placed_at\": \"2026-11-27T09:30:00+01:00\", \"order_id\": 1}")
                         .payloadAs(OrderPayload.class).placedAt(), "an offset other than Z");
        Map<String, String> refusals = Map.of(
            "{}", "payload field 'Sparse.order_id' is missing: long needs a value",
            "{\"order_id\": 1.5}", "payload field 'Sparse.order_id': 1.5 is not a long",
            "{\"order_id\": 1, \"retries\": 3000000000}",
            "payload field 'Sparse.retries': 3000000000 is not a java.lang.Integer");
        refusals.forEach((payload, named) -> {
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                                                            () -> check(payload).payloadAs(Sparse.class));
            assertEquals("check 1: " + named, refused.getMessage(), payload);
        });
        IllegalArgumentException channel = assertThrows(IllegalArgumentException.class,
            () -> check("{\"order_id\": 1, \"channel\": \"FAX\"}").payloadAs(OrderPayload.class));
        assertTrue(channel.getMessage().contains("'OrderPayload.channel': \"FAX\" is not a"), channel.getMessage());
    }

    /** payload(Map) takes java.time values (it refused an Instant): ISO-8601 text. */
    @Test
    void a_map_payload_takes_instants() {
        assertEquals("{\"at\":\"2026-11-27T09:30:00Z\"}",
                     NewCheck.of("typed_a", "x", "1").payload(Map.of("at", Instant.parse("2026-11-27T09:30:00Z")))
                             .payload());
    }

    private static Check check(String payload) {
        return new Check(1, "typed_a", "orders", "1", null, null, payload, T, T, 0, 0, null, null, null, 1, T);
    }
}
