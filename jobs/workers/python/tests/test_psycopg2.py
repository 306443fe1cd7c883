"""A psycopg2 connection (Django's and SQLAlchemy's driver) where a psycopg 3 one goes: enqueue in its
transaction, refusals typed by SQLSTATE, a worker class declared, a check settled in a handler's psycopg2
transaction; and Django's own connection, in an atomic block."""

from __future__ import annotations

import unittest
from datetime import timedelta

import django
import django.conf
import django.db
import psycopg2
import psycopg2.extras
from django.db import transaction
from psycopg.conninfo import conninfo_to_dict

import prescient
from tests import support
from tests.support import T, PinnedClock


class Psycopg2Test(unittest.TestCase):
    def setUp(self):
        self.conn = psycopg2.connect(support.database_url())  # not autocommit: each call joins a transaction
        self.addCleanup(self.conn.close)
        self.owner = support.connect()
        self.addCleanup(self.owner.close)
        self.owner.execute("CREATE TABLE IF NOT EXISTS orders (id bigint PRIMARY KEY)")
        self.job = "psycopg2_" + self.id().rsplit(".", 1)[-1][5:40]  # a class per test: they share a database
        self.clock = PinnedClock(T)

    def place(self, order_id: int, **options) -> prescient.Scheduled:
        with self.conn.cursor() as cursor:
            cursor.execute("INSERT INTO orders VALUES (%s)", [order_id])
        options.setdefault("job_key", f"order_unshipped:{order_id}")
        return prescient.schedule(self.conn, self.job, "orders", str(order_id), delay=timedelta(hours=3),
                                  clock=self.clock, **options)

    def test_a_check_commits_or_rolls_back_with_the_applications_transaction(self):
        self.assertEqual(prescient.declare_worker_class(self.conn, self.job, max_checks=60), "added")
        rolled_back = self.place(1, payload={"hours": 3})
        self.conn.rollback()
        self.assertIsNone(support.pending(self.owner, rolled_back.id))
        self.assertEqual(self.owner.execute("SELECT job FROM prescient.job_class WHERE job = %s",
                                            [self.job]).fetchall(), [], "the declaration was not rolled back")

        prescient.declare_worker_class(self.conn, self.job, max_checks=60)
        placed = self.place(1, payload={"hours": 3}, priority=2)
        self.conn.commit()
        self.assertEqual((placed.status, placed.next_check_at), ("created", T + timedelta(hours=3)))
        row = support.pending(self.owner, placed.id)
        self.assertEqual((row["payload"], row["priority"], row["job_key"]), ({"hours": 3}, 2, "order_unshipped:1"))

        moved = prescient.reschedule(self.conn, job_key="order_unshipped:1", delay=timedelta(hours=4),
                                     clock=self.clock)
        self.assertEqual(moved, prescient.Rescheduled(placed.id, "order_unshipped:1", T + timedelta(hours=4)))
        self.assertEqual(prescient.cron_add(self.conn, "digest", "0 8 * * *", job=self.job,
                                            options={"max_runs": 3}, clock=self.clock), 1)
        self.assertEqual(prescient.cancel(self.conn, job_key="order_unshipped:1", clock=self.clock), placed.id)
        self.assertIsNone(prescient.cancel(self.conn, job_key="order_unshipped:1", clock=self.clock))
        self.conn.commit()
        self.assertIsNone(support.pending(self.owner, placed.id))

    def test_refusals_are_typed_by_sqlstate_and_a_dict_row_cursor_is_read_alike(self):
        support.declare_worker_class(self.owner, self.job)
        first = self.place(2)
        self.conn.commit()
        with self.assertRaises(prescient.Conflict) as conflict:
            self.place(3, job_key="order_unshipped:2")
        self.assertEqual(conflict.exception.existing_id, first.id)
        self.assertIsInstance(conflict.exception.__cause__, psycopg2.Error)
        self.conn.rollback()
        with self.assertRaises(prescient.Refused) as refused:
            self.place(4, priority=12)
        self.assertIn("12", refused.exception.reason)
        self.conn.rollback()
        with self.assertRaises(prescient.NotFound):
            prescient.retry(self.conn, first.id + 1000)  # no such failure in the history
        self.conn.rollback()

        as_dicts = psycopg2.connect(support.database_url(), cursor_factory=psycopg2.extras.RealDictCursor)
        self.addCleanup(as_dicts.close)
        kept = prescient.schedule(as_dicts, self.job, "orders", "2", delay=timedelta(hours=1),
                                  job_key="order_unshipped:2", on_conflict="keep", clock=self.clock)
        self.assertEqual((kept.id, kept.status), (first.id, "kept"))

    def test_a_handler_settles_its_check_in_its_psycopg2_transaction(self):
        support.declare_worker_class(self.owner, self.job)
        placed = self.place(5)
        self.conn.commit()
        worker = prescient.Worker(support.database_url(), name="django-ish", clock=self.clock)

        @worker.handler(self.job)
        def shipped_yet(check: prescient.Check) -> None:
            with psycopg2.connect(support.database_url()) as conn:  # commits on leaving the block
                with conn.cursor() as cursor:
                    cursor.execute("DELETE FROM orders WHERE id = %s", [int(check.entity_key)])
                check.complete_in(conn, prescient.Done({"deleted": 1}))

        self.clock.advance(timedelta(hours=3))
        self.assertEqual([(s.check_id, s.outcome) for s in worker.drain()], [(placed.id, "done")])
        self.assertEqual(support.history(self.owner, placed.id)[0]["result"], {"deleted": 1})
        self.assertEqual(self.owner.execute("SELECT count(*) FROM orders WHERE id = 5").fetchone(), (0,))

    def test_a_handler_answers_in_business_time_in_its_psycopg2_transaction(self):
        support.declare_worker_class(self.owner, self.job)
        calendar = support.set_desk_calendar(self.owner)
        placed = self.place(6)
        self.conn.commit()
        worker = prescient.Worker(support.database_url(), name="django-ish", clock=self.clock)

        @worker.handler(self.job)
        def escalate_later(check: prescient.Check) -> None:
            with psycopg2.connect(support.database_url()) as conn:  # commits on leaving the block
                check.complete_in(conn, prescient.BusinessDelay(calendar, "1h30m"))

        self.clock.advance(timedelta(hours=3))
        due = support.business_due(self.owner, calendar, self.clock(), "1h30m")
        self.assertEqual([(s.check_id, s.outcome, s.next_check_at) for s in worker.drain()],
                         [(placed.id, "rescheduled", due)])


class DjangoTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        info = conninfo_to_dict(support.database_url())
        django.conf.settings.configure(USE_TZ=True, DATABASES={"default": {
            "ENGINE": "django.db.backends.postgresql", "NAME": info["dbname"], "USER": info.get("user"),
            "PASSWORD": info.get("password"), "HOST": info.get("host"), "PORT": info.get("port")}})
        django.setup()

    def test_djangos_connection_enqueues_in_an_atomic_block_and_a_refusal_is_typed(self):
        django_connection = django.db.connection
        with support.connect() as owner:
            job = support.declare_worker_class(owner, "django_orders")
            with transaction.atomic():
                placed = prescient.schedule(django_connection, job, "orders", "1", delay=timedelta(hours=1),
                                            job_key="django:1", payload={"by": "django"})
                transaction.set_rollback(True)
            self.assertIsNone(support.pending(owner, placed.id))
            with transaction.atomic():
                placed = prescient.schedule(django_connection, job, "orders", "1", delay=timedelta(hours=1),
                                            job_key="django:1", payload={"by": "django"})
            self.assertEqual(support.pending(owner, placed.id)["payload"], {"by": "django"})
            with self.assertRaises(prescient.Conflict) as conflict, transaction.atomic():
                prescient.schedule(django_connection, job, "orders", "1", delay=timedelta(hours=1),
                                   job_key="django:1")
            self.assertEqual(conflict.exception.existing_id, placed.id)
            self.assertEqual(prescient.cancel(django_connection, job_key="django:1"), placed.id)
        django_connection.close()


if __name__ == "__main__":
    unittest.main()
