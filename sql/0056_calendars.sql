-- 0056: calendars, for business time (docs/business-time.md). A calendar is a name, an IANA time zone and a
-- definition (opening hours per weekday, holidays, special days), versioned: setting it again makes a new
-- version, and a time computed from it can name the version that computed it. What the current version is
-- open, as instants, is kept in calendar_span, made once when the version is set (prescient.calendar_set,
-- sql/functions/086_business_time.sql), so that business arithmetic is two index lookups, not a walk over days.
-- The zone's UTC offsets, as this server's tzdata gives them, are kept per zone in zone_offset.
CREATE TABLE prescient.calendar (
  name text PRIMARY KEY,
  version integer NOT NULL CHECK (version >= 1),
  time_zone text NOT NULL,
  definition jsonb NOT NULL,
  changed_at timestamptz NOT NULL,
  changed_by text NOT NULL
);

CREATE TABLE prescient.calendar_version (
  calendar text NOT NULL REFERENCES prescient.calendar (name) ON DELETE CASCADE,
  version integer NOT NULL CHECK (version >= 1),
  time_zone text NOT NULL,
  definition jsonb NOT NULL,
  made_at timestamptz NOT NULL,
  made_by text NOT NULL,
  PRIMARY KEY (calendar, version)
);

CREATE TABLE prescient.calendar_span (
  calendar text NOT NULL REFERENCES prescient.calendar (name) ON DELETE CASCADE,
  opens_at timestamptz NOT NULL,
  closes_at timestamptz NOT NULL CHECK (closes_at > opens_at),
  open_before_us bigint NOT NULL CHECK (open_before_us >= 0),
  PRIMARY KEY (calendar, opens_at)
);
CREATE INDEX calendar_span_open_before ON prescient.calendar_span (calendar, open_before_us);

CREATE TABLE prescient.calendar_open_day (
  calendar text NOT NULL REFERENCES prescient.calendar (name) ON DELETE CASCADE,
  day date NOT NULL,
  PRIMARY KEY (calendar, day)
);

CREATE TABLE prescient.zone_offset (
  time_zone text NOT NULL,
  starts_at timestamptz NOT NULL,
  ends_at timestamptz NOT NULL CHECK (ends_at > starts_at),
  offset_seconds integer NOT NULL,
  first_pass_from timestamptz NOT NULL,
  PRIMARY KEY (time_zone, starts_at)
);

-- Who reads business time: everyone who enqueues or runs checks. Setting a calendar is the owner's
-- (prescient.calendar_set, not granted).
INSERT INTO prescient.role_grant (statement, added_by) VALUES
  ('GRANT SELECT ON prescient.calendar, prescient.calendar_version, prescient.calendar_span,'
   ' prescient.calendar_open_day, prescient.zone_offset TO prescient_client, prescient_runner', 56),
  ('GRANT EXECUTE ON FUNCTION prescient.business_add(text, timestamptz, interval),'
   ' prescient.business_add_days(text, timestamptz, integer),'
   ' prescient.business_between(text, timestamptz, timestamptz), prescient.calendar_open_until(text, timestamptz),'
   ' prescient.calendar_zone(text) TO prescient_client, prescient_runner', 56);
