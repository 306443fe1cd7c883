"""An order unshipped three hours after it was placed gets an email, six hours after an escalation, and the
checks stop as soon as it ships."""

import os
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg

import prescient

SCHEMA = """
CREATE TABLE orders (id bigint PRIMARY KEY, placed_at timestamptz NOT NULL, shipped_at timestamptz);
CREATE TABLE notifications (order_id bigint REFERENCES orders, kind text, PRIMARY KEY (order_id, kind));
"""

Clock = Callable[[], datetime]  # tests pin one; None: the real clock


def place_order(conn: psycopg.Connection[Any], order_id: int, clock: Clock | None = None) -> None:
    """The order and its check commit together, or neither does."""
    placed_at = clock() if clock else datetime.now(timezone.utc)
    with conn.transaction():
        conn.execute("INSERT INTO orders (id, placed_at) VALUES (%s, %s)", [order_id, placed_at])
        prescient.schedule(conn, "order_unshipped", "orders", str(order_id), at=placed_at + timedelta(hours=3),
                           job_key=f"order_unshipped:{order_id}", clock=clock)


def ship_order(conn: psycopg.Connection[Any], order_id: int, clock: Clock | None = None) -> None:
    shipped_at = clock() if clock else datetime.now(timezone.utc)
    with conn.transaction():
        conn.execute("UPDATE orders SET shipped_at = %s WHERE id = %s", [shipped_at, order_id])


def make_worker(database_url: str, clock: Clock | None = None) -> prescient.Worker:
    worker = prescient.Worker(database_url, name="shop", clock=clock)

    # By default a check runs at most 5 times (max_checks): a fifth run that asks to look again ends it,
    # guard_max_checks (`prescient jobs set order_unshipped --max-checks N` changes it). This one runs twice.
    @worker.handler("order_unshipped")
    def order_unshipped(check: prescient.Check) -> None:
        # Exactly once: the notification and the check's settlement commit together, or neither does (a
        # worker killed before the commit leaves both undone, and the check runs again).
        with psycopg.connect(database_url) as conn, conn.transaction():
            order_id = int(check.entity_key)
            [(placed_at, shipped_at)] = conn.execute("SELECT placed_at, shipped_at FROM orders WHERE id = %s",
                                                     [order_id]).fetchall()
            if shipped_at is not None:
                check.complete_in(conn)  # shipped: nothing to send, and no next check
            elif check.check_count == 0:
                conn.execute("INSERT INTO notifications (order_id, kind) VALUES (%s, 'email')", [order_id])
                check.complete_in(conn, placed_at + timedelta(hours=6))  # look again six hours after it was placed
            else:
                conn.execute("INSERT INTO notifications (order_id, kind) VALUES (%s, 'escalation')", [order_id])
                check.complete_in(conn)  # escalated: done

    return worker


if __name__ == "__main__":
    make_worker(os.environ["DATABASE_URL"]).run()  # until SIGTERM
