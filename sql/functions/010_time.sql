-- Times cross the wire as integer microseconds since the Unix epoch: exact, and independent of the
-- session's time zone. Runners pass their own clock in; the SQL never decides what "now" is.
-- STABLE (timestamptz arithmetic is) and not STRICT: so the planner inlines them into the query.
CREATE OR REPLACE FUNCTION prescient.at_us(micros bigint) RETURNS timestamptz
  LANGUAGE sql STABLE PARALLEL SAFE
  -- Whole seconds and the remainder apart: a product of microseconds and an interval goes through
  -- float8 and would round beyond 2^53 microseconds (about the year 2255).
  RETURN to_timestamp(micros / 1000000) + (micros % 1000000) * interval '1 microsecond';

CREATE OR REPLACE FUNCTION prescient.us(t timestamptz) RETURNS bigint
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN (extract(epoch FROM t) * 1000000)::bigint;

-- For messages: a time as ISO-8601 UTC, written as the C++ side writes one (format_time: no fraction for
-- a whole second, no trailing zeros), so a refusal reads the same whichever door it came through.
CREATE OR REPLACE FUNCTION prescient.iso(t timestamptz) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
         || CASE WHEN extract(microseconds FROM t)::bigint % 1000000 = 0 THEN ''
                 ELSE rtrim(to_char(t AT TIME ZONE 'UTC', '.US'), '0') END || 'Z';

-- For messages: a duration as the CLI takes one and the C++ side writes one (format_duration: 1h30m, -5m,
-- 0s; a fraction of a second kept, 1.5s), not as PostgreSQL prints an interval (-00:05:00). A month or a
-- year counts 30 or 365.25 days, as extract(epoch) counts them.
CREATE OR REPLACE FUNCTION prescient.duration_text(p interval) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN CASE
    WHEN extract(epoch FROM p) = 0 THEN '0s'
    ELSE CASE WHEN extract(epoch FROM p) < 0 THEN '-' ELSE '' END
         || concat(nullif(trunc(abs(extract(epoch FROM p)) / 86400), 0) || 'd',
                   nullif(trunc(mod(abs(extract(epoch FROM p)), 86400) / 3600), 0) || 'h',
                   nullif(trunc(mod(abs(extract(epoch FROM p)), 3600) / 60), 0) || 'm',
                   nullif(trim_scale(mod(abs(extract(epoch FROM p)), 60)), 0) || 's')
  END;
