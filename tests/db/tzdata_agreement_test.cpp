// One tzdata (issue 61): business time reads a zone in SQL, with PostgreSQL's tzdata (prescient.zone_offset,
// sql/functions/086_business_time.sql); cron reads it in C++, with the runner's (date/tz,
// prescient/time_zone.hpp). For the zones business time is tested in, both must find the same offsets
// changing at the same instants over the calendars' range; a difference names the zone, the instant and
// both offsets. Debian builds both on the system's /usr/share/zoneinfo; a server or a runner built with a
// tzdata of its own (a container image with another tzdata package) is what this catches.
// Over the calendars' whole range, 2000 to 2099: past the files' explicit changes (2037) both follow the
// files' closing rules (the runner through prescient/time_zone.hpp; date/tz alone saw no DST from 2038).
#include <catch2/catch.hpp>
#include <date/tz.h>
#include <soci/soci.h>

#include <chrono>
#include <climits>
#include <string>
#include <vector>

#include "prescient/cron_spec.hpp"
#include "prescient/time_zone.hpp"
#include "prescient/time_text.hpp"
#include "test_database.hpp"

using prescient::testing::connect_to;
using prescient::testing::create_migrated_database;

namespace {

// The zones of tests/business_time/oracle.py, and UTC.
const std::vector<std::string> kZones{
    "Europe/Berlin",       "America/New_York", "Europe/London",       "Australia/Sydney", "Australia/Adelaide",
    "Australia/Lord_Howe", "America/Santiago", "Pacific/Auckland",    "America/Havana",   "Asia/Jerusalem",
    "America/Los_Angeles", "Asia/Kolkata",     "UTC"};

// A stretch of one offset: from `starts` (seconds since the epoch) on, `offset` seconds from UTC.
struct Stretch {
  long long starts;
  long long offset;
  bool operator==(const Stretch&) const = default;
};

using Stretches = std::vector<Stretch>;

Stretches sql_stretches(soci::session& db, const std::string& zone, long long& range_end) {
  db << "SELECT prescient.ensure_zone_offsets(:z)", soci::use(zone);
  Stretches out;
  soci::rowset<soci::row> rows = (db.prepare << "SELECT extract(epoch FROM starts_at)::bigint, offset_seconds::bigint,"
                                                " extract(epoch FROM ends_at)::bigint FROM prescient.zone_offset"
                                                " WHERE time_zone = :z ORDER BY starts_at",
                                  soci::use(zone));
  for (const soci::row& r : rows) {
    out.push_back({r.get<long long>(0), r.get<long long>(1)});
    range_end = r.get<long long>(2);
  }
  return out;
}

// C++'s stretches over [from, to): date/tz's, with those that change only the abbreviation or the DST flag
// merged (business time counts offsets only).
Stretches cpp_stretches(const std::string& zone, long long from, long long to) {
  const prescient::TimeZone& tz = prescient::find_time_zone(zone);
  Stretches out;
  for (date::sys_seconds at{std::chrono::seconds{from}}; at.time_since_epoch().count() < to;) {
    const date::sys_info info = tz.get_info(at);
    const long long offset = info.offset.count();
    if (out.empty() || out.back().offset != offset) out.push_back({at.time_since_epoch().count(), offset});
    at = info.end;
  }
  return out;
}

std::string instant(long long seconds) {
  return prescient::format_time(prescient::TimePoint{std::chrono::seconds{seconds}});
}

// One line per difference: where one side's offset changes and the other's does not, or to another offset.
std::vector<std::string> differences(const std::string& zone, const Stretches& sql, const Stretches& cpp) {
  std::vector<std::string> out;
  std::size_t i = 0, j = 0;
  while (i < sql.size() || j < cpp.size()) {
    const long long at = std::min(i < sql.size() ? sql[i].starts : LLONG_MAX, j < cpp.size() ? cpp[j].starts : LLONG_MAX);
    const bool in_sql = i < sql.size() && sql[i].starts == at, in_cpp = j < cpp.size() && cpp[j].starts == at;
    if (!in_sql || !in_cpp || sql[i].offset != cpp[j].offset) {
      const auto said = [&](bool here, const Stretches& s, std::size_t k) {
        return here ? std::to_string(s[k].offset) + " s from then" : std::string("no change then");
      };
      out.push_back(zone + " at " + instant(at) + ": PostgreSQL's tzdata says " + said(in_sql, sql, i) +
                    ", the runner's (date/tz) " + said(in_cpp, cpp, j));
    }
    if (in_sql) ++i;
    if (in_cpp) ++j;
  }
  return out;
}

}  // namespace

TEST_CASE("tzdata: PostgreSQL and the runner find the same offsets, changing at the same instants") {
  auto db = connect_to(create_migrated_database());
  for (const std::string& zone : kZones) {
    long long range_end = 0;
    const Stretches sql = sql_stretches(*db, zone, range_end);
    REQUIRE(!sql.empty());
    const Stretches cpp = cpp_stretches(zone, sql.front().starts, range_end);
    INFO(zone << ": " << sql.size() << " stretches in PostgreSQL's, " << cpp.size() << " in the runner's");
    CHECK(differences(zone, sql, cpp) == std::vector<std::string>{});
  }
}

TEST_CASE("tzdata: a zone read otherwise by one side is named, with the instant and both offsets") {
  auto db = connect_to(create_migrated_database());
  long long range_end = 0;
  const Stretches sql = sql_stretches(*db, "Europe/Berlin", range_end);
  // As if PostgreSQL's tzdata put the 2026 spring change an hour later, and knew no 2027 autumn change.
  *db << "UPDATE prescient.zone_offset SET starts_at = starts_at + interval '1 hour'"
         " WHERE time_zone = 'Europe/Berlin' AND starts_at = '2026-03-29T01:00:00Z'";
  *db << "DELETE FROM prescient.zone_offset WHERE time_zone = 'Europe/Berlin' AND starts_at = '2027-10-31T01:00:00Z'";
  const Stretches planted = sql_stretches(*db, "Europe/Berlin", range_end);
  CHECK(differences("Europe/Berlin", planted, cpp_stretches("Europe/Berlin", sql.front().starts, range_end)) ==
        std::vector<std::string>{
            "Europe/Berlin at 2026-03-29T01:00:00Z: PostgreSQL's tzdata says no change then, the runner's (date/tz) "
            "7200 s from then",
            "Europe/Berlin at 2026-03-29T02:00:00Z: PostgreSQL's tzdata says 7200 s from then, the runner's (date/tz) "
            "no change then",
            "Europe/Berlin at 2027-10-31T01:00:00Z: PostgreSQL's tzdata says no change then, the runner's (date/tz) "
            "3600 s from then"});
}
