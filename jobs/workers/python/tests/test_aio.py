"""prescient.aio against a real database: the enqueue functions on an AsyncConnection, and the asyncio worker
(answers, settling in the handler's transaction, places, taking ahead, heartbeats, wake-ups, a graceful stop
on cancellation)."""

import asyncio
import os
import subprocess
import sys
import tempfile
import time
import unittest
from datetime import timedelta
from pathlib import Path

import psycopg

import prescient
import prescient.aio
from tests import support
from tests.support import T, PinnedClock
from tests.test_types import mypy_strict


class AsyncTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        self.conn = await psycopg.AsyncConnection.connect(support.database_url(), autocommit=True)
        self.addAsyncCleanup(self.conn.close)
        self.sync = support.connect()
        self.addCleanup(self.sync.close)
        # A class per test: the tests share one database, and a worker takes every due check of its classes.
        self.job = support.declare_worker_class(self.sync, "aio_" + self.id().rsplit(".", 1)[-1][5:60])
        self.clock = PinnedClock(T)

    def worker(self, **options) -> prescient.aio.Worker:
        options.setdefault("clock", self.clock)
        return prescient.aio.Worker(support.database_url(), name="aio-worker", **options)

    async def schedule(self, key: str, **options) -> int:
        options.setdefault("delay", timedelta(hours=1))
        return (await prescient.aio.schedule(self.conn, self.job, "things", key, clock=self.clock, **options)).id

    def due_now(self, key: str, **options) -> int:
        return support.schedule_due_now(self.sync, self.job, key, **options)

    def claimed_by(self, ids: list[int]) -> list[str | None]:
        return [(support.pending(self.sync, i) or {}).get("claimed_by") for i in ids]


class EnqueueTest(AsyncTest):
    async def test_schedule_cancel_and_reschedule_join_the_connections_transaction(self):
        async with self.conn.transaction(force_rollback=True):
            rolled_back = await self.schedule("rolled-back", job_key="k-rolled-back")
        self.assertIsNone(support.pending(self.sync, rolled_back))

        scheduled = await prescient.aio.schedule(self.conn, self.job, "things", "1", delay=timedelta(hours=1),
                                                 job_key="k-1", payload={"n": 1}, priority=2, clock=self.clock)
        self.assertEqual((scheduled.job_key, scheduled.next_check_at, scheduled.status),
                         ("k-1", T + timedelta(hours=1), "created"))
        row = support.pending(self.sync, scheduled.id)
        self.assertEqual((row["payload"], row["priority"]), ({"n": 1}, 2))

        moved = await prescient.aio.reschedule(self.conn, job_key="k-1", delay=timedelta(hours=2), clock=self.clock)
        self.assertEqual((moved.id, moved.next_check_at), (scheduled.id, T + timedelta(hours=2)))
        self.assertIsNone(await prescient.aio.reschedule(self.conn, job_key="k-none", at=T + timedelta(hours=1)))
        self.assertEqual(await prescient.aio.cancel(self.conn, check_id=scheduled.id), scheduled.id)
        self.assertIsNone(await prescient.aio.cancel(self.conn, check_id=scheduled.id))
        self.assertEqual(support.history(self.sync, scheduled.id)[0]["outcome"], "cancelled")

    async def test_schedule_many_and_set_check_policy_on_an_async_connection(self):
        items = [{"job": self.job, "entity_name": "things", "entity_key": str(n), "at": T + timedelta(hours=n),
                  "job_key": f"{self.job}:{n}"} for n in (1, 2)]
        async with self.conn.transaction():
            first, second = await prescient.aio.schedule_many(self.conn, items, clock=self.clock)
            self.assertTrue(await prescient.aio.set_check_policy(self.conn, second.id, max_checks=60))
        self.assertEqual([first.next_check_at, second.next_check_at], [T + timedelta(hours=1), T + timedelta(hours=2)])
        self.assertEqual([support.pending(self.sync, i)["max_checks"] for i in (first.id, second.id)], [None, 60])
        [reported] = await prescient.aio.schedule_many(self.conn, items[:1], report_conflicts=True, clock=self.clock)
        self.assertEqual((reported.id, reported.status), (first.id, "conflict"))
        with self.assertRaises(prescient.Refused):
            await prescient.aio.set_check_policy(self.conn, first.id, max_attempts=-1)

    async def test_refusals_are_the_clients_exceptions_and_bad_input_is_refused_before_sending(self):
        await self.schedule("held", job_key="k-held")
        with self.assertRaises(prescient.Conflict) as conflict:
            await self.schedule("again", job_key="k-held")
        self.assertEqual(conflict.exception.job_key, "k-held")
        self.assertIsNotNone(conflict.exception.existing_id)
        with self.assertRaises(prescient.Refused):
            await self.schedule("bad", priority=12)
        with self.assertRaises(TypeError):
            await prescient.aio.schedule(self.conn, self.job, "things", "both", delay=timedelta(hours=1), at=T)
        with self.assertRaises(prescient.NotFound):
            await prescient.aio.retry(self.conn, 987_654_321)
        self.assertEqual(await prescient.aio.declare_worker_class(self.conn, self.job, max_checks=9), "known")
        self.assertEqual(await prescient.aio.declare_worker_class(self.conn, self.job + "_new"), "added")
        with self.assertRaises(prescient.Refused):
            await prescient.aio.declare_worker_class(self.conn, "cron")  # a runner's class

    async def test_a_dead_letter_is_retried_and_a_schedule_added(self):
        await prescient.aio.declare_worker_class(self.conn, self.job, max_attempts=1)
        check_id = await self.schedule("dead")
        self.clock.advance(timedelta(hours=1))
        worker = self.worker()
        worker.handler(self.job)(_raises)
        [failed] = await worker.drain()
        self.assertEqual(failed.outcome, "failed")
        due = await prescient.aio.retry(self.conn, check_id)
        self.assertEqual((support.pending(self.sync, check_id)["next_check_at"], due),
                         (due, support.pending(self.sync, check_id)["next_check_at"]))
        with self.assertRaises(prescient.Conflict):
            await prescient.aio.retry(self.conn, check_id)
        version = await prescient.aio.cron_add(self.conn, f"{self.job}-daily", "0 9 * * *", job=self.job,
                                               clock=self.clock)
        self.assertEqual(version, 1)

    async def test_migrate_makes_the_schema_on_an_empty_database(self):
        with support.empty_database("prescient_aio_migrate") as url:
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
                applied = await prescient.aio.migrate(conn, slot_seconds=1)
                self.assertIn("migration", {a.kind for a in applied})
                self.assertEqual(await prescient.aio.migrate(conn), [])


async def _raises(check: prescient.aio.Check) -> None:
    raise prescient.CheckFailed("down")


class WorkerTest(AsyncTest):
    async def test_each_answer_becomes_its_outcome_and_a_plain_function_is_refused(self):
        answers = {
            "later": lambda check: check.due_at + timedelta(minutes=30),
            "in": lambda check: timedelta(minutes=10),
            "done": lambda check: None,
            "kept": lambda check: prescient.Done({"to": check.entity_key}),
            "raises": lambda check: {}["missing"],
        }
        ids = {key: await self.schedule(key, payload={"case": key}) for key in [*answers, "exact"]}
        worker = self.worker()

        @worker.handler(self.job)
        async def handle(check: prescient.aio.Check):
            await asyncio.sleep(0)
            if check.entity_key == "exact":
                raise prescient.CheckFailed("the CRM said 503")
            return answers[check.entity_key](check)

        self.assertEqual(await worker.drain(), [], "ran a check before its time")
        self.clock.advance(timedelta(hours=1))
        settled = {s.check_id: s for s in await worker.drain()}
        due = T + timedelta(hours=1)
        self.assertEqual((settled[ids["later"]].outcome, settled[ids["later"]].next_check_at),
                         ("rescheduled", due + timedelta(minutes=30)))
        self.assertEqual(settled[ids["in"]].next_check_at, due + timedelta(minutes=10))
        self.assertEqual(settled[ids["done"]].outcome, "done")
        self.assertEqual(support.history(self.sync, ids["kept"])[0]["result"], {"to": "kept"})
        raised = support.pending(self.sync, ids["raises"])["last_error"]
        self.assertTrue(raised.startswith("KeyError: 'missing'\nTraceback (most recent call last):\n"), raised)
        self.assertEqual(support.pending(self.sync, ids["exact"])["last_error"], "the CRM said 503")

        plain = self.worker()
        plain.handler(self.job)(lambda check: None)  # not a coroutine function
        self.clock.advance(timedelta(minutes=30))
        refused = {s.check_id: s for s in await plain.drain()}[ids["later"]]
        self.assertEqual(refused.outcome, "retried")
        self.assertIn("not an awaitable", refused.last_error)

    async def test_at_most_concurrency_handlers_run_at_once_and_a_batch_handler_gets_its_checks(self):
        for n in range(7):
            self.due_now(f"c{n}")
        worker = self.worker(concurrency=3, batch_size=2, clock=None)
        running, most = 0, 0

        @worker.handler(self.job)
        async def handle(check):
            nonlocal running, most
            running += 1
            most = max(most, running)
            await asyncio.sleep(0.2)
            running -= 1

        self.assertEqual([s.outcome for s in await worker.drain()], ["done"] * 7)
        self.assertEqual(most, 3, "not side by side, or more than the concurrency")

        batched = [self.due_now(f"b{n}") for n in range(3)]
        calls = []

        @worker.batch_handler(self.job)
        async def handle_all(checks):
            calls.append([c.id for c in checks])
            return [prescient.Done(c.entity_key) for c in checks]

        worker.batch_size = 10
        self.assertEqual([s.outcome for s in await worker.drain()], ["done"] * 3)
        self.assertEqual(calls, [batched])

    async def test_settled_in_the_handlers_transaction_with_its_effect_or_rolled_back_and_failed(self):
        await self.conn.execute("CREATE TABLE aio_effects (check_id bigint NOT NULL)")
        kept, rolled_back = await self.schedule("kept"), await self.schedule("rolled-back")
        self.clock.advance(timedelta(hours=1))
        worker = self.worker()

        @worker.handler(self.job)
        async def handle(check: prescient.aio.Check):
            async with await psycopg.AsyncConnection.connect(support.database_url()) as conn:
                async with conn.transaction():
                    await conn.execute("INSERT INTO aio_effects VALUES (%s)", [check.id])
                    settlement = await check.complete_in(conn, prescient.Done("in tx"))
                    self.assertEqual(settlement.outcome, "done")
                    if check.entity_key == "rolled-back":
                        raise RuntimeError("after settling")

        with self.assertLogs("prescient.worker", level="INFO") as logs:
            settled = {s.check_id: s for s in await worker.drain()}
        self.assertEqual([line for line in logs.output if "lost" in line], [])
        self.assertEqual(settled[kept].outcome, "done")
        self.assertEqual(support.history(self.sync, kept)[0]["result"], "in tx")
        self.assertEqual(settled[rolled_back].outcome, "retried")
        self.assertTrue(support.pending(self.sync, rolled_back)["last_error"].startswith("RuntimeError: after"))
        effects = await (await self.conn.execute("SELECT check_id FROM aio_effects")).fetchall()
        self.assertEqual(effects, [(kept,)], "an effect lost, twice, or kept with its settlement rolled back")

    async def test_an_answer_in_business_time_returned_or_settled_in_the_handlers_transaction(self):
        calendar = support.set_desk_calendar(self.sync)
        returned, in_transaction = await self.schedule("returned"), await self.schedule("in-transaction")
        unknown = await self.schedule("unknown")
        worker = self.worker()

        @worker.handler(self.job)
        async def handle(check: prescient.aio.Check) -> prescient.BusinessDelay | None:
            if check.entity_key == "returned":
                return prescient.BusinessDelay(calendar, "3bd")
            if check.entity_key == "unknown":
                return prescient.BusinessDelay("nowhere", "3bd")
            async with await psycopg.AsyncConnection.connect(support.database_url()) as conn:
                async with conn.transaction():
                    await check.complete_in(conn, prescient.BusinessDelay(calendar, "3bd"))
            return None

        self.clock.advance(timedelta(hours=1))
        due = support.business_due(self.sync, calendar, self.clock(), "3bd")
        settled = {s.check_id: (s.outcome, s.next_check_at) for s in await worker.drain()}
        self.assertEqual(settled[returned], ("rescheduled", due))
        self.assertEqual(settled[in_transaction], ("rescheduled", due))
        self.assertEqual(settled[unknown][0], "retried")
        self.assertIn(f"check {unknown}: no calendar named 'nowhere'",
                      support.pending(self.sync, unknown)["last_error"])

    async def test_heartbeats_keep_the_lease_of_a_long_handler(self):
        check_id = self.due_now("long")
        worker = self.worker(lease_seconds=1.0, clock=None)
        stolen = []

        @worker.handler(self.job)
        async def handle(check):
            await asyncio.sleep(1.5)
            stolen.extend(self.sync.execute("SELECT id FROM prescient.worker_take('thief', %s, 10, 60)",
                                            [[self.job]]).fetchall())
            await asyncio.sleep(0.3)

        [settlement] = await worker.drain()
        self.assertEqual((settlement.check_id, settlement.outcome, stolen), (check_id, "done", []))

    def running(self) -> asyncio.Event:
        """Starts a worker on the server's clock in a task, stopped at the test's end: the event its handler
        sets."""
        worker = self.worker(clock=None)
        ran = asyncio.Event()

        @worker.handler(self.job)
        async def handle(check):
            ran.set()

        running = asyncio.create_task(worker.run())

        async def stop():
            worker.stop()
            await asyncio.wait_for(running, 5)

        self.addAsyncCleanup(stop)
        return ran

    async def test_a_sleeping_worker_wakes_on_a_notification(self):
        ran = self.running()
        await asyncio.sleep(0.5)  # asleep: nothing is pending, so until its next look in a minute
        self.due_now("wake")
        await asyncio.wait_for(ran.wait(), 3)

    async def test_a_cancelled_run_takes_ahead_then_gives_back_what_it_had_not_started_and_finishes_the_rest(self):
        ids = [self.due_now(f"ahead-{n}") for n in range(5)]
        worker = self.worker(concurrency=1, prefetch=2, clock=None)
        started, release = asyncio.Event(), asyncio.Event()

        @worker.handler(self.job)
        async def handle(check):
            started.set()
            await release.wait()

        running = asyncio.create_task(worker.run())
        await asyncio.wait_for(started.wait(), 5)
        self.assertEqual(self.claimed_by(ids), ["aio-worker"] * 3 + [None] * 2,
                         "not one running and the next two taken ahead")
        running.cancel()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(self.claimed_by(ids[1:3])):
            await asyncio.sleep(0.02)  # the running handler holds its place until the stop gave the others back
        self.assertFalse(running.done(), "stopped before its running handler finished")
        release.set()
        with self.assertRaises(asyncio.CancelledError):
            await asyncio.wait_for(running, 5)
        self.assertEqual(support.history(self.sync, ids[0])[0]["outcome"], "done")
        for check_id in ids[1:]:
            row = support.pending(self.sync, check_id)
            self.assertEqual((row["claimed_by"], row["attempts"]), (None, 0), "a check not started was kept")

    async def test_a_handler_past_the_grace_period_is_cancelled_and_its_check_left_to_its_lease(self):
        check_id = self.due_now("stuck")
        worker = self.worker(grace_seconds=0.3, clock=None)
        started, cancelled = asyncio.Event(), asyncio.Event()

        @worker.handler(self.job)
        async def handle(check):
            started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        running = asyncio.create_task(worker.run())
        await asyncio.wait_for(started.wait(), 5)
        stopping = time.monotonic()
        worker.stop()
        with self.assertLogs("prescient.worker", level="WARNING") as logs:
            await asyncio.wait_for(running, 5)
        self.assertLess(time.monotonic() - stopping, 2, "waited past the grace period")
        self.assertTrue(cancelled.is_set(), "the handler was not cancelled")
        self.assertIn(f"still running after the grace period of 0.3s: check(s) {check_id}", logs.output[0])
        self.assertEqual(self.claimed_by([check_id]), ["aio-worker"], "a check still running was given back")

    async def test_a_check_is_taken_and_run_while_the_last_ones_settlement_waits(self):
        # As the blocking worker's test: the first check's settlement waits for its row, locked by the test.
        first = self.due_now("first")
        worker = self.worker(clock=None)
        ran: asyncio.Queue[str] = asyncio.Queue()
        holder = support.connect(autocommit=False)
        self.addCleanup(holder.close)

        @worker.handler(self.job)
        async def handle(check):
            if check.id == first:
                holder.execute("SELECT FROM prescient.future_job WHERE id = %s FOR UPDATE", [first])
            ran.put_nowait(check.entity_key)

        with self.assertNoLogs("prescient.worker", level="WARNING"):
            running = asyncio.create_task(worker.run())
            self.addCleanup(holder.rollback)  # a failed test lets the worker go on, to stop
            self.assertEqual(await asyncio.wait_for(ran.get(), 5), "first")
            deadline = time.monotonic() + 5
            while not support.settlements_waiting_for_a_lock(self.sync) and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            second = self.due_now("second")
            try:
                self.assertEqual(await asyncio.wait_for(ran.get(), 5), "second")
            except asyncio.TimeoutError:
                self.fail("the second check was not taken while the first one's settlement waited")
            finally:
                holder.rollback()
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and (support.pending(self.sync, first)
                                                   or support.pending(self.sync, second)):
                await asyncio.sleep(0.02)
            worker.stop()
            await asyncio.wait_for(running, 5)
        self.assertEqual([support.history(self.sync, i)[0]["outcome"] for i in (first, second)], ["done", "done"])

    async def test_the_worker_carries_on_after_its_sessions_are_cut(self):
        ran = self.running()
        before = self.due_now("before-the-cut")  # a settlement: both sessions open
        await asyncio.wait_for(ran.wait(), 5)
        ran.clear()
        idle, deadline = 0, time.monotonic() + 5
        while idle < 2 and time.monotonic() < deadline:  # the loop asleep, the settler done with `before`
            await asyncio.sleep(0.05)
            idle = self.sync.execute("SELECT count(*) " + support.WORKER_SESSIONS_IDLE).fetchone()[0]
        cut = self.sync.execute("SELECT pg_terminate_backend(pid) " + support.WORKER_SESSIONS_IDLE).fetchall()
        self.assertEqual(cut, [(True,), (True,)])
        self.assertEqual(support.history(self.sync, before)[0]["outcome"], "done")
        after = self.due_now("after-the-cut")
        with self.assertLogs("prescient.worker", level="ERROR") as logs:
            await asyncio.wait_for(ran.wait(), 5)
            deadline = time.monotonic() + 5
            while support.pending(self.sync, after) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        self.assertIn("database connection lost", logs.output[0])
        self.assertEqual(support.history(self.sync, after)[0]["outcome"], "done", "not settled after the cut")


class ReadmeTest(unittest.TestCase):
    """The README's asyncio program, as it is written there."""

    def setUp(self):
        folder = tempfile.TemporaryDirectory()
        self.addCleanup(folder.cleanup)
        self.program = Path(folder.name) / "first_async.py"
        self.program.write_text(support.readme_block("asyncio"), encoding="utf-8")

    def test_the_program_runs_its_check_in_its_handlers_transaction(self):
        ran = subprocess.run([sys.executable, str(self.program)], env={**os.environ,
                             "DATABASE_URL": support.database_url()}, capture_output=True, text=True, timeout=60)
        self.assertEqual(ran.returncode, 0, ran.stderr)
        self.assertRegex(ran.stdout, r"^check \d+: order 42 not shipped\n$")
        with support.connect() as conn:
            outcome = conn.execute("SELECT outcome FROM prescient.job_history WHERE job_key = 'order_unshipped:42'"
                                   ).fetchall()
        self.assertEqual(outcome, [("done",)])

    def test_the_program_is_clean_under_mypy_strict(self):
        checked = mypy_strict(str(self.program))
        self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)


if __name__ == "__main__":
    unittest.main()
