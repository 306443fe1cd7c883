// The statements of the calendars' API (prescient/calendars.hpp): each passes the caller's words to the
// database's rule (sql/functions/086_business_time.sql, 087_calendar_doors.sql) and reads back what it made.
#include "prescient/calendars.hpp"

#include <chrono>
#include <regex>

#include "db/connection.hpp"
#include "db/pq.hpp"
#include "db/transaction.hpp"
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

// A date as the days of a calendar start from, YYYY-MM-DD; InvalidInput naming the text otherwise (the database
// would refuse it as a failure of its own).
void check_date(const std::string& text) {
  static const std::regex form(R"(([0-9]{4})-([0-9]{2})-([0-9]{2}))");
  std::smatch parts;
  const bool shaped = std::regex_match(text, parts, form);
  if (!shaped || std::stoi(parts[1]) < 1 ||
      !std::chrono::year_month_day(std::chrono::year(std::stoi(parts[1])),
                                   std::chrono::month(static_cast<unsigned>(std::stoi(parts[2]))),
                                   std::chrono::day(static_cast<unsigned>(std::stoi(parts[3]))))
           .ok()) {
    throw InvalidInput("invalid day '" + text + "': a date YYYY-MM-DD");
  }
}

int version_of(const pq::Result& rows) { return static_cast<int>(rows.integer(0, 0)); }

NotFound no_calendar(const std::string& name) {
  return NotFound("no calendar named '" + name + "' (prescient calendar list)");
}

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

namespace {

// What the database's rule finds wrong with a calendar, naming the part at fault: its name is judged with a zone
// and a definition that are good, then its zone with such a definition, then the definition. Nothing when none.
std::optional<CalendarRefused> calendar_problem(PGconn* conn, std::size_t index, const CalendarWanted& wanted) {
  const pq::Result whole = pq::exec(conn, "cannot judge the calendar", "SELECT prescient.calendar_problem($1, $2, $3::jsonb)",
                                    {wanted.name, wanted.time_zone, wanted.definition.dump()});
  if (whole.null(0, 0)) return std::nullopt;
  const pq::Result parts = pq::exec(conn, "cannot judge the calendar",
                                    "SELECT prescient.calendar_problem($1, 'UTC', '{}'), prescient.calendar_problem($1, $2, '{}')",
                                    {wanted.name, wanted.time_zone});
  const auto part = !parts.null(0, 0) ? CalendarRefused::Part::name
                    : !parts.null(0, 1) ? CalendarRefused::Part::zone
                                        : CalendarRefused::Part::definition;
  return CalendarRefused(index, part, whole.text(0, 0));
}

}  // namespace

std::vector<CalendarApplied> apply_calendars(soci::session& db, const std::vector<CalendarWanted>& wanted,
                                             const std::string& by) {
  PGconn* conn = native_connection(db);
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    if (auto problem = calendar_problem(conn, i, wanted[i])) throw *problem;
  }
  Transaction all(conn);
  std::vector<CalendarApplied> out;
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    const CalendarWanted& w = wanted[i];
    // Locked, so that an apply beside this one waits and then finds this one's version the same.
    const pq::Result current = pq::exec(
        conn, "cannot read the calendar",
        "SELECT version, time_zone = $1 AND definition = $2::jsonb FROM prescient.calendar WHERE name = $3 FOR UPDATE",
        {w.time_zone, w.definition.dump(), w.name});
    CalendarApplied applied{.name = w.name, .change = CalendarApplied::Change::added, .version = 0, .previous_version = 0};
    if (current.rows() == 1) {
      applied.previous_version = static_cast<int>(current.integer(0, 0));
      if (current.text(0, 1) == "t") {
        applied.change = CalendarApplied::Change::unchanged;
        applied.version = applied.previous_version;
        out.push_back(applied);
        continue;
      }
      applied.change = CalendarApplied::Change::changed;
    }
    try {
      applied.version = set_calendar(db, w.name, w.time_zone, w.definition, by);
    } catch (const InvalidInput& e) {  // what only setting finds: a definition never open in the range
      throw CalendarRefused(i, CalendarRefused::Part::definition, e.what());
    }
    out.push_back(applied);
  }
  all.commit();
  return out;
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
  if (rows.rows() == 0) throw no_calendar(name);
  return calendar_of(rows, 0);
}

OpenTime open_time(soci::session& db, const std::string& name) {
  const pq::Result rows = pq::exec(
      native_connection(db), "cannot read the calendar's open time",
      "SELECT c.version, prescient.us(s.opens_at), prescient.us(s.closes_at)"
      " FROM prescient.calendar c LEFT JOIN prescient.calendar_span s ON s.calendar = c.name"
      " WHERE c.name = $1 ORDER BY s.opens_at",
      {name});
  if (rows.rows() == 0) throw no_calendar(name);
  std::vector<OpenSpan> spans;
  spans.reserve(static_cast<std::size_t>(rows.rows()));
  for (int r = 0; r < rows.rows(); ++r) {
    if (!rows.null(r, 1)) spans.push_back({.opens = rows.time(r, 1), .closes = rows.time(r, 2)});
  }
  return OpenTime(name, version_of(rows), std::move(spans));
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

CalendarDays calendar_days(soci::session& db, const std::string& name, const std::optional<std::string>& first_day,
                           TimePoint now, int count) {
  if (first_day) check_date(*first_day);
  PGconn* conn = native_connection(db);
  // The version and its spans from one snapshot: a version set meanwhile is shown whole or not at all.
  Transaction snapshot(conn, Transaction::Mode::read_only_snapshot);
  CalendarDays out{.calendar = calendar(db, name), .today = {}, .now_second = 0, .days = {}};
  const pq::Result today = pq::exec(
      conn, "cannot read the calendar's today",
      "SELECT to_char(w, 'YYYY-MM-DD'), extract(epoch FROM w - w::date)::integer"
      "  FROM (SELECT prescient.at_us($1) AT TIME ZONE $2 AS w) n",
      {pq::micros(now), out.calendar.time_zone});
  out.today = today.text(0, 0);
  out.now_second = static_cast<int>(today.integer(0, 1));
  // Each day between its midnights; the spans that meet it (the one open at its midnight, which may have
  // opened days before, and those opening within it), cut at its midnights; and the zone's offset change
  // within it, from the offsets the spans were made from. A wall second of a closing instant is read just
  // before it, so that a stretch closing as the clocks go back ends at 03:00, not at the 02:00 after.
  const pq::Result rows = pq::exec(
      conn, "cannot read the calendar's days",
      "WITH days AS ("
      "  SELECT d::date AS day, d::date::timestamp AT TIME ZONE $1 AS starts_at,"
      "         (d::date + 1)::timestamp AT TIME ZONE $1 AS ends_at"
      "    FROM generate_series($2::date, $2::date + ($3::integer - 1), interval '1 day') AS d)"
      " SELECT to_char(d.day, 'YYYY-MM-DD'), to_char(d.day, 'Dy'), prescient.us(d.starts_at), prescient.us(d.ends_at),"
      "        EXISTS (SELECT 1 FROM prescient.calendar_open_day o WHERE o.calendar = $4 AND o.day = d.day),"
      "        prescient.us(z.starts_at),"
      "        to_char((z.starts_at - interval '1 microsecond') AT TIME ZONE $1 + interval '1 microsecond', 'HH24:MI'),"
      "        to_char(z.starts_at AT TIME ZONE $1, 'HH24:MI'),"
      "        prescient.us(s.opens_at), prescient.us(s.closes_at),"
      "        extract(epoch FROM (s.opens_at AT TIME ZONE $1) - d.day)::integer,"
      "        extract(epoch FROM (s.closes_at - interval '1 microsecond') AT TIME ZONE $1 + interval '1 microsecond'"
      "                           - d.day)::integer"
      "   FROM days d"
      "   LEFT JOIN LATERAL (SELECT * FROM prescient.zone_offset z WHERE z.time_zone = $1"
      "                         AND z.starts_at > d.starts_at AND z.starts_at < d.ends_at"
      "                       ORDER BY z.starts_at LIMIT 1) z ON true"
      "   LEFT JOIN LATERAL ("
      "     SELECT greatest(x.opens_at, d.starts_at) AS opens_at, least(x.closes_at, d.ends_at) AS closes_at"
      "       FROM ((SELECT * FROM prescient.calendar_span s WHERE s.calendar = $4 AND s.opens_at <= d.starts_at"
      "               ORDER BY s.opens_at DESC LIMIT 1)"
      "             UNION ALL"
      "             SELECT * FROM prescient.calendar_span s WHERE s.calendar = $4 AND s.opens_at > d.starts_at"
      "                AND s.opens_at < d.ends_at) x"
      "      WHERE x.closes_at > d.starts_at) s ON true"
      "  ORDER BY d.day, s.opens_at",
      {out.calendar.time_zone, first_day.value_or(out.today), std::to_string(count), name});
  for (int r = 0; r < rows.rows(); ++r) {
    if (out.days.empty() || out.days.back().date != rows.text(r, 0)) {
      CalendarDay day{.date = rows.text(r, 0),
                      .weekday = rows.text(r, 1),
                      .starts_at = rows.time(r, 2),
                      .ends_at = rows.time(r, 3),
                      .open_day = rows.text(r, 4) == "t",
                      .openings = {},
                      .offset_change = std::nullopt};
      if (!rows.null(r, 5)) {
        day.offset_change = OffsetChange{.at = rows.time(r, 5), .wall_before = rows.text(r, 6), .wall_after = rows.text(r, 7)};
      }
      out.days.push_back(std::move(day));
    }
    if (rows.null(r, 8)) continue;  // no open time that day
    out.days.back().openings.push_back({.opens_at = rows.time(r, 8),
                                        .closes_at = rows.time(r, 9),
                                        .opens_second = static_cast<int>(rows.integer(r, 10)),
                                        .closes_second = static_cast<int>(rows.integer(r, 11))});
  }
  snapshot.commit();
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

nlohmann::json to_json(const CalendarDays& calendar_days) {
  nlohmann::json days = nlohmann::json::array();
  for (const CalendarDay& day : calendar_days.days) {
    nlohmann::json openings = nlohmann::json::array();
    for (const DayOpening& o : day.openings) {
      openings.push_back({{"opens_at", format_time(o.opens_at)},
                          {"closes_at", format_time(o.closes_at)},
                          {"opens_second", o.opens_second},
                          {"closes_second", o.closes_second}});
    }
    nlohmann::json change = nullptr;
    if (day.offset_change) {
      change = {{"at", format_time(day.offset_change->at)},
                {"wall_before", day.offset_change->wall_before},
                {"wall_after", day.offset_change->wall_after}};
    }
    days.push_back({{"date", day.date},
                    {"weekday", day.weekday},
                    {"starts_at", format_time(day.starts_at)},
                    {"ends_at", format_time(day.ends_at)},
                    {"open_day", day.open_day},
                    {"openings", openings},
                    {"offset_change", change}});
  }
  return {{"calendar", to_json(calendar_days.calendar)},
          {"today", calendar_days.today},
          {"now_second", calendar_days.now_second},
          {"days", days}};
}

}  // namespace prescient
