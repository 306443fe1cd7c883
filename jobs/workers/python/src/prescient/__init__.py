"""prescient for Python: enqueue checks in your own transaction, and run worker classes in your service.

``prescient.aio`` has the same for asyncio (an ``AsyncConnection``, coroutine handlers). See the README next to
this package, and docs/workers.md in the prescient repository for the protocol.
"""

from .classes import declare_worker_class
from .dead_letters import retry
from .enqueue import (Rescheduled, Scheduled, cancel, cron_add, reschedule, schedule, schedule_many,
                      set_check_policy)
from .errors import CheckFailed, Conflict, LeaseLost, NotFound, PrescientError, Refused
from .schema import Applied, migrate
from .worker import BusinessDelay, Check, Done, Settlement, Worker

__all__ = [
    "Applied", "BusinessDelay", "Check", "CheckFailed", "Conflict", "Done", "LeaseLost", "NotFound",
    "PrescientError", "Refused", "Rescheduled", "Scheduled", "Settlement", "Worker", "cancel", "cron_add",
    "declare_worker_class", "migrate", "reschedule", "retry", "schedule", "schedule_many", "set_check_policy",
]
