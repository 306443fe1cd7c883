package dev.prescient;

import dev.prescient.testing.Database;
import java.time.Duration;

/**
 * A service as an application writes one, for the SIGTERM test: a worker for class {@code args[0]} whose
 * handler says it started and takes {@code args[1]} ms, stopped by its shutdown hook with a 10 s grace.
 */
public final class ShutdownHookProbe {
    public static void main(String[] args) throws Exception {
        Database db = Database.fromEnvironment();
        long ms = Long.parseLong(args[1]);
        Worker.builder(db::connect).name("probe")
              .handler(args[0], check -> {
                  System.err.println("probe: check " + check.id() + " started");
                  Thread.sleep(ms);
                  return Answer.done();
              })
              .build()
              .stopOnShutdown(Duration.ofSeconds(10))
              .start()
              .awaitTermination();
    }
}
