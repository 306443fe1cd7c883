#!/usr/bin/python3
"""The worker clients' conformance suite: runs the scenarios of scenarios.json against a real database.

    run.py --languages python,go [--suite language|mixed|protocol]... [--scenario NAME]...
           [--driver LANG=PATH]... [--prescient BINARY --plugins DIR] [--keep-logs]

The database is PRESCIENT_DATABASE_URL (with-database.sh sets it: a fresh migrated one, slot 1 s). Each
scenario makes its own worker classes and a fresh conformance_ledger table, starts the languages' drivers
(jobs/workers/<language>/conformance-driver, the contract of the brief's section 6), waits until its checks
are settled, stops (SIGTERM) or kills (SIGKILL) them, and judges from the database alone: the ledger the
drivers write, future_job, job_history, flow_deferral. It prints one line per scenario and set of languages
and exits 1 when any failed (2 on a usage error).
"""
import argparse
import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format
from psycopg.types.json import Jsonb

HERE = Path(__file__).resolve().parent
WORKERS = HERE.parent
LANGUAGES = ("python", "go", "java", "node")

LEDGER_DDL = """
DROP TABLE IF EXISTS conformance_ledger;
CREATE TABLE conformance_ledger (check_id bigint, worker text, language text, due_at timestamptz,
                                 check_count integer, started_at timestamptz DEFAULT clock_timestamp())
"""


class Failure(Exception):
    """A scenario's property does not hold: the message says which, with the numbers."""


class RawText:
    """Bytes sent to the server as a text parameter, unchecked: what a buggy client could send."""

    def __init__(self, data: bytes):
        self.data = data


class RawTextDumper(Dumper):
    """Sends RawText in the binary format, with its length: libpq cuts a text-format parameter at its first
    NUL (it takes it as a C string), so only this way does a NUL reach the server, as it does from the
    drivers that send lengths (pgx, JDBC, node-postgres)."""
    oid = 25  # text
    format = Format.BINARY

    def dump(self, obj):
        return obj.data


# ---------------------------------------------------------------------------------------------- drivers

def with_application_name(url, name):
    """The URL with application_name=name among its parameters."""
    return url + ("&" if "?" in url else "?") + urllib.parse.urlencode({"application_name": name})


class Driver:
    """One worker process: a language's conformance-driver, its log in a file of its own."""

    def __init__(self, path, language, name, classes, log_dir, concurrency=4, batch=50, lease_seconds=2.0,
                 heartbeat=True):
        self.language = language
        self.name = name
        self.log_path = Path(log_dir) / f"{name}.log"
        args = [str(path), "work", "--name", name, "--classes", ",".join(classes),
                "--concurrency", str(concurrency), "--batch", str(batch),
                "--lease-seconds", f"{lease_seconds:g}"]
        if not heartbeat:
            args.append("--no-heartbeat")
        self.args = args
        self.log = open(self.log_path, "wb")
        # Its sessions carry its name, so that wait_ready can tell when this driver (not merely some driver)
        # is connected: every client's driver reads application_name from the URL.
        env = dict(os.environ, PRESCIENT_DATABASE_URL=with_application_name(os.environ["PRESCIENT_DATABASE_URL"],
                                                                            name))
        # A session of its own: SIGKILL goes to the whole group (the script and the program it runs).
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=env)
        self.exit_code = None
        self.done = False  # stopped or killed, its log closed
        self.terminated = False  # sent SIGTERM (once: a second one may mean "stop now" to some runtimes)

    def terminate(self):
        if not self.terminated:
            self.terminated = True
            self.proc.send_signal(signal.SIGTERM)

    def alive(self):
        return self.proc.poll() is None

    def kill9(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.exit_code = self.proc.wait()
        self.done = True
        self.log.close()

    def stop(self, grace):
        """SIGTERM to the driver itself (the script must exec its program), once, then wait; None when it
        is still running after the grace period (it is then killed). A grace of 0 kills it at once."""
        if self.proc.poll() is None:
            self.terminate()
            try:
                self.exit_code = self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.exit_code = None
        else:
            self.exit_code = self.proc.returncode
        try:  # whatever is left of its group
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.done = True
        self.log.close()
        return self.exit_code

    def log_text(self):
        if not self.done:
            self.log.flush()
        return self.log_path.read_text(errors="replace")

    def log_tail(self, lines=4):
        return self.log_text().splitlines()[-lines:]


# ---------------------------------------------------------------------------------------------- a run

class Run:
    """What one scenario with one set of languages works with: the database, its classes, its drivers."""

    counter = 0

    def __init__(self, harness, scenario, languages):
        self.harness = harness
        self.scenario = scenario
        self.languages = languages
        self.db = harness.db
        self.drivers = []
        self.notes = []
        Run.counter += 1
        self.tag = f"{scenario['name']}_{Run.counter}"
        self.db.execute(LEDGER_DDL)

    # -- database helpers
    def one(self, sql, params=()):
        return self.db.execute(sql, params).fetchone()

    def all(self, sql, params=()):
        return self.db.execute(sql, params).fetchall()

    def now(self):
        return self.one("SELECT clock_timestamp()")[0]

    def worker_class(self, suffix=""):
        name = f"conf_{self.tag}{suffix}"
        self.one("SELECT prescient.job_class_add(%s, true)", (name,))
        return name

    def schedule(self, job, count, at, payload, key_prefix="c"):
        """count checks of job at `at` (one time, or a list), each with payload (a dict, or a list):
        their ids, in order."""
        ats = at if isinstance(at, list) else [at] * count
        payloads = payload if isinstance(payload, list) else [payload] * count
        rows = self.all(
            "SELECT id FROM prescient.schedule_arrays(%s, %s, %s, %s, p_payload => %s, p_now => clock_timestamp())"
            " ORDER BY n",
            ([job] * count, ["conformance"] * count, [f"{key_prefix}{i}" for i in range(count)], ats,
             [json.dumps(p) for p in payloads]))
        return [r[0] for r in rows]

    def next_boundary(self, seconds_ahead):
        """The slot boundary at least seconds_ahead from the server's now (slots of 1 s)."""
        return self.one("SELECT date_trunc('second', clock_timestamp()) + make_interval(secs => %s + 1)",
                        (seconds_ahead,))[0]

    def ledger(self, ids=None):
        """Ledger rows (check_id, worker, language, due_at, check_count, started_at), by start."""
        if ids is None:
            return self.all("SELECT check_id, worker, language, due_at, check_count, started_at "
                            "FROM conformance_ledger ORDER BY started_at, check_id")
        return self.all("SELECT check_id, worker, language, due_at, check_count, started_at "
                        "FROM conformance_ledger WHERE check_id = ANY(%s) ORDER BY started_at, check_id", (ids,))

    def settled_count(self, ids):
        return self.one("SELECT count(DISTINCT id) FROM prescient.job_history WHERE id = ANY(%s)", (ids,))[0]

    def wait_settled(self, ids, timeout, what=None):
        """Until every check of ids is in the history; a timeout says how many were and how many ran."""
        def progress():
            ran = self.one("SELECT count(DISTINCT check_id) FROM conformance_ledger WHERE check_id = ANY(%s)",
                           (ids,))[0]
            return f"{self.settled_count(ids)} settled, {ran} ran"
        self.wait_until(what or f"{len(ids)} checks are settled", lambda: self.settled_count(ids) == len(ids),
                        timeout, progress=progress)

    # -- drivers
    def start(self, language, name, classes, **options):
        path = self.harness.driver_path(language)
        driver = Driver(path, language, name, classes, self.harness.log_dir, **options)
        self.drivers.append(driver)
        return driver

    def start_workers(self, classes, per_language, **options):
        """Workers of every language of the set: per_language a count, or a list of counts cycled over the
        set's positions (the same language may stand at two positions: 2+2 with itself)."""
        counts = per_language if isinstance(per_language, list) else [per_language]
        started = []
        for position, language in enumerate(self.languages):
            for i in range(counts[position % len(counts)]):
                started.append(self.start(language, f"{language}-{position + 1}{'abcdefgh'[i]}", classes,
                                          **options))
        return started

    def wait_ready(self, drivers, timeout=30.0):
        """Until each of the drivers holds a session of its own (by its application_name: a count of
        sessions is not enough, since one driver's pool can open several before another has connected);
        a driver that exits meanwhile fails the scenario."""
        deadline = time.monotonic() + timeout
        while True:
            dead = [d for d in drivers if not d.alive()]
            if dead:
                raise Failure(f"driver {dead[0].name} exited with {dead[0].proc.returncode} at its start: "
                              + " | ".join(dead[0].log_tail(3)))
            connected = {row[0] for row in self.all(
                "SELECT DISTINCT application_name FROM pg_stat_activity WHERE datname = current_database() "
                "AND application_name = ANY(%s)", ([d.name for d in drivers],))}
            waiting = [d.name for d in drivers if d.name not in connected]
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise Failure(f"the drivers did not connect within {timeout:g} s (no session yet: "
                              f"{', '.join(waiting)})")
            time.sleep(0.1)

    def wait_until(self, what, predicate, timeout, poll=0.1, progress=None):
        """Polls predicate until it holds; fails after timeout (saying progress(), if given) or when a
        driver died."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise Failure(f"timed out after {timeout:g} s waiting until {what}"
                              + (f" ({progress()})" if progress else ""))
            dead = [d for d in self.drivers if not d.done and not d.alive()]
            if dead:
                raise Failure(f"driver {dead[0].name} died (exit {dead[0].proc.returncode}): "
                              + " | ".join(dead[0].log_tail(3)))
            time.sleep(poll)

    def stop_all(self, grace=15.0):
        """SIGTERM to every driver still running (all at once): each must exit 0 within the grace period."""
        problems = []
        running = [d for d in self.drivers if not d.done]
        for d in running:
            if d.alive():
                d.terminate()
            else:
                problems.append(f"{d.name} had exited ({d.proc.returncode}) before the stop")
        for d in running:
            code = d.stop(grace)
            if code is None:
                problems.append(f"{d.name} did not stop within {grace:g} s of SIGTERM")
            elif code != 0 and d.name not in " ".join(problems):
                problems.append(f"{d.name} exited {code} on SIGTERM (must be 0)")
        return problems

    def cleanup(self):
        for d in self.drivers:
            if not d.done:
                d.stop(0)


# ---------------------------------------------------------------------------------------------- judges

def exactly_once(run, ids, languages=None, others=()):
    """The ledger property: every check of ids run once, done in the history once, none pending, and no
    run in the ledger of a check that is neither one of ids nor one of others (another class's checks of
    the scenario); with languages, each of them ran some. Returns a summary; raises Failure."""
    runs = dict(run.all("SELECT check_id, count(*) FROM conformance_ledger WHERE check_id = ANY(%s) "
                        "GROUP BY check_id", (ids,)))
    strangers = run.one("SELECT count(*) FROM conformance_ledger WHERE NOT (check_id = ANY(%s))",
                        (list(ids) + list(others),))[0]
    never = [i for i in ids if i not in runs]
    twice = [i for i, n in runs.items() if n > 1]
    history = dict(run.all("SELECT outcome, count(*) FROM prescient.job_history WHERE id = ANY(%s) "
                           "GROUP BY outcome", (ids,)))
    history_rows = sum(history.values())
    history_ids = run.one("SELECT count(DISTINCT id) FROM prescient.job_history WHERE id = ANY(%s)", (ids,))[0]
    pending = run.one("SELECT count(*) FROM prescient.future_job WHERE id = ANY(%s)", (ids,))[0]
    by_language = dict(run.all("SELECT language, count(*) FROM conformance_ledger WHERE check_id = ANY(%s) "
                               "GROUP BY language ORDER BY 1", (ids,)))
    problems = []
    if never:
        problems.append(f"{len(never)} never run (e.g. {never[:5]})")
    if twice:
        problems.append(f"{len(twice)} run more than once (e.g. {sorted(twice)[:5]})")
    if strangers:
        problems.append(f"{strangers} ledger rows of checks not enqueued")
    if history.get("done", 0) != len(ids) or history_rows != len(ids) or history_ids != len(ids):
        problems.append(f"history {history} for {len(ids)} checks (want all done, one row each)")
    if pending:
        problems.append(f"{pending} still pending")
    for language in languages or []:
        if not by_language.get(language):
            problems.append(f"language {language} ran none (did its workers start?)")
    summary = (f"{len(ids)} checks, {sum(runs.values())} runs, {history.get('done', 0)} done, {pending} pending; "
               f"by language {by_language}")
    if problems:
        raise Failure("; ".join(problems) + f" [{summary}]")
    return summary


def finish(run, summary):
    """Stops the drivers (each must exit 0 on SIGTERM) and returns the summary, or fails."""
    problems = run.stop_all()
    if problems:
        raise Failure("; ".join(problems))
    return summary


def scenario_never_early(run, s):
    job = run.worker_class()
    ids, slots = [], []
    base = run.next_boundary(0)
    for k in s["boundaries"]:
        at = base + dt.timedelta(seconds=k - 1, microseconds=300000)  # rounds up to base + k
        ids += run.schedule(job, s["checks_per_boundary"], at, {}, key_prefix=f"b{k}_")
        slots.append(base + dt.timedelta(seconds=k))
    far = run.schedule(job, s["far_checks"], run.now() + dt.timedelta(seconds=s["far_seconds"]), {},
                       key_prefix="far")
    workers = run.start_workers([job], s["workers_per_language"], concurrency=s["concurrency"],
                                lease_seconds=s["lease_seconds"])
    run.wait_ready(workers)
    run.wait_settled(ids, s["timeout_seconds"])
    time.sleep(0.5)
    summary = exactly_once(run, ids)
    rows = run.all(
        "SELECT l.check_id, l.started_at, l.due_at, h.last_check_at, l.started_at - h.last_check_at "
        "FROM conformance_ledger l JOIN prescient.job_history h ON h.id = l.check_id WHERE l.check_id = ANY(%s)",
        (ids,))
    early = [r for r in rows if r[1] < r[3]]
    wrong_due = [r for r in rows if r[2] != r[3]]
    distinct_slots = sorted({r[3] for r in rows})
    far_runs = run.one("SELECT count(*) FROM conformance_ledger WHERE check_id = ANY(%s)", (far,))[0]
    far_pending = run.one("SELECT count(*) FROM prescient.future_job WHERE id = ANY(%s) AND claimed_by IS NULL",
                          (far,))[0]
    problems = []
    if early:
        r = early[0]
        problems.append(f"{len(early)} runs started before their slot (check {r[0]} at {r[1]}, slot {r[3]})")
    if wrong_due:
        r = wrong_due[0]
        problems.append(f"{len(wrong_due)} ledger due_at differ from the slot (check {r[0]}: {r[2]} vs {r[3]})")
    if distinct_slots != slots:
        problems.append(f"slots {distinct_slots} are not the boundaries {slots}")
    if far_runs or far_pending != len(far):
        problems.append(f"of {len(far)} checks due in {s['far_seconds']} s, {far_runs} ran, "
                        f"{far_pending} pending unleased")
    if problems:
        raise Failure("; ".join(problems))
    lateness = [r[4].total_seconds() for r in rows]
    return finish(run, f"{len(rows)} runs over {len(slots)} slots, none early (started {min(lateness):.3f} to "
                       f"{max(lateness):.3f} s after the slot); {len(far)} later checks not run; {summary}")


def scenario_ledger(run, s):
    job = run.worker_class()
    workers = run.start_workers([job], s["workers_per_language"], concurrency=s["concurrency"],
                                batch=s["batch"], lease_seconds=s["lease_seconds"])
    run.wait_ready(workers)
    at = run.next_boundary(s["due_in_seconds"])
    ids = run.schedule(job, s["checks"], at, s["payload"])
    run.wait_settled(ids, s["timeout_seconds"])
    time.sleep(0.5)  # a run more than once would show by now
    by_worker = dict(run.all("SELECT worker, count(*) FROM conformance_ledger GROUP BY 1"))
    summary = exactly_once(run, ids, languages=set(run.languages))
    idle = [d.name for d in workers if not by_worker.get(d.name)]
    return finish(run, f"{len(workers)} workers ({', '.join(d.name for d in workers)}): {summary}"
                       + (f"; idle workers: {idle}" if idle else ""))


def scenario_kill9(run, s):
    language = run.languages[0]
    job = run.worker_class()
    ids = run.schedule(job, s["checks"], run.now(), s["payload"])
    a = run.start(language, f"{language}-A", [job], concurrency=s["concurrency"], lease_seconds=s["lease_seconds"])
    run.wait_until(f"{a.name} has started all {len(ids)} checks",
                   lambda: run.one("SELECT count(*) FROM conformance_ledger WHERE worker = %s", (a.name,))[0]
                   == len(ids), s["timeout_seconds"])
    b = run.start(language, f"{language}-B", [job], concurrency=s["concurrency"], lease_seconds=s["lease_seconds"])
    run.wait_ready([b])
    time.sleep(s["idle_seconds"])  # longer than a lease: only A's heartbeats keep B off
    b_early = run.one("SELECT count(*) FROM conformance_ledger WHERE worker = %s", (b.name,))[0]
    settled_early = run.settled_count(ids)
    if b_early or settled_early:
        raise Failure(f"before A was killed, B ran {b_early} and {settled_early} were settled: A's run of "
                      f"{s['payload']['sleep_ms']} ms should still hold its leases (heartbeats)")
    a.kill9()
    killed_at = run.now()
    run.wait_settled(ids, s["timeout_seconds"], f"B has settled all {len(ids)} checks")
    ledger = run.ledger(ids)
    history = run.all("SELECT id, outcome, finished_by, check_count, attempts FROM prescient.job_history "
                      "WHERE id = ANY(%s) ORDER BY id", (ids,))
    problems = []
    for i in ids:
        runs = [(r[1], r[5]) for r in ledger if r[0] == i]
        if [w for w, _ in runs] != [a.name, b.name]:
            problems.append(f"check {i} ran by {[w for w, _ in runs]} (want A then B)")
        elif runs[1][1] < killed_at:
            problems.append(f"check {i}: B started it at {runs[1][1]}, before A was killed at {killed_at}")
        rows = [h for h in history if h[0] == i]
        if len(rows) != 1 or rows[0][1:] != ("done", b.name, 1, 0):
            problems.append(f"check {i}: history {rows} (want one row: done by {b.name}, check_count 1, attempts 0)")
    if problems:
        raise Failure("; ".join(problems))
    waits = [(r[5] - killed_at).total_seconds() for r in ledger if r[1] == b.name]
    return finish(run, f"{len(ids)} checks: A killed mid-run, B took each {min(waits):.2f} to {max(waits):.2f} s "
                       f"after the kill (lease {s['lease_seconds']:g} s): 2 runs each, 1 history row each, done by B")


def scenario_late_settlement(run, s):
    language = run.languages[0]
    job = run.worker_class()
    [check] = run.schedule(job, 1, run.now(), s["payload"])
    a = run.start(language, f"{language}-A", [job], concurrency=1, lease_seconds=s["lease_seconds_a"],
                  heartbeat=False)
    run.wait_until(f"{a.name} has started check {check}",
                   lambda: run.one("SELECT count(*) FROM conformance_ledger WHERE worker = %s", (a.name,))[0] == 1,
                   s["timeout_seconds"])
    b = run.start(language, f"{language}-B", [job], concurrency=1, lease_seconds=s["lease_seconds_b"])
    run.wait_until(f"check {check} is settled", lambda: run.settled_count([check]) == 1, s["timeout_seconds"])
    # A answered before B (its run is as long and began first): its refusal is in its log by now, or soon.
    lost = re.compile(rf"lease.?lost.*\b{check}\b|\b{check}\b.*lease.?lost", re.IGNORECASE)
    try:
        run.wait_until(f"{a.name}'s log says its completion of check {check} was refused (lease_lost)",
                       lambda: any(lost.search(line) for line in a.log_text().splitlines()), 5.0)
    except Failure as failure:
        raise Failure(f"{failure}; its last lines: {' | '.join(a.log_tail(3))}")
    ledger = run.ledger([check])
    history = run.all("SELECT outcome, finished_by, check_count, attempts FROM prescient.job_history WHERE id = %s",
                      (check,))
    problems = []
    if [r[1] for r in ledger] != [a.name, b.name]:
        problems.append(f"ran by {[r[1] for r in ledger]} (want A then B)")
    if history != [("done", b.name, 1, 0)]:
        problems.append(f"history {history} (want one row: done by {b.name}, check_count 1, attempts 0)")
    if not a.alive():
        problems.append(f"{a.name} exited ({a.proc.returncode}) after its settlement was refused")
    if problems:
        raise Failure(f"check {check}: " + "; ".join(problems))
    line = next(line for line in a.log_text().splitlines() if lost.search(line))
    return finish(run, f"check {check}: A's completion refused, history one row done by B, 2 runs; "
                       f"A logged: {line.strip()[:160]}")


def scenario_paused(run, s):
    job = run.worker_class()
    tick = run.worker_class("_tick")
    run.one("SELECT prescient.pause_job(%s)", (job,))
    ids = run.schedule(job, s["checks"], run.now(), {})
    base = run.next_boundary(0)
    ticks = run.schedule(tick, s["tick_seconds"], [base + dt.timedelta(seconds=k) for k in range(s["tick_seconds"])],
                         {})
    workers = run.start_workers([job, tick], s["workers_per_language"], concurrency=s["concurrency"],
                                lease_seconds=s["lease_seconds"])
    run.wait_ready(workers)
    time.sleep(s["paused_seconds"])
    taken = run.one("SELECT count(*) FROM conformance_ledger WHERE check_id = ANY(%s)", (ids,))[0]
    leased = run.one("SELECT count(*) FROM prescient.future_job WHERE id = ANY(%s) AND claimed_by IS NOT NULL",
                     (ids,))[0]
    tick_runs = run.one("SELECT count(*) FROM conformance_ledger WHERE check_id = ANY(%s)", (ticks,))[0]
    if taken or leased:
        raise Failure(f"while paused, {taken} of {len(ids)} checks ran and {leased} were leased")
    if tick_runs < 2:
        raise Failure(f"the workers ran {tick_runs} checks of the other class in {s['paused_seconds']} s: "
                      f"they were not taking, so the pause proved nothing")
    run.one("SELECT prescient.resume_job(%s)", (job,))
    resumed = time.monotonic()
    run.wait_settled(ids, s["timeout_seconds"], f"{len(ids)} checks are settled after resume")
    after = time.monotonic() - resumed
    summary = exactly_once(run, ids, others=ticks)
    return finish(run, f"paused {s['paused_seconds']:g} s: 0 taken while {tick_runs} of another class ran; "
                       f"all taken within {after:.1f} s of resume; {summary}")


def scenario_rate_limit(run, s):
    job = run.worker_class()
    limit = f"conf_rate_{run.tag}"
    run.one("SELECT prescient.limit_set(%s, 'job', p_rate => %s, p_per_seconds => 1, p_burst => %s, p_job => %s)",
            (limit, s["rate"], s["burst"], job))
    per_language = s["workers_when_one_language"] if len(run.languages) == 1 else s["workers_per_language"]
    workers = run.start_workers([job], per_language, concurrency=s["concurrency"], batch=s["batch"],
                                lease_seconds=s["lease_seconds"])
    run.wait_ready(workers)
    ids = run.schedule(job, s["checks"], run.now(), {})
    try:
        run.wait_settled(ids, s["timeout_seconds"])
        time.sleep(0.3)
        starts = [r[0] for r in run.all("SELECT started_at FROM conformance_ledger WHERE check_id = ANY(%s) "
                                        "ORDER BY started_at", (ids,))]
        window = dt.timedelta(seconds=s["window_seconds"])
        worst, worst_at, j = 0, None, 0
        for i, t in enumerate(starts):  # the window starting at each start holds starts[i:j]
            while j < len(starts) and starts[j] < t + window:
                j += 1
            if j - i > worst:
                worst, worst_at = j - i, t
        deferred = run.one("SELECT count(DISTINCT check_id) FROM prescient.flow_deferral WHERE limit_name = %s",
                           (limit,))[0]
        summary = exactly_once(run, ids, languages=set(run.languages))
        span = (starts[-1] - starts[0]).total_seconds()
        figures = (f"at most {worst} starts in a {s['window_seconds']} s window (limit {s['max_in_window']}); "
                   f"{len(starts)} starts over {span:.1f} s ({(len(starts) - 1) / max(span, 1e-9):.1f}/s); "
                   f"{deferred} checks deferred")
        if worst > s["max_in_window"]:
            raise Failure(f"{worst} starts in the {s['window_seconds']} s window from {worst_at}: {figures}")
        if deferred == 0:
            raise Failure(f"the limit deferred no check: it was not applied ({figures})")
        return finish(run, f"{figures}; {summary}")
    finally:
        run.one("SELECT prescient.limit_remove(%s)", (limit,))


# -- scenario 7: the answers, each compared with the C++ runner's

TIME_RE = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d(?::?\d\d)?)?")


def expand(value, due):
    """A case's payload with its templates made: {"$due_plus": S} the slot plus S seconds (ISO text),
    {"$repeat": [TEXT, N]} TEXT N times."""
    if isinstance(value, dict):
        if "$due_plus" in value:
            return (due + dt.timedelta(seconds=value["$due_plus"])).isoformat()
        if "$repeat" in value:
            text, times = value["$repeat"]
            return text * times
        return {k: expand(v, due) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v, due) for v in value]
    return value


def masked(text, job):
    """An error text with its times and its class's name (in the hint "prescient jobs set CLASS") masked:
    what must be equal between runner and worker."""
    if text is None:
        return None
    return TIME_RE.sub("<time>", text).replace(f"jobs set {job} ", "jobs set <class> ")


def ending(run, check, job, due):
    """How a check ended: its runs, history rows, pending row and timeline (check_run: the runs that left it
    pending), times relative to its first slot."""
    runs = run.one("SELECT count(*) FROM conformance_ledger WHERE check_id = %s", (check,))[0]
    history = [{"outcome": r[0], "check_count": r[1], "attempts": r[2], "last_error": masked(r[3], job),
                "result": r[4]}
               for r in run.all("SELECT outcome, check_count, attempts, last_error, result FROM prescient.job_history "
                                "WHERE id = %s ORDER BY history_id", (check,))]
    pending = run.one("SELECT check_count, attempts, last_error, next_check_at, asked_for_at, claimed_by "
                      "FROM prescient.future_job WHERE id = %s", (check,))
    if pending:
        pending = {"check_count": pending[0], "attempts": pending[1], "last_error": masked(pending[2], job),
                   "next_after_due": (pending[3] - due).total_seconds(),
                   "asked_for_after_due": (pending[4] - due).total_seconds() if pending[4] else None,
                   "leased": pending[5] is not None}
    timeline = [{"result": r[0], "check_count": r[1], "attempts": r[2], "error": masked(r[3], job),
                 "next_after_due": r[4].total_seconds(), "answered_after_due": r[5] and r[5].total_seconds()}
                for r in run.all("SELECT result, check_count, attempts, error, next_check_at - %s, answered_at - %s "
                                 "FROM prescient.check_run WHERE id = %s ORDER BY finished_at", (due, due, check))]
    return {"runs": runs, "history": history, "pending": pending, "timeline": timeline}


def without_result(got):
    """An ending without the history's result column (the C++ runner keeps none)."""
    return dict(got, history=[{k: v for k, v in h.items() if k != "result"} for h in got["history"]])


def as_compared(got):
    """An ending as two sides' are compared: without a retry's next time, which is the settlement's own time
    plus the backoff (rounded up to the slot), so it depends on how late in its slot each side settled, not on
    the answer (a worker settling 1.2 s into the slot retries a slot later than a runner settling at once)."""
    return dict(got, timeline=[dict(t, next_after_due=None) if t["result"] == "retried" else t
                               for t in got["timeline"]])


def expectation_problems(case, got, raw_errors):
    """Where an ending departs from the case's documented expectation."""
    problems = []
    if len(got["timeline"]) != case["runs"] - len(case.get("history", [])):
        problems.append(f"timeline {got['timeline']}: want a row for each run but the last")
    if got["runs"] != case["runs"]:
        problems.append(f"{got['runs']} runs, want {case['runs']}")
    want_history = case.get("history", [])
    if len(got["history"]) != len(want_history):
        problems.append(f"history {got['history']}, want {len(want_history)} row(s)")
    for want, row, raw in zip(want_history, got["history"], raw_errors):
        for field in ("outcome", "check_count", "attempts", "last_error", "result"):
            if field in want and row[field] != want[field]:
                problems.append(f"history {field} {row[field]!r}, want {want[field]!r}")
        if "last_error_contains" in want and want["last_error_contains"] not in (row["last_error"] or ""):
            problems.append(f"last_error {str(row['last_error'])[:120]!r} lacks {want['last_error_contains']!r}")
        if "last_error_max_bytes" in want and len((raw or "").encode()) > want["last_error_max_bytes"]:
            problems.append(f"last_error is {len(raw.encode())} bytes, over {want['last_error_max_bytes']}")
    want_pending = case.get("pending")
    if bool(got["pending"]) != bool(want_pending):
        problems.append(f"pending {got['pending']}, want {want_pending}")
    elif want_pending:
        for field, value in want_pending.items():
            if got["pending"][field] != value:
                problems.append(f"pending {field} {got['pending'][field]!r}, want {value!r}")
        if got["pending"]["leased"]:
            problems.append("still leased")
    return problems


class CppRunner:
    """The C++ runner (prescient daemon) running the test plugin's class over the same payloads."""

    def __init__(self, harness, job, log_dir):
        self.job = job
        self.log_path = Path(log_dir) / "cpp-daemon.log"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [harness.args.prescient, "daemon", "--plugins", harness.args.plugins, "--runner-id", "cpp-runner",
             "--workers", "2", "--log-level", "warn", "--config", "/dev/null"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def log_tail(self, lines=3):
        self.log.flush()
        return self.log_path.read_text(errors="replace").splitlines()[-lines:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


def scenario_answers(run, s):
    harness = run.harness
    policy = s["policy"]
    cases = s["cases"]
    sides = {}  # side (a language, or cpp) -> its class
    for language in run.languages:
        sides[language] = run.worker_class(f"_{language}")
    cpp = None
    with_cpp = bool(harness.args.plugins)
    if with_cpp:
        sides["cpp"] = s["cpp_class"]
        run.one("SELECT prescient.job_class_add(%s, false)", (s["cpp_class"],))
    for job in sides.values():
        run.one("SELECT prescient.set_job_policy(%s, p_max_checks => %s, p_max_attempts => %s, "
                "p_backoff => make_interval(secs => %s))",
                (job, policy["max_checks"], policy["max_attempts"], policy["backoff_seconds"]))
    try:
        if with_cpp:
            cpp = CppRunner(harness, s["cpp_class"], harness.log_dir)
            # A daemon declares the classes it loads at its start: seen_at says it loaded this one.
            def loaded():
                if cpp.proc.poll() is not None:
                    raise Failure(f"the C++ runner exited ({cpp.proc.returncode}): " + " | ".join(cpp.log_tail()))
                return run.one("SELECT seen_at IS NOT NULL FROM prescient.job_class WHERE job = %s",
                               (s["cpp_class"],))[0]
            run.wait_until(f"the C++ runner has loaded class {s['cpp_class']!r} from {harness.args.plugins}",
                           loaded, 15)
        workers = [run.start(language, f"{language}-1", [sides[language]], concurrency=s["concurrency"],
                             lease_seconds=s["lease_seconds"]) for language in run.languages]
        run.wait_ready(workers)
        due = run.next_boundary(s["due_in_seconds"])
        checks = {side: run.schedule(job, len(cases), due, [expand(c["payload"], due) for c in cases],
                                     key_prefix=f"{side}_")
                  for side, job in sides.items()}
        every = [i for ids in checks.values() for i in ids]

        def settled():
            # Each check ended, or pending beyond the scenario (not leased, next time 30 s away or more).
            return run.one(
                "SELECT count(*) FROM prescient.future_job WHERE id = ANY(%s) "
                "AND (claimed_by IS NOT NULL OR next_check_at < clock_timestamp() + interval '30 seconds')",
                (every,))[0] == 0

        run.wait_until("every case has ended or waits beyond the scenario", settled, s["timeout_seconds"])
        time.sleep(0.3)
        endings, problems = {}, []
        for side, job in sides.items():
            for case, check in zip(cases, checks[side]):
                got = ending(run, check, job, due)
                raw = [r[0] for r in run.all("SELECT last_error FROM prescient.job_history WHERE id = %s "
                                             "ORDER BY history_id", (check,))]
                want = case
                if side == "cpp":  # the runner keeps no result: its `result` case ends as done, nothing kept
                    got = without_result(got)
                    want = dict(case, history=[{k: v for k, v in h.items() if k != "result"}
                                               for h in case.get("history", [])])
                endings[side, case["label"]] = got
                problems += [f"{side} {case['label']} (check {check}): {p}"
                             for p in expectation_problems(want, got, raw)]
        for language in run.languages if with_cpp else []:
            for case in cases:
                mine = as_compared(without_result(endings[language, case["label"]]))
                theirs = as_compared(endings["cpp", case["label"]])
                if mine != theirs:
                    problems.append(f"{language} {case['label']} ends as {mine}, the C++ runner's as {theirs}")
        if problems:
            raise Failure("; ".join(problems[:6]) + (f"; and {len(problems) - 6} more" if len(problems) > 6 else ""))
        compared = "as the C++ runner's" if with_cpp else "as documented (no --plugins: not compared with the C++ runner)"
        outcomes = ", ".join(f"{c['label']}={(endings[run.languages[0], c['label']]['history'] or [{'outcome': 'pending'}])[-1]['outcome']}"
                             for c in cases)
        return finish(run, f"{len(cases)} answers x {len(run.languages)} languages end {compared}: {outcomes}")
    finally:
        if cpp:
            cpp.stop()


# -- scenario 8: bad input through the protocol, as a buggy worker would send it

def sqlstate_of(run, sql, params):
    """The SQLSTATE and message a call is refused with, or (None, rows) when it is not refused."""
    try:
        with run.db.transaction():
            return None, run.all(sql, params)
    except psycopg.Error as error:
        return error.sqlstate, str(error).splitlines()[0]


def scenario_bad_input(run, s):
    job = run.worker_class()
    problems = []
    notes = []
    t0 = run.next_boundary(10)  # a pinned clock, ahead of the checks' slot: every call passes it as p_now

    def at(seconds):
        return t0 + dt.timedelta(seconds=seconds)

    def take(worker, limit, now, lease=1.0):
        return run.all("SELECT id, lease_token FROM prescient.worker_take(%s, %s, %s, %s, %s)",
                       (worker, [job], limit, lease, now))

    def state(check):
        return run.one("SELECT claimed_by, claim_token, check_count, attempts, last_error FROM prescient.future_job "
                       "WHERE id = %s", (check,))

    def history_rows(ids):
        return run.one("SELECT count(*) FROM prescient.job_history WHERE id = ANY(%s)", (ids,))[0]

    def expect(label, cond, detail):
        if not cond:
            problems.append(f"{label}: {detail}")

    run.schedule(job, 8, run.now(), {})  # due at the next slot: before t0, so each take below finds them

    def all_history():
        return run.one("SELECT count(*) FROM prescient.job_history")[0]

    # 1. an unknown id: each settlement call answers lease_lost with the reason; nothing written.
    unknown = run.one("SELECT coalesce(max(id), 0) + 1000 FROM prescient.future_job")[0]
    before = all_history()
    for call, sql, params in (
            ("complete", "SELECT outcome, last_error FROM prescient.worker_complete(%s, %s, %s, %s, NULL, %s)",
             ("buggy", [unknown], [1], [None], at(0))),
            ("fail", "SELECT outcome, last_error FROM prescient.worker_fail(%s, %s, %s, %s, %s)",
             ("buggy", [unknown], [1], ["boom"], at(0))),
            ("extend", "SELECT lease_until IS NULL, refusal FROM prescient.worker_extend(%s, %s, %s, 1, %s)",
             ("buggy", [unknown], [1], at(0)))):
        code, rows = sqlstate_of(run, sql, params)
        if call == "extend":
            expect(f"unknown id, {call}", code is None and rows[0][0] and "not pending" in (rows[0][1] or ""),
                   f"{code} {rows}")
        else:
            expect(f"unknown id, {call}", code is None and rows[0][0] == "lease_lost" and "not pending" in rows[0][1],
                   f"{code} {rows}")
    expect("unknown id", all_history() == before, "a history row was written")
    notes.append("unknown id: lease_lost, not pending")

    # 2. a stale token: A's lease ran out, B took the check; A's answer is refused, B's settles it.
    [(c1, token_a)] = take("buggy-A", 1, at(0))
    code, rows = sqlstate_of(run, "SELECT outcome, last_error FROM prescient.worker_complete(%s, %s, %s, %s, NULL, "
                             "%s)", ("buggy-A", [c1], [token_a], [None], at(1.5)))
    expect("lease run out, nobody took it", code is None and rows[0][0] == "lease_lost" and "expired" in rows[0][1],
           f"{code} {rows}")
    [(c1b, token_b)] = take("buggy-B", 1, at(2))
    expect("stale token", c1b == c1, f"B took {c1b}, not {c1}")
    code, rows = sqlstate_of(run, "SELECT outcome, last_error FROM prescient.worker_complete(%s, %s, %s, %s, NULL, "
                             "%s)", ("buggy-A", [c1], [token_a], [None], at(2.5)))
    expect("stale token", code is None and rows[0][0] == "lease_lost" and "another lease" in rows[0][1],
           f"{code} {rows}")
    expect("stale token", state(c1)[:2] == ("buggy-B", token_b), f"B's lease changed: {state(c1)}")
    code, rows = sqlstate_of(run, "SELECT outcome FROM prescient.worker_complete(%s, %s, %s, %s, NULL, %s)",
                             ("buggy-B", [c1], [token_b], [None], at(2.6)))
    history = run.all("SELECT outcome, finished_by FROM prescient.job_history WHERE id = %s", (c1,))
    expect("stale token", code is None and rows == [("done",)] and history == [("done", "buggy-B")],
           f"B's completion {code} {rows}, history {history}")
    notes.append("stale token: lease_lost, B's settles")

    # 3. a result of 1 MiB: PR400, nothing written (the check still leased as it was), alone or in a batch.
    taken = take("buggy-C", 2, at(3), lease=60)
    (c2, token2), (c3, token3) = taken
    big = Jsonb({"blob": "x" * s["big_bytes"]})
    before_c2, before_c3 = state(c2), state(c3)
    code, message = sqlstate_of(run, "SELECT * FROM prescient.worker_complete(%s, %s, %s, %s, %s, %s)",
                                ("buggy-C", [c2, c3], [token2, token3], [None, None], [Jsonb({"ok": 1}), big],
                                 at(3.1)))
    expect("1 MiB result", code == "PR400" and str(c3) in str(message), f"{code} {message}")
    expect("1 MiB result", state(c2) == before_c2 and state(c3) == before_c3 and history_rows([c2, c3]) == 0,
           f"written: {state(c2)} {state(c3)}")
    code, rows = sqlstate_of(run, "SELECT outcome FROM prescient.worker_complete(%s, %s, %s, %s, %s, %s)",
                             ("buggy-C", [c2, c3], [token2, token3], [None, None], [Jsonb({"ok": 1}), None],
                              at(3.2)))
    expect("1 MiB result", code is None and rows == [("done",), ("done",)], f"then a good call: {code} {rows}")
    kept = run.one("SELECT result FROM prescient.job_history WHERE id = %s", (c2,))
    expect("result kept", kept == ({"ok": 1},), f"history result {kept}")
    notes.append(f"1 MiB result: PR400 ({str(message)[:70]}), nothing written")

    # 4. an error of 1 MiB: stored cut to 4096 bytes with the marker, as storable_error (the runner's rule).
    [(c4, token4)] = take("buggy-D", 1, at(4), lease=60)
    text = ("\u00e9" * (s["big_bytes"] // 2))  # two bytes a character: the cut must fall between characters
    code, rows = sqlstate_of(run, "SELECT outcome, last_error FROM prescient.worker_fail(%s, %s, %s, %s, %s)",
                             ("buggy-D", [c4], [token4], [text], at(4.1)))
    stored = state(c4)[4] if code is None else None
    marker = f"[cut: {len(text.encode())} bytes in all]"
    expect("1 MiB error", code is None and rows[0][0] == "retried", f"{code} {rows if code is None else rows}")
    expect("1 MiB error", stored is not None and len(stored.encode()) <= 4096 and stored.endswith(marker)
           and stored.startswith("\u00e9" * 100) and rows[0][1] == stored,
           f"stored {len((stored or '').encode())} bytes ending {(stored or '')[-40:]!r}")
    same = run.one("SELECT prescient.storable_error(%s) = %s", (text, stored))[0]
    expect("1 MiB error", same, "not what prescient.storable_error makes of it")
    notes.append(f"1 MiB error: stored {len((stored or '').encode())} bytes ending {marker!r}")

    # 5. text that is not UTF-8, or holds a NUL, sent as bytes: the server refuses the call, nothing written.
    [(c5, token5)] = take("buggy-E", 1, at(5), lease=60)
    before = state(c5)
    run.db.adapters.register_dumper(RawText, RawTextDumper)
    for label, raw in (("not UTF-8", b"bad \xff\xfe bytes"), ("a NUL", b"nul \x00 inside")):
        code, message = sqlstate_of(run, "SELECT * FROM prescient.worker_fail(%s, %s, %s, ARRAY[%s::text], %s)",
                                    ("buggy-E", [c5], [token5], RawText(raw), at(5.1)))
        expect(f"error text with {label}", code is not None and code.startswith("22"), f"{code} {message}")
        expect(f"error text with {label}", state(c5) == before, f"written: {state(c5)}")
        code, message = sqlstate_of(run, "SELECT * FROM prescient.worker_complete(%s, %s, %s, %s, "
                                         "ARRAY[jsonb_build_object('t', %s::text)], %s)",
                                    ("buggy-E", [c5], [token5], [None], RawText(raw), at(5.2)))
        expect(f"result with {label}", code is not None and code.startswith("22"), f"{code} {message}")
        expect(f"result with {label}", state(c5) == before and history_rows([c5]) == 0, f"written: {state(c5)}")
        notes.append(f"{label}: {code}")

    # 6. arrays of unequal length: PR400, nothing written.
    code, message = sqlstate_of(run, "SELECT * FROM prescient.worker_complete(%s, %s, %s, %s, NULL, %s)",
                                ("buggy-E", [c5], [token5, token5], [None], at(5.3)))
    expect("unequal arrays", code == "PR400", f"{code} {message}")
    expect("unequal arrays", state(c5) == before, f"written: {state(c5)}")
    if problems:
        raise Failure("; ".join(problems))
    return "; ".join(notes)


SCENARIOS = {
    "never_early": scenario_never_early,
    "ledger": scenario_ledger,
    "kill9": scenario_kill9,
    "late_settlement": scenario_late_settlement,
    "paused": scenario_paused,
    "rate_limit": scenario_rate_limit,
    "answers": scenario_answers,
    "bad_input": scenario_bad_input,
}


# ---------------------------------------------------------------------------------------------- harness

def language_sets(sets, languages):
    if sets == "none":
        return [[]]
    if sets == "each":
        return [[language] for language in languages]
    if sets == "all":
        return [list(languages)]
    if sets == "pairs":
        pairs = [list(languages[i:i + 2]) for i in range(0, len(languages), 2)]
        return [pair if len(pair) == 2 else [pair[0], languages[0] if len(languages) > 1 else pair[0]]
                for pair in pairs]
    raise ValueError(f"unknown sets {sets!r}")


class Harness:
    def __init__(self, args):
        self.args = args
        self.drivers = {}
        for spec in args.driver:
            language, _, path = spec.partition("=")
            self.drivers[language] = Path(path)
        self.log_dir = Path(tempfile.mkdtemp(prefix="conformance-"))
        self.db = psycopg.connect(args.database_url, autocommit=True)

    def driver_path(self, language):
        path = self.drivers.get(language, WORKERS / language / "conformance-driver")
        if not os.access(path, os.X_OK):
            raise Failure(f"no driver for {language}: {path} is not an executable")
        return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--languages", default="python", help="comma-separated: python, go, java, node")
    parser.add_argument("--suite", action="append", default=[], choices=("language", "mixed", "protocol"),
                        help="run the scenarios of this suite (default: every scenario)")
    parser.add_argument("--scenario", action="append", default=[], help="run this scenario (repeatable)")
    parser.add_argument("--driver", action="append", default=[], metavar="LANG=PATH",
                        help="the driver of a language (default: jobs/workers/LANG/conformance-driver)")
    parser.add_argument("--prescient", default=os.environ.get("PRESCIENT_BINARY", "prescient"),
                        help="the prescient binary, for the C++ runner of the answers scenario")
    parser.add_argument("--plugins", default=os.environ.get("PRESCIENT_TEST_PLUGINS"),
                        help="the test plugins' directory (class conformance); without it the answers "
                             "are judged against their documented endings only")
    parser.add_argument("--database-url", default=os.environ.get("PRESCIENT_DATABASE_URL"))
    parser.add_argument("--keep-logs", action="store_true", help="keep the drivers' logs even when all pass")
    args = parser.parse_args(argv)
    if not args.database_url:
        parser.error("PRESCIENT_DATABASE_URL is not set (run through jobs/workers/with-database.sh)")
    languages = [language for language in args.languages.split(",") if language]
    unknown = [language for language in languages if language not in LANGUAGES]
    if unknown or not languages:
        parser.error(f"languages are among {', '.join(LANGUAGES)}, not {args.languages!r}")
    spec = json.loads((HERE / "scenarios.json").read_text())
    scenarios = spec["scenarios"]
    names = {s["name"] for s in scenarios}
    bad = [n for n in args.scenario if n not in names]
    if bad:
        parser.error(f"unknown scenario {bad[0]!r}: one of {', '.join(sorted(names))}")
    chosen = [s for s in scenarios
              if (not args.scenario or s["name"] in args.scenario)
              and (not args.suite or set(s["suites"]) & set(args.suite))]
    if not chosen:
        parser.error("no scenario matches")

    harness = Harness(args)
    failures = 0
    for scenario in chosen:
        for langs in language_sets(scenario["sets"], languages):
            label = f"{scenario['name']} [{'+'.join(langs) or 'sql'}]"
            started = time.monotonic()
            run = None
            try:
                run = Run(harness, scenario, langs)
                summary = SCENARIOS[scenario["kind"]](run, scenario)
                print(f"PASS {label}: {summary} ({time.monotonic() - started:.1f} s)", flush=True)
            except Failure as failure:
                failures += 1
                print(f"FAIL {label}: {failure} ({time.monotonic() - started:.1f} s)", flush=True)
                for driver in run.drivers if run else []:
                    print(f"     {driver.name} log {driver.log_path}: "
                          + " | ".join(line.strip()[:200] for line in driver.log_tail(3)), flush=True)
            except Exception as error:  # a harness or database error: the scenario fails, the suite goes on
                failures += 1
                print(f"FAIL {label}: {type(error).__name__}: {error} ({time.monotonic() - started:.1f} s)",
                      flush=True)
            finally:
                if run:
                    run.cleanup()
    if failures == 0 and not args.keep_logs:
        shutil.rmtree(harness.log_dir, ignore_errors=True)
    else:
        print(f"logs: {harness.log_dir}", flush=True)
    print(f"{'FAILED' if failures else 'OK'}: {failures} of the runs failed" if failures else "OK: every run passed",
          flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
