-- A check timed in business time (docs/business-time.md, "Enqueue in business time"): the rules every enqueue
-- door shares for p_calendar and p_business_delay, as 030's are for the rest. A check given a calendar is due
-- p_business_delay of the calendar's open time after p_at, or, with no delay, at p_at or the calendar's next
-- opening when it is closed then. The arithmetic is 086's; these say what a request may ask. plpgsql, so that
-- they may name 086's functions, which are made after these: only the items that carry a calendar call them,
-- and a bulk load without one pays a test of two NULLs.

-- What is wrong with a business delay as people write it, or NULL: "3bd" (1 or more business days), or a length
-- of open time in hours, minutes and seconds ("4h", "90m", "1h30m", "2 hours"), more than zero. The one reading
-- of the text: business_after (087) and every enqueue door use it, so a day ("1d") is refused everywhere in the
-- same words rather than read as 24 hours here and refused there.
CREATE OR REPLACE FUNCTION prescient.business_delay_problem(p_delay text) RETURNS text
  LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF p_delay ~ '^\s*[0-9]{1,9}\s*bd\s*$' THEN
    RETURN CASE WHEN substring(p_delay FROM '[0-9]+')::integer < 1
      THEN format('business delay %L: give 1 or more business days', p_delay) END;
  END IF;
  -- The units PostgreSQL's interval input reads, so the cast below cannot fail; six digits cannot overflow it.
  IF p_delay ~* '^\s*([0-9]{1,6}(\.[0-9]{1,6})?\s*(h|hrs?|hours?|m|mins?|minutes?|s|secs?|seconds?)\s*)+$' THEN
    RETURN CASE WHEN p_delay::interval <= interval '0'
      THEN format('business delay %L: give a length of open time more than zero', p_delay) END;
  END IF;
  RETURN format('business delay %s: write a length of open time more than zero in hours, minutes and seconds (4h, '
                '90m, 1h30m) or business days (3bd)', coalesce(quote_literal(left(p_delay, 64)), 'NULL'));
END $$;

-- 'no calendar named ...' when p_calendar names none, else NULL: the one wording for an enqueue's calendar and a
-- schedule's (045).
CREATE OR REPLACE FUNCTION prescient.calendar_known_problem(p_calendar text) RETURNS text
  LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF EXISTS (SELECT FROM prescient.calendar c WHERE c.name = p_calendar) THEN
    RETURN NULL;
  END IF;
  RETURN format('no calendar named %s (prescient calendar list)', prescient.name_shown(p_calendar));
END $$;

-- What is wrong with a request's calendar and business delay, or NULL: a delay with no calendar, an unknown
-- calendar, a delay that is not one, a time outside the calendar's range. Judged before anything is written, so
-- that business_due, which raises, is then called only on what it can resolve (bar a delay that ends past the
-- calendar's range, in 2100).
CREATE OR REPLACE FUNCTION prescient.business_problem(p_calendar text, p_at timestamptz, p_delay text) RETURNS text
  LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_zone text;
  v_problem text;
BEGIN
  IF p_calendar IS NULL THEN
    RETURN CASE WHEN p_delay IS NOT NULL
      THEN format('business delay %L needs a calendar to count it in', left(p_delay, 64)) END;
  END IF;
  SELECT c.time_zone INTO v_zone FROM prescient.calendar c WHERE c.name = p_calendar;
  IF NOT FOUND THEN
    RETURN prescient.calendar_known_problem(p_calendar);
  END IF;
  IF p_delay IS NOT NULL THEN
    v_problem := prescient.business_delay_problem(p_delay);
    IF v_problem IS NOT NULL THEN
      RETURN v_problem;
    END IF;
  END IF;
  IF p_at < prescient.calendar_first_day()::timestamp AT TIME ZONE v_zone
     OR p_at >= (prescient.calendar_last_day() + 1)::timestamp AT TIME ZONE v_zone THEN
    RETURN format('%s is outside calendar %s''s range (%s to %s, in %s)', prescient.iso(p_at),
                  prescient.name_shown(p_calendar), prescient.calendar_first_day(), prescient.calendar_last_day(), v_zone);
  END IF;
  RETURN NULL;
END $$;

-- When such a check is due, and the version of the calendar that computed it: business_due (087: it names 086's
-- arithmetic, made after this file), and its slot in a window, spread_in_calendar (087).
