#pragma once
// Calendars for business time (docs/business-time.md), on a session the application owns. The rules (what a
// definition may say, what is open, the arithmetic) are the database's, sql/functions/086_business_time.sql
// and 087_calendar_doors.sql; these calls pass the caller's words to them and its refusals back: PR400 as
// InvalidInput, PR404 (no such calendar) as NotFound, PR409 (add: it exists) as InvalidInput.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

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

// Sets a calendar: version 1 if new, else its next version. Returns the version.
int set_calendar(soci::session& db, const std::string& name, const std::string& time_zone,
                 const nlohmann::json& definition, const std::string& by);
// Adds a calendar that must be new (version 1).
int add_calendar(soci::session& db, const std::string& name, const std::string& time_zone,
                 const nlohmann::json& definition, const std::string& by);
// Adds holidays (as the definition's "holidays" names them) to a calendar: its next version.
int add_calendar_holidays(soci::session& db, const std::string& name, const std::vector<std::string>& holidays,
                          const std::string& by);
// Every calendar, by name.
std::vector<Calendar> calendars(soci::session& db);
// One calendar; NotFound naming it.
Calendar calendar(soci::session& db, const std::string& name);
// The first open instant at or after `from`.
CalendarTime business_next_open(soci::session& db, const std::string& name, TimePoint from);
// `from` plus a business delay as people write it: "4h", "90m", "1h30m" of open time, or "3bd".
CalendarTime business_after(soci::session& db, const std::string& name, TimePoint from, const std::string& delay);
// The openings that end after `from`, at most `most` of them; none for a calendar that does not exist (calendar()
// says NotFound).
std::vector<Opening> calendar_openings(soci::session& db, const std::string& name, TimePoint from, int most);

nlohmann::json to_json(const Calendar& calendar);
nlohmann::json to_json(const CalendarTime& time);
nlohmann::json to_json(const Opening& opening);

}  // namespace prescient
