// The slot runner's sweep and the daemon's loop without a database: in-memory stores (fake_stores.hpp)
// and a manual clock that a waiter moves to each boundary at once, so hours of slots take milliseconds.
// (The same against PostgreSQL and real processes: tests/db/runner_test.cpp, tests/reliability.)
#include <catch2/catch.hpp>

#include <mutex>

#include "fake_stores.hpp"
#include "prescient/daemon.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"

using namespace prescient;
using namespace prescient::runner;
using namespace std::chrono_literals;
using prescient::testing::FakeStores;

namespace {

// When each check ran, by the runner's clock.
struct Runs {
  std::mutex mutex;
  std::vector<std::pair<std::int64_t, TimePoint>> at;
  std::vector<std::pair<std::int64_t, TimePoint>> all() {
    const std::lock_guard lock(mutex);
    return at;
  }
};

class Recorder final : public JobExec {
 public:
  Recorder(Runs& runs, const Clock& clock) : runs_(runs), clock_(clock) {}
  JobResult run(const Check& check, JobContext&) override {
    const std::lock_guard lock(runs_.mutex);
    runs_.at.emplace_back(check.id, clock_.now());
    return {};
  }

 private:
  Runs& runs_;
  const Clock& clock_;
};

// Time passes at once: each wait moves the clock to its end. Past `stop_at` it stops the daemon.
class InstantWaiter final : public Waiter {
 public:
  InstantWaiter(ManualClock& clock, TimePoint stop_at) : clock_(clock), stop_at_(stop_at) {}
  bool wait_until(TimePoint t) override {
    if (t > stop_at_) stop();
    if (stopped()) return false;
    if (clock_.now() < t) clock_.set(t);
    return true;
  }

 private:
  ManualClock& clock_;
  TimePoint stop_at_;
};

struct SlotRunnerFixture {
  ManualClock clock{parse_time("2026-11-21T10:00:30Z")};
  Runs runs;
  Registry registry;
  RunnerOptions options{.runner_id = "r", .batch_size = 100};
  std::shared_ptr<FakeStores> stores = std::make_shared<FakeStores>();

  SlotRunnerFixture() {
    registry.add("recorder", [this] { return std::make_unique<Recorder>(runs, clock); });
  }
  std::vector<std::int64_t> pending_ids() const {
    std::vector<std::int64_t> ids;
    for (const Check& c : stores->queue.due) ids.push_back(c.id);
    return ids;
  }
  // Runs a daemon on the stores, each wait passing at once, until the clock passes `stop_at`.
  DaemonStats run_daemon_until(const std::string& stop_at) {
    InstantWaiter waiter(clock, parse_time(stop_at));
    Daemon daemon(options, registry, clock, waiter, nullptr, stores);
    return daemon.run();
  }
  void due(std::int64_t id, const std::string& at) {
    const TimePoint slot = parse_time(at);
    stores->queue.due.push_back({.id = id, .job = "recorder", .entity_name = "e", .entity_key = std::to_string(id),
                                 .first_check_at = slot, .slot = slot});
  }
};

std::pair<std::int64_t, TimePoint> ran(std::int64_t id, const std::string& at) { return {id, parse_time(at)}; }

}  // namespace

TEST_CASE("sweep: the overdue slots, oldest first, each check once; the current slot is left to run_slot") {
  SlotRunnerFixture f;
  f.due(1, "2026-11-21T09:55:00Z");
  f.due(2, "2026-11-21T09:50:00Z");
  f.due(3, "2026-11-21T09:55:00Z");
  f.due(4, "2026-11-21T10:00:00Z");  // the current slot
  SlotRunner runner(f.options, f.registry, f.clock, f.stores);
  std::vector<TimePoint> slots;
  const SlotReport swept = runner.sweep(parse_time("2026-11-21T10:00:00Z"), SweepMode::run,
                                        [&](const SlotReport& part) { slots.push_back(part.slot); });
  CHECK(slots == std::vector<TimePoint>{parse_time("2026-11-21T09:50:00Z"), parse_time("2026-11-21T09:55:00Z")});
  CHECK(swept.claimed == 3);
  CHECK(swept.done == 3);
  std::vector<std::int64_t> ids;
  for (const auto& [id, at] : f.runs.all()) ids.push_back(id);
  CHECK(ids == std::vector<std::int64_t>{2, 1, 3});
  CHECK(f.pending_ids() == std::vector<std::int64_t>{4});
}

TEST_CASE("sweep --mode shift: overdue checks move to the next boundary, none runs") {
  SlotRunnerFixture f;
  f.due(1, "2026-11-21T09:50:00Z");
  f.due(2, "2026-11-21T09:59:00Z");
  f.due(3, "2026-11-21T10:00:00Z");
  f.options.batch_size = 1;  // shifted a check a statement, until none is left
  SlotRunner runner(f.options, f.registry, f.clock, f.stores);
  const SlotReport swept = runner.sweep(parse_time("2026-11-21T10:00:00Z"), SweepMode::shift);
  CHECK(swept.shifted == 2);
  CHECK(swept.claimed == 0);
  CHECK(f.runs.all().empty());
  for (const Check& c : f.stores->queue.due) {
    CHECK(format_time(c.slot) == (c.id == 3 ? "2026-11-21T10:00:00Z" : "2026-11-21T10:01:00Z"));
  }
}

TEST_CASE("sweep: an end off the grid or past the current slot is refused; nothing fires early") {
  SlotRunnerFixture f;
  f.due(1, "2026-11-21T10:01:00Z");
  SlotRunner runner(f.options, f.registry, f.clock, f.stores);
  CHECK_THROWS_WITH(runner.sweep(parse_time("2026-11-21T09:59:30Z"), SweepMode::run),
                    Catch::StartsWith("--until 2026-11-21T09:59:30Z is not on the 60s slot grid"));
  CHECK_THROWS_WITH(runner.sweep(parse_time("2026-11-21T10:01:00Z"), SweepMode::run),
                    Catch::Contains("is later than the current slot 2026-11-21T10:00:00Z: nothing fires early"));
  CHECK(f.runs.all().empty());
}

TEST_CASE("daemon: catches up what was missed, then fires each slot at its boundary, never early") {
  SlotRunnerFixture f;
  f.due(1, "2026-11-21T09:58:00Z");  // missed while no daemon ran
  f.due(2, "2026-11-21T10:01:00Z");
  f.due(3, "2026-11-21T10:03:00Z");
  f.due(4, "2026-11-21T10:05:00Z");  // after the daemon stops
  const DaemonStats stats = f.run_daemon_until("2026-11-21T10:04:30Z");
  CHECK(f.runs.all() == std::vector{ran(1, "2026-11-21T10:00:30Z"), ran(2, "2026-11-21T10:01:00Z"),
                                    ran(3, "2026-11-21T10:03:00Z")});
  CHECK(stats.slots == 5);  // 10:00 to 10:04
  CHECK(stats.errors == 0);
  CHECK(stats.total.done == 3);
  // Each slot recorded as seen once, with what was claimed at its boundary; the partitions looked at once.
  REQUIRE(f.stores->seen.size() == 5);
  CHECK(f.stores->seen[0] == std::pair{parse_time("2026-11-21T10:00:00Z"), 0L});
  CHECK(f.stores->seen[1] == std::pair{parse_time("2026-11-21T10:01:00Z"), 1L});
  CHECK(f.stores->seen[4] == std::pair{parse_time("2026-11-21T10:04:00Z"), 0L});
  CHECK(f.stores->partition_calls.size() == 1);
  CHECK(f.pending_ids() == std::vector<std::int64_t>{4});
}

TEST_CASE("daemon: a database that is not up yet is retried with backoff; no slot is lost") {
  SlotRunnerFixture f;
  f.due(1, "2026-11-21T10:00:00Z");
  f.due(2, "2026-11-21T10:01:00Z");
  f.stores->upkeep_open_failures = 2;
  const DaemonStats stats = f.run_daemon_until("2026-11-21T10:01:30Z");
  CHECK(stats.errors == 2);
  CHECK(f.stores->upkeep_opens == 3);
  // Started at 10:00:30.25 (tried again at once, then after 250 ms): the slot it started in fired then,
  // late but whole, and the next one at its boundary.
  CHECK(f.runs.all() == std::vector{ran(1, "2026-11-21T10:00:30.25Z"), ran(2, "2026-11-21T10:01:00Z")});
}

// The issue this bound comes from: with waits doubling to 30 s, a daemon's first try after a 10 s election
// came 16 s after it (docs/operations.md, "High availability").
TEST_CASE("daemon: tries after failures come at once, then 250 ms doubling to at most 1 s") {
  SlotRunnerFixture f;
  f.stores->clock = &f.clock;
  f.stores->upkeep_open_failures = 8;
  f.run_daemon_until("2026-11-21T10:01:30Z");
  // Each try's time after the first, in ms: the wait before it is 0, 250, 500, 1000, 1000, ...
  const std::vector<long> expected{0, 0, 250, 750, 1750, 2750, 3750, 4750, 5750};
  std::vector<long> tried;
  for (const TimePoint at : f.stores->upkeep_opened_at) {
    const Micros after_first = at - parse_time("2026-11-21T10:00:30Z");
    tried.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(after_first).count());
  }
  CHECK(tried == expected);
}

TEST_CASE("daemon: a success starts the waits again: a slot that fails after a start is tried again at once") {
  SlotRunnerFixture f;
  f.stores->clock = &f.clock;
  f.due(1, "2026-11-21T10:00:00Z");
  f.stores->upkeep_open_failures = 2;  // the start: at once, then after 250 ms
  f.stores->thread_open_failures = 2;  // the slot's first two tries: at once again, then after 250 ms
  const DaemonStats stats = f.run_daemon_until("2026-11-21T10:00:45Z");
  CHECK(stats.errors == 4);
  CHECK(stats.slot_retries == 2);
  CHECK(f.runs.all() == std::vector{ran(1, "2026-11-21T10:00:30.5Z")});
  REQUIRE(f.stores->thread_opened_at.size() == 3);
  CHECK(f.stores->thread_opened_at[0] == parse_time("2026-11-21T10:00:30.25Z"));
  CHECK(f.stores->thread_opened_at[1] == parse_time("2026-11-21T10:00:30.25Z"));
}

// Issue 57's failover: the try that reached the new leader first read the clock on a new session, then
// failed on a runner thread's session from before the failover, and waited the longest wait again.
TEST_CASE("daemon: a failed try drops every session, so the next opens new ones throughout") {
  SlotRunnerFixture f;
  f.stores->clock = &f.clock;
  f.options.clock_check.enabled = true;
  f.due(1, "2026-11-21T10:01:00Z");
  f.due(2, "2026-11-21T10:02:00Z");
  f.stores->clock_read_failures = 1;
  f.stores->clock_reads_fail_from = parse_time("2026-11-21T10:02:00Z");
  const DaemonStats stats = f.run_daemon_until("2026-11-21T10:02:30Z");
  CHECK(stats.slot_retries == 1);
  CHECK(f.runs.all() == std::vector{ran(1, "2026-11-21T10:01:00Z"), ran(2, "2026-11-21T10:02:00Z")});
  // The runner thread's store, opened for the first slot, opened again for the try after the failure.
  CHECK(f.stores->thread_opened_at ==
        std::vector{parse_time("2026-11-21T10:00:30Z"), parse_time("2026-11-21T10:02:00Z")});
}

TEST_CASE("daemon: the history's partitions before the first slot, then hourly; a failure is tried a minute later") {
  SlotRunnerFixture f;
  f.due(1, "2026-11-21T10:01:00Z");
  f.due(2, "2026-11-21T12:10:00Z");
  f.stores->partition_failures = 1;
  const DaemonStats stats = f.run_daemon_until("2026-11-21T12:30:30Z");
  // The first look (at the start) fails: it is tried after the first slot a minute later, then hourly.
  CHECK(f.stores->partition_calls ==
        std::vector{parse_time("2026-11-21T10:00:30Z"), parse_time("2026-11-21T10:02:00Z"),
                    parse_time("2026-11-21T11:02:00Z"), parse_time("2026-11-21T12:02:00Z")});
  // Upkeep, not a database failure of the daemon's: no slot held back, nothing counted as an error.
  CHECK(stats.errors == 0);
  CHECK(stats.slots == 151);  // 10:00 to 12:30
  CHECK(f.runs.all() == std::vector{ran(1, "2026-11-21T10:01:00Z"), ran(2, "2026-11-21T12:10:00Z")});
}
