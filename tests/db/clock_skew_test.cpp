// A runner whose clock is off: it fires on the database server's clock (prescient/server_clock.hpp).
// The test server runs on this machine, so the system clock is the server's: a runner is given a clock
// some minutes from it, and each run is timed on the system clock.
#include <soci/soci.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <thread>

#include "captured_log.hpp"
#include "prescient/client.hpp"
#include "prescient/daemon.hpp"
#include "prescient/errors.hpp"
#include "prescient/server_clock.hpp"
#include "prescient/slot_runner.hpp"
#include "prescient/time_text.hpp"
#include "test_database.hpp"

using namespace prescient;
using namespace prescient::testing;
using namespace std::chrono_literals;

namespace {

class SkewedClock final : public Clock {
 public:
  explicit SkewedClock(Micros skew) : skew_(skew) {}
  TimePoint now() const override { return system_.now() + skew_; }

 private:
  SystemClock system_;
  Micros skew_;
};

struct Run {
  TimePoint slot;
  TimePoint at;  // on the system (the server's) clock
};

class Timed final : public JobExec {
 public:
  Timed(std::mutex& mutex, std::vector<Run>& runs) : mutex_(mutex), runs_(runs) {}
  JobResult run(const Check& check, JobContext&) override {
    const std::lock_guard lock(mutex_);
    runs_.push_back({check.slot, SystemClock().now()});
    return {};
  }

 private:
  std::mutex& mutex_;
  std::vector<Run>& runs_;
};

class Offsets final : public DaemonObserver {
 public:
  void fired(const SlotReport&, bool) override {}
  void failed(const std::exception&) override {}
  void clock_offset(Micros offset) override {
    const std::lock_guard lock(mutex);
    seen.push_back(offset);
  }
  std::mutex mutex;
  std::vector<Micros> seen;
};

// Every run at its slot on the server's clock: never before, and not late by more than the firing takes.
void check_on_time(const std::vector<Run>& runs) {
  for (const Run& run : runs) {
    INFO(format_time(run.slot) << " ran at " << format_time(run.at));
    CHECK(run.at >= run.slot);
    CHECK(run.at < run.slot + 2s);
  }
}

struct Skewed {
  std::string url = create_migrated_database(1);
  std::mutex mutex;
  std::vector<Run> runs;
  Registry registry;
  Skewed() {
    registry.add("timed", [this] { return std::make_unique<Timed>(mutex, runs); });
  }
  // `count` checks due at the server's slots 2 and 3 seconds ahead; returns the first of those slots.
  TimePoint schedule(int count) {
    auto db = connect_to(url);
    const SystemClock clock;
    const TimePoint first = std::chrono::ceil<std::chrono::seconds>(clock.now() + 2s);
    std::vector<ScheduleRequest> requests;
    for (int i = 0; i < count; ++i) {
      requests.push_back({.job = "timed", .entity_name = "e", .entity_key = std::to_string(i),
                          .at = first + std::chrono::seconds(i % 2)});
    }
    Client(*db, {.clock = &clock}).schedule_many(requests);
    return first;
  }
  // A daemon on `clock` until every run is in (or 20 s).
  void run_daemon(const Clock& clock, int count, DaemonObserver* observer) {
    SystemWaiter waiter(clock);
    Daemon daemon({.database_url = url, .runner_id = "skewed", .workers = 1, .clock_check = {.enabled = true}},
                  registry, clock, waiter, observer);
    std::thread stopper([&] {
      const auto deadline = std::chrono::steady_clock::now() + 20s;
      while (std::chrono::steady_clock::now() < deadline) {
        {
          const std::lock_guard lock(mutex);
          if (static_cast<int>(runs.size()) >= count) break;
        }
        std::this_thread::sleep_for(20ms);
      }
      waiter.stop();
    });
    daemon.run();
    stopper.join();
  }
};

}  // namespace

TEST_CASE("a runner 3 minutes ahead of the server fires nothing before the server's clock reaches the slot") {
  Skewed f;
  const TimePoint first = f.schedule(20);
  const SkewedClock ahead(3min);
  Offsets offsets;
  CapturedLog log;
  f.run_daemon(ahead, 20, &offsets);
  REQUIRE(f.runs.size() == 20);
  check_on_time(f.runs);
  CHECK(f.runs.front().slot == first);
  REQUIRE_FALSE(offsets.seen.empty());
  for (const Micros offset : offsets.seen) CHECK(std::chrono::abs(offset + Micros{3min}) < 1s);
  // It says so.
  CHECK_THAT(log.text(), Catch::Contains("this host's clock is 180.") &&
                             Catch::Contains("ahead of the database server's clock"));
}

TEST_CASE("a runner 3 minutes behind the server fires on the server's clock, not 3 minutes late") {
  Skewed f;
  f.schedule(20);
  const SkewedClock behind(-3min);
  Offsets offsets;
  f.run_daemon(behind, 20, &offsets);
  REQUIRE(f.runs.size() == 20);
  check_on_time(f.runs);
  REQUIRE_FALSE(offsets.seen.empty());
  CHECK(std::chrono::abs(offsets.seen.back() - Micros{3min}) < 1s);
}

TEST_CASE("a runner past the refusal bound does not start, naming the offset") {
  Skewed f;
  const SkewedClock far_ahead(10min);
  SystemWaiter waiter(far_ahead);
  Daemon daemon({.database_url = f.url, .runner_id = "skewed", .clock_check = {.enabled = true}}, f.registry,
                far_ahead, waiter);
  CHECK_THROWS_AS(daemon.run(), InvalidInput);
  try {
    Daemon again({.database_url = f.url, .runner_id = "skewed", .clock_check = {.enabled = true}}, f.registry,
                 far_ahead, waiter);
    again.run();
  } catch (const InvalidInput& e) {
    CHECK_THAT(e.what(), Catch::Contains("600.") && Catch::Contains("ahead of the database server's clock") &&
                             Catch::Contains("--max-clock-offset 5m"));
  }
  // Told otherwise, it starts (and fires on the server's clock).
  const TimePoint first = f.schedule(2);
  f.runs.clear();
  SystemWaiter waiter2(far_ahead);
  std::thread stopper([&] {
    std::this_thread::sleep_for(5s);
    waiter2.stop();
  });
  Daemon allowed({.database_url = f.url, .runner_id = "skewed", .clock_check = {.enabled = true, .refuse_over = 1h}},
                 f.registry, far_ahead, waiter2);
  allowed.run();
  stopper.join();
  REQUIRE(f.runs.size() == 2);
  for (const Run& run : f.runs) CHECK(run.at >= run.slot);
  CHECK(f.runs.front().slot == first);
}

TEST_CASE("run-slot on a clock ahead refuses a slot the server's clock has not reached") {
  Skewed f;
  const SkewedClock ahead_clock(3min);
  ServerClock clock(ahead_clock);
  SlotRunner runner({.database_url = f.url, .runner_id = "one-shot", .clock_check = {.enabled = true}}, f.registry,
                    clock);
  const TimePoint local_slot = runner.settings().grid().floor(ahead_clock.now());
  CHECK(runner.run_slot(local_slot).claimed == 0);  // unaligned: the host's own slot is still "now"
  clock.adopt(runner.server_clock_offset(ahead_clock), {.enabled = true}, true);
  CHECK_THROWS_WITH(runner.run_slot(local_slot), Catch::Contains("later than the current slot"));
}
