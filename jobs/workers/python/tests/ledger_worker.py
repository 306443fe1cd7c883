"""A worker process for the exactly-once kill test (test_exactly_once.py): its handler writes a ledger row per
check and completes the check in the same transaction. SIGTERM stops it; the test kills it with SIGKILL.

    ledger_worker.py CLASS NAME [asyncio]       (the database is PRESCIENT_DATABASE_URL)

With ``asyncio`` it is prescient.aio's worker, its handler a coroutine on an AsyncConnection.
"""

import asyncio
import logging
import os
import sys
import threading

import psycopg

import prescient
import prescient.aio


def main(job_class: str, name: str, flavour: str = "threads") -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    url = os.environ["PRESCIENT_DATABASE_URL"]
    if flavour == "asyncio":
        asyncio.run(run_async(job_class, name, url))
        return
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


async def run_async(job_class: str, name: str, url: str) -> None:
    worker = prescient.aio.Worker(url, name=name, lease_seconds=2.0, concurrency=8)
    idle: list[psycopg.AsyncConnection] = []  # a connection per place, at most

    @worker.handler(job_class)
    async def record(check: prescient.aio.Check) -> None:
        conn = idle.pop() if idle else await psycopg.AsyncConnection.connect(url)
        async with conn.transaction():
            await conn.execute("INSERT INTO kill_ledger (check_id) VALUES (%s)", [check.id])
            await check.complete_in(conn)
        idle.append(conn)

    await worker.run()


if __name__ == "__main__":
    main(*sys.argv[1:])
