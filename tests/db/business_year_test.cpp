// Business time through a year on the manual clock (issue 61): calendar-bound schedules and checks enqueued
// with a business delay, all fired by one runner stepping from each wake-up to the next, against the
// database's own arithmetic as the reference (business_next_open, business_after: tested against a reference
// written apart, tests/business_time/oracle.py). Every firing equal to the reference, none in closed time (a
// bound occurrence), none early, none twice. Three calendars (split days, a six-day week, yearly and rule
// holidays, a half day) in three zones with DST changes in both hemispheres.
// The suite runs four weeks with 12 schedules and 300 checks; PRESCIENT_SOAK=1 (scripts/test.sh --soak) a
// year with 50 schedules and 5 000 checks.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "builtin_jobs.hpp"
#include "prescient/client.hpp"
#include "prescient/registry.hpp"
#include "prescient/schedules.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/time_text.hpp"
#include "test_database.hpp"

using namespace prescient;
using prescient::testing::connect_to;
using prescient::testing::count_of;
using prescient::testing::create_migrated_database;

namespace {

struct YearCalendar {
  const char* name;
  const char* zone;
  const char* definition;
};

constexpr YearCalendar kCalendars[] = {
    {"berlin", "Europe/Berlin",
     R"({"hours": {"mon": ["09:00-12:00", "13:00-17:00"], "tue": ["09:00-12:00", "13:00-17:00"],
         "wed": ["09:00-17:00"], "thu": ["09:00-17:00"], "fri": ["09:00-15:00"]},
         "holidays": ["01-01", "12-25", "12-26", "last mon of may"], "days": [{"date": "12-24", "hours": ["09:00-12:00"]}]})"},
    {"newyork", "America/New_York",
     R"({"hours": {"mon": ["08:00-18:00"], "tue": ["08:00-18:00"], "wed": ["08:00-18:00"], "thu": ["08:00-18:00"],
         "fri": ["08:00-18:00"]}, "holidays": ["07-04", "fourth thu of nov", "2027-01-01"]})"},
    {"sydney", "Australia/Sydney",
     R"({"hours": {"mon": ["10:00-16:00"], "tue": ["10:00-16:00"], "wed": ["10:00-16:00"], "thu": ["10:00-16:00"],
         "fri": ["10:00-16:00"], "sat": ["10:00-13:00"]}, "holidays": ["12-25", "01-26", "second mon of jun"]})"},
};

// Specs of local times that neither a gap nor a repeated hour touches (never 01:00 to 03:00), written as the
// reference reads them: the minute, the hours and the ISO weekdays.
struct YearSpec {
  const char* spec;
  const char* minute_and_hours;  // for SQL: time[] of the local times each day
  const char* weekdays;          // for SQL: int[] of ISO weekdays
};
constexpr YearSpec kSpecs[] = {
    {"30 8,12,18 * * *", "{08:30,12:30,18:30}", "{1,2,3,4,5,6,7}"},
    {"0 9,13,17 * * 1-5", "{09:00,13:00,17:00}", "{1,2,3,4,5}"},
    {"15 7,11,15,19,23 * * *", "{07:15,11:15,15:15,19:15,23:15}", "{1,2,3,4,5,6,7}"},
    {"45 10 * * 6,0", "{10:45}", "{6,7}"},
    {"0 0,6,12 * * *", "{00:00,06:00,12:00}", "{1,2,3,4,5,6,7}"},
};

bool soak() {
  const char* value = std::getenv("PRESCIENT_SOAK");
  return value != nullptr && std::string(value) == "1";
}

}  // namespace

TEST_CASE("business time through the year: bound schedules and business-delayed checks fire as SQL computes") {
  const bool full = soak();
  const int schedule_count = full ? 50 : 12, check_count = full ? 5000 : 300;
  const TimePoint start = parse_time("2027-01-01T00:00:00Z");
  const TimePoint end = start + std::chrono::days(full ? 365 : 28);
  const std::string url = create_migrated_database(60);
  auto db = connect_to(url);
  for (const YearCalendar& c : kCalendars) {
    const std::string name = c.name, zone = c.zone, definition = c.definition;
    *db << "SELECT prescient.calendar_set(:n, :z, :d::jsonb)", soci::use(name), soci::use(zone), soci::use(definition);
  }
  ManualClock clock(start);
  Registry registry;
  jobs::register_builtin_jobs(registry);

  // PRESCIENT_SEED replays a run that failed (its seed is in the failure's messages).
  const char* replay = std::getenv("PRESCIENT_SEED");
  const unsigned seed = replay != nullptr ? static_cast<unsigned>(std::stoul(replay)) : std::random_device{}();
  INFO("seed " << seed);
  std::mt19937 random(seed);
  const auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };

  struct Bound {
    std::string id;
    const YearSpec* spec;
    const YearCalendar* calendar;
    std::string when_closed;
  };
  std::vector<Bound> bound;
  Schedules schedules(*db, clock);
  for (int i = 0; i < schedule_count; ++i) {
    Bound b{.id = "s" + std::to_string(i), .spec = &kSpecs[pick(5)], .calendar = &kCalendars[pick(3)],
            .when_closed = pick(2) == 0 ? "skip" : "move"};
    schedules.add({.id = b.id, .spec = b.spec->spec, .time_zone = b.calendar->zone, .calendar = b.calendar->name,
                   .when_closed = b.when_closed});
    bound.push_back(b);
  }

  // Checks asked for at random minutes of the run's first half, each a random length of open time (up to 40
  // hours, more than a week of the Sydney desk's) or business days after: all due before the run ends.
  Client client(*db, {.clock = &clock, .allow_unknown_class = true});
  std::vector<ScheduleRequest> requests;
  const long minutes = std::chrono::duration_cast<std::chrono::minutes>(end - start).count();
  for (int i = 0; i < check_count; ++i) {
    ScheduleRequest r{.job = "noop", .entity_name = "ticket", .entity_key = std::to_string(i),
                      .at = start + std::chrono::minutes(1 + pick(static_cast<int>(minutes / 2)))};
    r.payload = {{"at", format_time(*r.at)}};  // what it asked for, for the reference
    r.calendar = kCalendars[pick(3)].name;
    r.business_delay = pick(3) == 0 ? std::to_string(1 + pick(5)) + "bd" : std::to_string(1 + pick(40)) + "h";
    requests.push_back(r);
  }
  client.schedule_many(requests);

  // One runner (its cron class keeps the calendars it read), from each wake-up to the next.
  SlotRunner runner({.database_url = url, .runner_id = "year"}, registry, clock);
  int wakes = 0;
  for (;; ++wakes) {
    std::string next;
    soci::indicator none = soci::i_ok;
    *db << "SELECT prescient.iso(min(next_check_at)) FROM prescient.future_job", soci::into(next, none);
    if (none == soci::i_null || parse_time(next) > end) break;
    clock.set(parse_time(next) + std::chrono::seconds(5));
    runner.run_slot(parse_time(next));
  }
  INFO(wakes << " wake-ups");

  // Schedules: each one's events are the reference's, in order (none missing, none more, each once).
  for (const Bound& b : bound) {
    INFO(b.id << ": " << b.spec->spec << " in " << b.calendar->name << ", " << b.when_closed);
    std::vector<std::string> fired(20000), expected(20000);
    std::vector<soci::indicator> fired_nulls(20000), expected_nulls(20000);
    const std::string id = b.id;
    *db << "SELECT id FROM prescient.event WHERE source = :s ORDER BY occurred_at", soci::use(id),
        soci::into(fired, fired_nulls);
    const std::string calendar = b.calendar->name, zone = b.calendar->zone, times = b.spec->minute_and_hours,
                      weekdays = b.spec->weekdays;
    const long long from_us = to_unix_micros(start), to_us = to_unix_micros(end);
    *db << "WITH raw AS ("
           "  SELECT (d::date + t) AT TIME ZONE :zone AS o"
           "    FROM generate_series((prescient.at_us(:from1) AT TIME ZONE :zone1)::date - 1,"
           "                         (prescient.at_us(:to1) AT TIME ZONE :zone2)::date, interval '1 day') d,"
           "         unnest(:times::time[]) t"
           "   WHERE extract(isodow FROM d)::int = ANY (:weekdays::int[])),"
           " placed AS ("
           "  SELECT DISTINCT prescient.business_next_open(:cal, raw.o) AS at FROM raw"
           "   WHERE raw.o > prescient.at_us(:from2)"
           "     AND (:when = 'move' OR prescient.business_next_open(:cal1, raw.o) = raw.o))"
           " SELECT :id || '-' || extract(epoch FROM at)::bigint FROM placed WHERE at <= prescient.at_us(:to2)"
           " ORDER BY at",
        soci::use(zone, "zone"), soci::use(from_us, "from1"), soci::use(zone, "zone1"), soci::use(to_us, "to1"),
        soci::use(zone, "zone2"), soci::use(times, "times"), soci::use(weekdays, "weekdays"),
        soci::use(calendar, "cal"), soci::use(from_us, "from2"), soci::use(b.when_closed, "when"),
        soci::use(calendar, "cal1"), soci::use(id, "id"), soci::use(to_us, "to2"), soci::into(expected, expected_nulls);
    CHECK(fired == expected);
  }
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.event WHERE emitted_at < occurred_at") == 0);

  // Checks: each ran once, in the slot of its time, not before it, and that time is the reference's.
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.job_history WHERE job = 'noop'") == check_count);
  CHECK(count_of(*db, "SELECT count(*) FROM prescient.future_job WHERE job = 'noop'") == 0);
  CHECK(count_of(*db,
                 "SELECT count(*) FROM prescient.job_history h"
                 " WHERE h.job = 'noop' AND (h.last_check_at <> h.first_check_at OR h.finished_at < h.asked_for_at"
                 "   OR h.first_check_at <> date_bin('1 minute', h.asked_for_at + interval '1 minute' - interval '1 microsecond',"
                 "                                   'epoch'))") == 0);
  CHECK(count_of(*db,
                 "SELECT count(*) FROM prescient.job_history h"
                 " WHERE h.job = 'noop' AND h.asked_for_at IS DISTINCT FROM"
                 "   prescient.business_after(h.calendar, (h.payload->>'at')::timestamptz, h.business_delay)") == 0);
}
