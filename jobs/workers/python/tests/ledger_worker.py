"""A worker process for the exactly-once kill test (test_exactly_once.py): its handler writes a ledger row per
check and completes the check in the same transaction. SIGTERM stops it; the test kills it with SIGKILL.

    ledger_worker.py CLASS NAME        (the database is PRESCIENT_DATABASE_URL)
"""

import logging
import os
import sys
import threading

import psycopg

import prescient


def main(job_class: str, name: str) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    url = os.environ["PRESCIENT_DATABASE_URL"]
    # Lease 2 s: the checks the killed worker held are taken again soon after. 8 threads: each check is a
    # transaction of its own that waits on the database most of its time (about 19 s for the test, not 30).
    worker = prescient.Worker(url, name=name, lease_seconds=2.0, concurrency=8)
    connections = threading.local()  # one connection per handler thread

    @worker.handler(job_class)
    def record(check: prescient.Check) -> None:
        conn = getattr(connections, "conn", None)
        if conn is None:
            conn = connections.conn = psycopg.connect(url)
        with conn.transaction():
            conn.execute("INSERT INTO kill_ledger (check_id) VALUES (%s)", [check.id])
            check.complete_in(conn)

    worker.run()


if __name__ == "__main__":
    main(*sys.argv[1:])
