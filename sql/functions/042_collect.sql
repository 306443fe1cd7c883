-- Digests (docs/concepts.md "Digests", docs/design.md "Digests"): on_conflict 'collect' gathers the payloads
-- of one job key's enqueues into the pending check's list, {"collected": [p1, p2, ...]}, in arrival order,
-- which its job class reads whole at its run. Every payload reaches exactly one run: those that arrive while
-- a run holds the check go to its next run, or to a new check when that run ends it.
--
-- A run holds a check one of two ways. A fast-path run locks the row from claim to settlement: an enqueue
-- waits for it (schedule's SELECT ... FOR UPDATE) and then finds the row gone or settled. A slow-path run (a
-- long-running class, a flow-limited check, a worker) writes a lease (claim_token) and leaves the row
-- unlocked: an enqueue then adds to collect_pending, never to the payload the run already read. The
-- settlement hands collect_pending on, whoever settles (the runner's kSettle, worker_settle, a lease given
-- back, a flow deferral): the rule lives in the two triggers below, not in each of them.

-- Adds one payload to the pending collecting check p_id, locked by the caller (schedule). Not leased: to
-- its list, and its time moves by the debounce rule, to the slot asked for but never past the list's first
-- payload plus p_max_wait. Leased: to collect_pending, whose time is the same rule from its own first
-- arrival; the check's time is the run's to settle. Its counts, attempts and last error stay as they are:
-- a payload is not a run, and a check failing over and over must still reach its dead letter while
-- payloads keep coming. Refused whole past the bounds (collect_bound_problem). Answers the check's id, key,
-- the time the payload will be looked at, the first check's time and 'collected'.
CREATE OR REPLACE FUNCTION prescient.collect_into(
    p_id bigint, p_payload jsonb, p_slot timestamptz, p_window interval, p_max_wait interval, p_at timestamptz,
    p_now timestamptz, p_slot_seconds integer)
  RETURNS TABLE (id bigint, job_key text, next_check_at timestamptz, first_check_at timestamptz, status text)
  LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_check prescient.future_job;
  v_leased boolean;
  v_list jsonb;
  v_pending jsonb;
  v_problem text;
BEGIN
  SELECT * INTO STRICT v_check FROM prescient.future_job f WHERE f.id = p_id;
  -- A token, live or not: a lease that ran out may still be settled by the next run that takes it, and
  -- that run read the payload as it was. (Given back, a lease's arrivals joined the list: collect_settled.)
  v_leased := v_check.claim_token IS NOT NULL;
  v_list := coalesce(v_check.payload -> 'collected', '[]');
  v_pending := v_check.collect_pending;
  IF v_leased THEN
    v_pending := coalesce(v_pending, '[]') || jsonb_build_array(p_payload);
  ELSE
    v_list := v_list || jsonb_build_array(p_payload);
  END IF;
  v_problem := prescient.collect_bound_problem(
    v_check.job_key, jsonb_array_length(v_list) + coalesce(jsonb_array_length(v_pending), 0),
    octet_length(v_list::text) + coalesce(octet_length(v_pending::text), 0));
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  IF v_leased THEN
    RETURN QUERY
      UPDATE prescient.future_job f
         SET collect_pending = v_pending, collect_pending_since = coalesce(f.collect_pending_since, p_now),
             collect_pending_at = prescient.debounced_slot(
               prescient.spread_slot(p_slot, f.id, p_window, p_slot_seconds),
               coalesce(f.collect_pending_since, p_now), p_max_wait, p_now, p_slot_seconds)
       WHERE f.id = p_id
      RETURNING f.id, f.job_key, f.collect_pending_at, f.first_check_at, 'collected'::text;
  ELSE
    RETURN QUERY
      UPDATE prescient.future_job f
         SET payload = jsonb_set(f.payload, '{collected}', v_list), collect_since = coalesce(f.collect_since, p_now),
             next_check_at = prescient.debounced_slot(
               prescient.spread_slot(p_slot, f.id, p_window, p_slot_seconds),
               coalesce(f.collect_since, p_now), p_max_wait, p_now, p_slot_seconds),
             asked_for_at = p_at
       WHERE f.id = p_id
      RETURNING f.id, f.job_key, f.next_check_at, f.first_check_at, 'collected'::text;
  END IF;
END $$;
REVOKE EXECUTE ON FUNCTION
  prescient.collect_into(bigint, jsonb, timestamptz, interval, interval, timestamptz, timestamptz, integer)
  FROM PUBLIC;

-- A collecting check that goes on after a run, or whose lease was given back unrun (BEFORE UPDATE, only when
-- one of those happened: the trigger's WHEN). The row's counts say which:
--  - check_count grew: a run answered and consumed the list it read. The list becomes what arrived during
--    the run ([] when nothing did), its ceiling counting from the first of them, and the check is due no
--    later than they asked for (collect_pending_at): the run's answer may be later.
--  - attempts grew: the run failed, nothing was consumed: the list it ran with, then what arrived. The
--    backoff's time stands.
--  - the lease went (claim_token cleared) without a run counted: given back (worker_release, the runner's
--    release), or deferred by flow control: nothing was consumed, as for a failure.
-- A payload update of the run (state a class carries) was merged into NEW.payload; only "collected" is set.
CREATE OR REPLACE FUNCTION prescient.collect_settled() RETURNS trigger
  LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF NEW.check_count > OLD.check_count THEN
    NEW.payload := jsonb_set(NEW.payload, '{collected}', coalesce(OLD.collect_pending, '[]'));
    NEW.collect_since := OLD.collect_pending_since;
    IF OLD.collect_pending_at < NEW.next_check_at THEN
      NEW.next_check_at := OLD.collect_pending_at;
      NEW.asked_for_at := OLD.collect_pending_at;
    END IF;
  ELSIF OLD.collect_pending IS NOT NULL THEN
    NEW.payload := jsonb_set(NEW.payload, '{collected}',
                             coalesce(NEW.payload -> 'collected', '[]') || OLD.collect_pending);
  END IF;
  NEW.collect_pending := NULL;
  NEW.collect_pending_since := NULL;
  NEW.collect_pending_at := NULL;
  RETURN NEW;
END $$;
REVOKE EXECUTE ON FUNCTION prescient.collect_settled() FROM PUBLIC;

-- A collecting check that ended (AFTER DELETE, only with payloads pending: the trigger's WHEN) leaves them to
-- a new check: same key, class, entity, group and priority, {"collected": the pending payloads}, due when
-- they asked (collect_pending_at), its ceiling counted from the first of them. Not after a cancel: a
-- cancelled digest stays cancelled, and its history row keeps what was pending (collect_pending). The
-- history row of the end is the same statement's, which an AFTER trigger sees; a check's id has several
-- history rows only when a failure was retried, so the newest is this end's. SECURITY DEFINER: a runner or
-- worker that settles may not insert checks of its own.
CREATE OR REPLACE FUNCTION prescient.collect_ended() RETURNS trigger
  LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF (SELECT h.outcome FROM prescient.job_history h WHERE h.id = OLD.id ORDER BY h.history_id DESC LIMIT 1)
       IS DISTINCT FROM 'cancelled' THEN
    INSERT INTO prescient.future_job (job, entity_name, entity_key, job_key, group_key, payload, first_check_at,
                                      next_check_at, enqueued_on, enqueued_by, asked_for_at, priority, collects,
                                      collect_since)
    VALUES (OLD.job, OLD.entity_name, OLD.entity_key, OLD.job_key, OLD.group_key,
            jsonb_build_object('collected', OLD.collect_pending), OLD.collect_pending_at, OLD.collect_pending_at,
            OLD.collect_pending_since, OLD.enqueued_by, OLD.collect_pending_at, OLD.priority, true,
            OLD.collect_pending_since);
  END IF;
  RETURN NULL;
END $$;
REVOKE EXECUTE ON FUNCTION prescient.collect_ended() FROM PUBLIC;

-- Their WHEN is all a check that does not collect pays: one test of a boolean of the old row.
CREATE OR REPLACE TRIGGER future_job_collect_settled BEFORE UPDATE ON prescient.future_job
  FOR EACH ROW
  WHEN (OLD.collects AND (NEW.check_count > OLD.check_count OR NEW.attempts > OLD.attempts
                          OR (OLD.claim_token IS NOT NULL AND NEW.claim_token IS NULL)))
  EXECUTE FUNCTION prescient.collect_settled();
CREATE OR REPLACE TRIGGER future_job_collect_ended AFTER DELETE ON prescient.future_job
  FOR EACH ROW WHEN (OLD.collects AND OLD.collect_pending IS NOT NULL)
  EXECUTE FUNCTION prescient.collect_ended();
