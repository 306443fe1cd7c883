package dev.prescient;

import dev.prescient.WorkerProtocol.Outcome;
import dev.prescient.WorkerProtocol.Refusal;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * Runs the checks of worker classes in this process (docs/workers.md): takes due checks in batches, runs
 * each class's {@link Handler} on a pool of {@code concurrency} threads, heartbeats the leases while they
 * run, settles the answers in batches, and sleeps until the next check is due or a {@code NOTIFY
 * prescient_worker} wakes it.
 * <pre>{@code
 * Worker worker = Worker.builder(dataSource)
 *     .name("shipping-1")
 *     .handler("order_unshipped", check -> Answer.nextAt(check.dueAt().plus(Duration.ofHours(3))))
 *     .concurrency(8)
 *     .build()
 *     .stopOnShutdown(Duration.ofSeconds(20))   // SIGTERM: finish what runs, give back the rest
 *     .start();
 * }</pre>
 * A handler's exception fails that check alone; the worker goes on. {@link #stop} takes nothing more, lets
 * running handlers finish within the grace period and releases what is left. The worker uses two
 * connections of its own from the source: one for the protocol's calls, one that LISTENs.
 * Logs go to {@code java.util.logging} under {@code dev.prescient.Worker}, one line per event with check ids.
 */
public final class Worker implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(Worker.class.getName());
    /** LOG, or during a JVM shutdown a logger that java.util.logging's own shutdown does not silence. */
    private volatile Logger log = LOG;
    /** The longest sleep: a notification is a hint, so the worker looks again at least this often. */
    private static final Duration MAX_SLEEP = Duration.ofSeconds(60);
    private static final Duration MAX_BACKOFF = Duration.ofSeconds(30);
    private static final String CHANNEL = "prescient_worker";

    /** Where the worker gets its connections: a {@link DataSource}'s {@code getConnection}, a pool, a lambda. */
    @FunctionalInterface
    public interface ConnectionSource {
        Connection open() throws SQLException;
    }

    @FunctionalInterface
    private interface Call<T> {
        T run(Connection connection) throws SQLException;
    }

    /** A check from its take until it is settled, released or dropped. */
    private static final class Held {
        final Check check;
        volatile boolean lost;

        Held(Check check) {
            this.check = check;
        }
    }

    private final String name;
    private final Map<String, Handler> handlers;
    private final List<String> classes;
    private final int concurrency;
    private final int batchSize;
    private final Duration lease;
    private final boolean heartbeat;
    private final Duration defaultGrace;
    private final Supplier<Instant> clock;
    private final ConnectionSource source;
    private final Consumer<Settlement> onSettled;

    private final ExecutorService pool;
    private final ScheduledExecutorService heartbeats;
    private final Map<Long, Held> held = new ConcurrentHashMap<>();
    private final Queue<Outcome> ready = new ConcurrentLinkedQueue<>();
    private final AtomicInteger busy = new AtomicInteger();
    private final Object wake = new Object();
    private boolean woken; // guarded by wake
    private final Object protocolLock = new Object();
    private Connection protocolConnection; // guarded by protocolLock
    private final Object lifecycle = new Object();
    private boolean started; // guarded by lifecycle
    private boolean heartbeatScheduled; // guarded by lifecycle
    private volatile boolean stopping;
    private volatile long graceDeadlineNanos;
    private final CountDownLatch terminated = new CountDownLatch(1);
    private Thread shutdownHook;

    private Worker(Builder b) {
        this.name = b.name;
        this.handlers = Map.copyOf(b.handlers);
        this.classes = List.copyOf(b.handlers.keySet());
        this.concurrency = b.concurrency;
        this.batchSize = b.batchSize;
        this.lease = b.lease;
        this.heartbeat = b.heartbeat;
        this.defaultGrace = b.grace;
        this.clock = b.clock;
        this.source = b.source;
        this.onSettled = b.onSettled;
        this.pool = Executors.newFixedThreadPool(concurrency, threads("handler"));
        this.heartbeats = Executors.newSingleThreadScheduledExecutor(threads("heartbeat"));
    }

    public static Builder builder(ConnectionSource source) {
        return new Builder(source);
    }

    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource::getConnection);
    }

    public String name() {
        return name;
    }

    /**
     * Starts the loop on a thread of its own (not a daemon: it keeps the JVM up until {@link #stop}) and the
     * LISTEN on another; returns at once.
     */
    public Worker start() {
        synchronized (lifecycle) {
            if (started || stopping) {
                throw new IllegalStateException("worker " + name + " was started or stopped already");
            }
            started = true;
            scheduleHeartbeats();
        }
        Thread listener = new Thread(this::listen, "prescient-" + name + "-listen");
        listener.setDaemon(true);
        listener.start();
        new Thread(this::loop, "prescient-" + name).start();
        log.info(() -> String.format("worker %s: started for %s (concurrency %d, batch %d, lease %s%s)", name,
                                     classes, concurrency, batchSize, seconds(lease),
                                     heartbeat ? "" : ", no heartbeat"));
        return this;
    }

    /**
     * Runs every check that is due now, on the calling thread's schedule, and returns how many ran once none is
     * due and none is running: for tests with a pinned clock, and for a run from cron. No LISTEN, no sleeping
     * until the next due time. Not while {@link #start}ed.
     */
    public int runUntilIdle() throws SQLException {
        synchronized (lifecycle) {
            if (started || stopping) {
                throw new IllegalStateException("worker " + name + " is started or stopped");
            }
            scheduleHeartbeats();
        }
        int ran = 0;
        while (true) {
            settleReady();
            int free = concurrency - busy.get();
            List<Check> taken = free > 0 ? take(Math.min(free, batchSize)) : List.of();
            taken.forEach(this::dispatch);
            ran += taken.size();
            if (taken.isEmpty()) {
                if (busy.get() == 0 && ready.isEmpty()) {
                    return ran;
                }
                sleep(MAX_SLEEP); // a handler's end wakes it
            }
        }
    }

    /** Registers a JVM shutdown hook (SIGTERM, SIGINT, System.exit) that stops the worker with this grace. */
    public Worker stopOnShutdown(Duration grace) {
        Logger shutdownLog = survivingLogger();
        Thread hook = new Thread(() -> {
            log = shutdownLog;
            stop(grace);
        }, "prescient-" + name + "-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        shutdownHook = hook;
        return this;
    }

    /**
     * Stops gracefully and returns when stopped: takes nothing more; lets running handlers finish within
     * {@code grace}, settling their answers; then interrupts the ones still running and releases every check it
     * holds unsettled (due again at once for another worker, no attempt counted). Calling it again waits for
     * the first call's stop.
     */
    public void stop(Duration grace) {
        boolean loopRuns;
        synchronized (lifecycle) {
            loopRuns = started;
            if (!stopping) {
                graceDeadlineNanos = System.nanoTime() + grace.toNanos();
                stopping = true;
                log.info(() -> String.format("worker %s: stopping: taking nothing more; %d running, grace %s",
                                             name, busy.get(), seconds(grace)));
            } else {
                loopRuns = true; // another caller stops it: wait for that
            }
        }
        wakeUp();
        if (!loopRuns) {
            shutdown();
        }
        try {
            if (!terminated.await(grace.toMillis() + 30_000, TimeUnit.MILLISECONDS)) {
                log.warning(() -> "worker " + name + ": did not stop within its grace and 30 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        removeShutdownHook();
    }

    /** {@link #stop} with the builder's grace period. */
    @Override
    public void close() {
        stop(defaultGrace);
    }

    /** Waits until the worker has stopped (by {@link #stop}, {@link #close} or the shutdown hook). */
    public void awaitTermination() throws InterruptedException {
        terminated.await();
    }

    // ---- the loop ----------------------------------------------------------------------------------------

    private void loop() {
        Duration backoff = Duration.ZERO;
        Duration idleFloor = IdleWait.FIRST_FLOOR;
        while (!stopping) {
            try {
                settleReady();
                int free = concurrency - busy.get();
                if (free == 0) {
                    sleep(MAX_SLEEP); // a handler's end wakes it
                    continue;
                }
                int limit = Math.min(free, batchSize);
                List<Check> taken = take(limit);
                taken.forEach(this::dispatch);
                backoff = Duration.ZERO;
                if (!taken.isEmpty()) {
                    idleFloor = IdleWait.FIRST_FLOOR;
                }
                if (taken.size() == limit) {
                    continue; // there may be more due
                }
                IdleWait idle = IdleWait.after(call(c -> WorkerProtocol.untilNextDue(c, classes, now())), idleFloor);
                idleFloor = idle.nextFloor();
                sleep(idle.sleep());
            } catch (SQLException | RuntimeException e) {
                backoff = backoff.isZero() ? Duration.ofSeconds(1) : min(backoff.multipliedBy(2), MAX_BACKOFF);
                Duration pause = backoff;
                log.warning(() -> String.format("worker %s: %s; trying again in %s", name, e, seconds(pause)));
                sleepUnlessStopping(pause);
            }
        }
        shutdown();
    }

    /**
     * How long the loop sleeps after a take that left places free, and the floor of the next such wait.
     * {@code untilDue}: until a check of its classes may be taken ({@code null}: none pending). A check due
     * later is waited for exactly, however soon: under a rate limit the next start is often a few ms away,
     * and backing off then (as this loop once did for any wait under 10 ms) left a Java worker looking once
     * a second while other workers took every start. Only a check due now yet not taken (a group whose
     * earlier check is leased elsewhere) backs off: the floor, 50 ms doubling to 1 s while it lasts; a
     * handler's end wakes the loop sooner.
     */
    record IdleWait(Duration sleep, Duration nextFloor) {
        static final Duration FIRST_FLOOR = Duration.ofMillis(50);
        static final Duration LAST_FLOOR = Duration.ofSeconds(1);

        static IdleWait after(Duration untilDue, Duration floor) {
            if (untilDue == null || untilDue.compareTo(MAX_SLEEP) > 0) {
                return new IdleWait(MAX_SLEEP, FIRST_FLOOR);
            }
            if (untilDue.isNegative() || untilDue.isZero()) {
                return new IdleWait(floor, min(floor.multipliedBy(2), LAST_FLOOR));
            }
            return new IdleWait(untilDue, FIRST_FLOOR);
        }
    }

    private List<Check> take(int limit) throws SQLException {
        List<Check> taken = call(c -> WorkerProtocol.take(c, name, classes, limit, lease, now()));
        if (!taken.isEmpty()) {
            log.fine(() -> String.format("worker %s: took %s", name, ids(taken)));
        }
        return taken;
    }

    private void dispatch(Check check) {
        Held h = new Held(check);
        held.put(check.id(), h);
        busy.incrementAndGet();
        pool.execute(() -> runHandler(h));
    }

    private void runHandler(Held h) {
        Check check = h.check;
        Answer answer;
        try {
            answer = handlers.get(check.job()).handle(check);
            if (answer == null) {
                answer = Answer.done();
            }
        } catch (Throwable t) { // the check fails, the worker goes on
            String error = t.toString();
            if (pool.isShutdown()) { // interrupted at the end of a stop's grace: it is released, not failed
                log.info(() -> String.format("worker %s: check %d (%s): interrupted after the grace: %s", name,
                                             check.id(), check.job(), error));
            } else {
                log.warning(() -> String.format("worker %s: check %d (%s): handler threw %s", name, check.id(),
                                                check.job(), error));
            }
            answer = Answer.fail(error);
        }
        ready.add(new Outcome(check, answer));
        busy.decrementAndGet();
        wakeUp();
    }

    /** Settles every answer that is ready: one worker_complete and one worker_fail call. */
    private void settleReady() throws SQLException {
        List<Outcome> batch = new ArrayList<>();
        for (Outcome o; (o = ready.poll()) != null; ) {
            Held h = held.get(o.check().id());
            if (h == null) {
                continue; // released at a stop: another worker runs it
            }
            if (h.lost) {
                held.remove(o.check().id());
                Check check = o.check();
                log.info(() -> String.format("worker %s: check %d (%s): answer dropped, its lease was lost", name,
                                             check.id(), check.job()));
                continue;
            }
            batch.add(o);
        }
        if (batch.isEmpty()) {
            return;
        }
        List<Settlement> settled;
        try {
            settled = call(c -> WorkerProtocol.settle(c, name, batch, now()));
        } catch (PrescientException.Refused refused) {
            // One answer refused the whole call (a result over 64 KiB, say): settle them one by one.
            settled = settleOneByOne(batch);
        } catch (SQLException | RuntimeException e) {
            ready.addAll(batch); // settled at the next try; a lease lost meanwhile is refused then
            throw e;
        }
        Map<Long, Check> byId = batch.stream().collect(Collectors.toMap(o -> o.check().id(), Outcome::check));
        for (Settlement s : settled) {
            held.remove(s.id());
            log(byId.get(s.id()), s);
            if (onSettled != null) {
                onSettled.accept(s);
            }
        }
    }

    private List<Settlement> settleOneByOne(List<Outcome> batch) throws SQLException {
        List<Settlement> settled = new ArrayList<>();
        for (Outcome o : batch) {
            try {
                settled.addAll(call(c -> WorkerProtocol.settle(c, name, List.of(o), now())));
            } catch (PrescientException.Refused refused) {
                // The answer cannot be stored: the check fails with the database's reason instead.
                Outcome failed = new Outcome(o.check(), Answer.fail("answer refused: " + refused.getMessage()));
                log.warning(() -> String.format("worker %s: check %d (%s): answer refused: %s", name,
                                                o.check().id(), o.check().job(), refused.getMessage()));
                settled.addAll(call(c -> WorkerProtocol.settle(c, name, List.of(failed), now())));
            }
        }
        return settled;
    }

    private void log(Check check, Settlement s) {
        String job = check == null ? "?" : check.job();
        Level level = switch (s.outcome()) {
            case "rescheduled", "done", "retried" -> Level.INFO;
            default -> Level.WARNING; // lease_lost, guards, a dead letter
        };
        log.log(level, () -> {
            StringBuilder line = new StringBuilder();
            line.append("worker ").append(name).append(": check ").append(s.id()).append(" (").append(job)
                .append("): ").append(s.outcome());
            if (s.nextCheckAt() != null) {
                line.append(", next at ").append(s.nextCheckAt());
            }
            if (s.lastError() != null) {
                line.append(": ").append(s.lastError().replace('\n', ' '));
            }
            return line.toString();
        });
    }

    // ---- heartbeats ---------------------------------------------------------------------------------------

    private void scheduleHeartbeats() {
        if (!heartbeat || heartbeatScheduled) {
            return;
        }
        heartbeatScheduled = true;
        long every = Math.max(1, lease.toMillis() / 3);
        heartbeats.scheduleAtFixedRate(this::heartbeat, every, every, TimeUnit.MILLISECONDS);
    }

    /** Extends the lease of every check held and not lost: handlers running, answers not yet settled. */
    private void heartbeat() {
        Map<Long, Long> tokens = new LinkedHashMap<>();
        held.forEach((id, h) -> {
            if (!h.lost) {
                tokens.put(id, h.check.leaseToken());
            }
        });
        if (tokens.isEmpty()) {
            return;
        }
        try {
            for (Refusal r : call(c -> WorkerProtocol.extend(c, name, tokens, lease, now()))) {
                Held h = held.get(r.id());
                if (h != null) {
                    h.lost = true;
                    log.warning(() -> String.format("worker %s: check %d (%s): lease lost: %s; its answer will be "
                                                    + "dropped", name, r.id(), h.check.job(), r.reason()));
                }
            }
        } catch (SQLException | RuntimeException e) {
            log.warning(() -> String.format("worker %s: heartbeat for %s failed: %s", name, tokens.keySet(), e));
        }
    }

    // ---- LISTEN -------------------------------------------------------------------------------------------

    private void listen() {
        Connection connection = null;
        while (!stopping) {
            try {
                if (connection == null) {
                    connection = source.open();
                    connection.setAutoCommit(true);
                    try (Statement st = connection.createStatement()) {
                        st.execute("LISTEN " + CHANNEL);
                    }
                    wakeUp(); // a notification may have gone by while it was not listening
                }
                PGNotification[] notes = connection.unwrap(PGConnection.class).getNotifications(250);
                if (notes != null) {
                    for (PGNotification n : notes) {
                        if (handlers.containsKey(n.getParameter())) {
                            wakeUp();
                            break;
                        }
                    }
                }
            } catch (SQLException | RuntimeException e) {
                log.warning(() -> String.format("worker %s: LISTEN %s failed: %s; again in 1 s", name, CHANNEL, e));
                closeQuietly(connection);
                connection = null;
                sleepUnlessStopping(Duration.ofSeconds(1));
            }
        }
        closeQuietly(connection);
    }

    // ---- stopping -----------------------------------------------------------------------------------------

    /** The end of a stop: handlers get their grace, answers are settled, the rest is released. */
    private void shutdown() {
        while (busy.get() > 0 && System.nanoTime() < graceDeadlineNanos) {
            settleQuietly();
            sleep(Duration.ofNanos(Math.max(1, graceDeadlineNanos - System.nanoTime())));
        }
        settleQuietly();
        pool.shutdownNow(); // interrupts handlers still running after the grace
        Map<Long, Long> unsettled = new LinkedHashMap<>();
        held.forEach((id, h) -> {
            if (!h.lost) {
                unsettled.put(id, h.check.leaseToken());
            }
        });
        held.clear(); // answers that still come in are dropped
        if (!unsettled.isEmpty()) {
            try {
                int released = call(c -> WorkerProtocol.release(c, name, unsettled));
                log.info(() -> String.format("worker %s: released %d of %s unsettled after the grace", name,
                                             released, unsettled.keySet()));
            } catch (SQLException | RuntimeException e) {
                log.warning(() -> String.format("worker %s: releasing %s failed (their leases will expire): %s",
                                                name, unsettled.keySet(), e));
            }
        }
        heartbeats.shutdownNow();
        synchronized (protocolLock) {
            closeQuietly(protocolConnection);
            protocolConnection = null;
        }
        log.info(() -> "worker " + name + ": stopped");
        terminated.countDown();
    }

    private void settleQuietly() {
        try {
            settleReady();
        } catch (SQLException | RuntimeException e) {
            log.warning(() -> String.format("worker %s: settling failed while stopping: %s", name, e));
        }
    }

    private void removeShutdownHook() {
        Thread hook = shutdownHook;
        if (hook != null && hook != Thread.currentThread()) {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException alreadyShuttingDown) {
                // the JVM is exiting: the hook runs, and finds the worker stopped
            }
        }
    }

    /**
     * A logger for the stop in a JVM shutdown. java.util.logging resets every named logger in a shutdown hook of
     * its own, racing ours, and the stop's lines (what was released) would be lost. An anonymous logger is not
     * reset: it gets the handlers and the level that records of this class reach now.
     */
    private static Logger survivingLogger() {
        Logger anonymous = Logger.getAnonymousLogger();
        anonymous.setUseParentHandlers(false);
        Level level = null;
        for (Logger l = LOG; l != null; l = l.getParent()) {
            if (level == null) {
                level = l.getLevel();
            }
            for (java.util.logging.Handler h : l.getHandlers()) {
                anonymous.addHandler(h);
            }
            if (!l.getUseParentHandlers()) {
                break;
            }
        }
        anonymous.setLevel(level == null ? Level.INFO : level);
        return anonymous;
    }

    // ---- plumbing -----------------------------------------------------------------------------------------

    /** One protocol call on the worker's own connection, opened when needed, dropped when broken. */
    private <T> T call(Call<T> call) throws SQLException {
        synchronized (protocolLock) {
            if (protocolConnection == null) {
                protocolConnection = source.open();
                protocolConnection.setAutoCommit(true);
            }
            try {
                return call.run(protocolConnection);
            } catch (SQLException e) {
                if (!(e instanceof PrescientException) && !isValid(protocolConnection)) {
                    closeQuietly(protocolConnection); // the next call opens another
                    protocolConnection = null;
                }
                throw e;
            }
        }
    }

    private Instant now() {
        return clock == null ? null : clock.get();
    }

    private void wakeUp() {
        synchronized (wake) {
            woken = true;
            wake.notifyAll();
        }
    }

    /** Sleeps until {@code d} passed, or a handler ended, a notification came, or a stop began. */
    private void sleep(Duration d) {
        long deadline = System.nanoTime() + d.toNanos();
        synchronized (wake) {
            try {
                while (!woken && !stopping) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        break;
                    }
                    TimeUnit.NANOSECONDS.timedWait(wake, left);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            woken = false;
        }
    }

    /** Sleeps {@code d} unless a stop begins: a pause after an error, not cut short by handlers ending. */
    private void sleepUnlessStopping(Duration d) {
        long deadline = System.nanoTime() + d.toNanos();
        while (!stopping && System.nanoTime() < deadline) {
            sleep(Duration.ofNanos(deadline - System.nanoTime()));
        }
    }

    private ThreadFactory threads(String role) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, "prescient-" + name + "-" + role + "-" + n.incrementAndGet());
            t.setDaemon(true); // the loop thread keeps the JVM up, these do not
            return t;
        };
    }

    private static boolean isValid(Connection c) {
        try {
            return c.isValid(2);
        } catch (SQLException e) {
            return false;
        }
    }

    private static void closeQuietly(Connection c) {
        if (c != null) {
            try {
                c.close();
            } catch (SQLException ignored) {
                // closing a broken connection: nothing to do
            }
        }
    }

    private static List<Long> ids(List<Check> checks) {
        return checks.stream().map(Check::id).toList();
    }

    /** "30 s", "0.6 s": durations as the logs show them. */
    private static String seconds(Duration d) {
        return java.math.BigDecimal.valueOf(d.toNanos(), 9).stripTrailingZeros().toPlainString() + " s";
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    /** Builds a {@link Worker}: at least one handler; the rest has defaults. */
    public static final class Builder {
        private final ConnectionSource source;
        private final Map<String, Handler> handlers = new LinkedHashMap<>();
        private String name = "java-" + ProcessHandle.current().pid();
        private int concurrency = 4;
        private int batchSize = 50;
        private Duration lease = Duration.ofSeconds(30);
        private boolean heartbeat = true;
        private Duration grace = Duration.ofSeconds(30);
        private Supplier<Instant> clock;
        private Consumer<Settlement> onSettled;

        private Builder(ConnectionSource source) {
            this.source = Objects.requireNonNull(source, "source");
        }

        /** The worker's name, recorded on its leases (default {@code java-<pid>}). */
        public Builder name(String name) {
            this.name = Objects.requireNonNull(name, "name");
            return this;
        }

        /** The handler for one worker class (declared with {@code prescient jobs add CLASS --worker}). */
        public Builder handler(String job, Handler handler) {
            if (handlers.putIfAbsent(Objects.requireNonNull(job, "job"), Objects.requireNonNull(handler)) != null) {
                throw new IllegalArgumentException("a handler for '" + job + "' is registered already");
            }
            return this;
        }

        /** How many handlers run at once (default 4): the size of the handler pool. */
        public Builder concurrency(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("concurrency " + n + " is under 1");
            }
            this.concurrency = n;
            return this;
        }

        /** At most how many checks one take leases (default 50; never more than the free places). */
        public Builder batchSize(int n) {
            if (n < 1 || n > 10_000) {
                throw new IllegalArgumentException("batch size " + n + " is not within 1 to 10000");
            }
            this.batchSize = n;
            return this;
        }

        /** How long a take leases a check (default 30 s); heartbeats renew it every third of it. */
        public Builder lease(Duration lease) {
            if (lease.compareTo(Duration.ofMillis(100)) < 0 || lease.compareTo(Duration.ofDays(1)) > 0) {
                throw new IllegalArgumentException("lease " + lease + " is not within 0.1 s to 1 day");
            }
            this.lease = lease;
            return this;
        }

        /** Heartbeats on (default) or off: off, a handler that outlives its lease loses the check. */
        public Builder heartbeat(boolean on) {
            this.heartbeat = on;
            return this;
        }

        /** The grace period {@link Worker#close} gives running handlers (default 30 s). */
        public Builder grace(Duration grace) {
            this.grace = Objects.requireNonNull(grace, "grace");
            return this;
        }

        /** The worker's "now", passed as {@code p_now}; without one the database's clock decides. Tests pin it. */
        public Builder clock(Supplier<Instant> clock) {
            this.clock = clock;
            return this;
        }

        public Builder clock(Clock clock) {
            return clock(clock::instant);
        }

        /** Called with every settlement (on the loop's thread; keep it quick): metrics, tests, alerts. */
        public Builder onSettled(Consumer<Settlement> listener) {
            this.onSettled = listener;
            return this;
        }

        public Worker build() {
            if (handlers.isEmpty()) {
                throw new IllegalStateException("a worker needs at least one handler");
            }
            return new Worker(this);
        }
    }
}
