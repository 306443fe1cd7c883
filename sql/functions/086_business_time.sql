-- Business time (docs/business-time.md): calendars, and the arithmetic of their open time. The one home of
-- the rule, for the CLI, the runner and every client: what a calendar is open, what "4 hours of open time"
-- and "3 business days" from an instant are, and the open time between two instants.
--
-- The rule, in wall time of the calendar's zone:
--  - a day's opening hours are its weekday's, unless a special day or a holiday says otherwise: a special
--    day with an exact date (or range), then a holiday with an exact date (or range), then a special day
--    by a yearly rule, then a holiday by a yearly rule; among equals, the first listed;
--  - an interval belongs to the day it opens on, and may close after midnight ("22:00-06:00");
--  - an instant is open when its wall time lies in an interval, counted once: a wall time that does not
--    exist (a DST gap) is not open, and one that repeats (the hour after a DST end) is open the first time
--    only. So "open time" is wall time: 09:00-17:00 is 8 hours on every day, the days of DST changes
--    included, less what the gap removes from it;
--  - open time is measured from the start of the range (local 2000-01-01) to an instant: business_add
--    returns the earliest instant at which that measure has grown by the duration (a closing time when it
--    ends there), and business_between the measure's growth between two instants;
--  - N business days after an instant: its wall time of day on the N-th open day after its own date (a
--    day on which an interval opens), or, when the calendar is neither open nor closing then, its next
--    opening. A wall time that does not exist that day is read as the first instant after the gap.
-- Calendars are computed over local dates 2000-01-01 to 2099-12-31; a time outside is refused. A zone is
-- assumed to change its offset at most once a day (true of every zone's rules since 1970).

CREATE OR REPLACE FUNCTION prescient.calendar_first_day() RETURNS date
  LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN date '2000-01-01';
CREATE OR REPLACE FUNCTION prescient.calendar_last_day() RETURNS date
  LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN date '2099-12-31';

-- The weekdays as a calendar names them, Monday first (ISO day numbers are their positions).
CREATE OR REPLACE FUNCTION prescient.calendar_weekdays() RETURNS text[]
  LANGUAGE sql IMMUTABLE PARALLEL SAFE RETURN ARRAY['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];

-- How a holiday or a special day names its days, for the messages that refuse one.
CREATE OR REPLACE FUNCTION prescient.calendar_day_forms() RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN format('YYYY-MM-DD, YYYY-MM-DD..YYYY-MM-DD within %s to %s, MM-DD, or first|second|third|fourth|last '
                '<mon..sun> of <jan..dec>', prescient.calendar_first_day(), prescient.calendar_last_day());

-- A zone's offset from UTC at an instant, in seconds, as this server's tzdata says.
CREATE OR REPLACE FUNCTION prescient.zone_offset_at(p_zone text, p_at timestamptz) RETURNS integer
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN extract(epoch FROM (p_at AT TIME ZONE p_zone) - (p_at AT TIME ZONE 'UTC'))::integer;

-- Fills prescient.zone_offset for a zone once: its offsets over the calendars' range, one row from each change
-- to the next, found to the second. first_pass_from is where the instants whose wall time has not been seen
-- before start: after an offset falls by D (a DST end), the segment's first D repeat the wall time just
-- passed.
CREATE OR REPLACE FUNCTION prescient.ensure_zone_offsets(p_zone text) RETURNS void
  LANGUAGE plpgsql AS $$
DECLARE
  c_from constant bigint := extract(epoch FROM prescient.calendar_first_day() - interval '2 days')::bigint;
  c_to constant bigint := extract(epoch FROM prescient.calendar_last_day() + interval '3 days')::bigint;
  v_day bigint := c_from;
  v_offset integer;
  v_next integer;
  v_lo bigint;
  v_hi bigint;
  v_mid bigint;
  v_starts bigint[];
  v_offsets integer[];
BEGIN
  IF EXISTS (SELECT 1 FROM prescient.zone_offset WHERE time_zone = p_zone) THEN
    RETURN;
  END IF;
  -- Two first calendars of one zone at once: the second waits, then finds the rows.
  PERFORM pg_advisory_xact_lock(hashtext('prescient.zone_offset'), hashtext(p_zone));
  IF EXISTS (SELECT 1 FROM prescient.zone_offset WHERE time_zone = p_zone) THEN
    RETURN;
  END IF;
  v_offset := prescient.zone_offset_at(p_zone, to_timestamp(c_from));
  v_starts := ARRAY[c_from];
  v_offsets := ARRAY[v_offset];
  WHILE v_day < c_to LOOP
    v_next := prescient.zone_offset_at(p_zone, to_timestamp(v_day + 86400));
    IF v_next <> v_offset THEN
      -- The change lies in (lo, hi]: halved down to the second, hi is its first instant.
      v_lo := v_day;
      v_hi := v_day + 86400;
      WHILE v_hi - v_lo > 1 LOOP
        v_mid := (v_lo + v_hi) / 2;
        IF prescient.zone_offset_at(p_zone, to_timestamp(v_mid)) = v_offset THEN v_lo := v_mid; ELSE v_hi := v_mid; END IF;
      END LOOP;
      v_starts := v_starts || v_hi;
      v_offsets := v_offsets || v_next;
      v_offset := v_next;
    END IF;
    v_day := v_day + 86400;
  END LOOP;
  INSERT INTO prescient.zone_offset (time_zone, starts_at, ends_at, offset_seconds, first_pass_from)
  SELECT p_zone, to_timestamp(v_starts[i]), to_timestamp(coalesce(v_starts[i + 1], c_to)), v_offsets[i],
         to_timestamp(v_starts[i] + CASE WHEN i > 1 THEN greatest(v_offsets[i - 1] - v_offsets[i], 0) ELSE 0 END)
    FROM generate_subscripts(v_starts, 1) AS i;
END $$;

-- An opening interval as a calendar writes it, 'HH:MM-HH:MM', as minutes from the start of the day it opens
-- on: a closing time not after the opening is on the next day ("22:00-06:00": 1320 to 1800); "24:00"
-- closes at midnight. NULLs when it is not such an interval.
CREATE OR REPLACE FUNCTION prescient.calendar_interval(p_text text, OUT open_minute integer, OUT close_minute integer)
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT o, CASE WHEN c <= o THEN c + 1440 ELSE c END
    FROM (SELECT m[1]::integer * 60 + m[2]::integer AS o, m[3]::integer * 60 + m[4]::integer AS c
            FROM regexp_match(p_text, '^([01][0-9]|2[0-3]):([0-5][0-9])-([01][0-9]|2[0-3]|24):([0-5][0-9])$') AS m
           WHERE m[3] <> '24' OR m[4] = '00') x
   WHERE c <> o
$$;

-- A date as a calendar writes one, 'YYYY-MM-DD', within the calendars' range; NULL when it is not one.
CREATE OR REPLACE FUNCTION prescient.calendar_date(p_text text) RETURNS date
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT make_date(y, m, d)
    FROM (SELECT x[1]::integer AS y, x[2]::integer AS m, x[3]::integer AS d
            FROM regexp_match(p_text, '^([0-9]{4})-(0[1-9]|1[0-2])-([0-2][0-9]|3[01])$') AS x) v
   WHERE d BETWEEN 1 AND extract(day FROM make_date(y, m, 1) + interval '1 month - 1 day')
     AND make_date(y, m, d) BETWEEN prescient.calendar_first_day() AND prescient.calendar_last_day()
$$;

-- Which days a holiday or a special day names: 'YYYY-MM-DD' or 'YYYY-MM-DD..YYYY-MM-DD' (kind 'dates', from
-- and to), 'MM-DD' every year (kind 'yearly', month and day; 02-29 in leap years only), or 'first|second|
-- third|fourth|last <weekday> of <month>' every year (kind 'nth', month, nth (-1: last) and isodow). NULLs
-- when it names no day.
CREATE OR REPLACE FUNCTION prescient.calendar_day_rule(
    p_text text, OUT kind text, OUT from_date date, OUT to_date date, OUT month integer, OUT day integer,
    OUT nth integer, OUT isodow integer)
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT 'dates', prescient.calendar_date(r[1]), prescient.calendar_date(coalesce(r[2], r[1])),
         NULL::integer, NULL::integer, NULL::integer, NULL::integer
    FROM regexp_match(p_text, '^([0-9-]{10})(?:\.\.([0-9-]{10}))?$') AS r
   -- regexp_match answers NULL, a row all the same, when the text does not match: each branch says "matched".
   WHERE r IS NOT NULL AND prescient.calendar_date(r[1]) IS NOT NULL AND prescient.calendar_date(coalesce(r[2], r[1])) IS NOT NULL
     AND prescient.calendar_date(r[1]) <= prescient.calendar_date(coalesce(r[2], r[1]))
  UNION ALL
  SELECT 'yearly', NULL, NULL, r[1]::integer, r[2]::integer, NULL, NULL
    FROM regexp_match(p_text, '^(0[1-9]|1[0-2])-([0-2][0-9]|3[01])$') AS r
   WHERE r IS NOT NULL AND r[2]::integer BETWEEN 1 AND extract(day FROM make_date(2000, r[1]::integer, 1) + interval '1 month - 1 day')
  UNION ALL
  SELECT 'nth', NULL, NULL,
         array_position(ARRAY['jan','feb','mar','apr','may','jun','jul','aug','sep','oct','nov','dec'], r[3]), NULL,
         CASE r[1] WHEN 'last' THEN -1 ELSE array_position(ARRAY['first','second','third','fourth'], r[1]) END,
         array_position(prescient.calendar_weekdays(), r[2])
    FROM regexp_match(p_text, '^(first|second|third|fourth|last) (mon|tue|wed|thu|fri|sat|sun) of '
                              '(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)$') AS r
   WHERE r IS NOT NULL
$$;

-- A definition's holidays and special days as rules, in the order they take precedence (priority, then
-- ord): special days by date, holidays by date, special days by a yearly rule, holidays by a yearly rule.
-- hours: the day's intervals (a holiday's: none). Items that name no day are left out (calendar_problem
-- names them).
CREATE OR REPLACE FUNCTION prescient.calendar_rules(p_definition jsonb)
  RETURNS TABLE (priority integer, ord bigint, kind text, from_date date, to_date date, month integer,
                 day integer, nth integer, isodow integer, hours jsonb)
  LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN r.kind = 'dates' THEN 1 ELSE 3 END, i.n, r.kind, r.from_date, r.to_date, r.month, r.day,
         r.nth, r.isodow, i.item -> 'hours'
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(p_definition -> 'days') = 'array'
                                   THEN p_definition -> 'days' ELSE '[]' END) WITH ORDINALITY AS i(item, n),
         prescient.calendar_day_rule(i.item ->> 'date') AS r
   WHERE jsonb_typeof(i.item) = 'object' AND jsonb_typeof(i.item -> 'hours') = 'array'
  UNION ALL
  SELECT CASE WHEN r.kind = 'dates' THEN 2 ELSE 4 END, i.n, r.kind, r.from_date, r.to_date, r.month, r.day,
         r.nth, r.isodow, '[]'::jsonb
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(p_definition -> 'holidays') = 'array'
                                   THEN p_definition -> 'holidays' ELSE '[]' END) WITH ORDINALITY AS i(item, n),
         prescient.calendar_day_rule(i.item #>> '{}') AS r
   WHERE jsonb_typeof(i.item) = 'string'
$$;

-- What is wrong with a calendar (its name, zone and definition), in one line naming the value; NULL when
-- nothing is. The definition: {"hours": {"mon": ["09:00-17:00"], ...}, "holidays": ["12-25", ...],
-- "days": [{"date": "12-24", "hours": ["09:00-12:00"]}, ...]}, each key optional; a weekday not in hours is
-- closed. Intervals of one weekday, or of one special day, may not overlap, nor may a weekday's reach into
-- the next weekday's.
-- JIT off: its self-joins of a few rows are estimated as thousands, and compiling them cost 160 ms a call.
CREATE OR REPLACE FUNCTION prescient.calendar_problem(p_name text, p_time_zone text, p_definition jsonb)
  RETURNS text LANGUAGE plpgsql STABLE SET jit = off AS $$
DECLARE
  c_weekdays constant text[] := prescient.calendar_weekdays();
  v_shown constant text := prescient.name_shown(coalesce(p_name, ''));
  v_problem text;
BEGIN
  IF p_name IS NULL OR octet_length(p_name) NOT BETWEEN 1 AND 200 THEN
    RETURN format('a calendar''s name is 1 to 200 bytes, not %s', v_shown);
  END IF;
  v_problem := prescient.name_problem('calendar', p_name);
  IF v_problem IS NOT NULL THEN
    RETURN v_problem;
  END IF;
  -- pg_timezone_names reads every zone's file (0.2 s): a zone a calendar already uses is known good.
  IF p_time_zone IS NULL OR (NOT EXISTS (SELECT 1 FROM prescient.zone_offset WHERE time_zone = p_time_zone)
                             AND NOT EXISTS (SELECT 1 FROM pg_timezone_names WHERE name = p_time_zone)) THEN
    RETURN format('calendar %s: time zone %s does not exist (an IANA name, such as Europe/Berlin)', v_shown,
                  prescient.name_shown(coalesce(p_time_zone, '')));
  END IF;
  IF jsonb_typeof(p_definition) IS DISTINCT FROM 'object' THEN
    RETURN format('calendar %s: its definition is a JSON object with hours, holidays and days, not %s', v_shown,
                  left(coalesce(p_definition::text, 'null'), 64));
  END IF;
  SELECT format('calendar %s: unknown key %s (it takes hours, holidays and days)', v_shown, prescient.name_shown(k))
    INTO v_problem FROM jsonb_object_keys(p_definition) AS k WHERE k NOT IN ('hours', 'holidays', 'days') LIMIT 1;
  IF v_problem IS NOT NULL THEN
    RETURN v_problem;
  END IF;
  IF p_definition ? 'hours' THEN
    IF jsonb_typeof(p_definition -> 'hours') <> 'object' THEN
      RETURN format('calendar %s: hours is an object of weekdays (mon to sun), each a list of intervals', v_shown);
    END IF;
    SELECT CASE WHEN k <> ALL (c_weekdays) THEN format('calendar %s: hours has %s, not a weekday (mon to sun)', v_shown, prescient.name_shown(k))
                ELSE format('calendar %s: hours.%s is a list of intervals such as ["09:00-17:00"], not %s', v_shown, k, left(v::text, 64)) END
      INTO v_problem
      FROM jsonb_each(p_definition -> 'hours') AS e(k, v)
     WHERE k <> ALL (c_weekdays) OR jsonb_typeof(v) <> 'array' LIMIT 1;
    IF v_problem IS NOT NULL THEN
      RETURN v_problem;
    END IF;
    SELECT format('calendar %s: hours.%s holds %s, not an interval HH:MM-HH:MM that opens and closes at different times',
                  v_shown, e.k, left(x::text, 64))
      INTO v_problem
      FROM jsonb_each(p_definition -> 'hours') AS e(k, v), jsonb_array_elements(e.v) AS x
     WHERE jsonb_typeof(x) <> 'string' OR (prescient.calendar_interval(x #>> '{}')).open_minute IS NULL LIMIT 1;
    IF v_problem IS NOT NULL THEN
      RETURN v_problem;
    END IF;
    -- Overlaps in the week, the last weekday's intervals reaching into the first's included.
    WITH iv AS (
      SELECT e.k, x.t, x.n, (array_position(c_weekdays, e.k) - 1) * 1440 + i.open_minute AS a,
             (array_position(c_weekdays, e.k) - 1) * 1440 + i.close_minute AS b
        FROM jsonb_each(p_definition -> 'hours') AS e(k, v),
             jsonb_array_elements_text(e.v) WITH ORDINALITY AS x(t, n),
             prescient.calendar_interval(x.t) AS i)
    SELECT format('calendar %s: hours.%s %s overlaps hours.%s %s', v_shown, x.k, x.t, y.k, y.t) INTO v_problem
      FROM iv x JOIN iv y ON (x.a, x.n) < (y.a, y.n)
     WHERE (x.a < y.b AND y.a < x.b) OR (x.a + 10080 < y.b AND y.a < x.b + 10080)
        OR (x.a < y.b + 10080 AND y.a + 10080 < x.b)
     ORDER BY x.a, y.a LIMIT 1;
    IF v_problem IS NOT NULL THEN
      RETURN v_problem;
    END IF;
  END IF;
  IF p_definition ? 'holidays' THEN
    IF jsonb_typeof(p_definition -> 'holidays') <> 'array' THEN
      RETURN format('calendar %s: holidays is a list of days', v_shown);
    END IF;
    SELECT format('calendar %s: holiday %s names no day (%s)', v_shown, left(x::text, 64),
                  prescient.calendar_day_forms())
      INTO v_problem
      FROM jsonb_array_elements(p_definition -> 'holidays') AS x
     WHERE jsonb_typeof(x) <> 'string' OR (prescient.calendar_day_rule(x #>> '{}')).kind IS NULL LIMIT 1;
    IF v_problem IS NOT NULL THEN
      RETURN v_problem;
    END IF;
  END IF;
  IF p_definition ? 'days' THEN
    IF jsonb_typeof(p_definition -> 'days') <> 'array' THEN
      RETURN format('calendar %s: days is a list of {"date": ..., "hours": [...]}', v_shown);
    END IF;
    SELECT CASE
             WHEN jsonb_typeof(x) <> 'object' OR jsonb_typeof(x -> 'hours') IS DISTINCT FROM 'array'
                  OR EXISTS (SELECT 1 FROM jsonb_object_keys(x) AS k WHERE k NOT IN ('date', 'hours'))
               THEN format('calendar %s: a special day is {"date": ..., "hours": [...]}, not %s', v_shown, left(x::text, 64))
             WHEN (prescient.calendar_day_rule(x ->> 'date')).kind IS NULL
               THEN format('calendar %s: special day %s names no day (%s)', v_shown, left((x -> 'date')::text, 64),
                           prescient.calendar_day_forms())
           END
      INTO v_problem
      FROM jsonb_array_elements(p_definition -> 'days') AS x
     WHERE jsonb_typeof(x) <> 'object' OR jsonb_typeof(x -> 'hours') IS DISTINCT FROM 'array'
        OR EXISTS (SELECT 1 FROM jsonb_object_keys(x) AS k WHERE k NOT IN ('date', 'hours'))
        OR (prescient.calendar_day_rule(x ->> 'date')).kind IS NULL
     LIMIT 1;
    IF v_problem IS NOT NULL THEN
      RETURN v_problem;
    END IF;
    SELECT format('calendar %s: special day %s holds %s, not an interval HH:MM-HH:MM that opens and closes at '
                  'different times', v_shown, x ->> 'date', left(h::text, 64))
      INTO v_problem
      FROM jsonb_array_elements(p_definition -> 'days') AS x, jsonb_array_elements(x -> 'hours') AS h
     WHERE jsonb_typeof(h) <> 'string' OR (prescient.calendar_interval(h #>> '{}')).open_minute IS NULL LIMIT 1;
    IF v_problem IS NOT NULL THEN
      RETURN v_problem;
    END IF;
    WITH iv AS (
      SELECT d.n AS day_n, d.x ->> 'date' AS date_text, h.t, h.n, i.open_minute AS a, i.close_minute AS b
        FROM jsonb_array_elements(p_definition -> 'days') WITH ORDINALITY AS d(x, n),
             jsonb_array_elements_text(d.x -> 'hours') WITH ORDINALITY AS h(t, n),
             prescient.calendar_interval(h.t) AS i)
    SELECT format('calendar %s: special day %s: %s overlaps %s', v_shown, x.date_text, x.t, y.t) INTO v_problem
      FROM iv x JOIN iv y ON x.day_n = y.day_n AND x.n < y.n
     WHERE x.a < y.b AND y.a < x.b
     ORDER BY x.day_n, x.n LIMIT 1;
    IF v_problem IS NOT NULL THEN
      RETURN v_problem;
    END IF;
  END IF;
  RETURN NULL;
END $$;

-- Sets a calendar: a new one at version 1, else its next version, and what that version is open
-- (calendar_span, calendar_open_day), from the definition as calendar_problem takes it. Refused whole
-- (PR400, one line naming the value) when the definition is wrong or is never open in the range.
-- Returns the version set.
CREATE OR REPLACE FUNCTION prescient.calendar_set(p_name text, p_time_zone text, p_definition jsonb,
                                                  p_by text DEFAULT NULL)
  RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  v_problem constant text := prescient.calendar_problem(p_name, p_time_zone, p_definition);
  v_version integer;
  v_now constant timestamptz := now();
  v_by constant text := coalesce(p_by, current_user);
  c_weekdays constant text[] := prescient.calendar_weekdays();
BEGIN
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  PERFORM prescient.ensure_zone_offsets(p_time_zone);
  INSERT INTO prescient.calendar AS c (name, version, time_zone, definition, changed_at, changed_by)
  VALUES (p_name, 1, p_time_zone, p_definition, v_now, v_by)
  ON CONFLICT (name) DO UPDATE
    SET version = c.version + 1, time_zone = excluded.time_zone, definition = excluded.definition,
        changed_at = excluded.changed_at, changed_by = excluded.changed_by
  RETURNING version INTO v_version;
  INSERT INTO prescient.calendar_version (calendar, version, time_zone, definition, made_at, made_by)
  VALUES (p_name, v_version, p_time_zone, p_definition, v_now, v_by);
  DELETE FROM prescient.calendar_span WHERE calendar = p_name;
  DELETE FROM prescient.calendar_open_day WHERE calendar = p_name;
  -- Each day's intervals in wall time, then each as instants: in each stretch of one offset, the instants
  -- whose wall time is in the interval, from the first whose wall time has not been seen before.
  -- Materialised: inlined into the lateral lookup below, the definition would be parsed again for each day.
  WITH rules AS MATERIALIZED (SELECT * FROM prescient.calendar_rules(p_definition)),
  days AS (
    SELECT d::date AS day
      FROM generate_series(prescient.calendar_first_day(), prescient.calendar_last_day(), interval '1 day') AS d),
  -- Each day a rule names, with the hours of the rule that wins there: every rule's days are listed (its
  -- dates, or its day in each year of the range), and the first by precedence is kept.
  rule_days AS (
    SELECT DISTINCT ON (x.day) x.day, r.hours
      FROM rules r
     CROSS JOIN LATERAL (
       SELECT d::date AS day FROM generate_series(r.from_date, r.to_date, interval '1 day') AS d WHERE r.kind = 'dates'
       UNION ALL
       SELECT make_date(y, r.month, r.day) FROM generate_series(2000, 2099) AS y
        WHERE r.kind = 'yearly' AND (r.month <> 2 OR r.day <> 29 OR (y % 4 = 0 AND (y % 100 <> 0 OR y % 400 = 0)))
       UNION ALL
       SELECT CASE WHEN r.nth > 0 THEN m.first + (r.isodow - extract(isodow FROM m.first)::integer + 7) % 7 + (r.nth - 1) * 7
                   ELSE m.last - (extract(isodow FROM m.last)::integer - r.isodow + 7) % 7 END
         FROM generate_series(2000, 2099) AS y,
              LATERAL (SELECT make_date(y, r.month, 1) AS first,
                              (make_date(y, r.month, 1) + interval '1 month - 1 day')::date AS last) AS m
        WHERE r.kind = 'nth') AS x
     ORDER BY x.day, r.priority, r.ord),
  effective AS (
    SELECT d.day, coalesce(r.hours, p_definition -> 'hours' -> c_weekdays[extract(isodow FROM d.day)]) AS hours
      FROM days d LEFT JOIN rule_days r ON r.day = d.day),
  -- Each interval's text read once, not once a day.
  intervals AS MATERIALIZED (
    SELECT t, i.open_minute, i.close_minute
      FROM (SELECT DISTINCT h.t FROM effective e, jsonb_array_elements_text(e.hours) AS h(t)) AS x,
           prescient.calendar_interval(x.t) AS i),
  walls AS (
    SELECT e.day, e.day + make_interval(mins => i.open_minute) AS wall_open,
           e.day + make_interval(mins => i.close_minute) AS wall_close
      FROM effective e, jsonb_array_elements_text(e.hours) AS h(t) JOIN intervals i ON i.t = h.t),
  -- The stretches of one offset an interval may meet (offsets are within a day of UTC): the one under the
  -- day before it, and those starting from then to the day after it; two index scans.
  pieces AS (
    SELECT * FROM (
      SELECT w.day,
             greatest((w.wall_open - make_interval(secs => z.offset_seconds)) AT TIME ZONE 'UTC',
                      z.first_pass_from) AS opens_at,
             least((w.wall_close - make_interval(secs => z.offset_seconds)) AT TIME ZONE 'UTC', z.ends_at) AS closes_at
        FROM walls w
       CROSS JOIN LATERAL (
         (SELECT * FROM prescient.zone_offset z
           WHERE z.time_zone = p_time_zone AND z.starts_at <= (w.wall_open AT TIME ZONE 'UTC') - interval '1 day'
           ORDER BY z.starts_at DESC LIMIT 1)
         UNION ALL
         SELECT * FROM prescient.zone_offset z
          WHERE z.time_zone = p_time_zone AND z.starts_at > (w.wall_open AT TIME ZONE 'UTC') - interval '1 day'
            AND z.starts_at < (w.wall_close AT TIME ZONE 'UTC') + interval '1 day') AS z) p
     WHERE opens_at < closes_at),
  open_days AS (
    INSERT INTO prescient.calendar_open_day (calendar, day) SELECT DISTINCT p_name, day FROM pieces),
  -- Pieces that meet or overlap (a special day's interval reaching into the next day's) become one span.
  reaches AS (
    SELECT opens_at, closes_at,
           max(closes_at) OVER (ORDER BY opens_at, closes_at ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
      FROM pieces),
  islands AS (
    SELECT opens_at, closes_at,
           count(*) FILTER (WHERE reach IS NULL OR opens_at > reach) OVER (ORDER BY opens_at, closes_at) AS island
      FROM reaches),
  spans AS (SELECT min(opens_at) AS opens_at, max(closes_at) AS closes_at FROM islands GROUP BY island)
  -- open_before_us: the open time of every span before it.
  INSERT INTO prescient.calendar_span (calendar, opens_at, closes_at, open_before_us)
  SELECT p_name, opens_at, closes_at,
         coalesce(sum(prescient.us(closes_at) - prescient.us(opens_at))
                    OVER (ORDER BY opens_at ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
    FROM spans;
  IF NOT EXISTS (SELECT 1 FROM prescient.calendar_span WHERE calendar = p_name) THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('calendar %s is never open from %s to %s: give it hours or special days with hours',
                       prescient.name_shown(p_name), prescient.calendar_first_day(), prescient.calendar_last_day());
  END IF;
  RETURN v_version;
END $$;

-- A calendar's zone, or PR404 naming it.
CREATE OR REPLACE FUNCTION prescient.calendar_zone(p_calendar text) RETURNS text
  LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_zone text;
BEGIN
  SELECT time_zone INTO v_zone FROM prescient.calendar WHERE name = p_calendar;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PR404',
      MESSAGE = format('no calendar named %s (prescient calendar list)', prescient.name_shown(coalesce(p_calendar, '')));
  END IF;
  RETURN v_zone;
END $$;

-- The arithmetic's cores, each an index lookup on calendar_span, with no check of its input: SQL functions that
-- return a row, so that the planner inlines them into the statement that calls them (a bulk enqueue of 100 000
-- business delays, docs/performance.md), and the functions below, which judge their input first, call them too.

-- The open time of a calendar from the start of its range to an instant, in microseconds (0 before its first
-- opening).
CREATE OR REPLACE FUNCTION prescient.open_before(p_calendar text, p_at timestamptz) RETURNS TABLE (open_us bigint)
  LANGUAGE sql STABLE AS $$
  SELECT coalesce((SELECT s.open_before_us + greatest(0, prescient.us(least(s.closes_at, p_at)) - prescient.us(s.opens_at))
                     FROM prescient.calendar_span s
                    WHERE s.calendar = p_calendar AND s.opens_at <= p_at
                    ORDER BY s.opens_at DESC LIMIT 1), 0)
$$;

-- The earliest instant at which a calendar's open time from the start of its range reaches p_target_us: in the
-- last span that starts below it. No row when that is past the range.
CREATE OR REPLACE FUNCTION prescient.open_time_reached(p_calendar text, p_target_us bigint) RETURNS TABLE (at timestamptz)
  LANGUAGE sql STABLE AS $$
  SELECT s.opens_at + (p_target_us - s.open_before_us) * interval '1 microsecond'
    FROM (SELECT s.opens_at, s.closes_at, s.open_before_us FROM prescient.calendar_span s
           WHERE s.calendar = p_calendar AND s.open_before_us < p_target_us
           ORDER BY s.open_before_us DESC LIMIT 1) s
   WHERE prescient.us(s.closes_at) - prescient.us(s.opens_at) >= p_target_us - s.open_before_us
$$;

-- The first instant at or after p_from at which a calendar is open: p_from when it is open then. NULL when no
-- opening is left in the range.
CREATE OR REPLACE FUNCTION prescient.opening_from(p_calendar text, p_from timestamptz) RETURNS TABLE (at timestamptz)
  LANGUAGE sql STABLE AS $$
  SELECT coalesce((SELECT p_from FROM (SELECT s.closes_at FROM prescient.calendar_span s
                                        WHERE s.calendar = p_calendar AND s.opens_at <= p_from
                                        ORDER BY s.opens_at DESC LIMIT 1) s
                    WHERE s.closes_at > p_from),
                  (SELECT s.opens_at FROM prescient.calendar_span s WHERE s.calendar = p_calendar AND s.opens_at > p_from
                    ORDER BY s.opens_at LIMIT 1))
$$;

-- The open time of a calendar from the start of its range to an instant, in microseconds; PR400 when the
-- instant is outside the range.
CREATE OR REPLACE FUNCTION prescient.calendar_open_until(p_calendar text, p_at timestamptz) RETURNS bigint
  LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_zone constant text := prescient.calendar_zone(p_calendar);
BEGIN
  IF p_at IS NULL OR p_at < prescient.calendar_first_day()::timestamp AT TIME ZONE v_zone
     OR p_at >= (prescient.calendar_last_day() + 1)::timestamp AT TIME ZONE v_zone THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('%s is outside calendar %s''s range (%s to %s, in %s)', coalesce(prescient.iso(p_at), 'NULL'),
                       prescient.name_shown(p_calendar), prescient.calendar_first_day(), prescient.calendar_last_day(), v_zone);
  END IF;
  RETURN (SELECT b.open_us FROM prescient.open_before(p_calendar, p_at) b);
END $$;

-- The earliest instant at which a calendar has been open p_open longer than at p_from: p_from plus p_open of
-- open time (a closing time when it ends there). p_open is hours, minutes and seconds, more than zero (a day
-- is not a length of open time: business_add_days counts days).
CREATE OR REPLACE FUNCTION prescient.business_add(p_calendar text, p_from timestamptz, p_open interval)
  RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_at timestamptz;
BEGIN
  IF p_open IS NULL OR p_open <= interval '0' OR extract(day FROM p_open) <> 0 OR extract(month FROM p_open) <> 0
     OR extract(year FROM p_open) <> 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('business time %s: give a length of open time more than zero in hours, minutes and seconds '
                       '(24h, not 1 day; business days with business_add_days)', coalesce(p_open::text, 'NULL'));
  END IF;
  SELECT r.at INTO v_at
    FROM prescient.open_time_reached(p_calendar, prescient.calendar_open_until(p_calendar, p_from)
                                                 + prescient.us(timestamptz 'epoch' + p_open)) r;
  IF v_at IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('%s of calendar %s''s open time after %s ends after its range (to %s)', p_open,
                       prescient.name_shown(p_calendar), prescient.iso(p_from), prescient.calendar_last_day());
  END IF;
  RETURN v_at;
END $$;

-- The open time of a calendar between two instants (negative when p_to is before p_from).
CREATE OR REPLACE FUNCTION prescient.business_between(p_calendar text, p_from timestamptz, p_to timestamptz)
  RETURNS interval LANGUAGE sql STABLE
  RETURN (prescient.calendar_open_until(p_calendar, p_to) - prescient.calendar_open_until(p_calendar, p_from))
         * interval '1 microsecond';

-- p_days business days after p_from: p_from's wall time of day on the p_days-th open day after its date, or,
-- when the calendar is neither open nor closing at that time, its next opening (the rule at the top).
CREATE OR REPLACE FUNCTION prescient.business_add_days(p_calendar text, p_from timestamptz, p_days integer)
  RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_zone constant text := prescient.calendar_zone(p_calendar);
  v_wall timestamp;
  v_day date;
  v_want timestamp;
  v_first timestamptz;
  v_span prescient.calendar_span;
BEGIN
  IF p_days IS NULL OR p_days < 1 THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('business days %s: give 1 or more', coalesce(p_days::text, 'NULL'));
  END IF;
  PERFORM prescient.calendar_open_until(p_calendar, p_from);  -- refuses an instant outside the range
  v_wall := p_from AT TIME ZONE v_zone;
  SELECT d.day INTO v_day FROM prescient.calendar_open_day d
   WHERE d.calendar = p_calendar AND d.day > v_wall::date ORDER BY d.day OFFSET p_days - 1 LIMIT 1;
  IF v_day IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('%s business days of calendar %s after %s end after its range (to %s)', p_days,
                       prescient.name_shown(p_calendar), prescient.iso(p_from), prescient.calendar_last_day());
  END IF;
  v_want := v_day + (v_wall - v_wall::date);
  -- The first instant whose wall time is v_want or later: in each stretch of one offset, the first whose wall
  -- time is at least v_want; the earliest of those.
  SELECT min(greatest(z.starts_at, (v_want - make_interval(secs => z.offset_seconds)) AT TIME ZONE 'UTC'))
    INTO v_first
    FROM prescient.zone_offset z
   WHERE z.time_zone = v_zone
     AND z.starts_at < (v_want AT TIME ZONE 'UTC') + interval '1 day'
     AND z.ends_at > (v_want AT TIME ZONE 'UTC') - interval '1 day'
     AND (v_want - make_interval(secs => z.offset_seconds)) AT TIME ZONE 'UTC' < z.ends_at;
  SELECT * INTO v_span FROM prescient.calendar_span s
   WHERE s.calendar = p_calendar AND s.opens_at <= v_first ORDER BY s.opens_at DESC LIMIT 1;
  IF v_span.closes_at >= v_first THEN
    RETURN v_first;
  END IF;
  SELECT * INTO v_span FROM prescient.calendar_span s
   WHERE s.calendar = p_calendar AND s.opens_at > v_first ORDER BY s.opens_at LIMIT 1;
  RETURN v_span.opens_at;
END $$;

REVOKE EXECUTE ON FUNCTION prescient.calendar_set(text, text, jsonb, text),
  prescient.ensure_zone_offsets(text) FROM PUBLIC;
