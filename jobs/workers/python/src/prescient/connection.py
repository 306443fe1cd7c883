"""The application's connection, as the enqueue functions and ``complete_in`` use it: psycopg 3's, or psycopg2's
(which Django and SQLAlchemy hand out), or anything else with a DB-API 2.0 cursor that takes ``%(name)s``
parameters. One statement runs on a cursor of its own, so it joins the connection's transaction, if one is
open."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class Cursor(Protocol):
    def execute(self, query: str, params: Any = ...) -> object: ...

    def fetchall(self) -> Any: ...

    @property
    def description(self) -> Any: ...

    def close(self) -> object: ...


class Connection(Protocol):
    """What the functions need of a connection: a DB-API cursor (``psycopg.Connection`` and psycopg2's
    ``connection`` both have one)."""

    def cursor(self) -> Cursor: ...


def rows(conn: Connection, query: str, params: Mapping[str, Any] | list[Any]) -> list[tuple[Any, ...]]:
    """The rows ``query`` answers on ``conn``, as tuples whatever the connection's row type (a dict row
    gives its values, in the columns' order); none for a statement that answers no rows (LISTEN)."""
    cursor = conn.cursor()
    try:
        cursor.execute(query, params)
        return [] if cursor.description is None else tuples(cursor.fetchall())
    finally:
        cursor.close()


def tuples(fetched: Any) -> list[tuple[Any, ...]]:
    """Fetched rows as tuples: a dict row gives its values, in the columns' order."""
    return [tuple(row.values()) if isinstance(row, Mapping) else tuple(row) for row in fetched]
