-- The settlement's rules (docs/design.md, "Every rule has one home"): what becomes of a check after a run,
-- from what the run answered. The runner's settle statement (kSettle, engine/src/db/runner_statements.hpp)
-- and the worker protocol (worker_complete, worker_fail: 072_worker_protocol.sql) both call judge; neither
-- restates it. So a check ends the same way whichever runs it: the same outcome, the same times, the same
-- words in last_error.

-- An error text as it is stored: at most 4 096 bytes; a longer one is cut at a character's boundary and
-- ends with a marker saying how long it was. (Text that cannot be stored at all, invalid UTF-8 or a NUL,
-- never reaches SQL: the runner makes a job's text storable first, core/text_rules.hpp, and the server
-- refuses it from a worker.)
CREATE OR REPLACE FUNCTION prescient.storable_error(p_text text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN octet_length(p_text) <= 4096 THEN p_text ELSE (
    SELECT convert_from(substring(b FROM 1 FOR max(i)), 'UTF8') || m
      FROM (SELECT convert_to(p_text, 'UTF8') AS b,
                   E'\u2026[cut: ' || octet_length(p_text) || ' bytes in all]' AS m) x,
           LATERAL generate_series(4096 - octet_length(m) - 3, 4096 - octet_length(m)) AS i
     -- i bytes end at a character's boundary when the byte after them starts a character
     WHERE get_byte(b, i) & 192 <> 128
     GROUP BY b, m) END
$$;

-- Judges one run of a check. In: the run (prescient.judged_run: whether it failed and its error, or the time
-- it answered, NULL: done; the check as it was run: its class, the slot it ran in, the time it was asked for,
-- its counts before this run); the check's own limits and its class's (prescient.check_limits, NULL fields
-- where not set; the class's are prescient.class_limits', 071); the horizon, the slot's length and now.
-- Out: the settlement.
--  - done: finish `done`;
--  - a next time when the check has now run max_checks times (0: no limit) -> finish `guard_max_checks`;
--    a next time not after the asked-for time (a loop that does not advance) -> `guard_past`; beyond the
--    slot plus the horizon -> `guard_horizon`; each says why in last_error;
--  - otherwise reschedule at the answer rounded up to the grid, but no earlier than the next boundary
--    from now (slot_for: late, not dead), asked for at the answer; check_count + 1, attempts reset;
--  - a failure: attempts + 1, the error kept (storable_error); at max_attempts finish `failed` (a dead
--    letter), else retry at the slot plus B * 2^attempts (B: the backoff, else one slot; at most
--    backoff_max, itself at least the backoff), rounded up to the grid, no earlier than the next boundary.
-- The check's own policy wins over its class's, field by field.
-- An SQL function with one SELECT, so the planner inlines it into the settle statement that calls it. Inlined,
-- each use of an argument is the caller's expression again, and the outcome's CASE is repeated in every
-- column that reads it: so the callers pass plain values (times as timestamptz, the horizon as an interval,
-- now computed once), never an expression to convert per use (the settle statement's conversions from
-- microseconds, repeated, cost 2.4 µs a rescheduled check). The records cost nothing there: a caller passes
-- ROW(...)::prescient.judged_run, and the planner reads each field of it as the expression in its place.
CREATE OR REPLACE FUNCTION prescient.judge(
    p_run prescient.judged_run, p_own prescient.check_limits, p_class prescient.check_limits,
    p_max_horizon interval, p_slot_seconds integer, p_now timestamptz)
  RETURNS TABLE (kind text, outcome text, next_check_at timestamptz, asked_for_at timestamptz,
                 check_count integer, attempts integer, last_error text)
  LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN v.outcome IS NULL THEN CASE WHEN (p_run).failed THEN 'retry' ELSE 'reschedule' END
              ELSE 'finish' END,
         v.outcome,
         CASE WHEN v.outcome IS NOT NULL THEN NULL
              WHEN (p_run).failed THEN prescient.slot_for(
                (p_run).slot + least(l.backoff * power(2::numeric, least((p_run).attempts, 62)), l.backoff_max)
                               * interval '1 second', p_now, p_slot_seconds)
              ELSE prescient.slot_for((p_run).answer, p_now, p_slot_seconds) END,
         CASE WHEN v.outcome IS NULL AND NOT (p_run).failed THEN (p_run).answer END,
         CASE WHEN (p_run).failed THEN (p_run).check_count ELSE (p_run).check_count + 1 END,
         CASE WHEN (p_run).failed THEN (p_run).attempts + 1 ELSE 0 END,
         CASE WHEN (p_run).failed THEN prescient.storable_error((p_run).error)
              WHEN v.outcome = 'guard_max_checks' THEN
                format('asked to look again at %s after run %s: max_checks is %s%s', prescient.iso((p_run).answer),
                       (p_run).check_count + 1, l.max_checks,
                       CASE WHEN (p_own).max_checks IS NOT NULL THEN ' (the check''s own policy)'
                            ELSE format(' (prescient jobs set %s --max-checks N|unlimited)', (p_run).job) END)
              WHEN v.outcome = 'guard_past' THEN
                format('answered %s, not after the time this run was asked for (%s): a next time must advance',
                       prescient.iso((p_run).answer), prescient.iso((p_run).asked_for))
              WHEN v.outcome = 'guard_horizon' THEN
                format('answered %s, beyond the horizon: at most %s after the slot %s', prescient.iso((p_run).answer),
                       prescient.duration_text(p_max_horizon), prescient.iso((p_run).slot))
         END
    FROM (SELECT coalesce((p_own).max_checks, (p_class).max_checks) AS max_checks,
                 coalesce((p_own).max_attempts, (p_class).max_attempts) AS max_attempts,
                 coalesce((p_own).backoff_seconds, (p_class).backoff_seconds, p_slot_seconds)::numeric AS backoff,
                 greatest(coalesce((p_own).backoff_max_seconds, (p_class).backoff_max_seconds, 86400),
                          coalesce((p_own).backoff_seconds, (p_class).backoff_seconds, 0))::numeric AS backoff_max) l,
         LATERAL (SELECT CASE
                           WHEN (p_run).failed THEN CASE WHEN (p_run).attempts + 1 >= l.max_attempts THEN 'failed' END
                           WHEN (p_run).answer IS NULL THEN 'done'
                           WHEN l.max_checks > 0 AND (p_run).check_count + 1 >= l.max_checks THEN 'guard_max_checks'
                           WHEN (p_run).answer <= (p_run).asked_for THEN 'guard_past'
                           WHEN (p_run).answer > (p_run).slot + p_max_horizon THEN 'guard_horizon'
                         END AS outcome
                  OFFSET 0) v  -- computed once a row: inlined, each reader of v.outcome would repeat it
$$;
