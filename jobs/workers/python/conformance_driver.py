"""The conformance driver's program: the real worker, one handler for every class, driven by the payload.

    conformance-driver work --name NAME --classes C1[,C2...] [--concurrency N] [--batch N] [--prefetch N]
                            [--lease-seconds 2] [--no-heartbeat]
    conformance-driver drain --classes C1[,C2...] [--concurrency N] [--batch N] [--prefetch N]
                             [--batch-handler]

work (the conformance harness, jobs/workers/conformance): record the run in conformance_ledger, sleep
payload.sleep_ms, then answer by payload.answer (done, next, at, error, result); SIGTERM stops it gracefully.
drain (scripts/bench.sh): no-op handlers (or one no-op batch handler per class, --batch-handler) until
nothing is due, then print the rate on standard output. Options left out are the Worker's defaults.
The database is PRESCIENT_DATABASE_URL.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import sys
import threading
import time
from datetime import datetime, timedelta

import psycopg

import prescient

LANGUAGE = "python"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="conformance-driver")
    commands = parser.add_subparsers(dest="command", required=True)
    for command, help_text in (("work", "run a worker until SIGTERM"),
                               ("drain", "no-op handlers until nothing is due; print the rate")):
        options = commands.add_parser(command, help=help_text)
        options.add_argument("--name", default="python-driver")
        options.add_argument("--classes", required=True, help="comma-separated worker classes")
        options.add_argument("--concurrency", type=int, default=prescient.worker.DEFAULT_CONCURRENCY)
        options.add_argument("--batch", type=int, default=prescient.worker.DEFAULT_BATCH_SIZE)
        options.add_argument("--prefetch", type=int, default=None, help="default: measured (the Worker's prefetch=None)")
        options.add_argument("--lease-seconds", type=float, default=2.0)
        options.add_argument("--no-heartbeat", action="store_true")
        if command == "drain":
            options.add_argument("--batch-handler", action="store_true",
                                 help="one no-op batch handler call per take, not a handler per check")
    args = parser.parse_args(argv)

    logging.basicConfig(stream=sys.stderr, level=logging.INFO if args.command == "work" else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    url = os.environ.get("PRESCIENT_DATABASE_URL")
    if not url:
        print("conformance-driver: PRESCIENT_DATABASE_URL is not set", file=sys.stderr)
        return 2
    worker = prescient.Worker(url, name=args.name, concurrency=args.concurrency, batch_size=args.batch,
                              prefetch=args.prefetch, lease_seconds=args.lease_seconds,
                              heartbeat=not args.no_heartbeat)
    classes = [c for c in args.classes.split(",") if c]
    try:
        if args.command == "drain":
            return drain(worker, classes, args.batch_handler)
        handle = payload_handler(Ledger(url, args.name))
        for job_class in classes:
            worker.handler(job_class)(handle)
        worker.run()
    except prescient.Refused as e:  # say, a class that is not a worker class: one line, not a traceback
        print(f"conformance-driver: {e}", file=sys.stderr)
        return 2
    return 0


def payload_handler(ledger: Ledger):
    def handle(check: prescient.Check):
        ledger.record(check)
        payload = check.payload if isinstance(check.payload, dict) else {}
        time.sleep(payload.get("sleep_ms", 0) / 1000)
        answer = payload.get("answer", "done")
        if answer == "next":
            return check.due_at + timedelta(seconds=payload.get("next_seconds", 60))
        if answer == "at":
            return datetime.fromisoformat(payload["at"])
        if answer == "error":
            raise prescient.CheckFailed(payload.get("error", "conformance error"))
        if answer == "result":
            return prescient.Done(payload.get("result"))
        return None

    return handle


def drain(worker: prescient.Worker, classes: list[str], in_batches: bool) -> int:
    runs = itertools.count()  # next() on it is atomic under the GIL

    def no_op(check: prescient.Check) -> None:
        next(runs)

    def no_op_batch(checks: list[prescient.Check]) -> list[None]:
        return [no_op(check) for check in checks]

    for job_class in classes:
        if in_batches:
            worker.batch_handler(job_class)(no_op_batch)
        else:
            worker.handler(job_class)(no_op)
    started = time.monotonic()
    settled = worker.drain()
    elapsed = time.monotonic() - started
    count = next(runs)
    for s in settled:
        if s.outcome != "done":
            print(f"check {s.check_id}: {s.outcome}: {s.last_error}", file=sys.stderr)
    print(f"drained {count} checks in {elapsed:.3f} s: {count / elapsed:.0f} checks/s")
    return 0


class Ledger:
    """Records each run on a connection of the handler thread's own, autocommitted."""

    def __init__(self, url: str, worker_name: str):
        self.url = url
        self.worker_name = worker_name
        self.local = threading.local()

    def record(self, check: prescient.Check) -> None:
        conn = getattr(self.local, "conn", None)
        if conn is None or conn.closed:
            conn = self.local.conn = psycopg.connect(self.url, autocommit=True)
        conn.execute("INSERT INTO conformance_ledger (check_id, worker, language, due_at, check_count)"
                     " VALUES (%s, %s, %s, %s, %s)",
                     [check.id, self.worker_name, LANGUAGE, check.due_at, check.check_count])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
