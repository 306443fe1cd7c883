#!/usr/bin/env bash
# The Debian packages as an operator meets them, on this machine (scripts/package.sh --test runs it, as
# root: it installs, removes and purges real packages, adds the user prescient, and leaves the packages
# purged at the end):
#  1. apt-get install the built packages; the user, the directories and their owners, the units
#     (systemd-analyze verify, not enabled), man prescient, the bash completion;
#  2. as the user prescient, the installed binary with the installed config (edited as an operator
#     would) against a PostgreSQL of its own that asks this login for a password: migrate, schedule, the
#     units' own command lines (the daemon fires the check and serves the dashboard on loopback; SIGHUP
#     reloads; the timer's service fires a slot), a plugin built with prescient-dev;
#  3. remove: config and data stay; purge: they go;
#  4. upgrade: the same code at a lower version installed, checks scheduled, these packages installed
#     over it, migrate, and every check fires.
#   tests/package/check_package.sh PACKAGE_DIR VERSION
set -euo pipefail

packages=$(realpath "${1:?usage: check_package.sh PACKAGE_DIR VERSION}")
version=${2:?usage: check_package.sh PACKAGE_DIR VERSION}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
arch=$(dpkg --print-architecture)
old_version=0.0.9

say() { echo "check_package.sh: $*"; }
fail() { echo "check_package.sh: FAILED: $*" >&2; exit 1; }
expect() {  # expect DESCRIPTION COMMAND...: the command must succeed
  local what=$1
  shift
  "$@" >"$work/last.log" 2>&1 || fail "$what ($*): $(tail -n 5 "$work/last.log")"
}
[ "$(id -u)" = 0 ] || fail "run as root: it installs and purges packages"

# shellcheck source=../../scripts/lib/packages.sh
. "$repo/scripts/lib/packages.sh"
# shellcheck source=../../scripts/lib/source_tree.sh
. "$repo/scripts/lib/source_tree.sh"
die() { fail "$@"; }
# shellcheck source=../../scripts/lib/local_server.sh
. "$repo/scripts/lib/local_server.sh"  # free_port
ensure_packages check_package.sh systemd man-db bash-completion curl cmake g++ pkg-config postgresql-15

work=$(mktemp -d /tmp/prescient-package-test.XXXXXX)
chmod 755 "$work"
installed_packages() { dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' 'prescient' 'prescient-dev' 'libprescient*' 2>/dev/null | awk '$1 ~ /^[ih]/ {print $2}'; }
export PRESCIENT_PGDATA=$work/pg
cleanup() {
  for pid in $(pgrep -u prescient -x prescient 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
  "$repo/scripts/pg.sh" stop >/dev/null 2>&1 || true
  # shellcheck disable=SC2046
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq prescient $(installed_packages) >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# The test's PostgreSQL: trust for its superuser (the schema's owner here), a password for the login the
# runners use, so that only the password file the config names lets them in.
superuser_url=$("$repo/scripts/pg.sh" start 2>/dev/null)
port=${superuser_url##*:}
port=${port%%/*}
psql_as_owner() {
  PGOPTIONS='-c client_min_messages=warning' runuser -u postgres -- psql -X -q -v ON_ERROR_STOP=1 \
    "$superuser_url" "$@" >/dev/null
}
psql_as_owner -c "CREATE ROLE prescient_pkg LOGIN PASSWORD 'pkg-secret-42'"
sed -i '1i host all prescient_pkg 127.0.0.1/32 scram-sha-256' "$PRESCIENT_PGDATA/pg_hba.conf"
psql_as_owner -c "SELECT pg_reload_conf()"
runner_url="postgresql://prescient_pkg@127.0.0.1:$port/prescient"
# Below the ephemeral range: a random port up to 50000 could be an outgoing connection's, and the daemon
# exits when it cannot serve its dashboard.
web_port=$(free_port)

as_prescient() { (cd / && runuser -u prescient -- "$@"); }
# The daemon as its unit runs it: exec'd as the user prescient with no process in between (runuser's
# watching parent keeps SIGHUP blocked, so the reload would never reach the daemon), in the background.
start_daemon() {  # start_daemon LOG: sets $daemon to its pid and $daemon_log to LOG
  daemon_log=$1
  # shellcheck disable=SC2086
  (cd / && exec env HOME=/var/lib/prescient USER=prescient LOGNAME=prescient \
    setpriv --reuid=prescient --regid=prescient --init-groups -- $exec_start) >"$1" 2>&1 &
  daemon=$!
}
# The operator's edit of the config: the database, the password in a file of its own, the dashboard.
configure() {
  cat >/etc/prescient/prescient.conf <<CONF
# Edited by check_package.sh, as an operator would.
db = $runner_url
db-password-file = /etc/prescient/db-password
plugins = /var/lib/prescient/plugins

[daemon]
workers = 1
web-addr = 127.0.0.1:$web_port

[migrate]
db = $superuser_url
slot = 1s
CONF
  printf 'pkg-secret-42\n' >/etc/prescient/db-password
  chown root:prescient /etc/prescient/db-password
  chmod 0640 /etc/prescient/db-password
}
count_done() {
  as_prescient prescient history --outcome 'done' --limit 10000 --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'
}
wait_for_done() {  # wait_for_done N [SECONDS]: until N checks settled done (30 s at most, or SECONDS)
  for _ in $(seq 1 $((${2:-30} * 5))); do
    [ "$(count_done)" -ge "$1" ] && return 0
    sleep 0.2
  done
  local state="the daemon is running"
  kill -0 "$daemon" 2>/dev/null || state="the daemon has exited"
  fail "only $(count_done) of $1 checks settled done; $state, its log ends: $(tail -n 5 "$daemon_log")"
}
install_packages() {  # install_packages DIR VERSION: the three packages, the operator's config kept
  local library deb
  for deb in "$1"/libprescient*_"$2"_"$arch".deb; do
    case "$deb" in *-dbgsym_*) ;; *) library=$deb ;; esac
  done
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Options::=--force-confold \
    "$1/prescient_$2_$arch.deb" "$library" "$1/prescient-dev_$2_$arch.deb" >"$work/apt.log" 2>&1 ||
    fail "apt-get install of $2: $(tail -n 5 "$work/apt.log")"
}

say "1. install $version"
install_packages "$packages" "$version"
expect "prescient --version says $version" sh -c "prescient --version | grep -q '^prescient $version '"
expect "a system user prescient" sh -c 'getent passwd prescient | grep -q ":/var/lib/prescient:/usr/sbin/nologin$"'
[ "$(id -u prescient)" -lt 1000 ] || fail "the user prescient is not a system user"
[ "$(stat -c '%U:%G %a' /etc/prescient/prescient.conf)" = "root:prescient 640" ] ||
  fail "/etc/prescient/prescient.conf is $(stat -c '%U:%G %a' /etc/prescient/prescient.conf), not root:prescient 640"
[ "$(stat -c '%U:%G %a' /var/lib/prescient)" = "prescient:prescient 755" ] || fail "/var/lib/prescient's owner or mode"
[ "$(stat -c '%U:%G %a' /var/lib/prescient/plugins)" = "root:root 755" ] || fail "the plugins' directory's owner or mode"
units="/lib/systemd/system/prescient.service /lib/systemd/system/prescient-slot.service /lib/systemd/system/prescient-slot.timer"
# shellcheck disable=SC2086
verify=$(systemd-analyze verify $units 2>&1) || fail "systemd-analyze verify: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify is not clean: $verify"
for unit in prescient.service prescient-slot.timer; do
  state=$(systemctl is-enabled "$unit" 2>/dev/null || true)
  [ "$state" = disabled ] || fail "$unit is '$state' after install, not disabled"
  # Stopped before an upgrade (preinst) or a removal (prerm) changes its files; this machine runs no
  # systemd to see it done, so the maintainer scripts are read.
  for script in preinst prerm; do
    grep -q "deb-systemd-invoke stop .*'$unit'" "/var/lib/dpkg/info/prescient.$script" ||
      fail "prescient.$script does not stop $unit"
  done
done
expect "man prescient" sh -c 'man -P cat prescient 2>/dev/null | grep -q "deferred checks on PostgreSQL"'
expect "man prescient documents the config file" sh -c 'man -P cat prescient 2>/dev/null | grep -q "/etc/prescient/prescient.conf"'
completion=$(bash -c 'source /usr/share/bash-completion/completions/prescient; COMP_WORDS=(prescient dae); COMP_CWORD=1; _prescient; echo "${COMPREPLY[*]}"')
[ "$completion" = daemon ] || fail "the bash completion of 'prescient dae' is '$completion'"

say "2. run as the user prescient from the installed config"
# Before the operator names a database, a command says what is missing, not a stack of defaults.
expect "the shipped config reads" as_prescient prescient config daemon
configure
expect "the config shows where each value comes from" sh -c \
  "cd / && runuser -u prescient -- prescient config daemon | grep -q '^workers .*/etc/prescient/prescient.conf:7$'"
if (cd / && runuser -u nobody -- prescient config list) >/dev/null 2>&1; then
  fail "a user outside the group prescient read the config"
fi
# A mistake in the file every command reads by default: one line naming the file, the line and the
# value, exit 2, and how to run without it.
cp -p /etc/prescient/prescient.conf "$work/prescient.conf.saved"
echo "wokers = 2" >>/etc/prescient/prescient.conf
bad_line=$(wc -l </etc/prescient/prescient.conf)
status=0
refusal=$(as_prescient prescient list 2>&1) || status=$?
[ "$status" = 2 ] || fail "a bad line in the default config: exit $status, not 2 ($refusal)"
case "$refusal" in
  "prescient: /etc/prescient/prescient.conf:$bad_line: unknown option 'wokers' for migrate (see prescient migrate --help) (the default config file; give --config FILE, or --config /dev/null to read none)") ;;
  *) fail "a bad line in the default config said: $refusal" ;;
esac
cp -p "$work/prescient.conf.saved" /etc/prescient/prescient.conf
expect "migrate, as the schema's owner ([migrate])" as_prescient prescient migrate
psql_as_owner -c "GRANT prescient_client, prescient_runner TO prescient_pkg"
if as_prescient prescient --db "$runner_url" --config /dev/null list >/dev/null 2>&1; then
  fail "the runner's login got in without the password file"
fi
at=$(date -u -d '+3 seconds' +%Y-%m-%dT%H:%M:%SZ)
expect "schedule" as_prescient prescient schedule --job noop --entity-name package --entity-key 1 --at "$at"
# The daemon as prescient.service starts it, its dashboard on loopback.
exec_start=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/prescient.service)
start_daemon "$work/daemon.log"
wait_for_done 1
page=$(curl -fsS "http://127.0.0.1:$web_port/") || fail "the dashboard did not answer on 127.0.0.1:$web_port"
grep -q "prescient" <<<"$page" || fail "the dashboard's page does not name prescient"
kill -HUP "$daemon"
for _ in $(seq 1 50); do
  grep -q "reloaded on SIGHUP" "$work/daemon.log" && break
  sleep 0.2
done
kill -0 "$daemon" 2>/dev/null || fail "SIGHUP ended the daemon: $(tail -n 3 "$work/daemon.log")"
grep -q "reloaded on SIGHUP" "$work/daemon.log" || fail "the daemon did not reload on SIGHUP: $(tail -n 3 "$work/daemon.log")"
kill -TERM "$daemon"
wait "$daemon" || fail "the daemon did not stop cleanly on SIGTERM: $(tail -n 3 "$work/daemon.log")"
# The timer's service: its two commands, as it runs them.
at=$(date -u -d '+1 second' +%Y-%m-%dT%H:%M:%SZ)
expect "schedule a second check" as_prescient prescient schedule --job noop --entity-name package --entity-key 2 --at "$at"
sleep 2
while read -r command; do
  # shellcheck disable=SC2086  # the unit's command line, split into words as systemd does
  (cd / && runuser -u prescient -- $command) >>"$work/slot.log" 2>&1 || fail "prescient-slot.service's '$command' failed"
done < <(sed -n 's/^ExecStart=//p' /lib/systemd/system/prescient-slot.service)
[ "$(count_done)" -ge 2 ] || fail "prescient-slot.service's commands did not fire the due check"
# A plugin built with prescient-dev (find_package(prescient)), loaded from the plugins' directory.
cmake -S "$repo/tests/install/consumer" -B "$work/consumer" >/dev/null
cmake --build "$work/consumer" >/dev/null
install -m 0644 "$work/consumer/hello_job.so" /var/lib/prescient/plugins/
expect "the plugin's class is listed" sh -c "cd / && runuser -u prescient -- prescient jobs | grep -q '^hello '"
"$work/consumer/consumer" | grep -q '2026-11-21T10:00:00Z' || fail "a program linked with prescient-dev did not run"
# The same program built with pkg-config alone.
[ "$(pkg-config --modversion prescient)" = "$version" ] || fail "pkg-config's prescient is not $version"
# shellcheck disable=SC2046
g++ -std=c++20 "$repo/tests/install/consumer/consumer.cpp" -o "$work/consumer_pc" $(pkg-config --cflags --libs prescient) ||
  fail "a program built with pkg-config --cflags --libs prescient"
"$work/consumer_pc" | grep -q '2026-11-21T10:00:00Z' || fail "a program built with pkg-config did not run"

say "3. remove, then purge"
# shellcheck disable=SC2046
DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq $(installed_packages) >/dev/null
[ ! -e /usr/bin/prescient ] || fail "/usr/bin/prescient is still there after remove"
grep -q "^db = $runner_url" /etc/prescient/prescient.conf || fail "remove lost the operator's config"
[ -f /etc/prescient/db-password ] || fail "remove lost the password file"
[ -f /var/lib/prescient/plugins/hello_job.so ] || fail "remove lost the plugins"
dpkg -s prescient 2>/dev/null | grep -q '^Status: deinstall ok config-files' || fail "prescient's config is not kept as config-files"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq prescient >/dev/null
[ ! -e /etc/prescient ] || fail "purge left /etc/prescient"
[ ! -e /var/lib/prescient ] || fail "purge left /var/lib/prescient"
! dpkg-statoverride --list /etc/prescient/prescient.conf >/dev/null || fail "purge left the config's statoverride"

say "4. upgrade from $old_version to $version"
# The same code at a lower version: the project's version, the changelog, and the library package named
# after its soname (0.0), as a release before this one would have them.
old_tree=$work/old-tree
mkdir -p "$old_tree"
copy_source_tree "$repo" "$old_tree"
sed -i -E "s/^project\(prescient VERSION [0-9.]+/project(prescient VERSION $old_version/" "$old_tree/CMakeLists.txt"
sed -i -E "s/libprescient[0-9.]+/libprescient0.0/g" "$old_tree/debian/control"
mv "$old_tree"/debian/libprescient*.install "$old_tree/debian/libprescient0.0.install"
# Its changelog ends at its own entry, as that release's did.
{
  printf 'prescient (%s) unstable; urgency=medium\n\n  * An earlier release, for the upgrade test.\n\n' "$old_version"
  printf ' -- %s  Mon, 23 Nov 2026 12:00:00 +0000\n' "$(dpkg-parsechangelog -l "$repo/debian/changelog" -S Maintainer)"
} >"$old_tree/debian/changelog"
# Built for installing only: no tests, no debug symbols' packages, no lintian (these packages do not ship).
DEB_BUILD_OPTIONS="nocheck noautodbgsym" "$old_tree/scripts/package.sh" --out "$work/old" --no-lintian \
  >"$work/old-build.log" 2>&1 ||
  { tail -n 30 "$work/old-build.log" >&2; fail "building $old_version"; }
install_packages "$work/old" "$old_version"
expect "prescient --version says $old_version" sh -c "prescient --version | grep -q '^prescient $old_version '"
configure
psql_as_owner -c "DROP SCHEMA prescient CASCADE"
expect "migrate at $old_version" as_prescient prescient migrate
psql_as_owner -c "GRANT prescient_client, prescient_runner TO prescient_pkg"
at=$(date -u -d '+5 seconds' +%Y-%m-%dT%H:%M:%SZ)
for key in $(seq 1 20); do
  expect "schedule check $key" as_prescient prescient schedule --job noop --entity-name upgrade --entity-key "$key" --at "$at"
done
install_packages "$packages" "$version"
expect "prescient --version says $version after the upgrade" sh -c "prescient --version | grep -q '^prescient $version '"
grep -q "^db = $runner_url" /etc/prescient/prescient.conf || fail "the upgrade lost the operator's config"
expect "migrate after the upgrade" as_prescient prescient migrate
pending=$(as_prescient prescient list --entity-name upgrade --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[ "$pending" = 20 ] || fail "$pending of 20 checks pending after the upgrade"
start_daemon "$work/daemon-upgraded.log"
wait_for_done 20 60
kill -TERM "$daemon"
wait "$daemon" || true
[ "$(count_done)" = 20 ] || fail "$(count_done) of the 20 checks scheduled before the upgrade fired once"
say "install, run as prescient, remove, purge and upgrade: all as expected"
