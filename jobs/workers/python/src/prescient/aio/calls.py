"""The application's calls on a ``psycopg.AsyncConnection``: the same steps as the blocking functions (the same
SQL and arguments, the same refusals), awaited. Each joins the connection's transaction, if one is open, and
neither commits nor rolls back, as the blocking ones do."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

import psycopg

from .. import schema
from ..classes import declare_worker_class_steps
from ..connection import tuples
from ..dead_letters import retry_steps
from ..enqueue import (cancel_steps, cron_add_steps, reschedule_steps, schedule_many_steps, schedule_steps,
                       set_check_policy_steps)
from ..errors import translated
from ..steps import Finished, Rows, Steps, advance, with_connection_parameter

T = TypeVar("T")
P = ParamSpec("P")

AsyncConnection = psycopg.AsyncConnection[Any]


async def rows(conn: AsyncConnection, query: str, params: Any) -> Rows:
    """The rows ``query`` answers on ``conn``, as tuples whatever the connection's row type."""
    async with conn.cursor() as cursor:
        await cursor.execute(query, params)
        return [] if cursor.description is None else tuples(await cursor.fetchall())


async def run(conn: AsyncConnection, steps: Steps[T]) -> T:
    """Runs the steps on an async connection (steps.run is the blocking twin's driver)."""
    outcome: Rows | Exception | None = None
    while not isinstance(step := advance(steps, outcome), Finished):
        try:
            outcome = await rows(conn, step.query, step.params)
        except Exception as error:  # noqa: BLE001 - the steps decide (translated(), or a fallback)
            outcome = error
    return step.value


def awaiting(steps: Callable[P, Steps[T]]) -> Callable[Concatenate[AsyncConnection, P], Awaitable[T]]:
    """The coroutine function that runs the steps on an async connection, its first argument."""

    async def call(conn: AsyncConnection, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await run(conn, steps(*args, **kwargs))

    return with_connection_parameter(call, steps, "AsyncConnection")


schedule = awaiting(schedule_steps)
schedule_many = awaiting(schedule_many_steps)
set_check_policy = awaiting(set_check_policy_steps)
cancel = awaiting(cancel_steps)
reschedule = awaiting(reschedule_steps)
cron_add = awaiting(cron_add_steps)
declare_worker_class = awaiting(declare_worker_class_steps)
retry = awaiting(retry_steps)


async def migrate(conn: AsyncConnection, slot_seconds: int | None = None) -> list[schema.Applied]:
    """``prescient.migrate`` on an async connection (not in a transaction): the schema created or upgraded in one
    transaction of its own; returns the files applied."""
    with translated():
        async with conn.transaction():
            # The bundle is many statements: sent as one simple query, without parameters.
            await conn.execute(schema.bundle().encode(), prepare=False)
            return schema.applied(await (await conn.execute(schema.MIGRATE, [slot_seconds])).fetchall())
