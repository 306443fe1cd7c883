"""The prescient schema from Python, with no prescient binary (docs/workers.md, "The schema without the binary").

``prescient-bundle.sql`` in this package is a copy of the repository's ``sql/prescient-bundle.sql`` (a test keeps
it identical): every migration and function file, and the migrator's rules as a temporary function. ``migrate``
applies it in one transaction, as the schema's owner, with the bookkeeping of ``prescient migrate``, so either
upgrades after the other; a database newer than the bundle is refused (``Refused``) before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

import psycopg

from .errors import translated


@dataclass(frozen=True)
class Applied:
    """One file ``migrate`` applied: ``kind`` is ``migration`` or ``functions``."""

    kind: str
    name: str


def bundle() -> str:
    """The bundle's text, as this package carries it."""
    return resources.files(__package__).joinpath("prescient-bundle.sql").read_text(encoding="utf-8")


def migrate(conn: psycopg.Connection[Any], slot_seconds: int | None = None) -> list[Applied]:
    """Creates or upgrades the schema on ``conn`` (not in a transaction), in one transaction of its own.

    ``slot_seconds``: the slot resolution of a new database (None: 60); on an existing one it must match, or be
    None. Returns the files applied, in order (none when the database is up to date).
    """
    with translated(), conn.transaction():
        # The bundle is many statements: sent as one simple query, without parameters.
        conn.execute(bundle().encode(), prepare=False)
        return applied(conn.execute(MIGRATE, [slot_seconds]).fetchall())


# Run after the bundle, in its transaction: the bundle's files the database lacked, applied in order.
MIGRATE = "SELECT kind, name FROM pg_temp.prescient_migrate(%s::integer)"


def applied(rows: list[tuple[Any, ...]]) -> list[Applied]:
    return [Applied(kind, name) for kind, name in rows]
