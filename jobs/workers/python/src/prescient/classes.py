"""A worker class declared by the application itself, with its policy (docs/workers.md, "Declaring a worker
class"): no schema owner's rights and no prescient binary needed, only ``prescient_worker``."""

from __future__ import annotations

from datetime import timedelta

from .errors import translated
from .steps import Statement, Steps, blocking


def declare_worker_class_steps(job: str, *, max_checks: int | None = None, max_attempts: int | None = None,
                               backoff: timedelta | None = None, backoff_max: timedelta | None = None,
                               timeout: timedelta | None = None, by: str | None = None) -> Steps[str]:
    """Makes ``job`` a worker class if no one declared it, and sets the policy fields given (None: left as they
    are). ``max_checks``: how many times a check may ask to be looked at again (0: no limit; the database's
    default is 5). Returns ``added`` or ``known``. A runner's class is refused (``Refused``), as is a bad policy
    or name; nothing is written then."""
    with translated():
        [(declared,)] = yield Statement(
            "SELECT prescient.declare_worker_class(%s, p_max_checks => %s, p_max_attempts => %s,"
            " p_backoff => %s, p_backoff_max => %s, p_timeout => %s, p_by => coalesce(%s, current_user))",
            [job, max_checks, max_attempts, backoff, backoff_max, timeout, by])
    return str(declared)


declare_worker_class = blocking(declare_worker_class_steps)
