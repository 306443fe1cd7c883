// The maintainer and the shape of its services (runner/maintenance.hpp), without a database: which run,
// in what order, and what a failure of one does to the others and to the daemon's errors. (The services
// inside the daemon's loop: slot_runner_test.cpp.)
#include <catch2/catch.hpp>

#include "fake_stores.hpp"
#include "prescient/errors.hpp"
#include "prescient/time_text.hpp"
#include "runner/maintenance.hpp"

using namespace prescient;
using namespace prescient::runner;
using namespace std::chrono_literals;

namespace {

// Due when told; records each run in the shared log; throws what it is given.
class ScriptedService final : public MaintenanceService {
 public:
  ScriptedService(std::string name, std::vector<std::string>& log, bool due, bool errors,
                  std::function<void()> fail = {})
      : name_(std::move(name)), log_(log), due_(due), errors_(errors), fail_(std::move(fail)) {}
  bool due(const std::optional<FiredSlot>&, TimePoint) const override { return due_; }
  void run_once(SlotRunner&, const std::optional<FiredSlot>&, TimePoint) override {
    log_.push_back(name_);
    if (fail_) fail_();
  }
  std::string failed(const std::optional<FiredSlot>&, TimePoint) override {
    log_.push_back(name_ + " failed");
    return name_ + " failed";
  }
  bool failure_is_error() const override { return errors_; }

 private:
  std::string name_;
  std::vector<std::string>& log_;
  bool due_, errors_;
  std::function<void()> fail_;
};

struct MaintenanceFixture {
  ManualClock clock{parse_time("2026-11-21T10:00:30Z")};
  Registry registry;
  SlotRunner runner{RunnerOptions{.runner_id = "r"}, registry, clock, std::make_shared<testing::FakeStores>()};
  std::vector<std::string> log;
  std::vector<std::string> errors;

  Maintainer maintainer(std::vector<std::unique_ptr<MaintenanceService>> services) {
    return Maintainer("r", std::move(services), [this](const std::exception& e) { errors.emplace_back(e.what()); });
  }
};

void lock_not_granted() { throw DatabaseError("lock not available", "55P03"); }

}  // namespace

TEST_CASE("maintainer: runs the due services in order; one that fails holds back none of the others") {
  MaintenanceFixture f;
  std::vector<std::unique_ptr<MaintenanceService>> services;
  services.push_back(std::make_unique<ScriptedService>("sweep", f.log, true, true, lock_not_granted));
  services.push_back(std::make_unique<ScriptedService>("not due", f.log, false, true));
  services.push_back(std::make_unique<ScriptedService>("seen", f.log, true, false, lock_not_granted));
  services.push_back(std::make_unique<ScriptedService>("partitions", f.log, true, false));
  Maintainer maintainer = f.maintainer(std::move(services));
  maintainer.run_due(f.runner, FiredSlot{.slot = parse_time("2026-11-21T10:00:00Z")}, f.clock.now());
  CHECK(f.log == std::vector<std::string>{"sweep", "sweep failed", "seen", "seen failed", "partitions"});
  // Only the failure of a service whose failures are errors reaches the daemon's count.
  CHECK(f.errors == std::vector<std::string>{"lock not available"});
}

TEST_CASE("maintainer: a configuration error is not retried: it is thrown on, and what follows waits") {
  MaintenanceFixture f;
  std::vector<std::unique_ptr<MaintenanceService>> services;
  services.push_back(std::make_unique<ScriptedService>("bad", f.log, true, true, [] { throw InvalidInput("bad"); }));
  services.push_back(std::make_unique<ScriptedService>("after", f.log, true, true));
  Maintainer maintainer = f.maintainer(std::move(services));
  CHECK_THROWS_AS(maintainer.run_due(f.runner, std::nullopt, f.clock.now()), InvalidInput);
  CHECK(f.log == std::vector<std::string>{"bad"});
  CHECK(f.errors.empty());
}

TEST_CASE("history partitions service: due at once, then after its interval; after a failure, after its retry") {
  MaintenanceFixture f;
  const auto service = history_partitions_service({.every = 1h, .retry = 1min});
  const TimePoint start = f.clock.now();
  CHECK(service->due(std::nullopt, start));
  CHECK(service->failed(std::nullopt, start) == "could not create history partitions, trying again in 1m");
  CHECK_FALSE(service->due(std::nullopt, start + 59s));
  CHECK(service->due(std::nullopt, start + 1min));
  service->run_once(f.runner, std::nullopt, start + 1min);
  CHECK_FALSE(service->due(std::nullopt, start + 1h));
  CHECK(service->due(std::nullopt, start + 1h + 1min));
  CHECK_FALSE(service->failure_is_error());
}

TEST_CASE("history partitions service: an interval or a retry that is not positive is refused") {
  CHECK_THROWS_AS(history_partitions_service({.every = 0s, .retry = 1min}), InvalidInput);
  CHECK_THROWS_AS(history_partitions_service({.every = 1h, .retry = -1s}), InvalidInput);
}

TEST_CASE("the services after a slot: due only right after one fired") {
  const auto sweep = overdue_sweep_service("r", {});
  const auto seen = runner_seen_service();
  const TimePoint slot = parse_time("2026-11-21T10:00:00Z");
  for (const auto* service : {sweep.get(), seen.get()}) {
    CHECK(service->due(FiredSlot{.slot = slot}, slot));
    CHECK_FALSE(service->due(std::nullopt, slot));
  }
  // A failed catch-up is the daemon's error (a database failure while firing); a failed record is not.
  CHECK(sweep->failure_is_error());
  CHECK_FALSE(seen->failure_is_error());
  CHECK(sweep->failed(FiredSlot{.slot = slot}, slot) ==
        "catching up before slot 2026-11-21T10:00:00Z failed, trying again after the next slot");
}
