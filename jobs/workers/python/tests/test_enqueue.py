"""Enqueueing on the caller's connection: schedule, schedule_many, set_check_policy, cancel, reschedule, cron_add,
and their refusals."""

import unittest
from datetime import datetime, timedelta, timezone

import prescient
from tests import support
from tests.support import T, PinnedClock

# An office open 09:00 to 17:00 in Berlin on weekdays. FRIDAY is 15:00 there: two of four hours of open time are
# left that day, the other two are on Monday, which opens at 08:00 UTC.
OFFICE = ('{"hours": {"mon": ["09:00-17:00"], "tue": ["09:00-17:00"], "wed": ["09:00-17:00"],'
          ' "thu": ["09:00-17:00"], "fri": ["09:00-17:00"]}}')
FRIDAY = datetime(2026, 11, 27, 14, 0, tzinfo=timezone.utc)
SATURDAY = datetime(2026, 11, 28, 10, 0, tzinfo=timezone.utc)
MONDAY_OPENING = datetime(2026, 11, 30, 8, 0, tzinfo=timezone.utc)


class EnqueueTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with support.connect() as conn:
            support.declare_worker_class(conn, "reminder")
            conn.execute("SELECT prescient.calendar_set('office', 'Europe/Berlin', %s)", [OFFICE])

    def setUp(self):
        self.conn = support.connect(autocommit=False)
        self.addCleanup(self.conn.close)
        self.look = support.connect()
        self.addCleanup(self.look.close)
        self.clock = PinnedClock(T)

    def test_a_check_exists_only_if_the_callers_transaction_commits(self):
        rolled_back = prescient.schedule(self.conn, "reminder", "users", "1", delay=timedelta(days=3),
                                         job_key="remind:1", clock=self.clock)
        self.assertIsNone(support.pending(self.look, rolled_back.id), "visible before the commit")
        self.conn.rollback()
        self.assertIsNone(support.pending(self.look, rolled_back.id))

        committed = prescient.schedule(self.conn, "reminder", "users", "1", delay=timedelta(days=3),
                                       job_key="remind:1", payload={"hours": 72}, clock=self.clock)
        self.conn.commit()
        row = support.pending(self.look, committed.id)
        self.assertEqual(row["next_check_at"], T + timedelta(days=3))
        self.assertEqual(row["payload"], {"hours": 72})
        self.assertEqual((row["job"], row["entity_name"], row["entity_key"], row["job_key"]),
                         ("reminder", "users", "1", "remind:1"))
        self.assertEqual(committed.status, "created")

    def test_a_time_is_rounded_up_to_the_slot_and_a_delay_counts_from_the_clock(self):
        at = prescient.schedule(self.conn, "reminder", "users", "2", at=T + timedelta(milliseconds=300),
                                clock=self.clock)
        after = prescient.schedule(self.conn, "reminder", "users", "3", delay=timedelta(hours=3),
                                   clock=self.clock)
        self.assertEqual(at.next_check_at, T + timedelta(seconds=1))  # never early: up, to the next second
        self.assertEqual(after.next_check_at, T + timedelta(hours=3))

    def test_without_a_clock_the_server_clock_is_used(self):
        before = self.conn.execute("SELECT now()").fetchone()[0]  # the transaction's start: the SQL's now()
        scheduled = prescient.schedule(self.conn, "reminder", "users", "4", delay=timedelta(minutes=5))
        self.assertGreaterEqual(scheduled.next_check_at, before + timedelta(minutes=5))
        self.assertLess(scheduled.next_check_at, before + timedelta(minutes=5, seconds=2))

    def test_a_taken_job_key_is_a_conflict_naming_the_holder_unless_told_otherwise(self):
        first = prescient.schedule(self.conn, "reminder", "users", "5", delay=timedelta(hours=1),
                                   job_key="remind:5", clock=self.clock)
        self.conn.commit()
        with self.assertRaises(prescient.Conflict) as raised:
            prescient.schedule(self.conn, "reminder", "users", "5", delay=timedelta(hours=2), job_key="remind:5",
                               clock=self.clock)
        self.assertEqual(raised.exception.existing_id, first.id)
        self.assertEqual(raised.exception.job_key, "remind:5")
        self.conn.rollback()
        kept = prescient.schedule(self.conn, "reminder", "users", "5", delay=timedelta(hours=2),
                                  job_key="remind:5", on_conflict="keep", clock=self.clock)
        replaced = prescient.schedule(self.conn, "reminder", "users", "5", delay=timedelta(hours=2),
                                      job_key="remind:5", on_conflict="replace", clock=self.clock)
        self.assertEqual((kept.id, kept.status, kept.next_check_at), (first.id, "kept", T + timedelta(hours=1)))
        self.assertEqual((replaced.id, replaced.status, replaced.next_check_at),
                         (first.id, "replaced", T + timedelta(hours=2)))

    def test_a_refusal_is_typed_and_carries_the_databases_reason(self):
        with self.assertRaises(prescient.Refused) as raised:
            prescient.schedule(self.conn, "no_such_class", "users", "6", delay=timedelta(hours=1),
                               job_key="remind:6", clock=self.clock)
        self.assertIn("no_such_class", raised.exception.reason)
        self.assertEqual(raised.exception.job_key, "remind:6")
        self.assertEqual(raised.exception.__cause__.sqlstate, "PR400")
        self.conn.rollback()
        with self.assertRaises(prescient.Refused) as raised:
            prescient.reschedule(self.conn, check_id=1, job_key="both", at=T, clock=self.clock)
        self.assertIn("exactly one of an id or a job key", str(raised.exception))
        self.assertTrue(str(raised.exception).startswith("check 1: "), str(raised.exception))

    def test_a_priority_is_stored_and_one_out_of_range_is_refused(self):
        first = prescient.schedule(self.conn, "reminder", "users", "11", delay=timedelta(hours=1), priority=2,
                                   clock=self.clock)
        plain = prescient.schedule(self.conn, "reminder", "users", "12", delay=timedelta(hours=1),
                                   clock=self.clock)
        self.conn.commit()
        self.assertEqual(support.pending(self.look, first.id)["priority"], 2)
        self.assertEqual(support.pending(self.look, plain.id)["priority"], 5, "the default")
        with self.assertRaises(prescient.Refused) as raised:
            prescient.schedule(self.conn, "reminder", "users", "13", delay=timedelta(hours=1), job_key="remind:13",
                               priority=12, clock=self.clock)
        self.assertEqual(raised.exception.reason, "the priority 12 is not one of 0 (first) to 9 (last)")
        self.assertEqual(raised.exception.job_key, "remind:13")
        self.conn.rollback()
        self.assertEqual(self.look.execute("SELECT count(*) FROM prescient.future_job"
                                           " WHERE entity_key = '13'").fetchone()[0], 0, "nothing written")

    def test_a_trace_context_is_stored_and_a_malformed_one_is_refused(self):
        traced = prescient.schedule(self.conn, "reminder", "users", "14", delay=timedelta(hours=1),
                                    traceparent=support.TRACEPARENT, tracestate="vendor=abc", clock=self.clock)
        self.conn.commit()
        row = support.pending(self.look, traced.id)
        self.assertEqual((row["traceparent"], row["tracestate"]), (support.TRACEPARENT, "vendor=abc"))
        with self.assertRaises(prescient.Refused) as raised:
            prescient.schedule(self.conn, "reminder", "users", "15", delay=timedelta(hours=1),
                               traceparent="00-not-a-trace", clock=self.clock)
        self.assertIn("is not a W3C traceparent", raised.exception.reason)
        self.conn.rollback()
        self.assertEqual(self.look.execute("SELECT count(*) FROM prescient.future_job"
                                           " WHERE entity_key = '15'").fetchone()[0], 0, "nothing written")

    def business_time_of(self, check_id: int) -> tuple:
        row = support.pending(self.look, check_id)
        return row["next_check_at"], row["calendar"], row["calendar_version"], row["business_delay"]

    def test_a_business_delay_counts_the_calendars_open_time_and_no_time_is_now(self):
        escalate = prescient.schedule(self.conn, "reminder", "tickets", "b1", at=FRIDAY, calendar="office",
                                      business_delay="4h", clock=PinnedClock(FRIDAY))
        page = prescient.schedule(self.conn, "reminder", "tickets", "b2", calendar="office",
                                  clock=PinnedClock(SATURDAY))
        self.conn.commit()
        self.assertEqual(self.business_time_of(escalate.id),
                         (MONDAY_OPENING + timedelta(hours=2), "office", 1, "4h"))
        self.assertEqual(self.business_time_of(page.id), (MONDAY_OPENING, "office", 1, None), "the next opening")
        with self.assertRaises(prescient.Refused) as raised:
            prescient.schedule(self.conn, "reminder", "tickets", "b3", at=FRIDAY, calendar="nope",
                               business_delay="4h", clock=PinnedClock(FRIDAY))
        self.assertEqual(raised.exception.reason, "no calendar named 'nope' (prescient calendar list)")
        self.conn.rollback()
        with self.assertRaisesRegex(TypeError, "give no delay= beside it"):
            prescient.schedule(self.conn, "reminder", "tickets", "b4", delay=timedelta(hours=1), calendar="office",
                               business_delay="4h")

    def test_schedule_many_items_may_be_timed_in_business_time(self):
        escalate, page = prescient.schedule_many(self.conn, [
            {"job": "reminder", "entity_name": "tickets", "entity_key": "bm1", "at": FRIDAY, "calendar": "office",
             "business_delay": "4h"},
            {"job": "reminder", "entity_name": "tickets", "entity_key": "bm2", "at": SATURDAY, "calendar": "office"},
        ], clock=PinnedClock(FRIDAY))
        self.conn.commit()
        self.assertEqual(self.business_time_of(escalate.id),
                         (MONDAY_OPENING + timedelta(hours=2), "office", 1, "4h"))
        self.assertEqual(self.business_time_of(page.id), (MONDAY_OPENING, "office", 1, None))
        with self.assertRaises(prescient.Refused) as raised:
            prescient.schedule_many(self.conn, [{"job": "reminder", "entity_name": "tickets", "entity_key": "bm3",
                                                 "at": FRIDAY, "calendar": "nope"}], clock=PinnedClock(FRIDAY))
        self.assertIn("no calendar named 'nope'", raised.exception.reason)
        self.conn.rollback()

    def test_collect_gathers_the_payloads_of_one_job_key_in_order(self):
        statuses = [prescient.schedule(self.conn, "reminder", "users", "21", delay=timedelta(minutes=5),
                                       job_key="digest:21", payload={"n": n}, on_conflict="collect",
                                       max_wait=timedelta(minutes=30), clock=self.clock).status
                    for n in (1, 2, 3)]
        self.conn.commit()
        self.assertEqual(statuses, ["created", "collected", "collected"])
        self.assertEqual(self.look.execute("SELECT payload FROM prescient.future_job WHERE job_key = 'digest:21'")
                         .fetchall(), [({"collected": [{"n": 1}, {"n": 2}, {"n": 3}]},)])

    def test_a_time_without_a_zone_is_refused_before_it_reaches_the_database(self):
        with self.assertRaisesRegex(ValueError, "no time zone"):
            prescient.schedule(self.conn, "reminder", "users", "7", at=datetime(2026, 12, 1, 9, 0))
        with self.assertRaisesRegex(TypeError, "exactly one of at= or delay="):
            prescient.schedule(self.conn, "reminder", "users", "7")

    def test_cancel_by_id_or_by_key_moves_the_check_to_the_history(self):
        by_id = prescient.schedule(self.conn, "reminder", "users", "8", delay=timedelta(hours=1), clock=self.clock)
        by_key = prescient.schedule(self.conn, "reminder", "users", "9", delay=timedelta(hours=1),
                                    job_key="remind:9", clock=self.clock)
        self.assertEqual(prescient.cancel(self.conn, check_id=by_id.id, by="alice", clock=self.clock), by_id.id)
        self.assertEqual(prescient.cancel(self.conn, job_key="remind:9", clock=self.clock), by_key.id)
        self.assertIsNone(prescient.cancel(self.conn, job_key="remind:9", clock=self.clock), "cancelled twice")
        self.conn.commit()
        for check_id in (by_id.id, by_key.id):
            self.assertIsNone(support.pending(self.look, check_id))
            [gone] = support.history(self.look, check_id)
            self.assertEqual((gone["outcome"], gone["finished_at"]), ("cancelled", T))
        self.assertEqual(support.history(self.look, by_id.id)[0]["finished_by"], "alice")

    def test_reschedule_moves_a_pending_check(self):
        check = prescient.schedule(self.conn, "reminder", "users", "10", delay=timedelta(hours=1),
                                   job_key="remind:10", clock=self.clock)
        moved = prescient.reschedule(self.conn, job_key="remind:10", delay=timedelta(days=1), clock=self.clock)
        self.assertEqual(moved, prescient.Rescheduled(check.id, "remind:10", T + timedelta(days=1)))
        moved = prescient.reschedule(self.conn, check_id=check.id, at=T + timedelta(minutes=30), clock=self.clock)
        self.assertEqual(moved.next_check_at, T + timedelta(minutes=30))
        self.assertIsNone(prescient.reschedule(self.conn, job_key="remind:none", at=T, clock=self.clock))

    def test_cron_add_arms_a_recurring_schedule_of_a_worker_class(self):
        version = prescient.cron_add(self.conn, "daily-digest", "0 8 * * *", job="reminder",
                                     time_zone="Europe/Berlin", payload={"kind": "digest"}, catch_up="none",
                                     clock=self.clock)
        self.conn.commit()
        self.assertEqual(version, 1)
        job, time_zone, payload = self.look.execute(
            "SELECT job, time_zone, payload FROM prescient.cron_schedule WHERE id = 'daily-digest'").fetchone()
        self.assertEqual((job, time_zone, payload), ("reminder", "Europe/Berlin", {"kind": "digest"}))
        # The schedule's own check (class cron, the runner's) makes each occurrence a check of the class.
        armed = self.look.execute("SELECT job, enqueued_on FROM prescient.future_job"
                                  " WHERE job_key = 'cron:daily-digest'").fetchone()
        self.assertEqual(armed, ("cron", T))
        with self.assertRaises(prescient.Refused) as raised:
            prescient.cron_add(self.conn, "bad", "not a spec", job="reminder", clock=self.clock)
        self.assertIn("not a spec", raised.exception.reason)

    def test_cron_add_options_may_hold_a_priority(self):
        prescient.cron_add(self.conn, "urgent-digest", "0 8 * * *", job="reminder", options={"priority": 1},
                           clock=self.clock)
        self.conn.commit()
        self.assertEqual(self.look.execute("SELECT s.priority, f.priority FROM prescient.cron_schedule s"
                                           " JOIN prescient.future_job f ON f.job_key = 'cron:' || s.id"
                                           " WHERE s.id = 'urgent-digest'").fetchone(), (1, 1))
        with self.assertRaises(prescient.Refused) as raised:
            prescient.cron_add(self.conn, "late-digest", "0 8 * * *", job="reminder", options={"priority": 12},
                               clock=self.clock)
        self.assertTrue(raised.exception.reason.startswith("priority: "), raised.exception.reason)

    def test_schedule_many_schedules_every_item_in_one_statement_or_none(self):
        at = T + timedelta(hours=1)
        first, second = prescient.schedule_many(self.conn, [
            {"job": "reminder", "entity_name": "users", "entity_key": "m1", "at": at, "job_key": "many:1",
             "payload": {"n": 1}, "priority": 1, "by": "importer"},
            {"job": "reminder", "entity_name": "users", "entity_key": "m2", "at": at + timedelta(minutes=5),
             "window": timedelta(minutes=10)},
        ], clock=self.clock)
        self.conn.commit()
        self.assertEqual((first.job_key, first.next_check_at, first.status), ("many:1", at, "created"))
        self.assertTrue(at + timedelta(minutes=5) <= second.next_check_at <= at + timedelta(minutes=15),
                        "not within its window")
        row = support.pending(self.look, first.id)
        self.assertEqual((row["payload"], row["priority"], row["enqueued_by"]), ({"n": 1}, 1, "importer"))

        fresh = {"job": "reminder", "entity_name": "users", "entity_key": "m3", "at": at, "job_key": "many:3"}
        taken = {**fresh, "entity_key": "m1", "job_key": "many:1"}
        with self.assertRaises(prescient.Conflict):
            prescient.schedule_many(self.conn, [fresh, taken], clock=self.clock)
        self.conn.rollback()
        [reported] = prescient.schedule_many(self.conn, [taken], report_conflicts=True, clock=self.clock)
        self.assertEqual((reported.id, reported.status), (first.id, "conflict"))
        self.conn.commit()
        self.assertEqual(self.look.execute("SELECT count(*) FROM prescient.future_job WHERE job_key = 'many:3'"
                                           ).fetchone()[0], 0, "a call refused in part wrote the rest")
        for bad, reason in (({**fresh, "delay": timedelta(hours=1)}, "delay is not an argument"),
                            ({**fresh, "at": datetime(2026, 12, 1, 9, 0)}, "has no time zone"),
                            ({"job": "reminder"}, "at is None")):
            with self.subTest(bad=bad), self.assertRaises(ValueError) as raised:
                prescient.schedule_many(self.conn, [bad], clock=self.clock)
            self.assertIn(reason, str(raised.exception))

    def test_set_check_policy_gives_a_pending_check_its_own_and_none_clears_it(self):
        check_id = prescient.schedule(self.conn, "reminder", "users", "p1", delay=timedelta(hours=1),
                                      clock=self.clock).id
        self.assertTrue(prescient.set_check_policy(self.conn, check_id, max_checks=60, max_attempts=3,
                                                   backoff=timedelta(minutes=1), backoff_max=timedelta(hours=1)))
        self.conn.commit()
        row = support.pending(self.look, check_id)
        self.assertEqual((row["max_checks"], row["max_attempts"], row["backoff_seconds"], row["backoff_max_seconds"]),
                         (60, 3, 60, 3600))
        self.assertTrue(prescient.set_check_policy(self.conn, check_id, max_checks=0))
        self.conn.commit()
        row = support.pending(self.look, check_id)
        self.assertEqual((row["max_checks"], row["max_attempts"], row["backoff_seconds"]), (0, None, None))
        self.assertFalse(prescient.set_check_policy(self.conn, 987_654_321, max_checks=1))
        with self.assertRaises(prescient.Refused) as raised:
            prescient.set_check_policy(self.conn, check_id, backoff=timedelta(hours=1),
                                       backoff_max=timedelta(minutes=1))
        self.assertEqual(raised.exception.check_id, check_id)
        self.assertIn("under the backoff", raised.exception.reason)


if __name__ == "__main__":
    unittest.main()
