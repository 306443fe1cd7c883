// The statements of the calendars' API (prescient/calendars.hpp): each passes the caller's words to the
// database's rule (sql/functions/086_business_time.sql, 087_calendar_doors.sql) and reads back what it made.
#include "prescient/calendars.hpp"

#include "db/connection.hpp"
#include "db/pq.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"

namespace prescient {

using namespace prescient::db;

namespace {

constexpr const char* kCalendarColumns =
    "name, version, time_zone, definition::text, prescient.us(changed_at), changed_by";

// A wall time in a calendar's zone, as the SQL that reads it back writes it.
std::string wall_of(const std::string& instant) {
  return "to_char(" + instant + " AT TIME ZONE c.time_zone, 'Dy YYYY-MM-DD HH24:MI')";
}

Calendar calendar_of(const pq::Result& rows, int r) {
  return {.name = rows.text(r, 0),
          .version = static_cast<int>(rows.integer(r, 1)),
          .time_zone = rows.text(r, 2),
          .definition = nlohmann::json::parse(rows.text(r, 3)),
          .changed_at = rows.time(r, 4),
          .changed_by = rows.text(r, 5)};
}

int version_of(const pq::Result& rows) { return static_cast<int>(rows.integer(0, 0)); }

CalendarTime calendar_time(PGconn* conn, const std::string& name, const std::string& computed,
                           std::vector<pq::Param> params) {
  const pq::Result rows = pq::exec(
      conn, "cannot compute the calendar's time",
      "SELECT prescient.us(t.at), " + wall_of("t.at") + ", c.version FROM (SELECT " + computed +
          " AS at) t, prescient.calendar c WHERE c.name = $1",
      params);
  if (rows.rows() == 0) throw NotFound("no calendar named '" + name + "'");  // removed meanwhile
  return {.at = rows.time(0, 0), .wall = rows.text(0, 1), .version = static_cast<int>(rows.integer(0, 2))};
}

}  // namespace

int set_calendar(soci::session& db, const std::string& name, const std::string& time_zone,
                 const nlohmann::json& definition, const std::string& by) {
  return version_of(pq::exec(native_connection(db), "cannot set the calendar",
                             "SELECT prescient.calendar_set($1, $2, $3::jsonb, $4)",
                             {name, time_zone, definition.dump(), by}));
}

int add_calendar(soci::session& db, const std::string& name, const std::string& time_zone,
                 const nlohmann::json& definition, const std::string& by) {
  return version_of(pq::exec(native_connection(db), "cannot add the calendar",
                             "SELECT prescient.calendar_add($1, $2, $3::jsonb, $4)",
                             {name, time_zone, definition.dump(), by}));
}

int add_calendar_holidays(soci::session& db, const std::string& name, const std::vector<std::string>& holidays,
                          const std::string& by) {
  const std::vector<std::optional<std::string>> days(holidays.begin(), holidays.end());
  return version_of(pq::exec(native_connection(db), "cannot add the holidays",
                             "SELECT prescient.calendar_add_holidays($1, $2, $3)", {name, pq::text_array(days), by}));
}

std::vector<Calendar> calendars(soci::session& db) {
  const pq::Result rows = pq::exec(native_connection(db), "cannot read the calendars",
                                   std::string("SELECT ") + kCalendarColumns + " FROM prescient.calendar ORDER BY name");
  std::vector<Calendar> out;
  for (int r = 0; r < rows.rows(); ++r) out.push_back(calendar_of(rows, r));
  return out;
}

Calendar calendar(soci::session& db, const std::string& name) {
  const pq::Result rows = pq::exec(native_connection(db), "cannot read the calendar",
                                   std::string("SELECT ") + kCalendarColumns +
                                       " FROM prescient.calendar WHERE name = $1",
                                   {name});
  if (rows.rows() == 0) throw NotFound("no calendar named '" + name + "' (prescient calendar list)");
  return calendar_of(rows, 0);
}

CalendarTime business_next_open(soci::session& db, const std::string& name, TimePoint from) {
  return calendar_time(native_connection(db), name, "prescient.business_next_open($1, prescient.at_us($2))",
                       {name, pq::micros(from)});
}

CalendarTime business_after(soci::session& db, const std::string& name, TimePoint from, const std::string& delay) {
  return calendar_time(native_connection(db), name, "prescient.business_after($1, prescient.at_us($2), $3)",
                       {name, pq::micros(from), delay});
}

std::vector<Opening> calendar_openings(soci::session& db, const std::string& name, TimePoint from, int most) {
  const pq::Result rows = pq::exec(
      native_connection(db), "cannot read the calendar's openings",
      "SELECT prescient.us(s.opens_at), prescient.us(s.closes_at), " + wall_of("s.opens_at") + ", " +
          wall_of("s.closes_at") +
          " FROM prescient.calendar_span s JOIN prescient.calendar c ON c.name = s.calendar"
          " WHERE s.calendar = $1 AND s.closes_at > prescient.at_us($2)"
          "   AND s.opens_at >= (SELECT coalesce(max(p.opens_at), '-infinity') FROM prescient.calendar_span p"
          "                       WHERE p.calendar = $1 AND p.opens_at <= prescient.at_us($2))"
          " ORDER BY s.opens_at LIMIT $3",
      {name, pq::micros(from), std::to_string(most)});
  std::vector<Opening> out(rows.rows());
  for (int r = 0; r < rows.rows(); ++r) {
    out[r] = {.opens_at = rows.time(r, 0), .closes_at = rows.time(r, 1), .opens_wall = rows.text(r, 2),
              .closes_wall = rows.text(r, 3)};
  }
  return out;
}

nlohmann::json to_json(const Calendar& calendar) {
  return {{"name", calendar.name},
          {"version", calendar.version},
          {"time_zone", calendar.time_zone},
          {"definition", calendar.definition},
          {"changed_at", format_time(calendar.changed_at)},
          {"changed_by", calendar.changed_by}};
}

nlohmann::json to_json(const CalendarTime& time) {
  return {{"at", format_time(time.at)}, {"wall", time.wall}, {"version", time.version}};
}

nlohmann::json to_json(const Opening& opening) {
  return {{"opens_at", format_time(opening.opens_at)},
          {"closes_at", format_time(opening.closes_at)},
          {"opens_wall", opening.opens_wall},
          {"closes_wall", opening.closes_wall}};
}

}  // namespace prescient
