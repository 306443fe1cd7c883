"""A dead letter put back from the application (docs/workers.md, "Dead letters"): a worker class's failed check,
retried with ``prescient_worker``'s rights, as ``prescient retry`` does from the binary."""

from __future__ import annotations

from datetime import datetime

from .errors import translated
from .steps import Statement, Steps, blocking


def retry_steps(check_id: int) -> Steps[datetime]:
    """Puts check ``check_id`` back from its latest failure in the history (a dead letter of a worker class) as a
    pending check due now by the server's clock, its attempts counted afresh; returns the time it is due.

    Refused, with nothing written: ``Conflict`` when the check is pending already or its job key is held by
    another pending check, ``NotFound`` when the history holds no failure of it, ``Refused`` when it is a
    runner's class's check. Like the enqueue functions it joins ``conn``'s transaction, if one is open."""
    with translated(check_id=check_id):
        [(due,)] = yield Statement("SELECT prescient.worker_retry(%s)", [check_id])
    assert isinstance(due, datetime)
    return due


retry = blocking(retry_steps)
