-- Flow control (docs/flow-control.md): declaring limits, and admitting claimed checks under them.

-- What is wrong with a limit, or NULL. The same rules for every caller: the CLI and the C++ API call
-- limit_set, which raises this as SQLSTATE PR400.
CREATE OR REPLACE FUNCTION prescient.limit_problem(
    p_name text, p_key text, p_rate integer, p_per_seconds integer, p_burst integer, p_concurrency integer,
    p_job text, p_key_value text, p_fair_share boolean)
  RETURNS text LANGUAGE sql STABLE
  RETURN CASE
    WHEN coalesce(p_name, '') = '' THEN 'the limit''s name is empty'
    WHEN octet_length(p_name) > 200 THEN 'the limit''s name is longer than 200 bytes'
    WHEN prescient.name_problem('the limit''s name', p_name) IS NOT NULL
      THEN prescient.name_problem('the limit''s name', p_name)
    WHEN p_key IS NULL THEN 'the limit''s key is missing'
    WHEN NOT (p_key IN ('job', 'entity_name', 'http_target')
              OR (p_key LIKE 'payload.%' AND octet_length(p_key) > 8)) THEN
      format('unknown kind of key %L: use job, entity_name, http_target or payload.<field>', p_key)
    WHEN octet_length(p_key) > 208 THEN 'the payload field is longer than 200 bytes'
    WHEN p_rate IS NULL AND p_concurrency IS NULL AND NOT coalesce(p_fair_share, false) THEN
      'a limit needs a rate, a concurrency, fair share or several'
    WHEN p_fair_share AND p_key NOT LIKE 'payload.%' THEN
      format('fair share takes a payload field as its key, not %L', p_key)
    WHEN p_fair_share AND (p_job IS NOT NULL OR p_key_value IS NOT NULL) THEN
      'fair share applies to every check of a slot: no job class or key value'
    WHEN p_rate IS NOT NULL AND p_rate < 1 THEN format('invalid rate %s: at least 1', p_rate)
    WHEN p_per_seconds IS NULL OR p_per_seconds NOT BETWEEN 1 AND 86400 THEN
      format('invalid rate period %s seconds: use 1 to 86400', coalesce(p_per_seconds::text, 'NULL'))
    WHEN p_burst IS NULL OR p_burst NOT BETWEEN 1 AND 1000000 THEN
      format('invalid burst %s: use 1 to 1000000', coalesce(p_burst::text, 'NULL'))
    WHEN p_burst > 1 AND p_rate IS NULL THEN 'a burst needs a rate'
    WHEN p_concurrency IS NOT NULL AND p_concurrency < 1 THEN
      format('invalid concurrency %s: at least 1', p_concurrency)
    WHEN p_job = '' THEN 'the job class is empty'
    WHEN p_key_value = '' THEN 'the key value is empty'
  END;

-- What is wrong with a fair-share limit's weights, or NULL: a JSON object of key values and whole numbers
-- from 1 to 1000 (a key value left out weighs 1), on a fair-share limit only.
CREATE OR REPLACE FUNCTION prescient.weights_problem(p_weights jsonb, p_fair_share boolean)
  RETURNS text LANGUAGE sql IMMUTABLE
  RETURN CASE
    WHEN p_weights IS NULL THEN NULL
    WHEN jsonb_typeof(p_weights) <> 'object' THEN 'the weights must be a JSON object of key values and weights'
    WHEN NOT coalesce(p_fair_share, false) THEN 'weights apply to fair share: the limit has none'
    WHEN (SELECT count(*) FROM jsonb_object_keys(p_weights)) > 10000 THEN 'more than 10000 weights'
    ELSE (SELECT CASE WHEN w.key = '' THEN 'a weighted key value is empty'
                      WHEN octet_length(w.key) > 1024 THEN 'a weighted key value is longer than 1024 bytes'
                      ELSE format('the weight of %L must be a whole number from 1 to 1000, not %s', w.key, w.value) END
            FROM jsonb_each(p_weights) w
           WHERE w.key = '' OR octet_length(w.key) > 1024
              OR CASE WHEN jsonb_typeof(w.value) <> 'number' THEN true
                      ELSE w.value::numeric NOT BETWEEN 1 AND 1000 OR w.value::numeric <> trunc(w.value::numeric) END
           ORDER BY w.key LIMIT 1)
  END;

CREATE OR REPLACE FUNCTION prescient.fair_share_index(p_field text) RETURNS text
  LANGUAGE sql IMMUTABLE RETURN 'future_job_fair_' || left(md5(p_field), 16);

-- The indexes fair share claims by, one per payload field a fair-share limit names: made for the fields
-- in use, dropped for the others. Making one locks future_job against writes while it is built (a
-- plain CREATE INDEX: a function runs in a transaction, where CONCURRENTLY cannot).
CREATE OR REPLACE FUNCTION prescient.sync_fair_share_indexes() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_field text;
  v_index text;
BEGIN
  FOR v_field IN SELECT DISTINCT substr(key, 9) FROM prescient.flow_limit WHERE fair_share LOOP
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON prescient.future_job'
                   ' (next_check_at, (coalesce(payload ->> %L, %L)), priority, id) WHERE group_key IS NULL',
                   prescient.fair_share_index(v_field), v_field, '');
  END LOOP;
  FOR v_index IN
    SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'prescient' AND c.relkind = 'i' AND c.relname LIKE 'future_job_fair_%'
       AND c.relname NOT IN (SELECT prescient.fair_share_index(substr(key, 9))
                               FROM prescient.flow_limit WHERE fair_share) LOOP
    EXECUTE format('DROP INDEX prescient.%I', v_index);
  END LOOP;
END $$;
REVOKE EXECUTE ON FUNCTION prescient.sync_fair_share_indexes() FROM PUBLIC;

-- Creates or replaces the limit named p_name; returns 'created' or 'updated'. A change applies to the next
-- admission of every runner (each reads the list of limits once per slot it drains). p_weights: with fair
-- share, how many checks of a key value a claim takes for each one of a value of weight 1.
-- p_key `entity` is entity_name's word before migration 0054: taken for this release, with a warning
-- (SQLSTATE 01P01, deprecated_feature), and stored as entity_name; the next release refuses it.
CREATE OR REPLACE FUNCTION prescient.limit_set(
    p_name text, p_key text, p_rate integer DEFAULT NULL, p_per_seconds integer DEFAULT 1,
    p_burst integer DEFAULT 1, p_concurrency integer DEFAULT NULL, p_job text DEFAULT NULL,
    p_key_value text DEFAULT NULL, p_by text DEFAULT current_user, p_now timestamptz DEFAULT now(),
    p_fair_share boolean DEFAULT false, p_weights jsonb DEFAULT NULL)
  RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  v_key text := CASE WHEN p_key = 'entity' THEN 'entity_name' ELSE p_key END;
  v_problem text := coalesce(prescient.limit_problem(p_name, v_key, p_rate, p_per_seconds, p_burst,
                                                     p_concurrency, p_job, p_key_value, p_fair_share),
                             prescient.weights_problem(p_weights, p_fair_share));
  v_created boolean;
BEGIN
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  IF coalesce(p_by, '') = '' THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'updated_by is empty';
  END IF;
  IF p_key = 'entity' THEN
    RAISE WARNING USING ERRCODE = '01P01',
      MESSAGE = 'the flow key entity is deprecated: it is stored as entity_name; write entity_name, the next release refuses entity';
  END IF;
  INSERT INTO prescient.flow_limit AS l (name, key, job, key_value, rate, per_seconds, burst, concurrency,
                                         fair_share, weights, updated_at, updated_by)
  VALUES (p_name, v_key, p_job, p_key_value, p_rate, p_per_seconds, p_burst, p_concurrency,
          coalesce(p_fair_share, false), p_weights, p_now, p_by)
  ON CONFLICT (name) DO UPDATE
    SET key = EXCLUDED.key, job = EXCLUDED.job, key_value = EXCLUDED.key_value, rate = EXCLUDED.rate,
        per_seconds = EXCLUDED.per_seconds, burst = EXCLUDED.burst, concurrency = EXCLUDED.concurrency,
        fair_share = EXCLUDED.fair_share, weights = EXCLUDED.weights, updated_at = EXCLUDED.updated_at,
        updated_by = EXCLUDED.updated_by
  RETURNING (xmax = 0) INTO v_created;
  PERFORM prescient.sync_fair_share_indexes();
  RETURN CASE WHEN v_created THEN 'created' ELSE 'updated' END;
END $$;
REVOKE EXECUTE ON FUNCTION prescient.limit_set(text, text, integer, integer, integer, integer, text, text, text,
                                               timestamptz, boolean, jsonb) FROM PUBLIC;

-- Removes a limit (its state and counts go with it; the deferrals it recorded stay). False when none had
-- the name. Checks it deferred keep their times.
CREATE OR REPLACE FUNCTION prescient.limit_remove(p_name text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM prescient.flow_limit WHERE name = p_name;
  IF NOT FOUND THEN
    RETURN false;
  END IF;
  PERFORM prescient.sync_fair_share_indexes();
  RETURN true;
END $$;
REVOKE EXECUTE ON FUNCTION prescient.limit_remove(text) FROM PUBLIC;

-- The runner's admission of claimed checks that limits apply to. REQUIRES the caller's transaction to
-- hold the rows (the claim's FOR UPDATE); the runner writes the admitted checks' lease in the same
-- transaction, so a concurrency place is taken exactly when the admission commits.
-- Input: one element per (check, limit) pair in p_ids, p_limits, p_keys (the runner computes the key
-- values: engine/src/core/flow_rules.cpp, flow_key_of). Pairs of limits that no longer exist are ignored.
-- Rate (GCRA per limit and key value): each check is given the start its budget allows and the bucket
-- moves on by one interval, so starts are spaced by per_seconds / rate (burst - 1 of them may start at
-- once). A check whose start is within p_pace_us of now is admitted (the runner waits for its start); a
-- later one is deferred to exactly its start: it keeps that reservation and is not charged again (while
-- it is claimed no later than p_grace_us after it).
-- Concurrency: at most `concurrency` admitted checks hold a live lease per key value, and one call takes
-- at most p_places of them per key value (a runner that runs its checks one after another takes one);
-- the others wait p_wait_us and look again.
-- Returns every check of the pairs: admitted ones with the time they may start, deferred ones with the
-- limit that held them back and until when, and those passed on (a place is free, but this call took
-- its p_places) with neither: they stay due now for another runner. Deferred rows are moved (next_check_at, marked in
-- claimed_by), recorded in flow_deferral and counted in flow_figure.
CREATE OR REPLACE FUNCTION prescient.flow_admit(
    p_ids bigint[], p_limits text[], p_keys text[], p_now_us bigint, p_pace_us bigint, p_wait_us bigint,
    p_places integer, p_grace_us bigint)
  RETURNS TABLE (check_id bigint, start_us bigint, deferred_by text, until_us bigint)
  LANGUAGE plpgsql AS $$
DECLARE
  v_now timestamptz := prescient.at_us(p_now_us);
BEGIN
  -- The key values' state rows, made or locked by one statement, in one order (no deadlock between runners):
  -- a row that exists is locked by the conflict's DO UPDATE, which its WHERE keeps from writing. One
  -- statement, so that a row retention forgets (forget_idle_flow_rows) between a look and a lock is never
  -- missed: the insert waits for the delete and makes the row again.
  INSERT INTO prescient.flow_state AS s (limit_name, key_value)
  SELECT DISTINCT p.l, p.k FROM unnest(p_limits, p_keys) AS p(l, k)
    JOIN prescient.flow_limit fl ON fl.name = p.l
   ORDER BY 1, 2
  ON CONFLICT (limit_name, key_value) DO UPDATE SET tat = s.tat WHERE false;

  RETURN QUERY
  WITH pair AS (
    SELECT p.id, p.l AS limit_name, p.k AS key_value, fl.rate, fl.per_seconds, fl.burst, fl.concurrency,
           s.tat, f.next_check_at,
           -- deferred before by a limit: its rate budget is reserved already, unless its time passed
           -- more than p_grace_us ago (no runner claimed it in time): honoured, such reservations would
           -- all start at once; charged again, they queue behind the others
           coalesce(f.claimed_by LIKE 'prescient.flow:%', false)
             AND f.next_check_at >= v_now - p_grace_us * interval '1 microsecond' AS reserved,
           f.claimed_by AS marked
      FROM unnest(p_ids, p_limits, p_keys) AS p(id, l, k)
      JOIN prescient.flow_limit fl ON fl.name = p.l
      JOIN prescient.flow_state s ON s.limit_name = p.l AND s.key_value = p.k
      JOIN prescient.future_job f ON f.id = p.id),
  charged AS (  -- rate pairs of checks without a reservation, in id order within their key value
    SELECT pr.*, row_number() OVER (PARTITION BY pr.limit_name, pr.key_value ORDER BY pr.id) - 1 AS n,
           make_interval(secs => pr.per_seconds::double precision / pr.rate) AS step
      FROM pair pr WHERE pr.rate IS NOT NULL AND NOT pr.reserved),
  rate_start AS (
    SELECT c.id, c.limit_name, c.key_value,
           greatest(v_now, greatest(c.tat, v_now) + c.n * c.step - (c.burst - 1) * c.step) AS start
      FROM charged c),
  bucket AS (  -- the buckets move on by one interval per check charged, admitted or deferred
    UPDATE prescient.flow_state s
       SET tat = greatest(s.tat, v_now) + b.charged * b.step
      FROM (SELECT c.limit_name, c.key_value, count(*) AS charged, min(c.step) AS step
              FROM charged c GROUP BY 1, 2) b
     WHERE s.limit_name = b.limit_name AND s.key_value = b.key_value
    RETURNING 1),
  checks AS (  -- each check's start: the latest its rate limits allow (a reserved one: its time)
    SELECT pr.id, bool_or(pr.reserved) AS reserved, min(pr.marked) AS marked,
           greatest(v_now, max(pr.next_check_at) FILTER (WHERE pr.reserved),
                    max(r.start)) AS start,
           (array_agg(r.limit_name ORDER BY r.start DESC) FILTER (WHERE r.start IS NOT NULL))[1] AS rate_limit,
           (array_agg(r.key_value ORDER BY r.start DESC) FILTER (WHERE r.start IS NOT NULL))[1] AS rate_key
      FROM pair pr LEFT JOIN rate_start r ON r.id = pr.id AND r.limit_name = pr.limit_name
     GROUP BY pr.id),
  running AS (  -- live leases per concurrency key value
    SELECT pr.limit_name, pr.key_value, min(pr.concurrency) AS concurrency,
           (SELECT count(*) FROM prescient.flow_lease fl2 JOIN prescient.future_job f2 ON f2.id = fl2.check_id
             WHERE fl2.limit_name = pr.limit_name AND fl2.key_value = pr.key_value
               AND f2.claim_token IS NOT NULL AND f2.claimed_until > v_now) AS running
      FROM pair pr WHERE pr.concurrency IS NOT NULL
     GROUP BY pr.limit_name, pr.key_value),
  ranked AS (  -- concurrency pairs of checks whose rate lets them start now, ranked by start
    SELECT pr.id, pr.limit_name, pr.key_value, ru.concurrency - ru.running AS room, p_places AS places,
           row_number() OVER (PARTITION BY pr.limit_name, pr.key_value ORDER BY c.start, pr.id) AS rank
      FROM pair pr JOIN checks c ON c.id = pr.id
      JOIN running ru ON ru.limit_name = pr.limit_name AND ru.key_value = pr.key_value
     WHERE c.start <= v_now + p_pace_us * interval '1 microsecond'),
  place AS (  -- has_place: admitted here; else in_room: a place is free, for another runner to take
    SELECT r.id, r.limit_name, r.key_value, r.rank <= least(r.room, r.places) AS has_place,
           r.rank <= r.room AS in_room
      FROM ranked r),
  verdict AS (
    SELECT c.id, c.start, c.marked, c.rate_limit,
           c.start <= v_now + p_pace_us * interval '1 microsecond'
             AND NOT EXISTS (SELECT FROM place pl WHERE pl.id = c.id AND NOT pl.has_place) AS admitted,
           c.start <= v_now + p_pace_us * interval '1 microsecond'
             AND NOT EXISTS (SELECT FROM place pl WHERE pl.id = c.id AND NOT pl.in_room) AS passed,
           coalesce((SELECT pl.limit_name FROM place pl WHERE pl.id = c.id AND NOT pl.has_place
                      ORDER BY pl.limit_name LIMIT 1), c.rate_limit, 'flow') AS held_by,
           coalesce((SELECT pl.key_value FROM place pl WHERE pl.id = c.id AND NOT pl.has_place
                      ORDER BY pl.limit_name LIMIT 1), c.rate_key, '') AS held_key,
           EXISTS (SELECT FROM place pl WHERE pl.id = c.id AND NOT pl.has_place) AS waits_for_place
      FROM checks c),
  taken AS (  -- the admitted checks' concurrency places
    INSERT INTO prescient.flow_lease (limit_name, key_value, check_id)
    SELECT pr.limit_name, pr.key_value, pr.id FROM pair pr JOIN verdict v ON v.id = pr.id
     WHERE v.admitted AND pr.concurrency IS NOT NULL
    ON CONFLICT DO NOTHING RETURNING 1),
  deferred AS (
    SELECT v.id, v.held_by, v.held_key, v.marked,
           CASE WHEN v.waits_for_place
                THEN greatest(v.start, v_now + p_wait_us * interval '1 microsecond') ELSE v.start END AS until
      FROM verdict v WHERE NOT v.admitted AND NOT v.passed),
  moved AS (
    UPDATE prescient.future_job f
       SET next_check_at = greatest(f.next_check_at, d.until), claimed_by = 'prescient.flow:' || d.held_by,
           claimed_until = NULL, claim_token = NULL
      FROM deferred d WHERE f.id = d.id
    RETURNING f.id),
  passed_on AS (  -- left for another runner, due at its start (within the slot, where a waiting worker
                  -- sees it), keeping the rate reservation it was charged, if any
    UPDATE prescient.future_job f
       SET next_check_at = greatest(f.next_check_at, v.start),
           claimed_by = coalesce('prescient.flow:' || v.rate_limit, f.claimed_by)
      FROM verdict v WHERE f.id = v.id AND v.passed AND NOT v.admitted
    RETURNING f.id),
  noted AS (  -- a check's first deferral by a limit (not each look again while it waits)
    INSERT INTO prescient.flow_deferral (check_id, deferred_at, limit_name, key_value, until)
    SELECT d.id, v_now, d.held_by, d.held_key, d.until FROM deferred d
     WHERE d.marked IS DISTINCT FROM 'prescient.flow:' || d.held_by
    RETURNING limit_name, key_value),
  counted AS (
    INSERT INTO prescient.flow_figure AS ff (limit_name, key_value, deferred, last_deferred_at)
    SELECT n.limit_name, n.key_value, count(*), v_now FROM noted n GROUP BY 1, 2
    ON CONFLICT (limit_name, key_value) DO UPDATE
      SET deferred = ff.deferred + EXCLUDED.deferred, last_deferred_at = EXCLUDED.last_deferred_at
    RETURNING 1)
  SELECT v.id, CASE WHEN v.admitted THEN prescient.us(v.start) END, d.held_by, prescient.us(d.until)
    FROM verdict v LEFT JOIN deferred d ON d.id = v.id;  -- the writing CTEs run whether read or not

  -- Places of checks no longer running, for the key values just admitted.
  DELETE FROM prescient.flow_lease fl
   WHERE (fl.limit_name, fl.key_value) IN (SELECT p.l, p.k FROM unnest(p_limits, p_keys) AS p(l, k))
     AND NOT EXISTS (SELECT FROM prescient.future_job f WHERE f.id = fl.check_id
                       AND f.claim_token IS NOT NULL AND f.claimed_until > v_now)
     AND fl.check_id <> ALL (p_ids);
END $$;
REVOKE EXECUTE ON FUNCTION prescient.flow_admit(bigint[], text[], text[], bigint, bigint, bigint, integer,
                                                bigint) FROM PUBLIC;

-- Retention of flow control's own rows (apply_retention's turn: db/retention.cpp), whatever the settings:
-- up to p_limit each of the key values' state rows that hold nothing a missing row would not (a rate's
-- bucket full again for a day: its tat a day past; a concurrency limit's row, only a lock, whose tat stays
-- -infinity), and of places whose check's lease ended a day ago or that is gone. A day, because a runner's
-- clock may differ from this one by minutes (--max-clock-offset). flow_admit makes a state row again when it
-- needs one. How many rows went.
CREATE OR REPLACE FUNCTION prescient.forget_idle_flow_rows(p_now timestamptz, p_limit integer) RETURNS bigint
  LANGUAGE plpgsql AS $$
DECLARE
  v_states bigint;
  v_places bigint;
BEGIN
  WITH gone AS (
    DELETE FROM prescient.flow_state s WHERE (s.limit_name, s.key_value) IN (
      SELECT i.limit_name, i.key_value FROM prescient.flow_state i WHERE i.tat < p_now - interval '1 day'
       LIMIT p_limit FOR UPDATE SKIP LOCKED)
    RETURNING 1)
  SELECT count(*) INTO v_states FROM gone;
  WITH gone AS (
    DELETE FROM prescient.flow_lease l WHERE (l.limit_name, l.key_value, l.check_id) IN (
      SELECT i.limit_name, i.key_value, i.check_id FROM prescient.flow_lease i
       WHERE NOT EXISTS (SELECT FROM prescient.future_job f WHERE f.id = i.check_id AND f.claim_token IS NOT NULL
                           AND f.claimed_until >= p_now - interval '1 day')
       LIMIT p_limit FOR UPDATE SKIP LOCKED)
    RETURNING 1)
  SELECT count(*) INTO v_places FROM gone;
  RETURN v_states + v_places;
END $$;
