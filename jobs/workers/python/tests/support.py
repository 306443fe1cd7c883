"""What the tests share: the database of with-database.sh, worker classes, a pinned clock."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
from psycopg.types.json import Jsonb

import prescient


CLIENT = Path(__file__).resolve().parents[1]  # jobs/workers/python


def readme_block(name: str) -> str:
    """The fenced block right after the README's <!-- readme-check: NAME --> line: code the tests run or check
    as the README shows it."""
    found = re.search(rf"^<!-- readme-check: {re.escape(name)} -->\n```\w*\n(.*?)^```$",
                      (CLIENT / "README.md").read_text(encoding="utf-8"), re.MULTILINE | re.DOTALL)
    if found is None:
        raise AssertionError(f"README.md has no block marked readme-check: {name}")
    return found.group(1)


def database_url() -> str:
    url = os.environ.get("PRESCIENT_DATABASE_URL")
    if not url:
        raise RuntimeError("PRESCIENT_DATABASE_URL is not set: run the tests through jobs/workers/with-database.sh")
    return url


def connect(*, autocommit: bool = True) -> psycopg.Connection:
    return psycopg.connect(database_url(), autocommit=autocommit)


@contextlib.contextmanager
def empty_database(name: str) -> Iterator[str]:
    """A database with no schema, on the cluster of the tests' database, dropped after: its URL."""
    with connect() as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield psycopg.conninfo.make_conninfo(database_url(), dbname=name)
    finally:
        with connect() as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def declare_worker_class(conn: psycopg.Connection, job_class: str) -> str:
    conn.execute("SELECT prescient.job_class_add(%s, true)", [job_class])
    return job_class


class PinnedClock:
    """A clock the test moves by hand: the worker and enqueue functions pass its time as p_now."""

    def __init__(self, now: datetime):
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, span: timedelta) -> None:
        self.now += span


# A whole second, so times on the 1-second slot grid of the tests' databases need no rounding.
T = datetime(2026, 11, 20, 9, 0, 0, tzinfo=timezone.utc)


# The W3C Trace Context example: a caller's trace, its span as the parent id.
TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def schedule_due_now(conn: psycopg.Connection, job: str, key: str, payload=None, **options) -> int:
    """A check due at once on the server's clock: scheduled a minute ago, for a minute ago (a time in the
    past would be put at the next boundary, up to a slot away)."""
    past = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=1)
    return prescient.schedule(conn, job, "things", key, at=past, payload=payload, clock=lambda: past,
                              **options).id


def settlements_waiting_for_a_lock(conn: psycopg.Connection) -> int:
    """How many sessions wait for a lock in a worker_complete (a test holding a check's row makes them)."""
    return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                        " AND wait_event_type = 'Lock' AND query LIKE '%%worker_complete%%'").fetchone()[0]


# A worker's two sessions, idle: the loop's asleep after its look at the next due time, the settler's after a
# settlement.
WORKER_SESSIONS_IDLE = ("FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
                        " AND state = 'idle' AND (query LIKE '%%prescient.worker_next_due%%'"
                        " OR query LIKE '%%prescient.worker_complete%%')")


def pending(conn: psycopg.Connection, check_id: int) -> dict | None:
    with conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return cur.execute("SELECT * FROM prescient.future_job WHERE id = %s", [check_id]).fetchone()


def history(conn: psycopg.Connection, check_id: int) -> list[dict]:
    with conn.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return cur.execute("SELECT * FROM prescient.job_history WHERE id = %s ORDER BY finished_at",
                           [check_id]).fetchall()


# A support desk open 09:00-17:00 Berlin time on weekdays: T is a Friday, 10:00 in Berlin.
DESK_HOURS = {"hours": {day: ["09:00-17:00"] for day in ("mon", "tue", "wed", "thu", "fri")}}


def set_desk_calendar(conn: psycopg.Connection) -> str:
    """Calendar 'desk' (DESK_HOURS), made or set again (the schema owner's right): its name."""
    conn.execute("SELECT prescient.calendar_set('desk', 'Europe/Berlin', %s)", [Jsonb(DESK_HOURS)])
    return "desk"


def business_due(conn: psycopg.Connection, calendar: str, now: datetime, delay: str) -> datetime:
    """When an answer of `delay` of the calendar's open time, settled at `now`, is due: the database's
    business_after, rounded up to the slot grid as a settlement rounds an answer."""
    return conn.execute("SELECT prescient.slot_for(prescient.business_after(%s, %s, %s), %s, s.slot_seconds)"
                        " FROM prescient.settings s", [calendar, now, delay, now]).fetchone()[0]
