"""The package and its examples are clean under mypy --strict (Debian's mypy), as a typed application checks
them."""

from __future__ import annotations

import os
import subprocess
import sys
import unittest
from pathlib import Path

from tests import support


def mypy_strict(*paths: str, python: str | None = None) -> subprocess.CompletedProcess[str]:
    """mypy --strict on paths (relative to the client), finding prescient in src/, or, given a python, where that
    python finds it (as installed)."""
    cache = Path(os.environ["PRESCIENT_WORKERS_BUILD_DIR"]) / "python" / f"mypy-cache{'-installed' if python else ''}"
    where = ["--python-executable", python] if python else []
    env = {**os.environ, "MYPYPATH": "" if python else str(support.CLIENT / "src")}
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache), *where, *paths],
                          cwd=support.CLIENT, env=env, capture_output=True, text=True, timeout=120, check=False)


class TypesTest(unittest.TestCase):
    def test_the_package_and_its_examples_are_clean_under_mypy_strict(self):
        checked = mypy_strict("src/prescient", "examples")
        self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)
        self.assertIn("Success: no issues found", checked.stdout)


if __name__ == "__main__":
    unittest.main()
