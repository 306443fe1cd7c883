#!/usr/bin/env bash
# Installs the build into a temporary prefix, then proves an application can use it: a CMake project
# with find_package(prescient) (a program and a plugin the installed CLI loads), and a program built
# with pkg-config alone.
#   tests/install/check_install.sh BUILD_DIR
set -euo pipefail
build=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d /tmp/prescient-install.XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(find "$prefix" -name 'libprescient.so' | head -n 1)")
export LD_LIBRARY_PATH=$libdir

cmake -S "$here/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
"$work/consumer/consumer" | grep -q '2026-11-21T10:00:00Z'
mkdir "$work/plugins"
cp "$work/consumer/hello_job.so" "$work/plugins/"
# `jobs` lists the database's class registry with the classes loaded here: a database of its own on the
# tests' server, migrated by the installed CLI.
server=${PRESCIENT_TEST_DATABASE_URL:?check_install.sh: run it through ctest from scripts/test.sh, which starts PostgreSQL}
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
name=prescient_install_$$
"$pg_bin/psql" -q -X -v ON_ERROR_STOP=1 "$server" -c "CREATE DATABASE $name"
trap '"$pg_bin/psql" -q -X "$server" -c "DROP DATABASE IF EXISTS $name" >/dev/null 2>&1; rm -rf "$work"' EXIT
db="${server%%\?*}"
db="${db%/*}/$name"
"$prefix/bin/prescient" migrate --slot 1m --db "$db" >/dev/null
"$prefix/bin/prescient" jobs --plugins "$work/plugins" --db "$db" | grep -q '^hello .*hello_job.so'

# The bash completion and the man page, where bash-completion and man look for them.
grep -q '^complete -o default -F _prescient prescient$' "$prefix/share/bash-completion/completions/prescient"
bash -n "$prefix/share/bash-completion/completions/prescient"
grep -q '^\.TH PRESCIENT 1' "$prefix/share/man/man1/prescient.1"
grep -q 'max\\-clock\\-offset' "$prefix/share/man/man1/prescient.1"

PKG_CONFIG_PATH=$libdir/pkgconfig
export PKG_CONFIG_PATH
# shellcheck disable=SC2046
g++ -std=c++20 "$here/consumer/consumer.cpp" -o "$work/consumer_pc" $(pkg-config --cflags --libs prescient)
"$work/consumer_pc" | grep -q '2026-11-21T10:00:00Z'
echo "check_install.sh: find_package, a plugin loaded by the installed CLI, pkg-config, the completion and the man page all work"
