// Schedules: `count` schedules `@every 1m` (class emit: one event per occurrence) created in bulk
// (Schedules::add_many, 10 000 per call, one session), then `slots` consecutive 1-minute slots fired: each
// slot runs every schedule once (its cron check fires, emits, and re-arms for the next minute). Then
// bulk adds at 1 000 per call, and single adds through the SQL API (prescient.cron_add, one call per
// schedule) from 1, 4 and 16 sessions.
// The runner's resident memory is reported after the firings (it must not grow with `count`). Then the same
// `count` schedules bound to a calendar open around the clock, fired for `slots` slots: every occurrence is in
// open time, so the difference from the unbound slots is the placing alone (issue 61: at least 0.8 of them).
#include <atomic>
#include <fstream>
#include <optional>
#include <thread>

#include "bench_support.hpp"
#include "prescient/clock.hpp"
#include "prescient/database.hpp"
#include "prescient/schedules.hpp"
#include "prescient/slot_runner.hpp"

namespace prescient::bench {
namespace {

long resident_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

void single_sql_adds(const std::string& url, long count, int sessions) {
  std::atomic<long> next{0};
  const auto start = Steady::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < sessions; ++t) {
    pool.emplace_back([&] {
      auto session = connect(url);
      for (long i; (i = next++) < count;) {
        const std::string id = "sql-" + std::to_string(sessions) + "-" + std::to_string(i);
        *session << "SELECT prescient.cron_add(:id, '@every 1m', p_payload => '{\"n\": 1}')", soci::use(id);
      }
    });
  }
  for (auto& t : pool) t.join();
  report("schedules, created one at a time through SQL (prescient.cron_add, " + std::to_string(sessions) +
             (sessions == 1 ? " session)" : " sessions)"),
         count, seconds_since(start));
}

// `count` schedules `@every 1m` through Schedules::add_many, `per_call` a call, one session; bound to
// `calendar` when given.
void bulk_adds(soci::session& db, const Clock& clock, long count, long per_call, const std::string& prefix = "bulk-",
               const std::optional<std::string>& calendar = std::nullopt) {
  Schedules schedules(db, clock);
  std::vector<ScheduleDefinition> chunk;
  const auto start = Steady::now();
  for (long i = 0; i < count; i += per_call) {
    chunk.clear();
    for (long k = i; k < std::min(count, i + per_call); ++k) {
      chunk.push_back({.id = prefix + std::to_string(k), .spec = "@every 1m", .payload = {{"n", k}},
                       .calendar = calendar});
    }
    schedules.add_many(chunk);
  }
  if (calendar) return;  // a figure of its own would measure the options' loop (cron_apply_options), not asked
  report("schedules, created in bulk (Schedules::add_many, " + std::to_string(per_call) + " per call, 1 session)",
         count, seconds_since(start));
}

// `slots` consecutive 1-minute slots from the bench slot, each firing every one of `count` schedules.
void fire_slots(const std::string& url, const Registry& registry, ManualClock& clock, long count, int slots,
                const std::string& what) {
  SlotRunner runner({.database_url = url, .runner_id = "bench", .workers = 2}, registry, clock);
  for (int s = 0; s < slots; ++s) {
    const TimePoint slot = bench_slot() + std::chrono::minutes{s};
    clock.set(slot);
    const SlotReport r = runner.run_slot(slot);
    if (r.claimed != count || r.rescheduled != count || r.events != count) {
      throw std::runtime_error("schedules: slot " + std::to_string(s) + " fired " + std::to_string(r.claimed) +
                               ", re-armed " + std::to_string(r.rescheduled) + " and emitted " +
                               std::to_string(r.events) + " of " + std::to_string(count));
    }
    report("schedules, " + std::to_string(count) + " @every 1m" + what + ", slot " + std::to_string(s + 1) + " of " +
               std::to_string(slots),
           count, r.seconds, {{"events", r.events}, {"runner_rss_mib", resident_kib() / 1024}});
  }
}

void settle_down(soci::session& db) {
  db << "VACUUM ANALYZE prescient.future_job";
  db << "VACUUM ANALYZE prescient.cron_schedule";
  db << "CHECKPOINT";
}

}  // namespace

void schedules(const std::string& url, soci::session& db, const Registry& registry, long count, int slots) {
  reset(db);
  // Created a minute before the bench slot, so the first occurrence is the bench slot itself.
  ManualClock clock(bench_slot() - std::chrono::minutes{1});
  bulk_adds(db, clock, count, 10000, "every-minute-");
  settle_down(db);
  fire_slots(url, registry, clock, count, slots, "");

  reset(db);
  db << "SELECT prescient.calendar_set('bench-open', 'UTC', '{\"hours\": {\"mon\": [\"00:00-24:00\"],"
        " \"tue\": [\"00:00-24:00\"], \"wed\": [\"00:00-24:00\"], \"thu\": [\"00:00-24:00\"],"
        " \"fri\": [\"00:00-24:00\"], \"sat\": [\"00:00-24:00\"], \"sun\": [\"00:00-24:00\"]}}')";
  clock.set(bench_slot() - std::chrono::minutes{1});
  bulk_adds(db, clock, count, 10000, "bound-", std::string("bench-open"));
  settle_down(db);
  fire_slots(url, registry, clock, count, slots, " bound to a calendar");
  // After the firings, so the figures above are of the `count` schedules alone.
  bulk_adds(db, clock, std::min(count, 100000L), 1000);
  const long singles = std::min(count, 20000L);
  for (const int sessions : {1, 4, 16}) single_sql_adds(url, singles, sessions);
}

}  // namespace prescient::bench
