#pragma once
// Calendars for business time (docs/business-time.md), on a session the application owns. The rules (what a
// definition may say, what is open, the arithmetic) are the database's, sql/functions/086_business_time.sql
// and 087_calendar_doors.sql; these calls pass the caller's words to them and its refusals back: PR400 as
// InvalidInput, PR404 (no such calendar) as NotFound, PR409 (add: it exists) as InvalidInput.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "prescient/errors.hpp"
#include "prescient/open_time.hpp"
#include "prescient/time.hpp"

namespace soci {
class session;
}

namespace prescient {

struct Calendar {
  std::string name;
  int version = 0;
  std::string time_zone;
  nlohmann::json definition;  // as set: hours, holidays, days
  TimePoint changed_at{};
  std::string changed_by;
};

// An instant a calendar computed, with its wall time in the calendar's zone and the version that computed it.
struct CalendarTime {
  TimePoint at{};
  std::string wall;  // "Mon 2026-11-30 11:00" in the calendar's zone
  int version = 0;
};

// A stretch of open time, with its ends' wall times in the calendar's zone.
struct Opening {
  TimePoint opens_at{}, closes_at{};
  std::string opens_wall, closes_wall;
};

// A stretch of open time within one local day, and where it lies on that day's wall clock: seconds from its
// midnight, 0 to 86 400 (a stretch cut at a midnight starts at 0 or ends at 86 400). The instants are what
// business time counts; the wall seconds are where a clock on the wall shows them.
struct DayOpening {
  TimePoint opens_at{}, closes_at{};
  int opens_second = 0, closes_second = 0;
};

// A change of the zone's offset within a day (daylight saving time): the instant, and the wall clock just
// before and just after it ("02:00" then "03:00" when the clocks go forward, "03:00" then "02:00" back).
struct OffsetChange {
  TimePoint at{};
  std::string wall_before, wall_after;
};

// One day of a calendar in its zone, from midnight to midnight (23, 24 or 25 hours apart).
struct CalendarDay {
  std::string date;     // YYYY-MM-DD
  std::string weekday;  // Mon to Sun
  TimePoint starts_at{}, ends_at{};
  bool open_day = false;  // an interval opens on it (calendar_open_day): a business day, as business days count
  std::vector<DayOpening> openings;
  std::optional<OffsetChange> offset_change;
};

// A calendar's days: the version they are of, and its today.
struct CalendarDays {
  Calendar calendar;
  std::string today;        // the date of `now` in the calendar's zone
  int now_second = 0;       // `now` on that day's wall clock, seconds from its midnight
  std::vector<CalendarDay> days;
};

// Sets a calendar: version 1 if new, else its next version. Returns the version.
int set_calendar(soci::session& db, const std::string& name, const std::string& time_zone,
                 const nlohmann::json& definition, const std::string& by);
// Adds a calendar that must be new (version 1).
int add_calendar(soci::session& db, const std::string& name, const std::string& time_zone,
                 const nlohmann::json& definition, const std::string& by);
// Adds holidays (as the definition's "holidays" names them) to a calendar: its next version.
int add_calendar_holidays(soci::session& db, const std::string& name, const std::vector<std::string>& holidays,
                          const std::string& by);
// A calendar as a team keeps it (the config file's [calendar NAME] sections): what `apply_calendars` makes its
// current version.
struct CalendarWanted {
  std::string name;
  std::string time_zone;
  nlohmann::json definition;
};

// What `apply_calendars` did to one calendar: added it (version 1), set its next version, or left it (its zone
// and definition are its current version's).
struct CalendarApplied {
  enum class Change { added, changed, unchanged };
  std::string name;
  Change change = Change::unchanged;
  int version = 0;
  int previous_version = 0;  // 0: none (added)
};

// `apply_calendars`' refusal: the database's one line, which calendar of the list it is about, and which of its
// parts is at fault (judged in that order: a name, a zone, a definition).
struct CalendarRefused : InvalidInput {
  enum class Part { name, zone, definition };
  CalendarRefused(std::size_t index, Part part, const std::string& why) : InvalidInput(why), index(index), part(part) {}
  std::size_t index;
  Part part;
};

// Makes each calendar of the list what it says, all or none (one transaction): a new version only for one whose
// zone or definition differs from its current version's (as the database compares jsonb), or that is new. Every
// calendar is judged (prescient.calendar_problem) before any is set; a refusal is CalendarRefused.
std::vector<CalendarApplied> apply_calendars(soci::session& db, const std::vector<CalendarWanted>& wanted,
                                             const std::string& by);
// Every calendar, by name.
std::vector<Calendar> calendars(soci::session& db);
// One calendar; NotFound naming it.
Calendar calendar(soci::session& db, const std::string& name);
// A calendar's open time as its current version computed it, every span of its range, read in one statement
// (so the version and the spans agree): what the runner judges a bound schedule's occurrences by. NotFound
// naming it.
OpenTime open_time(soci::session& db, const std::string& name);
// The first open instant at or after `from`.
CalendarTime business_next_open(soci::session& db, const std::string& name, TimePoint from);
// `from` plus a business delay as people write it: "4h", "90m", "1h30m" of open time, or "3bd".
CalendarTime business_after(soci::session& db, const std::string& name, TimePoint from, const std::string& delay);
// The openings that end after `from`, at most `most` of them; none for a calendar that does not exist (calendar()
// says NotFound).
std::vector<Opening> calendar_openings(soci::session& db, const std::string& name, TimePoint from, int most);

// `count` days of a calendar from `first_day` (YYYY-MM-DD; none: the date of `now` in its zone), each with its
// current version's open time (calendar_span: what business_add counts) cut at the day's midnights, read in
// one snapshot with the version. NotFound naming an unknown calendar.
CalendarDays calendar_days(soci::session& db, const std::string& name, const std::optional<std::string>& first_day,
                           TimePoint now, int count);

nlohmann::json to_json(const Calendar& calendar);
nlohmann::json to_json(const CalendarDays& days);
nlohmann::json to_json(const CalendarTime& time);
nlohmann::json to_json(const Opening& opening);

}  // namespace prescient
