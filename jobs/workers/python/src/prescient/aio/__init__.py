"""prescient with asyncio: the enqueue functions on a ``psycopg.AsyncConnection``, and a worker whose handlers
are coroutines. The same SQL as the blocking API (``prescient``), the same refusals (``prescient.Refused``,
``Conflict``, ``NotFound``), the same answers (``prescient.Done``, ``BusinessDelay``, ``CheckFailed``)."""

from .calls import (cancel, cron_add, declare_worker_class, migrate, reschedule, retry, schedule, schedule_many,
                    set_check_policy)
from .worker import Check, Worker

__all__ = ["Check", "Worker", "cancel", "cron_add", "declare_worker_class", "migrate", "reschedule", "retry",
           "schedule", "schedule_many", "set_check_policy"]
