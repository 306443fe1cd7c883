"""An order unshipped three hours after it was placed gets an email, six hours after an escalation, and the
checks stop as soon as it ships."""

import os
from datetime import datetime, timedelta, timezone

import psycopg

import prescient

SCHEMA = """
CREATE TABLE orders (id bigint PRIMARY KEY, placed_at timestamptz NOT NULL, shipped_at timestamptz);
CREATE TABLE notifications (order_id bigint REFERENCES orders, kind text, PRIMARY KEY (order_id, kind));
"""


def place_order(conn, order_id, clock=None):
    """The order and its check commit together, or neither does."""
    placed_at = clock() if clock else datetime.now(timezone.utc)
    with conn.transaction():
        conn.execute("INSERT INTO orders (id, placed_at) VALUES (%s, %s)", [order_id, placed_at])
        prescient.schedule(conn, "order_unshipped", "orders", str(order_id), at=placed_at + timedelta(hours=3),
                           job_key=f"order_unshipped:{order_id}", clock=clock)


def ship_order(conn, order_id, clock=None):
    shipped_at = clock() if clock else datetime.now(timezone.utc)
    with conn.transaction():
        conn.execute("UPDATE orders SET shipped_at = %s WHERE id = %s", [shipped_at, order_id])


def make_worker(database_url, clock=None):
    worker = prescient.Worker(database_url, name="shop", clock=clock)

    @worker.handler("order_unshipped")
    def order_unshipped(check):
        with psycopg.connect(database_url) as conn:
            placed_at, shipped_at = conn.execute("SELECT placed_at, shipped_at FROM orders WHERE id = %s",
                                                 [int(check.entity_key)]).fetchone()
            if shipped_at is not None:
                return None  # shipped: nothing to send, and no next check
            kind = "email" if check.check_count == 0 else "escalation"
            # At least once: a rerun of this check (a worker killed before settling) sends nothing twice.
            conn.execute("INSERT INTO notifications (order_id, kind) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                         [int(check.entity_key), kind])
            if kind == "email":
                return placed_at + timedelta(hours=6)  # look again six hours after it was placed
            return None  # escalated: done

    return worker


if __name__ == "__main__":
    make_worker(os.environ["DATABASE_URL"]).run()  # until SIGTERM
