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

-- For messages: a time as ISO-8601 UTC.
CREATE OR REPLACE FUNCTION prescient.iso(t timestamptz) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  RETURN to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
         || CASE WHEN extract(microseconds FROM t)::bigint % 1000000 = 0 THEN ''
                 ELSE to_char(t AT TIME ZONE 'UTC', '.US') END || 'Z';
