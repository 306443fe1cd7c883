package dev.prescient;

import dev.prescient.testing.Database;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;

/**
 * What the client's tests share: the database with-database.sh made (PRESCIENT_DATABASE_URL), a pinned "now",
 * waiting, and child JVMs. Each test uses worker classes of its own, so the tests share one database without
 * seeing each other's checks.
 */
final class TestSupport {
    static final Database DB = Database.fromEnvironment();
    /** A pinned "now" on the slot grid: the hour that began, so T + 3 h is a slot boundary too. */
    static final Instant T = Instant.now().truncatedTo(ChronoUnit.HOURS);
    /** The W3C Trace Context example: a caller's trace, its span as the parent id. */
    static final String TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    private TestSupport() {
    }

    /** A timestamptz as the database's rows give it back (Database.column): UTC. */
    static OffsetDateTime at(Instant t) {
        return OffsetDateTime.ofInstant(t, ZoneOffset.UTC);
    }

    /** A pending check's "attempts last_error". */
    static List<Object> attemptsAndError(long id) throws SQLException {
        return DB.column("SELECT attempts || ' ' || last_error FROM prescient.future_job WHERE id = ?", id);
    }

    @FunctionalInterface
    interface Condition {
        boolean holds() throws Exception;
    }

    static void waitFor(Condition condition, Duration limit, String what) throws Exception {
        long deadline = System.nanoTime() + limit.toNanos();
        while (!condition.holds()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + limit + ": " + what);
            }
            Thread.sleep(50);
        }
    }

    /** A JVM running {@code mainClass} on the tests' class path (the kill test's worker, the shutdown probe). */
    static ProcessBuilder java(String mainClass, String... args) {
        List<String> command = new ArrayList<>(List.of(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC", "-Dorg.slf4j.simpleLogger.showThreadName=false",
            "-cp", System.getProperty("java.class.path"), mainClass));
        command.addAll(List.of(args));
        return new ProcessBuilder(command);
    }
}
