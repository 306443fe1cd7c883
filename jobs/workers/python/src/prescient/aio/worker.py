"""The asyncio worker: the blocking worker's loop (worker_loop.py) on an ``AsyncConnection``, with handlers that
are coroutines, run by ``concurrency`` tasks (its places) in the worker's event loop.

Its guarantees are the blocking worker's: it takes ahead what its places are expected to start soon, renews
the leases it holds, wakes on ``LISTEN prescient_worker``, settles answers in batches (a task of its own on a
second connection, beside the loop's next take), and a check settled in the handler's own transaction
(``await check.complete_in(conn)``) is settled exactly once. A stop (``stop()``,
SIGTERM, or the cancellation of the task running ``run()``) is graceful: nothing more is taken, what was not
started is given back, running handlers have ``grace_seconds`` to finish.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import signal
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import psycopg

from ..steps import Steps
from ..worker_loop import (CheckBase, Settlement, WorkerBase, _Held, log, next_reconnect_wait,
                           with_dead_socket_settings)
from .calls import AsyncConnection, run

T = TypeVar("T")


class Check(CheckBase):
    """A check as a coroutine handler gets it: the fields of ``prescient.Check``, settled on an
    ``AsyncConnection``."""

    async def complete_in(self, conn: AsyncConnection, answer: Any = None) -> Settlement:
        """Settles this check on the application's async connection, in its transaction: the handler's writes
        and the settlement commit together, or neither does (as ``prescient.Check.complete_in``)."""
        return await run(conn, self._completion(answer))

    async def fail_in(self, conn: AsyncConnection, error: str) -> Settlement:
        """Fails this check with ``error`` on the application's async connection, in its transaction (as
        ``prescient.Check.fail_in``)."""
        return await run(conn, self._failure(error))


Handler = Callable[[Check], Awaitable[Any]]
BatchHandler = Callable[[list[Check]], Awaitable[Any]]


class Worker(WorkerBase[Handler, BatchHandler]):
    """Runs the coroutine handlers of its job classes on the checks it takes; the options are
    ``prescient.Worker``'s (``concurrency``: how many handlers, or batch handler calls, run at once).

    >>> worker = prescient.aio.Worker("postgresql://app@db/shop", name="shop-1", concurrency=8)
    >>> @worker.handler("order_unshipped")
    ... async def order_unshipped(check: prescient.aio.Check) -> None:
    ...     return None          # done; or a datetime: look again then; or BusinessDelay("support-eu", "4h");
    ...                          # or Done(result); or raise
    >>> await worker.run()       # until stop(), SIGTERM, or the task is cancelled
    """

    _check_class = Check

    def _setup(self) -> None:
        # The event loop's own, made afresh by each run (an asyncio object belongs to the loop it first ran in).
        self._loop: asyncio.AbstractEventLoop | None = None
        self._woken = asyncio.Event()
        self._queued: asyncio.Queue[list[_Held]] = asyncio.Queue()
        self._cancelled = False  # this run's task was cancelled: it stops, then raises CancelledError
        self._settler_conn: AsyncConnection | None = None  # the settlement tasks', one at a time

    # ---- control -------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Asks the worker to stop gracefully (from the event loop or another thread): it takes nothing more,
        lets running handlers finish within ``grace_seconds``, and gives back what it has not started."""
        self._stopping.set()
        self._wake()

    async def run(self) -> None:
        """Works until stopped: by ``stop()``, by SIGTERM (when the event loop runs in the main thread; a
        second SIGTERM kills the process), or by the cancellation of the task that awaits it (as
        ``asyncio.run`` does on Ctrl-C), which is raised again once the worker has stopped gracefully."""
        with self._sigterm_handled():
            await self._work(until_idle=False)

    async def drain(self) -> list[Settlement]:
        """Runs every check that is due now (by the clock) until none is left to take, then returns what was
        settled. For tests with a pinned clock, and for a worker started by cron rather than kept running."""
        return await self._work(until_idle=True)

    # ---- the loop ----------------------------------------------------------------------------------

    async def _work(self, *, until_idle: bool) -> list[Settlement]:
        level = self._started(until_idle)
        self._setup()
        self._loop = asyncio.get_running_loop()
        settled: list[Settlement] = []
        places = [asyncio.create_task(self._run_handlers(), name=f"prescient-handler-{n}")
                  for n in range(self.concurrency)]
        conn: AsyncConnection | None = None
        backoff = 0.0
        try:
            while True:
                try:
                    if conn is None:
                        conn = await self._uncancelled(self._connect())
                    timeout = await self._uncancelled(run(conn, self._turn(settled, until_idle)))
                    if timeout is None:
                        break
                    await self._wait(conn, timeout)
                    backoff = 0.0
                except psycopg.OperationalError as e:
                    if conn is not None:
                        await self._uncancelled(conn.close())
                        conn = None
                    if self._connection_lost(e, backoff) is None:
                        break
                    await self._wait(None, backoff)
                    backoff = next_reconnect_wait(backoff)
            await self._finish(conn, settled)
        finally:
            # Idle places end; a handler still running after the grace period is cancelled (its check is left
            # to its lease, its transaction rolls back).
            for place in places:
                place.cancel()
            await asyncio.gather(*places, return_exceptions=True)
            self._calls_out = 0  # a handler cancelled past the grace period answers nothing
            await self._settlement_over()  # if the run ended with one running
            self._settlement = None
            if self._settler_conn is not None:
                await self._settler_conn.close()
            if conn is not None:
                await conn.close()
            self._stopping.clear()  # a stop ends this run; a stop before run() makes run() return at once
            self._loop = None
        log.log(level, "worker %s stopped", self.name)
        if self._cancelled:
            raise asyncio.CancelledError
        return settled

    async def _finish(self, conn: AsyncConnection | None, settled: list[Settlement]) -> None:
        """A graceful stop: gives back what was taken and not started, lets running handlers finish within
        the grace period (with heartbeats, settling their answers), and leaves the rest to their leases."""
        await self._settlement_over()  # first: no heartbeat extends what is given back while it is
        unstarted: list[list[_Held]] = []
        while not self._queued.empty():
            unstarted.append(self._queued.get_nowait())
        release = self._release(unstarted)
        deadline = time.monotonic() + self.grace_seconds
        try:
            if conn is not None:
                await self._uncancelled(run(conn, release))
                while (timeout := self._grace_turn(settled, deadline)) is not None:
                    await self._wait(conn, timeout)
        except psycopg.OperationalError as e:
            log.error("worker %s: database connection lost while stopping (%s)", self.name, e)
        await self._settlement_over()
        self._left_running()

    async def _connect(self) -> AsyncConnection:
        conn = await psycopg.AsyncConnection.connect(with_dead_socket_settings(self.conninfo),
                                                      autocommit=True)
        conn.add_notify_handler(self._on_notify)
        try:
            await run(conn, self._connect_steps())
            return conn
        except BaseException:
            await conn.close()
            raise

    def _dispatch(self, call: list[_Held]) -> None:
        self._queued.put_nowait(call)

    # ---- the settler ---------------------------------------------------------------------------------

    def _settle_on_settler(self, steps: Steps[list[Settlement]]) -> asyncio.Task[list[Settlement]]:
        # A task of its own: the run's cancellation does not cut it (a stop waits for it instead).
        end = asyncio.create_task(self._settle_on_own_connection(steps), name="prescient-settler")
        end.add_done_callback(lambda _: self._woken.set())
        return end

    async def _settle_on_own_connection(self, steps: Steps[list[Settlement]]) -> list[Settlement]:
        if self._settler_conn is None:
            self._settler_conn = await psycopg.AsyncConnection.connect(with_dead_socket_settings(self.conninfo),
                                                                        autocommit=True)
        try:
            return await run(self._settler_conn, steps)
        except psycopg.OperationalError:
            await self._settler_conn.close()  # the next settlement opens another
            self._settler_conn = None
            raise

    async def _settlement_over(self) -> None:
        """Waits for the end of the settlement running, if one is (the loop reads it at its next turn)."""
        if self._settlement is not None:
            end = self._settlement.end
            assert isinstance(end, asyncio.Task)
            await self._uncancelled(asyncio.wait([end]))

    # ---- cancellation, waiting and waking -------------------------------------------------------------

    async def _uncancelled(self, work: Awaitable[T]) -> T:
        """Awaits ``work`` to its end even when this task is cancelled meanwhile: a statement cut halfway would
        leave its effect unknown (checks taken that no place will run, answers sent or not). The first
        cancellation stops the worker gracefully; a second one is raised at once."""
        task = asyncio.ensure_future(work)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            self._cancelled_once()
            return await task

    def _cancelled_once(self) -> None:
        """A cancellation of the run: the first becomes a graceful stop, a second is raised."""
        if self._cancelled:
            raise asyncio.CancelledError
        self._cancelled = True
        log.info("worker %s: cancelled, stopping (grace period %gs)", self.name, self.grace_seconds)
        self._stopping.set()
        self._woken.set()  # the loop's next wait returns at once, to see it

    async def _wait(self, conn: AsyncConnection | None, timeout: float) -> None:
        """Sleeps up to ``timeout`` seconds; a handler's answer, a settlement's end, stop() or a notification
        wakes it early: each sets ``_woken``, which stays set until a wait has seen it (so one that came
        while the loop was busy is not missed; the grace period's waits, after stop(), sleep too)."""
        if self._notified or self._settlement_due() or timeout <= 0:
            self._notified = False
            return
        readable = False

        def on_readable() -> None:
            nonlocal readable
            readable = True
            self._woken.set()

        loop = asyncio.get_running_loop()
        if conn is not None:
            # Only while waiting: psycopg watches the socket itself while a statement runs.
            loop.add_reader(conn.fileno(), on_readable)
        try:
            await asyncio.wait_for(self._woken.wait(), timeout)
        except asyncio.TimeoutError:
            pass
        except asyncio.CancelledError:
            self._cancelled_once()
        finally:
            if conn is not None:
                loop.remove_reader(conn.fileno())
        self._woken.clear()
        if conn is not None and readable:
            # A notification (or the server closing the session): a statement reads it in, and raises if the
            # connection is gone.
            await self._uncancelled(conn.execute("SELECT"))
        self._notified = False

    def _wake(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._woken.set)

    @contextlib.contextmanager
    def _sigterm_handled(self) -> Iterator[None]:
        # SIGINT is asyncio.run's: it cancels the main task, which stops the worker gracefully too.
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        loop = asyncio.get_running_loop()

        def on_sigterm() -> None:
            self._signalled(signal.SIGTERM)
            loop.remove_signal_handler(signal.SIGTERM)  # a second one kills the process, as without the worker
            self.stop()

        loop.add_signal_handler(signal.SIGTERM, on_sigterm)
        try:
            yield
        finally:
            loop.remove_signal_handler(signal.SIGTERM)

    # ---- the handlers' places -----------------------------------------------------------------------

    async def _run_handlers(self) -> None:
        while True:
            call = await self._queued.get()
            started = time.monotonic()
            try:
                outcome = await self._awaited_call(call)
            except Exception as e:  # noqa: BLE001 - any failure of a handler fails its check (its call's) alone
                outcome = e
            self._answered_with(call, outcome, started)
            self._woken.set()

    def _awaited_call(self, call: list[_Held]) -> Awaitable[Any]:
        pending = self._call(call)
        if not inspect.isawaitable(pending):
            raise TypeError(f"the handler of {call[0].check.job} returned {type(pending).__name__}, not an "
                            "awaitable: prescient.aio.Worker's handlers are coroutine functions (async def)")
        return pending
