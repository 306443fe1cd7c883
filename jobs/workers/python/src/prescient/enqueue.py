"""Enqueueing on the application's own connection: a check commits or rolls back with its transaction.

Each function runs one statement on the connection it is given and neither commits nor rolls back: on a
connection in a transaction it joins that transaction; in autocommit mode it commits at once. A refusal
aborts the transaction like any failed statement (wrap the call in ``conn.transaction()`` for a savepoint
if you mean to carry on after one). The connection is psycopg 3's or psycopg2's (connection.py); ``prescient.aio``
has the same functions for an ``AsyncConnection`` (each is its steps, run on the connection: steps.py).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from .errors import translated
from .steps import Statement, Steps, blocking

Clock = Callable[[], datetime]


class Scheduled(NamedTuple):
    """What ``schedule`` did: ``status`` is created, replaced, kept, debounced, collected or deduplicated."""

    id: int
    job_key: str | None
    next_check_at: datetime | None
    first_check_at: datetime | None
    status: str


class Rescheduled(NamedTuple):
    id: int
    job_key: str | None
    next_check_at: datetime


def schedule_steps(job: str, entity_name: str, entity_key: str, *,
                   at: datetime | None = None, delay: timedelta | None = None, job_key: str | None = None,
                   group_key: str | None = None, payload: Any = None, on_conflict: str = "error",
                   window: timedelta | None = None, max_wait: timedelta | None = None,
                   dedupe_for: timedelta | None = None, dedupe_outcomes: list[str] | None = None,
                   allow_unknown_class: bool = False, priority: int | None = None, traceparent: str | None = None,
                   tracestate: str | None = None, calendar: str | None = None, business_delay: str | None = None,
                   by: str | None = None, clock: Clock | None = None) -> Steps[Scheduled]:
    """Puts a check of class ``job`` about an entity into the future: at a time, or after a delay.

    ``on_conflict`` (with a ``job_key``): error (raises Conflict), replace, keep, debounce (replace, never past
    the first enqueue plus ``max_wait``) or collect (a digest: the check's payload is ``{"collected": [...]}``,
    every enqueue's payload in arrival order, due at most ``max_wait`` after the first); both need
    ``max_wait``. The time is rounded up to the slot grid. A delay counts from ``clock()`` when a clock is
    given, else from the transaction's start on the server (the SQL functions' ``now()``). ``priority``: 0
    (first) to 9 (last) among the checks due at the same time; None is the database's default, 5.
    ``traceparent`` and ``tracestate``: the W3C trace context the check is created in (the caller's span);
    each run's handler gets that trace with a span id of the run's own (``Check.traceparent``).
    ``calendar``: the check is due in that calendar's open time (docs/business-time.md): ``business_delay`` of
    open time after its time ("4h", "90m", "1h30m", "3bd"), or with none at its time if the calendar is open
    then, else at its next opening. With a calendar the time may be left out: it is then now; a business delay
    counts from ``at`` or from now, never beside a ``delay``.
    """
    if business_delay is not None and delay is not None:
        raise TypeError("a business delay counts from at= or from now: give no delay= beside it")
    args: dict[str, Any] = {"p_job": job, "p_entity_name": entity_name, "p_entity_key": entity_key,
                            "p_job_key": job_key, "p_group_key": group_key, "p_on_conflict": on_conflict}
    _optional(args, p_payload=_json(payload), p_window=window, p_max_wait=max_wait,
              p_dedupe_for=dedupe_for, p_dedupe_outcomes=dedupe_outcomes, p_priority=priority,
              p_traceparent=traceparent, p_tracestate=tracestate, p_calendar=calendar,
              p_business_delay=business_delay, p_by=by)
    if allow_unknown_class:
        args["p_allow_unknown_class"] = True
    at_sql, params = _time_arg(args, at, delay, clock, now_if_neither=calendar is not None)
    with translated(job_key=job_key):
        [row] = yield Statement(f"SELECT * FROM prescient.schedule(p_at => {at_sql}, {_named(args)})", params)
    return Scheduled(*row)


schedule = blocking(schedule_steps)


def schedule_many_steps(items: Iterable[Mapping[str, Any]], *, on_conflict: str = "error",
                        report_conflicts: bool = False, by: str | None = None,
                        clock: Clock | None = None) -> Steps[list[Scheduled]]:
    """Schedules many checks in one statement (``prescient.schedule_many``), all or none: each item is a mapping
    of ``schedule``'s arguments by name: ``job``, ``entity_name``, ``entity_key`` and ``at`` (an aware datetime),
    and any of ``job_key``, ``group_key``, ``payload``, ``on_conflict``, ``window``, ``max_wait``, ``dedupe_for``,
    ``priority``, ``traceparent``, ``tracestate``, ``calendar``, ``business_delay``, ``by`` (an item with a
    calendar gives its ``at`` too). ``on_conflict``: for the items that give none. With
    ``report_conflicts``, an item whose job key is taken (on_conflict error) answers status ``conflict`` with the
    holder's id, nothing written for it, instead of raising Conflict. Returns one Scheduled per item, in order.
    """
    args: dict[str, Any] = {"p_items": json.dumps([_item(n, item) for n, item in enumerate(items)]),
                            "p_on_conflict": on_conflict, "p_report_conflicts": report_conflicts}
    _optional(args, p_by=by, p_now=_aware(clock(), "clock()") if clock else None)
    with translated():
        found = yield Statement("SELECT id, job_key, next_check_at, first_check_at, status"
                                f" FROM prescient.schedule_many({_named(args)}) ORDER BY n", args)
    return [Scheduled(*row) for row in found]


schedule_many = blocking(schedule_many_steps)


def set_check_policy_steps(check_id: int, *, max_checks: int | None = None, max_attempts: int | None = None,
                           backoff: timedelta | None = None, backoff_max: timedelta | None = None) -> Steps[bool]:
    """Sets a pending check's own policy, over its class's, for it alone (``prescient.set_check_policy``): in the
    transaction that enqueued it, or later. Every field is set: None clears it (the class's applies again).
    ``max_checks``: how many times the check may ask to be looked at again (0: no limit; the class's default
    is 5). Returns False when no check of that id is pending. A bad policy is refused (``Refused``)."""
    with translated(check_id=check_id):
        [(found,)] = yield Statement("SELECT prescient.set_check_policy(%s, %s, %s, %s, %s)",
                                     [check_id, max_checks, max_attempts, backoff, backoff_max])
    return bool(found)


set_check_policy = blocking(set_check_policy_steps)


def cancel_steps(*, check_id: int | None = None, job_key: str | None = None, by: str | None = None,
                 clock: Clock | None = None) -> Steps[int | None]:
    """Cancels a pending check (by id or by job key): it moves to the history as ``cancelled``.

    Returns its id, or None when no such check was pending.
    """
    args: dict[str, Any] = {"p_id": check_id, "p_job_key": job_key}
    _optional(args, p_by=by, p_now=_aware(clock(), "clock()") if clock else None)
    with translated(check_id=check_id, job_key=job_key):
        [(cancelled,)] = yield Statement(f"SELECT prescient.cancel({_named(args)})", args)
    return None if cancelled is None else int(cancelled)


cancel = blocking(cancel_steps)


def reschedule_steps(*, check_id: int | None = None, job_key: str | None = None, at: datetime | None = None,
                     delay: timedelta | None = None, clock: Clock | None = None) -> Steps[Rescheduled | None]:
    """Moves a pending check (by id or by job key) to another time; None when no such check is pending."""
    args: dict[str, Any] = {"p_id": check_id, "p_job_key": job_key}
    at_sql, params = _time_arg(args, at, delay, clock)
    with translated(check_id=check_id, job_key=job_key):
        found = yield Statement(f"SELECT * FROM prescient.reschedule(p_at => {at_sql}, {_named(args)})", params)
    return Rescheduled(*found[0]) if found else None


reschedule = blocking(reschedule_steps)


def cron_add_steps(schedule_id: str, spec: str, *, job: str | None = None,
                   time_zone: str | None = None, payload: Any = None, catch_up: str | None = None,
                   deadline: timedelta | None = None, window: timedelta | None = None, jitter: timedelta | None = None,
                   options: Mapping[str, Any] | None = None, by: str | None = None,
                   clock: Clock | None = None) -> Steps[int]:
    """Adds a recurring schedule: each occurrence is a check of class ``job`` (default ``emit``), made by the
    runner's ``cron`` class. ``options`` holds ``overlap``, ``start_at``, ``end_at``, ``max_runs``,
    ``priority`` (0 to 9, carried by the schedule's check and every occurrence), ``pause_after_failures``,
    ``dst_repeated``, ``dst_missing``, ``calendar`` and ``when_closed`` (docs/schedules.md). Returns its
    version (1).
    """
    args: dict[str, Any] = {"p_id": schedule_id, "p_spec": spec}
    _optional(args, p_job=job, p_time_zone=time_zone, p_payload=_json(payload),
              p_catch_up=catch_up, p_deadline_seconds=_whole_seconds(deadline, "deadline"),
              p_window_seconds=_whole_seconds(window, "window"), p_jitter_seconds=_whole_seconds(jitter, "jitter"),
              p_options=None if options is None else _json(dict(options)), p_by=by,
              p_now=_aware(clock(), "clock()") if clock else None)
    with translated():
        [(version,)] = yield Statement(f"SELECT prescient.cron_add({_named(args)})", args)
    return int(version)


cron_add = blocking(cron_add_steps)


def _optional(args: dict[str, Any], **given: Any) -> None:
    # Left out when not given, so the SQL function's own default applies (its p_now defaults to now(): a
    # NULL there would be refused, not read as "the server's clock").
    args.update((name, value) for name, value in given.items() if value is not None)


# The SQL type of the arguments whose Python value no driver sends as it: JSON goes as its text.
_CASTS = {"p_payload": "::jsonb", "p_options": "::jsonb", "p_items": "::json"}

# An item of schedule_many: its keys (schedule's argument names) and the field each is in the JSON.
_ITEM_FIELDS = {"job": "job", "entity_name": "entity_name", "entity_key": "entity_key", "at": "at",
                "job_key": "job_key", "group_key": "group_key", "payload": "payload", "on_conflict": "on_conflict",
                "window": "window", "max_wait": "max_wait", "dedupe_for": "dedupe_for", "priority": "priority",
                "traceparent": "traceparent", "tracestate": "tracestate", "calendar": "calendar",
                "business_delay": "business_delay", "by": "enqueued_by"}


def _named(args: dict[str, Any]) -> str:
    # The names are this module's constants (p_ and a word), never user input; the values travel as parameters.
    return ", ".join(f"{name} => %({name})s{_CASTS.get(name, '')}" for name in args)


def _item(n: int, item: Mapping[str, Any]) -> dict[str, Any]:
    """An item of schedule_many as the JSON object the SQL function reads: times as ISO text, spans as seconds."""
    unknown = sorted(set(item) - set(_ITEM_FIELDS))
    if unknown:
        raise ValueError(f"item {n}: {', '.join(unknown)} is not an argument of schedule (give at, not delay)")
    if not isinstance(item.get("at"), datetime):
        raise ValueError(f"item {n}: at is {item.get('at')!r}, not a datetime")
    fields: dict[str, Any] = {}
    for key, value in item.items():
        if isinstance(value, datetime):
            value = _aware(value, f"item {n}: {key}").isoformat()
        elif isinstance(value, timedelta):
            value = f"{value.total_seconds()} seconds"
        fields[_ITEM_FIELDS[key]] = value
    return fields


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _time_arg(args: dict[str, Any], at: datetime | None, delay: timedelta | None, clock: Clock | None, *,
              now_if_neither: bool = False) -> tuple[str, dict[str, Any]]:
    """The SQL for p_at (the time given, or now plus the delay, or with ``now_if_neither`` and neither given now:
    the clock's now, else the server's), and the parameters of the whole call. Adds p_now to the named arguments
    when there is a clock."""
    if (at is not None and delay is not None) or (at is None and delay is None and not now_if_neither):
        raise TypeError("give exactly one of at= or delay=" + (" (or neither: now)" if now_if_neither else ""))
    if clock is not None:
        args["p_now"] = _aware(clock(), "clock()")
    if at is not None:
        return "%(at)s", {**args, "at": _aware(at, "at")}
    now = "%(p_now)s" if clock is not None else "now()"
    if delay is None:
        return now, dict(args)
    return f"{now} + %(delay)s", {**args, "delay": delay}


def _aware(moment: datetime, what: str) -> datetime:
    # A naive datetime would be read in the session's time zone: a silent shift, so it is refused here.
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError(f"{what} {moment.isoformat()} has no time zone (use an aware datetime, e.g. UTC)")
    return moment


def _whole_seconds(span: timedelta | None, what: str) -> int | None:
    if span is None:
        return None
    seconds = span.total_seconds()
    if seconds != int(seconds):
        raise ValueError(f"{what} {span} is not a whole number of seconds")
    return int(seconds)
