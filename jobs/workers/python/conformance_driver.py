"""The conformance driver's program: the real worker, one handler for every class, driven by the payload.

The contract is in the helpers' brief and jobs/workers/conformance: record the run in conformance_ledger,
sleep payload.sleep_ms, then answer by payload.answer (done, next, at, error, result).
"""

from __future__ import annotations

import argparse
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
    work = commands.add_parser("work", help="run a worker until SIGTERM")
    work.add_argument("--name", required=True)
    work.add_argument("--classes", required=True, help="comma-separated worker classes")
    work.add_argument("--concurrency", type=int, default=4)
    work.add_argument("--batch", type=int, default=50)
    work.add_argument("--lease-seconds", type=float, default=30.0)
    work.add_argument("--no-heartbeat", action="store_true")
    args = parser.parse_args(argv)

    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    url = os.environ.get("PRESCIENT_DATABASE_URL")
    if not url:
        print("conformance-driver: PRESCIENT_DATABASE_URL is not set", file=sys.stderr)
        return 2
    worker = prescient.Worker(url, name=args.name, concurrency=args.concurrency, batch_size=args.batch,
                              lease_seconds=args.lease_seconds, heartbeat=not args.no_heartbeat)
    ledger = Ledger(url, args.name)

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

    for job_class in filter(None, args.classes.split(",")):
        worker.handler(job_class)(handle)
    worker.run()
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
