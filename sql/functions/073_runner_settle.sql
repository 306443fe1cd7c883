-- The runner's settlement of a batch (docs/design.md, "The unit of failure is the check"): one call per
-- batch, from PgRunnerStore::settle (kSettle, engine/src/db/runner_statements.hpp), in the transaction that
-- holds the checks (the fast path) or fenced by a lease token (the slow path).
--
-- Why in the server: a batch's settlement must not fail for one check the database refuses (a constraint or
-- trigger another tool put on the history or the outbox). Finding that check takes attempts, each under a
-- subtransaction of its own; here they cost no round trip, and the statement's plan is the cached one
-- (docs/performance.md, "A refused settlement in the server").

-- Whether an error is the database refusing a check's values, so that the check fails alone, rather than
-- the session, the server or the statement itself failing: SQLSTATE classes 22 (data exception), 23
-- (integrity constraint violation), 54 (program limit exceeded) and P0 (raised by a PL/pgSQL trigger).
-- runner_settle and worker_settle (072) both decide by it.
CREATE OR REPLACE FUNCTION prescient.refused_for_its_values(p_sqlstate text) RETURNS boolean
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT length(p_sqlstate) = 5 AND left(p_sqlstate, 2) IN ('22', '23', '54', 'P0')
$$;

-- Settles checks in one statement: each answer is judged by prescient.judge (069, the settlement's rules,
-- which the worker protocol applies too; inlined by the planner); finished checks move to the history (the
-- row history_row makes, 035), the others take their next time (a reschedule its new asked-for time) and
-- leave a row of their run in check_run, the timeline, each with the result its run returned (docs/design.md,
-- "Results"); their events go to the outbox (once: a repeated id is ignored), each announced by NOTIFY.
-- The database refusing one check's rows refuses them all: runner_settle isolates it.
-- In: the batch's checks (prescient.settle_checks: one element per check in each array, the same length; a
-- NULL array where every check leaves it unset; when every check is done, the class, slot, asked-for time and
-- class limits are NULL, as the judge reads nothing else of a done check), of which it settles the positions
-- p_first to p_last (sliced here: an attempt's work is its part's, not the batch's); their events
-- (prescient.settle_events: one element per event, in the checks' order), of which the positions
-- p_event_first to p_event_last are its part's (each taken when its check settles); the runner, now, the lease token (NULL on the fast path, where the
-- caller holds the row locks) and the judge's settings (prescient.settle_context).
-- Out: how many checks it settled, how many events were new, and how many checks ended done, were
-- rescheduled, retried, failed (a dead letter) and ended by a guard.
CREATE OR REPLACE FUNCTION prescient.runner_settle_together(
    p_checks prescient.settle_checks, p_events prescient.settle_events, p_context prescient.settle_context,
    p_first integer, p_last integer, p_event_first integer, p_event_last integer)
  RETURNS TABLE (checks bigint, events bigint, done bigint, rescheduled bigint, retried bigint, failed bigint,
                 guarded bigint)
  LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  -- Plain values, read once: the judge is inlined, and each use of its arguments is the expression again.
  v_now constant timestamptz := p_context.now;
  v_runner_id constant text := p_context.runner_id;
  v_lease_token constant bigint := p_context.lease_token;
  v_slot_seconds constant integer := p_context.slot_seconds;
  v_max_horizon constant interval := p_context.max_horizon_seconds * interval '1 second';
BEGIN
  RETURN QUERY
  WITH s AS (
    SELECT s.id, s.due_us, s.run_micros, s.payload, s.run_result, j.*
      FROM unnest(p_checks.ids[p_first:p_last], p_checks.errors[p_first:p_last], p_checks.answers[p_first:p_last],
                  p_checks.run_micros[p_first:p_last], p_checks.payload_updates[p_first:p_last],
                  p_checks.results[p_first:p_last], p_checks.due_us[p_first:p_last], p_checks.jobs[p_first:p_last],
                  p_checks.slots[p_first:p_last], p_checks.asked[p_first:p_last],
                  p_checks.check_counts[p_first:p_last], p_checks.attempts[p_first:p_last],
                  p_checks.own_max_checks[p_first:p_last], p_checks.own_max_attempts[p_first:p_last],
                  p_checks.own_backoff[p_first:p_last], p_checks.own_backoff_max[p_first:p_last],
                  p_checks.max_checks[p_first:p_last], p_checks.max_attempts[p_first:p_last],
                  p_checks.backoff[p_first:p_last], p_checks.backoff_max[p_first:p_last])
        AS s(id, error, answer, run_micros, payload, run_result, due_us, job, slot, asked, count_before,
             attempts_before, own_max_checks, own_max_attempts, own_backoff, own_backoff_max, max_checks,
             max_attempts, backoff, backoff_max)
     CROSS JOIN LATERAL prescient.judge(
             ROW(s.error IS NOT NULL, s.error, s.answer, s.job, s.slot, s.asked, s.count_before::integer,
                 s.attempts_before::integer)::prescient.judged_run,
             ROW(s.own_max_checks::integer, s.own_max_attempts::integer, s.own_backoff,
                 s.own_backoff_max)::prescient.check_limits,
             ROW(s.max_checks::integer, s.max_attempts::integer, s.backoff, s.backoff_max)::prescient.check_limits,
             v_max_horizon, v_slot_seconds, v_now) j),
  -- The fence: without a token the caller holds the row locks; with one, only its live lease counts. Two
  -- branches gated on the token alone, so the fast path does not join the table at all.
  mine AS (
    SELECT s.* FROM s WHERE v_lease_token IS NULL
    UNION ALL
    SELECT s.* FROM s JOIN prescient.future_job f ON f.id = s.id
     WHERE v_lease_token IS NOT NULL AND f.claim_token = v_lease_token AND f.claimed_until > v_now),
  -- The finished checks' rows, whole. Deleted by their ids rather than joined to mine: a DELETE joined to a
  -- CTE carries each of its rows whole as well, for a concurrent update's recheck, which the fast path and the
  -- fence make moot. And the columns, rather than the row as a value, so that the history row reads them
  -- directly (docs/performance.md, "The settlement without whole rows").
  fin AS (
    DELETE FROM prescient.future_job f
     WHERE f.id = ANY ((SELECT array_agg(id) FROM mine WHERE kind = 'finish')::bigint[])
    RETURNING f.*),
  -- The history row is history_row's (035_history_row.sql), inlined by the planner: ROW(fin.*) is the
  -- pending row as it was, and its fields become fin's columns.
  hist AS (
    INSERT INTO prescient.job_history
    SELECT (prescient.history_row(ROW(fin.*)::prescient.future_job, s.outcome, v_now, v_runner_id, s.check_count,
                                  s.attempts, s.last_error, s.run_micros, s.payload::jsonb, s.run_result::jsonb)).*
      FROM fin JOIN mine s ON s.id = fin.id),
  upd AS (
    UPDATE prescient.future_job f
       SET next_check_at = s.next_check_at, check_count = s.check_count, attempts = s.attempts,
           last_error = s.last_error, claimed_by = NULL, claimed_until = NULL, claim_token = NULL,
           payload = CASE WHEN s.payload IS NULL THEN f.payload ELSE f.payload || s.payload::jsonb END,
           asked_for_at = coalesce(s.asked_for_at, f.asked_for_at)
      FROM mine s WHERE f.id = s.id AND s.kind <> 'finish'
    -- The time as stored: a digest's settlement may move it earlier (042_collect.sql).
    RETURNING f.id, s.kind, s.due_us, s.run_micros, f.next_check_at, s.asked_for_at, s.check_count, s.attempts,
              s.last_error, s.run_result),
  runs AS (
    INSERT INTO prescient.check_run (id, due_at, finished_at, run_micros, runner, result, next_check_at,
                                     answered_at, check_count, attempts, error, run_result)
    SELECT id, prescient.at_us(due_us), v_now, run_micros, v_runner_id,
           CASE WHEN kind = 'retry' THEN 'retried' ELSE 'rescheduled' END, next_check_at, asked_for_at,
           check_count, attempts, CASE WHEN kind = 'retry' THEN last_error END, run_result::jsonb
      FROM upd),
  ev AS (
    INSERT INTO prescient.event (id, type, source, occurred_at, emitted_at, payload, traceparent)
    SELECT e.id, e.type, e.source, prescient.at_us(e.occurred_us), v_now, e.payload::jsonb, e.traceparent
      FROM unnest(p_events.ids[p_event_first:p_event_last], p_events.types[p_event_first:p_event_last],
                  p_events.sources[p_event_first:p_event_last], p_events.occurred_us[p_event_first:p_event_last],
                  p_events.payloads[p_event_first:p_event_last], p_events.checks[p_event_first:p_event_last],
                  p_events.traceparents[p_event_first:p_event_last])
        AS e(id, type, source, occurred_us, payload, check_id, traceparent)
     WHERE e.check_id IN (SELECT id FROM fin UNION ALL SELECT id FROM upd)
    ON CONFLICT (id) DO NOTHING RETURNING id),
  -- Counted from the deletes, not from the history's insert: a row another tool's trigger keeps out of the
  -- history is still a check settled.
  ended AS (
    SELECT count(*) AS checks, count(*) FILTER (WHERE s.outcome = 'done') AS done,
           count(*) FILTER (WHERE s.outcome = 'failed') AS failed,
           count(*) FILTER (WHERE s.outcome NOT IN ('done', 'failed')) AS guarded
      FROM fin JOIN mine s ON s.id = fin.id),
  went_on AS (
    SELECT count(*) AS checks, count(*) FILTER (WHERE kind = 'retry') AS retried FROM upd)
  SELECT e.checks + w.checks, (SELECT count(pg_notify('prescient_event', ev.id)) FROM ev), e.done,
         w.checks - w.retried, w.retried, e.failed, e.guarded
    FROM ended e, went_on w;
END $$;

-- Settles a batch as runner_settle_together does, but a check the database refuses for its values fails
-- alone: the others settle all the same, and the culprits come back unsettled, each with the database's
-- words, for the runner to settle as a failed attempt naming them (engine/src/runner/runner_thread.cpp). The whole
-- batch is one attempt, under a subtransaction; refused, it is settled in chunks of 128, each an attempt of
-- its own, and a refused chunk in halves, down to the culprits: a refusal costs its chunk, not its batch.
-- A half is attempted only while it may settle: when the first half of a refused part settles, the second
-- is split at once (about 1.5 attempts a level of the search, not 2).
-- p_in_chunks: start in chunks (the runner does for some batches after a refusal, when another is likely).
-- Nothing refused, this costs one subtransaction per batch.
-- The arguments are runner_settle_together's but the positions: each attempt passes the whole batch and the
-- positions of the part it settles, of its checks and of their events. Out: the sums of its counts, how many statements it ran, then one row per culprit (its id
-- and the refusal; NULL and NULL when there is none), the counts repeated on each.
-- Its statements run on generic plans from the first call: a runner's session would otherwise plan the
-- settlement anew for each of its first five batches, about 3.5 ms each.
CREATE OR REPLACE FUNCTION prescient.runner_settle(
    p_checks prescient.settle_checks, p_events prescient.settle_events, p_context prescient.settle_context,
    p_in_chunks boolean)
  RETURNS TABLE (checks bigint, events bigint, done bigint, rescheduled bigint, retried bigint, failed bigint,
                 guarded bigint, statements integer, refused_id bigint, refusal text)
  LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  c_chunk constant integer := 128;
  v_count constant integer := coalesce(cardinality(p_checks.ids), 0);
  -- The parts still to settle, as (first, last, known, first half) of positions; the next one is the last.
  -- known: 1 when the part is refused for sure (the first half of a refused part settled, so the second
  -- holds the culprit). first half: 1 for the first half of a refused part, whose second half follows it.
  v_todo integer[];
  v_top integer;
  v_first integer;
  v_last integer;
  v_known boolean;
  v_first_half boolean;
  v_size integer;
  v_at integer;
  -- v_event_at[i]: where the events of the check at position i start in the event arrays (they follow the
  -- checks' order); v_event_at[count + 1] is past the last. Made at the first part smaller than the batch.
  v_event_at integer[];
  v_events_from integer;
  v_events_to integer;
  v_part record;
  v_refused_ids bigint[] := '{}';
  v_refusals text[] := '{}';
  v_state text;
  v_message text;
BEGIN
  checks := 0; events := 0; done := 0; rescheduled := 0; retried := 0; failed := 0; guarded := 0;
  statements := 0;
  IF v_count = 0 THEN
    RETURN NEXT;
    RETURN;
  END IF;
  v_todo := ARRAY[1, v_count, 0, 0];
  LOOP
    EXIT WHEN cardinality(v_todo) = 0;
    v_top := cardinality(v_todo);
    v_first := v_todo[v_top - 3];
    v_last := v_todo[v_top - 2];
    v_known := v_todo[v_top - 1] = 1;
    v_first_half := v_todo[v_top] = 1;
    v_todo := v_todo[1:v_top - 4];
    v_size := v_last - v_first + 1;
    -- A part to attempt (neither known to be refused nor a batch to be chunked from the start): settled, it
    -- is done.
    IF NOT v_known AND (v_size <= c_chunk OR NOT p_in_chunks) THEN
      IF v_size = v_count THEN
        v_events_from := 1;
        v_events_to := coalesce(cardinality(p_events.ids), 0);
      ELSE
        v_events_from := v_event_at[v_first];
        v_events_to := v_event_at[v_last + 1] - 1;
      END IF;
      statements := statements + 1;
      BEGIN
        SELECT * INTO v_part
          FROM prescient.runner_settle_together(p_checks, p_events, p_context, v_first, v_last, v_events_from,
                                                v_events_to);
        checks := checks + v_part.checks;
        events := events + v_part.events;
        done := done + v_part.done;
        rescheduled := rescheduled + v_part.rescheduled;
        retried := retried + v_part.retried;
        failed := failed + v_part.failed;
        guarded := guarded + v_part.guarded;
        IF v_first_half THEN
          -- Its other half, next on the stack, holds what refused them both: it is split, never attempted.
          v_todo[cardinality(v_todo) - 1] := 1;
        END IF;
        CONTINUE;
      EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
        IF NOT prescient.refused_for_its_values(v_state) THEN
          RAISE;
        END IF;
      END;
    END IF;
    -- Refused, by the attempt just made or known to be (then the last refusal's words are its own: every
    -- other check they covered settled). A single check is a culprit; more are split.
    IF v_size = 1 THEN
      v_refused_ids := v_refused_ids || p_checks.ids[v_first];
      v_refusals := v_refusals || format('%s (SQLSTATE %s)', v_message, v_state);
      CONTINUE;
    END IF;
    IF v_event_at IS NULL THEN
      -- Each check's events are counted once per batch, and only when it is settled in parts.
      SELECT array_agg(x.first_event ORDER BY x.n) || (coalesce(cardinality(p_events.ids), 0) + 1) INTO v_event_at
        FROM (SELECT s.n, 1 + coalesce(sum(count(e.id)) OVER (ORDER BY s.n ROWS BETWEEN UNBOUNDED PRECEDING
                                                                          AND 1 PRECEDING), 0) AS first_event
                FROM unnest(p_checks.ids) WITH ORDINALITY AS s(id, n)
                LEFT JOIN unnest(p_events.checks) AS e(id) ON e.id = s.id
               GROUP BY s.n) x;
    END IF;
    -- Pushed last part first, so that the parts are settled in the batch's order.
    IF v_size > c_chunk THEN
      FOR v_at IN REVERSE (v_size - 1) / c_chunk .. 0 LOOP
        v_todo := v_todo || ARRAY[v_first + v_at * c_chunk, least(v_last, v_first + (v_at + 1) * c_chunk - 1), 0, 0];
      END LOOP;
    ELSE
      v_todo := v_todo || ARRAY[v_first + v_size / 2, v_last, 0, 0, v_first, v_first + v_size / 2 - 1, 0, 1];
    END IF;
  END LOOP;
  IF cardinality(v_refused_ids) = 0 THEN
    RETURN NEXT;
    RETURN;
  END IF;
  FOR v_at IN 1 .. cardinality(v_refused_ids) LOOP
    refused_id := v_refused_ids[v_at];
    refusal := v_refusals[v_at];
    RETURN NEXT;
  END LOOP;
END $$;

REVOKE EXECUTE ON FUNCTION
  prescient.runner_settle_together(prescient.settle_checks, prescient.settle_events, prescient.settle_context,
                                   integer, integer, integer, integer),
  prescient.runner_settle(prescient.settle_checks, prescient.settle_events, prescient.settle_context, boolean)
  FROM PUBLIC;
