"""The calls' database work, once for both flavours of connection (sans I/O, as psycopg's own generators).

A call's steps are a generator: it yields each statement it needs run, gets the rows back (or, thrown in, the
error the statement raised), and returns the call's value. ``run`` drives it on a blocking connection, and
``prescient.aio`` on an ``AsyncConnection``: the SQL, its arguments and the reading of the rows are written once.
``blocking`` (and ``aio.awaiting``) make of the steps a public function with their parameters and docstring.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Generator, Mapping
from typing import Any, Concatenate, Generic, NamedTuple, ParamSpec, TypeVar

from .connection import Connection, rows

T = TypeVar("T")
P = ParamSpec("P")

Rows = list[tuple[Any, ...]]


class Statement(NamedTuple):
    query: str
    params: Mapping[str, Any] | list[Any]


# The steps of a call: statements out, their rows in, the call's value at the end.
Steps = Generator[Statement, Rows, T]


class Finished(Generic[T]):
    """The value the steps returned."""

    def __init__(self, value: T):
        self.value = value


def advance(steps: Steps[T], outcome: Rows | Exception | None) -> Statement | Finished[T]:
    """Gives the steps the last statement's outcome (None before the first): the next statement, or the value
    the steps returned. An error the steps raise (a statement's, or one of their own) passes to the caller."""
    try:
        if outcome is None:
            return next(steps)
        if isinstance(outcome, Exception):
            return steps.throw(outcome)
        return steps.send(outcome)
    except StopIteration as finished:
        return Finished(finished.value)


def run(conn: Connection, steps: Steps[T]) -> T:
    """Runs the steps on a blocking connection (psycopg 3's, psycopg2's or any DB-API one: connection.py)."""
    outcome: Rows | Exception | None = None
    while not isinstance(step := advance(steps, outcome), Finished):
        try:
            outcome = rows(conn, step.query, step.params)
        except Exception as error:  # noqa: BLE001 - the steps decide (translated(), or a fallback)
            outcome = error
    return step.value


def blocking(steps: Callable[P, Steps[T]]) -> Callable[Concatenate[Connection, P], T]:
    """The function that runs the steps on a blocking connection, its first argument."""

    def call(conn: Connection, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return run(conn, steps(*args, **kwargs))

    return with_connection_parameter(call, steps, "Connection")


def with_connection_parameter(call: T, steps: Callable[..., Any], annotation: str) -> T:
    """``call`` as help() and an editor should show it: named and documented as the steps (less "_steps"), with
    their parameters after the connection."""
    signature = inspect.signature(steps)
    conn = inspect.Parameter("conn", inspect.Parameter.POSITIONAL_ONLY, annotation=annotation)
    setattr(call, "__signature__", signature.replace(parameters=[conn, *signature.parameters.values()],
                                                     return_annotation=inspect.Signature.empty))
    setattr(call, "__doc__", steps.__doc__)
    for name in ("__name__", "__qualname__"):
        setattr(call, name, getattr(steps, name).removesuffix("_steps"))
    return call
