// Spreading a herd (docs/flow-control.md, "Spreading a herd"): checks given a window are stored at one of
// its slots, chosen by id, so that a herd given one time spreads evenly; never before its time, never at
// or after its time plus the window. Schedules with a window: tests/db/schedule_test.cpp.
#include <catch2/catch.hpp>
#include <soci/soci.h>

#include <map>

#include "builtin_jobs.hpp"
#include "prescient/client.hpp"
#include "prescient/errors.hpp"
#include "prescient/queue_stats.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/time_text.hpp"
#include "client_fixture.hpp"
#include "test_database.hpp"

using namespace prescient;
using namespace prescient::jobs;
using namespace std::chrono_literals;
using prescient::testing::count_of;

namespace {

// A 1-minute grid, ten minutes before the herd's time.
struct SpreadWindowFixture : prescient::testing::ClientFixture {
  SpreadWindowFixture() : ClientFixture("2026-11-21T08:50:10Z") {}

  std::vector<ScheduleRequest> herd(int count, const char* at, std::chrono::seconds window) {
    std::vector<ScheduleRequest> requests;
    for (int i = 0; i < count; ++i) {
      requests.push_back({.job = "noop", .entity_name = "reminders", .entity_key = std::to_string(i),
                          .at = parse_time(at), .window = window});
    }
    return requests;
  }
  // Pending checks per slot (UTC text).
  std::map<std::string, long long> profile() {
    std::map<std::string, long long> counts;
    soci::rowset<soci::row> rows = (db->prepare << "SELECT prescient.iso(next_check_at), count(*)"
                                                   " FROM prescient.future_job GROUP BY 1");
    for (const soci::row& r : rows) counts[r.get<std::string>(0)] = r.get<long long>(1);
    return counts;
  }
};

}  // namespace

TEST_CASE("a herd given one time and a 10-minute window spreads evenly over its ten slots, none early") {
  SpreadWindowFixture f;
  const auto herd = f.herd(10000, "2026-11-21T09:00:00Z", 10min);
  f.client.schedule_many(herd);

  std::map<std::string, long long> expected;
  for (int minute = 0; minute < 10; ++minute) {
    expected["2026-11-21T09:0" + std::to_string(minute) + ":00Z"] = 1000;
  }
  CHECK(f.profile() == expected);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE first_check_at <> next_check_at") == 0);

  // prescient stats and the dashboard's future view (/api/future) show the flattened profile.
  const QueueStats stats = queue_stats(*f.db, f.clock.now(), 20, Micros{0});
  std::map<std::string, long long> shown;
  for (const auto& slot : stats.next_slots) {
    if (slot.checks > 0) shown[format_time(slot.slot)] = slot.checks;
  }
  CHECK(shown == expected);
  std::map<std::string, long long> future_view;
  for (const FutureBucket& bucket : future(*f.db, FutureZoom::slot, f.clock.now()).buckets) {
    future_view[format_time(bucket.starts_at)] += bucket.checks;
  }
  CHECK(future_view == expected);

  // Each slot fires its own thousand, and nothing before 09:00.
  SlotRunner runner({.database_url = f.url, .runner_id = "r"}, f.registry, f.clock);
  f.clock.set(parse_time("2026-11-21T08:59:00Z"));
  CHECK(runner.run_slot(f.clock.now()).claimed == 0);
  for (int minute = 0; minute < 10; ++minute) {
    f.clock.set(parse_time("2026-11-21T09:0" + std::to_string(minute) + ":00Z"));
    const SlotReport report = runner.run_slot(f.clock.now());
    CHECK(report.claimed == 1000);
    CHECK(report.done == 1000);
  }
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.job_history WHERE outcome = 'done'") == 10000);
}

TEST_CASE("a window is counted from the check's time: never before it, never at or after it plus the window") {
  SpreadWindowFixture f;
  // 09:00:30 with 3 minutes: the slots 09:01, 09:02 and 09:03, all before 09:03:30.
  for (int i = 0; i < 30; ++i) {
    f.client.schedule({.job = "noop", .entity_name = "reminders", .entity_key = std::to_string(i),
                       .at = parse_time("2026-11-21T09:00:30Z"), .window = 3min});
  }
  CHECK(f.profile() == std::map<std::string, long long>{{"2026-11-21T09:01:00Z", 10},
                                                        {"2026-11-21T09:02:00Z", 10},
                                                        {"2026-11-21T09:03:00Z", 10}});

  // A time in the past is due at the next boundary; its window counts from there.
  *f.db << "DELETE FROM prescient.future_job";
  f.client.schedule_many(f.herd(40, "2026-11-21T08:00:00Z", 4min));
  CHECK(f.profile() == std::map<std::string, long long>{{"2026-11-21T08:51:00Z", 10},
                                                        {"2026-11-21T08:52:00Z", 10},
                                                        {"2026-11-21T08:53:00Z", 10},
                                                        {"2026-11-21T08:54:00Z", 10}});

  // A window shorter than two slots has one slot to give: the check's own.
  *f.db << "DELETE FROM prescient.future_job";
  f.client.schedule_many(f.herd(5, "2026-11-21T09:00:00Z", 90s));
  CHECK(f.profile() == std::map<std::string, long long>{{"2026-11-21T09:00:00Z", 5}});
}

TEST_CASE("a replaced check keeps its place in the window; the SQL API spreads the same way") {
  SpreadWindowFixture f;
  ScheduleRequest request{.job = "noop", .entity_name = "orders", .entity_key = "42", .job_key = "remind:42",
                          .at = parse_time("2026-11-21T09:00:00Z"), .on_conflict = OnConflict::replace, .window = 10min};
  const Scheduled first = f.client.schedule(request);
  const auto offset = first.id % 10;
  CHECK(format_time(*first.next_check_at) == "2026-11-21T09:0" + std::to_string(offset) + ":00Z");
  request.at = parse_time("2026-11-21T10:00:00Z");
  const Scheduled replaced = f.client.schedule(request);
  CHECK(replaced.status == Scheduled::Status::replaced);
  CHECK(replaced.id == first.id);
  CHECK(format_time(*replaced.next_check_at) == "2026-11-21T10:0" + std::to_string(offset) + ":00Z");

  // prescient.schedule and schedule_many, as an application in another language calls them.
  *f.db << "SELECT count(*) FROM prescient.schedule('noop', 'orders', '7', '2026-11-21T09:00:00Z', "
           "p_now => '2026-11-21T08:50:10Z', p_window => '5m')";
  *f.db << "SELECT count(*) FROM prescient.schedule_many("
           "'[{\"job\":\"noop\",\"entity_name\":\"orders\",\"entity_key\":\"8\",\"at\":\"2026-11-21T09:00:00Z\","
           "\"window\":\"5m\",\"job_key\":\"k8\"}, {\"job\":\"noop\",\"entity_name\":\"orders\",\"entity_key\":\"9\","
           "\"at\":\"2026-11-21T09:00:00Z\",\"window\":\"5m\"}]', p_now => '2026-11-21T08:50:10Z')";
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job WHERE entity_key IN ('7', '8', '9')"
                        " AND next_check_at = '2026-11-21T09:00:00Z'::timestamptz + (id % 5) * interval '1 minute'") ==
        3);
}

TEST_CASE("a negative window, or one ending beyond the horizon, is refused naming it; nothing is written") {
  SpreadWindowFixture f;
  auto herd = f.herd(3, "2026-11-21T09:00:00Z", 10min);
  herd[2].window = -5min;
  CHECK_THROWS_WITH(f.client.schedule_many(herd), Catch::Contains("item 3") && Catch::Contains("window -5m"));
  herd[2].window = 365 * 24h;
  CHECK_THROWS_WITH(f.client.schedule_many(herd),
                    Catch::Contains("item 3: the window 365d ends too late") && Catch::Contains("beyond the horizon"));
  CHECK_THROWS_AS(f.client.schedule(herd[2]), InvalidInput);
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);

  // The SQL API refuses them the same way (PR400), one item bad in many.
  const auto refused = [&](const std::string& sql) {
    try {
      *f.db << sql;
    } catch (const soci::soci_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refused("SELECT count(*) FROM prescient.schedule('noop', 'orders', '7', now(), p_window => '-1m')"),
             Catch::Contains("the window -1m is negative"));
  CHECK_THAT(refused("SELECT count(*) FROM prescient.schedule_many('[{\"job\":\"noop\",\"entity_name\":\"o\","
                     "\"entity_key\":\"1\",\"at\":\"2026-11-21T09:00:00Z\"}, {\"job\":\"noop\",\"entity_name\":\"o\","
                     "\"entity_key\":\"2\",\"at\":\"2026-11-21T09:00:00Z\",\"window\":\"400 days\"}]',"
                     " p_now => '2026-11-21T08:50:10Z')"),
             Catch::Contains("item 2: the window 400d ends too late") && Catch::Contains("beyond the horizon"));
  CHECK(count_of(*f.db, "SELECT count(*) FROM prescient.future_job") == 0);
}
