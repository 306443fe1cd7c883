-- The worker protocol (docs/workers.md): workers in any language take the due checks of their worker
-- classes, run them in the application's own service, and settle them here. Every rule they are held to
-- is the runner's, from its one home: due by the slot grid and never early, pauses, the class registry,
-- groups in order, flow admission (flow_admit, 085), the settlement's judgement (judge, 069), the history
-- row (history_row, 035) and the timeline (check_run). The functions run with their owner's rights; the
-- role prescient_worker may call them (0038) and cannot write future_job itself.

-- A check's key value under a flow limit, or NULL when the limit does not apply to it: the limit's class
-- (if it names one) and value (if it names one) must match; keys: job, entity_name (the check's column),
-- http_target (an http check's target), payload.FIELD (the field's text; another JSON value's text form).
-- The runner computes the same in C++ (core/flow_rules.cpp, flow_key_of) from the check it already read.
CREATE OR REPLACE FUNCTION prescient.flow_key(p_limit prescient.flow_limit, p_job text, p_entity_name text,
                                              p_payload jsonb) RETURNS text
  LANGUAGE sql STABLE AS $$
  SELECT k FROM (
    SELECT CASE WHEN p_limit.job IS NOT NULL AND p_limit.job <> p_job THEN NULL
                WHEN p_limit.key = 'job' THEN p_job
                WHEN p_limit.key = 'entity_name' THEN p_entity_name
                WHEN p_limit.key = 'http_target' THEN CASE WHEN p_job = 'http' THEN p_payload ->> 'target' END
                WHEN p_limit.key LIKE 'payload.%' THEN
                  CASE jsonb_typeof(p_payload -> substr(p_limit.key, 9))
                    WHEN 'string' THEN p_payload ->> substr(p_limit.key, 9)
                    WHEN 'null' THEN NULL
                    ELSE (p_payload -> substr(p_limit.key, 9))::text END
           END AS k) x
   WHERE k <> '' AND (p_limit.key_value IS NULL OR p_limit.key_value = k)
$$;

-- The classes a worker names must be worker classes of the registry: a runner's class is the runner's.
CREATE OR REPLACE FUNCTION prescient.worker_classes_problem(p_classes text[]) RETURNS text
  LANGUAGE sql STABLE AS $$
  SELECT CASE
    WHEN coalesce(cardinality(p_classes), 0) = 0 THEN 'no job classes named: a worker takes the checks of its classes'
    ELSE (SELECT CASE WHEN c.job IS NULL THEN format('unknown job class %L: declare it with prescient jobs add %s '
                                                      '--worker', n.name, n.name)
                      ELSE format('job class %L is run by the runner, not by workers (prescient jobs add CLASS '
                                  '--worker declares a worker class)', n.name) END
            FROM unnest(p_classes) AS n(name)
            LEFT JOIN prescient.job_class c ON c.job = n.name
           WHERE c.job IS NULL OR c.runs_in <> 'worker'
           LIMIT 1) END
$$;

-- The clock of a worker's call: the database server's. A worker may pin it (p_now) only where the schema
-- owner allows it, in a test database: prescient.settings.workers_may_pin_clock, which the roles cannot
-- write (0048). Anywhere else a worker could take a check early, or lease it past every bound.
CREATE OR REPLACE FUNCTION prescient.worker_now(p_now timestamptz) RETURNS timestamptz
  LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF p_now IS NULL THEN
    RETURN clock_timestamp();
  ELSIF NOT isfinite(p_now) THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('p_now %s is not a finite time', p_now);
  ELSIF NOT (SELECT s.workers_may_pin_clock FROM prescient.settings s) THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('p_now %s: a worker runs on the database server''s '
      'clock here; a test database may let workers pin it (UPDATE prescient.settings SET workers_may_pin_clock = '
      'true, as the schema owner)', prescient.iso(p_now));
  END IF;
  RETURN p_now;
END $$;

-- A worker's name: what leases are given to and settled by, what the history credits.
CREATE OR REPLACE FUNCTION prescient.worker_name_problem(p_worker text) RETURNS text
  LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN coalesce(p_worker, '') = '' OR octet_length(p_worker) > 1024 THEN
    format('the worker name %L is empty or over 1024 bytes', left(p_worker, 40)) END
$$;

-- Why check p_id cannot be settled, extended or given back by p_worker under token p_token at p_now (NULL:
-- it can). A lease is its holder's: the worker it was given to, under its token, of a worker class.
CREATE OR REPLACE FUNCTION prescient.lease_refusal(p_id bigint, p_worker text, p_token bigint, p_now timestamptz)
  RETURNS text
  LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN f.id IS NULL THEN format('check %s is not pending: settled, cancelled or never enqueued', p_id)
              WHEN c.job IS NULL THEN
                format('check %s is of class %L, which the runner runs: a worker settles only the checks of '
                       'worker classes', p_id, f.job)
              WHEN f.claim_token IS DISTINCT FROM p_token AND f.claim_token IS NOT NULL THEN
                format('check %s is held under another lease (by %s until %s): this one was lost', p_id,
                       f.claimed_by, prescient.iso(f.claimed_until))
              WHEN f.claim_token IS DISTINCT FROM p_token THEN
                format('check %s is not leased under token %s: settled already, or its lease expired and was '
                       'given back', p_id, p_token)
              WHEN f.claimed_by IS DISTINCT FROM p_worker THEN
                format('check %s is leased to worker %L, not to %L: only the lease''s holder may answer for it',
                       p_id, f.claimed_by, p_worker)
              WHEN f.claimed_until <= p_now THEN
                format('check %s: the lease under token %s expired at %s', p_id, p_token,
                       prescient.iso(f.claimed_until))
         END
    FROM (SELECT 1) one LEFT JOIN prescient.future_job f ON f.id = p_id
    LEFT JOIN prescient.job_class c ON c.job = f.job AND c.runs_in = 'worker'
$$;

-- The arrays of a call: each as long as the ids, at most 10 000, no id or token NULL, no id twice (one
-- answer per check: twice would settle it twice, or finish it and keep it pending at once).
CREATE OR REPLACE FUNCTION prescient.worker_arrays_problem(p_ids bigint[], p_tokens bigint[], p_other anyarray,
                                                           p_other_name text) RETURNS text
  LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN coalesce(cardinality(p_ids), 0) = 0 THEN 'no checks named'
    WHEN cardinality(p_ids) > 10000 THEN format('%s checks in one call (at most 10000)', cardinality(p_ids))
    WHEN coalesce(cardinality(p_tokens), 0) <> cardinality(p_ids) THEN
      format('%s ids but %s tokens: one token per check', cardinality(p_ids), coalesce(cardinality(p_tokens), 0))
    WHEN p_other_name IS NOT NULL AND p_other IS NOT NULL AND cardinality(p_other) <> cardinality(p_ids) THEN
      format('%s ids but %s %s: one per check', cardinality(p_ids), cardinality(p_other), p_other_name)
    WHEN array_position(p_ids, NULL) IS NOT NULL THEN format('id %s is NULL', array_position(p_ids, NULL))
    WHEN array_position(p_tokens, NULL) IS NOT NULL THEN format('token %s is NULL', array_position(p_tokens, NULL))
    ELSE (SELECT format('check %s is named %s times: one answer per check in a call', u.id, count(*))
            FROM unnest(p_ids) WITH ORDINALITY AS u(id, n)
           GROUP BY u.id HAVING count(*) > 1 ORDER BY min(u.n) LIMIT 1)
  END
$$;

-- take: up to p_limit due checks of the worker classes named, each leased to p_worker for p_lease_seconds
-- under one fencing token (docs/workers.md). traceparent is the trace context this run sends on, with a
-- span id of its own (prescient.run_traceparent), as the runner's claim gives its classes.
CREATE OR REPLACE FUNCTION prescient.worker_take(
    p_worker text, p_classes text[], p_limit integer, p_lease_seconds double precision,
    p_now timestamptz DEFAULT NULL)
  RETURNS TABLE (id bigint, job text, entity_name text, entity_key text, job_key text, group_key text,
                 payload jsonb, due_at timestamptz, asked_for_at timestamptz, check_count integer,
                 attempts integer, last_error text, lease_token bigint, lease_until timestamptz,
                 traceparent text, tracestate text)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz := prescient.worker_now(p_now);
  v_problem text := coalesce(prescient.worker_name_problem(p_worker), prescient.worker_classes_problem(p_classes));
  v_ids bigint[];
  v_admitted bigint[];
  v_pair_ids bigint[];
  v_pair_limits text[];
  v_pair_keys text[];
  v_token bigint := (random() * 9007199254740991)::bigint;
  v_limited boolean := EXISTS (SELECT FROM prescient.flow_limit fl WHERE fl.rate IS NOT NULL OR fl.concurrency IS NOT NULL);
  v_grace constant interval := interval '100 milliseconds';
  -- Under flow limits a take looks at a whole batch, as the runner's claim does, and admits it in one call:
  -- the checks its budget defers get their reservations at once, and a worker taking a few at a time does
  -- not charge the budget check by check while earlier reservations lapse.
  v_look integer := CASE WHEN v_limited THEN greatest(p_limit, 1000) ELSE p_limit END;
  v_extra bigint[];
BEGIN
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  ELSIF p_limit IS NULL OR p_limit < 1 OR p_limit > 10000 THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('take %s checks: from 1 to 10000', p_limit);
  ELSIF p_lease_seconds IS NULL OR NOT p_lease_seconds BETWEEN 0.1 AND 86400 THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('a lease of %s seconds: from 0.1 to 86400', p_lease_seconds);
  END IF;

  -- Due (the slot began, or the time flow control gave has come), not under a live lease, not paused; of a
  -- group, only its first check, so a group's checks run one at a time, in order. Per class, oldest first
  -- and, at one time, by priority, along the index future_job_job (job, next_check_at, priority, id), so a
  -- backlog is never sorted whole. Under flow
  -- limits, first the checks whose reserved start (a deferral by a rate) has just come: the backlog's older
  -- checks would always sort before them, be charged in their stead, and the reservations would lapse
  -- unused (a rate of 50/s gave workers taking a few at a time 5 to 10/s).
  SELECT array_agg(c.id ORDER BY c.reserved DESC, c.next_check_at, c.priority, c.id) INTO v_ids FROM (
    SELECT t.id, t.next_check_at, t.priority, t.reserved
      FROM unnest(p_classes) AS k(job)
     CROSS JOIN LATERAL (
       SELECT * FROM (SELECT f.id, f.next_check_at, f.priority, true AS reserved FROM prescient.future_job f
         WHERE v_limited AND f.job = k.job AND f.next_check_at BETWEEN v_now - v_grace AND v_now
           AND f.claimed_by LIKE 'prescient.flow:%' AND f.claimed_until IS NULL AND f.group_key IS NULL
         ORDER BY f.next_check_at, f.priority, f.id
         LIMIT v_look
           FOR UPDATE OF f SKIP LOCKED) reserved
       UNION ALL
       SELECT * FROM (SELECT f.id, f.next_check_at, f.priority, false FROM prescient.future_job f
         WHERE f.job = k.job AND f.next_check_at <= v_now
           AND (f.claimed_until IS NULL OR f.claimed_until <= v_now)
           AND (NOT v_limited OR f.group_key IS NOT NULL
                OR NOT coalesce(f.claimed_by LIKE 'prescient.flow:%' AND f.next_check_at >= v_now - v_grace, false))
           AND (f.group_key IS NULL
                OR f.id = (SELECT g.id FROM prescient.future_job g WHERE g.group_key = f.group_key
                            ORDER BY g.next_check_at, g.id LIMIT 1))
         ORDER BY f.next_check_at, f.priority, f.id
         LIMIT v_look
           FOR UPDATE OF f SKIP LOCKED) due) t
     WHERE k.job NOT IN (SELECT pj.job FROM prescient.paused_job pj)
     ORDER BY t.reserved DESC, t.next_check_at, t.priority, t.id
     LIMIT v_look) c;
  IF v_ids IS NULL THEN
    RETURN;
  END IF;

  -- Flow control, as for the runner: the pairs of (limit, key value) that hold each check back, admitted
  -- by flow_admit; a worker waits for no start (pace 0): a check whose start is later is deferred to it,
  -- and keeps its reservation when taken within v_grace of it (a worker looks again at that time, told by
  -- worker_next_due; the runner, which waits for starts within its batch, uses 50 ms).
  IF v_limited THEN
    SELECT array_agg(f.id), array_agg(fl.name), array_agg(k.key_value)
      INTO v_pair_ids, v_pair_limits, v_pair_keys
      FROM prescient.future_job f
      JOIN prescient.flow_limit fl ON fl.rate IS NOT NULL OR fl.concurrency IS NOT NULL
     CROSS JOIN LATERAL (SELECT prescient.flow_key(fl, f.job, f.entity_name, f.payload) AS key_value) k
     WHERE f.id = ANY (v_ids) AND k.key_value IS NOT NULL;
  END IF;
  IF v_pair_ids IS NOT NULL THEN
    SELECT array_agg(a.check_id) INTO v_admitted
      FROM prescient.flow_admit(v_pair_ids, v_pair_limits, v_pair_keys, prescient.us(v_now), 0, 250000, p_limit,
                                (extract(epoch FROM v_grace) * 1000000)::bigint) a
     WHERE a.start_us IS NOT NULL;
    v_ids := ARRAY(SELECT i FROM unnest(v_ids) WITH ORDINALITY AS u(i, o)
                    WHERE i <> ALL (v_pair_ids) OR i = ANY (coalesce(v_admitted, '{}')) ORDER BY o);
    -- Admitted beyond this take's places: their start has come and their budget is spent, so they are
    -- marked as reserved now, for the next take within v_grace (which takes them first).
    v_extra := ARRAY(SELECT i FROM unnest(v_ids) WITH ORDINALITY AS u(i, o)
                      WHERE o > p_limit AND i = ANY (coalesce(v_admitted, '{}')));
    UPDATE prescient.future_job f
       SET claimed_by = 'prescient.flow:admitted', next_check_at = greatest(f.next_check_at, v_now)
     WHERE f.id = ANY (v_extra);
  END IF;
  v_ids := v_ids[1:p_limit];

  RETURN QUERY
  UPDATE prescient.future_job f
     SET claimed_by = p_worker, claimed_until = v_now + p_lease_seconds * interval '1 second', claim_token = v_token
   WHERE f.id = ANY (v_ids)
  RETURNING f.id, f.job, f.entity_name, f.entity_key, f.job_key, f.group_key, f.payload, f.next_check_at,
            coalesce(f.asked_for_at, f.first_check_at), f.check_count, f.attempts, f.last_error, f.claim_token,
            f.claimed_until, prescient.run_traceparent(f.traceparent),
            CASE WHEN f.traceparent IS NOT NULL THEN f.tracestate END;
END $$;

-- Settles checks p_worker holds under their tokens by what judge makes of their answers: finished ones to the
-- history (with their result), the others back to pending at their next time, with a row in the timeline
-- (with their result too). p_now is the call's clock, resolved by worker_now.
-- p_failed, p_next, p_errors, p_results: one element per check (NULL arrays: none). Answers one row per
-- check, in the order given; a check not held is left as it is, `lease_lost` with the reason. One statement:
-- the database refusing one check's rows refuses them all (worker_settle isolates it).
CREATE OR REPLACE FUNCTION prescient.worker_settle_together(
    p_worker text, p_ids bigint[], p_tokens bigint[], p_failed boolean, p_next timestamptz[], p_errors text[],
    p_results jsonb[], p_now timestamptz)
  RETURNS TABLE (id bigint, outcome text, next_check_at timestamptz, last_error text)
  LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_settings prescient.settings;
  v_big record;
BEGIN
  SELECT r.n, octet_length(r.result::text) AS bytes INTO v_big
    FROM unnest(p_results) WITH ORDINALITY AS r(result, n)
   WHERE octet_length(r.result::text) > 65536 LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('check %s: its result is %s bytes of JSON (at most 65536)', p_ids[v_big.n], v_big.bytes);
  END IF;
  SELECT * INTO STRICT v_settings FROM prescient.settings;
  RETURN QUERY
  -- The checks p_worker still holds under their tokens, of worker classes (lease_refusal says why another is
  -- not), locked in id order (a heartbeat or another settlement of the same checks locks in the same order:
  -- no deadlock); the lease is looked at again on the locked row.
  WITH held AS (
    SELECT s.n, f AS pending
      FROM unnest(p_ids, p_tokens) WITH ORDINALITY AS s(id, token, n)
      JOIN prescient.future_job f ON f.id = s.id
      JOIN prescient.job_class c ON c.job = f.job AND c.runs_in = 'worker'
     WHERE f.claim_token = s.token AND f.claimed_by = p_worker AND f.claimed_until > p_now
     ORDER BY f.id
       FOR UPDATE OF f),
  -- Their classes' limits in force (071: a worker has no coded policy and no config).
  limits AS (
    SELECT * FROM prescient.class_limits(ARRAY(SELECT DISTINCT (h.pending).job FROM held h))),
  j AS (
    SELECT h.n, h.pending, (h.pending).claimed_by AS worker, (h.pending).next_check_at AS due_at,
           p_results[h.n] AS result, v.*
      FROM held h
      JOIN limits l ON l.job = (h.pending).job
     CROSS JOIN LATERAL prescient.judge(
           ROW(p_failed, p_errors[h.n], p_next[h.n], (h.pending).job,
               date_bin(v_settings.slot_seconds * interval '1 second', (h.pending).next_check_at,
                        timestamptz '1970-01-01 UTC'),
               coalesce((h.pending).asked_for_at, (h.pending).first_check_at), (h.pending).check_count,
               (h.pending).attempts)::prescient.judged_run,
           ROW((h.pending).max_checks, (h.pending).max_attempts, (h.pending).backoff_seconds,
               (h.pending).backoff_max_seconds)::prescient.check_limits,
           ROW(l.max_checks, l.max_attempts, l.backoff_seconds, l.backoff_max_seconds)::prescient.check_limits,
           v_settings.max_horizon_seconds * interval '1 second', v_settings.slot_seconds, p_now) v),
  fin AS (
    DELETE FROM prescient.future_job f USING j WHERE f.id = (j.pending).id AND j.kind = 'finish'
    RETURNING f.id),
  hist AS (
    INSERT INTO prescient.job_history
    SELECT (prescient.history_row(j.pending, j.outcome, p_now, j.worker, j.check_count, j.attempts, j.last_error,
                                  NULL, NULL, j.result)).*
      FROM j WHERE j.kind = 'finish'),
  -- The time as stored: a digest's settlement may move it earlier (042_collect.sql).
  upd AS (
    UPDATE prescient.future_job f
       SET next_check_at = j.next_check_at, check_count = j.check_count, attempts = j.attempts,
           last_error = j.last_error, claimed_by = NULL, claimed_until = NULL, claim_token = NULL,
           asked_for_at = coalesce(j.asked_for_at, f.asked_for_at)
      FROM j WHERE f.id = (j.pending).id AND j.kind <> 'finish'
    RETURNING f.id, f.next_check_at),
  runs AS (
    INSERT INTO prescient.check_run (id, due_at, finished_at, run_micros, runner, result, next_check_at,
                                     answered_at, check_count, attempts, error, run_result)
    SELECT (j.pending).id, j.due_at, p_now, NULL, j.worker,
           CASE WHEN j.kind = 'retry' THEN 'retried' ELSE 'rescheduled' END, u.next_check_at, j.asked_for_at,
           j.check_count, j.attempts, CASE WHEN j.kind = 'retry' THEN j.last_error END, j.result
      FROM j JOIN upd u ON u.id = (j.pending).id)
  SELECT s.id,
         CASE WHEN j.n IS NULL THEN 'lease_lost'
              WHEN j.kind = 'finish' THEN j.outcome
              WHEN j.kind = 'retry' THEN 'retried' ELSE 'rescheduled' END,
         coalesce(u.next_check_at, j.next_check_at),
         CASE WHEN j.n IS NULL THEN prescient.lease_refusal(s.id, p_worker, s.token, p_now) ELSE j.last_error END
    FROM unnest(p_ids, p_tokens) WITH ORDINALITY AS s(id, token, n) LEFT JOIN j ON j.n = s.n
    LEFT JOIN upd u ON u.id = (j.pending).id
   ORDER BY s.n;
END $$;

-- The settlement of checks, of which the database may refuse one for its values (a constraint or trigger
-- another tool put on the history, say: prescient.refused_for_its_values, 073, as the runner's settlement
-- decides): the others settle all the same. Refused together, the checks are settled in halves,
-- each under a subtransaction of its own, down to the culprit, which is settled as a failed attempt naming
-- the refusal; refused even that, it is answered `refused` and left as it is (its lease runs out, and it is
-- taken again then). When nothing is refused, this costs one subtransaction per call.
CREATE OR REPLACE FUNCTION prescient.worker_settle(
    p_worker text, p_ids bigint[], p_tokens bigint[], p_failed boolean, p_next timestamptz[], p_errors text[],
    p_results jsonb[], p_now timestamptz)
  RETURNS TABLE (id bigint, outcome text, next_check_at timestamptz, last_error text)
  LANGUAGE plpgsql AS $$
DECLARE
  v_count integer := coalesce(cardinality(p_ids), 0);
  v_half integer := v_count / 2;
  -- The attempt's answers: first those given; for a single culprit, then its failed attempt.
  v_failed boolean := p_failed;
  v_next timestamptz[] := p_next;
  v_errors text[] := p_errors;
  v_results jsonb[] := p_results;
  v_as_failed boolean := false;  -- this attempt is the culprit's failed attempt
  v_settled record;
  v_state text;
  v_message text;
BEGIN
  LOOP
    BEGIN
      -- Gathered before any is answered: a refusal may come after the statement gave its rows.
      SELECT array_agg(s.id) AS ids, array_agg(s.outcome) AS outcomes, array_agg(s.next_check_at) AS nexts,
             array_agg(s.last_error) AS errors
        INTO v_settled
        FROM prescient.worker_settle_together(p_worker, p_ids, p_tokens, v_failed, v_next, v_errors, v_results, p_now) s;
      RETURN QUERY SELECT * FROM unnest(v_settled.ids, v_settled.outcomes, v_settled.nexts, v_settled.errors);
      RETURN;
    EXCEPTION WHEN OTHERS THEN
      GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
      IF NOT prescient.refused_for_its_values(v_state) THEN
        RAISE;
      END IF;
    END;
    IF v_count > 1 THEN
      RETURN QUERY SELECT * FROM prescient.worker_settle(p_worker, p_ids[1:v_half], p_tokens[1:v_half], p_failed,
        p_next[1:v_half], p_errors[1:v_half], p_results[1:v_half], p_now);
      RETURN QUERY SELECT * FROM prescient.worker_settle(p_worker, p_ids[v_half + 1:], p_tokens[v_half + 1:], p_failed,
        p_next[v_half + 1:], p_errors[v_half + 1:], p_results[v_half + 1:], p_now);
      RETURN;
    END IF;
    IF v_as_failed THEN
      RETURN QUERY SELECT p_ids[1], 'refused'::text, NULL::timestamptz, prescient.storable_error(
        format('the database refuses any settlement of it: %s (SQLSTATE %s)', v_message, v_state));
      RETURN;
    END IF;
    v_as_failed := true;
    v_failed := true;
    v_next := NULL;
    v_errors := ARRAY[prescient.storable_error(
      format('the database refused its settlement: %s (SQLSTATE %s)', v_message, v_state))];
    v_results := NULL;
  END LOOP;
END $$;

-- complete: the answers of checks that ran (a next time, or NULL: done), with a result to keep, from the
-- worker that holds their leases. A check's answer may instead be in business time: p_business_delay[i] of
-- calendar p_calendar[i]'s open time from now ("4h", "3bd"; docs/business-time.md), resolved here to a time
-- before the settlement, by the rule every door uses (business_problem, business_due). A bad one is refused
-- (PR400 naming the check and the value), as any other bad answer is: nothing is settled.
CREATE OR REPLACE FUNCTION prescient.worker_complete(
    p_worker text, p_ids bigint[], p_tokens bigint[], p_next timestamptz[], p_results jsonb[] DEFAULT NULL,
    p_now timestamptz DEFAULT NULL, p_calendar text[] DEFAULT NULL, p_business_delay text[] DEFAULT NULL)
  RETURNS TABLE (id bigint, outcome text, next_check_at timestamptz, last_error text)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_problem text := coalesce(prescient.worker_name_problem(p_worker),
                             prescient.worker_arrays_problem(p_ids, p_tokens, p_next, 'next times'),
                             prescient.worker_arrays_problem(p_ids, p_tokens, p_results, 'results'),
                             prescient.worker_arrays_problem(p_ids, p_tokens, p_calendar, 'calendars'),
                             prescient.worker_arrays_problem(p_ids, p_tokens, p_business_delay, 'business delays'));
  v_now timestamptz;
  v_next timestamptz[] := p_next;
  v_versions integer[];
  v_dues timestamptz[];
  v_problems text[];
BEGIN
  IF v_problem IS NULL AND p_next IS NULL THEN
    v_problem := 'no next times given: one per check (a NULL element: done)';
  END IF;
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  v_now := prescient.worker_now(p_now);
  -- Only a call that answers in business time pays for it: each answer resolved, or its problem, by the rule
  -- the runner's answers use (business_answers), with the time each run was for, which names its timeline row.
  IF p_calendar IS NOT NULL OR p_business_delay IS NOT NULL THEN
    SELECT array_agg(CASE WHEN p_calendar[a.n] IS NOT NULL AND p_next[a.n] IS NOT NULL
                       THEN 'answered both a next time and one in business time: give one'
                       ELSE a.problem END ORDER BY a.n),
           array_agg(coalesce(a.due_at, p_next[a.n]) ORDER BY a.n), array_agg(a.calendar_version ORDER BY a.n),
           array_agg(f.next_check_at ORDER BY a.n)
      INTO v_problems, v_next, v_versions, v_dues
      FROM prescient.business_answers(p_calendar, p_business_delay, v_now) a
      LEFT JOIN prescient.future_job f ON f.id = p_ids[a.n];
    SELECT format('check %s: %s', p_ids[u.n], u.problem) INTO v_problem
      FROM unnest(v_problems) WITH ORDINALITY AS u(problem, n)
     WHERE u.problem IS NOT NULL ORDER BY u.n LIMIT 1;
    IF v_problem IS NOT NULL THEN
      RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
    END IF;
  END IF;
  RETURN QUERY SELECT * FROM prescient.worker_settle(p_worker, p_ids, p_tokens, false, v_next, NULL, p_results, v_now);
  IF v_versions IS NOT NULL THEN
    -- The timeline names what computed each such run's next time (its row was written by this settlement).
    PERFORM prescient.runs_timed_by(p_ids, v_dues, p_calendar, v_versions, p_business_delay, v_now);
  END IF;
END $$;

-- fail: the errors of checks whose run failed.
CREATE OR REPLACE FUNCTION prescient.worker_fail(
    p_worker text, p_ids bigint[], p_tokens bigint[], p_errors text[], p_now timestamptz DEFAULT NULL)
  RETURNS TABLE (id bigint, outcome text, next_check_at timestamptz, last_error text)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_problem text := coalesce(prescient.worker_name_problem(p_worker),
                             prescient.worker_arrays_problem(p_ids, p_tokens, p_errors, 'errors'));
BEGIN
  IF v_problem IS NULL AND p_errors IS NULL THEN
    v_problem := 'no errors given: one per check';
  END IF;
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  RETURN QUERY SELECT * FROM prescient.worker_settle(p_worker, p_ids, p_tokens, true, NULL, p_errors, NULL,
                                                     prescient.worker_now(p_now));
END $$;

-- extend: a heartbeat. Each lease p_worker still holds moves to now + p_lease_seconds; a lost one says why.
CREATE OR REPLACE FUNCTION prescient.worker_extend(
    p_worker text, p_ids bigint[], p_tokens bigint[], p_lease_seconds double precision,
    p_now timestamptz DEFAULT NULL)
  RETURNS TABLE (id bigint, lease_until timestamptz, refusal text)
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
#variable_conflict use_column
DECLARE
  v_now timestamptz := prescient.worker_now(p_now);
  v_until timestamptz;  -- the leases' new end, once p_lease_seconds is known to be in range
  v_problem text := coalesce(prescient.worker_name_problem(p_worker),
                             prescient.worker_arrays_problem(p_ids, p_tokens, NULL::text[], NULL));
BEGIN
  IF v_problem IS NULL AND (p_lease_seconds IS NULL OR NOT p_lease_seconds BETWEEN 0.1 AND 86400) THEN
    v_problem := format('a lease of %s seconds: from 0.1 to 86400', p_lease_seconds);
  END IF;
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  v_until := v_now + p_lease_seconds * interval '1 second';
  -- Locked in id order first, as a settlement locks them: a heartbeat racing one never deadlocks. Only the
  -- worker's own: a call naming other checks locks none of them.
  PERFORM 1 FROM prescient.future_job f WHERE f.id = ANY (p_ids) AND f.claimed_by = p_worker ORDER BY f.id
     FOR UPDATE;
  UPDATE prescient.future_job f SET claimed_until = v_until
    FROM unnest(p_ids, p_tokens) AS s(id, token), prescient.job_class c
   WHERE f.id = s.id AND f.claim_token = s.token AND f.claimed_by = p_worker AND f.claimed_until > v_now
     AND c.job = f.job AND c.runs_in = 'worker';
  -- The answers, each check looked up again by its key: a lease moved is one that now ends at v_until (one
  -- not moved had ended by v_now, before it), and the worker's own rows are locked above. Each by its key,
  -- kept apart from the rest (OFFSET 0): joined whole, to the UPDATE's RETURNING rows or to the table, the
  -- planner expects one row of the worker's leases, joins them in a nested loop, and a heartbeat of 2 000
  -- checks compared 4 million pairs (250 ms; 4 000 checks, 0.9 s).
  RETURN QUERY
  SELECT s.id, m.claimed_until,
         CASE WHEN m.claimed_until IS NULL THEN prescient.lease_refusal(s.id, p_worker, s.token, v_now) END
    FROM unnest(p_ids, p_tokens) WITH ORDINALITY AS s(id, token, n)
    LEFT JOIN LATERAL (
      SELECT f.claimed_until FROM prescient.future_job f JOIN prescient.job_class c ON c.job = f.job
       WHERE f.id = s.id AND f.claim_token = s.token AND f.claimed_by = p_worker AND f.claimed_until = v_until
         AND c.runs_in = 'worker'
      OFFSET 0) m ON true
   ORDER BY s.n;
END $$;

-- release: checks p_worker gives back untouched (a graceful stop), due again at once; no attempt is counted.
CREATE OR REPLACE FUNCTION prescient.worker_release(p_worker text, p_ids bigint[], p_tokens bigint[])
  RETURNS integer
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_problem text := coalesce(prescient.worker_name_problem(p_worker),
                             prescient.worker_arrays_problem(p_ids, p_tokens, NULL::text[], NULL));
  v_count integer;
BEGIN
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  PERFORM 1 FROM prescient.future_job f WHERE f.id = ANY (p_ids) AND f.claimed_by = p_worker ORDER BY f.id
     FOR UPDATE;  -- as a settlement
  WITH given AS (
    UPDATE prescient.future_job f SET claimed_by = NULL, claimed_until = NULL, claim_token = NULL
      FROM unnest(p_ids, p_tokens) AS s(id, token), prescient.job_class c
     WHERE f.id = s.id AND f.claim_token = s.token AND f.claimed_by = p_worker
       AND c.job = f.job AND c.runs_in = 'worker'
    RETURNING f.job)
  -- Due again at once: wake the workers of their classes, asleep until the lease's end.
  SELECT count(*) INTO v_count FROM given, LATERAL (SELECT pg_notify('prescient_worker', given.job)) n;
  RETURN v_count;
END $$;

-- next due: when a check of these classes may next be taken (the earliest due time of an unleased check,
-- or the end of a live lease); NULL when none is pending or all are paused.
CREATE OR REPLACE FUNCTION prescient.worker_next_due(p_classes text[], p_now timestamptz DEFAULT NULL)
  RETURNS timestamptz
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_now timestamptz := prescient.worker_now(p_now);
  v_problem text := prescient.worker_classes_problem(p_classes);
  v_next timestamptz;
  v_lease_end timestamptz;
BEGIN
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  -- Per class, the first check by due time that a take could take (not under a live lease; of a group, its
  -- first: a group's later checks wait for it, whose lease end counts below), along the index future_job_job.
  SELECT min(t) INTO v_next FROM (
    SELECT (SELECT f.next_check_at FROM prescient.future_job f
             WHERE f.job = c.job AND (f.claimed_until IS NULL OR f.claimed_until <= v_now)
               AND (f.group_key IS NULL
                    OR f.id = (SELECT g.id FROM prescient.future_job g WHERE g.group_key = f.group_key
                                ORDER BY g.next_check_at, g.id LIMIT 1))
             ORDER BY f.next_check_at LIMIT 1) AS t
      FROM unnest(p_classes) AS c(job)
     WHERE c.job NOT IN (SELECT pj.job FROM prescient.paused_job pj)) x;
  IF v_next IS NOT NULL AND v_next <= v_now THEN
    RETURN v_next;  -- due now: the leases cannot make it sooner
  END IF;
  -- A live lease may end sooner (its worker died): its check is due again then.
  SELECT min(f.claimed_until) INTO v_lease_end FROM prescient.future_job f
   WHERE f.job = ANY (p_classes) AND f.claimed_until > v_now
     AND f.job NOT IN (SELECT pj.job FROM prescient.paused_job pj);
  RETURN least(v_next, v_lease_end);
END $$;

-- The wake-up: a statement that puts checks of a worker class into future_job notifies prescient_worker,
-- once per class, so a worker asleep until its next due time looks again.
CREATE OR REPLACE FUNCTION prescient.notify_workers() RETURNS trigger
  LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('prescient_worker', c.job)
     FROM (SELECT DISTINCT n.job FROM new_checks n) d
     JOIN prescient.job_class c ON c.job = d.job AND c.runs_in = 'worker';
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS future_job_notify_workers ON prescient.future_job;
CREATE TRIGGER future_job_notify_workers AFTER INSERT ON prescient.future_job
  REFERENCING NEW TABLE AS new_checks FOR EACH STATEMENT EXECUTE FUNCTION prescient.notify_workers();

REVOKE EXECUTE ON FUNCTION prescient.worker_take(text, text[], integer, double precision, timestamptz),
  prescient.worker_complete(text, bigint[], bigint[], timestamptz[], jsonb[], timestamptz, text[], text[]),
  prescient.worker_fail(text, bigint[], bigint[], text[], timestamptz),
  prescient.worker_extend(text, bigint[], bigint[], double precision, timestamptz),
  prescient.worker_release(text, bigint[], bigint[]),
  prescient.worker_next_due(text[], timestamptz),
  prescient.worker_settle(text, bigint[], bigint[], boolean, timestamptz[], text[], jsonb[], timestamptz),
  prescient.worker_settle_together(text, bigint[], bigint[], boolean, timestamptz[], text[], jsonb[], timestamptz),
  prescient.lease_refusal(bigint, text, bigint, timestamptz),
  prescient.worker_now(timestamptz)
  FROM PUBLIC;
