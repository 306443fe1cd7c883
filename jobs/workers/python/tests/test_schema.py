"""The schema with no prescient binary: the package's bundle is the repository's, it makes a new database at the
slot asked, applies nothing twice or to the database the binary made, and refuses a newer database."""

from __future__ import annotations

import os
import unittest
from datetime import timedelta
from pathlib import Path

import psycopg

import prescient

from . import support


class SchemaTest(unittest.TestCase):
    def test_the_package_carries_the_repository_bundle(self):
        repository = Path(__file__).resolve().parents[4] / "sql" / "prescient-bundle.sql"
        self.assertTrue(repository.read_text(encoding="utf-8") == prescient.schema.bundle(),
                        "jobs/workers/python/src/prescient/prescient-bundle.sql differs: run scripts/schema-bundle.sh")

    def test_a_new_database_the_binarys_and_a_newer_one(self):
        with support.empty_database(f"prescient_py_schema_{os.getpid()}") as url:
            with psycopg.connect(url, autocommit=True) as fresh:
                made = prescient.migrate(fresh, slot_seconds=30)
                self.assertIn(prescient.Applied("functions", "072_worker_protocol.sql"), made)
                self.assertEqual(fresh.execute("SELECT slot_seconds FROM prescient.settings").fetchone(), (30,))
                self.assertEqual(prescient.migrate(fresh), [])
                fresh.execute("INSERT INTO prescient.schema_migrations (version, name, checksum)"
                              " VALUES (9999, '9999_future.sql', 'x')")
                with self.assertRaises(prescient.Refused) as refused:
                    prescient.migrate(fresh)
                self.assertIn("newer than this bundle knows", refused.exception.reason)
        with support.connect() as binarys:
            self.assertEqual(prescient.migrate(binarys), [])


class DeclareWorkerClassTest(unittest.TestCase):
    def test_a_worker_class_with_its_policy_and_never_a_runners(self):
        job = f"ship_py_{os.getpid()}"
        with support.connect() as conn:
            self.assertEqual(prescient.declare_worker_class(conn, job, max_checks=60,
                                                            backoff=timedelta(seconds=30)), "added")
            self.assertEqual(prescient.declare_worker_class(conn, job, timeout=timedelta(minutes=2)), "known")
            self.assertEqual(conn.execute("SELECT runs_in, max_checks, backoff_seconds, timeout_seconds"
                                          " FROM prescient.job_class WHERE job = %s", [job]).fetchone(),
                             ("worker", 60, 30, 120))
            with self.assertRaises(prescient.Refused) as refused:
                prescient.declare_worker_class(conn, "noop", max_checks=1)
            self.assertIn("is run by the runner", refused.exception.reason)
