#!/bin/sh
# Installs the package as a user would, with pip into a fresh virtual environment that sees Debian's psycopg,
# offline (--no-index, --no-build-isolation: setuptools from Debian), from a copy of the sources under
# PRESCIENT_WORKERS_BUILD_DIR (setuptools builds in the tree it is given), then imports it from there.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
work="${PRESCIENT_WORKERS_BUILD_DIR:?PRESCIENT_WORKERS_BUILD_DIR is not set}/python/install-check"
python=${PRESCIENT_PYTHON:-/usr/bin/python3}
rm -rf "$work"
mkdir -p "$work/source"
cp -R "$here/pyproject.toml" "$here/README.md" "$here/src" "$work/source/"
# Without a pip of its own (seconds saved): the system's pip installs into it.
"$python" -m venv --system-site-packages --without-pip "$work/venv"
"$python" -m pip --python "$work/venv/bin/python" install --quiet --no-index --no-build-isolation "$work/source"
cd "$work"
unset PYTHONPATH  # the tests' path to src/ would hide what was installed
"$work/venv/bin/python" -c '
import prescient, sys
assert prescient.__file__.startswith(sys.prefix), prescient.__file__
assert "prescient_migrate" in prescient.schema.bundle(), "the schema bundle was not installed"
print("installed", prescient.__name__, "from", prescient.__file__)'
