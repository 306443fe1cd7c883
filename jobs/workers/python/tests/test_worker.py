"""The worker against a real database: answers, refusals, leases, heartbeats, concurrency, wake-ups, stops."""

import os
import queue
import threading
import time
import unittest
from datetime import datetime, timedelta, timezone

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

import prescient
from tests import support
from tests.support import T, PinnedClock


class WorkerTest(unittest.TestCase):
    def setUp(self):
        self.conn = support.connect()
        self.addCleanup(self.conn.close)
        # A class per test: the tests share one database, and a worker takes every due check of its classes.
        self.job = support.declare_worker_class(self.conn, self.id().rsplit(".", 1)[-1][:60])
        self.clock = PinnedClock(T)

    def worker(self, **options) -> prescient.Worker:
        options.setdefault("clock", self.clock)
        return prescient.Worker(support.database_url(), name="test-worker", **options)

    def schedule(self, key: str, payload=None, delay=timedelta(hours=1)) -> int:
        return prescient.schedule(self.conn, self.job, "things", key, delay=delay, payload=payload,
                                  clock=self.clock).id

    def test_each_answer_becomes_its_outcome_and_a_failing_handler_fails_its_check_alone(self):
        answers = {
            "later": lambda check: check.due_at + timedelta(minutes=30),
            "done": lambda check: None,
            "kept": lambda check: prescient.Done({"sent": True, "to": check.entity_key}),
            "raises": lambda check: {}["missing"],
            "exact": lambda check: (_ for _ in ()).throw(prescient.CheckFailed("the CRM said 503")),
            "naive": lambda check: datetime(2026, 12, 1, 9, 0),
            "past": lambda check: check.due_at - timedelta(minutes=1),
        }
        ids = {key: self.schedule(key, payload={"case": key}) for key in answers}
        worker = self.worker()
        seen = []

        @worker.handler(self.job)
        def handle(check: prescient.Check):
            seen.append((check.entity_key, check.payload, check.check_count, check.attempts))
            return answers[check.entity_key](check)

        self.assertEqual(worker.drain(), [], "ran a check before its time")
        self.clock.advance(timedelta(hours=1))
        settled = {s.check_id: s for s in worker.drain()}

        self.assertEqual(sorted(seen), sorted((key, {"case": key}, 0, 0) for key in answers))
        due = T + timedelta(hours=1)
        self.assertEqual(settled[ids["later"]].outcome, "rescheduled")
        self.assertEqual(settled[ids["later"]].next_check_at, due + timedelta(minutes=30))
        self.assertEqual(support.pending(self.conn, ids["later"])["check_count"], 1)
        self.assertEqual(settled[ids["done"]].outcome, "done")
        self.assertEqual(settled[ids["kept"]].outcome, "done")
        self.assertEqual(support.history(self.conn, ids["kept"])[0]["result"], {"sent": True, "to": "kept"})
        self.assertEqual(settled[ids["past"]].outcome, "guard_past")
        for key, error in (("raises", "KeyError: 'missing'"), ("exact", "the CRM said 503")):
            self.assertEqual(settled[ids[key]].outcome, "retried")
            row = support.pending(self.conn, ids[key])
            self.assertEqual((row["attempts"], row["last_error"].split("\n")[0]), (1, error))
        # An exception's traceback follows its line; CheckFailed's text is the error exactly.
        self.assertIn("\nTraceback (most recent call last):\n", support.pending(self.conn, ids["raises"])["last_error"])
        self.assertEqual(support.pending(self.conn, ids["exact"])["last_error"], "the CRM said 503")
        self.assertEqual(settled[ids["naive"]].outcome, "retried")
        self.assertIn("a time without a time zone", support.pending(self.conn, ids["naive"])["last_error"])

    def test_each_attempt_of_a_traced_check_is_a_span_of_its_own_in_the_callers_trace(self):
        traced = prescient.schedule(self.conn, self.job, "things", "traced", delay=timedelta(hours=1),
                                    traceparent=support.TRACEPARENT, tracestate="vendor=abc", clock=self.clock).id
        self.schedule("plain")
        worker = self.worker()
        seen = []

        @worker.handler(self.job)
        def handle(check):
            seen.append((check.entity_key, check.traceparent, check.tracestate))
            if check.entity_key == "traced" and check.attempts == 0:
                raise prescient.CheckFailed("first attempt")

        self.clock.advance(timedelta(hours=1))
        worker.drain()
        self.clock.advance(timedelta(hours=1))  # past the retry's backoff
        worker.drain()

        self.assertIn(("plain", None, None), seen)
        attempts = [(parent, state) for key, parent, state in seen if key == "traced"]
        self.assertEqual(len(attempts), 2, seen)
        _, trace_id, caller_span, flags = support.TRACEPARENT.split("-")
        parents = set()
        for parent, state in attempts:
            version, run_trace, span, run_flags = parent.split("-")
            self.assertEqual((version, run_trace, run_flags, state), ("00", trace_id, flags, "vendor=abc"))
            parents.add(span)
        self.assertEqual(len(parents), 2, f"the two attempts share a span: {attempts}")
        self.assertNotIn(caller_span, parents, "a run reused the caller's span")
        self.assertEqual(support.history(self.conn, traced)[0]["outcome"], "done")

    def test_a_timedelta_answer_counts_from_the_workers_clock_and_a_raise_is_logged_with_its_traceback(self):
        later, raises = self.schedule("later"), self.schedule("raises")
        worker = self.worker()

        @worker.handler(self.job)
        def handle(check: prescient.Check):
            if check.entity_key == "raises":
                raise ValueError("the CRM is down")
            return timedelta(hours=3)

        self.clock.advance(timedelta(hours=1))
        with self.assertLogs("prescient.worker", level="WARNING") as logs:
            settled = {s.check_id: s for s in worker.drain()}
        self.assertEqual(settled[later].outcome, "rescheduled")
        self.assertEqual(settled[later].next_check_at, T + timedelta(hours=4))
        raised = [record for record in logs.records if "the handler raised" in record.getMessage()]
        self.assertEqual(len(raised), 1, logs.output)
        self.assertIn(f"check {raises} ", raised[0].getMessage())
        self.assertIn("ValueError: the CRM is down", raised[0].getMessage())
        self.assertIsNotNone(raised[0].exc_info)
        self.assertIn("Traceback", logs.output[[r.getMessage() for r in logs.records].index(raised[0].getMessage())])
        # Kept with the error in the history's last_error; the settlement's own line stays one line.
        kept = support.pending(self.conn, raises)["last_error"].split("\n")
        self.assertEqual(kept[:2], ["ValueError: the CRM is down", "Traceback (most recent call last):"])
        self.assertIn("in handle", "\n".join(kept))
        self.assertEqual(kept[-1], "ValueError: the CRM is down")
        [retried] = [r.getMessage() for r in logs.records if "retried at" in r.getMessage()]
        self.assertNotIn("\n", retried)
        self.assertTrue(retried.endswith(": ValueError: the CRM is down"), retried)

    def test_a_deep_traceback_is_kept_bounded_its_innermost_frames_and_the_error_last(self):
        deep = self.schedule("deep")
        worker = self.worker()

        def dive(depth: int) -> None:
            if depth == 0:
                raise ValueError("at the bottom")
            turn(depth - 1)

        def turn(depth: int) -> None:  # frames that differ in turn: Python's traceback folds only repeats
            dive(depth)

        worker.handler(self.job)(lambda check: dive(100))
        self.clock.advance(timedelta(hours=1))
        with self.assertLogs("prescient.worker", level="WARNING"):
            worker.drain()
        kept = support.pending(self.conn, deep)["last_error"]
        self.assertLessEqual(len(kept.encode()), 4096)
        lines = kept.split("\n")
        self.assertEqual(lines[:2], ["ValueError: at the bottom", "Traceback (most recent call last):"])
        self.assertRegex(lines[2], r"^  \.\.\. \d+ lines left out$")
        self.assertTrue(lines[3].startswith('  File "'), lines[3])  # whole frames only
        self.assertEqual(lines[-3:-1], [lines[-3], '    raise ValueError("at the bottom")'])
        self.assertIn("in dive", lines[-3])
        self.assertEqual(lines[-1], "ValueError: at the bottom")
        self.assertNotIn("cut", kept[-40:], "the database cut it: the worker's bound did not hold")

    def test_an_answer_the_database_refuses_fails_that_check_only(self):
        results = {"big": "x" * 70_000, "nul": "a\x00b", "small": 1}
        ids = {key: self.schedule(key) for key in results}
        errors = self.schedule("nul-error")
        worker = self.worker(concurrency=4)
        all_ran = threading.Barrier(4, timeout=5)

        @worker.handler(self.job)
        def handle(check):
            all_ran.wait()  # the answers are ready together: most likely settled in one call
            if check.entity_key == "nul-error":
                raise prescient.CheckFailed("bad\x00byte")
            return prescient.Done(results[check.entity_key])

        self.clock.advance(timedelta(hours=1))
        settled = {s.check_id: s.outcome for s in worker.drain()}
        self.assertEqual(settled, {ids["big"]: "retried", ids["nul"]: "retried", ids["small"]: "done",
                                   errors: "retried"})
        self.assertIn("at most 65536", support.pending(self.conn, ids["big"])["last_error"])
        self.assertIn("the answer was refused: ", support.pending(self.conn, ids["nul"])["last_error"])
        self.assertEqual(support.pending(self.conn, errors)["last_error"], "bad\\x00byte")
        self.assertEqual(support.history(self.conn, ids["small"])[0]["result"], 1)

    def test_an_answer_in_business_time_is_counted_in_the_calendars_open_time_from_the_workers_now(self):
        calendar = support.set_desk_calendar(self.conn)
        check_id = self.schedule("escalate", delay=timedelta(hours=5))
        worker = self.worker()

        @worker.handler(self.job)
        def handle(check: prescient.Check):
            return prescient.BusinessDelay(calendar, "4h") if check.check_count == 0 else None

        self.clock.advance(timedelta(hours=5))  # Friday 15:00 in Berlin: 2 open hours left that day
        due = support.business_due(self.conn, calendar, self.clock(), "4h")
        self.assertEqual(due, datetime(2026, 11, 23, 10, 0, tzinfo=timezone.utc), "not Monday 11:00 in Berlin")
        [settlement] = worker.drain()
        self.assertEqual((settlement.check_id, settlement.outcome, settlement.next_check_at),
                         (check_id, "rescheduled", due))
        row = support.pending(self.conn, check_id)
        self.assertEqual((row["next_check_at"], row["check_count"], row["claimed_by"]), (due, 1, None))
        timeline = self.conn.execute("SELECT finished_at, result, next_check_at, runner FROM prescient.check_run"
                                     " WHERE id = %s", [check_id]).fetchall()
        self.assertEqual(timeline, [(self.clock(), "rescheduled", due, "test-worker")])

        self.assertEqual(worker.drain(), [], "ran again before the desk's fourth open hour")
        self.clock.now = due
        [settlement] = worker.drain()
        self.assertEqual((settlement.check_id, settlement.outcome), (check_id, "done"))
        [row] = support.history(self.conn, check_id)
        self.assertEqual((row["outcome"], row["check_count"], row["last_check_at"]), ("done", 2, due))

    def test_an_answer_in_business_time_the_database_refuses_fails_its_check_alone(self):
        calendar = support.set_desk_calendar(self.conn)
        answers = {
            "unknown": prescient.BusinessDelay("nowhere", "4h"),
            "days": prescient.BusinessDelay(calendar, "1d"),
            "no-days": prescient.BusinessDelay(calendar, "0bd"),
            "not-text": prescient.BusinessDelay(calendar, 4),
            "in-business-time": prescient.BusinessDelay(calendar, "90m"),
            "done": None,
        }
        ids = {key: self.schedule(key) for key in answers}
        worker = self.worker()
        calls = []

        @worker.batch_handler(self.job)
        def handle(checks):
            calls.append(len(checks))
            return [answers[check.entity_key] for check in checks]

        self.clock.advance(timedelta(hours=1))
        due = support.business_due(self.conn, calendar, self.clock(), "90m")
        settled = {s.check_id: s.outcome for s in worker.drain()}
        self.assertEqual(calls, [len(answers)], "the answers were not given, so not sent, together")
        self.assertEqual({key: settled[ids[key]] for key in answers},
                         {"unknown": "retried", "days": "retried", "no-days": "retried", "not-text": "retried",
                          "in-business-time": "rescheduled", "done": "done"})
        self.assertEqual(support.pending(self.conn, ids["in-business-time"])["next_check_at"], due)
        errors = {key: support.pending(self.conn, ids[key])["last_error"]
                  for key in ("unknown", "days", "no-days", "not-text")}
        self.assertEqual(errors["unknown"], f"the answer was refused: check {ids['unknown']}: no calendar named"
                                            " 'nowhere' (prescient calendar list)")
        self.assertIn(f"the answer was refused: check {ids['days']}: business delay '1d'", errors["days"])
        self.assertIn(f"the answer was refused: check {ids['no-days']}: business delay '0bd'", errors["no-days"])
        self.assertIn("give the calendar's name and the delay as strings", errors["not-text"])

    def test_a_settlement_after_the_lease_ran_out_is_refused_as_lease_lost(self):
        check_id = self.schedule("slow")
        # One place: the check is not taken again before its first answer is settled (beside a settlement, a
        # take finds the lease run out too, and the answer is refused as under another lease).
        worker = self.worker(lease_seconds=10, heartbeat=False, concurrency=1)

        runs = []

        @worker.handler(self.job)
        def handle(check):
            runs.append((check.check_count, check.attempts))
            if len(runs) == 1:
                self.clock.advance(timedelta(seconds=11))  # the first run outlived its lease, with no heartbeat
            return None

        self.clock.advance(timedelta(hours=1))
        lost, done = worker.drain()
        self.assertEqual((lost.check_id, lost.outcome), (check_id, "lease_lost"))
        self.assertIn("expired", lost.last_error)
        with self.assertRaisesRegex(prescient.LeaseLost, f"^lease lost: check {check_id}: .*expired") as raised:
            lost.raise_if_lease_lost()
        self.assertEqual(raised.exception.check_id, check_id)
        self.assertEqual(str(raised.exception).count(f"check {check_id}"), 1, "the check is named once")
        done.raise_if_lease_lost()
        # Not settled by the lost run: taken again as it was (at least once), and settled by the second.
        self.assertEqual(runs, [(0, 0), (0, 0)])
        self.assertEqual((done.check_id, done.outcome), (check_id, "done"))
        self.assertEqual(support.history(self.conn, check_id)[0]["check_count"], 1)

    def test_heartbeats_keep_the_lease_of_a_long_handler(self):
        # The server's clock: a lease of 1 s, a handler of 1.8 s; another worker tries to take the check
        # after the lease would have ended. With heartbeats it gets nothing; without, it gets the check.
        for heartbeat in (True, False):
            with self.subTest(heartbeat=heartbeat):
                check_id = support.schedule_due_now(self.conn, self.job, f"long-{heartbeat}")
                worker = self.worker(lease_seconds=1.0, heartbeat=heartbeat, clock=None)
                stolen = []

                @worker.handler(self.job)
                def handle(check):
                    time.sleep(1.5)
                    with support.connect() as other:
                        stolen.extend(other.execute("SELECT id FROM prescient.worker_take('thief', %s, 10, 60)",
                                                    [[self.job]]).fetchall())
                    time.sleep(0.3)
                    return None

                [settlement] = worker.drain()
                if heartbeat:
                    self.assertEqual(stolen, [])
                    self.assertEqual(settlement.outcome, "done")
                else:
                    self.assertEqual(stolen, [(check_id,)])
                    self.assertEqual(settlement.outcome, "lease_lost")
                    self.assertIn("another lease (by thief", settlement.last_error)
                    self.conn.execute("SELECT prescient.cancel(%s)", [check_id])

    def test_a_stream_of_short_checks_does_not_put_off_the_heartbeat_of_a_long_one(self):
        long_id = support.schedule_due_now(self.conn, self.job, "long")
        worker = self.worker(lease_seconds=1.0, clock=None)
        stolen, long_runs = [], []

        @worker.handler(self.job)
        def handle(check):
            if check.entity_key != "long":
                return None
            long_runs.append(check.id)
            if len(long_runs) > 1:
                return None  # taken again: the lease was lost (the assertions below say so)
            with support.connect() as other:
                for n in range(15):  # a short check taken every 0.1 s while this one runs
                    support.schedule_due_now(other, self.job, f"short-{n}")
                    time.sleep(0.1)
                stolen.extend(other.execute("SELECT id FROM prescient.worker_take('thief', %s, 100, 60)"
                                            " WHERE id = %s", [[self.job], long_id]).fetchall())
            return None

        settled = {s.check_id: s.outcome for s in worker.drain()}
        self.assertEqual(stolen, [])
        self.assertEqual(long_runs, [long_id])
        self.assertEqual(settled[long_id], "done")
        self.assertEqual(len(settled), 16)

    def test_a_check_cancelled_while_it_runs_is_seen_lost_by_the_heartbeat_and_its_answer_refused(self):
        check_id = support.schedule_due_now(self.conn, self.job, "cancelled")
        worker = self.worker(lease_seconds=0.6, clock=None)
        seen_lost = []

        @worker.handler(self.job)
        def handle(check):
            prescient.cancel(self.conn, check_id=check.id, by="operator")
            deadline = time.monotonic() + 2
            while not check.lease_lost and time.monotonic() < deadline:
                time.sleep(0.02)
            seen_lost.append(check.lease_lost)
            return None

        [settlement] = worker.drain()
        self.assertEqual(seen_lost, [True])
        self.assertEqual(settlement.outcome, "lease_lost")
        self.assertIn("not pending", settlement.last_error)
        self.assertEqual([(h["outcome"], h["finished_by"]) for h in support.history(self.conn, check_id)],
                         [("cancelled", "operator")])

    def test_at_most_concurrency_handlers_run_at_once(self):
        for n in range(7):
            support.schedule_due_now(self.conn, self.job, f"c{n}")
        worker = self.worker(concurrency=3, batch_size=2, clock=None)
        running, most, lock = 0, 0, threading.Lock()

        @worker.handler(self.job)
        def handle(check):
            nonlocal running, most
            with lock:
                running += 1
                most = max(most, running)
            time.sleep(0.3)
            with lock:
                running -= 1

        settled = worker.drain()
        self.assertEqual([s.outcome for s in settled], ["done"] * 7)
        self.assertEqual(most, 3, "not side by side, or more than the concurrency")

    def test_a_groups_checks_run_one_at_a_time_in_order_each_taken_as_the_last_settles(self):
        ids = [support.schedule_due_now(self.conn, self.job, f"step-{n}", group_key="order:7") for n in range(3)]
        worker = self.worker(concurrency=4, clock=None)
        ran, running = [], []

        @worker.handler(self.job)
        def handle(check):
            running.append(check.id)
            self.assertEqual(len(running), 1, "two checks of a group at once")
            ran.append(check.id)
            time.sleep(0.05)
            running.remove(check.id)

        self.assertEqual([s.check_id for s in worker.drain()], ids)
        self.assertEqual(ran, ids)

    def test_a_sleeping_worker_wakes_on_a_notification(self):
        worker = self.worker(clock=None)
        ran = threading.Event()
        worker.handler(self.job)(lambda check: ran.set())
        thread = threading.Thread(target=worker.run)
        thread.start()
        self.addCleanup(thread.join, 10)
        self.addCleanup(worker.stop)
        time.sleep(0.5)  # asleep: nothing is pending, so until its next look in a minute
        support.schedule_due_now(self.conn, self.job, "wake")
        self.assertTrue(ran.wait(3), "the worker did not wake for the new check")

    def test_a_running_worker_finds_checks_as_they_come_due(self):
        worker = self.worker(clock=None)
        ran = []
        worker.handler(self.job)(lambda check: ran.append(time.monotonic()))
        # Due at the next slot boundaries, 1 and 2 seconds away: the worker sleeps until each.
        self.conn.execute("SELECT prescient.schedule(%s, 'things', 'soon', clock_timestamp() + '1 s'),"
                          " prescient.schedule(%s, 'things', 'later', clock_timestamp() + '2 s')",
                          [self.job, self.job])
        thread = threading.Thread(target=worker.run)
        started = time.monotonic()
        thread.start()
        self.addCleanup(thread.join, 10)
        self.addCleanup(worker.stop)
        deadline = time.monotonic() + 5
        while len(ran) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(len(ran), 2)
        self.assertGreater(ran[1] - started, 1.0, "ran the later check before its slot")

    def test_stop_lets_a_running_handler_finish_and_settles_it(self):
        check_id = support.schedule_due_now(self.conn, self.job, "finishing")
        worker = self.worker(clock=None)
        started = threading.Event()

        @worker.handler(self.job)
        def handle(check):
            started.set()
            time.sleep(0.7)
            return prescient.Done("finished")

        thread = threading.Thread(target=worker.run)
        thread.start()
        self.assertTrue(started.wait(5))
        worker.stop()
        thread.join(5)
        self.assertFalse(thread.is_alive())
        self.assertEqual(support.history(self.conn, check_id)[0]["result"], "finished")

    def run_with_a_handler_held(self, **options) -> tuple[prescient.Worker, threading.Thread, threading.Event]:
        """A running worker whose handler, once started, waits for the event returned (set at the test's end)."""
        worker = self.worker(clock=None, **options)
        started, release = threading.Event(), threading.Event()
        self.addCleanup(release.set)

        @worker.handler(self.job)
        def handle(check):
            started.set()
            release.wait(10)

        thread = threading.Thread(target=worker.run)
        thread.start()
        self.assertTrue(started.wait(5))
        return worker, thread, release

    def test_a_handler_past_the_grace_period_is_left_to_its_lease(self):
        check_id = support.schedule_due_now(self.conn, self.job, "stuck")
        worker, thread, _ = self.run_with_a_handler_held(grace_seconds=0.3)
        stopping = time.monotonic()
        worker.stop()
        thread.join(5)
        self.assertLess(time.monotonic() - stopping, 2)
        row = support.pending(self.conn, check_id)
        self.assertEqual(row["claimed_by"], "test-worker", "a check whose handler may still run was given back")

    def test_a_slow_handlers_worker_holds_ahead_only_what_it_will_start_soon(self):
        # Handlers of 0.2 s on one thread: it starts 2.5 checks in half a second, so it holds the running one
        # and 2 ahead, never the 8 due at once.
        ids = [support.schedule_due_now(self.conn, self.job, f"slow-{n}") for n in range(8)]
        worker = self.worker(clock=None, concurrency=1)
        held = []

        @worker.handler(self.job)
        def handle(check):
            held.append(self.conn.execute("SELECT count(*) FROM prescient.future_job WHERE job = %s"
                                          " AND claimed_by = %s", [self.job, worker.name]).fetchone()[0])
            time.sleep(0.2)

        self.assertEqual(sorted(s.check_id for s in worker.drain()), ids)
        self.assertLessEqual(max(held), 3, held)
        self.assertEqual(max(held), 3, f"never held checks ahead: {held}")

    def test_a_batch_handler_answers_many_checks_in_one_call(self):
        keys = ["done", "later", "kept", "failed", "raised", "naive", "done-2"]
        ids = {key: self.schedule(key) for key in keys}
        worker = self.worker(batch_size=3)
        calls = []

        @worker.batch_handler(self.job)
        def handle(checks):
            calls.append(len(checks))
            answers = {
                "later": lambda check: check.due_at + timedelta(minutes=30),
                "kept": lambda check: prescient.Done({"key": check.entity_key}),
                "failed": lambda check: prescient.CheckFailed("no CRM"),
                "raised": lambda check: KeyError("missing"),
                "naive": lambda check: datetime(2026, 12, 1, 9, 0),
            }
            return [answers.get(check.entity_key, lambda check: None)(check) for check in checks]

        self.clock.advance(timedelta(hours=1))
        settled = {s.check_id: s.outcome for s in worker.drain()}
        self.assertEqual(sum(calls), len(keys))
        self.assertLessEqual(max(calls), 3, calls)
        self.assertGreater(max(calls), 1, calls)
        self.assertEqual({key: settled[ids[key]] for key in keys},
                         {"done": "done", "later": "rescheduled", "kept": "done", "failed": "retried",
                          "raised": "retried", "naive": "retried", "done-2": "done"})
        self.assertEqual(support.history(self.conn, ids["kept"])[0]["result"], {"key": "kept"})
        self.assertEqual(support.pending(self.conn, ids["failed"])["last_error"], "no CRM")
        self.assertEqual(support.pending(self.conn, ids["raised"])["last_error"], "KeyError: 'missing'")
        self.assertIn("a time without a time zone", support.pending(self.conn, ids["naive"])["last_error"])

    def test_a_batch_handler_that_raises_or_miscounts_fails_each_check_of_its_call(self):
        ids = [self.schedule(f"b{n}") for n in range(4)]
        worker = self.worker(batch_size=2)
        calls = []

        @worker.batch_handler(self.job)
        def handle(checks):
            calls.append([check.id for check in checks])
            if len(calls) == 1:
                raise prescient.CheckFailed("the batch API said 503")
            return [None]  # one answer short, when given two checks

        self.clock.advance(timedelta(hours=1))
        settled = {s.check_id: s.outcome for s in worker.drain()}
        self.assertEqual(settled, dict.fromkeys(ids, "retried"))
        self.assertEqual([len(call) for call in calls], [2, 2])
        for check_id in calls[0]:
            self.assertEqual(support.pending(self.conn, check_id)["last_error"], "the batch API said 503")
        for check_id in calls[1]:
            self.assertIn("gave 1 answers for 2 checks", support.pending(self.conn, check_id)["last_error"])

    def test_a_handler_declares_its_class_with_its_policy_and_a_runners_class_is_refused(self):
        job = "declared_by_its_handler"
        worker = self.worker()

        @worker.handler(job, max_checks=60, max_attempts=2, backoff=timedelta(seconds=30))
        def handle(check: prescient.Check) -> None:
            return None

        policy = "SELECT runs_in, max_checks, max_attempts, backoff_seconds FROM prescient.job_class WHERE job = %s"
        with self.assertLogs("prescient.worker", level="INFO") as logs:
            self.assertEqual(worker.drain(), [])
        self.assertIn(f"class {job} added, policy max_checks=60 max_attempts=2 backoff=0:00:30", "\n".join(logs.output))
        self.assertEqual(self.conn.execute(policy, [job]).fetchone(), ("worker", 60, 2, 30))
        check = prescient.schedule(self.conn, job, "things", "x", delay=timedelta(hours=1), clock=self.clock).id
        self.clock.advance(timedelta(hours=1))
        self.assertEqual([(s.check_id, s.outcome) for s in worker.drain()], [(check, "done")])

        again = self.worker()
        again.batch_handler(job, declare=True)(lambda checks: [None for _ in checks])  # the policy as it is
        self.assertEqual(again.drain(), [])
        self.assertEqual(self.conn.execute(policy, [job]).fetchone(), ("worker", 60, 2, 30))

        runners = self.worker()
        runners.handler("noop", max_checks=1)(lambda check: None)
        with self.assertRaises(prescient.Refused) as raised:
            runners.drain()
        self.assertIn("is run by the runner", raised.exception.reason)
        self.assertEqual(self.conn.execute("SELECT max_checks FROM prescient.job_class WHERE job = 'noop'").fetchone(),
                         (None,))

    def test_a_class_that_is_not_a_worker_class_is_refused_at_the_first_take(self):
        worker = self.worker()
        worker.handler("noop")(lambda check: None)
        with self.assertRaises(prescient.Refused) as raised:
            worker.drain()
        self.assertIn("run by the runner", raised.exception.reason)

    def test_a_check_is_taken_and_run_while_the_last_ones_settlement_waits(self):
        # The first check's settlement waits for its row, which the test locks from its handler: the loop takes
        # and runs the second beside it, and no lease is reported lost.
        first = support.schedule_due_now(self.conn, self.job, "first")
        worker = self.worker(clock=None)
        ran: queue.SimpleQueue[str] = queue.SimpleQueue()
        holder = support.connect(autocommit=False)
        self.addCleanup(holder.close)

        @worker.handler(self.job)
        def handle(check):
            if check.id == first:
                holder.execute("SELECT FROM prescient.future_job WHERE id = %s FOR UPDATE", [first])
            ran.put(check.entity_key)

        thread = threading.Thread(target=worker.run)
        with self.assertNoLogs("prescient.worker", level="WARNING"):
            thread.start()
            self.addCleanup(thread.join, 10)
            self.addCleanup(worker.stop)
            self.addCleanup(holder.rollback)  # a failed test lets the worker go on, to stop
            self.assertEqual(ran.get(timeout=5), "first")
            deadline = time.monotonic() + 5
            while not support.settlements_waiting_for_a_lock(self.conn) and time.monotonic() < deadline:
                time.sleep(0.02)
            second = support.schedule_due_now(self.conn, self.job, "second")
            try:
                self.assertEqual(ran.get(timeout=5), "second")
            except queue.Empty:
                self.fail("the second check was not taken while the first one's settlement waited")
            holder.rollback()
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and (support.pending(self.conn, first)
                                                   or support.pending(self.conn, second)):
                time.sleep(0.02)
            worker.stop()
            thread.join(10)
        self.assertEqual([support.history(self.conn, i)[0]["outcome"] for i in (first, second)], ["done", "done"])

    def test_a_take_holds_the_next_checks_ahead_and_a_stop_gives_back_those_not_started(self):
        ids = [support.schedule_due_now(self.conn, self.job, f"ahead-{n}") for n in range(4)]
        worker, thread, release = self.run_with_a_handler_held(concurrency=1, prefetch=2)
        self.addCleanup(thread.join, 10)
        held = self.conn.execute("SELECT id FROM prescient.future_job WHERE id = ANY(%s) AND claimed_by = %s"
                                 " ORDER BY id", [ids, worker.name]).fetchall()
        self.assertEqual(held, [(i,) for i in ids[:3]], "not one running and the next two taken ahead")
        worker.stop()
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(support.pending(self.conn, i)["claimed_by"] for i in ids[1:3]):
            time.sleep(0.02)  # the running handler holds its thread until the stop gave the others back
        release.set()
        thread.join(5)
        self.assertEqual(support.history(self.conn, ids[0])[0]["outcome"], "done")
        for check_id in ids[1:3]:
            row = support.pending(self.conn, check_id)
            self.assertEqual((row["claimed_by"], row["attempts"]), (None, 0), "a check not started was kept")


class InTransactionTest(unittest.TestCase):
    """A handler settles its check in its own transaction: its writes and the settlement commit together."""

    def setUp(self):
        self.conn = support.connect()
        self.addCleanup(self.conn.close)
        self.job = support.declare_worker_class(self.conn, "tx_" + self.id().rsplit(".", 1)[-1][5:60])
        self.conn.execute("CREATE TABLE IF NOT EXISTS effects (check_id bigint NOT NULL, job text NOT NULL)")
        self.clock = PinnedClock(T)
        self.worker = prescient.Worker(support.database_url(), name="tx-worker", clock=self.clock)

    def schedule(self, key: str) -> int:
        return prescient.schedule(self.conn, self.job, "things", key, delay=timedelta(hours=1), clock=self.clock).id

    def effects(self, check_id: int) -> int:
        return self.conn.execute("SELECT count(*) FROM effects WHERE check_id = %s", [check_id]).fetchone()[0]

    def drain_quietly(self) -> list[prescient.Settlement]:
        """The drain's settlements, with a check that nothing was logged lost (a settlement or a heartbeat of
        a check its handler settled would be)."""
        with self.assertLogs("prescient.worker", level="INFO") as logs:
            settled = self.worker.drain()
        self.assertEqual([line for line in logs.output if "lost" in line], [])
        self.assertEqual(len([line for line in logs.output if line.startswith("INFO:prescient.worker:check ")
                              or "retried at" in line]), len(settled), logs.output)
        return settled

    def effect_in(self, conn: psycopg.Connection, check: prescient.Check) -> None:
        conn.execute("INSERT INTO effects VALUES (%s, %s)", [check.id, check.job])

    def test_the_effect_and_the_settlement_commit_together_and_the_worker_settles_nothing_more(self):
        later, done, failed = self.schedule("later"), self.schedule("done"), self.schedule("failed")

        @self.worker.handler(self.job)
        def handle(check):
            with psycopg.connect(support.database_url()) as conn, conn.transaction():
                self.effect_in(conn, check)
                if check.entity_key == "later":
                    check.complete_in(conn, check.due_at + timedelta(minutes=30))
                elif check.entity_key == "done":
                    check.complete_in(conn, prescient.Done({"kept": 1}))
                else:
                    check.fail_in(conn, "CRM said 503")
            return None  # not an answer the worker sends: the check is settled already

        self.clock.advance(timedelta(hours=1))
        settled = {s.check_id: (s.outcome, s.next_check_at) for s in self.drain_quietly()}
        due = T + timedelta(hours=1)
        self.assertEqual(settled[later], ("rescheduled", due + timedelta(minutes=30)))
        self.assertEqual(settled[done], ("done", None))
        self.assertEqual(settled[failed][0], "retried")
        self.assertEqual([self.effects(i) for i in (later, done, failed)], [1, 1, 1])
        self.assertEqual((support.pending(self.conn, later)["check_count"], support.pending(self.conn, later)["claimed_by"]),
                         (1, None))
        [row] = support.history(self.conn, done)
        self.assertEqual((row["result"], row["finished_by"]), ({"kept": 1}, "tx-worker"))
        row = support.pending(self.conn, failed)
        self.assertEqual((row["attempts"], row["last_error"], row["claimed_by"]), (1, "CRM said 503", None))

    def test_a_refused_answer_in_the_handlers_transaction_names_the_check_once(self):
        check_id = self.schedule("too-big")
        refusals: list[str] = []

        @self.worker.handler(self.job)
        def handle(check):
            with psycopg.connect(support.database_url()) as conn, conn.transaction():
                try:
                    check.complete_in(conn, prescient.Done({"blob": "x" * 70000}))
                except prescient.Refused as refused:
                    refusals.append(str(refused))
                    raise

        self.clock.advance(timedelta(hours=1))
        with self.assertLogs("prescient.worker", level="INFO"):
            self.worker.drain()
        self.assertEqual(len(refusals), 1)
        self.assertTrue(refusals[0].startswith(f"check {check_id}: its result is "), refusals[0])
        self.assertEqual(refusals[0].count(f"check {check_id}:"), 1, refusals[0])

    def test_a_transaction_rolled_back_after_settling_leaves_the_check_to_the_worker_which_fails_it(self):
        raised, returned, savepoint = self.schedule("raised"), self.schedule("returned"), self.schedule("savepoint")

        @self.worker.handler(self.job)
        def handle(check):
            with psycopg.connect(support.database_url()) as conn:
                if check.entity_key == "raised":
                    with conn.transaction():
                        self.effect_in(conn, check)
                        check.complete_in(conn)
                        raise prescient.CheckFailed("the mail server said no")
                if check.entity_key == "returned":
                    try:
                        with conn.transaction():
                            self.effect_in(conn, check)
                            check.complete_in(conn)
                            raise RuntimeError("changed my mind")
                    except RuntimeError:
                        return "not read: the handler settled in its transaction"
                with conn.transaction():  # the outer transaction commits, the savepoint of the settlement not
                    try:
                        with conn.transaction():
                            check.complete_in(conn)
                            raise RuntimeError("undo the settlement only")
                    except RuntimeError:
                        pass
                    self.effect_in(conn, check)
                return None

        self.clock.advance(timedelta(hours=1))
        settled = {s.check_id: s.outcome for s in self.worker.drain()}
        self.assertEqual(settled, {raised: "retried", returned: "retried", savepoint: "retried"})
        self.assertEqual([self.effects(i) for i in (raised, returned)], [0, 0])
        self.assertEqual(support.pending(self.conn, raised)["last_error"], "the mail server said no")
        for check_id in (returned, savepoint):
            row = support.pending(self.conn, check_id)
            self.assertEqual((row["attempts"], row["claimed_by"]), (1, None))
            self.assertIn("settlement in its own transaction did not take effect", row["last_error"])

    def test_a_lost_lease_raises_lease_lost_in_the_handler_and_its_writes_roll_back(self):
        check_id = self.schedule("lost")
        # One place, nothing ahead: the worker takes nothing while the handler runs, so the check whose lease
        # the handler lets run out is the thief's alone (with a free place the loop might take it back first).
        worker = prescient.Worker(support.database_url(), name="tx-worker", clock=self.clock, lease_seconds=10,
                                  heartbeat=False, concurrency=1)
        caught = []

        @worker.handler(self.job)
        def handle(check):
            if check.attempts == 0 and not caught:
                self.clock.advance(timedelta(seconds=11))  # the lease ran out, and another worker took the check
                with support.connect() as other:
                    other.execute("SELECT prescient.worker_take('thief', %s, 10, 60, %s)", [[self.job], self.clock()])
            with psycopg.connect(support.database_url()) as conn:
                try:
                    with conn.transaction():
                        self.effect_in(conn, check)
                        check.complete_in(conn)
                except prescient.LeaseLost as e:
                    caught.append(e.check_id)
                    raise

        self.clock.advance(timedelta(hours=1))
        with self.assertLogs("prescient.worker", level="WARNING") as logs:
            [settlement] = worker.drain()
        self.assertEqual(caught, [check_id])
        self.assertEqual((settlement.check_id, settlement.outcome), (check_id, "lease_lost"))
        self.assertIn("thief", settlement.last_error)
        self.assertEqual(len([line for line in logs.output if "lease lost" in line]), 1, logs.output)
        self.assertEqual(self.effects(check_id), 0, "the writes of a run whose lease was lost were kept")
        self.assertEqual(support.pending(self.conn, check_id)["claimed_by"], "thief")

    def test_an_answer_in_business_time_settles_in_the_handlers_transaction_and_a_refused_one_rolls_it_back(self):
        calendar = support.set_desk_calendar(self.conn)
        later, unknown = self.schedule("later"), self.schedule("unknown")

        @self.worker.handler(self.job)
        def handle(check):
            with psycopg.connect(support.database_url()) as conn, conn.transaction():
                self.effect_in(conn, check)
                check.complete_in(conn, prescient.BusinessDelay(calendar if check.entity_key == "later" else "nowhere",
                                                                "4h"))

        self.clock.advance(timedelta(hours=1))
        due = support.business_due(self.conn, calendar, self.clock(), "4h")
        with self.assertLogs("prescient.worker", level="INFO"):
            settled = {s.check_id: (s.outcome, s.next_check_at) for s in self.worker.drain()}
        self.assertEqual(settled[later], ("rescheduled", due))
        self.assertEqual(settled[unknown][0], "retried")
        self.assertEqual([self.effects(i) for i in (later, unknown)], [1, 0])
        error = support.pending(self.conn, unknown)["last_error"]
        self.assertTrue(error.startswith("Refused: "), error)
        self.assertIn(f"check {unknown}: no calendar named 'nowhere'", error.split("\n")[0])

    def test_a_check_not_taken_by_a_worker_cannot_be_settled_in_a_transaction(self):
        check = prescient.Check(1, self.job, "things", "x", None, None, {}, T, T, 0, 0, None)
        with self.assertRaisesRegex(ValueError, "check 1 was not taken by a worker"):
            check.complete_in(self.conn)


class LeastPrivilegeTest(unittest.TestCase):
    def test_a_role_with_only_prescient_worker_enqueues_and_works(self):
        role = f"prescient_py_worker_{os.getpid()}"  # roles are the cluster's: one of this process's own
        with support.connect() as owner:
            job = support.declare_worker_class(owner, "least_privilege")
            owner.execute(sql.SQL("CREATE ROLE {} NOLOGIN IN ROLE prescient_worker").format(sql.Identifier(role)))
            self.addCleanup(drop_role, role)
            as_worker = make_conninfo(support.database_url(), options=f"-c role={role}")
            with psycopg.connect(as_worker, autocommit=True) as conn:
                self.assertEqual(conn.execute("SELECT current_user").fetchone()[0], role)
                with self.assertRaises(psycopg.errors.InsufficientPrivilege):
                    conn.execute("DELETE FROM prescient.future_job")
                kept = support.schedule_due_now(conn, job, "kept")
                later = support.schedule_due_now(conn, job, "later")
                gone = support.schedule_due_now(conn, job, "gone", job_key="least:gone")
                self.assertIsNotNone(prescient.reschedule(conn, check_id=later, delay=timedelta(hours=1)))
                self.assertEqual(prescient.cancel(conn, job_key="least:gone"), gone)
                self.assertEqual(prescient.cron_add(conn, "least-digest", "0 8 * * *", job=job), 1)
            worker = prescient.Worker(as_worker, name="least")

            @worker.handler(job)
            def settle_in_its_transaction(check):  # the worker's look at how it went needs no more rights
                with psycopg.connect(as_worker) as conn, conn.transaction():
                    check.complete_in(conn, prescient.Done(check.entity_key))

            with self.assertLogs("prescient.worker", level="INFO") as logs:
                self.assertEqual([(s.check_id, s.outcome) for s in worker.drain()], [(kept, "done")])
            self.assertEqual([line for line in logs.output if "WARNING" in line], [])
            self.assertEqual(support.history(owner, kept)[0]["result"], "kept")
            self.assertEqual(support.history(owner, kept)[0]["finished_by"], "least")


def drop_role(role: str) -> None:
    with support.connect() as owner:
        owner.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


class ReconnectTest(unittest.TestCase):
    def test_the_worker_carries_on_after_its_sessions_are_cut(self):
        with support.connect() as conn:
            job = support.declare_worker_class(conn, "reconnect")
            worker = prescient.Worker(support.database_url(), name="reconnecting")
            ran: queue.SimpleQueue[str] = queue.SimpleQueue()
            worker.handler(job)(lambda check: ran.put(check.entity_key))
            thread = threading.Thread(target=worker.run)
            thread.start()
            self.addCleanup(thread.join, 10)
            self.addCleanup(worker.stop)
            before = support.schedule_due_now(conn, job, "before-the-cut")  # a settlement: both sessions open
            self.assertEqual(ran.get(timeout=5), "before-the-cut")
            idle, deadline = 0, time.monotonic() + 5
            while idle < 2 and time.monotonic() < deadline:  # the loop asleep, the settler done with `before`
                time.sleep(0.05)
                idle = conn.execute("SELECT count(*) " + support.WORKER_SESSIONS_IDLE).fetchone()[0]
            with self.assertLogs("prescient.worker", level="ERROR") as logs:
                cut = conn.execute("SELECT pg_terminate_backend(pid) " + support.WORKER_SESSIONS_IDLE).fetchall()
                self.assertEqual(cut, [(True,), (True,)])
                self.assertEqual(support.history(conn, before)[0]["outcome"], "done")
                after = support.schedule_due_now(conn, job, "after-the-cut")
                self.assertEqual(ran.get(timeout=5), "after-the-cut")
                deadline = time.monotonic() + 5
                while support.pending(conn, after) and time.monotonic() < deadline:
                    time.sleep(0.05)
                self.assertEqual(support.history(conn, after)[0]["outcome"], "done", "not settled after the cut")
            # Each lost session is named: the settler's too, found lost at its next settlement.
            self.assertTrue(any("settler's database connection lost" in line for line in logs.output), logs.output)


class DeadSocketTest(unittest.TestCase):
    def test_the_session_bounds_a_dead_socket_unless_the_conninfo_sets_its_own(self):
        def settings(conninfo: str) -> dict[str, str | None]:
            conn = prescient.Worker(conninfo, name="sockets")._connect()
            try:
                options = {o.keyword.decode(): o.val for o in conn.pgconn.info}
            finally:
                conn.close()
            return {key: options[key] and options[key].decode()
                    for key in ("keepalives", "keepalives_idle", "keepalives_interval", "keepalives_count",
                                "tcp_user_timeout")}

        self.assertEqual(settings(support.database_url()),
                         {"keepalives": "1", "keepalives_idle": "5", "keepalives_interval": "2",
                          "keepalives_count": "3", "tcp_user_timeout": "6000"})
        own = make_conninfo(support.database_url(), keepalives_idle="60", tcp_user_timeout="0")
        self.assertEqual(settings(own),
                         {"keepalives": "1", "keepalives_idle": "60", "keepalives_interval": "2",
                          "keepalives_count": "3", "tcp_user_timeout": "0"})


if __name__ == "__main__":
    unittest.main()
