package dev.prescient;

import dev.prescient.WorkerProtocol.Outcome;
import dev.prescient.WorkerProtocol.Refusal;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
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
 * running handlers finish within the grace period and releases what is left. The worker uses three
 * connections of its own from the source: one for takes (and the protocol's other calls), one for settlements
 * and heartbeats (settlements run on a thread of their own, beside the next take), one that LISTENs.
 * Logs go to SLF4J under {@code dev.prescient.Worker}, one line per event with check ids.
 */
public final class Worker implements AutoCloseable {
    private static final Log LOG = new Log(Worker.class);
    /** The longest sleep: a notification is a hint, so the worker looks again at least this often. */
    private static final Duration MAX_SLEEP = Duration.ofSeconds(60);
    // After a failed call (the database gone: a restart, a failover): the first try again at once (a failover
    // leaves the pool's sessions stale while a new one would work), then this wait doubling to the cap, so that
    // the first try after a new leader is elected comes within the cap of it (docs/operations.md, "High
    // availability"), as the daemon and the other clients do.
    static final Duration FIRST_RETRY_WAIT = Duration.ofMillis(250);
    static final Duration MAX_RETRY_WAIT = Duration.ofSeconds(1);
    /** The defaults of the batch size and the prefetch, chosen by measurement (README.md, "Speed"). */
    public static final int DEFAULT_BATCH_SIZE = 1000;
    public static final Duration DEFAULT_PREFETCH = Duration.ofMillis(100);
    private static final String CHANNEL = "prescient_worker";
    /**
     * How long the listener waits for a notification before it looks again. A stop ends the wait at once (by
     * aborting its connection), so this only bounds an idle worker's wake-ups: at 250 ms they were most of
     * its CPU while it waited (docs/performance.md).
     */
    private static final int LISTEN_WAIT_MILLIS = 10_000;
    /** How long answers wait to be settled together, and a small take to be made a bigger one. */
    private static final Duration FLUSH = Duration.ofMillis(5);

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
        final InTransaction link;
        volatile boolean lost;
        volatile boolean raised; // its handler threw: its answer is the exception's text

        Held(Check check, InTransaction link) {
            this.check = check;
            this.link = link;
        }
    }

    private final String name;
    private final Map<String, Handler> handlers;
    private final Map<String, BatchHandler> batchHandlers;
    private final List<String> classes;
    /** The classes whose handlers came with a policy: declared before the first take. */
    private final Map<String, Policy> policies;
    /** The classes were declared and found to be worker classes: once per worker. */
    private volatile boolean classesReady;
    private final int concurrency;
    private final int batchSize;
    private final Duration prefetch;
    private final Duration lease;
    private final boolean heartbeat;
    private final Duration defaultGrace;
    private final Supplier<Instant> clock;
    private final ConnectionSource source;
    private final Consumer<Settlement> onSettled;
    private final WorkerMetrics metrics;

    private final ExecutorService pool;
    private final ScheduledExecutorService heartbeats;
    private final Map<Long, Held> held = new ConcurrentHashMap<>();
    private final Queue<Outcome> ready = new ConcurrentLinkedQueue<>();
    /** Handler calls running (a batch handler's call is one): the places taken of {@code concurrency}. */
    private final AtomicInteger busy = new AtomicInteger();
    /** Checks taken and not started yet, in the order taken: a handler thread takes the first when free. */
    private final Deque<Held> waiting = new ArrayDeque<>(); // guarded by itself
    /** The handlers' mean time per check so far (a moving average), in ns; 0 before one has ended. */
    private volatile double perCheckNanos;
    /** The loop's: since when answers wait to be settled, and since when a small take was put off (0: not). */
    private long readySince;
    private long roomSince;
    private final Object wake = new Object();
    private boolean woken; // guarded by wake
    /** Takes, next due times, releases, declarations. */
    private final Session protocol = new Session();
    /**
     * Settlements, on a connection and a thread ({@code settler}) of their own: a take and the settlement of the
     * answers before it run at once, on two backends (a drain spends most of its time in these two calls). The
     * heartbeats' too.
     */
    private final Session settlements = new Session();
    private final ExecutorService settler;
    /** The settlement running on the settler, or null; set and cleared by the loop (or a stop after it). */
    private volatile CompletableFuture<Void> settlement;
    /** The loop's: the last settlement failed; nothing is taken until its answers are settled. */
    private boolean settlementFailed;
    private final Object lifecycle = new Object();
    private boolean started; // guarded by lifecycle
    private boolean heartbeatScheduled; // guarded by lifecycle
    private volatile boolean stopping;
    private volatile long graceDeadlineNanos;
    /** The listener's connection, while it is open: a stop aborts it, to end the listener's wait. */
    private volatile Connection listening;
    private final CountDownLatch terminated = new CountDownLatch(1);
    private Thread shutdownHook;

    private Worker(Builder b) {
        this.name = b.name;
        this.handlers = Map.copyOf(b.handlers);
        this.batchHandlers = Map.copyOf(b.batchHandlers);
        List<String> all = new ArrayList<>(b.handlers.keySet());
        all.addAll(b.batchHandlers.keySet());
        this.classes = List.copyOf(all);
        this.policies = new LinkedHashMap<>(b.policies);
        this.concurrency = b.concurrency;
        this.batchSize = b.batchSize;
        this.prefetch = b.prefetch;
        this.lease = b.lease;
        this.heartbeat = b.heartbeat;
        this.defaultGrace = b.grace;
        this.clock = b.clock;
        this.source = b.source;
        this.onSettled = b.onSettled;
        this.metrics = b.metrics;
        this.pool = Executors.newFixedThreadPool(concurrency, threads("handler"));
        this.heartbeats = Executors.newSingleThreadScheduledExecutor(threads("heartbeat"));
        this.settler = Executors.newSingleThreadExecutor(threads("settle"));
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
     * Declares the classes whose handlers came with a policy, then starts the loop on a thread of its own (not a
     * daemon: it keeps the JVM up until {@link #stop}) and the LISTEN on another; returns at once. A class that is
     * not a worker class (unknown, or a runner's) and a declaration the database refuses (a bad policy) are
     * thrown ({@link PrescientException.Refused}), and the worker does not start.
     */
    public Worker start() throws SQLException {
        refuseIfStartedOrStopped("was started or stopped already");
        prepareClasses();
        synchronized (lifecycle) {
            refuseIfStartedOrStopped("was started or stopped already");
            started = true;
            scheduleHeartbeats();
        }
        Thread listener = new Thread(this::listen, "prescient-" + name + "-listen");
        listener.setDaemon(true);
        listener.start();
        new Thread(this::loop, "prescient-" + name).start();
        LOG.info(() -> String.format("worker %s: started for %s (concurrency %d, batch %d, prefetch %s, lease %s%s)",
                                     name, classes, concurrency, batchSize, seconds(prefetch), seconds(lease),
                                     heartbeat ? "" : ", no heartbeat"));
        return this;
    }

    /**
     * Runs every check that is due now, on the calling thread's schedule, and returns how many ran once none is
     * due and none is running: for tests with a pinned clock, and for a run from cron. No LISTEN, no sleeping
     * until the next due time. Not while {@link #start}ed.
     */
    public int runUntilIdle() throws SQLException {
        refuseIfStartedOrStopped("is started or stopped");
        prepareClasses();
        synchronized (lifecycle) {
            refuseIfStartedOrStopped("is started or stopped");
            scheduleHeartbeats();
        }
        int ran = 0;
        while (true) {
            settleWhenDue();
            List<Check> taken = takeIfWorthIt();
            taken.forEach(this::dispatch);
            ran += taken.size();
            if (taken.isEmpty()) {
                if (busy.get() == 0 && waitingCount() == 0 && ready.isEmpty() && settlement == null) {
                    return ran;
                }
                sleep(untilFlush(MAX_SLEEP)); // a handler's or a settlement's end wakes it
            }
        }
    }

    private void refuseIfStartedOrStopped(String what) {
        synchronized (lifecycle) {
            if (started || stopping) {
                throw new IllegalStateException("worker " + name + " " + what);
            }
        }
    }

    /**
     * Once: declares each class that has a policy on its handler ({@link WorkerClasses#declare}), then asks the
     * database when the classes' next check is due, which refuses a class that is not a worker class: an unknown
     * class (a typo, a class not declared yet) stops the start instead of a loop that retries forever.
     */
    private void prepareClasses() throws SQLException {
        if (classesReady) {
            return;
        }
        for (Map.Entry<String, Policy> e : policies.entrySet()) {
            String status = protocol.call(c -> WorkerClasses.declare(c, e.getKey(), e.getValue()));
            LOG.info(() -> String.format("worker %s: class %s declared (%s), %s", name, e.getKey(), status,
                                         e.getValue()));
        }
        protocol.call(c -> WorkerProtocol.untilNextDue(c, classes, now()));
        classesReady = true;
    }

    /** Registers a JVM shutdown hook (SIGTERM, SIGINT, System.exit) that stops the worker with this grace. */
    public Worker stopOnShutdown(Duration grace) {
        Thread hook = new Thread(() -> stop(grace), "prescient-" + name + "-shutdown");
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
                LOG.info(() -> String.format("worker %s: stopping: taking nothing more; %d running, grace %s",
                                             name, busy.get(), seconds(grace)));
            } else {
                loopRuns = true; // another caller stops it: wait for that
            }
        }
        wakeUp();
        stopListening();
        if (!loopRuns) {
            shutdown();
        }
        try {
            if (!terminated.await(grace.toMillis() + 30_000, TimeUnit.MILLISECONDS)) {
                LOG.warn(() -> "worker " + name + ": did not stop within its grace and 30 s");
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
                settleWhenDue();
                Room room = room();
                if (!room.worthATake(roomSince)) {
                    putOff(room);
                    sleep(untilFlush(MAX_SLEEP)); // a handler's end wakes it
                    continue;
                }
                roomSince = 0;
                List<Check> taken = take(room.want());
                taken.forEach(this::dispatch);
                backoff = Duration.ZERO;
                if (!taken.isEmpty()) {
                    idleFloor = IdleWait.FIRST_FLOOR;
                }
                if (taken.size() == room.want()) {
                    continue; // there may be more due
                }
                IdleWait idle = IdleWait.after(protocol.call(c -> WorkerProtocol.untilNextDue(c, classes, now())),
                                               idleFloor);
                idleFloor = idle.nextFloor();
                sleep(untilFlush(idle.sleep()));
            } catch (SQLException | RuntimeException e) {
                Duration pause = backoff;
                backoff = nextRetryWait(backoff);
                LOG.warn(() -> String.format("worker %s: %s; trying again in %s", name, e, seconds(pause)));
                sleepUnlessStopping(pause);
            }
        }
        shutdown();
    }

    /**
     * How many checks a take asks for ({@code want}), and how many the worker can start soon: its free places,
     * and the places its running handlers will have freed within {@code prefetch}, by their mean time per
     * check so far (none before a handler has ended): fast handlers get a batch, slow ones a free place at a
     * time, so a worker does not hold checks another worker could start sooner. Both at most the batch size.
     * None while a batch of answers waits for the settlement running (takes would outrun settlements), nor
     * after a settlement failed until its answers are settled (as when the loop settled on its own thread).
     */
    private Room room() {
        if (settlementFailed || (settlement != null && ready.size() >= batchSize)) {
            return new Room(0, 0); // the settlement's end, or the flush delay, wakes the loop
        }
        int soon = concurrency - busy.get();
        double perCheck = perCheckNanos;
        if (perCheck > 0 && !prefetch.isZero()) {
            soon += (int) Math.min(batchSize, concurrency * (prefetch.toNanos() / perCheck));
        }
        soon = Math.min(soon, batchSize);
        return new Room(soon - waitingCount(), soon);
    }

    /** The checks a take brought, if one is worth its call now (else none: it is put off). */
    private List<Check> takeIfWorthIt() throws SQLException {
        Room room = room();
        if (!room.worthATake(roomSince)) {
            putOff(room);
            return List.of();
        }
        roomSince = 0;
        return take(room.want());
    }

    /**
     * A take put off for more room waits at most a flush delay, from the first time it was. With no room at all
     * nothing is put off: the loop sleeps until a handler's or a settlement's end, not a flush delay (whose
     * time, once past, would have it look again at once, over and over).
     */
    private void putOff(Room room) {
        if (room.want() <= 0) {
            roomSince = 0;
        } else if (roomSince == 0) {
            roomSince = System.nanoTime();
        }
    }

    /**
     * A take is worth its call when it asks for at least half of what could start soon, or when less has waited
     * a flush delay for more room (so a busy queue is taken in batches, not a check at a time).
     */
    record Room(int want, int soon) {
        boolean worthATake(long putOffSince) {
            return want > 0 && (want * 2 >= soon || (putOffSince != 0 && elapsed(putOffSince) >= FLUSH.toNanos()));
        }
    }

    /**
     * Answers wait for more at most {@link #FLUSH}, or until a batch of them is ready, to be settled in one call
     * each of worker_complete and worker_fail, on the settler, while the loop goes on to its next take. One
     * settlement runs at a time; its end wakes the loop.
     */
    private void settleWhenDue() throws SQLException {
        if (!settlementEnded() || ready.isEmpty()) {
            return;
        }
        if (readySince == 0) {
            readySince = System.nanoTime();
        }
        if (ready.size() >= batchSize || elapsed(readySince) >= FLUSH.toNanos() || waitingCount() == 0) {
            readySince = 0;
            // Taken from ready here, not on the settler: the answers that come meanwhile are the next take's room.
            List<Outcome> answers = pollReady();
            CompletableFuture<Void> running = CompletableFuture.runAsync(() -> {
                try {
                    settle(answers);
                } catch (SQLException e) {
                    throw new CompletionException(e);
                }
            }, settler);
            settlement = running;
            running.whenComplete((ok, e) -> wakeUp());
        }
    }

    /**
     * Whether no settlement runs (one that ended is cleared). One that failed is thrown here, to the loop, as when
     * the loop settled on its own thread: it pauses, and the answers, back in {@code ready}, are settled again.
     */
    private boolean settlementEnded() throws SQLException {
        CompletableFuture<Void> running = settlement;
        if (running == null) {
            return true;
        }
        if (!running.isDone()) {
            return false;
        }
        settlement = null;
        settlementFailed = running.isCompletedExceptionally();
        try {
            running.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof SQLException sql) {
                throw sql;
            }
            if (e.getCause() instanceof Error error) {
                throw error;
            }
            throw (RuntimeException) e.getCause();
        }
        return true;
    }

    /** {@code d}, or less: until answers waiting or a take put off are due. */
    private Duration untilFlush(Duration d) {
        long left = d.toNanos();
        for (long since : new long[] {ready.isEmpty() ? 0 : readySince, roomSince}) {
            if (since != 0) {
                left = Math.min(left, FLUSH.toNanos() - elapsed(since));
            }
        }
        return Duration.ofNanos(Math.max(left, 1));
    }

    private static long elapsed(long sinceNanos) {
        return System.nanoTime() - sinceNanos;
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
        List<Check> taken = protocol.call(c -> WorkerProtocol.take(c, name, classes, limit, lease, now()));
        report(m -> m.taken(limit, taken.size()));
        if (!taken.isEmpty()) {
            LOG.debug(() -> String.format("worker %s: took %s", name, ids(taken)));
        }
        return taken;
    }

    private void dispatch(Check check) {
        InTransaction link = new InTransaction(name, this::now);
        check.heldUnder(link);
        Held h = new Held(check, link);
        held.put(check.id(), h);
        synchronized (waiting) {
            waiting.add(h);
        }
        pool.execute(this::runNext);
    }

    private int waitingCount() {
        synchronized (waiting) {
            return waiting.size();
        }
    }

    /**
     * The next check waiting, or for a batch handler's class the checks of that class waiting (at most the batch
     * size); none once a stop began (they are given back).
     */
    private List<Held> nextToRun() {
        synchronized (waiting) {
            Held first = stopping ? null : waiting.poll();
            if (first == null) {
                return List.of();
            }
            List<Held> run = new ArrayList<>(List.of(first));
            if (batchHandlers.containsKey(first.check.job())) {
                for (var it = waiting.iterator(); it.hasNext() && run.size() < batchSize; ) {
                    Held other = it.next();
                    if (other.check.job().equals(first.check.job())) {
                        run.add(other);
                        it.remove();
                    }
                }
            }
            return run;
        }
    }

    /** A handler thread's task: runs what waits first (one check, or a batch handler's checks). */
    private void runNext() {
        List<Held> run = nextToRun();
        if (run.isEmpty()) {
            return;
        }
        busy.incrementAndGet();
        long began = System.nanoTime();
        BatchHandler batchHandler = batchHandlers.get(run.get(0).check.job());
        List<Answer> answers = batchHandler == null ? List.of(runHandler(run.get(0)))
                                                    : runBatchHandler(batchHandler, run);
        long took = elapsed(began);
        boolean failed = run.stream().anyMatch(h -> h.raised);
        report(m -> m.handled(run.get(0).check.job(), run.size(), Duration.ofNanos(took), failed));
        double perCheck = (double) took / run.size();
        double mean = perCheckNanos;
        perCheckNanos = mean == 0 ? perCheck : 0.7 * mean + 0.3 * perCheck;
        for (int i = 0; i < run.size(); i++) {
            ready.add(new Outcome(run.get(i).check, answers.get(i)));
        }
        busy.decrementAndGet();
        wakeUp();
    }

    private Answer runHandler(Held h) {
        Check check = h.check;
        try {
            Answer answer = handlers.get(check.job()).handle(check);
            return answer == null ? Answer.done() : answer;
        } catch (Throwable t) { // the check fails, the worker goes on
            h.raised = true;
            return Answer.fail(handlerThrew(List.of(check), t));
        }
    }

    private List<Answer> runBatchHandler(BatchHandler handler, List<Held> run) {
        List<Check> checks = run.stream().map(h -> h.check).toList();
        String error;
        try {
            List<Answer> answers = handler.handle(checks);
            if (answers != null && answers.size() == checks.size()) {
                return answers.stream().map(a -> a == null ? Answer.done() : a).toList();
            }
            error = "the batch handler answered " + (answers == null ? "null" : answers.size() + " answers")
                    + " for " + checks.size() + " checks";
            String problem = error;
            LOG.warn(() -> String.format("worker %s: checks %s (%s): %s", name, ids(checks), checks.get(0).job(),
                                         problem));
        } catch (Throwable t) { // every check of the call fails, the worker goes on
            error = handlerThrew(checks, t);
        }
        run.forEach(h -> h.raised = true);
        return java.util.Collections.nCopies(checks.size(), Answer.fail(error));
    }

    /** Logs a handler's exception; its text is the checks' error. */
    private String handlerThrew(List<Check> checks, Throwable t) {
        String error = t.toString();
        String about = checks.size() == 1 ? "check " + checks.get(0).id() : "checks " + ids(checks);
        if (pool.isShutdown()) { // interrupted at the end of a stop's grace: it is released, not failed
            LOG.info(() -> String.format("worker %s: %s (%s): interrupted after the grace: %s", name, about,
                                         checks.get(0).job(), error));
        } else {
            LOG.warn(() -> String.format("worker %s: %s (%s): handler threw %s", name, about, checks.get(0).job(),
                                         error));
        }
        return error;
    }

    /** The answers ready, taken out of {@code ready}. */
    private List<Outcome> pollReady() {
        List<Outcome> answers = new ArrayList<>();
        for (Outcome o; (o = ready.poll()) != null; ) {
            answers.add(o);
        }
        return answers;
    }

    /**
     * Settles answers: one worker_complete and one worker_fail call, for the checks their handlers did not settle
     * in their own transactions. Those it could not settle go back to {@code ready}.
     */
    private void settle(List<Outcome> answers) throws SQLException {
        List<Outcome> batch = new ArrayList<>();
        List<Outcome> settledInTransaction = new ArrayList<>();
        for (Outcome o : answers) {
            Held h = held.get(o.check().id());
            if (h == null) {
                continue; // released at a stop: another worker runs it
            }
            if (!h.link.made().isEmpty()) {
                settledInTransaction.add(o);
                continue;
            }
            if (h.lost) {
                Check check = o.check();
                letGo(check);
                LOG.info(() -> String.format("worker %s: check %d (%s): answer dropped, its lease was lost", name,
                                             check.id(), check.job()));
                continue;
            }
            batch.add(o);
        }
        try {
            batch.addAll(decideSettledInTransaction(settledInTransaction));
        } catch (SQLException | RuntimeException e) {
            ready.addAll(settledInTransaction); // asked again at the next try
            ready.addAll(batch);
            throw e;
        }
        if (batch.isEmpty()) {
            return;
        }
        List<Settlement> settled;
        try {
            settled = settlements.call(c -> WorkerProtocol.settle(c, name, batch, now()));
        } catch (PrescientException.Refused refused) {
            // One answer refused the whole call (a result over 64 KiB, say): settle them one by one.
            settled = settleOneByOne(batch);
        } catch (SQLException | RuntimeException e) {
            ready.addAll(batch); // settled at the next try; a lease lost meanwhile is refused then
            throw e;
        }
        Map<Long, Check> byId = batch.stream().collect(Collectors.toMap(o -> o.check().id(), Outcome::check));
        for (Settlement s : settled) {
            finished(byId.get(s.id()), s);
        }
    }

    /** A check this worker holds no more: settled by its call or in its handler's transaction. */
    private void finished(Check check, Settlement s) {
        letGo(check);
        log(check, s);
        report(m -> m.settled(check == null ? null : check.job(), s));
        if (onSettled != null) {
            onSettled.accept(s);
        }
    }

    /**
     * Lets go of this run of the check, and not of a later take of it: settled on the settler, a check may be
     * taken again by the loop (a new lease, a new entry) before the settlement's answer is read.
     */
    private void letGo(Check check) {
        held.computeIfPresent(check.id(), (id, h) -> h.check == check ? null : h);
    }

    /** Tells the metrics listener, if any; its exception is logged, and the worker goes on. */
    private void report(Consumer<WorkerMetrics> event) {
        if (metrics == null) {
            return;
        }
        try {
            event.accept(metrics);
        } catch (RuntimeException e) {
            LOG.warn(() -> String.format("worker %s: the metrics listener threw %s", name, e));
        }
    }

    /**
     * Of the checks whose handlers settled them in their own transactions, lets go (no call of its own) of each
     * whose settlement committed, or whose lease was lost; answers the others, to be settled as usual: a
     * settlement that did not take effect (its transaction, or the savepoint it was made in, rolled back) leaves
     * the check leased to this worker, and it fails, with the handler's exception if it threw one. A
     * transaction still open (the handler returned before it ended) decides the check: the worker lets go.
     */
    private List<Outcome> decideSettledInTransaction(List<Outcome> outcomes) throws SQLException {
        List<Outcome> probed = new ArrayList<>();
        List<InTransaction.Made> made = new ArrayList<>();
        for (Outcome o : outcomes) {
            Held h = held.get(o.check().id());
            Settlement lost = h.link.lost();
            if (lost != null) { // the handler was told (LeaseLostException): the check is not this worker's
                finished(o.check(), lost);
                continue;
            }
            for (InTransaction.Made m : h.link.made()) {
                if (!m.settlement().outcome().equals("refused")) {
                    probed.add(o);
                    made.add(m);
                }
            }
        }
        if (!probed.isEmpty()) {
            List<Check> checks = probed.stream().map(Outcome::check).toList();
            List<String> xacts = made.stream().map(InTransaction.Made::xact).toList();
            List<WorkerProtocol.Fate> fates = settlements.call(c -> WorkerProtocol.fates(c, name, checks, xacts));
            for (int i = 0; i < probed.size(); i++) {
                Check check = probed.get(i).check();
                if (!held.containsKey(check.id())) {
                    continue; // another of its settlements decided it
                }
                if ("in progress".equals(fates.get(i).status())) {
                    letGo(check);
                    LOG.warn(() -> String.format("worker %s: check %d (%s): the handler returned before its "
                                                 + "transaction, which settles the check, ended; left to that "
                                                 + "transaction (if it rolls back, to the lease)", name,
                                                 check.id(), check.job()));
                } else if (fates.get(i).took()) {
                    finished(check, made.get(i).settlement());
                }
            }
        }
        List<Outcome> again = new ArrayList<>();
        for (Outcome o : outcomes) {
            Held h = held.get(o.check().id());
            if (h != null) {
                again.add(h.raised ? o : new Outcome(o.check(), Answer.fail(
                    "the handler's settlement in its own transaction did not take effect (the transaction, or the "
                    + "savepoint it was made in, rolled back, or the database refused it)")));
            }
        }
        return again;
    }

    private List<Settlement> settleOneByOne(List<Outcome> batch) throws SQLException {
        List<Settlement> settled = new ArrayList<>();
        for (Outcome o : batch) {
            try {
                settled.addAll(settlements.call(c -> WorkerProtocol.settle(c, name, List.of(o), now())));
            } catch (PrescientException.Refused refused) {
                // The answer cannot be stored: the check fails with the database's reason instead.
                Outcome failed = new Outcome(o.check(), Answer.fail("answer refused: " + refused.getMessage()));
                LOG.warn(() -> String.format("worker %s: check %d (%s): answer refused: %s", name,
                                             o.check().id(), o.check().job(), refused.getMessage()));
                settled.addAll(settlements.call(c -> WorkerProtocol.settle(c, name, List.of(failed), now())));
            }
        }
        return settled;
    }

    private void log(Check check, Settlement s) {
        String job = check == null ? "?" : check.job();
        Supplier<String> message = () -> {
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
        };
        switch (s.outcome()) {
            case "rescheduled", "done", "retried" -> LOG.info(message);
            default -> LOG.warn(message); // lease_lost, guards, a dead letter
        }
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
        Map<Long, Held> extended = new HashMap<>();
        Map<Long, Long> tokens = new LinkedHashMap<>();
        held.forEach((id, h) -> {
            if (!h.lost && !h.link.settling) {
                extended.put(id, h);
                tokens.put(id, h.check.leaseToken());
            }
        });
        if (tokens.isEmpty()) {
            return;
        }
        try {
            // On the settlements' connection: an extension made while a settlement of the same checks runs would
            // wait for it and then be refused their leases, as if they were lost.
            for (Refusal r : settlements.call(c -> WorkerProtocol.extend(c, name, tokens, lease, now()))) {
                Held h = extended.get(r.id());
                // Else settled meanwhile (and perhaps taken again), or settled in its handler's transaction.
                if (held.get(r.id()) == h && !h.link.settling) {
                    h.lost = true;
                    report(m -> m.leaseLost(h.check.job(), r.id()));
                    LOG.warn(() -> String.format("worker %s: check %d (%s): lease lost: %s; its answer will be "
                                                 + "dropped", name, r.id(), h.check.job(), r.reason()));
                }
            }
        } catch (SQLException | RuntimeException e) {
            LOG.warn(() -> String.format("worker %s: heartbeat for %s failed: %s", name, tokens.keySet(), e));
        }
    }

    // ---- LISTEN -------------------------------------------------------------------------------------------

    private void listen() {
        Connection connection = null;
        while (!stopping) {
            try {
                if (connection == null) {
                    connection = source.open();
                    listening = connection;
                    if (stopping) {
                        break; // the stop may have looked for the connection before it was set
                    }
                    connection.setAutoCommit(true);
                    try (Statement st = connection.createStatement()) {
                        st.execute("LISTEN " + CHANNEL);
                    }
                    wakeUp(); // a notification may have gone by while it was not listening
                }
                PGNotification[] notes = connection.unwrap(PGConnection.class).getNotifications(LISTEN_WAIT_MILLIS);
                if (notes != null) {
                    for (PGNotification n : notes) {
                        if (handlers.containsKey(n.getParameter())) {
                            wakeUp();
                            break;
                        }
                    }
                }
            } catch (SQLException | RuntimeException e) {
                if (stopping) {
                    break; // the stop aborted the connection
                }
                LOG.warn(() -> String.format("worker %s: LISTEN %s failed: %s; again in 1 s", name, CHANNEL, e));
                closeQuietly(connection);
                connection = null;
                sleepUnlessStopping(Duration.ofSeconds(1));
            }
        }
        listening = null;
        closeQuietly(connection);
    }

    /** Ends the listener's wait for a notification: aborts its connection (JDBC's way to end a call in flight). */
    private void stopListening() {
        Connection connection = listening;
        if (connection != null) {
            try {
                connection.abort(Runnable::run);
            } catch (SQLException | RuntimeException e) {
                LOG.debug(() -> String.format("worker %s: could not abort the LISTEN connection: %s", name, e));
            }
        }
    }

    // ---- stopping -----------------------------------------------------------------------------------------

    /** The end of a stop: handlers get their grace, answers are settled, the rest is released. */
    private void shutdown() {
        CompletableFuture<Void> running = settlement;
        if (running != null) { // its answers, back in ready if it failed, are settled below
            running.exceptionally(e -> null).join();
            settlement = null;
        }
        giveBackWaiting();
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
                int released = protocol.call(c -> WorkerProtocol.release(c, name, unsettled));
                LOG.info(() -> String.format("worker %s: released %d of %s unsettled after the grace", name,
                                             released, unsettled.keySet()));
            } catch (SQLException | RuntimeException e) {
                LOG.warn(() -> String.format("worker %s: releasing %s failed (their leases will expire): %s",
                                             name, unsettled.keySet(), e));
            }
        }
        heartbeats.shutdownNow();
        settler.shutdownNow();
        protocol.close();
        settlements.close();
        LOG.info(() -> "worker " + name + ": stopped");
        terminated.countDown();
    }

    /** A stop gives back at once the checks taken ahead and not started: another worker may start them now. */
    private void giveBackWaiting() {
        Map<Long, Long> notStarted = new LinkedHashMap<>();
        synchronized (waiting) {
            for (Held h; (h = waiting.poll()) != null; ) {
                held.remove(h.check.id());
                notStarted.put(h.check.id(), h.check.leaseToken());
            }
        }
        if (notStarted.isEmpty()) {
            return;
        }
        try {
            int released = protocol.call(c -> WorkerProtocol.release(c, name, notStarted));
            LOG.info(() -> String.format("worker %s: gave back %d of %s not started", name, released,
                                         notStarted.keySet()));
        } catch (SQLException | RuntimeException e) {
            LOG.warn(() -> String.format("worker %s: giving back %s failed (their leases will expire): %s", name,
                                         notStarted.keySet(), e));
        }
    }

    private void settleQuietly() {
        try {
            settle(pollReady());
        } catch (SQLException | RuntimeException e) {
            LOG.warn(() -> String.format("worker %s: settling failed while stopping: %s", name, e));
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

    // ---- plumbing -----------------------------------------------------------------------------------------

    /** A connection of the worker's own, opened when needed, dropped when broken; one call on it at a time. */
    private final class Session {
        private Connection connection; // guarded by this

        synchronized <T> T call(Call<T> call) throws SQLException {
            if (connection == null) {
                connection = source.open();
                connection.setAutoCommit(true);
            }
            try {
                return call.run(connection);
            } catch (SQLException e) {
                if (!(e instanceof PrescientException) && !isValid(connection)) {
                    closeQuietly(connection); // the next call opens another
                    connection = null;
                }
                throw e;
            }
        }

        synchronized void close() {
            closeQuietly(connection);
            connection = null;
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

    /** The wait before the try after one that waited {@code last} (zero: the first try, at once). */
    static Duration nextRetryWait(Duration last) {
        Duration doubled = last.multipliedBy(2);
        return min(doubled.compareTo(FIRST_RETRY_WAIT) < 0 ? FIRST_RETRY_WAIT : doubled, MAX_RETRY_WAIT);
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    /** Builds a {@link Worker}: at least one handler; the rest has defaults. */
    public static final class Builder {
        private final ConnectionSource source;
        private final Map<String, Handler> handlers = new LinkedHashMap<>();
        private final Map<String, BatchHandler> batchHandlers = new LinkedHashMap<>();
        private final Map<String, Policy> policies = new LinkedHashMap<>();
        private String name = "java-" + ProcessHandle.current().pid();
        private int concurrency = 4;
        private int batchSize = DEFAULT_BATCH_SIZE;
        private Duration prefetch = DEFAULT_PREFETCH;
        private Duration lease = Duration.ofSeconds(30);
        private boolean heartbeat = true;
        private Duration grace = Duration.ofSeconds(30);
        private Supplier<Instant> clock;
        private Consumer<Settlement> onSettled;
        private WorkerMetrics metrics;

        private Builder(ConnectionSource source) {
            this.source = Objects.requireNonNull(source, "source");
        }

        /** The worker's name, recorded on its leases (default {@code java-<pid>}). */
        public Builder name(String name) {
            this.name = Objects.requireNonNull(name, "name");
            return this;
        }

        /** The handler for one worker class, declared already ({@code prescient jobs add CLASS --worker}). */
        public Builder handler(String job, Handler handler) {
            refuseASecondHandler(job);
            handlers.put(job, Objects.requireNonNull(handler, "handler"));
            return this;
        }

        /**
         * The handler for one worker class that the worker declares itself with this policy when it starts
         * ({@link WorkerClasses#declare}: {@code prescient_worker}'s rights suffice); the policy's null fields are
         * left as the class has them. {@code max_checks} is 5 unless the policy or the class says otherwise.
         */
        public Builder handler(String job, Policy policy, Handler handler) {
            Objects.requireNonNull(policy, "policy");
            handler(job, handler);
            policies.put(job, policy);
            return this;
        }

        /** A batch handler for one worker class: it gets the class's checks a take brought, many in one call. */
        public Builder batchHandler(String job, BatchHandler handler) {
            refuseASecondHandler(job);
            batchHandlers.put(job, Objects.requireNonNull(handler, "handler"));
            return this;
        }

        /**
         * A batch handler for a class the worker declares itself with this policy, as {@link #handler(String,
         * Policy, Handler)}.
         */
        public Builder batchHandler(String job, Policy policy, BatchHandler handler) {
            Objects.requireNonNull(policy, "policy");
            batchHandler(job, handler);
            policies.put(job, policy);
            return this;
        }

        private void refuseASecondHandler(String job) {
            if (handlers.containsKey(Objects.requireNonNull(job, "job")) || batchHandlers.containsKey(job)) {
                throw new IllegalArgumentException("a handler for '" + job + "' is registered already");
            }
        }

        /** How many handlers run at once (default 4): the size of the handler pool. */
        public Builder concurrency(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("concurrency " + n + " is under 1");
            }
            this.concurrency = n;
            return this;
        }

        /**
         * At most how many checks one take leases, a batch handler gets, and wait to be settled in one call
         * (default {@value Worker#DEFAULT_BATCH_SIZE}).
         */
        public Builder batchSize(int n) {
            if (n < 1 || n > 10_000) {
                throw new IllegalArgumentException("batch size " + n + " is not within 1 to 10000");
            }
            this.batchSize = n;
            return this;
        }

        /**
         * A take asks for the checks the worker can start within {@code prefetch}: its free places, and the places
         * its running handlers will free by then (by their measured time per check), held in order until a place
         * is free; heartbeats cover them and a stop gives them back at once. Default 100 ms; zero: free places
         * only.
         */
        public Builder prefetch(Duration prefetch) {
            if (prefetch.isNegative()) {
                throw new IllegalArgumentException("prefetch " + prefetch + " is negative");
            }
            this.prefetch = prefetch;
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

        /**
         * Called with every settlement (on the worker's settling thread, one at a time; keep it quick): metrics,
         * tests, alerts.
         */
        public Builder onSettled(Consumer<Settlement> listener) {
            this.onSettled = listener;
            return this;
        }

        /** Reports takes, handler calls, settlements and lost leases to {@code listener} (README.md, "Metrics"). */
        public Builder metrics(WorkerMetrics listener) {
            this.metrics = listener;
            return this;
        }

        public Worker build() {
            if (handlers.isEmpty() && batchHandlers.isEmpty()) {
                throw new IllegalStateException("a worker needs at least one handler");
            }
            return new Worker(this);
        }
    }
}
