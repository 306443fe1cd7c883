#pragma once
// A database with the built-in classes, a 1-minute grid and a manual clock, for tests of recurring
// schedules through the C++ API: fire a slot, sweep, read a schedule's events.
#include <soci/soci.h>

#include <memory>
#include <string>
#include <vector>

#include "builtin_jobs.hpp"
#include "prescient/clock.hpp"
#include "prescient/registry.hpp"
#include "prescient/schedules.hpp"
#include "prescient/settings.hpp"
#include "prescient/slot_grid.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/time_text.hpp"
#include "test_database.hpp"

namespace prescient::testing {

// The id of the event a schedule's occurrence at `time` emits: the schedule's name and the occurrence's
// Unix seconds.
inline std::string unix_id(const std::string& schedule, const char* time) {
  return schedule + "-" + std::to_string(to_unix_micros(parse_time(time)) / 1000000);
}

struct ScheduleFixture {
  std::string url = create_migrated_database(60);
  std::unique_ptr<soci::session> db = connect_to(url);
  ManualClock clock{parse_time("2026-11-21T10:05:30Z")};
  Registry registry;
  Schedules schedules{*db, clock};

  ScheduleFixture() { jobs::register_builtin_jobs(registry); }

  // Runs the slot `at` falls in, with the clock at `at`.
  SlotReport fire(const char* at) {
    clock.set(parse_time(at));
    SlotRunner runner({.database_url = url, .runner_id = "r"}, registry, clock);
    return runner.run_slot(runner.settings().grid().floor(clock.now()));
  }
  SlotReport sweep_at(const char* at) {
    clock.set(parse_time(at));
    SlotRunner runner({.database_url = url, .runner_id = "r"}, registry, clock);
    return runner.sweep(runner.settings().grid().floor(clock.now()), SweepMode::run);
  }
  // The ids of the schedule's events, oldest occurrence first.
  std::vector<std::string> events(const std::string& source) {
    std::vector<std::string> ids(10000);
    std::vector<soci::indicator> nulls(10000);
    *db << "SELECT id FROM prescient.event WHERE source = :s ORDER BY occurred_at", soci::use(source),
        soci::into(ids, nulls);
    return ids;
  }
  std::string pending_at(const std::string& schedule) { return format_time(*schedules.show(schedule).next_check_at); }
};

}  // namespace prescient::testing
