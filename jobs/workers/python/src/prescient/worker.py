"""The worker: takes the due checks of its classes and runs a handler per check (docs/workers.md).

One thread, the loop, owns the worker's first session: it takes checks, hands the answers that are ready to
the settler, and sleeps until the next due time or a notification. The settler, a thread with the second
session, settles them in batches and sends the heartbeats, while the loop goes on to its next take. Handlers
run on a pool of ``concurrency`` threads and hand their answers back to the loop; a handler is a plain
function. The loop's turns are worker_loop.py's, shared with the asyncio worker (aio/worker.py).
"""

from __future__ import annotations

import os
import queue
import selectors
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

import psycopg

from .connection import Connection
from .steps import Steps, run
from .worker_loop import (DEFAULT_BATCH_SIZE, DEFAULT_CONCURRENCY, BusinessDelay, CheckBase, Done, Settlement,
                          WorkerBase, _Held, log, next_reconnect_wait, with_dead_socket_settings)

__all__ = ["BusinessDelay", "Check", "DEFAULT_BATCH_SIZE", "DEFAULT_CONCURRENCY", "Done", "Settlement", "Worker"]

Handler = Callable[["Check"], Any]
BatchHandler = Callable[[list["Check"]], Any]


class Check(CheckBase):
    """A check as a handler gets it (the fields: CheckBase), settled in a transaction of a blocking connection."""

    def complete_in(self, conn: Connection, answer: Any = None) -> Settlement:
        """Settles this check on the application's connection, in its transaction: the handler's writes and
        the settlement commit together, or neither does (effects exactly once). ``answer`` is what a handler
        may return: None (done), an aware datetime (look again then), a timedelta (look again that long from
        now), ``BusinessDelay(calendar, delay)`` (look again after that much of the calendar's open time) or
        ``Done(result)``. Returns the settlement; raises LeaseLost when the lease was lost (so the transaction
        rolls back, if it is left by the exception) and Refused when the database refused the answer (a result
        over 64 KiB, an unknown calendar). The worker then settles the check no more; if the transaction rolls
        back, the worker fails the check (the handler's exception, if it raised one), and it is retried."""
        return run(conn, self._completion(answer))

    def fail_in(self, conn: Connection, error: str) -> Settlement:
        """Fails this check with ``error`` on the application's connection, in its transaction (as
        complete_in): retried with the class's backoff, or a dead letter once its attempts are used up."""
        return run(conn, self._failure(error))


class Worker(WorkerBase[Handler, BatchHandler]):
    """Runs the handlers of its job classes on the checks it takes.

    >>> worker = Worker("postgresql://app@db/shop", name="shop-1", concurrency=8)
    >>> @worker.handler("order_unshipped")
    ... def order_unshipped(check):
    ...     return None          # done; or a datetime: look again then; or BusinessDelay("support-eu", "4h");
    ...                          # or Done(result); or raise
    >>> worker.run()             # until SIGTERM, SIGINT or worker.stop()

    ``clock`` (a function returning an aware datetime) is passed to every call as ``p_now``; None (the
    default) lets the database use its own clock, which is what production wants. ``heartbeat=False`` turns
    off the lease extensions, and holding checks ahead (a test of lost leases). README.md has the options.
    The worker holds two sessions of its own: the loop's, and the settler's (settlements and heartbeats).
    """

    _check_class = Check

    def _setup(self) -> None:
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)
        self._restore_signals: dict[int, Any] = {}
        # The calls waiting for a handler's thread: one check each, or a batch handler's checks.
        self._queued: queue.SimpleQueue[list[_Held] | None] = queue.SimpleQueue()
        # The settler's session: its thread's alone while a run lasts (the loop closes it after).
        self._settler_conn: psycopg.Connection[Any] | None = None

    def __del__(self) -> None:
        for fd in (getattr(self, "_wake_read", None), getattr(self, "_wake_write", None)):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass

    # ---- control -------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Asks the worker to stop gracefully (from any thread or a signal handler): it takes nothing more,
        lets running handlers finish within ``grace_seconds``, and gives back what it has not started."""
        self._stopping.set()
        self._wake()

    def run(self) -> None:
        """Works until stopped. In the main thread, SIGTERM and SIGINT stop it gracefully (a second one acts
        as it would without the worker: it kills the process, or raises KeyboardInterrupt)."""
        self._handle_signals()
        try:
            self._work(until_idle=False)
        finally:
            self._unhandle_signals()

    def drain(self) -> list[Settlement]:
        """Runs every check that is due now (by the clock) until none is left to take, then returns what was
        settled. For tests with a pinned clock, and for a worker started by cron rather than kept running."""
        return self._work(until_idle=True)

    # ---- the loop ----------------------------------------------------------------------------------

    def _work(self, *, until_idle: bool) -> list[Settlement]:
        level = self._started(until_idle)
        settled: list[Settlement] = []
        threads = [threading.Thread(target=self._run_handlers, name=f"prescient-handler-{n}", daemon=True)
                   for n in range(self.concurrency)]
        for thread in threads:
            thread.start()
        self._settler = ThreadPoolExecutor(max_workers=1, thread_name_prefix="prescient-settler")
        conn = None
        backoff = 0.0
        try:
            while True:
                try:
                    if conn is None:
                        conn = self._connect()
                    timeout = run(conn, self._turn(settled, until_idle))
                    if timeout is None:
                        break
                    self._wait(conn, timeout)
                    backoff = 0.0
                except psycopg.OperationalError as e:
                    if conn is not None:
                        conn.close()
                        conn = None
                    if self._connection_lost(e, backoff) is None:
                        break
                    self._wait(None, backoff)
                    backoff = next_reconnect_wait(backoff)
            self._finish(conn, settled)
        finally:
            for _ in threads:
                self._queued.put(None)  # each idle thread ends; a handler past its grace period is left behind
            self._settler.shutdown()  # after the settlement running, if the run ended with one
            self._settlement = None
            if self._settler_conn is not None:
                self._settler_conn.close()
                self._settler_conn = None
            if conn is not None:
                conn.close()
            self._stopping.clear()  # a stop ends this run; a stop before run() makes run() return at once
        log.log(level, "worker %s stopped", self.name)
        return settled

    def _finish(self, conn: psycopg.Connection[Any] | None, settled: list[Settlement]) -> None:
        """A graceful stop: gives back what was taken and not started, lets running handlers finish within
        the grace period (with heartbeats, settling their answers), and leaves the rest to their leases."""
        self._settlement_over()  # first: no heartbeat extends what is given back while it is
        unstarted: list[list[_Held]] = []
        while True:
            try:
                item = self._queued.get_nowait()
            except queue.Empty:
                break
            if item is not None:
                unstarted.append(item)
        release = self._release(unstarted)
        deadline = time.monotonic() + self.grace_seconds
        try:
            if conn is not None:
                run(conn, release)
            while conn is not None and (timeout := self._grace_turn(settled, deadline)) is not None:
                self._wait(conn, timeout)
        except psycopg.OperationalError as e:
            log.error("worker %s: database connection lost while stopping (%s)", self.name, e)
        self._settlement_over()
        self._left_running()

    def _connect(self) -> psycopg.Connection[Any]:
        conn = psycopg.connect(with_dead_socket_settings(self.conninfo), autocommit=True)
        try:
            conn.add_notify_handler(self._on_notify)
            run(conn, self._connect_steps())
        except BaseException:
            conn.close()
            raise
        return conn

    def _dispatch(self, call: list[_Held]) -> None:
        self._queued.put(call)

    # ---- the settler ---------------------------------------------------------------------------------

    def _settle_on_settler(self, steps: Steps[list[Settlement]]) -> Future[list[Settlement]]:
        end = self._settler.submit(self._settle_on_own_connection, steps)
        end.add_done_callback(lambda _: self._wake())
        return end

    def _settle_on_own_connection(self, steps: Steps[list[Settlement]]) -> list[Settlement]:
        if self._settler_conn is None:
            self._settler_conn = psycopg.connect(with_dead_socket_settings(self.conninfo), autocommit=True)
        try:
            return run(self._settler_conn, steps)
        except psycopg.OperationalError:
            self._settler_conn.close()  # the next settlement opens another
            self._settler_conn = None
            raise

    def _settlement_over(self) -> None:
        """Waits for the end of the settlement running, if one is (the loop reads it at its next turn)."""
        if self._settlement is not None:
            end = self._settlement.end
            assert isinstance(end, Future)
            wait([end])

    # ---- waiting and waking -------------------------------------------------------------------------

    def _wait(self, conn: psycopg.Connection[Any] | None, timeout: float) -> None:
        """Sleeps up to ``timeout`` seconds; a handler's answer, a settlement's end, stop() or a notification
        wakes it early."""
        if self._notified or self._settlement_due() or timeout <= 0:
            self._notified = False
            return
        # A selector, not select(): a busy application's descriptors may be numbered past 1024.
        with selectors.DefaultSelector() as selector:
            selector.register(self._wake_read, selectors.EVENT_READ)
            if conn is not None:
                selector.register(conn.fileno(), selectors.EVENT_READ)
            readable = {key.fd for key, _ in selector.select(timeout)}
        if self._wake_read in readable:
            try:
                while os.read(self._wake_read, 4096):
                    pass
            except BlockingIOError:
                pass
        if conn is not None and conn.fileno() in readable:
            # A notification (or the server closing the session): a statement reads it in, and raises if
            # the connection is gone.
            conn.execute("SELECT")
        self._notified = False

    def _wake(self) -> None:
        try:
            os.write(self._wake_write, b"!")
        except BlockingIOError:
            pass  # the pipe is full: the loop is awake already

    def _handle_signals(self) -> None:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                self._restore_signals[signum] = signal.signal(signum, self._on_signal)

    def _unhandle_signals(self) -> None:
        for signum, previous in self._restore_signals.items():
            signal.signal(signum, previous)
        self._restore_signals = {}

    def _on_signal(self, signum: int, _frame: Any) -> None:
        self._signalled(signum)
        self._unhandle_signals()
        self.stop()

    # ---- the handlers' threads ----------------------------------------------------------------------

    def _run_handlers(self) -> None:
        while True:
            call = self._queued.get()
            if call is None:
                return
            started = time.monotonic()
            try:
                outcome = self._call(call)
            except BaseException as e:  # noqa: BLE001 - any failure of a handler fails its check (its call's) alone
                outcome = e
            self._answered_with(call, outcome, started)
            self._wake()
