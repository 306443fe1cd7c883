// Schedules: `count` schedules `@every 1m` (class emit: one event per occurrence), created through
// Schedules::add from 4 sessions, then `slots` consecutive 1-minute slots fired: each slot runs every
// schedule once (its cron check fires, emits, and re-arms for the next minute).
#include <atomic>
#include <thread>

#include "bench_support.hpp"
#include "prescient/clock.hpp"
#include "prescient/database.hpp"
#include "prescient/schedules.hpp"
#include "prescient/slot_runner.hpp"

namespace prescient::bench {

void schedules(const std::string& url, soci::session& db, const Registry& registry, long count, int slots) {
  reset(db);
  // Created a minute before the bench slot, so the first occurrence is the bench slot itself.
  ManualClock clock(bench_slot() - std::chrono::minutes{1});
  std::atomic<long> next{0};
  const auto start = Steady::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < 4; ++t) {
    pool.emplace_back([&] {
      auto session = connect(url);
      Schedules schedules(*session, clock, &registry);
      for (long i; (i = next++) < count;) {
        schedules.add({.id = "every-minute-" + std::to_string(i), .spec = "@every 1m", .payload = {{"n", i}}});
      }
    });
  }
  for (auto& t : pool) t.join();
  report("schedules, created through Schedules::add (4 sessions)", count, seconds_since(start));
  db << "VACUUM ANALYZE prescient.future_job";
  db << "CHECKPOINT";

  SlotRunner runner({.database_url = url, .runner_id = "bench", .workers = 2}, registry, clock);
  for (int s = 0; s < slots; ++s) {
    const TimePoint slot = bench_slot() + std::chrono::minutes{s};
    clock.set(slot);
    const SlotReport r = runner.run_slot(slot);
    if (r.claimed != count || r.rescheduled != count) {
      throw std::runtime_error("schedules: slot " + std::to_string(s) + " fired " + std::to_string(r.claimed) +
                               " and re-armed " + std::to_string(r.rescheduled) + " of " + std::to_string(count));
    }
    report("schedules, " + std::to_string(count) + " @every 1m, slot " + std::to_string(s + 1) + " of " +
               std::to_string(slots),
           count, r.seconds, {{"events", r.events}});
  }
}

}  // namespace prescient::bench
