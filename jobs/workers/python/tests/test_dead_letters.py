"""A dead letter retried from the application with prescient_worker's rights only: put back as pending, due now
by the server's clock, its attempts afresh; a pending check, a taken job key, a check with no failure and a
runner's check refused, each with nothing written."""

from __future__ import annotations

import os
import unittest

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

import prescient
from tests import support


class RetryTest(unittest.TestCase):
    def setUp(self):
        self.owner = support.connect()
        self.addCleanup(self.owner.close)
        role = f"prescient_py_retrier_{os.getpid()}"  # roles are the cluster's: one of this process's own
        self.owner.execute(sql.SQL("CREATE ROLE {} NOLOGIN IN ROLE prescient_worker").format(sql.Identifier(role)))
        self.addCleanup(self.owner.execute, sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
        self.as_worker = make_conninfo(support.database_url(), options=f"-c role={role}")
        self.conn = psycopg.connect(self.as_worker, autocommit=True)
        self.addCleanup(self.conn.close)
        self.job = "retried_by_worker"
        prescient.declare_worker_class(self.conn, self.job, max_attempts=1)  # the first failure is a dead letter

    def dead_letters(self, *keys: str) -> list[int]:
        ids = [support.schedule_due_now(self.conn, self.job, key, job_key=f"dead:{key}") for key in keys]
        worker = prescient.Worker(self.as_worker, name="failing")

        @worker.handler(self.job)
        def fail(check):
            raise prescient.CheckFailed("the CRM said 503")

        self.assertEqual(sorted((s.check_id, s.outcome) for s in worker.drain()), [(i, "failed") for i in ids])
        return ids

    def test_a_dead_letter_is_pending_again_due_now_with_its_attempts_afresh_and_runs(self):
        [dead] = self.dead_letters("a")
        with self.conn.transaction():  # joins the caller's transaction: now() is the retry's own clock
            due = prescient.retry(self.conn, dead)
            self.assertEqual(due, self.conn.execute("SELECT now()").fetchone()[0])
        row = support.pending(self.owner, dead)
        self.assertEqual((row["next_check_at"], row["attempts"], row["last_error"], row["job_key"]),
                         (due, 0, "the CRM said 503", "dead:a"))
        self.assertEqual([h["retried"] for h in support.history(self.owner, dead)], [True])

        worker = prescient.Worker(self.as_worker, name="mended")
        worker.handler(self.job)(lambda check: None)
        self.assertEqual([(s.check_id, s.outcome) for s in worker.drain()], [(dead, "done")])

    def test_a_pending_check_a_taken_key_no_failure_and_a_runners_check_are_refused_with_nothing_written(self):
        pending_again, key_taken = self.dead_letters("pending", "taken")
        prescient.retry(self.conn, pending_again)
        with self.assertRaises(prescient.Conflict) as conflict:
            prescient.retry(self.conn, pending_again)
        self.assertEqual(conflict.exception.check_id, pending_again)
        self.assertEqual(conflict.exception.reason, f"check {pending_again} is pending already")

        holder = support.schedule_due_now(self.conn, self.job, "taken", job_key="dead:taken")
        with self.assertRaises(prescient.Conflict) as conflict:
            prescient.retry(self.conn, key_taken)
        self.assertIn("'dead:taken'", conflict.exception.reason)
        self.assertIsNone(support.pending(self.owner, key_taken))
        self.assertIsNotNone(support.pending(self.owner, holder))

        unknown = holder + 1000
        with self.assertRaises(prescient.NotFound) as not_found:
            prescient.retry(self.conn, unknown)
        self.assertEqual(not_found.exception.check_id, unknown)
        self.assertIsNone(support.pending(self.owner, unknown))

        runners = unknown + 1
        self.owner.execute(
            "INSERT INTO prescient.job_history (id, job, entity_name, entity_key, payload, first_check_at,"
            " last_check_at, check_count, attempts, last_error, enqueued_on, enqueued_by, finished_at,"
            " finished_by, outcome) VALUES (%s, 'noop', 'things', 'r', '{}', now(), now(), 0, 3, 'boom', now(),"
            " 'app', now(), 'runner', 'failed')", [runners])
        with self.assertRaises(prescient.Refused) as refused:
            prescient.retry(self.conn, runners)
        self.assertIn("which the runner runs", refused.exception.reason)
        self.assertEqual(refused.exception.check_id, runners)
        self.assertIsNone(support.pending(self.owner, runners))
        self.assertEqual([h["retried"] for h in support.history(self.owner, runners)], [False])


if __name__ == "__main__":
    unittest.main()
