-- Recurring schedules from any language (docs/sql-api.md). A schedule is a row of prescient.cron_schedule
-- and, while it is active, one pending check of class cron (job key 'cron:<id>') whose payload carries
-- the whole definition: firing reads nothing but the check, and writes its bookkeeping (the last
-- occurrence) with the settlement, in the check's new payload. Every change here rewrites that check in
-- the same transaction as the definition, under the check's row lock: a runner firing the old version
-- holds the lock until it has settled, and a check claimed after the change carries the new version.
-- What SQL can judge is refused here with PR400 (PR404: no such schedule, PR409: the id is taken or the
-- version moved on); what only the runner can (a field spec out of range, a spec that never fires, a zone
-- the runner's tzdata lacks) marks the schedule invalid, with the reason, when its check first runs.

-- The payload of a schedule's check. last_us: the last occurrence fired (NULL: none yet); from_us: only
-- occurrences after it fire (an update or a resume takes effect there; NULL: from the anchor).
-- window_seconds: each occurrence fires at the schedule's place in that window; jitter_seconds: at an
-- offset within it of its own, from the schedule's id and the occurrence (jobs/cron_job.cpp).
CREATE OR REPLACE FUNCTION prescient.cron_check_payload_of(
    p_id text, p_version integer, p_spec text, p_time_zone text, p_job text, p_payload jsonb, p_catch_up text,
    p_deadline_seconds bigint, p_anchor_us bigint, p_last_us bigint, p_from_us bigint, p_window_seconds bigint,
    p_jitter_seconds bigint)
  RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE
  RETURN jsonb_build_object(
    'schedule', p_id, 'version', p_version, 'spec', p_spec, 'time_zone', p_time_zone, 'job', p_job,
    'payload', p_payload, 'catch_up', p_catch_up, 'deadline_seconds', p_deadline_seconds,
    'anchor_us', p_anchor_us, 'last_us', p_last_us, 'from_us', p_from_us, 'window_seconds', p_window_seconds,
    'jitter_seconds', p_jitter_seconds);

-- What the check carries of a schedule's overlap policy, bounds and DST policy, keys only for what is set:
-- overlap (not allow), start_us, end_us, max_runs, runs (the occurrences fired so far, counted only towards
-- a max_runs; the runner counts on in the check's payload, the row holds it while there is no check),
-- dst_repeated and dst_missing (not auto), calendar and, with one, when_closed.
CREATE OR REPLACE FUNCTION prescient.cron_policy_payload(s prescient.cron_schedule)
  RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE
  RETURN jsonb_strip_nulls(jsonb_build_object(
    'overlap', nullif(s.overlap, 'allow'), 'start_us', prescient.us(s.start_at), 'end_us', prescient.us(s.end_at),
    'max_runs', s.max_runs, 'runs', CASE WHEN s.max_runs IS NOT NULL THEN s.run_count END,
    'dst_repeated', nullif(s.dst_repeated, 'auto'), 'dst_missing', nullif(s.dst_missing, 'auto'),
    'calendar', s.calendar, 'when_closed', CASE WHEN s.calendar IS NOT NULL THEN s.when_closed END));

-- The same for a stored schedule, with its policy and bounds.
CREATE OR REPLACE FUNCTION prescient.cron_check_payload(s prescient.cron_schedule, p_last_us bigint, p_from_us bigint)
  RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE
  RETURN prescient.cron_check_payload_of(s.id, s.version, s.spec, s.time_zone, s.job, s.payload, s.catch_up,
                                         s.deadline_seconds, prescient.us(s.anchor_at), p_last_us, p_from_us,
                                         s.window_seconds, s.jitter_seconds)
         || prescient.cron_policy_payload(s);

-- The priority of schedule p_id (docs/design.md, "Priorities"): its check's, its backfills' and its
-- occurrences' (5 for an unknown id).
CREATE OR REPLACE FUNCTION prescient.cron_priority(p_id text) RETURNS integer
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN coalesce((SELECT s.priority FROM prescient.cron_schedule s WHERE s.id = p_id), 5);

-- Whether PostgreSQL knows the zone. It knows a few names the runner's tzdata may not (abbreviations,
-- POSIX strings): those are caught by the runner, which marks the schedule invalid.
CREATE OR REPLACE FUNCTION prescient.time_zone_known(p_zone text) RETURNS boolean
  LANGUAGE plpgsql STABLE AS $$
BEGIN
  PERFORM now() AT TIME ZONE p_zone;
  RETURN true;
EXCEPTION WHEN invalid_parameter_value THEN
  RETURN false;
END $$;

-- 'time_zone: ...' when PostgreSQL does not know the zone, else NULL.
CREATE OR REPLACE FUNCTION prescient.time_zone_problem(p_zone text) RETURNS text
  LANGUAGE sql STABLE
  RETURN CASE WHEN NOT prescient.time_zone_known(p_zone)
    THEN format('time_zone: unknown time zone %L (use an IANA name such as UTC or Europe/Berlin)', p_zone) END;

-- What SQL can tell is wrong with a definition, in three parts, each 'field: why' or NULL. Bulk add
-- judges the spec and the zone once per distinct value (a million schedules share a few specs, and the
-- spec's regular expression is the costliest test); cron_definition_problem is all of them in order.
CREATE OR REPLACE FUNCTION prescient.cron_spec_problem(p_spec text) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN coalesce(p_spec, '') = '' THEN 'spec: the cron spec is empty'
    WHEN octet_length(p_spec) > 1024 THEN format('spec: %s bytes long (at most 1024)', octet_length(p_spec))
    WHEN p_spec !~ '^\s*(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@(every|at)\s+\S+|[0-9A-Za-z*/,-]+(\s+[0-9A-Za-z*/,-]+){4,5})\s*$'
      THEN format('spec: %L is not a cron spec (5 or 6 fields, or @yearly, @monthly, @weekly, @daily, @hourly, '
                  '@every DURATION, @at TIME)', p_spec)
  END;

-- The zone's name (whether PostgreSQL knows it is time_zone_problem's, which costs more).
CREATE OR REPLACE FUNCTION prescient.cron_zone_name_problem(p_time_zone text) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN coalesce(p_time_zone, '') = '' THEN 'time_zone: empty'
    WHEN octet_length(p_time_zone) > 1024 OR p_time_zone !~ '^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$'
      THEN format('time_zone: %L is not a time zone name (use an IANA name such as UTC or Europe/Berlin)',
                  left(p_time_zone, 64))
  END;

-- The earliest a new schedule's first occurrence can be, for a check armed without it (the runner finds it
-- there, firing nothing): a spec without a seconds field (5 fields, or @yearly ... @hourly) fires only on whole
-- minutes, so not before the minute after p_now (strictly after it, as the first occurrence is); any other
-- (6 fields, @every, @at, or no spec at all) may fire at any second: p_now. Armed at the boundary after
-- p_now instead, every schedule added from SQL was due in the very next slot: on a grid finer than a
-- minute, an adding transaction that outlasted that boundary (now() is its start) committed checks the
-- runner had already fired past, and the daemon's sweep caught them all up as overdue. The field order and
-- the forms are cron_spec_problem's; date_bin from the epoch is the UTC minute (every zone's offset is whole
-- minutes).
CREATE OR REPLACE FUNCTION prescient.cron_first_possible(p_spec text, p_now timestamptz) RETURNS timestamptz
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN p_spec ~ '^\s*(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|[0-9A-Za-z*/,-]+(\s+[0-9A-Za-z*/,-]+){4})\s*$'
      THEN date_bin(interval '1 minute', p_now, timestamptz 'epoch') + interval '1 minute'
    ELSE p_now
  END;

-- The fields judged item by item: id, job, payload, catch-up, deadline.
CREATE OR REPLACE FUNCTION prescient.cron_item_problem(
    p_id text, p_job text, p_payload jsonb, p_catch_up text, p_deadline_seconds bigint)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN coalesce(p_id, '') = '' THEN 'id: the schedule id is empty'
    WHEN octet_length(p_id) > 1024 THEN format('id: %s bytes long (at most 1024)', octet_length(p_id))
    WHEN prescient.name_problem('the schedule id', p_id) IS NOT NULL
      THEN 'id: ' || prescient.name_problem('the schedule id', p_id)
    WHEN coalesce(p_job, '') = '' THEN 'job: the job class is empty'
    WHEN octet_length(p_job) > 1024 THEN format('job: %s bytes long (at most 1024)', octet_length(p_job))
    WHEN p_job = 'cron' THEN 'job: a schedule cannot run the cron class itself'
    WHEN p_payload IS NULL OR jsonb_typeof(p_payload) <> 'object' THEN 'payload: must be a JSON object'
    WHEN p_catch_up IS NULL OR p_catch_up NOT IN ('one', 'all', 'none')
      THEN format('catch_up: %L is not a policy (use one, all or none)', left(p_catch_up, 64))
    WHEN p_deadline_seconds < 1 THEN 'deadline_seconds: must be at least 1'
  END;

-- A schedule's window or jitter (docs/schedules.md), or NULL: each from 1 second to the horizon, and not
-- both (the one spreads schedules evenly, the other each occurrence at random: they would add up).
CREATE OR REPLACE FUNCTION prescient.cron_spread_problem(p_window_seconds bigint, p_jitter_seconds bigint,
                                                         p_max_horizon_seconds bigint)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN p_window_seconds < 1 THEN format('window_seconds: %s is not a window (at least 1)', p_window_seconds)
    WHEN p_window_seconds > p_max_horizon_seconds
      THEN format('window_seconds: %s is over the horizon (%s)', p_window_seconds, p_max_horizon_seconds)
    WHEN p_jitter_seconds < 1 THEN format('jitter_seconds: %s is not a jitter (at least 1)', p_jitter_seconds)
    WHEN p_jitter_seconds > p_max_horizon_seconds
      THEN format('jitter_seconds: %s is over the horizon (%s)', p_jitter_seconds, p_max_horizon_seconds)
    WHEN p_window_seconds IS NOT NULL AND p_jitter_seconds IS NOT NULL
      THEN 'jitter_seconds: a schedule has a window or a jitter, not both'
  END;

-- All of the above for one definition, or NULL. The zone is checked apart (see time_zone_known).
CREATE OR REPLACE FUNCTION prescient.cron_definition_problem(
    p_id text, p_spec text, p_time_zone text, p_job text, p_payload jsonb, p_catch_up text,
    p_deadline_seconds bigint)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN coalesce(prescient.cron_item_problem(p_id, p_job, p_payload, p_catch_up, p_deadline_seconds),
                  prescient.cron_spec_problem(p_spec), prescient.cron_zone_name_problem(p_time_zone));

-- What is wrong with a schedule's overlap policy and bounds as a whole (each field alone is judged by
-- cron_field_problem), or NULL. An end_at not after p_now is refused only when it is being set (p_end_set):
-- a schedule that ended by its end_at may still be changed otherwise.
CREATE OR REPLACE FUNCTION prescient.cron_policy_problem(s prescient.cron_schedule, p_end_set boolean,
                                                         p_now timestamptz)
  RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN s.overlap <> 'allow' AND s.job = 'emit'
      THEN format('overlap: %s is for schedules of a job class; emit publishes events, which do not overlap',
                  s.overlap)
    WHEN s.end_at <= s.start_at
      THEN format('end_at: %s is not after start_at %s', prescient.iso(s.end_at), prescient.iso(s.start_at))
    WHEN p_end_set AND s.end_at <= p_now
      THEN format('end_at: %s is not after now (%s)', prescient.iso(s.end_at), prescient.iso(p_now))
    WHEN s.when_closed = 'move' AND s.calendar IS NULL
      THEN 'when_closed: move needs a calendar whose next opening to move to'
  END;

-- 'not a time ...' when p_text is not a time PostgreSQL reads (an ISO 8601 time with an offset, such as
-- 2026-12-01T00:00:00Z), else NULL.
CREATE OR REPLACE FUNCTION prescient.time_text_problem(p_text text) RETURNS text
  LANGUAGE plpgsql STABLE AS $$
BEGIN
  PERFORM p_text::timestamptz;
  RETURN CASE WHEN p_text IN ('infinity', '-infinity') THEN format('%L is not a time', p_text) END;
EXCEPTION WHEN datetime_field_overflow OR invalid_datetime_format OR invalid_parameter_value THEN
  RETURN format('%L is not a time (use ISO 8601 with an offset, such as 2026-12-01T00:00:00Z)', left(p_text, 64));
END $$;

-- The fields of a schedule that are not parameters of cron_add_arrays but keys of its p_options (and
-- fields of cron_add_many's items and cron_update's changes like the others).
CREATE OR REPLACE FUNCTION prescient.cron_option_keys() RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN ARRAY['overlap', 'start_at', 'end_at', 'max_runs', 'priority', 'pause_after_failures', 'dst_repeated',
               'dst_missing', 'calendar', 'when_closed'];

-- What is wrong with one field of a schedule given as JSON (an item of cron_add_many, a change of
-- cron_update, an option), or NULL. Each test is a WHEN of its own: only CASE fixes the order in which
-- they run, and the numeric casts must come after the type tests.
CREATE OR REPLACE FUNCTION prescient.cron_field_problem(p_key text, p_value jsonb) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN p_key NOT IN ('id', 'spec', 'time_zone', 'job', 'payload', 'catch_up', 'deadline_seconds', 'window_seconds',
                       'jitter_seconds', 'overlap', 'start_at', 'end_at', 'max_runs', 'priority', 'pause_after_failures',
                       'dst_repeated', 'dst_missing', 'calendar', 'when_closed')
      THEN 'unknown field (use id, spec, time_zone, job, payload, catch_up, deadline_seconds, window_seconds, '
           'jitter_seconds, overlap, start_at, end_at, max_runs, priority, pause_after_failures, dst_repeated, '
           'dst_missing, calendar, when_closed)'
    WHEN p_key = 'max_runs' AND jsonb_typeof(p_value) NOT IN ('number', 'null') THEN 'must be a whole number'
    WHEN p_key = 'max_runs' AND jsonb_typeof(p_value) = 'number'
         AND (p_value::numeric <> trunc(p_value::numeric) OR p_value::numeric < 1 OR p_value::numeric > 2147483647)
      THEN format('%s is not a count of runs (1 to 2147483647)', p_value)
    WHEN p_key = 'pause_after_failures' AND jsonb_typeof(p_value) NOT IN ('number', 'null')
      THEN 'must be a whole number of failed occurrences (1 to 1000)'
    WHEN p_key = 'pause_after_failures' AND jsonb_typeof(p_value) = 'number'
         AND (p_value::numeric <> trunc(p_value::numeric) OR p_value::numeric NOT BETWEEN 1 AND 1000)
      THEN format('%s is not a count of failed occurrences (1 to 1000)', p_value)
    WHEN p_key = 'priority' AND jsonb_typeof(p_value) NOT IN ('number', 'null')
      THEN 'must be a whole number from 0 (first) to 9 (last)'
    -- Cast to integer only what fits one; the range is priority_problem's.
    WHEN p_key = 'priority' AND jsonb_typeof(p_value) = 'number'
         AND (p_value::numeric <> trunc(p_value::numeric) OR abs(p_value::numeric) >= 1e9)
      THEN format('%s is not a whole number from 0 (first) to 9 (last)', p_value)
    WHEN p_key = 'priority' AND jsonb_typeof(p_value) = 'number'
      THEN prescient.priority_problem(p_value::numeric::integer)
    WHEN p_key = 'overlap' AND jsonb_typeof(p_value) = 'string'
         AND p_value->>0 NOT IN ('allow', 'skip', 'buffer_one', 'cancel_previous')
      THEN format('%L is not a policy (use allow, skip, buffer_one or cancel_previous)', left(p_value->>0, 64))
    -- The same words as the runner's parser (DstPolicy::parse), which `cron next` uses without a database.
    WHEN p_key = 'dst_repeated' AND jsonb_typeof(p_value) = 'string'
         AND p_value->>0 NOT IN ('auto', 'first', 'last', 'both', 'none')
      THEN format('%L is not a policy (use auto, first, last, both or none)', left(p_value->>0, 64))
    WHEN p_key = 'dst_missing' AND jsonb_typeof(p_value) = 'string' AND p_value->>0 NOT IN ('auto', 'shift', 'skip')
      THEN format('%L is not a policy (use auto, shift or skip)', left(p_value->>0, 64))
    WHEN p_key = 'when_closed' AND jsonb_typeof(p_value) = 'string' AND p_value->>0 NOT IN ('skip', 'move')
      THEN format('%L is not a policy (use skip or move)', left(p_value->>0, 64))
    WHEN p_key = 'calendar' AND jsonb_typeof(p_value) = 'string' THEN prescient.calendar_known_problem(p_value->>0)
    WHEN p_key IN ('start_at', 'end_at') AND jsonb_typeof(p_value) = 'string'
      THEN prescient.time_text_problem(p_value->>0)
    WHEN p_key = 'payload' AND jsonb_typeof(p_value) NOT IN ('object', 'null') THEN 'must be a JSON object'
    WHEN p_key IN ('deadline_seconds', 'window_seconds', 'jitter_seconds') AND jsonb_typeof(p_value) NOT IN ('number', 'null')
      THEN 'must be a whole number of seconds'
    WHEN p_key IN ('deadline_seconds', 'window_seconds', 'jitter_seconds') AND jsonb_typeof(p_value) = 'number'
         AND (p_value::numeric <> trunc(p_value::numeric) OR p_value::numeric > 1e15)
      THEN 'must be a whole number of seconds'
    WHEN p_key NOT IN ('payload', 'deadline_seconds', 'window_seconds', 'jitter_seconds', 'max_runs', 'priority',
                       'pause_after_failures')
         AND jsonb_typeof(p_value) NOT IN ('string', 'null')
      THEN 'must be a string'
  END;

-- The first field of a JSON object with a problem, as 'field: why', or NULL.
CREATE OR REPLACE FUNCTION prescient.cron_fields_problem(p_fields jsonb) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN (SELECT format('%s: %s', f.key, f.problem)
            FROM (SELECT k.key, prescient.cron_field_problem(k.key, k.value) AS problem
                    FROM jsonb_each(p_fields) k) f
           WHERE f.problem IS NOT NULL ORDER BY f.key LIMIT 1);

-- (Re)places schedule s's pending check with its current definition: due at p_at (NULL: at once; the
-- runner then finds the first occurrence), on the grid and never beyond the horizon (a far occurrence is
-- looked at again from within it), at the schedule's place in its window if it has one. Replaces the check
-- in place when there is one.
CREATE OR REPLACE FUNCTION prescient.cron_arm(
    s prescient.cron_schedule, p_at timestamptz, p_last_us bigint, p_from_us bigint, p_now timestamptz)
  RETURNS void LANGUAGE sql AS $$
  SELECT prescient.schedule('cron', 'schedule', s.id,
                            least(coalesce(p_at, p_now),
                                  p_now + ((SELECT max_horizon_seconds FROM prescient.settings)
                                           - coalesce(s.window_seconds, 0)) * interval '1 second'),
                            'cron:' || s.id, NULL, prescient.cron_check_payload(s, p_last_us, p_from_us), 'cron',
                            'replace', p_now, s.window_seconds * interval '1 second', p_priority => s.priority);
$$;

-- Schedule s with the options in p_options set (the keys present: overlap, start_at, end_at, max_runs,
-- priority, pause_after_failures, dst_repeated, dst_missing, calendar, when_closed; null: the default), judged
-- by cron_field_problem first.
CREATE OR REPLACE FUNCTION prescient.cron_with_options(s prescient.cron_schedule, p_options jsonb)
  RETURNS prescient.cron_schedule LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF p_options ? 'overlap' THEN s.overlap := coalesce(p_options->>'overlap', 'allow'); END IF;
  IF p_options ? 'start_at' THEN s.start_at := (p_options->>'start_at')::timestamptz; END IF;
  IF p_options ? 'end_at' THEN s.end_at := (p_options->>'end_at')::timestamptz; END IF;
  IF p_options ? 'max_runs' THEN s.max_runs := (p_options->>'max_runs')::numeric::integer; END IF;
  IF p_options ? 'priority' THEN s.priority := coalesce((p_options->>'priority')::numeric::integer, 5); END IF;
  IF p_options ? 'pause_after_failures' THEN
    s.pause_after_failures := (p_options->>'pause_after_failures')::numeric::integer;
  END IF;
  IF p_options ? 'dst_repeated' THEN s.dst_repeated := coalesce(p_options->>'dst_repeated', 'auto'); END IF;
  IF p_options ? 'dst_missing' THEN s.dst_missing := coalesce(p_options->>'dst_missing', 'auto'); END IF;
  IF p_options ? 'calendar' THEN s.calendar := p_options->>'calendar'; END IF;
  -- Unbound, a schedule has nothing to move to: its when_closed goes back to skip unless this says otherwise.
  IF p_options ? 'when_closed' OR (p_options ? 'calendar' AND s.calendar IS NULL) THEN
    s.when_closed := coalesce(p_options->>'when_closed', 'skip');
  END IF;
  RETURN s;
END $$;

-- What is wrong with the options of a schedule being added (cron_add_arrays' p_options[i]: a JSON object of
-- overlap, start_at, end_at and max_runs, or NULL for none), as 'field: why', or NULL: each field by
-- cron_field_problem, then the policy and bounds as a whole by cron_policy_problem, for a schedule of job
-- p_job added at p_now (an end_at is being set).
CREATE OR REPLACE FUNCTION prescient.cron_options_problem(p_job text, p_options jsonb, p_now timestamptz)
  RETURNS text LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_schedule prescient.cron_schedule;
  v_problem text;
BEGIN
  IF p_options IS NULL THEN
    RETURN NULL;
  END IF;
  IF jsonb_typeof(p_options) <> 'object' THEN
    RETURN 'options: must be a JSON object';
  END IF;
  v_problem := coalesce((SELECT format('%s: not an option (use %s)', k, array_to_string(prescient.cron_option_keys(), ', '))
                           FROM jsonb_object_keys(p_options) k
                          WHERE k <> ALL (prescient.cron_option_keys()) ORDER BY k LIMIT 1),
                        prescient.cron_fields_problem(p_options));
  IF v_problem IS NOT NULL THEN
    RETURN v_problem;
  END IF;
  v_schedule.job := p_job;
  v_schedule.overlap := 'allow';
  RETURN prescient.cron_policy_problem(prescient.cron_with_options(v_schedule, p_options), true, p_now);
END $$;

-- Sets the options of schedules just added (cron_add_arrays' p_options: item i's are p_options[i], or NULL
-- for none; judged before, by cron_options_problem) and rewrites their checks' payloads to carry them. A
-- loop: schedules with options are the few.
CREATE OR REPLACE FUNCTION prescient.cron_apply_options(p_id text[], p_options jsonb[])
  RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  v_item record;
  v_schedule prescient.cron_schedule;
BEGIN
  FOR v_item IN SELECT u.id, u.options FROM unnest(p_id, p_options) AS u(id, options)
                 WHERE u.options IS NOT NULL LOOP
    SELECT * INTO STRICT v_schedule FROM prescient.cron_schedule WHERE id = v_item.id;
    v_schedule := prescient.cron_with_options(v_schedule, v_item.options);
    UPDATE prescient.cron_schedule
       SET overlap = v_schedule.overlap, start_at = v_schedule.start_at, end_at = v_schedule.end_at,
           max_runs = v_schedule.max_runs, priority = v_schedule.priority,
           pause_after_failures = v_schedule.pause_after_failures, dst_repeated = v_schedule.dst_repeated,
           dst_missing = v_schedule.dst_missing, calendar = v_schedule.calendar, when_closed = v_schedule.when_closed
     WHERE id = v_item.id;
    UPDATE prescient.future_job
       SET payload = payload || prescient.cron_policy_payload(v_schedule), priority = v_schedule.priority
     WHERE job_key = 'cron:' || v_item.id;
  END LOOP;
END $$;

-- The items of a cron_add_arrays call as rows numbered from 1, the defaults applied.
CREATE OR REPLACE FUNCTION prescient.cron_array_items(
    p_id text[], p_spec text[], p_time_zone text[], p_job text[], p_payload text[], p_catch_up text[],
    p_deadline_seconds bigint[], p_first_check_at timestamptz[], p_window_seconds bigint[],
    p_jitter_seconds bigint[])
  RETURNS TABLE (n bigint, id text, spec text, time_zone text, job text, payload text, catch_up text,
                 deadline_seconds bigint, first_check_at timestamptz, window_seconds bigint, jitter_seconds bigint)
  LANGUAGE sql STABLE
  BEGIN ATOMIC
    SELECT u.n, u.id, u.spec, coalesce(u.time_zone, 'UTC'), coalesce(u.job, 'emit'), coalesce(u.payload, '{}'),
           coalesce(u.catch_up, 'one'), u.deadline_seconds, u.first_check_at, u.window_seconds, u.jitter_seconds
      FROM unnest(p_id, p_spec, p_time_zone, p_job, p_payload, p_catch_up, p_deadline_seconds, p_first_check_at,
                  p_window_seconds, p_jitter_seconds)
           WITH ORDINALITY AS u(id, spec, time_zone, job, payload, catch_up, deadline_seconds, first_check_at,
                                window_seconds, jitter_seconds, n);
  END;

-- What is wrong with each item of a cron_add_arrays call, as (n, 'field: why') for each bad item, in item
-- order: its fields (cron_item_problem), window or jitter (cron_spread_problem), spec, zone, then options
-- (cron_options_problem), the first of them. The one judgment of both cron_add_arrays and cron_problems.
-- The spec and the zone are judged once per distinct value (a million schedules share a few specs, the
-- spec's regular expression is the costliest test, and the zone's, time_zone_known, is PL/pgSQL), in
-- materialized CTEs: else the planner evaluates the tests in the join, once per item.
CREATE OR REPLACE FUNCTION prescient.cron_array_problems(
    p_id text[], p_spec text[], p_time_zone text[], p_job text[], p_payload text[], p_catch_up text[],
    p_deadline_seconds bigint[], p_window_seconds bigint[], p_jitter_seconds bigint[], p_options jsonb[],
    p_now timestamptz, p_max_horizon_seconds bigint)
  RETURNS TABLE (n bigint, problem text)
  LANGUAGE sql STABLE
  BEGIN ATOMIC
    WITH items AS MATERIALIZED (
      SELECT i.n, i.id, coalesce(i.spec, '') AS spec, i.time_zone, i.job, i.catch_up, i.deadline_seconds,
             i.window_seconds, i.jitter_seconds,
             CASE WHEN left(ltrim(i.payload), 1) = '{' THEN i.payload::jsonb END AS payload, o.options
        FROM prescient.cron_array_items(p_id, p_spec, p_time_zone, p_job, p_payload, p_catch_up,
                                        p_deadline_seconds, NULL, p_window_seconds, p_jitter_seconds) i
        LEFT JOIN unnest(p_options) WITH ORDINALITY AS o(options, n) ON o.n = i.n),
    specs AS MATERIALIZED (
      SELECT g.spec, prescient.cron_spec_problem(g.spec) AS problem FROM (SELECT DISTINCT i.spec FROM items i) g),
    -- A schedule's class must be a row of the registry (docs/design.md, "The class registry"), judged once
    -- a class; the cron class is cron_item_problem's to refuse.
    classes AS MATERIALIZED (
      SELECT g.job, CASE WHEN g.job <> 'cron' THEN 'job: ' || prescient.class_problem(g.job, false) END AS problem
        FROM (SELECT DISTINCT i.job FROM items i) g),
    zones AS MATERIALIZED (
      SELECT g.time_zone,
             coalesce(prescient.cron_zone_name_problem(g.time_zone), prescient.time_zone_problem(g.time_zone)) AS problem
        FROM (SELECT DISTINCT i.time_zone FROM items i) g)
    SELECT j.n, j.problem
      FROM (SELECT i.n,
                   coalesce(prescient.cron_item_problem(i.id, i.job, i.payload, i.catch_up, i.deadline_seconds),
                            'payload: ' || prescient.payload_problem(i.payload, bound.max_payload_bytes),
                            c.problem,
                            prescient.cron_spread_problem(i.window_seconds, i.jitter_seconds, p_max_horizon_seconds),
                            s.problem, z.problem,
                            CASE WHEN i.options IS NOT NULL
                              THEN prescient.cron_options_problem(i.job, i.options, p_now) END) AS problem
              FROM items i JOIN specs s ON s.spec = i.spec JOIN zones z ON z.time_zone = i.time_zone
              JOIN classes c ON c.job = i.job CROSS JOIN prescient.settings bound) j
     WHERE j.problem IS NOT NULL
     ORDER BY j.n;
  END;

-- 'id: ...' for an id another schedule holds.
CREATE OR REPLACE FUNCTION prescient.cron_taken_problem(p_id text) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN format('id: schedule %L exists already (update it instead)', p_id);

-- What cron_add_arrays would refuse in each item, writing nothing: one row (n, problem) per bad item, in
-- item order; no row when every item is good. The arrays, options and defaults are cron_add_arrays'. It is
-- how a caller that must name each bad item before sending any (the CLI's bulk file, by line;
-- Schedules::problem_with) asks the rules instead of restating them. An id in use is judged here (it is the
-- item's fault); an id given twice in one call is not (it is the call's). Read-only, and no stronger than
-- SELECT on the settings and the schedules: PUBLIC may execute it.
CREATE OR REPLACE FUNCTION prescient.cron_problems(
    p_id text[], p_spec text[], p_time_zone text[] DEFAULT NULL, p_job text[] DEFAULT NULL,
    p_payload text[] DEFAULT NULL, p_catch_up text[] DEFAULT NULL, p_deadline_seconds bigint[] DEFAULT NULL,
    p_now timestamptz DEFAULT now(), p_window_seconds bigint[] DEFAULT NULL, p_jitter_seconds bigint[] DEFAULT NULL,
    p_options jsonb[] DEFAULT NULL)
  RETURNS TABLE (n integer, problem text)
  LANGUAGE sql STABLE
  -- Not inlined into the caller's statement, and not compiled: a call's items are as many as the planner
  -- then knows, and JIT compiling the judgment costs more than the judgment (docs/performance.md, "A bulk
  -- file through the CLI").
  SET jit = off
  BEGIN ATOMIC
    SELECT u.n::integer, coalesce(j.problem, prescient.cron_taken_problem(u.id))
      FROM unnest(p_id) WITH ORDINALITY AS u(id, n)
      LEFT JOIN prescient.cron_array_problems(p_id, p_spec, p_time_zone, p_job, p_payload, p_catch_up,
                                              p_deadline_seconds, p_window_seconds, p_jitter_seconds, p_options, p_now,
                                              (SELECT s.max_horizon_seconds FROM prescient.settings s)) j ON j.n = u.n
     WHERE j.problem IS NOT NULL OR EXISTS (SELECT FROM prescient.cron_schedule c WHERE c.id = u.id)
     ORDER BY u.n;
  END;

-- 'item N: problem', or the problem alone for a call of one schedule (p_numbered false: cron_add).
CREATE OR REPLACE FUNCTION prescient.cron_item_message(p_numbered boolean, p_n bigint, p_problem text) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE WHEN p_numbered THEN format('item %s: %s', p_n, p_problem) ELSE p_problem END;

-- The body of cron_add_arrays and cron_add: p_numbered says whether a refusal names its item ('item N: ').
-- Not SECURITY DEFINER: it runs as its callers do, and only they may call it.
CREATE OR REPLACE FUNCTION prescient.cron_add_items(
    p_id text[], p_spec text[], p_time_zone text[], p_job text[], p_payload text[], p_catch_up text[],
    p_deadline_seconds bigint[], p_first_check_at timestamptz[], p_by text, p_now timestamptz,
    p_window_seconds bigint[], p_jitter_seconds bigint[], p_options jsonb[], p_numbered boolean)
  RETURNS integer LANGUAGE plpgsql
  -- The planner cannot know how many items the arrays hold; its guess made JIT compile the insert for
  -- 0.4 s of a 0.8 s call of 10 000 items (docs/performance.md).
  SET jit = off AS $$
DECLARE
  v_count integer := coalesce(cardinality(p_id), 0);
  v_settings prescient.settings;
  v_problem text;
  v_added integer;
  v_check_ids_from constant regclass := pg_get_serial_sequence('prescient.future_job', 'id')::regclass;
BEGIN
  IF coalesce(p_by, '') = '' THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'created_by is empty';
  END IF;
  IF coalesce(cardinality(p_spec), 0) <> v_count
     OR coalesce(cardinality(p_time_zone), v_count) <> v_count OR coalesce(cardinality(p_job), v_count) <> v_count
     OR coalesce(cardinality(p_payload), v_count) <> v_count OR coalesce(cardinality(p_catch_up), v_count) <> v_count
     OR coalesce(cardinality(p_deadline_seconds), v_count) <> v_count
     OR coalesce(cardinality(p_first_check_at), v_count) <> v_count
     OR coalesce(cardinality(p_window_seconds), v_count) <> v_count
     OR coalesce(cardinality(p_jitter_seconds), v_count) <> v_count
     OR coalesce(cardinality(p_options), v_count) <> v_count THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('every array must hold %s items, as p_id does', v_count);
  END IF;
  IF v_count = 0 THEN
    RETURN 0;
  END IF;

  SELECT * INTO STRICT v_settings FROM prescient.settings;
  -- One statement: judge the items (cron_array_problems), and insert the rows and their checks only when
  -- nothing was wrong (two inserts from the same items, no join between them). No ON CONFLICT:
  -- an id in use, or given twice, fails the insert of the definitions, and only then is the culprit
  -- looked for; the check's key is free when the id is (a schedule's check goes with its row).
  BEGIN
    -- The check's id is drawn here (items is materialized: once a row), as its place in a window is
    -- chosen by it.
    WITH items AS MATERIALIZED (
      SELECT i.n, i.id, i.spec, i.time_zone, i.job, i.catch_up, i.deadline_seconds, i.window_seconds,
             i.jitter_seconds, nextval(v_check_ids_from) AS check_id,
             CASE WHEN left(ltrim(i.payload), 1) = '{' THEN i.payload::jsonb END AS payload,
             prescient.slot_for(least(coalesce(i.first_check_at, prescient.cron_first_possible(i.spec, p_now)),
                                      p_now + (v_settings.max_horizon_seconds - coalesce(i.window_seconds, 0))
                                              * interval '1 second'),
                                p_now, v_settings.slot_seconds) AS slot
        FROM prescient.cron_array_items(p_id, p_spec, p_time_zone, p_job, p_payload, p_catch_up,
                                        p_deadline_seconds, p_first_check_at, p_window_seconds, p_jitter_seconds) i),
    bad AS (
      SELECT p.n, p.problem
        FROM prescient.cron_array_problems(p_id, p_spec, p_time_zone, p_job, p_payload, p_catch_up,
                                           p_deadline_seconds, p_window_seconds, p_jitter_seconds, p_options, p_now,
                                           v_settings.max_horizon_seconds) p
       ORDER BY p.n LIMIT 1),
    added AS (
      INSERT INTO prescient.cron_schedule (id, spec, time_zone, job, payload, deadline_seconds, catch_up, version,
                                           anchor_at, created_at, updated_at, created_by, window_seconds,
                                           jitter_seconds)
      SELECT i.id, i.spec, i.time_zone, i.job, i.payload, i.deadline_seconds, i.catch_up, 1, p_now, p_now, p_now,
             p_by, i.window_seconds, i.jitter_seconds
        FROM items i WHERE NOT EXISTS (SELECT FROM bad) ORDER BY i.n),
    armed AS (
      INSERT INTO prescient.future_job (id, job, entity_name, entity_key, job_key, payload, first_check_at,
                                        next_check_at, enqueued_on, enqueued_by)
      OVERRIDING SYSTEM VALUE
      SELECT i.check_id, 'cron', 'schedule', i.id, 'cron:' || i.id,
             prescient.cron_check_payload_of(i.id, 1, i.spec, i.time_zone, i.job, i.payload, i.catch_up,
                                             i.deadline_seconds, prescient.us(p_now), NULL, NULL, i.window_seconds,
                                             i.jitter_seconds),
             i.placed, i.placed, p_now, 'cron'
        FROM (SELECT i.*, prescient.spread_slot(i.slot, i.check_id, i.window_seconds * interval '1 second',
                                                v_settings.slot_seconds) AS placed
                FROM items i) i
       WHERE NOT EXISTS (SELECT FROM bad) ORDER BY i.n
      RETURNING 1)
    SELECT CASE WHEN bad.n IS NOT NULL THEN prescient.cron_item_message(p_numbered, bad.n, bad.problem) END,
           (SELECT count(*) FROM armed)
      INTO v_problem, v_added
      FROM (SELECT) AS one LEFT JOIN bad ON true;
  EXCEPTION WHEN unique_violation THEN
    -- One subtransaction per call, whatever its size. Which id: given twice, or in use.
    SELECT prescient.cron_item_message(p_numbered, max(i.n), format('id: %L is given twice', i.id)) INTO v_problem
      FROM prescient.cron_array_items(p_id, p_spec, p_time_zone, p_job, p_payload, p_catch_up, p_deadline_seconds,
                                      p_first_check_at, p_window_seconds, p_jitter_seconds) i
     GROUP BY i.id HAVING count(*) > 1 ORDER BY max(i.n) LIMIT 1;
    IF v_problem IS NULL THEN
      SELECT prescient.cron_item_message(p_numbered, i.n, prescient.cron_taken_problem(i.id)) INTO v_problem
        FROM prescient.cron_array_items(p_id, p_spec, p_time_zone, p_job, p_payload, p_catch_up,
                                        p_deadline_seconds, p_first_check_at, p_window_seconds, p_jitter_seconds) i
        JOIN prescient.cron_schedule s ON s.id = i.id
       ORDER BY i.n LIMIT 1;
    END IF;
    IF v_problem IS NULL THEN
      RAISE;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'PR409', MESSAGE = v_problem;
  END;
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  IF p_options IS NOT NULL THEN
    PERFORM prescient.cron_apply_options(p_id, p_options);
  END IF;
  RETURN v_added;
END $$;

-- Adds many schedules, all or nothing, given as parallel arrays (item i is p_id[i], p_spec[i], ...; the
-- optional arrays may be NULL or hold NULLs: time zone UTC, job emit, payload {}, catch-up one, no
-- deadline, no window). p_first_check_at[i], when given, is the first occurrence (prescient's client
-- computes it); without it the check is due at the next boundary, where the runner finds the first
-- occurrence. With p_window_seconds[i], each occurrence fires at the schedule's place in that window: its
-- check's id picks one of the window's slots (spread_slot), so that schedules added together spread; with
-- p_jitter_seconds[i], at an offset of its own within that long (the runner computes it). p_options[i]
-- is a JSON object of the options overlap, start_at, end_at, max_runs, priority, pause_after_failures,
-- dst_repeated, dst_missing, calendar and when_closed (docs/schedules.md), or NULL:
-- every field a schedule gains from now on is a key of it, not a parameter more. The
-- first bad item raises PR400 naming its position (from 1) and the field; an id in use or given twice
-- raises PR409 naming it. Returns how many were added.
CREATE OR REPLACE FUNCTION prescient.cron_add_arrays(
    p_id text[], p_spec text[], p_time_zone text[] DEFAULT NULL, p_job text[] DEFAULT NULL,
    p_payload text[] DEFAULT NULL, p_catch_up text[] DEFAULT NULL, p_deadline_seconds bigint[] DEFAULT NULL,
    p_first_check_at timestamptz[] DEFAULT NULL, p_by text DEFAULT current_user, p_now timestamptz DEFAULT now(),
    p_window_seconds bigint[] DEFAULT NULL, p_jitter_seconds bigint[] DEFAULT NULL, p_options jsonb[] DEFAULT NULL)
  RETURNS integer LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
  RETURN prescient.cron_add_items(p_id, p_spec, p_time_zone, p_job, p_payload, p_catch_up, p_deadline_seconds,
                                  p_first_check_at, p_by, p_now, p_window_seconds, p_jitter_seconds, p_options, true);

-- One schedule; the defaults of cron_add_arrays, and its refusals without 'item 1: '. Returns its version (1).
CREATE OR REPLACE FUNCTION prescient.cron_add(
    p_id text, p_spec text, p_time_zone text DEFAULT 'UTC', p_job text DEFAULT 'emit', p_payload jsonb DEFAULT '{}',
    p_catch_up text DEFAULT 'one', p_deadline_seconds bigint DEFAULT NULL, p_by text DEFAULT current_user,
    p_now timestamptz DEFAULT now(), p_window_seconds bigint DEFAULT NULL, p_jitter_seconds bigint DEFAULT NULL,
    p_options jsonb DEFAULT NULL)
  RETURNS integer LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
  RETURN prescient.cron_add_items(ARRAY[p_id], ARRAY[p_spec], ARRAY[p_time_zone], ARRAY[p_job],
                                  ARRAY[p_payload::text], ARRAY[p_catch_up], ARRAY[p_deadline_seconds], NULL,
                                  p_by, p_now, ARRAY[p_window_seconds], ARRAY[p_jitter_seconds],
                                  CASE WHEN p_options IS NOT NULL THEN ARRAY[p_options] END, false);

-- Adds many schedules given as a JSON array of objects with the fields id, spec, time_zone, job, payload,
-- catch_up, deadline_seconds, window_seconds, jitter_seconds, overlap, start_at, end_at, max_runs (the
-- same defaults): for drivers without arrays. All or nothing; errors name
-- the item (from 1) and the field, as cron_add_arrays does. Returns how many were added.
CREATE OR REPLACE FUNCTION prescient.cron_add_many(p_items jsonb, p_by text DEFAULT current_user,
                                                   p_now timestamptz DEFAULT now())
  RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_problem text;
  v_result integer;
BEGIN
  IF jsonb_typeof(p_items) IS DISTINCT FROM 'array' THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'the items must be a JSON array of objects';
  END IF;
  SELECT format('item %s: %s', e.n, p.problem) INTO v_problem
    FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(item, n),
         LATERAL (SELECT CASE WHEN jsonb_typeof(e.item) <> 'object' THEN 'must be a JSON object'
                              ELSE prescient.cron_fields_problem(e.item) END) AS p(problem)
   WHERE p.problem IS NOT NULL ORDER BY e.n LIMIT 1;
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  SELECT prescient.cron_add_arrays(
           array_agg(e.item->>'id' ORDER BY e.n), array_agg(e.item->>'spec' ORDER BY e.n),
           array_agg(e.item->>'time_zone' ORDER BY e.n), array_agg(e.item->>'job' ORDER BY e.n),
           array_agg(CASE WHEN jsonb_typeof(e.item->'payload') = 'object' THEN (e.item->'payload')::text END
                     ORDER BY e.n),
           array_agg(e.item->>'catch_up' ORDER BY e.n),
           array_agg((e.item->>'deadline_seconds')::numeric::bigint ORDER BY e.n),
           NULL, p_by, p_now, array_agg((e.item->>'window_seconds')::numeric::bigint ORDER BY e.n),
           array_agg((e.item->>'jitter_seconds')::numeric::bigint ORDER BY e.n),
           CASE WHEN bool_or(e.item ?| prescient.cron_option_keys())
             THEN array_agg((SELECT jsonb_object_agg(o.key, o.value) FROM jsonb_each(e.item) o
                              WHERE o.key = ANY (prescient.cron_option_keys()) AND jsonb_typeof(o.value) <> 'null')
                            ORDER BY e.n)
           END)
    INTO v_result
    FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(item, n);
  RETURN coalesce(v_result, 0);
END $$;

-- The schedule's row, locked until the end of the transaction; PR404 when there is none.
CREATE OR REPLACE FUNCTION prescient.cron_locked(p_id text) RETURNS prescient.cron_schedule
  LANGUAGE plpgsql AS $$
DECLARE
  v_schedule prescient.cron_schedule;
BEGIN
  SELECT * INTO v_schedule FROM prescient.cron_schedule WHERE id = p_id FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PR404', MESSAGE = format('no schedule %L', p_id);
  END IF;
  RETURN v_schedule;
END $$;

-- Changes a schedule: p_changes holds the fields to change (spec, time_zone, job, payload, catch_up,
-- deadline_seconds, window_seconds, jitter_seconds, and the options of cron_option_keys; a null removes
-- the optional ones, and sets overlap back to allow, dst_repeated and dst_missing back to auto and when_closed
-- back to skip). With p_expected_version, a schedule at another version raises PR409 and nothing changes
-- (optimistic concurrency for editors). The version goes up by one and
-- the pending check carries the new definition from now on: the first occurrence after now (or after the
-- last one fired, if later) at p_first_check_at when the caller computed it, else found by the runner
-- at the next boundary. A check already due and not yet fired stays due and fires under the new version:
-- an occurrence never fires under both, nor under neither. An invalid schedule is valid again until the
-- runner judges the new definition. A schedule that ended (by its bounds) is armed again from where it
-- ended; it ends again at its first run if its bounds still say so. Returns the new version; PR404 for
-- an unknown id.
CREATE OR REPLACE FUNCTION prescient.cron_update(
    p_id text, p_changes jsonb, p_expected_version integer DEFAULT NULL, p_first_check_at timestamptz DEFAULT NULL,
    p_now timestamptz DEFAULT now())
  RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_old prescient.cron_schedule;
  v_new prescient.cron_schedule;
  v_problem text;
  v_armed boolean;
  v_due boolean;
  v_last_us bigint;
  v_from_us bigint;
BEGIN
  IF jsonb_typeof(p_changes) IS DISTINCT FROM 'object' THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'the changes must be a JSON object';
  END IF;
  v_problem := CASE WHEN p_changes ? 'id' THEN 'id: a schedule keeps its id (add another, remove this one)'
                    ELSE prescient.cron_fields_problem(p_changes) END;
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  v_old := prescient.cron_locked(p_id);
  IF p_expected_version IS NOT NULL AND v_old.version <> p_expected_version THEN
    RAISE EXCEPTION USING ERRCODE = 'PR409',
      MESSAGE = format('schedule %L is at version %s, not %s', p_id, v_old.version, p_expected_version);
  END IF;
  v_new := v_old;
  IF p_changes ? 'spec' THEN v_new.spec := p_changes->>'spec'; END IF;
  IF p_changes ? 'time_zone' THEN v_new.time_zone := p_changes->>'time_zone'; END IF;
  IF p_changes ? 'job' THEN v_new.job := p_changes->>'job'; END IF;
  IF p_changes ? 'payload' THEN v_new.payload := p_changes->'payload'; END IF;
  IF p_changes ? 'catch_up' THEN v_new.catch_up := p_changes->>'catch_up'; END IF;
  IF p_changes ? 'deadline_seconds' THEN v_new.deadline_seconds := (p_changes->>'deadline_seconds')::numeric::bigint; END IF;
  IF p_changes ? 'window_seconds' THEN v_new.window_seconds := (p_changes->>'window_seconds')::numeric::bigint; END IF;
  IF p_changes ? 'jitter_seconds' THEN v_new.jitter_seconds := (p_changes->>'jitter_seconds')::numeric::bigint; END IF;
  v_new := prescient.cron_with_options(v_new, p_changes);
  v_problem := prescient.cron_definition_problem(v_new.id, v_new.spec, v_new.time_zone, v_new.job, v_new.payload,
                                                 v_new.catch_up, v_new.deadline_seconds);
  v_problem := coalesce(v_problem,
                        -- A new class must be a row of the registry; the one it had may since have been forgotten.
                        CASE WHEN v_new.job IS DISTINCT FROM v_old.job THEN 'job: ' || prescient.class_problem(v_new.job, false) END,
                        'payload: ' || prescient.payload_problem(v_new.payload,
                                                                 (SELECT max_payload_bytes FROM prescient.settings)),
                        prescient.time_zone_problem(v_new.time_zone),
                        prescient.cron_spread_problem(v_new.window_seconds, v_new.jitter_seconds,
                                                      (SELECT max_horizon_seconds FROM prescient.settings)),
                        prescient.cron_policy_problem(v_new, p_changes ? 'end_at', p_now));
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  -- Where the schedule stands: in its pending check while it has one (the runner counts on there), else
  -- in the row (paused, or ended).
  SELECT true, f.next_check_at <= p_now, (f.payload->>'last_us')::bigint, (f.payload->>'from_us')::bigint,
         coalesce((f.payload->>'runs')::integer, v_old.run_count)
    INTO v_armed, v_due, v_last_us, v_from_us, v_new.run_count
    FROM prescient.future_job f WHERE f.job_key = 'cron:' || p_id FOR UPDATE;
  IF NOT FOUND THEN
    v_armed := false;
    v_last_us := prescient.us(v_old.last_occurrence_at);
    v_new.run_count := v_old.run_count;
  END IF;
  UPDATE prescient.cron_schedule
     SET spec = v_new.spec, time_zone = v_new.time_zone, job = v_new.job, payload = v_new.payload,
         catch_up = v_new.catch_up, deadline_seconds = v_new.deadline_seconds, window_seconds = v_new.window_seconds,
         jitter_seconds = v_new.jitter_seconds, overlap = v_new.overlap, start_at = v_new.start_at,
         end_at = v_new.end_at, max_runs = v_new.max_runs, priority = v_new.priority,
         pause_after_failures = v_new.pause_after_failures, dst_repeated = v_new.dst_repeated,
         dst_missing = v_new.dst_missing, calendar = v_new.calendar, when_closed = v_new.when_closed,
         run_count = v_new.run_count,
         ended_at = NULL,
         ended_reason = NULL, version = version + 1, updated_at = p_now, invalid_reason = NULL
   WHERE id = p_id
  RETURNING * INTO v_new;
  IF v_new.paused_at IS NULL THEN
    IF v_armed AND v_due THEN
      -- Due and not fired yet: it stays due where it is (a runner still draining that slot, or the next
      -- sweep, takes it), carrying the new version from where the old one stood.
      UPDATE prescient.future_job
         SET payload = prescient.cron_check_payload(v_new, v_last_us, v_from_us), priority = v_new.priority
       WHERE job_key = 'cron:' || p_id;
    ELSE
      PERFORM prescient.cron_arm(v_new, p_first_check_at, v_last_us, greatest(prescient.us(p_now), v_last_us), p_now);
    END IF;
  END IF;
  RETURN v_new.version;
END $$;

-- Many updates, all or nothing: p_items is a JSON array of objects, each with the schedule's id, the
-- fields to change (as cron_update takes them) and optionally expected_version. Each is applied as
-- cron_update applies it, in order; the first refused raises its error (PR400, PR404, PR409) with
-- 'item N: ' (from 1) before the message, and nothing changes. Returns how many were updated.
CREATE OR REPLACE FUNCTION prescient.cron_update_many(p_items jsonb, p_now timestamptz DEFAULT now())
  RETURNS integer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_item jsonb;
  v_n integer := 0;
  v_version jsonb;
  v_state text;
  v_message text;
BEGIN
  IF jsonb_typeof(p_items) IS DISTINCT FROM 'array' THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'the items must be a JSON array of objects';
  END IF;
  -- One block for the whole loop (one subtransaction per call, not per item): the handler only adds the
  -- item's number; the variables keep their values when the error is caught.
  BEGIN
    FOR v_item IN SELECT e.item FROM jsonb_array_elements(p_items) WITH ORDINALITY AS e(item, n) ORDER BY e.n LOOP
      v_n := v_n + 1;
      IF jsonb_typeof(v_item) <> 'object' THEN
        RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'must be a JSON object';
      END IF;
      IF jsonb_typeof(v_item->'id') IS DISTINCT FROM 'string' THEN
        RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'id: the schedule id is required, as a string';
      END IF;
      v_version := v_item->'expected_version';
      IF v_version IS NOT NULL AND jsonb_typeof(v_version) <> 'null'
         AND (jsonb_typeof(v_version) <> 'number' OR v_version::numeric <> trunc(v_version::numeric)
              OR v_version::numeric NOT BETWEEN 1 AND 2147483647) THEN
        RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'expected_version: must be a whole number from 1';
      END IF;
      PERFORM prescient.cron_update(v_item->>'id', v_item - 'id' - 'expected_version',
                                    (v_item->>'expected_version')::integer, NULL, p_now);
    END LOOP;
  EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT;
    RAISE EXCEPTION USING ERRCODE = v_state, MESSAGE = format('item %s: %s', v_n, v_message);
  END;
  RETURN v_n;
END $$;

-- Deletes a schedule and cancels its pending check (history: cancelled, by p_by). PR404 for an unknown id.
CREATE OR REPLACE FUNCTION prescient.cron_remove(p_id text, p_by text DEFAULT current_user,
                                                 p_now timestamptz DEFAULT now())
  RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  DELETE FROM prescient.cron_schedule WHERE id = p_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PR404', MESSAGE = format('no schedule %L', p_id);
  END IF;
  PERFORM prescient.cancel(NULL, 'cron:' || p_id, p_by, p_now);
END $$;

-- Pauses a schedule: its pending check is cancelled (history: cancelled, by p_by, with the note in its
-- payload as pause_note) and the place it had reached is kept in last_occurrence_at, with its definition,
-- version and run count. p_note says why (at most 1024 bytes), shown until it resumes. Returns false when
-- it was paused already; PR404 for an unknown id.
CREATE OR REPLACE FUNCTION prescient.cron_pause(p_id text, p_by text DEFAULT current_user,
                                                p_now timestamptz DEFAULT now(), p_note text DEFAULT NULL)
  RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_schedule prescient.cron_schedule;
  v_place bigint;
  v_runs integer;
BEGIN
  IF octet_length(p_note) > 1024 THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = format('note: %s bytes long (at most 1024)', octet_length(p_note));
  END IF;
  v_schedule := prescient.cron_locked(p_id);
  IF v_schedule.paused_at IS NOT NULL THEN
    RETURN false;
  END IF;
  UPDATE prescient.future_job f
     SET payload = f.payload || jsonb_strip_nulls(jsonb_build_object('pause_note', p_note))
   WHERE f.job_key = 'cron:' || p_id
  RETURNING greatest((f.payload->>'last_us')::bigint, (f.payload->>'from_us')::bigint), (f.payload->>'runs')::integer
    INTO v_place, v_runs;
  UPDATE prescient.cron_schedule
     SET paused_at = p_now, paused_by = p_by, pause_note = p_note,
         last_occurrence_at = coalesce(prescient.at_us(v_place), last_occurrence_at),
         run_count = coalesce(v_runs, run_count)
   WHERE id = p_id;
  PERFORM prescient.cancel(NULL, 'cron:' || p_id, p_by, p_now);
  RETURN true;
END $$;

-- Resumes a paused schedule from the place it had reached: at the next boundary the runner fires what
-- fell due while it was paused by its catch-up policy (one: the latest; all: each; none: nothing but
-- what is due then). Returns false when it was not paused; PR404 for an unknown id.
CREATE OR REPLACE FUNCTION prescient.cron_resume(p_id text, p_by text DEFAULT current_user,
                                                 p_now timestamptz DEFAULT now())
  RETURNS boolean LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  v_schedule prescient.cron_schedule;
BEGIN
  v_schedule := prescient.cron_locked(p_id);
  IF v_schedule.paused_at IS NULL THEN
    RETURN false;
  END IF;
  -- The count of failed occurrences starts again (docs/schedules.md, "Pause after failures").
  UPDATE prescient.cron_schedule
     SET paused_at = NULL, paused_by = NULL, pause_note = NULL, updated_at = p_now, failed_in_a_row = 0,
         last_failure = NULL
   WHERE id = p_id
  RETURNING * INTO v_schedule;
  PERFORM prescient.cron_arm(v_schedule, p_now, prescient.us(v_schedule.last_occurrence_at), NULL, p_now);
  RETURN true;
END $$;

REVOKE EXECUTE ON FUNCTION
  prescient.cron_add_items(text[], text[], text[], text[], text[], text[], bigint[], timestamptz[], text, timestamptz,
                           bigint[], bigint[], jsonb[], boolean),
  prescient.cron_add_arrays(text[], text[], text[], text[], text[], text[], bigint[], timestamptz[], text, timestamptz,
                            bigint[], bigint[], jsonb[]),
  prescient.cron_add(text, text, text, text, jsonb, text, bigint, text, timestamptz, bigint, bigint, jsonb),
  prescient.cron_add_many(jsonb, text, timestamptz),
  prescient.cron_update(text, jsonb, integer, timestamptz, timestamptz),
  prescient.cron_update_many(jsonb, timestamptz),
  prescient.cron_remove(text, text, timestamptz),
  prescient.cron_pause(text, text, timestamptz, text),
  prescient.cron_resume(text, text, timestamptz)
  FROM PUBLIC;
