-- What the doors to business time call (the CLI's `prescient calendar`, and an enqueue's business delay, 038):
-- adding a calendar that must be new, adding holidays to one, the next opening, a business delay as people write
-- it, and a window counted in open time. The calendars and their arithmetic are 086's.

-- Adds a calendar that does not exist yet (version 1): PR409 naming it when it does (calendar_set makes its
-- next version instead). Refused as calendar_set refuses a definition.
CREATE OR REPLACE FUNCTION prescient.calendar_add(p_name text, p_time_zone text, p_definition jsonb,
                                                  p_by text DEFAULT NULL)
  RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
  -- Serialises adders of one name: the second waits, then finds the first's row.
  PERFORM pg_advisory_xact_lock(hashtextextended('prescient.calendar:' || coalesce(p_name, ''), 0));
  IF EXISTS (SELECT 1 FROM prescient.calendar WHERE name = p_name) THEN
    RAISE EXCEPTION USING ERRCODE = 'PR409',
      MESSAGE = format('calendar %s exists (version %s): prescient calendar set changes it', prescient.name_shown(p_name),
                       (SELECT version FROM prescient.calendar WHERE name = p_name));
  END IF;
  RETURN prescient.calendar_set(p_name, p_time_zone, p_definition, p_by);
END $$;

-- Adds holidays (each as the definition's "holidays" takes them: a date, a range, a yearly date or rule) to a
-- calendar: its next version, the same zone, the holidays after those it had; PR404 for an unknown calendar,
-- PR400 for a holiday calendar_set refuses, and a holiday it already has is not added twice.
CREATE OR REPLACE FUNCTION prescient.calendar_add_holidays(p_name text, p_holidays text[], p_by text DEFAULT NULL)
  RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  v_calendar prescient.calendar;
BEGIN
  PERFORM prescient.calendar_zone(p_name);  -- PR404 naming it
  SELECT * INTO v_calendar FROM prescient.calendar WHERE name = p_name FOR UPDATE;
  IF coalesce(cardinality(p_holidays), 0) = 0 THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = 'no holiday given: name one or more days';
  END IF;
  RETURN prescient.calendar_set(
    p_name, v_calendar.time_zone,
    jsonb_set(v_calendar.definition, '{holidays}',
              coalesce(v_calendar.definition -> 'holidays', '[]'::jsonb)
              || coalesce((SELECT jsonb_agg(h ORDER BY o) FROM unnest(p_holidays) WITH ORDINALITY AS x(h, o)
                            WHERE h IS NULL OR NOT coalesce(v_calendar.definition -> 'holidays', '[]'::jsonb) ? h),
                          '[]'::jsonb)),
    p_by);
END $$;

-- The first instant at or after p_from at which a calendar is open: p_from itself when it is open then.
-- PR404 for an unknown calendar, PR400 for an instant outside its range or no opening left in it.
CREATE OR REPLACE FUNCTION prescient.business_next_open(p_calendar text, p_from timestamptz)
  RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_at timestamptz;
BEGIN
  PERFORM prescient.calendar_open_until(p_calendar, p_from);  -- refuses an unknown calendar, or p_from outside
  SELECT o.at INTO v_at FROM prescient.opening_from(p_calendar, p_from) o;
  IF v_at IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400',
      MESSAGE = format('calendar %s does not open after %s in its range (to %s)', prescient.name_shown(p_calendar),
                       prescient.iso(p_from), prescient.calendar_last_day());
  END IF;
  RETURN v_at;
END $$;

-- A business delay as people write it, after p_from: "3bd" is 3 business days (business_add_days), any other
-- delay a length of open time ("4h", "90m", "1h30m": business_add). What may be written is
-- business_delay_problem's (038), the one reading for every door: PR400 naming the text when it is neither.
CREATE OR REPLACE FUNCTION prescient.business_after(p_calendar text, p_from timestamptz, p_delay text)
  RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_problem constant text := prescient.business_delay_problem(p_delay);
BEGIN
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PR400', MESSAGE = v_problem;
  END IF;
  IF p_delay ~ 'bd\s*$' THEN
    RETURN prescient.business_add_days(p_calendar, p_from, substring(p_delay FROM '[0-9]+')::integer);
  END IF;
  RETURN prescient.business_add(p_calendar, p_from, p_delay::interval);
END $$;

-- A calendar-bound check's slot in its window (p_window, as spread_slot reads it): the window's offset is counted
-- in the calendar's open time, so that spreading a herd never moves a check out of open time (one at a closing
-- instant spreads into the next opening). Callers call it for a check with a calendar only, spread_slot
-- otherwise: plpgsql, so its plan is kept for the session, where an SQL function that the planner cannot
-- inline (its arguments are expressions, used more than once) was planned again in every transaction.
CREATE OR REPLACE FUNCTION prescient.spread_in_calendar(p_calendar text, p_slot timestamptz, p_id bigint,
                                                        p_window interval, p_now timestamptz, p_slot_seconds integer)
  RETURNS timestamptz LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_spread constant timestamptz := prescient.spread_slot(p_slot, p_id, p_window, p_slot_seconds);
BEGIN
  IF v_spread = p_slot THEN
    RETURN p_slot;
  END IF;
  RETURN prescient.slot_for(prescient.business_add(p_calendar, p_slot, v_spread - p_slot), p_now, p_slot_seconds);
END $$;

-- The timeline rows of runs that answered in business time, written by the settlement just made: each names
-- the calendar, the version that computed its next time and the delay (check_run, 0062). A run is its check
-- and the time it ran for; p_since, the settlement's now at the latest, keeps the look-up to the partitions
-- it wrote. Elements with no calendar are left alone; a run the judge ended (no timeline row) has nothing to
-- name.
CREATE OR REPLACE FUNCTION prescient.runs_timed_by(p_ids bigint[], p_due timestamptz[], p_calendar text[],
                                                   p_version integer[], p_delay text[], p_since timestamptz)
  RETURNS void LANGUAGE sql AS $$
  UPDATE prescient.check_run r
     SET calendar = u.calendar, calendar_version = u.version, business_delay = u.delay
    FROM unnest(p_ids, p_due, p_calendar, p_version, p_delay) AS u(id, due, calendar, version, delay)
   WHERE u.calendar IS NOT NULL AND r.id = u.id AND r.due_at = u.due AND r.finished_at >= p_since
     AND r.result = 'rescheduled'
$$;

-- A check's slot in its window (NULL: none), whichever its time is counted in: spread_slot, or with a calendar
-- spread_in_calendar. The one choice every enqueue makes (040, 050); inlined, so a check without a calendar
-- pays a test of a NULL.
CREATE OR REPLACE FUNCTION prescient.spread_slot_in(p_calendar text, p_slot timestamptz, p_id bigint,
                                                    p_window interval, p_now timestamptz, p_slot_seconds integer)
  RETURNS timestamptz LANGUAGE sql STABLE
  RETURN CASE WHEN p_calendar IS NULL THEN prescient.spread_slot(p_slot, p_id, p_window, p_slot_seconds)
              ELSE prescient.spread_in_calendar(p_calendar, p_slot, p_id, p_window, p_now, p_slot_seconds) END;

-- When a check given a calendar is due (038, docs/business-time.md "Enqueue in business time"), and the version
-- of the calendar that says so: p_delay of open time after p_at, or with no delay p_at's next opening (p_at when
-- open); a time that has passed by p_now is the next opening from p_now instead, so a check bound to a calendar
-- is never due in closed time. No row for no calendar. Judge the request first (business_problem): a delay that
-- ends past the range, which the cores answer with NULL, is raised by business_after or business_next_open. An
-- SQL function returning a row, so that a bulk enqueue runs it inlined, two or three index lookups an item; a
-- delay in business days calls business_add_days.
CREATE OR REPLACE FUNCTION prescient.business_due(p_calendar text, p_at timestamptz, p_delay text, p_now timestamptz)
  RETURNS TABLE (due_at timestamptz, calendar_version integer) LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN a.at >= p_now THEN a.at
              ELSE coalesce((SELECT o.at FROM prescient.opening_from(p_calendar, p_now) o),
                            prescient.business_next_open(p_calendar, p_now)) END,
         c.version
    FROM prescient.calendar c
   -- OFFSET 0 keeps each sub-query whole: pulled up into the expressions that name its column, it was computed
   -- once for each of them (three times the index lookups).
   CROSS JOIN LATERAL (
     SELECT coalesce(CASE WHEN p_delay IS NULL THEN (SELECT o.at FROM prescient.opening_from(p_calendar, p_at) o)
                          WHEN p_delay ~ 'bd\s*$' THEN prescient.business_after(p_calendar, p_at, p_delay)
                          ELSE (SELECT r.at
                                  FROM (SELECT b.open_us + prescient.us(timestamptz 'epoch' + p_delay::interval) AS open_us
                                          FROM prescient.open_before(p_calendar, p_at) b OFFSET 0) target,
                                       prescient.open_time_reached(p_calendar, target.open_us) r) END,
                     CASE WHEN p_delay IS NULL THEN prescient.business_next_open(p_calendar, p_at)
                          ELSE prescient.business_after(p_calendar, p_at, p_delay) END) AS at
     OFFSET 0) a
   WHERE c.name = p_calendar
$$;

-- Answers in business time (docs/business-time.md, "Answers in business time"), the runner's and a worker's:
-- item n of the arrays asks for p_delay[n] of calendar p_calendar[n]'s open time from p_now. Each is judged
-- first (business_problem), and only a good one resolved (business_due), so a bad answer is its own problem,
-- not the statement's. An item with neither calendar nor delay has no problem and no time. plpgsql, a loop:
-- as one statement, business_due's fenced sub-query computed a time for a bad answer too, before the filter
-- that should have kept it out, and a 0bd raised for the whole batch. Answers in business time are the few.
CREATE OR REPLACE FUNCTION prescient.business_answers(p_calendar text[], p_delay text[], p_now timestamptz)
  RETURNS TABLE (n bigint, problem text, due_at timestamptz, calendar_version integer)
  LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  v_item record;
BEGIN
  FOR v_item IN SELECT u.calendar, u.delay, u.n
                  FROM unnest(p_calendar, p_delay) WITH ORDINALITY AS u(calendar, delay, n) ORDER BY u.n LOOP
    n := v_item.n;
    problem := prescient.business_problem(v_item.calendar, p_now, v_item.delay);
    due_at := NULL;
    calendar_version := NULL;
    IF problem IS NULL AND v_item.calendar IS NOT NULL THEN
      SELECT d.due_at, d.calendar_version INTO due_at, calendar_version
        FROM prescient.business_due(v_item.calendar, p_now, v_item.delay, p_now) d;
    END IF;
    RETURN NEXT;
  END LOOP;
END $$;
