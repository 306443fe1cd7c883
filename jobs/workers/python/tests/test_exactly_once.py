"""Effects exactly once: a worker process killed with SIGKILL among 10 000 checks whose handler writes a
ledger row and completes its check in one transaction; a second worker finishes the rest. Every check has
exactly one ledger row and one history row: no effect lost, none twice. For the blocking worker, and again
for the asyncio one."""

import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

from tests import support

CHECKS = 10_000
KILL_AFTER = 3_000  # ledger rows: well into the run, with checks held and answers on the way
# A worker that settles nothing for this long is stuck: the killed worker's leases (2 s) have run out long
# before, and a live worker settles a check in milliseconds, even on a loaded machine.
STALL_SECONDS = 15
WORKER = Path(__file__).resolve().parent / "ledger_worker.py"


class KillTest(unittest.TestCase):
    flavour = "threads"  # ledger_worker.py's worker

    def setUp(self):
        self.conn = support.connect()
        self.addCleanup(self.conn.close)
        self.conn.execute("DROP TABLE IF EXISTS kill_ledger")
        self.conn.execute("CREATE TABLE kill_ledger (check_id bigint NOT NULL)")  # no key: a second row shows
        self.job = support.declare_worker_class(self.conn, f"exactly_once_{self.flavour}")

    def start(self, name: str) -> subprocess.Popen:
        log = tempfile.TemporaryFile()
        self.addCleanup(log.close)
        worker = subprocess.Popen([sys.executable, str(WORKER), self.job, name, self.flavour], stderr=log,
                                  env=os.environ, cwd=WORKER.parent.parent)
        self.addCleanup(lambda: worker.poll() is None and worker.kill())
        worker.log = log
        return worker

    def count(self, query: str) -> int:
        return self.conn.execute(query, [self.job] if "%s" in query else []).fetchone()[0]

    def wait_for(self, count, goal, what: str, worker: subprocess.Popen) -> None:
        """Waits until count() reaches goal(count()) while the worker makes progress: it fails if the worker
        exits, or if the count stands still for STALL_SECONDS. A stall, not a speed: how long the run takes
        depends on the machine and what runs beside it (the suite runs four tests at once on two cores)."""
        seen, since = count(), time.monotonic()
        while not goal(seen):
            if worker.poll() is not None or time.monotonic() - since > STALL_SECONDS:
                worker.log.seek(0)
                self.fail(f"waited for {what}: stood at {seen} for {time.monotonic() - since:.0f} s; worker exit "
                          f"{worker.poll()}; its log:\n{worker.log.read().decode()}")
            time.sleep(0.02)
            now_seen = count()
            if now_seen != seen:
                seen, since = now_seen, time.monotonic()

    def test_a_worker_killed_mid_run_leaves_each_effect_exactly_once(self):
        self.conn.execute("SELECT count(*) FROM prescient.schedule_arrays(p_job => array_fill(%s::text, ARRAY[%s]),"
                          " p_entity_name => array_fill('ledger'::text, ARRAY[%s]),"
                          " p_entity_key => array_fill('1'::text, ARRAY[%s]),"
                          " p_at => array_fill(now() - interval '1 minute', ARRAY[%s]),"
                          " p_now => now() - interval '1 minute')", [self.job, CHECKS, CHECKS, CHECKS, CHECKS])
        first = self.start("first")
        self.wait_for(lambda: self.count("SELECT count(*) FROM kill_ledger"), lambda rows: rows >= KILL_AFTER,
                      f"{KILL_AFTER} ledger rows", first)
        first.send_signal(signal.SIGKILL)
        first.wait()
        at_kill = self.count("SELECT count(*) FROM kill_ledger")
        held_at_kill = self.count("SELECT count(*) FROM prescient.future_job WHERE job = %s AND claimed_by = 'first'")
        self.assertLess(at_kill, CHECKS, "the first worker finished before it was killed")

        second = self.start("second")
        self.wait_for(lambda: self.count("SELECT count(*) FROM prescient.future_job WHERE job = %s"),
                      lambda left: left == 0, "no check left", second)
        second.send_signal(signal.SIGTERM)
        self.assertEqual(second.wait(10), 0)
        second.log.seek(0)
        warnings = second.log.read().decode()
        self.assertNotIn("lost", warnings, "the worker settled, or heartbeat, a check its handler had settled")

        ledger_rows, ledger_checks = self.conn.execute(
            "SELECT count(*), count(DISTINCT check_id) FROM kill_ledger").fetchone()
        history_rows, history_checks, done = self.conn.execute(
            "SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE outcome = 'done')"
            " FROM prescient.job_history WHERE job = %s", [self.job]).fetchone()
        by_worker = dict(self.conn.execute("SELECT finished_by, count(*) FROM prescient.job_history WHERE job = %s"
                                           " GROUP BY finished_by", [self.job]).fetchall())
        print(f"\nkilled after {at_kill} ledger rows, {held_at_kill} checks leased to it; "
              f"finished by each: {by_worker}", file=sys.stderr)
        self.assertEqual((ledger_rows, ledger_checks), (CHECKS, CHECKS), "an effect lost, or made twice")
        self.assertEqual((history_rows, history_checks, done), (CHECKS, CHECKS, CHECKS))
        self.assertEqual(self.count("SELECT count(*) FROM kill_ledger l LEFT JOIN prescient.job_history h"
                                    " ON h.id = l.check_id AND h.job = %s WHERE h.id IS NULL"), 0,
                         "a ledger row for a check not in the history")
        self.assertEqual(set(by_worker), {"first", "second"})


class AsyncKillTest(KillTest):
    flavour = "asyncio"


if __name__ == "__main__":
    unittest.main()
