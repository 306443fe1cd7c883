"""The seed scenario of the README (examples/orders.py), on a pinned clock: three hours pass in no time."""

import pathlib
import unittest
from datetime import timedelta

from examples import orders
from tests import support
from tests.support import T, PinnedClock

HERE = pathlib.Path(__file__).resolve().parent.parent


class SeedScenarioTest(unittest.TestCase):
    def test_an_unshipped_order_gets_an_email_then_an_escalation_and_a_shipped_one_nothing(self):
        url = support.database_url()
        conn = support.connect()
        self.addCleanup(conn.close)
        conn.execute(orders.SCHEMA)
        support.declare_worker_class(conn, "order_unshipped")
        clock = PinnedClock(T)

        orders.place_order(conn, 1, clock)  # never ships
        orders.place_order(conn, 2, clock)
        clock.advance(timedelta(hours=1))
        orders.ship_order(conn, 2, clock)
        unshipped, shipped = (conn.execute("SELECT id FROM prescient.future_job WHERE job_key = %s",
                                           [f"order_unshipped:{n}"]).fetchone()[0] for n in (1, 2))
        worker = orders.make_worker(url, clock)

        def sent():
            return conn.execute("SELECT order_id, kind FROM notifications ORDER BY order_id, kind").fetchall()

        clock.now = T + timedelta(hours=3) - timedelta(seconds=1)
        self.assertEqual(worker.drain(), [], "a check ran before its time")

        clock.now = T + timedelta(hours=3)
        settled = {s.check_id: (s.outcome, s.next_check_at) for s in worker.drain()}
        self.assertEqual(settled, {unshipped: ("rescheduled", T + timedelta(hours=6)), shipped: ("done", None)})
        self.assertEqual(sent(), [(1, "email")])

        clock.now = T + timedelta(hours=6) - timedelta(seconds=1)
        self.assertEqual(worker.drain(), [], "the escalation came early")

        clock.now = T + timedelta(hours=6)
        self.assertEqual([(s.check_id, s.outcome) for s in worker.drain()], [(unshipped, "done")])
        self.assertEqual(sent(), [(1, "email"), (1, "escalation")])

        self.assertEqual(conn.execute("SELECT count(*) FROM prescient.future_job WHERE job = 'order_unshipped'"
                                      ).fetchone()[0], 0, "the checks did not stop")
        for check_id, runs in ((unshipped, 2), (shipped, 1)):
            [row] = support.history(conn, check_id)
            self.assertEqual((row["outcome"], row["check_count"]), ("done", runs))

    def test_the_readme_shows_the_code_this_test_runs(self):
        readme = (HERE / "README.md").read_text()
        self.assertIn((HERE / "examples" / "orders.py").read_text(), readme)


if __name__ == "__main__":
    unittest.main()
