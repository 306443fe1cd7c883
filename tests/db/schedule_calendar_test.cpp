// Schedules bound to a calendar (docs/schedules.md, "Bound to a calendar"): the runner's cron class places each
// occurrence by the calendar's spans; the firings are compared with the database's own arithmetic
// (prescient.business_next_open), over a fortnight on the manual clock with a weekend, a holiday, the end of
// summer time in Berlin and a holiday added on the way.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <string>
#include <vector>

#include "cron_calendars.hpp"
#include "prescient/errors.hpp"
#include "schedule_fixture.hpp"

using namespace prescient;
using prescient::testing::count_of;

namespace {

constexpr const char* kDesk = R"({"hours": {"mon": ["09:00-17:00"], "tue": ["09:00-17:00"],
  "wed": ["09:00-17:00"], "thu": ["09:00-17:00"], "fri": ["09:00-17:00"]}, "holidays": ["2026-10-28"]})";

struct BoundFixture : prescient::testing::ScheduleFixture {
  BoundFixture() {
    const std::string definition = kDesk;  // soci binds by reference: a temporary would be gone when it runs
    *db << "SELECT prescient.calendar_set('desk', 'Europe/Berlin', :d::jsonb)", soci::use(definition);
  }

  // Fires every slot the schedules' checks wake in, in order, up to `last`, with the clock 10 s into the slot;
  // `on_the_way` runs once the clock has passed `at`.
  void run_until(const std::vector<std::string>& ids, TimePoint last, TimePoint at,
                 const std::function<void()>& on_the_way) {
    bool done_on_the_way = false;
    for (int fired = 0; fired < 1000; ++fired) {
      std::optional<TimePoint> next;
      for (const std::string& id : ids) {
        const auto wake = schedules.show(id).next_check_at;
        if (wake && (!next || *wake < *next)) next = wake;
      }
      if (!next || *next > last) return;
      if (!done_on_the_way && *next > at) {
        clock.set(at);
        on_the_way();
        done_on_the_way = true;
      }
      fire(format_time(*next + std::chrono::seconds(10)).c_str());
    }
    FAIL("more than 1000 wake-ups");
  }

  // The event ids a schedule bound to desk has to emit for `spec`'s local times each day from `first_day` to
  // `last_day` (Europe/Berlin), up to `last`, by the database's arithmetic: skip keeps the open ones, move
  // takes each to its next opening, once.
  std::vector<std::string> reference(const std::string& id, const std::string& when_closed, const char* times,
                                     const char* first_day, const char* last_day, TimePoint last) {
    std::vector<std::string> ids(1000);
    std::vector<soci::indicator> nulls(1000);
    const std::string first = first_day, until = last_day, local_times = times;
    const long long last_us = to_unix_micros(last);
    *db << "WITH raw AS ("
           "  SELECT (d::date + t) AT TIME ZONE 'Europe/Berlin' AS o"
           "    FROM generate_series(:first::date, :last_day::date, interval '1 day') d, unnest(:times::time[]) t),"
           " placed AS ("
           "  SELECT DISTINCT prescient.business_next_open('desk', raw.o) AS at FROM raw"
           "   WHERE :when_closed = 'move' OR prescient.business_next_open('desk', raw.o) = raw.o)"
           " SELECT :id || '-' || extract(epoch FROM at)::bigint FROM placed"
           "  WHERE at <= prescient.at_us(:last) ORDER BY at",
        soci::use(first), soci::use(until), soci::use(local_times), soci::use(when_closed), soci::use(id),
        soci::use(last_us), soci::into(ids, nulls);
    return ids;
  }
};

}  // namespace

TEST_CASE("bound schedules: skip fires only in open time, move fires at the next opening once, as SQL computes") {
  BoundFixture f;
  f.clock.set(parse_time("2026-10-22T00:00:00Z"));
  for (const char* when_closed : {"skip", "move"}) {
    f.schedules.add({.id = when_closed,
                     .spec = "30 8,12,18 * * *",
                     .time_zone = "Europe/Berlin",
                     .calendar = "desk",
                     .when_closed = when_closed});
  }
  // Bound with a window of 3 hours from 16:00 on weekdays: each firing's place counts open time.
  f.schedules.add({.id = "spread", .spec = "0 16 * * 1-5", .time_zone = "Europe/Berlin",
                   .window = std::chrono::hours(3), .calendar = "desk"});
  const TimePoint last = parse_time("2026-11-03T16:00:00Z");
  // Thursday 29 October, midday: Monday 2 November becomes a holiday (version 2), for what is judged from then on.
  f.run_until({"skip", "move", "spread"}, last, parse_time("2026-10-29T12:00:00Z"),
              [&] { *f.db << "SELECT prescient.calendar_add_holidays('desk', '{2026-11-02}')"; });

  const std::vector<std::string> skip = f.reference("skip", "skip", "{08:30,12:30,18:30}", "2026-10-22",
                                                    "2026-11-03", last);
  const std::vector<std::string> move = f.reference("move", "move", "{08:30,12:30,18:30}", "2026-10-22",
                                                    "2026-11-03", last);
  // Thursday 22 to Tuesday 3: seven open days (not the weekends, not the two holidays), 12:30 each.
  CHECK(skip.size() == 7);
  CHECK(f.events("skip") == skip);
  // 09:00 (the night's and the morning's occurrences) and 12:30 each open day; nothing else.
  CHECK(move.size() == 14);
  CHECK(f.events("move") == move);
  CHECK(f.events("move").front() == prescient::testing::unix_id("move", "2026-10-22T07:00:00Z"));
  // Never early, and the spread schedule's firings all in open time, on every weekday that was open.
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.event WHERE emitted_at < occurred_at") == 0);
  CHECK(count_of(*f.db,
                 "SELECT count(*) FROM prescient.event WHERE source = 'spread' AND"
                 " prescient.business_next_open('desk', date_bin('1 minute', emitted_at, 'epoch')) <>"
                 "   date_bin('1 minute', emitted_at, 'epoch')") == 0);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.event WHERE source = 'spread'") == 7);
}

TEST_CASE("bound schedules: show lists where it fires; a calendar in use cannot go, and unbinding works") {
  BoundFixture f;
  f.clock.set(parse_time("2026-10-23T10:00:00Z"));  // a Friday
  f.schedules.add({.id = "m", .spec = "30 18 * * *", .time_zone = "Europe/Berlin", .calendar = "desk",
                   .when_closed = "move"});
  const Schedules::Detail detail = f.schedules.detail("m");
  CHECK(detail.definition.calendar == std::optional<std::string>("desk"));
  CHECK(detail.definition.when_closed == "move");
  // Friday's, the weekend's and Monday's 18:30 all fire at Monday's opening; the week's evenings each at the
  // next morning's, Tuesday 27's at Thursday's (Wednesday 28 is a holiday).
  std::vector<std::string> firings;
  for (const TimePoint t : detail.next_firings) firings.push_back(format_time(t));
  CHECK(firings == std::vector<std::string>{"2026-10-26T08:00:00Z", "2026-10-27T08:00:00Z", "2026-10-29T08:00:00Z",
                                            "2026-10-30T08:00:00Z", "2026-11-02T08:00:00Z"});
  CHECK_THROWS(*f.db << "DELETE FROM prescient.calendar WHERE name = 'desk'");
  f.schedules.update("m", {.calendar = std::optional<std::string>()});
  CHECK_FALSE(f.schedules.show("m").calendar);
  CHECK(format_time(f.schedules.detail("m").next_firings.front()) == "2026-10-23T16:30:00Z");
}

TEST_CASE("bound schedules: an unknown calendar, a bad policy and move without a calendar are refused, naming "
          "them, with nothing written") {
  BoundFixture f;
  const auto refusal = [&](const ScheduleDefinition& d) {
    try {
      f.schedules.add(d);
    } catch (const InvalidInput& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refusal({.id = "a", .spec = "0 9 * * *", .calendar = "nope"}) ==
        "calendar: no calendar named 'nope' (prescient calendar list)");
  CHECK(refusal({.id = "a", .spec = "0 9 * * *", .calendar = "desk", .when_closed = "later"}) ==
        "when_closed: 'later' is not a policy (use skip or move)");
  CHECK(refusal({.id = "a", .spec = "0 9 * * *", .when_closed = "move"}) ==
        "when_closed: move needs a calendar whose next opening to move to");
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.cron_schedule") == 0);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
  f.schedules.add({.id = "a", .spec = "0 9 * * *", .calendar = "desk"});
  CHECK_THROWS_WITH(f.schedules.update("a", {.calendar = std::optional<std::string>("gone")}),
                    "calendar: no calendar named 'gone' (prescient calendar list)");
  CHECK(f.schedules.show("a").calendar == std::optional<std::string>("desk"));
}

// The runner thread's cron class holds the calendars it read: a change is seen from the next slot on, not in
// the middle of one (and never a stale version after that).
TEST_CASE("bound schedules: a runner reads a calendar's version once a slot, and its spans once a version") {
  BoundFixture f;
  jobs::CronCalendars calendars;
  const TimePoint slot = parse_time("2026-11-24T10:00:00Z");
  const auto first = calendars.current("desk", slot, *f.db);
  CHECK(first->version() == 1);
  CHECK(first->is_open(parse_time("2026-11-30T10:00:00Z")));
  *f.db << "SELECT prescient.calendar_add_holidays('desk', '{2026-11-30}')";
  CHECK(calendars.current("desk", slot, *f.db) == first);
  const auto next_slot = calendars.current("desk", slot + std::chrono::minutes(1), *f.db);
  CHECK(next_slot->version() == 2);
  CHECK_FALSE(next_slot->is_open(parse_time("2026-11-30T10:00:00Z")));
  CHECK(calendars.current("desk", slot + std::chrono::minutes(2), *f.db) == next_slot);
  CHECK_THROWS_AS(calendars.current("nope", slot, *f.db), NotFound);
}
