"""The worker's loop, once for the blocking worker (worker.py: handlers on threads) and the asyncio one
(aio/worker.py: handlers are coroutines): what it holds and how much it takes ahead, the answers and their
settlement, heartbeats, the graceful stop's release, the wake-ups. Its database work is steps (steps.py), which
each worker runs on its own kind of connection; the waiting, the handlers' calls and the settler are each
worker's own.

A worker has two sessions: the loop's (takes, next due times, LISTEN, releases) and the settler's, on which a
settlement (worker_complete, worker_fail) and the heartbeat (worker_extend) run while the loop goes on to its
next take (a thread of the blocking worker, a task of the asyncio one). A busy worker spends most of its time in
the take and the settlement: on two backends they run at once. One settlement runs at a time; the answers that
come meanwhile wait for the next. The heartbeat runs after a settlement, never beside one: an extension of the
checks a settlement is settling would wait for it, then be refused their leases, as if they were lost.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Generic, Protocol, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from .classes import declare_worker_class_steps
from .errors import CheckFailed, LeaseLost, Refused, translated
from .steps import Statement, Steps

log = logging.getLogger("prescient.worker")

Clock = Callable[[], datetime]
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
H = TypeVar("H")  # a worker's handler type
B = TypeVar("B")  # its batch handler type

MAX_SLEEP_SECONDS = 60.0  # a notification is a hint: the worker looks again at least this often
# After losing the database: the first try again at once (a failover leaves the session stale while a new one
# would work), then this wait doubling to this cap, so that the first try after a new leader is elected comes
# within the cap of it, whatever the election took (docs/operations.md, "High availability").
RECONNECT_BACKOFF = (0.25, 1.0)
# The TCP settings of the worker's session where its conninfo sets none of its own, as the runner's: a server
# gone without closing the socket (a dead machine, a cut network) is noticed in seconds, not after the
# kernel's timeouts (hours idle, about 15 minutes with data unacknowledged). Idle: found dead in about 11 s
# (5 s, then 3 probes 2 s apart); data unacknowledged for 6 s ends the socket.
DEAD_SOCKET_SETTINGS = {"keepalives": "1", "keepalives_idle": "5", "keepalives_interval": "2",
                        "keepalives_count": "3", "tcp_user_timeout": "6000"}

def next_reconnect_wait(last: float) -> float:
    """The wait before the next try to reconnect, after one of `last` seconds (0: the first try, at once)."""
    return min(max(last * 2, RECONNECT_BACKOFF[0]), RECONNECT_BACKOFF[1])


def with_dead_socket_settings(conninfo: str) -> str:
    """The conninfo with DEAD_SOCKET_SETTINGS added, but for those it sets itself."""
    given = conninfo_to_dict(conninfo)
    return make_conninfo(conninfo, **{key: value for key, value in DEAD_SOCKET_SETTINGS.items() if key not in given})


DEFAULT_CONCURRENCY = 4
DEFAULT_BATCH_SIZE = 1000
# Without a fixed prefetch, the worker holds ahead what its threads are expected to start within this time (by
# the handlers' measured times): for quick handlers a batch, for slow ones a check per thread.
PREFETCH_SECONDS = 0.5
# What the database keeps of an error text (docs/workers.md, "fail"): it cuts a longer one at the end, where a
# traceback's innermost frames are, so the worker leaves out the outermost frames instead.
ERROR_TEXT_BYTES = 4096
# worker_complete's arguments as both settlements send them (the loop's batch, a handler's complete_in): p_now
# by name, last, as the settlement's parameters put it after the answers' arrays.
COMPLETE_ARGUMENTS = ("%s, %s::bigint[], %s::bigint[], %s::timestamptz[], %s::jsonb[], p_calendar => %s::text[],"
                      " p_business_delay => %s::text[], p_now => %s::timestamptz")


@dataclass(frozen=True)
class CheckBase:
    """A check as a handler gets it (prescient.Check, prescient.aio.Check: they differ in how they settle in a
    transaction). ``check_count`` and ``attempts`` are the counts before this run.

    ``traceparent`` and ``tracestate``: for a check scheduled with a trace context, its trace with a span id
    of this run's own (each attempt is a span), to give a tracing library as the parent of the handler's
    work; None otherwise."""

    id: int
    job: str
    entity_name: str
    entity_key: str
    job_key: str | None
    group_key: str | None
    payload: Any
    due_at: datetime
    asked_for_at: datetime
    check_count: int
    attempts: int
    last_error: str | None
    traceparent: str | None = None
    tracestate: str | None = None
    _lease: _Lease | None = field(default=None, repr=False, compare=False, kw_only=True)
    # The worker's clock (None: the real one), the base of a timedelta answer.
    _clock: Callable[[], datetime] | None = field(default=None, repr=False, compare=False, kw_only=True)

    @property
    def lease_lost(self) -> bool:
        """True once a heartbeat was refused: another worker may run the check now, and this run's answer
        will be refused. A long handler may look at it to give up early."""
        return self._lease is not None and self._lease.heartbeat_refused

    def _completion(self, answer: Any) -> Steps[Settlement]:
        """complete_in's steps: the answer read (a bad one raises here, before anything is sent), then sent."""
        next_at, in_business_time, result_json = _read_answer(self, answer)
        return self._lease_or_refuse().settle(
            self, "SELECT s.id, s.outcome, s.next_check_at, s.last_error, pg_current_xact_id()::text"
                  f" FROM prescient.worker_complete({COMPLETE_ARGUMENTS}) AS s",
            [next_at], [result_json], *_business_arrays([in_business_time]))

    def _failure(self, error: str) -> Steps[Settlement]:
        """fail_in's steps."""
        return self._lease_or_refuse().settle(
            self, "SELECT s.id, s.outcome, s.next_check_at, s.last_error, pg_current_xact_id()::text"
                  " FROM prescient.worker_fail(%s, %s::bigint[], %s::bigint[], %s::text[],"
                  " %s::timestamptz) AS s", [_sendable(error)])

    def _lease_or_refuse(self) -> _Lease:
        if self._lease is None:
            raise ValueError(f"check {self.id} was not taken by a worker: there is no lease to settle it under")
        return self._lease


@dataclass(frozen=True)
class Done:
    """A handler's answer: the check is done, and ``result`` (any JSON value) is kept in its history row."""

    result: Any = None


@dataclass(frozen=True)
class BusinessDelay:
    """A handler's answer: look again after ``delay`` of calendar ``calendar``'s open time ("4h", "90m",
    "1h30m", or "3bd": business days), counted from the settlement's now (the worker's clock, else the
    server's). The database reads it as an enqueue's ``business_delay`` (docs/business-time.md, "Answers in
    business time"): an unknown calendar, or a delay that is not one, fails the check with the reason."""

    calendar: str
    delay: str


@dataclass(frozen=True)
class Settlement:
    """What the database made of an answer: ``outcome`` is rescheduled, retried, lease_lost, or the history
    outcome it ended with (done, failed, a guard's guard_*: docs/runner.md, "How a check ends");
    ``last_error`` says why for guards, errors and lost leases."""

    check_id: int
    outcome: str
    next_check_at: datetime | None
    last_error: str | None

    def raise_if_lease_lost(self) -> None:
        """Raises LeaseLost (naming the check and the database's reason) if the settlement was refused."""
        if self.outcome == "lease_lost":
            raise LeaseLost(self.check_id, self.last_error)


class _Lease:
    """The lease a check is held under, as its handler sees it: what settling it in the handler's own
    transaction needs (the worker's name, the token, the clock), and what became of each such settlement.

    Written by the handler (a thread, or a task) while it runs, read by the loop after it returned."""

    def __init__(self, worker: str, token: int, clock: Clock | None):
        self.worker = worker
        self.token = token
        self.clock = clock
        # Set before the first settlement in a transaction: heartbeats leave the check alone from then on (an
        # extension would wait for the handler's transaction, and be refused once it commits).
        self.settling = False
        # Set by the loop when a heartbeat was refused (a plain flag: the handler only polls it, and an Event
        # per check cost the loop more than the rest of a check's bookkeeping).
        self.heartbeat_refused = False
        # (transaction id, settlement) of each settlement made in a handler's transaction. At most one of them
        # commits: once it has, the lease is gone and a later one answers lease_lost.
        self.in_transaction: list[tuple[str, Settlement]] = []

    def settle(self, check: CheckBase, query: str, *per_check: list[Any] | None) -> Steps[Settlement]:
        self.settling = True
        params = [self.worker, [check.id], [self.token], *per_check, self.clock() if self.clock else None]
        with translated(check_id=check.id):
            [row] = yield Statement(query, params)
        settlement = Settlement(*row[:4])
        self.in_transaction.append((row[4], settlement))
        settlement.raise_if_lease_lost()
        return settlement

    @property
    def lost(self) -> Settlement | None:
        """The lease_lost answer a settlement in a transaction got, if one did: the lease is gone for good."""
        return next((s for _, s in self.in_transaction if s.outcome == "lease_lost"), None)


@dataclass
class _Held:
    """A check this worker holds under a lease, and (once its handler returned) its answer."""

    check: CheckBase
    token: int
    next_at: datetime | None = None
    in_business_time: BusinessDelay | None = None  # instead of next_at
    result_json: str | None = None
    error: str | None = None
    raised: bool = False  # the handler raised (its error is the answer)
    seconds: float = 0.0  # the handler's time for this check (a batch call's, shared out)

    @property
    def key(self) -> tuple[int, int]:
        return self.check.id, self.token

    @property
    def lease(self) -> _Lease:
        """The lease the worker took the check under (a taken check always has one)."""
        assert self.check._lease is not None
        return self.check._lease


class _End(Protocol[T_co]):
    """The end of work on the settler, as both workers' settlers give it (a concurrent.futures.Future, an
    asyncio.Task): read by the loop once done."""

    def done(self) -> bool: ...

    def result(self) -> T_co: ...


@dataclass
class _Running:
    """A settlement on the settler: the answers it was given, and its end (what it settled, or its error)."""

    answers: list[_Held]
    end: _End[list[Settlement]]


def _taken_rows(text: str | None) -> list[list[Any]]:
    """The rows of a take's JSON (_take), with their times as datetimes: [] when it took nothing."""
    if text is None:
        return []
    rows: list[list[Any]] = json.loads(text)
    for row in rows:
        row[7] = datetime.fromisoformat(row[7])  # due_at
        row[8] = datetime.fromisoformat(row[8]) if row[8] is not None else None  # asked_for_at
    return rows


class WorkerBase(Generic[H, B]):
    """What both workers share: the options, the handlers' registry, and the loop's turns as steps."""

    _check_class: type[CheckBase]

    def __init__(self, conninfo: str, *, name: str | None = None, concurrency: int = DEFAULT_CONCURRENCY,
                 batch_size: int = DEFAULT_BATCH_SIZE, prefetch: int | None = None, lease_seconds: float = 30.0,
                 grace_seconds: float = 30.0, heartbeat: bool = True, clock: Clock | None = None):
        if concurrency < 1 or not 1 <= batch_size <= 10_000 or not 0 <= (prefetch or 0) <= 10_000:
            raise ValueError(f"concurrency must be at least 1 (not {concurrency}), batch_size from 1 to 10000 "
                             f"(not {batch_size}), prefetch from 0 to 10000 (not {prefetch})")
        self.conninfo = conninfo
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        self.concurrency = concurrency
        self.batch_size = batch_size
        self.prefetch = prefetch
        self._check_seconds: float | None = None  # a handler's time per check, a moving average; the loop's
        self.lease_seconds = lease_seconds
        self.grace_seconds = grace_seconds
        self.heartbeat = heartbeat
        self.clock = clock
        self._handlers: dict[str, H] = {}
        self._batch_handlers: dict[str, B] = {}
        # The classes declared by this worker on each connection, with the policy fields their handlers gave.
        self._policies: dict[str, dict[str, Any]] = {}
        self._stopping = threading.Event()
        self._notified = False
        self._next_heartbeat = 0.0
        self._due_but_not_taken = False
        # By (check id, lease token): a check whose lease ran out while its handler ran may be taken again by
        # this same worker, and then two runs of it are held at once. The loop adds, the settler lets go: they
        # change it one item at a time, and read it whole only by a copy (list(): no Python code runs in it,
        # so no other thread changes it meanwhile).
        self._held: dict[tuple[int, int], _Held] = {}
        self._answered: deque[list[_Held]] = deque()  # the calls answered: handlers append, the loop takes them
        # The loop's: the answers it took from _answered, for the next settlement; the calls it handed to the
        # places and has not had back (a place each, for a worker whose classes all have batch handlers).
        self._ready: list[_Held] = []
        self._calls_out = 0
        # The settlement running on the settler, if one is: set and cleared by the loop.
        self._settlement: _Running | None = None
        # After the settler's session was lost: no settlement before this time (time.monotonic()), the backoff
        # after it, and whether the answers it had wait again (nothing is taken until they are settled).
        self._settle_after = 0.0
        self._settle_backoff = 0.0
        self._settle_failed = False
        self._setup()

    def _setup(self) -> None:
        """The worker's own state: how it waits, and how its handlers' places get their calls."""
        raise NotImplementedError

    # ---- registration and control ------------------------------------------------------------------

    def handler(self, job_class: str, *, declare: bool = False, max_checks: int | None = None,
                max_attempts: int | None = None, backoff: timedelta | None = None,
                backoff_max: timedelta | None = None, timeout: timedelta | None = None) -> Callable[[H], H]:
        """Registers the decorated function as the handler of a worker class.

        With ``declare=True`` or a policy field, the worker declares the class itself once connected (as
        ``declare_worker_class``: a worker class unless it is one, the fields given set, the others left as
        they are; a runner's class is refused, ``Refused`` from ``run()``/``drain()``). ``max_checks``: how
        many times a check may ask to be looked at again, 5 by default (0: no limit)."""
        return self._register(job_class, self._handlers, self._batch_handlers, declare, max_checks=max_checks,
                              max_attempts=max_attempts, backoff=backoff, backoff_max=backoff_max, timeout=timeout)

    def batch_handler(self, job_class: str, *, declare: bool = False, max_checks: int | None = None,
                      max_attempts: int | None = None, backoff: timedelta | None = None,
                      backoff_max: timedelta | None = None,
                      timeout: timedelta | None = None) -> Callable[[B], B]:
        """Registers the decorated function as the batch handler of a worker class: it gets a list of up to
        ``batch_size`` checks of the class in one call, and returns one answer per check, in their order (a
        handler's answer, or an exception instance to fail that check). If it raises, every check of the
        call fails with its error. ``declare`` and the policy fields as for ``handler``."""
        return self._register(job_class, self._batch_handlers, self._handlers, declare, max_checks=max_checks,
                              max_attempts=max_attempts, backoff=backoff, backoff_max=backoff_max, timeout=timeout)

    def _register(self, job_class: str, into: dict[str, T], other: dict[str, Any], declare: bool,
                  **policy: Any) -> Callable[[T], T]:
        """The decorator that makes a function the class's handler (into: its kind's registry); a class has one
        handler or one batch handler, so the other kind's is dropped."""

        def register(function: T) -> T:
            other.pop(job_class, None)
            into[job_class] = function
            return function

        given = {field: value for field, value in policy.items() if value is not None}
        if declare or given:
            self._policies[job_class] = given
        else:
            self._policies.pop(job_class, None)
        return register

    @property
    def classes(self) -> list[str]:
        return sorted({*self._handlers, *self._batch_handlers})

    def _started(self, until_idle: bool) -> int:
        """Logs the start of a run (or a drain): the level its start and stop are logged at."""
        if not self.classes:
            raise ValueError("no handlers registered: decorate one with @worker.handler('job_class')")
        # A drain is one pass, often in a loop of its own: its start and stop are not news.
        level = logging.DEBUG if until_idle else logging.INFO
        log.log(level, "worker %s started: classes %s, concurrency %d, lease %gs", self.name,
                ",".join(self.classes), self.concurrency, self.lease_seconds)
        return level

    def _signalled(self, signum: int) -> None:
        log.info("worker %s: %s received, stopping (grace period %gs)", self.name, signal.Signals(signum).name,
                 self.grace_seconds)

    def _connection_lost(self, error: psycopg.OperationalError, backoff: float,
                         session: str = "database connection") -> float | None:
        """After the database went away (a restart, a failover, a cut session): how long to wait before
        connecting again (None: stopping, so not at all). What is held stays held until its lease ends; the
        answers that were not sent are sent after reconnecting. ``session``: which one, as the log line
        names it (the loop's, or the settler's)."""
        if self._stopping.is_set():
            log.error("worker %s: %s lost while stopping (%s)", self.name, session, error)
            return None
        text = str(error).strip()
        log.error("worker %s: %s lost (%s); reconnecting in %gs", self.name, session,
                  text.splitlines()[0] if text else type(error).__name__, backoff)
        return backoff

    # ---- the loop's turns ----------------------------------------------------------------------------

    def _connect_steps(self) -> Steps[None]:
        """A new connection's set-up: the classes declared (if asked), then LISTEN."""
        for job_class, policy in self._policies.items():
            declared = yield from declare_worker_class_steps(job_class, **policy)
            log.info("worker %s: class %s %s, policy %s", self.name, job_class, declared, _policy_text(policy))
        yield Statement("LISTEN prescient_worker", [])

    def _turn(self, settled: list[Settlement], until_idle: bool) -> Steps[float | None]:
        """One turn of the loop: how long to wait before the next (None: the loop ends, stopping or idle in
        drain mode). The settlements run beside it, on the settler."""
        self._settle_when_due(settled)
        if self._stopping.is_set():
            return None
        timeout = self._until_settler_due()
        room = self._room()
        if room > 0:
            taken = yield from self._take(room)
            if taken:
                return 0.0
            if until_idle and not self._held and self._settlement is None:
                return None
            if not until_idle:  # nothing to take: until the next due time, too
                timeout = min(timeout, (yield from self._until_due()))
        # Wake for the handlers' answers, a settlement's end, a notification, the next heartbeat, or the next
        # due time.
        return timeout

    def _room(self) -> int:
        """How many checks the next take asks for (0: none now).

        None while a batch of answers waits behind the settlement running (takes would outrun settlements),
        nor after a settlement failed, until its answers are settled. A worker whose classes all have batch
        handlers asks for a batch while a place is free: each call holds a place, so the next batch is taken
        (and run) while the last one's answers are settled. Else every place busy, and the next checks taken
        ahead, so that a place that frees starts the next at once; with places busy, it takes when half of
        what it holds ahead is free: takes stay big, not one per answer (a take costs about as much for 1
        check as for 100)."""
        if self._settle_failed or (self._settlement is not None and len(self._ready) >= self.batch_size):
            return 0
        if not self._handlers:
            return self.batch_size if self._calls_out < self.concurrency else 0
        ahead = self._ahead()
        free = self.concurrency + ahead - len(self._held)
        if free > 0 and (len(self._held) < self.concurrency or 2 * free >= ahead):
            return min(free, self.batch_size)
        return 0

    def _ahead(self) -> int:
        """How many checks to hold beyond one per place: ``prefetch`` if set, else what the places are
        expected to start within PREFETCH_SECONDS (one per place until a handler's time is known), at most
        a batch. Without heartbeats nothing: a check waiting for a place would lose its lease."""
        if not self.heartbeat:
            return 0
        if self.prefetch is not None:
            return self.prefetch
        if self._check_seconds is None:
            return self.concurrency
        expected = int(self.concurrency * PREFETCH_SECONDS / max(self._check_seconds, 1e-6))
        return max(self.concurrency, min(self.batch_size, expected))

    def _release(self, calls: list[list[_Held]]) -> Steps[None]:
        """A graceful stop's first step: lets go of the calls taken and not started (at once), and the steps that
        give their checks back (their leases run out if they are not run: the connection is gone)."""
        self._calls_out -= len(calls)
        unstarted = [held for call in calls for held in call]
        for held in unstarted:
            del self._held[held.key]
        return self._release_steps(unstarted)

    def _release_steps(self, unstarted: list[_Held]) -> Steps[None]:
        if not unstarted:
            return
        try:
            [(count,)] = yield Statement("SELECT prescient.worker_release(%s, %s::bigint[], %s::bigint[])",
                                         [self.name, [h.check.id for h in unstarted], [h.token for h in unstarted]])
            log.info("worker %s: released %d checks not started: %s", self.name, count,
                     _ids(h.check.id for h in unstarted))
        except psycopg.Error as e:
            log.warning("worker %s: could not release %s (%s); their leases will run out", self.name,
                        _ids(h.check.id for h in unstarted), e)

    def _grace_turn(self, settled: list[Settlement], deadline: float) -> float | None:
        """A turn of the grace period: running handlers' answers settled, their leases renewed; how long to
        wait for more (None: none left, or the period is over). A settlement running is waited for."""
        self._settle_when_due(settled)
        if self._settlement is not None:
            return MAX_SLEEP_SECONDS  # its end wakes the loop
        if not self._held or time.monotonic() >= deadline:
            return None
        return min(self._until_settler_due(), max(0.0, deadline - time.monotonic()))

    def _left_running(self) -> None:
        if self._held:
            log.warning("worker %s: still running after the grace period of %gs: check(s) %s; another worker "
                        "takes them when their leases run out", self.name, self.grace_seconds,
                        _ids(check_id for check_id, _ in self._held))

    # ---- the calls ----------------------------------------------------------------------------------

    def _now(self) -> datetime | None:
        return self.clock() if self.clock is not None else None

    def _dispatch(self, call: list[_Held]) -> None:
        """Hands a call (one check, or a batch handler's checks) to the handlers' places."""
        raise NotImplementedError

    def _hand_out(self, call: list[_Held]) -> None:
        self._calls_out += 1
        self._dispatch(call)

    def _take(self, places: int) -> Steps[int]:
        # The take as one JSON text, read by the json module's C parser: psycopg's pure-Python libpq wrapper
        # (Debian ships no C extension) spends more reading a row's 15 values one by one than the server
        # spends taking it (docs/performance.md, "Known limits").
        with translated():
            taken = yield Statement(
                "SELECT json_agg(json_build_array(id, job, entity_name, entity_key, job_key, group_key, payload,"
                " due_at, asked_for_at, check_count, attempts, last_error, traceparent, tracestate,"
                " lease_token))::text"
                " FROM prescient.worker_take(%s, %s::text[], %s, %s, %s::timestamptz)",
                [self.name, self.classes, places, self.lease_seconds, self._now()])
        rows = _taken_rows(taken[0][0])
        if not rows:
            return 0
        self._due_but_not_taken = False
        if not self._held:
            # The first lease held: heartbeats start a third of a lease from now. Later takes leave the
            # schedule alone (their leases are fresh), or frequent takes would put off the older ones' renewal.
            self._next_heartbeat = time.monotonic() + self.lease_seconds / 3
        batches: dict[str, list[_Held]] = {}
        for row in rows:
            check = self._check_class(*row[:-1], _lease=_Lease(self.name, row[-1], self.clock), _clock=self.clock)
            held = _Held(check, token=row[-1])
            self._held[held.key] = held
            if held.check.job in self._batch_handlers:
                batches.setdefault(held.check.job, []).append(held)
            else:
                self._hand_out([held])
        for batch in batches.values():
            self._hand_out(batch)
        log.debug("worker %s took %s", self.name, _ids(row[0] for row in rows))
        return len(rows)

    # ---- settling ----------------------------------------------------------------------------------

    def _settle_on_settler(self, steps: Steps[list[Settlement]]) -> _End[list[Settlement]]:
        """Starts the steps on the settler, on its own connection (opened when needed, dropped when lost);
        their end wakes the loop."""
        raise NotImplementedError

    def _settle_when_due(self, settled: list[Settlement]) -> None:
        """Reads the end of the settlement that ended (its settlements into ``settled``), takes in the calls
        answered, and starts the next settlement if none runs: of the answers ready, and the heartbeat if it
        is due. A session lost under a settlement is raised here while stopping, as the loop's own would be."""
        running = self._settlement
        if running is not None and running.end.done():
            self._settlement = None
            self._ended(running, settled)
        while self._answered:
            call = self._answered.popleft()
            self._calls_out -= 1
            self._ready += call
        heartbeat = self.heartbeat and bool(self._held) and time.monotonic() >= self._next_heartbeat
        if self._settlement is not None or time.monotonic() < self._settle_after or not (self._ready or heartbeat):
            return
        answers, self._ready = self._ready, []
        if answers:
            seconds = sum(h.seconds for h in answers) / len(answers)
            self._check_seconds = seconds if self._check_seconds is None else 0.7 * self._check_seconds + 0.3 * seconds
        if heartbeat:
            self._next_heartbeat = time.monotonic() + self.lease_seconds / 3
        self._settlement = _Running(answers, self._settle_on_settler(self._settlement_steps(answers, heartbeat)))

    def _ended(self, running: _Running, settled: list[Settlement]) -> None:
        try:
            settled += running.end.result()
        except psycopg.OperationalError as e:
            # Its answers wait again, first in line (those settled in their handlers' transactions that it let
            # go of are decided); the settler's next session is opened after the loop's reconnect backoff.
            unsettled = [h for h in running.answers if h.key in self._held]
            self._ready[:0] = unsettled
            if self._stopping.is_set():
                raise  # as the loop's own session lost while stopping: what is left is left to the leases
            wait = self._connection_lost(e, self._settle_backoff, "settler's database connection")
            self._settle_after = time.monotonic() + (wait or 0.0)
            self._settle_backoff = next_reconnect_wait(self._settle_backoff)
            self._settle_failed = bool(unsettled)
            return
        self._settle_backoff = 0.0
        self._settle_failed = False

    def _until_settler_due(self) -> float:
        """Seconds until the settler has work: answers ready wait for nothing, a heartbeat for its time, both
        for the backoff after a lost session; while a settlement runs, its end wakes the loop."""
        if self._settlement is not None:
            return MAX_SLEEP_SECONDS
        due = 0.0 if self._ready else self._until_heartbeat() if self._held else MAX_SLEEP_SECONDS
        return max(due, self._settle_after - time.monotonic())

    def _settlement_due(self) -> bool:
        """Whether the loop, about to sleep, has a settlement to read or to start: its wait returns at once.
        Not while one runs (the answers that came meanwhile wait for its end, which wakes the loop)."""
        if self._settlement is not None:
            return self._settlement.end.done()
        return bool(self._answered or self._ready) and time.monotonic() >= self._settle_after

    def _settlement_steps(self, answers: list[_Held], heartbeat: bool) -> Steps[list[Settlement]]:
        """The settler's work: the answers settled, then, if it is due, the heartbeat of what is still held."""
        settled = yield from self._settle(answers)
        if heartbeat:
            yield from self._extend()
        return settled

    def _settle(self, answered: list[_Held]) -> Steps[list[Settlement]]:
        """Sends answers: one worker_complete and one worker_fail for all of them, but for those settled in
        their handlers' transactions."""
        if not answered:
            return []
        settled_by_handlers = yield from self._settled_in_transaction([h for h in answered if h.lease.in_transaction])
        answered = [h for h in answered if h.key in self._held]
        completed = [h for h in answered if h.error is None]
        failed = [h for h in answered if h.error is not None]
        # One row per answer, in the order sent.
        settled = (yield from self._complete(completed)) + (yield from self._fail(failed))
        for held, settlement in zip(completed + failed, settled):
            self._log_settlement(held.check, settlement)
            del self._held[held.key]
        return settled_by_handlers + settled

    def _settled_in_transaction(self, answered: list[_Held]) -> Steps[list[Settlement]]:
        """Of the checks whose handlers settled them in their own transactions, lets go (unheld, no call of
        its own) of each whose settlement committed, or whose lease was lost, and returns what became of them.
        A settlement that did not commit (its transaction, or the savepoint it was made in, rolled back)
        leaves the check held, with the handler's error, or a failure saying so, as its answer."""
        settled = []
        probed: list[tuple[_Held, str, Settlement]] = []  # of each settlement made and not refused
        for held in answered:
            lost = held.lease.lost
            if lost is not None:  # the handler was told (LeaseLost): the check is not this worker's any more
                settled.append(lost)
                self._log_settlement(held.check, lost)
                del self._held[held.key]
            else:
                probed += ((held, xact, s) for xact, s in held.lease.in_transaction if s.outcome != "refused")
        if not probed:
            return settled
        # Whether each settlement's transaction committed, and whether the check is still leased to this
        # worker as it was taken (a settlement in a savepoint rolled back leaves it so). Read without waiting
        # for the handlers' transactions: a committed one's rows are seen, an open one is "in progress".
        with translated():
            rows = yield Statement(
                "SELECT pg_xact_status(x.xact::xid8), EXISTS (SELECT FROM prescient.future_job f WHERE f.id = x.id"
                " AND f.claimed_by = %s AND f.check_count = x.check_count AND f.attempts = x.attempts)"
                " FROM unnest(%s::text[], %s::bigint[], %s::int[], %s::int[]) WITH ORDINALITY"
                " AS x(xact, id, check_count, attempts, n) ORDER BY x.n",
                [self.name, [xact for _, xact, _ in probed], [h.check.id for h, _, _ in probed],
                 [h.check.check_count for h, _, _ in probed], [h.check.attempts for h, _, _ in probed]])
        for (held, _, settlement), (status, still_leased) in zip(probed, rows):
            if held.key not in self._held:
                continue  # another of its settlements decided it
            if status == "in progress":
                log.warning("%s: the handler returned before its transaction, which settles the check, ended;"
                            " left to that transaction (if it rolls back, to the lease)", _about(held.check))
            elif status == "committed" and not still_leased:
                settled.append(settlement)
                self._log_settlement(held.check, settlement)
            else:
                continue
            del self._held[held.key]
        for held in answered:
            if held.key in self._held and not held.raised:
                held.error = ("the handler's settlement in its own transaction did not take effect (the "
                              "transaction, or the savepoint it was made in, rolled back, or the database refused it)")
        return settled

    def _complete(self, answers: list[_Held]) -> Steps[list[Settlement]]:
        if not answers:
            return []
        try:
            with translated():
                return (yield from self._settle_call(
                    f"prescient.worker_complete({COMPLETE_ARGUMENTS})",
                    answers, [h.next_at for h in answers], [h.result_json for h in answers],
                    *_business_arrays([h.in_business_time for h in answers])))
        except (Refused, psycopg.DataError) as refusal:
            if len(answers) > 1:
                # One bad answer refuses the whole call: settle them one by one, so only it fails.
                one_by_one = []
                for held in answers:
                    one_by_one += yield from self._complete([held])
                return one_by_one
            # The database refused this answer (a result over 64 KiB, JSON it cannot store such as "\u0000",
            # an unknown calendar or a delay that is not one): the check fails with the reason.
            held = answers[0]
            reason = refusal.reason if isinstance(refusal, Refused) else str(refusal).strip().splitlines()[0]
            held.error = f"the answer was refused: {reason}"
            return (yield from self._fail([held]))

    def _fail(self, answers: list[_Held]) -> Steps[list[Settlement]]:
        if not answers:
            return []
        with translated():
            return (yield from self._settle_call(
                "prescient.worker_fail(%s, %s::bigint[], %s::bigint[], %s::text[], %s::timestamptz)",
                answers, [h.error for h in answers]))

    def _settle_call(self, function_call: str, answers: list[_Held],
                     *per_check: list[Any] | None) -> Steps[list[Settlement]]:
        # The settlements as one JSON text, as the take's (_take): read row by row, their four values cost the
        # pure-Python libpq wrapper more than the server's settlement of them.
        params = [self.name, [h.check.id for h in answers], [h.token for h in answers], *per_check, self._now()]
        [(text,)] = yield Statement(
            "SELECT json_agg(json_build_array(s.id, s.outcome, s.next_check_at, s.last_error) ORDER BY s.n)::text"
            f" FROM {function_call} WITH ORDINALITY AS s(id, outcome, next_check_at, last_error, n)", params)
        return [Settlement(check_id, outcome, None if next_at is None else datetime.fromisoformat(next_at), error)
                for check_id, outcome, next_at, error in json.loads(text or "[]")]

    def _extend(self) -> Steps[None]:
        """The heartbeat (every lease/3, after a settlement): one worker_extend for every check held, its
        handler running or its answer not yet settled, but those settled in their handlers' transactions."""
        running = [h for h in list(self._held.values()) if not h.lease.heartbeat_refused and not h.lease.settling]
        if not running:
            return
        with translated():
            rows = yield Statement(
                "SELECT id, refusal FROM prescient.worker_extend(%s, %s::bigint[], %s::bigint[], %s, %s::timestamptz)",
                [self.name, [h.check.id for h in running], [h.token for h in running], self.lease_seconds,
                 self._now()])
        for held, (check_id, refusal) in zip(running, rows):
            if refusal is not None and not held.lease.settling:  # else settled meanwhile, in its handler
                held.lease.heartbeat_refused = True
                log.warning("%s: heartbeat refused, lease lost: %s", _about(held.check), refusal)

    def _until_due(self) -> Steps[float]:
        """Seconds until a check of these classes may be taken, on the database's clock (or the pinned
        one), at most a minute."""
        now = self._now()
        with translated():
            [(seconds,)] = yield Statement(
                "SELECT extract(epoch FROM prescient.worker_next_due(%s::text[], %s::timestamptz)"
                " - coalesce(%s::timestamptz, clock_timestamp()))::float8",
                [self.classes, now, now])
        if seconds is None:
            return MAX_SLEEP_SECONDS
        if seconds > 0:
            return min(MAX_SLEEP_SECONDS, float(seconds))
        # Due, yet the take got nothing. Once, it came due between the take and this look: take again at
        # once. Twice, it is held back (its group's first check is leased elsewhere): look again in a second.
        if not self._due_but_not_taken:
            self._due_but_not_taken = True
            return 0.0
        return 1.0

    def _until_heartbeat(self) -> float:
        if not self.heartbeat:
            return MAX_SLEEP_SECONDS
        return max(0.0, min(MAX_SLEEP_SECONDS, self._next_heartbeat - time.monotonic()))

    def _on_notify(self, _notify: psycopg.Notify) -> None:
        self._notified = True

    # ---- the handlers' calls ------------------------------------------------------------------------

    def _call(self, call: list[_Held]) -> Any:
        """Calls the handler for a call's checks: a handler with its one check, or a batch handler with the
        list. What it returns (an answer, or the batch's answers: for the async worker, awaitable)."""
        job = call[0].check.job
        handler: Any = self._handlers.get(job)
        if handler is not None:
            return handler(call[0].check)
        batch_handler: Any = self._batch_handlers[job]
        return batch_handler([held.check for held in call])

    def _answered_with(self, call: list[_Held], outcome: Any, started: float) -> None:
        """Takes what the handler's call gave (its return value, or the exception it raised) as the answers of
        the call's checks, and hands them to the loop."""
        seconds = time.monotonic() - started
        job = call[0].check.job
        if isinstance(outcome, BaseException):
            for held in call:  # the call's failure fails each of its checks
                _take_error(held, outcome)
        elif job in self._handlers:
            _take_one(call[0], outcome)
        else:
            _take_batch_answers(job, outcome, call)
        for held in call:
            held.seconds = seconds / len(call)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%d check(s) of %s ran in one call in %.3fs: %s", len(call), job, seconds,
                      _ids(held.check.id for held in call))
        self._answered.append(call)

    def _log_settlement(self, check: CheckBase, s: Settlement) -> None:
        if s.outcome in ("done", "rescheduled") and not log.isEnabledFor(logging.INFO):
            return  # the common case at a quiet level: not worth even naming the check
        about = _about(check)
        if s.outcome == "lease_lost":
            log.warning("%s: lease lost, not settled: %s", about, s.last_error)
        elif s.outcome == "rescheduled":
            log.info("%s rescheduled to %s", about, _when(s.next_check_at))
        elif s.outcome == "done":
            log.info("%s done", about)
        elif s.outcome == "retried":
            log.warning("%s failed, retried at %s: %s", about, _when(s.next_check_at), _first_line(s.last_error))
        else:
            log.warning("%s %s: %s", about, s.outcome, _first_line(s.last_error))




def _take_one(held: _Held, answer: Any) -> None:
    try:
        _take_answer(held, answer)
    except Exception as e:  # noqa: BLE001 - a bad answer fails its own check
        _take_error(held, e)


def _take_batch_answers(job: str, outcome: Any, call: list[_Held]) -> None:
    """A batch handler's answers: one per check, in their order; an exception instance fails its check."""
    try:
        answers = list(outcome)
        if len(answers) != len(call):
            raise TypeError(f"the batch handler of {job} gave {len(answers)} answers for {len(call)} checks: "
                            "give one answer per check, in their order")
    except Exception as e:  # noqa: BLE001 - the call's failure fails each of its checks
        for held in call:
            _take_error(held, e)
        return
    for held, answer in zip(call, answers):
        if isinstance(answer, BaseException):  # its traceback, if it has one, is where it was raised
            _take_error(held, answer)
        else:
            _take_one(held, answer)


def _take_answer(held: _Held, answer: Any) -> None:
    if held.lease.in_transaction:
        return  # the handler answered in its transaction (complete_in, fail_in): what it returns is not read
    held.next_at, held.in_business_time, held.result_json = _read_answer(held.check, answer)


def _take_error(held: _Held, error: BaseException) -> None:
    """A handler's exception as its check's error: CheckFailed's text exactly, another as "Type: message" and,
    on the lines after it, its traceback (bounded: _with_traceback)."""
    held.raised = True
    if isinstance(error, CheckFailed):
        held.error = _sendable(str(error))
    else:
        summary = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        held.error = _sendable(_with_traceback(summary, error))
        # An exception nobody meant: its traceback where an operator looks (CheckFailed is a deliberate
        # failure, which the settlement's line says; LeaseLost is logged where the lease was lost).
        if not isinstance(error, LeaseLost):
            log.warning("%s: the handler raised %s", _about(held.check), _sendable(summary), exc_info=error)


def _with_traceback(summary: str, error: BaseException) -> str:
    """The summary line, then the exception's traceback as Python prints it, within ERROR_TEXT_BYTES: when it
    is longer, its first line and as many of its last lines (the innermost frames, the exception) as fit, with
    a line saying how many were left out between. An exception never raised has no traceback: the summary."""
    if error.__traceback__ is None:
        return summary
    lines = "".join(traceback.format_exception(error)).rstrip("\n").splitlines()
    text = "\n".join([summary, *lines])
    if len(text.encode()) <= ERROR_TEXT_BYTES:
        return text
    head = [summary, lines[0]]
    budget = ERROR_TEXT_BYTES - len("\n".join(head).encode()) - len(f"\n  ... {len(lines)} lines left out".encode())
    kept: list[str] = []
    for line in reversed(lines[1:]):
        budget -= len(line.encode()) + 1
        if budget < 0:
            break
        kept.insert(0, line)
    while kept and kept[0].startswith("    "):  # a frame's source line whose "File" line was left out
        kept.pop(0)
    return "\n".join([*head, f"  ... {len(lines) - 1 - len(kept)} lines left out", *kept])


def _first_line(text: str | None) -> str | None:
    """An error's first line, for a log line of its own (a traceback follows it in the history)."""
    return None if text is None else text.split("\n", 1)[0]


def _read_answer(check: CheckBase, answer: Any) -> tuple[datetime | None, BusinessDelay | None, str | None]:
    """A handler's answer as (next time, next time in business time, result as JSON text). Checked here, in
    the handler's thread, so a bad answer fails its own check, not the batch it would be sent with; what only
    the database knows (the calendars, how a delay reads) is judged there, and a refusal fails its check too."""
    if answer is None:
        return None, None, None
    if isinstance(answer, Done):
        return None, None, None if answer.result is None else json.dumps(answer.result)
    if isinstance(answer, timedelta):
        return (check._clock() if check._clock is not None else datetime.now(timezone.utc)) + answer, None, None
    if isinstance(answer, datetime):
        if answer.tzinfo is None or answer.utcoffset() is None:
            raise TypeError(f"the handler of {check.job} answered {answer.isoformat()}, a time without a time "
                            "zone: answer an aware datetime")
        return answer, None, None
    if isinstance(answer, BusinessDelay):
        # Sent in text arrays: anything else would fail the whole call's statement, not this check alone.
        if not isinstance(answer.calendar, str) or not isinstance(answer.delay, str):
            raise TypeError(f"the handler of {check.job} answered {answer!r}: give the calendar's name and the "
                            "delay as strings, such as BusinessDelay('support-eu', '4h')")
        return None, answer, None
    raise TypeError(f"the handler of {check.job} answered a {type(answer).__name__}: answer a datetime (look "
                    "again then), a timedelta (look again that long from now), prescient.BusinessDelay(calendar, "
                    "delay) (look again after that much of the calendar's open time), None (done) or "
                    "prescient.Done(result)")


def _business_arrays(answers: list[BusinessDelay | None]) -> tuple[list[str | None] | None,
                                                                   list[str | None] | None]:
    """worker_complete's p_calendar and p_business_delay for these answers: NULL both unless one of them is in
    business time, so that a call without one costs the database nothing more."""
    if not any(answers):
        return None, None
    return ([None if a is None else a.calendar for a in answers],
            [None if a is None else a.delay for a in answers])


def _sendable(text: str) -> str:
    """Error text PostgreSQL accepts: no NUL, valid UTF-8 (a lone surrogate is escaped)."""
    return text.replace("\x00", "\\x00").encode("utf-8", "backslashreplace").decode("utf-8")


def _policy_text(policy: dict[str, Any]) -> str:
    return " ".join(f"{field}={value}" for field, value in policy.items()) or "as it was"


def _when(moment: datetime | None) -> str:
    return moment.isoformat() if moment is not None else "no time"


def _about(check: CheckBase) -> str:
    return f"check {check.id} ({check.job} {check.entity_name}/{check.entity_key})"


def _ids(ids: Any) -> str:
    return ",".join(str(i) for i in ids)
