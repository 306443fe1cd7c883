"""The exceptions of the client: each names the check (or key) and the database's reason."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

import psycopg


class PrescientError(Exception):
    """Base class of the errors this package raises."""


class Refused(PrescientError):
    """The database refused the call (SQLSTATE PR400): bad input, nothing was written.

    ``reason`` is the database's one-line message; ``check_id`` or ``job_key`` name what the call was about,
    when it was about one check.
    """

    def __init__(self, reason: str, *, check_id: int | None = None, job_key: str | None = None):
        self.reason = reason
        self.check_id = check_id
        self.job_key = job_key
        # The settlement's refusals name their check already ("check 7: its result is ..."): not twice.
        super().__init__(reason if _names_check(reason, check_id) else _about(check_id, job_key) + reason)


class Conflict(PrescientError):
    """A pending check already holds the job key, or is the check itself (SQLSTATE PR409): on_conflict was
    "error", or a retry found the check pending already. ``existing_id`` is the holder's id when the database
    names it; ``check_id`` the check the call was about, if it was about one."""

    def __init__(self, reason: str, *, job_key: str | None, existing_id: int | None,
                 check_id: int | None = None):
        self.reason = reason
        self.job_key = job_key
        self.existing_id = existing_id
        self.check_id = check_id
        super().__init__(reason)


class NotFound(PrescientError):
    """The database has no row the call could act on (SQLSTATE PR404): a retry of a check with no failure in
    the history. Nothing was written."""

    def __init__(self, reason: str, *, check_id: int | None = None):
        self.reason = reason
        self.check_id = check_id
        super().__init__(reason)


class LeaseLost(PrescientError):
    """A settlement or heartbeat was refused: the check is no longer leased to this worker.

    The worker logs it and carries on; the check is another worker's now (or settled, or cancelled), so this
    worker must not treat it as done.
    """

    def __init__(self, check_id: int, reason: str | None):
        self.check_id = check_id
        self.reason = reason or "the lease was lost"
        # The database's reasons name their check already ("check 7 is held under another lease ..."): not twice.
        super().__init__(f"lease lost: {self.reason}" if _names_check(self.reason, check_id)
                         else f"check {check_id}: lease lost: {self.reason}")


class CheckFailed(Exception):
    """Raise it in a handler to fail the check with exactly this text as its error.

    Any other exception fails the check too, with the text ``"ExceptionType: message"``.
    """


def _names_check(reason: str, check_id: int | None) -> bool:
    """Whether the database's reason begins by naming the check, as its refusals of a settlement do."""
    return check_id is not None and re.match(rf"check {check_id}\b", reason) is not None


def _about(check_id: int | None, job_key: str | None) -> str:
    if check_id is not None:
        return f"check {check_id}: "
    if job_key is not None:
        return f"job key {job_key!r}: "
    return ""


@contextlib.contextmanager
def translated(*, check_id: int | None = None, job_key: str | None = None) -> Iterator[None]:
    """Turns the database's refusals (PR400, PR404, PR409) into this package's exceptions, from psycopg 3 or
    psycopg2 (or a framework's error wrapping one, as Django's does); others pass unchanged."""
    try:
        yield
    except Exception as e:
        error = _driver_error(e)
        if error is None:
            raise
        sqlstate = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
        reason = (error.diag.message_primary if getattr(error, "diag", None) else None) or str(error)
        if sqlstate == "PR400":
            raise Refused(reason, check_id=check_id, job_key=job_key) from e
        if sqlstate == "PR409":
            # The database names the holder as "(id N)": the caller may want to look at it.
            found = re.search(r"\(id (\d+)\)", reason)
            raise Conflict(reason, job_key=job_key, existing_id=int(found.group(1)) if found else None,
                           check_id=check_id) from e
        if sqlstate == "PR404":
            raise NotFound(reason, check_id=check_id) from e
        raise


def _driver_error(error: BaseException) -> Any:
    """The driver's error with a SQLSTATE (psycopg 3 names it sqlstate, psycopg2 pgcode): the error itself, or
    the one a framework raised it from; None for any other exception."""
    for candidate in (error, error.__cause__):
        if isinstance(candidate, psycopg.Error) or getattr(candidate, "pgcode", None):
            return candidate
    return None
