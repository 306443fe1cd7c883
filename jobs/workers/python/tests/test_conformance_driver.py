"""The conformance driver as the harness runs it: a process, its payload contract, SIGTERM, lost leases."""

import os
import pathlib
import signal
import subprocess
import tempfile
import time
import unittest
from datetime import datetime, timedelta, timezone

from tests import support

DRIVER = pathlib.Path(__file__).resolve().parent.parent / "conformance-driver"


class ConformanceDriverTest(unittest.TestCase):
    def setUp(self):
        self.conn = support.connect()
        self.addCleanup(self.conn.close)
        # The harness makes this table; so does the test.
        self.conn.execute("CREATE TABLE IF NOT EXISTS conformance_ledger (check_id bigint NOT NULL,"
                          " worker text NOT NULL, language text NOT NULL, due_at timestamptz NOT NULL,"
                          " check_count integer NOT NULL, recorded_at timestamptz DEFAULT clock_timestamp())")
        self.job = support.declare_worker_class(self.conn, f"conf_{self.id().rsplit('_', 1)[-1]}")
        self.other_job = support.declare_worker_class(self.conn, self.job + "_b")

    def start(self, name: str, *options: str) -> subprocess.Popen:
        self.log = tempfile.TemporaryFile(mode="w+")
        self.addCleanup(self.log.close)
        driver = subprocess.Popen([str(DRIVER), "work", "--name", name, *options], stderr=self.log,
                                  env=os.environ)
        self.addCleanup(lambda: driver.poll() is None and driver.kill())
        return driver

    def stop(self, driver: subprocess.Popen) -> str:
        driver.send_signal(signal.SIGTERM)
        status = driver.wait(10)
        log = self.read_log()
        self.assertEqual(status, 0, f"the driver did not stop cleanly on SIGTERM; its log:\n{log}")
        return log

    def read_log(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def ledger(self, check_id: int) -> list[tuple]:
        return self.conn.execute("SELECT worker, language, due_at, check_count FROM conformance_ledger"
                                 " WHERE check_id = %s ORDER BY recorded_at", [check_id]).fetchall()

    def wait_for(self, condition, what: str, seconds: float = 10) -> None:
        deadline = time.monotonic() + seconds
        while not condition():
            self.assertLess(time.monotonic(), deadline, f"waited {seconds}s for {what}")
            time.sleep(0.05)

    def test_every_answer_of_the_payload_and_a_graceful_stop(self):
        payloads = {
            "done": {},
            "next": {"answer": "next", "next_seconds": 120},
            "at": {"answer": "at", "at": "2027-01-01T00:00:00Z"},
            "error": {"answer": "error", "error": "nope"},
            "error-default": {"answer": "error"},
            "result": {"answer": "result", "result": {"n": 1}},
            "slow": {"sleep_ms": 1500},
        }
        # A failed run's retry an hour on: by the default backoff (one slot) it could come due, and run again,
        # before the test ends, when a minute's boundary falls within it.
        for job_class in (self.job, self.other_job):
            self.conn.execute("SELECT prescient.set_job_policy(%s, p_backoff => interval '1 hour')", [job_class])
        ids = {key: support.schedule_due_now(self.conn, self.job if n % 2 else self.other_job, key, payload)
               for n, (key, payload) in enumerate(payloads.items())}
        due = {key: support.pending(self.conn, check_id)["next_check_at"] for key, check_id in ids.items()}
        driver = self.start("py-conf", "--classes", f"{self.job},{self.other_job}", "--concurrency", "8",
                            "--batch", "3", "--lease-seconds", "5")
        self.wait_for(lambda: self.ledger(ids["slow"]) and all(
            (support.pending(self.conn, ids[k]) or {}).get("claimed_by") is None for k in payloads if k != "slow"),
            "the quick checks to settle while the slow one runs")
        self.assertIsNotNone(support.pending(self.conn, ids["slow"]), "the slow check settled before SIGTERM")
        log = self.stop(driver)

        for key, check_id in ids.items():
            self.assertEqual(self.ledger(check_id), [("py-conf", "python", due[key], 0)], key)
            self.assertIn(f"check {check_id} ", log)
        self.assertEqual(support.history(self.conn, ids["done"])[0]["outcome"], "done")
        self.assertEqual(support.history(self.conn, ids["slow"])[0]["outcome"], "done", "not finished at SIGTERM")
        self.assertEqual(support.history(self.conn, ids["result"])[0]["result"], {"n": 1})
        self.assertEqual(support.pending(self.conn, ids["next"])["next_check_at"], due["next"] + timedelta(seconds=120))
        self.assertEqual(support.pending(self.conn, ids["at"])["next_check_at"],
                         datetime(2027, 1, 1, tzinfo=timezone.utc))
        for key, error in (("error", "nope"), ("error-default", "conformance error")):
            row = support.pending(self.conn, ids[key])
            self.assertEqual((row["attempts"], row["last_error"]), (1, error), key)

    def test_without_heartbeats_a_slow_check_loses_its_lease_and_runs_again(self):
        check_id = support.schedule_due_now(self.conn, self.job, "slow", {"sleep_ms": 1500})
        driver = self.start("py-lossy", "--classes", self.job, "--concurrency", "2", "--lease-seconds", "0.5",
                            "--no-heartbeat")
        self.wait_for(lambda: len(self.ledger(check_id)) >= 2, "the check to be taken again after its lease")
        self.wait_for(lambda: "lease lost" in self.read_log(), "the first run's refusal")
        log = self.stop(driver)
        self.assertIn(f"check {check_id} ", log)
        # The first run's answer was refused: the check was not settled by it.
        self.assertEqual([row[3] for row in self.ledger(check_id)][:2], [0, 0])

    def test_drain_runs_what_is_due_and_prints_the_rate(self):
        for options in (["--concurrency", "8", "--batch", "10"], [], ["--batch-handler", "--batch", "7"]):
            with self.subTest(options=options):
                ids = [support.schedule_due_now(self.conn, self.job, f"bench-{n}") for n in range(30)]
                drained = subprocess.run([str(DRIVER), "drain", "--classes", self.job, *options],
                                         capture_output=True, text=True, timeout=30, env=os.environ)
                self.assertEqual(drained.returncode, 0, drained.stderr)
                self.assertRegex(drained.stdout, r"^drained 30 checks in [0-9.]+ s: [0-9]+ checks/s\n$")
                self.assertEqual([support.history(self.conn, i)[0]["outcome"] for i in ids], ["done"] * 30)


if __name__ == "__main__":
    unittest.main()
