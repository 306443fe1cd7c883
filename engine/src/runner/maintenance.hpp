#pragma once
// Internal: the upkeep a daemon does between slots, as services of one shape (after River's
// internal/maintenance): each is configured when it is made (and refuses a bad configuration then), runs
// once when it is due, and after a failure says what failed and sets when it tries again. The Maintainer
// runs the due ones in turn on the daemon's thread, between firing one slot and waiting for the next, so
// upkeep never runs while a slot fires; a failure is logged and never holds back the next boundary.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "prescient/slot_runner.hpp"
#include "prescient/time.hpp"

namespace prescient::runner {

// The slot the daemon has just fired at its boundary, and how many checks it claimed in it.
struct FiredSlot {
  TimePoint slot;
  long claimed = 0;
};

class MaintenanceService {
 public:
  virtual ~MaintenanceService() = default;
  // Whether it has work at `now`: right after `fired`, or (none) before the daemon waits for a boundary.
  virtual bool due(const std::optional<FiredSlot>& fired, TimePoint now) const = 0;
  // Does that work once, on the runner's upkeep session. Throws on failure.
  virtual void run_once(SlotRunner& runner, const std::optional<FiredSlot>& fired, TimePoint now) = 0;
  // After run_once threw at `now`: sets when it tries again and says, for the log, what failed and when.
  virtual std::string failed(const std::optional<FiredSlot>& fired, TimePoint now) = 0;
  // Whether its failures count among the daemon's errors (DaemonStats::errors, DaemonObserver::failed).
  virtual bool failure_is_error() const = 0;
};

class Maintainer {
 public:
  // `on_error` hears each failure of a service whose failures are errors.
  Maintainer(std::string runner_id, std::vector<std::unique_ptr<MaintenanceService>> services,
             std::function<void(const std::exception&)> on_error);
  // Runs each service due at `now`, in the order given. A configuration error (InvalidInput) is thrown
  // on, since trying again will not mend it; any other failure is logged and left to the service.
  void run_due(SlotRunner& runner, const std::optional<FiredSlot>& fired, TimePoint now);

 private:
  std::string runner_id_;
  std::vector<std::unique_ptr<MaintenanceService>> services_;
  std::function<void(const std::exception&)> on_error_;
};

// The monthly history partitions (prescient/retention.hpp): looked at before the first slot, then every
// `every`, and `retry` after a failure. They are made three months ahead, so hourly is plenty, and a
// minute after a failure (a lock not granted, a lost connection). Settlements never wait for it: a month without a partition
// goes to the default one meanwhile. Throws InvalidInput unless both are positive.
struct HistoryPartitionsConfig {
  std::chrono::seconds every = std::chrono::hours{1};
  std::chrono::seconds retry = std::chrono::minutes{1};
};
std::unique_ptr<MaintenanceService> history_partitions_service(HistoryPartitionsConfig config);

// After each slot, whatever is still due before it: checks written off the grid by another tool, checks
// left behind (a slot given up), and checks whose written lease expired (their runner died). One index
// probe when there is none. Each sweep's report goes to `swept`. A failure counts as the daemon's
// error, and is tried again after the next slot.
std::unique_ptr<MaintenanceService> overdue_sweep_service(std::string runner_id,
                                                          std::function<void(const SlotReport&)> swept);

// After each slot, that this runner completed it (prescient/runners_seen.hpp: the dashboard's runners).
std::unique_ptr<MaintenanceService> runner_seen_service();

}  // namespace prescient::runner
