"""The README followed as a new team would: its install commands as written, with a python3 first on PATH that
is not Debian's, writing nothing into the checkout; then its first-run program, which creates the schema,
declares its class with its policy and runs its first check with no prescient binary; then the binary upgrades
that database, and, the other way round, the program runs on a database the binary made. The blocks run are the
README's own (marked <!-- readme-check: NAME -->), so the README cannot drift from what is tested."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import unittest
from datetime import timedelta
from pathlib import Path

import psycopg

import prescient
from tests import support
from tests.support import readme_block
from tests.test_types import mypy_strict

CLIENT = support.CLIENT
REPOSITORY = CLIENT.parents[2]


def files_under(folder: Path) -> set[str]:
    return {str(path.relative_to(folder)) for path in folder.rglob("*")}


def run(command: list[str], *, env: dict[str, str], cwd: Path, timeout: float = 60) -> str:
    """Runs command and answers its output; fails the test with that output if it fails."""
    done = subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout, check=False)
    if done.returncode != 0:
        raise AssertionError(f"{command[0]} exited {done.returncode}:\n{done.stdout}")
    return done.stdout


class ReadmeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        """The install as written, once, in a service's folder under the build tree."""
        work = Path(os.environ["PRESCIENT_WORKERS_BUILD_DIR"]) / "python" / "readme"
        shutil.rmtree(work, ignore_errors=True)
        cls.service = work / "service"
        cls.service.mkdir(parents=True)
        # A new team's shell: none of the tests' settings, and a python3 first on PATH that is not Debian's (as a
        # version manager's is on the development machines): here Debian's interpreter copied into a prefix of its
        # own (the standard library linked), whose environments, like such a python's, see none of Debian's Python
        # packages.
        other_python = work / "other-python"
        (other_python / "bin").mkdir(parents=True)
        shutil.copy(os.path.realpath(sys.executable), other_python / "bin" / "python3")
        standard_library = Path(sysconfig.get_path("stdlib"))
        (other_python / "lib").mkdir()
        (other_python / "lib" / standard_library.name).symlink_to(standard_library)
        cls.env = {key: value for key, value in os.environ.items()
                   if not key.startswith(("PYTHON", "PRESCIENT_", "VIRTUAL_ENV"))}
        cls.env["PATH"] = f"{other_python / 'bin'}{os.pathsep}{os.environ['PATH']}"
        cls.first_python3_sees_psycopg = subprocess.run(["python3", "-c", "import psycopg"], env=cls.env,
                                                        capture_output=True, check=False).returncode == 0
        before = files_under(CLIENT)
        run(["bash", "-euo", "pipefail", "-c", readme_block("install")], env={**cls.env, "PRESCIENT": str(REPOSITORY)},
            cwd=cls.service, timeout=120)
        cls.written_into_the_checkout = files_under(CLIENT) - before

    def test_the_install_works_with_another_python3_first_on_path_and_writes_nothing_into_the_checkout(self):
        self.assertFalse(self.first_python3_sees_psycopg, "the python3 first on PATH sees Debian's psycopg")
        self.assertEqual(self.written_into_the_checkout, set())
        where = run([str(self.service / ".venv/bin/python"), "-c", "import prescient; print(prescient.__file__)"],
                    env=self.env, cwd=self.service)
        self.assertTrue(where.startswith(str(self.service / ".venv")), where)

    def test_the_installed_package_is_typed_the_readmes_program_clean_under_mypy_strict(self):
        program = self.service / "first_run.py"
        program.write_text(readme_block("first-run"), encoding="utf-8")
        checked = mypy_strict(str(program), python=str(self.service / ".venv/bin/python"))
        self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)  # untyped: "missing ... py.typed"

    def test_the_client_makes_the_schema_and_runs_its_first_check_then_the_binary_upgrades_it(self):
        with support.empty_database(f"prescient_py_readme_{os.getpid()}") as url:
            printed = self.first_run(url)
            self.assertRegex(printed, r"schema: [1-9]\d* files applied")
            self.assertFirstCheckRan(url)
            with psycopg.connect(url, autocommit=True) as conn:
                pending = prescient.schedule(conn, "order_unshipped", "orders", "43", delay=timedelta(hours=1)).id
                before_binary = self.state(conn)
            run([os.environ["PRESCIENT_BINARY"], "migrate", "--log-level", "warn"],
                env={**self.env, "PRESCIENT_DATABASE_URL": url}, cwd=self.service)
            with psycopg.connect(url, autocommit=True) as conn:
                self.assertEqual(self.state(conn), before_binary, "the binary's migrate lost or changed something")
                self.assertIsNotNone(support.pending(conn, pending))
                self.assertEqual(prescient.migrate(conn), [], "the client's migrate after the binary's applied again")

    def test_the_binary_makes_the_schema_then_the_client_upgrades_it_and_runs_its_first_check(self):
        url = support.database_url()  # with-database.sh's: made by `prescient migrate`
        printed = self.first_run(url)
        self.assertIn("schema: 0 files applied", printed)
        self.assertFirstCheckRan(url)

    def first_run(self, url: str) -> str:
        program = self.service / "first_run.py"
        program.write_text(readme_block("first-run"), encoding="utf-8")
        printed = run([str(self.service / ".venv/bin/python"), str(program)],
                      env={**self.env, "DATABASE_URL": url, "SLOT_SECONDS": "1"}, cwd=self.service)
        self.assertRegex(printed, r"check \d+: order 42 not shipped after 3 hours")
        return printed

    def assertFirstCheckRan(self, url: str) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            self.assertEqual(conn.execute("SELECT runs_in, max_checks, max_attempts, backoff_seconds"
                                          " FROM prescient.job_class WHERE job = 'order_unshipped'").fetchone(),
                             ("worker", 60, 5, 60))
            self.assertEqual(conn.execute("SELECT outcome, finished_by, payload FROM prescient.job_history"
                                          " WHERE job_key = 'order_unshipped:42'").fetchall(),
                             [("done", "shop-1", {"hours": 3})])

    @staticmethod
    def state(conn: psycopg.Connection) -> list:
        """What an upgrade must keep: the bookkeeping, the classes, the pending checks, the history."""
        return [conn.execute(query).fetchall() for query in (
            "SELECT version, name, checksum FROM prescient.schema_migrations ORDER BY version",
            "SELECT * FROM prescient.job_class ORDER BY job",
            "SELECT id, job, entity_key, next_check_at, payload FROM prescient.future_job ORDER BY id",
            "SELECT id, outcome, finished_at FROM prescient.job_history ORDER BY history_id")]


if __name__ == "__main__":
    unittest.main()
