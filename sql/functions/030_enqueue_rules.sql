-- The rules of enqueueing, shared by schedule, schedule_arrays, schedule_problems and reschedule: their one
-- home (docs/design.md, "Every rule has one home"). The C++ Client and the CLI do not restate them: they send
-- the request and show the message these functions write, so every door refuses a bad request in the same
-- words. Errors carry prescient's own SQLSTATEs so callers can tell them apart: PR400 bad input (nothing
-- written), PR409 a pending check already has that job key. The per-row helpers are STABLE and not STRICT so that the planner inlines
-- them: called as functions they cost tens of microseconds a row, which bulk enqueue cannot afford.

-- Refusal of a time beyond the horizon (max_horizon after now), or NULL when it is within.
CREATE OR REPLACE FUNCTION prescient.horizon_problem(p_at timestamptz, p_now timestamptz, p_max_horizon_seconds bigint)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE WHEN p_at > p_now + p_max_horizon_seconds * interval '1 second' THEN
    format('%s is beyond the horizon: at most %s after now (%s)', prescient.iso(p_at),
           prescient.duration_text(p_max_horizon_seconds * interval '1 second'), prescient.iso(p_now))
  END;

-- The slot a requested time is stored at: rounded up to the grid, and never before the next
-- boundary after now (a time in the past is due at once; nothing fires early, nothing is lost).
-- Timestamps have microsecond precision, so rounding up is flooring (date_bin) t + R - 1us.
CREATE OR REPLACE FUNCTION prescient.slot_for(requested timestamptz, now_ timestamptz, slot_seconds integer)
  RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE
  RETURN greatest(
    date_bin(slot_seconds * interval '1 second',
             requested + slot_seconds * interval '1 second' - interval '1 microsecond', 'epoch'::timestamptz),
    date_bin(slot_seconds * interval '1 second', now_, 'epoch'::timestamptz) + slot_seconds * interval '1 second');

-- The outcomes a finished check may end with, and what each means: the one list (a new outcome is a row
-- here, the judge that yields it, and its row in docs/runner.md, "How a check ends"). Everything else is derived
-- from it or compared with it: the history's CHECK constraint calls history_outcomes() (0057), the column's
-- comment is written from it (below), and tests/db/outcomes_test.cpp compares it with the table in docs/runner.md,
-- the outcomes C++ names (engine/include/prescient/outcome.hpp) and the dashboard's colours
-- (engine/web/assets/app.js), naming the place that differs; neither C++ nor the dashboard has to name a new
-- one. A guard's outcome starts with guard_ (the dashboard colours such a name as a guard).
CREATE OR REPLACE FUNCTION prescient.outcomes() RETURNS TABLE (outcome text, meaning text)
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$
    VALUES ('done', 'the job answered nothing more: no need to look again'),
           ('cancelled', 'cancelled by an application, or replaced by a schedule''s cancel_previous'),
           ('failed', 'its runs failed max_attempts times in a row: a dead letter'),
           ('guard_max_checks', 'a guard: it asked to be looked at again after max_checks runs'),
           ('guard_past', 'a guard: it asked to be looked at again at or before the time its run was asked for'),
           ('guard_horizon', 'a guard: it asked to be looked at again beyond max_horizon'),
           ('deadline_missed', 'a schedule''s occurrence came later than its deadline'),
           ('overlap_skipped', 'a schedule''s occurrence its overlap policy skipped: an earlier one was pending or running')
  $$;

-- The names alone, in the list's order. IMMUTABLE with no argument, so the planner computes it once per
-- statement: the history's CHECK costs what a literal list costs.
CREATE OR REPLACE FUNCTION prescient.history_outcomes() RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN ARRAY(SELECT o.outcome FROM prescient.outcomes() o);

-- The history column's comment is written from the list here, not in 095, so that a new outcome (a change to
-- this file, applied again) changes it too.
DO $$
BEGIN
  EXECUTE format('COMMENT ON COLUMN prescient.job_history.outcome IS %L',
                 'How it ended, one of prescient.outcomes(): '
                 || (SELECT string_agg(format('%s (%s)', o.outcome, o.meaning), '; ') FROM prescient.outcomes() o)
                 || '.');
END
$$;

-- The outcome a caller names (prescient history --outcome), refused with PR400 naming it and the list when the
-- list does not hold it.
CREATE OR REPLACE FUNCTION prescient.known_outcome(p_outcome text) RETURNS text
  LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
  IF p_outcome IS NULL OR p_outcome <> ALL (prescient.history_outcomes()) THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('unknown outcome %L (known: %s)', left(p_outcome, 64),
                                                             array_to_string(prescient.history_outcomes(), ', '));
  END IF;
  RETURN p_outcome;
END
$$;

-- What is wrong with a request, or NULL when nothing is. The same limits for every caller, C++ or SQL
-- (engine/src/core/text_rules.hpp): names and keys longer than 1024 bytes are refused naming the field,
-- since they are B-tree index entries and PostgreSQL's own refusal names neither the field nor the limit.
CREATE OR REPLACE FUNCTION prescient.request_problem(
    p_job text, p_entity_name text, p_entity_key text, p_at timestamptz, p_job_key text,
    p_group_key text, p_payload jsonb, p_by text, p_on_conflict text, p_now timestamptz,
    p_max_horizon_seconds bigint)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN coalesce(p_job, '') = '' THEN 'the job class is empty'
    WHEN coalesce(p_entity_name, '') = '' THEN 'the entity name is empty'
    WHEN coalesce(p_entity_key, '') = '' THEN 'the entity key is empty'
    WHEN p_job_key = '' THEN 'the job key is empty (leave it out for a check without a key)'
    WHEN p_group_key = '' THEN 'the group key is empty (leave it out for a check without a group)'
    WHEN coalesce(p_by, '') = '' THEN 'enqueued_by is empty'
    WHEN octet_length(p_job) > 1024 THEN format('the job class is %s bytes long (at most 1024)', octet_length(p_job))
    WHEN octet_length(p_entity_name) > 1024
      THEN format('the entity name is %s bytes long (at most 1024)', octet_length(p_entity_name))
    WHEN octet_length(p_entity_key) > 1024
      THEN format('the entity key is %s bytes long (at most 1024)', octet_length(p_entity_key))
    WHEN octet_length(p_job_key) > 1024
      THEN format('the job key is %s bytes long (at most 1024)', octet_length(p_job_key))
    WHEN octet_length(p_group_key) > 1024
      THEN format('the group key is %s bytes long (at most 1024)', octet_length(p_group_key))
    WHEN octet_length(p_by) > 1024 THEN format('enqueued_by is %s bytes long (at most 1024)', octet_length(p_by))
    WHEN p_at IS NULL THEN 'no time given'
    WHEN p_now IS NULL THEN 'no current time given'
    WHEN p_payload IS NULL THEN 'the payload must be a JSON object'
    WHEN jsonb_typeof(p_payload) <> 'object'
      THEN format('the payload must be a JSON object, not %s', left(p_payload::text, 64))
    WHEN p_on_conflict IS NULL OR p_on_conflict NOT IN ('error', 'replace', 'keep', 'debounce', 'collect')
      THEN format('on_conflict must be error, replace, keep, debounce or collect, not %L', p_on_conflict)
    ELSE prescient.horizon_problem(p_at, p_now, p_max_horizon_seconds)
  END;

-- Refusal of a payload over the database's bound (prescient.settings.max_payload_bytes, 0049), or NULL: measured
-- as PostgreSQL prints it (payload::text), the measure a result's bound uses. The caller passes the bound
-- from the settings row it read: a sub-SELECT here would keep the planner from inlining the rule.
CREATE OR REPLACE FUNCTION prescient.payload_problem(p_payload jsonb, p_max_bytes integer)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE WHEN octet_length(p_payload::text) > p_max_bytes
    THEN format('the payload is %s bytes of JSON (at most %s: prescient.settings.max_payload_bytes)',
                octet_length(p_payload::text), p_max_bytes) END;

-- Refusal of a priority (docs/design.md, "Priorities"), or NULL: 0 (first) to 9 (last); NULL is the default, 5.
-- STABLE, as format() is: a function declared IMMUTABLE over a STABLE one is not inlined, and a call an item
-- cost bulk enqueue 1.1 microseconds of its 13 (docs/performance.md, "Enqueue: what the day's rules cost").
CREATE OR REPLACE FUNCTION prescient.priority_problem(p_priority integer)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE WHEN NOT p_priority BETWEEN 0 AND 9
    THEN format('the priority %s is not one of 0 (first) to 9 (last)', p_priority) END;

-- Refusal of a window (docs/flow-control.md, "Spreading a herd"), or NULL: a negative one, or one that
-- ends beyond the horizon (the check could be stored there). NULL and zero mean no window.
CREATE OR REPLACE FUNCTION prescient.window_problem(p_at timestamptz, p_window interval, p_now timestamptz,
                                                    p_max_horizon_seconds bigint)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN p_window IS NULL THEN NULL  -- the common case first: one test a row in bulk enqueue
    WHEN p_window < interval '0' THEN format('the window %s is negative', prescient.duration_text(p_window))
    -- Tested before the message is written: a bulk call with windows judges every item.
    WHEN p_window > interval '0'
         AND prescient.horizon_problem(greatest(p_at, p_now) + p_window, p_now, p_max_horizon_seconds) IS NOT NULL THEN
      'the window ' || prescient.duration_text(p_window) || ' ends too late: '
        || prescient.horizon_problem(greatest(p_at, p_now) + p_window, p_now, p_max_horizon_seconds)
  END;

-- Where a check with a window is stored: one of the window's slots, starting from its own slot, chosen by
-- its id, so that checks made one after another take the window's slots in turn (a herd spreads evenly)
-- and a check keeps its place when it is replaced. Never before its slot, never at or after its time plus
-- the window: a window of n slots (rounded down) gives the offsets 0 to n - 1 slots. STABLE, as
-- timestamptz + interval is: an IMMUTABLE function over it would not be inlined, and a call a row cost
-- bulk enqueue a sixth of its speed.
CREATE OR REPLACE FUNCTION prescient.spread_slot(p_slot timestamptz, p_id bigint, p_window interval,
                                                 p_slot_seconds integer)
  RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN p_window IS NULL THEN p_slot  -- the common case first: one test a row in bulk enqueue
    WHEN p_window >= p_slot_seconds * interval '2 seconds'
      THEN p_slot + (p_id % floor(extract(epoch FROM p_window) / p_slot_seconds)::bigint) * p_slot_seconds
                    * interval '1 second'
    ELSE p_slot END;

-- A debounced check's time (on_conflict 'debounce'): its slot, but never later than its first enqueue
-- plus max_wait (rounded up to the grid, as every time is; at the next boundary once that has passed).
-- p_slot appears once (least() passes over the NULL of no max_wait): the planner does not inline a function
-- that would evaluate an argument twice when the argument costs something, and p_slot is mostly
-- spread_slot(...). Not inlined, it was planned again at each call, 47 µs of a 210 µs schedule()
-- (docs/performance.md, "Enqueue one at a time: a rule that was never inlined").
CREATE OR REPLACE FUNCTION prescient.debounced_slot(p_slot timestamptz, p_first_enqueue timestamptz,
                                                    p_max_wait interval, p_now timestamptz, p_slot_seconds integer)
  RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE
  RETURN least(p_slot, CASE WHEN p_max_wait IS NOT NULL
                            THEN prescient.slot_for(p_first_enqueue + p_max_wait, p_now, p_slot_seconds) END);

-- Whether once_problem has anything to judge: a request that debounces, collects or dedupes. The others,
-- nearly every enqueue, skip it: its sub-SELECT keeps it from being inlined, and judged for every enqueue it
-- cost a call to schedule() a third of a millisecond in a transaction of its own (docs/performance.md).
CREATE OR REPLACE FUNCTION prescient.once_applies(p_on_conflict text, p_max_wait interval, p_dedupe_for interval)
  RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN p_max_wait IS NOT NULL OR p_dedupe_for IS NOT NULL OR p_on_conflict IN ('debounce', 'collect');

-- What is wrong with a debounce's or a digest's ceiling or a dedupe window, or NULL (docs/concepts.md,
-- "Debounce with a ceiling, and dedupe", "Digests"). All need a job key: it is what the enqueues share.
-- NULL whenever once_applies is false.
CREATE OR REPLACE FUNCTION prescient.once_problem(
    p_job_key text, p_on_conflict text, p_max_wait interval, p_dedupe_for interval, p_dedupe_outcomes text[],
    p_slot_seconds integer, p_max_horizon_seconds bigint)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN p_on_conflict = 'debounce' AND p_job_key IS NULL
      THEN 'debounce needs a job key: the enqueues it folds into one check share it'
    WHEN p_on_conflict = 'debounce' AND p_max_wait IS NULL
      THEN 'debounce needs max_wait, its ceiling (without one, use on_conflict replace)'
    WHEN p_on_conflict = 'collect' AND p_job_key IS NULL
      THEN 'collect needs a job key: the enqueues it gathers into one check share it'
    WHEN p_on_conflict = 'collect' AND p_max_wait IS NULL
      THEN 'collect needs max_wait, its ceiling: the longest a payload waits for its digest'
    WHEN p_max_wait IS NOT NULL AND p_on_conflict IS DISTINCT FROM 'debounce' AND p_on_conflict IS DISTINCT FROM 'collect'
      THEN format('max_wait applies to on_conflict debounce or collect, not %L', p_on_conflict)
    WHEN p_max_wait < p_slot_seconds * interval '1 second'
      THEN format('max_wait %s is under the slot (%s)', prescient.duration_text(p_max_wait),
                  prescient.duration_text(p_slot_seconds * interval '1 second'))
    WHEN p_max_wait > p_max_horizon_seconds * interval '1 second'
      THEN format('max_wait %s is beyond the horizon (%s)', prescient.duration_text(p_max_wait),
                  prescient.duration_text(p_max_horizon_seconds * interval '1 second'))
    WHEN p_dedupe_for IS NULL THEN NULL
    WHEN p_job_key IS NULL THEN 'dedupe_for needs a job key: it is what a settled check is found by'
    WHEN p_dedupe_for <= interval '0'
      THEN format('the dedupe window %s is not positive', prescient.duration_text(p_dedupe_for))
    WHEN p_dedupe_for > interval '366 days'
      THEN format('the dedupe window %s is over 366 days', prescient.duration_text(p_dedupe_for))
    WHEN coalesce(cardinality(p_dedupe_outcomes), 0) = 0 THEN 'dedupe needs at least one outcome to look for'
    ELSE (SELECT format('unknown outcome %L to dedupe against (use %s)', o,
                        array_to_string(prescient.history_outcomes(), ', '))
            FROM unnest(p_dedupe_outcomes) o
           WHERE o IS NULL OR o <> ALL (prescient.history_outcomes())
           LIMIT 1)
  END;

-- The bounds of a digest's list (on_conflict 'collect', docs/concepts.md "Digests"): at most 10 000 payloads
-- and 1 MiB (1 048 576 bytes of the list as jsonb text) per check, its list and what arrived during a run
-- together. Refused past either, naming the key, so that an enqueue is refused whole, never dropped. p_count
-- and p_bytes are what the check would hold with the new payload, or NULL when it was not measured.
CREATE OR REPLACE FUNCTION prescient.collect_bound_problem(p_job_key text, p_count integer, p_bytes bigint)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN p_count > 10000
      THEN format('the check with key %L would collect %s payloads (at most 10000): refused, nothing written',
                  p_job_key, p_count)
    WHEN p_bytes > 1048576
      THEN format('the check with key %L would collect %s bytes of payloads (at most 1048576, 1 MiB): refused, '
                  'nothing written', p_job_key, p_bytes)
  END;

-- The class registry's rule (docs/design.md, "The class registry"): a check's class is a row of
-- prescient.job_class, unless the caller says it knows better (p_allow_unknown_class: a class deployed
-- after its checks are written). The refusal lists the known classes, sorted, at most 20 of them.
CREATE OR REPLACE FUNCTION prescient.unknown_class_message(p_job text)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN (SELECT format('unknown job class %L (known: %s; declare it with prescient jobs add or allow an unknown class)',
                        p_job,
                        coalesce(string_agg(k.job, ', ' ORDER BY k.job) FILTER (WHERE k.n <= 20)
                                   || CASE WHEN count(*) > 20 THEN format(' and %s more', count(*) - 20) ELSE '' END,
                                 'none'))
            FROM (SELECT c.job COLLATE "C" AS job, row_number() OVER (ORDER BY c.job COLLATE "C") AS n
                    FROM prescient.job_class c) k);

-- The refusal of one check's class, or NULL: an empty class is request_problem's to refuse.
-- PL/pgSQL, not SQL: its sub-SELECT keeps it from being inlined, and a SQL function that is not inlined
-- plans its body again in every statement that calls it, while PL/pgSQL keeps the plan for the session. A
-- schedule() in a transaction of its own took 0.40-0.44 ms with it in SQL, 0.32-0.37 in PL/pgSQL.
CREATE OR REPLACE FUNCTION prescient.class_problem(p_job text, p_allow_unknown_class boolean)
  RETURNS text LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
  RETURN CASE
    WHEN p_allow_unknown_class OR coalesce(p_job, '') = '' THEN NULL
    WHEN EXISTS (SELECT FROM prescient.job_class c WHERE c.job = p_job) THEN NULL
    ELSE prescient.unknown_class_message(p_job)
  END;
END $$;

-- The classes of a bulk call that are not rows of the registry, or NULL when there are none: judged once
-- per distinct class, so that a row pays one comparison with a NULL (docs/performance.md).
CREATE OR REPLACE FUNCTION prescient.unknown_classes(p_job text[], p_allow_unknown_class boolean)
  RETURNS text[] LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE WHEN NOT coalesce(p_allow_unknown_class, false) THEN
    (SELECT array_agg(d.job)
       FROM (SELECT DISTINCT j.job FROM unnest(p_job) AS j(job) WHERE j.job <> '') d
      WHERE NOT EXISTS (SELECT FROM prescient.job_class c WHERE c.job = d.job)) END;
