-- The class registry (docs/design.md, "The class registry"): prescient.job_class holds every job class this
-- database knows. migrate declares the built-in ones (migration 0034), every runner (daemon, run-slot, sweep)
-- the classes it loads at its start, `prescient jobs add` one ahead of its runner or for workers in another
-- language; a class stays known until `prescient jobs forget`. Enqueue refuses a class that is not a row
-- (class_problem, unknown_classes: sql/functions/030_enqueue_rules.sql). The runner's role and the schema
-- owner write it; a client reads it (grants: migration 0034).

-- A runner (or a worker, p_runs_in 'worker') declares the classes it loads: p_jobs[i] from p_origins[i]
-- ('built-in', a plugin's file). A new class is added; a known one is seen now, and takes the origin and the
-- runs_in of what runs it now (a class declared ahead keeps who declared it). Returns how many were new.
CREATE OR REPLACE FUNCTION prescient.declare_job_classes(
    p_jobs text[], p_origins text[], p_by text DEFAULT current_user, p_now timestamptz DEFAULT now(),
    p_runs_in text DEFAULT 'runner')
  RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_new integer;
  v_problem text;
BEGIN
  IF coalesce(cardinality(p_jobs), 0) <> coalesce(cardinality(p_origins), 0) THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('p_origins has %s elements, p_jobs %s: one origin a class', coalesce(cardinality(p_origins), 0),
                       coalesce(cardinality(p_jobs), 0));
  END IF;
  IF p_runs_in IS NULL OR p_runs_in NOT IN ('runner', 'worker') THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('runs_in must be runner or worker, not %L', p_runs_in);
  END IF;
  IF coalesce(p_by, '') = '' THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'declared_by is empty';
  END IF;
  IF EXISTS (SELECT FROM unnest(p_jobs) j WHERE coalesce(j, '') = '' OR octet_length(j) > 1024) THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'a job class is empty or longer than 1024 bytes';
  END IF;
  v_problem := (SELECT prescient.name_problem('the job class', j) FROM unnest(p_jobs) j
                 WHERE prescient.name_problem('the job class', j) IS NOT NULL LIMIT 1);
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  WITH up AS (
    INSERT INTO prescient.job_class AS c (job, runs_in, origin, declared_at, declared_by, seen_at)
    SELECT DISTINCT ON (u.job) u.job, p_runs_in, coalesce(u.origin, p_runs_in), p_now, p_by, p_now
      FROM unnest(p_jobs, p_origins) AS u(job, origin)
    ON CONFLICT (job) DO UPDATE
      SET seen_at = EXCLUDED.seen_at, runs_in = EXCLUDED.runs_in,
          -- A built-in stays built-in: a plugin cannot register a built-in's name.
          origin = CASE WHEN c.origin = 'built-in' THEN c.origin ELSE EXCLUDED.origin END
    RETURNING (xmax = 0) AS inserted)
  SELECT count(*) FILTER (WHERE inserted) INTO v_new FROM up;
  RETURN v_new;
END $$;

-- `prescient jobs add CLASS [--worker]`: declares a class ahead of its runner (origin 'declared'), or run by
-- workers in another language (runs_in and origin 'worker'). 'added', or 'known' when it is a row already
-- (left as it is). PR400 for an empty name or one over 1024 bytes.
CREATE OR REPLACE FUNCTION prescient.job_class_add(
    p_job text, p_worker boolean DEFAULT false, p_by text DEFAULT current_user, p_now timestamptz DEFAULT now())
  RETURNS text LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF coalesce(p_job, '') = '' THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'the job class is empty';
  ELSIF octet_length(p_job) > 1024 THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('the job class is %s bytes long (at most 1024)', octet_length(p_job));
  ELSIF prescient.name_problem('the job class', p_job) IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = prescient.name_problem('the job class', p_job);
  ELSIF coalesce(p_by, '') = '' THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'declared_by is empty';
  END IF;
  INSERT INTO prescient.job_class (job, runs_in, origin, declared_at, declared_by)
  VALUES (p_job, CASE WHEN p_worker THEN 'worker' ELSE 'runner' END,
          CASE WHEN p_worker THEN 'worker' ELSE 'declared' END, p_now, p_by)
  ON CONFLICT (job) DO NOTHING;
  RETURN CASE WHEN FOUND THEN 'added' ELSE 'known' END;
END $$;

-- `prescient jobs forget CLASS`: the class is no longer known, and enqueue refuses it. Refused (PR400) for a
-- built-in class, and for a class that still has pending checks or a schedule that has not ended: they
-- would wait for a class nobody declares (cancel or remove them first). PR404 for a class that is not a row.
-- A runner that loads the class declares it again at its next start. Not fenced against an enqueue of the
-- class committing at the same moment (which read the row before it went): the check it writes is pending,
-- and runs if a runner loads its class.
CREATE OR REPLACE FUNCTION prescient.job_class_forget(p_job text)
  RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_class prescient.job_class;
  v_pending bigint;
  v_schedules bigint;
BEGIN
  SELECT * INTO v_class FROM prescient.job_class c WHERE c.job = p_job FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PR404', MESSAGE = format('no job class %L', p_job);
  END IF;
  IF v_class.origin = 'built-in' THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('job class %L is built in: it cannot be forgotten', p_job);
  END IF;
  SELECT count(*) INTO v_pending FROM prescient.future_job f WHERE f.job = p_job;
  IF v_pending > 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('job class %L has %s pending check(s): cancel them first', p_job, v_pending);
  END IF;
  SELECT count(*) INTO v_schedules FROM prescient.cron_schedule s WHERE s.job = p_job AND s.ended_at IS NULL;
  IF v_schedules > 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('job class %L has %s schedule(s): remove them first', p_job, v_schedules);
  END IF;
  DELETE FROM prescient.job_class c WHERE c.job = p_job;
END $$;

-- The fields of a class's policy: the one list of them. set_job_policy's p_clear takes these. The registry's
-- columns, the arguments of policy_problem, set_job_policy and declare_worker_class, the C++ structs, the CLI,
-- the dashboard, the worker clients' declarations and docs/sql-api.md must name the same: a db test compares
-- each with it and names the place that differs (tests/db/policy_fields_test.cpp).
CREATE OR REPLACE FUNCTION prescient.job_policy_fields() RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN ARRAY['max_checks', 'max_attempts', 'backoff', 'backoff_max', 'timeout'];

-- Seconds of a policy's duration, or its refusal: at least a second, whole seconds.
CREATE OR REPLACE FUNCTION prescient.policy_seconds_problem(p_field text, p_value interval)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN p_value IS NULL THEN NULL
    WHEN p_value < interval '1 second'
      THEN format('%s %s is under a second', p_field, prescient.duration_text(p_value))
    WHEN extract(epoch FROM p_value) <> floor(extract(epoch FROM p_value))
      THEN format('%s %s is not a whole number of seconds', p_field, prescient.duration_text(p_value))
  END;

-- What is wrong with the values of a policy, a class's or a check's, or NULL (a NULL value is not set).
CREATE OR REPLACE FUNCTION prescient.policy_problem(
    p_max_checks integer, p_max_attempts integer, p_backoff interval, p_backoff_max interval, p_timeout interval)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN p_max_checks < 0 THEN format('max_checks %s is negative (0: no limit)', p_max_checks)
    WHEN p_max_attempts < 1 THEN format('max_attempts %s is under 1', p_max_attempts)
    ELSE coalesce(prescient.policy_seconds_problem('backoff', p_backoff),
                  prescient.policy_seconds_problem('backoff_max', p_backoff_max),
                  prescient.policy_seconds_problem('timeout', p_timeout)) END;

-- `prescient jobs set CLASS ...`: sets a class's policy, the columns of its row (the runner reads them,
-- before the class's C++ JobPolicy and the config file's defaults). A NULL argument leaves its field as it is;
-- p_clear names the fields to clear (not set here: the runner falls back), among max_checks, max_attempts,
-- backoff, backoff_max and timeout. max_checks 0 means no limit. Refused with PR400 and one line naming the
-- value: max_checks under 0, max_attempts under 1, a duration under a second or of a fraction of one, a
-- backoff_max under the backoff (as they stand after the change), a field both set and cleared, a field
-- p_clear does not know; PR404 for a class that is not a row. Returns the row as it is now.
CREATE OR REPLACE FUNCTION prescient.set_job_policy(
    p_job text, p_max_checks integer DEFAULT NULL, p_max_attempts integer DEFAULT NULL,
    p_backoff interval DEFAULT NULL, p_backoff_max interval DEFAULT NULL, p_timeout interval DEFAULT NULL,
    p_by text DEFAULT current_user, p_now timestamptz DEFAULT now(), p_clear text[] DEFAULT '{}')
  RETURNS prescient.job_class LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_row prescient.job_class;
  v_problem text;
  v_clear text[] := coalesce(p_clear, '{}');
  v_fields text[] := prescient.job_policy_fields();
BEGIN
  SELECT f INTO v_problem
    FROM unnest(v_clear) f
   WHERE f IS NULL OR f <> ALL (v_fields) LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('cannot clear %L: the fields are %s and %s', v_problem,
                       array_to_string(v_fields[1:cardinality(v_fields) - 1], ', '), v_fields[cardinality(v_fields)]);
  END IF;
  v_problem := prescient.policy_problem(p_max_checks, p_max_attempts, p_backoff, p_backoff_max, p_timeout);
  IF v_problem IS NULL THEN
    SELECT format('%s is both set and cleared', f) INTO v_problem
      FROM unnest(v_clear) f
     WHERE (f = 'max_checks' AND p_max_checks IS NOT NULL) OR (f = 'max_attempts' AND p_max_attempts IS NOT NULL)
        OR (f = 'backoff' AND p_backoff IS NOT NULL) OR (f = 'backoff_max' AND p_backoff_max IS NOT NULL)
        OR (f = 'timeout' AND p_timeout IS NOT NULL)
     LIMIT 1;
  END IF;
  IF v_problem IS NULL AND coalesce(p_by, '') = '' THEN v_problem := 'policy_updated_by is empty'; END IF;
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  SELECT * INTO v_row FROM prescient.job_class c WHERE c.job = p_job FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PR404',
      MESSAGE = format('no job class %L (declare it with prescient jobs add)', p_job);
  END IF;
  v_row.max_checks := CASE WHEN 'max_checks' = ANY (v_clear) THEN NULL ELSE coalesce(p_max_checks, v_row.max_checks) END;
  v_row.max_attempts := CASE WHEN 'max_attempts' = ANY (v_clear) THEN NULL
                             ELSE coalesce(p_max_attempts, v_row.max_attempts) END;
  v_row.backoff_seconds := CASE WHEN 'backoff' = ANY (v_clear) THEN NULL
                                ELSE coalesce(extract(epoch FROM p_backoff)::bigint, v_row.backoff_seconds) END;
  v_row.backoff_max_seconds := CASE WHEN 'backoff_max' = ANY (v_clear) THEN NULL
                                    ELSE coalesce(extract(epoch FROM p_backoff_max)::bigint, v_row.backoff_max_seconds) END;
  v_row.timeout_seconds := CASE WHEN 'timeout' = ANY (v_clear) THEN NULL
                                ELSE coalesce(extract(epoch FROM p_timeout)::bigint, v_row.timeout_seconds) END;
  IF v_row.backoff_max_seconds < v_row.backoff_seconds THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('backoff_max %s is under the backoff %s',
                       prescient.duration_text(v_row.backoff_max_seconds * interval '1 second'),
                       prescient.duration_text(v_row.backoff_seconds * interval '1 second'));
  END IF;
  UPDATE prescient.job_class c
     SET max_checks = v_row.max_checks, max_attempts = v_row.max_attempts, backoff_seconds = v_row.backoff_seconds,
         backoff_max_seconds = v_row.backoff_max_seconds, timeout_seconds = v_row.timeout_seconds,
         policy_updated_at = p_now, policy_updated_by = p_by
   WHERE c.job = p_job
  RETURNING * INTO v_row;
  RETURN v_row;
END $$;

REVOKE EXECUTE ON FUNCTION
  prescient.declare_job_classes(text[], text[], text, timestamptz, text),
  prescient.job_class_add(text, boolean, text, timestamptz),
  prescient.job_class_forget(text),
  prescient.set_job_policy(text, integer, integer, interval, interval, interval, text, timestamptz, text[])
  FROM PUBLIC;

-- A worker's own declaration of its class (docs/workers.md, "Declaring a worker class"), from prescient_worker:
-- the class becomes a worker class if no one declared it ('added'; 'known' when it is one already), and takes
-- the policy given (a NULL field is left as it is). A runner's class is refused: a worker never takes one
-- over, nor sets its policy.
CREATE OR REPLACE FUNCTION prescient.declare_worker_class(
    p_job text, p_max_checks integer DEFAULT NULL, p_max_attempts integer DEFAULT NULL,
    p_backoff interval DEFAULT NULL, p_backoff_max interval DEFAULT NULL, p_timeout interval DEFAULT NULL,
    p_by text DEFAULT current_user, p_now timestamptz DEFAULT now())
  RETURNS text LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_status text := prescient.job_class_add(p_job, true, p_by, p_now);
BEGIN
  IF EXISTS (SELECT FROM prescient.job_class c WHERE c.job = p_job AND c.runs_in <> 'worker') THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('job class %L is run by the runner, not by workers: '
      'a worker cannot declare it or set its policy', p_job);
  END IF;
  IF coalesce(p_max_checks, p_max_attempts) IS NOT NULL
     OR coalesce(p_backoff, p_backoff_max, p_timeout) IS NOT NULL THEN
    PERFORM prescient.set_job_policy(p_job, p_max_checks, p_max_attempts, p_backoff, p_backoff_max, p_timeout,
                                     p_by, p_now);
  END IF;
  RETURN v_status;
END $$;
REVOKE EXECUTE ON FUNCTION prescient.declare_worker_class(text, integer, integer, interval, interval, interval, text,
                                                          timestamptz) FROM PUBLIC;
