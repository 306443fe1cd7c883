#include "prescient/time_text.hpp"
#include "runner/maintenance.hpp"

namespace prescient::runner {
namespace {

class RunnerSeenService final : public MaintenanceService {
 public:
  bool due(const std::optional<FiredSlot>& fired, TimePoint) const override { return fired.has_value(); }
  void run_once(SlotRunner& runner, const std::optional<FiredSlot>& fired, TimePoint) override {
    runner.record_seen(fired->slot, fired->claimed);
  }
  std::string failed(const std::optional<FiredSlot>& fired, TimePoint) override {
    return "could not record slot " + format_time(fired->slot) + " as completed";
  }
  bool failure_is_error() const override { return false; }
};

}  // namespace

std::unique_ptr<MaintenanceService> runner_seen_service() { return std::make_unique<RunnerSeenService>(); }

}  // namespace prescient::runner
