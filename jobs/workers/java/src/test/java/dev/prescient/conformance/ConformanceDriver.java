package dev.prescient.conformance;

import dev.prescient.Answer;
import dev.prescient.Check;
import dev.prescient.Json;
import dev.prescient.Worker;
import dev.prescient.testing.Database;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeParseException;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * The Java conformance driver (jobs/workers/conformance): the client's own {@link Worker}, with one handler
 * for every class named, driven by the check's payload.
 * <pre>
 * conformance-driver work --name NAME --classes C1[,C2...] [--concurrency 4] [--batch 1000] [--prefetch-ms 100]
 *                         [--lease-seconds 2] [--no-heartbeat] [--grace-seconds 10]
 * conformance-driver drain --classes C1[,C2...] [--concurrency 4] [--batch 1000] [--prefetch-ms 100]
 *                          [--batch-handler]
 * </pre>
 * work: SIGTERM stops it the way an application's worker stops ({@link Worker#stopOnShutdown}); it then exits 0.
 * drain (scripts/bench.sh): no-op handlers (or one no-op batch handler per class) until nothing is due, then
 * prints how fast the checks went. Options left out are the worker's defaults.
 */
public final class ConformanceDriver {
    private final String workerName;
    private final Database db;
    /**
     * The ledger's own session, autocommitted: the run is recorded as it happens. Opened when needed, dropped
     * when a statement on it fails: a session cut (a failover) must not fail every later run.
     */
    private Connection ledger; // guarded by this

    private ConformanceDriver(String workerName, Database db) {
        this.workerName = workerName;
        this.db = db;
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 0 || !(args[0].equals("work") || args[0].equals("drain"))) {
            usage("the commands are work and drain");
        }
        boolean drain = args[0].equals("drain");
        String name = null;
        List<String> classes = List.of();
        Integer concurrency = null;
        Integer batch = null;
        Long prefetchMs = null;
        boolean batchHandler = false;
        double leaseSeconds = 2;
        boolean heartbeat = true;
        double graceSeconds = 10;
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--name" -> name = value(args, ++i);
                case "--classes" -> classes = Arrays.asList(value(args, ++i).split(","));
                case "--concurrency" -> concurrency = Integer.parseInt(value(args, ++i));
                case "--batch" -> batch = Integer.parseInt(value(args, ++i));
                case "--prefetch-ms" -> prefetchMs = Long.parseLong(value(args, ++i));
                case "--batch-handler" -> batchHandler = true;
                case "--lease-seconds" -> leaseSeconds = Double.parseDouble(value(args, ++i));
                case "--grace-seconds" -> graceSeconds = Double.parseDouble(value(args, ++i));
                case "--no-heartbeat" -> heartbeat = false;
                default -> usage("unknown option " + args[i]);
            }
        }
        if ((name == null && !drain) || classes.isEmpty() || (batchHandler && !drain)) {
            usage("work needs --name, both need --classes, --batch-handler is for drain");
        }
        Database db = Database.fromEnvironment();
        Worker.Builder builder = Worker.builder(db::connect);
        if (name != null) {
            builder.name(name);
        }
        if (concurrency != null) {
            builder.concurrency(concurrency);
        }
        if (batch != null) {
            builder.batchSize(batch);
        }
        if (prefetchMs != null) {
            builder.prefetch(Duration.ofMillis(prefetchMs));
        }
        if (drain) {
            System.exit(drain(builder, classes, batchHandler));
        }
        builder.lease(Duration.ofMillis((long) (leaseSeconds * 1000))).heartbeat(heartbeat);
        ConformanceDriver driver = new ConformanceDriver(name, db);
        for (String job : classes) {
            builder.handler(job, driver::run);
        }
        Worker worker = builder.build().stopOnShutdown(Duration.ofMillis((long) (graceSeconds * 1000)));
        // SIGTERM ends a JVM with status 143; the contract says 0 after a graceful stop. This hook waits for the
        // worker's own hook to finish the stop, then ends the JVM with 0.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                worker.awaitTermination();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            System.err.flush();
            Runtime.getRuntime().halt(0);
        }, "conformance-exit"));
        worker.start();
        worker.awaitTermination();
    }

    /** No-op handlers until nothing is due (Worker#runUntilIdle); prints the rate. */
    private static int drain(Worker.Builder builder, List<String> classes, boolean batchHandler) throws SQLException {
        builder.onSettled(s -> {
            if (!s.outcome().equals("done")) {
                System.err.printf("check %d: %s: %s%n", s.id(), s.outcome(), s.lastError());
            }
        });
        for (String job : classes) {
            if (batchHandler) {
                builder.batchHandler(job, checks -> java.util.Collections.nCopies(checks.size(), Answer.done()));
            } else {
                builder.handler(job, check -> Answer.done());
            }
        }
        try (Worker worker = builder.build()) {
            long began = System.nanoTime();
            int count = worker.runUntilIdle();
            double seconds = (System.nanoTime() - began) / 1e9;
            System.out.printf("drained %d checks in %.3f s: %.0f checks/s%n", count, seconds, count / seconds);
        }
        return 0;
    }

    private Answer run(Check check) throws SQLException, InterruptedException {
        record(check);
        Map<String, Object> payload = check.payloadMap();
        if (payload.get("sleep_ms") instanceof Number ms && ms.longValue() > 0) {
            Thread.sleep(ms.longValue());
        }
        Object answer = payload.getOrDefault("answer", "done");
        return switch (String.valueOf(answer)) {
            case "next" -> {
                double seconds = payload.get("next_seconds") instanceof Number n ? n.doubleValue() : 60;
                yield Answer.nextAt(check.dueAt().plusNanos((long) (seconds * 1e9)));
            }
            case "at" -> Answer.nextAt(parseTime(String.valueOf(payload.get("at"))));
            case "error" -> Answer.fail(payload.get("error") instanceof String e ? e : "conformance error");
            case "result" -> payload.containsKey("result") ? Answer.doneWithResult(Json.write(payload.get("result")))
                                                           : Answer.done();
            case "done" -> Answer.done();
            default -> Answer.fail("conformance driver: unknown answer " + Json.write(answer));
        };
    }

    /** Records the run in conformance_ledger; a failure fails the run (it is tried again) and drops the session. */
    private synchronized void record(Check check) throws SQLException {
        if (ledger == null) {
            ledger = db.connect();
        }
        try (PreparedStatement st = ledger.prepareStatement(
                 "INSERT INTO conformance_ledger (check_id, worker, language, due_at, check_count) "
                 + "VALUES (?, ?, 'java', ?, ?)")) {
            st.setLong(1, check.id());
            st.setString(2, workerName);
            st.setObject(3, OffsetDateTime.ofInstant(check.dueAt(), ZoneOffset.UTC));
            st.setInt(4, check.checkCount());
            st.executeUpdate();
        } catch (SQLException e) {
            try {
                ledger.close();
            } catch (SQLException ignored) {
                // a broken session: closing it is all there is to do
            }
            ledger = null;
            throw e;
        }
    }

    /** ISO-8601 with an offset or Z; PostgreSQL's text form (a space for the T) is accepted too. */
    static Instant parseTime(String text) {
        String iso = text.trim().replace(' ', 'T');
        try {
            return OffsetDateTime.parse(iso).toInstant();
        } catch (DateTimeParseException e) {
            return Instant.parse(iso);
        }
    }

    private static String value(String[] args, int i) {
        if (i >= args.length) {
            usage(args[i - 1] + " needs a value");
        }
        return args[i];
    }

    private static void usage(String problem) {
        System.err.println("conformance-driver: " + problem + "\nusage: conformance-driver work|drain [--name NAME] "
                           + "--classes C1[,C2...] [--concurrency 4] [--batch 1000] [--prefetch-ms 100] "
                           + "[--lease-seconds 2] [--no-heartbeat] [--grace-seconds 10] [--batch-handler (drain)]");
        System.exit(2);
    }
}
